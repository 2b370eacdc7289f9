#!/usr/bin/python3
"""Model loading (docs/model-loading.md) beside fio's read of the same files.

  bench/model_load_vs_fio.py --iomimic build/bin/iomimic [--repeat 3]
      [--dir /tmp/iomimic-bench-modelload] [--layers 1] [--workers 8]
      [--out bench/results/model_load_vs_fio.md]

iomimic writes a shrunk Llama-3-70B-shaped safetensors set once (full
hidden, FFN and vocabulary sizes, --layers layers: 1 layer is 5.9 GB in
6 shards of at most 1 GB), then every repeat runs, in rotating order:

  T  iomimic, method tensors, 1 worker (safetensors' load_file), posix
  F  fio, 1 job reading the files one after the other, bs = read size, psync
     (fio's jobs run as threads of one process, --thread, as iomimic's
     workers are)
  M  iomimic, method tensors, 1 worker, the mmap back end (mmap and touch)
  C  iomimic, method chunks, --workers workers (Run:ai's streamer)
  P  fio, --workers jobs: each file cut into workers / files slices read
     concurrently, bs = read size

each cold (iomimic's model_load.cache both: the files' pages dropped with
fadvise DONTNEED at open before the timed load, then a warm load; fio:
invalidate=1, then a second run with invalidate=0, the pages cached by the
first). GB/s is the bytes read over the time until the last byte: iomimic's
summary.json model_load.loads.<cache>.GB_per_second (headers included), fio's
io_bytes over its runtime. The ratios pair T and M with F, C with P.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
READ_SIZE = 16 << 20


def iomimic_load(args, name, extra):
    out = os.path.join(args.dir, "out-" + name)
    subprocess.run(["rm", "-rf", out], check=True)
    cmd = [args.iomimic, "run", "workload=model_load_70b",
           "++workload.model.num_layers=%d" % args.layers,
           "++workload.model_load.max_shard_bytes=1000000000",
           "++workload.model_load.read_size=%d" % READ_SIZE,
           "++workload.storage.storage_root=" + args.dir,
           "++workload.model_load.folder=model", "++workload.output.folder=" + out] + extra
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    with open(os.path.join(out, "summary.json")) as f:
        loads = json.load(f)["model_load"]["loads"]
    return {cache: load["GB_per_second"] for cache, load in loads.items()}


def fio_load(args, files, jobs):
    result = {}
    for cache, invalidate in (("cold", 1), ("warm", 0)):
        # --thread: fio's jobs as threads of one process, as iomimic's
        # workers are. As processes each job calls setsid, and with
        # sched_autogroup (on here) each gets a session's CPU share while
        # iomimic's workers share one: under load, 8 fio jobs got up to 8x
        # the CPU of iomimic's 8 workers (bench/results/dcp_async_vs_fio.md).
        cmd = ["fio", "--output-format=json", "--thread", "--group_reporting", "--ioengine=psync",
               "--rw=read", "--bs=%d" % READ_SIZE, "--invalidate=%d" % invalidate,
               "--file_service_type=sequential"]
        if jobs == 1:
            cmd += ["--name=job", "--filename=" + ":".join(files)]
        else:
            # `jobs` readers over all files: each file cut into
            # jobs / files slices read concurrently (at least one).
            per = max(1, jobs // len(files))
            for i, path in enumerate(files):
                slice_bytes = -(-os.path.getsize(path) // per)
                slice_bytes = -(-slice_bytes // READ_SIZE) * READ_SIZE
                cmd += ["--name=file%d" % i, "--filename=" + path, "--numjobs=%d" % per,
                        "--size=%d" % slice_bytes, "--offset_increment=%d" % slice_bytes]
        p = subprocess.run(cmd, check=True, capture_output=True, text=True)
        read = json.loads(p.stdout)["jobs"][0]["read"]
        result[cache] = read["io_bytes"] / (read["runtime"] / 1000.0) / 1e9
    return result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iomimic", required=True)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", default="/tmp/iomimic-bench-modelload")
    parser.add_argument("--layers", type=int, default=1)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--out")
    args = parser.parse_args()
    args.iomimic = os.path.abspath(args.iomimic)
    os.makedirs(args.dir, exist_ok=True)
    load_before = benchlib.loadavg()
    iomimic_load(args, "setup", ["++workload.model_load.cache=warm"])
    folder = os.path.join(args.dir, "model")
    files = sorted(os.path.join(folder, f) for f in os.listdir(folder)
                   if f.endswith(".safetensors"))
    size = sum(os.path.getsize(f) for f in files)
    arms = {
        "T": lambda: iomimic_load(args, "T", []),
        "F": lambda: fio_load(args, files, 1),
        "M": lambda: iomimic_load(args, "M", ["++workload.storage.backend=mmap"]),
        "C": lambda: iomimic_load(args, "C", ["++workload.model_load.method=chunks",
                                              "++workload.model_load.workers=%d" % args.workers]),
        "P": lambda: fio_load(args, files, args.workers),
    }
    order = list(arms)
    got = {a: {"cold": [], "warm": []} for a in arms}
    for r in range(args.repeat):
        for a in order[r % len(order):] + order[:r % len(order)]:
            res = arms[a]()
            for cache in res:
                got[a][cache].append(res[cache])
            print("repeat %d %s: cold %.2f GB/s, warm %.2f GB/s" % (r + 1, a, res["cold"],
                                                                   res["warm"]), flush=True)
    names = {"T": "iomimic tensors, 1 worker", "F": "fio 1 job",
             "M": "iomimic tensors, 1 worker, mmap", "C": "iomimic chunks, %d workers" %
             args.workers, "P": "fio %d jobs" % args.workers}
    lines = ["# Model loading beside fio (bench/model_load_vs_fio.py)", "",
             "Machine: " + benchlib.machine(with_fio=True) + ".",
             "Load average before: %s, after: %s." % (load_before, benchlib.loadavg()),
             "Files: %d safetensors shards, %.2f GB (Llama-3-70B shapes, %d layer(s)), "
             "read size %d MiB, %d repeats alternated." % (len(files), size / 1e9, args.layers,
                                                            READ_SIZE >> 20, args.repeat), "",
             "| arm | cold GB/s | warm GB/s | cold / fio | warm / fio |", "|---|---|---|---|---|"]
    peer = {"T": "F", "M": "F", "C": "P"}
    for a in order:
        cells = [names[a], benchlib.spread(got[a]["cold"], "%.2f"),
                 benchlib.spread(got[a]["warm"], "%.2f")]
        for cache in ("cold", "warm"):
            if a in peer:
                ratios = [x / y for x, y in zip(got[a][cache], got[peer[a]][cache])]
                cells.append(benchlib.spread(ratios, "%.2f"))
            else:
                cells.append("-")
        lines.append("| " + " | ".join(cells) + " |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
