#!/usr/bin/python3
"""Access-pattern fidelity: one training epoch of iomimic under `strace -f`
makes, per sample, the reads DLIO makes (docs/dlio-compat.md §2.4: DLIO 2.x
with CPython 3.11, numpy 1.24, Pillow 9.4, h5py 3.7 / HDF5 1.10), within 5% on the read count, the read-size histogram (Darshan's
buckets, by bytes returned) and the bytes read per sample. The datasets are
the reference runs' shapes with fewer files (per-sample figures do not
depend on the file count). Run by ctest.

Usage: fidelity_tests.py <test-name> --iomimic BIN --source DIR --work DIR
"""

import collections
import json
import os
import re

import iomimic_tests as harness
from iomimic_tests import fail, mpirun, run


def args():
    return harness.ARGS


# Upper edges (inclusive) of the reference's read-size buckets: 0-100 B,
# 100 B-1 KiB, 1-10 KiB, 10-100 KiB, 100 KiB-1 MiB, 1-4 MiB, 4-10 MiB,
# 10-100 MiB, and above.
EDGES = [100, 1024, 10 * 1024, 100 * 1024, 1 << 20, 4 << 20, 10 << 20, 100 << 20]
BUCKETS = ["0-100B", "100B-1K", "1-10K", "10-100K", "100K-1M", "1-4M", "4-10M", "10-100M", ">100M"]

# The reference tables, per sample (= per open-close span).
REFERENCE = {
    # unet3d_small: 64 files x 1 sample of 4 MiB, 4,194,802 B files.
    "npz": {"reads": 41, "hist": [3, 2, 20, 0, 16, 0, 0, 0, 0], "bytes": 4207278},
    # 16 files x 4 samples of 1 MiB: the whole file is read per sample.
    "npz4": {"reads": 41, "hist": [3, 2, 20, 0, 16, 0, 0, 0, 0], "bytes": 4207302},
    # resnet50_small: epoch totals over 2,048 samples (2,047 of them 3 reads).
    "jpeg": {"reads": 6208 / 2048, "hist": [2111 / 2048, 1 / 2048, 1, 1, 0, 0, 0, 0, 0],
             "bytes": 133992038 / 2048},
    # resnet-like hdf5: 16 files x 128 samples of 338 x 338 uint8.
    "hdf5": {"reads": 6, "hist": [3, 2, 0, 0, 1, 0, 0, 0, 0], "bytes": 115324},
}

# Runs under strace leave out the cache check's residency measurement, which
# opens training files without reading them and which DLIO does not make
# (docs/cluster.md "Cache honesty").
NO_CACHE_CHECK = "++workload.iomimic.cache_check_files=0"

RESULT = re.compile(r"\)\s+=\s+(-?\d+)")
FD_PATH = re.compile(r"^\s*-?\d+<([^>]*)>")


def bucket(n):
    for i, edge in enumerate(EDGES):
        if n <= edge:
            return i
    return len(EDGES)


def strace_profile(log, folder):
    """Per data file below `folder`: opens, reads (read/pread64), the read
    sizes returned, and fstat calls, from an `strace -f -y` log."""
    stats = {"opens": 0, "reads": 0, "bytes": 0, "hist": [0] * len(BUCKETS), "fstat": 0,
             "lseek": 0, "sizes": collections.Counter(), "offsets": []}
    for call, text in harness.strace_calls(log):
        res = RESULT.search(text)
        if not res:
            continue
        value = int(res.group(1))
        if call == "openat":
            # -y prints the path behind the returned descriptor.
            p = re.search(r"=\s+\d+<([^>]*)>", text)
            if value >= 0 and p and p.group(1).startswith(folder):
                stats["opens"] += 1
            continue
        fd = FD_PATH.match(text)
        if not fd or not fd.group(1).startswith(folder):
            continue
        if call in ("read", "pread64") and value >= 0:
            stats["sizes"][value] += 1
            if call == "pread64":
                off = re.search(r",\s*(\d+)\)\s+=", text)
                if off:
                    stats["offsets"].append((fd.group(1), int(off.group(1)), value))
            stats["reads"] += 1
            stats["bytes"] += value
            stats["hist"][bucket(value)] += 1
        elif call in ("fstat", "newfstatat"):
            stats["fstat"] += 1
        elif call == "lseek":
            stats["lseek"] += 1
    return stats


