#!/usr/bin/python3
"""Benchmark: iomimic's s3 back end against an independent S3 client (boto3
with a thread pool) on the same server, the same objects, in the same run.

  bench/s3_vs_client.py --iomimic build/bin/iomimic [--objects 16] [--size 16M]
        [--threads 4] [--rounds 5] [--endpoint URL --bucket B] [--markdown OUT.md]

Without --endpoint it starts scripts/s3_server.sh (Ceph radosgw on loopback,
memstore OSD) in /tmp/iomimic-s3-bench and stops it at the end.

Writes: `iomimic generate` of `objects` npy files of `size` bytes (one
sample each, so each object is `size` + a 128-byte header) into a fresh
prefix, `threads` generation threads, vs boto3 put_object of objects of the
same size from `threads` threads (content made before the clock starts).
Objects above the s3 plugin's multipart_threshold (16 MiB) are multipart
uploads for iomimic (8 MiB parts, 4 in flight); boto3's put_object is
always a single PUT.
Reads: `iomimic run` (train only, 1 epoch, no compute, batch 1,
read_threads `threads`, read_mode whole with decoding on and off, and
ranged) over the objects of the first iomimic write, vs boto3 of the same
objects from `threads` threads: get_object().read() (the bytes alone, the
peer of iomimic without decoding) and get_object().read() then
np.load(BytesIO(...)) (what DLIO's npy/npz S3 readers do per sample, the
peer of iomimic decoding).
With --pin (the default on 2 or more CPUs) the server's processes run on
the last CPU and the clients (iomimic, or this process and its boto3
threads) on the others, so no client takes CPU from the server: on a
2-CPU machine that shares its cores, a client using every core (iomimic's
threads) slows the server down, while Python's GIL keeps boto3 on about one,
and the comparison measures the scheduler instead of the clients.
Each round runs every variant once, in alternating order; cells are the
median (min-max) over rounds. MiB/s = object bytes / wall time (iomimic: the
whole process, start-up included). CPU s/GiB: the client's user+system CPU
(iomimic: the child process; boto3: this process) per GiB moved; the
server's CPU is not counted, and shares the same cores.
"""
import argparse
import concurrent.futures
import datetime
import glob
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy

from benchlib import ChildCpu, loadavg, machine, spread

MiB = 1 << 20


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    if text[-1].upper() in units:
        return int(float(text[:-1]) * units[text[-1].upper()])
    return int(text)


def iomimic_overrides(a, env, prefix, out, extra=()):
    return [
        "workload=quickstart",
        "++workload.workflow.evaluation=False",
        "++workload.storage.storage_type=s3",
        "++workload.storage.storage_root=" + a.bucket,
        "++workload.storage.storage_options.endpoint_url=" + a.endpoint,
        "++workload.dataset.format=npy",
        "++workload.dataset.data_folder=s3://%s/%s" % (a.bucket, prefix),
        "++workload.dataset.num_files_train=%d" % a.objects,
        "++workload.dataset.num_files_eval=0",
        "++workload.dataset.num_subfolders_train=0",
        "++workload.dataset.num_samples_per_file=1",
        "++workload.dataset.record_length_bytes=%d" % a.size_bytes,
        "++workload.dataset.record_length_bytes_stdev=0",
        "++workload.dataset.record_element_type=uint8",
        "++workload.reader.batch_size=1",
        "++workload.reader.read_threads=%d" % a.threads,
        "++workload.reader.prefetch_size=%d" % a.prefetch,
        "++workload.reader.file_shuffle=off",
        "++workload.reader.sample_shuffle=off",
        "++workload.train.epochs=1",
        "++workload.train.computation_time=0",
        "++workload.output.folder=" + out,
    ] + list(extra)


