#!/usr/bin/python3
"""The KV-cache workflow's chunked mode (docs/kvcache-chunked.md) against an
independent computation of its hits from the trace's hash ids: chunk keys
from (block id, place in the block), a prefix lookup that stops at the
first miss, an infinite cache and then an LRU of the configured capacity.

Usage: kvcache_chunked_tests.py <test-name> --iomimic BIN --source DIR --work DIR
"""

import collections
import json
import math
import os
import subprocess

import iomimic_tests as harness
from iomimic_tests import fail, run

BLOCK = 512
TINY_BYTES_PER_TOKEN = 12 * 4 * 128 * 2 * 2  # tiny-1b: layers x kv heads x head dim x K,V x fp16


def args():
    return harness.ARGS


def trace(name, requests, seed):
    path = os.path.join(args().work, name)
    subprocess.run(["/usr/bin/python3", os.path.join(args().source, "scripts",
                                                     "kv_request_traces.py"),
                    "mooncake", path, "--requests", str(requests), "--seed", str(seed),
                    "--prompt-blocks", "2", "--max-new-tokens", "1024"], check=True)
    return path


def requests_and_chunks(path, chunk):
    """The trace's requests in arrival order, each with its chunks as
    ((block id, end in the block), tokens): equal keys for equal prefixes."""
    with open(path) as f:
        rows = sorted((json.loads(line) for line in f if line.strip()),
                      key=lambda r: r["timestamp"])
    for r in rows:
        n, ids = r["input_length"], r["hash_ids"]
        keys = []
        for begin in range(0, n, chunk):
            end = min(n, begin + chunk)
            block = (end - 1) // BLOCK
            keys.append(((ids[block], end - block * BLOCK), end - begin))
        yield r, keys


def expected(path, chunk, tp, capacity):
    """(hit tokens, input tokens, chunk hits, chunks written) of an LRU of
    `capacity` bytes (None: infinite) fed the trace's requests in order."""
    lru = collections.OrderedDict()  # key -> bytes, most recent last
    used = 0
    hit_tokens = input_tokens = hits = written = 0
    for r, keys in requests_and_chunks(path, chunk):
        input_tokens += r["input_length"]
        c = 0
        while c < len(keys) and keys[c][0] in lru:
            lru.move_to_end(keys[c][0])
            hit_tokens += keys[c][1]
            hits += 1
            c += 1
        for key, tokens in keys[c:]:
            size = tokens * TINY_BYTES_PER_TOKEN // tp
            while capacity is not None and used + size > capacity and lru:
                _, gone = lru.popitem(last=False)
                used -= gone
            lru[key] = size
            used += size
            written += 1
    return hit_tokens, input_tokens, hits, written


def chunked_command(path, out, chunk, tp, capacity_gb, extra=()):
    return [args().iomimic, "run", "workload=kvcache_quickstart",
         "++workload.kv_cache.layout=chunked",
         "++workload.kv_cache.request_trace=" + path,
         "++workload.kv_cache.model=tiny-1b",
         "++workload.kv_cache.chunk_tokens=%d" % chunk,
         "++workload.kv_cache.tensor_parallel=%d" % tp,
         "++workload.kv_cache.num_gpus=%d" % tp,
         "++workload.kv_cache.storage_capacity_gb=%s" % capacity_gb,
         "++workload.kv_cache.cpu_mem_gb=0",
         "++workload.kv_cache.trace_speedup=0",
         "++workload.kv_cache.max_inflight_requests=1",
         "++workload.kv_cache.prefill_tokens_per_second=1e9",
         "++workload.kv_cache.duration=0",
         "++workload.kv_cache.cache_folder=" + os.path.join(args().work, "cache"),
         "++workload.output.folder=" + out] + list(extra)


def chunked_run(path, out, chunk, tp, capacity_gb, extra=()):
    run(chunked_command(path, out, chunk, tp, capacity_gb, extra))
    with open(os.path.join(out, "summary.json")) as f:
        return json.load(f)["kv_cache_chunked"]


