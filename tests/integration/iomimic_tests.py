#!/usr/bin/python3
"""End-to-end tests of the iomimic binary, run by ctest.

Usage: iomimic_tests.py <test-name> --iomimic BIN --source DIR --work DIR

Each test runs the real binary on small manifests in its own work folder and
checks files, exit codes and messages. Interoperability checks use Debian's
/usr/bin/python3 with numpy. Exit status 0 = pass; a failing test prints why.
"""

import argparse
import csv
import glob
import json
import os
import re
import struct
import shutil
import subprocess
import sys

ARGS = None


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def run(cmd, expect_ok=True, env=None, timeout=600):
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    print("$ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, cwd=ARGS.work, capture_output=True, text=True, env=full_env,
                       timeout=timeout)
    sys.stdout.write(p.stdout)
    sys.stdout.write(p.stderr)
    if expect_ok and p.returncode != 0:
        fail("command failed with exit code %d: %s" % (p.returncode, " ".join(cmd)))
    return p


def mpirun(n, cmd, **kw):
    launcher = ["mpirun", "-np", str(n), "--oversubscribe"]
    if os.geteuid() == 0:
        launcher.append("--allow-run-as-root")
    return run(launcher + cmd, **kw)


# One line of `strace -f` output, with or without -ttt's timestamp: the
# thread, then the call or the resumed half of one.
STRACE_CALL_LINE = re.compile(r"^(\d+)\s+(?:\d+\.\d+\s+)?(.*)$")
STRACE_CALL = re.compile(r"^(\w+)\((.*)$")
STRACE_RESUMED = re.compile(r"^<\.\.\. (\w+) resumed>(.*)$")


def strace_calls(path):
    """Yields (call, text after the '(' up to and with the result) for each
    finished call of an `strace -f` log, a call's unfinished and resumed
    halves joined; signals and exits are skipped."""
    pending = {}
    with open(path, errors="replace") as f:
        for raw in f:
            m = STRACE_CALL_LINE.match(raw.rstrip("\n"))
            if not m:
                continue
            pid, rest = m.group(1), m.group(2)
            r = STRACE_RESUMED.match(rest)
            if r:
                if pid not in pending:
                    continue
                call, text = pending.pop(pid)
                text += r.group(2)
            else:
                c = STRACE_CALL.match(rest)
                if not c:
                    continue
                call, text = c.group(1), c.group(2)
                if "<unfinished ...>" in text:
                    pending[pid] = (call, text[: text.index("<unfinished ...>")])
                    continue
            yield call, text


def small_overrides(data, out, files=16, eval_files=0, epochs=2, compute=0.002, extra=()):
    ov = [
        "++workload.workflow.generate_data=True",
        "++workload.dataset.data_folder=" + data,
        "++workload.dataset.num_files_train=%d" % files,
        "++workload.dataset.num_files_eval=%d" % eval_files,
        "++workload.train.epochs=%d" % epochs,
        "++workload.train.computation_time=%s" % compute,
        "++workload.output.folder=" + out,
    ]
    return ov + list(extra)


def workload(name):
    return os.path.join(ARGS.source, "workloads", name + ".yaml")


# --- docs/dlio-compat.md §5.2: key -> type ------------------------------------
SUMMARY_TOP = [
    ("start", str), ("num_accelerators", int), ("num_hosts", int), ("hostname", str),
    ("metric", dict), ("num_files_train", int), ("num_files_eval", int),
    ("num_samples_per_file", int), ("host_cpu_count", list), ("host_processor_name", str),
    ("potential_caching", list), ("host_cpuinfo", dict), ("host_meminfo", dict),
    ("host_memory_GB", list), ("data_size_per_host_GB", float), ("epochs", int), ("end", str),
]
TRAIN_METRICS = [
    ("train_au_percentage", list), ("train_au_mean_percentage", float),
    ("train_au_meet_expectation", str), ("train_au_stdev_percentage", float),
    ("train_throughput_samples_per_second", list),
    ("train_throughput_mean_samples_per_second", float),
    ("train_throughput_stdev_samples_per_second", float),
    ("train_io_mean_MB_per_second", float), ("train_io_stdev_MB_per_second", float),
]
EVAL_METRICS = [(k.replace("train_", "eval_", 1), t) for k, t in TRAIN_METRICS]
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}$")


def check_type(where, value, typ):
    if typ is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif typ is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, typ)
    if not ok:
        fail("%s: expected %s, got %r" % (where, typ.__name__, value))


def load_strict_json(path):
    def no_constants(name):
        fail("%s contains %s, which is not JSON" % (path, name))
    with open(path) as f:
        return json.load(f, parse_constant=no_constants)


def check_summary(path, eval_expected, accelerators):
    s = load_strict_json(path)
    keys = [k for k in s.keys() if k != "iomimic"]
    expected_keys = [k for k, _ in SUMMARY_TOP]
    if keys != expected_keys:
        fail("summary.json keys %s differ from DLIO's %s" % (keys, expected_keys))
    for k, t in SUMMARY_TOP:
        check_type("summary." + k, s[k], t)
    for k in ("start", "end"):
        if not TIMESTAMP.match(s[k]):
            fail("summary.%s=%r is not DLIO's timestamp format" % (k, s[k]))
    want = TRAIN_METRICS + (EVAL_METRICS if eval_expected else [])
    got = list(s["metric"].keys())
    if got != [k for k, _ in want]:
        fail("metric keys %s differ from %s" % (got, [k for k, _ in want]))
    for k, t in want:
        check_type("metric." + k, s["metric"][k], t)
    for v in s["metric"]["train_au_percentage"] + s["metric"]["train_throughput_samples_per_second"]:
        check_type("metric list entry", v, float)
    if len(s["metric"]["train_au_percentage"]) != s["epochs"]:
        fail("one AU value per epoch expected")
    if s["metric"]["train_au_meet_expectation"] not in ("success", "fail"):
        fail("train_au_meet_expectation must be success or fail")
    if s["num_accelerators"] != accelerators:
        fail("num_accelerators is %d, expected %d" % (s["num_accelerators"], accelerators))
    if s["num_hosts"] != 1:
        fail("num_hosts is %d, expected 1 on one machine" % s["num_hosts"])
    io = s["iomimic"]
    for k in ("bytes_read", "bytes_written", "sample_read_latency_ms", "plugins", "manifest",
              "units"):
        if k not in io:
            fail("iomimic.%s missing" % k)
    if io["bytes_read"] <= 0:
        fail("no bytes read were counted")
    for q in ("p50", "p90", "p99", "max"):
        check_type("iomimic.sample_read_latency_ms." + q, io["sample_read_latency_ms"][q], float)
    return s


# --- tests -------------------------------------------------------------------

def test_quickstart_npz_interop():
    """Generate + train with npz/posix; numpy loads every file with the right shape and dtype."""
    data, out = os.path.join(ARGS.work, "data"), os.path.join(ARGS.work, "out")
    run([ARGS.iomimic, "run", workload("quickstart")] + small_overrides(
        data, out, files=12, eval_files=4, extra=[
            "++workload.dataset.num_samples_per_file=3",
            "++workload.dataset.record_length_bytes=3000",
            "++workload.dataset.record_length_bytes_stdev=500",
            "++workload.dataset.record_element_type=float32",
            "++workload.reader.batch_size=3", "++workload.reader.batch_size_eval=2",
            "++workload.evaluation.eval_time=0.001"]))
    check_summary(os.path.join(out, "summary.json"), eval_expected=True, accelerators=1)
    files = sorted(glob.glob(os.path.join(data, "**", "*.npz"), recursive=True))
    if len(files) != 16:
        fail("expected 16 npz files, found %d" % len(files))
    code = r"""
import sys, numpy as np
for path in sys.argv[1:]:
    z = np.load(path)
    x, y = z["x"], z["y"]
    assert x.dtype == np.float32, (path, x.dtype)
    assert x.ndim == 3 and x.shape[2] == 3, (path, x.shape)
    assert 1 <= x.shape[0] <= 200 and 1 <= x.shape[1] <= 200, (path, x.shape)
    assert y.shape == (3,), (path, y.shape)
print("numpy loaded", len(sys.argv) - 1, "files")
"""
    p = subprocess.run(["/usr/bin/python3", "-c", code] + files, capture_output=True, text=True)
    sys.stdout.write(p.stdout + p.stderr)
    if p.returncode != 0:
        fail("numpy could not load the generated npz files")
    checker = os.path.join(ARGS.source, "tests", "interop", "check_npz.py")
    if os.path.exists(checker):
        p = subprocess.run(["/usr/bin/python3", checker, data, "--dtype", "float32",
                            "--samples", "3"], capture_output=True, text=True)
        sys.stdout.write(p.stdout + p.stderr)
        if p.returncode != 0:
            fail("check_npz.py rejected the generated files")
    for name in ("0_per_epoch_stats.json", "0_output.json", "status.json",
                 ".hydra/config.yaml", ".hydra/overrides.yaml"):
        if not os.path.exists(os.path.join(out, name)):
            fail(name + " missing from the run folder")
    cfg = open(os.path.join(out, ".hydra", "config.yaml")).read()
    if not cfg.startswith("workload:"):
        fail("config.yaml must have the root key 'workload'")


def test_rerun_skips_complete_files_and_keeps_results():
    data, out = os.path.join(ARGS.work, "data"), os.path.join(ARGS.work, "out")
    ov = small_overrides(data, out, files=8, epochs=1)
    run([ARGS.iomimic, "generate", workload("default")] + ov)
    p = run([ARGS.iomimic, "generate", workload("default")] + ov)
    if "0 files" not in p.stdout and "8 already complete" not in p.stdout:
        fail("a second generation should skip the 8 complete files")
    # A partial file from an interrupted generation never has the final name.
    leftovers = glob.glob(os.path.join(data, "**", "*.iomimic-partial"), recursive=True)
    if leftovers:
        fail("partial files left behind: %s" % leftovers)
    run([ARGS.iomimic, "run", workload("default")] + ov)
    # Running again into the same folder must not overwrite the results.
    p = run([ARGS.iomimic, "run", workload("default")] + ov, expect_ok=False)
    if p.returncode == 0 or "already holds the results" not in p.stderr:
        fail("a second run into the same output folder must be refused")
    # A file of the wrong size under a final name is refused, not overwritten.
    victim = sorted(glob.glob(os.path.join(data, "train", "*", "*.npz")))[0]
    with open(victim, "ab") as f:
        f.write(b"user data")
    size = os.path.getsize(victim)
    p = run([ARGS.iomimic, "generate", workload("default")] + ov, expect_ok=False)
    if p.returncode == 0 or "refusing to overwrite" not in p.stderr:
        fail("generation must refuse a file of unexpected size")
    if os.path.getsize(victim) != size:
        fail("the user's file was modified")


# Every format that writes files, and the compression it can change to (issue
# 31: generating again with other parameters must not reuse the old files).
REGEN_FORMATS = [("npz", "zip"), ("npy", None), ("hdf5", "gzip"), ("png", None),
                 ("tiff", None), ("jpeg", None), ("tfrecord", None), ("csv", None),
                 ("parquet", "snappy"), ("indexed_binary", None), ("mmap_indexed_binary", None)]
IMAGE_FORMATS = ("png", "tiff", "jpeg")  # one sample per file


def regen_state(data):
    """{file name: (size, first 4 KiB)} of every data file under data/train."""
    out = {}
    for path in glob.glob(os.path.join(data, "train", "**", "*"), recursive=True):
        if os.path.isfile(path) and not os.path.basename(path).startswith("."):
            with open(path, "rb") as f:
                out[os.path.relpath(path, data)] = (os.path.getsize(path), f.read(4096))
    return out


