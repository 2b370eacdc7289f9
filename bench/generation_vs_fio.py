#!/usr/bin/python3
"""Benchmark: `iomimic generate` of an npz dataset against fio's sequential write.

  bench/generation_vs_fio.py --iomimic build/bin/iomimic [--old OTHER/bin/iomimic]
                             [--size-mib 512] [--files 8] [--repeat 3] [--work DIR]
                             [--settle 5] [--markdown OUT.md]

The dataset is --files npz files of size/files MiB each (1 MiB samples, one
sample array per file, DLIO's npz layout), written by one rank through the
posix back end: buffered, no fsync. fio writes the same bytes' worth to one
file, one job, bs 4M (buffered, no fsync: fio fills its buffer once and never
generates content). Each round runs every tool once, in rotating order; the
page cache is dropped before each run and --settle seconds waited (the
free-page-reporting effect bench/storage_vs_fio.py describes). Reported per
tool: MiB/s (iomimic's "generated ... MiB/s" line; fio's bw_bytes) and user
and system CPU seconds per GiB of the child (getrusage), medians and min-max
over the rounds, and the iomimic / fio ratio of the median rates. User time
is where content generation shows; system time is the kernel's page cache
work, which dominates buffered writes and varies with the host. --old runs a
second iomimic binary (an earlier build) on the same manifest, for A/B.
"""
import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys

from benchlib import drop_caches

MiB = 1 << 20
RATE = re.compile(r"generated \d+ files .* in [\d.]+ s \(([\d.]+) MiB/s\)")



def timed(cmd):
    """Runs cmd; returns (completed process, (user, system) CPU seconds of the child)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(cmd, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime)
    if p.returncode != 0:
        sys.exit("failed:\n$ %s\n%s%s" % (" ".join(cmd), p.stdout, p.stderr))
    return p, cpu


def manifest(a, data):
    return """model:
  name: generation_vs_fio
framework: pytorch
workflow:
  generate_data: True
  train: False
dataset:
  data_folder: %s
  format: npz
  num_files_train: %d
  num_files_eval: 0
  num_samples_per_file: %d
  record_length_bytes: 1048576
  record_length_bytes_stdev: 0
  num_subfolders_train: 0
""" % (data, a.files, a.size_mib // a.files)


def iomimic(a, binary, path):
    data = os.path.join(a.work, "data")
    shutil.rmtree(data, ignore_errors=True)
    drop_caches(a.settle)
    cmd = [binary, "generate", path, "++workload.storage.backend=posix"]
    p, cpu = timed(cmd)
    m = RATE.search(p.stdout)
    if not m:
        sys.exit("no rate line from:\n$ %s\n%s" % (" ".join(cmd), p.stdout))
    shutil.rmtree(data, ignore_errors=True)
    return float(m.group(1)), cpu, cmd


def fio(a):
    target = os.path.join(a.work, "fio.bin")
    if os.path.exists(target):
        os.unlink(target)
    drop_caches(a.settle)
    cmd = ["fio", "--output-format=json", "--name=w", "--filename=" + target, "--rw=write",
           "--bs=4M", "--ioengine=psync", "--direct=0", "--thread=1",
           "--size=%d" % (a.size_mib * MiB)]
    p, cpu = timed(cmd)
    job = json.loads(p.stdout[p.stdout.index("{"):])["jobs"][0]
    os.unlink(target)
    return job["write"]["bw_bytes"] / MiB, cpu, cmd


def summary(values):
    return statistics.median(values), min(values), max(values)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iomimic", required=True)
    ap.add_argument("--old", help="an earlier iomimic binary to compare with")
    ap.add_argument("--size-mib", type=int, default=512)
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--work", default="/tmp/iomimic-bench-generation")
    ap.add_argument("--settle", type=float, default=5.0)
    ap.add_argument("--markdown")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    path = os.path.join(a.work, "generation.yaml")
    with open(path, "w") as f:
        f.write(manifest(a, os.path.join(a.work, "data")))

    tools = [("iomimic", os.path.abspath(a.iomimic))]
    if a.old:
        tools.append(("iomimic (old)", os.path.abspath(a.old)))
    tools.append(("fio", None))
    rates = {name: [] for name, _ in tools}
    users = {name: [] for name, _ in tools}
    systems = {name: [] for name, _ in tools}
    commands = {}
    gib = a.size_mib / 1024.0
    for rep in range(a.repeat):
        order = tools[rep % len(tools):] + tools[:rep % len(tools)]
        for name, binary in order:
            rate, cpu, cmd = iomimic(a, binary, path) if binary else fio(a)
            rates[name].append(rate)
            users[name].append(cpu[0] / gib)
            systems[name].append(cpu[1] / gib)
            commands[name] = " ".join(cmd)
            print("  #%d %-14s %8.1f MiB/s  user %.2f  sys %.2f CPU-s/GiB" %
                  (rep + 1, name, rate, cpu[0] / gib, cpu[1] / gib), flush=True)
    fio_rate = statistics.median(rates["fio"])
    table = ["| tool | MiB/s median (min-max) | user CPU-s/GiB | system CPU-s/GiB | rate / fio |",
             "|---|---:|---:|---:|---:|"]
    for name, _ in tools:
        r, u, y = summary(rates[name]), summary(users[name]), summary(systems[name])
        table.append("| %s | %.0f (%.0f-%.0f) | %.2f (%.2f-%.2f) | %.2f (%.2f-%.2f) | %.2f |" %
                     (name, r[0], r[1], r[2], u[0], u[1], u[2], y[0], y[1], y[2],
                      r[0] / fio_rate))
    text = "\n".join(table)
    print()
    print(text)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write("%d MiB of npz (%d files), %d rounds\n\n%s\n\ncommands:\n\n```\n%s\n```\n" %
                    (a.size_mib, a.files, a.repeat, text,
                     "\n".join(commands[name] for name, _ in tools)))


if __name__ == "__main__":
    main()
