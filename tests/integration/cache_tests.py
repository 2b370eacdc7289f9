#!/usr/bin/python3
"""Cache honesty (issue 26, docs/cluster.md "Cache honesty"): whether a run's
reads could come from the clients' page cache rather than the storage.

- dataset_vs_host_memory: the warning that the training set fits in the
  hosts' memory fires for a small dataset, and not for one larger than the
  memory of a cgroup the run is put in (a cgroup v2 folder with memory.max,
  or a v1 memory cgroup with memory.limit_in_bytes, made and removed here;
  exit 77 where neither can be made).
- checkpoint_read_paths: checkpoint.drop_cache, a read in a later invocation
  (checkpoint-only with num_checkpoints_write 0) and "may be cached" are
  reported in summary.json and on the console; on the namespace cluster
  (scripts/cluster.sh) recovery_rank_shift reads each shard on another host.

Usage: cache_tests.py TEST --iomimic BIN --source REPO --work DIR
"""

import json
import os
import subprocess
import sys

import iomimic_tests as harness
from iomimic_tests import fail
import cluster_tests


def args():
    return harness.ARGS


def summary(out):
    with open(os.path.join(out, "summary.json")) as f:
        return json.load(f)


def quickstart(out, files, record, extra=()):
    return [args().iomimic, "run", "--config-dir", os.path.join(args().source, "workloads"),
            "workload=quickstart", "++workload.dataset.data_folder=" + out + "-data",
            "++workload.dataset.num_files_train=%d" % files,
            "++workload.dataset.num_files_eval=0",
            "++workload.dataset.record_length_bytes=%d" % record,
            "++workload.dataset.record_length_bytes_stdev=0", "++workload.reader.batch_size=2",
            "++workload.train.epochs=1", "++workload.train.computation_time=0.001",
            "++workload.workflow.evaluation=False",
            "++workload.output.folder=" + out] + list(extra)


def own_cgroup_folder():
    """A new, empty memory cgroup under this process's own and the file that
    sets its limit, or (None, None). v2 first, then v1's memory controller."""
    with open("/proc/self/cgroup") as f:
        lines = [line.strip().split(":", 2) for line in f if line.count(":") >= 2]
    name = "iomimic-cache-test-%d" % os.getpid()
    for _, controllers, path in lines:
        if controllers == "" and os.path.exists("/sys/fs/cgroup/cgroup.controllers"):
            base, limit = "/sys/fs/cgroup" + path, "memory.max"
        elif "memory" in controllers.split(","):
            base, limit = "/sys/fs/cgroup/memory" + path, "memory.limit_in_bytes"
        else:
            continue
        folder = os.path.join(base.rstrip("/"), name)
        try:
            os.mkdir(folder)
        except OSError:
            continue
        if os.path.exists(os.path.join(folder, limit)):
            return folder, limit
        os.rmdir(folder)
    return None, None


def test_dataset_vs_host_memory():
    """A 3 MiB training set fits in this machine's memory: warned, with both
    figures, on the console and in summary.json. A 192 MiB one run inside a
    cgroup limited to 160 MiB does not fit: no warning, and summary.json
    gives the cgroup's limit as the host's memory."""
    small = os.path.join(args().work, "small")
    p = harness.run(quickstart(small, 3, 1 << 20))
    check = summary(small)["iomimic"]["cache_check"]
    if not check["fits_in_memory"] or not check["warning"]:
        fail("a 3 MiB dataset was not found to fit in memory: %s" % check)
    line = [l for l in p.stderr.splitlines() if "fits in the memory" in l]
    if not line or "(3.0 MiB)" not in line[0] or "GiB together" not in line[0]:
        fail("no console warning naming the dataset and the memory: %r" % p.stderr[-2000:])
    if abs(check["dataset_GB"] - 3 / 1024) > 1e-6:
        fail("dataset_GB %r, expected 3 MiB" % check["dataset_GB"])

    if os.geteuid() != 0:
        print("SKIP: a memory cgroup needs root")
        sys.exit(77)
    folder, limit_file = own_cgroup_folder()
    if folder is None:
        print("SKIP: no memory cgroup can be made here")
        sys.exit(77)
    limit = 160 << 20
    large = os.path.join(args().work, "large")
    # Generated outside the cgroup: under cgroup v1 a tight memory limit can
    # OOM-kill a writer whose dirty pages outrun writeback (seen in CI on a
    # slow disk); the run in the cgroup only reads, and clean page cache is
    # reclaimed, never a reason to kill.
    harness.run(quickstart(large + "-gen", 48, 4 << 20,
                           ["++workload.dataset.data_folder=" + large + "-data",
                            "++workload.workflow.train=False"]))
    try:
        with open(os.path.join(folder, limit_file), "w") as f:
            f.write(str(limit))
        procs = os.path.join(folder, "cgroup.procs")
        # The shell joins the cgroup, then becomes iomimic.
        cmd = ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', procs] + \
            quickstart(large, 48, 4 << 20, ["++workload.workflow.generate_data=False"])
        p = harness.run(cmd)
    finally:
        os.rmdir(folder)
    check = summary(large)["iomimic"]["cache_check"]
    if check["fits_in_memory"] or check["warning"] is not None:
        fail("a 192 MiB dataset under a 160 MiB cgroup was found to fit: %s" % check)
    if abs(check["hosts_memory_GB"] * (1 << 30) - limit) > 1:
        fail("hosts_memory_GB %r is not the cgroup's limit (160 MiB)" % check["hosts_memory_GB"])
    if "fits in the memory" in p.stderr:
        fail("warned although the dataset is larger than the cgroup's memory")
    print("small: %s\nlarge: %s" % (line[0], check))


