#!/usr/bin/python3
"""GPU check: the KV-cache accelerator tier in a GPU's memory through the gds
storage plugin (kv_cache.accelerator=gds), beside the emulated tier
(kv_cache.accelerator=emulated: host memory held to gpu_copy_gbps), on the
same machine in the same session.

NOT RUN YET: written on a machine without a GPU (the tier's gds path was
tested there only on the gds plugin's emulated data path,
tests/integration/kvcache_workflow_tests.py). Run it the day a GPU is lent:

  bench/kvcache_gpu_tier.py --iomimic build/bin/iomimic [--repeat 3]
      [--gpu-mem-gb 0.5] [--users 4] [--seconds 20] [--gds-mode auto]
      [--cuda-runtime /abs/libcudart.so.12] [--work DIR] [--markdown OUT.md]
      [--layout whole|chunked]

It builds nothing: --iomimic is a built binary whose plugin folder
(<bin>/../lib/iomimic/plugins) holds the gds plugin (--cuda-runtime: the
plugin's cuda_runtime option, where libcudart is not on the loader's search
path, e.g. NVIDIA's Python wheels; scripts/gpu_check.sh finds it). Each
repeat runs workloads/kvcache_quickstart.yaml shrunk to --seconds with a
--gpu-mem-gb accelerator tier twice, accelerator=gds (the gds plugin's
option mode --gds-mode: auto takes cufile, else cuda-bounce) and
accelerator=emulated, the order alternating between repeats. The first gds run must report
kv_cache.accelerator_path gds:cuda-bounce or gds:cufile in summary.json;
otherwise (no GPU, no CUDA runtime) the script exits 2 with one line saying
what ran instead and why (the gds plugin's report=true line).
--allow-emulated accepts gds:emulated instead: only for checking this script
on a machine without a GPU (its figures then say nothing about a GPU).

Printed per variant, medians (min-max) over the repeats:
  - the gpu tier's read and write GiB/s over the run (bytes / run seconds),
  - its copy GiB/s (bytes / the summed latencies of its operations),
  - read and write latency P50 and P95 (ms),
  - gds only: the plugin's own host-to-device and device-to-host GiB/s
    (gds_h2d_copy_bytes / gds_h2d_copy_seconds, and d2h likewise).
Requests differ between runs (users think and race), so compare rates and
latencies, not bytes.

--layout chunked runs the chunked mode (docs/kvcache-chunked.md) instead: a
Mooncake trace that scripts/kv_request_traces.py writes (--requests), its
gpu tier of --gpu-mem-gb above storage, hits promoted on_hit; the figures
are the gpu tier's (summary.json kv_cache_chunked.tiers.gpu and gpu_tier).
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys

from benchlib import loadavg, machine, spread

GiB = float(1 << 30)
GPU_PATHS = ("gds:cuda-bounce", "gds:cufile")


def chunked_trace(a):
    path = os.path.join(a.work, "trace.jsonl")
    source = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    subprocess.run(["/usr/bin/python3", os.path.join(source, "scripts", "kv_request_traces.py"),
                    "mooncake", path, "--requests", str(a.requests), "--seed", "42"], check=True)
    return path


def run(a, variant, repeat):
    out = os.path.join(a.work, "%s_%d" % (variant, repeat))
    root = os.path.join(a.work, "root")
    cmd = [a.iomimic, "run", "-q", "workload=kvcache_quickstart",
           "++workload.storage.storage_root=" + root,
           "++workload.output.folder=" + out,
           "++workload.kv_cache.gpu_mem_gb=%g" % a.gpu_mem_gb,
           "++workload.kv_cache.accelerator=" + variant]
    if a.layout == "chunked":
        cmd += ["++workload.kv_cache.layout=chunked",
                "++workload.kv_cache.request_trace=" + a.trace,
                "++workload.kv_cache.trace_speedup=0",
                "++workload.kv_cache.promotion=on_hit",
                "++workload.kv_cache.duration=0"]
    else:
        cmd += ["++workload.kv_cache.duration=%g" % a.seconds,
                "++workload.kv_cache.num_users=%d" % a.users]
    if variant == "gds":
        cmd += ["++workload.kv_cache.accelerator_options.mode=" + a.gds_mode,
                "++workload.kv_cache.accelerator_options.report=true"]
        if a.cuda_runtime:
            cmd.append("++workload.kv_cache.accelerator_options.cuda_runtime=" + a.cuda_runtime)
    subprocess.run(["rm", "-rf", out], check=True)
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=a.work)
    if p.returncode != 0:
        sys.exit("iomimic failed:\n$ %s\n%s%s" % (shlex.join(cmd), p.stdout, p.stderr))
    with open(os.path.join(out, "summary.json")) as f:
        summary = json.load(f)
    if a.layout == "chunked":
        kv = summary["kv_cache_chunked"]
        kv["accelerator_path"] = kv.get("gpu_tier", "")
    else:
        kv = summary["kv_cache"]
    path = kv.get("accelerator_path", "")
    if variant == "gds" and path not in GPU_PATHS and not (a.allow_emulated and
                                                           path == "gds:emulated"):
        why = [line for line in p.stderr.splitlines() if "gds: rank 0: data path" in line]
        print("no GPU found: kv_cache.accelerator=gds ran on %r (%s), not %s; this check needs a "
              "CUDA GPU and its runtime" % (path, why[0] if why else kv.get("accelerator_reason"),
                                            " or ".join(GPU_PATHS)), file=sys.stderr)
        sys.exit(2)
    return kv


def chunked_figures(kv):
    """The chunked mode's gpu tier figures of one run."""
    t = kv["tiers"]["gpu"]
    if t["read_bytes"] == 0 or t["write_bytes"] == 0:
        sys.exit("the gpu tier read %d and wrote %d bytes: raise --gpu-mem-gb or --requests" %
                 (t["read_bytes"], t["write_bytes"]))
    return {
        "read GB/s (run)": t["read_GB_per_second"],
        "write GB/s (run)": t["write_GB_per_second"],
        "chunk read p50 ms": t["chunk_read_ms"]["p50"],
        "chunk read p95 ms": t["chunk_read_ms"]["p95"],
        "chunk write p50 ms": t["chunk_write_ms"]["p50"],
        "chunk write p95 ms": t["chunk_write_ms"]["p95"],
        "gpu chunk hits": kv["chunk_hits"]["gpu"],
        "TTFT p50 ms": kv["ttft_ms"]["p50"],
    }


