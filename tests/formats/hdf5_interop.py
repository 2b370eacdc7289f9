#!/usr/bin/python3
"""Interoperability test of the hdf5 format plugin with h5py.

Usage: hdf5_interop.py --iomimic BIN --source REPO --work DIR

No shipped DLIO workload uses hdf5, so every case runs the shipped
workloads/default.yaml with ++workload.dataset.format=hdf5 and shrinking
overrides (fewer files, short compute and eval times, two epochs), plus the
DLIO keys a case is about (samples per file, record_dims,
hdf5.num_dset_per_record, hdf5.chunk_dims, hdf5.max_shape, compression).
For each case it runs `iomimic generate`, then checks every file with h5py the
way DLIO's hdf5 generator would have made it:

  - datasets records_0 .. records_<K-1> and labels, nothing else;
  - records shape (num_samples_per_file, *row_dims) where row_dims is
    record_dims with its first dimension divided by K and a leading 1
    dropped (or (d, d), d = floor(sqrt(record_length_bytes))), dtype from
    record_element_type, all K datasets with the same content;
  - chunks: hdf5.chunk_dims (with 1 in front when given without the sample
    axis), or h5py's own guess_chunk when compression or max_shape needs
    chunking, otherwise contiguous (None); maxshape (samples, *max_shape) with
    null as unlimited;
  - compression filter and gzip level as configured;
  - labels: int64 zeros of shape (num_samples_per_file,);
  - every row readable, generation deterministic (the same files twice).

Then `iomimic run` replays a short training (with evaluation) on some of the
datasets and summary.json must exist with the train metrics. Finally lzf is
refused with a clear message when the HDF5 library has no LZF filter (Debian).

Prints "PASS" and exits 0, or prints what is wrong and exits 1.
"""

import glob
import json
import math
import os
import sys

import numpy as np

import interop_common as interop
from interop_common import fail, run

try:
    import h5py
    from h5py._hl.filters import guess_chunk
except ImportError as e:  # pragma: no cover - Debian's python3-h5py is a build dependency
    print("FAIL: h5py is not available to /usr/bin/python3: %s" % e, file=sys.stderr)
    sys.exit(1)

ARGS = None


def default_workload():
    return os.path.join(ARGS.source, "workloads", "default.yaml")


class Case:
    """One dataset configuration and what h5py must find in its files."""

    def __init__(self, name, spf=1, record_dims=None, record_length=4096, dtype="uint8", k=1,
                 chunk_dims=None, max_shape=None, compression="none", level=4, train=False):
        self.name = name
        self.spf = spf
        self.record_dims = record_dims
        self.record_length = record_length
        self.dtype = dtype
        self.k = k
        self.chunk_dims = chunk_dims
        self.max_shape = max_shape
        self.compression = compression
        self.level = level
        self.train = train  # also replay a short training run on it

    def data(self, tag=""):
        return os.path.join(ARGS.work, "data_" + self.name + tag)

    def overrides(self, data, output):
        ov = [
            "++workload.dataset.format=hdf5",
            "++workload.dataset.data_folder=" + data,
            "++workload.output.folder=" + output,
            "++workload.dataset.num_files_train=6",
            "++workload.dataset.num_files_eval=2",
            "++workload.dataset.num_samples_per_file=%d" % self.spf,
            "++workload.dataset.record_length_bytes=%d" % self.record_length,
            "++workload.dataset.record_element_type=" + self.dtype,
            "++workload.dataset.compression=" + self.compression,
            "++workload.dataset.compression_level=%d" % self.level,
            "++workload.dataset.hdf5.num_dset_per_record=%d" % self.k,
            "++workload.train.epochs=2",
            "++workload.train.computation_time=0.001",
            "++workload.evaluation.eval_time=0.001",
            "++workload.reader.read_threads=2",
        ]
        if self.record_dims is not None:
            ov.append("++workload.dataset.record_dims=[%s]" % ",".join(map(str, self.record_dims)))
        if self.chunk_dims is not None:
            ov.append("++workload.dataset.hdf5.chunk_dims=[%s]" % ",".join(map(str, self.chunk_dims)))
        if self.max_shape is not None:
            ov.append("++workload.dataset.hdf5.max_shape=[%s]" %
                      ",".join("null" if m is None else str(m) for m in self.max_shape))
        return ov

    def row_dims(self):
        if self.record_dims is None:
            d = int(math.floor(math.sqrt(self.record_length)))
            return (d, d)
        dims = list(self.record_dims)
        dims[0] //= self.k
        if dims and dims[0] == 1:
            dims = dims[1:]
        return tuple(dims)

    def shape(self):
        return (self.spf,) + self.row_dims()

    def expected_chunks(self, itemsize):
        if self.chunk_dims is not None:
            c = tuple(self.chunk_dims)
            return (1,) + c if len(c) + 1 == len(self.shape()) else c
        if self.compression != "none" or self.max_shape is not None:
            return guess_chunk(self.shape(), None, itemsize)
        return None

    def expected_maxshape(self):
        if self.max_shape is None:
            return self.shape()
        return (self.spf,) + tuple(self.max_shape)