def run_epoch(name, dataset, reader):
    """Generates `dataset`, then runs one epoch under strace; returns the
    per-sample profile."""
    work = os.path.join(args().work, name)
    data = os.path.join(work, "data")
    out = os.path.join(work, "out")
    ov = ["workload=quickstart", "++workload.framework=pytorch",
          "++workload.reader.data_loader=pytorch",
          "++workload.dataset.data_folder=" + data,
          "++workload.dataset.num_files_eval=0",
          "++workload.dataset.num_subfolders_train=0",
          "++workload.dataset.record_length_bytes_stdev=0",
          "++workload.workflow.evaluation=False",
          "++workload.workflow.checkpoint=False",
          "++workload.train.epochs=1",
          "++workload.train.computation_time=0",
          "++workload.reader.read_threads=2",
          "++workload.reader.file_shuffle=off",
          "++workload.reader.sample_shuffle=off",
          "++workload.output.folder=" + out] + dataset + reader
    run([args().iomimic, "generate", "-q"] + ov + ["++workload.workflow.generate_data=True"])
    log = os.path.join(work, "strace.log")
    run(["strace", "-f", "-y", "-s", "0", "-o", log, "-e",
         "trace=openat,read,pread64,close,lseek,fstat,newfstatat", args().iomimic, "run", "-q"] +
        ov + ["++workload.workflow.generate_data=False", NO_CACHE_CHECK])
    folder = os.path.realpath(data) + os.sep
    s = strace_profile(log, folder)
    if s["opens"] == 0:
        fail("%s: strace saw no data file opened" % name)
    n = s["opens"]
    return {"samples": n, "reads": s["reads"] / n, "bytes": s["bytes"] / n,
            "hist": [h / n for h in s["hist"]], "fstat": s["fstat"] / n, "lseek": s["lseek"] / n}


def compare(name, ref, mine, tolerance=0.05):
    """Fails unless read count, every bucket and bytes are within
    `tolerance` of the reference (a bucket: of the reference's read count)."""
    print("%s: %d samples; per sample: reads %.3f (reference %.3f), bytes %.1f (reference %.1f), "
          "fstat %.2f, lseek %.2f" % (name, mine["samples"], mine["reads"], ref["reads"],
                                      mine["bytes"], ref["bytes"], mine["fstat"], mine["lseek"]))
    print("  %-8s %10s %10s" % ("bucket", "iomimic", "DLIO"))
    for b, m, r in zip(BUCKETS, mine["hist"], ref["hist"]):
        print("  %-8s %10.3f %10.3f" % (b, m, r))
    problems = []
    if abs(mine["reads"] - ref["reads"]) > tolerance * ref["reads"]:
        problems.append("reads per sample %.3f, reference %.3f" % (mine["reads"], ref["reads"]))
    if abs(mine["bytes"] - ref["bytes"]) > tolerance * ref["bytes"]:
        problems.append("bytes per sample %.1f, reference %.1f" % (mine["bytes"], ref["bytes"]))
    for b, m, r in zip(BUCKETS, mine["hist"], ref["hist"]):
        if abs(m - r) > tolerance * ref["reads"]:
            problems.append("bucket %s: %.3f reads per sample, reference %.3f" % (b, m, r))
    if problems:
        fail("%s differs from DLIO's pattern: %s" % (name, "; ".join(problems)))


def npz_dataset(files, spf, dims):
    return ["++workload.dataset.format=npz",
            "++workload.dataset.num_files_train=%d" % files,
            "++workload.dataset.num_samples_per_file=%d" % spf,
            "++workload.dataset.record_dims=[%s]" % ",".join(str(d) for d in dims),
            "++workload.dataset.record_length_bytes=%d" % eval("*".join(str(d) for d in dims)),
            "++workload.dataset.record_element_type=uint8"]


