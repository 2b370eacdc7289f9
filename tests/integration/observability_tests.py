#!/usr/bin/python3
"""End-to-end checks of what a run folder says about the storage over time
(timeline.csv, events.csv, histograms.json), against independent counts: the
plan's samples and steps, the storage layer's totals in summary.json, a
latency decorator's known delay. Run by ctest.

Usage: observability_tests.py <test-name> --iomimic BIN --source DIR --work DIR
"""

import csv
import glob
import json
import os
import pty
import re
import signal
import subprocess
import sys
import tempfile
import time

import iomimic_tests as harness
from iomimic_tests import fail, mpirun, run


def args():
    return harness.ARGS


EVAL_TIME = 0.005


def overrides(data, out, extra=()):
    return [
        "workload=quickstart",
        "++workload.workflow.generate_data=True",
        "++workload.dataset.format=npz",
        "++workload.dataset.data_folder=" + data,
        "++workload.dataset.num_files_train=32",
        "++workload.dataset.num_files_eval=8",
        "++workload.dataset.num_samples_per_file=1",
        "++workload.dataset.record_length_bytes=65536",
        "++workload.dataset.record_length_bytes_stdev=0",
        "++workload.reader.batch_size=4",
        "++workload.reader.batch_size_eval=2",
        "++workload.reader.read_threads=2",
        "++workload.train.epochs=3",
        "++workload.train.computation_time=0.02",
        "++workload.evaluation.eval_time=%g" % EVAL_TIME,
        "++workload.workflow.evaluation=True",
        "++workload.output.folder=" + out,
        "++workload.iomimic.timeline_interval=0.05",
    ] + list(extra)


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def load(out, name):
    with open(os.path.join(out, name)) as f:
        return json.load(f)


def check_timeline(out, ranks, summary):
    rows = read_csv(os.path.join(out, "timeline.csv"))
    if not rows:
        fail("timeline.csv has no rows")
    per_rank = {str(r): [row for row in rows if row["rank"] == str(r)] for r in range(ranks)}
    all_rows = [row for row in rows if row["rank"] == "all"]
    io = summary["iomimic"]
    for rank, mine in per_rank.items():
        if not mine:
            fail("timeline.csv has no rows for rank %s" % rank)
        # Rows tile the run: each starts where the previous one ended.
        for a, b in zip(mine, mine[1:]):
            if abs(float(a["end_s"]) - float(b["start_s"])) > 1e-6:
                fail("rank %s: interval %s ends at %s, the next starts at %s" %
                     (rank, a["interval"], a["end_s"], b["start_s"]))
            if int(b["interval"]) < int(a["interval"]):
                fail("rank %s: intervals out of order" % rank)
        for row in mine:
            if not 0 <= float(row["au_percent"]) <= 100.5:
                fail("rank %s interval %s: AU %s%%" % (rank, row["interval"], row["au_percent"]))
    # Sums over every interval equal the run's totals.
    for column, total in (("bytes_read", io["bytes_read"]), ("bytes_written", io["bytes_written"]),
                          ("read_requests", io["read_requests"]),
                          ("write_requests", io["write_requests"]),
                          ("samples", io["sample_read_latency_ms"]["count"])):
        got = sum(int(row[column]) for row in rows if row["rank"] != "all")
        if got != total:
            fail("timeline.csv: %s sum to %d over the intervals, the run's total is %d" %
                 (column, got, total))
        got_all = sum(int(row[column]) for row in all_rows)
        if got_all != total:
            fail("timeline.csv: the all-ranks rows' %s sum to %d, expected %d" %
                 (column, got_all, total))
    steps = (io["train_steps_per_epoch"] + io["eval_steps_per_epoch"]) * summary["epochs"]
    got = sum(int(row["steps"]) for row in rows if row["rank"] != "all")
    if got != steps * ranks:
        fail("timeline.csv: %d steps over the intervals, the plan has %d per rank x %d" %
             (got, steps, ranks))
    # The emulated compute adds up to what was asked for: the training
    # compute summary.json reports plus the evaluation steps' EVAL_TIME.
    compute = sum(float(row["compute_s"]) for row in rows if row["rank"] != "all")
    expected = (io["compute_requested_seconds"] +
                EVAL_TIME * io["eval_steps_per_epoch"] * summary["epochs"] * ranks)
    if abs(compute - expected) > 0.01 + 0.01 * expected:
        fail("timeline.csv: %.4f s of compute, %.4f s were asked for" % (compute, expected))
    return rows


