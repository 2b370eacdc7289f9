#!/usr/bin/python3
"""Interoperability test of the webdataset format plugin.

Usage: webdataset_interop.py --iomimic BIN --source REPO --work DIR

For several element types and shapes it
  1. runs `iomimic generate` with dataset.format webdataset;
  2. reads every shard as a stream with Python's tarfile (mode "r|*", as
     webdataset's tar_file_iterator opens it) and groups the members into
     samples with webdataset's rules (docs/formats.md, "webdataset"): key
     and suffix split at the first dot of the base name, metadata names
     skipped, a sample ending where the key changes; each sample must have
     exactly a .cls member holding a class number below label_classes and a
     .npy member that numpy.load reads with the spec's shape and dtype;
  3. writes the same members again with tarfile the way webdataset's
     TarWriter does (mode 0444, owner and group "bigdata", the members'
     mtime) and checks the bytes equal iomimic's shard;
  4. runs `iomimic run` on the shards.
Prints PASS and exits 0, or prints what is wrong and exits 1.
"""

import glob
import io
import os
import re
import tarfile

import numpy as np

import interop_common as common
from interop_common import fail, run

SAMPLES = 7
FILES = 3

# (case, element type, record_dims, label classes)
CASES = [
    ("uint8_image", "uint8", [32, 24, 3], 1000),
    ("float32_matrix", "float32", [16, 12], 10),
    ("int64_vector", "int64", [100], 2),
]


def base_plus_ext(path):
    """webdataset's split of a member name into key and suffix."""
    m = re.match(r"^((?:.*/|)[^.]+)[.]([^/]*)$", path)
    if not m:
        return None, None
    return m.group(1), m.group(2)


def samples_of(path):
    """The samples of a shard as webdataset groups them: (key, {suffix: bytes})."""
    out = []
    with open(path, "rb") as stream:
        tar = tarfile.open(fileobj=stream, mode="r|*")
        for info in tar:
            name = info.name
            if not info.isreg():
                continue
            if "/" not in name and name.startswith("__") and name.endswith("__"):
                continue
            if re.match(r"__[^/]*__($|/)", name):
                continue
            data = tar.extractfile(info).read()
            key, suffix = base_plus_ext(name)
            if key is None:
                continue
            suffix = suffix.lower()
            if not out or out[-1][0] != key:
                out.append((key, {}))
            if suffix in out[-1][1]:
                fail("%s: duplicate %s in sample %s" % (path, suffix, key))
            out[-1][1][suffix] = data
    return out


def rewrite_as_tarwriter(path):
    """The shard's members written again as webdataset's TarWriter writes them."""
    buffer = io.BytesIO()
    with open(path, "rb") as stream:
        src = tarfile.open(fileobj=stream, mode="r|*")
        out = tarfile.open(fileobj=buffer, mode="w|")
        for info in src:
            data = src.extractfile(info).read()
            ti = tarfile.TarInfo(info.name)
            ti.size = len(data)
            ti.mtime = info.mtime
            ti.mode = 0o0444
            ti.uname = "bigdata"
            ti.gname = "bigdata"
            out.addfile(ti, io.BytesIO(data))
        out.close()
    return buffer.getvalue()


def check_case(args, case, dtype, dims, classes):
    data = os.path.join(args.work, case, "data")
    ov = common.shard_overrides(
        "webdataset", data, os.path.join(args.work, case, "out"), FILES, SAMPLES, dims, dtype,
        ["++workload.dataset.webdataset.label_classes=%d" % classes])
    run([args.iomimic, "generate", common.workload("quickstart")] + ov)
    shards = sorted(glob.glob(os.path.join(data, "train", "*.tar")))
    if len(shards) != FILES:
        fail("%s: expected %d shards, found %s" % (case, FILES, shards))
    keys = []
    for shard in shards:
        if os.path.getsize(shard) % tarfile.RECORDSIZE != 0:
            fail("%s: %s is not padded to tarfile's record size" % (case, shard))
        samples = samples_of(shard)
        if len(samples) != SAMPLES:
            fail("%s: %s groups into %d samples, expected %d" % (case, shard, len(samples),
                                                                 SAMPLES))
        for key, fields in samples:
            if sorted(fields) != ["cls", "npy"]:
                fail("%s: sample %s of %s has fields %s" % (case, key, shard, sorted(fields)))
            label = int(fields["cls"])
            if not 0 <= label < classes:
                fail("%s: sample %s's label %d is not below %d" % (case, key, label, classes))
            array = np.load(io.BytesIO(fields["npy"]))
            if array.shape != tuple(dims) or array.dtype != np.dtype(dtype):
                fail("%s: sample %s is %s %s, expected %s %s" %
                     (case, key, array.shape, array.dtype, tuple(dims), dtype))
            keys.append(key)
        if rewrite_as_tarwriter(shard) != open(shard, "rb").read():
            fail("%s: %s differs from what webdataset's TarWriter writes for its members" %
                 (case, shard))
    if len(set(keys)) != len(keys):
        fail("%s: keys repeat across shards" % case)
    run([args.iomimic, "run", common.workload("quickstart"),
         "++workload.workflow.generate_data=False"] + ov)
    s = common.summary(os.path.join(args.work, case, "out"))
    if s["iomimic"]["bytes_read"] != sum(os.path.getsize(p) for p in shards):
        fail("%s: one epoch read %d bytes of %d-byte shards" %
             (case, s["iomimic"]["bytes_read"], sum(os.path.getsize(p) for p in shards)))
    print("%s: %d shards, %d samples grouped by key, numpy loads each .npy, TarWriter's bytes" %
          (case, FILES, len(keys)))


def main():
    args = common.setup(__doc__)
    for case, dtype, dims, classes in CASES:
        check_case(args, case, dtype, dims, classes)
    print("PASS")


if __name__ == "__main__":
    main()
