#!/usr/bin/python3
"""End-to-end checks of the shard formats of issue 34 (docs/formats.md,
"webdataset" and "mds") and of the shard_cache decorator, run by ctest.

Usage: shard_format_tests.py <test-name> --iomimic BIN --source DIR --work DIR

- webdataset_epoch_reads_each_shard_once: strace sees every shard opened
  once per epoch and read front to back in requests of reader.transfer_size
  at offsets 0, T, 2T, ..., its bytes exactly once;
- webdataset_shuffle_buffer: with reader.sample_shuffle on, the samples
  reach the batches (iomimic.sample_log) in the order of webdataset's
  shuffle(reader.shuffle_size): a permutation of the stream in which no
  sample comes more than shuffle_size - 1 positions early, the first once
  min(100, shuffle_size) are buffered, the same with and without reader
  threads; shuffle_size 0 and 1 keep the stream order;
- mds_cache_downloads_touched_shards: through shard_cache, each touched
  shard (and its index) is downloaded once while it stays cached, an evicted
  one again, and the cache never holds more than its capacity;
- shard_formats_refuse_bad_input: a bad tar header checksum, a truncated
  tar member, an MDS index that disagrees with its shard and a cut MDS shard
  each stop a run with one error line naming the file and an offset;
- shuffle_buffer_error_never_hangs: a truncated shard read through the
  shuffle buffer stops every one of 60 runs (1 and 2 reader threads,
  prefetch 1 and 4) with its one error line within 30 s.
"""

import glob
import json
import os
import re

import iomimic_tests as harness
from iomimic_tests import fail, run
from observability_tests import STRACE_LINE


def args():
    return harness.ARGS


def summary(out):
    with open(os.path.join(out, "summary.json")) as f:
        return json.load(f)


def overrides(fmt, data, out, files, samples, epochs=1, extra=()):
    return [
        "workload=quickstart",
        "++workload.dataset.format=" + fmt,
        "++workload.dataset.data_folder=" + data,
        "++workload.output.folder=" + out,
        "++workload.dataset.num_files_train=%d" % files,
        "++workload.dataset.num_files_eval=0",
        "++workload.dataset.num_subfolders_train=0",
        "++workload.dataset.num_samples_per_file=%d" % samples,
        "++workload.dataset.record_length_bytes=4096",
        "++workload.dataset.record_length_bytes_stdev=0",
        "++workload.workflow.evaluation=False",
        "++workload.train.epochs=%d" % epochs,
        "++workload.train.computation_time=0",
        "++workload.reader.batch_size=4",
        # The cache check's residency opens are no storage I/O.
        "++workload.iomimic.cache_check_files=0",
    ] + list(extra)


def data_files(data, pattern):
    return sorted(f for f in glob.glob(os.path.join(data, "train", pattern)) if os.path.isfile(f))


# strace -f -y -s 0 lines: "<tid> pread64(<fd></path>, ""..., <count>, <offset>) = <n>",
# possibly split into "<unfinished ...>" and "<... pread64 resumed>" halves.
STRACE_RESUMED = re.compile(r"^<\.\.\. (\w+) resumed>(.*)$")
PREAD = re.compile(r"^pread64\(\d+<([^>]*)>, .*, (\d+), (\d+)\)\s+=\s+(-?\d+)")
OPENAT = re.compile(r"^openat\(.*\)\s+=\s+\d+<([^>]*)>")


