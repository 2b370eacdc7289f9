#!/usr/bin/python3
"""End-to-end checks of the KV-cache offload workflow (workflow.kv_cache,
docs/kvcache.md): workloads/kvcache_quickstart.yaml, shortened, on posix,
odirect and mmap; the storage tier's .npy objects open in numpy with the
model's shape; the bytes per tier add up with the counting storage's; two
ranks under mpirun are aggregated as MLPerf Storage's rules (6.3.4) say;
bad input is one error line. Run by ctest.

Usage: kvcache_workflow_tests.py <test-name> --iomimic BIN --source DIR --work DIR
"""

import csv
import glob
import json
import os
import signal
import subprocess
import time

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
    written = (st["write_bytes"] + st["eviction_write_bytes"] + kv["storage_header_bytes_written"] +
               kv["storage_cut_short_bytes_written"])
    read = (st["read_bytes"] + st["eviction_read_bytes"] + kv["storage_header_bytes_read"] +
            kv["storage_cut_short_bytes_read"])
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


# The closed options (MLPerf Storage's rules, 6.3; docs/kvcache.md) as
# shipped, shrunk by overrides only: 4 users, 3 s, every user type's context
# range divided by 16 (entries of 4-195 MiB for llama3.1-8b, 10-488 MiB for
# llama3.1-70b instead of up to 3 GiB and 8 GiB, so that a 3 s run completes
# requests on a CI disk), a storage tier of 0.5 GB (8b) or 1 GB (70b) that
# still holds the largest entry, and option 2's host-memory tier cut from
# 4 GB to 0.25 GB. Options 1 and 3 keep having no memory tier at all.
CLOSED_OPTIONS = {
    "kvcache_opt1_8b": {"model": "llama3.1-8b", "storage_gb": 0.5, "cpu_gb": None},
    "kvcache_opt2_8b": {"model": "llama3.1-8b", "storage_gb": 0.5, "cpu_gb": 0.25},
    "kvcache_opt3_70b": {"model": "llama3.1-70b-instruct", "storage_gb": 1, "cpu_gb": None},
}
# The reference's context ranges (kv_cache.users.<type>.context_min/max).
REFERENCE_CONTEXTS = {"chatbot": (512, 4096), "coding": (4096, 25000), "document": (4096, 16384)}
AGGREGATE_KEYS = ("storage_tokens_per_second", "storage_read_GiB_per_second",
                  "storage_write_GiB_per_second", "wall_tokens_per_second",
                  "max_rank_end_to_end_p95_ms", "max_rank_storage_p95_ms")


