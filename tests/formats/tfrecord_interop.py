#!/usr/bin/python3
"""Interoperability test of the tfrecord format plugin.

Usage: tfrecord_interop.py --iomimic BIN --source REPO --work DIR

For the DLIO workloads that use TFRecord (resnet50_a100, cosmoflow_h100,
bert_v100), shrunk with overrides only, it
  1. runs `iomimic generate`;
  2. reads every data file with a small independent TFRecord reader: both
     masked CRC-32Cs of every record are checked with the crc32c module (or
     crcmod), and every payload is parsed with google.protobuf as a
     tf.train.Example whose classes are built at run time from TensorFlow's
     own field definitions (package "tensorflow", independent of the
     plugin's example.proto); the features must be exactly image (one bytes
     value of the sample size) and size (its byte count), and the payload
     must be protobuf's canonical serialization of that message;
  3. checks the DALI index file <data>/index/<split>/<name>.idx of every data
     file: one "<offset> <length>" line per record, as tfrecord2idx writes;
  4. runs a short `iomimic run` of the workload with generate_data=True.
Prints PASS and exits 0, or prints what is wrong and exits 1.
"""

import json
import os
import struct
import sys

from google.protobuf import descriptor_pb2
from google.protobuf import descriptor_pool
from google.protobuf import message_factory

import interop_common as interop
from interop_common import fail, run

try:
    import crc32c as _crc32c_module

    def crc32c(data):
        return _crc32c_module.crc32c(data)
except ImportError:  # python3-crcmod
    import crcmod.predefined

    crc32c = crcmod.predefined.mkCrcFun("crc-32c")

ARGS = None

# Shrinking overrides per workload: (name, overrides, expected files, samples per file).
WORKLOADS = [
    ("resnet50_a100", [
        "++workload.dataset.num_files_train=4",
        "++workload.dataset.num_samples_per_file=16",
        "++workload.dataset.record_length_bytes=4096",
        "++workload.dataset.record_length_bytes_resize=4096",
        "++workload.reader.batch_size=8",
        "++workload.reader.read_threads=2",
        "++workload.train.epochs=2",
        "++workload.train.computation_time=0.001",
    ], 4, 16),
    ("cosmoflow_h100", [
        "++workload.dataset.num_files_train=8",
        "++workload.dataset.record_length_bytes=65536",
        "++workload.dataset.record_length_bytes_stdev=4096",
        "++workload.train.epochs=2",
        "++workload.train.computation_time=0.001",
    ], 8, 1),
    ("bert_v100", [
        "++workload.dataset.num_files_train=2",
        "++workload.dataset.num_samples_per_file=100",
        "++workload.train.computation_time=0.001",
        "++workload.train.total_training_steps=3",
        "++workload.model.model_size_bytes=4096",
    ], 2, 100),
]