def check_events(out, ranks, summary):
    events = read_csv(os.path.join(out, "events.csv"))
    for rank in range(ranks):
        mine = [e for e in events if e["rank"] == str(rank)]
        kinds = [e["event"] for e in mine]
        if kinds.count("generate") != 1:
            fail("rank %d: %d generate events" % (rank, kinds.count("generate")))
        epochs = [e for e in mine if e["event"] == "epoch"]
        if [int(e["epoch"]) for e in epochs] != list(range(1, summary["epochs"] + 1)):
            fail("rank %d: epoch events %s" % (rank, [e["epoch"] for e in epochs]))
        evals = [e for e in mine if e["event"] == "eval"]
        if len(evals) != summary["epochs"]:
            fail("rank %d: %d eval events for %d epochs" % (rank, len(evals), summary["epochs"]))
        generate = [e for e in mine if e["event"] == "generate"][0]
        # In order, and nested: each epoch after generation, its block and
        # evaluation inside it.
        for e in epochs:
            if float(e["start_s"]) < float(generate["end_s"]) - 1e-6:
                fail("rank %d: epoch %s starts before generation ended" % (rank, e["epoch"]))
            inside = [x for x in mine if x["epoch"] == e["epoch"]
                      and x["event"] in ("train_block", "eval")]
            for x in inside:
                if (float(x["start_s"]) < float(e["start_s"]) - 1e-6 or
                        float(x["end_s"]) > float(e["end_s"]) + 1e-6):
                    fail("rank %d: %s of epoch %s lies outside the epoch" %
                         (rank, x["event"], e["epoch"]))
        for a, b in zip(epochs, epochs[1:]):
            if float(b["start_s"]) < float(a["end_s"]) - 1e-6:
                fail("rank %d: epoch %s starts before epoch %s ended" % (rank, b["epoch"],
                                                                         a["epoch"]))
    # Epoch bytes are the storage layer's: all epochs and evaluations sum to
    # the bytes read.
    read = sum(int(e["bytes"]) for e in events if e["event"] in ("epoch", "eval"))
    if read != summary["iomimic"]["bytes_read"]:
        fail("events.csv: epochs and evaluations read %d bytes, the run read %d" %
             (read, summary["iomimic"]["bytes_read"]))


def test_timeline_and_events_add_up():
    """timeline.csv's intervals tile the run and sum to its totals (bytes,
    requests, samples, the plan's steps, the requested compute); events.csv
    has generation, every epoch and evaluation, in order and nested."""
    data = os.path.join(args().work, "data")
    out = os.path.join(args().work, "one")
    run([args().iomimic, "run", "-q"] + overrides(data, out))
    summary = load(out, "summary.json")
    rows = check_timeline(out, 1, summary)
    if len(rows) < 4:
        fail("only %d timeline rows for a run of several 50 ms intervals" % len(rows))
    check_events(out, 1, summary)

    # Two ranks: rows of both, and all-ranks rows that are their sums.
    out2 = os.path.join(args().work, "two")
    mpirun(2, [args().iomimic, "run", "-q"] + overrides(data, out2))
    summary2 = load(out2, "summary.json")
    rows2 = check_timeline(out2, 2, summary2)
    check_events(out2, 2, summary2)
    by_interval = {}
    for row in rows2:
        by_interval.setdefault(row["interval"], {})[row["rank"]] = row
    for interval, ranks in by_interval.items():
        if "all" not in ranks:
            fail("interval %s has no all-ranks row" % interval)
        for column in ("bytes_read", "samples", "steps"):
            parts = sum(int(r[column]) for k, r in ranks.items() if k != "all")
            if int(ranks["all"][column]) != parts:
                fail("interval %s: all-ranks %s %s, the ranks' sum %d" %
                     (interval, column, ranks["all"][column], parts))

    # Off when asked.
    out3 = os.path.join(args().work, "off")
    run([args().iomimic, "run", "-q"] + overrides(data, out3, [
        "++workload.iomimic.timeline_interval=0"]))
    if os.path.exists(os.path.join(out3, "timeline.csv")):
        fail("timeline.csv written with iomimic.timeline_interval=0")


