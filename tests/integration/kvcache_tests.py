#!/usr/bin/python3
"""End-to-end checks of `iomimic kvcache-replay` and of the kv-cache.py entry
point (docs/kvcache-reference.md). kvcache-replay:
the small trace tests/kvcache/small_trace.csv (written for these tests in the
KV-cache reference's --io-trace-log format: Tier-2 prefill writes and decode
reads, an eviction Tier-0 -> Tier-1 -> Tier-2, a read of an object the trace
never writes, a key with a folder) replayed on posix. Run by ctest.

Usage: kvcache_tests.py <test-name> --iomimic BIN --source DIR --work DIR
"""

import collections
import csv
import io
import json
import os
import re

import numpy as np

import iomimic_tests as harness
from iomimic_tests import fail, run


def args():
    return harness.ARGS


def trace_path():
    return os.path.join(args().source, "tests", "kvcache", "small_trace.csv")


def expected_groups(path):
    """(ops, bytes) per 'Operation Tier Phase', counted here from the CSV."""
    groups = collections.defaultdict(lambda: [0, 0])
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            g = groups["%s %s %s" % (row["Operation"], row["Tier"], row["Phase"] or "(none)")]
            g[0] += 1
            g[1] += int(row["Object_Size_Bytes"])
    return groups


def test_kvcache_replay_posix():
    """Every Tier-2 row is one operation with the trace's bytes, on two
    threads; memory tiers are counted, not replayed; the kept objects are
    .npy files numpy loads, of the trace's sizes; the objects are removed
    without --keep-objects; results are not overwritten."""
    groups = expected_groups(trace_path())
    objects = os.path.join(args().work, "objects")
    out = os.path.join(args().work, "out")
    run([args().iomimic, "kvcache-replay", trace_path(), "--storage", "posix", "--root", objects,
         "--threads", "2", "--transfer-size", "65536", "--keep-objects", "--output", out])
    # A run like any other (docs/kvcache-reference.md): its figures in
    # summary.json's kv_cache_replay, status.json completed, the replay's
    # histograms and its span in events.csv.
    with open(os.path.join(out, "summary.json")) as f:
        summary = json.load(f)
    result = summary["kv_cache_replay"]
    with open(os.path.join(out, "status.json")) as f:
        if json.load(f)["status"] != "completed":
            fail("status.json does not say completed")
    hist = summary["iomimic"]["latency_ms"]
    if hist["kv_replay_write"]["count"] != result["writes"]["ops"]:
        fail("histograms: kv_replay_write holds %d, %d writes" %
             (hist["kv_replay_write"]["count"], result["writes"]["ops"]))
    with open(os.path.join(out, "events.csv")) as f:
        if not any(r["event"] == "kv_replay" for r in csv.DictReader(f)):
            fail("events.csv has no kv_replay span")
    got = {name: [g["ops"], g["bytes"]] for name, g in result["groups"].items()}
    if got != dict(groups):
        fail("groups %s, the trace has %s" % (got, dict(groups)))
    tier2 = {k: v for k, v in groups.items() if " Tier-2 " in k}
    for op, key in (("Write", "writes"), ("Read", "reads")):
        ops = sum(v[0] for k, v in tier2.items() if k.startswith(op))
        size = sum(v[1] for k, v in tier2.items() if k.startswith(op))
        if (result[key]["ops"], result[key]["bytes"]) != (ops, size):
            fail("%s: %d ops %d bytes replayed, the trace has %d and %d" %
                 (key, result[key]["ops"], result[key]["bytes"], ops, size))
        if result[key]["latency_seconds"]["p50"] <= 0:
            fail("%s: no latency" % key)
    # The replay's own figures reach compare (docs/analysis.md, "Figures"):
    # MiB/s from bytes/s, P99 in ms from seconds.
    p = run([args().iomimic, "compare", out, out])
    rows = {line[:24].strip(): line[24:].split() for line in p.stdout.splitlines()}
    for name, want in (("kv replay read MiB/s", result["reads"]["bytes_per_second"] / 1048576),
                       ("kv replay write p99 ms",
                        result["writes"]["latency_seconds"]["p99"] * 1e3)):
        if name not in rows or abs(float(rows[name][0]) - want) > max(0.01 * want, 0.006):
            fail("compare: %s %r, summary.json says %g:\n%s" % (name, rows.get(name), want,
                                                                 p.stdout))
    memory = [v for k, v in groups.items() if " Tier-2 " not in k]
    if result["skipped_memory_tiers"] != {"ops": sum(v[0] for v in memory),
                                          "bytes": sum(v[1] for v in memory)}:
        fail("skipped %s" % result["skipped_memory_tiers"])
    if result["setup_objects"] != 1:
        fail("setup_objects %d, expected 1 (the system prompt read)" % result["setup_objects"])
    # The objects: numpy loads them and they hold the trace's bytes.
    sizes = {}
    with open(trace_path(), newline="") as f:
        for row in csv.DictReader(f):
            if row["Tier"] == "Tier-2":
                sizes[row["Key"]] = int(row["Object_Size_Bytes"])
    for key, size in sizes.items():
        a = np.load(os.path.join(objects, key + ".npy"))
        if a.nbytes != size or a.ndim != 1:
            fail("%s.npy holds %s %s, the trace says %d bytes" % (key, a.dtype, a.shape, size))
    # Again into the same root: refused, nothing overwritten.
    p = run([args().iomimic, "kvcache-replay", trace_path(), "--root", objects, "--output",
             os.path.join(args().work, "out_again")], expect_ok=False)
    if p.returncode != 1 or "exists before the replay" not in p.stderr:
        fail("a replay over existing objects was not refused (exit %d)" % p.returncode)
    # Same output folder: refused.
    p = run([args().iomimic, "kvcache-replay", trace_path(), "--root",
             os.path.join(args().work, "o2"), "--output", out], expect_ok=False)
    if p.returncode != 1 or "already holds the results of another run" not in p.stderr:
        fail("a run folder with results was not refused (exit %d)" % p.returncode)
    # Without --keep-objects nothing is left.
    clean = os.path.join(args().work, "clean")
    run([args().iomimic, "kvcache-replay", trace_path(), "--root", clean, "--timing", "recorded",
         "--output", os.path.join(args().work, "out_clean")])
    left = [os.path.join(d, f) for d, _, files in os.walk(clean) for f in files]
    if left:
        fail("objects left after the replay: %s" % left)


