#!/usr/bin/python3
"""Benchmark: iomimic's storage back ends against fio on the same files.

  bench/storage_vs_fio.py --iomimic build/bin/iomimic [--files 8] [--size-mib 128]
                          [--threads 2] [--block 1M] [--qd 32] [--repeat 3]
                          [--backends posix,odirect,mmap] [--caches cold,warm]
                          [--work /tmp/iomimic-bench-fio] [--markdown OUT.md]
                          [--settle 5] [--warm-epochs 5]

Pattern: sequential whole-file reads of N files of S MiB by T readers, each
file read once. iomimic generates the files (npz, or npy with --format npy;
one sample per file) and reads them with a shrunk workload: dataset.format
as generated, reader.decode False
(the same reads, no parsing), computation_time 0, read_threads T, batch 1,
one epoch, and the per-sample "resized" copy DLIO makes shrunk to 4 KiB
(dataset.record_length_bytes_resize: it is CPU work, not I/O). fio reads the very same files with T jobs (one per reader; the
files dealt out to the jobs in turn, each read start to end:
file_service_type=sequential, thread=1, invalidate=0).

Per back end:
  posix    iomimic reader.transfer_size = block (one pread per block)
           fio --ioengine=psync --bs=block --iodepth=1 --direct=0
  odirect  iomimic reader.transfer_size = the whole file; the back end splits
           the read into `block` requests with `qd` in flight (io_uring)
           fio --ioengine=io_uring --bs=block --iodepth=qd --direct=1
  mmap     iomimic reader.transfer_size = block (a copy from the mapping)
           fio --ioengine=mmap --bs=block --iodepth=1 --direct=0

posix and mmap get the kernel hint fio gives a sequential job by default
(fadvise_hint): iomimic runs with storage.options.fadvise=sequential (posix)
and advice=sequential (mmap: MADV_SEQUENTIAL on the mapping and
POSIX_FADV_SEQUENTIAL on the descriptor, as fio's mmap engine). On a cold
cache the hint doubles the readahead window: fio's mmap job read 860-980
MiB/s without it and 1030-1710 with it on the machine of run H.

Caches: "cold" empties the page cache before each run (echo 3 >
/proc/sys/vm/drop_caches when permitted, otherwise posix_fadvise DONTNEED
on every dataset file) and then waits --settle seconds (default 5); "warm"
reads every file once first. The wait matters on virtual machines with free
page reporting (virtio-balloon, as on the Firecracker VMs these results come
from): the 2 GiB the dropped cache frees are handed back to the host about
2 s later, and a run that starts before that refills the page cache with
memory the host still backs, one that starts after it faults every page in
again. Without the wait the tool that ran before decided which case the next
run got (measured: either tool read 1.4 GB/s after an iomimic run and
0.9-1.0 GB/s after a fio run), so ratios swung between 0.6 and 1.2. For odirect,
cold and warm differ only in what the device (or the hypervisor below it)
caches.

For posix with npz files a third reader runs too: fio replaying np.load's
exact system calls on every file from an iolog (npz_pattern_iolog,
`read_iolog`, psync). fio's plain job reads each file straight from offset 0;
np.load (and so iomimic, which reproduces it) first reads the ZIP end records
at the end of the file, which costs the kernel's readahead on a cold cache.
iomimic / "fio np.load pattern" compares the back end with fio making the same
calls. (fio's mmap engine cannot replay an iolog, so mmap has no such peer.)

Throughput: iomimic = the epoch's bytes actually read / the epoch's wall
time (summary.json: iomimic.train_io_actual_MiB_per_second); fio = the
group's read bw_bytes (--output-format=json, group_reporting). Each cell is
repeated and the table shows medians and the median of the per-repeat ratios
(iomimic / fio; 1.0 = the same speed).
"""
import argparse
import datetime
import glob
import json
import os
import shlex
import statistics
import subprocess
import sys
import time

import benchlib
from benchlib import loadavg

MiB = 1 << 20


def parse_bytes(text):
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    t = text.strip().lower().rstrip("b").rstrip("i")
    if t and t[-1] in units:
        return int(float(t[:-1]) * units[t[-1]])
    return int(t)


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


class Caches:
    """Empties or fills the page cache for the dataset files."""

    def __init__(self, files, settle=0.0):
        self.files = files
        self.settle = settle
        self.method = None

    def drop(self):
        os.sync()
        if self.method in (None, "drop_caches"):
            try:
                with open("/proc/sys/vm/drop_caches", "w") as f:
                    f.write("3\n")
                self.method = "drop_caches"
                time.sleep(self.settle)
                return
            except OSError:
                self.method = "fadvise"
        for path in self.files:
            fd = os.open(path, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)

    def warm(self):
        for path in self.files:
            with open(path, "rb") as f:
                while f.read(16 * MiB):
                    pass


