#!/usr/bin/python3
"""Faults across the hosts of the namespace test cluster (scripts/cluster.sh,
docs/cluster.md "Faults"). Each test starts its own hosts and stops them
whatever happened; exit 77 (skipped) without root or namespaces.

- killed_host_ends_run: kill -9 of one host's ranks mid-training ends every
  other rank within 10 s, with the launcher naming the host and each
  survivor saying why it stops; rank 0's status.json records it.
- lost_host_ends_run: one host's link cut mid-training (the host vanishes
  without its processes dying) ends the run within 10 s, not after Open
  MPI's default 8 minutes of TCP keepalive.
- killed_rank0_host_leaves_results: kill -9 of rank 0's host; the lowest
  surviving rank writes status.json naming it.
- ctrl_c_keeps_results: Ctrl-C to mpirun on 4 hosts while the merge takes
  longer than Open MPI's SIGKILL grace: every rank's epochs are kept.
- hosts_without_data_all_named: two hosts without the data, one error
  naming both.
- host_without_data_named: a dataset on node-local storage (DIR/local, each
  host's own) that one host lacks is one error naming that host and the
  missing path, before training starts.

Usage: cluster_fault_tests.py TEST --iomimic BIN --source REPO --work DIR
"""

import json
import os
import re
import signal
import subprocess
import time

import iomimic_tests as harness
from iomimic_tests import fail
from cluster_tests import ENV, cluster, start


# cluster_tests.ENV names the cluster after this process and picks a free
# subnet, so that the fault tests, which ctest runs two at a time, never
# share one (a shared name made the second one's hosts fail to start, and
# the test skip).


def args():
    return harness.ARGS


def quickstart(data, out, extra=()):
    return [args().iomimic, "run", "--config-dir", os.path.join(args().source, "workloads"),
            "workload=quickstart", "++workload.dataset.data_folder=" + data,
            "++workload.dataset.num_files_train=64", "++workload.dataset.num_files_eval=0",
            "++workload.dataset.record_length_bytes=65536",
            "++workload.dataset.record_length_bytes_stdev=0", "++workload.reader.batch_size=1",
            "++workload.workflow.evaluation=False", "++workload.output.folder=" + out] + list(extra)


def host_pids(host, comm=None):
    """The processes in host's network namespace (named `comm` if given)."""
    ns = ENV["IOMIMIC_CLUSTER_NAME"] + "-" + host
    out = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout
    pids = []
    for pid in out.split():
        try:
            with open("/proc/%s/comm" % pid) as f:
                name = f.read().strip()
        except OSError:
            continue
        if comm is None or name == comm:
            pids.append(int(pid))
    return pids


def kill_ranks_on(host, ranks=2):
    """A fault for train_then: kill -9 of the `ranks` iomimic ranks on `host`."""
    def kill(_):
        pids = host_pids(host, "iomimic")
        if len(pids) != ranks:
            fail("expected %d iomimic ranks on %s, found %s" % (ranks, host, pids))
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
    return kill