def test_kvcache_chunked_hits_match_hash_ids():
    """A Mooncake trace: the chunk hits and the token hit rate equal the
    independent LRU's, with an unlimited storage tier and with one smaller
    than the trace's chunks; every chunk written is ceil(tokens / chunk)
    per request's new tokens, of chunk x bytes per token / TP bytes."""
    path = trace("mooncake.jsonl", 60, 7)
    chunk, tp = 128, 8
    for capacity_gb in ("0", "0.02"):
        capacity = None if capacity_gb == "0" else int(float(capacity_gb) * 2**30)
        want = expected(path, chunk, tp, capacity)
        s = chunked_run(path, os.path.join(args().work, "out-" + capacity_gb), chunk, tp,
                        capacity_gb)
        got = (s["hit_tokens"], s["input_tokens"], s["chunk_hits"]["storage"],
               s["chunks_written"])
        if got != want:
            fail("capacity %s GB: hit tokens, input tokens, hits, written %r; the hash ids "
                 "give %r" % (capacity_gb, got, want))
        if capacity is not None and s["deletions"] == 0:
            fail("a storage tier smaller than the chunks deleted none")
        full = chunk * TINY_BYTES_PER_TOKEN // tp
        if s["tiers"]["storage"]["write_bytes"] > s["chunks_written"] * full or \
                s["tiers"]["storage"]["write_bytes"] < (s["chunks_written"] - 60) * full:
            fail("storage write bytes %d for %d chunks of at most %d" % (
                s["tiers"]["storage"]["write_bytes"], s["chunks_written"], full))
        if s["token_hit_rate"] <= 0 or s["ttft_ms"]["count"] != 60:
            fail("token hit rate %r, TTFT count %r" % (s["token_hit_rate"], s["ttft_ms"]["count"]))


def test_kvcache_chunked_trace_formats():
    """The three formats' samples (tests/kvcache/request_traces) run: the
    Mooncake lines share their first block (id 0), BurstGPT's requests
    share nothing, ShareGPT's second turn reuses the first's prefix."""
    samples = os.path.join(args().source, "tests", "kvcache", "request_traces")
    for name, shares in (("mooncake_first_lines.jsonl", True), ("burstgpt_first_lines.csv", False),
                         ("sharegpt_first_lines.json", None)):
        s = chunked_run(os.path.join(samples, name), os.path.join(args().work, "out-" + name),
                        128, 8, "0")
        if s["requests"] < 2:
            fail("%s: %d requests" % (name, s["requests"]))
        if shares is True and s["hit_tokens"] != 3 * 512:
            fail("%s: the shared first block should be 3 x 512 hit tokens, got %d" % (
                name, s["hit_tokens"]))
        if shares is False and s["hit_tokens"] != 0:
            fail("%s: BurstGPT shares no prefix, got %d hit tokens" % (name, s["hit_tokens"]))


