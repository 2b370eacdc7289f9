#!/usr/bin/python3
"""Run-level fault injection: storage errors end a run cleanly, never lose data.

Usage: faulty_storage_interop.py --iomimic BIN --source REPO --work DIR

1. Generates a small npz dataset (the shipped quickstart workload, shrunk)
   with the posix back end and records every file's size and digest.
2. Trains on it through the `faulty` storage decorator (inner posix), once
   with `error_rate: 1` after some successful reads and once with
   `fail_at_offset`, and checks: a non-zero exit, exactly one
   "iomimic: error:" line on stderr naming a dataset file, the operation
   ("read") and "injected"; status.json in the run folder says "failed" and
   holds the same error; every dataset file is still there, unchanged.
3. Generates a fresh dataset through `faulty` in mode enospc (writes of one
   file fail past an offset) and checks: a non-zero exit with one error line
   naming the write, its offset and the partial file; no
   .<name>.iomimic-partial file is left; every file present under its final
   name is complete (the size the posix run made, and numpy loads it).

Prints PASS and exits 0 on success; exits non-zero with a message otherwise.
"""

import glob
import hashlib
import json
import os
import sys

import interop_common as interop
from interop_common import fail, run

ARGS = None


def workload():
    return os.path.join(ARGS.source, "workloads", "quickstart.yaml")


def shrunk(data, out=None, extra=()):
    ov = [
        "++workload.dataset.data_folder=" + data,
        "++workload.dataset.num_files_train=8",
        "++workload.dataset.num_files_eval=2",
        "++workload.dataset.record_length_bytes=262144",
        "++workload.dataset.record_length_bytes_stdev=65536",
        "++workload.train.epochs=2",
        "++workload.train.computation_time=0.001",
        "++workload.evaluation.eval_time=0.001",
    ]
    if out is not None:
        ov.append("++workload.output.folder=" + out)
    return ov + list(extra)


