#!/usr/bin/python3
"""Interchange test of the parquet format plugin with DuckDB.

Usage: parquet_interop.py --iomimic BIN --source REPO --work DIR

DuckDB (npm @duckdb/node-api, installed by scripts/duckdb_node.sh into
$IOMIMIC_NODE_DIR, default <build>/node) is the independent implementation.
For each codec none, snappy, gzip, lz4 and zstd:
  1. iomimic generates and trains on a dataset of typed columns (every dtype
     of the fork: float16/32/64, int8, uint16, int64 lists, bool, string,
     binary, float32 lists); DuckDB reads every file: row count, column
     names and types, row-group sizes and codec from parquet_metadata(), and
     aggregates over every column (the values decode);
  2. iomimic trains again with decoding on (dataset.options.decode);
  3. DuckDB writes a dataset with the fork's naming
     (<data>/train/img_<i>_of_<n>.parquet) and iomimic trains on it with
     storage.storage_options.columns, decoding on and off; the reads are
     traced and must match parquet_metadata()'s offsets (below).
Then dlrm_b200 (workloads/dlrm_b200.yaml, shrunk to 8 files of 12,288 rows)
is generated, and one training epoch is traced with strace: every file's
footer is read once (one request ending at the end of the file) and every
row group with exactly one request from the first to the end of the last
column flagged read: true, as DuckDB's parquet_metadata() places them; the
histogram of request sizes is printed.
Finally dlrm_b200 and dlrm_parquet_h100 run shrunk on posix and odirect
(generate and train) with AU and throughput in summary.json.
Prints PASS and exits 0, prints what is wrong and exits 1, or exits 77
(skipped) when DuckDB cannot be installed.
"""

import collections
import glob
import json
import os
import re
import shutil
import subprocess
import sys

import interop_common as interop
from interop_common import fail, run, summary

ARGS = None
NODE_DIR = None

CODECS = [("none", "UNCOMPRESSED", "uncompressed"), ("snappy", "SNAPPY", "snappy"),
          ("gzip", "GZIP", "gzip"), ("lz4", "LZ4_RAW", "lz4_raw"), ("zstd", "ZSTD", "zstd")]

# (name, dtype, size, read) and the type DuckDB reports.
COLUMNS = [
    ("a", "float16", 0, False, "FLOAT"),
    ("b", "float32", 0, True, "FLOAT"),
    ("c", "int8", 0, False, "TINYINT"),
    ("d", "float64", 0, True, "DOUBLE"),
    ("e", "uint16", 0, False, "USMALLINT"),
    ("f", "bool", 0, False, "BOOLEAN"),
    ("g", "string", 12, False, "VARCHAR"),
    ("h", "binary", 5, False, "BLOB"),
    ("i", "list", 3, False, "FLOAT[]"),
    ("j", "int64", 4, True, "BIGINT[]"),
]
FILES, ROWS, GROUP = 3, 1000, 300


def duck(*statements):
    p = subprocess.run(["node", os.path.join(ARGS.source, "tests", "formats", "parquet_duckdb.mjs"),
                        NODE_DIR] + list(statements), capture_output=True, text=True, timeout=240)
    if p.returncode != 0:
        fail("DuckDB failed: %s\n%s" % (p.stderr.strip(), "\n".join(statements)))
    return [json.loads(line) for line in p.stdout.splitlines() if line.strip()]