def test_histograms_place_a_known_delay():
    """A latency decorator that adds 4 ms to every storage operation puts the
    read requests' histogram at 4 ms (within the histogram's 1% bound plus
    the real read's own time), the counts match the run's totals, and the
    data wait of every step is counted once."""
    data = os.path.join(args().work, "data")
    out = os.path.join(args().work, "delay")
    run([args().iomimic, "run", "-q"] + overrides(data, out, [
        "++workload.workflow.evaluation=False",
        "++workload.train.epochs=1",
        "++workload.storage.backend=latency",
        "++workload.storage.options.delay=4ms",
        "++workload.storage.options.apply_to_writes=false",
    ]))
    summary = load(out, "summary.json")
    h = load(out, "histograms.json")["histograms"]
    io = summary["iomimic"]
    if h["storage_read"]["count"] != io["read_requests"]:
        fail("storage_read counts %d, the run made %d read requests" %
             (h["storage_read"]["count"], io["read_requests"]))
    if h["storage_open"]["count"] != io["files_opened"]:
        fail("storage_open counts %d, the run opened %d files" %
             (h["storage_open"]["count"], io["files_opened"]))
    p50 = h["storage_read"]["p50"]
    if not 4e6 * 0.99 <= p50 <= 4e6 * 1.25:
        fail("storage_read p50 is %d ns with a 4 ms delay on every read" % p50)
    # Every bucket holds values in [low, high]; the 4 ms bucket holds most.
    buckets = h["storage_read"]["buckets"]
    top = max(buckets, key=lambda b: b[2])
    if not top[0] <= 4.4e6 or top[1] < 4e6:
        fail("the fullest storage_read bucket is %s, not at 4 ms" % top)
    if sum(b[2] for b in buckets) != h["storage_read"]["count"]:
        fail("storage_read buckets do not add up to its count")
    steps = io["train_steps_per_epoch"] * summary["epochs"]
    if h["step_data_wait"]["count"] != steps:
        fail("step_data_wait counts %d, the run took %d steps" %
             (h["step_data_wait"]["count"], steps))
    if h["sample_read"]["count"] != io["sample_read_latency_ms"]["count"]:
        fail("sample_read histogram and summary disagree")
    if "storage_read" not in io["latency_ms"]:
        fail("summary.json has no latency_ms.storage_read")


# --- live progress (issue 10, item 5) -----------------------------------------

# A carriage return that does not end a line: a terminal's "\r\n" (the pty
# turns "\n" into it) is not a live-line update.
LIVE_UPDATE = re.compile(r"\r(?!\n)")


def progress_overrides(data, out, extra=()):
    """Two epochs of eight 0.1 s steps: long enough for several updates."""
    return overrides(data, out, [
        "++workload.workflow.evaluation=False",
        "++workload.train.epochs=2",
        "++workload.train.computation_time=0.1",
        "++workload.iomimic.timeline_interval=0",
    ] + list(extra))


