#!/usr/bin/python3
"""Checkpoint layouts beside DLIO's (docs/checkpoints.md): PyTorch DCP files
and their .metadata, async_save's stall against its background write, a
restore resharded to another rank count, Hugging Face's sharded
safetensors read back by a reader written from the spec.

Usage: checkpoint_layout_tests.py <test-name> --iomimic BIN --source DIR --work DIR

torch is not installed here, so the DCP files are checked against the
layout read from PyTorch's FileSystemWriter (docs/checkpoints.md, "dcp"),
by dcp_layout_check below, rather than by torch's FileSystemReader.
"""

import json
import os
import re

import iomimic_tests as harness
import safetensors_check
from iomimic_tests import LLAMA_SHRINK, fail, load_strict_json, mpirun, run, workload

DCP = ["++workload.checkpoint.layout=dcp"]
LAST_OUTPUT = ""


def args():
    return harness.ARGS


def planned_rank_bytes(overrides, ranks):
    """{rank: bytes} of the DLIO plan (`iomimic config --plan`)."""
    p = run([args().iomimic, "config", "--plan", "--ranks", str(ranks),
             workload("llama_8b_zero3")] + LLAMA_SHRINK + overrides)
    per_rank = {}
    for m in re.finditer(r"^  rank (\d+)\s+(\S+)\s+(\d+) bytes", p.stdout, re.M):
        per_rank[int(m.group(1))] = per_rank.get(int(m.group(1)), 0) + int(m.group(3))
    if not per_rank:
        fail("the plan lists no checkpoint files")
    return per_rank


def run_llama(tag, ranks, extra):
    """The shrunk llama_8b_zero3 checkpoint-only job under mpirun -np `ranks`:
    (checkpoint folder, summary.json); the console's text in LAST_OUTPUT."""
    global LAST_OUTPUT
    ck = os.path.join(args().work, tag, "ckpt")
    out = os.path.join(args().work, tag, "out")
    p = mpirun(ranks, [args().iomimic, "run", workload("llama_8b_zero3")] + LLAMA_SHRINK +
           ["++workload.checkpoint.checkpoint_folder=" + ck,
            "++workload.output.folder=" + out] + extra)
    LAST_OUTPUT = (p.stdout or "") + (p.stderr or "")
    return ck, load_strict_json(os.path.join(out, "summary.json"))


def dcp_layout_check(folder):
    """The byte layout of a DCP checkpoint folder, as FileSystemWriter lays it
    out: `__<rank>_<n>.distcp` files holding items back to back from offset 0
    (raw bytes here; torch.save containers in torch), `.metadata` mapping
    every item's chunks to (relative_path, offset, length). iomimic's
    .metadata is JSON with the content of DCP's pickled Metadata. Checks
    that the storage entries tile every file exactly, that every global
    item's chunks tile [0, its bytes) exactly, and that every file is
    listed. Returns {file: bytes}."""
    meta_path = os.path.join(folder, ".metadata")
    with open(meta_path) as f:
        meta = json.load(f)
    if meta.get("format") != "iomimic-dcp-1":
        fail("%s: unknown format %r" % (meta_path, meta.get("format")))
    names = [n for n in os.listdir(folder) if n != ".metadata"]
    for n in names:
        if not re.fullmatch(r"__\d+_\d+\.distcp", n):
            fail("%s: unexpected file %s" % (folder, n))
    per_file, per_item = {}, {}
    for s in meta["storage_data"]:
        per_file.setdefault(s["relative_path"], []).append((s["offset"], s["length"]))
        per_item.setdefault(s["item"], []).append((s["item_offset"], s["length"]))
    sizes = {n: os.path.getsize(os.path.join(folder, n)) for n in names}
    for n, size in sizes.items():
        at = 0
        for offset, length in sorted(per_file.get(n, [])):
            if offset != at:
                fail("%s: a chunk starts at %d, the previous ends at %d" % (n, offset, at))
            at += length
        if at != size:
            fail("%s: .metadata places %d bytes in a file of %d" % (n, at, size))
    if set(per_file) - set(sizes):
        fail(".metadata names missing files: %s" % sorted(set(per_file) - set(sizes)))
    for item, info in meta["state_dict_metadata"].items():
        at = 0
        for offset, length in sorted(per_item.get(item, [])):
            if offset != at:
                fail("item %s: chunk at %d, the previous ends at %d" % (item, offset, at))
            at += length
        if at != info["bytes"]:
            fail("item %s: chunks hold %d of %d bytes" % (item, at, info["bytes"]))
    return sizes


