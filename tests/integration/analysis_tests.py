#!/usr/bin/python3
"""End-to-end checks of the analysis commands (docs/analysis.md): compare,
sweep (a 2 x 2 design, killed midway and resumed), search (a storage whose
bandwidth cap gives a known answer). Run by ctest.

Usage: analysis_tests.py <test-name> --iomimic BIN --source DIR --work DIR
"""

import csv
import json
import os
import re
import shutil
import signal
import subprocess
import time

import iomimic_tests as harness
from iomimic_tests import fail, run


def args():
    return harness.ARGS


def shrink(data, files=16, epochs=1, compute=0.005):
    return [
        "++workload.workflow.generate_data=True",
        "++workload.dataset.data_folder=" + data,
        "++workload.dataset.num_files_train=%d" % files,
        "++workload.dataset.num_files_eval=0",
        "++workload.workflow.evaluation=False",
        "++workload.train.epochs=%d" % epochs,
        "++workload.train.computation_time=%g" % compute,
    ]


def test_compare_shows_differences():
    """Two runs on different back ends: the table has both runs' figures and
    their ratio, and the differing keys with both values."""
    data = os.path.join(args().work, "data")
    a, b = os.path.join(args().work, "a"), os.path.join(args().work, "b")
    run([args().iomimic, "run", "-q", "workload=quickstart", "++workload.output.folder=" + a] +
        shrink(data))
    run([args().iomimic, "run", "-q", "workload=quickstart", "++workload.output.folder=" + b,
         "++workload.storage.backend=mmap"] + shrink(data))
    out = run([args().iomimic, "compare", a, b]).stdout
    lines = out.splitlines()
    au = [line for line in lines if line.startswith("train AU %")]
    if len(au) != 1 or len(au[0].split()) != 6:  # name (3 words), A, B, B/A
        fail("no 'train AU %' row with A, B and B/A:\n" + out)
    with open(os.path.join(a, "summary.json")) as f:
        au_a = json.load(f)["metric"]["train_au_mean_percentage"]
    if abs(float(au[0].split()[3]) - au_a) > 0.01:
        fail("A's AU %s, summary.json says %.2f" % (au[0].split()[3], au_a))
    backend = [line.split() for line in lines if line.startswith("storage.backend")]
    if backend != [["storage.backend", "posix", "mmap"]]:
        fail("the back ends are not shown as a difference:\n" + out)
    if any(line.startswith("output.folder") for line in lines):
        fail("output.folder is listed as a difference")
    # The number of accelerators is not a manifest key but a difference.
    c = os.path.join(args().work, "c")
    harness.mpirun(2, [args().iomimic, "run", "-q", "workload=quickstart",
                       "++workload.output.folder=" + c] + shrink(data))
    out = run([args().iomimic, "compare", a, c]).stdout
    accelerators = [line.split() for line in out.splitlines()
                    if line.startswith("num_accelerators")]
    if accelerators != [["num_accelerators", "1", "2"]]:
        fail("1 against 2 accelerators is not shown as a difference:\n" + out)
    p = run([args().iomimic, "compare", a], expect_ok=False)
    if p.returncode != 2:
        fail("compare with one run exited %d, expected a usage error" % p.returncode)


def read_design(path):
    with open(path, newline="") as f:
        return [row for row in csv.DictReader(line for line in f if not line.startswith("#"))]


def kvcache_pair(work):
    """Two short KV-cache runs: A on posix with the quickstart's CPU tier, B
    through the latency decorator without a CPU tier. Their folders."""
    a, b = os.path.join(work, "kv_a"), os.path.join(work, "kv_b")
    common = ["++workload.kv_cache.duration=2",
              "++workload.storage.storage_root=" + os.path.join(work, "kvdata")]
    run([args().iomimic, "run", "-q", "workload=kvcache_quickstart",
         "++workload.output.folder=" + a] + common)
    run([args().iomimic, "run", "-q", "workload=kvcache_quickstart",
         "++workload.output.folder=" + b, "++workload.kv_cache.cpu_mem_gb=0",
         "++workload.storage.backend=latency", "++workload.storage.options.delay=5ms"] + common)
    return a, b


