#!/usr/bin/python3
"""The launch examples of examples/cluster/ (docs/cluster.md, "Launching on
real clusters") are checked, not just shown:

- cluster_examples_parse: the shell scripts pass `bash -n`; the sbatch
  script's #SBATCH lines are well formed; the MPIJob parses as YAML and is a
  kubeflow.org/v2beta1 MPIJob; its image's recipe (examples/cluster/
  Dockerfile, which no test here can build: no Docker engine) builds with
  the README's quick start steps (scripts/quickstart.sh's) on Debian 12 and
  sets up sshd for the operator.
- cluster_examples_launch_lines: every launcher of the examples run dry,
  its srun or mpirun replaced by a recorder: slurm.sbatch repeats
  --cpus-per-task on srun (Slurm >= 22.05 does not inherit it) and asks for
  SIGTERM before the time limit; mpirun.sh, the MPIJob's launcher and
  `scripts/cluster.sh mpirun` pass a SIGKILL grace (odls_base_sigkill_timeout
  30, a caller's own value replacing cluster.sh's); the MPIJob runs mpirun
  as root with --allow-run-as-root, its workers run sshd, it generates then
  trains with -np = workers x slots, and iomimic accepts each command line
  (`iomimic config --plan --ranks N`); in all three, the data, checkpoint
  and results folders are on shared storage, the checkpoints beside the
  dataset (the storage under test), never relative to the working
  directory.
- s3_dataset_across_hosts: the local radosgw (scripts/s3_server.sh), which
  listens on the machine's loopback, serves 2 namespace hosts x 1 rank
  through a forwarder at the bridge address NET.254 (the hosts' only way
  out): they generate and read an S3 dataset, and both hosts' addresses
  reach the server. Exit 77 without root, namespaces or Ceph.
- slurm_example_on_namespace_hosts: the sbatch script itself runs on 2
  namespace hosts (scripts/cluster.sh), its srun lines going through a fake
  srun that maps them to mpirun on the hosts (and refuses an srun line
  without --cpus-per-task); then mpirun.sh with the cluster's hostfile. Both
  must train on both hosts and write their checkpoints beside the dataset,
  none under the working directory. Exit 77 without root or namespaces.

Usage: cluster_examples_tests.py TEST --iomimic BIN --source REPO --work DIR
"""

import hashlib
import json
import os
import re
import shutil
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
n=1; per=1; cpus=""
while [ $# -gt 0 ]; do
  case "$1" in
    --ntasks=*) n=${1#*=} ;;
    --ntasks-per-node=*) per=${1#*=} ;;
    --cpus-per-task=*) cpus=${1#*=} ;;
    --mpi=pmix|--kill-on-bad-exit=1|--distribution=block) ;;
    -*) echo "fake srun: option $1 not known" >&2; exit 2 ;;
    *) break ;;
  esac
  shift
done
# Slurm >= 22.05: a step gets sbatch's --cpus-per-task only when srun repeats it.
if [ -n "${SLURM_CPUS_PER_TASK:-}" ] && [ "$cpus" != "$SLURM_CPUS_PER_TASK" ]; then
  echo "fake srun: --cpus-per-task=$SLURM_CPUS_PER_TASK not repeated (got '$cpus')" >&2; exit 2
fi
hosts=""
for i in $(seq 1 $((n / per))); do hosts="$hosts${hosts:+,}h$i:$per"; done
exec "$CLUSTER_SH" mpirun "$CLUSTER_DIR" -np "$n" --host "$hosts" "$@"
"""


def args():
    return harness.ARGS


def example(name):
    return os.path.join(args().source, "examples", "cluster", name)


# A launcher (srun, mpirun) that only records its command line, one JSON
# list a line in $LAUNCH_LOG, and starts nothing.
RECORDER = """#!/usr/bin/python3
import json, os, sys
with open(os.environ["LAUNCH_LOG"], "a") as f:
    f.write(json.dumps([os.path.basename(sys.argv[0])] + sys.argv[1:]) + "\\n")
