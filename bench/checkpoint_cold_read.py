#!/usr/bin/python3
"""A checkpoint read that cannot come from the writer's page cache (issue 26,
DLIO issue 277), beside fio's cold read of the same files.

  sudo bench/checkpoint_cold_read.py --iomimic build/bin/iomimic [--repeat 3]
      [--dir /tmp/iomimic-bench-coldck] [--settle 5] [--out bench/results/checkpoint_cold_read.md]

Needs root (namespace hosts, drop_caches). A 2-host namespace cluster
(scripts/cluster.sh) writes a shrunk llama_8b_zero3 checkpoint (4 ranks, 2
per host, fsync), then every repeat measures, in rotating order:

  A  iomimic, a later invocation on the other hosts (checkpoint-only with
     num_checkpoints_write 0, recovery_rank_shift, checkpoint.drop_cache),
     after drop_caches: the read path MLPerf v3.0's failover variant means
  B  fio: 4 jobs (one per rank's files, read one after the other), bs 4M,
     psync, after drop_caches: the disk's cold read of the same bytes;
     launched through the same mpirun (one process on h1)
  C  iomimic as A without drop_caches first, the files' pages cached by the
     run before: checkpoint.drop_cache alone makes the read cold
  D  iomimic as C without checkpoint.drop_cache: the read the page cache
     serves ("other host, later invocation" on hosts that share one kernel)
  E  fio as B without drop_caches: fio drops the files' pages itself (its
     default invalidate=1, fadvise DONTNEED), as C does: C's peer

drop_caches makes every later read slower on this VM than a read after
fadvise (the freed memory goes back to the host, which must hand it out
again), so A pairs with B and C with E.

GiB/s is the checkpoint's bytes over the slowest rank's read time
(checkpoint.rank_sync) for iomimic and fio's aggregate bandwidth.
"""
import argparse
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = dict(os.environ, IOMIMIC_CLUSTER_NAME="iomb", IOMIMIC_CLUSTER_NET="10.231.66")
ARMS = "ABCDE"
MODEL = ["++workload.model.num_layers=4", "++workload.model.transformer.hidden_size=1024",
         "++workload.model.transformer.ffn_hidden_size=3584",
         "++workload.model.transformer.vocab_size=64000"]


def cluster(*words):
    return subprocess.run([os.path.join(ROOT, "scripts", "cluster.sh")] + list(words), env=ENV,
                          check=True, capture_output=True, text=True)


def iomimic(a, out, writes, reads, extra=()):
    """One checkpoint-only invocation on h1:2,h2:2; (GiB/s, read_path)."""
    shutil.rmtree(out, ignore_errors=True)
    cmd = ["mpirun", a.cluster, "-np", "4", "--host", "h1:2,h2:2", a.iomimic, "run", "-q",
           "--config-dir", os.path.join(ROOT, "workloads"), "workload=llama_8b_zero3",
           "++workload.checkpoint.checkpoint_folder=" + a.ckpt,
           "++workload.checkpoint.time_between_checkpoints=0",
           "++workload.checkpoint.rank_sync=True",
           "++workload.checkpoint.num_checkpoints_write=%d" % writes,
           "++workload.checkpoint.num_checkpoints_read=%d" % reads,
           "++workload.output.folder=" + out] + MODEL + list(extra)
    cluster(*cmd)
    with open(os.path.join(out, "summary.json")) as f:
        s = json.load(f)
    key = "load" if reads else "save"
    return (s["metric"]["%s_checkpoint_io_mean_GB_per_second" % key],
            s["iomimic"]["checkpoint"].get("read_path"))


def fio(a):
    """fio's aggregate GiB/s, launched the way iomimic is (mpirun over the
    cluster, one process on h1), so that both start reading as long after
    drop_caches as the other: this VM hands freed memory back to its host
    in the seconds after drop_caches, and a read that starts later pays for
    faulting more of it back (bench/results/storage_vs_fio.md)."""
    cmd = ["mpirun", a.cluster, "-np", "1", "--host", "h1:1", "fio", "--output-format=json",
           "--group_reporting"]
    files_by_rank = a.files
    for rank, files in sorted(files_by_rank.items()):
        cmd += ["--name=rank%d" % rank, "--filename=" + ":".join(files), "--rw=read", "--bs=4M",
                "--ioengine=psync", "--file_service_type=sequential"]
    out = cluster(*cmd).stdout
    return json.loads(out[out.index("{"):])["jobs"][0]["read"]["bw_bytes"] / 2**30