def test_compare_kvcache_runs():
    """compare of two KV-cache runs: tokens/s, per-tier bandwidth (a tier a
    run lacks is '-'), hit rate, latency percentiles and per-class QoS side by
    side, each equal to its summary.json."""
    a, b = kvcache_pair(args().work)
    out = run([args().iomimic, "compare", a, b]).stdout
    rows = {}
    for line in out.splitlines():
        m = re.match(r"^(kv .+?)\s{2,}(\S+)\s+(\S+)\s+(\S+)$", line)
        if m:
            rows[m.group(1).strip()] = m.groups()[1:]
    kv = []
    for folder in (a, b):
        with open(os.path.join(folder, "summary.json")) as f:
            kv.append(json.load(f)["kv_cache"])
    expect = {
        "kv storage tokens/s": lambda k: k["aggregate"]["storage_tokens_per_second"],
        "kv wall tokens/s": lambda k: k["wall_tokens_per_second"],
        "kv hit rate": lambda k: k["cache"]["hit_rate"],
        "kv storage read GiB/s": lambda k: k["tiers"]["storage"]["read_GiB_per_second"],
        "kv storage write GiB/s": lambda k: k["tiers"]["storage"]["write_GiB_per_second"],
        "kv e2e p95 ms": lambda k: k["latency_ms"]["end_to_end"]["p95"],
        "kv storage p99 ms": lambda k: k["latency_ms"]["storage"]["p99"],
    }
    for name, value in expect.items():
        if name not in rows:
            fail("no %r row with A, B and B/A:\n%s" % (name, out))
        for i in range(2):
            shown, want = float(rows[name][i]), value(kv[i])
            if abs(shown - want) > max(0.006, 0.0051 * abs(want)):
                fail("%s of %s: shown %s, summary.json %s" % (name, "AB"[i], shown, want))
    # A has a CPU tier, B none; neither has a GPU tier.
    cpu = rows.get("kv cpu read GiB/s")
    if not cpu or cpu[1] != "-" or cpu[0] == "-":
        fail("the CPU tier row should have A's figure and '-' for B: %s\n%s" % (cpu, out))
    if any(name.startswith("kv gpu") for name in rows):
        fail("a GPU tier row for runs without one:\n" + out)
    # A KV-cache run's hosts have no training figures: no per-host block of
    # zeros.
    if "per host:" in out:
        fail("a per-host training block for two KV-cache runs:\n" + out)
    for q in ("interactive", "responsive", "batch"):
        line = [l for l in out.splitlines() if l.startswith(q + " (")]
        if len(line) != 1:
            fail("no QoS row for %s:\n%s" % (q, out))
        cells = line[0].split()[-2:]
        for i in range(2):
            c = kv[i]["qos"][q]
            want = "-" if c["requests"] == 0 else ("meets" if c["meets_target"] else "misses")
            if cells[i] != want:
                fail("QoS %s of %s: %s, summary.json says %s" % (q, "AB"[i], cells[i], want))
    if [l.split() for l in out.splitlines() if l.startswith("storage.backend")] != [
            ["storage.backend", "posix", "latency"]]:
        fail("the back ends are not shown as a difference:\n" + out)


def test_sweep_runs_and_resumes():
    """A 2 x 2 design (processes x reader.read_threads): killed after its
    first experiment, then run again, it finishes only the missing rows; the
    run column becomes Y; results.csv has one row per experiment with each
    run's figures."""
    work = args().work
    design = os.path.join(work, "design.csv")
    with open(design, "w") as f:
        f.write("# the study's shape: model, processes, overrides, run\n")
        f.write("model,processes,reader.read_threads,overrides,run\n")
        for procs in (1, 2):
            for threads in (1, 2):
                f.write("quickstart,%d,%d,++workload.train.epochs=2,N\n" % (procs, threads))
    out = os.path.join(work, "runs")
    common = shrink(os.path.join(work, "data"), files=16, epochs=2, compute=0.2) + [
        "++workload.reader.batch_size=2"]
    cmd = [args().iomimic, "sweep", design, "--output", out] + common
    # Start, wait for the first row to be marked, stop the sweep.
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    deadline = time.time() + 120
    while time.time() < deadline:
        rows = read_design(design)
        if any(r["run"] == "Y" for r in rows):
            break
        if proc.poll() is not None:
            fail("the sweep ended before any row was marked:\n" + proc.stdout.read())
        time.sleep(0.05)
    else:
        fail("no row marked Y within 120 s")
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    rows = read_design(design)
    done_first = [i for i, r in enumerate(rows) if r["run"] == "Y"]
    if not done_first or len(done_first) == 4:
        fail("after the kill %d rows are Y; the test needs a partial sweep" % len(done_first))
    first_folder = sorted(d for d in os.listdir(out) if d.startswith("1_"))[0]
    first_summary = os.path.join(out, first_folder, "summary.json")
    stamp = os.path.getmtime(first_summary)

    p = run(cmd)
    if "done before" not in p.stdout:
        fail("the second sweep does not report the rows done before:\n" + p.stdout)
    rows = read_design(design)
    if [r["run"] for r in rows] != ["Y"] * 4:
        fail("run column after resuming: %s" % [r["run"] for r in rows])
    if os.path.getmtime(first_summary) != stamp:
        fail("the first experiment ran again")
    with open(os.path.join(work, "design.csv")) as f:
        if not f.readline().startswith("# the study's shape"):
            fail("the design's comment line was lost")
    results = read_design(os.path.join(out, "results.csv"))
    if len(results) != 4:
        fail("results.csv has %d rows, expected 4" % len(results))
    for r in results:
        with open(os.path.join(r["folder"], "summary.json")) as f:
            s = json.load(f)
        if r["status"] != "completed":
            fail("experiment %s status %s" % (r["experiment"], r["status"]))
        if s["num_accelerators"] != int(r["processes"]):
            fail("experiment %s ran %d accelerators, the design asked %s" %
                 (r["experiment"], s["num_accelerators"], r["processes"]))
        if abs(float(r["train AU %"]) - s["metric"]["train_au_mean_percentage"]) > 1e-3:
            fail("experiment %s: results.csv AU %s, summary %s" %
                 (r["experiment"], r["train AU %"], s["metric"]["train_au_mean_percentage"]))
        threads = s["iomimic"]["manifest"]["resolved"]
        if "read_threads: %s" % r["reader.read_threads"] not in threads:
            fail("experiment %s did not run with read_threads %s" %
                 (r["experiment"], r["reader.read_threads"]))


