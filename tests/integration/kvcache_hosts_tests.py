#!/usr/bin/python3
"""The KV-cache chunked mode's prefix store shared across hosts
(docs/kvcache-chunked.md, "A prefix store shared across hosts") on 4 hosts
of the namespace test cluster (scripts/cluster.sh, docs/cluster.md), one
rank per host, on posix and on s3. Each test starts its own hosts and stops
them whatever happened; exit 77 (skipped) without root or namespaces, and
the s3 tests without the local S3 server (scripts/s3_server.sh).

- kvcache_hosts_shared_posix / _s3: a Mooncake trace whose requests share
  prefixes, its requests 0.4 s apart, so that they run one at a time in
  trace order across the hosts (request i on rank i mod 4). An independent
  computation (below: a global store of chunk keys, each with the rank that
  wrote it) gives the hits on chunks this rank wrote and on chunks another
  host wrote; summary.json's counts must equal it. On s3 the hosts reach
  radosgw (which listens on loopback) through a forwarder at the cluster
  bridge's address, which counts the HTTP requests: each new chunk is one
  PUT under its own name (no temporary name, no copy, no multipart upload),
  each lookup on the store one HEAD, each hit one GET.
- kvcache_hosts_kill_posix / _s3: a writer host (h4, its own mpirun) and 3
  reader hosts (h1-h3, one mpirun) replay one trace at once into one store;
  the writer is killed with SIGKILL mid-run, in the middle of publishing
  (posix: its writes slowed by the latency decorator, the kill leaves its
  temporary names; s3: its bytes read slowly by the forwarder and its link
  cut with the kill, uploads end mid-body). The readers' run completes
  (no short read, no error), it hit chunks the writer published, and every
  object under a chunk's name is whole: its .npy header's shape times 2
  bytes, and every payload byte equal to the synthetic content its writer
  generates (EntryContent of seed + rank and the chunk's name,
  kvcache/tier_store.h), recomputed here.

Usage: kvcache_hosts_tests.py TEST --iomimic BIN --source REPO --work DIR
"""

import io
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time

import iomimic_tests as harness
from iomimic_tests import fail
import cluster_tests
from cluster_tests import ENV

HOSTS = 4
BLOCK = 512
CHUNK = 128
TP = 8
SEED = 42  # kv_cache.seed; rank r's chunks hold content of seed + r
TINY_BYTES_PER_TOKEN = 12 * 4 * 128 * 2 * 2  # tiny-1b: layers x kv heads x head dim x K,V x fp16
SPACING_MS = 400
REQUESTS_KILLED = 64
M64 = (1 << 64) - 1


def args():
    return harness.ARGS


# --- The trace and the expected hits ----------------------------------------