def test_fidelity_npz():
    """unet3d_small's npz files (4 MiB uint8 2048x2048, one sample each),
    and the 4-samples-per-file variant (1 MiB samples): DLIO's 41 reads,
    20 of 4 KiB and 16 of about 252 KiB, and the whole file per sample."""
    mine = run_epoch("npz", npz_dataset(8, 1, [2048, 2048]), ["++workload.reader.batch_size=4"])
    compare("npz (unet3d_small)", REFERENCE["npz"], mine)
    if abs(mine["fstat"] - 2) > 0.1:
        fail("npz: %.2f fstat per sample, DLIO makes 2" % mine["fstat"])
    mine = run_epoch("npz4", npz_dataset(4, 4, [1024, 1024]), ["++workload.reader.batch_size=4"])
    compare("npz (4 samples per file)", REFERENCE["npz4"], mine)


def test_fidelity_npz_patterns():
    """read_pattern direct keeps numpy's unbuffered 256 KiB requests (22
    per 4 MiB file) and whole reads each file in one request: both differ
    from the default's 41, so the option selects what it says."""
    direct = run_epoch("npz_direct", npz_dataset(4, 1, [2048, 2048]),
                       ["++workload.reader.batch_size=4", "++workload.dataset.read_pattern=direct"])
    print("direct: %.2f reads, %.0f bytes per sample" % (direct["reads"], direct["bytes"]))
    if not 20 <= direct["reads"] <= 24 or direct["hist"][4] < 15:
        fail("read_pattern direct: %.2f reads per sample, histogram %s" %
             (direct["reads"], direct["hist"]))
    whole = run_epoch("npz_whole", npz_dataset(4, 1, [2048, 2048]),
                      ["++workload.reader.batch_size=4", "++workload.dataset.read_pattern=whole"])
    print("whole: %.2f reads, %.0f bytes per sample" % (whole["reads"], whole["bytes"]))
    if whole["reads"] != 1 or whole["hist"][6] != 1:
        fail("read_pattern whole: %.2f reads per sample, histogram %s" %
             (whole["reads"], whole["hist"]))


def test_fidelity_jpeg():
    """resnet50_small's JPEG files (about 64 KiB each): 4 KiB, the rest of
    the file, and a read at the end that returns 0."""
    mine = run_epoch("jpeg", [
        "++workload.dataset.format=jpeg",
        "++workload.dataset.num_files_train=128",
        "++workload.dataset.num_samples_per_file=1",
        # 337 x 337 greyscale pixels: iomimic's JPEGs of them are about
        # 64.3 KB, near the reference's files (65,208-65,661 B; mean 65,426).
        "++workload.dataset.record_length_bytes=113569",
    ], ["++workload.reader.batch_size=64"])
    compare("jpeg (resnet50_small)", REFERENCE["jpeg"], mine)


def test_fidelity_hdf5():
    """The resnet-like HDF5 files (128 samples of 338x338 uint8 per file):
    5 metadata reads and exactly one sample per open."""
    mine = run_epoch("hdf5", [
        "++workload.dataset.format=hdf5",
        "++workload.dataset.num_files_train=2",
        "++workload.dataset.num_samples_per_file=128",
        "++workload.dataset.record_dims=[338,338]",
        "++workload.dataset.record_length_bytes=114244",
        "++workload.dataset.record_element_type=uint8",
    ], ["++workload.reader.batch_size=64"])
    compare("hdf5 (resnet-like)", REFERENCE["hdf5"], mine)



# Workload vocabulary beyond DLIO (iomimic.read_once, startup_load, replicate,
# random_read_bytes) and the seed applications of workloads/.