def run_on_terminal(cmd):
    """Runs `cmd` with stdout on a pseudo-terminal (stderr on a pipe);
    returns (exit status, what the terminal got, stderr)."""
    print("$ (pty) " + " ".join(cmd), flush=True)
    master, slave = pty.openpty()
    with tempfile.TemporaryFile() as err:
        p = subprocess.Popen(cmd, cwd=args().work, stdout=slave, stderr=err,
                             stdin=subprocess.DEVNULL)
        os.close(slave)
        chunks = []
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
        code = p.wait(timeout=300)
        os.close(master)
        err.seek(0)
        stderr = err.read().decode(errors="replace")
    out = b"".join(chunks).decode(errors="replace")
    sys.stdout.write(out.replace("\r", "\\r"))
    sys.stdout.write(stderr)
    return code, out, stderr


def test_progress_live_line_on_a_terminal():
    """On a terminal, rank 0 keeps one live line (carriage-return updates
    with epoch and step), erased at the end; -q prints none."""
    data = os.path.join(args().work, "data")
    code, out, _ = run_on_terminal([args().iomimic, "run"] + progress_overrides(
        data, os.path.join(args().work, "tty")))
    if code != 0:
        fail("the run on a terminal failed with %d" % code)
    updates = LIVE_UPDATE.findall(out)
    if len(updates) < 3:
        fail("only %d carriage-return updates on a terminal" % len(updates))
    if not re.search(r"\repoch [12]/2, step \d+/8, [0-9.]+ samples/s, AU [0-9.]+% so far, "
                     r"ETA [0-9:-]+", out):
        fail("no live line with epoch, step, samples/s, AU and ETA")
    # The live line is erased before the summary: nothing of it is left on
    # the line the summary starts.
    last_update = out.rfind("\repoch ")
    summary = out.find("iomimic ", last_update)
    if summary < 0 or "\r\x1b[K" not in out[last_update + 1:summary]:
        fail("the live line is not erased before the summary")

    code, quiet, _ = run_on_terminal([args().iomimic, "run", "-q"] + progress_overrides(
        data, os.path.join(args().work, "tty_quiet")))
    if code != 0:
        fail("the quiet run failed with %d" % code)
    if LIVE_UPDATE.search(quiet) or "step " in quiet:
        fail("-q printed progress on a terminal")


def test_progress_plain_lines_without_a_terminal():
    """stdout not a terminal: no carriage return at all; with the default
    interval (5 s) a run of 2 s prints no progress line, with a short one it
    prints plain lines; -q and iomimic.progress_interval=0 silence them."""
    data = os.path.join(args().work, "data")
    p = run([args().iomimic, "run"] + progress_overrides(data, os.path.join(args().work, "pipe")))
    if "\r" in p.stdout:
        fail("carriage returns in stdout that is not a terminal")
    if re.search(r"^epoch \d+/2, step", p.stdout, re.M):
        fail("a progress line within the default 5 s interval")
    p = run([args().iomimic, "run"] + progress_overrides(
        data, os.path.join(args().work, "pipe_lines"), ["++workload.iomimic.progress_interval=0.3"]))
    lines = re.findall(r"^epoch [12]/2, step \d+/8, .*ETA [0-9:-]+$", p.stdout, re.M)
    if "\r" in p.stdout or len(lines) < 3:
        fail("expected plain progress lines every 0.3 s, got %d" % len(lines))
    for flags, tag in ((["-q"], "quiet"), ([], "off")):
        extra = ["++workload.iomimic.progress_interval=0.3"]
        if tag == "off":
            extra = ["++workload.iomimic.progress_interval=0"]
        p = run([args().iomimic, "run"] + flags + progress_overrides(
            data, os.path.join(args().work, "pipe_" + tag), extra))
        if re.search(r"step \d+/8", p.stdout):
            fail("progress printed with %s" % tag)
    # Generation reports files, bytes, MiB/s and ETA.
    p = run([args().iomimic, "generate"] + overrides(
        os.path.join(args().work, "gen_data"), os.path.join(args().work, "gen_out"), [
            "++workload.dataset.num_files_train=400",
            "++workload.storage.backend=latency",
            "++workload.storage.options.delay=1ms",
            "++workload.iomimic.progress_interval=0.2",
        ]) + ["--generate-threads", "1"])
    if not re.search(r"^generating: \d+/408 files, [0-9.]+ MiB, [0-9.]+ MiB/s, ETA [0-9:-]+$",
                     p.stdout, re.M):
        fail("no generation progress line")


