#!/usr/bin/python3
"""KV-cache offload: is the figure storage-bound? iomimic's KV-cache workflow
and MLPerf Storage v3.0's reference (kv-cache.py) on two storage set-ups
that differ by a known factor, with fio measuring each set-up in the same
run; then client CPU per GiB and warm-cache bandwidth against fio.

  bench/kvcache_storage_bound.py --reference DIR [--iomimic build/bin/iomimic]
      [--work DIR] [--caps 40,120] [--rounds 3] [--users 6] [--duration 30]
      [--model tiny-1b] [--record]

DIR is the reference's kv_cache_benchmark/ folder (not shipped here; it runs
with Debian's /usr/bin/python3 and numpy). Needs root: the two set-ups are
the disk under --work behind a block-I/O throttle (cgroup v1 blkio.throttle
or cgroup v2 io.max) of each --caps value (MiB/s, reads and writes), which
every process of the set-up (fio, iomimic, the reference) runs inside.

Part 1 (storage-bound): per round and set-up, alternating the set-ups'
order from round to round: iomimic and the reference run the same model,
users, seed and request count (--requests: the same requests on both
set-ups) with no GPU or host-memory tier, so every entry lives on the
throttled disk; fio (one object at a time per user, written with fsync on
close and reread with the cache dropped, the run's mean entry size and
read:write mix) gives the set-up's bandwidth for that pattern. The
table gives storage tokens/s of each and the ratio of the fast set-up to the
slow one beside fio's ratio.

Part 2 (client cost, warm page cache): on tmpfs (no throttle, reads never
leave memory) iomimic runs users with no think time; fio writes (fsync on
close) and reads objects of the run's mean entry size in the run's
read:write byte mix with as many jobs as the run has workers. Reported:
CPU seconds (user + system) per GiB moved by the storage tier and
bandwidth, iomimic against fio.
"""

import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

import benchlib
import kvcache_fidelity

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MIB = 1 << 20
GIB = 1 << 30


# --- block-I/O throttles ----------------------------------------------------

def device_of(path):
    """"MAJ:MIN" of the whole disk under `path` (a partition maps to its disk)."""
    st = os.stat(path)
    dev = "%d:%d" % (os.major(st.st_dev), os.minor(st.st_dev))
    link = os.path.realpath("/sys/dev/block/" + dev)
    if os.path.exists(os.path.join(link, "partition")):
        with open(os.path.join(os.path.dirname(link), "dev")) as f:
            dev = f.read().strip()
    return dev