def small_run(name, dataset, extra, ranks=1, strace=False):
    """Generates and runs a small npz-or-other dataset; returns the run
    folder and, with strace, the profile of the data files."""
    work = os.path.join(args().work, name)
    data = os.path.join(work, "data")
    out = os.path.join(work, "out")
    ov = ["workload=quickstart", "++workload.dataset.data_folder=" + data,
          "++workload.dataset.num_files_eval=0", "++workload.dataset.num_subfolders_train=0",
          "++workload.dataset.record_length_bytes_stdev=0",
          "++workload.workflow.evaluation=False", "++workload.train.computation_time=0",
          "++workload.reader.file_shuffle=off", "++workload.reader.sample_shuffle=off",
          "++workload.iomimic.sample_log=True", "++workload.iomimic.io_counters_top=0",
          "++workload.output.folder=" + out] + dataset + extra
    run([args().iomimic, "generate", "-q"] + ov + ["++workload.workflow.generate_data=True"])
    ov = ov + ["++workload.workflow.generate_data=False"]
    profile = None
    if strace:
        log = os.path.join(work, "strace.log")
        run(["strace", "-f", "-y", "-s", "0", "-o", log, "-e",
             "trace=openat,read,pread64,close", args().iomimic, "run", "-q"] + ov +
            [NO_CACHE_CHECK])
        profile = strace_profile(log, os.path.realpath(data) + os.sep)
    elif ranks > 1:
        mpirun(ranks, [args().iomimic, "run", "-q"] + ov)
    else:
        run([args().iomimic, "run", "-q"] + ov)
    return out, profile


def samples_read(out, rank):
    """The (epoch, file, sample) rows of <rank>_samples.csv."""
    import csv
    with open(os.path.join(out, "%d_samples.csv" % rank), newline="") as f:
        return [tuple(r.get(k) for k in ("epoch", "file", "sample")) for r in csv.DictReader(f)]


def summary(out):
    with open(os.path.join(out, "summary.json")) as f:
        return json.load(f)


NPZ_SMALL = ["++workload.dataset.format=npz", "++workload.dataset.num_files_train=8",
             "++workload.dataset.num_samples_per_file=1",
             "++workload.dataset.record_length_bytes=65536",
             "++workload.reader.batch_size=2", "++workload.reader.read_threads=1"]


def test_vocabulary_read_once():
    """iomimic.read_once: 3 epochs read the dataset once (the opens and
    bytes of one epoch), yet every epoch runs all its steps."""
    out, p = small_run("read_once", NPZ_SMALL, ["++workload.train.epochs=3",
                                                 "++workload.iomimic.read_once=True"],
                       strace=True)
    _, once = small_run("read_once_ref", NPZ_SMALL, ["++workload.train.epochs=1"], strace=True)
    print("read_once: %d opens, %d bytes over 3 epochs; one epoch: %d opens, %d bytes" %
          (p["opens"], p["bytes"], once["opens"], once["bytes"]))
    if p["opens"] != once["opens"] or p["bytes"] != once["bytes"]:
        fail("read_once: 3 epochs made %d opens / %d bytes, one epoch %d / %d" %
             (p["opens"], p["bytes"], once["opens"], once["bytes"]))
    s = summary(out)
    if s["epochs"] != 3 or len(s["metric"]["train_throughput_samples_per_second"]) != 3:
        fail("read_once: summary has %s epochs" % s["epochs"])


def test_vocabulary_startup_load():
    """iomimic.startup_load: every file is read whole, once, before
    training, in reader.transfer_size requests; no epoch reads."""
    out, p = small_run("startup", NPZ_SMALL, ["++workload.train.epochs=2",
                                              "++workload.reader.transfer_size=16384",
                                              "++workload.iomimic.startup_load=True"],
                       strace=True)
    sizes = sorted(os.path.getsize(f) for f in glob_files(out, "startup"))
    total = sum(sizes)
    print("startup_load: %d opens, %d reads, %d bytes; files %d bytes; sizes %s" %
          (p["opens"], p["reads"], p["bytes"], total, dict(p["sizes"])))
    if p["opens"] != 8 or p["bytes"] != total:
        fail("startup_load: %d opens and %d bytes, expected 8 and %d" % (p["opens"], p["bytes"], total))
    if max(p["sizes"]) != 16384:
        fail("startup_load: largest request %d, expected the transfer size 16384" % max(p["sizes"]))


def glob_files(out, name):
    import glob
    return glob.glob(os.path.join(args().work, name, "data", "train", "*"))