def test_dcp_checkpoint_files():
    """layout dcp on 2 and 4 ranks, 3 writer threads: __<rank>_<n>.distcp per
    rank and thread, sizes adding up to each rank's DLIO share, .metadata
    written last, the byte layout as DCP's."""
    threads = 3
    for ranks in (2, 4):
        extra = DCP + ["++workload.checkpoint.thread_count=%d" % threads]
        planned = planned_rank_bytes(extra, ranks)
        ck, s = run_llama("dcp%d" % ranks, ranks, extra)
        for step in ("global_epoch1_step1", "global_epoch1_step2"):
            d = os.path.join(ck, step)
            sizes = dcp_layout_check(d)
            want = {"__%d_%d.distcp" % (r, n) for r in range(ranks) for n in range(threads)}
            if set(sizes) != want:
                fail("%s holds %s, expected %s" % (d, sorted(sizes), sorted(want)))
            for r in range(ranks):
                got = sum(sizes["__%d_%d.distcp" % (r, n)] for n in range(threads))
                if got != planned[r]:
                    fail("rank %d wrote %d bytes, its DLIO share is %d" % (r, got, planned[r]))
            last = max(os.stat(os.path.join(d, n)).st_mtime_ns for n in sizes)
            if os.stat(os.path.join(d, ".metadata")).st_mtime_ns < last:
                fail(d + ": .metadata is older than a .distcp file")
            if any(n.endswith(".tmp") for n in os.listdir(d)):
                fail(d + ": a temporary file stayed")
        c = s["iomimic"]["checkpoint"]
        if c["layout"] != "dcp" or c["thread_count"] != threads:
            fail("summary.json does not name the layout: %r" % {k: c.get(k) for k in
                                                               ("layout", "thread_count")})
        if c["size_bytes"] != sum(planned.values()):
            fail("size_bytes %d, planned %d" % (c["size_bytes"], sum(planned.values())))
        # The llama manifest sets fsync (DCP's sync_files): every data file
        # and the .metadata, per checkpoint.
        if c["fsync_calls"] != 2 * (ranks * threads + 1):
            fail("expected %d fsync calls, counted %d" % (2 * (ranks * threads + 1),
                                                          c["fsync_calls"]))
        for load in c["loads"]:
            if load["bytes"] != c["size_bytes"]:
                fail("a load read %d bytes of %d" % (load["bytes"], c["size_bytes"]))


def test_dcp_async_stall_and_write():
    """checkpoint.async through a storage slowed to 100 MB/s per rank: the
    stall (staging) is reported apart from the background write, is shorter,
    the second save waits for the first's write, and the files are whole."""
    ck, s = run_llama("async", 2, DCP + [
        "++workload.checkpoint.async=True", "++workload.checkpoint.thread_count=2",
        "++workload.checkpoint.backend=latency",
        "++workload.checkpoint.options.inner=posix",
        "++workload.checkpoint.options.bandwidth=100M"])
    c = s["iomimic"]["checkpoint"]
    saves = c.get("async_saves")
    if not saves or len(saves) != 2:
        fail("expected 2 async saves in summary.json, got %r" % saves)
    for a in saves:
        for k in ("stall_seconds", "wait_seconds", "staging_seconds",
                  "background_write_seconds", "background_write_GiB_per_second"):
            harness.check_type("async_saves." + k, a[k], float)
        if a["bytes"] != c["size_bytes"]:
            fail("an async save staged %d bytes of %d" % (a["bytes"], c["size_bytes"]))
        # Each figure is the slowest rank's: the stall is at most the sum of
        # the slowest wait and the slowest staging, and at least either.
        if not (max(a["wait_seconds"], a["staging_seconds"]) - 1e-6 <= a["stall_seconds"] <=
                a["wait_seconds"] + a["staging_seconds"] + 1e-6):
            fail("stall is not wait + staging: %r" % a)
        if not a["staging_seconds"] < a["background_write_seconds"]:
            fail("staging (%.4f s) should be shorter than the slow write (%.4f s)" %
                 (a["staging_seconds"], a["background_write_seconds"]))
    # Back to back (time_between_checkpoints 0): the second save waited for
    # most of the first's write before staging.
    if saves[1]["wait_seconds"] < 0.5 * saves[0]["background_write_seconds"]:
        fail("the second save did not wait for the first write: %r" % saves)
    for step in ("global_epoch1_step1", "global_epoch1_step2"):
        dcp_layout_check(os.path.join(ck, step))
    if "checkpoint async: training stalled" not in LAST_OUTPUT:
        fail("the console summary has no async line:\n" + LAST_OUTPUT)