def masked(crc):
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def example_class():
    """tf.train.Example built from TensorFlow's feature.proto/example.proto."""
    f = descriptor_pb2.FileDescriptorProto()
    f.name = "iomimic_interop/tensorflow_example.proto"
    f.package = "tensorflow"
    f.syntax = "proto3"
    FD = descriptor_pb2.FieldDescriptorProto

    def add_list(name, type_, packed):
        m = f.message_type.add()
        m.name = name
        fld = m.field.add()
        fld.name, fld.number, fld.label, fld.type = "value", 1, FD.LABEL_REPEATED, type_
        if packed:
            fld.options.packed = True

    add_list("BytesList", FD.TYPE_BYTES, False)
    add_list("FloatList", FD.TYPE_FLOAT, True)
    add_list("Int64List", FD.TYPE_INT64, True)

    feature = f.message_type.add()
    feature.name = "Feature"
    feature.oneof_decl.add().name = "kind"
    for name, number, type_name in (("bytes_list", 1, ".tensorflow.BytesList"),
                                    ("float_list", 2, ".tensorflow.FloatList"),
                                    ("int64_list", 3, ".tensorflow.Int64List")):
        fld = feature.field.add()
        fld.name, fld.number, fld.label = name, number, FD.LABEL_OPTIONAL
        fld.type, fld.type_name, fld.oneof_index = FD.TYPE_MESSAGE, type_name, 0

    features = f.message_type.add()
    features.name = "Features"
    entry = features.nested_type.add()
    entry.name = "FeatureEntry"
    entry.options.map_entry = True
    key = entry.field.add()
    key.name, key.number, key.label, key.type = "key", 1, FD.LABEL_OPTIONAL, FD.TYPE_STRING
    value = entry.field.add()
    value.name, value.number, value.label = "value", 2, FD.LABEL_OPTIONAL
    value.type, value.type_name = FD.TYPE_MESSAGE, ".tensorflow.Feature"
    fmap = features.field.add()
    fmap.name, fmap.number, fmap.label = "feature", 1, FD.LABEL_REPEATED
    fmap.type, fmap.type_name = FD.TYPE_MESSAGE, ".tensorflow.Features.FeatureEntry"

    example = f.message_type.add()
    example.name = "Example"
    fld = example.field.add()
    fld.name, fld.number, fld.label = "features", 1, FD.LABEL_OPTIONAL
    fld.type, fld.type_name = FD.TYPE_MESSAGE, ".tensorflow.Features"

    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    descriptor = pool.FindMessageTypeByName("tensorflow.Example")
    if hasattr(message_factory, "GetMessageClass"):
        return message_factory.GetMessageClass(descriptor)
    return message_factory.MessageFactory(pool).GetPrototype(descriptor)


def read_records(path):
    """[(offset, framed length, payload)] of a TFRecord file, CRCs checked."""
    with open(path, "rb") as fh:
        data = fh.read()
    records = []
    offset = 0
    while offset < len(data):
        if len(data) - offset < 12:
            fail("%s: truncated header at offset %d" % (path, offset))
        (length,) = struct.unpack_from("<Q", data, offset)
        (length_crc,) = struct.unpack_from("<I", data, offset + 8)
        if masked(crc32c(data[offset:offset + 8])) != length_crc:
            fail("%s: length CRC mismatch in record %d at offset %d" % (path, len(records), offset))
        end = offset + 12 + length + 4
        if end > len(data):
            fail("%s: record %d at offset %d runs past the end" % (path, len(records), offset))
        payload = data[offset + 12:offset + 12 + length]
        (payload_crc,) = struct.unpack_from("<I", data, offset + 12 + length)
        if masked(crc32c(payload)) != payload_crc:
            fail("%s: payload CRC mismatch in record %d at offset %d" % (path, len(records), offset))
        records.append((offset, end - offset, payload))
        offset = end
    return records


def check_example(path, index, payload, example_cls):
    """Returns the sample size of a record after checking its Example."""
    ex = example_cls()
    try:
        ex.ParseFromString(payload)
    except Exception as e:  # a parse failure is a finding
        fail("%s: record %d does not parse as tf.train.Example: %s" % (path, index, e))
    feature = ex.features.feature
    if set(feature.keys()) != {"image", "size"}:
        fail("%s: record %d has features %s, expected image and size" %
             (path, index, sorted(feature.keys())))
    image = feature["image"]
    if image.WhichOneof("kind") != "bytes_list" or len(image.bytes_list.value) != 1:
        fail("%s: record %d: image is not one bytes value" % (path, index))
    size = feature["size"]
    if size.WhichOneof("kind") != "int64_list" or len(size.int64_list.value) != 1:
        fail("%s: record %d: size is not one int64 value" % (path, index))
    nbytes = len(image.bytes_list.value[0])
    if size.int64_list.value[0] != nbytes:
        fail("%s: record %d: size feature %d but the image has %d bytes" %
             (path, index, size.int64_list.value[0], nbytes))
    if ex.SerializeToString(deterministic=True) != payload:
        fail("%s: record %d is not protobuf's canonical serialization" % (path, index))
    return nbytes


