#!/usr/bin/python3
"""An async DCP checkpoint (checkpoint.layout dcp, checkpoint.async True) of a
shrunk llama3 8B, against the two things it should cost, in one invocation:

- its training stall (staging_seconds + wait_seconds of summary.json's
  iomimic.checkpoint.async_saves) against a plain host-memory copy of the
  same bytes: Python copying a 64 MiB pattern into a touched buffer of the
  rank's checkpoint size, 64 MiB at a time (memoryview slice assignment is
  a memcpy), as iomimic's staging does;
- its background write (background_write_GiB_per_second) against fio writing
  the same files: one fio job per .distcp file, each of its size, jobs
  concurrent as DCP's writer threads are, --bs=64M (iomimic's largest
  request), psync, --fallocate=none (iomimic's preallocation is inside its
  timed write, fio's would be outside its runtime), --fsync_on_close=1 when
  checkpoint.fsync is on.

  bench/dcp_async_vs_fio.py --iomimic build/bin/iomimic [--dir /tmp/dcpbench]
                            [--threads 4] [--repeat 3] [--fsync on]

One rank, one save per run (so the stall has no wait for a previous write).
Every cell is measured --repeat times, the tools alternating which goes
first; before each measurement dirty pages are flushed and 3 GiB of memory
touched and freed (see settle: dropping the page cache instead makes the
next allocation wait for the VM's host). Prints every run, then medians (min-max), the machine and
its load before and after.
"""
import argparse
import json
import os
import shutil
import subprocess
import time

import benchlib

# llama3 8B's shape (workloads/llama_8b_zero3.yaml) shrunk to ~1 GiB of
# model and Adam state: 2 layers, hidden 1024, FFN 3584, vocabulary 24000.
SHRINK = ["++workload.model.num_layers=2", "++workload.model.transformer.hidden_size=1024",
          "++workload.model.transformer.ffn_hidden_size=3584",
          "++workload.model.transformer.vocab_size=24000"]
PIECE = 64 << 20


def settle(nbytes):
    """Before each measurement: flush dirty pages, then touch and free
    `nbytes` of memory. This VM hands freed memory back to its host (free
    page reporting): a process that then allocates it again (iomimic's
    staging buffer and the page cache its writes fill) waits for the host
    to back it, up to 4x slower writes right after a cache drop (measured:
    1.99 s, then 0.47 and 0.56 s for the same async write). Touching the
    memory first gives both tools host-backed pages. The written files are
    deleted after each measurement, so no tool pays for another's pages."""
    os.sync()
    bytearray(b"\1") * nbytes


def iomimic(exe, work, threads, fsync, rep):
    out = os.path.join(work, "out-%d" % rep)
    ck = os.path.join(work, "ckpt")
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(ck, ignore_errors=True)
    cmd = [exe, "run", "-q", "workload=llama_8b_zero3"] + SHRINK + [
        "++workload.checkpoint.layout=dcp", "++workload.checkpoint.async=True",
        "++workload.checkpoint.thread_count=%d" % threads,
        "++workload.checkpoint.fsync=%s" % fsync,
        "++workload.checkpoint.checkpoint_folder=" + ck,
        "++workload.checkpoint.num_checkpoints_write=1",
        "++workload.checkpoint.num_checkpoints_read=0",
        "++workload.checkpoint.time_between_checkpoints=0",
        "++workload.output.folder=" + out]
    settle(3 << 30)
    subprocess.run(cmd, check=True, cwd=work, stdout=subprocess.DEVNULL)
    s = json.load(open(os.path.join(out, "summary.json")))
    a = s["iomimic"]["checkpoint"]["async_saves"][0]
    step = os.path.join(ck, "global_epoch1_step1")
    files = {n: os.path.getsize(os.path.join(step, n))
             for n in os.listdir(step) if n.endswith(".distcp")}
    shutil.rmtree(ck)  # room for fio's copy of the same files
    return a, files


def host_copy(nbytes):
    """Seconds to copy `nbytes` into a touched host buffer from a 64 MiB
    pattern, 64 MiB at a time."""
    src = memoryview(os.urandom(PIECE))  # slices of a memoryview do not copy
    dst = bytearray(b"\1") * nbytes  # filled, so every page is touched before the copy
    view = memoryview(dst)
    start = time.perf_counter()
    for o in range(0, nbytes, PIECE):
        n = min(PIECE, nbytes - o)
        view[o:o + n] = src[:n]
    return time.perf_counter() - start


