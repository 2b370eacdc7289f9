#!/usr/bin/python3
"""Interoperability test of the synthetic format plugin.

Usage: synthetic_interop.py --iomimic BIN --source REPO --work DIR

No shipped DLIO workload uses format synthetic, so iomimic's quickstart.yaml
runs with ++workload.dataset.format=synthetic (shrunk: fewer files, 2 epochs,
short compute and eval time). It
  1. runs `iomimic generate` and checks DLIO's synthetic dataset: one tiny
     text file per data file, named <prefix>_<i>_of_<N>.synthetic, holding
     the file's global index (train files first, then eval files) in decimal;
  2. runs the workload and checks that the pipeline ran (every train and eval
     step, a positive throughput) while the storage moved no data at all:
     no file opened, no read request, no byte read.
Prints PASS and exits 0, or prints what is wrong and exits 1.
"""

import glob
import json
import os
import re

import interop_common as interop
from interop_common import fail, run

ARGS = None


def main():
    global ARGS
    ARGS = interop.setup(__doc__)

    data, out = os.path.join(ARGS.work, "data"), os.path.join(ARGS.work, "out")
    train, evals, epochs = 64, 8, 2
    manifest = os.path.join(ARGS.source, "workloads", "quickstart.yaml")
    overrides = [
        "++workload.dataset.format=synthetic",
        "++workload.dataset.data_folder=" + data,
        "++workload.dataset.num_files_train=%d" % train,
        "++workload.dataset.num_files_eval=%d" % evals,
        "++workload.train.epochs=%d" % epochs,
        "++workload.train.computation_time=0.001",
        "++workload.evaluation.eval_time=0.001",
        "++workload.output.folder=" + out,
    ]
    run([ARGS.iomimic, "generate", manifest] + overrides, ARGS.work)

    # 1. The tiny index files (quickstart has 2 subfolders per split).
    name = re.compile(r"^img_(\d+)_of_(\d+)\.synthetic$")
    seen = {"train": set(), "valid": set()}
    for path in glob.glob(os.path.join(data, "**", "*"), recursive=True):
        if os.path.isdir(path):
            continue
        split = os.path.relpath(path, data).split(os.sep)[0]
        m = name.match(os.path.basename(path))
        if split not in seen or not m:
            fail("unexpected file " + path)
        index, total = int(m.group(1)), int(m.group(2))
        if total != (train if split == "train" else evals):
            fail("%s: says _of_%d" % (path, total))
        expected = str(index if split == "train" else train + index)
        with open(path, "rb") as f:
            content = f.read()
        if content != expected.encode():
            fail("%s: holds %r, expected the global file index %r" % (path, content, expected))
        seen[split].add(index)
    if seen["train"] != set(range(train)) or seen["valid"] != set(range(evals)):
        fail("missing files: train %s, valid %s" % (sorted(seen["train"]), sorted(seen["valid"])))
    print("checked %d train and %d eval index files" % (train, evals))

    # 2. The run: the pipeline alone.
    run([ARGS.iomimic, "run", manifest] + overrides, ARGS.work)
    with open(os.path.join(out, "summary.json")) as f:
        s = json.load(f)
    io_ = s["iomimic"]
    moved = {k: io_[k] for k in ("files_opened", "read_requests", "bytes_read")}
    if any(moved.values()):
        fail("format synthetic must not read anything, but the run did: %s" % moved)
    if io_["train_steps_per_epoch"] <= 0 or io_["eval_steps_per_epoch"] <= 0:
        fail("no steps were planned: %s" % {k: io_[k] for k in
                                            ("train_steps_per_epoch", "eval_steps_per_epoch")})
    throughput = s["metric"]["train_throughput_mean_samples_per_second"]
    if not throughput > 0:
        fail("train throughput %r: the pipeline did not run" % throughput)
    if len(s["metric"]["train_au_percentage"]) != epochs:
        fail("expected %d epochs in the summary" % epochs)
    print("run: %d train steps per epoch, %.0f samples/s, %s" % (
        io_["train_steps_per_epoch"], throughput, moved))
    print("PASS")


if __name__ == "__main__":
    main()
