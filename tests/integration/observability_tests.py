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
        got = sum(int(row[column]) for row in rows if row["rank"].isdigit())
        if got != total:
            fail("timeline.csv: %s sum to %d over the intervals, the run's total is %d" %
                 (column, got, total))
        got_all = sum(int(row[column]) for row in all_rows)
        if got_all != total:
            fail("timeline.csv: the all-ranks rows' %s sum to %d, expected %d" %
                 (column, got_all, total))
    steps = (io["train_steps_per_epoch"] + io["eval_steps_per_epoch"]) * summary["epochs"]
    got = sum(int(row["steps"]) for row in rows if row["rank"].isdigit())
    if got != steps * ranks:
        fail("timeline.csv: %d steps over the intervals, the plan has %d per rank x %d" %
             (got, steps, ranks))
    # The emulated compute adds up to what was asked for: the training
    # compute summary.json reports plus the evaluation steps' EVAL_TIME.
    compute = sum(float(row["compute_s"]) for row in rows if row["rank"].isdigit())
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
            parts = sum(int(r[column]) for k, r in ranks.items() if k.isdigit())
            if int(ranks["all"][column]) != parts:
                fail("interval %s: all-ranks %s %s, the ranks' sum %d" %
                     (interval, column, ranks["all"][column], parts))
            # One host here: its row sums the same ranks.
            if int(ranks["host"][column]) != parts:
                fail("interval %s: the host row's %s %s, the ranks' sum %d" %
                     (interval, column, ranks["host"][column], parts))

    # Ranks whose steps take different times wait for each other at the
    # per-step barrier: waits of 1 ms or more are events, inside their block.
    out4 = os.path.join(args().work, "waits")
    mpirun(2, [args().iomimic, "run", "-q"] + overrides(data, out4, [
        "++workload.train.computation_time_stdev=0.01",
        "++workload.workflow.evaluation=False"]))
    events = read_csv(os.path.join(out4, "events.csv"))
    waits = [e for e in events if e["event"] == "barrier_wait"]
    if not waits:
        fail("no barrier_wait events between two ranks with different step times")
    blocks = [e for e in events if e["event"] == "train_block"]
    for w in waits:
        if float(w["duration_s"]) < 0.001 - 1e-6:
            fail("a barrier_wait event of %s s (the bound is 1 ms)" % w["duration_s"])
        inside = [b for b in blocks if b["rank"] == w["rank"] and b["epoch"] == w["epoch"] and
                  float(b["start_s"]) - 1e-3 <= float(w["start_s"]) and
                  float(w["end_s"]) <= float(b["end_s"]) + 1e-3]
        if not inside:
            fail("barrier_wait of rank %s step %s lies outside its training block" %
                 (w["rank"], w["index"]))

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


STRACE_LINE = re.compile(r"^(\d+)\s+(.*)$")
STRACE_CALL = re.compile(r"^(openat|read|pread64|close)\((.*)")
STRACE_RESUMED = re.compile(r"^<\.\.\. (openat|read|pread64|close) resumed>(.*)")
STRACE_RESULT = re.compile(r"\)\s+=\s+(-?\d+)")


def strace_counts(path, folder):
    """Opens, reads and bytes read of the files below `folder`, from an
    `strace -f -e trace=openat,read,pread64,close` log. Descriptors are
    followed from openat's return to close's entry, and a read's file is
    the one its descriptor named when the call started (another thread may
    close and reuse the number before a split "unfinished" call resumes)."""
    per_path = {}
    fds = {}  # fd -> path, process-wide (threads share the table)
    pending = {}  # thread -> (call, argument text, the read's path)
    with open(path, errors="replace") as f:
        for line in f:
            m = STRACE_LINE.match(line.rstrip("\n"))
            if not m:
                continue
            tid, rest = m.group(1), m.group(2)
            r = STRACE_RESUMED.match(rest)
            if r:
                if tid not in pending:
                    continue
                call, text, target = pending.pop(tid)
                text += r.group(2)
            else:
                c = STRACE_CALL.match(rest)
                if not c:
                    continue
                call, text = c.group(1), c.group(2)
                target = None
                if call != "openat":
                    fd_text = re.match(r"\s*(\d+)", text)
                    if not fd_text:
                        continue
                    fd = int(fd_text.group(1))
                    if call == "close":
                        fds.pop(fd, None)
                        continue
                    target = fds.get(fd)
                if text.endswith("<unfinished ...>"):
                    pending[tid] = (call, text[:-len("<unfinished ...>")], target)
                    continue
            res = STRACE_RESULT.search(text)
            if not res:
                continue
            ret = int(res.group(1))
            if call == "openat":
                name = re.search(r'"((?:[^"\\]|\\.)*)"', text)
                if name and ret >= 0:
                    fds.pop(ret, None)
                    if name.group(1).startswith(folder):
                        fds[ret] = name.group(1)
                        per_path.setdefault(name.group(1), [0, 0, 0])[0] += 1
            elif target is not None and ret >= 0:
                counts = per_path[target]
                counts[1] += 1
                counts[2] += ret
    return per_path