def strace_shard_io(log, folder):
    """Per file below `folder`: the opens and, per open, the (offset,
    count, returned) of its preads in order."""
    per_file = {}
    current = {}  # path -> the list of the open being read
    pending = {}
    with open(log, errors="replace") as f:
        for line in f:
            m = STRACE_LINE.match(line.rstrip("\n"))
            if not m:
                continue
            tid, rest = m.group(1), m.group(2)
            r = STRACE_RESUMED.match(rest)
            if r:
                if tid not in pending:
                    continue
                rest = pending.pop(tid) + r.group(2)
            elif rest.endswith("<unfinished ...>"):
                pending[tid] = rest[:-len("<unfinished ...>")]
                continue
            o = OPENAT.match(rest)
            if o and o.group(1).startswith(folder):
                reads = []
                per_file.setdefault(o.group(1), []).append(reads)
                current[o.group(1)] = reads
                continue
            p = PREAD.match(rest)
            if p and p.group(1).startswith(folder):
                if p.group(1) not in current:
                    fail("strace: a pread of %s before any open of it" % p.group(1))
                current[p.group(1)].append((int(p.group(3)), int(p.group(2)), int(p.group(4))))
    return per_file


def test_webdataset_epoch_reads_each_shard_once():
    """Every shard is opened once per epoch and its bytes read once, in
    order, in transfer-size requests (the configured size and the default,
    tarfile's 10240), whatever the reader threads and the shard order."""
    data = os.path.join(args().work, "data")
    files, samples, epochs = 6, 20, 2
    gen = overrides("webdataset", data, os.path.join(args().work, "gen"), files, samples)
    run([args().iomimic, "generate", "-q"] + gen)
    shards = data_files(data, "*.tar")
    if len(shards) != files:
        fail("expected %d shards, found %s" % (files, shards))
    sizes = {os.path.realpath(s): os.path.getsize(s) for s in shards}
    folder = os.path.realpath(data) + os.sep
    for transfer in (16384, 0):
        expected_request = transfer or 10240
        out = os.path.join(args().work, "out_%d" % transfer)
        log = os.path.join(args().work, "strace_%d.log" % transfer)
        run(["strace", "-f", "-y", "-s", "0", "-o", log, "-e", "trace=openat,pread64",
             args().iomimic, "run", "-q"] + overrides(
                 "webdataset", data, out, files, samples, epochs,
                 ["++workload.workflow.generate_data=False",
                  "++workload.storage.backend=posix",
                  "++workload.reader.read_threads=2",
                  "++workload.reader.file_shuffle=seed",
                  "++workload.reader.sample_shuffle=seed",
                  "++workload.reader.transfer_size=%d" % transfer]))
        seen = strace_shard_io(log, folder)
        if set(seen) != set(sizes):
            fail("transfer %d: strace saw shards %s, expected %s" %
                 (transfer, sorted(seen), sorted(sizes)))
        requests = 0
        for path, opens in sorted(seen.items()):
            if len(opens) != epochs:
                fail("%s opened %d times in %d epochs" % (path, len(opens), epochs))
            for reads in opens:
                offsets = [r[0] for r in reads]
                want = list(range(0, sizes[path], expected_request))
                if offsets != want:
                    fail("%s: read at offsets %s, expected %s" % (path, offsets[:8], want[:8]))
                if any(r[1] != expected_request for r in reads):
                    fail("%s: request sizes %s, expected %d" %
                         (path, sorted({r[1] for r in reads}), expected_request))
                if sum(r[2] for r in reads) != sizes[path]:
                    fail("%s: %d bytes read in one pass of a %d-byte shard" %
                         (path, sum(r[2] for r in reads), sizes[path]))
                requests += len(reads)
        io = summary(out)["iomimic"]
        if io["bytes_read"] != epochs * sum(sizes.values()):
            fail("bytes_read %d, expected %d epochs of %d bytes" %
                 (io["bytes_read"], epochs, sum(sizes.values())))
        print("transfer %d: %d shards x %d epochs, %d bytes and %d requests of %d bytes, each "
              "shard once per epoch" % (transfer, files, epochs, epochs * sum(sizes.values()),
                                        requests, expected_request))


def sample_order(out):
    """(file, sample) per batch position, from <id>_samples.csv."""
    with open(os.path.join(out, "0_samples.csv")) as f:
        rows = [line.strip().split(",") for line in f][1:]
    return [(int(r[3]), int(r[4])) for r in rows if r[1] == "train"]