def test_kvcache_replay_rejects_bad_traces():
    """A malformed row, or a line over 64 KiB: exit 1 and one short error
    line naming the file and line; a bad timing value is a usage error (exit
    2)."""
    bad = os.path.join(args().work, "bad.csv")
    with open(trace_path(), newline="") as f:
        lines = f.read().split("\r\n")
    lines[2] = lines[2].replace("Tier-2", "Tier-9")
    with open(bad, "w", newline="") as f:
        f.write("\r\n".join(lines))
    p = run([args().iomimic, "kvcache-replay", bad, "--root", os.path.join(args().work, "o")],
            expect_ok=False)
    errors = [line for line in p.stderr.splitlines() if line.startswith("iomimic: error:")]
    if p.returncode != 1 or len(errors) != 1 or (bad + ":3: Tier 'Tier-9'") not in errors[0]:
        fail("exit %d, stderr %r" % (p.returncode, p.stderr))
    p = run([args().iomimic, "kvcache-replay", trace_path(), "--timing", "slow"], expect_ok=False)
    if p.returncode != 2:
        fail("--timing slow exited %d, expected 2" % p.returncode)
    # A 65 KiB line (a key that long): refused as it is read, in one short
    # line naming the file, the line and the limit (it once failed at the
    # object's open with the 65 KiB key twice in a 130 KB line).
    long = os.path.join(args().work, "long.csv")
    with open(trace_path(), newline="") as f:
        lines = f.read().split("\r\n")
    with open(long, "w", newline="") as f:
        f.write("\r\n".join(lines[:2] + ["1.0,Write,10,Tier-2,%s,Prefill" % ("k" * (65 << 10))] +
                              lines[2:]))
    p = run([args().iomimic, "kvcache-replay", long, "--root", os.path.join(args().work, "o")],
            expect_ok=False)
    errors = [line for line in p.stderr.splitlines() if line.startswith("iomimic: error:")]
    want = long + ":3: a line longer than 64 KiB (65536 bytes)"
    if p.returncode != 1 or len(errors) != 1 or want not in errors[0] or len(p.stderr) > 1000:
        fail("65 KiB line: exit %d, stderr %r" % (p.returncode, p.stderr[:2000]))