def figures(kv):
    """The gpu tier's rates and latencies of one run (see the header)."""
    t = kv["tiers"]["gpu"]
    seconds = kv["duration_seconds"]
    lat = t["latency_ms"]
    read = t["read_bytes"] + t["eviction_read_bytes"]
    write = t["write_bytes"] + t["eviction_write_bytes"]
    busy_read = lat["read"]["count"] * lat["read"]["mean"] / 1e3
    busy_write = lat["write"]["count"] * lat["write"]["mean"] / 1e3
    f = {
        "read GiB/s (run)": read / GiB / seconds,
        "write GiB/s (run)": write / GiB / seconds,
        "read GiB/s (copying)": read / GiB / busy_read if busy_read > 0 else 0,
        "write GiB/s (copying)": write / GiB / busy_write if busy_write > 0 else 0,
        "read p50 ms": lat["read"]["p50"],
        "read p95 ms": lat["read"]["p95"],
        "write p50 ms": lat["write"]["p50"],
        "write p95 ms": lat["write"]["p95"],
    }
    s = kv.get("accelerator_statistics", {})
    for way in ("h2d", "d2h"):
        if s.get("gds_%s_copy_seconds" % way, 0) > 0:
            f["gds %s GiB/s" % way] = (s["gds_%s_copy_bytes" % way] / GiB /
                                       s["gds_%s_copy_seconds" % way])
    if t["writes"] == 0 or t["reads"] == 0:
        sys.exit("the gpu tier saw %d writes and %d reads: raise --gpu-mem-gb or --seconds" %
                 (t["writes"], t["reads"]))
    return f


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iomimic", required=True)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--gpu-mem-gb", type=float, default=0.5)
    ap.add_argument("--users", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--gds-mode", default="auto", choices=("auto", "cufile", "cuda-bounce"))
    ap.add_argument("--cuda-runtime", default="")
    ap.add_argument("--allow-emulated", action="store_true")
    ap.add_argument("--work", default="/tmp/iomimic_kvcache_gpu_tier")
    ap.add_argument("--markdown")
    ap.add_argument("--layout", default="whole", choices=("whole", "chunked"))
    ap.add_argument("--requests", type=int, default=300)
    a = ap.parse_args()
    a.iomimic = os.path.abspath(a.iomimic)
    os.makedirs(a.work, exist_ok=True)
    a.trace = chunked_trace(a) if a.layout == "chunked" else ""
    load_before = loadavg()
    rows = {"gds": [], "emulated": []}
    paths = set()
    for r in range(a.repeat):
        for variant in (("gds", "emulated") if r % 2 == 0 else ("emulated", "gds")):
            kv = run(a, variant, r)
            if variant == "gds":
                paths.add(kv["accelerator_path"])
            rows[variant].append(chunked_figures(kv) if a.layout == "chunked" else figures(kv))
    lines = ["# KV-cache accelerator tier: gds (%s) against emulated" % ", ".join(sorted(paths)),
             "",
             "Machine: %s. Load before %s, after %s." % (machine(), load_before, loadavg()),
             ("kvcache_quickstart, %d users, %g s" % (a.users, a.seconds)
              if a.layout == "whole" else
              "kvcache_quickstart chunked, a Mooncake trace of %d requests, promotion on_hit"
              % a.requests) +
             ", gpu_mem_gb %g, %d repeats alternating; median (min-max)." % (a.gpu_mem_gb,
                                                                             a.repeat),
             "",
             "| figure | gds | emulated | gds / emulated (median) |",
             "|---|---|---|---|"]
    for name in rows["gds"][0]:
        g = [x[name] for x in rows["gds"]]
        e = [x.get(name) for x in rows["emulated"]]
        if None in e:
            lines.append("| %s | %s | - | - |" % (name, spread(g, "%.3f")))
            continue
        ratios = [x / y for x, y in zip(g, e) if y]
        ratio = "%.2f" % statistics.median(ratios) if ratios else "-"
        lines.append("| %s | %s | %s | %s |" % (name, spread(g, "%.3f"), spread(e, "%.3f"),
                                                ratio))
    text = "\n".join(lines) + "\n"
    print(text)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