def test_multirun_expands_a_sweep():
    """Hydra's multirun as sugar for a sweep: `iomimic run -m` with two
    overrides of two values each runs the 4 combinations into
    ++hydra.sweep.dir, with the design file and results.csv of a sweep."""
    work = args().work
    out = os.path.join(work, "sweep")
    p = run([args().iomimic, "run", "-m", "workload=quickstart",
             "++workload.reader.read_threads=1,2", "++workload.reader.batch_size=2,4",
             "++hydra.sweep.dir=" + out] + shrink(os.path.join(work, "data"), files=16))
    if "4 completed, 0 failed of 4" not in p.stdout:
        fail("multirun did not run the 4 combinations:\n" + p.stdout[-1500:])
    rows = read_design(os.path.join(out, "design.csv"))
    combos = sorted((r["reader.read_threads"], r["reader.batch_size"]) for r in rows)
    if combos != [("1", "2"), ("1", "4"), ("2", "2"), ("2", "4")] or any(
            r["run"] != "Y" for r in rows):
        fail("design.csv: %s" % rows)
    for r in read_design(os.path.join(out, "results.csv")):
        with open(os.path.join(r["folder"], "summary.json")) as f:
            resolved = json.load(f)["iomimic"]["manifest"]["resolved"]
        for key, value in (("read_threads", r["reader.read_threads"]),
                           ("batch_size", r["reader.batch_size"])):
            if "  %s: %s\n" % (key, value) not in resolved:
                fail("experiment %s did not run with %s %s" % (r["experiment"], key, value))
    p = run([args().iomimic, "run", "-m", "workload=quickstart", "++workload.train.epochs=1"],
            expect_ok=False)
    if p.returncode != 2 or "comma-separated" not in p.stderr:
        fail("-m without a list of values: exit %d, %s" % (p.returncode, p.stderr))


def test_search_finds_known_answer():
    """Storage capped at 20 MiB/s for all readers, samples of 256 KiB, one per
    step, 50 ms of compute per step: each accelerator needs 5 MiB/s, so 4
    accelerators keep AU near 100% and 5 fall to about 80%. Search with an
    85% threshold must answer 4 (within one step of bisection)."""
    work = args().work
    data = os.path.join(work, "data")
    out = os.path.join(work, "search")
    overrides = shrink(data, files=64, epochs=1, compute=0.05) + [
        "++workload.dataset.format=npy",
        "++workload.dataset.record_length_bytes=262144",
        "++workload.dataset.record_length_bytes_stdev=0",
        "++workload.reader.batch_size=1",
        "++workload.reader.read_threads=1",
        "++workload.reader.prefetch_size=2",
        "++workload.storage.backend=latency",
        "++workload.storage.options.bandwidth=20M",
        "++workload.storage.options.apply_to_writes=false",
    ]
    p = run([args().iomimic, "search", "quickstart", "--min-au", "85", "--max", "16",
             "--output", out] + overrides)
    answer = [line for line in p.stdout.splitlines() if line.startswith("answer:")]
    if not answer:
        fail("no answer line:\n" + p.stdout)
    n = int(answer[0].split()[1])
    if not 3 <= n <= 5:
        fail("search answered %d accelerators, expected 4 (+-1):\n%s" % (n, p.stdout))
    points = read_design(os.path.join(out, "search.csv"))
    tried = [int(r["accelerators"]) for r in points]
    if tried[:3] != [1, 2, 4]:
        fail("search did not double from 1: %s" % tried)
    held = {int(r["accelerators"]): r["held"] == "1" for r in points}
    if not held.get(n) or held.get(n + 1, False):
        fail("the answer %d is not the last that held: %s" % (n, held))


