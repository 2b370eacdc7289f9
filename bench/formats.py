#!/usr/bin/python3
"""Every format at one shared sample size, in one invocation: generation MiB/s
and read samples/s (computation_time 0, page cache warm, decode on).

  bench/formats.py --iomimic build/bin/iomimic [--sample-kib 64] [--samples 1024]

Each format gets the same number of samples of the same size (images: one
sample per file; others: 16 per file). Generation speed is the file bytes
written over the generation wall time; read speed is samples over the wall
time of the training epochs (every step counted, unlike DLIO's formula), and
DLIO's formula value is printed beside it.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

FORMATS = ["npz", "npy", "hdf5", "tfrecord", "csv", "indexed_binary", "png", "jpeg", "tiff",
           "synthetic"]
SINGLE = {"png", "jpeg", "tiff"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iomimic", required=True)
    ap.add_argument("--sample-kib", type=int, default=64)
    ap.add_argument("--samples", type=int, default=1024)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--work", default="/tmp/iomimic-bench-formats")
    a = ap.parse_args()
    exe = os.path.abspath(a.iomimic)
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    print("%-16s %12s %12s %14s %14s" % ("format", "gen MiB/s", "read smp/s", "DLIO smp/s",
                                         "read MiB/s"))
    for fmt in FORMATS:
        spf = 1 if fmt in SINGLE else 16
        files = a.samples // spf
        data = os.path.join(a.work, fmt, "data")
        common = [
            "workload=quickstart", "++workload.dataset.format=" + fmt,
            "++workload.framework=tensorflow", "++workload.reader.data_loader=tensorflow",
            "++workload.dataset.data_folder=" + data,
            "++workload.dataset.read_pattern=direct",  # npz: as the recorded figures
            "++workload.dataset.num_files_train=%d" % files,
            "++workload.dataset.num_files_eval=0",
            "++workload.dataset.num_samples_per_file=%d" % spf,
            "++workload.dataset.record_length_bytes=%d" % (a.sample_kib * 1024),
            "++workload.dataset.record_length_bytes_stdev=0",
            "++workload.dataset.num_subfolders_train=0",
            "++workload.workflow.evaluation=False",
            "++workload.train.computation_time=0",
            "++workload.train.epochs=2",
            "++workload.reader.batch_size=16",
            "++workload.reader.read_threads=%d" % a.threads,
            "++workload.reader.sample_shuffle=off", "++workload.reader.file_shuffle=off",
        ]
        p = subprocess.run([exe, "generate"] + common, cwd=a.work, capture_output=True, text=True)
        if p.returncode != 0:
            print("%-16s generation failed: %s" % (fmt, p.stderr.strip()))
            continue
        m = re.search(r"\(([\d.]+) MiB/s\)", p.stdout)
        gen = float(m.group(1)) if m else float("nan")
        out = os.path.join(a.work, fmt, "out")
        p = subprocess.run([exe, "run", "-q"] + common + ["++workload.output.folder=" + out],
                           cwd=a.work, capture_output=True, text=True)
        if p.returncode != 0:
            print("%-16s run failed: %s" % (fmt, p.stderr.strip()))
            continue
        s = json.load(open(os.path.join(out, "summary.json")))
        stats = json.load(open(os.path.join(out, "0_per_epoch_stats.json")))
        wall = sum(float(v["block1"]["duration"]) for v in stats.values())
        steps = s["iomimic"]["train_steps_per_epoch"] * s["epochs"]
        sps = steps * 16 / wall if wall > 0 else 0
        mibps = s["iomimic"]["train_bytes_read"] / 2**20 / wall if wall > 0 else 0
        print("%-16s %12.1f %12.0f %14.0f %14.1f" % (
            fmt, gen, sps, s["metric"]["train_throughput_mean_samples_per_second"], mibps))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