def test_webdataset_shuffle_buffer():
    data = os.path.join(args().work, "data")
    files, samples = 6, 20
    total = files * samples
    run([args().iomimic, "generate", "-q"] +
        overrides("webdataset", data, os.path.join(args().work, "gen"), files, samples))
    orders = {}
    for size in (0, 1, 7, 64):
        for threads in (0, 1):
            out = os.path.join(args().work, "shuf_%d_%d" % (size, threads))
            run([args().iomimic, "run", "-q"] + overrides(
                "webdataset", data, out, files, samples, 1,
                ["++workload.workflow.generate_data=False",
                 "++workload.reader.read_threads=%d" % threads,
                 "++workload.reader.file_shuffle=off",
                 "++workload.reader.sample_shuffle=seed",
                 "++workload.reader.shuffle_size=%d" % size,
                 "++workload.iomimic.sample_log=True"]))
            # With the files in order, stream position = file * samples + sample.
            read = [f * samples + k for f, k in sample_order(out)]
            if sorted(read) != list(range(total)):
                fail("shuffle_size %d, %d threads: batches hold %d samples, not a permutation "
                     "of the %d streamed" % (size, threads, len(read), total))
            if size <= 1:
                if read != list(range(total)):
                    fail("shuffle_size %d: order %s, expected the stream order" %
                         (size, read[:12]))
            else:
                early = [(e, p) for e, p in enumerate(read) if p > e + size - 1]
                if early:
                    fail("shuffle_size %d: samples more than %d positions early (batch "
                         "position, stream position): %s" % (size, size - 1, early[:5]))
                initial = min(100, size)
                if read[0] >= initial + initial % 2:
                    fail("shuffle_size %d: the first sample is stream position %d, beyond the "
                         "first %d buffered" % (size, read[0], initial))
                moved = sum(1 for e, p in enumerate(read) if e != p)
                if moved < total // 2:
                    fail("shuffle_size %d: only %d of %d samples moved" % (size, moved, total))
            orders[(size, threads)] = read
        if orders[(size, 0)] != orders[(size, 1)]:
            fail("shuffle_size %d: the order differs with a reader thread" % size)
        print("shuffle_size %d: %s ..." % (size, orders[(size, 0)][:10]))


def cache_run(data, out, files, samples, epochs, capacity, extra=()):
    cache = os.path.join(args().work, "cache")
    p = run([args().iomimic, "run", "-q"] + overrides(
        "mds", data, out, files, samples, epochs,
        ["++workload.workflow.generate_data=False",
         "++workload.storage.backend=shard_cache",
         "++workload.storage.options.inner=posix",
         "++workload.storage.options.cache_dir=" + cache,
         "++workload.storage.options.capacity=%d" % capacity,
         "++workload.storage.options.report=true",
         "++workload.reader.read_threads=1"] + list(extra)))
    storage = summary(out)["iomimic"]["plugins"]["storage"]
    if storage["name"] != "shard_cache":
        fail("the run used storage %s" % storage["name"])
    if "iomimic: shard_cache: rank 0: downloaded" not in p.stderr:
        fail("report=true printed no statistics line")
    if os.path.exists(cache) and os.listdir(cache):
        fail("the cache folder was left behind: %s" % os.listdir(cache))
    return storage["statistics"]