def test_vocabulary_replicate():
    """iomimic.replicate dataset: both ranks read every sample (steps as
    for one rank); batch: both read rank 0's shard, the same batches;
    none (DLIO): disjoint shards."""
    for mode, steps in (("dataset", 4), ("batch", 2), ("none", 2)):
        out, _ = small_run("replicate_" + mode, NPZ_SMALL,
                           ["++workload.train.epochs=1", "++workload.iomimic.replicate=" + mode],
                           ranks=2)
        r0, r1 = samples_read(out, 0), samples_read(out, 1)
        print("replicate %s: rank 0 read %d samples, rank 1 %d" % (mode, len(r0), len(r1)))
        if len(r0) != steps * 2:
            fail("replicate %s: rank 0 read %d samples, expected %d" % (mode, len(r0), steps * 2))
        same = r0 == r1
        if same != (mode != "none"):
            fail("replicate %s: the ranks read %s samples" % (mode, "the same" if same else "other"))
        if mode == "dataset" and len(set(r0)) != 8:
            fail("replicate dataset: rank 0 read %d distinct samples of 8" % len(set(r0)))


def test_vocabulary_random_reads():
    """iomimic.random_read_bytes: each sample is random_reads_per_sample
    reads of exactly that size at offsets spread over the file."""
    _, p = small_run("random", ["++workload.dataset.format=hdf5",
                                "++workload.dataset.num_files_train=1",
                                "++workload.dataset.num_samples_per_file=64",
                                "++workload.dataset.record_length_bytes=65536",
                                "++workload.reader.batch_size=4",
                                "++workload.reader.read_threads=1"],
                     ["++workload.train.epochs=1", "++workload.iomimic.random_read_bytes=28672",
                      "++workload.iomimic.random_reads_per_sample=2"], strace=True)
    print("random reads: %d reads, sizes %s" % (p["reads"], dict(p["sizes"])))
    if p["sizes"] != collections.Counter({28672: 128}):
        fail("random_read_bytes: read sizes %s, expected 128 reads of 28672" % dict(p["sizes"]))
    offsets = sorted(o for _, o, _ in p["offsets"])
    if len(set(offsets)) < 100 or offsets[-1] - offsets[0] < 2 * 1024 * 1024:
        fail("random_read_bytes: offsets not spread over the file: %s" % offsets[:10])


# The seed applications: (workload, overrides that shrink it, check).
def generate_and_trace(path, ov, work, data):
    """Generates the data of workload file `path` (overrides `ov`), then runs
    it under strace (log in `work`); the strace_profile of the reads of
    files under `data`."""
    run([args().iomimic, "generate", "-q", path] + ov + ["++workload.workflow.generate_data=True"])
    log = os.path.join(work, "strace.log")
    run(["strace", "-f", "-y", "-s", "0", "-o", log, "-e", "trace=openat,read,pread64,close",
         args().iomimic, "run", "-q", path] + ov + ["++workload.workflow.generate_data=False",
                                                     NO_CACHE_CHECK])
    return strace_profile(log, os.path.realpath(data) + os.sep)


def seed_run(workload, shrink, strace=True):
    work = os.path.join(args().work, workload)
    data = os.path.join(work, "data")
    out = os.path.join(work, "out")
    path = os.path.join(args().source, "workloads", workload + ".yaml")
    ov = ["++workload.dataset.data_folder=" + data, "++workload.output.folder=" + out,
          "++workload.train.computation_time=0", "++workload.iomimic.io_counters_top=0"] + shrink
    p = generate_and_trace(path, ov, work, data)
    # Data files only: iomimic's completion markers are dot files.
    files = [os.path.join(dp, f) for dp, _, fs in os.walk(os.path.join(data, "train")) for f in fs
             if not f.startswith(".")]
    p["file_bytes"] = sum(os.path.getsize(f) for f in files)
    common = p["sizes"].most_common(3)
    print("%s: %d reads, %d bytes (dataset %d bytes); commonest read sizes %s" %
          (workload, p["reads"], p["bytes"], p["file_bytes"], common))
    return p


def share(p, size):
    return p["sizes"][size] / max(1, p["reads"])


def expect_share(p, workload, size, least, note=""):
    """At least the fraction `least` of the run's reads are of `size` bytes."""
    if share(p, size) < least:
        fail("%s: %.1f%% of reads are %d KiB%s" % (workload, 100 * share(p, size), size // 1024,
                                                  note))


