#!/usr/bin/python3
"""Interoperability test of the gds storage plugin (GPUDirect-style staging).

Usage: gds_storage_interop.py --iomimic BIN --source REPO --work DIR

1. Generates a shrunk unet3d_a100 npz dataset with the posix back end and
   checks that numpy loads it; generates it again through gds (writes are
   pwrite from host memory) and checks the files are byte-identical.
2. Trains on it with ++workload.storage.backend=gds and
   ++workload.reader.decode=False (checkpoints, if any, go to posix: they need
   host buffers). summary.json must name the gds plugin and the data path that
   fits this machine: "emulated" without a GPU, "cufile" or "cuda-bounce" with
   one; bytes_read > 0; and the plugin's report line (report=true) must
   account for every byte the core counted (staged to device memory + read
   into host memory).
3. The same with direct=true (O_DIRECT reads): alignment 4096 in summary.json.
4. Refusals, each before the run starts and as exactly one error line:
   decode True with a device-memory back end, and (without a GPU) a forced
   mode=cufile naming what is missing.

Exit status 0 and "PASS" on success; "FAIL: ..." and 1 otherwise.
"""

import ctypes
import filecmp
import glob
import json
import os
import re
import subprocess
import sys

import interop_common as interop
from interop_common import fail, run

ARGS = None


def gpu_present():
    """True when a CUDA driver reports at least one device (checked the way
    the plugin's probe would see it, without needing CUDA at build time)."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    count = ctypes.c_int(0)
    if cuda.cuInit(0) != 0 or cuda.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return False
    return count.value > 0


def load_json(path):
    def no_constants(name):
        fail("%s contains %s, which is not JSON" % (path, name))
    with open(path) as f:
        return json.load(f, parse_constant=no_constants)


def error_lines(stderr):
    return [l for l in stderr.splitlines() if l.strip() and "warning" not in l]


def expect_refusal(cmd, pattern, out_folder):
    p = run(cmd, expect_ok=False)
    lines = error_lines(p.stderr)
    if p.returncode == 0:
        fail("expected a refusal from: " + " ".join(cmd))
    if len(lines) != 1 or not lines[0].startswith("iomimic: error: "):
        fail("expected exactly one 'iomimic: error:' line, got:\n" + p.stderr)
    if not re.search(pattern, lines[0]):
        fail("error line %r does not match %r" % (lines[0], pattern))
    if "training:" in p.stdout or os.path.exists(os.path.join(out_folder, "summary.json")):
        fail("the refused run started anyway")
    print("refused as expected: " + lines[0])


REPORT = re.compile(
    r"iomimic: gds: rank 0: data path (\S+) \[.*\]: staged (\d+) bytes into device memory in "
    r"(\d+) reads \(storage ([\d.]+) s, host-to-device ([\d.]+) s\); (\d+) bytes in (\d+) reads "
    r"went to host memory")
CHOICE = re.compile(r"iomimic: gds: rank 0: data path (\S+) \((.*)\)$")


def check_gds_run(out, stderr, gpu, direct):
    s = load_json(os.path.join(out, "summary.json"))
    io = s["iomimic"]
    storage = io["plugins"]["storage"]
    if storage["name"] != "gds":
        fail("the run used storage %r, not gds" % storage["name"])
    if "device-memory" not in storage["capabilities"]:
        fail("gds must advertise device-memory, got %r" % storage["capabilities"])
    path = storage["data_path"]
    if gpu:
        if path not in ("cufile", "cuda-bounce"):
            fail("a GPU is present but data_path is %r" % path)
    elif path != "emulated":
        fail("no GPU here, so data_path must be 'emulated', got %r" % path)
    if storage["alignment"] != (4096 if direct or path == "cufile" else 1):
        fail("unexpected alignment %r (direct=%s, path %s)" % (storage["alignment"], direct, path))
    if io["bytes_read"] <= 0:
        fail("no bytes read were counted")
    if s["metric"]["train_throughput_mean_samples_per_second"] <= 0:
        fail("no training throughput")

    choice = [m for m in map(CHOICE.match, stderr.splitlines()) if m]
    if len(choice) != 1 or choice[0].group(1) != path:
        fail("expected one line logging the data path choice %r, got:\n%s" % (path, stderr))
    reason = choice[0].group(2)
    if path == "emulated" and not re.search(
            r"cudaGetDeviceCount (returned \d+|reported 0)|libcudart not found", reason):
        fail("the emulated choice must say why (driver, device or runtime), got %r" % reason)
    report = [m for m in map(REPORT.search, stderr.splitlines()) if m]
    if len(report) != 1:
        fail("expected one statistics line from report=true, got:\n" + stderr)
    r = report[0]
    staged, device_reads = int(r.group(2)), int(r.group(3))
    host_bytes, host_reads = int(r.group(6)), int(r.group(7))
    if r.group(1) != path:
        fail("the statistics line names path %r, summary.json %r" % (r.group(1), path))
    stats = storage.get("statistics", {})
    if stats.get("gds_staged_bytes") != staged or stats.get("gds_host_bytes") != host_bytes:
        fail("summary.json's storage statistics %s differ from the report line (%d staged, "
             "%d host)" % (stats, staged, host_bytes))
    if not stats.get("gds_storage_seconds", 0) > 0:
        fail("no storage time in the statistics: %s" % stats)
    if staged + host_bytes != io["bytes_read"]:
        fail("gds accounted %d staged + %d host bytes, the core counted %d read"
             % (staged, host_bytes, io["bytes_read"]))
    print("data path %s (%s); staged %d bytes in %d reads, %d bytes in %d reads to host memory"
          % (path, reason, staged, device_reads, host_bytes, host_reads))
    # Without decoding, npz reads a stored member's bytes into the back end's
    # own (device) buffers; only the ZIP and NPY headers go to host memory.
    if staged < 0.95 * io["bytes_read"]:
        fail("only %d of %d bytes went through the device path" % (staged, io["bytes_read"]))
    return s


def main():
    global ARGS
    # Only this script's own folders are cleared, so a rerun starts afresh.
    ARGS = interop.setup(__doc__, clean=False, subfolders=("data", "gen", "data-gds", "gen-gds", "out", "out-direct", "refused-decode",
                "refused-cufile", "refused-bounce"))
    manifest = os.path.join(ARGS.source, "workloads", "unet3d_a100.yaml")
    data = os.path.join(ARGS.work, "data")
    shrink = [
        "++workload.dataset.data_folder=" + data,
        "++workload.dataset.num_files_train=8",
        "++workload.dataset.record_length_bytes=1048576",
        "++workload.dataset.record_length_bytes_stdev=262144",
        "++workload.dataset.record_length_bytes_resize=4096",
        "++workload.reader.batch_size=2",
        "++workload.train.epochs=2",
        "++workload.train.computation_time=0.001",
    ]
    gpu = gpu_present()
    print("GPU present: %s" % gpu)

    # 1. Generate with posix; numpy must load the files.
    run([ARGS.iomimic, "generate", manifest, "++workload.storage.backend=posix",
         "++workload.output.folder=" + os.path.join(ARGS.work, "gen")] + shrink)
    files = sorted(glob.glob(os.path.join(data, "**", "*.npz"), recursive=True))
    if len(files) != 8:
        fail("expected 8 npz files, found %d" % len(files))
    code = r"""
