#!/usr/bin/python3
"""The interoperability harness of the image formats (jpeg, png, tiff),
shared by tests/formats/{jpeg,png,tiff}_interop.py, which ctest runs as
interop.jpeg, interop.png and interop.tiff. Not a test of its own (its name
does not end in _interop.py).

Each script describes its format (how to check one file, what its pixels
look like, how to damage a file) and calls main(). The harness runs DLIO's
default workload (workloads/default.yaml) with the format and shrinking
overrides: a few dozen 64x64-ish images (record_length_bytes 4096 with a
stdev, so sizes vary), short compute times. It generates the dataset with
the real binary, then checks:

* file names, folders and counts are DLIO's (the count `iomimic config
  --plan` reports), with no temporary files left over;
* each file passes the format's check, and its size is what DLIO's
  png/jpeg generators draw: np.random.seed(10) then
  np.random.normal(dimension, dimension_stdev, 2 * N) truncated to int and
  clamped to >= 1, dimension = floor(sqrt(record_length_bytes)),
  dimension_stdev = record_length_bytes_stdev / 2 / sqrt(record_length_bytes);
  file i (train files first, then eval files) is d1 = dims[2i] rows by
  d2 = dims[2i + 1] columns, so PIL's Image.size (width, height) is (d2, d1)
  and the array's shape is (d1, d2);
* the pixels look like uniform noise (the seed itself is iomimic's
  business; the plugins' unit tests compare pixels);
* generation is deterministic and a second `generate` keeps the files;
* `iomimic run` trains over the dataset (decoding, then not decoding with
  two reader threads) and reads every file whole once per epoch, with the
  requests of PIL's reader;
* then the format's own checks (damaged files make `iomimic run` fail with
  a message that names the file and the offset, other element types...).

Exit status 0 and "PASS" on success; "FAIL: <reason>" otherwise.
"""

import argparse
import glob
import json
import math
import os
import re
import shutil
import subprocess
import sys

import numpy as np

FORMAT = None  # set by main()
TRAIN_FILES = 24
EVAL_FILES = 4
RECORD_LENGTH = 4096
RECORD_STDEV = 1024
EPOCHS = 2