def regenerate(fmt, data, out, step, changes):
    ov = ["++workload.dataset.format=" + fmt, "++workload.dataset.data_folder=" + data,
          "++workload.dataset.num_files_train=4", "++workload.dataset.num_files_eval=0",
          "++workload.dataset.record_length_bytes_stdev=0",
          "++workload.output.folder=%s-%d" % (out, step)] + changes
    if fmt == "tfrecord":
        ov += ["++workload.framework=tensorflow", "++workload.reader.data_loader=tensorflow"]
    return run([ARGS.iomimic, "generate", workload("default")] + ov)


def test_metadata_workflow():
    """workflow.metadata (core/src/metadata/): every file stat'ed
    train.epochs times over by 2 ranks, beside training, with its own summary
    keys, histogram, events and console line; a missing file is an error
    naming it."""
    data = os.path.join(ARGS.work, "data")
    out = os.path.join(ARGS.work, "out")
    ov = small_overrides(data, out, files=16, eval_files=4, epochs=3,
                         extra=["++workload.workflow.metadata=True",
                                "++workload.workflow.evaluation=True"])
    p = mpirun(2, [ARGS.iomimic, "run", workload("quickstart")] + ov)
    s = json.load(open(os.path.join(out, "summary.json")))
    m = s["iomimic"].get("metadata")
    if not m:
        fail("summary.json has no iomimic.metadata")
    if (m["files"], m["passes"], m["stats"]) != (20, 3, 60):
        fail("metadata: files, passes, stats %r, expected (20, 3, 60)" % (
            (m["files"], m["passes"], m["stats"]),))
    sizes = sum(os.path.getsize(f) for f in glob.glob(os.path.join(data, "*", "*", "*.npz")))
    if m["bytes_listed"] != 3 * sizes:
        fail("metadata: bytes_listed %d, expected 3 x %d" % (m["bytes_listed"], sizes))
    if m["latency_ms"]["count"] != 60:
        fail("metadata latency count %d" % m["latency_ms"]["count"])
    if s["iomimic"]["latency_ms"]["metadata_stat"]["count"] != 60:
        fail("histograms: metadata_stat is not the workflow's 60 stats")
    if s["iomimic"]["latency_ms"]["storage_stat"]["count"] < 60:
        fail("the stats did not go through the counting storage")
    if s["epochs"] != 3 or not s["metric"].get("train_au_percentage"):
        fail("training beside the metadata workflow lost its figures")
    passes = [r for r in csv.DictReader(open(os.path.join(out, "events.csv")))
              if r["event"] == "stat_pass"]
    if sorted(r["rank"] for r in passes) != ["0", "1"]:
        fail("events.csv: one stat_pass per rank expected, got %r" % passes)
    if "metadata: 60 stats of 20 files" not in p.stdout:
        fail("no metadata line on the console")
    # Its figures reach compare through its own list (output/figures.h) and
    # its row of run/'s table: a run without training has them too.
    out3 = os.path.join(ARGS.work, "out3")
    run([ARGS.iomimic, "run", workload("quickstart"), "++workload.workflow.train=False",
         "++workload.workflow.generate_data=False"] +
        [o for o in ov if "generate_data" not in o and "output.folder" not in o] +
        ["++workload.output.folder=" + out3])
    p = run([ARGS.iomimic, "compare", out, out3])
    # The figure table: a 24-character name column, then A, B, B/A.
    rows = {line[:24].strip(): line[24:].split() for line in p.stdout.splitlines()}
    stats = rows.get("metadata stats/s", [])
    if len(stats) != 3 or "-" in stats:
        fail("compare shows no metadata stats/s of both runs:\n" + p.stdout)
    if abs(float(stats[0]) - m["stats_per_second"]) > 0.01 * m["stats_per_second"]:
        fail("compare's metadata stats/s %s is not summary.json's %g" % (
            stats[0], m["stats_per_second"]))
    for name in ("train AU %", "sample read p50 ms"):
        if rows.get(name, [None, None])[1] != "-" or rows[name][0] == "-":
            fail("compare: %s should be present for the training run only:\n%s" % (name,
                                                                                   p.stdout))
    victim = sorted(glob.glob(os.path.join(data, "train", "*", "*.npz")))[5]
    os.remove(victim)
    ov = [o for o in ov if "generate_data" not in o and "output.folder" not in o]
    p = run([ARGS.iomimic, "run", workload("quickstart"), "++workload.workflow.train=False",
             "++workload.workflow.generate_data=False",
             "++workload.output.folder=" + os.path.join(ARGS.work, "out2")] + ov,
            expect_ok=False)
    if p.returncode == 0 or not re.search(r"metadata workflow: .*" + re.escape(victim), p.stderr):
        fail("a missing file should fail the metadata workflow and be named")


def test_regeneration_follows_parameters():
    """For every format: generating again with another record length, another
    number of samples per file or another compression writes the files again
    (and says which parameter changed); with the same parameters it skips
    them. Before issue 31, content-sized formats (images, csv, hdf5,
    compressed parquet) kept the old files."""
    for fmt, compression in REGEN_FORMATS:
        data = os.path.join(ARGS.work, "data-" + fmt)
        out = os.path.join(ARGS.work, "out-" + fmt)
        n1, n2 = ("1", "1") if fmt in IMAGE_FORMATS else ("4", "8")
        base = ["++workload.dataset.record_length_bytes=16384",
                "++workload.dataset.num_samples_per_file=" + n1]
        steps = [(base, None),
                 (base, "0 files"),  # the same parameters: every file skipped
                 (["++workload.dataset.record_length_bytes=4096",
                   "++workload.dataset.num_samples_per_file=" + n1], "shape")]
        if n1 != n2:
            steps.append((["++workload.dataset.record_length_bytes=4096",
                           "++workload.dataset.num_samples_per_file=" + n2], "samples"))
        if compression:
            steps.append((["++workload.dataset.record_length_bytes=4096",
                           "++workload.dataset.num_samples_per_file=" + n2,
                           "++workload.dataset.compression=" + compression], "compression"))
        before = None
        for k, (changes, expect) in enumerate(steps):
            p = regenerate(fmt, data, out, k, changes)
            state = regen_state(data)
            if not state:
                fail("%s: no data files under %s" % (fmt, data))
            if expect == "0 files":
                if "generated 0 files (4 already complete)" not in p.stdout or state != before:
                    fail("%s: the same parameters did not skip the complete files" % fmt)
            elif expect is not None:
                if "written again: made with other generation parameters (%s " % expect \
                        not in p.stdout:
                    fail("%s: changing %s did not write the files again:\n%s" %
                         (fmt, expect, p.stdout))
                if state == before:
                    fail("%s: changing %s left the files as they were" % (fmt, expect))
            before = state


def test_default_workload_runs_shrunk():
    """DLIO's default.yaml, unmodified, with overrides that only shrink it."""
    data, out = os.path.join(ARGS.work, "data"), os.path.join(ARGS.work, "out")
    shared = os.path.join(ARGS.source, "..", "shared", "dlio-workloads", "default.yaml")
    manifest = shared if os.path.exists(shared) else workload("default")
    run([ARGS.iomimic, "run", manifest] + small_overrides(
        data, out, files=16, eval_files=4, epochs=2, compute=0.005,
        extra=["++workload.evaluation.eval_time=0.002"]))
    s = check_summary(os.path.join(out, "summary.json"), eval_expected=True, accelerators=1)
    if s["epochs"] != 2:
        fail("expected 2 epochs")


def test_all_workloads_parse():
    dirs = [os.path.join(ARGS.source, "workloads")]
    count = 0
    for d in dirs:
        for path in sorted(glob.glob(os.path.join(d, "*.yaml"))):
            p = run([ARGS.iomimic, "config", path], expect_ok=False)
            if p.returncode != 0:
                fail("%s does not parse: %s" % (path, p.stderr.strip()))
            if "error" in p.stderr:
                fail("%s: unexpected error output: %s" % (path, p.stderr.strip()))
            count += 1
    if count < 20:
        fail("expected at least 20 workload files, found %d" % count)
    print("parsed %d workload files" % count)


def test_dlio_benchmark_entry_point():
    """mlpstorage's command line, as it runs DLIO: mpirun ... dlio_benchmark
    workload=NAME ++hydra.run.dir=DIR ++hydra.output_subdir=dlio_config
    ++workload.k=v --config-dir=DIR. The dlio_benchmark link beside iomimic
    runs it unchanged; overrides.yaml has Hydra's plain entries (MLPerf's
    report scripts read them as text); model.model_size (MLPerf's unet3d
    files) sizes the checkpoint, with a warning."""
    dlio = os.path.join(os.path.dirname(ARGS.iomimic), "dlio_benchmark")
    if not os.path.islink(dlio):
        fail("%s is not a link to iomimic" % dlio)
    out = os.path.join(ARGS.work, "run")
    overrides = [
        "++hydra.run.dir=" + out, "++hydra.output_subdir=dlio_config",
        "++workload.workflow.generate_data=True",
        "++workload.dataset.data_folder=" + os.path.join(ARGS.work, "data"),
        "++workload.dataset.num_files_train=32",
        "++workload.dataset.record_length_bytes=65536",
        "++workload.dataset.record_length_bytes_stdev=0",
        "++workload.train.epochs=1", "++workload.train.computation_time=0.001",
        "++workload.workflow.checkpoint=False",
    ]
    p = mpirun(2, [dlio, "workload=unet3d_h100"] + overrides +
               ["--config-dir=" + os.path.join(ARGS.source, "workloads")])
    s = load_strict_json(os.path.join(out, "summary.json"))
    if s["num_accelerators"] != 2:
        fail("dlio_benchmark under mpirun -np 2 ran %d accelerators" % s["num_accelerators"])
    with open(os.path.join(out, "dlio_config", "overrides.yaml")) as f:
        lines = f.read().splitlines()
    expected = ["- workload=unet3d_h100"] + ["- " + o for o in overrides]
    if lines != expected:
        fail("overrides.yaml is not in Hydra's style:\n%s" % "\n".join(lines))
    # hydra.yaml as Hydra writes it beside config.yaml: the run folder and the
    # overrides, split into Hydra's and the task's.
    hydra = subprocess.run(
        ["/usr/bin/python3", "-c",
         "import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))",
         os.path.join(out, "dlio_config", "hydra.yaml")],
        capture_output=True, text=True)
    if hydra.returncode == 0:  # PyYAML is installed with Debian's python3-yaml
        h = json.loads(hydra.stdout)["hydra"]
        if h["run"]["dir"] != out or h["output_subdir"] != "dlio_config":
            fail("hydra.yaml: run.dir %s, output_subdir %s" % (h["run"]["dir"],
                                                              h["output_subdir"]))
        if h["overrides"]["task"] != ["workload=unet3d_h100"] + overrides[2:]:
            fail("hydra.yaml: task overrides %s" % h["overrides"]["task"])
        if h["overrides"]["hydra"] != overrides[:2]:
            fail("hydra.yaml: hydra overrides %s" % h["overrides"]["hydra"])
    elif not os.path.exists(os.path.join(out, "dlio_config", "hydra.yaml")):
        fail("no dlio_config/hydra.yaml")
    with open(os.path.join(out, "dlio_config", "config.yaml")) as f:
        if "model_size_bytes: 499153191" not in f.read():
            fail("model.model_size of unet3d_h100 did not size the checkpoint")
    # DLIO's [METRIC] block in dlio.log, where MLPerf's rules take the
    # figures of merit from, agreeing with summary.json.
    with open(os.path.join(out, "dlio.log")) as f:
        log = f.read()
    au = s["metric"]["train_au_mean_percentage"]
    for line in ("[METRIC] Number of Simulated Accelerators: 2 \n",
                 "[METRIC] Training Accelerator Utilization [AU] (%%): %.4f (" % au,
                 "[METRIC] train_au_meet_expectation: " + s["metric"]["train_au_meet_expectation"]):
        if line not in log:
            fail("dlio.log lacks %r:\n%s" % (line, log[-1500:]))
    warnings = [line for line in p.stderr.splitlines() if "model.model_size (499153191)" in line]
    if len(warnings) < 1:
        fail("no warning that model.model_size is used:\n" + p.stderr)


