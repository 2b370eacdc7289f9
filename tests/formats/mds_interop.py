#!/usr/bin/python3
"""Interoperability test of the mds format plugin.

Usage: mds_interop.py --iomimic BIN --source REPO --work DIR

A checker written from mosaicml/streaming's MDS format (version 2;
docs/formats.md, "mds") reads what `iomimic generate` wrote, for plain and
zstd shards and several element types and column names:
  1. every index.json: json.dumps(obj, sort_keys=True) gives its text back;
     version 2; each shard entry has format "mds", the writer's config
     (column encodings, names and sizes, compression, hashes, size_limit,
     version), raw_data (and zip_data for zstd) with basename and bytes, and
     samples;
  2. the indexes merged as streaming's merge_index joins partition indexes
     (basenames prefixed with the partition folder), each shard found by its
     merged basename;
  3. each shard: zstd decompressed with libzstd (ctypes) to the raw bytes
     the index gives; the count, the uint32 offsets table and the config
     JSON (the index's config members, json.dumps sort_keys) in front of the
     samples; MDSWriter's size_limit accounting respected;
  4. every sample read as MDSReader.get_sample_data does (seek to (1 + i) *
     4, read begin and end, read the sample) and decoded as decode_sample
     and the encodings do (variable-size column heads, ndarray with static
     or dynamic dtype and shape, int, bytes, str): numpy gives the spec's
     shape and dtype;
  5. `iomimic run` reads them, through the shard_cache decorator too.
Prints PASS and exits 0, or prints what is wrong and exits 1.
"""

import ctypes
import ctypes.util
import glob
import json
import os
import struct

import numpy as np

import interop_common as common
from interop_common import fail, run

SAMPLES = 9
FILES = 3

# (case, element type, record_dims, column, compression)
CASES = [
    ("uint8_none", "uint8", [24, 20], "x", "none"),
    ("int32_tokens", "int32", [256], "tokens", "none"),
    ("float16_zstd", "float16", [8, 8, 2], "x", "zstd"),
    ("int32_tokens_zstd", "int32", [512], "tokens", "zstd"),
]

# streaming's NDArray codes (its _int2value_dtype and _int2shape_dtype).
VALUE_DTYPES = {8: "uint8", 9: "int8", 16: "uint16", 17: "int16", 18: "float16",
                32: "uint32", 33: "int32", 34: "float32", 64: "uint64", 65: "int64",
                66: "float64"}
SHAPE_DTYPES = {0: "uint8", 1: "uint16", 2: "uint32", 3: "uint64"}
SCALARS = {"uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
           "float16", "float32", "float64"}
CONFIG_KEYS = ["column_encodings", "column_names", "column_sizes", "compression", "format",
               "hashes", "size_limit", "version"]


def zstd_decompress(data):
    """Decompresses one zstd frame with its content size (libzstd via ctypes)."""
    name = ctypes.util.find_library("zstd")
    if not name:
        fail("libzstd not found for the zstd shards")
    lib = ctypes.CDLL(name)
    lib.ZSTD_getFrameContentSize.restype = ctypes.c_ulonglong
    lib.ZSTD_getFrameContentSize.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    lib.ZSTD_decompress.restype = ctypes.c_size_t
    lib.ZSTD_decompress.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p,
                                    ctypes.c_size_t]
    lib.ZSTD_isError.argtypes = [ctypes.c_size_t]
    size = lib.ZSTD_getFrameContentSize(data, len(data))
    if size >= (1 << 63):
        fail("not a zstd frame with its content size")
    out = ctypes.create_string_buffer(size)
    n = lib.ZSTD_decompress(out, size, data, len(data))
    if lib.ZSTD_isError(n) or n != size:
        fail("zstd decompression failed")
    return out.raw


def decode_ndarray(config, data):
    """streaming's NDArray.decode for 'ndarray[:dtype[:shape]]'."""
    args = config.split(":") if config else []
    index = 0
    if args:
        dtype = args[0]
    else:
        dtype = VALUE_DTYPES[data[index]]
        index += 1
    if len(args) >= 2:
        shape = tuple(int(d) for d in args[1].split(","))
    else:
        byte = data[index]
        index += 1
        ndim, shape_dtype = byte >> 2, SHAPE_DTYPES[byte % 4]
        width = ndim * np.dtype(shape_dtype).itemsize
        shape = tuple(np.frombuffer(data[index:index + width], shape_dtype))
        index += width
    return np.frombuffer(data[index:], dtype).reshape(shape)


def decode(encoding, data):
    name, _, config = encoding.partition(":")
    if name == "ndarray":
        return decode_ndarray(config, data)
    if name == "int":
        return int(np.frombuffer(data, np.int64)[0])
    if name == "bytes":
        return data
    if name == "str":
        return data.decode("utf-8")
    if name in SCALARS:
        return np.frombuffer(data, name)[0]
    fail("encoding %s is not one this checker decodes" % encoding)


def decode_sample(shard, data):
    """MDSReader.decode_sample: a uint32 size per variable column, then values."""
    sizes, index = [], 0
    for size in shard["column_sizes"]:
        if size:
            sizes.append(size)
        else:
            sizes.append(struct.unpack("<I", data[index:index + 4])[0])
            index += 4
    sample = {}
    for name, encoding, size in zip(shard["column_names"], shard["column_encodings"], sizes):
        sample[name] = decode(encoding, data[index:index + size])
        index += size
    if index != len(data):
        fail("a sample of %d bytes holds %d bytes of columns" % (len(data), index))
    return sample