def test_progress_and_warnings_from_one_rank():
    """Under mpirun -np 2 only rank 0 reports progress (the line names it),
    the manifest's warnings (an unknown key in the file and in an override)
    are printed once, and a typo in an override is blamed on the override."""
    data = os.path.join(args().work, "data")
    manifest = os.path.join(args().work, "typo.yaml")
    with open(os.path.join(args().source, "workloads", "quickstart.yaml")) as f:
        text = f.read()
    with open(manifest, "w") as f:
        f.write(text.rstrip("\n") + "\nunknown_section_xyz: 1\n")
    ov = [o for o in progress_overrides(data, os.path.join(args().work, "two")) if
          not o.startswith("workload=")]
    p = mpirun(2, [args().iomimic, "run", manifest, "++workload.iomimic.progress_interval=0.3",
                   "++workload.dataset.unknown_key_xyz=1"] + ov)
    both = p.stdout + p.stderr
    lines = re.findall(r"^\[rank (\d) of 2\] epoch [12]/2, step \d+/\d+", p.stdout, re.M)
    if len(lines) < 2:
        fail("expected progress lines of rank 0, got %d" % len(lines))
    if set(lines) != {"0"}:
        fail("progress from ranks %s" % sorted(set(lines)))
    if "\r" in p.stdout:
        fail("carriage returns under mpirun (stdout not a terminal)")
    for key in ("unknown_section_xyz", "dataset.unknown_key_xyz"):
        n = len(re.findall(r"warning: unknown key '%s'" % re.escape(key), both))
        if n != 1:
            fail("the warning about %s printed %d times under mpirun -np 2" % (key, n))
    if not re.search(r"override '\+\+workload\.dataset\.unknown_key_xyz=1': warning: "
                     r"unknown key", both):
        fail("the unknown key of an override is not attributed to the override")
    if not re.search(re.escape(manifest) + r":\d+:\d+: warning: unknown key "
                     r"'unknown_section_xyz'", both):
        fail("the unknown key of the manifest is not attributed to its file and line")

    # A typo in an override (a key to change that does not exist) names the
    # override, not the manifest file.
    p = run([args().iomimic, "run", manifest, "workload.dataset.num_file_train=3"],
            expect_ok=False)
    if p.returncode == 0:
        fail("a typo in an override was accepted")
    err = p.stderr
    if "override 'workload.dataset.num_file_train=3'" not in err or manifest + ":" in err:
        fail("the override typo is not attributed to the override: " + err)


