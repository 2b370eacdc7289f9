#!/usr/bin/python3
"""The model-loading workflow end to end (docs/model-loading.md): the
safetensors files it writes read by a reader written from the format's
specification (safetensors_check.py), the bytes and requests each load
makes, cold and warm, replicated and split over 2 ranks, and its errors.

Usage: model_load_tests.py <test-name> --iomimic BIN --source DIR --work DIR
"""

import glob
import json
import math
import os

import iomimic_tests as harness
import safetensors_check
from iomimic_tests import fail, mpirun, run, workload

# A shrunk Llama: 3 layers, hidden 256, so that shards of 1 MB hold a few
# tensors each and the embedding (1000 x 256 x 2 bytes) one alone.
SHRUNK = ["++workload.model.num_layers=3", "++workload.model.transformer.vocab_size=1000",
          "++workload.model.transformer.hidden_size=256",
          "++workload.model.transformer.ffn_hidden_size=768",
          "++workload.model.transformer.num_attention_heads=8",
          "++workload.model.transformer.num_kv_heads=2",
          "++workload.model_load.max_shard_bytes=1000000"]
READ_SIZE = 65536


def args():
    return harness.ARGS


def overrides(folder, out, extra=()):
    return [workload("model_load_70b")] + SHRUNK + [
        "++workload.storage.storage_root=" + args().work,
        "++workload.model_load.folder=" + folder,
        "++workload.model_load.read_size=%d" % READ_SIZE,
        "++workload.output.folder=" + out] + list(extra)


def summary(out):
    with open(os.path.join(out, "summary.json")) as f:
        return json.load(f)["model_load"]


def llama_parameters(layers=3, h=256, ffn=768, vocab=1000, heads=8, kv_heads=2):
    kv = h // heads * kv_heads
    return 2 * vocab * h + layers * (2 * h + h * (h + 2 * kv) + h * h + 3 * h * ffn) + h


def check_model(folder):
    """The files read back from the spec: every Llama tensor once, the index
    naming each one's file, shards within the limit. Returns
    (files, {path: (header bytes, [tensor sizes])})."""
    files = sorted(glob.glob(os.path.join(folder, "*.safetensors")))
    if len(files) < 3:
        fail("expected several shards, got %r" % files)
    with open(os.path.join(folder, "model.safetensors.index.json")) as f:
        index = json.load(f)
    layout = {}
    elements = 0
    for path in files:
        if not os.path.basename(path).startswith("model-") or "-of-%05d" % len(files) not in path:
            fail("shard name %s" % path)
        tensors = safetensors_check.check_file(path)
        header, data, size = safetensors_check.read_header(path)
        if header.get("__metadata__") != {"format": "pt"}:
            fail("%s: __metadata__ %r" % (path, header.get("__metadata__")))
        sizes = []
        for name, (dtype, shape, begin, end) in sorted(tensors.items(), key=lambda kv: kv[1][2]):
            if dtype != "BF16":
                fail("%s: %s has dtype %s" % (path, name, dtype))
            if index["weight_map"].get(name) != os.path.basename(path):
                fail("index: %s -> %r, stored in %s" % (name, index["weight_map"].get(name), path))
            elements += math.prod(shape)
            sizes.append(end - begin)
        if sum(sizes) > 1000000 and len(sizes) > 1:
            fail("%s holds %d bytes of tensors, over the 1 MB limit" % (path, sum(sizes)))
        layout[path] = (data, sizes)
    if elements != llama_parameters():
        fail("the tensors hold %d elements, a 3-layer Llama %d" % (elements, llama_parameters()))
    if len(index["weight_map"]) != 3 + 9 * 3:
        fail("index has %d tensors" % len(index["weight_map"]))
    total = sum(sum(s) for _, s in layout.values())
    if index["metadata"]["total_size"] != total:
        fail("index total_size %d, tensors %d" % (index["metadata"]["total_size"], total))
    return files, layout


def test_model_load_safetensors_files():
    """2 ranks write the files once (rank i mod 2 writes file i) and each
    loads every byte, cold then warm, tensor by tensor in requests of at
    most read_size; a second run writes nothing, a changed header makes
    that one file be written again."""
    folder = os.path.join(args().work, "model")
    out = os.path.join(args().work, "out")
    p = mpirun(2, [args().iomimic, "run"] + overrides("model", out))
    files, layout = check_model(folder)
    s = summary(out)
    sizes = sum(os.path.getsize(f) for f in files)
    if (s["files"], s["bytes"], s["written"]["files"]) != (len(files), sizes, len(files)):
        fail("model_load: files, bytes, written %r, expected %r" % (
            (s["files"], s["bytes"], s["written"]["files"]), (len(files), sizes, len(files))))
    requests = sum(2 + sum(max(1, math.ceil(t / READ_SIZE)) for t in sizes)
                   for _, sizes in layout.values())
    for cache in ("cold", "warm"):
        load = s["loads"].get(cache)
        if load is None:
            fail("no %s load in summary.json" % cache)
        # Replicated: each rank reads every file whole, headers included.
        if (load["bytes"], load["files"], load["requests"]) != (2 * sizes, 2 * len(files),
                                                                2 * requests):
            fail("%s load: bytes, files, requests %r, expected %r" % (
                cache, (load["bytes"], load["files"], load["requests"]),
                (2 * sizes, 2 * len(files), 2 * requests)))
        if load["file_latency_ms"]["count"] != 2 * len(files) or load["seconds"] <= 0:
            fail("%s load: file latency count %d, seconds %r" % (
                cache, load["file_latency_ms"]["count"], load["seconds"]))
        if "model load (%s):" % cache not in p.stdout:
            fail("no console line for the %s load" % cache)
    if not s["loads"]["warm"]["page_cache_before"]["verdict"].startswith("warm"):
        fail("the warm load did not find the files in the page cache: %r" %
             s["loads"]["warm"]["page_cache_before"])
    with open(os.path.join(out, "events.csv")) as f:
        spans = [line.split(",")[1] for line in f.read().splitlines()[1:]]
    if spans.count("model_load_cold") != 2 or spans.count("model_load_warm") != 2:
        fail("events.csv: one model_load span per rank and load expected: %r" % spans)
    # Nothing to write the second time; one changed header, one file.
    out2 = os.path.join(args().work, "out2")
    run([args().iomimic, "run"] + overrides("model", out2, ["++workload.model_load.cache=warm"]))
    if summary(out2)["written"]["files"] != 0 or "cold" in summary(out2)["loads"]:
        fail("a second run wrote %d files" % summary(out2)["written"]["files"])
    with open(files[1], "r+b") as f:
        f.seek(12)
        f.write(b"X")
    out3 = os.path.join(args().work, "out3")
    run([args().iomimic, "run"] + overrides("model", out3, ["++workload.model_load.cache=warm"]))
    if summary(out3)["written"]["files"] != 1:
        fail("a changed header: %d files written, expected 1" % summary(out3)["written"]["files"])
    safetensors_check.check_file(files[1])


