#!/usr/bin/python3
"""Benchmark: the results' merge and Ctrl-C at 64 and 128 ranks on 4 namespace
hosts over TCP (scripts/cluster.sh; root needed), docs/cluster.md "Scale" and
"Faults".

  bench/results_scale.py --iomimic build/bin/iomimic [--old OLD_BINARY]
                         [--ranks 64,128] [--repeat 3] [--markdown OUT.md]

Per rank count, two measurements:

- merge: a shrunk quickstart (256 files of 16 KiB, batch 1, 2 epochs,
  1 reader thread each) to the end; the cell is summary.json's
  iomimic.output_seconds (the merge and every results file). With --old,
  that binary runs the same cells, alternated with this one each round.
- ctrl-c: the same run with 1000 epochs, SIGINT to mpirun once every rank
  trained 2 epochs, Open MPI's default odls_base_sigkill_timeout (1 s):
  the row says whether status.json says "interrupted", how many ranks left
  their per-epoch stats and record, whether summary.json was written (the
  merge finished within the grace), and whether `iomimic report` opens the
  folder.

The acceptance (issue 31): every rank's per-epoch stats after Ctrl-C, and
the merge at 128 ranks within 3x of 64.
"""
import argparse
import datetime
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time

from benchlib import loadavg, machine

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(HERE)
ENV = dict(os.environ, IOMIMIC_CLUSTER_NAME="iombench", IOMIMIC_CLUSTER_NET="10.231.81",
           OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def cluster(*words, check=True):
    p = subprocess.run([os.path.join(SOURCE, "scripts", "cluster.sh")] + list(words), env=ENV,
                       capture_output=True, text=True)
    if check and p.returncode != 0:
        sys.exit("cluster.sh %s: %s%s" % (words[0], p.stdout, p.stderr))
    return p


def command(a, exe, folder, ranks, out, epochs):
    per = ranks // 4
    return [os.path.join(SOURCE, "scripts", "cluster.sh"), "mpirun", folder, "-np", str(ranks),
            "--host", "h1:%d,h2:%d,h3:%d,h4:%d" % (per, per, per, per), "--oversubscribe",
            "--mca", "odls_base_sigkill_timeout", "1",
            exe, "run", "--config-dir", os.path.join(SOURCE, "workloads"), "workload=quickstart",
            "++workload.dataset.data_folder=" + os.path.join(a.work, "data"),
            "++workload.dataset.num_files_train=256", "++workload.dataset.num_files_eval=0",
            "++workload.dataset.record_length_bytes=16384",
            "++workload.dataset.record_length_bytes_stdev=0", "++workload.reader.batch_size=1",
            "++workload.reader.read_threads=1", "++workload.workflow.evaluation=False",
            "++workload.train.epochs=%d" % epochs, "++workload.train.computation_time=0.001",
            "++workload.output.folder=" + out]


def merge(a, exe, folder, ranks, name):
    out = os.path.join(a.work, name)
    shutil.rmtree(out, ignore_errors=True)
    p = subprocess.run(command(a, exe, folder, ranks, out, 2), env=ENV, capture_output=True,
                       text=True)
    if p.returncode != 0:
        sys.exit("%s at %d ranks failed:\n%s" % (exe, ranks, (p.stdout + p.stderr)[-3000:]))
    with open(os.path.join(out, "summary.json")) as f:
        return json.load(f)["iomimic"]["output_seconds"]


def ctrl_c(a, exe, folder, ranks):
    out = os.path.join(a.work, "ctrlc-%d" % ranks)
    shutil.rmtree(out, ignore_errors=True)
    log = open(os.path.join(a.work, "ctrlc-%d.log" % ranks), "w+")
    p = subprocess.Popen(command(a, exe, folder, ranks, out, 1000), env=ENV, stdout=log,
                         stderr=subprocess.STDOUT)
    deadline = time.time() + 600
    while True:  # every rank has two epochs in its per-epoch stats
        done = 0
        for r in range(ranks):
            try:
                with open(os.path.join(out, "%d_per_epoch_stats.json" % r)) as f:
                    done += len(json.load(f)) >= 2
            except (OSError, ValueError):
                pass
        if done == ranks or p.poll() is not None or time.time() > deadline:
            break
        time.sleep(0.5)
    t0 = time.time()
    os.kill(p.pid, signal.SIGINT)
    rc = p.wait(timeout=120)
    seconds = time.time() - t0
    status = {}
    try:
        with open(os.path.join(out, "status.json")) as f:
            status = json.load(f)
    except (OSError, ValueError):
        pass
    stats = sum(os.path.exists(os.path.join(out, "%d_per_epoch_stats.json" % r))
                for r in range(ranks))
    records = 0
    for r in range(ranks):
        try:
            with open(os.path.join(out, "ranks", "%d.json" % r)) as f:
                records += json.load(f).get("state") == "interrupted"
        except (OSError, ValueError):
            pass
    report = subprocess.run([exe, "report", out], capture_output=True, text=True)
    return {"ranks": ranks, "exit": rc, "seconds": seconds, "status": status.get("status", "-"),
            "stats": stats, "records": records,
            "summary": os.path.exists(os.path.join(out, "summary.json")),
            "report": report.returncode == 0}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--iomimic", required=True)
    ap.add_argument("--old")
    ap.add_argument("--ranks", default="64,128")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--work", default="/tmp/iomimic-results-scale")
    ap.add_argument("--markdown")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("the namespace hosts need root")
    os.makedirs(a.work, exist_ok=True)
    folder = os.path.join(a.work, "cluster")
    cluster("stop", folder, check=False)
    cluster("start", "4", folder)
    try:
        subprocess.run([a.iomimic, "generate", "-q", "--config-dir",
                        os.path.join(SOURCE, "workloads"), "workload=quickstart",
                        "++workload.dataset.data_folder=" + os.path.join(a.work, "data"),
                        "++workload.dataset.num_files_train=256",
                        "++workload.dataset.num_files_eval=0",
                        "++workload.dataset.record_length_bytes=16384",
                        "++workload.dataset.record_length_bytes_stdev=0",
                        "++workload.output.folder=" + os.path.join(a.work, "gen")],
                       check=True, capture_output=True)
        binaries = [("new", a.iomimic)] + ([("old", a.old)] if a.old else [])
        ranks = [int(r) for r in a.ranks.split(",")]
        times = {(b, n): [] for b, _ in binaries for n in ranks}
        loads = []
        for rnd in range(a.repeat):
            for n in ranks:
                for b, exe in (binaries if rnd % 2 == 0 else binaries[::-1]):
                    times[(b, n)].append(merge(a, exe, folder, n, "merge-%s-%d" % (b, n)))
                    print("round %d %s %d ranks: %.2f s" % (rnd + 1, b, n, times[(b, n)][-1]),
                          flush=True)
            loads.append(loadavg())
        interrupts = [ctrl_c(a, a.iomimic, folder, n) for n in ranks]
    finally:
        cluster("stop", folder, check=False)

    lines = ["# Results merge and Ctrl-C at scale (bench/results_scale.py)", "",
             "%s; %s; 4 namespace hosts (scripts/cluster.sh), TCP between them; load "
             "averages after each round: %s." % (datetime.date.today(), machine(),
                                                   "; ".join(loads)), "",
             "| binary | ranks | output_seconds median (min-max), %d runs |" % a.repeat,
             "|---|---|---|"]
    for b, _ in binaries:
        for n in ranks:
            v = times[(b, n)]
            lines.append("| %s | %d | %.2f (%.2f-%.2f) |" % (b, n, statistics.median(v), min(v),
                                                               max(v)))
    for b, _ in binaries:
        if len(ranks) >= 2:
            lo, hi = statistics.median(times[(b, ranks[0])]), statistics.median(times[(b, ranks[-1])])
            lines.append("")
            lines.append("%s: %d ranks take %.1fx the time of %d." % (b, ranks[-1], hi / lo,
                                                                      ranks[0]))
    lines += ["", "Ctrl-C to mpirun after two epochs, odls_base_sigkill_timeout 1 (the default):",
              "", "| ranks | mpirun exit | s after SIGINT | status.json | per-epoch stats | "
              "records 'interrupted' | summary.json | report opens |", "|---|---|---|---|---|---|---|---|"]
    for i in interrupts:
        lines.append("| %d | %d | %.1f | %s | %d of %d | %d of %d | %s | %s |" % (
            i["ranks"], i["exit"], i["seconds"], i["status"], i["stats"], i["ranks"],
            i["records"], i["ranks"], "yes" if i["summary"] else "no",
            "yes" if i["report"] else "no"))
    text = "\n".join(lines) + "\n"
    print(text)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