def manifest_text(a, data):
    return """# Written by bench/storage_vs_fio.py: sequential whole-file reads.
model:
  name: storage_vs_fio
framework: pytorch
workflow:
  generate_data: False
  train: True
  evaluation: False
  checkpoint: False
dataset:
  data_folder: %s
  format: %s
  # npz: numpy's direct requests, as the recorded figures (fio replays them).
  read_pattern: direct
  num_files_train: %d
  num_files_eval: 0
  num_samples_per_file: 1
  record_length_bytes: %d
  record_length_bytes_stdev: 0
  # DLIO copies a "resized" random sample of record_length bytes into every
  # batch; that CPU copy is not storage I/O, so keep it to 4 KiB here.
  record_length_bytes_resize: 4096
  num_subfolders_train: 0
  num_subfolders_eval: 0
reader:
  data_loader: pytorch
  batch_size: 1
  read_threads: %d
  prefetch_size: %d
  file_shuffle: off
  sample_shuffle: off
  decode: False
train:
  epochs: 1
  computation_time: 0
""" % (data, a.format, a.files, a.size_mib * MiB, a.threads, 2 * a.threads)


def iomimic_overrides(backend, a, out):
    block = parse_bytes(a.block)
    if backend == "odirect":
        transfer = 2 * a.size_mib * MiB  # the whole file in one request
        storage = ["++workload.storage.backend=odirect",
                   "++workload.storage.options.queue_depth=%d" % a.qd,
                   "++workload.storage.options.block_size=%d" % block]
    else:
        transfer = block
        storage = ["++workload.storage.backend=" + backend]
        # The kernel hint fio gives a sequential job by default (fadvise_hint:
        # POSIX_FADV_SEQUENTIAL on the descriptor; the mmap engine also
        # MADV_SEQUENTIAL on the mapping). Without it on both sides the
        # comparison measures readahead settings, not the back end.
        if backend == "posix":
            storage.append("++workload.storage.options.fadvise=sequential")
        elif backend == "mmap":
            storage.append("++workload.storage.options.advice=sequential")
    return storage + ["++workload.reader.transfer_size=%d" % transfer,
                      "++workload.output.folder=" + out] + a.extra


def run_iomimic(a, manifest, backend, out, epochs):
    subprocess.run(["rm", "-rf", out], check=True)  # results of an earlier run of the script
    cmd = [a.iomimic, "run", "-q", manifest] + iomimic_overrides(backend, a, out) + [
        "++workload.train.epochs=%d" % epochs]
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=a.work)
    if p.returncode != 0:
        sys.exit("iomimic failed:\n$ %s\n%s%s" % (shlex.join(cmd), p.stdout, p.stderr))
    with open(os.path.join(out, "summary.json")) as f:
        io = json.load(f)["iomimic"]
    rates = io["train_io_actual_MiB_per_second"]
    return statistics.mean(rates), io["plugins"]["storage"]["data_path"], cmd


def fio_job(backend, a, files, epochs=1):
    engine = {"posix": "psync", "odirect": "io_uring", "mmap": "mmap"}[backend]
    depth = a.qd if backend == "odirect" else 1
    direct = 1 if backend == "odirect" else 0
    lines = ["[global]", "rw=read", "bs=%s" % a.block, "ioengine=%s" % engine,
             "iodepth=%d" % depth, "direct=%d" % direct, "invalidate=0", "thread=1",
             "group_reporting=1", "file_service_type=sequential", "loops=%d" % epochs, ""]
    for t in range(a.threads):
        mine = files[t::a.threads]
        if not mine:
            continue
        lines += ["[reader%d]" % t, "filename=" + ":".join(mine), ""]
    return "\n".join(lines)


def run_fio(a, backend, files, job_path, epochs):
    with open(job_path, "w") as f:
        f.write(fio_job(backend, a, files, epochs))
    return run_fio_job(job_path)


def run_fio_job(job_path):
    """Runs a fio job file; returns (the group's read MiB/s, the command)."""
    cmd = ["fio", "--output-format=json", job_path]
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=os.path.dirname(job_path))
    if p.returncode != 0:
        sys.exit("fio failed:\n$ %s\n%s%s" % (shlex.join(cmd), p.stdout, p.stderr))
    text = p.stdout[p.stdout.index("{"):]  # fio may print notes before the JSON
    job = json.loads(text)["jobs"][0]
    return job["read"]["bw_bytes"] / MiB, cmd


