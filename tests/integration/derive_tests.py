#!/usr/bin/python3
"""Derive and the fidelity report (docs/derive.md): a workload manifest
inferred from a recorded program's strace trace, generated and run by
iomimic under strace, reproduces the original's bytes per epoch, its
read-size histogram (power-of-two bins, within 5% per bin) and its opens
per file. The originals are the four programs of app_replay_tests.py and
iomimic's own runs of the seed study's patterns (workloads/: the TFRecord
256 KiB reads, Cosmic Tagger's chunked HDF5 reads, FFN's 28 KiB random
reads, FRNN's whole npz files, CANDLE's whole-file load). The measures are
computed here from the strace text, independently of iomimic's profile,
and compared with `iomimic fidelity`'s verdict too.

Usage: derive_tests.py <test-name> --iomimic BIN --source DIR --work DIR
"""

import collections
import json
import os
import re
import shutil
import subprocess

import app_replay_tests as programs
import iomimic_tests as harness
from iomimic_tests import fail, run


def args():
    return harness.ARGS


# --- The test's own strace reading (iomimic_tests.strace_calls), not iomimic's --

RESULT = re.compile(r"\)\s+=\s+(-?\d+)")
FD_PATH = re.compile(r"^\s*-?\d+<([^>]*)>")


def measure(trace, folder, epochs):
    """Per epoch, over the files below `folder`: bytes read, reads by
    power-of-two bin of the bytes returned, opens per file; from an
    `strace -f -ttt -T -yy` log."""
    folder = os.path.realpath(folder) + "/"
    opens, files = 0, set()
    bins, total = collections.Counter(), 0
    for call, text in harness.strace_calls(trace):
        res = RESULT.search(text)
        if not res or int(res.group(1)) < 0:
            continue
        value = int(res.group(1))
        if call in ("openat", "open"):
            p = re.search(r"=\s+\d+<([^>]*)>", text)
            if p and p.group(1).startswith(folder):
                opens += 1
            continue
        fd = FD_PATH.match(text)
        if fd and fd.group(1).startswith(folder) and call in ("read", "pread64"):
            files.add(fd.group(1))
            bins[0 if value <= 1 else value.bit_length() - 1] += 1
            total += value
    if not files:
        fail("%s: no read of a file under %s" % (trace, folder))
    return {"bytes": total / epochs, "bins": {b: n / epochs for b, n in bins.items()},
            "opens_per_file": opens / len(files) / epochs, "files": len(files)}


def written(trace, folder):
    """Bytes write() and pwrite64() returned on files below `folder`."""
    folder = os.path.realpath(folder) + "/"
    total = 0
    for call, text in harness.strace_calls(trace):
        res = RESULT.search(text)
        fd = FD_PATH.match(text)
        if call in ("write", "pwrite64") and res and fd and fd.group(1).startswith(folder):
            total += max(0, int(res.group(1)))
    return total


def check_same(original, derived, what):
    """Bytes per epoch within 1%, each bin within 5%, opens per file within 5%."""
    print("%s: original %s" % (what, original))
    print("%s: derived  %s" % (what, derived))
    if abs(derived["bytes"] - original["bytes"]) > 0.01 * original["bytes"]:
        fail("%s: bytes per epoch %d, original %d" % (what, derived["bytes"], original["bytes"]))
    for b in set(original["bins"]) | set(derived["bins"]):
        want, got = original["bins"].get(b, 0), derived["bins"].get(b, 0)
        if abs(got - want) > 0.05 * want or (want == 0 and got != 0):
            fail("%s: reads of 2^%d bytes per epoch %s, original %s" % (what, b, got, want))
    if abs(derived["opens_per_file"] - original["opens_per_file"]) > \
            0.05 * original["opens_per_file"]:
        fail("%s: opens per file %.3f, original %.3f" % (what, derived["opens_per_file"],
                                                         original["opens_per_file"]))
    if derived["files"] != original["files"]:
        fail("%s: %d data files, original %d" % (what, derived["files"], original["files"]))


def strace(cmd, trace):
    if shutil.which("strace") is None:
        fail("strace is not installed (scripts/deps.sh installs it)")
    run(["strace", "-f", "-ttt", "-T", "-yy", "-e", "trace=%file,%desc", "-o", trace] + cmd)