ARGS = None


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def run(cmd, expect_ok=True, timeout=240):
    print("$ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, cwd=ARGS.work, capture_output=True, text=True, timeout=timeout)
    sys.stdout.write(p.stdout)
    sys.stdout.write(p.stderr)
    if expect_ok and p.returncode != 0:
        fail("command failed with exit code %d: %s" % (p.returncode, " ".join(cmd)))
    return p


def workload():
    return os.path.join(ARGS.source, "workloads", "default.yaml")


def overrides(data, out, extra=()):
    return [
        "++workload.dataset.format=" + FORMAT,
        "++workload.dataset.data_folder=" + data,
        "++workload.output.folder=" + out,
        "++workload.dataset.num_files_train=%d" % TRAIN_FILES,
        "++workload.dataset.num_files_eval=%d" % EVAL_FILES,
        "++workload.dataset.record_length_bytes=%d" % RECORD_LENGTH,
        "++workload.dataset.record_length_bytes_stdev=%d" % RECORD_STDEV,
        "++workload.train.epochs=%d" % EPOCHS,
        "++workload.train.computation_time=0.001",
        "++workload.evaluation.eval_time=0.001",
    ] + list(extra)


def expected_dims():
    """DLIO's per-file (d1, d2), global index order (train, then eval)."""
    n = TRAIN_FILES + EVAL_FILES
    dimension = math.floor(math.sqrt(RECORD_LENGTH))
    stdev = RECORD_STDEV / 2 / math.sqrt(RECORD_LENGTH)
    np.random.seed(10)
    draws = np.random.normal(dimension, stdev, 2 * n)
    dims = [max(1, int(x)) for x in draws]
    return [(dims[2 * i], dims[2 * i + 1]) for i in range(n)]


def dataset_files(data):
    """{global index: path}, checking DLIO's names and layout."""
    name = re.compile(r"^img_(\d+)_of_(\d+)\.%s$" % FORMAT)
    files = {}
    for split, count, base in (("train", TRAIN_FILES, 0), ("valid", EVAL_FILES, TRAIN_FILES)):
        paths = sorted(glob.glob(os.path.join(data, split, "*", "*")))
        if len(paths) != count:
            fail("%s/%s holds %d files, expected %d: %s" % (data, split, len(paths), count, paths))
        width = len(str(count))
        for p in paths:
            m = name.match(os.path.basename(p))
            if not m or int(m.group(2)) != count or len(m.group(1)) != width:
                fail("unexpected file name %s" % p)
            index = int(m.group(1))
            folder = os.path.basename(os.path.dirname(p))
            if folder != str(index % 2):
                fail("%s should be in subfolder %d (round robin over 2)" % (p, index % 2))
            files[base + index] = p
    # Hidden files other than the completeness records (docs/security.md) are leftovers.
    leftovers = [p for p in glob.glob(os.path.join(data, "**", ".*"), recursive=True)
                 if not p.endswith(".iomimic-complete")]
    if leftovers:
        fail("temporary files left behind: %s" % leftovers)
    return files


def check_plan(data, out):
    p = run([ARGS.iomimic, "config", workload(), "--plan"] + overrides(data, out))
    m = re.search(r"(\d+) train \+ (\d+) eval files of (\d+) samples", p.stdout)
    if not m:
        fail("`iomimic config --plan` did not report the dataset: %r" % p.stdout)
    if (int(m.group(1)), int(m.group(2)), int(m.group(3))) != (TRAIN_FILES, EVAL_FILES, 1):
        fail("plan reports %s, expected %d train + %d eval files of 1 sample" %
             (m.group(0), TRAIN_FILES, EVAL_FILES))


def check_pil_greyscale(im, path, fmt, d1, d2):
    """PIL opened `path` (image `im`) as format `fmt`, mode 'L' (8-bit
    greyscale), d1 rows of d2 columns: DLIO's image of dims (d1, d2)."""
    if im.format != fmt:
        fail("%s: PIL says format %s, expected %s" % (path, im.format, fmt))
    if im.mode != "L":
        fail("%s: mode %s, expected L (8-bit greyscale)" % (path, im.mode))
    if im.size != (d2, d1):
        fail("%s: PIL size %s, expected (width, height) = (d2, d1) = %s" %
             (path, im.size, (d2, d1)))


def check_greyscale_array(a, path, d1, d2, what="array"):
    """`a`, the pixels read from `path`, is a uint8 array of shape (d1, d2)."""
    if a.dtype != np.uint8 or a.shape != (d1, d2):
        fail("%s: %s %s %s, expected uint8 %s" % (path, what, a.dtype, a.shape, (d1, d2)))


def check_noise(pixels, mean_range, std_range, every_value):
    """The pixels of all files look like uniform noise, and differ per file."""
    values = np.concatenate([a.ravel() for a in pixels]).astype(np.float64)
    mean, std = values.mean(), values.std()
    if not (mean_range[0] < mean < mean_range[1]) or not (std_range[0] < std < std_range[1]):
        fail("pixels do not look like uniform noise: mean %.1f, stdev %.1f" % (mean, std))
    if every_value:
        counts = np.bincount(values.astype(np.int64), minlength=256)
        if counts.min() == 0:
            fail("some byte values never occur in %d pixels" % values.size)
    firsts = {a.tobytes()[:64] for a in pixels}
    if len(firsts) != len(pixels):
        fail("two images start with the same pixels: contents are not per-file")


def summary(out):
    with open(os.path.join(out, "summary.json")) as f:
        return json.load(f)


def pil_requests(size):
    """Read requests of PIL's pattern for a file of `size` bytes."""
    reads, pos = 1, min(size, 4096)
    while pos < size:
        pos = min(size, (pos // 65536 + 1) * 65536)
        reads += 1
    return reads + 1  # the read at the end of the file, which returns nothing


def check_run(data, out, files, extra=()):
    shutil.rmtree(out, ignore_errors=True)
    run([ARGS.iomimic, "run", workload()] + overrides(data, out, extra))
    s = summary(out)
    m = s["metric"]
    if len(m.get("train_throughput_samples_per_second", [])) != EPOCHS:
        fail("summary.json has no per-epoch train throughput: %s" % m)
    if not all(x > 0 for x in m["train_throughput_samples_per_second"]):
        fail("train throughput is not positive: %s" % m["train_throughput_samples_per_second"])
    if "eval_throughput_samples_per_second" not in m:
        fail("summary.json has no eval metrics")
    info = s.get("iomimic", {})
    if info.get("status") != "completed":
        fail("run status %r" % info.get("status"))
    # Batch 4 divides the file counts, and evaluation follows every epoch:
    # every file is read whole once per epoch, with PIL's requests (4 KiB at
    # 0, blocks ending on 64 KiB boundaries, one read at the end of the file).
    sizes = [os.path.getsize(p) for p in files.values()]
    if info.get("bytes_read") != EPOCHS * sum(sizes):
        fail("bytes_read %s, expected %d epochs x %d bytes of files" %
             (info.get("bytes_read"), EPOCHS, sum(sizes)))
    if info.get("files_opened") != EPOCHS * len(sizes):
        fail("files_opened %s, expected %d" % (info.get("files_opened"), EPOCHS * len(sizes)))
    requests = EPOCHS * sum(pil_requests(size) for size in sizes)
    if info.get("read_requests") != requests:
        fail("read_requests %s, expected %d" % (info.get("read_requests"), requests))
    return s


def expect_failure(data, out, victim, fragment, offset):
    """`iomimic run` must fail naming `victim`, `fragment` and the offset."""
    shutil.rmtree(out, ignore_errors=True)
    p = run([ARGS.iomimic, "run", workload()] + overrides(data, out), expect_ok=False)
    text = p.stdout + p.stderr
    if p.returncode == 0:
        fail("iomimic run succeeded on a damaged %s (%s)" % (FORMAT, fragment))
    if victim not in text or fragment not in text or ("at offset %d" % offset) not in text:
        fail("the error does not name %s, %r and offset %d: %s" % (victim, fragment, offset, text))


class Dataset:
    """What a format's own checks get: the folders, the files and their
    original bytes, the dims DLIO draws."""

    def __init__(self, data, out, files, before, dims):
        self.data, self.out, self.files, self.before, self.dims = data, out, files, before, dims

    def restore(self, index=0):
        with open(self.files[index], "wb") as f:
            f.write(self.before[index])


def main(fmt, check_image, noise, format_checks, checked="PIL"):
    """Runs the harness for format `fmt`: check_image(path, d1, d2) checks one
    file and returns its pixels; noise = (mean_range, std_range, every_value)
    for check_noise; format_checks(dataset) runs the format's own checks."""
    global ARGS, FORMAT
    FORMAT = fmt
    parser = argparse.ArgumentParser()
    parser.add_argument("--iomimic", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--work", required=True)
    ARGS = parser.parse_args()
    ARGS.iomimic = os.path.abspath(ARGS.iomimic)
    ARGS.source = os.path.abspath(ARGS.source)
    ARGS.work = os.path.abspath(ARGS.work)
    shutil.rmtree(ARGS.work, ignore_errors=True)
    os.makedirs(ARGS.work)
    data = os.path.join(ARGS.work, "data")
    out = os.path.join(ARGS.work, "out")

    check_plan(data, out)
    run([ARGS.iomimic, "generate", workload()] + overrides(data, out))
    files = dataset_files(data)
    dims = expected_dims()
    if len(set(dims)) < 3:
        fail("the stdev should give images of several sizes: %s" % dims)
    pixels = []
    for i, path in sorted(files.items()):
        pixels.append(check_image(path, *dims[i]))
    check_noise(pixels, *noise)
    print("checked %d %s files with %s (sizes %s..%s)" %
          (len(files), fmt, checked, min(dims), max(dims)), flush=True)

    # Deterministic content; a second generate keeps complete files.
    before = {i: open(p, "rb").read() for i, p in files.items()}
    again = os.path.join(ARGS.work, "again")
    run([ARGS.iomimic, "generate", workload()] + overrides(again, out))
    for i, p in dataset_files(again).items():
        if open(p, "rb").read() != before[i]:
            fail("%s differs from %s: generation is not deterministic" % (p, files[i]))
    shutil.rmtree(again)
    p = run([ARGS.iomimic, "generate", workload()] + overrides(data, out))
    if not re.search(r"\b0 files? written|generated 0 files", p.stdout + p.stderr):
        fail("a second generate rewrote files: %s" % (p.stdout + p.stderr))
    for i, path in files.items():
        if open(path, "rb").read() != before[i]:
            fail("%s changed on a second generate" % path)

    # Training reads: decoding (default), then storage only with 2 readers.
    check_run(data, out, files)
    check_run(data, out, files, ["++workload.reader.decode=False",
                                 "++workload.reader.read_threads=2"])

    format_checks(Dataset(data, out, files, before, dims))
    print("PASS")