def npz_pattern_iolog(files, block, epochs):
    """np.load's system calls on each npz file as a fio iolog (version 2), so
    fio's own engine replays exactly the reads iomimic's npz reader makes
    (strace shows the same calls for numpy's zipfile): 4 KiB at 0, the ZIP end
    records at the end of the file (22 bytes, the 20-byte ZIP64 locator before
    them, the central directory), 4 KiB at 0 again, then the member in `block`
    requests that end on `block` boundaries. `epochs` passes over the files."""
    import struct
    lines = ["fio version 2 iolog"]
    for path in files:
        lines.append(path + " add")
    for _ in range(epochs):
        for path in files:
            size = os.path.getsize(path)
            with open(path, "rb") as f:
                f.seek(size - 22)
                cd_size, cd_offset = struct.unpack("<II", f.read(22)[12:20])
            def read(offset, length):
                return "%s read %d %d" % (path, offset, length)

            lines += [path + " open", read(0, 4096), read(size - 22, 22), read(size - 42, 20),
                      read(cd_offset, cd_size), read(0, 4096)]
            off = 4096
            while off < cd_offset:
                n = min(block - off % block, cd_offset - off)
                lines.append(read(off, n))
                off += n
            lines.append(path + " close")
    return "\n".join(lines) + "\n"


def fio_pattern_job(backend, a, files, epochs, work):
    """A fio job whose readers replay np.load's pattern (npz_pattern_iolog) on
    the files dealt out as in fio_job, through the back end's fio engine."""
    engine = {"posix": "psync"}[backend]
    lines = ["[global]", "ioengine=%s" % engine, "iodepth=1", "direct=0", "invalidate=0",
             "thread=1", "group_reporting=1", "replay_no_stall=1", ""]
    for t in range(a.threads):
        mine = files[t::a.threads]
        if not mine:
            continue
        log = os.path.join(work, "npz-pattern-%d.iolog" % t)
        with open(log, "w") as f:
            f.write(npz_pattern_iolog(mine, parse_bytes(a.block), epochs))
        lines += ["[reader%d]" % t, "read_iolog=" + log, ""]
    return "\n".join(lines)