def test_io_counters_match_strace():
    """io_counters.csv's opens, reads and bytes read of every dataset file
    equal what strace sees the same run do (one rank, posix, npz, decode
    on); summary.json's totals equal the storage layer's; a small
    iomimic.io_counters_top keeps the top files and sums the rest into one
    "others" row."""
    data = os.path.join(args().work, "data")
    out = os.path.join(args().work, "strace")
    run([args().iomimic, "generate", "-q"] + overrides(data, out))
    log = os.path.join(args().work, "strace.log")
    run(["strace", "-f", "-o", log, "-e", "trace=openat,read,pread64,close", args().iomimic,
         "run", "-q"] + overrides(data, out, [
             "++workload.workflow.generate_data=False",
             "++workload.storage.backend=posix",
             "++workload.reader.decode=True",
             "++workload.iomimic.io_counters_top=0",
             # The cache check's residency opens are no storage I/O.
             "++workload.iomimic.cache_check_files=0"]))
    folder = os.path.realpath(data) + os.sep
    seen = strace_counts(log, folder)
    if not seen:
        fail("strace saw no dataset file opened")
    rows = read_csv(os.path.join(out, "io_counters.csv"))
    mine = {}
    for row in rows:
        p = os.path.realpath(row["path"]) if row["path"] != "others" else "others"
        # Paths only stat'ed (the split folders) have no opens: strace's
        # openat does not see them.
        if p.startswith(folder) and int(row["opens"]) > 0:
            mine[p] = [int(row["opens"]), int(row["reads"]), int(row["bytes_read"])]
    if set(mine) != set(seen):
        fail("io_counters.csv lists %d dataset files, strace saw %d (%s)" %
             (len(mine), len(seen), sorted(set(mine) ^ set(seen))[:3]))
    for p, counts in seen.items():
        if mine[p] != counts:
            fail("%s: io_counters.csv says opens/reads/bytes %s, strace %s" % (p, mine[p], counts))
    summary = load(out, "summary.json")
    io = summary["iomimic"]
    totals = io["io_counters"]
    for key, total in (("opens", io["files_opened"]), ("reads", io["read_requests"]),
                       ("bytes_read", io["bytes_read"])):
        if totals[key] != total:
            fail("summary io_counters.%s is %d, the storage layer counted %d" %
                 (key, totals[key], total))
    for row in rows:
        bins = sum(int(row[k]) for k in row if k.startswith("size_read_"))
        if bins != int(row["reads"]):
            fail("%s: read size bins hold %d reads of %s" % (row["path"], bins, row["reads"]))
        if int(row["consec_reads"]) > int(row["seq_reads"]):
            fail("%s: more consecutive than sequential reads" % row["path"])

    # Top 5 and the others row, which sums every file left out.
    out2 = os.path.join(args().work, "top")
    run([args().iomimic, "run", "-q"] + overrides(data, out2, [
        "++workload.workflow.generate_data=False",
        "++workload.iomimic.io_counters_top=5"]))
    rows2 = read_csv(os.path.join(out2, "io_counters.csv"))
    if len(rows2) != 6 or rows2[-1]["path"] != "others":
        fail("io_counters_top=5: %d rows, last %s" % (len(rows2), rows2[-1]["path"]))
    bytes_of = [int(r["bytes_read"]) + int(r["bytes_written"]) for r in rows2[:5]]
    if bytes_of != sorted(bytes_of, reverse=True):
        fail("io_counters.csv rows not by bytes: %s" % bytes_of)
    totals2 = load(out2, "summary.json")["iomimic"]["io_counters"]
    for column in ("opens", "reads", "bytes_read"):
        if sum(int(r[column]) for r in rows2) != totals2[column]:
            fail("io_counters.csv's %s do not add up to summary's" % column)
    if sum(int(r["files"]) for r in rows2) != totals2["paths"]:
        fail("io_counters.csv's files do not add up to the paths in summary")


