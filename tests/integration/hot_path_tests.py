#!/usr/bin/python3
"""End-to-end checks of the hot path's properties, run by ctest: what the
client costs, counted rather than timed (docs/performance.md).

Usage: hot_path_tests.py <test-name> --iomimic BIN --source DIR --work DIR

Every check counts something (page faults, samples, recorded compute) so it
holds on a loaded machine; speed itself is shown by the benchmarks in bench/.
"""

import collections
import json
import os

import iomimic_tests as harness
from iomimic_tests import fail, mpirun, run


def args():
    return harness.ARGS


def base(data, out, files, epochs, compute, extra=()):
    return [
        "workload=quickstart",
        "++workload.workflow.generate_data=True",
        "++workload.workflow.evaluation=False",
        "++workload.dataset.data_folder=" + data,
        "++workload.dataset.num_files_train=%d" % files,
        "++workload.dataset.num_files_eval=0",
        "++workload.dataset.num_samples_per_file=1",
        "++workload.train.epochs=%d" % epochs,
        "++workload.train.computation_time=%s" % compute,
        "++workload.output.folder=" + out,
    ] + list(extra)


def summary(out):
    with open(os.path.join(out, "summary.json")) as f:
        return json.load(f)


def test_no_page_faults_after_first_epoch():
    """Buffers are made once: after the first epoch an epoch faults in
    (almost) no new memory. Samples of 40 MiB are above the largest size
    glibc's malloc ever keeps for reuse (32 MiB), so without the loader's
    buffer pools every sample would map, fault in and unmap its buffers
    again: one epoch reads 6 x 40 MiB = 61,440 pages."""
    data = os.path.join(args().work, "data")
    sample = 40 * 1024 * 1024
    pages_per_epoch = 6 * sample // 4096
    for decode in ("True", "False"):
        for threads in (0, 2):
            out = os.path.join(args().work, "out_%s_%d" % (decode, threads))
            run([args().iomimic, "run"] + base(data, out, 6, 3, 0, [
                "++workload.dataset.record_length_bytes=%d" % sample,
                "++workload.dataset.record_length_bytes_stdev=0",
                "++workload.dataset.record_length_bytes_resize=4096",
                "++workload.reader.batch_size=1",
                "++workload.reader.prefetch_size=2",
                "++workload.reader.read_threads=%d" % threads,
                "++workload.reader.decode=" + decode,
            ]))
            faults = summary(out)["iomimic"]["minor_page_faults_per_epoch"]
            if len(faults) != 3:
                fail("expected 3 epochs of page-fault counts, got %r" % faults)
            bound = pages_per_epoch // 20  # 5% of one epoch's pages
            for epoch, n in enumerate(faults[1:], start=2):
                if n > bound:
                    fail("decode=%s threads=%d: epoch %d faulted %d pages (bound %d; an epoch "
                         "reads %d pages): buffers are not reused" %
                         (decode, threads, epoch, n, bound, pages_per_epoch))
            print("decode=%s threads=%d faults per epoch %r" % (decode, threads, faults))


def test_au_counts_requested_compute():
    """AU counts the compute that was asked for: every step's recorded compute
    is the drawn duration (constant here), and the sleep's overshoot is
    reported apart, never negative."""
    data = os.path.join(args().work, "data")
    out = os.path.join(args().work, "out")
    run([args().iomimic, "run"] + base(data, out, 64, 2, 0.003, [
        "++workload.dataset.format=synthetic",
        "++workload.reader.batch_size=4",
        "++workload.reader.read_threads=1",
    ]))
    with open(os.path.join(out, "0_output.json")) as f:
        output = json.load(f)
    steps = 0
    for epoch in ("1", "2"):
        for block, values in output[epoch]["compute"].items():
            for v in values:
                steps += 1
                if v != 0.003:
                    fail("epoch %s %s: recorded compute %r, asked for 0.003" % (epoch, block, v))
    if steps != 2 * 16:
        fail("expected 32 steps of compute, found %d" % steps)
    io = summary(out)["iomimic"]
    if abs(io["compute_requested_seconds"] - 32 * 0.003) > 1e-9:
        fail("compute_requested_seconds %r, expected 0.096" % io["compute_requested_seconds"])
    if io["compute_measured_seconds"] < io["compute_requested_seconds"]:
        fail("measured compute %r below requested %r" %
             (io["compute_measured_seconds"], io["compute_requested_seconds"]))
    if io["compute_overshoot_seconds"] < 0:
        fail("negative overshoot %r" % io["compute_overshoot_seconds"])
    # AU cannot exceed what was asked for divided by the wall time.
    for au in summary(out)["metric"]["train_au_percentage"]:
        if not 0 < au <= 100:
            fail("AU %r out of range" % au)