def machine():
    fs = sh(["findmnt", "-n", "-o", "FSTYPE,SOURCE", "-T", "/tmp"]).stdout.strip()
    return benchlib.machine(with_fio=True) + ", /tmp on " + fs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iomimic", required=True)
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--size-mib", type=int, default=128)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--block", default="1M")
    ap.add_argument("--qd", type=int, default=32)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--backends", default="posix,odirect,mmap")
    ap.add_argument("--caches", default="cold,warm")
    ap.add_argument("--work", default="/tmp/iomimic-bench-fio")
    ap.add_argument("--extra", action="append", default=[],
                    help="an override added to every iomimic run (repeatable)")
    ap.add_argument("--markdown", help="also write the table and commands to this file")
    ap.add_argument("--format", default="npz", choices=["npz", "npy", "indexed_binary"],
                    help="npz: np.load's pattern (4 KiB at 0, the ZIP end records, then the "
                         "member); npy: 4 KiB at 0, then the array from the end of the header; "
                         "indexed_binary: the data file front to back from offset 0 (its "
                         "index is a separate file), fio's own pattern: the back end alone")
    ap.add_argument("--warm-epochs", type=int, default=5,
                    help="warm runs read the dataset this many times (iomimic: epochs, the "
                         "mean of the per-epoch rates; fio: loops), so that one run is not "
                         "a few tens of milliseconds")
    ap.add_argument("--settle", type=float, default=5.0,
                    help="seconds to wait after dropping the caches (see the docstring)")
    a = ap.parse_args()
    a.iomimic = os.path.abspath(a.iomimic)
    os.makedirs(a.work, exist_ok=True)
    data = os.path.join(a.work, "data")
    manifest = os.path.join(a.work, "storage_vs_fio.yaml")
    with open(manifest, "w") as f:
        f.write(manifest_text(a, data))

    gen = [a.iomimic, "generate", "-q", manifest, "++workload.storage.backend=posix"]
    subprocess.run(gen, check=True, cwd=a.work, capture_output=True)
    files = sorted(glob.glob(os.path.join(data, "train", "*." + a.format)))
    if len(files) != a.files:
        sys.exit("expected %d files in %s, found %d" % (a.files, data, len(files)))
    total = sum(os.path.getsize(p) for p in files)
    caches = Caches(files, a.settle)
    print("machine: " + machine())
    print("dataset: %d %s files, %.1f MiB in all, %d readers, block %s, queue depth %d" %
          (len(files), a.format, total / MiB, a.threads, a.block, a.qd), flush=True)

    load_start = loadavg()
    rows = []
    commands = {}
    for backend in a.backends.split(","):
        for cache in a.caches.split(","):
            io_rates, fio_rates, ratios, path = [], [], [], ""
            replay_rates, replay_ratios = [], []
            # fio's mmap engine cannot replay an iolog (it maps a file of
            # io_size 0 and fails with EINVAL), so only psync replays it.
            replay = backend == "posix" and a.format == "npz"
            tools = ["iomimic", "fio"] + (["replay"] if replay else [])
            epochs = a.warm_epochs if cache == "warm" else 1
            for rep in range(a.repeat):
                # Rotate who goes first, so drift favours none.
                order = tools[rep % len(tools):] + tools[:rep % len(tools)]
                got = {}
                for tool in order:
                    if cache == "cold":
                        caches.drop()
                    else:
                        caches.warm()
                    if tool == "iomimic":
                        out = os.path.join(a.work, "out-%s-%s-%d" % (backend, cache, rep))
                        got[tool], path, cmd = run_iomimic(a, manifest, backend, out, epochs)
                    elif tool == "fio":
                        job = os.path.join(a.work, "fio-%s.job" % backend)
                        got[tool], cmd = run_fio(a, backend, files, job, epochs)
                    else:
                        job = os.path.join(a.work, "fio-%s-npz-pattern.job" % backend)
                        with open(job, "w") as f:
                            f.write(fio_pattern_job(backend, a, files, epochs, a.work))
                        got[tool], cmd = run_fio_job(job)
                    if cmd:
                        commands[(backend, tool)] = cmd
                io_rates.append(got["iomimic"])
                fio_rates.append(got["fio"])
                ratios.append(got["iomimic"] / got["fio"])
                extra = ""
                if "replay" in got:
                    replay_rates.append(got["replay"])
                    replay_ratios.append(got["iomimic"] / got["replay"])
                    extra = "  fio np.load pattern %8.1f MiB/s  ratio %.3f" % (
                        got["replay"], replay_ratios[-1])
                print("  %-8s %-4s #%d  iomimic %8.1f MiB/s  fio %8.1f MiB/s  ratio %.3f%s" %
                      (backend, cache, rep + 1, got["iomimic"], got["fio"], ratios[-1], extra),
                      flush=True)
            rows.append((backend, path, cache, statistics.median(io_rates),
                         statistics.median(fio_rates), statistics.median(ratios), ratios,
                         statistics.median(replay_rates) if replay_rates else None,
                         statistics.median(replay_ratios) if replay_ratios else None,
                         replay_ratios))

    header = ("| back end | data path | cache | iomimic MiB/s | fio MiB/s | ratio (median) | "
              "ratios | fio np.load pattern MiB/s | ratio to it | ratios to it |\n"
              "|---|---|---|---:|---:|---:|---|---:|---:|---|")
    lines = [header]
    for backend, path, cache, io, fio, ratio, ratios, replay, replay_ratio, rr in rows:
        lines.append("| %s | %s | %s | %.1f | %.1f | %.2f | %s | %s | %s | %s |" %
                     (backend, path, cache, io, fio, ratio, " ".join("%.2f" % r for r in ratios),
                      "%.1f" % replay if replay else "-",
                      "%.2f" % replay_ratio if replay_ratio else "-",
                      " ".join("%.2f" % r for r in rr) if rr else "-"))
    table = "\n".join(lines)
    print()
    print(table)
    print("load average at the start: %s, at the end: %s" % (load_start, loadavg()))
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write("# storage_vs_fio run of %s\n\n" % datetime.datetime.now().isoformat(" ", "seconds"))
            f.write("machine: %s\n\n" % machine())
            f.write(("dataset: %d " + a.format + " files, %.1f MiB in all; %d readers; block %s; "
                     "queue depth %d; ") % (len(files), total / MiB, a.threads, a.block, a.qd))
            f.write("%d repeats; cache drop: %s; warm runs read the dataset %d times (cold: once; "
                    "the fio jobs below show the warm loops)\n\n" %
                    (a.repeat, caches.method or "-", a.warm_epochs))
            f.write("load average (1, 5, 15 min) at the start: %s, at the end: %s\n\n" %
                    (load_start, loadavg()))
            f.write(table + "\n\ncommands:\n\n```\n$ " + shlex.join(gen) + "\n")
            for (backend, tool), cmd in sorted(commands.items()):
                f.write("$ " + shlex.join(cmd) + "\n")
                if tool == "fio":
                    f.write(fio_job(backend, a, files, a.warm_epochs) + "\n")
                elif tool == "replay":
                    f.write(fio_pattern_job(backend, a, files, a.warm_epochs, a.work) + "\n")
            f.write("```\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