def check_index(data_folder, split, path, records):
    name = os.path.basename(path)
    index = os.path.join(data_folder, "index", split, name + ".idx")
    if not os.path.isfile(index):
        fail("index file %s is missing" % index)
    with open(index) as fh:
        lines = fh.read().splitlines()
    expected = ["%d %d" % (offset, framed) for offset, framed, _ in records]
    if lines != expected:
        fail("%s: lines %s... differ from the records %s..." % (index, lines[:3], expected[:3]))


def check_dataset(data_folder, files, samples, example_cls):
    data_files = []
    for split in ("train", "valid"):
        top = os.path.join(data_folder, split)
        for root, _, names in os.walk(top):
            for n in names:
                if n.endswith(".tfrecord"):
                    data_files.append((split, os.path.join(root, n)))
                elif "iomimic-partial" in n:
                    fail("leftover temporary file " + os.path.join(root, n))
    if len(data_files) != files:
        fail("%s: found %d .tfrecord files, expected %d" % (data_folder, len(data_files), files))
    total = 0
    sizes = set()
    for split, path in sorted(data_files):
        records = read_records(path)
        if len(records) != samples:
            fail("%s: %d records, expected %d" % (path, len(records), samples))
        file_sizes = {check_example(path, i, p, example_cls) for i, (_, _, p) in enumerate(records)}
        if len(file_sizes) != 1:
            fail("%s: samples of one file differ in size: %s" % (path, sorted(file_sizes)))
        sizes |= file_sizes
        check_index(data_folder, split, path, records)
        total += len(records)
    return total, sizes


def main():
    global ARGS
    ARGS = interop.setup(__doc__)
    example_cls = example_class()

    for name, overrides, files, samples in WORKLOADS:
        manifest = os.path.join(ARGS.source, "workloads", name + ".yaml")
        data = os.path.join(ARGS.work, name, "data")
        out = os.path.join(ARGS.work, name, "out")
        common = ["++workload.dataset.data_folder=" + data,
                  "++workload.output.folder=" + out,
                  "++workload.checkpoint.checkpoint_folder=" + os.path.join(ARGS.work, name, "ckpt")]
        run([ARGS.iomimic, "generate", manifest] + overrides + common, ARGS.work)
        total, sizes = check_dataset(data, files, samples, example_cls)
        print("%s: %d files, %d records, sample sizes %s: CRCs, Examples and index files OK" %
              (name, files, total, sorted(sizes)))
        if name == "resnet50_a100" and sizes != {64 * 64}:
            fail("resnet50 samples should be 64x64 bytes, got %s" % sorted(sizes))
        if name == "bert_v100" and sizes != {50 * 50}:
            fail("bert samples should be 50x50 bytes, got %s" % sorted(sizes))
        if name == "cosmoflow_h100" and len(sizes) < 2:
            fail("cosmoflow samples should vary in size (stdev), got %s" % sorted(sizes))

        run([ARGS.iomimic, "run", manifest] + overrides + common +
            ["++workload.workflow.generate_data=True"], ARGS.work)
        summary_path = os.path.join(out, "summary.json")
        if not os.path.isfile(summary_path):
            fail("%s: no summary.json in %s" % (name, out))
        with open(summary_path) as fh:
            summary = json.load(fh)
        io = summary.get("iomimic", {})
        if io.get("plugins", {}).get("format", {}).get("name") != "tfrecord":
            fail("%s: summary.json does not name the tfrecord plugin" % name)
        if not io.get("bytes_read", 0) > 0:
            fail("%s: the run read no bytes" % name)
        generated = io.get("generate", {})
        print("%s: run OK (%s bytes read, generate %s)" % (name, io.get("bytes_read"),
                                                          json.dumps(generated, sort_keys=True)))
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