"""
GRACE = ["--mca", "odls_base_sigkill_timeout", "10"]


def recorded(names, command, env, what):
    """Runs `command` with `names` (srun, mpirun) recorders first on PATH;
    returns their command lines in order."""
    shim = os.path.join(args().work, "recorder-" + what)
    os.makedirs(shim, exist_ok=True)
    for name in names:
        with open(os.path.join(shim, name), "w") as f:
            f.write(RECORDER)
        os.chmod(os.path.join(shim, name), 0o755)
    log = os.path.join(shim, "launches.jsonl")
    if os.path.exists(log):
        os.remove(log)
    full = dict(os.environ)
    full.update(env)
    full.update(PATH=shim + ":" + full["PATH"], LAUNCH_LOG=log)
    p = subprocess.run(command, env=full, cwd=args().work, capture_output=True, text=True,
                       timeout=60)
    if p.returncode != 0:
        fail("%s run dry: exit %d\n%s%s" % (what, p.returncode, p.stdout, p.stderr))
    if not os.path.exists(log):
        fail("%s launched nothing" % what)
    with open(log) as f:
        return [json.loads(line) for line in f]


def has_sequence(cmd, seq):
    return any(cmd[i:i + len(seq)] == seq for i in range(len(cmd)))


def overrides(cmd):
    """The ++workload.K=V of an iomimic command line, as {K: V}."""
    out = {}
    for a in cmd:
        if a.startswith("++workload.") and "=" in a:
            key, value = a[len("++workload."):].split("=", 1)
            out[key] = value
    return out


def check_iomimic_steps(what, launches, data_root):
    """Generate, then train, with the dataset and the checkpoints under
    `data_root` (the storage under test), checkpoints beside the dataset."""
    steps = []
    for cmd in launches:
        at = next((i for i, a in enumerate(cmd) if os.path.basename(a) == "iomimic"), None)
        if at is None or at + 1 >= len(cmd):
            fail("%s: a launch without iomimic: %s" % (what, cmd))
        steps.append(cmd[at + 1])
        given = overrides(cmd[at + 2:])
        data = given.get("dataset.data_folder", "")
        ckpt = given.get("checkpoint.checkpoint_folder", "")
        if not data.startswith(data_root.rstrip("/") + "/"):
            fail("%s: data folder %r is not under %s" % (what, data, data_root))
        if not os.path.isabs(ckpt) or os.path.dirname(ckpt) != os.path.dirname(data):
            fail("%s: checkpoint folder %r is not beside the dataset %r (the storage under "
                 "test); relative, it would be the working directory's" % (what, ckpt, data))
    if steps != ["generate", "run"]:
        fail("%s: iomimic %s, not generate then run" % (what, steps))


def load_mpijob(path):
    import yaml  # Debian's python3-yaml (/usr/bin/python3)
    with open(path) as f:
        job = yaml.safe_load(f)
    if job.get("apiVersion") != "kubeflow.org/v2beta1" or job.get("kind") != "MPIJob":
        fail("%s: not a kubeflow.org/v2beta1 MPIJob" % path)
    return job


def check_mpijob(path):
    """The MPIJob's launcher script run dry (mpirun recorded): mpirun as root
    with --allow-run-as-root and the SIGKILL grace, -np = workers x slots,
    generate then run, each command line accepted by iomimic, the folders on
    the workers' volumes and the checkpoints beside the dataset; the workers
    run sshd in the foreground, on the launcher's image."""
    job = load_mpijob(path)
    spec = job["spec"]
    workers = spec["mpiReplicaSpecs"]["Worker"]
    slots = spec["slotsPerWorker"] * workers["replicas"]
    launcher = spec["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    worker = workers["template"]["spec"]["containers"][0]
    cmd = list(launcher.get("command", [])) + list(launcher.get("args", []))
    if cmd[:2] != ["/bin/bash", "-c"] or len(cmd) != 3:
        fail("%s: the launcher is not one bash script: %s" % (path, cmd[:2]))
    launches = recorded(["mpirun"], cmd, {}, "mpijob")
    for run in launches:
        if run[0] != "mpirun" or "--allow-run-as-root" not in run or not has_sequence(run, GRACE):
            fail("%s: the containers run as root: mpirun needs --allow-run-as-root, and the "
                 "SIGKILL grace %s: %s" % (path, " ".join(GRACE), run))
        np = int(run[run.index("-np") + 1])
        if np != slots:
            fail("%s: mpirun -np %d, but %d workers x %d slots" %
                 (path, np, workers["replicas"], spec["slotsPerWorker"]))
        iomimic = run[run.index("iomimic") + 1:]
        p = harness.run([args().iomimic, "config", "--plan", "--ranks", str(np)] + iomimic[1:],
                        expect_ok=False)
        if p.returncode != 0 or "warning: unknown key" in p.stderr:
            fail("%s: iomimic refuses the MPIJob's command line: %s" % (path, p.stderr))
    mounts = [m["mountPath"] for m in worker["volumeMounts"]]
    data = overrides(launches[-1])["dataset.data_folder"]
    data_root = next((m for m in mounts if data.startswith(m.rstrip("/") + "/")), None)
    if data_root is None:
        fail("%s: the data folder %s is on no volume the workers mount (%s)" % (path, data, mounts))
    check_iomimic_steps(path, launches, data_root)
    results = overrides(launches[-1]).get("output.folder", "")
    if not any(results.startswith(m.rstrip("/") + "/") for m in mounts):
        fail("%s: the results folder %r is on no volume the workers mount" % (path, results))
    sshd = list(worker.get("command", [])) + list(worker.get("args", []))
    if not sshd or sshd[0] != "/usr/sbin/sshd" or not any(a.startswith("-D") for a in sshd[1:]):
        fail("%s: the workers must run sshd in the foreground (/usr/sbin/sshd -D): %s" %
             (path, sshd))
    if worker["image"] != launcher["image"]:
        fail("%s: the launcher and the workers run different images" % path)
    return slots


def check_dockerfile(path):
    """The MPIJob's image recipe: Debian 12 (the README's quick start
    platform), the quick start's own steps (the scripts/*.sh lines of
    scripts/quickstart.sh, which the README's quick start runs) in the same
    order, an install, and sshd set up for the operator's keys."""
    with open(path) as f:
        text = f.read()
    joined = re.sub(r"\\\n", " ", text)
    runs = " ".join(l.strip()[4:] for l in joined.splitlines() if l.strip().startswith("RUN "))
    if not re.search(r"^FROM debian:(12|bookworm)\b", text, re.M):
        fail("%s: not FROM debian:12, the README's quick start platform" % path)
    with open(os.path.join(args().source, "README.md")) as f:
        readme = f.read()
    quick = readme[readme.index("## Quick start"):]
    quick = quick[:quick.index("\n## ", 3)]
    if "scripts/quickstart.sh" not in quick:
        fail("README.md's quick start no longer runs scripts/quickstart.sh: update this test")
    with open(os.path.join(args().source, "scripts", "quickstart.sh")) as f:
        steps = [l.split()[0] for l in f if l.startswith("scripts/")]
    at = 0
    for step in steps:
        found = runs.find(step, at)
        if found < 0:
            fail("%s: the quick start's step %s is missing (or out of order)" % (path, step))
        at = found + len(step)
    for needle in ("cmake --install build", "openssh-server", "openssh-client", "/run/sshd",
                   "StrictModes no", "StrictHostKeyChecking no"):
        if needle not in runs:
            fail("%s: no %r" % (path, needle))
    print("Dockerfile: Debian 12, %s, then installed; sshd ready" % ", ".join(steps))


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
    load_mpijob(example("mpijob.yaml"))
    check_dockerfile(example("Dockerfile"))
    print("scripts pass bash -n; the MPIJob parses")


def test_cluster_examples_launch_lines():
    w = args().work
    data = "/shared/iomimic/data/x"
    # slurm.sbatch, srun recorded.
    with open(example("slurm.sbatch")) as f:
        text = f.read()
    cpus = re.search(r"^#SBATCH --cpus-per-task=(\d+)$", text, re.M).group(1)
    if not re.search(r"^#SBATCH --signal=TERM@\d+$", text, re.M):
        fail("slurm.sbatch: no SIGTERM before the time limit (#SBATCH --signal=TERM@SECONDS)")
    launches = recorded(["srun"], ["bash", example("slurm.sbatch")], dict(
        SLURM_JOB_ID="7", SLURM_NTASKS="8", SLURM_NTASKS_PER_NODE="4",
        SLURM_CPUS_PER_TASK=cpus, DATA=data, IOMIMIC="iomimic"), "slurm")
    for cmd in launches:
        if "--cpus-per-task=" + cpus not in cmd or "--kill-on-bad-exit=1" not in cmd:
            fail("slurm.sbatch: srun must repeat --cpus-per-task=%s (Slurm >= 22.05 does not "
                 "pass sbatch's on) and keep --kill-on-bad-exit=1: %s" % (cpus, cmd))
    check_iomimic_steps("slurm.sbatch", launches, "/shared/iomimic/data")
    # mpirun.sh, mpirun recorded.
    launches = recorded(["mpirun"], ["bash", example("mpirun.sh"), example("hostfile")],
                        dict(DATA=data, IOMIMIC="iomimic"), "mpirun.sh")
    for cmd in launches:
        if not has_sequence(cmd, GRACE):
            fail("mpirun.sh: mpirun without the SIGKILL grace %s: %s" % (" ".join(GRACE), cmd))
    check_iomimic_steps("mpirun.sh", launches, "/shared/iomimic/data")
    # The MPIJob's launcher.
    print("MPIJob: %d ranks" % check_mpijob(example("mpijob.yaml")))
    # scripts/cluster.sh mpirun over a cluster folder (only its mpirun-args
    # file is read), the real mpirun recorded: its grace by default, the
    # caller's own value instead of it, and the environment's.
    folder = os.path.join(w, "fake-cluster")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "mpirun-args"), "w") as f:
        f.write("--hostfile\n%s/hostfile\n" % folder)
    sh = os.path.join(args().source, "scripts", "cluster.sh")
    env = {k: v for k, v in ENV.items() if k != "IOMIMIC_CLUSTER_SIGKILL_TIMEOUT"}
    default = recorded(["mpirun"], [sh, "mpirun", folder, "-np", "2", "prog"], env, "cluster")
    mine = recorded(["mpirun"], [sh, "mpirun", folder, "--mca", "odls_base_sigkill_timeout",
                                 "5", "-np", "2", "prog"], env, "cluster-own")
    envs = recorded(["mpirun"], [sh, "mpirun", folder, "-np", "2", "prog"],
                    dict(env, IOMIMIC_CLUSTER_SIGKILL_TIMEOUT="7"), "cluster-env")
    grace = lambda cmd: [cmd[i + 2] for i in range(len(cmd) - 2)
                         if cmd[i:i + 2] == ["--mca", "odls_base_sigkill_timeout"]]
    if grace(default[0]) != ["10"] or grace(mine[0]) != ["5"] or grace(envs[0]) != ["7"]:
        fail("cluster.sh mpirun: grace %s by default (10 expected), %s given 5, %s with "
             "IOMIMIC_CLUSTER_SIGKILL_TIMEOUT=7" % (grace(default[0]), grace(mine[0]),
                                                    grace(envs[0])))
    print("launch lines: srun repeats --cpus-per-task=%s; every mpirun has the grace; "
          "checkpoints beside the dataset" % cpus)