def files_of(folder):
    files = sorted(glob.glob(os.path.join(folder, "**", "*.hdf5"), recursive=True))
    return [f for f in files if not os.path.basename(f).startswith(".")]


def check_file(case, path):
    names = ["records_%d" % i for i in range(case.k)]
    dtype = np.dtype(case.dtype)
    with h5py.File(path, "r") as f:
        keys = sorted(f.keys())
        if keys != sorted(names + ["labels"]):
            fail("%s: datasets %s, expected %s and labels" % (path, keys, names))
        first = None
        for name in names:
            d = f[name]
            where = "%s:%s" % (path, name)
            if d.shape != case.shape():
                fail("%s: shape %s, expected %s" % (where, d.shape, case.shape()))
            if d.dtype != dtype:
                fail("%s: dtype %s, expected %s" % (where, d.dtype, dtype))
            want_chunks = case.expected_chunks(dtype.itemsize)
            if d.chunks != want_chunks:
                fail("%s: chunks %s, expected %s" % (where, d.chunks, want_chunks))
            if d.maxshape != case.expected_maxshape():
                fail("%s: maxshape %s, expected %s" % (where, d.maxshape, case.expected_maxshape()))
            want_comp = None if case.compression == "none" else case.compression
            if d.compression != want_comp:
                fail("%s: compression %s, expected %s" % (where, d.compression, want_comp))
            if want_comp == "gzip" and d.compression_opts != case.level:
                fail("%s: gzip level %s, expected %d" % (where, d.compression_opts, case.level))
            if d.shuffle or d.fletcher32:
                fail("%s: unexpected shuffle/fletcher32 filters" % where)
            data = d[()]
            for i in range(case.spf):  # row by row, as DLIO's reader does
                if d[i].tobytes() != data[i].tobytes():
                    fail("%s: row %d differs from the whole read" % (where, i))
            if first is None:
                first = data
            elif data.tobytes() != first.tobytes():
                fail("%s: content differs from records_0 (DLIO writes the same array)" % where)
        labels = f["labels"]
        if labels.dtype != np.int64 or labels.shape != (case.spf,):
            fail("%s: labels %s %s, expected int64 (%d,)" %
                 (path, labels.dtype, labels.shape, case.spf))
        if labels.chunks is not None or labels.compression is not None:
            fail("%s: labels should be contiguous and uncompressed" % path)
        if labels[()].any():
            fail("%s: labels are not all zero" % path)
    with open(path, "rb") as raw:
        head = raw.read(9)
    if head[:8] != b"\x89HDF\r\n\x1a\n" or head[8] != 3:
        fail("%s: expected an HDF5 signature and superblock version 3 (libver latest), got %r" %
             (path, head))
    return first


def generate_and_check(case):
    data = case.data()
    out = os.path.join(ARGS.work, "out_gen_" + case.name)
    run([ARGS.iomimic, "generate", default_workload()] + case.overrides(data, out))
    files = files_of(data)
    if len(files) != 8:
        fail("%s: expected 8 hdf5 files (6 train + 2 eval), found %d: %s" %
             (case.name, len(files), files))
    leftovers = glob.glob(os.path.join(data, "**", ".*iomimic-partial"), recursive=True)
    if leftovers:
        fail("%s: partial files left behind: %s" % (case.name, leftovers))
    contents = [check_file(case, p) for p in files]
    if all(c.tobytes() == contents[0].tobytes() for c in contents[1:]):
        fail("%s: every file holds the same data (seeds are not per file)" % case.name)
    print("ok %s: %d files, records shape %s x %d, chunks %s, compression %s" %
          (case.name, len(files), case.shape(), case.k,
           case.expected_chunks(np.dtype(case.dtype).itemsize), case.compression), flush=True)
    return files