def dataset_files(data):
    files = {}
    for path in sorted(glob.glob(os.path.join(data, "**", "*"), recursive=True)):
        if os.path.isfile(path):
            with open(path, "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()
            files[os.path.relpath(path, data)] = (os.path.getsize(path), digest)
    return files


def error_lines(stderr):
    return [line for line in stderr.splitlines() if line.startswith("iomimic: error:")]


def check_failed_run(p, out, expect_op, expect_words, data_before, data):
    if p.returncode == 0:
        fail("the run with an injected fault exited 0")
    lines = error_lines(p.stderr)
    if len(lines) != 1:
        fail("expected exactly one 'iomimic: error:' line on stderr, got %d: %r" % (len(lines), lines))
    line = lines[0]
    for word in ["injected", expect_op] + list(expect_words):
        if word not in line:
            fail("the error line does not mention %r: %s" % (word, line))
    if not any(name in line for name in (os.path.join(data, n) for n in data_before)):
        fail("the error line names no dataset file: " + line)
    status_path = os.path.join(out, "status.json")
    if not os.path.isfile(status_path):
        fail("no status.json in the run folder " + out)
    with open(status_path) as f:
        status = json.load(f)
    if status.get("status") != "failed":
        fail("status.json says %r, not 'failed'" % status.get("status"))
    if "injected" not in status.get("error", "") or status["error"] not in line:
        fail("status.json's error %r is not the reported one %r" % (status.get("error"), line))
    after = dataset_files(data)
    if after != data_before:
        lost = sorted(set(data_before) - set(after))
        changed = sorted(n for n in data_before if n in after and after[n] != data_before[n])
        extra = sorted(set(after) - set(data_before))
        fail("the dataset changed: lost %s, changed %s, new %s" % (lost, changed, extra))
    print("ok: " + line)


def have_plugins():
    p = run([ARGS.iomimic, "plugins"])
    names = set()
    for line in p.stdout.splitlines():
        cols = line.split()
        if len(cols) >= 2:
            names.add((cols[0], cols[1]))
    return ("storage", "faulty") in names and ("format", "npz") in names and (
        "storage", "posix") in names


def main():
    global ARGS
    ARGS = interop.setup(__doc__)
    if not have_plugins():
        print("SKIP: this build lacks the faulty, posix or npz plugin (IOMIMIC_PLUGINS filter)")
        return 0

    # 1. A dataset written by posix.
    data = os.path.join(ARGS.work, "data")
    run([ARGS.iomimic, "generate", workload()] + shrunk(data))
    before = dataset_files(data)
    if len(before) != 10:
        fail("expected 10 generated files, found %d: %s" % (len(before), sorted(before)))

    # 2a. Every read fails after 12 good ones.
    out = os.path.join(ARGS.work, "out-rate")
    p = run([ARGS.iomimic, "run", workload()] + shrunk(data, out, [
        "++workload.storage.backend=faulty",
        "++workload.storage.options.inner=posix",
        "++workload.storage.options.error_rate=1",
        "++workload.storage.options.after_ops=12",
    ]), expect_ok=False)
    check_failed_run(p, out, "read", ["EIO", "offset", "error_rate 1", "after 12 operations"],
                     before, data)

    # 2b. A read covering byte 100000 of any file fails.
    out = os.path.join(ARGS.work, "out-offset")
    p = run([ARGS.iomimic, "run", workload()] + shrunk(data, out, [
        "++workload.storage.backend=faulty",
        "++workload.storage.options.fail_at_offset=100000",
    ]), expect_ok=False)
    check_failed_run(p, out, "read", ["EIO", "fail_at_offset 100000"], before, data)

    # 2c. Short reads are caught by the format as a truncated file.
    out = os.path.join(ARGS.work, "out-short")
    p = run([ARGS.iomimic, "run", workload()] + shrunk(data, out, [
        "++workload.storage.backend=faulty",
        "++workload.storage.options.mode=short_read",
        "++workload.storage.options.fail_at_offset=100000",
    ]), expect_ok=False)
    if p.returncode == 0:
        fail("a run whose reads came back short exited 0")
    lines = error_lines(p.stderr)
    if len(lines) != 1 or "truncated" not in lines[0]:
        fail("a short read should be reported once as a truncated file: %r" % lines)
    if dataset_files(data) != before:
        fail("the dataset changed after the short-read run")
    print("ok: " + lines[0])

    # 3. ENOSPC while generating one file: the others complete, that one
    # leaves nothing behind under its final name.
    data2 = os.path.join(ARGS.work, "data-enospc")
    victim = "img_5_of_8.npz"
    p = run([ARGS.iomimic, "generate", workload()] + shrunk(data2, None, [
        "++workload.storage.backend=faulty",
        "++workload.storage.options.mode=enospc",
        "++workload.storage.options.fail_path=" + victim,
        "++workload.storage.options.fail_at_offset=65536",
    ]), expect_ok=False)
    if p.returncode == 0:
        fail("generation with an injected ENOSPC exited 0")
    lines = error_lines(p.stderr)
    if len(lines) != 1:
        fail("expected one 'iomimic: error:' line, got %r" % lines)
    line = lines[0]
    for word in ["injected ENOSPC", "write of", "No space left on device",
                 "." + victim + ".iomimic-partial"]:
        if word not in line:
            fail("the ENOSPC error line does not mention %r: %s" % (word, line))
    print("ok: " + line)
    partial = [f for f in glob.glob(os.path.join(data2, "**", "*"), recursive=True)
               if f.endswith(".iomimic-partial")]
    if partial:
        fail("partial files were left behind: %s" % partial)
    import numpy as np  # Debian's python3-numpy
    generated = dataset_files(data2)
    if any(name.endswith(victim) for name in generated):
        fail(victim + " exists under its final name although its writing failed")
    for name, (size, _) in generated.items():
        if name not in before:
            fail("unexpected file " + name)
        if size != before[name][0]:
            fail("%s is incomplete: %d bytes, a complete one has %d" % (name, size, before[name][0]))
        with np.load(os.path.join(data2, name)) as z:
            z["x"]  # reads and checks the member
    print("ok: %d complete files, no partial file, no incomplete final name" % len(generated))
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