def test_kvcache_replay_s3():
    """The same trace on the s3 back end (radosgw from scripts/s3_server.sh,
    shared with tests/integration/s3_tests.py): every Tier-2 key is one
    object of the .npy header and the trace's bytes; a second replay into
    the same prefix is refused; without --keep-objects nothing is left."""
    import s3_tests
    env = s3_tests.s3_env()
    bucket = env["IOMIMIC_S3_BUCKET"]
    prefix = s3_tests.uniq("kvreplay")
    root = "s3://%s/%s" % (bucket, prefix)
    run([args().iomimic, "kvcache-replay", trace_path(), "--storage", "s3", "--root", root,
         "--threads", "3", "--keep-objects", "--output", os.path.join(args().work, "s3_1")],
        env=env)
    sizes = {}
    with open(trace_path(), newline="") as f:
        for row in csv.DictReader(f):
            if row["Tier"] == "Tier-2":
                sizes[row["Key"]] = int(row["Object_Size_Bytes"])
    client = s3_tests.boto3_client(env)
    got = s3_tests.list_keys(client, bucket, prefix + "/")
    want = {"%s/%s.npy" % (prefix, k): 128 + v for k, v in sizes.items()}
    if got != want:
        fail("objects %s, expected %s" % (got, want))
    body = client.get_object(Bucket=bucket, Key="%s/layer0/user0.npy" % prefix)["Body"].read()
    if np.load(io.BytesIO(body)).nbytes != 1001:
        fail("layer0/user0.npy does not load as 1001 bytes")
    p = run([args().iomimic, "kvcache-replay", trace_path(), "--storage", "s3", "--root", root,
             "--output", os.path.join(args().work, "s3_2")], env=env, expect_ok=False)
    if p.returncode != 1 or "exists before the replay" not in p.stderr:
        fail("a replay over existing objects was not refused (exit %d)" % p.returncode)
    clean = s3_tests.uniq("kvreplay_clean")
    run([args().iomimic, "kvcache-replay", trace_path(), "--storage", "s3", "--root",
         "s3://%s/%s" % (bucket, clean), "--output", os.path.join(args().work, "s3_3")], env=env)
    if s3_tests.list_keys(client, bucket, clean + "/"):
        fail("objects left under %s" % clean)


def kv_cache_py():
    return os.path.join(os.path.dirname(args().iomimic), "kv-cache.py")


def mlpstorage_command(cache, output, extra=()):
    """kv-cache.py's command line as mlpstorage's benchmarks/kvcache.py
    (_build_kvcache_command) builds it, shrunk (tiny-1b, 2 users, 4 requests)."""
    return ["/usr/bin/python3", kv_cache_py(), "--model", "tiny-1b", "--num-users", "2",
            "--duration", "20", "--gpu-mem-gb", "0.0", "--cpu-mem-gb", "0.0",
            "--generation-mode", "none", "--performance-profile", "latency", "--cache-dir", cache,
            "--output", output, "--seed", "42", "--max-requests", "4"] + list(extra)


def run_folder(output):
    """The folder of the drop-in's run whose results file is `output`."""
    return output[:-len(".json")] + ".iomimic" if output.endswith(".json") else output + ".iomimic"