class Throttle:
    """A cgroup whose processes read and write `device` at `mib_s` MiB/s at most."""

    def __init__(self, name, device, mib_s):
        bps = int(mib_s * MIB)
        v1 = "/sys/fs/cgroup/blkio"
        if os.path.isdir(v1):
            self.path = os.path.join(v1, name)
            os.makedirs(self.path, exist_ok=True)
            for f in ("blkio.throttle.read_bps_device", "blkio.throttle.write_bps_device"):
                with open(os.path.join(self.path, f), "w") as out:
                    out.write("%s %d\n" % (device, bps))
        else:
            root = "/sys/fs/cgroup"
            with open(os.path.join(root, "cgroup.subtree_control"), "w") as out:
                out.write("+io\n")
            self.path = os.path.join(root, name)
            os.makedirs(self.path, exist_ok=True)
            with open(os.path.join(self.path, "io.max"), "w") as out:
                out.write("%s rbps=%d wbps=%d\n" % (device, bps, bps))

    def wrap(self, argv):
        """`argv` started inside the cgroup (a shell joins it, then execs)."""
        return ["/bin/sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', self.path] + argv

    def remove(self):
        try:
            os.rmdir(self.path)
        except OSError:
            pass


# --- the three programs -------------------------------------------------------

def run_fio(name, folder, size, nfiles, jobs, read_loops, wrap=lambda a: a):
    """Writes `nfiles` x `size` bytes per job (fsync on close), then reads them
    `read_loops` times with the cache dropped first. Returns (bytes written,
    bytes read, seconds of both phases as fio timed them, CPU seconds of the
    fio processes, layout and start-up included)."""
    os.makedirs(folder, exist_ok=True)
    common = ["--directory=" + folder, "--filename_format=%s.$jobnum.$filenum" % name,
              "--nrfiles=%d" % nfiles, "--filesize=%d" % size, "--size=%d" % (size * nfiles),
              # One object open at a time, each closed (and fsynced) before
              # the next, as a KV-cache entry is.
              "--openfiles=1", "--file_service_type=sequential",
              "--bs=%d" % min(16 * MIB, size), "--ioengine=psync", "--numjobs=%d" % jobs, "--group_reporting",
              "--output-format=json"]
    out = {}
    with benchlib.ChildCpu() as cpu:
        for phase, extra in (("write", ["--rw=write", "--fsync_on_close=1", "--end_fsync=1"]),
                             ("read", ["--rw=read", "--invalidate=1",
                                       "--loops=%d" % read_loops])):
            r = subprocess.run(wrap(["fio", "--name=" + phase] + common + extra),
                               capture_output=True, text=True, check=True)
            j = json.loads(r.stdout[r.stdout.index("{"):])["jobs"][0]
            # fio's own time of the phase (its start-up and file layout aside).
            out[phase] = (j[phase]["io_bytes"], j[phase]["runtime"] / 1000.0)
    shutil.rmtree(folder, ignore_errors=True)
    seconds = out["write"][1] + out["read"][1]
    return out["write"][0], out["read"][0], seconds, cpu.seconds


def run_fio_cycles(folder, size, jobs, read_loops, cycles):
    """One fio process: `cycles` times, each of `jobs` jobs writes one object of
    `size` bytes (fsync on close) and then reads it `read_loops` times, the
    phases one after the other (stonewall). Returns (bytes written, bytes
    read, seconds of the phases as fio timed them, CPU seconds of fio)."""
    os.makedirs(folder, exist_ok=True)
    bs = min(16 * MIB, size)
    lines = ["[global]", "directory=" + folder, "ioengine=psync", "bs=%d" % bs,
             "filesize=%d" % size, "size=%d" % size, "numjobs=%d" % jobs, "group_reporting",
             "thread"]
    for c in range(cycles):
        name = "filename_format=kv.$jobnum.%d" % c
        lines += ["[w%d]" % c, "rw=write", "fsync_on_close=1", name, "stonewall",
                  "[r%d]" % c, "rw=read", "invalidate=1", "loops=%d" % read_loops, name,
                  "stonewall"]
    job = os.path.join(folder, "kv.fio")
    with open(job, "w") as f:
        f.write("\n".join(lines) + "\n")
    with benchlib.ChildCpu() as cpu:
        r = subprocess.run(["fio", "--output-format=json", job], capture_output=True, text=True,
                           check=True)
    w = rd = ms = 0
    for j in json.loads(r.stdout[r.stdout.index("{"):])["jobs"]:
        w += j["write"]["io_bytes"]
        rd += j["read"]["io_bytes"]
        ms += j["write"]["runtime"] + j["read"]["runtime"]
    shutil.rmtree(folder, ignore_errors=True)
    return w, rd, ms / 1000.0, cpu.seconds


def find_key(obj, key):
    """The first value of `key` in nested dicts (depth first), or None."""
    if isinstance(obj, dict):
        if key in obj:
            return obj[key]
        for v in obj.values():
            found = find_key(v, key)
            if found is not None:
                return found
    return None


def run_iomimic(a, root, out, overrides, wrap=lambda x: x, requests=0):
    """One KV-cache run; returns (summary.json, wall seconds, CPU seconds)."""
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    # The closed option's file carries the reference's user templates.
    argv = [a.iomimic, "run", "workload=kvcache_opt1_8b",
            "++workload.kv_cache.model=" + a.model,
            "++workload.kv_cache.num_users=%d" % a.users,
            "++workload.kv_cache.duration=%d" % (a.duration if not requests else 600),
            "++workload.kv_cache.max_requests=%d" % requests,
            "++workload.kv_cache.seed=42", "++workload.kv_cache.gpu_mem_gb=0",
            "++workload.kv_cache.cpu_mem_gb=0", "++workload.kv_cache.generation_mode=none",
            "++workload.kv_cache.storage_capacity_gb=%g" % a.capacity_gb,
            "++workload.storage.storage_root=" + root,
            "++workload.output.folder=" + out] + kvcache_fidelity.template_overrides(a) + overrides
    t = time.monotonic()
    with benchlib.ChildCpu() as cpu:
        r = subprocess.run(wrap(argv), capture_output=True, text=True)
    wall = time.monotonic() - t
    if r.returncode != 0:
        sys.exit("iomimic failed:\n" + r.stdout[-2000:] + r.stderr[-2000:])
    with open(os.path.join(out, "summary.json")) as f:
        return json.load(f), wall, cpu.seconds


def run_reference(a, cache, wrap=lambda x: x, requests=0):
    """One kv-cache.py run with the same knobs; returns its results JSON."""
    shutil.rmtree(cache, ignore_errors=True)
    os.makedirs(cache)
    out = cache + ".json"
    argv = ["/usr/bin/python3", "kv-cache.py", "--config", a.reference_config, "--model", a.model,
            "--num-users", str(a.users), "--duration", str(a.duration if not requests else 600),
            "--max-requests", str(requests), "--gpu-mem-gb", "0",
            "--cpu-mem-gb", "0", "--storage-capacity-gb", "%g" % a.capacity_gb,
            "--cache-dir", cache, "--generation-mode", "none", "--seed", "42",
            "--output", out]
    r = subprocess.run(wrap(argv), cwd=a.reference, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("kv-cache.py failed:\n" + r.stdout[-2000:] + r.stderr[-2000:])
    with open(out) as f:
        result = json.load(f)
    shutil.rmtree(cache, ignore_errors=True)
    # No request finished: the reference writes no summary.
    result.setdefault("summary", {"storage_throughput_tokens_per_sec": 0.0})
    return result


# --- the two parts ----------------------------------------------------------------

def entry_pattern(summary):
    """(mean storage-tier entry size rounded to MiB, reads per write) of a run."""
    st = find_key(summary, "tiers")["storage"]
    writes = max(1, st["writes"] + st["eviction_writes"])
    written = st["write_bytes"] + st["eviction_write_bytes"]
    read = st["read_bytes"] + st["eviction_read_bytes"]
    size = max(MIB, int(written / writes) // MIB * MIB)
    return size, max(1, round(read / written)) if written else 1


def storage_bound(a, lines):
    device = device_of(a.work)
    caps = [float(c) for c in a.caps.split(",")]
    throttles = {c: Throttle("iomimic-kv-%g" % c, device, c) for c in caps}
    figures = {c: {"fio": [], "iomimic": [], "reference": []} for c in caps}
    try:
        for rnd in range(a.rounds):
            order = caps if rnd % 2 == 0 else list(reversed(caps))
            for cap in order:
                wrap = throttles[cap].wrap
                summary, _, _ = run_iomimic(a, os.path.join(a.work, "iom"),
                                            os.path.join(a.work, "iom-out"), [], wrap,
                                            a.requests)
                figures[cap]["iomimic"].append(
                    find_key(summary, "storage_throughput_tokens_per_sec"))
                # fio: this run's pattern (mean entry size, fsync per object,
                # dropped-cache reads in its read:write mix, a job per user),
                # about 2 s of writes at the cap.
                size, loops = entry_pattern(summary)
                nfiles = max(1, int(cap * MIB * 2 / size / a.users))
                w, rd, s, _ = run_fio("kv", os.path.join(a.work, "fio"), size, nfiles, a.users,
                                      loops, wrap)
                figures[cap]["fio"].append((w + rd) / MIB / s)
                ref = run_reference(a, os.path.join(a.work, "ref"), wrap, a.requests)
                figures[cap]["reference"].append(ref["summary"]["storage_throughput_tokens_per_sec"])
                print("round %d, %g MiB/s: fio %.1f MiB/s, iomimic %.1f tok/s, reference %.1f tok/s"
                      % (rnd + 1, cap, figures[cap]["fio"][-1], figures[cap]["iomimic"][-1],
                         figures[cap]["reference"][-1]), flush=True)
    finally:
        for t in throttles.values():
            t.remove()
    lo, hi = min(caps), max(caps)
    lines += ["## Storage-bound: two throttled set-ups of the same disk", "",
              "| set-up | fio MiB/s | iomimic storage tok/s | reference storage tok/s |",
              "|---|---:|---:|---:|"]
    for cap in caps:
        f = figures[cap]
        lines.append("| %g MiB/s cap | %s | %s | %s |" % (
            cap, benchlib.spread(f["fio"], "%.1f"), benchlib.spread(f["iomimic"], "%.1f"),
            benchlib.spread(f["reference"], "%.2f")))

    def ratios(tool):
        return [h / l if l else float("inf")
                for h, l in zip(figures[hi][tool], figures[lo][tool])]
    lines += ["", "Fast set-up over slow set-up, per round, median (min-max):", "",
              "| | ratio |", "|---|---:|"]
    for tool in ("fio", "iomimic", "reference"):
        lines.append("| %s | %s |" % (tool, benchlib.spread(ratios(tool), "%.2f")))
    fio_ratio = statistics.median(ratios("fio"))
    iom_ratio = statistics.median(ratios("iomimic"))
    lines += ["", "iomimic's ratio is %.2f of fio's (target: within 10%%)." % (iom_ratio / fio_ratio),
              ""]


def client_cost(a, lines):
    shm = "/dev/shm/iomimic-kv-bench"
    over = ["++workload.kv_cache.users.%s.think_time_%s=0.01" % (u, m)
            for u in ("chatbot", "coding", "document") for m in ("min", "max")]
    rows = []
    for rnd in range(a.rounds):
        summary, wall, cpu = run_iomimic(a, shm + "/iom", a.work + "/iom-out", over)
        st = find_key(summary, "tiers")["storage"]
        moved = sum(st[k] for k in ("read_bytes", "write_bytes", "eviction_read_bytes",
                                    "eviction_write_bytes"))
        elapsed = find_key(summary, "duration_seconds") or wall
        size, loops = entry_pattern(summary)
        written = st["write_bytes"] + st["eviction_write_bytes"]
        # As the workflow does: each job writes one entry (fsync on close) and
        # reads it `loops` times (a decode rereads its entry), cycle after
        # cycle until as many bytes are written as the run wrote.
        cycles = max(1, min(100, int(written / size / a.users)))
        w, rd, s, fcpu = run_fio_cycles(shm + "/fio", size, a.users, loops, cycles)
        rows.append(((cpu / (moved / GIB)) if moved else 0, (fcpu / ((w + rd) / GIB)),
                     moved / MIB / elapsed, (w + rd) / MIB / s))
        print("round %d: CPU s/GiB iomimic %.2f fio %.2f; MiB/s iomimic %.0f fio %.0f"
              % ((rnd + 1,) + rows[-1]), flush=True)
    shutil.rmtree(shm, ignore_errors=True)
    col = list(zip(*rows))
    lines += ["## Client cost on a warm page cache (tmpfs, users think 10 ms)", "",
              "fio (one process, `thread`): a job per user writes one object of the run's "
              "mean entry size (fsync on close) and reads it as many times as the run read "
              "each entry, cycle after cycle (stonewalled phases).", "",
              "| | iomimic | fio | iomimic / fio |", "|---|---:|---:|---:|",
              "| CPU s per GiB | %s | %s | %s |" % (
                  benchlib.spread(col[0], "%.2f"), benchlib.spread(col[1], "%.2f"),
                  benchlib.spread([x / y for x, y in zip(col[0], col[1])], "%.2f")),
              "| MiB/s | %s | %s | %s |" % (
                  benchlib.spread(col[2], "%.0f"), benchlib.spread(col[3], "%.0f"),
                  benchlib.spread([x / y for x, y in zip(col[2], col[3])], "%.2f")), ""]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reference", required=True)
    ap.add_argument("--iomimic", default=os.path.join(ROOT, "build", "bin", "iomimic"))
    ap.add_argument("--work", default="/var/tmp/iomimic-kv-bench")
    ap.add_argument("--caps", default="40,120")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--users", type=int, default=6)
    ap.add_argument("--duration", type=int, default=20,
                    help="seconds of each client-cost run")
    ap.add_argument("--requests", type=int, default=40,
                    help="requests of each storage-bound run: the same requests on both "
                    "set-ups (a run cut at a duration would keep only the small requests on "
                    "the slow one)")
    ap.add_argument("--model", default="tiny-1b")
    ap.add_argument("--capacity-gb", type=float, default=4)
    ap.add_argument("--scale-templates", type=int, default=16,
                    help="divide the users' token ranges (both programs), so that runs "
                    "complete many requests")
    ap.add_argument("--skip", choices=["storage", "client"])
    ap.add_argument("--record", action="store_true")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root (cgroup throttles, dropping caches)")
    os.makedirs(a.work, exist_ok=True)
    a.reference_config = os.path.abspath(kvcache_fidelity.write_reference_config(a))
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    lines = ["# KV-cache offload: storage-bound figures (bench/kvcache_storage_bound.py)", "",
             "iomimic %s; %s; load before: %s; model %s, %d users, %d requests per storage-bound run and %d s per client-cost run, seed 42, no GPU "
             "or host tier, the reference's user templates with token ranges / %d, %d rounds." % (
                 commit, benchlib.machine(with_fio=True), benchlib.loadavg(), a.model, a.users,
                 a.requests, a.duration, a.scale_templates, a.rounds), ""]
    if a.skip != "storage":
        storage_bound(a, lines)
    if a.skip != "client":
        client_cost(a, lines)
    text = "\n".join(lines)
    print(text)
    if a.record:
        with open(os.path.join(HERE, "results", "kvcache_storage_bound.md"), "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
