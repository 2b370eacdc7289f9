#!/usr/bin/python3
"""Benchmark: iomimic's npz read path against NumPy's np.load (what DLIO's
npz reader calls per sample), on the same page-cached files, in one run.

  bench/npz_read_vs_numpy.py --iomimic build/bin/iomimic [--files 300] [--threads 2]

1. iomimic generates N npz files of 1-4 MiB (record_length 2.5 MiB +- 0.75 MiB).
2. Both readers run once to warm the page cache.
3. iomimic runs one epoch with computation_time 0 (pure data loading),
   `threads` reader threads, batch 4; the summary gives samples/s, MiB/s
   actually read, and peak RSS.
4. The peer: `threads` Python worker processes (DLIO's PyTorch workers) each
   doing np.load(f)['x'] over their share of the same files.
Prints a table and the iomimic/numpy ratios. Run it several times: the
machines are noisy, report the ratio.
"""
import argparse
import glob
import json
import multiprocessing
import os
import subprocess
import time


def numpy_worker(paths):
    import numpy as np
    nbytes = 0
    for p in paths:
        with np.load(p) as z:
            x = z["x"]
            nbytes += x.nbytes
    return nbytes


def run_numpy(files, threads):
    chunks = [files[i::threads] for i in range(threads)]
    t0 = time.perf_counter()
    with multiprocessing.get_context("fork").Pool(threads) as pool:
        nbytes = sum(pool.map(numpy_worker, chunks))
    dt = time.perf_counter() - t0
    return len(files) / dt, nbytes / dt / 2**20, dt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iomimic", required=True)
    ap.add_argument("--files", type=int, default=300)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--work", default="/tmp/iomimic-bench-npz")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    exe = os.path.abspath(a.iomimic)
    os.makedirs(a.work, exist_ok=True)
    data = os.path.join(a.work, "data")
    common = [
        "workload=quickstart",
        "++workload.dataset.data_folder=" + data,
        "++workload.dataset.read_pattern=direct",  # as the recorded figures
        "++workload.dataset.num_files_train=%d" % a.files,
        "++workload.dataset.num_files_eval=0",
        "++workload.dataset.record_length_bytes=2621440",
        "++workload.dataset.record_length_bytes_stdev=786432",
        "++workload.workflow.evaluation=False",
        "++workload.train.computation_time=0",
        "++workload.reader.batch_size=4",
        "++workload.reader.read_threads=%d" % a.threads,
        "++workload.reader.file_shuffle=off",
        "++workload.reader.sample_shuffle=off",
        "++workload.train.epochs=1",
    ]
    subprocess.run([exe, "generate"] + common, check=True, cwd=a.work)
    files = sorted(glob.glob(os.path.join(data, "train", "**", "*.npz"), recursive=True))
    total = sum(os.path.getsize(f) for f in files)
    print("dataset: %d files, %.1f MiB (%.2f MiB per file)" % (len(files), total / 2**20,
                                                               total / 2**20 / len(files)))
    run_numpy(files, a.threads)  # warm the page cache
    rows = []
    for i in range(a.repeat):
        out = os.path.join(a.work, "out-%d-%d" % (os.getpid(), i))
        subprocess.run([exe, "run", "-q"] + common + ["++workload.output.folder=" + out],
                       check=True, cwd=a.work, stdout=subprocess.DEVNULL)
        s = json.load(open(os.path.join(out, "summary.json")))
        io = s["iomimic"]
        wall = s["iomimic"]["wall_seconds"]
        # samples/s over the whole epoch (no step excluded), actual MiB/s read
        sps = len(files) // 4 * 4 / wall
        mibps = io["bytes_read"] / 2**20 / wall
        np_sps, np_mibps, _ = run_numpy(files, a.threads)
        rows.append((sps, mibps, io["peak_rss_MiB_max_rank"], s["metric"]["train_throughput_mean_samples_per_second"], np_sps, np_mibps))
    print("%-4s %14s %12s %10s %16s %14s %12s %8s" % ("run", "iomimic smp/s", "iomimic MiB/s", "peak RSS",
                                                  "DLIO-formula s/s", "numpy smp/s", "numpy MiB/s", "ratio"))
    for i, r in enumerate(rows):
        print("%-4d %14.1f %12.1f %9.1fM %16.1f %14.1f %12.1f %8.2f" % (i + 1, r[0], r[1], r[2], r[3], r[4], r[5], r[0] / r[4]))
    ratios = sorted(r[0] / r[4] for r in rows)
    print("median ratio iomimic/numpy samples/s: %.2f" % ratios[len(ratios) // 2])


if __name__ == "__main__":
    main()