def sample_logs(out, accelerators):
    logs = {}
    for a in range(accelerators):
        path = os.path.join(out, "%d_samples.csv" % a)
        if not os.path.exists(path):
            fail("missing sample log %s" % path)
        with open(path) as f:
            logs[a] = f.read()
    extra = os.path.join(out, "%d_samples.csv" % accelerators)
    if os.path.exists(extra):
        fail("unexpected sample log %s" % extra)
    return logs


def test_threads_and_ranks_read_the_same_samples():
    """The accelerator, not the process, is the unit of the plan: 4
    accelerators as threads of one process, as 4 ranks, and as 2 ranks x 2
    threads read exactly the same samples in the same order, each, every
    epoch (evaluation included), and the results count 4 accelerators."""
    data = os.path.join(args().work, "data")
    common = base(data, "unused", 48, 2, 0.001, [
        "++workload.dataset.record_length_bytes=65536",
        "++workload.dataset.record_length_bytes_stdev=0",
        "++workload.dataset.num_files_eval=16",
        "++workload.workflow.evaluation=True",
        "++workload.reader.batch_size=2",
        "++workload.reader.batch_size_eval=2",
        "++workload.reader.read_threads=2",
        "++workload.iomimic.sample_log=True",
    ])
    common = [o for o in common if not o.startswith("++workload.output.folder=")]
    runs = {}
    for ranks, threads in ((1, 4), (4, 1), (2, 2)):
        out = os.path.join(args().work, "out_%dx%d" % (ranks, threads))
        cmd = [args().iomimic, "run"] + common + [
            "++workload.output.folder=" + out,
            "++workload.iomimic.accelerators_per_process=%d" % threads]
        if ranks == 1:
            # The command-line flag sets the same key.
            run([args().iomimic, "run", "--accelerators", str(threads)] + common +
                ["++workload.output.folder=" + out])
        else:
            mpirun(ranks, cmd)
        s = summary(out)
        if s["num_accelerators"] != 4:
            fail("%d x %d: num_accelerators %r, expected 4" % (ranks, threads,
                                                                s["num_accelerators"]))
        for a in range(4):
            for name in ("%d_output.json" % a, "%d_per_epoch_stats.json" % a):
                if not os.path.exists(os.path.join(out, name)):
                    fail("%d x %d: missing %s" % (ranks, threads, name))
        runs[(ranks, threads)] = sample_logs(out, 4)
    reference = runs[(4, 1)]
    rows = reference[0].count("\n") - 1
    # 48 train + 16 eval samples over 4 accelerators, 2 epochs.
    if rows != (48 + 16) // 4 * 2:
        fail("accelerator 0 read %d samples, expected %d" % (rows, (48 + 16) // 4 * 2))
    seen = collections.Counter()
    for a in range(4):
        for line in reference[a].splitlines()[1:]:
            epoch, phase, step, file_index, sample = line.split(",")
            seen[(epoch, phase, file_index)] += 1
    if any(n != 1 for n in seen.values()) or len(seen) != (48 + 16) * 2:
        fail("the 4 ranks did not read every file exactly once per epoch")
    for key in ((1, 4), (2, 2)):
        for a in range(4):
            if runs[key][a] != reference[a]:
                fail("%d ranks x %d accelerators: accelerator %d read other samples than "
                     "rank %d of 4 ranks" % (key[0], key[1], a, a))


if __name__ == "__main__":
    harness.main(globals())