def check_trace(path, rank):
    """Every line of a .pfw parses; complete events nest per (pid, tid).
    Returns the complete events."""
    with open(path) as f:
        lines = f.read().splitlines()
    if not lines or lines[0] != "[":
        fail("%s does not start with a '[' line" % path)
    events = []
    for n, line in enumerate(lines[1:], 2):
        try:
            e = json.loads(line)
        except ValueError as err:
            fail("%s:%d is not JSON (%s): %s" % (path, n, err, line[:120]))
        if e.get("pid") != rank:
            fail("%s:%d has pid %s on rank %d" % (path, n, e.get("pid"), rank))
        if e["ph"] == "X":
            events.append(e)
        elif e["ph"] != "M":
            fail("%s:%d: unexpected phase %s" % (path, n, e["ph"]))
    by_thread = {}
    for e in events:
        if e["dur"] < 0:
            fail("%s: negative duration %s" % (path, e))
        by_thread.setdefault((e["pid"], e["tid"]), []).append(e)
    for key, mine in by_thread.items():
        mine.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack = []
        for e in mine:
            while stack and stack[-1]["ts"] + stack[-1]["dur"] <= e["ts"]:
                stack.pop()
            if stack and e["ts"] + e["dur"] > stack[-1]["ts"] + stack[-1]["dur"]:
                fail("%s thread %s: %s [%d, %d] overlaps %s [%d, %d] without nesting" %
                     (path, key[1], e["name"], e["ts"], e["ts"] + e["dur"], stack[-1]["name"],
                      stack[-1]["ts"], stack[-1]["ts"] + stack[-1]["dur"]))
            stack.append(e)
    return events


def test_trace_parses_nests_and_is_bounded():
    """iomimic.trace writes trace/<rank>.pfw per rank: every line parses,
    complete events nest per thread, one sample_read event per sample read,
    every kind of event is there; iomimic.trace_max_events bounds the file
    and summary.json counts what was dropped; off, no trace folder."""
    data = os.path.join(args().work, "data")
    extra = ["++workload.workflow.checkpoint=True",
             "++workload.checkpoint.epochs_between_checkpoints=1",
             "++workload.iomimic.trace=True"]
    for ranks in (1, 2):
        out = os.path.join(args().work, "trace%d" % ranks)
        cmd = [args().iomimic, "run", "-q"] + overrides(data, out, extra)
        if ranks == 1:
            run(cmd)
        else:
            mpirun(2, cmd)
        summary = load(out, "summary.json")
        io = summary["iomimic"]
        total = 0
        for rank in range(ranks):
            events = check_trace(os.path.join(out, "trace", "%d.pfw" % rank), rank)
            total += len(events)
            names = {e["name"] for e in events}
            # (Checkpoint files are written by the ranks that hold a shard.)
            for name in ("sample_read", "open", "read", "close", "compute", "train_step",
                         "eval_step", "barrier", "epoch", "checkpoint_save"):
                if name not in names:
                    fail("rank %d's trace has no %s event" % (rank, name))
            if rank == 0 and "write" not in names:
                fail("rank 0's trace has no write event")
            epochs = [e for e in events if e["name"] == "epoch"]
            if len(epochs) != summary["epochs"]:
                fail("rank %d: %d epoch events for %d epochs" % (rank, len(epochs),
                                                                  summary["epochs"]))
        samples = sum(1 for rank in range(ranks)
                      for e in check_trace(os.path.join(out, "trace", "%d.pfw" % rank), rank)
                      if e["name"] == "sample_read")
        if samples != io["sample_read_latency_ms"]["count"]:
            fail("%d sample_read events, the run read %d samples" %
                 (samples, io["sample_read_latency_ms"]["count"]))
        if io["trace"]["events"] != total or io["trace"]["dropped_events"] != 0:
            fail("summary trace %s, the files hold %d events" % (io["trace"], total))

    # Bounded: 50 events kept, the rest counted as dropped.
    out = os.path.join(args().work, "bounded")
    run([args().iomimic, "run", "-q"] + overrides(data, out, extra + [
        "++workload.iomimic.trace_max_events=50"]))
    events = check_trace(os.path.join(out, "trace", "0.pfw"), 0)
    trace = load(out, "summary.json")["iomimic"]["trace"]
    if len(events) != 50 or trace["events"] != 50 or trace["dropped_events"] <= 0:
        fail("trace_max_events=50: %d events in the file, summary %s" % (len(events), trace))

    # Off by default: no trace folder, no trace object.
    out = os.path.join(args().work, "untraced")
    run([args().iomimic, "run", "-q"] + overrides(data, out))
    if os.path.exists(os.path.join(out, "trace")):
        fail("trace/ written with iomimic.trace off")
    if "trace" in load(out, "summary.json")["iomimic"]:
        fail("summary.json has a trace object with iomimic.trace off")


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