def manifest_value(path, key):
    with open(path) as f:
        m = re.search(r"^\s*%s:\s*(\S+)" % key, f.read(), re.M)
    if not m:
        fail("%s: no %s" % (path, key))
    return m.group(1)


def derive_and_run(trace, name, original):
    """Derives a manifest from `trace`, generates its data set, runs it under
    strace; checks it against `original` (measures) and returns the derived
    run's trace."""
    work = args().work
    manifest = os.path.join(work, name + ".yaml")
    p = run([args().iomimic, "derive", trace, "-o", manifest])
    if "not inferred from the trace:" not in p.stderr:
        fail("derive printed no list of what it could not infer: %r" % p.stderr)
    with open(manifest) as f:
        text = f.read()
    print(text)
    if "# " not in text or "read_script:" not in text:
        fail("the manifest has no comments or no read script")
    data = os.path.join(work, "data_" + name)
    overrides = ["++workload.dataset.data_folder=" + data,
                 "++workload.output.folder=" + os.path.join(work, "out_" + name)]
    run([args().iomimic, "generate", manifest] + overrides)
    derived_trace = os.path.join(work, name + "_derived.strace")
    strace([args().iomimic, "run", manifest, "++workload.workflow.generate_data=False"] +
           overrides, derived_trace)
    epochs = int(manifest_value(manifest, "epochs"))
    check_same(original, measure(derived_trace, data, epochs), name)
    report = os.path.join(work, name + "_fidelity.json")
    run([args().iomimic, "fidelity", trace, derived_trace, "--json", report, "--check"])
    with open(report) as f:
        verdict = json.load(f)["profiles"][1]["verdict"]
    if not all(verdict[k] for k in ("bytes_per_epoch", "read_sizes", "opens_per_file",
                                    "bytes_written")):
        fail("fidelity's verdict: %s" % verdict)
    return derived_trace


# --- The recorded programs -------------------------------------------------

def program(kind, code):
    data = os.path.join(args().work, "data")
    programs.make_data(kind, data)
    trace = programs.record(code, data, kind)
    return trace, data


def test_derive_npz_threads():
    trace, data = program("npz", programs.NPZ_LOOP)
    original = measure(trace, data, 1)
    derive_and_run(trace, "npz", original)
    manifest = os.path.join(args().work, "npz.yaml")
    if manifest_value(manifest, "read_threads") != "4" or \
            manifest_value(manifest, "num_files_train") != "32":
        fail("expected 4 reader threads and 32 files in %s" % manifest)
    # The replay's trace in the same report: original, replay, derived.
    # The replay's setup makes the files (opening each); a first replay makes
    # them, so that the traced one's opens are the program's.
    replayed = os.path.join(args().work, "replay.strace")
    target = os.path.join(args().work, "target")
    replay = [args().iomimic, "replay", trace, "--timing", "fast", "--root",
              os.path.join(args().work, "rootfs"), "--map", data + "=" + target]
    run(replay + ["--output", os.path.join(args().work, "out_replay0")])
    strace(replay + ["--output", os.path.join(args().work, "out_replay")], replayed)
    check_same(original, measure(replayed, target, 1), "replay")
    p = run([args().iomimic, "fidelity", trace, replayed,
             os.path.join(args().work, "npz_derived.strace")])
    if p.stdout.count("reproduces the original's") != 2:
        fail("fidelity did not find both runs faithful:\n" + p.stdout)


def test_derive_h5py_chunked():
    trace, data = program("h5", programs.H5_READER)
    derive_and_run(trace, "h5", measure(trace, data, 1))


def test_derive_tfrecord_sequential():
    trace, data = program("tfrecord", programs.TFRECORD_READER)
    derive_and_run(trace, "tfrecord", measure(trace, data, 1))


