#!/usr/bin/python3
"""Benchmark: writing one shared dataset file with several ranks, against fio.

  bench/shared_generation_vs_fio.py --iomimic build/bin/iomimic [--size-mib 1024]
                                    [--ranks 2] [--repeat 3] [--work DIR]
                                    [--markdown OUT.md]

The dataset is one indexed-binary file of S MiB (DLIO's shared-file layout:
samples of 1 MiB back to back, plus two index files). iomimic writes it:

  posix, 1 rank     the whole file from one process (WriteFile, 32 MiB
                    chunks: what every rank does for its own files)
  mpiio independent R ranks, each its 1/R slice with MPI_File_write_at
  mpiio collective  R ranks, one MPI_File_write_at_all per 32 MiB round
                    (ROMIO/OMPIO two-phase collective buffering)

fio writes the same bytes' worth in the same pattern, buffered, no fsync:
1 job writing the file start to end (bs 32M), and R jobs each writing its
1/R slice of one file (offset_increment), bs 32M. The iomimic figures
include generating the content (iomimic::ContentStream, which fio does not
do: its buffers are filled once), so the ratios are a lower bound of the write
path's efficiency. The results of bench/results/shared_generation.md were
taken with the earlier xoshiro256** stream (bench/results/content_fill.md). Throughput: iomimic = the "generated ... MiB/s" line (payload
and index bytes / the slowest rank's generation time); fio = the group's
write bw_bytes. The data folder is removed before every iomimic run and the
fio file before every fio run; the page cache is dropped before each run,
followed by --settle seconds (5) for the reason storage_vs_fio.py gives.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys

from benchlib import drop_caches

MiB = 1 << 20
RATE = re.compile(r"generated \d+ files .* in [\d.]+ s \(([\d.]+) MiB/s\)")



def manifest(a, data):
    return """model:
  name: shared_generation
framework: pytorch
workflow:
  generate_data: True
  train: False
dataset:
  data_folder: %s
  format: indexed_binary
  num_files_train: 1
  num_files_eval: 0
  num_samples_per_file: %d
  record_length_bytes: 1048576
  record_length_bytes_stdev: 0
  num_subfolders_train: 0
""" % (data, a.size_mib)


def iomimic(a, path, ranks, backend):
    data = os.path.join(a.work, "data")
    shutil.rmtree(data, ignore_errors=True)
    drop_caches(a.settle)
    cmd = [a.iomimic, "generate", path, "++workload.dataset.data_folder=" + data]
    if backend == "posix":
        cmd.append("++workload.storage.backend=posix")
    else:
        cmd += ["++workload.storage.backend=mpiio", "++workload.storage.options.mode=" + backend]
    if ranks > 1:
        cmd = ["mpirun", "-np", str(ranks), "--oversubscribe"] + \
            (["--allow-run-as-root"] if os.geteuid() == 0 else []) + cmd
    p = subprocess.run(cmd, capture_output=True, text=True)
    m = RATE.search(p.stdout)
    if p.returncode != 0 or not m:
        sys.exit("iomimic failed:\n$ %s\n%s%s" % (" ".join(cmd), p.stdout, p.stderr))
    return float(m.group(1)), cmd


def fio(a, jobs):
    target = os.path.join(a.work, "fio.bin")
    if os.path.exists(target):
        os.unlink(target)
    drop_caches(a.settle)
    size = a.size_mib * MiB // jobs
    cmd = ["fio", "--output-format=json", "--name=w", "--filename=" + target, "--rw=write",
           "--bs=32M", "--ioengine=psync", "--direct=0", "--thread=1", "--group_reporting=1",
           "--numjobs=%d" % jobs, "--size=%d" % size, "--offset_increment=%d" % size]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("fio failed:\n$ %s\n%s%s" % (" ".join(cmd), p.stdout, p.stderr))
    job = json.loads(p.stdout[p.stdout.index("{"):])["jobs"][0]
    return job["write"]["bw_bytes"] / MiB, cmd


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iomimic", required=True)
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--work", default="/tmp/iomimic-bench-shared")
    ap.add_argument("--markdown")
    ap.add_argument("--settle", type=float, default=5.0,
                    help="seconds to wait after dropping the caches")
    a = ap.parse_args()
    a.iomimic = os.path.abspath(a.iomimic)
    os.makedirs(a.work, exist_ok=True)
    path = os.path.join(a.work, "shared_generation.yaml")
    with open(path, "w") as f:
        f.write(manifest(a, os.path.join(a.work, "data")))

    cases = [("posix, 1 rank", 1, "posix", 1), ("mpiio independent", a.ranks, "independent",
                                                   a.ranks),
             ("mpiio collective", a.ranks, "collective", a.ranks)]
    rows, commands = [], []
    for label, ranks, backend, jobs in cases:
        mine, theirs, ratios = [], [], []
        for rep in range(a.repeat):
            order = ["iomimic", "fio"] if rep % 2 == 0 else ["fio", "iomimic"]
            got = {}
            for tool in order:
                if tool == "iomimic":
                    got[tool], cmd = iomimic(a, path, ranks, backend)
                else:
                    got[tool], cmd = fio(a, jobs)
                if rep == 0:
                    commands.append(" ".join(cmd))
            mine.append(got["iomimic"])
            theirs.append(got["fio"])
            ratios.append(got["iomimic"] / got["fio"])
            print("  %-18s #%d  iomimic %8.1f MiB/s  fio (%d job%s) %8.1f MiB/s  ratio %.2f" %
                  (label, rep + 1, got["iomimic"], jobs, "s" if jobs > 1 else "", got["fio"],
                   ratios[-1]), flush=True)
        rows.append((label, jobs, statistics.median(mine), statistics.median(theirs),
                     statistics.median(ratios), ratios))
    table = ["| iomimic | fio jobs | iomimic MiB/s | fio MiB/s | ratio (median) | ratios |",
             "|---|---:|---:|---:|---:|---|"]
    for label, jobs, m, t, r, rs in rows:
        table.append("| %s | %d | %.1f | %.1f | %.2f | %s |" %
                     (label, jobs, m, t, r, " ".join("%.2f" % x for x in rs)))
    text = "\n".join(table)
    print()
    print(text)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write("one %d MiB indexed-binary file, %d ranks, %d repeats\n\n%s\n\ncommands:\n\n```\n%s\n```\n"
                    % (a.size_mib, a.ranks, a.repeat, text, "\n".join(commands)))


if __name__ == "__main__":
    main()