def test_seed_imagenet_tf_cnn():
    """98% of ImageNet's I/O is at 256 KB (TFRecordDataset's buffer)."""
    p = seed_run("imagenet_tf_cnn", ["++workload.dataset.num_files_train=4",
                                     "++workload.dataset.num_samples_per_file=100",
                                     "++workload.reader.batch_size=16",
                                     "++workload.train.total_training_steps=20",
                                     "++workload.reader.read_threads=2"])
    expect_share(p, "imagenet_tf_cnn", 262144, 0.9, " (seed: 98%)")


def test_seed_cosmoflow_tf():
    """CosmoFlow reads in 256 KB requests, consecutively."""
    p = seed_run("cosmoflow_tf", ["++workload.dataset.num_files_train=2",
                                  "++workload.dataset.num_samples_per_file=4",
                                  "++workload.dataset.record_length_bytes=1048576",
                                  "++workload.reader.read_threads=1"])
    expect_share(p, "cosmoflow_tf", 262144, 0.9)


def test_seed_ffn():
    """FFN: most reads 28 KB, at random places of one large HDF5 file."""
    p = seed_run("ffn", ["++workload.dataset.num_samples_per_file=256",
                         "++workload.train.total_training_steps=100"])
    expect_share(p, "ffn", 28672, 0.99)
    offsets = [o for _, o, _ in p["offsets"]]
    consecutive = sum(1 for a, b in zip(offsets, offsets[1:]) if b == a + 28672)
    if consecutive > len(offsets) // 10:
        fail("ffn: %d of %d reads follow the previous one: not random" % (consecutive, len(offsets)))


def test_seed_climate_seg():
    """Climate segmentation: about 500 bytes in 50 reads of the 4 KB stats
    file, at the start only."""
    p = seed_run("climate_seg", ["++workload.train.epochs=20"])
    if p["reads"] != 50 or p["sizes"] != collections.Counter({10: 50}):
        fail("climate_seg: %d reads, sizes %s (seed: 50 reads, 500 bytes)" %
             (p["reads"], dict(p["sizes"])))
    if not 2048 <= p["file_bytes"] <= 8192:
        fail("climate_seg: the stats file is %d bytes (seed: 4 KB)" % p["file_bytes"])


def test_seed_candle_nt3():
    """CANDLE NT3: the CSV read whole at the start in about 256 KB
    requests; training (here 3 epochs) reads nothing more."""
    p = seed_run("candle_nt3", ["++workload.dataset.num_samples_per_file=40",
                                "++workload.dataset.record_length_bytes=24192",
                                "++workload.train.epochs=3"])
    if p["bytes"] != p["file_bytes"] or p["opens"] != 1:
        fail("candle_nt3: %d bytes in %d opens, the file has %d" %
             (p["bytes"], p["opens"], p["file_bytes"]))
    expect_share(p, "candle_nt3", 262144, 0.8)


def test_seed_bert_mrpc():
    """BERT MRPC: the examples read whole at the start, one ~200-byte record
    per request."""
    p = seed_run("bert_mrpc", ["++workload.dataset.num_samples_per_file=320"])
    if p["bytes"] != p["file_bytes"] or share(p, 200) < 0.99:
        fail("bert_mrpc: %d of %d bytes, %.1f%% of reads 200 bytes" %
             (p["bytes"], p["file_bytes"], 100 * share(p, 200)))


def test_seed_frnn():
    """FRNN: each step's npz file read in one go."""
    p = seed_run("frnn", ["++workload.dataset.num_files_train=16",
                          "++workload.dataset.record_length_bytes=262144"])
    if p["opens"] != 16 or p["reads"] != 16 or p["bytes"] != p["file_bytes"]:
        fail("frnn: %d opens, %d reads, %d bytes for 16 files of %d bytes in all" %
             (p["opens"], p["reads"], p["bytes"], p["file_bytes"]))



def near(size, figure, tolerance):
    return abs(size - figure) <= tolerance * figure


