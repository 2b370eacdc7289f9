#!/usr/bin/python3
"""iomimic's parquet reader against DuckDB reading the same columns of the
same files (issue 16).

The dataset is dlrm_b200 (workloads/dlrm_b200.yaml: 200 typed columns, 40
flagged read: true, row groups of 6,144 rows), shrunk to FILES files of ROWS
rows, written once by iomimic. Page cache warm. Alternated, REPEATS rounds
of:

  iomimic, decode off   the fork's pattern: the footer, then one read per row
                        group spanning the 40 selected columns; nothing decoded
  iomimic, decode on    the same reads, then every page of the 40 columns
                        decompressed and walked (what a DLRM input pipeline does)
  DuckDB                SELECT count(*), sum(hash(c)) for each of the 40
                        columns FROM read_parquet(files): every value of the
                        selected columns decoded (DuckDB cannot read without
                        decoding); node's start-up is not timed, a warm-up
                        query runs first, then 3 timed queries (median)

Rows per second over the epochs' wall time (iomimic: EPOCHS epochs, the
training blocks' start and end in 0_per_epoch_stats.json, computation_time
0). Ratios are to
DuckDB in the same round. DuckDB's client comes from scripts/duckdb_node.sh.

Usage: bench/parquet_vs_duckdb.py --iomimic build/bin/iomimic [--work DIR]
           [--files 8] [--rows 49152] [--repeats 3] [--codec none] [--threads 2]
           [--epochs 3]
"""
import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys

import benchlib

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(HERE)


def workload_facts():
    """dlrm_b200's columns flagged read: true and its batch size (Debian's PyYAML)."""
    code = ("import json, sys, yaml; w = yaml.safe_load(open(sys.argv[1])); "
            "print(json.dumps([[c['name'] for c in w['dataset']['parquet']['columns'] "
            "if c.get('read')], w['reader']['batch_size']]))")
    p = subprocess.run(["/usr/bin/python3", "-c", code,
                        os.path.join(SOURCE, "workloads", "dlrm_b200.yaml")],
                       capture_output=True, text=True, check=True)
    return json.loads(p.stdout)


def overrides(args, data, out, extra=()):
    return ["workload=dlrm_b200",
            "++workload.dataset.data_folder=" + data,
            "++workload.dataset.num_files_train=%d" % args.files,
            "++workload.dataset.num_samples_per_file=%d" % args.rows,
            "++workload.dataset.compression=" + args.codec,
            "++workload.reader.read_threads=%d" % args.threads,
            "++workload.train.computation_time=0",
            "++workload.train.epochs=%d" % args.epochs,
            "++workload.output.folder=" + out] + list(extra)


def iomimic_rows_per_second(args, data, out, decode, batch):
    shutil.rmtree(out, ignore_errors=True)
    with benchlib.ChildCpu() as cpu:
        subprocess.run([args.iomimic, "run"] + overrides(args, data, out, [
            "++workload.workflow.generate_data=False",
            "++workload.dataset.options.decode=%s" % decode]),
            check=True, capture_output=True, text=True)
    stats = json.load(open(os.path.join(out, "0_per_epoch_stats.json")))
    # The blocks' timestamps (microseconds; "duration" is rounded to 10 ms).
    wall = sum((datetime.datetime.fromisoformat(v["block1"]["end"]) -
                datetime.datetime.fromisoformat(v["block1"]["start"])).total_seconds()
               for v in stats.values())
    rows = len(stats) * (args.files * args.rows // batch) * batch  # whole batches per epoch
    return rows / wall, cpu.seconds


def duckdb_rows_per_second(args, node_dir, files, columns):
    sums = ", ".join('sum(hash("%s"))' % c for c in columns)
    sql = "SELECT count(*) AS n, %s FROM read_parquet([%s])" % (
        sums, ", ".join("'%s'" % f for f in files))
    p = subprocess.run(["node", os.path.join(HERE, "parquet_duckdb_read.mjs"), node_dir,
                        str(args.threads), "3", sql], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("DuckDB failed: " + p.stderr[-2000:])
    result = json.loads(p.stdout)
    rows = int(result["first"]["n"])
    return rows / statistics.median(result["seconds"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--iomimic", required=True)
    ap.add_argument("--work", default="/tmp/iomimic-parquet-bench")
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--rows", type=int, default=49152)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--codec", default="none")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--node-dir", default=os.path.join(SOURCE, "build", "node"))
    args = ap.parse_args()
    subprocess.run([os.path.join(SOURCE, "scripts", "duckdb_node.sh"), args.node_dir], check=True)
    # One dataset per shape (a rerun keeps its complete files); the result
    # folders below are the bench's own and are replaced each time.
    data = os.path.join(args.work, "data_%dx%d_%s" % (args.files, args.rows, args.codec))
    gen = os.path.join(args.work, "gen")
    shutil.rmtree(gen, ignore_errors=True)
    subprocess.run([args.iomimic, "generate"] + overrides(args, data, gen, [
        "++workload.workflow.generate_data=True"]), check=True, capture_output=True)
    files = sorted(os.path.join(data, "train", f) for f in os.listdir(os.path.join(data, "train"))
                   if f.endswith(".parquet"))
    columns, batch = workload_facts()
    load_before = benchlib.loadavg()
    off, on, duck, cpu_off, cpu_on = [], [], [], [], []
    for r in range(args.repeats):
        rate, cpu = iomimic_rows_per_second(args, data, os.path.join(args.work, "off"), False,
                                            batch)
        off.append(rate)
        cpu_off.append(cpu)
        rate, cpu = iomimic_rows_per_second(args, data, os.path.join(args.work, "on"), True,
                                            batch)
        on.append(rate)
        cpu_on.append(cpu)
        duck.append(duckdb_rows_per_second(args, args.node_dir, files, columns))
        print("round %d: decode off %.0f, decode on %.0f, DuckDB %.0f rows/s" %
              (r + 1, off[-1], on[-1], duck[-1]), flush=True)
    size = sum(os.path.getsize(f) for f in files) / 2**20
    print()
    print("%d files of %d rows (%.1f MiB, codec %s), %d of 200 columns read, %d threads each; "
          "%s; load average before %s, after %s" % (args.files, args.rows, size, args.codec,
                                                     len(columns), args.threads,
                                                     benchlib.machine(), load_before,
                                                     benchlib.loadavg()))
    print()
    print("| reader | rows/s, median (min-max) | ratio to DuckDB, median (min-max) |")
    print("|---|---|---|")
    for name, rates in (("iomimic, decode off", off), ("iomimic, decode on", on)):
        ratios = [a / b for a, b in zip(rates, duck)]
        print("| %s | %s | %s |" % (name, benchlib.spread(rates, "%.0f"),
                                     benchlib.spread(ratios, "%.2f")))
    print("| DuckDB (40 columns decoded) | %s | 1 |" % benchlib.spread(duck, "%.0f"))


if __name__ == "__main__":
    main()
