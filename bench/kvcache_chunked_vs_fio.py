#!/usr/bin/python3
"""KV-cache chunked mode (kv_cache.layout: chunked, docs/kvcache-chunked.md)
against fio: chunk bandwidth at 2-80 MiB chunks and queue depth, on tmpfs
and on disk; then storage tokens/s of both layouts under two bandwidth caps.

  bench/kvcache_chunked_vs_fio.py [--iomimic build/bin/iomimic]
      [--work /var/tmp/iomimic-kv-chunked] [--shm /dev/shm/iomimic-kv-chunked]
      [--sizes 2,8,32,80] [--depths 1,4,16] [--rounds 4] [--volume-mib 512,256]
      [--media tmpfs,disk]
      [--caps 40,120] [--reference DIR] [--parts bandwidth,cpu,caps] [--record]

Part 1 (bandwidth). Model llama3.1-8b (128 KiB of KV cache per token,
tensor_parallel 1), so kv_cache.chunk_tokens = 8 x the chunk's MiB gives
chunks of 2, 8, 32 and 80 MiB. An inline Mooncake trace of N requests of
chunk_tokens tokens each with fresh hash ids makes the run write N new
chunks; no host tier (every chunk goes to storage), prefill modelled as
instant, kv_cache.io_threads = kv_cache.max_inflight_requests = the depth.
The read phase is a run of the same trace with kv_cache.shared_store on a
folder an unmeasured shared-store run wrote (keep_entries; a shared store's
reads check the writer's stamp its writes put in each object): every chunk
is a storage hit, found by its object's name and size, and read whole. The store's write
pattern (core/src/kvcache/tier_store.cpp, StorageWrite; the posix back end)
per chunk: open(O_CREAT) (no preallocation since 3816e8e; before it,
posix_fallocate of the object's size), pwrite of kv_cache.transfer_size
(16 MiB) pieces, fsync, close; no rename (that is only a shared store's
publication). A read: stat, open with
fadvise(DONTNEED) (OpenOptions::drop_cache), pread of 16 MiB pieces, close.
fio mirrors it: `depth` jobs (psync, bs = min(16 MiB, chunk), threads of
one process as iomimic's I/O threads are: see fio_phases), each of
N / depth files of the object's size (the chunk and its .npy header, 128
bytes: on disk the header's extra 4 KiB page is one more device request
per object, so fio's files carry it too; chunks above 16 MiB keep the
chunk's size, fio leaving out a last partial block), one open at a time
(file_service_type=sequential, openfiles=1), written with
fsync_on_close=1 and create_on_open=1 (the file is created inside the
timed job, as the store creates it; fio's default lays every file out, and
fallocates it, before the clock starts), then read with invalidate=1
(fadvise DONTNEED at open). iomimic's GB/s is summary.json's
kv_cache_chunked.tiers.storage.{write,read}_GB_per_second, checked against
bytes / elapsed_seconds and the bytes against the objects on storage; fio's
is the group's io_bytes / runtime. Writes are compared at equal content
cost (README.md, "Content of generated files"): iomimic.content scrambled
against fio's default buffer (one random buffer, a few bytes of every 512
changed per write: scramble_buffers), both writing the pattern once and
then only what changes; iomimic's default content (a 256 KiB random pattern
XORed per 4 KiB block with a word of the chunk's own, docs/kvcache.md:
unique and incompressible to any window, one pass over every byte per
write) against fio with refill_buffers (fresh random bytes per write); and
iomimic.content zeros (nothing made) against fio's default, for what is
left when no content is made.
Per round the five writers' order rotates by one, and every write phase
starts after the previous run's files are gone and --settle seconds (this
VM hands freed memory back to its host: storage_vs_fio.py).

Part 1b (cpu). CPU seconds per GiB written on tmpfs by the same
writers (write_cpu): what each spends, which load hardly moves.

Part 2 (caps). Two bandwidth caps, MiB/s. iomimic runs under the latency
storage decorator's cap (plugins/storage/latency: option `bandwidth`, one
token bucket shared by every thread and file, reads and writes together,
every transfer delayed; inner posix on --work): storage tokens/s of the
whole layout (the storage-bound run of kvcache_storage_bound.py: tiny-1b,
--ref-users users, --requests requests, no GPU or host tier) and of the
chunked layout (a Mooncake trace from scripts/kv_request_traces.py,
--chunked-requests requests, tiny-1b with tensor_parallel 2, chunks of 256
tokens, no host tier, as fast as slots allow: storage tokens = tokens of
the chunks read from and written to storage, over the run's
elapsed_seconds). fio cannot load a storage plugin, and its own `rate`
option lets each job's first I/O through undelayed (with a few objects per
job it read 64 MiB/s under a 40 MiB/s rate), so fio runs each run's
pattern (mean object size, fsync on close, reads per write, a job per user
or I/O thread) under a cgroup blkio throttle of the same MiB/s on the same
disk (needs root), as does the reference (kv-cache.py, --reference DIR: its
kv_cache_benchmark folder; it has no chunked layout). The table gives the
fast cap over the slow one for each, over fio's ratio for the same pattern.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

import benchlib
import kvcache_storage_bound as ksb

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MIB = 1 << 20
GIB = 1 << 30
BYTES_PER_TOKEN = 131072  # llama3.1-8b: 32 layers x 8 KV heads x 128 x 2 (K, V) x 2 bytes


# --- iomimic --------------------------------------------------------------------


def write_trace(path, chunks, chunk_tokens):
    """A Mooncake trace of `chunks` requests, each one new chunk."""
    blocks = (chunk_tokens + 511) // 512
    with open(path, "w") as f:
        for i in range(chunks):
            ids = list(range(1000 + i * blocks, 1000 + (i + 1) * blocks))
            f.write(json.dumps({"timestamp": 0, "input_length": chunk_tokens,
                                "output_length": 1, "hash_ids": ids}) + "\n")


def iomimic_chunked(a, root, out, trace, chunk_tokens, depth, extra=(), model="llama3.1-8b",
                    storage=None):
    """One chunked run; returns (summary.json's kv_cache_chunked, wall seconds)."""
    shutil.rmtree(out, ignore_errors=True)
    argv = [a.iomimic, "run", "workload=kvcache_quickstart",
            "++workload.kv_cache.layout=chunked",
            "++workload.kv_cache.request_trace=" + trace,
            "++workload.kv_cache.model=" + model,
            "++workload.kv_cache.chunk_tokens=%d" % chunk_tokens,
            "++workload.kv_cache.cpu_mem_gb=0", "++workload.kv_cache.storage_capacity_gb=0",
            "++workload.kv_cache.io_threads=%d" % depth,
            "++workload.kv_cache.max_inflight_requests=%d" % depth,
            "++workload.kv_cache.trace_speedup=0", "++workload.kv_cache.duration=0",
            "++workload.storage.storage_root=" + root,
            "++workload.output.folder=" + out] + list(extra)
    if storage:
        argv += storage
    t = time.monotonic()
    r = subprocess.run(argv, capture_output=True, text=True)
    wall = time.monotonic() - t
    if r.returncode != 0:
        sys.exit("iomimic failed:\n" + " ".join(argv) + "\n" + r.stdout[-2000:] + r.stderr[-2000:])
    with open(os.path.join(out, "summary.json")) as f:
        return json.load(f)["kv_cache_chunked"], wall


def iomimic_phases(a, base, size, depth, chunks, content=()):
    """The write run and the read run of `chunks` chunks of `size` bytes.
    Returns (write GB/s, read GB/s) from summary.json, after checking them."""
    tokens = size // BYTES_PER_TOKEN
    trace = os.path.join(a.tmp, "chunks.jsonl")
    write_trace(trace, chunks, tokens)
    root = os.path.join(base, "iom")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    keep = ["++workload.kv_cache.keep_entries=True",
            "++workload.kv_cache.prefill_tokens_per_second=1e12"] + list(content)
    w, _ = iomimic_chunked(a, root, os.path.join(a.tmp, "out-w"), trace, tokens, depth,
                           keep + ["++workload.kv_cache.cache_folder=w"])
    folder = os.path.join(root, "w", "rank_0")
    objects = [os.path.join(folder, n) for n in os.listdir(folder)]
    on_disk = sum(os.path.getsize(p) for p in objects)
    st = w["tiers"]["storage"]
    header = on_disk - chunks * size
    # Every chunk written, each object the payload plus one .npy header.
    assert len(objects) == chunks and st["write_bytes"] == chunks * size, (len(objects), st)
    assert 0 < header <= chunks * 4096, header
    mine = st["write_bytes"] / w["elapsed_seconds"] / 1e9
    assert abs(mine - st["write_GB_per_second"]) <= 1e-6 * mine, (mine, st)
    # The read phase finds the chunks on a shared store, whose reads check
    # the writer's stamp that shared-store writes put in each object: an
    # unmeasured shared run writes them again there.
    shutil.rmtree(folder)
    shared = keep + ["++workload.kv_cache.cache_folder=r", "++workload.kv_cache.shared_store=True"]
    again, _ = iomimic_chunked(a, root, os.path.join(a.tmp, "out-s"), trace, tokens, depth, shared)
    assert again["chunks_written"] == chunks, again
    os.sync()
    r, _ = iomimic_chunked(a, root, os.path.join(a.tmp, "out-r"), trace, tokens, depth,
                           keep + ["++workload.kv_cache.cache_folder=r",
                                   "++workload.kv_cache.shared_store=True"])
    st = r["tiers"]["storage"]
    assert r["chunk_hits"]["storage"] == chunks and r["chunks_written"] == 0, r
    assert st["read_bytes"] == chunks * size, st
    mine_r = st["read_bytes"] / r["elapsed_seconds"] / 1e9
    assert abs(mine_r - st["read_GB_per_second"]) <= 1e-6 * mine_r, (mine_r, st)
    shutil.rmtree(root, ignore_errors=True)
    return (w["tiers"]["storage"]["write_GB_per_second"], st["read_GB_per_second"],
            header // chunks)


# --- fio ------------------------------------------------------------------------------


def fio_phase(folder, phase, size, nfiles, jobs, extra=(), wrap=lambda x: x):
    """One fio phase (write: create on open, fsync on close; read: invalidate
    at open) of `jobs` jobs x `nfiles` files of `size` bytes. Returns (bytes,
    seconds) as fio timed the group."""
    argv = ["fio", "--name=kv", "--directory=" + folder,
            "--filename_format=kv.$jobnum.$filenum", "--nrfiles=%d" % nfiles,
            "--filesize=%d" % size, "--size=%d" % (size * nfiles), "--openfiles=1",
            "--file_service_type=sequential", "--bs=%d" % min(16 * MIB, size),
            "--ioengine=psync", "--numjobs=%d" % jobs, "--group_reporting",
            "--output-format=json"] + list(extra)
    if phase == "write":
        argv += ["--rw=write", "--fsync_on_close=1", "--create_on_open=1"]
    else:
        argv += ["--rw=read", "--invalidate=1"]
    r = subprocess.run(wrap(argv), capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("fio failed:\n" + " ".join(argv) + "\n" + r.stdout[-2000:] + r.stderr[-2000:])
    j = json.loads(r.stdout[r.stdout.index("{"):])["jobs"][0]
    return j[phase]["io_bytes"], j[phase]["runtime"] / 1000.0


def fio_phases(base, size, depth, chunks, extra=(), header=0):
    """fio's write and read of `chunks` files: each the size of iomimic's
    object (the chunk's `size` and its .npy `header`) when that is one
    transfer (16 MiB at most), else `size` (fio leaves out a last partial
    block; one 4 KiB page more in a file of more than 16 MiB). Returns
    the payload's GB/s (the header's bytes not counted, as iomimic counts)."""
    file = size + header if size + header <= 16 * MIB else size
    folder = os.path.join(base, "fio")
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    # Jobs as threads of one process, as iomimic's I/O threads are: fio's
    # job processes each call setsid(), and with the kernel's autogroup
    # scheduling (kernel.sched_autogroup_enabled) every session gets an equal
    # CPU share, so on a loaded machine 16 job processes get 16 shares where
    # one process gets one (tmpfs, 2 MiB chunks, depth 16: 2.3-3.2 GB/s as
    # processes, 0.36-0.47 as threads, in the same minute).
    extra = ["--thread"] + list(extra)
    wb, ws = fio_phase(folder, "write", file, chunks // depth, depth, extra)
    os.sync()
    rb, rs = fio_phase(folder, "read", file, chunks // depth, depth, ["--thread"])
    assert wb == rb == chunks * file, (wb, rb)
    shutil.rmtree(folder, ignore_errors=True)
    payload = chunks * size
    return payload / ws / 1e9, payload / rs / 1e9


# --- part 1 ------------------------------------------------------------------------------


def bandwidth(a, lines):
    sizes = [int(s) for s in a.sizes.split(",")]
    depths = [int(d) for d in a.depths.split(",")]
    media = [m for m in (("tmpfs", a.shm, a.volumes[0]), ("disk", a.work, a.volumes[1]))
             if m[0] in a.media.split(",")]
    rows = []
    for medium, base, volume in media:
        os.makedirs(base, exist_ok=True)
        for size_mib in sizes:
            for depth in depths:
                size = size_mib * MIB
                # At least two chunks per I/O thread, a whole number per fio job.
                chunks = max(volume // size_mib, 2 * depth)
                chunks = (chunks + depth - 1) // depth * depth
                f = {"iw": [], "ir": [], "fw": [], "fr": [], "fx": [], "iz": [], "is": []}
                # The .npy header of the cell's objects (one small run), so
                # that fio's files are the objects' size.
                _, _, header = iomimic_phases(a, base, size, 1, 1)
                for rnd in range(a.rounds):
                    order = ["iomimic", "fio", "fio-refill", "iomimic-zeros",
                             "iomimic-scrambled"]
                    order = order[rnd % 5:] + order[:rnd % 5]
                    for tool in order:
                        time.sleep(a.settle)
                        if tool == "iomimic":
                            w, r, _ = iomimic_phases(a, base, size, depth, chunks)
                            f["iw"].append(w), f["ir"].append(r)
                        elif tool == "iomimic-zeros":
                            # iomimic.content zeros: the same transfers without
                            # generating content (what the content costs).
                            w, _, _ = iomimic_phases(a, base, size, depth, chunks,
                                                     ["++workload.iomimic.content=zeros"])
                            f["iz"].append(w)
                        elif tool == "iomimic-scrambled":
                            # fio's default buffer's content: the pattern held,
                            # stamps rewritten per sector.
                            w, _, _ = iomimic_phases(a, base, size, depth, chunks,
                                                     ["++workload.iomimic.content=scrambled"])
                            f["is"].append(w)
                        elif tool == "fio":
                            w, r = fio_phases(base, size, depth, chunks, header=header)
                            f["fw"].append(w), f["fr"].append(r)
                        else:
                            # Fresh random bytes in every write, as every chunk's
                            # content is unique in iomimic (fio's default reuses one
                            # random buffer, lightly scrambled).
                            w, _ = fio_phases(base, size, depth, chunks, ["--refill_buffers"],
                                              header=header)
                            f["fx"].append(w)
                row = (medium, size_mib, depth, chunks, f, benchlib.loadavg())
                rows.append(row)
                print("%s %d MiB x %d, depth %d: write iomimic %s (scrambled %s, zeros %s) fio %s "
                      "(refill %s); read iomimic %s fio %s "
                      "(load %s)" % (medium, size_mib, chunks, depth,
                                     benchlib.spread(f["iw"], "%.2f"),
                                     benchlib.spread(f["is"], "%.2f"),
                                     benchlib.spread(f["iz"], "%.2f"),
                                     benchlib.spread(f["fw"], "%.2f"),
                                     benchlib.spread(f["fx"], "%.2f"),
                                     benchlib.spread(f["ir"], "%.2f"),
                                     benchlib.spread(f["fr"], "%.2f"), row[5]), flush=True)
    lines += ["## Chunk bandwidth against fio", "",
              "GB/s (10^9 bytes of chunk payload per second), median (min-max) of %d "
              "rounds; ratios per round. Writes at equal content cost: iomimic.content "
              "scrambled against fio's default buffer (both hold one random pattern and "
              "change a few bytes of every 512 per write), iomimic's default content (unique "
              "to every byte: a pass over each) against fio's refill_buffers (fresh random "
              "bytes per write); zeros: iomimic.content zeros (no content) over fio's "
              "default. Load: the 1/5/15-minute load average after the cell." % a.rounds,
              "",
              "| medium | chunk | chunks | depth | write scrambled | write fio | ratio | "
              "write random | fio refill | ratio | random / fio | zeros / fio | "
              "read iomimic | read fio | read ratio | load |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    worst = []
    for medium, size_mib, depth, chunks, f, load in rows:
        sr = [x / y for x, y in zip(f["is"], f["fw"])]
        xr = [x / y for x, y in zip(f["iw"], f["fx"])]
        wr = [x / y for x, y in zip(f["iw"], f["fw"])]
        zr = [x / y for x, y in zip(f["iz"], f["fw"])]
        rr = [x / y for x, y in zip(f["ir"], f["fr"])]
        worst += [(statistics.median(sr), medium, size_mib, depth, "write scrambled / fio"),
                  (statistics.median(xr), medium, size_mib, depth, "write random / fio refill"),
                  (statistics.median(rr), medium, size_mib, depth, "read")]
        lines.append("| %s | %d MiB | %d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s "
                     "| %s | %s |"
                     % (medium, size_mib, chunks, depth, benchlib.spread(f["is"], "%.2f"),
                        benchlib.spread(f["fw"], "%.2f"), benchlib.spread(sr, "%.2f"),
                        benchlib.spread(f["iw"], "%.2f"), benchlib.spread(f["fx"], "%.2f"),
                        benchlib.spread(xr, "%.2f"), benchlib.spread(wr, "%.2f"),
                        benchlib.spread(zr, "%.2f"),
                        benchlib.spread(f["ir"], "%.2f"), benchlib.spread(f["fr"], "%.2f"),
                        benchlib.spread(rr, "%.2f"), load))
    meets = {}
    for ratio, medium, _, _, what in worst:
        key = "%s %s" % (medium, what)
        hit, total = meets.get(key, (0, 0))
        meets[key] = (hit + (ratio >= 0.9), total + 1)
    lines += ["", "Cells whose median ratio is at least 0.9: " + "; ".join(
        "%s %d of %d" % (key, hit, total) for key, (hit, total) in meets.items()) + "."]
    worst.sort()
    lines += ["", "Lowest median ratios: " + "; ".join(
        "%s %s %d MiB depth %d: %.2f" % (w[1], w[4], w[2], w[3], w[0]) for w in worst[:4]) +
        " (target: at least 0.9).", ""]


# --- part 1b: CPU per GiB written -------------------------------------------------


def child_cpu(argv):
    with benchlib.ChildCpu() as cpu:
        r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(" ".join(argv) + " failed:\n" + r.stdout[-2000:] + r.stderr[-2000:])
    return cpu.seconds


def write_cpu(a, lines):
    """CPU seconds (user + system) per GiB written on tmpfs: the difference
    between a run of 512 and one of 16 chunks of 2 MiB at depth 4 (start-up
    and teardown cancel), iomimic (random and zeros content) and fio (its
    default buffer and refill_buffers). Load hardly moves CPU time, so this
    shows what each tool spends where bandwidth on a loaded machine cannot."""
    size, depth = 2 * MIB, 4
    keep = ["++workload.kv_cache.keep_entries=True", "++workload.kv_cache.cache_folder=w",
            "++workload.kv_cache.prefill_tokens_per_second=1e12"]

    def iomimic(n, content):
        trace = os.path.join(a.tmp, "cpu%d.jsonl" % n)
        write_trace(trace, n, size // BYTES_PER_TOKEN)
        root = os.path.join(a.shm, "cpu")
        shutil.rmtree(root, ignore_errors=True)
        out = os.path.join(a.tmp, "out-cpu")
        shutil.rmtree(out, ignore_errors=True)
        argv = [a.iomimic, "run", "workload=kvcache_quickstart",
                "++workload.kv_cache.layout=chunked", "++workload.kv_cache.request_trace=" + trace,
                "++workload.kv_cache.model=llama3.1-8b",
                "++workload.kv_cache.chunk_tokens=%d" % (size // BYTES_PER_TOKEN),
                "++workload.kv_cache.cpu_mem_gb=0", "++workload.kv_cache.storage_capacity_gb=0",
                "++workload.kv_cache.io_threads=%d" % depth,
                "++workload.kv_cache.max_inflight_requests=%d" % depth,
                "++workload.kv_cache.trace_speedup=0", "++workload.storage.storage_root=" + root,
                "++workload.output.folder=" + out] + keep + content
        seconds = child_cpu(argv)
        shutil.rmtree(root, ignore_errors=True)
        return seconds

    def fio(n, extra):
        folder = os.path.join(a.shm, "cpu-fio")
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        argv = ["fio", "--name=kv", "--directory=" + folder,
                "--filename_format=kv.$jobnum.$filenum", "--nrfiles=%d" % (n // depth),
                "--filesize=%d" % size, "--size=%d" % (size * n // depth), "--openfiles=1",
                "--file_service_type=sequential", "--bs=%d" % size, "--ioengine=psync",
                "--numjobs=%d" % depth, "--rw=write", "--fsync_on_close=1", "--create_on_open=1",
                "--thread", "--output-format=json"] + extra
        seconds = child_cpu(argv)
        shutil.rmtree(folder, ignore_errors=True)
        return seconds

    tools = (("iomimic", lambda n: iomimic(n, [])),
             ("iomimic, content scrambled",
              lambda n: iomimic(n, ["++workload.iomimic.content=scrambled"])),
             ("iomimic, content zeros", lambda n: iomimic(n, ["++workload.iomimic.content=zeros"])),
             ("fio", lambda n: fio(n, [])),
             ("fio refill_buffers", lambda n: fio(n, ["--refill_buffers"])))
    res = {name: [] for name, _ in tools}
    for rnd in range(a.rounds):
        for name, run in tools[rnd % len(tools):] + tools[:rnd % len(tools)]:
            res[name].append((run(512) - run(16)) / (496 * size / GIB))
    lines += ["## CPU per GiB written (tmpfs, 2 MiB chunks, depth 4)", "",
              "User + system CPU seconds of the whole process per GiB, the difference "
              "between 512 and 16 chunks (start-up cancels), median (min-max) of %d rounds; "
              "load after: %s." % (a.rounds, benchlib.loadavg()), "",
              "| writer | CPU s / GiB | / fio's |", "|---|---:|---:|"]
    fio_median = statistics.median(res["fio"])
    for name, _ in tools:
        lines.append("| %s | %s | %.2f |" % (name, benchlib.spread(res[name], "%.3f"),
                                             statistics.median(res[name]) / fio_median))
    lines.append("")


# --- part 2 -------------------------------------------------------------------------------


def chunked_tokens_per_second(c, bytes_per_token):
    st = c["tiers"]["storage"]
    return (st["read_bytes"] + st["write_bytes"]) / bytes_per_token / c["elapsed_seconds"]


def chunked_pattern(c, depth):
    """(mean storage object size rounded to 64 KiB, reads per write) of a chunked run."""
    st = c["tiers"]["storage"]
    n = max(1, c["chunks_written"])
    size = max(65536, st["write_bytes"] // n // 65536 * 65536)
    return size, max(1, round(st["read_bytes"] / st["write_bytes"])) if st["write_bytes"] else 1


def fio_pattern(folder, size, nfiles, jobs, loops, extra=(), wrap=lambda x: x):
    """fio: each job writes `nfiles` objects (fsync on close), then reads them
    `loops` times (cache dropped at open). Returns MiB/s over both phases."""
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    wb, ws = fio_phase(folder, "write", size, nfiles, jobs, extra, wrap)
    rb, rs = fio_phase(folder, "read", size, nfiles, jobs, list(extra) + ["--loops=%d" % loops],
                       wrap)
    shutil.rmtree(folder, ignore_errors=True)
    return (wb + rb) / MIB / (ws + rs)


def latency_storage(cap):
    return ["++workload.storage.backend=latency",
            "++workload.storage.options.inner=posix",
            "++workload.storage.options.bandwidth=%dM" % cap]


def caps(a, lines):
    caps_ = [int(c) for c in a.caps.split(",")]
    base = a.work
    os.makedirs(base, exist_ok=True)
    trace = os.path.join(a.tmp, "mooncake.jsonl")
    subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "scripts", "kv_request_traces.py"),
                    "mooncake", trace, "--requests", str(a.chunked_requests), "--seed", "42",
                    "--max-new-tokens", "1024"], check=True, capture_output=True)
    fig = {c: {k: [] for k in ("whole", "fio_whole", "chunked", "fio_chunked", "reference")}
           for c in caps_}
    a.users, a.duration = a.ref_users, 20
    if a.reference:
        a.reference_config = os.path.abspath(ksb.kvcache_fidelity.write_reference_config(a))
    device = ksb.device_of(base)
    throttles = {c: ksb.Throttle("iomimic-kvc-%d" % c, device, c) for c in caps_}
    try:
        for rnd in range(a.rounds):
            for cap in (caps_ if rnd % 2 == 0 else list(reversed(caps_))):
                f = fig[cap]
                summary, _, _ = ksb.run_iomimic(a, os.path.join(base, "iom"),
                                                os.path.join(a.tmp, "out-whole"),
                                                latency_storage(cap), requests=a.requests)
                f["whole"].append(ksb.find_key(summary, "storage_throughput_tokens_per_sec"))
                wrap = throttles[cap].wrap
                size, loops = ksb.entry_pattern(summary)
                nfiles = max(1, int(cap * MIB * 2 / size / a.users))
                f["fio_whole"].append(fio_pattern(os.path.join(base, "fio"), size, nfiles,
                                                  a.users, loops, wrap=wrap))
                root = os.path.join(base, "iomc")
                shutil.rmtree(root, ignore_errors=True)
                os.makedirs(root)
                c, _ = iomimic_chunked(a, root, os.path.join(a.tmp, "out-chunked"), trace, 256,
                                       a.io_threads,
                                       ["++workload.kv_cache.max_inflight_requests=16",
                                        "++workload.kv_cache.tensor_parallel=2",
                                        "++workload.kv_cache.num_gpus=2",
                                        "++workload.kv_cache.prefill_tokens_per_second=1e6"],
                                       model="tiny-1b", storage=latency_storage(cap))
                shutil.rmtree(root, ignore_errors=True)
                f["chunked"].append(chunked_tokens_per_second(c, 24576 // 2))  # tiny-1b, TP 2
                size, loops = chunked_pattern(c, a.io_threads)
                nfiles = max(1, int(cap * MIB * 2 / size / a.io_threads))
                f["fio_chunked"].append(fio_pattern(os.path.join(base, "fio"), size, nfiles,
                                                    a.io_threads, loops, wrap=wrap))
                if a.reference:
                    ref = ksb.run_reference(a, os.path.join(base, "ref"), wrap, a.requests)
                    f["reference"].append(ref["summary"]["storage_throughput_tokens_per_sec"])
                print("round %d, %d MiB/s: %s" % (rnd + 1, cap, {k: round(v[-1], 2) for k, v in
                                                               f.items() if v}), flush=True)
    finally:
        for t in throttles.values():
            t.remove()
    lo, hi = min(caps_), max(caps_)

    def ratios(k):
        return [h / l for h, l in zip(fig[hi][k], fig[lo][k])]

    lines += ["## Storage tokens/s under two bandwidth caps", "",
              "Caps: the latency decorator's `bandwidth` (inner posix, on the disk under "
              "--work) for iomimic; a cgroup blkio throttle of the same MiB/s (reads and "
              "writes) on the same disk for fio and the reference, which cannot load a "
              "storage plugin. (fio's own `rate` option lets each job's first I/O through "
              "undelayed: with a few objects per job it overstated the slow cap by half.) "
              "Load before: %s." % a.load_before, "",
              "| cap MiB/s | whole tok/s | fio (whole's pattern) MiB/s | reference tok/s | "
              "chunked tok/s | fio (chunked's pattern) MiB/s |",
              "|---:|---:|---:|---:|---:|---:|"]
    for cap in caps_:
        f = fig[cap]
        cell = lambda k, fmt="%.1f": benchlib.spread(f[k], fmt) if f[k] else "not run"
        lines.append("| %d | %s | %s | %s | %s | %s |" % (
            cap, cell("whole"), cell("fio_whole"), cell("reference", "%.2f"), cell("chunked"),
            cell("fio_chunked")))
    lines += ["", "Fast cap over slow cap, per round, median (min-max):", "",
              "| | ratio | / fio's ratio (same pattern, same cap) |", "|---|---:|---:|"]
    for k, peer in (("whole", "fio_whole"), ("reference", "fio_whole"),
                    ("chunked", "fio_chunked")):
        if not fig[lo][k]:
            lines.append("| %s | not run | |" % k)
            continue
        rel = [x / y for x, y in zip(ratios(k), ratios(peer))]
        lines.append("| %s | %s | %s |" % (k, benchlib.spread(ratios(k), "%.2f"),
                                           benchlib.spread(rel, "%.2f")))
    lines += ["", "Target: iomimic's ratio within 10 % of fio's (0.90-1.10 in the last "
              "column).", ""]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iomimic", default=os.path.join(ROOT, "build", "bin", "iomimic"))
    ap.add_argument("--work", default="/var/tmp/iomimic-kv-chunked")
    ap.add_argument("--shm", default="/dev/shm/iomimic-kv-chunked")
    ap.add_argument("--sizes", default="2,8,32,80", help="chunk sizes, MiB")
    ap.add_argument("--depths", default="1,4,16", help="I/O threads = fio jobs")
    ap.add_argument("--rounds", type=int, default=4,
                    help="rounds; the order of the writers rotates by one each round")
    ap.add_argument("--volume-mib", default="512,256",
                    help="MiB per phase on tmpfs, on disk (at least 2 chunks per thread)")
    ap.add_argument("--media", default="tmpfs,disk")
    ap.add_argument("--settle", type=float, default=1.0)
    ap.add_argument("--caps", default="40,120", help="MiB/s")
    ap.add_argument("--reference", help="the reference's kv_cache_benchmark folder")
    ap.add_argument("--ref-users", type=int, default=6)
    ap.add_argument("--requests", type=int, default=40,
                    help="requests of each whole-layout run (both caps serve the same)")
    ap.add_argument("--chunked-requests", type=int, default=20)
    ap.add_argument("--io-threads", type=int, default=8, help="chunked runs under the caps")
    ap.add_argument("--model", default="tiny-1b")
    ap.add_argument("--parts", default="bandwidth,cpu,caps")
    ap.add_argument("--record", action="store_true")
    a = ap.parse_args()
    a.volumes = [int(v) for v in a.volume_mib.split(",")]
    a.capacity_gb, a.scale_templates = 4, 16
    a.tmp = os.path.join(a.work, "tmp")
    os.makedirs(a.tmp, exist_ok=True)
    if a.reference:
        a.reference = os.path.abspath(a.reference)
    if "caps" in a.parts and os.geteuid() != 0:
        sys.exit("the caps part needs root (cgroup throttles)")
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    a.load_before = benchlib.loadavg()
    lines = ["# KV-cache chunked mode against fio (bench/kvcache_chunked_vs_fio.py)", "",
             "iomimic %s; %s; load before: %s; %d rounds, the tools' order alternating." % (
                 commit, benchlib.machine(with_fio=True), a.load_before, a.rounds), ""]
    parts = a.parts.split(",")
    if "bandwidth" in parts:
        bandwidth(a, lines)
    if "cpu" in parts:
        write_cpu(a, lines)
    if "caps" in parts:
        caps(a, lines)
    lines.append("Load after: %s." % benchlib.loadavg())
    shutil.rmtree(a.tmp, ignore_errors=True)
    text = "\n".join(lines) + "\n"
    print(text)
    if a.record:
        with open(os.path.join(HERE, "results", "kvcache_chunked_vs_fio.md"), "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