def trace(name, requests, seed, spacing_ms):
    """A Mooncake trace of scripts/kv_request_traces.py, its requests
    `spacing_ms` apart in their order (None: the script's own times)."""
    path = os.path.join(args().work, name)
    subprocess.run(["/usr/bin/python3", os.path.join(args().source, "scripts",
                                                     "kv_request_traces.py"),
                    "mooncake", path, "--requests", str(requests), "--seed", str(seed),
                    "--prompt-blocks", "2", "--max-new-tokens", "1024"], check=True)
    with open(path) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    rows.sort(key=lambda r: r["timestamp"])  # stable, as the reader sorts
    if spacing_ms is not None:
        for i, r in enumerate(rows):
            r["timestamp"] = i * spacing_ms
        with open(path, "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
    return path, rows


def chunk_keys(row):
    """[(key, tokens)] of a request: a chunk's key is the id of the block
    holding its last token and that token's place in the block."""
    n, ids = row["input_length"], row["hash_ids"]
    keys = []
    for begin in range(0, n, CHUNK):
        end = min(n, begin + CHUNK)
        block = (end - 1) // BLOCK
        keys.append(((ids[block], end - block * BLOCK), end - begin))
    return keys


def expected(rows, ranks):
    """The requests in order, request i on rank i mod ranks, one store for
    all: each rank's lookup walks the chunks and stops at the first one
    neither its own lists nor the store hold. Returns the totals: hits on
    chunks this rank wrote (`own`), on chunks another rank wrote
    (`other_host`, one rank per host), hit tokens, chunks written, and
    `rewrites` (a chunk written again after a miss before it: none in a
    prefix-hashed trace); `lookups`, the chunks looked for on the store
    (not in the rank's own lists), `not_on_store` of them missing there;
    `written_by`, the chunks on the store at the end per writer rank."""
    writer = {}                            # key -> the rank that wrote it
    known = [set() for _ in range(ranks)]  # each rank's own lists
    foreign = [set() for _ in range(ranks)]
    out = {"own": 0, "other_host": 0, "hit_tokens": 0, "written": 0, "rewrites": 0,
           "lookups": 0, "not_on_store": 0, "per_rank": [[0, 0] for _ in range(ranks)],
           "written_by": [0] * ranks}
    for i, row in enumerate(rows):
        r = i % ranks
        keys = chunk_keys(row)
        c = 0
        while c < len(keys):
            key, tokens = keys[c]
            if key not in known[r]:
                out["lookups"] += 1  # looked for on the store
                if key not in writer:
                    out["not_on_store"] += 1
                    break
                known[r].add(key)
                foreign[r].add(key)
            if key in foreign[r]:
                out["other_host"] += 1
                out["per_rank"][r][1] += 1
            else:
                out["own"] += 1
                out["per_rank"][r][0] += 1
            out["hit_tokens"] += tokens
            c += 1
        for key, _ in keys[c:]:
            if key in writer:
                out["rewrites"] += 1
                out["written_by"][writer[key]] -= 1
            writer[key] = r
            out["written_by"][r] += 1
            known[r].add(key)
            out["written"] += 1
    return out


# --- The chunks' content (iomimic/random.h, core/src/kvcache/tier_store.cpp) --


def splitmix64(state):
    state = (state + 0x9E3779B97F4A7C15) & M64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return state, z ^ (z >> 31)


def mix_seed(a, b):
    return splitmix64((a * 0x9E3779B97F4A7C15 ^ (b + 0x632BE59BD9B4E019)) & M64)[1]


def content(seed, nbytes):
    """The first `nbytes` of ContentStream(seed) with default options: word
    w is fold(s * (s ^ b)), s = a + (w + 1) * 0x9E3779B97F4A7C15."""
    import numpy as np
    state = mix_seed(seed, 0x636F6E74656E7431)  # kContentDomain
    state, a = splitmix64(state)
    _, b = splitmix64(state)
    words = (nbytes + 7) // 8
    with np.errstate(over="ignore"):
        w = np.arange(1, words + 1, dtype=np.uint64)
        s = np.uint64(a) + w * np.uint64(0x9E3779B97F4A7C15)
        x, y = s, s ^ np.uint64(b)
        m32 = np.uint64(0xFFFFFFFF)
        sh = np.uint64(32)
        xl, xh, yl, yh = x & m32, x >> sh, y & m32, y >> sh
        ll, lh, hl, hh = xl * yl, xl * yh, xh * yl, xh * yh
        mid = (ll >> sh) + (lh & m32) + (hl & m32)
        lo = (mid << sh) | (ll & m32)
        hi = hh + (lh >> sh) + (hl >> sh) + (mid >> sh)
    return (lo ^ hi).astype("<u8").tobytes()[:nbytes]


def kv_content(seed, name, nbytes):
    """The first `nbytes` of the payload of entry `name` written with seed
    `seed` (kvcache/tier_store.h, EntryContent): the first 256 KiB of
    ContentStream(seed), repeated, each 4 KiB block b XORed with the
    little-endian word mix_seed(mix_seed(seed, fnv1a64(name)), b)."""
    import numpy as np
    pattern_bytes, block = 256 * 1024, 4096
    pattern = np.frombuffer(content(seed, pattern_bytes), dtype="<u8")
    padded = (nbytes + block - 1) // block * block
    words = np.resize(pattern, padded // 8).reshape(-1, block // 8)
    entry = mix_seed(seed, fnv1a64(name))
    keys = np.array([mix_seed(entry, b) for b in range(words.shape[0])], dtype=np.uint64)
    return (words ^ keys[:, None]).astype("<u8").tobytes()[:nbytes]


def content_seed(name, body, seeds):
    """The one of `seeds` whose content chunk `name`'s payload holds (after
    its .npy header, whose size numpy's format gives), or None."""
    import numpy as np
    f = io.BytesIO(body)
    try:
        version = np.lib.format.read_magic(f)
        shape, _, dtype = np.lib.format._read_array_header(f, version)
    except Exception:
        return None
    payload = body[f.tell():]
    if len(payload) != int(np.prod(shape)) * dtype.itemsize:
        return None
    if not stamped(name, payload):
        return None
    for seed in seeds:
        # The first STAMP bytes are the writer's stamp, the rest its content.
        if payload[STAMP:] == kv_content(seed, name[:-len(".npy")], len(payload))[STAMP:]:
            return seed
    return None


STAMP = 32  # kvcache/tier_store.h's kStampBytes


def fnv1a64(text):
    h = 14695981039346656037
    for c in text.encode():
        h = ((h ^ c) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def stamped(name, payload):
    """The payload starts with the stamp of chunk `name` (kvcache/tier_store.h:
    magic, FNV-1a of the chunk's name, run, rank and host)."""
    return len(payload) >= STAMP and payload[:8] == b"IOMKVST1" and \
        int.from_bytes(payload[8:16], "little") == fnv1a64(name[:-len(".npy")])


def stamp_of(body):
    """The stamp's run, rank and host of a whole chunk object (after its .npy
    header; kvcache/tier_store.cpp's WriteStamp)."""
    import numpy as np
    f = io.BytesIO(body)
    np.lib.format._read_array_header(f, np.lib.format.read_magic(f))
    at = f.tell()
    who = int.from_bytes(body[at + 24:at + 32], "little")
    return {"run": int.from_bytes(body[at + 16:at + 24], "little"), "rank": who & 0xFFFFFFFF,
            "host": who >> 32}


def check_whole(name, body, seeds):
    """A chunk object `name` (c<16 hex>.npy) is whole: numpy loads it, its
    size is the header plus whole tokens, its payload the content stream of
    one of `seeds`. Returns the seed."""
    import numpy as np
    try:
        a = np.load(io.BytesIO(body))
    except Exception as e:  # a torn .npy is a load error
        fail("%s: numpy cannot load it (%d bytes): %s" % (name, len(body), e))
    per_token = TINY_BYTES_PER_TOKEN // TP
    header = len(body) - a.nbytes
    if a.dtype != np.float16 or a.nbytes == 0 or a.nbytes % per_token or \
            a.nbytes > CHUNK * per_token or header not in (64, 128):
        fail("%s: %s %s in %d bytes: not a whole chunk" % (name, a.dtype, a.shape, len(body)))
    seed = content_seed(name, body, seeds)
    if seed is not None:
        return seed
    payload = body[header:]
    want = kv_content(seeds[-1], name[:-len(".npy")], len(payload))
    first = next((i for i in range(STAMP, len(payload)) if payload[i] != want[i]), None)
    fail("%s: %d payload bytes, stamped %s, none of the writers' content (seeds %s); against "
         "seed %d the first difference is at payload byte %s" % (
             name, len(payload), stamped(name, payload), seeds, seeds[-1], first))


# --- Runs on the cluster -----------------------------------------------------


def command(path, cache, out, extra=()):
    return [args().iomimic, "run", "workload=kvcache_quickstart",
            "++workload.kv_cache.layout=chunked",
            "++workload.kv_cache.request_trace=" + path,
            "++workload.kv_cache.model=tiny-1b",
            "++workload.kv_cache.chunk_tokens=%d" % CHUNK,
            "++workload.kv_cache.tensor_parallel=%d" % TP,
            "++workload.kv_cache.num_gpus=%d" % TP,
            "++workload.kv_cache.storage_capacity_gb=0",
            "++workload.kv_cache.cpu_mem_gb=0",
            "++workload.kv_cache.seed=%d" % SEED,
            "++workload.kv_cache.prefill_tokens_per_second=1e9",
            "++workload.kv_cache.duration=0",
            "++workload.kv_cache.shared_store=True",
            "++workload.kv_cache.keep_entries=True",
            "++workload.kv_cache.cache_folder=" + cache,
            "++workload.output.folder=" + out] + list(extra)


def launch(folder, hosts, cmd, env=None, log=None):
    """mpirun over `hosts` ("h1:1,h2:1") of the cluster in `folder`."""
    ranks = sum(int(h.split(":")[1]) for h in hosts.split(","))
    full = [os.path.join(args().source, "scripts", "cluster.sh"), "mpirun", folder, "-np",
            str(ranks), "--host", hosts]
    for name in sorted(env or {}):
        full += ["-x", name]
    return subprocess.Popen(full + cmd, env=dict(ENV, **(env or {})), stdout=log,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)


def finish(p, what, timeout=120):
    try:
        text, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        text, _ = p.communicate()
        fail("%s: still running after %d s:\n%s" % (what, timeout, (text or "")[-3000:]))
    return p.returncode, text or ""


def host_pids(host, comm):
    ns = ENV["IOMIMIC_CLUSTER_NAME"] + "-" + host
    out = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout
    pids = []
    for pid in out.split():
        try:
            with open("/proc/%s/comm" % pid) as f:
                if f.read().strip() == comm:
                    pids.append(int(pid))
        except OSError:
            continue
    return pids


class Store:
    """Where the chunks live: a folder on the hosts' shared file system, or
    a prefix of the local S3 server's bucket reached through a forwarder on
    the cluster's bridge."""

    def __init__(self, kind, name):
        self.kind = kind
        self.env = {}
        self.extra = []
        self.forwarder = None
        if kind == "posix":
            self.cache = os.path.join(args().work, name)
            self.folder = os.path.join(self.cache, "shared")
            return
        import s3_tests
        keys = s3_tests.server_env()  # exit 77 without the server's tools
        port = int(keys["AWS_ENDPOINT_URL"].rsplit(":", 1)[1])
        bridge = ENV["IOMIMIC_CLUSTER_NET"] + ".254"
        self.bucket = keys["IOMIMIC_S3_BUCKET"]
        self.forwarder = Forwarder((bridge, port), ("127.0.0.1", port), self.bucket)
        self.forwarder.start()
        self.client = s3_tests.boto3_client(keys)
        self.prefix = "kvhosts%d-%s" % (os.getpid(), name)
        self.cache = self.prefix
        self.folder = self.prefix + "/shared"
        self.env = {k: keys[k] for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                                         "AWS_REGION")}
        self.extra = ["++workload.storage.storage_type=s3",
                      "++workload.storage.storage_root=" + self.bucket,
                      "++workload.storage.storage_options.endpoint_url=http://%s:%d" % (bridge,
                                                                                     port)]

    def objects(self):
        """{name: size} of everything in the store's folder."""
        if self.kind == "posix":
            out = {}
            for n in os.listdir(self.folder):
                try:
                    out[n] = os.path.getsize(os.path.join(self.folder, n))
                except FileNotFoundError:  # a temporary name renamed meanwhile
                    pass
            return out
        import s3_tests
        keys = s3_tests.list_keys(self.client, self.bucket, self.folder + "/")
        return {k[len(self.folder) + 1:]: size for k, size in keys.items()}

    def read(self, name):
        if self.kind == "posix":
            with open(os.path.join(self.folder, name), "rb") as f:
                return f.read()
        return self.client.get_object(Bucket=self.bucket,
                                      Key=self.folder + "/" + name)["Body"].read()

    def uploads_left(self):
        if self.kind == "posix":
            return []
        return self.client.list_multipart_uploads(Bucket=self.bucket,
                                                  Prefix=self.folder + "/").get("Uploads", [])

    def close(self):
        if self.kind == "posix":
            return
        self.forwarder.server.close()
        import s3_tests
        keys = sorted(s3_tests.list_keys(self.client, self.bucket, self.prefix + "/"))
        for i in range(0, len(keys), 1000):
            self.client.delete_objects(Bucket=self.bucket, Delete={
                "Objects": [{"Key": k} for k in keys[i:i + 1000]], "Quiet": True})


class Forwarder(threading.Thread):
    """TCP from `listen` (an address on the cluster's bridge, the hosts'
    only way out) to `target` (radosgw on loopback), byte for byte, so that
    SigV4 signatures made for the bridge address reach the server
    unchanged; counts the requests by method and key (request lines in the
    hosts' bytes), notes each peer's address and the PUTs whose connection
    ended before their body did (`cut`: (peer, path)). A peer in `slow`
    (address -> seconds) waits that long after each read of its bytes."""

    def __init__(self, listen, target, bucket):
        super().__init__(daemon=True)
        self.server = socket.create_server(listen)
        self.target = target
        self.peers = set()
        self.slow = {}
        self.cut = []
        self.conns = []  # (peer, socket) of every connection accepted
        self.lock = threading.Lock()
        self.requests = []  # (method, path, headers) of each request line seen
        self.line = re.compile(rb"(GET|PUT|HEAD|POST|DELETE) (/" + re.escape(bucket.encode()) +
                               rb"[^ \r\n]*) HTTP/1\.1\r\n((?:[^\r\n]+\r\n)*)\r\n")

    def run(self):
        while True:
            try:
                conn, peer = self.server.accept()
            except OSError:
                return
            self.peers.add(peer[0])
            if peer[0] in self.slow:
                # A small window: the client's kernel cannot take the whole
                # body ahead of the reads.
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            with self.lock:
                self.conns.append((peer[0], conn))
            upstream = socket.create_connection(self.target)
            threading.Thread(target=self.pipe, args=(conn, upstream, peer[0]),
                             daemon=True).start()
            threading.Thread(target=self.pipe, args=(upstream, conn, None), daemon=True).start()

    def pipe(self, source, sink, peer):
        """Copies source to sink; `peer`: the client's address when source
        is the client (its requests are counted), else None."""
        carry = b""
        total = 0      # bytes of the client's so far
        put = None     # the last PUT: (where its body ends, its path)
        try:
            while True:
                data = source.recv(16384 if peer in self.slow else 65536)
                if not data:
                    break
                if peer is not None:
                    # A request's head may straddle two reads: look in the
                    # tail of the last one too, counting heads that end in
                    # this one.
                    text = carry + data
                    base = total - len(carry)
                    found = []
                    for m in self.line.finditer(text):
                        if m.end() <= len(carry):
                            continue
                        found.append((m.group(1).decode(), m.group(2).decode(),
                                      m.group(3).decode()))
                        length = re.search(r"(?im)^content-length:\s*(\d+)", found[-1][2])
                        if found[-1][0] == "PUT" and length:
                            put = (base + m.end() + int(length.group(1)), found[-1][1])
                    if found:
                        with self.lock:
                            self.requests.extend(found)
                    carry = text[-4096:]
                    total += len(data)
                    if peer in self.slow:
                        time.sleep(self.slow[peer])
                sink.sendall(data)
        except OSError:
            pass
        finally:
            if put is not None and total < put[0]:
                with self.lock:
                    self.cut.append((peer, put[1]))
            try:
                sink.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    def hang_up(self, peer):
        """Ends the connections from `peer` (a host whose link is down, whose
        bytes will never come): what they were sending is cut short."""
        with self.lock:
            conns = [c for p, c in self.conns if p == peer]
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RD)
            except OSError:
                pass
        time.sleep(0.5)  # the pipes see the end and note their cut PUTs

    def counted(self, folder):
        """{method: requests} on keys under `folder`/, with a copy (a PUT
        with x-amz-copy-source) counted as COPY and multipart as POST."""
        out = {}
        with self.lock:
            for method, path, headers in self.requests:
                key = path.split("?", 1)[0]
                if "/" + folder + "/" not in key and "prefix=" + folder not in path.replace(
                        "%2F", "/"):
                    continue
                if method == "PUT" and "x-amz-copy-source" in headers.lower():
                    method = "COPY"
                if method == "GET" and "list-type=" in path:
                    method = "LIST"
                out[method] = out.get(method, 0) + 1
        return out


def summary_of(out):
    with open(os.path.join(out, "summary.json")) as f:
        return json.load(f)


def shared_run(kind):
    folder = cluster_tests.start(HOSTS)
    store = None
    try:
        store = Store(kind, "cache-shared")
        path, rows = trace("shared.jsonl", 32, 3, SPACING_MS)
        want = expected(rows, HOSTS)
        if want["rewrites"] or want["own"] == 0 or want["other_host"] == 0:
            fail("the trace should share prefixes within and across ranks, without rewrites: "
                 "%s" % want)
        out = os.path.join(args().work, "out-" + kind)
        hosts = ",".join("h%d:1" % (i + 1) for i in range(HOSTS))
        p = launch(folder, hosts, command(path, store.cache, out, store.extra + [
            "++workload.kv_cache.trace_speedup=1",
            "++workload.kv_cache.max_inflight_requests=1"]), env=store.env,
            log=subprocess.PIPE)
        t0 = time.time()
        rc, text = finish(p, "4 hosts on " + kind)
        print(text[-3000:])
        if rc != 0:
            fail("4 hosts x 1 rank on %s: exit %d" % (kind, rc))
        s = summary_of(out)
        k = s["kv_cache_chunked"]
        if s.get("num_hosts") != HOSTS or sorted(s["iomimic"]["rank_hosts"]) != [
                "h%d" % (i + 1) for i in range(HOSTS)]:
            fail("num_hosts %r, rank hosts %r: one rank per host expected" % (
                s.get("num_hosts"), s["iomimic"].get("rank_hosts")))
        got = {"hits": k["chunk_hits"]["storage"], "other_host": k["chunk_hits_shared"],
               "hit_tokens": k["hit_tokens"], "written": k["chunks_written"]}
        computed = {"hits": want["own"] + want["other_host"], "other_host": want["other_host"],
                    "hit_tokens": want["hit_tokens"], "written": want["written"]}
        by_source = k.get("hits_by_source")
        if by_source is not None:
            # By who wrote the chunk: this rank (for this user or another),
            # a rank of another host; none on the same host (one rank per
            # host), none of an earlier run (a fresh store).
            got["other_host"] = by_source["other_host"]
            got["by_source"] = {"this_rank": by_source["own"] + by_source["other_user"],
                                "other_rank": by_source["other_rank"],
                                "other_host": by_source["other_host"],
                                "earlier_run": by_source["earlier_run"]}
            computed["by_source"] = {"this_rank": want["own"], "other_rank": 0,
                                     "other_host": want["other_host"], "earlier_run": 0}
        print("%s, 4 hosts, %.1f s: counted %s; computed %s (own %d, per rank [own, other "
              "host] %s; %d lookups on the store, %d missing there)" % (
                  kind, time.time() - t0, got, computed, want["own"], want["per_rank"],
                  want["lookups"], want["not_on_store"]))
        if got != computed:
            fail("%s: the run counted %s; the trace's hash ids give %s" % (kind, got, computed))
        objects = store.objects()
        chunks = sorted(n for n in objects if re.fullmatch(r"c[0-9a-f]{16}\.npy", n))
        if len(chunks) != want["written"] or len(objects) != len(chunks):
            fail("%s: %d chunk objects (%d objects in all) on the store, %d written" % (
                kind, len(chunks), len(objects), want["written"]))
        # Who wrote each chunk, by its content (rank r's seed is SEED + r)
        # and by its stamp (rank, host; one run): per rank as computed.
        by_rank = [0] * HOSTS
        runs = set()
        for n in chunks:
            body = store.read(n)
            rank = check_whole(n, body, [SEED + r for r in range(HOSTS)]) - SEED
            stamp = stamp_of(body)
            if (stamp["rank"], stamp["host"]) != (rank, rank):
                fail("%s: content of rank %d, stamp %s (one rank per host: rank = host)" % (
                    n, rank, stamp))
            runs.add(stamp["run"])
            by_rank[rank] += 1
        if by_rank != want["written_by"] or len(runs) != 1:
            fail("%s: chunks on the store by writer rank %s (runs %s); computed %s" % (
                kind, by_rank, sorted(runs), want["written_by"]))
        print("%s: chunks on the store by writer rank (content and stamp) %s, as computed" % (
            kind, by_rank))
        if kind == "s3":
            methods = store.forwarder.counted(store.folder)
            print("s3 requests under %s/: %s; peers %s" % (store.folder, methods,
                                                          sorted(store.forwarder.peers)))
            net = ENV["IOMIMIC_CLUSTER_NET"]
            if not {"%s.%d" % (net, i + 1) for i in range(HOSTS)} <= store.forwarder.peers:
                fail("the server was reached from %s, not from every host" %
                     sorted(store.forwarder.peers))
            if methods.get("PUT") != want["written"] or methods.get("COPY") or \
                    methods.get("POST"):
                fail("s3: %d chunks written in %s; one PUT each expected, no copy, no "
                     "multipart upload" % (want["written"], methods))
            if methods.get("DELETE"):
                fail("s3: %d DELETEs with keep_entries" % methods["DELETE"])
            # A lookup is one HEAD (the size), a hit one GET (no HEAD before
            # it); a chunk missing from the store is also one LIST (the
            # s3 plugin's Stat looks for a folder of that name).
            if methods.get("HEAD") != want["lookups"] or methods.get("GET") != got["hits"] or \
                    methods.get("LIST", 0) > want["not_on_store"]:
                fail("s3: %s for %d lookups on the store (%d missing there) and %d hits" % (
                    methods, want["lookups"], want["not_on_store"], got["hits"]))
        if kind == "posix":  # about 100 MB, checked
            shutil.rmtree(store.cache, ignore_errors=True)
    finally:
        if store is not None:
            store.close()
        cluster_tests.cluster("stop", folder, check=False)


def kill_run(kind):
    folder = cluster_tests.start(HOSTS)
    store = None
    writer = readers = None
    try:
        store = Store(kind, "cache-kill")
        # 64 requests 60 ms apart: the writer runs 4 s or more unless killed.
        path, _ = trace("kill.jsonl", REQUESTS_KILLED, 9, 60)
        extra = store.extra + ["++workload.kv_cache.trace_speedup=1",
                               "++workload.kv_cache.io_threads=8",
                               "++workload.kv_cache.max_inflight_requests=8"]
        slow = []
        if kind == "posix":
            # The writer's chunks in 64 KiB writes of 5 ms each (the latency
            # decorator), so that the kill finds chunks half written.
            slow = ["++workload.storage.backend=latency", "++workload.storage.options.inner=posix",
                    "++workload.storage.options.delay=5ms", "++workload.kv_cache.transfer_size=65536"]
        if kind == "s3":
            # The writer's bytes through the forwarder at about 16 KiB per
            # 5 ms, so that the kill finds uploads half sent.
            store.forwarder.slow[ENV["IOMIMIC_CLUSTER_NET"] + ".4"] = 0.005
        wlog = open(os.path.join(args().work, "writer.log"), "w+")
        writer = launch(folder, "h4:1", command(path, store.cache,
                                                os.path.join(args().work, "out-writer"),
                                                extra + slow), env=store.env, log=wlog)
        deadline = time.time() + 60
        while True:
            try:
                published = [n for n in store.objects() if n.endswith(".npy")]
            except Exception:  # a listing racing a rename or a server's start
                published = []
            if len(published) >= 20:
                break
            if writer.poll() is not None or time.time() > deadline:
                wlog.seek(0)
                fail("the writer published %d chunks before %s:\n%s" % (
                    len(published), "it ended" if writer.poll() is not None else "60 s",
                    wlog.read()[-3000:]))
            time.sleep(0.1)
        out = os.path.join(args().work, "out-readers")
        readers = launch(folder, "h1:1,h2:1,h3:1", command(path, store.cache, out, extra),
                         env=store.env, log=subprocess.PIPE)
        time.sleep(1.5)
        pids = host_pids("h4", "iomimic")
        if writer.poll() is not None or len(pids) != 1:
            wlog.seek(0)
            fail("the writer on h4 ended before the kill (iomimic pids %s):\n%s" % (
                pids, wlog.read()[-3000:]))
        if kind == "posix":
            # Kill while one of the writer's objects is being written (its
            # temporary name is there): between requests (60 ms apart) it
            # can have none in flight, and a kill there tears nothing (seen
            # once in a clean CI run). A chunk takes tens of ms to write
            # through the latency decorator, so the kill lands inside it.
            tag = ".partial-r0-%d-" % pids[0]
            deadline = time.time() + 10
            while time.time() < deadline and not any(tag in n for n in store.objects()):
                time.sleep(0.002)
        os.kill(pids[0], signal.SIGKILL)
        if kind == "s3":
            # The host dies with its process: its link goes down too, so
            # what its kernel still held of the uploads never arrives.
            subprocess.run(["ip", "link", "set", ENV["IOMIMIC_CLUSTER_NAME"] + "-h4", "down"],
                           check=True)
            store.forwarder.hang_up(ENV["IOMIMIC_CLUSTER_NET"] + ".4")
        try:
            writer.wait(timeout=30)
        except subprocess.TimeoutExpired:
            # The writer is dead; its mpirun can wait on the daemon of a host
            # whose link went down before the daemon's word got out.
            os.killpg(writer.pid, signal.SIGKILL)
            writer.wait(timeout=30)
        at_kill = store.objects()
        killed_at = len([n for n in at_kill if n.endswith(".npy")])
        print("at the kill: %d chunks, %d temporary names" % (killed_at, len(at_kill) - killed_at))
        rc, text = finish(readers, "the readers on h1-h3")
        print(text[-3000:])
        if rc != 0 or "fewer than the entry's" in text or "Corruption" in text:
            fail("the readers on h1-h3 on %s: exit %d after the writer was killed" % (kind, rc))
        k = summary_of(out)["kv_cache_chunked"]
        if k["chunk_hits_shared"] == 0 or k["requests"] != REQUESTS_KILLED:
            fail("the readers: %d requests, %d shared hits; expected %d requests and hits on "
                 "the writer's chunks" % (k["requests"], k["chunk_hits_shared"],
                                          REQUESTS_KILLED))
        objects = store.objects()
        chunks = sorted(n for n in objects if re.fullmatch(r"c[0-9a-f]{16}\.npy", n))
        other = sorted(set(objects) - set(chunks))
        seeds = {}
        for n in chunks:
            seed = check_whole(n, store.read(n), [SEED, SEED + 1, SEED + 2])
            seeds[seed] = seeds.get(seed, 0) + 1
        uploads = store.uploads_left()
        # A temporary name holds what the writer had written when killed:
        # whole (not yet renamed), or torn.
        torn = [n for n in other
                if content_seed(n.split(".partial-")[0], store.read(n), [SEED]) is None]
        print("%s: %d chunks on the store when the writer was killed, %d after the readers; "
              "all whole (content of seed: %s); readers: %d shared hits of %d hits; left "
              "beside them: %d temporary names (%d of them torn), %d multipart "
              "uploads" % (kind, killed_at, len(chunks), seeds, k["chunk_hits_shared"],
                           k["chunk_hits"]["storage"], len(other), len(torn), len(uploads)))
        tag = ".partial-r0-%d-" % pids[0]  # the killed writer's (rank 0, its pid)
        if any(tag not in n for n in other):
            fail("%s: objects that are neither chunks nor the killed writer's temporary names "
                 "(*%s*): %s" % (kind, tag, other))
        if kind == "posix" and not other:
            fail("posix: the kill left no temporary name: it landed between the writes")
        if kind == "s3":
            cut = [path for peer, path in store.forwarder.cut
                   if peer == ENV["IOMIMIC_CLUSTER_NET"] + ".4"]
            names = [p.rsplit("/", 1)[1] for p in cut]
            print("s3: %d PUTs of the writer cut mid-body by the kill and its link's loss, %d of "
                  "those names on the store (written whole by a reader since)" % (
                      len(cut), len([n for n in names if n in objects])))
            if not cut:
                fail("s3: the kill cut no upload short: it landed between the writes")
        if kind == "s3" and other:
            fail("s3: temporary names on an object store: %s" % other)
        if kind == "posix":  # hundreds of MB
            shutil.rmtree(store.cache, ignore_errors=True)
    finally:
        for p in (writer, readers):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
        for h in ("h1", "h2", "h3", "h4"):
            for pid in host_pids(h, "iomimic"):
                os.kill(pid, signal.SIGKILL)
        if store is not None:
            store.close()
        cluster_tests.cluster("stop", folder, check=False)


def test_kvcache_hosts_shared_posix():
    shared_run("posix")


def test_kvcache_hosts_shared_s3():
    shared_run("s3")


def test_kvcache_hosts_kill_posix():
    kill_run("posix")


def test_kvcache_hosts_kill_s3():
    kill_run("s3")


if __name__ == "__main__":
    harness.main(globals())