def test_kv_cache_py_entry_point():
    """mlpstorage's `python3 kv-cache.py ...` runs iomimic's KV-cache workflow:
    the run's own files go to a folder beside --output, the entries under
    --cache-dir, and --output holds the reference's results with the figures
    mlpstorage reads; under mpirun every rank runs; a feature iomimic lacks
    is one error."""
    cache = os.path.join(args().work, "nvme", "kvcache_data")
    results = os.path.join(args().work, "results")
    os.makedirs(results)
    output = os.path.join(results, "kvcache_results_20261127_120000.json")
    p = run(mlpstorage_command(cache, output))
    if "results saved to " + output not in p.stderr:
        fail("no line naming the results file")
    with open(output) as f:
        res = json.load(f)
    with open(os.path.join(run_folder(output), "summary.json")) as f:
        summary = json.load(f)
    kv = summary["kv_cache"]
    if kv["model"] != "tiny-1b" or kv["num_users_per_rank"] != 2 or kv["requests"] < 4:
        fail("summary.json kv_cache: model %s, users %s, requests %s" %
             (kv["model"], kv["num_users_per_rank"], kv["requests"]))
    if res["requests_completed"] != kv["requests"] or res["total_requests"] != kv["requests"]:
        fail("results file says %s requests, summary.json %s" %
             (res["requests_completed"], kv["requests"]))
    for key in ("throughput_req_per_sec", "avg_latency_ms", "p99_latency_ms",
                "storage_throughput_mbps", "cache_hit_rate"):
        if not isinstance(res.get(key), (int, float)):
            fail("results file lacks %s" % key)
    if res["avg_latency_ms"] <= 0 or res["storage_throughput_mbps"] <= 0:
        fail("results file figures are zero: %s" % res)
    if res["summary"]["cache_stats"]["prefill_writes"] < 4:
        fail("summary.cache_stats: %s" % res["summary"]["cache_stats"])
    if not os.path.isdir(cache):
        fail("--cache-dir %s was not used" % cache)
    # Two ranks, as mlpstorage's --exec-type mpi starts them.
    results2 = os.path.join(args().work, "results2")
    os.makedirs(results2)
    output2 = os.path.join(results2, "kvcache_results.json")
    harness.mpirun(2, mlpstorage_command(os.path.join(args().work, "nvme2", "kv"), output2))
    with open(os.path.join(run_folder(output2), "summary.json")) as f:
        if json.load(f)["kv_cache"]["ranks"] != 2:
            fail("two ranks did not both run")
    with open(output2) as f:
        res2 = json.load(f)
    if len(res2["end_to_end_latencies"]) != res2["requests_completed"]:
        fail("the two ranks' latency lists: %d for %d requests" %
             (len(res2["end_to_end_latencies"]), res2["requests_completed"]))
    # A feature the workflow lacks: refused with one error line, exit 1.
    p = run(mlpstorage_command(cache, os.path.join(args().work, "r3.json"), ["--enable-rag"]),
            expect_ok=False)
    errors = [line for line in p.stderr.splitlines() if line.startswith("iomimic: error:")]
    if p.returncode != 1 or len(errors) != 1 or "--enable-rag is not supported" not in errors[0]:
        fail("--enable-rag: exit %d, stderr %r" % (p.returncode, p.stderr))


def key_paths(value, prefix=()):
    """The key paths of a results JSON as tests/kvcache/reference_result_keys.txt
    writes them: keys joined by '.', '[]' for every element of a list of
    objects, a list of numbers (or an empty list) one path."""
    if isinstance(value, dict):
        out = set()
        for k, v in value.items():
            out |= key_paths(v, prefix + (k,))
        return out
    if isinstance(value, list) and any(isinstance(x, (dict, list)) for x in value):
        out = set()
        for x in value:
            out |= key_paths(x, prefix + ("[]",))
        return out
    return {".".join(prefix)}