def test_mds_cache_downloads_touched_shards():
    """Samples read in file order with room for 3 shards: each shard and its
    index downloaded once, the shards evicted in turn, the cache never over
    its capacity; with room for all and shuffled samples over 2 epochs, every
    shard downloaded once, then only hits."""
    data = os.path.join(args().work, "data")
    files, samples = 6, 16
    run([args().iomimic, "generate", "-q"] + overrides(
        "mds", data, os.path.join(args().work, "gen"), files, samples))
    shards = data_files(data, "*.mds")
    indexes = sorted(glob.glob(os.path.join(data, "train", "*", "index.json")))
    if len(shards) != files or len(indexes) != files:
        fail("expected %d shards and indexes: %s %s" % (files, shards, indexes))
    shard_bytes = sum(os.path.getsize(s) for s in shards)
    index_bytes = sum(os.path.getsize(i) for i in indexes)
    capacity = 3 * os.path.getsize(shards[0]) + 4096
    s = cache_run(data, os.path.join(args().work, "in_order"), files, samples, 1, capacity,
                  ["++workload.reader.sample_shuffle=off", "++workload.reader.file_shuffle=off"])
    if s["shard_cache_downloads"] != 2 * files:
        fail("in order: %d downloads, expected %d shards and their indexes" %
             (s["shard_cache_downloads"], files))
    if s["shard_cache_download_bytes"] != shard_bytes + index_bytes:
        fail("in order: downloaded %d bytes, the shards and indexes hold %d" %
             (s["shard_cache_download_bytes"], shard_bytes + index_bytes))
    if s["shard_cache_peak_bytes"] > capacity or s["shard_cache_evictions"] < files - 3:
        fail("in order: peak %d of capacity %d, %d evictions" %
             (s["shard_cache_peak_bytes"], capacity, s["shard_cache_evictions"]))
    # One open per sample: all but each shard's first are hits.
    if s["shard_cache_hits"] != files * samples - files:
        fail("in order: %d hits, expected %d" % (s["shard_cache_hits"], files * samples - files))
    print("in order: %s" % json.dumps(s, sort_keys=True))

    big = shard_bytes + index_bytes + 4096
    s = cache_run(data, os.path.join(args().work, "shuffled"), files, samples, 2, big,
                  ["++workload.reader.sample_shuffle=seed", "++workload.reader.file_shuffle=seed"])
    if s["shard_cache_downloads"] != 2 * files or s["shard_cache_evictions"] != 0:
        fail("shuffled: %d downloads and %d evictions, expected %d and 0" %
             (s["shard_cache_downloads"], s["shard_cache_evictions"], 2 * files))
    if s["shard_cache_hits"] != 2 * files * samples - files:
        fail("shuffled: %d hits over 2 epochs, expected %d" %
             (s["shard_cache_hits"], 2 * files * samples - files))
    print("shuffled, 2 epochs: %s" % json.dumps(s, sort_keys=True))

    # Less room than the one shard being read: refused, naming the file.
    out = os.path.join(args().work, "too_small")
    p = run([args().iomimic, "run", "-q"] + overrides(
        "mds", data, out, files, samples, 1,
        ["++workload.workflow.generate_data=False", "++workload.storage.backend=shard_cache",
         "++workload.storage.options.cache_dir=" + os.path.join(args().work, "cache"),
         "++workload.storage.options.capacity=%d" % (os.path.getsize(shards[0]) // 2)]),
        expect_ok=False)
    if p.returncode == 0 or "does not fit the cache's capacity" not in p.stderr:
        fail("a shard larger than the cache must be refused:\n" + p.stderr)


def damage_cases():
    """(format, file pattern, case name, function(victim path, data folder))."""
    def flip_checksum(victim, data):
        b = bytearray(open(victim, "rb").read())
        b[512 * 2 + 3] ^= 1  # the second member's name: its header checksum fails
        open(victim, "wb").write(bytes(b))

    def cut_member(victim, data):
        b = open(victim, "rb").read()
        open(victim, "wb").write(b[:512 * 3 + 1000])  # inside the first .npy member

    def index_disagrees(victim, data):
        index = os.path.join(os.path.dirname(victim),
                             os.path.basename(victim)[:-len(".mds")], "index.json")
        obj = json.load(open(index))
        obj["shards"][0]["samples"] += 1
        json.dump(obj, open(index, "w"), sort_keys=True)

    def cut_shard(victim, data):
        b = open(victim, "rb").read()
        open(victim, "wb").write(b[:len(b) * 3 // 5])

    return [("webdataset", "*.tar", "bad header checksum", flip_checksum),
            ("webdataset", "*.tar", "truncated member", cut_member),
            ("mds", "*.mds", "index disagrees", index_disagrees),
            ("mds", "*.mds", "truncated shard", cut_shard)]


def test_shard_formats_refuse_bad_input():
    """Each damage stops the run with exactly one error line that names the
    damaged file and an offset, and a failed status."""
    checked = []
    for fmt, pattern, name, damage in damage_cases():
        tag = "%s-%s" % (fmt, name.replace(" ", "-"))
        data = os.path.join(args().work, tag, "data")
        gen = overrides(fmt, data, os.path.join(args().work, tag, "gen"), 4, 4,
                        extra=["++workload.reader.read_threads=1"])
        run([args().iomimic, "generate", "-q"] + gen)
        victim = data_files(data, pattern)[0]
        damage(victim, data)
        out = os.path.join(args().work, tag, "out")
        p = run([args().iomimic, "run"] + overrides(
            fmt, data, out, 4, 4, extra=["++workload.workflow.generate_data=False",
                                         "++workload.reader.read_threads=1"]), expect_ok=False)
        lines = [l for l in p.stderr.splitlines() if l.startswith("iomimic: error:")]
        if p.returncode <= 0 or len(lines) != 1:
            fail("%s: expected one error line and a non-zero exit, got rc=%d:\n%s" %
                 (tag, p.returncode, p.stderr))
        if os.path.basename(victim) not in lines[0] or "offset" not in lines[0]:
            fail("%s: the error must name the file and an offset: %s" % (tag, lines[0]))
        with open(os.path.join(out, "status.json")) as f:
            if json.load(f)["status"] != "failed":
                fail("%s: status.json must say failed" % tag)
        checked.append("%s: %s" % (tag, lines[0].split(": ", 2)[-1][:160]))
    print("\n".join(checked))


def test_shuffle_buffer_error_never_hangs():
    """A reader that fails behind the shuffle buffer hands its error to the
    consumer's first step that is not ready. It used to publish the error as
    the consumer's current step, which raced with the consumer taking that
    step when it was already complete: the error landed in a slot no step
    read and the run waited for ever (about 1 run in 40 in the clean CI's
    integration.format_corruption, which hung there). Each run below must
    end with the one error line; a hang is a timeout."""
    import subprocess
    data = os.path.join(args().work, "data")
    run([args().iomimic, "generate", "-q"] + overrides(
        "webdataset", data, os.path.join(args().work, "gen"), 4, 4,
        extra=["++workload.reader.read_threads=1"]))
    victim = data_files(data, "*.tar")[0]
    b = open(victim, "rb").read()
    open(victim, "wb").write(b[:len(b) * 3 // 5])
    runs = 0
    for threads in (1, 2):
        for prefetch in (1, 4):
            for i in range(15):
                out = os.path.join(args().work, "out-%d-%d-%d" % (threads, prefetch, i))
                cmd = [args().iomimic, "run"] + overrides(
                    "webdataset", data, out, 4, 4, extra=[
                        "++workload.workflow.generate_data=False",
                        "++workload.reader.batch_size=1",
                        "++workload.reader.read_threads=%d" % threads,
                        "++workload.reader.prefetch_size=%d" % prefetch])
                try:
                    p = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
                except subprocess.TimeoutExpired:
                    fail("run %d (read_threads %d, prefetch %d) hung on the truncated shard" %
                         (runs, threads, prefetch))
                lines = [l for l in p.stderr.splitlines() if l.startswith("iomimic: error:")]
                if p.returncode <= 0 or len(lines) != 1 or os.path.basename(victim) not in lines[0]:
                    fail("run %d: rc=%d, expected one error line naming %s:\n%s" %
                         (runs, p.returncode, victim, p.stderr))
                runs += 1
    print("%d runs, each stopped by the one error" % runs)


if __name__ == "__main__":
    harness.main(globals())
