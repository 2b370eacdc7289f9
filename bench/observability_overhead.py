#!/usr/bin/python3
"""Benchmark: what observability costs (timeline.csv, events.csv,
histograms.json, the finer latency histograms, the storage-operation timers).

  bench/observability_overhead.py --iomimic build/bin/iomimic --old OLD_BINARY
                                  [--repeat 5] [--markdown OUT.md]

Two cells, each run by this binary with the timeline on (the default, 100 ms
intervals), by this binary with iomimic.timeline_interval=0, and by OLD, a
binary from before observability (commit d532af9), alternating which runs
first in every repeat:

  warm reads   64 npz files of 4 MiB in the page cache, decode off, batch 4,
               2 reader threads, computation_time 0, 10 epochs: the epochs'
               mean read MiB/s (iomimic.train_io_actual_mean_MiB_per_second);
               the most sensitive case, every request timed and counted.
  AU 375 us    synthetic format (no I/O), 4096 samples of 4 KiB, batch 4,
               2 reader threads, 3 epochs, DLRM's 375 us step: train AU mean.

The issue's bar: < 2% of warm-read throughput and < 0.5 pp of AU.
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys

from benchlib import loadavg, machine, spread


def run(exe, cell, work, out, extra):
    subprocess.run(["rm", "-rf", out], check=True)
    if cell == "warm":
        cmd = [exe, "run", "-q", "workload=quickstart",
               "++workload.workflow.generate_data=True",
               "++workload.workflow.evaluation=False",
               "++workload.dataset.format=npz",
               "++workload.dataset.read_pattern=direct",  # as the recorded figures
               "++workload.dataset.data_folder=" + os.path.join(work, "npz"),
               "++workload.dataset.num_files_train=64",
               "++workload.dataset.num_files_eval=0",
               "++workload.dataset.num_samples_per_file=1",
               "++workload.dataset.record_length_bytes=4194304",
               "++workload.dataset.record_length_bytes_stdev=0",
               "++workload.reader.batch_size=4",
               "++workload.reader.read_threads=2",
               "++workload.reader.decode=False",
               "++workload.train.computation_time=0",
               "++workload.train.epochs=10"]
    else:
        cmd = [exe, "run", "-q", "workload=quickstart",
               "++workload.workflow.generate_data=True",
               "++workload.workflow.evaluation=False",
               "++workload.dataset.format=synthetic",
               "++workload.dataset.data_folder=" + os.path.join(work, "synthetic"),
               "++workload.dataset.num_files_train=4096",
               "++workload.dataset.num_files_eval=0",
               "++workload.dataset.num_samples_per_file=1",
               "++workload.dataset.record_length_bytes=4096",
               "++workload.dataset.record_length_bytes_stdev=0",
               "++workload.reader.batch_size=4",
               "++workload.reader.read_threads=2",
               "++workload.train.computation_time=0.000375",
               "++workload.train.epochs=3"]
    cmd += ["++workload.output.folder=" + out] + extra
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=work)
    if p.returncode != 0:
        sys.exit("failed:\n%s\n%s%s" % (" ".join(cmd), p.stdout, p.stderr))
    with open(os.path.join(out, "summary.json")) as f:
        s = json.load(f)
    if cell == "warm":
        return s["iomimic"]["train_io_actual_mean_MiB_per_second"]
    return s["metric"]["train_au_mean_percentage"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iomimic", required=True)
    ap.add_argument("--old", required=True)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--work", default="/tmp/iomimic-bench-obs")
    ap.add_argument("--markdown")
    a = ap.parse_args()
    a.iomimic, a.old = os.path.abspath(a.iomimic), os.path.abspath(a.old)
    os.makedirs(a.work, exist_ok=True)
    variants = [("on", a.iomimic, []),
                ("off", a.iomimic, ["++workload.iomimic.timeline_interval=0"]),
                ("old", a.old, [])]
    load_start = loadavg()
    rows = []
    for cell in ("warm", "au"):
        # Warm-up: generate the data and fill the page cache.
        run(a.iomimic, cell, a.work, os.path.join(a.work, "warmup"), [])
        got = {name: [] for name, _, _ in variants}
        for rep in range(a.repeat):
            order = variants[rep % 3:] + variants[:rep % 3]
            for name, exe, extra in order:
                got[name].append(run(exe, cell, a.work, os.path.join(a.work, "out-" + name),
                                     extra))
            print("  %s #%d  on %.2f  off %.2f  old %.2f" %
                  (cell, rep + 1, got["on"][-1], got["off"][-1], got["old"][-1]), flush=True)
        rows.append((cell, got))
    lines = ["| cell | on (default) | timeline off | before observability | on / old | on - old |",
             "|---|---:|---:|---:|---:|---:|"]
    for cell, got in rows:
        fmt = "%.1f" if cell == "warm" else "%.2f"
        on, old = statistics.median(got["on"]), statistics.median(got["old"])
        ratio = [x / y for x, y in zip(got["on"], got["old"])]
        lines.append("| %s | %s | %s | %s | %.3f (%.3f-%.3f) | %+.2f |" % (
            "warm reads MiB/s" if cell == "warm" else "AU % at 375 us",
            spread(got["on"], fmt), spread(got["off"], fmt), spread(got["old"], fmt),
            statistics.median(ratio), min(ratio), max(ratio), on - old))
    table = "\n".join(lines)
    print(table)
    print("load average at the start: %s, at the end: %s" % (load_start, loadavg()))
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write("# observability overhead, %s\n\nmachine: %s\n\nload average at the start: "
                    "%s, at the end: %s\n\n%s\n" % (
                        datetime.datetime.now().isoformat(" ", "seconds"), machine(), load_start,
                        loadavg(), table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