def test_kvcache_chunked_shared_store():
    """kv_cache.shared_store: a trace written by one rank is, read by 3
    others, a hit on every chunk from the shared store (counted as shared
    hits, none written); writers killed with SIGKILL mid-run leave no torn
    chunk under a chunk's name (numpy loads every one whole)."""
    import numpy as np
    import signal
    import time
    path = trace("mooncake.jsonl", 30, 5)
    chunk, tp = 128, 8
    cache = os.path.join(args().work, "cache")
    shared = ["++workload.kv_cache.shared_store=True", "++workload.kv_cache.keep_entries=True"]
    s = chunked_run(path, os.path.join(args().work, "writer"), chunk, tp, "0", shared)
    with open(path) as f:
        chunks = sum(math.ceil(json.loads(line)["input_length"] / chunk) for line in f
                     if line.strip())
    if s["chunks_written"] + s["chunk_hits"]["storage"] != chunks or s["chunk_hits_shared"]:
        fail("writer: %d written + %d hits for %d chunks, %d shared hits" % (
            s["chunks_written"], s["chunk_hits"]["storage"], chunks, s["chunk_hits_shared"]))
    readers = os.path.join(args().work, "readers")
    harness.mpirun(3, chunked_command(path, readers, chunk, tp, "0", shared))
    with open(os.path.join(readers, "summary.json")) as f:
        r = json.load(f)["kv_cache_chunked"]
    if (r["chunk_hits_shared"], r["chunk_hits"]["storage"], r["chunks_written"]) != (chunks,
                                                                                   chunks, 0):
        fail("3 readers: shared hits, storage hits, written %r; the writer's trace has %d chunks"
             % ((r["chunk_hits_shared"], r["chunk_hits"]["storage"], r["chunks_written"]),
                chunks))
    if r["hits_by_source"]["earlier_run"] != chunks:
        fail("3 readers of a store an earlier run wrote: sources %r" % r["hits_by_source"])
    # Writers killed mid-run: every object under a chunk's name is whole.
    fresh = os.path.join(args().work, "cache-kill")
    big = trace("big.jsonl", 400, 9)
    cmd = chunked_command(big, os.path.join(args().work, "killed"), chunk, tp, "0", shared +
                          ["++workload.kv_cache.cache_folder=" + fresh,
                           "++workload.kv_cache.io_threads=8",
                           "++workload.kv_cache.max_inflight_requests=8"])
    procs = [subprocess.Popen(cmd, cwd=args().work, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL) for _ in range(2)]
    time.sleep(1.5)
    for p in procs:
        p.send_signal(signal.SIGKILL)
        p.wait()
    names = os.listdir(os.path.join(fresh, "shared"))
    whole = [n for n in names if n.endswith(".npy")]
    if not whole:
        fail("the killed writers published no chunk in 1.5 s")
    for n in whole:
        a = np.load(os.path.join(fresh, "shared", n))
        if a.nbytes % (TINY_BYTES_PER_TOKEN // tp):
            fail("%s holds %d bytes, not whole tokens" % (n, a.nbytes))
    print("%d chunks published whole, %d temporary names left by the killed writers" % (
        len(whole), len(names) - len(whole)))


def test_kvcache_chunked_promotion_and_errors():
    """With a host tier and promotion on_hit, storage hits move up (counted
    as promotions); a trace with a bad line is one error naming FILE:LINE."""
    path = trace("mooncake.jsonl", 40, 11)
    s = chunked_run(path, os.path.join(args().work, "out-promo"), 128, 8, "0",
                    ["++workload.kv_cache.cpu_mem_gb=0.01",
                     "++workload.kv_cache.promotion=on_hit"])
    if s["demotions"] == 0 or s["promotions"] == 0 or s["chunk_hits"]["cpu"] == 0:
        fail("host tier of 10 MiB: demotions %d, promotions %d, cpu hits %d" % (
            s["demotions"], s["promotions"], s["chunk_hits"]["cpu"]))
    bad = os.path.join(args().work, "bad.jsonl")
    with open(bad, "w") as f:
        f.write('{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1]}\n')
        f.write('{"timestamp": 5, "input_length": -3, "output_length": 1}\n')
    p = run([args().iomimic, "run", "workload=kvcache_quickstart",
             "++workload.kv_cache.layout=chunked", "++workload.kv_cache.request_trace=" + bad,
             "++workload.output.folder=" + os.path.join(args().work, "out-bad")],
            expect_ok=False)
    if p.returncode == 0 or bad + ":2: input_length" not in p.stderr:
        fail("a bad trace line should be named FILE:2:\n" + p.stderr)


def expected_tiers(path, chunk, tp, capacities):
    """(hits per tier, demotions, deletions, written) of the chunked mode's
    tiers, top first (None: unlimited), fed the trace in order: a new chunk
    in the first tier large enough, a full tier moving its least recently
    used chunks one tier down, the last deleting them; no promotion."""
    levels = [collections.OrderedDict() for _ in capacities]  # key -> bytes, recent last
    used = [0] * len(capacities)
    where = {}
    hits = [0] * len(capacities)
    moved = {"demotions": 0, "deletions": 0, "written": 0}

    def place(key, size, level):
        cap = capacities[level]
        while cap is not None and used[level] + size > cap and levels[level]:
            victim, vsize = levels[level].popitem(last=False)
            used[level] -= vsize
            del where[victim]
            if level + 1 < len(levels):
                moved["demotions"] += 1
                place(victim, vsize, level + 1)
            else:
                moved["deletions"] += 1
        levels[level][key] = size
        used[level] += size
        where[key] = level

    for _, keys in requests_and_chunks(path, chunk):
        c = 0
        while c < len(keys) and keys[c][0] in where:
            level = where[keys[c][0]]
            levels[level].move_to_end(keys[c][0])
            hits[level] += 1
            c += 1
        for key, tokens in keys[c:]:
            size = tokens * TINY_BYTES_PER_TOKEN // tp
            level = 0
            while level + 1 < len(capacities) and capacities[level] is not None and \
                    size > capacities[level]:
                level += 1
            place(key, size, level)
            moved["written"] += 1
    return hits, moved["demotions"], moved["deletions"], moved["written"]


def test_kvcache_chunked_four_tiers():
    """gpu (emulated device memory) > cpu > storage > object (a second
    storage plugin in another folder), each smaller than the trace: the
    hits per tier, demotions, deletions and chunks written equal an
    independent four-tier LRU's; every byte moved down is counted on both
    tiers. With chunk_objects layer each chunk is one object per model
    layer (12 for tiny-1b) of equal shares, on storage and object tiers."""
    path = trace("tiers.jsonl", 80, 13)
    chunk, tp = 128, 8
    gib = 2.0 ** 30
    # gpu_mem_gb is per GPU (num_gpus = tp here).
    caps_gb = {"gpu": 0.0005, "cpu": 0.002, "storage": 0.004, "object": 0.1}
    capacities = [int(caps_gb["gpu"] * tp * gib), int(caps_gb["cpu"] * gib),
                  int(caps_gb["storage"] * gib), int(caps_gb["object"] * gib)]
    want = expected_tiers(path, chunk, tp, capacities)
    for layout in ("chunk", "layer"):
        objects = os.path.join(args().work, "objects-" + layout)
        tiers = ["++workload.kv_cache.gpu_mem_gb=%s" % caps_gb["gpu"],
                 "++workload.kv_cache.accelerator=emulated",
                 "++workload.kv_cache.cpu_mem_gb=%s" % caps_gb["cpu"],
                 "++workload.kv_cache.object_tier=posix",
                 "++workload.kv_cache.object_tier_folder=" + objects,
                 "++workload.kv_cache.object_capacity_gb=%s" % caps_gb["object"]]
        keep = ["++workload.kv_cache.chunk_objects=" + layout,
                "++workload.kv_cache.keep_entries=True",
                "++workload.kv_cache.cache_folder=" + os.path.join(args().work, "cache-" + layout)]
        s = chunked_run(path, os.path.join(args().work, "out-tiers-" + layout), chunk, tp,
                        str(caps_gb["storage"]), tiers + keep)
        got = ([s["chunk_hits"][t] for t in ("gpu", "cpu", "storage", "object")],
               s["demotions"], s["deletions"], s["chunks_written"])
        if got != want:
            fail("%s objects: hits per tier, demotions, deletions, written %r; the four-tier LRU "
                 "gives %r" % (layout, got, want))
        if min(want[0]) == 0 or want[1] == 0 or want[2] == 0:
            fail("the trace should hit every tier, demote and delete: %r" % (want,))
        t = s["tiers"]
        if t["object"]["write_bytes"] == 0 or t["gpu"]["write_bytes"] == 0:
            fail("%s objects: no bytes written to the gpu or object tier: %r" % (layout, t))
        st = t["storage"]
        split = st["chunk_read_device_ms_mean"] + st["chunk_read_host_ms_mean"]
        if st["chunk_read_device_ms_mean"] <= 0 or split > 1.05 * st["chunk_read_ms"]["mean"] + 0.01:
            fail("%s objects: storage read device %r + host %r ms against a mean of %r" % (
                layout, st["chunk_read_device_ms_mean"], st["chunk_read_host_ms_mean"],
                st["chunk_read_ms"]["mean"]))
        if s["hits_by_source"]["other_user"] != sum(want[0]):
            fail("%s objects: every hit of a one-rank Mooncake run is another request's: %r" % (
                layout, s["hits_by_source"]))
        if layout == "layer":
            folder = os.path.join(objects, "rank_0")
            names = [n for n in os.listdir(folder) if n.endswith(".npy")]
            chunks = collections.Counter(n.split(".l")[0] for n in names)
            if not chunks or set(chunks.values()) != {12}:
                fail("object tier: parts per chunk %r, expected 12 (tiny-1b's layers)" % (
                    set(chunks.values()),))
            import numpy as np
            for n in names[:24]:
                np.load(os.path.join(folder, n))


def test_kvcache_chunked_hit_sources():
    """hits_by_source: a ShareGPT conversation's later turns hit its own
    earlier turns' chunks (own); a shared store kept from an earlier run
    gives earlier_run hits; 2 ranks on one host sharing a store give
    other_rank hits, never other_host."""
    conversations = os.path.join(args().work, "conversations.json")
    subprocess.run(["/usr/bin/python3", os.path.join(args().source, "scripts",
                                                     "kv_request_traces.py"),
                    "sharegpt", conversations, "--requests", "30", "--seed", "3"], check=True)
    s = chunked_run(conversations, os.path.join(args().work, "out-src-sharegpt"), 128, 8, "0")
    by = s["hits_by_source"]
    if by["own"] == 0 or by["own"] != s["chunk_hits"]["storage"]:
        fail("ShareGPT: own hits %r of %d storage hits" % (by, s["chunk_hits"]["storage"]))
    path = trace("sources.jsonl", 40, 17)
    cache = os.path.join(args().work, "cache-sources")
    shared = ["++workload.kv_cache.shared_store=True", "++workload.kv_cache.keep_entries=True",
              "++workload.kv_cache.cache_folder=" + cache]
    first = chunked_run(path, os.path.join(args().work, "out-src-1"), 128, 8, "0", shared)
    again = chunked_run(path, os.path.join(args().work, "out-src-2"), 128, 8, "0", shared)
    if again["hits_by_source"]["earlier_run"] != again["chunks"] or again["chunks_written"]:
        fail("a second run over a kept store: %r for %d chunks, %d written" % (
            again["hits_by_source"], again["chunks"], again["chunks_written"]))
    del first
    two = os.path.join(args().work, "out-src-2ranks")
    harness.mpirun(2, chunked_command(path, two, 128, 8, "0", shared[:1] + [
        "++workload.kv_cache.cache_folder=" + os.path.join(args().work, "cache-2ranks")]))
    with open(os.path.join(two, "summary.json")) as f:
        r = json.load(f)["kv_cache_chunked"]
    by = r["hits_by_source"]
    hits = sum(r["chunk_hits"].values())
    if by["other_host"] or by["earlier_run"] or sum(by.values()) != hits:
        fail("2 ranks on one host: %r for %d hits" % (by, hits))
    # Every hit on a chunk the other rank published is other_rank (more can
    # be: a chunk both ranks missed at once is the last writer's).
    if by["other_rank"] < r["chunk_hits_shared"] or r["chunk_hits_shared"] == 0:
        fail("other_rank hits %d, shared hits %d" % (by["other_rank"], r["chunk_hits_shared"]))


def test_kvcache_chunked_content():
    """iomimic.content and compress_percentage reach the chunks: with zeros
    every chunk's array is all zeros; with compress_percentage 50 the second
    half of every 4 KiB block of the payload is zeros and the first half is
    not; by default two chunks differ and neither has a zero 4 KiB block;
    scrambled chunks hold one random pattern but for an 8-byte stamp per
    512-byte sector, every sector unique and zlib gaining nothing."""
    path = os.path.join(args().work, "content.jsonl")
    with open(path, "w") as f:
        for i in range(4):
            f.write(json.dumps({"timestamp": 0, "input_length": 64, "output_length": 1,
                                "hash_ids": [100 + i]}) + "\n")
    check = os.path.join(args().work, "check_content.py")
    with open(check, "w") as f:
        f.write("""import glob, sys, zlib
import numpy as np
mode, folder = sys.argv[1], sys.argv[2]
files = sorted(glob.glob(folder + "/*.npy"))
assert len(files) == 4, files
raws = []
for name in files:
    a = np.load(name)
    raw = a.view(np.uint8).reshape(-1)
    assert raw.size == 64 * %d, raw.size
    raws.append(raw)
    blocks = raw[: raw.size // 4096 * 4096].reshape(-1, 4096)
    if mode == "zeros":
        assert not raw.any(), name
    elif mode == "compress50":
        assert not blocks[:, 2048:].any(), name
        assert blocks[:, :2048].any(axis=1).all(), name
    else:
        assert blocks.any(axis=1).all(), name
if mode == "random":
    assert (raws[0] != raws[1]).any()
if mode == "scrambled":
    rows = [r[: r.size // 512 * 512].reshape(-1, 512) for r in raws]
    sectors = set(bytes(row) for r in rows for row in r)
    assert len(sectors) == sum(len(r) for r in rows), "a sector repeats"
    # Past the first sector (the chunk's stamp), all but the stamps is the
    # one pattern, and random.
    for r in rows[1:]:
        assert (r[1:, 8:] == rows[0][1:, 8:]).all(), "not one pattern"
    assert (rows[0][1:, :8] != rows[1][1:, :8]).any(axis=1).all(), "stamps repeat"
    data = raws[0][: 1 << 20].tobytes()
    assert len(zlib.compress(data, 1)) >= 0.99 * len(data), "compressible"
print("ok", mode, len(files))
""" % TINY_BYTES_PER_TOKEN)
    for mode, extra in (("zeros", ["++workload.iomimic.content=zeros"]),
                        ("compress50", ["++workload.iomimic.compress_percentage=50"]),
                        ("scrambled", ["++workload.iomimic.content=scrambled"]),
                        ("random", [])):
        cache = os.path.join(args().work, "cache-" + mode)
        chunked_run(path, os.path.join(args().work, "out-" + mode), 64, 1, "0",
                    extra + ["++workload.kv_cache.keep_entries=True",
                             "++workload.kv_cache.cache_folder=" + cache])
        p = subprocess.run(["/usr/bin/python3", check, mode, os.path.join(cache, "rank_0")],
                           capture_output=True, text=True)
        if p.returncode != 0:
            fail("chunk content with %s: %s%s" % (mode, p.stdout, p.stderr))


def test_kvcache_chunked_read_calls():
    """A chunk read is what LMCache's and llm-d's file back ends do: the
    shared store's lookup stats the object once when it decides, then open,
    read, close, with no second stat; with one request thread and one I/O
    thread the lookup and the read are on one thread (the request thread
    runs its own reads: no hand-off per chunk). strace -ff, one log per
    thread."""
    import glob
    import re
    import shutil
    if shutil.which("strace") is None:
        print("strace not installed: skipped")
        raise SystemExit(77)
    path = os.path.join(args().work, "reads.jsonl")
    chunks = 6
    with open(path, "w") as f:
        for i in range(chunks):
            f.write(json.dumps({"timestamp": 0, "input_length": 256, "output_length": 1,
                                "hash_ids": [500 + i]}) + "\n")
    cache = os.path.join(args().work, "cache-reads")
    shared = ["++workload.kv_cache.shared_store=True", "++workload.kv_cache.keep_entries=True",
              "++workload.kv_cache.cache_folder=" + cache, "++workload.kv_cache.io_threads=1"]
    w = chunked_run(path, os.path.join(args().work, "reads-w"), 256, 8, "0", shared)
    if w["chunks_written"] != chunks:
        fail("the writer wrote %d chunks, not %d" % (w["chunks_written"], chunks))
    folder = os.path.realpath(os.path.join(cache, "shared"))
    for depth in (1, 4):
        logs = os.path.join(args().work, "reads-%d" % depth)
        shutil.rmtree(logs, ignore_errors=True)
        os.makedirs(logs)
        out = os.path.join(args().work, "reads-r%d" % depth)
        run(["strace", "-ff", "-s", "200", "-o", os.path.join(logs, "t"),
             "-e", "trace=newfstatat,statx,stat,openat,pread64,read,close"] +
            chunked_command(path, out, 256, 8, "0", shared + [
                "++workload.kv_cache.io_threads=%d" % depth,
                "++workload.kv_cache.max_inflight_requests=%d" % depth]))
        with open(os.path.join(out, "summary.json")) as f:
            r = json.load(f)["kv_cache_chunked"]
        if r["chunk_hits"]["storage"] != chunks or r["chunks_written"] != 0:
            fail("depth %d: %d storage hits, %d written; %d chunks were on the store" % (
                depth, r["chunk_hits"]["storage"], r["chunks_written"], chunks))
        stats = collections.defaultdict(list)  # object -> threads that stat'ed it
        opens = collections.defaultdict(list)  # object -> threads that opened it
        call = re.compile(r'^(newfstatat|statx|stat|openat)\((?:AT_FDCWD, )?"([^"]+)"')
        for log in glob.glob(os.path.join(logs, "t.*")):
            tid = log.rsplit(".", 1)[1]
            with open(log, errors="replace") as f:
                for line in f:
                    m = call.match(line)
                    if m and m.group(2).startswith(folder + os.sep) and \
                            m.group(2).endswith(".npy"):
                        (opens if m.group(1) == "openat" else stats)[m.group(2)].append(tid)
        if len(opens) != chunks:
            fail("depth %d: %d chunk objects opened, not %d" % (depth, len(opens), chunks))
        for obj, threads in sorted(opens.items()):
            if len(threads) != 1 or len(stats[obj]) != 1:
                fail("depth %d: %s opened %d time(s) and stat'ed %d time(s) (expected once "
                     "each: the lookup's stat, then open, read, close)" % (
                         depth, obj, len(threads), len(stats[obj])))
            if depth == 1 and stats[obj] != threads:
                fail("depth 1: %s stat'ed on thread %s and read on thread %s (a hand-off per "
                     "chunk)" % (obj, stats[obj][0], threads[0]))
        print("depth %d: %d chunks, one stat and one open each" % (depth, chunks))


if __name__ == "__main__":
    harness.main(globals())