def test_config_plan_sizes():
    """config --plan gives the dataset's size (16 files of 4 samples of
    64 x 64 float32 = 1 MiB of payload), its folders, the free space where it
    goes, and warns when generation would not fit."""
    base = [ARGS.iomimic, "config", "--plan", "workload=quickstart",
            "++workload.dataset.data_folder=" + os.path.join(ARGS.work, "data"),
            "++workload.dataset.num_files_train=16", "++workload.dataset.num_files_eval=0",
            "++workload.dataset.num_samples_per_file=4",
            "++workload.dataset.record_dims=[64,64]",
            "++workload.dataset.record_length_bytes_stdev=0",
            "++workload.dataset.record_element_type=float32",
            "++workload.dataset.num_subfolders_train=4"]
    p = run(base + ["++workload.workflow.generate_data=True"])
    if "samples: 64 x 64 float32" not in p.stdout:
        fail("no sample shape in the plan:\n" + p.stdout)
    if "= 0.001 GiB of sample payload" not in p.stdout:  # 16 x 4 x 16 KiB = 1 MiB
        fail("wrong dataset size in the plan:\n" + p.stdout)
    if "16 files in 4 subfolders, about 4 each" not in p.stdout:
        fail("no folder layout in the plan:\n" + p.stdout)
    if "free space at " not in p.stdout or "does not fit" in p.stderr:
        fail("free space not reported, or a 1 MiB dataset said not to fit:\n" + p.stdout +
             p.stderr)
    # 2^20 files of 1 GiB samples: a petabyte does not fit here.
    p = run(base[:5] + ["++workload.dataset.num_files_train=1048576",
                        "++workload.dataset.num_samples_per_file=1",
                        "++workload.dataset.record_length_bytes=1073741824",
                        "++workload.workflow.generate_data=True"])
    if "does not fit" not in p.stderr:
        fail("no warning for a dataset larger than the free space:\n" + p.stderr)


def test_mpi_each_sample_once():
    """mpirun -np 2: every sample read exactly once per epoch across both ranks."""
    data, out = os.path.join(ARGS.work, "data"), os.path.join(ARGS.work, "out")
    files, spf, epochs = 12, 2, 3
    mpirun(2, [ARGS.iomimic, "run", workload("quickstart")] + small_overrides(
        data, out, files=files, epochs=epochs, extra=[
            "++workload.dataset.num_samples_per_file=%d" % spf,
            "++workload.dataset.record_length_bytes=1024",
            "++workload.dataset.record_length_bytes_stdev=0",
            "++workload.workflow.evaluation=False",
            "++workload.reader.batch_size=3", "++workload.reader.read_threads=2",
            "++workload.iomimic.sample_log=True"]))
    s = check_summary(os.path.join(out, "summary.json"), eval_expected=False, accelerators=2)
    reads = {}
    orders = {}
    for rank in (0, 1):
        path = os.path.join(out, "%d_samples.csv" % rank)
        if not os.path.exists(path):
            fail(path + " missing")
        with open(path) as f:
            for row in csv.DictReader(f):
                if row["phase"] != "train":
                    continue
                key = (int(row["epoch"]), int(row["file"]), int(row["sample"]))
                reads[key] = reads.get(key, 0) + 1
                orders.setdefault((rank, int(row["epoch"])), []).append(key[1:])
    for e in range(1, epochs + 1):
        for fidx in range(files):
            for k in range(spf):
                n = reads.get((e, fidx, k), 0)
                if n != 1:
                    fail("epoch %d file %d sample %d read %d times" % (e, fidx, k, n))
    if orders[(0, 1)] == orders[(0, 2)]:
        fail("sample_shuffle: seed must change the order between epochs")
    if s["iomimic"]["train_steps_per_epoch"] != files * spf // 3 // 2:
        fail("wrong steps per epoch")
    print("each of %d samples read once in each of %d epochs over 2 ranks" % (files * spf, epochs))


def expect_error(cmd, pattern):
    p = run(cmd, expect_ok=False)
    lines = [l for l in p.stderr.splitlines() if l.strip() and "warning" not in l]
    if p.returncode == 0:
        fail("expected a non-zero exit from: " + " ".join(cmd))
    if len(lines) != 1 or not lines[0].startswith("iomimic: error: "):
        fail("expected exactly one 'iomimic: error:' line, got:\n" + p.stderr)
    if not re.search(pattern, lines[0]):
        fail("error line %r does not match %r" % (lines[0], pattern))
    print("refused as expected: " + lines[0])


def test_refusals():
    w = ARGS.work
    bad_yaml = os.path.join(w, "bad.yaml")
    with open(bad_yaml, "w") as f:
        f.write("dataset:\n  format: npz\n  num_files_train: [1, 2\n")
    expect_error([ARGS.iomimic, "config", bad_yaml], r"bad\.yaml:\d+:\d+: error: .*YAML")
    wrong_type = os.path.join(w, "wrong_type.yaml")
    with open(wrong_type, "w") as f:
        f.write("dataset:\n  format: npz\n  num_files_train: lots\n")
    expect_error([ARGS.iomimic, "config", wrong_type],
                 r"wrong_type\.yaml:3:\d+: error: dataset\.num_files_train")
    expect_error([ARGS.iomimic, "run", workload("default"), "++workload.storage.backend=nosuch"],
                 r"unknown storage plugin 'nosuch'; available: .*posix")
    expect_error([ARGS.iomimic, "run", workload("default"), "++workload.dataset.format=nosuch"],
                 r"unknown format plugin 'nosuch'")
    expect_error([ARGS.iomimic, "run", workload("default"),
                  "++workload.dataset.data_folder=" + os.path.join(w, "missing"),
                  "++workload.output.folder=" + os.path.join(w, "out1")],
                 r"data folder .*missing/train does not exist")
    expect_error([ARGS.iomimic, "run", workload("default"), "++workload.storage.options.nope=1"],
                 r"storage plugin 'posix' has no option 'nope'")
    expect_error([ARGS.iomimic, "config", "workload=nosuchworkload"], r"nosuchworkload")
    if ARGS.bad_plugins:
        expect_error([ARGS.iomimic, "run", "--plugin-dir", ARGS.bad_plugins, workload("default"),
                      "++workload.storage.backend=badabi"],
                     r"ABI version 999.*ABI version \d+")
        p = run([ARGS.iomimic, "plugins", "--plugin-dir", ARGS.bad_plugins])
        if "refused" not in p.stdout or "999" not in p.stdout:
            fail("'iomimic plugins' must list the refused plugin with its ABI version")
        # A stale plugin, built for the ABI before the current one.
        v = run([ARGS.iomimic, "--version"]).stdout
        abi = int(re.search(r"plugin ABI (\d+)", v).group(1))
        expect_error([ARGS.iomimic, "run", "--plugin-dir", ARGS.bad_plugins, workload("default"),
                      "++workload.dataset.format=staleabi"],
                     r"ABI version %d.*ABI version %d" % (abi - 1, abi))
        if not re.search(r"refused .*staleabi.*ABI version %d" % (abi - 1), p.stdout):
            fail("'iomimic plugins' must list the stale plugin as refused: " + p.stdout)


def test_plugins_listing():
    p = run([ARGS.iomimic, "plugins"])
    for needle in ("storage", "posix", "format", "npz"):
        if needle not in p.stdout:
            fail("'%s' missing from 'iomimic plugins'" % needle)
    # Never the current directory: a plugin copied into cwd is not picked up.
    lib = re.search(r"(\S+libiomimic_storage_posix\.so)", p.stdout).group(1)
    shutil.copy(lib, os.path.join(ARGS.work, "libiomimic_storage_cwdtest.so"))
    p = run([ARGS.iomimic, "plugins"])
    if "cwdtest" in p.stdout:
        fail("plugins must not be loaded from the current directory")


def test_out_of_tree_plugin():
    """Install iomimic, build the examples (examples/memory_storage,
    examples/raw_format and the image codec examples/raw_image) out of tree
    against the installed prefix, pass the
    conformance suites through the plugins' own ctest and through the installed
    `iomimic conformance`, and run workloads with them."""
    prefix = os.path.join(ARGS.work, "prefix")
    run([ARGS.cmake, "--install", ARGS.build, "--prefix", prefix])
    doc = os.path.join("share", "doc", "iomimic")
    for f in ("include/iomimic/iomimic.h", "include/iomimic/testing/memory_storage.h",
              "lib/cmake/iomimic/iomimicConfig.cmake", "bin/iomimic", "bin/iomimic-conformance",
              os.path.join(doc, "plugins.md"), "share/doc/iomimic/examples/raw_format/raw_format.cpp",
              "share/doc/iomimic/examples/memory_storage/memory_storage.cpp",
              "include/iomimic/image_format.h", "share/doc/iomimic/examples/raw_image/raw_image.cpp"):
        if not os.path.exists(os.path.join(prefix, f)):
            fail(f + " not installed")
    installed = os.path.join(prefix, "bin", "iomimic")
    builds = {}
    for example, plugin in (("memory_storage", "memory"), ("raw_format", "raw"),
                            ("raw_image", "rawimage")):
        build = os.path.join(ARGS.work, example + "-build")
        builds[plugin] = build
        # Configured from the installed copy of the example, as a user would.
        run([ARGS.cmake, "-S", os.path.join(prefix, "share", "doc", "iomimic", "examples", example),
             "-B", build, "-DCMAKE_PREFIX_PATH=" + prefix, "-DCMAKE_BUILD_TYPE=Release"])
        run([ARGS.cmake, "--build", build])
        # iomimic_add_plugin registered the conformance suites with ctest.
        p = run(["ctest", "--test-dir", build, "--output-on-failure"])
        if "conformance." + plugin not in p.stdout or "100% tests passed" not in p.stdout:
            fail("the example's ctest must run conformance.%s and pass:\n%s" % (plugin, p.stdout))
        p = run([installed, "conformance", "--plugin-dir", build])
        if ("Status: SUCCESS" not in p.stdout or
                not re.search(r"plugins under test:.* %s\b" % plugin, p.stdout)):
            fail("iomimic conformance must test and pass '%s':\n%s" % (plugin, p.stdout))
    p = run([installed, "plugins", "--plugin-dir", builds["memory"], "--plugin-dir", builds["raw"]])
    for needle in ("memory", "raw", "npz", "posix"):
        if needle not in p.stdout:
            fail("the installed binary must find its own plugins and both examples: " + p.stdout)
    # Each example alone, then both together.
    cases = [("memory", "npz", [builds["memory"]]), ("posix", "raw", [builds["raw"]]),
             ("memory", "raw", [builds["memory"], builds["raw"]])]
    for storage, fmt, dirs in cases:
        out = os.path.join(ARGS.work, "out-%s-%s" % (storage, fmt))
        data = os.path.join(ARGS.work, "data-%s-%s" % (storage, fmt))
        flags = []
        for d in dirs:
            flags += ["--plugin-dir", d]
        run([installed, "run"] + flags + ["workload=quickstart",
             "++workload.storage.backend=" + storage, "++workload.dataset.format=" + fmt] +
            small_overrides(data, out, files=8, eval_files=0, extra=[
                "++workload.workflow.evaluation=False"]))
        s = check_summary(os.path.join(out, "summary.json"), eval_expected=False, accelerators=1)
        used = s["iomimic"]["plugins"]
        if used["storage"]["name"] != storage or used["format"]["name"] != fmt:
            fail("the run did not use %s on %s: %s" % (fmt, storage, used))