def test_model_load_chunks_split():
    """Method chunks with 4 workers, split over 2 ranks: both ranks read
    every header, the ranks' chunks together cover every tensor's byte once
    (requests of read_size, the last of each file shorter)."""
    folder = os.path.join(args().work, "model")
    out = os.path.join(args().work, "out")
    mpirun(2, [args().iomimic, "run"] + overrides("model", out, [
        "++workload.model_load.method=chunks", "++workload.model_load.workers=4",
        "++workload.model_load.split=shard"]))
    files, layout = check_model(folder)
    headers = sum(data for data, _ in layout.values())
    tensors = sum(sum(sizes) for _, sizes in layout.values())
    chunks = sum(math.ceil(sum(sizes) / READ_SIZE) for _, sizes in layout.values())
    for cache in ("cold", "warm"):
        load = summary(out)["loads"][cache]
        want = (2 * headers + tensors, 2 * 2 * len(files) + chunks, 3 + 9 * 3)
        if (load["bytes"], load["requests"], load["tensors"]) != want:
            fail("%s: bytes, requests, tensors %r, expected %r" % (
                cache, (load["bytes"], load["requests"], load["tensors"]), want))


def test_model_load_back_ends():
    """The same files loaded through odirect, mmap (mmap and touch) and gds
    (device memory where a GPU exists, its emulated mode without one): the
    same bytes and requests as through posix, for both methods."""
    folder = os.path.join(args().work, "model")
    run([args().iomimic, "run"] + overrides("model", os.path.join(args().work, "setup"),
                                            ["++workload.model_load.cache=warm"]))
    files, layout = check_model(folder)
    size = sum(os.path.getsize(f) for f in files)
    for method, workers in (("tensors", 1), ("chunks", 3)):
        want = None
        for backend in ("posix", "odirect", "mmap", "gds"):
            out = os.path.join(args().work, "out-%s-%s" % (method, backend))
            run([args().iomimic, "run"] + overrides("model", out, [
                "++workload.storage.backend=" + backend,
                "++workload.model_load.method=" + method,
                "++workload.model_load.workers=%d" % workers,
                "++workload.model_load.cache=cold"]))
            load = summary(out)["loads"]["cold"]
            got = (load["bytes"], load["requests"], load["tensors"])
            if load["bytes"] != size:
                fail("%s on %s read %d bytes, the files hold %d" % (method, backend,
                                                                   load["bytes"], size))
            want = want or got
            if got != want:
                fail("%s on %s: bytes, requests, tensors %r, on posix %r" % (method, backend,
                                                                              got, want))


def test_model_load_errors():
    """Bad files are one error naming the file and the offset; a model
    that is not a transformer names the keys."""
    bad = os.path.join(args().work, "bad")
    os.makedirs(bad)
    header = b'{"w":{"dtype":"F16","shape":[8],"data_offsets":[0,16]}}'
    truncated = len(header).to_bytes(8, "little") + header + b"\x00" * 10
    cases = {
        "short.safetensors": (b"\x10\x00\x00\x00\x00\x00\x00\x00{}", "offset 0: "),
        "past.safetensors": (b"\x00\x00\x00\x00\x01\x00\x00\x00{}", "past the file's end"),
        # The tensor's 16 bytes end 6 bytes past the file's end: the error
        # points at the end of the file, where its bytes are missing.
        "truncated.safetensors": (truncated, "offset %d: " % len(truncated)),
    }
    for name, (content, expect) in cases.items():
        path = os.path.join(bad, name)
        with open(path, "wb") as f:
            f.write(content)
        p = run([args().iomimic, "run", workload("model_load_70b"),
                 "++workload.model_load.files=[%s]" % path,
                 "++workload.output.folder=" + os.path.join(args().work, "out-" + name)],
                expect_ok=False)
        lines = [line for line in p.stderr.splitlines() if "error" in line.lower()]
        if p.returncode == 0 or not any(path in line and expect in line for line in lines):
            fail("%s: expected one error naming it and %r, got:\n%s" % (name, expect, p.stderr))
    p = run([args().iomimic, "run", workload("model_load_70b"), "++workload.model.type=",
             "++workload.output.folder=" + os.path.join(args().work, "out-plain")],
            expect_ok=False)
    if p.returncode == 0 or "model.type" not in p.stderr:
        fail("a model that is not a transformer should name model.type:\n" + p.stderr)


if __name__ == "__main__":
    harness.main(globals())