def raw_shard(folder, shard):
    """The raw bytes of a shard as streaming's reader gets them locally."""
    raw_info, zip_info = shard["raw_data"], shard["zip_data"]
    if shard["compression"]:
        if not shard["compression"].startswith("zstd") or not zip_info:
            fail("compression %s without zip_data" % shard["compression"])
        path = os.path.normpath(os.path.join(folder, zip_info["basename"]))
        blob = open(path, "rb").read()
        if len(blob) != zip_info["bytes"]:
            fail("%s: %d bytes, zip_data says %d" % (path, len(blob), zip_info["bytes"]))
        data = zstd_decompress(blob)
    else:
        if zip_info is not None:
            fail("an uncompressed shard with zip_data")
        path = os.path.normpath(os.path.join(folder, raw_info["basename"]))
        data = open(path, "rb").read()
    if len(data) != raw_info["bytes"]:
        fail("%s: %d raw bytes, raw_data says %d" % (path, len(data), raw_info["bytes"]))
    return path, data


def check_shard_bytes(path, shard, data):
    n = struct.unpack("<I", data[:4])[0]
    if n != shard["samples"]:
        fail("%s counts %d samples, its index %d" % (path, n, shard["samples"]))
    offsets = struct.unpack("<%dI" % (n + 1), data[4:8 + 4 * n])
    config = data[8 + 4 * n:offsets[0]].decode("utf-8")
    want = json.dumps({k: shard[k] for k in CONFIG_KEYS}, sort_keys=True)
    if config != want:
        fail("%s: the config in the shard\n  %s\nis not the index's\n  %s" % (path, config, want))
    if offsets[-1] != len(data) or list(offsets) != sorted(offsets):
        fail("%s: offsets %s... do not run up to its end" % (path, offsets[:4]))
    limit = shard["size_limit"]
    counted = 8 + len(config) + sum(offsets[i + 1] - offsets[i] + 4 for i in range(n))
    if limit and n > 1 and counted > limit:
        fail("%s: %d bytes as MDSWriter counts them, over size_limit %d" % (path, counted, limit))


def read_samples(path, shard, data, dtype, dims, column):
    """Every sample as get_sample_data reads it (from the raw file, or from
    the decompressed bytes for zstd), decoded."""
    for i in range(shard["samples"]):
        if shard["compression"]:
            begin, end = struct.unpack("<2I", data[(1 + i) * 4:(1 + i) * 4 + 8])
            raw = data[begin:end]
        else:
            with open(path, "rb", 0) as fp:
                fp.seek((1 + i) * 4)
                begin, end = np.frombuffer(fp.read(8), np.uint32)
                fp.seek(begin)
                raw = fp.read(end - begin)
        value = decode_sample(shard, raw)[column]
        if value.shape != tuple(dims) or value.dtype != np.dtype(dtype):
            fail("%s sample %d: %s %s, expected %s %s" %
                 (path, i, value.shape, value.dtype, tuple(dims), dtype))


def check_indexes(data, dtype, dims, column, compression):
    indexes = sorted(glob.glob(os.path.join(data, "train", "*", "index.json")))
    if len(indexes) != FILES:
        fail("expected %d index.json files, found %s" % (FILES, indexes))
    merged = []
    for index in indexes:
        text = open(index).read()
        obj = json.loads(text)
        if json.dumps(obj, sort_keys=True) != text:
            fail("%s is not json.dumps(sort_keys=True) text" % index)
        if obj["version"] != 2 or len(obj["shards"]) != 1:
            fail("%s: version %s, %d shards" % (index, obj["version"], len(obj["shards"])))
        folder = os.path.dirname(index)
        for shard in obj["shards"]:
            if shard["format"] != "mds" or shard["version"] != 2 or shard["hashes"] != []:
                fail("%s: not an MDS v2 shard entry: %s" % (index, shard))
            if shard["column_names"] != [column]:
                fail("%s: columns %s, expected [%s]" % (index, shard["column_names"], column))
            if (shard["compression"] is not None) != (compression == "zstd"):
                fail("%s: compression %s" % (index, shard["compression"]))
            path, raw = raw_shard(folder, shard)
            check_shard_bytes(path, shard, raw)
            read_samples(path, shard, raw, dtype, dims, column)
            # merge_index: the partition folder's name before each basename.
            entry = json.loads(json.dumps(shard))
            for key in ("raw_data", "zip_data"):
                if entry[key]:
                    entry[key]["basename"] = os.path.join(os.path.basename(folder),
                                                          entry[key]["basename"])
            merged.append(entry)
    root = os.path.join(data, "train")
    for shard in merged:
        path, raw = raw_shard(root, shard)
        read_samples(path, shard, raw, dtype, dims, column)
    return len(merged) * SAMPLES


def check_case(args, case, dtype, dims, column, compression):
    data = os.path.join(args.work, case, "data")
    ov = common.shard_overrides(
        "mds", data, os.path.join(args.work, case, "out"), FILES, SAMPLES, dims, dtype,
        ["++workload.dataset.compression=" + compression,
         "++workload.dataset.mds.column=" + column])
    run([args.iomimic, "generate", common.workload("quickstart")] + ov)
    samples = check_indexes(data, dtype, dims, column, compression)
    for backend in ("posix", "shard_cache"):
        run([args.iomimic, "run", common.workload("quickstart"),
             "++workload.workflow.generate_data=False",
             "++workload.storage.backend=" + backend] + ov +
            ["++workload.output.folder=" + os.path.join(args.work, case, "out_" + backend)])
    print("%s: %d shards, %d samples read and decoded as streaming's reader does" %
          (case, FILES, samples))


def main():
    args = common.setup(__doc__)
    for case in CASES:
        check_case(args, *case)
    print("PASS")


if __name__ == "__main__":
    main()
