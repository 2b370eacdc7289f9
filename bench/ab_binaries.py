#!/usr/bin/python3
"""Benchmark: two iomimic builds on the same workload, alternated, to show a
change leaves a path's speed as it was (a refactor's "within noise").

  bench/ab_binaries.py --old OLD/bin/iomimic --new NEW/bin/iomimic
      [--rounds 3] [--work DIR] [--figure PATH] -- ARGS...

ARGS are `iomimic run` arguments (a manifest or workload=NAME and
++overrides); each run gets its own ++workload.output.folder. Per round the
two builds run in turn, the first alternating from round to round. Reported
per build: the figure at --figure (a dotted path into summary.json, e.g.
kv_cache.aggregate.storage_tokens_per_second), wall seconds, and CPU seconds
(user + system of the whole process, os.wait4) per GiB the storage layer
moved (iomimic.bytes_read + bytes_written); medians and min-max, and the
new/old ratio of each median. Prints a markdown table.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def run_once(binary, args, out):
    start = time.monotonic()
    p = subprocess.Popen([binary, "run", "-q"] + args + ["++workload.output.folder=" + out],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.monotonic() - start
    if status != 0:
        sys.exit("%s failed: %s" % (binary, p.stderr.read().decode()[-2000:]))
    s = json.load(open(os.path.join(out, "summary.json")))
    moved = s["iomimic"]["bytes_read"] + s["iomimic"]["bytes_written"]
    return s, wall, (usage.ru_utime + usage.ru_stime) / max(moved / 2**30, 1e-9)


def at(s, path):
    for k in path.split("."):
        s = s[k]
    return float(s)


def cell(values):
    return "%.4g (%.4g-%.4g)" % (statistics.median(values), min(values), max(values))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--old", required=True)
    ap.add_argument("--new", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--work", default="/tmp/iomimic-bench-ab")
    ap.add_argument("--figure", required=True)
    ap.add_argument("args", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    args = [x for x in a.args if x != "--"]
    os.makedirs(a.work, exist_ok=True)
    got = {"old": [], "new": []}
    load = [os.getloadavg()[0]]
    for r in range(a.rounds):
        order = ["old", "new"] if r % 2 == 0 else ["new", "old"]
        for which in order:
            out = os.path.join(a.work, "%s_%d_%d" % (which, r, os.getpid()))
            s, wall, cpu = run_once(getattr(a, which), args, out)
            got[which].append((at(s, a.figure), wall, cpu))
    load.append(os.getloadavg()[0])
    print("| build | %s | wall s | CPU s/GiB moved |" % a.figure)
    print("|---|---:|---:|---:|")
    med = {}
    for which in ("old", "new"):
        cols = list(zip(*got[which]))
        med[which] = [statistics.median(c) for c in cols]
        print("| %s | %s | %s | %s |" % (which, cell(cols[0]), cell(cols[1]), cell(cols[2])))
    print("| new/old (medians) | %.3f | %.3f | %.3f |" %
          tuple(n / o if o else float("nan") for n, o in zip(med["new"], med["old"])))
    print("\n%d rounds, alternated; load average %.2f at the start, %.2f at the end" %
          (a.rounds, load[0], load[1]))


if __name__ == "__main__":
    main()
