#!/usr/bin/python3
"""The launch examples of examples/cluster/ (docs/cluster.md, "Launching on
real clusters") are checked, not just shown:

- cluster_examples_parse: the shell scripts pass `bash -n`; the sbatch
  script's #SBATCH lines are well formed; the MPIJob parses as YAML, is a
  kubeflow.org/v2beta1 MPIJob whose mpirun -np equals workers x slots, whose
  iomimic command line iomimic accepts (`iomimic config --plan --ranks N`
  with the same arguments) and whose data and results folders lie on volumes
  every worker mounts.
- s3_dataset_across_hosts: the local radosgw (scripts/s3_server.sh), which
  listens on the machine's loopback, serves 2 namespace hosts x 1 rank
  through a forwarder at the bridge address NET.254 (the hosts' only way
  out): they generate and read an S3 dataset, and both hosts' addresses
  reach the server. Exit 77 without root, namespaces or Ceph.
- slurm_example_on_namespace_hosts: the sbatch script itself runs on 2
  namespace hosts (scripts/cluster.sh), its srun lines going through a fake
  srun that maps them to mpirun on the hosts; then mpirun.sh with the
  cluster's hostfile. Both must train on both hosts. Exit 77 without root or
  namespaces.

Usage: cluster_examples_tests.py TEST --iomimic BIN --source REPO --work DIR
"""

import hashlib
import json
import os
import re
import socket
import subprocess
import threading

import iomimic_tests as harness
from iomimic_tests import fail
import cluster_tests
from cluster_tests import ENV

ENV.update(IOMIMIC_CLUSTER_NAME="iome", IOMIMIC_CLUSTER_NET="10.231.80")
SHRINK = ("++workload.dataset.num_files_train=16 ++workload.dataset.num_files_eval=0 "
          "++workload.dataset.record_length_bytes=65536 "
          "++workload.dataset.record_length_bytes_stdev=0 ++workload.reader.batch_size=1 "
          "++workload.train.epochs=1 ++workload.train.computation_time=0.001 "
          "++workload.workflow.evaluation=False")

# srun as the sbatch script calls it, run as mpirun over the namespace hosts:
# --ntasks and --ntasks-per-node give the ranks per host; Slurm's other
# options have no say here; anything else is refused, so that the script
# cannot pass with an srun line a real srun would reject.
FAKE_SRUN = r"""#!/usr/bin/env bash
set -euo pipefail
n=1; per=1
while [ $# -gt 0 ]; do
  case "$1" in
    --ntasks=*) n=${1#*=} ;;
    --ntasks-per-node=*) per=${1#*=} ;;
    --mpi=pmix|--kill-on-bad-exit=1|--distribution=block) ;;
    -*) echo "fake srun: option $1 not known" >&2; exit 2 ;;
    *) break ;;
  esac
  shift
done
hosts=""
for i in $(seq 1 $((n / per))); do hosts="$hosts${hosts:+,}h$i:$per"; done
exec "$CLUSTER_SH" mpirun "$CLUSTER_DIR" -np "$n" --host "$hosts" "$@"
"""


def args():
    return harness.ARGS


def example(name):
    return os.path.join(args().source, "examples", "cluster", name)


