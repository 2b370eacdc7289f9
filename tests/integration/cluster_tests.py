#!/usr/bin/python3
"""Multi-host runs on the namespace test cluster (scripts/cluster.sh,
docs/cluster.md): each test starts its own hosts, runs iomimic across them
with mpirun through the cluster's rsh agent, checks what the run saw of its
hosts and stops the cluster whatever happened. Exit status 77 (skipped) when
the machine cannot make namespaces (not root, no iproute2, a container
without CAP_NET_ADMIN).

Usage: cluster_tests.py TEST --iomimic BIN --source REPO --work DIR
"""

import csv
import glob
import json
import os
import subprocess
import sys
import time

import iomimic_tests as harness
from iomimic_tests import fail

# A name and subnet of their own, so a developer's cluster (scripts/cluster.sh
# defaults) and this test never meet, nor two of these tests run at once
# (two worktrees on one machine): both follow from the process id.
CLUSTER = "iomt%d" % (os.getpid() % 100000)


def free_subnet():
    """A /24 no route of this machine uses yet (scripts/cluster.sh's default
    and other clusters live in 10.231.x), starting from one the pid picks."""
    try:
        routes = subprocess.run(["ip", "route"], capture_output=True, text=True).stdout
    except OSError:
        routes = ""
    for k in range(4500):
        n = (os.getpid() + k) % 4500
        net = "10.%d.%d" % (232 + n // 250, n % 250)
        if net + ".0/24" not in routes:
            return net
    return "10.232.0"


# The tests measure how fast a fault ends a run, with Open MPI's own SIGKILL
# grace of 1 s: cluster.sh's default of 30 s would add a minute to each
# (cluster_examples_tests.py checks that default).
ENV = dict(os.environ, IOMIMIC_CLUSTER_NAME=CLUSTER, IOMIMIC_CLUSTER_NET=free_subnet(),
           IOMIMIC_CLUSTER_SIGKILL_TIMEOUT="1")


def args():
    return harness.ARGS


def cluster(*words, check=True, timeout=120):
    script = os.path.join(args().source, "scripts", "cluster.sh")
    p = subprocess.run([script] + list(words), env=ENV, capture_output=True, text=True,
                       timeout=timeout)
    if check and p.returncode != 0:
        fail("cluster.sh %s: exit %d\n%s%s" % (" ".join(words), p.returncode, p.stdout, p.stderr))
    return p


def start(hosts):
    folder = os.path.join(args().work, "cluster")
    if os.geteuid() != 0:
        print("SKIP: the namespace cluster needs root")
        sys.exit(77)
    p = cluster("start", str(hosts), folder, check=False)
    if p.returncode != 0:
        print("SKIP: this machine cannot make the namespace hosts:\n" + p.stderr)
        sys.exit(77)
    return folder


def run_on(folder, ranks, hosts, out, extra=()):
    """`iomimic run` of a shrunk quickstart over `hosts` ("h1:2,h2:2")."""
    data = os.path.join(args().work, "data")
    cmd = ["mpirun", folder, "-np", str(ranks), "--host", hosts, "--oversubscribe",
           args().iomimic, "run", "--config-dir", os.path.join(args().source, "workloads"),
           "workload=quickstart", "++workload.dataset.data_folder=" + data,
           "++workload.dataset.num_files_train=48", "++workload.dataset.num_files_eval=12",
           "++workload.dataset.record_length_bytes=65536",
           "++workload.dataset.record_length_bytes_stdev=0", "++workload.reader.batch_size=2",
           "++workload.train.epochs=2", "++workload.train.computation_time=0.001",
           "++workload.evaluation.eval_time=0.001", "++workload.output.folder=" + out]
    p = cluster(*(cmd + list(extra)), check=False, timeout=300)
    print(p.stdout[-3000:] + p.stderr[-3000:])
    if p.returncode != 0:
        fail("the run over %s failed (exit %d)" % (hosts, p.returncode))
    with open(os.path.join(out, "summary.json")) as f:
        return json.load(f)


def ranks_per_host(out):
    """{hostname: ranks} from the per-rank output files DLIO's tools read."""
    seen = {}
    for path in glob.glob(os.path.join(out, "*_output.json")):
        with open(path) as f:
            host = json.load(f).get("hostname")
        seen[host] = seen.get(host, 0) + 1
    return seen


def test_hosts_counted_across_namespaces():
    """2 hosts x 2 ranks, then 3 hosts with 1, 2 and 3 ranks (uneven
    accelerators per host, DLIO #157): num_hosts is the number of distinct
    host names, every rank trains, and the run ends cleanly on all hosts."""
    folder = start(3)
    try:
        even = os.path.join(args().work, "even")
        s = run_on(folder, 4, "h1:2,h2:2", even)
        if s.get("num_hosts") != 2 or s.get("num_accelerators") != 4:
            fail("2 hosts x 2 ranks: num_hosts %r, num_accelerators %r" %
                 (s.get("num_hosts"), s.get("num_accelerators")))
        if ranks_per_host(even) != {"h1": 2, "h2": 2}:
            fail("2 hosts x 2 ranks: the rank files name %s" % ranks_per_host(even))
        uneven = os.path.join(args().work, "uneven")
        s = run_on(folder, 6, "h1:1,h2:2,h3:3", uneven,
                   ["++workload.workflow.generate_data=False"])
        if s.get("num_hosts") != 3 or s.get("num_accelerators") != 6:
            fail("hosts with 1, 2 and 3 ranks: num_hosts %r, num_accelerators %r" %
                 (s.get("num_hosts"), s.get("num_accelerators")))
        if s["iomimic"]["bytes_read"] <= 0:
            fail("the uneven run read nothing")
        if ranks_per_host(uneven) != {"h1": 1, "h2": 2, "h3": 3}:
            fail("hosts with 1, 2 and 3 ranks: the rank files name %s" % ranks_per_host(uneven))
        print("num_hosts 2 and 3 as launched; rank files name %s" % ranks_per_host(uneven))
    finally:
        cluster("stop", folder, check=False)
    left = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    if CLUSTER + "-" in left:
        fail("stop left namespaces behind: " + left)


def iomimic_on(folder, ranks, hosts, name, out, overrides):
    """`iomimic run workload=NAME` over `hosts` ("h1:2,h2:2") with `overrides`."""
    cmd = ["mpirun", folder, "-np", str(ranks), "--host", hosts, "--oversubscribe",
           args().iomimic, "run", "--config-dir", os.path.join(args().source, "workloads"),
           "workload=" + name, "++workload.output.folder=" + out,
           "++workload.iomimic.timeline_interval=0.1"] + list(overrides)
    began = time.time()
    p = cluster(*cmd, check=False, timeout=300)
    print("%s over %s: %.1f s" % (name, hosts, time.time() - began))
    if p.returncode != 0:
        print(p.stdout[-3000:] + p.stderr[-3000:])
        fail("%s over %s failed (exit %d)" % (name, hosts, p.returncode))
    with open(os.path.join(out, "summary.json")) as f:
        return json.load(f)


def read_rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def check_hosts(out, s, expected):
    """summary.json's hosts and timeline.csv's host rows add up to the run's
    totals exactly; each host has its ranks; host_telemetry.csv has a row per
    host per interval of the host's sampling rank. `expected`: {host: ranks}.
    Returns the telemetry rows by host."""
    io = s["iomimic"]
    hosts = io["hosts"]
    if s.get("num_hosts") != len(expected):
        fail("num_hosts %r, launched on %d hosts" % (s.get("num_hosts"), len(expected)))
    got = {h["host"]: len(h["ranks"]) for h in hosts}
    if got != expected:
        fail("hosts and their ranks %s, launched %s" % (got, expected))
    for h in hosts:
        names = {io["rank_hosts"][r] for r in h["ranks"]}
        if names != {h["host"]} or h["accelerators"] != len(h["ranks"]):
            fail("host %s: its ranks %s name %s" % (h["host"], h["ranks"], names))
    for key, total in (("bytes_read", io["bytes_read"]), ("bytes_written", io["bytes_written"]),
                       ("train_bytes_read", io.get("train_bytes_read", 0)),
                       ("samples", io["sample_read_latency_ms"]["count"])):
        if sum(h[key] for h in hosts) != total:
            fail("hosts' %s sum to %d, the run's total is %d" %
                 (key, sum(h[key] for h in hosts), total))
    if io["bytes_read"] <= 0 or any(h["samples"] <= 0 for h in hosts):
        fail("a host read nothing: %s" % [(h["host"], h["samples"]) for h in hosts])
    timeline = read_rows(os.path.join(out, "timeline.csv"))
    for column, total in (("bytes_read", io["bytes_read"]),
                          ("samples", io["sample_read_latency_ms"]["count"])):
        for h in hosts:
            rows = sum(int(r[column]) for r in timeline
                       if r["rank"] == "host" and r["host"] == h["host"])
            ranks = sum(int(r[column]) for r in timeline
                        if r["rank"].isdigit() and int(r["rank"]) in h["ranks"])
            if rows != ranks:
                fail("timeline.csv: host %s's rows' %s sum to %d, its ranks' to %d" %
                     (h["host"], column, rows, ranks))
        hosts_sum = sum(int(r[column]) for r in timeline if r["rank"] == "host")
        if hosts_sum != total:
            fail("timeline.csv: the host rows' %s sum to %d, the total is %d" %
                 (column, hosts_sum, total))
    telemetry = read_rows(os.path.join(out, "host_telemetry.csv"))
    by_host = {}
    for r in telemetry:
        by_host.setdefault(r["host"], []).append(r)
    if sorted(by_host) != sorted(expected):
        fail("host_telemetry.csv names hosts %s" % sorted(by_host))
    for h in hosts:
        sampler = str(min(h["ranks"]))
        mine = by_host[h["host"]]
        if {r["rank"] for r in mine} != {sampler}:
            fail("host %s sampled by ranks %s, not its lowest %s" %
                 (h["host"], {r["rank"] for r in mine}, sampler))
        want = [r["interval"] for r in timeline if r["rank"] == sampler]
        if [r["interval"] for r in mine] != want or not want:
            fail("host %s: telemetry intervals %s, rank %s's timeline has %s" %
                 (h["host"], [r["interval"] for r in mine], sampler, want))
    return by_host


def evict_from_page_cache(folder):
    """Writes the dataset's dirty pages and drops its files' pages from the
    page cache (posix_fadvise DONTNEED), so the run reads them from the disk.
    Only these files: dropping the whole cache (drop_caches) would make every
    other process on a shared machine read its files again, into the same
    diskstats. A message and False where it cannot be done."""
    try:
        subprocess.run(["sync"], check=True)
        for root, _, files in os.walk(folder):
            for name in files:
                fd = os.open(os.path.join(root, name), os.O_RDONLY)
                try:
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                finally:
                    os.close(fd)
        return True
    except (OSError, AttributeError) as e:
        print("SKIPPED (disk part): cannot drop the dataset from the page cache: %s" % e)
        return False


def disk_sectors_read(folder):
    """/proc/diskstats' sectors read of the whole disk under `folder` (as
    core/src/metrics/host_telemetry.cpp resolves it), or None."""
    dev = os.stat(folder).st_dev
    sys_dir = "/sys/dev/block/%d:%d" % (os.major(dev), os.minor(dev))
    if os.major(dev) == 0 or not os.path.exists(sys_dir):
        return None
    real = os.path.realpath(sys_dir)
    disk = os.path.basename(os.path.dirname(real) if os.path.exists(
        os.path.join(real, "partition")) else real)
    with open("/proc/diskstats") as f:
        for line in f:
            fields = line.split()
            if fields[2] == disk:
                return int(fields[5])
    return None


def others_read_rate(folder, seconds=1.0):
    """Bytes per second other processes read from the disk under `folder`
    while this test does nothing (0 when it has no block device)."""
    first = disk_sectors_read(folder)
    time.sleep(seconds)
    last = disk_sectors_read(folder)
    return 0.0 if first is None or last is None else (last - first) * 512 / seconds


def peer_counters(hosts):
    """Bytes through each host's veth as the machine's own namespace sees it:
    its rx is the host's tx (scripts/cluster.sh names the peer NAME-hI)."""
    out = {}
    for h in hosts:
        base = "/sys/class/net/%s-%s/statistics/" % (CLUSTER, h)
        with open(base + "rx_bytes") as rx, open(base + "tx_bytes") as tx:
            out[h] = (int(rx.read()), int(tx.read()))
    return out


def check_network(by_host, before, after):
    """Each host's network columns are its own namespace's eth0: non-zero
    (the per-step barrier crosses hosts over TCP) and within what the peer end
    of its link counted over the whole mpirun (the telemetry covers the run's
    recording only, so it is a part of it)."""
    for h, rows in by_host.items():
        tx = sum(int(r["net_tx_bytes"]) for r in rows)
        rx = sum(int(r["net_rx_bytes"]) for r in rows)
        peer_rx = after[h][0] - before[h][0]
        peer_tx = after[h][1] - before[h][1]
        print("network %s: telemetry tx %d rx %d; the link's other end over the whole mpirun: "
              "rx %d tx %d" % (h, tx, rx, peer_rx, peer_tx))
        if tx <= 0 or rx <= 0:
            fail("host %s: no network traffic in its telemetry (tx %d, rx %d)" % (h, tx, rx))
        if tx > peer_rx or rx > peer_tx:
            fail("host %s: telemetry counted more than its link carried" % h)


def disk_disagreement(by_host, s, cold):
    """Cold reads on a block device: the disk's sectors read during the run
    (any host's rows: one kernel) agree with the bytes the run read within 5%.
    A message when they do not; None when they do or cannot be compared."""
    t = s["iomimic"]["hosts"][0]["telemetry"]
    if not t["disk"]:
        print("SKIPPED (disk part): %s" % t["disk_note"])
        return None
    if not cold:
        return None
    rows = by_host[s["iomimic"]["hosts"][0]["host"]]
    disk = sum(int(r["disk_read_bytes"]) for r in rows)
    read = s["iomimic"]["bytes_read"]
    print("disk %s: diskstats read %d bytes during the run, the run read %d (%+.2f%%)" %
          (t["disk"], disk, read, 100.0 * (disk - read) / read))
    if abs(disk - read) > 0.05 * read:
        return "diskstats read %d bytes, the run read %d: more than 5%% apart" % (disk, read)
    return None


def check_compare_and_report(four, three):
    """`iomimic compare` puts the hosts' figures side by side ("-" where a run
    had no such host); `iomimic report` carries both files' per-host data."""
    p = harness.run([args().iomimic, "compare", four, three])
    lines = p.stdout.splitlines()
    if "per host:" not in lines:
        fail("compare shows no per-host figures")
    h4 = [line.split() for line in lines if line.startswith("h4 train AU %")]
    if len(h4) != 1 or h4[0][-1] != "-" or float(h4[0][-2]) <= 0:
        fail("compare's h4 row %s: A's AU, then '-' for B (no h4)" % h4)
    page = os.path.join(args().work, "four.html")
    harness.run([args().iomimic, "report", four, "-o", page])
    with open(page) as f:
        text = f.read()
    for needle in ('"host_telemetry":{"h1":', '"host_timeline":{"h1":', '"rank_hosts":["h1"'):
        if needle not in text:
            fail("the report page has no %s" % needle)


UNET3D = ["++workload.dataset.num_files_train=64", "++workload.dataset.num_files_eval=0",
          "++workload.dataset.record_length_bytes=2097152",
          "++workload.dataset.record_length_bytes_stdev=0",
          "++workload.dataset.record_length_bytes_resize=0", "++workload.reader.batch_size=2",
          "++workload.reader.read_threads=2", "++workload.train.epochs=1",
          "++workload.train.computation_time=0.01", "++workload.workflow.checkpoint=False"]


def test_many_hosts_acceptance():
    """Issue 26's acceptance runs: 4 hosts x 2 ranks of a shrunk unet3d
    (cold, on this machine's disk) and of a shrunk dlrm_parquet, then 3 hosts
    with 1, 2 and 3 ranks: per-host rows add up to the totals exactly,
    host_telemetry.csv has a row per host per interval, its disk reads agree
    with the run's within 5% and its network columns are each host's own."""
    folder = start(4)
    try:
        data = os.path.join(args().work, "unet3d")
        gen = os.path.join(args().work, "unet3d-generate")
        harness.run([args().iomimic, "run", "--config-dir",
                     os.path.join(args().source, "workloads"), "workload=unet3d_h100",
                     "++workload.dataset.data_folder=" + data,
                     "++workload.workflow.generate_data=True", "++workload.workflow.train=False",
                     "++workload.output.folder=" + gen] + UNET3D)
        # The disk is the machine's: another process reading it during the
        # run counts too. A disagreement gets another cold run; when every
        # run disagrees on a disk that others were reading from just before,
        # the comparison is skipped with the figures, otherwise it fails.
        busy = []
        for attempt in (1, 2, 3):
            others = others_read_rate(data)
            cold = evict_from_page_cache(data)
            before = peer_counters(["h1", "h2", "h3", "h4"])
            out = os.path.join(args().work, "unet3d-4x2-%d" % attempt)
            s = iomimic_on(folder, 8, "h1:2,h2:2,h3:2,h4:2", "unet3d_h100", out,
                           UNET3D + ["++workload.dataset.data_folder=" + data])
            after = peer_counters(["h1", "h2", "h3", "h4"])
            by_host = check_hosts(out, s, {"h1": 2, "h2": 2, "h3": 2, "h4": 2})
            check_network(by_host, before, after)
            problem = disk_disagreement(by_host, s, cold)
            if problem is None:
                break
            print("attempt %d: %s; other readers read %.1f MB/s from the disk just before" %
                  (attempt, problem, others / 1e6))
            busy.append(others > 0.01 * s["iomimic"]["bytes_read"])
            if attempt == 3:
                if all(busy):
                    print("SKIPPED (disk part): other processes kept reading the shared disk")
                else:
                    fail(problem + " (three cold runs)")
        out = os.path.join(args().work, "dlrm-4x2")
        s = iomimic_on(folder, 8, "h1:2,h2:2,h3:2,h4:2", "dlrm_parquet_h100", out,
                       ["++workload.dataset.data_folder=" + os.path.join(args().work, "dlrm"),
                        "++workload.workflow.generate_data=True",
                        "++workload.dataset.num_files_train=256",
                        "++workload.reader.batch_size=8", "++workload.reader.read_threads=2",
                        "++workload.train.computation_time=0.002"])
        check_hosts(out, s, {"h1": 2, "h2": 2, "h3": 2, "h4": 2})

        out = os.path.join(args().work, "unet3d-1-2-3")
        s = iomimic_on(folder, 6, "h1:1,h2:2,h3:3", "unet3d_h100", out,
                       UNET3D + ["++workload.dataset.data_folder=" + data])
        check_hosts(out, s, {"h1": 1, "h2": 2, "h3": 3})
        print("per-host rows add up on 4x2 unet3d, 4x2 dlrm_parquet and 1/2/3 unet3d")
        check_compare_and_report(os.path.join(args().work, "unet3d-4x2-%d" % attempt), out)
    finally:
        cluster("stop", folder, check=False)


if __name__ == "__main__":
    harness.main(globals())