def timed_child(cmd, env):
    with ChildCpu() as cpu:
        t = time.perf_counter()
        p = subprocess.run(cmd, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - t
    if p.returncode != 0:
        sys.exit("failed: %s\n%s" % (" ".join(cmd[:3]), p.stderr))
    return wall, cpu.seconds


def boto3_client(a, threads):
    import boto3
    import botocore.config
    return boto3.client(
        "s3", endpoint_url=a.endpoint, region_name="us-east-1",
        config=botocore.config.Config(max_pool_connections=max(10, threads),
                                      s3={"addressing_style": "path"}))


def timed_pool(fn, items, threads):
    c0 = time.process_time()
    t = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        total = sum(pool.map(fn, items))
    return time.perf_counter() - t, time.process_time() - c0, total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iomimic", required=True)
    ap.add_argument("--objects", type=int, default=16)
    ap.add_argument("--size", default="16M")
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=5)
    # Batches in flight in iomimic's loader (PyTorch's prefetch_factor =
    # prefetch / threads per worker): deep enough that the in-order loader
    # does not idle readers behind a slow object, as boto3's pool never does.
    ap.add_argument("--prefetch", type=int, default=0, help="default 4 x threads")
    ap.add_argument("--endpoint", default="")
    ap.add_argument("--bucket", default="iomimic")
    ap.add_argument("--markdown", default="")
    ap.add_argument("--pin", action=argparse.BooleanOptionalAction,
                    default=(os.cpu_count() or 1) >= 2,
                    help="server on the last CPU, clients on the others")
    a = ap.parse_args()
    a.size_bytes = parse_size(a.size)
    a.prefetch = a.prefetch or 4 * a.threads
    source = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    server = None
    env = dict(os.environ)
    if not a.endpoint:
        server = "/tmp/iomimic-s3-bench"
        p = subprocess.run([os.path.join(source, "scripts", "s3_server.sh"), "start", server],
                           env=dict(env, IOMIMIC_S3_PORT="7490", IOMIMIC_S3_BUCKET=a.bucket,
                                    IOMIMIC_S3_MEMORY="14G"),
                           capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit("s3_server.sh start failed:\n" + p.stderr)
        for line in p.stdout.splitlines():
            k, v = line.replace("export ", "").split("=", 1)
            env[k] = v
        a.endpoint = env["AWS_ENDPOINT_URL"]
    os.environ.update({k: v for k, v in env.items() if k.startswith("AWS_")})
    if a.pin:
        cpus = sorted(os.sched_getaffinity(0))
        server_cpu, client_cpus = cpus[-1], set(cpus[:-1])
        if server is None:
            sys.exit("--pin needs the server this script starts (leave out --endpoint or --no-pin)")
        for name in ("mon", "osd", "radosgw"):
            with open(os.path.join(server, name + ".pid")) as f:
                subprocess.run(["taskset", "-a", "-p", "-c", str(server_cpu), f.read().strip()],
                               check=True, capture_output=True)
        os.sched_setaffinity(0, client_cpus)  # boto3's threads and iomimic inherit it
        a.pinning = "server on CPU %d, clients on CPU %s" % (
            server_cpu, ",".join(str(c) for c in sorted(client_cpus)))
    else:
        a.pinning = "not pinned: server and clients share every CPU"
    client = boto3_client(a, a.threads)
    work = tempfile.mkdtemp(prefix="s3bench-")
    object_bytes = a.size_bytes + 128  # npy header
    payload = os.urandom(object_bytes)
    gib = a.objects * object_bytes / (1 << 30)
    variants = ("w_iomimic", "w_boto3", "r_whole", "r_whole_raw", "r_ranged", "r_boto3",
                "r_boto3_np")
    results = {k: [] for k in variants}
    latency = {"r_whole": [], "r_whole_raw": [], "r_boto3": [], "r_boto3_np": []}
    first_prefix = None
    load_before = loadavg()
    try:
        for rnd in range(a.rounds):
            order = list(variants)
            if rnd % 2 == 1:
                order = order[:2][::-1] + order[2:][::-1]
            for variant in order:
                if variant.startswith("r_") and first_prefix is None:
                    continue  # reads need the first write
                out = os.path.join(work, "%s-%d" % (variant, rnd))
                if variant == "w_iomimic":
                    prefix = "w-iomimic-%d" % rnd
                    wall, cpu = timed_child(
                        [a.iomimic, "generate", "-q", "--generate-threads", str(a.threads)] +
                        iomimic_overrides(a, env, prefix, out,
                                          ["++workload.workflow.generate_data=True",
                                           "++workload.workflow.train=False"]), env)
                    first_prefix = first_prefix or prefix
                elif variant == "w_boto3":
                    keys = ["w-boto3-%d/train/o_%d.npy" % (rnd, i) for i in range(a.objects)]

                    def put(key):
                        client.put_object(Bucket=a.bucket, Key=key, Body=payload)
                        return len(payload)
                    wall, cpu, _ = timed_pool(put, keys, a.threads)
                elif variant in ("r_whole", "r_whole_raw", "r_ranged"):
                    mode = "ranged" if variant == "r_ranged" else "whole"
                    decode = "False" if variant == "r_whole_raw" else "True"
                    wall, cpu = timed_child(
                        [a.iomimic, "run", "-q"] +
                        iomimic_overrides(a, env, first_prefix, out,
                                          ["++workload.workflow.generate_data=False",
                                           "++workload.reader.decode=" + decode,
                                           "++workload.storage.options.read_mode=" + mode]), env)
                else:
                    listed = client.list_objects_v2(Bucket=a.bucket,
                                                    Prefix=first_prefix + "/train/")
                    keys = [o["Key"] for o in listed["Contents"]]

                    times = []

                    def get(key):
                        t0 = time.perf_counter()
                        data = client.get_object(Bucket=a.bucket, Key=key)["Body"].read()
                        if variant == "r_boto3_np":
                            numpy.load(io.BytesIO(data))  # the array DLIO's reader makes
                        times.append(time.perf_counter() - t0)
                        return len(data)
                    wall, cpu, total = timed_pool(get, keys, a.threads)
                    latency[variant].append(statistics.median(times) * 1000)
                    if total != a.objects * object_bytes:
                        sys.exit("boto3 read %d bytes, expected %d" %
                                 (total, a.objects * object_bytes))
                inner = float("nan")
                if variant in ("w_iomimic", "r_whole", "r_whole_raw", "r_ranged"):
                    summary = glob.glob(os.path.join(out, "**", "summary.json"), recursive=True)
                    if summary:
                        ours = json.load(open(summary[0]))["iomimic"]
                        inner = (ours["generate"]["MiB_per_second"] if variant == "w_iomimic"
                                 else ours["train_io_actual_mean_MiB_per_second"])
                        if variant in latency:
                            latency[variant].append(ours["latency_ms"]["sample_read"]["p50"])
                results[variant].append((a.objects * object_bytes / MiB / wall, cpu / gib, inner))
                print("round %d %-9s %8.1f MiB/s %6.2f CPU s/GiB" %
                      (rnd, variant, results[variant][-1][0], results[variant][-1][1]),
                      flush=True)
    finally:
        if server:
            subprocess.run([os.path.join(source, "scripts", "s3_server.sh"), "stop", server])
        shutil.rmtree(work, ignore_errors=True)
    load_after = loadavg()

    def cell(variant, i, fmt):
        return spread([r[i] for r in results[variant]], fmt)

    def ratio(x, y, i=0):
        return statistics.median(r[i] for r in results[x]) / statistics.median(
            r[0] for r in results[y])
    lines = [
        "# s3: iomimic vs boto3 on the same radosgw",
        "",
        "Taken %s with `bench/s3_vs_client.py --objects %d --size %s --threads %d --rounds %d "
        "--prefetch %d`, %s. "
        "Machine: %s. Load average before %s, after %s (the load includes the server's own "
        "threads; the server, radosgw with a memstore OSD on loopback, runs on the same machine "
        "and its CPU is not counted)." % (datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC"),
                                          a.objects, a.size, a.threads, a.rounds, a.prefetch, a.pinning, machine(),
                                          load_before, load_after),
        "",
        "%d objects of %d bytes (%.2f GiB) per variant and round; median (min-max) of %d rounds, "
        "variants alternating. MiB/s (process wall) = object bytes / wall time of the whole "
        "iomimic process (start-up, plan, results included) or of boto3's pool; iomimic's own "
        "figure is summary.json's generate MiB_per_second or train_io_actual_mean_MiB_per_second "
        "(the phase alone). CPU s/GiB: client CPU (user+system) per GiB, iomimic's whole process." % (a.objects, object_bytes, gib, a.rounds),
        "",
        "| operation | client | MiB/s (process wall) | MiB/s (iomimic's own phase figure) | CPU s/GiB |",
        "| --- | --- | --- | --- | --- |",
        "| write | iomimic generate (s3, %s) | %s | %s | %s |" % (
            "multipart 8 MiB parts x4" if object_bytes > 16 * MiB else "single PUT",
            cell("w_iomimic", 0, "%.0f"), cell("w_iomimic", 2, "%.0f"), cell("w_iomimic", 1, "%.2f")),
        "| write | boto3 put_object, %d threads | %s | %s | %s |" % (
            a.threads, cell("w_boto3", 0, "%.0f"), "-", cell("w_boto3", 1, "%.2f")),
        "| read | iomimic run, read_mode whole, decode on | %s | %s | %s |" % (
            cell("r_whole", 0, "%.0f"), cell("r_whole", 2, "%.0f"), cell("r_whole", 1, "%.2f")),
        "| read | iomimic run, read_mode whole, decode off | %s | %s | %s |" % (
            cell("r_whole_raw", 0, "%.0f"), cell("r_whole_raw", 2, "%.0f"),
            cell("r_whole_raw", 1, "%.2f")),
        "| read | iomimic run, read_mode ranged (8 MiB x8) | %s | %s | %s |" % (
            cell("r_ranged", 0, "%.0f"), cell("r_ranged", 2, "%.0f"), cell("r_ranged", 1, "%.2f")),
        "| read | boto3 get_object, %d threads | %s | %s | %s |" % (
            a.threads, cell("r_boto3", 0, "%.0f"), "-", cell("r_boto3", 1, "%.2f")),
        "| read | boto3 get_object + np.load(BytesIO) (DLIO's reader), %d threads | %s | %s | %s |" % (
            a.threads, cell("r_boto3_np", 0, "%.0f"), "-", cell("r_boto3_np", 1, "%.2f")),
        "",
        "Per-object read time, median of the rounds' medians (ms): iomimic sample_read p50 "
        "decode on %.1f, off %.1f; boto3 get+read %.1f, + np.load %.1f." % tuple(
            statistics.median(latency[k]) for k in ("r_whole", "r_whole_raw", "r_boto3",
                                                     "r_boto3_np")),
        "",
        "Ratios of medians (process wall): write iomimic/boto3 %.2f; read whole decode on / "
        "boto3+np.load %.2f; read whole decode off / boto3 %.2f; read ranged / boto3 %.2f." % (
            ratio("w_iomimic", "w_boto3"), ratio("r_whole", "r_boto3_np"),
            ratio("r_whole_raw", "r_boto3"), ratio("r_ranged", "r_boto3")),
        "With iomimic's own phase figures: write %.2f; read whole decode on / boto3+np.load %.2f; "
        "read whole decode off / boto3 %.2f; read ranged / boto3 %.2f." % (
            ratio("w_iomimic", "w_boto3", 2), ratio("r_whole", "r_boto3_np", 2),
            ratio("r_whole_raw", "r_boto3", 2), ratio("r_ranged", "r_boto3", 2)),
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(text)
    print(json.dumps({k: v for k, v in results.items()}))


if __name__ == "__main__":
    main()
