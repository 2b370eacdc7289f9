#!/usr/bin/python3
"""Checkpoint write and read GiB/s of one shard, with and without fsync,
beside fio writing and reading the same bytes with the same block size, in
one invocation.

  bench/checkpoint_vs_fio.py --iomimic build/bin/iomimic [--gib 4] [--dir /tmp/ckbench]
                             [--atomic on,off] [--repeat 1]

iomimic: checkpoint-only run of a plain model of `gib` GiB (one file,
model_states-0.pt), 1 write then 1 read, 4 MiB requests, checkpoint.fsync on
or off. fio: one job, --rw=write then --rw=read, --bs=4M, --size=<gib>G,
--ioengine=psync, with --fsync_on_close=1 when fsync is on. --atomic picks
checkpoint.atomic (on: written as a temporary file and renamed into place,
the default; off: written under the final name, as torch.save); with
--repeat N every cell is measured N times, the two tools alternating which
goes first. Page cache is
flushed and dropped before every measurement when permitted (root), so
reads come from the disk and no run pays for another's dirty pages.
"""
import argparse
import json
import os
import shutil
import subprocess


def drop_caches():
    try:
        subprocess.run(["sync"], check=True)
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def iomimic(exe, work, gib, fsync, phase, atomic):
    out = os.path.join(work, "out-%s-%s" % ("fsync" if fsync else "nofsync", phase))
    shutil.rmtree(out, ignore_errors=True)
    writes, reads = (1, 0) if phase == "write" else (0, 1)
    cmd = [exe, "run", "-q", "workload=bert_v100",
           "++workload.workflow.train=False", "++workload.workflow.checkpoint=True",
           "++workload.model.model_size_bytes=%d" % (gib << 30),
           "++workload.checkpoint.checkpoint_folder=" + os.path.join(work, "ckpt"),
           "++workload.checkpoint.num_checkpoints_write=%d" % writes,
           "++workload.checkpoint.num_checkpoints_read=%d" % reads,
           "++workload.checkpoint.time_between_checkpoints=0",
           "++workload.checkpoint.fsync=%s" % fsync,
           "++workload.checkpoint.atomic=%s" % atomic,
           "++workload.output.folder=" + out]
    subprocess.run(cmd, check=True, cwd=work, stdout=subprocess.DEVNULL)
    s = json.load(open(os.path.join(out, "summary.json")))
    key = "save" if phase == "write" else "load"
    return s["metric"]["%s_checkpoint_io_mean_GB_per_second" % key]


def fio(work, gib, fsync, phase):
    path = os.path.join(work, "fio.dat")
    cmd = ["fio", "--name=ck", "--filename=" + path, "--rw=" + phase, "--bs=4M",
           "--size=%dG" % gib, "--ioengine=psync", "--numjobs=1", "--output-format=json"]
    if fsync and phase == "write":
        cmd.append("--fsync_on_close=1")
    p = subprocess.run(cmd, check=True, capture_output=True, text=True)
    job = json.loads(p.stdout)["jobs"][0][phase if phase == "read" else "write"]
    return job["bw_bytes"] / 2**30


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iomimic", required=True)
    ap.add_argument("--gib", type=int, default=4)
    ap.add_argument("--dir", default="/tmp/iomimic-bench-ckpt")
    ap.add_argument("--atomic", default="on")
    ap.add_argument("--repeat", type=int, default=1)
    a = ap.parse_args()
    exe = os.path.abspath(a.iomimic)
    shutil.rmtree(a.dir, ignore_errors=True)
    os.makedirs(a.dir)
    print("%-6s %-8s %-6s %3s %12s %12s %7s" %
          ("atomic", "fsync", "phase", "#", "iomimic GiB/s", "fio GiB/s", "ratio"))
    for rep in range(a.repeat):
        for atomic in [x == "on" for x in a.atomic.split(",")]:
            for fsync in (True, False):
                for phase in ("write", "read"):
                    # Flush and drop before every measurement, so neither side
                    # pays for the other's dirty pages and reads come from the disk.
                    got = {}
                    for tool in (("iomimic", "fio") if rep % 2 == 0 else ("fio", "iomimic")):
                        drop_caches()
                        got[tool] = (iomimic(exe, a.dir, a.gib, fsync, phase, atomic)
                                     if tool == "iomimic" else fio(a.dir, a.gib, fsync, phase))
                    print("%-6s %-8s %-6s %3d %12.2f %12.2f %7.2f" %
                          (atomic, fsync, phase, rep + 1, got["iomimic"], got["fio"],
                           got["iomimic"] / got["fio"]), flush=True)
    shutil.rmtree(a.dir, ignore_errors=True)


if __name__ == "__main__":
    main()