def train_then(folder, fault, name, hosts="h1:2,h2:2", ranks=4, mca=(), env=None,
               epochs_before=2):
    """Starts a long training run over `hosts`, lets it train
    `epochs_before` epochs, applies `fault` (called with mpirun's Popen) and returns (seconds from the
    fault to mpirun's exit, its exit status, its output, the run folder).
    `mca`: mpirun options placed before the program (e.g. the SIGKILL grace)."""
    data = os.path.join(args().work, "data")
    out = os.path.join(args().work, name)
    # The dataset first, so the fault lands in training.
    if not os.path.isdir(os.path.join(data, "train")):
        cluster("mpirun", folder, "-np", "1", "--host", "h1:1",
                *quickstart(data, os.path.join(args().work, "gen"),
                            ["++workload.workflow.train=False"]), timeout=120)
    cmd = [os.path.join(args().source, "scripts", "cluster.sh"), "mpirun", folder, "-np",
           str(ranks), "--host", hosts, "--oversubscribe"] + list(mca) + quickstart(
               data, out, ["++workload.workflow.generate_data=False",
                           "++workload.train.epochs=1000", "++workload.train.computation_time=0.02"])
    log = open(os.path.join(args().work, name + ".log"), "w+")
    p = subprocess.Popen(cmd, env=dict(ENV, **(env or {})), stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 60
        while "epoch %d:" % epochs_before not in open(log.name).read():
            if p.poll() is not None or time.time() > deadline:
                fail("the run did not reach its second epoch:\n" + open(log.name).read()[-3000:])
            time.sleep(0.2)
        fault(p)
        t0 = time.time()
        try:
            rc = p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            fail("%s: mpirun still running 30 s after the fault (a hang)" % name)
        seconds = time.time() - t0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        for pid in host_pids("h1", "iomimic") + host_pids("h2", "iomimic"):
            os.kill(pid, signal.SIGKILL)
    text = open(log.name).read()
    print(text[-4000:])
    print("%s: mpirun exit %d, %.2f s after the fault" % (name, rc, seconds))
    return seconds, rc, text, out


def check_ended(name, seconds, rc, text, out, launcher_says):
    if rc == 0:
        fail("%s: the run exited 0 after a host failed" % name)
    if seconds > 10:
        fail("%s: the other ranks took %.1f s to exit (limit 10 s)" % (name, seconds))
    if launcher_says not in text:
        fail("%s: the launcher's message does not name h2 (%r)" % (name, launcher_says))
    left = host_pids("h1", "iomimic")
    if left:
        fail("%s: ranks left running on h1: %s" % (name, left))
    for rank in (0, 1):
        if "iomimic: rank %d on h1: SIGTERM while waiting" % rank not in text:
            fail("%s: rank %d did not say why it stopped" % (name, rank))
    with open(os.path.join(out, "status.json")) as f:
        status = json.load(f)
    if status.get("signal") != "SIGTERM" or "other ranks" not in status.get("error", ""):
        fail("%s: status.json does not record the stop: %s" % (name, status))
    check_partial_folder(name, out, status, lost_host="h2", survivors=(0, 1))


def per_epoch_stats(out, rank):
    """Rank's <rank>_per_epoch_stats.json, or fail."""
    path = os.path.join(out, "%d_per_epoch_stats.json" % rank)
    if not os.path.exists(path):
        fail("no %s: the rank's epochs were lost" % path)
    with open(path) as f:
        return json.load(f)


def check_partial_folder(name, out, status, lost_host, survivors):
    """A folder whose merge never happened: status.json names the lost host
    (and only it), every survivor's per-epoch stats and record are there
    with at least the two epochs it trained before the fault, and
    `iomimic report` opens the folder and says it is partial."""
    if status.get("lost_hosts") != [lost_host]:
        fail("%s: status.json does not name the lost host %s: %s" % (name, lost_host, status))
    if lost_host not in status.get("error", ""):
        fail("%s: status.json's error does not name %s: %s" % (name, lost_host, status))
    for rank in survivors:
        stats = per_epoch_stats(out, rank)
        if len([e for e in stats.values() if not e.get("partial")]) < 2:
            fail("%s: rank %d's per-epoch stats hold fewer than 2 epochs: %s" %
                 (name, rank, list(stats)))
        with open(os.path.join(out, "ranks", "%d.json" % rank)) as f:
            record = json.load(f)
        if record.get("state") != "interrupted":
            fail("%s: rank %d's record is not 'interrupted': %s" % (name, rank, record))
    p = subprocess.run([args().iomimic, "report", out], capture_output=True, text=True,
                       timeout=60)
    print(p.stdout + p.stderr)
    if p.returncode != 0 or "partial" not in p.stdout:
        fail("%s: iomimic report cannot open the folder, or does not say it is partial:\n%s%s"
             % (name, p.stdout, p.stderr))


def test_killed_host_ends_run():
    folder = start(2)
    try:
        seconds, rc, text, out = train_then(folder, kill_ranks_on("h2"), "killed")
        check_ended("killed", seconds, rc, text, out, "on node h2 exited on signal 9")
    finally:
        cluster("stop", folder, check=False)


def test_lost_host_ends_run():
    folder = start(2)
    ns = ENV["IOMIMIC_CLUSTER_NAME"] + "-h2"
    try:
        def cut_h2(_):
            subprocess.run(["ip", "-n", ns, "link", "set", "eth0", "down"], check=True)
        seconds, rc, text, out = train_then(folder, cut_h2, "lost")
        check_ended("lost", seconds, rc, text, out, "Remote daemon: ")
        if "on node h2" not in text:
            fail("lost: the launcher does not name h2")
    finally:
        for pid in host_pids("h2"):  # cut off: nothing can tell them to go
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        cluster("stop", folder, check=False)


def test_killed_rank0_host_leaves_results():
    """kill -9 of rank 0's host (h1): the lowest surviving rank (2, on h2)
    writes status.json naming h1, and the survivors' epochs are kept."""
    folder = start(2)
    try:
        seconds, rc, text, out = train_then(folder, kill_ranks_on("h1"), "killed0")
        if rc == 0 or seconds > 10:
            fail("killed0: mpirun exit %d after %.1f s" % (rc, seconds))
        with open(os.path.join(out, "status.json")) as f:
            status = json.load(f)
        if status.get("written_by_rank") != 2:
            fail("killed0: status.json was not written by rank 2: %s" % status)
        check_partial_folder("killed0", out, status, lost_host="h1", survivors=(2, 3))
    finally:
        cluster("stop", folder, check=False)


def interrupt(name, folder, grace):
    """Ctrl-C to mpirun (SIGINT, as a terminal sends it) on 4 hosts x 2
    ranks while the ranks merge their results, which take 4 s here
    (IOMIMIC_TEST_RESULTS_DELAY_SECONDS, as a merge over a thousand ranks
    does): `grace` is odls_base_sigkill_timeout (1 s by default). Measured
    with Open MPI 4.1 on these hosts: on Ctrl-C mpirun waits `grace`, sends
    the ranks SIGTERM, waits `grace` again, then sends SIGKILL."""
    return train_then(folder, lambda mpirun: os.kill(mpirun.pid, signal.SIGINT), name,
                      hosts="h1:2,h2:2,h3:2,h4:2", ranks=8,
                      mca=["--mca", "odls_base_sigkill_timeout", str(grace)],
                      env={"IOMIMIC_TEST_RESULTS_DELAY_SECONDS": "4"})


def test_ctrl_c_keeps_results():
    """Ctrl-C with Open MPI's default SIGKILL grace (1 s), shorter than the
    merge: status.json says interrupted, every rank's per-epoch stats and
    record are there, report opens the folder. With a grace longer than the
    merge, summary.json is written too, and leaves the partial epoch out of
    its means."""
    folder = start(4)
    try:
        seconds, rc, text, out = interrupt("ctrlc_default", folder, 1)
        with open(os.path.join(out, "status.json")) as f:
            status = json.load(f)
        if status.get("status") != "interrupted":
            fail("ctrlc_default: status.json is not 'interrupted': %s" % status)
        if os.path.exists(os.path.join(out, "summary.json")):
            fail("ctrlc_default: summary.json was written within 1 s: the merge was not "
                 "delayed, so this test shows nothing")
        for rank in range(8):
            stats = per_epoch_stats(out, rank)
            if len(stats) < 2:
                fail("ctrlc_default: rank %d has %d epochs" % (rank, len(stats)))
            with open(os.path.join(out, "ranks", "%d.json" % rank)) as f:
                if json.load(f).get("state") != "interrupted":
                    fail("ctrlc_default: rank %d's record is not 'interrupted'" % rank)
        p = subprocess.run([args().iomimic, "report", out], capture_output=True, text=True,
                           timeout=60)
        if p.returncode != 0 or "records of 8 of 8 ranks" not in p.stdout:
            fail("ctrlc_default: report: %s%s" % (p.stdout, p.stderr))

        seconds, rc, text, out = interrupt("ctrlc_grace", folder, 6)
        with open(os.path.join(out, "status.json")) as f:
            status = json.load(f)
        if status.get("status") != "interrupted" or "results" in status:
            fail("ctrlc_grace: status.json is not the merge's 'interrupted': %s" % status)
        with open(os.path.join(out, "summary.json")) as f:
            summary = json.load(f)
        if summary["num_accelerators"] != 8:
            fail("ctrlc_grace: summary.json has %s accelerators" % summary["num_accelerators"])
        partial = summary["iomimic"]["partial_epoch"]
        epochs = len(summary["metric"]["train_au_percentage"])
        stats = per_epoch_stats(out, 0)
        whole = len([e for e in stats.values() if not e.get("partial")])
        if epochs != whole or (partial is not None and partial["in_means"]):
            fail("ctrlc_grace: %d epochs in the means, %d whole epochs in the stats, "
                 "partial %s" % (epochs, whole, partial))
    finally:
        cluster("stop", folder, check=False)


def test_hosts_without_data_all_named():
    """A dataset on h1's node-local storage: h2 and h3 lack it, and the one
    error names both."""
    folder = start(3)
    try:
        local = os.path.join(folder, "local", "data")
        cluster("mpirun", folder, "-np", "1", "--host", "h1:1",
                *quickstart(local, os.path.join(args().work, "gen"),
                            ["++workload.workflow.train=False"]), timeout=120)
        p = cluster("mpirun", folder, "-np", "3", "--host", "h1:1,h2:1,h3:1", "--oversubscribe",
                    *quickstart(local, os.path.join(args().work, "out"),
                                ["++workload.workflow.generate_data=False"]),
                    check=False, timeout=120)
        text = p.stdout + p.stderr
        print(text[-3000:])
        errors = [l for l in text.splitlines() if l.startswith("iomimic: error:")]
        if p.returncode == 0 or len(errors) != 1 or "2 hosts fail this check: h2, h3" \
                not in errors[0]:
            fail("expected one error naming h2 and h3, got exit %d and %s" %
                 (p.returncode, errors))
    finally:
        cluster("stop", folder, check=False)


def test_host_without_data_named():
    folder = start(2)
    try:
        local = os.path.join(folder, "local", "data")
        out = os.path.join(args().work, "out")
        # Generated on h1 only: DIR/local on h2 is h2's own, empty.
        cluster("mpirun", folder, "-np", "1", "--host", "h1:1",
                *quickstart(local, os.path.join(args().work, "gen"),
                            ["++workload.workflow.train=False"]), timeout=120)
        if not os.path.isdir(os.path.join(folder, "hosts", "h1", "data", "train")):
            fail("the dataset did not land in h1's node-local folder")
        p = cluster("mpirun", folder, "-np", "4", "--host", "h1:2,h2:2", "--oversubscribe",
                    *quickstart(local, out, ["++workload.workflow.generate_data=False"]),
                    check=False, timeout=120)
        text = p.stdout + p.stderr
        print(text[-3000:])
        want = "on host h2: data folder %s/train does not exist" % local
        errors = [l for l in text.splitlines() if l.startswith("iomimic: error:")]
        if p.returncode == 0 or len(errors) != 1 or want not in errors[0]:
            fail("expected one error naming h2 and %s/train, got exit %d and %s" %
                 (local, p.returncode, errors))
        if "epoch 1:" in text:
            fail("training started before the missing data folder was found")
        with open(os.path.join(out, "status.json")) as f:
            if want not in json.load(f).get("error", ""):
                fail("status.json does not name h2 and the path")
    finally:
        cluster("stop", folder, check=False)


def test_host_without_output_folder_named():
    """The results folder on node-local storage: rank 0 makes it on h1, and
    the ranks on h2, which write their own per-rank files, find no such
    folder there. The one error names h2 (the host that failed), not h1
    (the host that reports it), however many times the failure is agreed
    between the ranks on its way out."""
    folder = start(2)
    try:
        data = os.path.join(args().work, "data")
        out = os.path.join(folder, "local", "out")
        p = cluster("mpirun", folder, "-np", "4", "--host", "h1:2,h2:2", "--oversubscribe",
                    *quickstart(data, out, ["++workload.train.epochs=1"]),
                    check=False, timeout=180)
        text = p.stdout + p.stderr
        print(text[-3000:])
        errors = [l for l in text.splitlines() if l.startswith("iomimic: error:")]
        if p.returncode == 0 or len(errors) != 1:
            fail("expected one error line, got exit %d and %s" % (p.returncode, errors))
        if not re.search(r"rank [23] failed: on host h2: ", errors[0]):
            fail("the error does not name a rank of h2 and h2: %s" % errors[0])
        if "on host h1" in errors[0] or errors[0].count("on host") != 1:
            fail("the error names the wrong host, or a host twice: %s" % errors[0])
    finally:
        cluster("stop", folder, check=False)


if __name__ == "__main__":
    harness.main(globals())
