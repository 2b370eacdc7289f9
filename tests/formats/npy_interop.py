#!/usr/bin/python3
"""Interoperability test of the npy format plugin.

Usage: npy_interop.py --iomimic BIN --source REPO --work DIR

1. DLIO's npy workload (unet3d_v100_s3.yaml: format npy, 1 sample per file),
   shrunk with overrides only (fewer and smaller files, 2 epochs, short
   compute; the data folder is a local path, so the posix back end serves it):
   `iomimic generate`, then numpy checks every file, then a short
   `iomimic run` whose I/O counters must show np.load's pattern: per sample
   one open, one 4 KiB read at offset 0 and one read of the whole array.
2. iomimic's quickstart.yaml with format npy, several samples per file,
   float32 and drawn sample sizes (no DLIO workload has these), generated and
   trained in one `iomimic run`, then checked by numpy.

numpy checks, for every file: np.load works (and with mmap_mode='r'), dtype
and shape are DLIO's (sample dims, then samples on the last axis), the data
start on a 64-byte boundary, and np.save of the loaded array reproduces the
file byte for byte. Prints PASS and exits 0, or prints what is wrong and
exits 1.
"""

import glob
import io
import os

import numpy as np

import interop_common as interop
from interop_common import fail, run, workload, summary

ARGS = None


def check_npy_file(path, dtype, samples, dims=None):
    """np.load's view of one file; returns the array's shape."""
    try:
        x = np.load(path)
    except Exception as e:  # a failure to load is a finding
        fail("%s: np.load failed: %s: %s" % (path, type(e).__name__, e))
    if x.dtype != np.dtype(dtype):
        fail("%s: dtype %s, expected %s" % (path, x.dtype, dtype))
    if x.ndim != 3 or x.shape[-1] != samples:
        fail("%s: shape %s, expected (d1, d2, %d)" % (path, x.shape, samples))
    if dims is not None and x.shape[:2] != tuple(dims):
        fail("%s: sample dims %s, expected %s" % (path, x.shape[:2], tuple(dims)))
    if min(x.shape) < 1:
        fail("%s: empty dimension in %s" % (path, x.shape))
    if x.flags.f_contiguous and not x.flags.c_contiguous:
        fail("%s: Fortran order, expected C order" % path)
    raw = open(path, "rb").read()
    if raw[:8] != b"\x93NUMPY\x01\x00":
        fail("%s: not an NPY v1.0 file (preamble %r)" % (path, raw[:8]))
    header_len = int.from_bytes(raw[8:10], "little")
    if (10 + header_len) % 64 != 0:
        fail("%s: array data start at %d, not on a 64-byte boundary" % (path, 10 + header_len))
    buf = io.BytesIO()
    np.save(buf, x)
    if buf.getvalue() != raw:
        fail("%s: np.save of the loaded array writes different bytes" % path)
    m = np.load(path, mmap_mode="r")
    # Bytes, not values: random float bits include NaNs.
    if m.shape != x.shape or m[..., samples - 1].tobytes() != x[..., samples - 1].tobytes():
        fail("%s: np.load(mmap_mode='r') disagrees with np.load" % path)
    if samples > 1 and x[..., 0].tobytes() == x[..., 1].tobytes():
        fail("%s: samples 0 and 1 are identical; expected random content" % path)
    return x.shape, len(raw)


def test_unet3d_v100_s3():
    """DLIO's npy workload, shrunk."""
    base = os.path.join(ARGS.work, "unet3d")
    data, out = os.path.join(base, "data"), os.path.join(base, "out")
    os.makedirs(base)
    files, record, epochs, batch = 16, 65536, 2, 4
    overrides = [
        # A local folder instead of the bucket (s3 itself: s3_tests.py).
        "++workload.storage.storage_type=local_fs",
        "++workload.dataset.data_folder=" + data,
        "++workload.dataset.num_files_train=%d" % files,
        "++workload.dataset.record_length_bytes=%d" % record,
        "++workload.dataset.record_length_bytes_resize=%d" % record,
        "++workload.train.epochs=%d" % epochs,
        "++workload.train.computation_time=0.001",
        "++workload.output.folder=" + out,
    ]
    run([ARGS.iomimic, "generate", workload("unet3d_v100_s3")] + overrides, base)
    paths = sorted(glob.glob(os.path.join(data, "**", "*.npy"), recursive=True))
    expected = ["img_%02d_of_%d.npy" % (i, files) for i in range(files)]
    if sorted(os.path.basename(p) for p in paths) != expected:
        fail("unexpected files: %s" % [os.path.basename(p) for p in paths])
    sizes = set()
    for p in paths:
        # record_length_bytes 65536, stdev 0: every sample is 256 x 256 uint8.
        _, size = check_npy_file(p, "uint8", 1, dims=(256, 256))
        sizes.add(size)
    if sizes != {128 + 65536}:
        fail("file sizes %s, expected 128-byte header + 65536 bytes" % sorted(sizes))
    print("numpy loaded %d unet3d files" % len(paths))

    # The run: generation is skipped (the files are complete), then training.
    run([ARGS.iomimic, "run", workload("unet3d_v100_s3")] + overrides, base)
    io_ = summary(out)["iomimic"]
    samples = io_["train_steps_per_epoch"] * batch * epochs
    if samples != files * epochs:
        fail("expected %d samples read, the plan has %d" % (files * epochs, samples))
    # np.load per sample: open, 4 KiB at offset 0, then the whole array.
    want = {"files_opened": samples, "read_requests": 2 * samples,
            "bytes_read": samples * (4096 + 65536)}
    got = {k: io_[k] for k in want}
    if got != want:
        fail("I/O of the run %s differs from np.load's pattern %s" % (got, want))
    print("run read %d samples with np.load's pattern" % samples)


def test_quickstart_multi_sample():
    """Several samples per file, float32, drawn sizes, subfolders, eval."""
    base = os.path.join(ARGS.work, "quickstart")
    data, out = os.path.join(base, "data"), os.path.join(base, "out")
    os.makedirs(base)
    run([ARGS.iomimic, "run", workload("quickstart"),
         "++workload.dataset.format=npy",
         "++workload.dataset.data_folder=" + data,
         "++workload.dataset.num_files_train=12",
         "++workload.dataset.num_files_eval=4",
         "++workload.dataset.num_samples_per_file=3",
         "++workload.dataset.record_length_bytes=3000",
         "++workload.dataset.record_length_bytes_stdev=500",
         "++workload.dataset.record_element_type=float32",
         "++workload.reader.batch_size=3", "++workload.reader.batch_size_eval=2",
         "++workload.train.epochs=2", "++workload.train.computation_time=0.001",
         "++workload.evaluation.eval_time=0.001",
         "++workload.output.folder=" + out], base)
    paths = sorted(glob.glob(os.path.join(data, "**", "*.npy"), recursive=True))
    if len(paths) != 16:
        fail("expected 16 npy files, found %d" % len(paths))
    shapes = set()
    for p in paths:
        shape, _ = check_npy_file(p, "float32", 3)
        shapes.add(shape)
    if len(shapes) < 2:
        fail("record_length_bytes_stdev should give files of different shapes, got %s" % shapes)
    s = summary(out)
    if s["iomimic"]["bytes_read"] <= 0:
        fail("the run read nothing")
    print("numpy loaded %d quickstart files (%d shapes)" % (len(paths), len(shapes)))


def main():
    global ARGS
    ARGS = interop.setup(__doc__)
    test_unet3d_v100_s3()
    test_quickstart_multi_sample()
    print("PASS")


if __name__ == "__main__":
    main()