def test_generate_leaves_a_result_folder():
    """iomimic generate leaves config, log, status.json and summary.json
    with the generation figures; in a named folder it uses generate/,
    generate-1/, ..., so the training run can use the folder itself; a
    failed generation says "failed"."""
    data = os.path.join(args().work, "data")
    out = os.path.join(args().work, "out")
    ov = overrides(data, out)
    run([args().iomimic, "generate"] + ov)
    gen = os.path.join(out, "generate")
    for name in (".hydra/config.yaml", ".hydra/overrides.yaml", "dlio.log", "status.json",
                 "summary.json"):
        if not os.path.exists(os.path.join(gen, name)):
            fail("generate/%s missing" % name)
    if load(gen, "status.json")["status"] != "completed":
        fail("status.json of a generation does not say completed")
    g = load(gen, "summary.json")["iomimic"]["generate"]
    if g["files_written"] != 40 or g["bytes_written"] <= 0:
        fail("summary.json generation figures: %s" % g)
    if "generated 40 files" not in open(os.path.join(gen, "dlio.log")).read():
        fail("the log has no generation line")
    # Again: the files are complete, the results go to generate-1.
    run([args().iomimic, "generate"] + ov)
    g = load(os.path.join(out, "generate-1"), "summary.json")["iomimic"]["generate"]
    if g["files_skipped"] != 40:
        fail("second generation: %s" % g)
    # The training run that follows uses the folder itself.
    run([args().iomimic, "run", "-q"] + ov)
    if load(out, "status.json")["status"] != "completed":
        fail("the training run after generation did not complete")
    # A failed generation (a file of the wrong size is refused) says so.
    victim = sorted(glob.glob(os.path.join(data, "train", "**", "*.npz"), recursive=True))[0]
    with open(victim, "ab") as f:
        f.write(b"user data")
    p = run([args().iomimic, "generate"] + ov, expect_ok=False)
    if p.returncode == 0:
        fail("generation over a damaged file succeeded")
    st = load(os.path.join(out, "generate-2"), "status.json")
    if st["status"] != "failed" or "refusing to overwrite" not in st.get("error", ""):
        fail("status.json of a failed generation: %s" % st)
    # Without a named folder: DLIO's hydra_log/<model>/<time> (cwd: the work folder).
    before = set(glob.glob(os.path.join(args().work, "hydra_log", "*", "*")))
    run([args().iomimic, "generate"] + [o for o in ov if "output.folder" not in o] +
        ["++workload.dataset.data_folder=" + os.path.join(args().work, "data2")])
    made = set(glob.glob(os.path.join(args().work, "hydra_log", "*", "*"))) - before
    if len(made) != 1 or load(made.pop(), "status.json")["status"] != "completed":
        fail("no result folder under hydra_log/ for a generation without a named folder")


def interrupt_generation(cmd, log, out, ranks):
    """Starts a slow generation, signals every rank once it reports
    progress, and checks the result folder: status.json "interrupted",
    summary.json parsable with the files done, exit 130, no hang."""
    with open(log, "w") as f:
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=args().work)
    deadline = time.time() + 60
    while "generating: " not in open(log).read():
        if proc.poll() is not None or time.time() > deadline:
            proc.kill()
            fail("generation ended or never reported progress: " + open(log).read()[-800:])
        time.sleep(0.05)
    if ranks == 1:
        proc.send_signal(signal.SIGINT)
    else:
        pids = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True,
                              text=True).stdout.split()
        if len(pids) != ranks:
            proc.kill()
            fail("expected %d rank processes, found %r" % (ranks, pids))
        for pid in pids:
            os.kill(int(pid), signal.SIGINT)
    try:
        rc = proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        fail("still running 60 s after SIGINT")
    print(open(log).read()[-800:])
    if rc != 130:
        fail("exit status %d after SIGINT, expected 130" % rc)
    st = load(out, "status.json")
    if st["status"] != "interrupted" or st.get("signal") != "SIGINT":
        fail("status.json: %s" % st)
    g = load(out, "summary.json")["iomimic"]["generate"]
    if not 0 < g["files_written"] < 2008 or len(g["bytes_written_per_rank"]) != ranks:
        fail("summary.json generation figures: %s" % g)


def test_generate_interrupted_leaves_figures():
    """SIGINT during `iomimic generate` (1 and 2 ranks) leaves status.json
    "interrupted" and summary.json with the files written so far."""
    for ranks in (1, 2):
        out = os.path.join(args().work, "out%d" % ranks)
        cmd = [args().iomimic, "generate"] + overrides(
            os.path.join(args().work, "data%d" % ranks), out, [
                "++workload.dataset.num_files_train=2000",
                "++workload.storage.backend=latency",
                "++workload.storage.options.delay=5ms",
                "++workload.iomimic.progress_interval=0.1",
            ]) + ["--generate-threads", "1"]
        if ranks > 1:
            cmd = ["mpirun", "-np", str(ranks), "--oversubscribe"] + (
                ["--allow-run-as-root"] if os.geteuid() == 0 else []) + cmd
        interrupt_generation(cmd, os.path.join(args().work, "gen%d.log" % ranks),
                             os.path.join(out, "generate"), ranks)


if __name__ == "__main__":
    harness.main(globals())