def build_examples(prefix, examples):
    """Installs the build into `prefix` and builds `examples` (folders of
    examples/) out of tree from their installed copies, as a user would;
    returns their build folders."""
    run([ARGS.cmake, "--install", ARGS.build, "--prefix", prefix])
    builds = []
    for example in examples:
        build = os.path.join(ARGS.work, example + "-build")
        run([ARGS.cmake, "-S", os.path.join(prefix, "share", "doc", "iomimic", "examples", example),
             "-B", build, "-DCMAKE_PREFIX_PATH=" + prefix, "-DCMAKE_BUILD_TYPE=Release"])
        run([ARGS.cmake, "--build", build])
        builds.append(build)
    return builds


def raw_headers(folder):
    """(header bytes, file size, header size + payload) of each .raw file under `folder`."""
    found = []
    for root, _, files in os.walk(folder):
        for name in files:
            if not name.endswith(".raw"):
                continue
            path = os.path.join(root, name)
            with open(path, "rb") as f:
                head = f.read(32)
            if head[:8] != b"IOMIRAW1":
                fail(path + ": not a raw file")
            sample, count, header = struct.unpack("<QQQ", head[8:32])
            found.append((header, os.path.getsize(path), header + sample * count))
    return found


def test_out_of_tree_scheme_plugin():
    """A scheme and a manifest key are a plugin's business (docs/plugins.md,
    "URL schemes" and "Declared dataset keys"). Built out of tree against the
    installed SDK and found through IOMIMIC_PLUGIN_PATH, examples/memory_storage
    serves mem://, a scheme the core does not know, and examples/raw_format
    declares dataset.raw.header_bytes, a key the core does not know: a workload
    with its data folder at mem://... generates and trains on the memory
    plugin, the key reaches the format (the files it writes have that
    header), a wrong value and an undeclared key are one error at the
    manifest's line, and az:// is one error naming the schemes served, mem
    among them."""
    prefix = os.path.join(ARGS.work, "prefix")
    installed = os.path.join(prefix, "bin", "iomimic")
    env = {"IOMIMIC_PLUGIN_PATH": ":".join(build_examples(prefix, ("memory_storage",
                                                                    "raw_format")))}
    p = run([installed, "plugins", "-v"], env=env)
    for needle in ("serves mem://", "serves s3://", "serves file://",
                   "key dataset.raw.header_bytes (int, default '32')"):
        if needle not in p.stdout:
            fail("'iomimic plugins -v' must show %r" % needle)
    p = run([installed, "config", "--keys"], env=env)
    if "| `dataset.raw.header_bytes` | integer | `32` | format plugin `raw` |" not in p.stdout:
        fail("'iomimic config --keys' must list the key the raw plugin declares")

    # Generate and train in one run (the memory plugin keeps files for the
    # life of the process), the data folder at mem://.
    out = os.path.join(ARGS.work, "out-mem")
    run([installed, "run", "workload=quickstart", "++workload.dataset.format=raw",
         "++workload.dataset.raw.header_bytes=4096"] +
        small_overrides("mem://scheme-test/data", out, files=8, eval_files=0,
                        extra=["++workload.workflow.evaluation=False"]), env=env)
    s = check_summary(os.path.join(out, "summary.json"), eval_expected=False, accelerators=1)
    used = s["iomimic"]["plugins"]
    if used["storage"]["name"] != "memory" or used["format"]["name"] != "raw":
        fail("mem:// must select the memory plugin: %s" % used)
    if s["iomimic"]["bytes_read"] <= 0:
        fail("the run on mem:// read nothing")
    if os.path.exists(os.path.join(ARGS.work, "scheme-test")) or os.path.exists("mem:"):
        fail("mem:// data must not land on the local file system")
    # The declared key reaches the plugin: the files it writes say so.
    data = os.path.join(ARGS.work, "data-raw")
    run([installed, "generate", "workload=quickstart", "++workload.dataset.format=raw",
         "++workload.dataset.raw.header_bytes=4096"] +
        small_overrides(data, os.path.join(ARGS.work, "out-raw"), files=4), env=env)
    headers = raw_headers(data)
    if len(headers) != 4 or any(h != 4096 or size != want for h, size, want in headers):
        fail("dataset.raw.header_bytes=4096 must give 4096-byte headers: %s" % headers)
    p = run([installed, "config", "workload=quickstart", "++workload.dataset.format=raw"], env=env)
    if "  raw:\n    header_bytes: 32\n" not in p.stdout:
        fail("'iomimic config' must show the declared key's default")

    # Refusals: one line each, at the manifest's line.
    def refused(name, text, expected, overrides=()):
        path = os.path.join(ARGS.work, name)
        with open(path, "w") as f:
            f.write(text)
        p = run([installed, "config", path] + list(overrides), expect_ok=False, env=env)
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        if p.returncode == 0 or len(lines) != 1 or expected not in lines[0]:
            fail("expected one error line with %r, got:\n%s" % (expected, p.stderr))
        print("refused as expected: " + lines[0])

    scheme = ("model: {name: scheme}\ndataset:\n  data_folder: az://bucket/data\n"
              "  format: raw\n  raw:\n    header_bytes: 64\n")
    refused("scheme.yaml", scheme,
            "scheme.yaml:3:16: error: dataset.data_folder: 'az://bucket/data': no installed "
            "storage plugin serves az:// (installed: direct (odirect), file (posix), mem (memory), "
            "s3 (s3))")
    refused("scheme.yaml", scheme,
            "override '++workload.dataset.raw.header_bytes=big': dataset.raw.header_bytes: "
            "expected an integer (format plugin 'raw' declares it int), got 'big'",
            ["++workload.dataset.data_folder=mem://b/d", "++workload.dataset.raw.header_bytes=big"])
    refused("value.yaml", "dataset:\n  format: raw\n  raw:\n    header_bytes: big\n",
            "value.yaml:4:19: error: dataset.raw.header_bytes: expected an integer (format plugin "
            "'raw' declares it int), got 'big'")
    refused("key.yaml", "dataset:\n  format: raw\n  raw:\n    heder_bytes: 64\n",
            "key.yaml:4:5: error: dataset.raw.heder_bytes: unknown key: format plugin 'raw' "
            "declares header_bytes (did you mean 'header_bytes'?)")
    # The range is the plugin's to check, when it is opened.
    p = run([installed, "run", "workload=quickstart", "++workload.dataset.format=raw",
             "++workload.dataset.raw.header_bytes=8"] +
            small_overrides("mem://scheme-test/small", os.path.join(ARGS.work, "out-small"),
                            files=2), expect_ok=False, env=env)
    if p.returncode == 0 or "dataset.raw.header_bytes 8 is out of range" not in p.stderr:
        fail("the raw plugin must refuse a header of 8 bytes: " + p.stderr)


