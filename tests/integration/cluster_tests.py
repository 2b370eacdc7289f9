#!/usr/bin/python3
"""Multi-host runs on the namespace test cluster (scripts/cluster.sh,
docs/cluster.md): each test starts its own hosts, runs iomimic across them
with mpirun through the cluster's rsh agent, checks what the run saw of its
hosts and stops the cluster whatever happened. Exit status 77 (skipped) when
the machine cannot make namespaces (not root, no iproute2, a container
without CAP_NET_ADMIN).

Usage: cluster_tests.py TEST --iomimic BIN --source REPO --work DIR
"""

import glob
import json
import os
import subprocess
import sys

import iomimic_tests as harness
from iomimic_tests import fail

# A name and subnet of their own, so a developer's cluster (scripts/cluster.sh
# defaults) and this test never meet.
ENV = dict(os.environ, IOMIMIC_CLUSTER_NAME="iomt", IOMIMIC_CLUSTER_NET="10.231.77")


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
    if "iomt-" in left:
        fail("stop left namespaces behind: " + left)


if __name__ == "__main__":
    harness.main(globals())
