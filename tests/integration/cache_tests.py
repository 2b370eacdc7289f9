#!/usr/bin/python3
"""Cache honesty (issues 26 and 31, docs/cluster.md "Cache honesty"): whether
a run's reads could come from the clients' page cache rather than the
storage.

- dataset_vs_host_memory: the warning that the training set fits in the
  hosts' memory fires for a small dataset, with the bytes its files occupy on
  storage and the share of them cached at start; a 192 MiB one run inside a
  cgroup limited to 160 MiB (a cgroup v2 folder with memory.max, or a v1
  memory cgroup with memory.limit_in_bytes, made and removed here; exit 77
  where neither can be made) is warned about while its pages, cached outside
  the cgroup, are still in the page cache, and not once they are dropped.
- dataset_bytes_on_storage: dlrm's parquet files (64 MiB nominal, 242.6 MiB
  of files) under a 160 MiB cgroup: no "fits in memory" warning.
- checkpoint_read_paths: checkpoint reads are labelled from the share of
  their bytes in the page cache right before the read (warm when written or
  read before, cold after checkpoint.drop_cache or a drop between the
  invocations), with what was meant to keep them cold (page cache dropped,
  later invocation, other host) as context; on the namespace cluster
  (scripts/cluster.sh) recovery_rank_shift reads each shard on another host
  (the same kernel: still warm).

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


def files_under(folder):
    """The data files under `folder`: not the hidden completeness records
    (.<name>.iomimic-complete, docs/security.md)."""
    return [os.path.join(root, name) for root, _, names in os.walk(folder) for name in names
            if not name.startswith(".")]


def drop_page_cache(folder):
    """Writes back and drops every file under `folder` from the page cache
    (fadvise DONTNEED after fsync, as vmtouch -e does)."""
    for path in files_under(folder):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def in_cgroup(limit, cmd):
    """Runs `cmd` in a new memory cgroup limited to `limit` bytes (exit 77
    where none can be made)."""
    if os.geteuid() != 0:
        print("SKIP: a memory cgroup needs root")
        sys.exit(77)
    folder, limit_file = own_cgroup_folder()
    if folder is None:
        print("SKIP: no memory cgroup can be made here")
        sys.exit(77)
    try:
        with open(os.path.join(folder, limit_file), "w") as f:
            f.write(str(limit))
        procs = os.path.join(folder, "cgroup.procs")
        # The shell joins the cgroup, then becomes iomimic.
        return harness.run(["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', procs] + cmd)
    finally:
        os.rmdir(folder)


def test_dataset_vs_host_memory():
    """A 3 MiB training set fits in this machine's memory and, just
    generated, is in its page cache: warned, with the figures, on the
    console and in summary.json, whose dataset_GB is the files' size on
    storage. A 192 MiB one run inside a cgroup limited to 160 MiB does not
    fit, but its pages, cached by the generation outside the cgroup, are
    read from memory all the same: warned. Dropped from the page cache: no
    warning, and summary.json gives the cgroup's limit as the host's
    memory."""
    small = os.path.join(args().work, "small")
    p = harness.run(quickstart(small, 3, 1 << 20))
    check = summary(small)["iomimic"]["cache_check"]
    if not check["fits_in_memory"] or not check["warning"]:
        fail("a 3 MiB dataset was not found to fit in memory: %s" % check)
    line = [l for l in p.stderr.splitlines() if "fits in the memory" in l]
    if not line or "GiB together" not in line[0] or "3.0 MiB" not in line[0]:
        fail("no console warning naming the dataset and the memory: %r" % p.stderr[-2000:])
    on_storage = sum(os.path.getsize(f) for f in files_under(small + "-data/train"))
    if on_storage <= 3 << 20 or abs(check["dataset_GB"] * (1 << 30) - on_storage) > 1:
        fail("dataset_GB %r is not the files' %d bytes" % (check["dataset_GB"], on_storage))
    if abs(check["nominal_GB"] - 3 / 1024) > 1e-9 or check["files_measured"] != 3:
        fail("nominal_GB %r (3 MiB), files_measured %r (3)" %
             (check["nominal_GB"], check["files_measured"]))
    if (check["resident_fraction"] or 0) < 0.5 or "was in the page cache" not in line[0]:
        fail("the files just generated were not found in the page cache: %s" % check)

    limit = 160 << 20
    large = os.path.join(args().work, "large")
    # Generated outside the cgroup: under cgroup v1 a tight memory limit can
    # OOM-kill a writer whose dirty pages outrun writeback (seen in CI on a
    # slow disk); the run in the cgroup only reads, and clean page cache is
    # reclaimed, never a reason to kill.
    harness.run(quickstart(large + "-gen", 48, 4 << 20,
                           ["++workload.dataset.data_folder=" + large + "-data",
                            "++workload.workflow.train=False"]))
    def train(out):
        return quickstart(out, 48, 4 << 20, ["++workload.dataset.data_folder=" + large + "-data",
                                             "++workload.workflow.generate_data=False"])
    p = in_cgroup(limit, train(large + "-cached"))
    check = summary(large + "-cached")["iomimic"]["cache_check"]
    if check["fits_in_memory"] or "was in the page cache when training started" not in (
            check["warning"] or "") or "was in the page cache" not in p.stderr:
        fail("192 MiB cached outside a 160 MiB cgroup was not warned about: %s" % check)
    warm = check
    drop_page_cache(large + "-data")
    p = in_cgroup(limit, train(large))
    check = summary(large)["iomimic"]["cache_check"]
    if check["fits_in_memory"] or check["warning"] is not None:
        fail("a 192 MiB dataset under a 160 MiB cgroup was found to fit: %s" % check)
    if check["resident_fraction"] is None or check["resident_fraction"] >= 0.01:
        fail("the dropped dataset was found in the page cache: %s" % check)
    if abs(check["hosts_memory_GB"] * (1 << 30) - limit) > 1:
        fail("hosts_memory_GB %r is not the cgroup's limit (160 MiB)" % check["hosts_memory_GB"])
    if "fits in the memory" in p.stderr or "was in the page cache" in p.stderr:
        fail("warned although the dataset is larger than the cgroup's memory and not cached")
    print("small: %s\nlarge, cached: %s\nlarge, dropped: %s" % (line[0], warm, check))


def test_dataset_bytes_on_storage():
    """dlrm's parquet files hold 3.8 times their nominal bytes (64 MiB
    nominal, 242.6 MiB of files): under a 160 MiB cgroup the files do not
    fit, and no "fits in memory" warning comes from the nominal size."""
    data = os.path.join(args().work, "parquet-data")
    out = os.path.join(args().work, "parquet")
    cmd = [args().iomimic, "run", "--config-dir", os.path.join(args().source, "workloads"),
           "workload=dlrm_parquet_h100", "++workload.dataset.data_folder=" + data,
           "++workload.dataset.num_files_train=32",
           "++workload.dataset.num_samples_per_file=4096", "++workload.reader.batch_size=4096",
           "++workload.reader.read_threads=1", "++workload.train.computation_time=0",
           "++workload.output.folder=" + out]
    harness.run(cmd + ["++workload.workflow.generate_data=True", "++workload.workflow.train=False"])
    drop_page_cache(data)
    p = in_cgroup(160 << 20, cmd)
    check = summary(out)["iomimic"]["cache_check"]
    if check["fits_in_memory"] or check["warning"] is not None or "fits in the memory" in p.stderr:
        fail("242.6 MiB of files under 160 MiB were found to fit: %s" % check)
    on_storage = sum(os.path.getsize(f) for f in files_under(data + "/train"))
    if abs(check["nominal_GB"] * 1024 - 64) > 1e-9 or on_storage < 200 << 20:
        fail("expected 64 MiB nominal in over 200 MiB of files: %s, %d bytes" %
             (check, on_storage))
    if abs(check["dataset_GB"] * (1 << 30) - on_storage) > 1:
        fail("dataset_GB %r is not the files' %d bytes" % (check["dataset_GB"], on_storage))
    print("parquet under 160 MiB: %s" % check)


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


def check_read_path(out, text, want, fraction=None):
    ck = summary(out)["iomimic"]["checkpoint"]
    got = ck.get("read_path")
    if got != want:
        fail("%s: read_path %r, expected %r" % (out, got, want))
    if "checkpoint reads: " + want not in text:
        fail("%s: the console does not say 'checkpoint reads: %s'" % (out, want))
    load = ck["loads"][0]
    if fraction is not None and load.get("resident_fraction") != fraction:
        fail("%s: the load's resident_fraction %r, expected %r" %
             (out, load.get("resident_fraction"), fraction))
    if fraction == 1.0 and load.get("resident_bytes") != load["bytes"]:
        fail("%s: resident_bytes %r of %r" % (out, load.get("resident_bytes"), load["bytes"]))


WARM = "warm: 100.0% of the bytes were in the page cache"
COLD = "cold: 0.0% of the bytes were in the page cache"


def test_checkpoint_read_paths():
    """Written and read in one invocation: warm. Read in a later invocation
    with checkpoint.drop_cache: cold (page cache dropped, later invocation).
    Read again in a later invocation without it, on the host whose page
    cache holds it: warm, never cold (later invocation). Dropped between the
    invocations: cold (later invocation). On 2 namespace hosts x 2 ranks
    with recovery_rank_shift, a later invocation reads every shard on the
    other host, whose kernel is the same: warm (other host, later
    invocation)."""
    w = args().work
    ck = os.path.join(w, "ck")
    p = harness.run(checkpoint(ck, os.path.join(w, "same"), 1, 1))
    check_read_path(os.path.join(w, "same"), p.stdout + p.stderr, WARM, 1.0)
    p = harness.run(checkpoint(ck, os.path.join(w, "later"), 0, 1,
                               ["++workload.checkpoint.drop_cache=True"]))
    check_read_path(os.path.join(w, "later"), p.stdout + p.stderr,
                    COLD + " (page cache dropped, later invocation)", 0.0)
    if summary(os.path.join(w, "later"))["iomimic"]["bytes_read"] <= 0:
        fail("the later invocation read nothing")
    p = harness.run(checkpoint(ck, os.path.join(w, "warm"), 0, 1))
    check_read_path(os.path.join(w, "warm"), p.stdout + p.stderr,
                    WARM + " (later invocation)", 1.0)
    drop_page_cache(ck)
    p = harness.run(checkpoint(ck, os.path.join(w, "dropped"), 0, 1))
    check_read_path(os.path.join(w, "dropped"), p.stdout + p.stderr,
                    COLD + " (later invocation)", 0.0)

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
        check_read_path(out, p.stdout + p.stderr, WARM + " (other host, later invocation)", 1.0)
        # Without the shift each rank reads its own shard on its own host.
        out = os.path.join(w, "cn")
        p = cluster_tests.cluster(*(hosts + checkpoint(shared, out, 0, 1)), timeout=300)
        check_read_path(out, p.stdout + p.stderr, WARM + " (later invocation)", 1.0)
    finally:
        cluster_tests.cluster("stop", folder, check=False)


if __name__ == "__main__":
    harness.main(globals())