import sys, numpy as np
for path in sys.argv[1:]:
    x = np.load(path)["x"]
    assert x.size > 0, path
print("numpy loaded", len(sys.argv) - 1, "files")
"""
    p = subprocess.run(["/usr/bin/python3", "-c", code] + files, capture_output=True, text=True)
    sys.stdout.write(p.stdout + p.stderr)
    if p.returncode != 0:
        fail("numpy could not load the generated npz files")

    # Generation through gds (pwrite from host memory) writes the same bytes.
    data_gds = os.path.join(ARGS.work, "data-gds")
    run([ARGS.iomimic, "generate", manifest, "++workload.storage.backend=gds",
         "++workload.reader.decode=False", "++workload.checkpoint.backend=posix",
         "++workload.output.folder=" + os.path.join(ARGS.work, "gen-gds")] +
        shrink + ["++workload.dataset.data_folder=" + data_gds])
    for path in files:
        twin = os.path.join(data_gds, os.path.relpath(path, data))
        if not os.path.exists(twin) or not filecmp.cmp(path, twin, shallow=False):
            fail("%s written through gds differs from the posix-generated file" % twin)
    print("generation through gds wrote the same %d files" % len(files))

    # 2. Train on gds with decode off; 3. the same with O_DIRECT reads.
    gds = ["++workload.storage.backend=gds", "++workload.reader.decode=False",
           "++workload.checkpoint.backend=posix", "++workload.storage.options.report=true"]
    for tag, extra in (("out", []), ("out-direct", ["++workload.storage.options.direct=true"])):
        out = os.path.join(ARGS.work, tag)
        p = run([ARGS.iomimic, "run", manifest, "++workload.output.folder=" + out] + shrink +
                gds + extra)
        check_gds_run(out, p.stderr, gpu, direct=bool(extra))

    # 4. Refusals before the run starts.
    out = os.path.join(ARGS.work, "refused-decode")
    expect_refusal([ARGS.iomimic, "run", manifest, "++workload.output.folder=" + out,
                    "++workload.storage.backend=gds", "++workload.reader.decode=True",
                    "++workload.checkpoint.backend=posix"] + shrink,
                   r"format 'npz' decodes samples in host memory, but storage 'gds' lands data "
                   r"in device memory; set reader\.decode: False", out)
    if not gpu:
        out = os.path.join(ARGS.work, "refused-cufile")
        expect_refusal([ARGS.iomimic, "run", manifest, "++workload.output.folder=" + out,
                        "++workload.storage.backend=gds", "++workload.reader.decode=False",
                        "++workload.storage.options.mode=cufile",
                        "++workload.checkpoint.backend=posix"] + shrink,
                       r"storage plugin 'gds': mode=cufile needs libcufile and a CUDA GPU: "
                       r"(no CUDA driver|no CUDA device|libcudart not found|CUDA unusable)", out)
        out = os.path.join(ARGS.work, "refused-bounce")
        expect_refusal([ARGS.iomimic, "run", manifest, "++workload.output.folder=" + out,
                        "++workload.storage.backend=gds", "++workload.reader.decode=False",
                        "++workload.storage.options.mode=cuda-bounce",
                        "++workload.checkpoint.backend=posix"] + shrink,
                       r"storage plugin 'gds': mode=cuda-bounce needs a CUDA GPU", out)
    print("PASS")


if __name__ == "__main__":
    main()
