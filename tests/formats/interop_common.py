"""What every interoperability script in tests/formats/ shares.

Each script (tests/formats/<name>_interop.py, registered as ctest
interop.<name>) runs the real iomimic binary and checks what it wrote or read
with the real peers (numpy, h5py, PIL, DuckDB...). They all take the same
arguments, fail the same way and run commands the same way:

    import interop_common as common
    from interop_common import fail, run

    def main():
        args = common.setup(__doc__)   # --iomimic BIN --source REPO --work DIR
        run([args.iomimic, "generate", common.workload("unet3d_a100"), ...])
        ...
        print("PASS")

fail() prints "FAIL: ..." and exits 1; a script prints PASS and exits 0, or
exits 77 when a peer it needs is missing (SKIP).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys

# The parsed arguments, set by setup(): iomimic, source and work, absolute.
ARGS = argparse.Namespace(iomimic=None, source=None, work=None)


def setup(doc, clean=True, subfolders=()):
    """Parses --iomimic, --source and --work (made absolute) into ARGS and
    returns it. With clean, the work folder is emptied first; otherwise only
    `subfolders` of it are removed (a script that keeps other files there)."""
    parser = argparse.ArgumentParser(description=(doc or "").strip().splitlines()[0]
                                     if doc else None)
    parser.add_argument("--iomimic", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    for key in ("iomimic", "source", "work"):
        setattr(ARGS, key, os.path.abspath(getattr(args, key)))
    if clean:
        shutil.rmtree(ARGS.work, ignore_errors=True)
    for sub in subfolders:
        shutil.rmtree(os.path.join(ARGS.work, sub), ignore_errors=True)
    os.makedirs(ARGS.work, exist_ok=True)
    return ARGS


def fail(msg):
    """Reports a finding and ends the script with exit code 1."""
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def run(cmd, cwd=None, expect_ok=True, timeout=600, tail=None):
    """Runs `cmd` in `cwd` (default: the work folder), echoing it and its
    output (the last `tail` characters of each stream when given); fails the
    script on a non-zero exit unless expect_ok is False. Returns the
    CompletedProcess."""
    print("$ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, cwd=cwd or ARGS.work, capture_output=True, text=True,
                       timeout=timeout)
    sys.stdout.write(p.stdout[-tail:] if tail else p.stdout)
    sys.stdout.write(p.stderr[-tail:] if tail else p.stderr)
    if expect_ok and p.returncode != 0:
        fail("command failed with exit code %d: %s" % (p.returncode, " ".join(cmd)))
    return p


def workload(name):
    """The path of a shipped workload file, workloads/<name>.yaml."""
    return os.path.join(ARGS.source, "workloads", name + ".yaml")


def summary(out):
    """The summary.json of result folder `out`; fails when it is missing."""
    path = os.path.join(out, "summary.json")
    if not os.path.exists(path):
        fail("summary.json missing from " + out)
    with open(path) as f:
        return json.load(f)


def shard_overrides(fmt, data, out, files, samples, dims, dtype, extra=()):
    """Overrides of the quickstart workload for a small shard dataset (the
    webdataset and mds checks): `files` training files of `samples` samples
    of shape `dims` and element type `dtype` in `data`, no evaluation, one
    epoch without compute, results in `out`."""
    return ["++workload.dataset.format=" + fmt,
            "++workload.dataset.data_folder=" + data,
            "++workload.dataset.num_files_train=%d" % files,
            "++workload.dataset.num_files_eval=0",
            "++workload.dataset.num_subfolders_train=0",
            "++workload.dataset.num_samples_per_file=%d" % samples,
            "++workload.dataset.record_dims=[%s]" % ",".join(map(str, dims)),
            "++workload.dataset.record_element_type=" + dtype,
            "++workload.dataset.record_length_bytes_stdev=0",
            "++workload.output.folder=" + out,
            "++workload.workflow.evaluation=False",
            "++workload.train.epochs=1", "++workload.train.computation_time=0",
            "++workload.reader.batch_size=2"] + list(extra)
