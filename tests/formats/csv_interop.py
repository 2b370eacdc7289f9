#!/usr/bin/python3
"""Interoperability test of the csv format plugin.

Usage: csv_interop.py --iomimic BIN --source REPO --work DIR

No shipped DLIO workload uses csv, so the quickstart workload is switched to
format csv and shrunk with overrides. For every compression (none, gzip,
bz2, xz, zip) and several element types it
  1. runs `iomimic generate`;
  2. opens every file with Python's own modules (open, gzip, bz2, lzma,
     zipfile: exactly one member, named like the file), parses it with the
     csv module and numpy.loadtxt, and checks num_samples_per_file rows of
     d1*d2 values per file, values that numpy parses as the element type and
     whose text is numpy's own repr of the value (so they round-trip), and
     the header line and index column of pandas' layout when the plugin
     option pandas_header is set;
  3. runs a short `iomimic run` with generate_data=True.
Prints PASS and exits 0, or prints what is wrong and exits 1.
"""

import bz2
import csv
import gzip
import io
import json
import lzma
import os
import sys
import zipfile

import numpy as np

import interop_common as interop
from interop_common import fail, run

ARGS = None
SAMPLES = 8
SIDE = 24  # record_length_bytes = SIDE * SIDE

# (case name, compression, element type, extra overrides)
CASES = [
    ("none_uint8", "none", "uint8", []),
    ("gzip_uint8", "gzip", "uint8", []),
    ("bz2_uint8", "bz2", "uint8", []),
    ("xz_uint8", "xz", "uint8", []),
    ("zip_uint8", "zip", "uint8", []),
    ("none_float32", "none", "float32", []),
    ("gzip_float16", "gzip", "float16", []),
    ("xz_float64", "xz", "float64", []),
    ("zip_int16", "zip", "int16", []),
    ("bz2_int64", "bz2", "int64", []),
    ("none_bool", "none", "bool", []),
    ("gzip_pandas_layout", "gzip", "uint8", ["++workload.dataset.options.pandas_header=true"]),
    ("none_varying_sizes", "none", "uint8", ["++workload.dataset.record_length_bytes_stdev=200"]),
]


def read_text(path, compression):
    """The CSV text of a data file, opened the way pandas' infer would."""
    if compression == "none":
        with open(path, "rb") as fh:
            return fh.read().decode("ascii")
    if compression == "gzip":
        with gzip.open(path, "rb") as fh:
            return fh.read().decode("ascii")
    if compression == "bz2":
        with bz2.open(path, "rb") as fh:
            return fh.read().decode("ascii")
    if compression == "xz":
        with lzma.open(path, "rb") as fh:
            return fh.read().decode("ascii")
    if compression == "zip":
        with zipfile.ZipFile(path) as z:
            names = z.namelist()
            if names != [os.path.basename(path)]:
                fail("%s: ZIP members %s, expected one named %s" %
                     (path, names, os.path.basename(path)))
            if z.testzip() is not None:
                fail("%s: ZIP member CRC check failed" % path)
            info = z.getinfo(names[0])
            if info.compress_type != zipfile.ZIP_DEFLATED:
                fail("%s: member is not deflated" % path)
            return z.read(names[0]).decode("ascii")
    fail("unknown compression " + compression)


def check_values(path, rows, dtype):
    """Values parse as `dtype` and their text is numpy's repr of the value."""
    flat = [tok for row in rows for tok in row]
    if dtype == "bool":
        bad = [t for t in flat if t not in ("True", "False")]
        if bad:
            fail("%s: bool values %s are not True/False" % (path, bad[:5]))
        return
    np_type = np.dtype(dtype)
    text = "\n".join(",".join(r) for r in rows) + "\n"
    array = np.loadtxt(io.StringIO(text), delimiter=",", dtype=np_type, ndmin=2)
    if array.shape != (len(rows), len(rows[0])):
        fail("%s: numpy.loadtxt gave shape %s, expected %s" %
             (path, array.shape, (len(rows), len(rows[0]))))
    if np_type.kind in "iu":
        info = np.iinfo(np_type)
        values = [int(t) for t in flat]
        if min(values) < info.min or max(values) > info.max:
            fail("%s: integer values outside %s" % (path, dtype))
        if [str(v) for v in array.ravel().tolist()] != flat:
            fail("%s: integer text differs from numpy's" % path)
    else:
        if dtype == "float64":
            # Python's float repr is numpy's float64 repr.
            texts = [repr(float(v)) for v in array.ravel()]
        else:
            texts = [str(v) for v in array.ravel()]
        mismatched = [(t, r) for t, r in zip(flat, texts) if t != r]
        if mismatched:
            fail("%s: %d float values do not round-trip through %s, e.g. %s" %
                 (path, len(mismatched), dtype, mismatched[:3]))
        if not (array.min() >= 0 and array.max() < 1):
            fail("%s: float values outside [0, 1)" % path)