def test_seed_cosmic_tagger():
    """Cosmic Tagger: reads of one chunked HDF5 file, most of them 2 KB or
    6 KB (within 5%: the compressed partial edge chunk and the full chunk
    of each plane), a few larger index reads (seed: 13 KB; HDF5's index
    page of 1,024 chunk entries is 15,364 bytes, so within 20%), samples in
    file order, the same ones on every rank."""
    p = seed_run("cosmic_tagger", ["++workload.dataset.num_samples_per_file=640",
                                   "++workload.train.total_training_steps=10"])
    samples = 10 * 32
    two = sum(n for s, n in p["sizes"].items() if near(s, 2048, 0.05))
    six = sum(n for s, n in p["sizes"].items() if near(s, 6144, 0.05))
    index = sum(n for s, n in p["sizes"].items() if s > 10240)
    index_ok = all(near(s, 13 * 1024, 0.2) for s in p["sizes"] if s > 10240)
    print("cosmic_tagger: %d reads: %d of about 2 KB, %d of about 6 KB, %d index reads %s" %
          (p["reads"], two, six, index, sorted(s for s in p["sizes"] if s > 10240)))
    if two != 3 * samples or six != 3 * samples:
        fail("cosmic_tagger: %d reads of about 2 KB and %d of about 6 KB, expected %d each "
             "(3 planes of %d samples)" % (two, six, 3 * samples, samples))
    if (two + six) < 0.95 * p["reads"]:
        fail("cosmic_tagger: only %d of %d reads are 2 KB or 6 KB" % (two + six, p["reads"]))
    # 6 chunks per sample, 1,024 chunk entries per index page.
    pages = -(-6 * samples // 1024)
    if index != pages or not index_ok:
        fail("cosmic_tagger: index reads %s, expected %d of 13 KB +-20%%" %
             (dict((s, n) for s, n in p["sizes"].items() if s > 10240), pages))
    # Every rank reads the same samples, in file order.
    work = os.path.join(args().work, "cosmic_tagger")
    out = os.path.join(work, "out2")
    path = os.path.join(args().source, "workloads", "cosmic_tagger.yaml")
    mpirun(2, [args().iomimic, "run", "-q", path,
               "++workload.dataset.data_folder=" + os.path.join(work, "data"),
               "++workload.output.folder=" + out, "++workload.train.computation_time=0",
               "++workload.dataset.num_samples_per_file=640",
               "++workload.train.total_training_steps=10", "++workload.iomimic.sample_log=True"])
    r0, r1 = samples_read(out, 0), samples_read(out, 1)
    order = [int(s) for _, _, s in r0]
    if r0 != r1 or order != list(range(samples)):
        fail("cosmic_tagger: rank 0 read samples %s..., rank 1 %s...: not the same, in order" %
             (order[:8], [s for _, _, s in r1[:8]]))


def test_seed_l2hmc():
    """L2HMC: synthetic data (no reads), a checkpoint of 32 MB of model data
    every 50 of the 150 steps, written by rank 0."""
    work = os.path.join(args().work, "l2hmc")
    data = os.path.join(work, "data")
    ckpt = os.path.join(work, "checkpoints")
    path = os.path.join(args().source, "workloads", "l2hmc.yaml")
    ov = ["++workload.dataset.data_folder=" + data,
          "++workload.output.folder=" + os.path.join(work, "out"),
          "++workload.checkpoint.checkpoint_folder=" + ckpt,
          "++workload.train.computation_time=0"]
    p = generate_and_trace(path, ov, work, data)
    files = sorted(os.path.relpath(os.path.join(dp, f), ckpt)
                   for dp, _, fs in os.walk(ckpt) for f in fs)
    sizes = [os.path.getsize(os.path.join(ckpt, f)) for f in files]
    print("l2hmc: %d data reads; checkpoint files %s, sizes %s" % (p["reads"], files, sizes))
    if p["reads"] != 0:
        fail("l2hmc: %d reads of the (synthetic) dataset, expected none" % p["reads"])
    steps = ["global_epoch1_step%d" % s for s in (50, 100, 150)]
    if sorted(os.path.dirname(f) for f in files) != sorted(steps):
        fail("l2hmc: checkpoint files %s, expected one in each of %s" % (files, steps))
    if any(not near(s, 32 << 20, 0.05) for s in sizes):
        fail("l2hmc: checkpoint sizes %s, seed: 32 MB of model data" % sizes)


if __name__ == "__main__":
    harness.main(globals())
