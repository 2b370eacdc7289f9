#!/usr/bin/python3
"""The HTML pages of `iomimic report`, `compare --html` and the sweep, opened
in headless Chromium (Debian's chromium; scripts/deps.sh --test installs it): no
script or console error, every chart drawn (canvases with pixels = charts
the page expected, each with data), and a screenshot kept in the test's work
folder. Each page writes its own self-check into #iomimic-selfcheck
(core/src/analysis/report_template.html); the tests also check that a broken
chart and a script error are caught. Exit status 77 (skipped) only when no
Chromium is installed.

Usage: report_tests.py <test-name> --iomimic BIN --source DIR --work DIR
"""

import csv
import html
import json
import os
import re
import shutil
import subprocess
import sys
import time

import iomimic_tests as harness
from iomimic_tests import fail, run


def args():
    return harness.ARGS


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    print("SKIP: no Chromium installed (Debian's chromium; scripts/deps.sh --test installs it)")
    sys.exit(77)


def browse(page, extra):
    """Runs headless Chromium on `page` with `extra` flags; its stdout."""
    profile = os.path.join(args().work, "chromium-profile")
    cmd = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
           "--no-first-run", "--user-data-dir=" + profile, "--virtual-time-budget=5000"] + extra + [
               "file://" + os.path.abspath(page)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        fail("chromium exited %d on %s:\n%s" % (p.returncode, page, p.stderr[-2000:]))
    return p.stdout


def self_check(page):
    """The page's self-check as Chromium rendered it (a dict)."""
    dom = browse(page, ["--dump-dom"])
    m = re.search(r'<pre id="iomimic-selfcheck">(.*?)</pre>', dom, re.S)
    if not m or not m.group(1).strip():
        fail("%s: the page wrote no self-check (its script did not finish)" % page)
    return json.loads(html.unescape(m.group(1))), dom


def check_page(page, charts, screenshot=True):
    """Asserts the page rendered without errors and drew exactly `charts`
    (a list of title prefixes, in order); saves a screenshot beside it."""
    check, dom = self_check(page)
    print("self-check of %s: %s" % (page, json.dumps(check)))
    problems = page_problems(check, charts)
    if problems:
        fail("%s: %s" % (page, "; ".join(problems)))
    if screenshot:
        shot = os.path.splitext(page)[0] + ".png"
        browse(page, ["--screenshot=" + shot, "--window-size=1400,4000", "--hide-scrollbars"])
        if not os.path.exists(shot) or os.path.getsize(shot) < 10000:
            fail("no screenshot of %s at %s" % (page, shot))
        print("screenshot: " + shot)
    with open(page) as f:
        text = f.read()
    # Self-contained: nothing is fetched.
    if re.search(r'<(script|link|img)[^>]+(src|href)=', text):
        fail("%s loads an external resource" % page)
    return check, dom


def page_problems(check, charts):
    problems = []
    if check["errors"]:
        problems.append("errors: %s" % check["errors"])
    if check["canvases_drawn"] != check["charts_expected"]:
        problems.append("%d of %d charts drawn" % (check["canvases_drawn"], check["charts_expected"]))
    if check["canvases"] != check["charts_expected"]:
        problems.append("%d canvases for %d charts" % (check["canvases"], check["charts_expected"]))
    if check["charts_without_data"]:
        problems.append("charts without data: %s" % check["charts_without_data"])
    if charts is not None:
        titles = check["charts"]
        if len(titles) != len(charts) or not all(t.startswith(c) for t, c in zip(titles, charts)):
            problems.append("charts %s, expected %s" % (titles, charts))
    return problems


def expect_check_fails(page, how, replace, charts):
    """The page's HTML with `replace` applied must fail the check: the
    check can fail."""
    with open(page) as f:
        text = f.read()
    broken = replace(text)
    if broken == text:
        fail("could not break the page (%s): the template changed?" % how)
    path = os.path.join(args().work, "broken-" + re.sub(r"\W+", "-", how) + ".html")
    with open(path, "w") as f:
        f.write(broken)
    check, _ = self_check(path)
    problems = page_problems(check, charts)
    if not problems:
        fail("a page with %s passes the check: %s" % (how, check))
    print("%s is caught: %s" % (how, "; ".join(problems)))


def shrink(data, out, extra=()):
    return [
        "++workload.workflow.generate_data=True",
        "++workload.dataset.data_folder=" + data,
        "++workload.dataset.num_files_train=16",
        "++workload.dataset.num_files_eval=4",
        "++workload.workflow.evaluation=True",
        "++workload.evaluation.eval_time=0.002",
        "++workload.train.epochs=2",
        "++workload.train.computation_time=0.01",
        "++workload.reader.batch_size=2",
        "++workload.output.folder=" + out,
    ] + list(extra)


FULL_RUN_CHARTS = [
    "AU and throughput per epoch", "Throughput over time", "AU over time",
    "Storage operation latency", "Sample read, data wait and checkpoint latency",
    "Request sizes", "Per-rank spread", "Per-host figures", "Host CPU over time",
    "Host disk and network over time", "Hottest files", "Checkpoint throughput"]


def test_report_renders_every_chart():
    """A two-rank run with evaluation and checkpoints: `iomimic report` draws
    the twelve charts of a run folder; without timeline.csv, events.csv,
    histograms.json, io_counters.csv and host_telemetry.csv it draws what summary.json holds and
    says what is missing. A chart broken on purpose and a script error fail
    the check."""
    chromium()  # skip before any run when there is none
    work = args().work
    out = os.path.join(work, "run")
    harness.mpirun(2, [args().iomimic, "run", "-q", "workload=quickstart"] + shrink(
        os.path.join(work, "data"), out, [
            "++workload.workflow.checkpoint=True",
            "++workload.checkpoint.epochs_between_checkpoints=1",
            "++workload.checkpoint.checkpoint_folder=" + os.path.join(work, "ckpt"),
            "++workload.model.model_size=1048576"]))
    page = os.path.join(work, "report.html")
    p = run([args().iomimic, "report", out, "-o", page])
    if "wrote " + page not in p.stdout:
        fail("report did not say where it wrote the page:\n" + p.stdout)
    check, dom = check_page(page, FULL_RUN_CHARTS)
    for text in ("resolved configuration", "Storage back end", "storage_read", "rank 1"):
        if text not in dom:
            fail("the page does not show %r" % text)

    # The check can fail: an unknown chart type (that chart stays blank and
    # Chart.js throws) and a script error.
    expect_check_fails(page, "a broken chart",
                       lambda t: t.replace("chart(g, 'AU over time', {type: 'line'",
                                           "chart(g, 'AU over time', {type: 'no-such-chart'", 1),
                       FULL_RUN_CHARTS)
    expect_check_fails(page, "a script error",
                       lambda t: t.replace("</body>", "<script>undefinedFunction();</script></body>", 1),
                       FULL_RUN_CHARTS)
    expect_check_fails(page, "a missing chart",
                       lambda t: t.replace("rankSection(section(prefix + 'Per-rank spread'), run);", "", 1),
                       FULL_RUN_CHARTS)

    # Degraded: only summary.json (and the config files).
    bare = os.path.join(work, "bare")
    shutil.copytree(out, bare)
    for name in ("timeline.csv", "events.csv", "histograms.json", "io_counters.csv",
                 "host_telemetry.csv"):
        os.remove(os.path.join(bare, name))
    page = os.path.join(work, "bare.html")
    run([args().iomimic, "report", bare, "-o", page])
    _, dom = check_page(page, ["AU and throughput per epoch", "Latency percentiles (summary.json)",
                               "Request sizes", "Per-host figures", "Checkpoint throughput"])
    if "timeline.csv is not in this run folder" not in dom:
        fail("the degraded page does not say timeline.csv is missing")

    # Errors: no summary.json; an absent Chart.js file.
    p = run([args().iomimic, "report", work, "-o", os.path.join(work, "x.html")], expect_ok=False)
    if p.returncode == 0 or "summary.json" not in p.stderr:
        fail("report of a folder without summary.json: exit %d, %s" % (p.returncode, p.stderr))
    p = run([args().iomimic, "report", out, "-o", os.path.join(work, "x.html"), "--chart-js",
             os.path.join(work, "no-chart.js")], expect_ok=False)
    if p.returncode == 0 or "no-chart.js" not in p.stderr:
        fail("report with a missing --chart-js file: exit %d, %s" % (p.returncode, p.stderr))


def test_compare_html_overlays_runs():
    """Two runs on different back ends: compare --html prints the text table
    too, and the page overlays their timelines and histograms, highlights
    storage.backend and names the run that keeps more accelerators busy."""
    chromium()  # skip before any run when there is none
    work = args().work
    data = os.path.join(work, "data")
    a, b = os.path.join(work, "a"), os.path.join(work, "b")
    run([args().iomimic, "run", "-q", "workload=quickstart"] + shrink(data, a))
    run([args().iomimic, "run", "-q", "workload=quickstart"] + shrink(
        data, b, ["++workload.storage.backend=latency", "++workload.storage.options.delay=5ms"]))
    page = os.path.join(work, "compare.html")
    p = run([args().iomimic, "compare", a, b, "--html", page])
    if not any(line.startswith("train AU %") for line in p.stdout.splitlines()):
        fail("compare --html no longer prints the table:\n" + p.stdout)
    _, dom = check_page(page, ["Busy accelerators and AU per run", "Step data wait (overlaid)",
                               "Sample read latency (overlaid)", "Storage read latency (overlaid)",
                               "AU over time", "Read throughput over time", "Train AU per epoch",
                               "Per-host train MiB/s and AU"])
    if not re.search(r'<td class="[^"]*diff[^"]*">latency</td>', dom):
        fail("storage.backend is not highlighted as a difference")
    m = re.search(r'<p class="verdict">(.*?)</p>', dom)
    if not m:
        fail("no verdict on the page")
    with open(os.path.join(a, "summary.json")) as f:
        au_a = json.load(f)["metric"]["train_au_mean_percentage"]
    with open(os.path.join(b, "summary.json")) as f:
        au_b = json.load(f)["metric"]["train_au_mean_percentage"]
    best = "A" if au_a >= au_b else "B"
    if not m.group(1).startswith(best + " keeps the most accelerators busy"):
        fail("verdict %r; AU A %.2f, B %.2f" % (m.group(1), au_a, au_b))
    # Both runs on one report page: each run's sections, labelled A and B.
    both = os.path.join(work, "both.html")
    run([args().iomimic, "report", a, b, "-o", both])
    one = ["AU and throughput per epoch", "Throughput over time", "AU over time",
           "Storage operation latency", "Sample read, data wait and checkpoint latency",
           "Request sizes", "Per-rank spread", "Per-host figures", "Host CPU over time",
           "Host disk and network over time", "Hottest files"]
    _, dom = check_page(both, one + one, screenshot=False)
    if "A: Run " + a not in dom or "B: Run " + b not in dom:
        fail("the two runs' sections are not labelled A and B")


def test_compare_html_kvcache_runs():
    """Two KV-cache runs (analysis_tests.kvcache_pair): compare --html draws
    the KV-cache section (tokens/s, tier bandwidth, hit rate, latency
    percentiles, QoS against targets) and names the run of higher storage
    tokens/s, as summary.json says."""
    chromium()  # skip before any run when there is none
    from analysis_tests import kvcache_pair
    a, b = kvcache_pair(args().work)
    page = os.path.join(args().work, "compare_kv.html")
    p = run([args().iomimic, "compare", a, b, "--html", page])
    if not any(line.startswith("kv storage tokens/s") for line in p.stdout.splitlines()):
        fail("compare --html no longer prints the KV-cache table:\n" + p.stdout)
    check, dom = check_page(page, None)
    kv_charts = [t for t in check["charts"] if t.startswith("KV-cache")]
    if kv_charts != ["KV-cache tokens/s per run", "KV-cache tier bandwidth per run (GiB/s)",
                     "KV-cache hit rate per run (%)",
                     "KV-cache end-to-end latency percentiles (ms)",
                     "KV-cache QoS: end-to-end P95 per class against its target (ms)"]:
        fail("KV-cache charts: %s" % kv_charts)
    tokens = []
    for folder in (a, b):
        with open(os.path.join(folder, "summary.json")) as f:
            tokens.append(json.load(f)["kv_cache"]["aggregate"]["storage_tokens_per_second"])
    best = "A" if tokens[0] >= tokens[1] else "B"
    verdicts = re.findall(r'<p class="verdict">(.*?)</p>', dom)
    if not any(v.startswith(best + " has the highest storage throughput") for v in verdicts):
        fail("verdicts %r; storage tokens/s A %.1f, B %.1f" % (verdicts, tokens[0], tokens[1]))


def test_sweep_page_plots_factors():
    """A 2 x 2 design (read_threads x batch_size): the sweep writes
    report.html with AU and MiB/s against each factor; `iomimic report
    SWEEP_DIR` writes the same page."""
    chromium()  # skip before any run when there is none
    work = args().work
    design = os.path.join(work, "design.csv")
    with open(design, "w") as f:
        f.write("model,reader.read_threads,reader.batch_size,run\n")
        for threads in (1, 2):
            for batch in (2, 4):
                f.write("quickstart,%d,%d,N\n" % (threads, batch))
    out = os.path.join(work, "runs")
    p = run([args().iomimic, "sweep", design, "--output", out,
             "++workload.workflow.generate_data=True",
             "++workload.dataset.data_folder=" + os.path.join(work, "data"),
             "++workload.dataset.num_files_train=16", "++workload.dataset.num_files_eval=0",
             "++workload.workflow.evaluation=False", "++workload.train.epochs=1",
             "++workload.train.computation_time=0.005"])
    page = os.path.join(out, "report.html")
    if "report page " + page not in p.stdout:
        fail("the sweep does not name its report page:\n" + p.stdout)
    charts = ["AU and MiB/s per experiment", "AU % against reader.read_threads",
              "MiB/s against reader.read_threads", "AU % against reader.batch_size",
              "MiB/s against reader.batch_size"]
    check_page(page, charts)
    again = os.path.join(work, "again.html")
    run([args().iomimic, "report", out, "-o", again])
    check_page(again, charts, screenshot=False)


def test_study_design_example():
    """examples/study_design through the README's three commands (sweep,
    report, compare --html): the design's rows with 1 and 2 processes of
    each of the four workloads (8 of the 20 rows; the whole design takes
    about 50 s on two cores), from a copy of the folder."""
    chromium()  # skip before any run when there is none
    work = args().work
    example = os.path.join(args().source, "examples", "study_design")
    study = os.path.join(work, "study")
    shutil.copytree(example, study)
    with open(os.path.join(study, "design.csv")) as f:
        lines = f.read().splitlines()
    header = [i for i, l in enumerate(lines) if l.startswith("model,")][0]
    all_rows = lines[header + 1:]
    models = sorted(set(r.split(",")[0] for r in all_rows))
    if len(all_rows) != 20 or len(models) != 4 or sorted(
            set(r.split(",")[1] for r in all_rows), key=int) != ["1", "2", "4", "6", "8"]:
        fail("the example's design is not 4 workloads x 1, 2, 4, 6, 8 processes: %s" % all_rows)
    rows = [r for r in all_rows if r.split(",")[1] in ("1", "2")]
    with open(os.path.join(study, "design.csv"), "w") as f:
        f.write("\n".join(lines[:header + 1] + rows) + "\n")
    start = time.time()
    p = subprocess.run([args().iomimic, "sweep", "design.csv"], cwd=study, capture_output=True,
                       text=True, timeout=300)
    print(p.stdout + p.stderr)
    if p.returncode != 0:
        fail("the example's sweep failed")
    # The cache check's warning (the example's small datasets fit in memory,
    # docs/cluster.md "Cache honesty") is the run's, not the manifests'.
    warnings = [l for l in p.stderr.splitlines()
                if "warning" in l and "the training set (" not in l]
    if warnings:
        fail("the example's manifests draw warnings: %s" % warnings)
    print("the %d experiments took %.1f s" % (len(rows), time.time() - start))
    runs = os.path.join(study, "design.csv.runs")
    with open(os.path.join(runs, "results.csv")) as f:
        results = list(csv.DictReader(f))
    if [r["status"] for r in results] != ["completed"] * len(rows):
        fail("results.csv: %s" % results)
    for r in results:
        if not float(r["train samples/s"]) > 0:
            fail("experiment %s has no throughput (too few steps?)" % r["experiment"])
    check_page(os.path.join(runs, "report.html"),
               ["AU and MiB/s per experiment", "AU % against model", "MiB/s against model",
                "AU % against processes", "MiB/s against processes"])
    # The README's commands, from the study's folder.
    unet = [r["folder"] for r in results if "unet3d" in r["model"]]
    p = subprocess.run([args().iomimic, "report", unet[0]], cwd=study, capture_output=True,
                       text=True)
    if p.returncode != 0:
        fail("report: " + p.stderr)
    page = os.path.join(study, unet[0], "report.html")
    check, _ = check_page(page, None)
    if "Checkpoint throughput (all ranks, GiB/s)" not in check["charts"] or len(check["charts"]) != 12:
        fail("the unet3d run's page lacks charts: %s" % check["charts"])
    p = subprocess.run([args().iomimic, "compare", unet[0], unet[1], "--html", "compare.html"],
                       cwd=study, capture_output=True, text=True)
    if p.returncode != 0:
        fail("compare: " + p.stderr)
    check_page(os.path.join(study, "compare.html"), None, screenshot=False)
    # results/ keeps only the data of the recorded sweep (results.csv); its
    # page is drawn from it, never committed (the template would be twice).
    recorded = os.path.join(example, "results")
    if os.path.exists(os.path.join(recorded, "report.html")):
        fail("examples/study_design/results/report.html is committed: keep only results.csv")
    page = os.path.join(work, "recorded.html")
    run([args().iomimic, "report", recorded, "-o", page])
    check_page(page, ["AU and MiB/s per experiment", "AU % against model", "MiB/s against model",
                      "AU % against processes", "MiB/s against processes"], screenshot=False)


if __name__ == "__main__":
    harness.main(globals())
