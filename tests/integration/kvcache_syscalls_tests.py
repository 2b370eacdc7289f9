#!/usr/bin/python3
"""The KV-cache storage tier at the system-call level (docs/kvcache.md,
"What matches the reference"): a one-user run of the quickstart with no
host-memory tier under `strace -f -y`, every storage operation checked
against the reference's per-object pattern:

  write: openat(O_WRONLY|O_CREAT|O_TRUNC), fallocate of the object, pwrite64
         calls covering header + payload, fsync after the last write, close;
  read:  a stat of the path, openat(O_RDONLY), fadvise64(POSIX_FADV_DONTNEED)
         before the first read, pread64 calls covering the whole object, close;
  and the counts agree with summary.json's storage-tier figures.

The documented difference: the reference opens, fadvises and closes, then
opens again to read; iomimic fadvises on the descriptor it reads from.

Usage: kvcache_syscalls_tests.py <test-name> --iomimic BIN --source DIR --work DIR
"""

import json
import os
import re
import shutil

import iomimic_tests as harness
from iomimic_tests import fail, run

HEADER = 128
TINY_BYTES_PER_TOKEN = 12 * 4 * 128 * 2 * 2  # tiny-1b: layers x KV heads x dim x K,V x fp16
CALL = re.compile(r"^(\d+)\s+(\w+)\((.*)\)\s+=\s+(-?\d+)")
FD_PATH = re.compile(r"^(\d+)<([^>]*)>")
RESUMED = re.compile(r"^(\d+)\s+<\.\.\. \w+ resumed>(.*)$")


def joined_lines(log):
    """strace's lines with each call that another thread interrupted
    ("<unfinished ...>" ... "<... name resumed>") put back together."""
    pending = {}
    with open(log) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.endswith("<unfinished ...>"):
                pid = line.split(None, 1)[0]
                pending[pid] = line[:-len("<unfinished ...>")].rstrip()
                continue
            m = RESUMED.match(line)
            if m and m.group(1) in pending:
                line = pending.pop(m.group(1)) + m.group(2)
            yield line


def episodes(log, folder):
    """Per object open, in order: {"path", "flags", "calls": [(name, args, ret)],
    "stat_before": bool}. Calls are attributed by the descriptor's path (-y)."""
    open_by_fd = {}  # (pid, fd) -> episode
    done = []
    stats = set()  # paths stat'ed by path since their last open
    for line in joined_lines(log):
        m = CALL.match(line.strip())
        if not m:
            continue
        pid, name, args, ret = m.group(1), m.group(2), m.group(3), int(m.group(4))
        if name in ("newfstatat", "statx") and '"' + folder in args and ret == 0:
            path = args.split('"')[1]
            if path.startswith(folder) and path.endswith(".npy"):
                stats.add(path)
            continue
        if name == "openat" and '"' + folder in args and ret >= 0:
            path = args.split('"')[1]
            if not path.endswith(".npy"):
                continue
            flags = args.split(",")[2].strip()
            open_by_fd[(pid, ret)] = {"path": path, "flags": flags, "calls": [],
                                      "stat_before": path in stats}
            stats.discard(path)
            continue
        fm = FD_PATH.match(args)
        if not fm or not fm.group(2).startswith(folder):
            continue
        key = (pid, int(fm.group(1)))
        ep = open_by_fd.get(key)
        if ep is None:
            continue
        ep["calls"].append((name, args, ret))
        if name == "close":
            done.append(open_by_fd.pop(key))
    return done


def check_write(ep):
    names = [c[0] for c in ep["calls"]]
    if "O_WRONLY" not in ep["flags"] or "O_CREAT" not in ep["flags"] or \
            "O_TRUNC" not in ep["flags"]:
        fail("%s: opened for writing with %s" % (ep["path"], ep["flags"]))
    writes = [c for c in ep["calls"] if c[0] == "pwrite64"]
    total = sum(c[2] for c in writes)
    if not writes or (total - HEADER) % TINY_BYTES_PER_TOKEN != 0:
        fail("%s: %d bytes written in %d calls, not a 128-byte header and whole tokens" %
             (ep["path"], total, len(writes)))
    falloc = [c for c in ep["calls"] if c[0] == "fallocate"]
    if not falloc or int(falloc[0][1].split(",")[-1]) != total:
        fail("%s: fallocate %s, %d bytes written" % (ep["path"], falloc, total))
    last_write = max(i for i, n in enumerate(names) if n == "pwrite64")
    if "fsync" not in names[last_write:] or names[-1] != "close":
        fail("%s: no fsync between the last write and close: %s" % (ep["path"], names))
    return total


def check_read(ep):
    names = [c[0] for c in ep["calls"]]
    if "O_RDONLY" not in ep["flags"]:
        fail("%s: opened for reading with %s" % (ep["path"], ep["flags"]))
    if not ep["stat_before"]:
        fail("%s: read without a stat of the path first" % ep["path"])
    reads = [i for i, n in enumerate(names) if n == "pread64"]
    drop = [i for i, c in enumerate(ep["calls"])
            if c[0] == "fadvise64" and "POSIX_FADV_DONTNEED" in c[1]]
    if not reads or not drop or drop[0] > reads[0]:
        fail("%s: no fadvise(DONTNEED) before the first read: %s" % (ep["path"], names))
    return sum(ep["calls"][i][2] for i in reads)


def test_kvcache_storage_syscalls():
    """Every storage-tier object is written and read with the reference's
    system calls, and the counts match the run's own figures."""
    if shutil.which("strace") is None:
        print("strace not installed: skipped")
        raise SystemExit(77)
    work = harness.ARGS.work
    root = os.path.join(work, "root")
    out = os.path.join(work, "out")
    log = os.path.join(work, "strace.log")
    run(["strace", "-f", "-y", "-s", "0", "-o", log, "-e",
         "trace=openat,pwrite64,pread64,fsync,fadvise64,fallocate,close,newfstatat,statx",
         harness.ARGS.iomimic, "run", "-q", "workload=kvcache_quickstart",
         "++workload.storage.storage_root=" + root, "++workload.output.folder=" + out,
         "++workload.kv_cache.num_users=1", "++workload.kv_cache.cpu_mem_gb=0",
         "++workload.kv_cache.max_requests=4", "++workload.kv_cache.duration=60",
         "++workload.kv_cache.transfer_size=1048576"])
    folder = os.path.realpath(os.path.join(root, "kvcache")) + os.sep
    eps = episodes(log, folder)
    writes = [e for e in eps if "O_WRONLY" in e["flags"]]
    reads = [e for e in eps if "O_RDONLY" in e["flags"]]
    written = {}
    for e in writes:
        written[e["path"]] = check_write(e)
    for e in reads:
        n = check_read(e)
        if e["path"] in written and n != written[e["path"]]:
            fail("%s: %d bytes read of %d written" % (e["path"], n, written[e["path"]]))
    with open(os.path.join(out, "summary.json")) as f:
        st = json.load(f)["kv_cache"]["tiers"]["storage"]
    want_w = st["writes"] + st["eviction_writes"]
    want_r = st["reads"] + st["eviction_reads"]
    if len(writes) != want_w or len(reads) != want_r:
        fail("strace saw %d object writes and %d reads; summary.json says %d and %d" %
             (len(writes), len(reads), want_w, want_r))
    if not writes or not reads:
        fail("no storage-tier operation traced (%d writes, %d reads)" % (len(writes), len(reads)))
    print("%d object writes and %d reads, each with the reference's calls" %
          (len(writes), len(reads)))


if __name__ == "__main__":
    harness.main(globals())
