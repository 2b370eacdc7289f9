#!/usr/bin/python3
"""End-to-end checks of the KV-cache offload workflow (workflow.kv_cache,
docs/kvcache.md): workloads/kvcache_quickstart.yaml, shortened, on posix,
odirect and mmap; the storage tier's .npy objects open in numpy with the
model's shape; the bytes per tier add up with the counting storage's; two
ranks under mpirun are aggregated as MLPerf Storage's Rules.md 6.3.4 says;
bad input is one error line. Run by ctest.

Usage: kvcache_workflow_tests.py <test-name> --iomimic BIN --source DIR --work DIR
"""

import csv
import glob
import json
import os

import numpy as np

import iomimic_tests as harness
from iomimic_tests import fail, run

HEADER = 128  # the .npy header the workflow writes
# tiny-1b: 12 layers, 4 KV heads of 128, float16 (K and V): bytes per token.
TINY_BYTES_PER_TOKEN = 12 * 4 * 128 * 2 * 2


def args():
    return harness.ARGS


def quickstart(name, seconds=3, extra=()):
    root = os.path.join(args().work, name + "_root")
    out = os.path.join(args().work, name + "_out")
    cmd = [args().iomimic, "run", "-q", "workload=kvcache_quickstart",
           "++workload.storage.storage_root=" + root,
           "++workload.output.folder=" + out,
           "++workload.kv_cache.duration=%s" % seconds,
           "++workload.kv_cache.keep_entries=True"] + list(extra)
    return cmd, root, out


def load_summary(out):
    with open(os.path.join(out, "summary.json")) as f:
        return json.load(f)


def check_run(out, root, ranks=1):
    """The figures add up and the objects left behind are numpy arrays."""
    s = load_summary(out)
    kv = s["kv_cache"]
    if kv["requests"] <= 0 or kv["tokens_generated"] <= 0:
        fail("no requests: %s" % kv["requests"])
    st = kv["tiers"]["storage"]
    written = st["write_bytes"] + st["eviction_write_bytes"] + kv["storage_header_bytes_written"]
    read = st["read_bytes"] + st["eviction_read_bytes"] + kv["storage_header_bytes_read"]
    io = s["iomimic"]
    if (io["bytes_written"], io["bytes_read"]) != (written, read):
        fail("counting storage wrote %d read %d; the storage tier %d and %d" %
             (io["bytes_written"], io["bytes_read"], written, read))
    if st["writes"] + st["eviction_writes"] == 0 or st["reads"] == 0:
        fail("the storage tier saw no traffic: %s" % st)
    cpu = kv["tiers"]["cpu"]
    if cpu["writes"] == 0 or cpu["capacity_bytes"] != ranks * (64 << 20):
        fail("the host tier: %s" % cpu)
    # Entries demoted out of cpu arrive in storage.
    if cpu["eviction_reads"] != st["eviction_writes"]:
        fail("%d cpu demotions, %d storage eviction writes" %
             (cpu["eviction_reads"], st["eviction_writes"]))
    if len(kv["per_rank"]) != ranks:
        fail("per_rank has %d rows" % len(kv["per_rank"]))
    for q in ("interactive", "responsive", "batch"):
        if kv["qos"][q]["target_p95_ms"] not in (50, 100, 1000):
            fail("qos %s" % kv["qos"][q])
    for r in range(ranks):
        files = glob.glob(os.path.join(root, "kvcache", "rank_%d" % r, "*.npy"))
        if not files:
            fail("rank %d left no objects" % r)
        for path in files[:5]:
            a = np.load(path)
            if a.dtype != np.float16 or a.shape[:2] != (12, 2) or a.shape[3:] != (4, 128):
                fail("%s: %s %s" % (path, a.dtype, a.shape))
            if os.path.getsize(path) != HEADER + a.nbytes:
                fail("%s: %d bytes" % (path, os.path.getsize(path)))
        with open(os.path.join(out, "%d_kv_cache.json" % r)) as f:
            if json.load(f)["rank"] != r:
                fail("%d_kv_cache.json" % r)
    return s


def backend_test(backend):
    cmd, root, out = quickstart(backend, extra=["++workload.storage.backend=" + backend])
    run(cmd)
    check_run(out, root)


def test_kvcache_workflow_posix():
    """The quickstart on posix; with an io-trace log whose rows add up."""
    cmd, root, out = quickstart("posix", extra=["++workload.kv_cache.io_trace_log=trace.csv"])
    run(cmd)
    s = check_run(out, root)
    writes = reads = 0
    with open(os.path.join(out, "trace.csv"), newline="") as f:
        for row in csv.DictReader(f):
            if row["Tier"] == "Tier-2":
                n = int(row["Object_Size_Bytes"])
                writes += n if row["Operation"] == "Write" else 0
                reads += n if row["Operation"] == "Read" else 0
    st = s["kv_cache"]["tiers"]["storage"]
    if (writes, reads) != (st["write_bytes"] + st["eviction_write_bytes"],
                           st["read_bytes"] + st["eviction_read_bytes"]):
        fail("trace: %d written %d read; results %s" % (writes, reads, st))


def test_kvcache_workflow_odirect():
    backend_test("odirect")


def test_kvcache_workflow_mmap():
    backend_test("mmap")


def test_kvcache_workflow_two_ranks():
    """mpirun -np 2: two servers with their own folders, seeds and files,
    storage tokens/s and read bandwidth summed, the largest rank's P95."""
    cmd, root, out = quickstart("mpi")
    harness.mpirun(2, cmd)
    s = check_run(out, root, ranks=2)
    kv = s["kv_cache"]
    ranks = kv["per_rank"]
    agg = kv["aggregate"]
    total = sum(r["storage_tokens_per_second"] for r in ranks)
    if abs(agg["storage_tokens_per_second"] - total) > 1e-6 * max(1, total):
        fail("aggregate %s, ranks %s" % (agg, ranks))
    if agg["max_rank_end_to_end_p95_ms"] != max(r["end_to_end_p95_ms"] for r in ranks):
        fail("max p95 %s" % agg)
    if kv["requests"] != sum(r["requests"] for r in ranks):
        fail("requests %d, ranks %s" % (kv["requests"], ranks))
    names = [set(os.path.basename(p) for p in glob.glob(os.path.join(root, "kvcache",
                                                                     "rank_%d" % r, "*.npy")))
             for r in range(2)]
    sizes = [sorted(os.path.getsize(os.path.join(root, "kvcache", "rank_%d" % r, n))
                    for n in names[r]) for r in range(2)]
    if sizes[0] == sizes[1]:
        fail("both ranks wrote the same entries: seeds not per rank")


def expect_error(extra, needle):
    cmd, _, _ = quickstart("bad", seconds=1, extra=extra)
    p = run(cmd, expect_ok=False)
    errors = [line for line in p.stderr.splitlines() if "error" in line]
    if p.returncode == 0 or len(errors) != 1 or needle not in errors[0]:
        fail("%s: exit %d, stderr %r" % (extra, p.returncode, p.stderr))


def test_kvcache_workflow_bad_input():
    """A storage tier smaller than the largest entry, an unknown model, and
    kv_cache with train: one error line each."""
    # The quickstart's largest entry: 4096 tokens x 24 KiB = 96 MiB.
    expect_error(["++workload.kv_cache.storage_capacity_gb=0.05"],
                 "kv_cache.storage_capacity_gb")
    expect_error(["++workload.kv_cache.model=llama9"], "llama3.1-70b-instruct")
    expect_error(["++workload.workflow.train=True"], "workflow.kv_cache")


if __name__ == "__main__":
    harness.main(globals())