def test_derive_checkpoint_save():
    """A program that only writes: a checkpoint-only manifest (no reads) with
    the checkpoints' size, count, fsync and rename, whose run writes the same
    bytes."""
    trace, _ = program("ckpt", programs.CHECKPOINT_SAVE)
    manifest = os.path.join(args().work, "ckpt.yaml")
    run([args().iomimic, "derive", trace, "-o", manifest])
    for key, want in (("train", "False"), ("checkpoint", "True"), ("model_size_bytes", "8388608"),
                      ("num_checkpoints_write", "3"), ("fsync", "True"), ("atomic", "True")):
        if manifest_value(manifest, key) != want:
            fail("%s: %s is %s, expected %s" % (manifest, key, manifest_value(manifest, key), want))
    # Run under strace: three checkpoints of the traced size, the same bytes
    # written in all (iomimic's writes are DLIO's layout, not 1 MiB each).
    folder = os.path.join(args().work, "checkpoints")
    derived = os.path.join(args().work, "ckpt_derived.strace")
    strace([args().iomimic, "run", manifest, "++workload.checkpoint.checkpoint_folder=" + folder,
            "++workload.output.folder=" + os.path.join(args().work, "out")], derived)
    want = written(trace, os.path.join(args().work, "data"))
    got = written(derived, folder)
    print("bytes written: original %d, derived %d" % (want, got))
    if want != 3 * (8 << 20) or got != want:
        fail("bytes written: original %d, derived %d" % (want, got))
    steps = [d for d in os.listdir(folder) if os.path.isdir(os.path.join(folder, d))]
    if len(steps) != 3:
        fail("expected 3 checkpoints under %s, got %s" % (folder, steps))
    run([args().iomimic, "fidelity", trace, derived, "--check"])


# A data set of npy and npz files of 24 sizes, read by np.load on two
# threads: np.load of an npy file reads its header and then the array, of an
# npz file zipfile's directory and the member; the last reads of each file
# have its own sizes. Two files in three grow by 4 KiB steps (their reads
# differ by the file's size only: one class a format), the third by odd
# steps (Python's 4 KiB buffer splits their last reads otherwise: a class
# each).
MIXED_DATA = r"""
import numpy as np, sys
for i in range(24):
    x = np.random.default_rng(i).random(2000 + 512 * i + (777 * i if i % 3 == 2 else 0))
    if i % 2:
        np.savez('%s/m%02d.npz' % (sys.argv[1], i), x=x)
    else:
        np.save('%s/m%02d.npy' % (sys.argv[1], i), x)
"""
MIXED_LOADER = r"""
import numpy as np, os, sys, threading, time
d = sys.argv[1]
files = sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(('.npy', '.npz')))
def load(f):
    if f.endswith('.npz'):
        with np.load(f) as z:
            return z['x'].sum()
    return np.load(f).sum()
def work(k):
    for f in files[k::2]:
        load(f)
        time.sleep(0.1)
ts = [threading.Thread(target=work, args=(k,)) for k in range(2)]
[t.start() for t in ts]
[t.join() for t in ts]
"""


def test_derive_mixed_sizes_formats():
    """Files of 24 sizes in two formats: each file is generated at its traced
    size and read with its format's script, whose size-dependent reads are
    the file's size less a constant (docs/derive.md, "The read script")."""
    data = os.path.join(args().work, "mixed_original")
    os.makedirs(data, exist_ok=True)
    subprocess.run([programs.PYTHON, "-c", MIXED_DATA, data], check=True)
    trace = programs.record(MIXED_LOADER, data, "mixed")
    original = measure(trace, data, 1)
    if len(original["bins"]) < 8:
        fail("the mixed data set's reads fall in %d bins only: %s" % (len(original["bins"]),
                                                                     original["bins"]))
    derive_and_run(trace, "mixed", original)
    manifest = os.path.join(args().work, "mixed.yaml")
    with open(manifest) as f:
        text = f.read()
    for want in (r'- "npy 1: open [^"]*file-\d+', r'- "npz 1: open [^"]*file-\d+',
                 r'- "npz_2 1: open', r'data_files:\n    - "\d+ npy"'):
        if not re.search(want, text):
            fail("%s: no %r" % (manifest, want))
    made = sorted(os.path.getsize(os.path.join(root, f))
                  for root, _, names in os.walk(os.path.join(args().work, "data_mixed"))
                  for f in names if not f.startswith("."))
    traced = sorted(os.path.getsize(os.path.join(data, f)) for f in os.listdir(data))
    print("generated sizes %s\ntraced sizes    %s" % (made, traced))
    if len(made) != len(traced) or any(m > t or t - m > 1 for m, t in zip(made, traced)):
        fail("the generated files' sizes are not the traced ones")


# --- iomimic's own runs of the seed study's patterns -----------------------

