#!/usr/bin/python3
"""Benchmark: how many emulated accelerators one client keeps at the AU
target, as accelerators of one process (iomimic.accelerators_per_process)
and as one MPI rank each (the only way before, and DLIO's way).

  bench/accelerators_vs_ranks.py --iomimic build/bin/iomimic
        [--threads 16,64,128,256,384,512,768,1024] [--ranks 8,16,32,48,64]
        [--compute 0.05] [--repeat 3] [--markdown OUT.md]

Dataset: npz files of 16 KiB, page cache warm (every file read before the
runs), enough files that every accelerator reads its own samples. Each run:
computation_time `compute`, batch 4, 1 reader thread and prefetch 2 per
accelerator, 2 epochs of 12 steps (train.total_training_steps), no
evaluation. Reported: AU of the second epoch (summary.json
train_au_percentage), mean data wait per step over all accelerators, wall
time and CPU seconds of the whole run (launch included), peak RSS of the
process (ranks: of the largest rank). Where a count runs both ways the two
alternate; each cell is the median (min-max) of `repeat` runs.
"""
import argparse
import datetime
import glob
import json
import os
import shlex
import statistics
import subprocess
import sys
import time

from benchlib import ChildCpu, loadavg, machine, spread

KiB = 1 << 10
STEPS = 12
BATCH = 4


def overrides(a, data, files, out):
    return [
        "workload=quickstart",
        "++workload.workflow.generate_data=False",
        "++workload.workflow.evaluation=False",
        "++workload.dataset.format=npz",
        "++workload.dataset.read_pattern=direct",  # as the recorded figures
        "++workload.dataset.data_folder=" + data,
        "++workload.dataset.num_files_train=%d" % files,
        "++workload.dataset.num_files_eval=0",
        "++workload.dataset.num_samples_per_file=1",
        "++workload.dataset.record_length_bytes=%d" % (16 * KiB),
        "++workload.dataset.record_length_bytes_stdev=0",
        "++workload.reader.batch_size=%d" % BATCH,
        "++workload.reader.read_threads=1",
        "++workload.reader.prefetch_size=2",
        "++workload.train.computation_time=%s" % a.compute,
        "++workload.train.epochs=2",
        "++workload.train.total_training_steps=%d" % STEPS,
        "++workload.output.folder=" + out,
    ]


