#!/usr/bin/python3
"""Benchmark: the gds back end's staged paths against posix reading the same
page-cached files in the same run, and optionally two builds of the gds
plugin against each other (A/B).

  bench/gds_vs_posix.py --iomimic build/bin/iomimic [--mode emulated|cuda-bounce]
                        [--b-plugins DIR] [--files 32] [--size-mib 64]
                        [--threads 2] [--epochs 3] [--repeat 5] [--work DIR]
                        [--markdown OUT.md]

Dataset: npz files of one sample each (np.savez, stored), generated once and
read once so the page cache holds them. Every run: decode off, batch 1,
computation_time 0, T reader threads, `epochs` epochs.

- posix (the peer): the same reads into host memory.
- gds A: the gds plugin of the build beside --iomimic, mode `mode`.
- gds B (with --b-plugins): the gds plugin found in DIR first
  (IOMIMIC_PLUGIN_PATH), the same mode.

The runs of one repeat go in turn, the order rotating between repeats.
Throughput: the mean of iomimic.train_io_actual_MiB_per_second. Cells:
median (min-max) over repeats; ratios per repeat.
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys

from benchlib import loadavg, machine, spread

MiB = 1 << 20


def overrides(a):
    return [
        "workload=quickstart",
        "++workload.workflow.generate_data=False",
        "++workload.workflow.evaluation=False",
        "++workload.workflow.checkpoint=False",
        "++workload.dataset.format=npz",
        "++workload.dataset.data_folder=" + os.path.join(a.work, "data"),
        "++workload.dataset.num_files_train=%d" % a.files,
        "++workload.dataset.num_files_eval=0",
        "++workload.dataset.num_samples_per_file=1",
        "++workload.dataset.num_subfolders_train=0",
        "++workload.dataset.record_length_bytes=%d" % (a.size_mib * MiB),
        "++workload.dataset.record_length_bytes_stdev=0",
        "++workload.dataset.record_length_bytes_resize=4096",
        "++workload.reader.batch_size=1",
        "++workload.reader.read_threads=%d" % a.threads,
        "++workload.reader.prefetch_size=%d" % (2 * a.threads),
        "++workload.reader.file_shuffle=off",
        "++workload.reader.sample_shuffle=off",
        "++workload.reader.decode=False",
        "++workload.train.computation_time=0",
        "++workload.train.epochs=%d" % a.epochs,
    ]


def run(a, name, out):
    cmd = [a.iomimic, "run", "-q"] + overrides(a) + ["++workload.output.folder=" + out]
    env = dict(os.environ)
    env.pop("IOMIMIC_PLUGIN_PATH", None)
    if name == "posix":
        cmd.append("++workload.storage.backend=posix")
    else:
        cmd += ["++workload.storage.backend=gds", "++workload.storage.options.mode=" + a.mode]
        if name == "gds B":
            env["IOMIMIC_PLUGIN_PATH"] = a.b_plugins
    subprocess.run(["rm", "-rf", out], check=True)
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=a.work)
    if p.returncode != 0:
        sys.exit("iomimic failed:\n$ %s\n%s%s" % (shlex.join(cmd), p.stdout, p.stderr))
    with open(os.path.join(out, "summary.json")) as f:
        io = json.load(f)["iomimic"]
    if name != "posix" and io["plugins"]["storage"]["data_path"] != a.mode:
        sys.exit("%s ran data path %s, not %s" % (name, io["plugins"]["storage"]["data_path"],
                                                  a.mode))
    return statistics.mean(io["train_io_actual_MiB_per_second"]), cmd


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iomimic", required=True)
    ap.add_argument("--mode", default="emulated", choices=["emulated", "cuda-bounce"])
    ap.add_argument("--b-plugins", help="a plugin folder whose gds plugin is run as B")
    ap.add_argument("--files", type=int, default=32)
    ap.add_argument("--size-mib", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--work", default="/tmp/iomimic-bench-gds")
    ap.add_argument("--markdown")
    a = ap.parse_args()
    a.iomimic = os.path.abspath(a.iomimic)
    if a.b_plugins:
        a.b_plugins = os.path.abspath(a.b_plugins)
    os.makedirs(a.work, exist_ok=True)
    gen = [a.iomimic, "generate", "-q"] + overrides(a)
    subprocess.run(gen, check=True, cwd=a.work, capture_output=True)
    data = os.path.join(a.work, "data", "train")
    for name in sorted(os.listdir(data)):  # warm the page cache
        with open(os.path.join(data, name), "rb") as f:
            while f.read(16 * MiB):
                pass
    tools = ["posix", "gds A"] + (["gds B"] if a.b_plugins else [])
    print("machine: " + machine())
    load_start = loadavg()
    got = {t: [] for t in tools}
    commands = {}
    for rep in range(a.repeat):
        order = tools[rep % len(tools):] + tools[:rep % len(tools)]
        for t in order:
            mibps, cmd = run(a, t, os.path.join(a.work, "out-%s-%d" % (t.replace(" ", ""), rep)))
            got[t].append(mibps)
            commands[t] = cmd
        print("  #%d  " % (rep + 1) + "  ".join("%s %.0f MiB/s" % (t, got[t][-1]) for t in tools),
              flush=True)
    lines = ["| run | MiB/s | ratio to posix | ratios |", "|---|---:|---:|---|"]
    for t in tools:
        ratios = [x / p for x, p in zip(got[t], got["posix"])]
        lines.append("| %s | %s | %.2f | %s |" % (t, spread(got[t], "%.0f"),
                                                 statistics.median(ratios),
                                                 " ".join("%.2f" % r for r in ratios)))
    if a.b_plugins:
        ab = [b / x for b, x in zip(got["gds B"], got["gds A"])]
        lines.append("\nB / A per repeat: %s (median %.3f)" %
                     (" ".join("%.3f" % r for r in ab), statistics.median(ab)))
    text = "\n".join(lines)
    load_end = loadavg()
    print(text)
    print("load average at the start: %s, at the end: %s" % (load_start, load_end))
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write("machine: %s\n\n%d files of %d MiB, %d readers, %d epochs, mode %s, %d repeats"
                    "\n\nload average at the start: %s, at the end: %s\n\n%s\n\ncommands:\n\n```\n" %
                    (machine(), a.files, a.size_mib, a.threads, a.epochs, a.mode, a.repeat,
                     load_start, load_end, text))
            for t in tools:
                env = "IOMIMIC_PLUGIN_PATH=%s " % a.b_plugins if t == "gds B" else ""
                f.write("$ %s%s\n" % (env, shlex.join(commands[t])))
            f.write("```\n")


if __name__ == "__main__":
    main()