def trained_on_both(results):
    with open(os.path.join(results, "summary.json")) as f:
        s = json.load(f)
    if s.get("num_hosts") != 2 or s.get("num_accelerators") != 4:
        fail("%s: num_hosts %r, num_accelerators %r (2 and 4 expected)" %
             (results, s.get("num_hosts"), s.get("num_accelerators")))
    if s["iomimic"]["bytes_read"] <= 0:
        fail("%s: nothing read" % results)


CHECKPOINTS = ("++workload.workflow.checkpoint=True ++workload.checkpoint.checkpoint_after_epoch=1 "
               "++workload.checkpoint.epochs_between_checkpoints=1")


def checkpoints_beside_data(w, what):
    """The run's checkpoints are in DATA-checkpoints (the examples' default,
    beside the dataset), none in a checkpoints folder of the working
    directory; removes them for the next run."""
    folder = os.path.join(w, "data-checkpoints")
    written = [f for _, _, files in os.walk(folder) for f in files]
    if not written:
        fail("%s: no checkpoint in %s" % (what, folder))
    if os.path.exists(os.path.join(w, "checkpoints")):
        fail("%s: checkpoints written under the working directory" % what)
    print("%s: %d checkpoint files in %s" % (what, len(written), folder))
    shutil.rmtree(folder)


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
                   RESULTS=os.path.join(w, "slurm-results"), OVERRIDES=SHRINK + " " + CHECKPOINTS,
                   CLUSTER_SH=os.path.join(args().source, "scripts", "cluster.sh"),
                   CLUSTER_DIR=folder, SLURM_JOB_ID="42", SLURM_NTASKS="4",
                   SLURM_NTASKS_PER_NODE="2", SLURM_JOB_NUM_NODES="2", SLURM_CPUS_PER_TASK="1",
                   OMPI_MCA_rmaps_base_oversubscribe="1")
        p = subprocess.run(["bash", example("slurm.sbatch")], env=env, cwd=w,
                           capture_output=True, text=True, timeout=300)
        print(p.stdout[-2000:] + p.stderr[-2000:])
        if p.returncode != 0:
            fail("slurm.sbatch under the fake srun: exit %d" % p.returncode)
        trained_on_both(os.path.join(w, "slurm-results"))
        checkpoints_beside_data(w, "slurm.sbatch")
        env.update(RESULTS=os.path.join(w, "mpirun-results"), RANKS_PER_HOST="2",
                   MPIRUN=env["CLUSTER_SH"] + " mpirun " + folder)
        p = subprocess.run(["bash", example("mpirun.sh"), os.path.join(folder, "hostfile")],
                           env=env, cwd=w, capture_output=True, text=True, timeout=300)
        print(p.stdout[-2000:] + p.stderr[-2000:])
        if p.returncode != 0:
            fail("mpirun.sh over the cluster's hostfile: exit %d" % p.returncode)
        trained_on_both(os.path.join(w, "mpirun-results"))
        checkpoints_beside_data(w, "mpirun.sh")
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
