#!/usr/bin/python3
"""Benchmark: how close AU comes to 100% when the storage is not the limit.

  bench/au_fidelity.py --iomimic build/bin/iomimic [--old OLD_BINARY] [--repeat 3]
                       [--markdown OUT.md]

With the synthetic format there is no I/O at all, so every point of AU below
100% is the client's own cost: the data loader's hand-offs, the emulated
compute's sleep, the per-step barrier. Cells:

  375 us x 1 rank     DLRM's step (MLPerf Storage's dlrm workloads)
  50 ms x 1 rank      a typical image model's step
  375 us x 2 ranks    DLRM's step with the per-step barrier between two processes
  50 ms x 2 ranks     the same for the image model

Each run: 4096 samples of 4 KiB, batch 4 (1024 steps at 375 us; 256 at
50 ms), 2 reader threads, 3 epochs; the cell is the mean AU of the epochs
(summary.json train_au_mean_percentage) and iomimic.compute_error_percent
(how far the emulated compute's sleep overshot what was asked). With --old,
another iomimic binary runs the same cells, alternating with this one, so
the two can be compared in the same conditions (an older binary counts the
overshoot as compute, so its AU is not comparable where the error is large).
"""
import argparse
import datetime
import json
import os
import shlex
import subprocess
import sys

from benchlib import loadavg, machine, spread

CELLS = [("0.000375", 1), ("0.000375", 2), ("0.05", 1), ("0.05", 2)]


def run(a, exe, compute, ranks, out):
    subprocess.run(["rm", "-rf", out], check=True)
    files = 4096 if compute == "0.000375" else 1024
    cmd = [exe, "run", "-q", "workload=quickstart",
           "++workload.workflow.generate_data=True",
           "++workload.workflow.evaluation=False",
           "++workload.dataset.format=synthetic",
           "++workload.dataset.data_folder=" + os.path.join(a.work, "data-%d" % files),
           "++workload.dataset.num_files_train=%d" % files,
           "++workload.dataset.num_files_eval=0",
           "++workload.dataset.num_samples_per_file=1",
           "++workload.dataset.record_length_bytes=4096",
           "++workload.dataset.record_length_bytes_stdev=0",
           "++workload.reader.batch_size=4",
           "++workload.reader.read_threads=2",
           "++workload.train.computation_time=" + compute,
           "++workload.train.epochs=3",
           "++workload.output.folder=" + out]
    if ranks > 1:
        launcher = ["mpirun", "-np", str(ranks), "--oversubscribe"]
        if os.geteuid() == 0:
            launcher.append("--allow-run-as-root")
        cmd = launcher + cmd
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=a.work)
    if p.returncode != 0:
        sys.exit("failed:\n$ %s\n%s%s" % (shlex.join(cmd), p.stdout[-2000:], p.stderr[-2000:]))
    with open(os.path.join(out, "summary.json")) as f:
        s = json.load(f)
    return (s["metric"]["train_au_mean_percentage"],
            s["iomimic"].get("compute_error_percent", float("nan"))), cmd


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iomimic", required=True)
    ap.add_argument("--old")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--work", default="/tmp/iomimic-bench-au")
    ap.add_argument("--markdown")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    binaries = [("new", os.path.abspath(a.iomimic))]
    if a.old:
        binaries.append(("old", os.path.abspath(a.old)))
    load_start = loadavg()
    got = {}
    commands = {}
    for compute, ranks in CELLS:
        for rep in range(a.repeat):
            order = binaries if rep % 2 == 0 else binaries[::-1]
            for name, exe in order:
                out = os.path.join(a.work, "out-%s-%s-%d" % (name, compute, ranks))
                (au, err), cmd = run(a, exe, compute, ranks, out)
                got.setdefault((name, compute, ranks), []).append((au, err))
                commands[(compute, ranks)] = cmd
                print("  %-3s compute %-8s ranks %d #%d  AU %.2f%%  compute error %.2f%%" %
                      (name, compute, ranks, rep + 1, au, err), flush=True)
    lines = ["| compute per step | ranks | binary | AU % | compute error % |",
             "|---|---:|---|---:|---:|"]
    for compute, ranks in CELLS:
        for name, _ in binaries:
            v = got[(name, compute, ranks)]
            lines.append("| %s s | %d | %s | %s | %s |" % (
                compute, ranks, name, spread([x[0] for x in v], "%.2f"),
                spread([x[1] for x in v], "%.2f")))
    table = "\n".join(lines)
    print()
    print(table)
    print("load average at the start: %s, at the end: %s" % (load_start, loadavg()))
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write("# au_fidelity run of %s\n\nmachine: %s\n\n" %
                    (datetime.datetime.now().isoformat(" ", "seconds"), machine()))
            f.write("load average (1, 5, 15 min) at the start: %s, at the end: %s\n\n" %
                    (load_start, loadavg()))
            f.write(table + "\n\ncells: median (min-max) of %d runs, binaries alternating\n\n"
                    "commands (new binary):\n\n```\n" % a.repeat)
            for key in CELLS:
                f.write("$ " + shlex.join(commands[key]) + "\n")
            f.write("```\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