def run(a, data, files, mode, n, rep):
    out = os.path.join(a.work, "out-%s-%d-%d" % (mode, n, rep))
    subprocess.run(["rm", "-rf", out], check=True)
    cmd = [a.iomimic, "run", "-q"] + overrides(a, data, files, out)
    if mode == "threads":
        cmd.append("++workload.iomimic.accelerators_per_process=%d" % n)
    else:
        launcher = ["mpirun", "-np", str(n), "--oversubscribe", "--bind-to", "none"]
        if os.geteuid() == 0:
            launcher.append("--allow-run-as-root")
        cmd = launcher + cmd
    start = time.perf_counter()
    with ChildCpu() as cpu:
        p = subprocess.run(cmd, cwd=a.work, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if p.returncode != 0:
        sys.exit("run failed:\n$ %s\n%s%s" % (shlex.join(cmd), p.stdout[-2000:], p.stderr[-2000:]))
    with open(os.path.join(out, "summary.json")) as f:
        s = json.load(f)
    waits = []
    for path in glob.glob(os.path.join(out, "*_output.json")):
        with open(path) as f:
            o = json.load(f)
        for values in o["2"]["load"].values():
            waits.extend(values)
    return {
        "au": s["metric"]["train_au_percentage"][-1],
        "wait_ms": 1e3 * statistics.mean(waits),
        "wall": wall,
        "cpu": cpu.seconds,
        "rss": s["iomimic"]["peak_rss_MiB_max_rank"],
        "accelerators": s["num_accelerators"],
    }, cmd


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iomimic", required=True)
    ap.add_argument("--threads", default="16,64,128,256,384,512,768,1024")
    ap.add_argument("--ranks", default="8,16,32,48,64")
    ap.add_argument("--compute", default="0.05")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--work", default="/tmp/iomimic-bench-accelerators")
    ap.add_argument("--markdown")
    a = ap.parse_args()
    a.iomimic = os.path.abspath(a.iomimic)
    os.makedirs(a.work, exist_ok=True)
    counts_t = [int(x) for x in a.threads.split(",") if x]
    counts_r = [int(x) for x in a.ranks.split(",") if x]
    files = max(counts_t + counts_r) * BATCH * STEPS
    data = os.path.join(a.work, "data")
    gen = [a.iomimic, "generate", "-q"] + overrides(a, data, files, os.path.join(a.work, "gen"))
    subprocess.run(gen, check=True, cwd=a.work, capture_output=True)
    for path in glob.glob(os.path.join(data, "train", "**", "*.npz"), recursive=True):
        with open(path, "rb") as f:
            f.read()
    print("machine: " + machine())
    print("dataset: %d npz files of 16 KiB, warm; compute %s s, batch %d, %d steps x 2 epochs" %
          (files, a.compute, BATCH, STEPS), flush=True)
    load_start = loadavg()
    results = {}
    commands = {}
    for n in sorted(set(counts_t + counts_r)):
        modes = [m for m, counts in (("threads", counts_t), ("ranks", counts_r)) if n in counts]
        for rep in range(a.repeat):
            order = modes if rep % 2 == 0 else modes[::-1]
            for mode in order:
                got, cmd = run(a, data, files, mode, n, rep)
                if got["accelerators"] != n:
                    sys.exit("%s %d: summary counts %d accelerators" % (mode, n,
                                                                       got["accelerators"]))
                results.setdefault((mode, n), []).append(got)
                commands[mode] = cmd
                print("  %-7s N=%4d #%d  AU %6.2f%%  wait %.3f ms/step  wall %.1f s  cpu %.1f s  "
                      "rss %.0f MiB" % (mode, n, rep + 1, got["au"], got["wait_ms"], got["wall"],
                                        got["cpu"], got["rss"]), flush=True)
    lines = ["| accelerators | as | AU % (epoch 2) | data wait ms/step | wall s | CPU s | "
             "peak RSS MiB per process |", "|---:|---|---:|---:|---:|---:|---:|"]
    for (mode, n), got in sorted(results.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        lines.append("| %d | %s | %s | %s | %s | %s | %s |" % (
            n, "1 process" if mode == "threads" else "%d ranks" % n,
            spread([g["au"] for g in got], "%.2f"), spread([g["wait_ms"] for g in got], "%.3f"),
            spread([g["wall"] for g in got], "%.1f"), spread([g["cpu"] for g in got], "%.1f"),
            spread([g["rss"] for g in got], "%.0f")))
    table = "\n".join(lines)
    print()
    print(table)
    print("load average at the start: %s, at the end: %s" % (load_start, loadavg()))
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write("# accelerators_vs_ranks run of %s\n\nmachine: %s\n\n" %
                    (datetime.datetime.now().isoformat(" ", "seconds"), machine()))
            f.write("dataset: %d npz files of 16 KiB, page cache warm; computation_time %s s, "
                    "batch %d, 1 reader thread and prefetch 2 per accelerator, %d steps x 2 "
                    "epochs; %d repeats alternating\n\n" % (files, a.compute, BATCH, STEPS,
                                                            a.repeat))
            f.write("load average (1, 5, 15 min) at the start: %s, at the end: %s\n\n" %
                    (load_start, loadavg()))
            f.write(table + "\n\ncells: median (min-max)\n\ncommands:\n\n```\n$ " +
                    shlex.join(gen) + "\n")
            for mode, cmd in sorted(commands.items()):
                f.write("$ " + shlex.join(cmd) + "  # %s\n" % mode)
            f.write("```\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