def check_mpijob(path):
    import yaml  # Debian's python3-yaml (/usr/bin/python3)
    with open(path) as f:
        job = yaml.safe_load(f)
    if job.get("apiVersion") != "kubeflow.org/v2beta1" or job.get("kind") != "MPIJob":
        fail("%s: not a kubeflow.org/v2beta1 MPIJob" % path)
    spec = job["spec"]
    workers = spec["mpiReplicaSpecs"]["Worker"]
    slots = spec["slotsPerWorker"] * workers["replicas"]
    launcher = spec["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    cmd = list(launcher.get("command", [])) + list(launcher.get("args", []))
    if cmd[0] != "mpirun" or "iomimic" not in cmd:
        fail("%s: the launcher does not run mpirun ... iomimic: %s" % (path, cmd))
    np = int(cmd[cmd.index("-np") + 1])
    if np != slots:
        fail("%s: mpirun -np %d, but %d workers x %d slots" %
             (path, np, workers["replicas"], spec["slotsPerWorker"]))
    iomimic = cmd[cmd.index("iomimic") + 1:]
    if iomimic[0] not in ("run", "generate"):
        fail("%s: iomimic %s is not a run" % (path, iomimic[0]))
    p = harness.run([args().iomimic, "config", "--plan", "--ranks", str(np)] + iomimic[1:],
                    expect_ok=False)
    if p.returncode != 0 or "warning: unknown key" in p.stderr:
        fail("%s: iomimic refuses the MPIJob's command line: %s" % (path, p.stderr))
    mounts = [m["mountPath"] for m in workers["template"]["spec"]["containers"][0]["volumeMounts"]]
    for key in ("dataset.data_folder", "output.folder"):
        value = [a.split("=", 1)[1] for a in iomimic if a.startswith("++workload." + key + "=")]
        if not value or not any(value[0].startswith(m.rstrip("/") + "/") for m in mounts):
            fail("%s: %s %s is on no volume the workers mount (%s)" % (path, key, value, mounts))
    return np


def test_cluster_examples_parse():
    for script in ("mpirun.sh", "slurm.sbatch"):
        subprocess.run(["bash", "-n", example(script)], check=True)
    with open(example("slurm.sbatch")) as f:
        directives = [l for l in f if l.startswith("#SBATCH")]
    for line in directives:
        if not re.match(r"#SBATCH --[a-z-]+=\S+$", line.strip()):
            fail("slurm.sbatch: malformed directive %r" % line)
    if not any("--ntasks-per-node=" in l for l in directives):
        fail("slurm.sbatch: no --ntasks-per-node")
    with open(example("hostfile")) as f:
        hosts = [l.split() for l in f if l.strip() and not l.startswith("#")]
    if not hosts or any(len(h) != 2 or not h[1].startswith("slots=") for h in hosts):
        fail("hostfile: lines are not 'HOST slots=N': %s" % hosts)
    print("MPIJob: %d ranks; scripts pass bash -n" % check_mpijob(example("mpijob.yaml")))


def trained_on_both(results):
    with open(os.path.join(results, "summary.json")) as f:
        s = json.load(f)
    if s.get("num_hosts") != 2 or s.get("num_accelerators") != 4:
        fail("%s: num_hosts %r, num_accelerators %r (2 and 4 expected)" %
             (results, s.get("num_hosts"), s.get("num_accelerators")))
    if s["iomimic"]["bytes_read"] <= 0:
        fail("%s: nothing read" % results)


def test_slurm_example_on_namespace_hosts():
    folder = cluster_tests.start(2)
    w = args().work
    try:
        shim = os.path.join(w, "bin")
        os.makedirs(shim)
        with open(os.path.join(shim, "srun"), "w") as f:
            f.write(FAKE_SRUN)
        os.chmod(os.path.join(shim, "srun"), 0o755)
        env = dict(ENV, PATH=shim + ":" + os.environ["PATH"], IOMIMIC=args().iomimic,
                   WORKLOAD="quickstart", DATA=os.path.join(w, "data"),
                   RESULTS=os.path.join(w, "slurm-results"), OVERRIDES=SHRINK,
                   CLUSTER_SH=os.path.join(args().source, "scripts", "cluster.sh"),
                   CLUSTER_DIR=folder, SLURM_JOB_ID="42", SLURM_NTASKS="4",
                   SLURM_NTASKS_PER_NODE="2", SLURM_JOB_NUM_NODES="2",
                   OMPI_MCA_rmaps_base_oversubscribe="1")
        p = subprocess.run(["bash", example("slurm.sbatch")], env=env, cwd=w,
                           capture_output=True, text=True, timeout=300)
        print(p.stdout[-2000:] + p.stderr[-2000:])
        if p.returncode != 0:
            fail("slurm.sbatch under the fake srun: exit %d" % p.returncode)
        trained_on_both(os.path.join(w, "slurm-results"))
        env.update(RESULTS=os.path.join(w, "mpirun-results"), RANKS_PER_HOST="2",
                   MPIRUN=env["CLUSTER_SH"] + " mpirun " + folder)
        p = subprocess.run(["bash", example("mpirun.sh"), os.path.join(folder, "hostfile")],
                           env=env, cwd=w, capture_output=True, text=True, timeout=300)
        print(p.stdout[-2000:] + p.stderr[-2000:])
        if p.returncode != 0:
            fail("mpirun.sh over the cluster's hostfile: exit %d" % p.returncode)
        trained_on_both(os.path.join(w, "mpirun-results"))
    finally:
        cluster_tests.cluster("stop", folder, check=False)


def pipe(source, sink):
    """Copies bytes from source to sink until source ends."""
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass
    finally:
        try:
            sink.shutdown(socket.SHUT_WR)
        except OSError:
            pass


class Forwarder(threading.Thread):
    """TCP from `listen` (an address on the cluster's bridge) to `target`
    (radosgw on loopback), byte for byte, so that SigV4 signatures made for
    the bridge address reach the server unchanged; notes each peer's
    address."""

    def __init__(self, listen, target):
        super().__init__(daemon=True)
        self.server = socket.create_server(listen)
        self.target = target
        self.peers = set()

    def run(self):
        while True:
            try:
                conn, peer = self.server.accept()
            except OSError:
                return
            self.peers.add(peer[0])
            upstream = socket.create_connection(self.target)
            for a, b in ((conn, upstream), (upstream, conn)):
                threading.Thread(target=pipe, args=(a, b), daemon=True).start()


def test_s3_dataset_across_hosts():
    folder = cluster_tests.start(2)
    w = args().work
    net = ENV["IOMIMIC_CLUSTER_NET"]
    port = 20000 + int.from_bytes(hashlib.sha1(w.encode()).digest()[:2], "big") % 10000
    server = os.path.join(w, "s3-server")
    s3 = os.path.join(args().source, "scripts", "s3_server.sh")
    try:
        started = subprocess.run([s3, "start", server], capture_output=True, text=True,
                                 env=dict(os.environ, IOMIMIC_S3_PORT=str(port),
                                          IOMIMIC_S3_MEMORY="512M"), timeout=180)
        if started.returncode != 0:
            print("SKIP: no local S3 server here:\n" + started.stderr[-2000:])
            raise SystemExit(77)
        keys = dict(re.findall(r"export (\w+)=(\S+)", started.stdout))
        forwarder = Forwarder(("%s.254" % net, port), ("127.0.0.1", port))
        forwarder.start()
        endpoint = "http://%s.254:%d" % (net, port)
        bucket = keys["IOMIMIC_S3_BUCKET"]
        out = os.path.join(w, "s3-out")
        cmd = ["mpirun", folder, "-np", "2", "--host", "h1:1,h2:1", "-x", "AWS_ACCESS_KEY_ID",
               "-x", "AWS_SECRET_ACCESS_KEY", "-x", "AWS_REGION", args().iomimic, "run",
               "--config-dir", os.path.join(args().source, "workloads"), "workload=quickstart",
               "++workload.storage.storage_type=s3", "++workload.storage.storage_root=" + bucket,
               "++workload.storage.storage_options.endpoint_url=" + endpoint,
               "++workload.dataset.data_folder=s3://%s/hosts%d" % (bucket, os.getpid()),
               "++workload.output.folder=" + out] + SHRINK.split()
        env = dict(ENV, **{k: keys[k] for k in
                           ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION")})
        p = subprocess.run([os.path.join(args().source, "scripts", "cluster.sh")] + cmd,
                           env=env, capture_output=True, text=True, timeout=300)
        print(p.stdout[-2000:] + p.stderr[-2000:])
        if p.returncode != 0:
            fail("2 hosts x 1 rank on S3 through %s: exit %d" % (endpoint, p.returncode))
        with open(os.path.join(out, "summary.json")) as f:
            s = json.load(f)
        if s.get("num_hosts") != 2 or s["iomimic"]["bytes_read"] < 16 * 65536:
            fail("num_hosts %r, bytes_read %r: expected 2 hosts reading the 16 objects" %
                 (s.get("num_hosts"), s["iomimic"]["bytes_read"]))
        check = s["iomimic"]["cache_check"]
        if check["client_page_cache"] or check["warning"] is not None:
            fail("S3 reads are kept in no client page cache, yet: %s" % check)
        if not {"%s.1" % net, "%s.2" % net} <= forwarder.peers:
            fail("the server was reached from %s, not from both hosts" % sorted(forwarder.peers))
        print("S3 from both hosts (%s), %d bytes read" % (sorted(forwarder.peers),
                                                          s["iomimic"]["bytes_read"]))
    finally:
        subprocess.run([s3, "stop", server], capture_output=True,
                       env=dict(os.environ, IOMIMIC_S3_PORT=str(port)))
        cluster_tests.cluster("stop", folder, check=False)


if __name__ == "__main__":
    harness.main(globals())