def test_dcp_async_during_training():
    """checkpoint.async inside training (bert_v100 under mpirun -np 2, a save
    every 5 steps): every save's files and .metadata are whole once the run
    ends, and summary.json lists each save's stall and write."""
    data, out = os.path.join(args().work, "data"), os.path.join(args().work, "out")
    ck = os.path.join(args().work, "ckpt")
    ov = harness.bert_step_checkpoint_overrides(
        data, out, ck, DCP + ["++workload.checkpoint.async=True"])
    mpirun(2, [args().iomimic, "run", workload("bert_v100")] + ov)
    steps = sorted(os.listdir(ck))
    if len(steps) != 4:
        fail("expected 4 checkpoints, found %s" % steps)
    for step in steps:
        # A plain model is one tensor on rank 0: one item, one file.
        if dcp_layout_check(os.path.join(ck, step)) != {"__0_0.distcp": 1048576}:
            fail(step + ": unexpected files")
    c = load_strict_json(os.path.join(out, "summary.json"))["iomimic"]["checkpoint"]
    if [a["index"] for a in c.get("async_saves", [])] != [1, 2, 3, 4]:
        fail("expected 4 async saves, got %r" % c.get("async_saves"))


def test_dcp_reshard_restore():
    """Written by 4 ranks, read back as 2 and as 8 readers
    (checkpoint.restore_world_size): the loads read every byte once in total."""
    for readers in (2, 8):
        ck, s = run_llama("reshard%d" % readers, 4, DCP + [
            "++workload.checkpoint.thread_count=2",
            "++workload.checkpoint.restore_world_size=%d" % readers,
            "++workload.checkpoint.num_checkpoints_write=1",
            "++workload.checkpoint.num_checkpoints_read=1"])
        c = s["iomimic"]["checkpoint"]
        if c["restore_world_size"] != readers:
            fail("restore_world_size %r, expected %d" % (c["restore_world_size"], readers))
        total = sum(dcp_layout_check(os.path.join(ck, "global_epoch1_step1")).values())
        if total != c["size_bytes"]:
            fail("files hold %d bytes, size_bytes says %d" % (total, c["size_bytes"]))
        if len(c["loads"]) != 1 or c["loads"][0]["bytes"] != total:
            fail("%d readers read %r bytes of %d" % (readers, [l["bytes"] for l in c["loads"]],
                                                     total))


def test_safetensors_checkpoint_files():
    """layout safetensors, tensor parallelism 2 on 2 ranks (data-parallel group
    0 is both): model-0000i-of-0000n.safetensors and the index, each file
    valid by the spec's reader, the index mapping every tensor."""
    ck, s = run_llama("safetensors", 2, [
        "++workload.checkpoint.layout=safetensors",
        "++workload.checkpoint.max_shard_bytes=2000000",
        "++workload.model.parallelism.tensor=2"])
    d = os.path.join(ck, "global_epoch1_step1")
    names = sorted(os.listdir(d))
    shards = [n for n in names if n.endswith(".safetensors")]
    if not shards or names != sorted(shards + ["model.safetensors.index.json"]):
        fail("%s holds %s" % (d, names))
    count = len(shards)
    for i, n in enumerate(shards):
        if n != "model-%05d-of-%05d.safetensors" % (i + 1, count):
            fail("unexpected shard name " + n)
    tensors, total, files = {}, 0, 0
    for n in shards:
        t = safetensors_check.check_file(os.path.join(d, n))
        for name, (_, _, begin, end) in t.items():
            tensors[name] = n
            total += end - begin
        files += os.path.getsize(os.path.join(d, n))
    with open(os.path.join(d, "model.safetensors.index.json")) as f:
        index = json.load(f)
    if index["weight_map"] != tensors or index["metadata"]["total_size"] != total:
        fail("the index does not map the shards' tensors")
    if "lm_head.weight" not in tensors or "model.embed_tokens.weight" not in tensors:
        fail("Llama's tensors are missing")
    c = s["iomimic"]["checkpoint"]
    if c["layout"] != "safetensors" or c["size_bytes"] != files:
        fail("summary.json: layout %r, size_bytes %r, files %d" % (c["layout"],
                                                                  c["size_bytes"], files))
    if any(l["bytes"] != files for l in c["loads"]):
        fail("loads read %r bytes of %d" % ([l["bytes"] for l in c["loads"]], files))


def test_layout_keys_refused_elsewhere():
    """checkpoint.async on the DLIO layout is one clear error naming the keys."""
    p = run([args().iomimic, "run", workload("llama_8b_zero3")] + LLAMA_SHRINK + [
        "++workload.checkpoint.async=True",
        "++workload.checkpoint.checkpoint_folder=" + os.path.join(args().work, "ck"),
        "++workload.output.folder=" + os.path.join(args().work, "out")], expect_ok=False)
    if p.returncode == 0 or "checkpoint.layout: dcp" not in p.stderr:
        fail("expected an error naming checkpoint.layout: dcp:\n" + p.stderr)


if __name__ == "__main__":
    harness.main(globals())
