#!/usr/bin/python3
"""Cost of writing the results of a long run: one epoch of 1M steps (synthetic
format, batch 1, computation_time 0: no I/O), binaries alternated per round.

  bench/results_output.py --binary old=/work/baseline/bin/iomimic \\
      --binary new=build/bin/iomimic --binary new-unbounded=build/bin/iomimic:max_step_list=0

A binary given as PATH:max_step_list=N runs with ++workload.iomimic.max_step_list=N.
Per run: the output phase (status.json's "end", written right after the
results, minus summary.json's "end", the end of training), iomimic.output_seconds
where the binary reports it, <rank>_output.json's size, summary.json's
peak_rss_MiB_max_rank and the process's maximum RSS (getrusage of the child).
"""
import argparse
import datetime
import json
import os
import resource
import shutil
import subprocess


def stamp(text):
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%f")


def run_once(exe, extra, work, name, steps):
    out = os.path.join(work, "out-" + name)
    shutil.rmtree(out, ignore_errors=True)
    files = 100
    cmd = [exe, "run", "-q", "workload=quickstart",
           "++workload.dataset.format=synthetic",
           "++workload.dataset.data_folder=" + os.path.join(work, "data"),
           "++workload.dataset.num_files_train=%d" % files,
           "++workload.dataset.num_samples_per_file=%d" % (steps // files),
           "++workload.dataset.num_files_eval=0", "++workload.workflow.evaluation=False",
           "++workload.reader.batch_size=1", "++workload.reader.read_threads=1",
           "++workload.train.computation_time=0", "++workload.train.epochs=1",
           "++workload.output.folder=" + out] + extra
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    p = subprocess.run(cmd, cwd=work, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit("%s failed:\n%s" % (name, p.stderr))
    child_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    summary = json.load(open(os.path.join(out, "summary.json")))
    status = json.load(open(os.path.join(out, "status.json")))
    io = summary["iomimic"]
    return {
        "phase_s": (stamp(status["end"]) - stamp(summary["end"])).total_seconds(),
        "output_s": io.get("output_seconds"),
        "size_MB": os.path.getsize(os.path.join(out, "0_output.json")) / 1e6,
        "peak_rss_summary": io["peak_rss_MiB_max_rank"],
        # RUSAGE_CHILDREN keeps the largest child so far: valid only when it grew.
        "maxrss_MiB": child_rss / 1024.0 if child_rss > before else None,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", action="append", required=True, help="NAME=PATH[:max_step_list=N]")
    ap.add_argument("--steps", type=int, default=1000000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--work", default="/tmp/iomimic-bench-results-output")
    a = ap.parse_args()
    binaries = []
    for b in a.binary:
        name, spec = b.split("=", 1)
        path, _, option = spec.partition(":")
        extra = ["++workload.iomimic." + option] if option else []
        binaries.append((name, os.path.abspath(path), extra))
    os.makedirs(a.work, exist_ok=True)
    # The dataset (synthetic: empty files) once, outside the measured runs.
    subprocess.run([binaries[-1][1], "generate", "-q", "workload=quickstart",
                    "++workload.dataset.format=synthetic",
                    "++workload.dataset.data_folder=" + os.path.join(a.work, "data"),
                    "++workload.dataset.num_files_train=100", "++workload.dataset.num_files_eval=0",
                    "++workload.dataset.num_samples_per_file=%d" % (a.steps // 100)],
                   cwd=a.work, check=True, capture_output=True)
    print("| round | binary | output phase s | output_seconds | output.json MB | "
          "peak RSS (summary) MiB | max RSS (process) MiB |")
    print("|---|---|---|---|---|---|---|")
    for r in range(1, a.rounds + 1):
        for name, path, extra in binaries:
            # A fresh process per run; RUSAGE_CHILDREN's maximum only grows, so
            # measure each run in its own python child.
            code = ("import sys, json; sys.path.insert(0, %r); import results_output as b; "
                    "print(json.dumps(b.run_once(%r, %r, %r, %r, %d)))" %
                    (os.path.dirname(os.path.abspath(__file__)), path, extra, a.work, name,
                     a.steps))
            p = subprocess.run(["/usr/bin/python3", "-c", code], capture_output=True, text=True)
            if p.returncode != 0:
                raise SystemExit(p.stderr)
            m = json.loads(p.stdout)
            fmt = lambda v, f: "-" if v is None else f % v
            print("| %d | %s | %.3f | %s | %.1f | %.1f | %s |" %
                  (r, name, m["phase_s"], fmt(m["output_s"], "%.3f"), m["size_MB"],
                   m["peak_rss_summary"], fmt(m["maxrss_MiB"], "%.1f")), flush=True)


if __name__ == "__main__":
    main()