def test_conformance_skips_endpoint_backends():
    """`iomimic conformance --plugin-dir <the build's plugins>` with no S3
    server configured (no AWS_*, no IOMIMIC_CONFORMANCE_*) passes: the back
    end that needs an endpoint (s3, capability 'endpoint') is left out with
    one line saying why, every other plugin is tested (docs/plugins.md,
    "Conformance suites"). A --root without a bucket is one error line."""
    plugin_dir = os.path.normpath(os.path.join(os.path.dirname(ARGS.iomimic), "..", "lib",
                                               "iomimic", "plugins"))
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("AWS_") and not k.startswith("IOMIMIC_CONFORMANCE_")}
    cmd = [ARGS.iomimic, "conformance", "--plugin-dir", plugin_dir]
    print("$ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, cwd=ARGS.work, capture_output=True, text=True, env=env, timeout=600)
    sys.stdout.write(p.stdout + p.stderr)
    if p.returncode != 0 or "Status: SUCCESS" not in p.stdout:
        fail("the conformance suites must pass on a build with no S3 set up")
    skipped = [l for l in p.stdout.splitlines() if " skipped: " in l]
    if (len(skipped) != 1 or "storage plugin 's3' skipped" not in skipped[0] or
            "capability 'endpoint'" not in skipped[0] or "--root s3=BUCKET" not in skipped[0]):
        fail("expected one line saying s3 was skipped and why, got %s" % skipped)
    tested = re.search(r"plugins under test:(.*)", p.stdout).group(1)
    for name in ("storage posix", "storage faulty", "format npz"):
        if name not in tested:
            fail("'%s' must be under test: %s" % (name, tested))
    if "storage s3" in tested:
        fail("s3 must not be under test without a bucket")
    p = run(cmd + ["--root", "s3"], expect_ok=False)
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    if p.returncode != 2 or len(lines) != 1 or "--root 's3': expected NAME=BUCKET" not in lines[0]:
        fail("a --root without a bucket must be one error line and exit 2")


def test_conformance_installed_without_tests():
    """A build configured without the tests (-DIOMIMIC_BUILD_TESTS=OFF, as
    scripts/quickstart.sh builds) still builds and installs
    iomimic-conformance, which `iomimic conformance` runs (docs/plugins.md);
    only configured here, not built."""
    build = os.path.join(ARGS.work, "no-tests")
    run([ARGS.cmake, "-S", ARGS.source, "-B", build, "-DIOMIMIC_BUILD_TESTS=OFF",
         "-DCMAKE_BUILD_TYPE=Release"])
    install_script = os.path.join(build, "tests", "conformance", "cmake_install.cmake")
    if not os.path.exists(install_script) or "iomimic-conformance" not in open(install_script).read():
        fail("without the tests, iomimic-conformance must still be installed (%s)" % install_script)
    tests = os.path.join(build, "tests", "conformance", "CTestTestfile.cmake")
    if os.path.exists(tests) and "conformance." in open(tests).read():
        fail("without the tests, no conformance ctest may be registered")


def test_format_storage_matrix():
    """Every format plugin on every storage plugin: generate, train, read back."""
    p = run([ARGS.iomimic, "plugins"])
    formats, storages, device = [], [], set()
    for line in p.stdout.splitlines():
        cols = line.split()
        if len(cols) >= 4 and cols[0] in ("format", "storage"):
            if "decorator" in cols[3]:
                continue  # decorators wrap another back end; tested on their own
            if "endpoint" in cols[3]:
                continue  # s3, on a server: tests/integration/s3_tests.py
            if "device-memory" in cols[3]:
                device.add(cols[1])
            (formats if cols[0] == "format" else storages).append(cols[1])
    if "npz" not in formats or "posix" not in storages:
        fail("expected at least npz and posix, found %s and %s" % (formats, storages))
    results = []
    for fmt in formats:
        for st in storages:
            tag = "%s-%s" % (fmt, st)
            data = os.path.join(ARGS.work, tag, "data")
            out = os.path.join(ARGS.work, tag, "out")
            run([ARGS.iomimic, "run", "-q", workload("default"),
                 "++workload.dataset.format=" + fmt, "++workload.storage.backend=" + st,
                 "++workload.dataset.num_subfolders_train=0",
                 "++workload.dataset.num_subfolders_eval=0",
                 "++workload.dataset.record_length_bytes=4096",
                 "++workload.reader.batch_size=2", "++workload.evaluation.eval_time=0",
                 "++workload.reader.read_threads=2",
                 # tf.data reads every format, tfrecord included.
                 "++workload.framework=tensorflow", "++workload.reader.data_loader=tensorflow",
                 # Data that lands in device memory cannot be decoded on the host.
                 "++workload.reader.decode=%s" % (st not in device)] +
                small_overrides(data, out, files=6, eval_files=2, epochs=1, compute=0))
            s = load_strict_json(os.path.join(out, "summary.json"))
            io = s["iomimic"]
            if io["plugins"]["format"]["name"] != fmt or io["plugins"]["storage"]["name"] != st:
                fail(tag + ": the run used other plugins")
            if fmt != "synthetic" and io["bytes_read"] <= 0:
                fail(tag + ": nothing was read")
            results.append(tag)
    print("matrix: %d combinations ran: %s" % (len(results), ", ".join(results)))


LLAMA_SHRINK = [
    "++workload.model.num_layers=4", "++workload.model.transformer.hidden_size=256",
    "++workload.model.transformer.ffn_hidden_size=1024",
    "++workload.model.transformer.vocab_size=8000",
    "++workload.checkpoint.num_checkpoints_write=2", "++workload.checkpoint.num_checkpoints_read=2",
    "++workload.checkpoint.time_between_checkpoints=0",
]


def planned_files(manifest, overrides, ranks):
    """(name, bytes) per file, from `iomimic config --plan` (writes nothing)."""
    p = run([ARGS.iomimic, "config", "--plan", "--ranks", str(ranks), manifest] + overrides)
    files = {}
    for m in re.finditer(r"^  rank (\d+)\s+(\S+)\s+(\d+) bytes", p.stdout, re.M):
        files[m.group(2)] = int(m.group(3))
    if not files:
        fail("the plan lists no checkpoint files")
    return files


def check_checkpoint_files(folder, planned, steps):
    for step in steps:
        d = os.path.join(folder, step)
        if not os.path.isdir(d):
            fail(d + " missing")
        found = {f: os.path.getsize(os.path.join(d, f)) for f in os.listdir(d)}
        if found != planned:
            fail("%s holds %s, the plan says %s" % (d, found, planned))


def test_llama_checkpoints_mpi():
    """Checkpoint-only llama workloads under mpirun -np 2: names and sizes as planned."""
    for name, ranks in (("llama_8b_zero3", 2), ("llama_7b", 2)):
        ck = os.path.join(ARGS.work, name, "ckpt")
        out = os.path.join(ARGS.work, name, "out")
        ov = LLAMA_SHRINK + ["++workload.checkpoint.checkpoint_folder=" + ck,
                             "++workload.output.folder=" + out]
        planned = planned_files(workload(name), ov, ranks)
        mpirun(ranks, [ARGS.iomimic, "run", workload(name)] + ov)
        check_checkpoint_files(ck, planned, ["global_epoch1_step1", "global_epoch1_step2"])
        s = load_strict_json(os.path.join(out, "summary.json"))
        m = s["metric"]
        for k in ("save_checkpoint_io_mean_GB_per_second", "save_checkpoint_duration_mean_seconds",
                  "load_checkpoint_io_mean_GB_per_second", "load_checkpoint_duration_mean_seconds",
                  "checkpoint_size_GB"):
            check_type("metric." + k, m[k], float)
        if abs(m["checkpoint_size_GB"] * 2**30 - sum(planned.values())) > 1024:
            fail("checkpoint_size_GB does not match the planned files")
        if s["epochs"] != 0 or s["num_accelerators"] != ranks:
            fail("checkpoint-only runs report 0 epochs and the rank count")
        ck_io = s["iomimic"]["checkpoint"]
        # The llama files set fsync: True; DLIO ignores it, iomimic must not.
        if ck_io["fsync_calls"] != 2 * len(planned):
            fail("expected %d fsync calls, counted %d" % (2 * len(planned), ck_io["fsync_calls"]))
        if len(ck_io["saves"]) != 2 or "slowest_rank" not in ck_io["saves"][0]:
            fail("per-checkpoint details missing")


def run_llama_checkpoints(tag, extra, syscalls):
    """The shrunk llama_8b_zero3 checkpoint job (2 checkpoints of a model and an optimizer
    file) into <work>/<tag>, under strace -e trace=<syscalls> when strace is installed.
    Returns (checkpoint folder, output folder, strace file or None)."""
    ck = os.path.join(ARGS.work, tag, "ckpt")
    out = os.path.join(ARGS.work, tag, "out")
    cmd = [ARGS.iomimic, "run", workload("llama_8b_zero3")] + LLAMA_SHRINK + [
        "++workload.checkpoint.checkpoint_folder=" + ck,
        "++workload.output.folder=" + out] + extra
    trace = None
    if shutil.which("strace"):
        trace = os.path.join(ARGS.work, tag + ".strace")
        cmd = ["strace", "-f", "-qq", "-e", "trace=" + syscalls, "-o", trace] + cmd
    run(cmd)
    return ck, out, trace


def test_checkpoint_fsync_only_when_asked():
    """fsync is called for every checkpoint file when asked, and never otherwise (strace too)."""
    for fsync in (True, False):
        _, out, trace = run_llama_checkpoints(
            "fsync" if fsync else "nofsync",
            ["++workload.checkpoint.fsync=%s" % fsync,
             "++workload.checkpoint.num_checkpoints_read=0"], "fsync,fdatasync")
        s = load_strict_json(os.path.join(out, "summary.json"))
        calls = s["iomimic"]["checkpoint"]["fsync_calls"]
        files = 2 * 2  # model + optimizer file, 2 checkpoints, 1 rank
        if calls != (files if fsync else 0):
            fail("fsync=%s: counted %d fsync calls" % (fsync, calls))
        if trace:
            n = sum(1 for l in open(trace) if re.search(r"\bf(data)?sync\(", l))
            if (n >= files) != fsync or (not fsync and n != 0):
                fail("fsync=%s: strace saw %d fsync calls" % (fsync, n))
            print("strace: %d fsync calls with fsync=%s" % (n, fsync))


def test_checkpoint_atomic_rename():
    """checkpoint.atomic (the default) writes each checkpoint file under a temporary name and
    renames it into place; atomic=False writes under the final name, as torch.save does
    (strace: the files opened for writing, and the renames)."""
    if not shutil.which("strace"):
        print("strace not installed: only the files left are checked")
    for atomic in (True, False):
        ck, _, trace = run_llama_checkpoints(
            "atomic" if atomic else "in_place", ["++workload.checkpoint.atomic=%s" % atomic],
            "openat,rename,renameat,renameat2")
        left = [os.path.relpath(os.path.join(r, f), ck) for r, _, fs in os.walk(ck) for f in fs]
        finals = sorted(f for f in left if not f.endswith(".iomimic-partial"))
        if len(finals) != 4 or len(left) != 4:
            fail("atomic=%s: expected 4 checkpoint files and nothing else, found %s" % (atomic, left))
        if not trace:
            continue
        text = open(trace).read()
        written = re.findall(r'openat\([^"]*"%s/([^"]+)", [^)]*O_CREAT' % re.escape(ck), text)
        renamed = re.findall(r'rename(?:at2?)?\(.*"%s/([^"]+)",.*"%s/([^"]+)"' %
                             (re.escape(ck), re.escape(ck)), text)
        if atomic:
            def partial(f):
                return os.path.join(os.path.dirname(f), "." + os.path.basename(f) +
                                    ".iomimic-partial")
            expected = sorted(partial(f) for f in finals)
            if sorted(set(written)) != expected:
                fail("atomic: files created %s, expected the temporary names %s" %
                     (sorted(set(written)), expected))
            pairs = sorted(set(renamed))
            if len(pairs) != 4 or any(partial(b) != a for a, b in pairs):
                fail("atomic: renames %s, expected each temporary name to its final one" % pairs)
        else:
            if sorted(set(written)) != finals or renamed:
                fail("in place: files created %s, renames %s; expected %s and no rename" %
                     (sorted(set(written)), renamed, finals))
        print("atomic=%s: %d files created, %d renames" % (atomic, len(set(written)),
                                                           len(set(renamed))))


def bert_step_checkpoint_overrides(data, out, ck, extra=()):
    """bert_v100 shrunk to 20 steps of one epoch, a checkpoint of a 1 MiB plain
    model every 5 steps into `ck`."""
    return small_overrides(data, out, files=8, epochs=1, compute=0.001, extra=[
        "++workload.dataset.num_samples_per_file=48",
        "++workload.dataset.record_length_bytes=2500",
        "++workload.reader.batch_size=8",
        "++workload.train.total_training_steps=20",
        "++workload.checkpoint.steps_between_checkpoints=5",
        "++workload.model.model_size_bytes=1048576",
        "++workload.checkpoint.checkpoint_folder=" + ck] + list(extra))


def test_bert_step_checkpoints():
    """bert_v100 under mpirun -np 2: checkpoints every N steps inside an epoch, outside the
    AU blocks; a plain model is one tensor written by rank 0."""
    data, out = os.path.join(ARGS.work, "data"), os.path.join(ARGS.work, "out")
    ck = os.path.join(ARGS.work, "ckpt")
    ov = bert_step_checkpoint_overrides(data, out, ck)
    mpirun(2, [ARGS.iomimic, "run", workload("bert_v100")] + ov)
    steps = sorted(os.listdir(ck))
    if steps != ["global_epoch1_step10", "global_epoch1_step15", "global_epoch1_step20",
                 "global_epoch1_step5"]:
        fail("unexpected checkpoint folders %s" % steps)
    check_checkpoint_files(ck, {"model_states-0.pt": 1048576}, steps)
    stats = load_strict_json(os.path.join(out, "0_per_epoch_stats.json"))["1"]
    blocks = [k for k in stats if k.startswith("block")]
    saves = [k for k in stats if k.startswith("save_ckpt")]
    if len(saves) != 4 or len(blocks) != 4:
        fail("expected 4 blocks and 4 saves, got %s" % list(stats))
    s = load_strict_json(os.path.join(out, "summary.json"))
    if s["metric"]["checkpoint_size_GB"] * 2**30 != 1048576:
        fail("checkpoint_size_GB wrong")


def sample_counts(out, ranks):
    reads = {}
    for rank in range(ranks):
        with open(os.path.join(out, "%d_samples.csv" % rank)) as f:
            for row in csv.DictReader(f):
                if row["phase"] == "train":
                    key = (int(row["epoch"]), int(row["file"]), int(row["sample"]))
                    reads[key] = reads.get(key, 0) + 1
    return reads


def test_reader_work_sharing():
    """iomimic.reader_work_sharing: 8 reader threads on a small window read the same samples
    in the same steps, with the same bytes, whether idle readers help the oldest batch or
    not; helped samples are counted (summary: iomimic.shared_samples), none when it is off."""
    data = os.path.join(ARGS.work, "data")
    base = [
        "++workload.dataset.format=npz", "++workload.dataset.num_samples_per_file=2",
        "++workload.dataset.record_length_bytes=262144",
        "++workload.dataset.record_length_bytes_stdev=0",
        "++workload.reader.batch_size=8", "++workload.reader.read_threads=8",
        "++workload.reader.prefetch_size=8", "++workload.iomimic.sample_log=True",
        "++workload.iomimic.checksum=True",
    ]
    results = {}
    for sharing in (True, False):
        out = os.path.join(ARGS.work, "out-%s" % sharing)
        run([ARGS.iomimic, "run", "workload=quickstart"] + small_overrides(
            data, out, files=96, epochs=3, compute=0) + base +
            ["++workload.iomimic.reader_work_sharing=%s" % sharing])
        with open(os.path.join(out, "0_samples.csv")) as f:
            rows = [(r["phase"], r["epoch"], r["step"], r["file"], r["sample"])
                    for r in csv.DictReader(f)]
        io = load_strict_json(os.path.join(out, "summary.json"))["iomimic"]
        results[sharing] = (rows, io["read_checksum"], io["checksummed_samples"])
        print("sharing=%s: %d sample rows, %d helped, checksum %s" % (
            sharing, len(rows), io["shared_samples"], io["read_checksum"]))
        if not sharing and io["shared_samples"] != 0:
            fail("sharing off, yet %d samples were read by a helper" % io["shared_samples"])
        if sharing and io["shared_samples"] == 0:
            fail("8 readers on 2 CPUs with a window of 8 batches never helped: the sharing "
                 "path was not exercised")
    if results[True] != results[False]:
        a, b = results[True], results[False]
        diff = [(x, y) for x, y in zip(a[0], b[0]) if x != y][:5]
        fail("samples or bytes differ with sharing on and off: first rows %s; checksums %s/%s" %
             (diff, a[1:], b[1:]))


# Bytes a pass reads beyond its data files' payload, per format, as DLIO
# reads them (docs/dlio-compat.md §2.2): csv parses its whole file for every
# sample (pandas.read_csv per open, read_type on_demand), the others read each
# file's data once plus metadata (HDF5 superblock and object headers per open,
# the Parquet footer per file, the indexed-binary index files per file).
READ_PER_EPOCH = {
    # format: (pattern, why, record_length_bytes, samples per file)
    "tfrecord": ("stream", "each file streamed once, whatever the reader threads", 4096, 64),
    # The footer is read with one 64 KiB request from the end, as pyarrow does.
    "parquet": ("stream", "each file's row groups once, its footer once", 4096, 64),
    # Samples above libhdf5's 64 KiB sieve buffer: smaller ones are read as
    # sieve-buffer fills (up to 64 KiB each), as h5py reads them too.
    "hdf5": ("partial", "each sample's rows, plus HDF5 metadata per open", 131072, 16),
    "indexed_binary": ("partial", "each sample's bytes, plus the index files", 4096, 64),
    "csv": ("whole", "the whole file per sample (DLIO's pandas.read_csv per sample)", 4096, 64),
}


def test_bytes_read_per_epoch():
    """One epoch reads what DLIO/tf.data reads, with 1, 2, 4 and 8 reader threads: each
    streamed file (tfrecord, parquet) exactly once, each sample's bytes once for hdf5 and
    indexed_binary (plus bounded metadata), and csv's whole file per sample (as DLIO does).
    Files span many batches (64 samples per file, batch 8), so a batch's samples come from
    files other threads read too: the case that read TFRecord files once per thread."""
    files, batch = 6, 8
    table = []
    for fmt, (kind, why, record, spf) in READ_PER_EPOCH.items():
        data = os.path.join(ARGS.work, "data-" + fmt)
        for threads in (1, 2, 4, 8):
            out = os.path.join(ARGS.work, "out-%s-%d" % (fmt, threads))
            run([ARGS.iomimic, "run", "workload=quickstart", "-q"] + small_overrides(
                data, out, files=files, epochs=1, compute=0) + [
                "++workload.dataset.format=" + fmt,
                "++workload.dataset.num_samples_per_file=%d" % spf,
                "++workload.dataset.record_length_bytes=%d" % record,
                "++workload.dataset.record_length_bytes_stdev=0",
                "++workload.reader.batch_size=%d" % (batch if spf > batch else spf // 4),
                "++workload.reader.read_threads=%d" % threads,
                "++workload.reader.file_shuffle=seed",
                "++workload.reader.sample_shuffle=seed",
                "++workload.workflow.evaluation=False",
                "++workload.framework=" + ("tensorflow" if fmt == "tfrecord" else "pytorch"),
                "++workload.reader.data_loader=" + ("tensorflow" if fmt == "tfrecord" else "pytorch")])
            s = load_strict_json(os.path.join(out, "summary.json"))
            got = s["iomimic"]["train_bytes_read"]
            train = os.path.join(data, "train")
            dataset = sum(os.path.getsize(os.path.join(d, f)) for d, _, names in os.walk(train)
                          for f in names if f.endswith("." + fmt))
            samples = files * spf
            ratio = got / dataset
            table.append("%-15s %d threads: %10d bytes read, dataset %10d, ratio %.3f" %
                         (fmt, threads, got, dataset, ratio))
            print(table[-1], flush=True)
            if kind == "stream":
                # The whole file once, its footer read again at most once more.
                if not dataset <= got <= dataset + files * 68 * 1024:
                    fail("%s, %d threads: read %d bytes of a %d-byte dataset (%.2fx): %s" %
                         (fmt, threads, got, dataset, ratio, why))
            elif kind == "partial":
                payload = samples * record
                if not payload <= got <= payload + samples * 4096 + files * 64 * 1024:
                    fail("%s, %d threads: read %d bytes for %d bytes of samples: %s" %
                         (fmt, threads, got, payload, why))
            else:
                if got != spf * dataset:
                    fail("%s, %d threads: read %d bytes, expected %d x %d: %s" %
                         (fmt, threads, got, spf, dataset, why))
            # The summary says when a pattern rereads on purpose, and by how much.
            factor = s["iomimic"]["read_pattern_factor"]
            if factor != (spf if kind == "whole" else 1) or not s["iomimic"]["read_pattern"]:
                fail("%s: read_pattern_factor %s, read_pattern '%s'" %
                     (fmt, factor, s["iomimic"]["read_pattern"]))
    print("\n".join(table))


def test_mpiio_modes():
    """dlrm (one shared indexed-binary file) read with MPI-IO by 2 ranks: independent,
    collective (one read_at_all per step) and aggregator modes read every sample once per
    epoch, and the bytes hash the same as with posix."""
    data = os.path.join(ARGS.work, "data")
    samples, epochs = 96, 2
    base = [
        "++workload.dataset.data_folder=" + data,
        "++workload.dataset.num_samples_per_file=%d" % samples,
        "++workload.dataset.record_length_bytes=4096",
        "++workload.reader.batch_size=4",
        "++workload.train.epochs=%d" % epochs,
        "++workload.train.computation_time=0.001",
        "++workload.iomimic.sample_log=True",
        "++workload.iomimic.checksum=True",
    ]
    run([ARGS.iomimic, "generate", workload("dlrm")] + base)
    results = {}
    for name, backend in (("posix", ["++workload.storage.backend=posix"]),
                          ("independent", ["++workload.reader.file_access=shared"]),
                          ("collective", ["++workload.reader.file_access=collective"]),
                          ("aggregator", ["++workload.storage.backend=mpiio",
                                          "++workload.storage.options.mode=aggregator",
                                          "++workload.storage.options.group_size=2"])):
        out = os.path.join(ARGS.work, "out-" + name)
        mpirun(2, [ARGS.iomimic, "run", workload("dlrm"), "++workload.output.folder=" + out] +
               base + backend)
        s = load_strict_json(os.path.join(out, "summary.json"))
        io = s["iomimic"]
        reads = sample_counts(out, 2)
        for e in range(1, epochs + 1):
            for k in range(samples):
                if reads.get((e, 0, k), 0) != 1:
                    fail("%s: epoch %d sample %d read %d times" % (name, e, k, reads.get((e, 0, k), 0)))
        if io["checksummed_samples"] != samples * epochs:
            fail("%s: %d samples hashed" % (name, io["checksummed_samples"]))
        results[name] = (io["read_checksum"], io["plugins"]["storage"]["data_path"])
        print(name, results[name])
    sums = set(v[0] for v in results.values())
    if len(sums) != 1:
        fail("the modes read different bytes: %s" % results)
    want = {"posix": "pread", "independent": "mpiio-independent",
            "collective": "mpiio-collective", "aggregator": "mpiio-aggregator(group 2)"}
    for name, (_, path) in results.items():
        if path != want[name]:
            fail("%s ran %s" % (name, path))


def tree_bytes(root):
    """Every file under root (relative path -> bytes)."""
    out = {}
    for d, _, names in os.walk(root):
        for n in names:
            full = os.path.join(d, n)
            with open(full, "rb") as f:
                out[os.path.relpath(full, root)] = f.read()
    return out


def test_mpiio_shared_generation():
    """Shared-file generation through MPI-IO with 2 ranks: rank 0 writes each file's frame,
    both ranks write their half of the payload (several write_at_all rounds each), and the
    files are byte for byte those one rank writes through posix; files a format cannot
    write in parts fall back to one writer; a write error on one rank stops both ranks with
    one error line and leaves no file behind."""
    record = 50000  # 16 samples of 223 x 223: halves that are not 4 KiB multiples
    common = [
        "++workload.dataset.num_files_train=1",
        "++workload.dataset.num_files_eval=0",
        "++workload.dataset.num_samples_per_file=16",
        "++workload.dataset.record_length_bytes=%d" % record,
        "++workload.dataset.record_length_bytes_stdev=0",
        "++workload.dataset.num_subfolders_train=0",
        "++workload.dataset.num_subfolders_eval=0",
        "++workload.dataset.generation_buffer_size=65536",  # 4 write rounds per rank
        "++workload.reader.batch_size=4",
        "++workload.train.epochs=1",
        "++workload.train.computation_time=0.001",
        "++workload.iomimic.checksum=True",
    ]
    content = ["++workload.iomimic.compress_percentage=30",
               "++workload.iomimic.dedupe_percentage=40"]
    cases = [
        ("indexed_binary", "collective", "", []),
        ("npy", "independent", "", []),
        ("hdf5", "aggregator", "", []),
        ("hdf5", "independent", "-gzip", ["++workload.dataset.compression=gzip"]),  # not in parts
        ("indexed_binary", "collective", "-content", content),  # content from any position
    ]
    for fmt, mode, tag, extra in cases:
        name = "%s-%s%s" % (fmt, mode, tag)
        ov = common + extra + ["++workload.dataset.format=" + fmt]
        ref = os.path.join(ARGS.work, "ref-" + name)
        run([ARGS.iomimic, "generate", workload("quickstart"),
             "++workload.dataset.data_folder=" + ref] + ov)
        data = os.path.join(ARGS.work, "shared-" + name)
        out = os.path.join(ARGS.work, "out-" + name)
        mpirun(2, [ARGS.iomimic, "run", workload("quickstart"),
                   "++workload.workflow.generate_data=True",
                   "++workload.dataset.data_folder=" + data,
                   "++workload.output.folder=" + out,
                   "++workload.storage.backend=mpiio",
                   "++workload.storage.options.mode=" + mode] + ov)
        want, got = tree_bytes(ref), tree_bytes(data)
        if sorted(want) != sorted(got):
            fail("%s: files differ: %s vs %s" % (name, sorted(want), sorted(got)))
        for rel in want:
            if want[rel] == got[rel]:
                continue
            # HDF5 files hold the root group's times (as h5py's do): same size,
            # same datasets, at most the times and their checksum differ.
            diff = [i for i, (a, b) in enumerate(zip(want[rel], got[rel])) if a != b]
            if fmt != "hdf5" or len(want[rel]) != len(got[rel]) or diff[-1] >= 256:
                fail("%s: %s differs from the single-rank posix file" % (name, rel))
            import h5py  # Debian's python3-h5py
            import numpy
            with h5py.File(os.path.join(ref, rel), "r") as a, \
                    h5py.File(os.path.join(data, rel), "r") as b:
                for key in ("records_0", "labels"):
                    if not numpy.array_equal(a[key][()], b[key][()]):
                        fail("%s: %s: %s differs" % (name, rel, key))
        g = load_strict_json(os.path.join(out, "summary.json"))["iomimic"]["generate"]
        print(name, g)
        per_rank = g["bytes_written_per_rank"]
        if tag == "-gzip":
            if g["files_written_by_all_ranks"] != 0 or g["files_written"] != 1:
                fail("%s: a compressed hdf5 file was not written by one rank: %s" % (name, g))
            continue
        if g["files_written_by_all_ranks"] != 1 or g["files_written"] != 1:
            fail("%s: expected one file written by all ranks: %s" % (name, g))
        size = max(len(v) for v in got.values())  # the data file
        if len(per_rank) != 2 or min(per_rank) < size // 2 - 8192:
            fail("%s: each rank should write about half the payload: %s" % (name, per_rank))
        if not g["shared_write_path"].startswith("mpiio-" + mode):
            fail("%s: shared write path %s" % (name, g["shared_write_path"]))
        # What the MPI-IO run read hashes the same as one posix rank reading the
        # reference files.
        ref_out = os.path.join(ARGS.work, "out-ref-" + name)
        run([ARGS.iomimic, "run", workload("quickstart"),
             "++workload.workflow.generate_data=False",
             "++workload.dataset.data_folder=" + ref,
             "++workload.output.folder=" + ref_out] + ov)
        mine = load_strict_json(os.path.join(out, "summary.json"))["iomimic"]
        theirs = load_strict_json(os.path.join(ref_out, "summary.json"))["iomimic"]
        if (mine["read_checksum"], mine["checksummed_samples"]) != \
                (theirs["read_checksum"], theirs["checksummed_samples"]):
            fail("%s: read %s/%d, posix %s/%d" % (name, mine["read_checksum"],
                 mine["checksummed_samples"], theirs["read_checksum"],
                 theirs["checksummed_samples"]))

    # Chunked (gzip) hdf5 cannot be read as byte ranges: collective reading is
    # refused before training, with the reason.
    p = mpirun(2, [ARGS.iomimic, "run", workload("quickstart"),
                   "++workload.dataset.data_folder=" + data,
                   "++workload.output.folder=" + os.path.join(ARGS.work, "out-refused"),
                   "++workload.storage.backend=mpiio", "++workload.storage.options.mode=collective",
                   "++workload.dataset.format=hdf5", "++workload.dataset.compression=gzip"] + common,
               expect_ok=False)
    text = p.stdout + p.stderr
    if p.returncode == 0 or "cannot describe a sample" not in text or "chunked" not in text \
            or "epoch 1" in text:
        fail("collective reading of chunked hdf5 was not refused before training")

    # A write error on rank 1's half (collective mode): both ranks stop, one error
    # line, no data file and no partial file, the run is marked failed.
    data = os.path.join(ARGS.work, "shared-fault")
    out = os.path.join(ARGS.work, "out-fault")
    p = mpirun(2, [ARGS.iomimic, "run", workload("quickstart"),
                   "++workload.workflow.generate_data=True",
                   "++workload.dataset.data_folder=" + data,
                   "++workload.output.folder=" + out,
                   "++workload.dataset.format=indexed_binary",
                   "++workload.storage.backend=faulty",
                   "++workload.storage.options={inner: mpiio, inner.mode: collective, "
                   "mode: enospc, fail_at_offset: 700000}"] + common,
               expect_ok=False, timeout=120)
    if p.returncode == 0:
        fail("the faulty shared generation succeeded")
    errors = [l for l in (p.stdout + p.stderr).splitlines() if l.startswith("iomimic: error:")]
    if len(errors) != 1 or "img_0_of_1" not in errors[0] or "ENOSPC" not in errors[0]:
        fail("expected one error line (rank 0's) naming the file and the error: %s" % errors)
    left = [n for _, _, names in os.walk(data) for n in names
            if not n.endswith(".idx")] if os.path.isdir(data) else []
    if left:
        fail("files left after the failed shared generation: %s" % left)
    with open(os.path.join(out, "status.json")) as f:
        if json.load(f).get("status") != "failed":
            fail("status.json does not say failed")


def content_stats(paths, skip=0):
    """(zlib ratio, share of 4 KiB blocks whose bytes occur more than once) of the
    files' bytes from offset `skip`, blocks counted from there."""
    import zlib
    data = b"".join(open(p, "rb").read()[skip:] for p in paths)
    ratio = len(data) / len(zlib.compress(data, 6))
    counts = {}
    blocks = [data[i:i + 4096] for i in range(0, len(data) - 4095, 4096)]
    for b in blocks:
        counts[b] = counts.get(b, 0) + 1
    shared = sum(n for n in counts.values() if n > 1)
    return ratio, shared / len(blocks)


def test_content_controls():
    """iomimic.content / compress_percentage / dedupe_percentage reach the generated files:
    zlib ratios and duplicate 4 KiB blocks as asked, zeros, `iomimic config` shows the keys,
    out-of-range values are refused."""
    common = [
        "++workload.workflow.train=False",
        "++workload.dataset.num_files_train=4",
        "++workload.dataset.num_files_eval=0",
        "++workload.dataset.num_samples_per_file=4",
        "++workload.dataset.record_length_bytes=262144",  # 4 MiB in all, 1024 blocks
        "++workload.dataset.record_length_bytes_stdev=0",
        "++workload.dataset.num_subfolders_train=0",
    ]

    def generate(name, fmt, extra):
        data = os.path.join(ARGS.work, name)
        run([ARGS.iomimic, "generate", workload("quickstart"), "++workload.dataset.format=" + fmt,
             "++workload.dataset.data_folder=" + data] + common + extra)
        return sorted(glob.glob(os.path.join(data, "train", "*." + fmt)))

    # Default: incompressible, no duplicate blocks.
    ratio, dup = content_stats(generate("default", "indexed_binary", []))
    print("default: zlib ratio %.3f, duplicate blocks %.3f" % (ratio, dup))
    if ratio > 1.01 or dup != 0:
        fail("default content must be incompressible and unique")
    # Half of every block compressible: zlib gets close to 2:1.
    ratio, dup = content_stats(generate(
        "compress", "indexed_binary", ["++workload.iomimic.compress_percentage=50"]))
    print("compress 50: zlib ratio %.3f, duplicate blocks %.3f" % (ratio, dup))
    if not 1.8 <= ratio <= 2.05 or dup != 0:
        fail("compress_percentage=50 should give a zlib ratio near 2 and unique blocks")
    # 30% of blocks duplicates (binomial over 1024 blocks: one sigma is 1.4 points).
    ratio, dup = content_stats(generate(
        "dedupe", "indexed_binary", ["++workload.iomimic.dedupe_percentage=30"]))
    print("dedupe 30: zlib ratio %.3f, duplicate blocks %.3f" % (ratio, dup))
    if not 0.25 <= dup <= 0.35:
        fail("dedupe_percentage=30 should make about 30%% of the 4 KiB blocks duplicates")
    # npy files (128-byte header, so blocks counted from the payload) with both.
    files = generate("npy", "npy", ["++workload.iomimic.compress_percentage=50",
                                    "++workload.iomimic.dedupe_percentage=30"])
    ratio, dup = content_stats(files, skip=128)
    print("npy compress 50 dedupe 30: zlib ratio %.3f, duplicate blocks %.3f" % (ratio, dup))
    if not 1.8 <= ratio <= 2.1 or not 0.25 <= dup <= 0.35:
        fail("npy files do not follow the content options")
    # Zeros: numpy sees arrays of zeros.
    files = generate("zeros", "npy", ["++workload.iomimic.content=zeros"])
    code = "import sys, numpy as np\nfor p in sys.argv[1:]: assert not np.load(p).any(), p\n"
    p = subprocess.run(["/usr/bin/python3", "-c", code] + files, capture_output=True, text=True)
    sys.stdout.write(p.stdout + p.stderr)
    if p.returncode != 0 or not files:
        fail("iomimic.content=zeros must write arrays of zeros")
    # The resolved manifest lists the keys; bad values are refused.
    p = run([ARGS.iomimic, "config", workload("quickstart"), "++workload.iomimic.content=zeros",
             "++workload.iomimic.compress_percentage=40"])
    for line in ("content: zeros", "compress_percentage: 40", "dedupe_percentage: 0"):
        if "\n  " + line + "\n" not in p.stdout:
            fail("iomimic config does not print '%s'" % line)
    expect_error([ARGS.iomimic, "config", workload("quickstart"),
                  "++workload.iomimic.dedupe_percentage=101"],
                 r"iomimic\.dedupe_percentage: expected an integer from 0 to 100, got '101'")
    expect_error([ARGS.iomimic, "config", workload("quickstart"),
                  "++workload.iomimic.content=ones"],
                 r"iomimic\.content: expected one of random, zeros or scrambled, got 'ones'")


def test_format_corruption():
    """Format conformance on the real binary: for every format plugin, a truncated
    file and a file whose start belongs to another format each stop the run with
    one error line naming the file and an offset; never a crash, never success."""
    p = run([ARGS.iomimic, "plugins"])
    formats = [l.split()[1] for l in p.stdout.splitlines() if l.startswith("format ")]
    foreign = {"png": b"\x93NUMPY\x01\x00" + b"\xff" * 56}
    default_foreign = b"\x89PNG\r\n\x1a\n" + b"\xff" * 56
    checked = []
    for fmt in formats:
        if fmt == "synthetic":
            continue  # no bytes to damage
        single = fmt in ("png", "jpeg", "tiff")
        data = os.path.join(ARGS.work, fmt, "data")
        ov = ["++workload.dataset.format=" + fmt, "++workload.dataset.data_folder=" + data,
              "++workload.framework=tensorflow", "++workload.reader.data_loader=tensorflow",
              "++workload.dataset.num_files_train=4", "++workload.dataset.num_files_eval=0",
              "++workload.dataset.num_subfolders_train=0",
              "++workload.dataset.num_samples_per_file=%d" % (1 if single else 4),
              "++workload.dataset.record_length_bytes=4096",
              "++workload.dataset.record_length_bytes_stdev=0",
              "++workload.workflow.evaluation=False", "++workload.train.computation_time=0",
              "++workload.train.epochs=1", "++workload.reader.batch_size=1",
              "++workload.reader.read_threads=1"]
        run([ARGS.iomimic, "generate", workload("quickstart")] + ov)
        # The first data file (its extension is the plugin's own: .tar for
        # webdataset; companions such as mds's index folders are not files).
        victim = sorted(f for f in glob.glob(os.path.join(data, "train", "*"))
                        if os.path.isfile(f))[0]
        original = open(victim, "rb").read()
        cases = [("truncated", original[: len(original) * 3 // 5])]
        if fmt not in ("indexed_binary", "mmap_indexed_binary"):  # raw bytes: no header
            cases.append(("foreign header", foreign.get(fmt, default_foreign) + original[64:]))
        for name, content in cases:
            with open(victim, "wb") as f:
                f.write(content)
            out = os.path.join(ARGS.work, fmt, "out-" + name.replace(" ", "-"))
            p = run([ARGS.iomimic, "run", workload("quickstart"), "++workload.output.folder=" + out,
                     "++workload.workflow.generate_data=False"] + ov, expect_ok=False)
            lines = [l for l in p.stderr.splitlines() if l.startswith("iomimic: error:")]
            if p.returncode == 0 or p.returncode < 0 or len(lines) != 1:
                fail("%s, %s file: expected one error line and a clean non-zero exit, got "
                     "rc=%d:\n%s" % (fmt, name, p.returncode, p.stderr))
            if os.path.basename(victim) not in lines[0] or "offset" not in lines[0]:
                fail("%s, %s file: the error must name the file and an offset: %s" %
                     (fmt, name, lines[0]))
            status = load_strict_json(os.path.join(out, "status.json"))
            if status["status"] != "failed":
                fail("%s: status.json must say failed" % fmt)
            checked.append("%s/%s" % (fmt, name))
        with open(victim, "wb") as f:
            f.write(original)
    print("refused cleanly: " + ", ".join(checked))


def test_every_training_workload_runs_shrunk():
    """Every DLIO and MLPerf Storage workload file that trains runs unmodified but for overrides that
    shrink it (counts, sizes, times, model dimensions and parallelism); the
    checkpoint-only llama files are covered by the checkpoint tests."""
    folder = os.path.join(ARGS.source, "workloads")  # DLIO's and MLPerf Storage v3.0's files
    ran = []
    for path in sorted(glob.glob(os.path.join(folder, "*.yaml"))):
        name = os.path.splitext(os.path.basename(path))[0]
        resolved = run([ARGS.iomimic, "config", path]).stdout
        if re.search(r"^\s+train: false", resolved, re.M | re.I):
            continue
        work = os.path.join(ARGS.work, name)
        # Files of one sample (images) keep one sample per file.
        m = re.search(r"^\s+num_samples_per_file: (\d+)", resolved, re.M)
        samples = min(4, int(m.group(1))) if m else 4
        ov = [
            "++workload.workflow.generate_data=True",
            # The *_s3 files on a local folder (against a server: s3_tests.py).
            "++workload.storage.storage_type=local_fs",
            "++workload.dataset.data_folder=" + os.path.join(work, "data"),
            "++workload.output.folder=" + os.path.join(work, "out"),
            "++workload.checkpoint.checkpoint_folder=" + os.path.join(work, "ckpt"),
            "++workload.dataset.num_files_train=4", "++workload.dataset.num_files_eval=2",
            "++workload.dataset.num_samples_per_file=%d" % samples,
            "++workload.dataset.record_length_bytes=4096",
            "++workload.dataset.record_length_bytes_stdev=0",
            "++workload.dataset.num_subfolders_train=0", "++workload.dataset.num_subfolders_eval=0",
            "++workload.reader.batch_size=2", "++workload.reader.batch_size_eval=1",
            "++workload.train.epochs=1", "++workload.train.computation_time=0.001",
            "++workload.evaluation.eval_time=0",
            "++workload.model.model_size_bytes=4096",
            "++workload.model.num_layers=2", "++workload.model.transformer.hidden_size=64",
            "++workload.model.transformer.ffn_hidden_size=128",
            "++workload.model.transformer.vocab_size=100",
            "++workload.model.parallelism.tensor=1", "++workload.model.parallelism.pipeline=1",
            "++workload.model.layer_parameters=[1024]",
            "++workload.model.optimization_groups=[1024]",
        ]
        run([ARGS.iomimic, "run", "-q", path] + ov)
        s = load_strict_json(os.path.join(work, "out", "summary.json"))
        # A synthetic data loader (l2hmc: data made by the application) reads nothing.
        reads = not re.search(r"^\s+data_loader: synthetic$", resolved, re.M)
        if s["epochs"] != 1 or (reads and s["iomimic"]["bytes_read"] <= 0):
            fail(name + ": no training epoch or nothing read")
        ran.append(name)
    if len(ran) < 15:
        fail("expected the training workloads to run, ran only %s" % ran)
    print("ran %d workloads: %s" % (len(ran), ", ".join(ran)))


def synthetic_overrides(out, files, samples_per_file, epochs, compute, eval_files=0,
                        eval_time=0, extra=()):
    """A synthetic-format run (no I/O): one sample per step."""
    return [
        "++workload.workflow.generate_data=True",
        "++workload.dataset.format=synthetic",
        "++workload.dataset.data_folder=" + os.path.join(ARGS.work, "data"),
        "++workload.dataset.num_files_train=%d" % files,
        "++workload.dataset.num_files_eval=%d" % eval_files,
        "++workload.dataset.num_samples_per_file=%d" % samples_per_file,
        "++workload.dataset.num_subfolders_train=0", "++workload.dataset.num_subfolders_eval=0",
        "++workload.workflow.evaluation=%s" % (eval_files > 0),
        "++workload.reader.batch_size=1", "++workload.reader.batch_size_eval=1",
        "++workload.reader.read_threads=1",
        "++workload.train.epochs=%d" % epochs,
        "++workload.train.computation_time=%s" % compute,
        "++workload.evaluation.eval_time=%s" % eval_time,
        "++workload.output.folder=" + out,
    ] + list(extra)


def test_step_lists_bounded():
    """<rank>_output.json's per-step lists: with iomimic.max_step_list a long run's lists
    hold means of k steps (k in steps_per_entry) and add up to the measured totals; with the
    default bound a short run's lists hold every step, as DLIO writes them."""
    # ~200k training steps (not a multiple of k: the last entry stands for fewer steps)
    # and 3000 evaluation steps, bound 1000.
    out = os.path.join(ARGS.work, "long")
    p = run([ARGS.iomimic, "run", workload("quickstart")] + synthetic_overrides(
        out, files=401, samples_per_file=500, epochs=1, compute=0.000005, eval_files=6,
        extra=["++workload.iomimic.max_step_list=1000"]))
    steps, eval_steps = 401 * 500, 6 * 500
    k, k_eval = -(-steps // 1000), -(-eval_steps // 1000)  # 201 and 3
    if "means of up to %d steps" % k not in p.stdout:
        fail("the console does not say that the lists were aggregated")
    s = load_strict_json(os.path.join(out, "summary.json"))
    if s["iomimic"]["train_steps_per_epoch"] != steps:
        fail("expected %d steps, ran %d" % (steps, s["iomimic"]["train_steps_per_epoch"]))
    path = os.path.join(out, "0_output.json")
    size = os.path.getsize(path)
    if size > 300 * 1024:
        fail("0_output.json is %d bytes; 7000 entries should take far less" % size)
    o = load_strict_json(path)
    e = o["1"]
    if list(e.keys()) != ["load", "proc", "compute", "au", "throughput", "host_meminfo", "end",
                          "steps_per_entry"]:
        fail("epoch keys %s" % list(e.keys()))
    if e["steps_per_entry"] != {"block1": k, "eval": k_eval}:
        fail("steps_per_entry is %s, expected block1 %d and eval %d" % (e["steps_per_entry"], k,
                                                                           k_eval))
    for name in ("load", "proc", "compute"):
        for phase, n, kk in (("block1", steps, k), ("eval", eval_steps, k_eval)):
            entries = e[name][phase]
            if len(entries) != -(-n // kk) or len(entries) > 1000:
                fail("%s.%s has %d entries" % (name, phase, len(entries)))
            for v in entries:
                check_type("%s.%s entry" % (name, phase), v, float)
    # The compute entries (what each step asked for, docs/performance.md) add up to
    # the requested compute (summary.json): exactly when the last entry is weighted
    # by its own step count, within 1% as sum * k.
    measured = s["iomimic"]["compute_requested_seconds"]
    c = e["compute"]["block1"]
    exact = sum(c[:-1]) * k + c[-1] * (steps - (len(c) - 1) * k)
    if abs(exact - measured) > 1e-4 * measured + 1e-6:
        fail("compute entries add up to %.9f s, summary says %.9f s" % (exact, measured))
    if abs(sum(c) * k - measured) > 0.01 * measured:
        fail("sum(compute) * k = %.6f s, summary says %.6f s" % (sum(c) * k, measured))
    if min(c) < 0.000005 * 0.99:
        fail("a compute mean %.9f s is below computation_time" % min(c))
    for a, b in zip(e["proc"]["block1"], c):
        if a < b:
            fail("a proc mean %.9f s is below its compute mean %.9f s" % (a, b))
    if not isinstance(s["iomimic"].get("output_seconds"), float):
        fail("iomimic.output_seconds missing")

    # A short run with the default bound: every step, DLIO's values.
    out = os.path.join(ARGS.work, "short")
    compute, eval_time = 0.002, 0.001
    run([ARGS.iomimic, "run", workload("quickstart")] + synthetic_overrides(
        out, files=30, samples_per_file=1, epochs=2, compute=compute, eval_files=4,
        eval_time=eval_time))
    s = load_strict_json(os.path.join(out, "summary.json"))
    o = load_strict_json(os.path.join(out, "0_output.json"))
    total = 0.0
    for epoch in ("1", "2"):
        e = o[epoch]
        if list(e.keys()) != ["load", "proc", "compute", "au", "throughput", "host_meminfo", "end"]:
            fail("epoch %s keys %s" % (epoch, list(e.keys())))
        for phase, n, want in (("block1", 30, compute), ("eval", 4, eval_time)):
            lists = [e[name][phase] for name in ("load", "proc", "compute")]
            if [len(l) for l in lists] != [n] * 3:
                fail("epoch %s %s: lists of %s entries, expected %d" %
                     (epoch, phase, [len(l) for l in lists], n))
            load, proc, comp = lists
            for i in range(n):
                if not want * 0.99 <= comp[i] < want + 0.05:
                    fail("epoch %s %s step %d: compute %.9f s for %.3f s" %
                         (epoch, phase, i, comp[i], want))
                if proc[i] < comp[i] or load[i] < 0:
                    fail("epoch %s %s step %d: load %r proc %r compute %r" %
                         (epoch, phase, i, load[i], proc[i], comp[i]))
            if sorted(comp)[n // 2] > want * 1.05:
                fail("epoch %s %s: median compute %.9f s for %.3f s" %
                     (epoch, phase, sorted(comp)[n // 2], want))
        total += sum(e["compute"]["block1"])
    measured = s["iomimic"]["compute_requested_seconds"]
    if abs(total - measured) > 1e-9 * measured + 1e-12:
        fail("compute lists add up to %r s, summary says %r s" % (total, measured))


def main(tests=None):
    """Runs the test named on the command line: a function test_<name> of
    `tests` (a module's globals; this module's by default)."""
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("test")
    ap.add_argument("--iomimic", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--bad-plugins", default="")
    ap.add_argument("--cmake", default="cmake")
    ap.add_argument("--build", default="")
    ARGS = ap.parse_args()
    ARGS.iomimic = os.path.abspath(ARGS.iomimic)
    ARGS.source = os.path.abspath(ARGS.source)
    shutil.rmtree(ARGS.work, ignore_errors=True)
    os.makedirs(ARGS.work)
    fn = (tests if tests is not None else globals()).get("test_" + ARGS.test)
    if fn is None:
        fail("unknown test " + ARGS.test)
    fn()
    print("PASS " + ARGS.test)


if __name__ == "__main__":
    main()