def trace_rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_kv_cache_py_results_keys():
    """The drop-in's results file has every key path of a results file the
    reference wrote (tests/kvcache/reference_result_keys.txt: its command
    line, with every tier and QoS class used), with the reference's meaning:
    offloads are every entry written into the cpu or storage tier (prefill
    writes and demotions), the hits split by kind, one latency per request."""
    with open(os.path.join(args().source, "tests", "kvcache", "reference_result_keys.txt")) as f:
        reference = {line.strip() for line in f if line.strip() and not line.startswith("#")}
    output = os.path.join(args().work, "r.json")
    trace = os.path.join(args().work, "t.csv")
    run(["/usr/bin/python3", kv_cache_py(), "--model", "llama3.1-8b", "--num-users", "10",
         "--duration", "40", "--gpu-mem-gb", "0.5", "--cpu-mem-gb", "1", "--seed", "42",
         "--max-requests", "100", "--generation-mode", "none", "--io-trace-log", trace,
         "--output", output])
    with open(output) as f:
        res = json.load(f)
    missing = sorted(reference - key_paths(res))
    if missing:
        fail("%d of the reference's %d key paths missing: %s" %
             (len(missing), len(reference), ", ".join(missing)))
    stats = res["summary"]["cache_stats"]
    rows = trace_rows(trace)
    writes = collections.Counter(r["Tier"] for r in rows if r["Operation"] == "Write")
    if (stats["offloads_cpu"], stats["offloads_storage"]) != (writes["Tier-1"], writes["Tier-2"]):
        fail("offloads cpu %d, storage %d; the trace writes %d entries into Tier-1, %d into "
             "Tier-2" % (stats["offloads_cpu"], stats["offloads_storage"], writes["Tier-1"],
                         writes["Tier-2"]))
    hits = stats["user_cache_hits"] + stats["system_prompt_hits"] + stats["multi_turn_hits"]
    if hits != stats["cache_hits"] or stats["system_prompt_hits"] == 0:
        fail("hits by kind %d (system prompt %d) of %d" %
             (hits, stats["system_prompt_hits"], stats["cache_hits"]))
    prefix = res["summary"]["prefix_cache_stats"]
    if prefix["prefix_hits"] == 0 or prefix["system_prompt_reuse"] != prefix["prefix_hits"]:
        fail("prefix_cache_stats: %s" % prefix)
    n = res["requests_completed"]
    for key in ("end_to_end_latencies", "storage_latencies", "generation_latencies",
                "prefill_latencies"):
        if len(res[key]) != n:
            fail("%s: %d values for %d requests" % (key, len(res[key]), n))
    qos = res["summary"]["qos_metrics"]
    if sum(q.get("total_requests", 0) for q in qos.values()) != n:
        fail("qos_metrics: %s" % qos)
    if res["summary"]["cache_stats"]["storage_health"]["total_count"] != 4:
        fail("storage_health: %s" % stats["storage_health"])


def test_kv_cache_py_output_files():
    """Without --output the results go to benchmark_results_<time>.json in the
    working directory, as the reference's; several results files share a
    folder, the same one twice included."""
    command = ["/usr/bin/python3", kv_cache_py(), "--model", "tiny-1b", "--num-users", "1",
               "--max-requests", "2", "--generation-mode", "none", "--seed", "1",
               "--io-trace-log", "t.csv"]
    run(command)
    found = [n for n in os.listdir(args().work) if n.startswith("benchmark_results_")]
    files = [n for n in found if n.endswith(".json")]
    if len(files) != 1 or not re.fullmatch(r"benchmark_results_\d{8}_\d{6}\.json", files[0]):
        fail("default results file: %s" % found)
    with open(os.path.join(args().work, files[0])) as f:
        if json.load(f)["requests_completed"] != 2:
            fail("default results file holds no run")
    if not os.path.isfile(os.path.join(args().work, run_folder(files[0]), "summary.json")):
        fail("no run folder beside %s: %s" % (files[0], found))
    shared = os.path.join(args().work, "shared")
    os.makedirs(shared)
    for name in ("a.json", "b.json", "a.json"):
        run(command + ["--output", os.path.join(shared, name)])
    if sorted(os.listdir(shared)) != ["a.iomimic", "a.iomimic-1", "a.json", "b.iomimic",
                                      "b.json"]:
        fail("three runs into one folder: %s" % sorted(os.listdir(shared)))