def ensure_duckdb():
    global NODE_DIR
    NODE_DIR = os.environ.get("IOMIMIC_NODE_DIR") or os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(ARGS.iomimic))), "node")
    if shutil.which("node") is None:
        print("SKIP: node is not installed (scripts/deps.sh --test installs it)")
        sys.exit(77)
    p = subprocess.run([os.path.join(ARGS.source, "scripts", "duckdb_node.sh"), NODE_DIR],
                       capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        print("SKIP: cannot install @duckdb/node-api: " + p.stderr.strip())
        sys.exit(77)
    print("DuckDB %s" % duck("SELECT version() AS v")[0][0]["v"])


def check_trained(s, what, steps=None):
    if s["epochs"] < 1 or s["iomimic"]["bytes_read"] <= 0:
        fail(what + ": no training epoch or nothing read")
    if steps is not None and s["iomimic"]["train_steps_per_epoch"] != steps:
        fail("%s: %s steps per epoch, expected %d" % (what, s["iomimic"]["train_steps_per_epoch"],
                                                      steps))
    for key in ("train_au_mean_percentage", "train_throughput_mean_samples_per_second"):
        if key not in s["metric"]:
            fail(what + ": summary.json has no metric." + key)


def manifest(path, data, codec, files, rows, columns=True, read_columns=None, generate=True):
    lines = [
        "model:", "  name: parquet_interop", "framework: pytorch",
        "workflow:", "  generate_data: %s" % generate, "  train: True",
        "dataset:", "  data_folder: " + data, "  format: parquet",
        "  num_files_train: %d" % files, "  num_samples_per_file: %d" % rows,
        "  record_length_bytes: 64", "  compression: " + codec,
        "  parquet:", "    row_group_size: %d" % GROUP,
    ]
    if columns:
        lines.append("    columns:")
        for name, dtype, size, read, _ in COLUMNS:
            lines.append("      - name: " + name)
            lines.append("        dtype: " + dtype)
            if size:
                lines.append("        size: %d" % size)
            lines.append("        read: %s" % ("true" if read else "false"))
    if read_columns:
        lines += ["storage:", "  storage_type: local_fs", "  storage_options:",
                  "    columns: [%s]" % ", ".join(read_columns)]
    lines += ["reader:", "  data_loader: pytorch", "  batch_size: 128", "  read_threads: 2",
              "  file_shuffle: seed",
              "train:", "  epochs: 1", "  computation_time: 0.0"]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def metadata(path):
    return duck("SELECT row_group_id, row_group_num_rows, path_in_schema, compression, "
                "dictionary_page_offset, data_page_offset, total_compressed_size "
                "FROM parquet_metadata('%s') ORDER BY row_group_id, column_id" % path)[0]


def expected_spans(path, selected):
    """{row group: (offset, length)} of the selected top-level columns."""
    spans = {}
    for m in metadata(path):
        top = m["path_in_schema"].split(",")[0].strip()
        if top not in selected:
            continue
        dictionary = m["dictionary_page_offset"]
        data = int(m["data_page_offset"])
        start = data
        if dictionary is not None and 0 < int(dictionary) < data:
            start = int(dictionary)
        end = start + int(m["total_compressed_size"])
        g = int(m["row_group_id"])
        b, e = spans.get(g, (start, end))
        spans[g] = (min(b, start), max(e, end))
    return {g: (b, e - b) for g, (b, e) in spans.items()}


def traced_run(cmd, trace_dir):
    """Runs cmd under strace -ff; returns {path: [(offset, length)]} of the
    pread64 requests on .parquet files."""
    shutil.rmtree(trace_dir, ignore_errors=True)
    os.makedirs(trace_dir)
    run(["strace", "-ff", "-y", "-s", "0", "-e", "trace=pread64,preadv,preadv2,read",
         "-o", os.path.join(trace_dir, "t")] + cmd, timeout=300)
    reads = collections.defaultdict(list)
    pattern = re.compile(r'^(pread64|preadv2?)\(\d+<([^>]+\.parquet)>, .*, (\d+), (\d+)(?:, \d+)?\)'
                         r'\s+= (\d+)')
    plain = re.compile(r'^read\(\d+<([^>]+\.parquet)>')
    for t in glob.glob(os.path.join(trace_dir, "t.*")):
        with open(t) as f:
            for line in f:
                if plain.match(line):
                    fail("a plain read() on a data file: " + line.strip())
                m = pattern.match(line)
                if m:
                    reads[m.group(2)].append((int(m.group(4)), int(m.group(3))))
    return reads


def check_pattern(reads, files, selected, what):
    """Footer once per file, one request per row group over the selected span."""
    histogram = collections.Counter()
    for path in files:
        size = os.path.getsize(path)
        got = sorted(reads.get(path, []))
        want = sorted(list(expected_spans(path, selected).values()) +
                      [(size - min(size, 65536), min(size, 65536))])
        for _, length in got:
            histogram[length] += 1
        if got != want:
            fail("%s: %s reads %s, expected the footer once and one span per row group %s"
                 % (what, path, got, want))
    print("%s: %d files, footer once each, one request per row group; request sizes "
          "(bytes: count): %s" % (what, len(files), dict(sorted(histogram.items()))))


def check_iomimic_files(data, codec, duck_codec):
    files = sorted(glob.glob(os.path.join(data, "train", "*.parquet")))
    if len(files) != FILES:
        fail("expected %d files in %s, found %d" % (FILES, data, len(files)))
    want_types = [(c[0], c[4]) for c in COLUMNS]
    groups = [GROUP] * (ROWS // GROUP) + ([ROWS % GROUP] if ROWS % GROUP else [])
    aggregates = ", ".join(
        ["count(%s) AS n_%s" % (c[0], c[0]) for c in COLUMNS] +
        ["sum(length(g)) AS g_len", "sum(octet_length(h)) AS h_len", "sum(len(i)) AS i_len",
         "sum(len(j)) AS j_len", "min(c) AS c_min", "max(c) AS c_max", "max(e) AS e_max",
         "sum(f::INT) AS f_true", "count(DISTINCT b) AS b_distinct"])
    for path in files:
        count, described, stats = duck(
            "SELECT count(*) AS n FROM '%s'" % path,
            "DESCRIBE SELECT * FROM '%s'" % path,
            "SELECT %s FROM '%s'" % (aggregates, path))
        if int(count[0]["n"]) != ROWS:
            fail("%s: DuckDB counts %s rows, expected %d" % (path, count[0]["n"], ROWS))
        types = [(r["column_name"], r["column_type"]) for r in described]
        if types != want_types:
            fail("%s: DuckDB sees %s, expected %s" % (path, types, want_types))
        meta = metadata(path)
        sizes = []
        for m in meta:
            if m["compression"] != duck_codec:
                fail("%s: column %s has codec %s, expected %s" % (path, m["path_in_schema"],
                                                                 m["compression"], duck_codec))
            g = int(m["row_group_id"])
            if g == len(sizes):
                sizes.append(int(m["row_group_num_rows"]))
        if sizes != groups:
            fail("%s: row groups of %s rows, expected %s" % (path, sizes, groups))
        s = stats[0]
        for c in COLUMNS:
            if int(s["n_" + c[0]]) != ROWS:
                fail("%s: column %s has %s values" % (path, c[0], s["n_" + c[0]]))
        for key, want in (("g_len", ROWS * 12), ("h_len", ROWS * 5), ("i_len", ROWS * 3),
                          ("j_len", ROWS * 4)):
            if int(s[key]) != want:
                fail("%s: %s is %s, expected %d" % (path, key, s[key], want))
        if not (-128 <= int(s["c_min"]) < 0 < int(s["c_max"]) <= 127) or int(s["e_max"]) > 65535:
            fail("%s: integer columns out of range: %s" % (path, s))
        if not 0 < int(s["f_true"]) < ROWS or int(s["b_distinct"]) < ROWS // 2:
            fail("%s: values do not look random: %s" % (path, s))
    print("%s: DuckDB read %d iomimic files (rows, types, row groups, codec, values)"
          % (codec, len(files)))


def duckdb_writes(data, duck_codec, files, rows):
    os.makedirs(os.path.join(data, "train"), exist_ok=True)
    statements = []
    for i in range(files):
        path = os.path.join(data, "train", "img_%d_of_%d.parquet" % (i, files))
        statements.append(
            "COPY (SELECT (random() * 1000)::FLOAT AS a, random()::FLOAT AS b, "
            "(range %% 100)::TINYINT AS c, random() AS d, md5(range::VARCHAR) AS g, "
            "[random()::FLOAT, random()::FLOAT] AS i, range AS j FROM range(%d)) TO '%s' "
            "(FORMAT parquet, COMPRESSION '%s', ROW_GROUP_SIZE 2048)" % (rows, path, duck_codec))
    duck(*statements)
    return sorted(glob.glob(os.path.join(data, "train", "*.parquet")))


def test_codec(codec, duck_name, duck_codec):
    work = os.path.join(ARGS.work, codec)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    data, out = os.path.join(work, "data"), os.path.join(work, "out")
    m = os.path.join(work, "manifest.yaml")
    manifest(m, data, codec, FILES, ROWS)
    run([ARGS.iomimic, "run", "-q", m, "++workload.output.folder=" + out])
    check_trained(summary(out), codec + " iomimic files", steps=FILES * ROWS // 128)
    check_iomimic_files(data, codec, duck_name)
    run([ARGS.iomimic, "run", "-q", m, "++workload.workflow.generate_data=False",
         "++workload.dataset.options.decode=True", "++workload.output.folder=" + out + "_decode"])
    check_trained(summary(out + "_decode"), codec + " iomimic files, decoded")

    # DuckDB writes, iomimic reads (columns b and d, decode off and on).
    ddata = os.path.join(work, "duck")
    rows = 10000
    files = duckdb_writes(ddata, duck_codec, 2, rows)
    dm = os.path.join(work, "duck.yaml")
    manifest(dm, ddata, codec, 2, rows, columns=False, read_columns=["b", "d"], generate=False)
    for decode in ("False", "True"):
        dout = os.path.join(work, "duck_out_" + decode)
        reads = traced_run([ARGS.iomimic, "run", "-q", dm, "++workload.output.folder=" + dout,
                            "++workload.dataset.options.decode=" + decode],
                           os.path.join(work, "trace_" + decode))
        check_trained(summary(dout), codec + " DuckDB files, decode " + decode,
                      steps=2 * rows // 128)
        check_pattern(reads, files, {"b", "d"}, "%s DuckDB files (decode %s)" % (codec, decode))


def test_dlrm_b200_pattern():
    work = os.path.join(ARGS.work, "dlrm_b200")
    shutil.rmtree(work, ignore_errors=True)
    data, out = os.path.join(work, "data"), os.path.join(work, "out")
    path = os.path.join(ARGS.source, "workloads", "dlrm_b200.yaml")
    ov = ["++workload.dataset.num_files_train=8", "++workload.dataset.num_samples_per_file=12288",
          "++workload.dataset.data_folder=" + data]
    run([ARGS.iomimic, "run", "-q", path, "++workload.workflow.generate_data=True",
         "++workload.workflow.train=False", "++workload.output.folder=" + out + "_gen"] + ov)
    with open(path) as f:
        text = f.read()
    selected = set(re.findall(r"- name: (\S+)\s+dtype: \S+\s+read: true", text))
    if len(selected) != 40:
        fail("expected 40 columns flagged read: true in dlrm_b200.yaml, found %d" % len(selected))
    reads = traced_run([ARGS.iomimic, "run", "-q", path, "++workload.output.folder=" + out] + ov,
                       os.path.join(work, "trace"))
    check_trained(summary(out), "dlrm_b200", steps=8 * 12288 // 16384)
    files = sorted(glob.glob(os.path.join(data, "train", "*.parquet")))
    if len(files) != 8:
        fail("dlrm_b200: expected 8 files, found %d" % len(files))
    check_pattern(reads, files, selected, "dlrm_b200 one epoch")


def test_workloads_on_backends():
    shrink = {
        "dlrm_b200": ["++workload.dataset.num_files_train=8",
                      "++workload.dataset.num_samples_per_file=12288"],
        "dlrm_parquet_h100": ["++workload.dataset.num_files_train=64",
                              "++workload.reader.batch_size=16"],
    }
    for name, ov in sorted(shrink.items()):
        for backend in ("posix", "odirect"):
            work = os.path.join(ARGS.work, "%s_%s" % (name, backend))
            shutil.rmtree(work, ignore_errors=True)
            out = os.path.join(work, "out")
            run([ARGS.iomimic, "run", "-q", os.path.join(ARGS.source, "workloads", name + ".yaml"),
                 "++workload.workflow.generate_data=True", "++workload.storage.backend=" + backend,
                 "++workload.dataset.data_folder=" + os.path.join(work, "data"),
                 "++workload.output.folder=" + out] + ov)
            s = summary(out)
            check_trained(s, "%s on %s" % (name, backend))
            if s["iomimic"]["plugins"]["storage"]["name"] != backend:
                fail("%s: ran on %s" % (name, s["iomimic"]["plugins"]["storage"]["name"]))
            print("%s on %s: AU %.1f%%, %.0f samples/s" % (
                name, backend, s["metric"]["train_au_mean_percentage"],
                s["metric"]["train_throughput_mean_samples_per_second"]))


def main():
    global ARGS
    ARGS = interop.setup(__doc__, clean=False)
    ensure_duckdb()
    for codec, duck_name, duck_codec in CODECS:
        test_codec(codec, duck_name, duck_codec)
    test_dlrm_b200_pattern()
    test_workloads_on_backends()
    print("PASS")


if __name__ == "__main__":
    main()