def kvcache_small_users():
    """Overrides giving every user type 16-32 context tokens and 16-32
    generated tokens (tiny-1b: 384-768 KiB entries)."""
    out = []
    for t in ("chatbot", "coding", "document"):
        out += ["++workload.kv_cache.users.%s.%s=%d" % (t, k, v)
                for k, v in (("context_min", 16), ("context_max", 32),
                             ("generation_min", 16), ("generation_max", 32))]
    return out


def fast_folder(name):
    """A folder in memory (/dev/shm) where there is one, else in the work
    folder: the latency decorator, not a disk shared with other tests, is
    then what makes the storage slow."""
    shm = "/dev/shm"
    if os.path.isdir(shm) and os.access(shm, os.W_OK):
        return os.path.join(shm, "iomimic-%d-%s" % (os.getpid(), name))
    return os.path.join(args().work, name)


def test_search_finds_most_kvcache_users():
    """`search` of a KV-cache workload grows kv_cache.num_users. Storage capped
    at 20 MB/s for all users (the latency decorator), no memory tier, small
    entries: one user's requests take about 100 ms, while a few users queue on
    the cap and their P95 grows past the threshold. The answer must be a
    probe that met the target, the next number a probe that missed it, and
    every probe's verdict must agree with its own summary.json."""
    data = fast_folder("search_data")
    try:
        search_kvcache_users(data)
    finally:
        shutil.rmtree(data, ignore_errors=True)


def search_kvcache_users(data):
    work = args().work
    out = os.path.join(work, "search")
    limit = 400.0
    overrides = [
        "++workload.kv_cache.duration=3",
        "++workload.kv_cache.cpu_mem_gb=0",
        "++workload.storage.storage_root=" + data,
        "++workload.storage.backend=latency",
        "++workload.storage.options.bandwidth=20M",
    ] + kvcache_small_users()
    # A bad target is refused before any run.
    p = run([args().iomimic, "search", "kvcache_quickstart", "--qos-class", "gold",
             "--output", out] + overrides, expect_ok=False)
    if p.returncode == 0 or "'gold'" not in p.stderr or os.path.exists(os.path.join(out, "users-1")):
        fail("--qos-class gold: exit %d, %s" % (p.returncode, p.stderr))
    p = run([args().iomimic, "search", "kvcache_quickstart", "--max", "32", "--max-ms",
             str(limit), "--output", out] + overrides)
    answer = [line for line in p.stdout.splitlines() if line.startswith("answer:")]
    if not answer or "user(s)" not in answer[0]:
        fail("no users answer line (not detected as a KV-cache search?):\n" + p.stdout)
    n = int(answer[0].split()[1])
    points = read_design(os.path.join(out, "search.csv"))
    tried = [int(r["users"]) for r in points]
    if tried[:2] != [1, 2]:
        fail("search did not double from 1 user: %s" % tried)
    held = {}
    for r in points:
        users = int(r["users"])
        with open(os.path.join(r["folder"], "summary.json")) as f:
            kv = json.load(f)["kv_cache"]
        if kv["num_users_per_rank"] != users:
            fail("probe %s ran %s users" % (r["folder"], kv["num_users_per_rank"]))
        meets = kv["requests"] > 0 and all(
            q["latency_ms"]["p95"] <= limit for q in kv["qos"].values() if q["requests"] > 0)
        if meets != (r["held"] == "1"):
            fail("probe with %d users: search says held=%s, its summary says %s" %
                 (users, r["held"], meets))
        if abs(float(r["storage_tokens_per_second"]) -
               kv["aggregate"]["storage_tokens_per_second"]) > 0.01 * max(
                   1.0, kv["aggregate"]["storage_tokens_per_second"]):
            fail("probe with %d users: storage tokens/s %s, summary %s" %
                 (users, r["storage_tokens_per_second"], kv["aggregate"]))
        held[users] = meets
    if n < 1:
        fail("not even one user met p95 <= %g ms under a 20 MB/s cap:\n%s" % (limit, p.stdout))
    if n >= 32 or not held.get(n) or held.get(n + 1, True):
        fail("the answer %d is not the last number that met the target: %s" % (n, held))
    # Monotone as far as the search knows: nothing above a miss was called held.
    first_miss = min(u for u, h in held.items() if not h)
    if any(h for u, h in held.items() if u > first_miss):
        fail("a probe above the first miss (%d users) held: %s" % (first_miss, held))


if __name__ == "__main__":
    harness.main(globals())