def interrupt_generation(cmd, log, out, ranks, only_one=False):
    """Starts a slow generation, signals every rank (or, with `only_one`,
    the last rank only) once it reports progress, and checks the result
    folder: status.json "interrupted", summary.json parsable with the files
    done, exit 130 (every rank exits as the signalled one), no hang."""
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
        for pid in pids[-1:] if only_one else pids:
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
        if ranks > 1:
            # The signal reaches one rank only: both stop, both exit 130.
            out1 = out + "_one"
            cmd1 = [c.replace(out, out1) if c.startswith("++workload.output.folder=") else c
                    for c in cmd]
            interrupt_generation(cmd1, os.path.join(args().work, "gen%d_one.log" % ranks),
                                 os.path.join(out1, "generate"), ranks, only_one=True)


def test_dlio_log_lines():
    """dlio.log holds DLIO's [OUTPUT] progress lines, in DLIO's order, with
    the figures summary.json has: per epoch its start and end, its block's
    AU, throughput and compute time, the evaluation's lines, then the
    [METRIC] block."""
    data = os.path.join(args().work, "data")
    out = os.path.join(args().work, "out")
    run([args().iomimic, "run", "-q"] + overrides(data, out, [
        "++workload.train.epochs=2", "++workload.workflow.checkpoint=True",
        "++workload.checkpoint.checkpoint_folder=" + os.path.join(args().work, "ckpt")]))
    with open(os.path.join(out, "dlio.log")) as f:
        log = f.read().splitlines()
    for pattern in (r"\[OUTPUT\] \S+ Starting checkpoint 1 after total step 8 for epoch 1$",
                    r"\[OUTPUT\] \S+ Ending checkpoint 1 for epoch 1$",
                    r"\[OUTPUT\] \S+ Starting checkpoint 1 after total step 16 for epoch 2$"):
        if not any(re.match(pattern, line) for line in log):
            fail("dlio.log lacks a line matching %r" % pattern)
    summary = load(out, "summary.json")
    ts = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}"
    expected = []
    for e in (1, 2):
        au = summary["metric"]["train_au_percentage"][e - 1]
        expected += [
            r"\[OUTPUT\] %s Starting epoch %d: 8 steps expected$" % (ts, e),
            r"\[OUTPUT\] %s Starting block 1$" % ts,
            r"\[OUTPUT\] %s Ending block 1 - 8 steps completed in \d+\.\d\d s$" % ts,
            r"\[OUTPUT\] %s Epoch %d - Block 1 \[Training\] Accelerator Utilization \[AU\] "
            r"\(%%\): %s$" % (ts, e, re.escape("%.4f" % au)),
            r"\[OUTPUT\] %s Epoch %d - Block 1 \[Training\] Throughput \(samples/second\): "
            r"\d+\.\d{4}$" % (ts, e),
            r"\[OUTPUT\] %s Epoch %d - Block 1 \[Training\] Computation time per step "
            r"\(second\): 0\.0200\+/-0\.0000 \(set value: 0\.02\)$" % (ts, e),
            r"\[OUTPUT\] %s Ending epoch %d - 8 steps completed in \d+\.\d\d s$" % (ts, e),
            r"\[OUTPUT\] %s Starting eval - 4 steps expected$" % ts,
            r"\[OUTPUT\] %s Ending eval - 4 steps completed in \d+\.\d\d s$" % ts,
            r"\[OUTPUT\] %s Epoch %d \[Eval\] Accelerator Utilization \[AU\] \(%%\): "
            r"\d+\.\d{4}$" % (ts, e),
            r"\[OUTPUT\] %s Epoch %d \[Eval\] Throughput \(samples/second\): \d+\.\d{4}$" %
            (ts, e),
        ]
    expected += [r"\[OUTPUT\] %s Saved outputs in %s$" % (ts, re.escape(out)),
                 r"\[OUTPUT\] Averaged metric over all",
                 r"\[METRIC\] =+$",
                 r"\[METRIC\] Number of Simulated Accelerators: 1 $"]
    dlio = [line for line in log if line.startswith("[OUTPUT]") or line.startswith("[METRIC]")]
    at = 0
    for pattern in expected:
        while at < len(dlio) and not re.match(pattern, dlio[at]):
            at += 1
        if at == len(dlio):
            fail("dlio.log lacks a line matching %r (in order); its DLIO lines:\n%s" %
                 (pattern, "\n".join(dlio)))
        at += 1


if __name__ == "__main__":
    harness.main(globals())
