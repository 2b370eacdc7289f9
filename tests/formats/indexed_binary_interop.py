#!/usr/bin/python3
"""Interoperability test of the indexed_binary and mmap_indexed_binary plugins.

Usage: indexed_binary_interop.py --iomimic BIN --source REPO --work DIR

For the DLIO workloads that use these formats, shrunk with overrides only:
  dlrm.yaml (indexed_binary): record_length_bytes 671088640 -> 4096, 2 train
      files (1 eval file as shipped), 1024 samples per file as shipped;
  megatron_deepspeed_LLNL.yaml (mmap_indexed_binary): 277203535 -> 4096
      samples per file, total_training_steps 1000 kept (the engine caps steps
      to the data), short compute; checkpointing is switched off because it
      needs 32 ranks (tensor 4 x pipeline 8) and is not what is tested here;
it
  1. runs `iomimic generate` (the workloads have generate_data False);
  2. checks every data file with numpy as DLIO's readers see it: the
     <file>.off.idx and <file>.sz.idx index files read with np.fromfile as
     uint64 hold offsets i * sample_size and the constant sample size, the
     data file is exactly sum(sizes) bytes, np.memmap slices at those offsets
     are the samples (random content, not constant), and no temporary file
     is left;
  3. runs the workload (`iomimic run`) and checks its I/O counters against
     DLIO's reader: the index files read once per file (one request each),
     then per sample one open and one ranged read of exactly the sample.
Prints PASS and exits 0, or prints what is wrong and exits 1.
"""

import glob
import math
import os

import numpy as np

import interop_common as interop
from interop_common import fail, run, workload, summary

ARGS = None


def check_dataset(data, fmt, files_train, files_eval, samples, sample_size):
    """numpy's view of every data file and its two index files."""
    leftovers = [p for p in glob.glob(os.path.join(data, "**", "*"), recursive=True)
                 if "partial" in os.path.basename(p)]
    # Hidden files other than the completeness records (docs/security.md).
    leftovers += [p for p in glob.glob(os.path.join(data, "**", ".*"), recursive=True)
                  if not p.endswith(".iomimic-complete")]
    if leftovers:
        fail("temporary files left behind: %s" % leftovers)
    checked = 0
    for split, n in (("train", files_train), ("valid", files_eval)):
        for i in range(n):
            width = len(str(n))
            path = os.path.join(data, split, "img_%s_of_%d.%s" % (str(i).zfill(width), n, fmt))
            for p in (path, path + ".off.idx", path + ".sz.idx"):
                if not os.path.isfile(p):
                    fail("missing file " + p)
            off = np.fromfile(path + ".off.idx", dtype=np.uint64)
            sz = np.fromfile(path + ".sz.idx", dtype=np.uint64)
            if off.shape != (samples,) or sz.shape != (samples,):
                fail("%s: index files hold %d and %d entries, expected %d"
                     % (path, off.size, sz.size, samples))
            if not (off == np.arange(samples, dtype=np.uint64) * np.uint64(sample_size)).all():
                bad = int(np.nonzero(off != np.arange(samples, dtype=np.uint64) * sample_size)[0][0])
                fail("%s.off.idx: entry %d is %d, expected %d"
                     % (path, bad, int(off[bad]), bad * sample_size))
            if not (sz == np.uint64(sample_size)).all():
                fail("%s.sz.idx: sizes %s, expected all %d" % (path, np.unique(sz), sample_size))
            size = os.path.getsize(path)
            if size != int(sz.sum()):
                fail("%s: %d bytes, but the sizes add up to %d" % (path, size, int(sz.sum())))
            # DLIO's mmap reader: np.memmap + slices at the index entries.
            m = np.memmap(path, mode="r", dtype=np.uint8)
            picks = sorted({0, 1, samples // 2, samples - 1})
            first = None
            for k in picks:
                sample = m[int(off[k]):int(off[k]) + int(sz[k])]
                if sample.size != sample_size:
                    fail("%s: sample %d has %d bytes" % (path, k, sample.size))
                if np.unique(sample).size < 16:
                    fail("%s: sample %d is not random content" % (path, k))
                if first is not None and np.array_equal(first, sample):
                    fail("%s: samples %d and 0 are identical" % (path, k))
                first = sample if first is None else first
            del m
            checked += 1
    print("numpy checked %d %s files and their index files" % (checked, fmt))


def check_run_io(out, batch, epochs, files_read, samples_per_file, sample_size):
    io_ = summary(out)["iomimic"]
    samples = io_["train_steps_per_epoch"] * batch * epochs
    # DLIO's reader: both index files of a file read whole once, then one
    # open + one ranged read per sample.
    index_bytes = 2 * files_read * samples_per_file * 8
    want = {"files_opened": samples + 2 * files_read,
            "read_requests": samples + 2 * files_read,
            "bytes_read": samples * sample_size + index_bytes}
    got = {k: io_[k] for k in want}
    if got != want:
        fail("I/O of the run %s differs from DLIO's reader pattern %s" % (got, want))
    print("run read %d samples: one ranged read each, index files once" % samples)
    return samples


def test_dlrm():
    base = os.path.join(ARGS.work, "dlrm")
    data, out = os.path.join(base, "data"), os.path.join(base, "out")
    os.makedirs(base)
    files, eval_files, spf, record = 2, 1, 1024, 4096
    overrides = [
        "++workload.dataset.data_folder=" + data,
        "++workload.dataset.num_files_train=%d" % files,
        "++workload.dataset.record_length_bytes=%d" % record,
        "++workload.train.computation_time=0.0001",
        "++workload.output.folder=" + out,
    ]
    run([ARGS.iomimic, "generate", workload("dlrm")] + overrides, base)
    # record_length_bytes 4096: 64 x 64 uint8 samples.
    check_dataset(data, "indexed_binary", files, eval_files, spf, 4096)
    run([ARGS.iomimic, "run", workload("dlrm")] + overrides, base)
    samples = check_run_io(out, batch=1, epochs=1, files_read=files, samples_per_file=spf,
                           sample_size=4096)
    if samples != files * spf:
        fail("expected every train sample once, read %d" % samples)


def test_megatron():
    base = os.path.join(ARGS.work, "megatron")
    data, out = os.path.join(base, "data"), os.path.join(base, "out")
    os.makedirs(base)
    spf = 4096
    overrides = [
        "++workload.dataset.data_folder=" + data,
        "++workload.dataset.num_samples_per_file=%d" % spf,
        "++workload.train.computation_time=0.0001",
        "++workload.workflow.checkpoint=False",
        "++workload.checkpoint.checkpoint_folder=" + os.path.join(base, "ckpt"),
        "++workload.output.folder=" + out,
    ]
    run([ARGS.iomimic, "generate", workload("megatron_deepspeed_LLNL")] + overrides, base)
    # record_length_bytes 2048: DLIO's int(sqrt(2048)) = 45, 45 x 45 = 2025-byte samples.
    side = math.isqrt(2048)
    check_dataset(data, "mmap_indexed_binary", 1, 0, spf, side * side)
    run([ARGS.iomimic, "run", workload("megatron_deepspeed_LLNL")] + overrides, base)
    samples = check_run_io(out, batch=16, epochs=3, files_read=1, samples_per_file=spf,
                           sample_size=side * side)
    if samples != 3 * spf:
        fail("expected 3 epochs of %d samples (steps capped to the data), read %d"
             % (spf, samples))


def main():
    global ARGS
    ARGS = interop.setup(__doc__)
    test_dlrm()
    test_megatron()
    print("PASS")


if __name__ == "__main__":
    main()