def shard_files(ckpt):
    """The checkpoint's files grouped by the rank in their names."""
    groups = {}
    files = sorted(glob.glob(os.path.join(ckpt, "*", "*")))
    for i, path in enumerate(files):
        m = re.search(r"rank_(\d+)", os.path.basename(path))
        groups.setdefault(int(m.group(1)) if m else i % 4, []).append(path)
    return groups, sum(os.path.getsize(p) for p in files)


def measure(a, arm, n):
    """One measurement of arm A-D: (GiB/s, read path)."""
    if arm in "AB":
        benchlib.drop_caches(a.settle)
    if arm in "BE":
        return fio(a), "fio"
    extra = ["++workload.checkpoint.recovery_rank_shift=True"]
    if arm in "AC":
        extra.append("++workload.checkpoint.drop_cache=True")
    return iomimic(a, os.path.join(a.dir, "read-%s-%d" % (arm, n)), 0, 1, extra)


def table(a, results, size, load):
    arms = {"A": "iomimic, later invocation, other host, drop_cache, after drop_caches",
            "B": "fio, 4 jobs, cold (after drop_caches)",
            "C": "iomimic, later invocation, other host, drop_cache, cache warm",
            "D": "iomimic, later invocation, other host, no drop_cache, cache warm",
            "E": "fio, 4 jobs, its own invalidate (fadvise DONTNEED), no drop_caches"}
    lines = ["| arm | read | read path (summary.json) | GiB/s median (min-max) | vs fio cold |",
             "| --- | --- | --- | --- | --- |"]
    fio_median = statistics.median(v for v, _ in results["B"])
    for arm in ARMS:
        values = [v for v, _ in results[arm]]
        paths = sorted({p for _, p in results[arm]})
        lines.append("| %s | %s | %s | %s | %.2fx |" % (
            arm, arms[arm], ", ".join(paths), benchlib.spread(values, "%.3f"),
            statistics.median(values) / fio_median))
    a_over_b = [b / x for (x, _), (b, _) in zip(results["A"], results["B"])]
    c_over_e = [e / x for (x, _), (e, _) in zip(results["C"], results["E"])]
    return "\n".join(lines) + (
        "\n\nCheckpoint %.2f GiB in %d files (4 ranks on 2 namespace hosts); %d repeats, arms "
        "rotating; drop_caches then %g s settle before A and B. Read time over fio's, per "
        "repeat: A/B %s, C/E %s (limit 1.10).\n\nMachine: %s; load before: %s, after: %s.\n" % (
            size / 2**30, sum(len(f) for f in a.files.values()), a.repeat, a.settle,
            ", ".join("%.2f" % r for r in a_over_b), ", ".join("%.2f" % r for r in c_over_e),
            benchlib.machine(True), load, benchlib.loadavg()))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--iomimic", required=True, help="the iomimic binary")
    ap.add_argument("--out", default="", help="append the table to this file")
    ap.add_argument("--dir", default="/tmp/iomimic-bench-coldck", help="work folder (emptied)")
    ap.add_argument("--repeat", type=int, default=3, help="rounds of all arms")
    ap.add_argument("--settle", type=float, default=5, help="seconds after drop_caches")
    a = ap.parse_args()
    a.iomimic = os.path.abspath(a.iomimic)
    shutil.rmtree(a.dir, ignore_errors=True)
    os.makedirs(a.dir)
    a.cluster = os.path.join(a.dir, "cluster")
    a.ckpt = os.path.join(a.dir, "ckpt")
    load = benchlib.loadavg()
    cluster("start", "2", a.cluster)
    try:
        iomimic(a, os.path.join(a.dir, "write"), 1, 0, ["++workload.checkpoint.fsync=True"])
        a.files, size = shard_files(a.ckpt)
        results = {arm: [] for arm in ARMS}
        for n in range(a.repeat):
            order = ARMS[n % len(ARMS):] + ARMS[:n % len(ARMS)]
            for arm in order:
                results[arm].append(measure(a, arm, n))
                print("repeat %d %s: %.3f GiB/s (%s)" % ((n, arm) + results[arm][-1]), flush=True)
    finally:
        cluster("stop", a.cluster)
    text = table(a, results, size, load)
    print(text)
    if a.out:
        with open(a.out, "a") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
