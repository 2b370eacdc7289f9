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
  concurrent as DCP's writer threads are and, like them, threads of one
  process (--thread: fio's job processes each call setsid, and with
  sched_autogroup each would get a session's CPU share), --bs=64M
  (iomimic's largest request; fio writes whole blocks only, so its rate is
  its own io_bytes over its time), psync, --fallocate=none,
  --fsync_on_close=1 when checkpoint.fsync is on. Both tools are also timed
  on one clock: the same strace of openat and fsync, first data-file open
  to the end of the last data-file fsync.

  bench/dcp_async_vs_fio.py --iomimic build/bin/iomimic [--dir /tmp/dcpbench]
                            [--threads 4] [--repeat 3] [--fsync on] [--cold 4]
                            [--keep-traces]

One rank, one save per run (so the stall has no wait for a previous write).
Every cell is measured --repeat times, the tools alternating which goes
first; before each measurement dirty pages are flushed, 3 GiB of memory
touched and freed, and --cold seconds waited (see settle). Prints every
run, then medians (min-max), the machine and its load before and after.
"""
import argparse
import json
import os
import re
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
# Both tools run under the same strace, which traces only openat and fsync
# (seccomp-filtered: the writes are not stopped), so one clock times both:
# first data-file open to the end of the last data-file fsync.
STRACE = ["strace", "-f", "--seccomp-bpf", "-y", "-ttt", "-T", "-e", "trace=openat,fsync", "-o"]


def settle(nbytes, cold):
    """Before each measurement: flush dirty pages, touch and free `nbytes`
    of memory, then wait `cold` seconds. This VM hands freed memory back to
    its host (free page reporting, about 2 s after it is freed): a process
    that allocates it again (a staging buffer, the page cache its writes
    fill) waits for the host to back it, the first touch costing as much as
    the copy (measured: dd writing 1 GiB took 1.05-1.74 s of system time
    into released memory, 0.48-0.64 s into memory freed just before).
    Without the wait fio, which starts writing within 0.1 s, wrote into the
    memory the touch had just freed while iomimic, starting 1-2 s later,
    wrote into released memory: the wait puts both in the same state.
    The written files are deleted after each measurement."""
    os.sync()
    bytearray(b"\1") * nbytes
    time.sleep(cold)


def traced_span(trace, folder):
    """Seconds from the first writer's open of a file under `folder` to the
    end of the last fsync of one, from `strace -f -y -ttt -T -e
    trace=openat,fsync` output: one clock for both tools. A file's writer
    opens it first but for fio's main process, which creates the files
    (O_WRONLY|O_CREAT, no O_TRUNC) before its jobs open them (O_RDWR);
    fio's fsync at close opens the file again after writing."""
    # DCP's .metadata (.metadata.tmp, written after the data files once the
    # write is joined) is not part of the background write.
    def hidden(path):
        return os.path.basename(path).startswith(".")

    first_open = {}
    pending = {}  # pid -> path of its unfinished fsync
    fsync_end = 0.0
    for line in open(trace):
        m = re.match(r"(\d+)\s+([\d.]+) (.*)", line)
        if not m:
            continue
        pid, ts, rest = m.group(1), float(m.group(2)), m.group(3)
        # A call cut in two by another thread's ("<unfinished ...>") starts
        # at its first half, which names the path.
        o = re.match(r'openat\([^,]*, "([^"]+)"', rest)
        if o and o.group(1).startswith(folder + "/") and not hidden(o.group(1)):
            if "O_WRONLY|O_CREAT," not in rest:
                first_open.setdefault(o.group(1), ts)
            continue
        f = re.match(r"fsync\(\d+<([^>]+)>(.*)", rest)
        if f and f.group(1).startswith(folder + "/") and not hidden(f.group(1)):
            d = re.search(r"<([\d.]+)>$", f.group(2).strip())
            if "unfinished" in f.group(2):
                pending[pid] = f.group(1)
            elif d:
                fsync_end = max(fsync_end, ts + float(d.group(1)))
            continue
        if rest.startswith("<... fsync resumed>") and pid in pending:
            fsync_end = max(fsync_end, ts)
            del pending[pid]
    return fsync_end - min(first_open.values())


def iomimic(exe, work, threads, fsync, rep, cold):
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
    settle(3 << 30, cold)
    trace = os.path.join(work, "iomimic.strace")
    subprocess.run(STRACE + [trace] + cmd, check=True, cwd=work, stdout=subprocess.DEVNULL)
    s = json.load(open(os.path.join(out, "summary.json")))
    a = s["iomimic"]["checkpoint"]["async_saves"][0]
    step = os.path.join(ck, "global_epoch1_step1")
    files = {n: os.path.getsize(os.path.join(step, n))
             for n in os.listdir(step) if n.endswith(".distcp")}
    a["traced_seconds"] = traced_span(trace, step)
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


def fio(work, files, fsync, cold):
    d = os.path.join(work, "fio")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    # --fallocate=none: fio otherwise preallocates its files before the job
    # starts, outside its runtime, while iomimic's posix back end
    # preallocates (posix_fallocate) inside the timed write.
    cmd = ["fio", "--output-format=json", "--thread", "--ioengine=psync", "--rw=write", "--bs=64M",
           "--fallocate=none", "--directory=" + d]
    if fsync:
        cmd.append("--fsync_on_close=1")
    for name, size in sorted(files.items()):
        if size == 0:
            continue
        cmd += ["--name=" + name.replace(".", "_"), "--filename=" + name, "--size=%d" % size]
    settle(3 << 30, cold)
    start = time.perf_counter()
    trace = os.path.join(work, "fio-%d.strace" % len(os.listdir(work)))
    p = subprocess.run(STRACE + [trace] + cmd, check=True, capture_output=True, text=True)
    wall = time.perf_counter() - start
    traced = traced_span(trace, d)
    jobs = json.loads(p.stdout)["jobs"]
    # The slowest job's runtime: the files are written once all are written.
    # fio writes whole blocks only (a file's size rounded down to --bs: 939
    # of the checkpoint's 1,070 MB here), so its rate is its own bytes over
    # its time, not the checkpoint's.
    seconds = max(j["job_runtime"] for j in jobs) / 1000.0
    written = sum(j["write"]["io_bytes"] for j in jobs)
    shutil.rmtree(d, ignore_errors=True)
    return written / 2**30 / seconds, written / 2**30 / wall, written, written / 2**30 / traced


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iomimic", required=True)
    ap.add_argument("--dir", default="/tmp/iomimic-bench-dcp")
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--fsync", default="on")
    ap.add_argument("--keep-traces", action="store_true", help="leave --dir and its straces")
    ap.add_argument("--cold", type=float, default=4.0,
                    help="seconds between the memory touch and each tool (see settle)")
    a = ap.parse_args()
    exe = os.path.abspath(a.iomimic)
    fsync = a.fsync == "on"
    shutil.rmtree(a.dir, ignore_errors=True)
    os.makedirs(a.dir)
    print(benchlib.machine(with_fio=True))
    print("load before: " + benchlib.loadavg())
    rows = []
    print("%3s %9s %9s %6s | %9s %9s %6s | %9s %9s %6s" % (
        "#", "stall s", "memcpy s", "ratio", "bg GiB/s", "fio GiB/s", "ratio", "traced", "traced",
        "ratio"))
    files = None  # the .distcp files and sizes, the same on every run
    for rep in range(a.repeat):
        got = {}
        # Odd runs put the peers first; the first run cannot (fio needs the
        # file list iomimic writes).
        order = ("peers", "iomimic") if rep % 2 == 1 and files else ("iomimic", "peers")
        for tool in order:
            if tool == "iomimic":
                got["a"], files = iomimic(exe, a.dir, a.threads, fsync, rep, a.cold)
            else:
                got["copy"] = host_copy(sum(files.values()))
                (got["fio"], got["fio_wall"], got["fio_bytes"],
                 got["fio_traced"]) = fio(a.dir, files, fsync, a.cold)
        stall = got["a"]["stall_seconds"]
        write = got["a"]["background_write_GiB_per_second"]
        traced = sum(files.values()) / 2**30 / got["a"]["traced_seconds"]
        rows.append((stall, got["copy"], write, got["fio"], got["fio_wall"], traced,
                     got["fio_traced"]))
        print("%3d %9.4f %9.4f %6.3f | %9.3f %9.3f %6.3f | %9.3f %9.3f %6.3f  %s first" %
              (rep + 1, stall, got["copy"], stall / got["copy"], write, got["fio"],
               write / got["fio"], traced, got["fio_traced"], traced / got["fio_traced"],
               order[0]), flush=True)
    print("bytes per checkpoint: %d in %d files; fio wrote %d of them" %
          (sum(files.values()), len(files), got["fio_bytes"]))
    print("stall s: " + benchlib.spread([r[0] for r in rows], "%.4f"))
    print("memcpy s: " + benchlib.spread([r[1] for r in rows], "%.4f"))
    print("stall / memcpy: " + benchlib.spread([r[0] / r[1] for r in rows], "%.3f"))
    print("background write GiB/s (iomimic's clock): " +
          benchlib.spread([r[2] for r in rows], "%.3f"))
    print("fio GiB/s (its slowest job's runtime): " + benchlib.spread([r[3] for r in rows], "%.3f"))
    print("write / fio, each by its own clock: " +
          benchlib.spread([r[2] / r[3] for r in rows], "%.3f"))
    print("fio GiB/s by wall time (start-up included): " +
          benchlib.spread([r[4] for r in rows], "%.3f"))
    print("iomimic GiB/s by strace: " + benchlib.spread([r[5] for r in rows], "%.3f"))
    print("fio GiB/s by strace: " + benchlib.spread([r[6] for r in rows], "%.3f"))
    print("write / fio by strace (one clock): " +
          benchlib.spread([r[5] / r[6] for r in rows], "%.3f"))
    print("load after: " + benchlib.loadavg())
    if not a.keep_traces:
        shutil.rmtree(a.dir, ignore_errors=True)


if __name__ == "__main__":
    main()