def closed_option_overrides(workload, seconds=3):
    """The overrides that shrink one closed option (CLOSED_OPTIONS) to a run
    of `seconds`."""
    o = CLOSED_OPTIONS[workload]
    out = ["workload=" + workload,
           "++workload.kv_cache.num_users=4",
           "++workload.kv_cache.duration=%g" % seconds,
           "++workload.kv_cache.storage_capacity_gb=%g" % o["storage_gb"]]
    if o["cpu_gb"] is not None:
        out.append("++workload.kv_cache.cpu_mem_gb=%g" % o["cpu_gb"])
    for user, (lo, hi) in REFERENCE_CONTEXTS.items():
        out += ["++workload.kv_cache.users.%s.context_min=%d" % (user, lo // 16),
                "++workload.kv_cache.users.%s.context_max=%d" % (user, hi // 16)]
    return out


def check_closed_option(workload, out, backend):
    """A shrunk closed option completed with requests, storage-tier bytes,
    the option's tier structure and the summary's aggregate keys."""
    s = load_summary(out)
    kv, o = s["kv_cache"], CLOSED_OPTIONS[workload]
    where = "%s on %s" % (workload, backend)
    if kv["model"] != o["model"] or kv["num_users_per_rank"] != 4:
        fail("%s: model %s, %s users" % (where, kv["model"], kv["num_users_per_rank"]))
    if kv["requests"] <= 0 or kv["tokens_generated"] <= 0:
        fail("%s: %d requests, %d tokens" % (where, kv["requests"], kv["tokens_generated"]))
    st = kv["tiers"]["storage"]
    if st["write_bytes"] + st["eviction_write_bytes"] <= 0:
        fail("%s: no bytes written to the storage tier: %s" % (where, st))
    if st["capacity_bytes"] != int(o["storage_gb"] * 1e9) and st["capacity_bytes"] != int(
            o["storage_gb"] * (1 << 30)):
        fail("%s: storage capacity %d" % (where, st["capacity_bytes"]))
    cpu, gpu = kv["tiers"]["cpu"], kv["tiers"]["gpu"]
    if gpu["capacity_bytes"] != 0 or gpu["writes"] != 0:
        fail("%s: a GPU tier in a closed option: %s" % (where, gpu))
    if o["cpu_gb"] is None and (cpu["capacity_bytes"] != 0 or cpu["writes"] != 0):
        fail("%s: a host-memory tier where the option has none: %s" % (where, cpu))
    if o["cpu_gb"] is not None and (cpu["capacity_bytes"] <= 0 or cpu["writes"] <= 0):
        fail("%s: option 2's host-memory tier is missing or unused: %s" % (where, cpu))
    missing = [k for k in AGGREGATE_KEYS if not isinstance(kv["aggregate"].get(k), (int, float))]
    if missing or kv["aggregate"]["storage_tokens_per_second"] <= 0:
        fail("%s: aggregate %s (missing %s)" % (where, kv["aggregate"], missing))
    if s.get("iomimic", {}).get("bytes_written", 0) <= 0:
        fail("%s: the counting storage wrote nothing" % where)
    print("%s: %d requests, %.1f storage tokens/s, storage %.3f GiB/s read %.3f written" % (
        where, kv["requests"], kv["aggregate"]["storage_tokens_per_second"],
        st["read_GiB_per_second"], st["write_GiB_per_second"]))


def closed_options_test(backend):
    """Every closed option, shrunk, on `backend` (posix, odirect or mmap)."""
    for workload in CLOSED_OPTIONS:
        root = os.path.join(args().work, workload + "_root")
        out = os.path.join(args().work, workload + "_out")
        run([args().iomimic, "run", "-q"] + closed_option_overrides(workload) + [
            "++workload.storage.backend=" + backend,
            "++workload.storage.storage_root=" + root,
            "++workload.output.folder=" + out])
        check_closed_option(workload, out, backend)
        left = glob.glob(os.path.join(root, "kvcache", "rank_0", "*.npy"))
        if left:
            fail("%s on %s: entries left without keep_entries: %s" % (workload, backend, left[:3]))


def test_kvcache_closed_options_posix():
    closed_options_test("posix")


def test_kvcache_closed_options_odirect():
    closed_options_test("odirect")


def test_kvcache_closed_options_mmap():
    closed_options_test("mmap")


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


def trace_rows(path):
    """(operation, bytes, tier, phase, turn) per row: keys differ only in
    the conversation's id (the reference's is a time in ms)."""
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            turn = r["Key"].rsplit("_turn_", 1)[-1] if "_turn_" in r["Key"] else r["Key"]
            rows.append((r["Operation"], int(r["Object_Size_Bytes"]), r["Tier"], r["Phase"], turn))
    return rows


def test_kvcache_workflow_matches_reference_trace():
    """One user, tiny-1b, an 8 GiB CPU tier, the reference's user templates
    and seed 42: the first operations (reads and writes, sizes, tiers,
    phases, turns) are the ones the reference's own --io-trace-log wrote for
    the same options (tests/kvcache/reference_tiny1b_one_user.csv:
    kv-cache.py --model tiny-1b --num-users 1 --duration 10 --gpu-mem-gb 0
    --cpu-mem-gb 8 --storage-capacity-gb 5 --generation-mode none --seed 42)."""
    out = os.path.join(args().work, "out")
    run([args().iomimic, "run", "-q", "workload=kvcache_opt1_8b",
         "++workload.kv_cache.model=tiny-1b", "++workload.kv_cache.num_users=1",
         "++workload.kv_cache.duration=6", "++workload.kv_cache.cpu_mem_gb=8",
         "++workload.kv_cache.storage_capacity_gb=5",
         "++workload.storage.storage_root=" + os.path.join(args().work, "root"),
         "++workload.kv_cache.io_trace_log=trace.csv", "++workload.output.folder=" + out])
    reference = trace_rows(os.path.join(args().source, "tests", "kvcache",
                                        "reference_tiny1b_one_user.csv"))
    ours = trace_rows(os.path.join(out, "trace.csv"))
    same_operations(ours, reference, "iomimic", "the reference")


def test_kvcache_workflow_tiers_match_reference():
    """Six users, llama3.1-8b, a 4 GB CPU tier, 60 requests, seed 42,
    trace-only: per (operation, tier, phase) the operations and bytes are
    within 5 % of the reference's modal trace for the same options
    (tests/kvcache/reference_llama8b_six_users_cpu4.csv, 4 of 8 runs of
    kv-cache.py --model llama3.1-8b --num-users 6 --max-requests 60
    --gpu-mem-gb 0 --cpu-mem-gb 4 --storage-capacity-gb 100
    --generation-mode none --seed 42 --io-trace-log; bench/results/
    kvcache_fidelity_tiers.md). A request left queued by a lost wakeup
    (issue 33) read its earlier turns after another user's prefill had
    evicted them: 47-67 Tier-2 decode reads against 41. Users waking within
    a few ms of each other may swap under load, as the reference's own runs
    do: up to three runs, one must match."""
    ref = group_totals(trace_rows(os.path.join(args().source, "tests", "kvcache",
                                         "reference_llama8b_six_users_cpu4.csv")))
    misses = []
    for attempt in range(3):
        out = os.path.join(args().work, "tiers_%d" % attempt)
        run([args().iomimic, "run", "-q", "workload=kvcache_opt1_8b",
             "++workload.kv_cache.model=llama3.1-8b", "++workload.kv_cache.num_users=6",
             "++workload.kv_cache.max_requests=60", "++workload.kv_cache.duration=120",
             "++workload.kv_cache.cpu_mem_gb=4", "++workload.kv_cache.storage_capacity_gb=100",
             "++workload.kv_cache.max_concurrent_allocs=0", "++workload.kv_cache.trace_only=True",
             "++workload.storage.storage_root=" + os.path.join(args().work, "root"),
             "++workload.kv_cache.io_trace_log=trace.csv", "++workload.output.folder=" + out])
        ours = group_totals(trace_rows(os.path.join(out, "trace.csv")))
        off = ["%s: %d ops %d bytes, the reference's %d and %d" %
               (" ".join(g), ours.get(g, (0, 0))[0], ours.get(g, (0, 0))[1], n, b)
               for g, (n, b) in sorted(ref.items())
               if abs(ours.get(g, (0, 0))[0] - n) > 0.05 * n or
               abs(ours.get(g, (0, 0))[1] - b) > 0.05 * b]
        off += ["%s: %s, not in the reference's" % (" ".join(g), ours[g])
                for g in ours if g not in ref]
        if not off:
            return
        misses.append("run %d: %s" % (attempt + 1, "; ".join(off)))
    fail("not within 5 %% of the reference's modal trace in 3 runs: %s" % " | ".join(misses))


def group_totals(rows):
    """Per (operation, tier, phase): (operations, bytes)."""
    totals = {}
    for op, size, tier, phase, _ in rows:
        n, b = totals.get((op, tier, phase), (0, 0))
        totals[(op, tier, phase)] = (n + 1, b + size)
    return totals


def same_operations(a, b, a_name, b_name):
    """The common prefix of two operation lists (at least 30) is equal; its
    length."""
    n = min(len(a), len(b))
    if n < 30:
        fail("only %d operations to compare" % n)
    for i in range(n):
        if a[i] != b[i]:
            fail("operation %d: %s %s, %s %s" % (i + 1, a_name, a[i], b_name, b[i]))
    return n


def test_kvcache_workflow_trace_only():
    """kv_cache.trace_only: the quickstart with one user, run for real and
    trace-only (the reference's --io-trace-log mode, no I/O), writes the same
    operations in the same order (operation, size, tier, key, phase), the
    CPU tier's demotions to storage included; the trace-only run touches no
    storage (its cache folder is never made, the counting storage moved no
    byte) and says so in summary.json. Without io_trace_log it is refused."""
    traces = {}
    for mode in ("real", "trace_only"):
        cmd, root, out = quickstart(mode, seconds=60, extra=[
            "++workload.kv_cache.num_users=1", "++workload.kv_cache.max_requests=10",
            "++workload.kv_cache.io_trace_log=trace.csv",
            "++workload.kv_cache.trace_only=%s" % (mode == "trace_only")])
        run(cmd)
        kv = load_summary(out)["kv_cache"]
        io = load_summary(out)["iomimic"]
        if kv["trace_only"] != (mode == "trace_only") or kv["requests"] < 10:
            fail("%s: trace_only %s, %d requests" % (mode, kv["trace_only"], kv["requests"]))
        if mode == "trace_only" and (os.path.exists(root) or io["bytes_written"] != 0 or
                                     io["bytes_read"] != 0):
            fail("the trace-only run did I/O: %s exists %s, %d written, %d read" %
                 (root, os.path.exists(root), io["bytes_written"], io["bytes_read"]))
        with open(os.path.join(out, "trace.csv"), newline="") as f:
            traces[mode] = [(r["Operation"], int(r["Object_Size_Bytes"]), r["Tier"], r["Key"],
                             r["Phase"]) for r in csv.DictReader(f)]
    real = traces["real"]
    n = same_operations(real, traces["trace_only"], "real run", "trace-only")
    if not any(row[2] == "Tier-2" for row in real[:n]):
        fail("no storage-tier operation among the %d compared: the CPU tier never filled" % n)
    cmd, _, _ = quickstart("refused", extra=["++workload.kv_cache.trace_only=True"])
    p = run(cmd, expect_ok=False)
    if p.returncode == 0 or "kv_cache.trace_only" not in p.stderr or "io_trace_log" not in p.stderr:
        fail("trace_only without io_trace_log: exit %d, %s" % (p.returncode, p.stderr))


def test_kvcache_workflow_trace_only_queue_wait():
    """With no I/O time a request waits for no worker: trace-only, 2 and 8
    users (as many workers), end-to-end P95 at most 5 ms. A push once woke a
    user sleeping its think time instead of an idle worker, and the request
    waited for the next push: P95 47-150 ms (issue 33; the queue's own,
    deterministic test is core/src/kvcache/request_queue_test.cpp). On a
    machine loaded far past its cores a woken thread can wait tens of ms for
    a core (the queue alone, 8 users at load 8 on 2 cores: P95 1-9 ms), so
    each count gets up to three runs, one of which must pass."""
    for users in (2, 8):
        seen = []
        for attempt in range(3):
            cmd, _, out = quickstart("queue_wait_%d_%d" % (users, attempt), seconds=6, extra=[
                "++workload.kv_cache.num_users=%d" % users,
                "++workload.kv_cache.io_trace_log=trace.csv",
                "++workload.kv_cache.trace_only=True"])
            run(cmd)
            kv = load_summary(out)["kv_cache"]
            e2e = kv["latency_ms"]["end_to_end"]
            if kv["requests"] < 10 or e2e["count"] != kv["requests"]:
                fail("%d users: %d requests, %d latencies" %
                     (users, kv["requests"], e2e["count"]))
            seen.append("P95 %.3f ms (p50 %.3f, max %.3f, %d requests)" %
                        (e2e["p95"], e2e["p50"], e2e["max"], kv["requests"]))
            if e2e["p95"] <= 5:
                break
        else:
            fail("%d users, trace-only: end-to-end over 5 ms in 3 runs: %s" %
                 (users, "; ".join(seen)))


TIER_COUNTERS = ("reads", "writes", "read_bytes", "write_bytes", "eviction_reads",
                 "eviction_writes", "eviction_read_bytes", "eviction_write_bytes", "deletes",
                 "delete_bytes")
EMULATED_ACCELERATOR = "emulated (host memory, gpu_copy_gbps)"


def test_kvcache_workflow_gds_accelerator():
    """kv_cache.accelerator=gds (docs/kvcache.md, "Tiers"): the accelerator
    tier's entries are device buffers of the gds storage plugin, written and
    read with Storage::CopyIntoBuffer and CopyOutOfBuffer; without a GPU (CI)
    on the plugin's emulated path. One user and max_requests make the tier
    decisions those of accelerator=emulated, so every tier moves the same
    bytes, and the gds figures count the accelerator tier's bytes exactly.
    auto says what it chose and why; a gds plugin that cannot open its forced
    mode, and an unknown value, are one error line each."""
    runs = {}
    for accel in ("emulated", "gds", "auto"):
        cmd, _, out = quickstart("accel_" + accel, seconds=60, extra=[
            "++workload.kv_cache.num_users=1", "++workload.kv_cache.max_requests=15",
            "++workload.kv_cache.gpu_mem_gb=0.03125",
            "++workload.kv_cache.accelerator=" + accel])
        cmd.remove("-q")
        p = run(cmd)
        runs[accel] = load_summary(out)["kv_cache"]
        path = runs[accel]["accelerator_path"]
        if "kv-cache accelerator tier: " + path not in p.stdout:
            fail("%s: the console does not name the accelerator path %s" % (accel, path))
    emulated, gds, auto = runs["emulated"], runs["gds"], runs["auto"]
    if (emulated["accelerator_path"], emulated["accelerator_statistics"]) != (
            EMULATED_ACCELERATOR, {}):
        fail("accelerator=emulated: %s %s" % (emulated["accelerator_path"],
                                              emulated["accelerator_statistics"]))
    if (gds["accelerator_path"], gds["accelerator_reason"]) != ("gds:emulated",
                                                                "kv_cache.accelerator=gds"):
        fail("accelerator=gds: %s (%s)" % (gds["accelerator_path"], gds["accelerator_reason"]))
    if auto["accelerator_path"] == EMULATED_ACCELERATOR:
        if "found no GPU" not in auto["accelerator_reason"]:
            fail("auto: %s" % auto["accelerator_reason"])
    elif auto["accelerator_path"] not in ("gds:cuda-bounce", "gds:cufile"):
        fail("auto took %s (%s)" % (auto["accelerator_path"], auto["accelerator_reason"]))
    for name, kv in runs.items():
        if kv["requests"] != 15:
            fail("%s: %d requests" % (name, kv["requests"]))
    gpu = gds["tiers"]["gpu"]
    if gpu["writes"] == 0 or gpu["reads"] == 0 or gpu["eviction_reads"] == 0:
        fail("the accelerator tier saw too little traffic to compare: %s" % gpu)
    for tier in ("gpu", "cpu", "storage"):
        a = {k: emulated["tiers"][tier][k] for k in TIER_COUNTERS}
        b = {k: gds["tiers"][tier][k] for k in TIER_COUNTERS}
        if a != b:
            fail("tier %s: emulated %s, gds %s" % (tier, a, b))
    stats = gds["accelerator_statistics"]
    expect = {"gds_h2d_copy_bytes": gpu["write_bytes"] + gpu["eviction_write_bytes"],
              "gds_d2h_copy_bytes": gpu["read_bytes"] + gpu["eviction_read_bytes"],
              "gds_staged_bytes": 0}
    got = {k: stats.get(k) for k in expect}
    if got != expect or stats["gds_device_allocations"] < gpu["writes"]:
        fail("gds figures %s, expected %s and %d allocations" % (stats, expect, gpu["writes"]))
    if stats["gds_h2d_copy_seconds"] <= 0 or stats["gds_d2h_copy_seconds"] <= 0:
        fail("gds copy seconds: %s" % stats)
    print("accelerator tier: %d writes, %d reads, %d demotions, %.1f MiB to and %.1f MiB from "
          "the gds plugin's device memory" % (gpu["writes"], gpu["reads"], gpu["eviction_reads"],
                                              expect["gds_h2d_copy_bytes"] / 2**20,
                                              expect["gds_d2h_copy_bytes"] / 2**20))
    gds_options = "++workload.kv_cache.accelerator_options."
    expect_error(["++workload.kv_cache.gpu_mem_gb=0.03125", "++workload.kv_cache.accelerator=gds",
                  gds_options + "mode=cufile",
                  gds_options + "cufile_library=/nonexistent/libcufile.so.0"],
                 "kv_cache.accelerator=gds")
    expect_error(["++workload.kv_cache.accelerator=tpu"], "kv_cache.accelerator")


def test_kvcache_workflow_max_requests_and_signal():
    """max_requests ends the run at exactly that many requests; SIGINT ends
    it with its figures, status interrupted and exit 130."""
    cmd, root, out = quickstart("max", seconds=60, extra=["++workload.kv_cache.max_requests=5"])
    run(cmd)
    kv = load_summary(out)["kv_cache"]
    if kv["requests"] != 5 or kv["duration_seconds"] >= 60:
        fail("max_requests 5: %d requests in %s s" % (kv["requests"], kv["duration_seconds"]))
    cmd, root, out = quickstart("signal", seconds=60)
    p = subprocess.Popen(cmd, cwd=args().work, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(3)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    s = load_summary(out)
    if p.returncode != 130 or s["iomimic"]["status"] != "interrupted":
        fail("exit %d, status %s: %s" % (p.returncode, s["iomimic"]["status"], err))
    if not 2 < s["kv_cache"]["duration_seconds"] < 30:
        fail("ran %s s" % s["kv_cache"]["duration_seconds"])


def test_kvcache_workflow_content_ratio():
    """Entries are incompressible random blocks by default, also to a
    compressor whose window spans the 256 KiB pattern the default content
    repeats (xz, 8 MiB dictionary); a manifest that asks for
    iomimic.compress_percentage gets entries that compress by it."""
    import lzma
    import zlib

    def ratio(name, extra):
        cmd, root, out = quickstart(name, seconds=2, extra=[
            "++workload.kv_cache.num_users=1", "++workload.kv_cache.cpu_mem_gb=0",
            "++workload.kv_cache.max_requests=2"] + extra)
        run(cmd)
        objects = sorted(glob.glob(os.path.join(root, "kvcache", "rank_0", "*.npy")))
        if not objects:
            fail("%s: no .npy entry kept" % name)
        with open(objects[0], "rb") as f:
            data = f.read()[HEADER:HEADER + (4 << 20)]
        if not extra:
            xz = len(lzma.compress(data, preset=6)) / len(data)
            if xz < 0.99:
                fail("default entries compress to %.2f of their size with xz" % xz)
        return len(zlib.compress(data, 1)) / len(data)

    plain = ratio("content_plain", [])
    half = ratio("content_half", ["++workload.iomimic.compress_percentage=50"])
    if plain < 0.99:
        fail("default entries compress to %.2f of their size" % plain)
    if not 0.45 < half < 0.6:
        fail("compress_percentage 50: entries compress to %.2f of their size" % half)
    print("entries compress to %.3f (default) and %.3f (compress_percentage 50)" % (plain, half))


if __name__ == "__main__":
    harness.main(globals())
