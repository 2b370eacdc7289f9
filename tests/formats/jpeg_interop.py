#!/usr/bin/python3
"""Interoperability test of the jpeg format plugin, run by ctest.

Usage: jpeg_interop.py --iomimic BIN --source REPO --work EMPTY_DIR

No workload shipped in workloads/ uses jpeg (DLIO's resnet50 configs there
are tfrecord; the traced jpeg runs of docs/dlio-compat.md §2.4 used a
resnet50_small variant), so this runs DLIO's default workload (workloads/default.yaml) with
format jpeg and shrinking overrides: a few dozen 64x64-ish images
(record_length_bytes 4096 with a stdev, so sizes vary), short compute times.
It generates the dataset with the real binary, then checks every file with
Debian's PIL and numpy:

* file names, folders and counts are DLIO's (the count `iomimic config
  --plan` reports), with no temporary files left over;
* each file is a baseline JFIF JPEG that PIL decodes, mode 'L', with the
  quantisation tables of PIL's default quality 75, whose size is what DLIO's
  generator draws: np.random.seed(10) then
  np.random.normal(dimension, dimension_stdev, 2 * N) truncated to int and
  clamped to >= 1, dimension = floor(sqrt(record_length_bytes)),
  dimension_stdev = record_length_bytes_stdev / 2 / sqrt(record_length_bytes);
  file i (train files first, then eval files) is d1 = dims[2i] rows by
  d2 = dims[2i + 1] columns, so PIL's Image.size (width, height) is (d2, d1)
  and np.asarray(...).shape is (d1, d2);
* the decoded pixels look like (JPEG-smoothed) uniform noise (the seed is
  iomimic's business; the plugin's unit tests check that PIL writes the same
  bytes for the same pixels and decodes the same pixels as iomimic);
* generation is deterministic and a second `generate` keeps the files;
* `iomimic run` trains over the dataset (decoding, then not decoding with
  two reader threads) and reads every file whole once per epoch, with the
  requests of PIL's reader;
* a file with a damaged marker, and a truncated file, make `iomimic run`
  fail with a message that names the file and the offset.

Exit status 0 and "PASS" on success; "FAIL: <reason>" otherwise.
"""

import argparse
import glob
import json
import math
import os
import re
import shutil
import io
import subprocess
import sys

import numpy as np
from PIL import Image

FORMAT = "jpeg"
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


def pil_tables():
    """The quantisation tables PIL writes by default (quality 75)."""
    buf = io.BytesIO()
    Image.fromarray(np.zeros((8, 8), dtype=np.uint8)).save(buf, format="JPEG")
    with Image.open(buf) as im:
        return im.quantization


def check_image(path, d1, d2, tables):
    with Image.open(path) as im:
        if im.format != "JPEG":
            fail("%s: PIL says format %s" % (path, im.format))
        if im.mode != "L":
            fail("%s: mode %s, expected L (8-bit greyscale)" % (path, im.mode))
        if im.size != (d2, d1):
            fail("%s: PIL size %s, expected (width, height) = (d2, d1) = %s" %
                 (path, im.size, (d2, d1)))
        if "jfif" not in im.info or im.info.get("progressive") or im.info.get("progression"):
            fail("%s: not a baseline JFIF file: %s" % (path, im.info))
        if im.quantization != tables:
            fail("%s: quantisation tables differ from PIL's quality 75" % path)
        a = np.asarray(im)
    if a.dtype != np.uint8 or a.shape != (d1, d2):
        fail("%s: array %s %s, expected uint8 %s" % (path, a.dtype, a.shape, (d1, d2)))
    with open(path, "rb") as f:
        b = f.read()
    if b[:3] != b"\xff\xd8\xff" or b[-2:] != b"\xff\xd9":
        fail("%s: does not start with SOI and end with EOI" % path)
    return a


def check_noise(pixels):
    values = np.concatenate([a.ravel() for a in pixels]).astype(np.float64)
    mean, std = values.mean(), values.std()
    # Quality 75 smooths noise but keeps its mean and most of its spread.
    if not (115 < mean < 140) or not (45 < std < 85):
        fail("pixels do not look like uniform noise: mean %.1f, stdev %.1f" % (mean, std))
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


def damage_marker(path):
    """Turns the DQT marker into an unknown one; returns where libjpeg stops."""
    with open(path, "rb") as f:
        b = bytearray(f.read())
    at = b.find(b"\xff\xdb")
    if at < 0:
        fail("%s has no DQT marker" % path)
    b[at + 1] = 0x02
    with open(path, "wb") as f:
        f.write(b)
    return at + 2  # libjpeg has read the marker


def truncate(path, keep):
    with open(path, "rb") as f:
        b = f.read()
    with open(path, "wb") as f:
        f.write(b[:keep])
    return keep


def expect_failure(data, out, victim, fragment, offset):
    shutil.rmtree(out, ignore_errors=True)
    p = run([ARGS.iomimic, "run", workload()] + overrides(data, out), expect_ok=False)
    text = p.stdout + p.stderr
    if p.returncode == 0:
        fail("iomimic run succeeded on a damaged jpeg (%s)" % fragment)
    if victim not in text or fragment not in text or ("at offset %d" % offset) not in text:
        fail("the error does not name %s, %r and offset %d: %s" % (victim, fragment, offset, text))


def main():
    global ARGS
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
    tables = pil_tables()
    pixels = []
    for i, path in sorted(files.items()):
        pixels.append(check_image(path, *dims[i], tables))
    check_noise(pixels)
    print("checked %d jpeg files with PIL (sizes %s..%s)" %
          (len(files), min(dims), max(dims)), flush=True)

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

    # A damaged marker, or a file cut short, is an error naming the file and
    # the offset.
    victim = files[0]
    offset = damage_marker(victim)
    expect_failure(data, out, victim, "corrupt jpeg (libjpeg: Unsupported marker type 0x02)",
                   offset)
    with open(victim, "wb") as f:
        f.write(before[0])
    size = truncate(victim, len(before[0]) - 100)
    expect_failure(data, out, victim, "truncated jpeg file", size)
    with open(victim, "wb") as f:
        f.write(before[0])
    print("PASS")


if __name__ == "__main__":
    main()