SEED = {
    # TFRecord files streamed in 256 KiB requests (tf.data's buffer).
    "tfrecord": ("imagenet_tf_cnn", ["dataset.num_files_train=4", "dataset.num_samples_per_file=64",
                                     "reader.batch_size=16", "reader.read_threads=2",
                                     "train.total_training_steps=16"]),
    # Cosmic Tagger: one chunked, compressed HDF5 file, 2 and 6 KiB chunk reads.
    "cosmic": ("cosmic_tagger", ["dataset.num_samples_per_file=640",
                                 "train.total_training_steps=10"]),
    # FFN: 28 KiB reads at random offsets of one large HDF5 volume.
    "ffn": ("ffn", ["dataset.num_samples_per_file=512", "train.total_training_steps=60"]),
    # FRNN: one whole npz file a step.
    "frnn": ("frnn", ["dataset.num_files_train=24"]),
    # CANDLE: the whole CSV file loaded at the start in 256 KiB requests.
    "candle": ("candle_nt3", ["dataset.num_samples_per_file=48", "train.epochs=2"]),
}


def seed(name):
    workload, extra = SEED[name]
    work = args().work
    data = os.path.join(work, "seed_" + name)
    overrides = ["++workload.dataset.data_folder=" + data,
                 "++workload.train.computation_time=0.01",
                 "++workload.iomimic.cache_check_files=0",
                 "++workload.output.folder=" + os.path.join(work, "seed_out")] + \
        ["++workload." + e for e in extra]
    run([args().iomimic, "generate", "workload=" + workload] + overrides)
    trace = os.path.join(work, name + ".strace")
    strace([args().iomimic, "run", "workload=" + workload,
            "++workload.workflow.generate_data=False"] + overrides, trace)
    # One epoch of reads (CANDLE's load happens once, before training).
    derive_and_run(trace, name, measure(trace, data, 1))


def test_derive_seed_tfrecord():
    seed("tfrecord")


def test_derive_seed_cosmic():
    seed("cosmic")


def test_derive_seed_ffn():
    seed("ffn")


def test_derive_seed_frnn():
    seed("frnn")


def test_derive_seed_candle():
    seed("candle")


def test_derive_errors():
    """-o is never overwritten without --force; a trace without data or
    writes is one error naming it; a bad read script is one error naming
    the entry."""
    trace, _ = program("tfrecord", programs.TFRECORD_READER)
    out = os.path.join(args().work, "mine.yaml")
    with open(out, "w") as f:
        f.write("keep me\n")
    p = run([args().iomimic, "derive", trace, "-o", out], expect_ok=False)
    if p.returncode != 1 or "exists (--force overwrites it)" not in p.stderr:
        fail("an existing -o file: exit %d, %r" % (p.returncode, p.stderr))
    with open(out) as f:
        if f.read() != "keep me\n":
            fail("derive overwrote %s without --force" % out)
    run([args().iomimic, "derive", trace, "-o", out, "--force"])
    if "read_script:" not in open(out).read():
        fail("--force did not write the manifest")
    empty = os.path.join(args().work, "empty.strace")
    with open(empty, "w") as f:
        f.write('1 1000.000000 openat(AT_FDCWD</w>, "/usr/lib/x.so", O_RDONLY) = 3</usr/lib/x.so>'
                ' <0.000010>\n1 1000.100000 read(3</usr/lib/x.so>, ""..., 832) = 832 <0.000010>\n')
    p = run([args().iomimic, "derive", empty, "-o", os.path.join(args().work, "e.yaml")],
            expect_ok=False)
    errors = [line for line in p.stderr.splitlines() if line.startswith("iomimic: error:")]
    if p.returncode != 1 or len(errors) != 1 or "empty.strace" not in errors[0] or \
            "reads no data file" not in errors[0]:
        fail("a trace without data: exit %d, %r" % (p.returncode, p.stderr))
    bad = os.path.join(args().work, "bad.yaml")
    with open(out) as f:
        text = re.sub(r'(read_script:\n\s*- )"[^"]*"', r'\1"1: 8 x"', f.read())
    with open(bad, "w") as f:
        f.write(text)
    p = run([args().iomimic, "run", bad,
             "++workload.dataset.data_folder=" + os.path.join(args().work, "d"),
             "++workload.output.folder=" + os.path.join(args().work, "o")], expect_ok=False)
    errors = [line for line in p.stderr.splitlines() if line.startswith("iomimic: error:")]
    if p.returncode != 1 or len(errors) != 1 or "iomimic.read_script entry 1" not in errors[0]:
        fail("a bad read script: exit %d, %r" % (p.returncode, p.stderr))


if __name__ == "__main__":
    harness.main(globals())