def check_deterministic(case, files):
    data = case.data("_again")
    out = os.path.join(ARGS.work, "out_again_" + case.name)
    run([ARGS.iomimic, "generate", default_workload()] + case.overrides(data, out))
    again = files_of(data)
    if [os.path.relpath(p, data) for p in again] != [os.path.relpath(p, case.data()) for p in files]:
        fail("%s: a second generation made other file names" % case.name)
    for a, b in zip(files, again):
        with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
            if fa["records_0"][()].tobytes() != fb["records_0"][()].tobytes():
                fail("%s: %s and %s differ: generation is not deterministic" % (case.name, a, b))
    print("ok %s: generation is deterministic" % case.name, flush=True)


def train(case):
    out = os.path.join(ARGS.work, "out_run_" + case.name)
    p = run([ARGS.iomimic, "run", default_workload()] + case.overrides(case.data(), out))
    summary = os.path.join(out, "summary.json")
    if not os.path.isfile(summary):
        fail("%s: no summary.json in %s after the run" % (case.name, out))
    with open(summary) as f:
        s = json.load(f)
    metric = s.get("metric", {})
    for key in ("train_throughput_mean_samples_per_second", "train_io_mean_MB_per_second"):
        if not isinstance(metric.get(key), (int, float)) or metric[key] <= 0:
            fail("%s: summary.json metric %s = %r" % (case.name, key, metric.get(key)))
    if s.get("num_samples_per_file") != case.spf:
        fail("%s: summary.json num_samples_per_file = %r" % (case.name, s.get("num_samples_per_file")))
    if "format hdf5" not in p.stdout + p.stderr:
        fail("%s: the run did not report format hdf5" % case.name)
    print("ok %s: training run finished, %.1f samples/s" %
          (case.name, metric["train_throughput_mean_samples_per_second"]), flush=True)


def check_lzf():
    case = Case("lzf", spf=4, record_dims=[16, 16], compression="lzf")
    out = os.path.join(ARGS.work, "out_gen_lzf")
    p = run([ARGS.iomimic, "generate", default_workload()] + case.overrides(case.data(), out),
            expect_ok=False)
    if p.returncode == 0:
        # A libhdf5 with an LZF filter plugin: then the files must be right.
        for path in files_of(case.data()):
            check_file(case, path)
        print("ok lzf: this HDF5 library has an LZF filter; files checked", flush=True)
        return
    text = p.stdout + p.stderr
    if "lzf" not in text.lower():
        fail("lzf was refused without saying why:\n" + text)
    if files_of(case.data()):
        fail("lzf: files were left behind after the refusal")
    print("ok lzf: refused with a clear message (no LZF filter in this libhdf5)", flush=True)


def main():
    global ARGS
    ARGS = interop.setup(__doc__)

    cases = [
        # default.yaml's geometry (64 x 64 uint8 from record_length_bytes),
        # 8 samples per file: contiguous, like DLIO's resnet-like files.
        Case("spf8", spf=8, train=True),
        # Two datasets per record: record_dims [4, 16, 16] gives rows of
        # (2, 16, 16) in records_0 and records_1; chunked, gzip level 6.
        Case("k2_chunks_gzip", spf=6, record_dims=[4, 16, 16], dtype="float32", k=2,
             chunk_dims=[2, 2, 8, 16], compression="gzip", level=6, train=True),
        # A leading 1 in record_dims is dropped; chunk_dims without the sample
        # axis get 1 in front of them.
        Case("chunks_no_sample_axis", spf=5, record_dims=[1, 24, 32], dtype="int16",
             chunk_dims=[8, 16]),
        # gzip without chunk_dims: h5py's guessed chunks.
        Case("gzip_guessed", spf=16, record_dims=[64, 64], compression="gzip", level=1),
        # max_shape with an unlimited axis (resizable datasets need chunks).
        Case("max_shape", spf=4, record_dims=[10, 12], dtype="uint16", max_shape=[None, 24],
             train=True),
    ]
    for case in cases:
        files = generate_and_check(case)
        if case.name == "k2_chunks_gzip":
            check_deterministic(case, files)
        if case.train:
            train(case)
    check_lzf()
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