def check_file(path, compression, dtype, pandas_layout, side):
    text = read_text(path, compression)
    if not text.endswith("\n"):
        fail("%s: the text does not end with a newline" % path)
    rows = list(csv.reader(io.StringIO(text)))
    if pandas_layout:
        header, rows = rows[0], rows[1:]
        if header[0] != "" or header[1:] != [str(i) for i in range(len(header) - 1)]:
            fail("%s: header %s... is not pandas' ',0,1,...'" % (path, header[:5]))
        for i, row in enumerate(rows):
            if row[0] != str(i):
                fail("%s: row %d starts with index %s" % (path, i, row[0]))
        rows = [row[1:] for row in rows]
    if len(rows) != SAMPLES:
        fail("%s: %d rows, expected %d" % (path, len(rows), SAMPLES))
    widths = {len(r) for r in rows}
    if len(widths) != 1:
        fail("%s: rows of different widths %s" % (path, sorted(widths)))
    width = widths.pop()
    if side is not None and width != side * side:
        fail("%s: rows have %d values, expected %d" % (path, width, side * side))
    if len({tuple(r) for r in rows}) != len(rows):
        fail("%s: rows are not distinct" % path)
    check_values(path, rows, dtype)
    return width


def main():
    global ARGS
    ARGS = interop.setup(__doc__)
    manifest = os.path.join(ARGS.source, "workloads", "quickstart.yaml")

    for name, compression, dtype, extra in CASES:
        data = os.path.join(ARGS.work, name, "data")
        out = os.path.join(ARGS.work, name, "out")
        overrides = [
            "++workload.dataset.format=csv",
            "++workload.dataset.compression=" + compression,
            "++workload.dataset.record_element_type=" + dtype,
            "++workload.dataset.num_files_train=4",
            "++workload.dataset.num_files_eval=2",
            "++workload.dataset.num_samples_per_file=%d" % SAMPLES,
            "++workload.dataset.record_length_bytes=%d" % (SIDE * SIDE),
            "++workload.dataset.record_length_bytes_stdev=0",
            "++workload.train.epochs=2",
            "++workload.train.computation_time=0.001",
            "++workload.evaluation.eval_time=0.001",
            "++workload.dataset.data_folder=" + data,
            "++workload.output.folder=" + out,
        ] + extra
        run([ARGS.iomimic, "generate", manifest] + overrides, ARGS.work)
        paths = []
        for root, _, names in os.walk(data):
            for n in names:
                if "iomimic-partial" in n:
                    fail("leftover temporary file " + os.path.join(root, n))
                if n.endswith(".iomimic-complete"):  # completeness record (docs/security.md)
                    continue
                paths.append(os.path.join(root, n))
        if len(paths) != 6 or not all(p.endswith(".csv") for p in paths):
            fail("%s: expected 6 .csv files, found %s" % (name, sorted(paths)))
        pandas_layout = any("pandas_header=true" in e for e in extra)
        varying = any("stdev=200" in e for e in extra)
        widths = {check_file(p, compression, dtype, pandas_layout, None if varying else SIDE)
                  for p in sorted(paths)}
        if varying and len(widths) < 2:
            fail("%s: row widths should vary between files, got %s" % (name, sorted(widths)))
        print("%s: %d files of %d rows (widths %s) parsed by csv and numpy" %
              (name, len(paths), SAMPLES, sorted(widths)))

        run([ARGS.iomimic, "run", manifest] + overrides + ["++workload.workflow.generate_data=True"],
            ARGS.work)
        with open(os.path.join(out, "summary.json")) as fh:
            summary = json.load(fh)
        io_stats = summary.get("iomimic", {})
        if io_stats.get("plugins", {}).get("format", {}).get("name") != "csv":
            fail("%s: summary.json does not name the csv plugin" % name)
        if not io_stats.get("bytes_read", 0) > 0:
            fail("%s: the run read no bytes" % name)
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