def checkpoint(folder, out, writes, reads, extra=()):
    """A tiny llama_8b_zero3 checkpoint-only run (writes, then reads)."""
    return [args().iomimic, "run", "--config-dir", os.path.join(args().source, "workloads"),
            "workload=llama_8b_zero3", "++workload.checkpoint.checkpoint_folder=" + folder,
            "++workload.model.num_layers=2", "++workload.model.transformer.hidden_size=256",
            "++workload.model.transformer.ffn_hidden_size=512",
            "++workload.model.transformer.vocab_size=1000",
            "++workload.checkpoint.time_between_checkpoints=0.01",
            "++workload.checkpoint.num_checkpoints_write=%d" % writes,
            "++workload.checkpoint.num_checkpoints_read=%d" % reads,
            "++workload.output.folder=" + out] + list(extra)


def check_read_path(out, text, want):
    got = summary(out)["iomimic"]["checkpoint"].get("read_path")
    if got != want:
        fail("%s: read_path %r, expected %r" % (out, got, want))
    if "checkpoint reads: " + want not in text:
        fail("%s: the console does not say 'checkpoint reads: %s'" % (out, want))


def test_checkpoint_read_paths():
    """Written and read in one invocation: "may be cached". Read in a later
    invocation with checkpoint.drop_cache: "page cache dropped, later
    invocation". On 2 namespace hosts x 2 ranks with recovery_rank_shift, a
    later invocation reads every shard on the other host: "other host, later
    invocation"."""
    w = args().work
    ck = os.path.join(w, "ck")
    p = harness.run(checkpoint(ck, os.path.join(w, "same"), 1, 1))
    check_read_path(os.path.join(w, "same"), p.stdout + p.stderr, "may be cached")
    p = harness.run(checkpoint(ck, os.path.join(w, "later"), 0, 1,
                               ["++workload.checkpoint.drop_cache=True"]))
    check_read_path(os.path.join(w, "later"), p.stdout + p.stderr,
                    "page cache dropped, later invocation")
    if summary(os.path.join(w, "later"))["iomimic"]["bytes_read"] <= 0:
        fail("the later invocation read nothing")

    cluster_tests.ENV.update(IOMIMIC_CLUSTER_NAME="iomc", IOMIMIC_CLUSTER_NET="10.231.79")
    folder = cluster_tests.start(2)
    try:
        shared = os.path.join(w, "shared-ck")
        hosts = ["mpirun", folder, "-np", "4", "--host", "h1:2,h2:2", "--oversubscribe"]
        cluster_tests.cluster(*(hosts + checkpoint(shared, os.path.join(w, "cw"), 1, 0)),
                              timeout=300)
        out = os.path.join(w, "cr")
        p = cluster_tests.cluster(*(hosts + checkpoint(
            shared, out, 0, 1, ["++workload.checkpoint.recovery_rank_shift=True"])), timeout=300)
        print(p.stdout[-2000:] + p.stderr[-2000:])
        check_read_path(out, p.stdout + p.stderr, "other host, later invocation")
        # Without the shift each rank reads its own shard on its own host.
        out = os.path.join(w, "cn")
        p = cluster_tests.cluster(*(hosts + checkpoint(shared, out, 0, 1)), timeout=300)
        check_read_path(out, p.stdout + p.stderr, "later invocation")
    finally:
        cluster_tests.cluster("stop", folder, check=False)


if __name__ == "__main__":
    harness.main(globals())