def fio(work, files, fsync):
    d = os.path.join(work, "fio")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    # --fallocate=none: fio otherwise preallocates its files before the job
    # starts, outside its runtime, while iomimic's posix back end
    # preallocates (posix_fallocate) inside the timed write.
    cmd = ["fio", "--output-format=json", "--ioengine=psync", "--rw=write", "--bs=64M",
           "--fallocate=none", "--directory=" + d]
    if fsync:
        cmd.append("--fsync_on_close=1")
    for name, size in sorted(files.items()):
        if size == 0:
            continue
        cmd += ["--name=" + name.replace(".", "_"), "--filename=" + name, "--size=%d" % size]
    settle(3 << 30)
    start = time.perf_counter()
    p = subprocess.run(cmd, check=True, capture_output=True, text=True)
    wall = time.perf_counter() - start
    jobs = json.loads(p.stdout)["jobs"]
    # The slowest job's runtime: the files are written once all are written.
    seconds = max(j["job_runtime"] for j in jobs) / 1000.0
    shutil.rmtree(d, ignore_errors=True)
    return sum(files.values()) / 2**30 / seconds, sum(files.values()) / 2**30 / wall


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iomimic", required=True)
    ap.add_argument("--dir", default="/tmp/iomimic-bench-dcp")
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--fsync", default="on")
    a = ap.parse_args()
    exe = os.path.abspath(a.iomimic)
    fsync = a.fsync == "on"
    shutil.rmtree(a.dir, ignore_errors=True)
    os.makedirs(a.dir)
    print(benchlib.machine(with_fio=True))
    print("load before: " + benchlib.loadavg())
    rows = []
    print("%3s %12s %12s %7s %14s %12s %7s" % ("#", "stall s", "memcpy s", "ratio",
                                              "bg write GiB/s", "fio GiB/s", "ratio"))
    for rep in range(a.repeat):
        got = {}
        for tool in (("iomimic", "peers") if rep % 2 == 0 else ("peers", "iomimic")):
            if tool == "iomimic":
                got["a"], got["files"] = iomimic(exe, a.dir, a.threads, fsync, rep)
            elif "files" in got:
                got["copy"] = host_copy(sum(got["files"].values()))
                got["fio"], got["fio_wall"] = fio(a.dir, got["files"], fsync)
        if "copy" not in got:  # peers went first on a run without the file list yet
            got["copy"] = host_copy(sum(got["files"].values()))
            got["fio"], got["fio_wall"] = fio(a.dir, got["files"], fsync)
        stall = got["a"]["stall_seconds"]
        write = got["a"]["background_write_GiB_per_second"]
        rows.append((stall, got["copy"], write, got["fio"], got["fio_wall"]))
        print("%3d %12.4f %12.4f %7.3f %14.3f %12.3f %7.3f" %
              (rep + 1, stall, got["copy"], stall / got["copy"], write, got["fio"],
               write / got["fio"]), flush=True)
    print("bytes per checkpoint: %d in %d files" % (sum(got["files"].values()),
                                                   len(got["files"])))
    print("stall s: " + benchlib.spread([r[0] for r in rows], "%.4f"))
    print("memcpy s: " + benchlib.spread([r[1] for r in rows], "%.4f"))
    print("stall / memcpy: " + benchlib.spread([r[0] / r[1] for r in rows], "%.3f"))
    print("background write GiB/s: " + benchlib.spread([r[2] for r in rows], "%.3f"))
    print("fio GiB/s: " + benchlib.spread([r[3] for r in rows], "%.3f"))
    print("write / fio: " + benchlib.spread([r[2] / r[3] for r in rows], "%.3f"))
    # fio's job runtime may leave out the close (and its fsync); its wall
    # time, start-up included, is the other bound.
    print("fio GiB/s by wall time: " + benchlib.spread([r[4] for r in rows], "%.3f"))
    print("write / fio by wall time: " + benchlib.spread([r[2] / r[4] for r in rows], "%.3f"))
    print("load after: " + benchlib.loadavg())
    shutil.rmtree(a.dir, ignore_errors=True)


if __name__ == "__main__":
    main()