def test_kv_cache_py_config():
    """--config: the user templates, QoS distribution, eviction settings,
    system-prompt probability and turns per conversation of the reference's
    config.yaml change the run as they change the reference's; its QoS targets
    change nothing, as in the reference; a model that is not iomimic's is
    refused."""
    config = os.path.join(args().work, "config.yaml")
    with open(config, "w") as f:
        f.write("user_templates:\n")
        for user in ("chatbot", "coding", "document"):
            f.write("  %s:\n    context_range: [100, 200]\n    generation_range: [50, 100]\n"
                    "    think_time_range: [0.01, 0.02]\n" % user)
        f.write("qos_profiles:\n  interactive:\n    target_latency_p95_ms: 7777\n"
                "qos_distribution:\n  interactive_probability: 1.0\n"
                "eviction:\n  large_entry_limit_ratio: 0.0\n"
                "prefix_cache:\n  system_prompt_hit_probability: 0.0\n"
                "conversation:\n  max_turns_per_conv: 1\n")

    def drop_in(name, extra):
        os.makedirs(os.path.join(args().work, name))
        output = os.path.join(args().work, name, "results.json")
        trace = os.path.join(args().work, name, "trace.csv")
        p = run(["/usr/bin/python3", kv_cache_py(), "--model", "tiny-1b", "--num-users", "3",
                 "--max-requests", "12", "--gpu-mem-gb", "0", "--cpu-mem-gb", "1",
                 "--generation-mode", "none", "--seed", "42", "--io-trace-log", trace,
                 "--output", output] + extra)
        with open(output) as f:
            return json.load(f), trace_rows(trace), p

    plain, plain_rows, _ = drop_in("plain", [])
    res, rows, p = drop_in("config", ["--config", config])
    if "qos_profiles: accepted, changes nothing, as in the reference" not in p.stderr:
        fail("no note for qos_profiles: %s" % p.stderr)
    bytes_per_token = 12 * 4 * 128 * 2 * 2  # tiny-1b
    prefill = [r for r in rows if r["Phase"] == "Prefill"]
    largest = max(int(r["Object_Size_Bytes"]) for r in prefill)
    if largest > 200 * bytes_per_token:
        fail("user_templates: a prefill of %d bytes (at most 200 tokens)" % largest)
    if max(int(r["Object_Size_Bytes"]) for r in plain_rows) <= 200 * bytes_per_token:
        fail("the run without --config has only small entries too")
    # large_entry_limit_ratio 0: the cpu tier takes no entry.
    if any(r["Tier"] != "Tier-2" for r in prefill) or \
            all(r["Tier"] == "Tier-2" for r in plain_rows if r["Phase"] == "Prefill"):
        fail("eviction.large_entry_limit_ratio: prefills to %s (without --config %s)" %
             (sorted({r["Tier"] for r in prefill}),
              sorted({r["Tier"] for r in plain_rows if r["Phase"] == "Prefill"})))
    qos = res["summary"]["qos_metrics"]
    if qos["interactive"].get("total_requests") != res["requests_completed"] or \
            not qos["batch"].get("no_data") or not qos["responsive"].get("no_data"):
        fail("qos_distribution: %s" % qos)
    if qos["interactive"]["sla"]["target_p95_ms"] != 50:
        fail("qos_profiles changed the target: %s" % qos["interactive"]["sla"])
    if res["summary"]["prefix_cache_stats"]["prefix_hits"] != 0 or res["multi_turn_cache_hits"] \
            + res["multi_turn_cache_misses"] != 0:
        fail("system prompts %d, multi-turn reads %d" %
             (res["summary"]["prefix_cache_stats"]["prefix_hits"],
              res["multi_turn_cache_hits"] + res["multi_turn_cache_misses"]))
    if plain["multi_turn_cache_hits"] == 0:
        fail("the run without --config has no multi-turn reads either")
    with open(config, "w") as f:
        f.write("model_configs:\n  tiny-1b:\n    num_layers: 24\n")
    p = run(["/usr/bin/python3", kv_cache_py(), "--model", "tiny-1b", "--config", config],
            expect_ok=False)
    if p.returncode != 1 or "model_configs.tiny-1b" not in p.stderr:
        fail("a model that is not iomimic's: exit %d, %s" % (p.returncode, p.stderr))


def test_kv_cache_py_errors():
    """Bad values are one error line naming the drop-in's flags, in the
    reference's words where it has them, never the overrides the drop-in
    makes of them."""
    base = ["/usr/bin/python3", kv_cache_py(), "--model", "tiny-1b", "--max-requests", "2",
            "--generation-mode", "none", "--io-trace-log", "t.csv"]
    for extra, want in ((["--num-users", "-4"], "--num-users must be positive, got -4"),
                        (["--num-gpus", "1", "--tensor-parallel", "2"],
                         "--tensor-parallel (2) cannot exceed --num-gpus (1)"),
                        (["--gpu-mem-gb", "0", "--cpu-mem-gb", "0.0001"], "--cpu-mem-gb: "),
                        (["--gpu-mem-gb", "2000"], "--gpu-mem-gb 2000: ")):
        p = run(base + extra, expect_ok=False)
        errors = [line for line in p.stderr.splitlines() if line.startswith("iomimic: error:")]
        if p.returncode != 1 or len(errors) != 1 or want not in errors[0] or \
                "++workload" in errors[0] or "kv_cache." in errors[0]:
            fail("%s: exit %d, errors %s" % (" ".join(extra), p.returncode, errors))


if __name__ == "__main__":
    harness.main(globals())
