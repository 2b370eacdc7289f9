#!/usr/bin/python3
"""Bring your own application (issue 35, docs/replay.md): a PyTorch
DataLoader with num_workers=4 over npy and npz files, recorded with
`strace -f -ttt -T -e trace=%file,%desc -yy`, replayed by `iomimic replay`
at recorded timing and fast, alternated with the original program (run
untraced) REPEAT times. Reports the trace's and each replay's ops and bytes
per type (equal or not), and the wall-time ratios: replay at recorded
timing over the traced span (the target: within 5%), and over the
untraced program's wall time.

With --dlio-run, also a DLIO-format trace: iomimic's own trace/0.pfw of a
shrunk DLIO workload of workloads/ (DLIO itself is not installable here),
replayed likewise against that run.

Needs Debian's python3-torch (apt-get install python3-torch) and strace.

  bench/pytorch_dataloader_replay.py --iomimic build/bin/iomimic [--repeat 3]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

import benchlib

PYTHON = "/usr/bin/python3"

# The application: argv[1] the data folder. One epoch of a DataLoader with 4
# worker processes, batch 4; the consumer "trains" 30 ms per batch.
PROGRAM = r"""
import os, sys, time
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

class Files(Dataset):
    def __init__(self, folder):
        self.paths = sorted(os.path.join(folder, f) for f in os.listdir(folder)
                            if f.endswith(('.npy', '.npz')))
    def __len__(self):
        return len(self.paths)
    def __getitem__(self, i):
        p = self.paths[i]
        if p.endswith('.npz'):
            with np.load(p) as z:
                x = z['x']
        else:
            x = np.load(p)
        return torch.from_numpy(np.ascontiguousarray(x[:1024]))

if __name__ == '__main__':
    loader = DataLoader(Files(sys.argv[1]), batch_size=4, num_workers=4, shuffle=False)
    n = 0
    for batch in loader:
        time.sleep(0.03)
        n += batch.shape[0]
    print(n)
"""


def make_data(folder, files):
    if os.path.isdir(folder) and len(os.listdir(folder)) == files:
        return
    os.makedirs(folder, exist_ok=True)
    code = ("import numpy as np\n"
            "r = np.random.default_rng(35)\n"
            "for i in range(%d):\n"
            "    x = r.random(32768 + 1024 * (i %% 16))\n"
            "    if i %% 2: np.savez('%s/s%%04d.npz' %% i, x=x)\n"
            "    else: np.save('%s/s%%04d.npy' %% i, x)\n" % (files, folder, folder))
    subprocess.run([PYTHON, "-c", code], check=True)


def run_original(program, data):
    t = time.monotonic()
    subprocess.run([PYTHON, program, data], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return time.monotonic() - t


def replay(iomimic, trace, out, extra):
    shutil.rmtree(out, ignore_errors=True)
    subprocess.run([iomimic, "replay", trace, "--output", out] + extra, check=True,
                   stdout=subprocess.DEVNULL)
    with open(os.path.join(out, "summary.json")) as f:
        return json.load(f)["app_replay"]


def counts(s, key):
    return {k: (v["ops"], v["bytes"]) for k, v in sorted(s[key].items())}


def table(rows):
    print("| run | original s | replay recorded s | / traced span | / original | "
          "replay fast s | ops & bytes equal |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print("| %d | %.3f | %.3f | %.4f | %.3f | %.3f | %s |" % r)


def summarize(name, span, rows):
    rec = [r[3] for r in rows]
    orig = [r[4] for r in rows]
    print("\n%s: traced span %.3f s; replay at recorded timing / traced span %s; "
          "/ untraced original %s" % (name, span, benchlib.spread(rec, "%.4f"),
                                      benchlib.spread(orig, "%.3f")))


def derive_and_check(a, trace, tag, strace):
    """iomimic derive on `trace`, the derived manifest's data generated, its
    training traced (with the original's strace line when `strace`, else
    iomimic's own trace), then iomimic fidelity of the original against it:
    bytes per epoch (1%), reads per power-of-two bin (5%), opens per file
    (5%). Prints the report's verdict and returns whether it reproduces."""
    work = os.path.join(a.work, tag + "_derived")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    manifest = os.path.join(work, "derived.yaml")
    p = subprocess.run([a.iomimic, "derive", trace, "-o", manifest, "--name", tag + "_derived"],
                       capture_output=True, text=True, cwd=work)
    if p.returncode != 0:
        sys.exit("derive failed:\n" + p.stdout + p.stderr)
    not_inferred = [l for l in (p.stdout + p.stderr).splitlines() if l.strip()]
    subprocess.run([a.iomimic, "generate", "-q", manifest], check=True, cwd=work,
                   stdout=subprocess.DEVNULL)
    out = os.path.join(work, "out")
    run = [a.iomimic, "run", "-q", manifest, "++workload.workflow.generate_data=False",
           "++workload.output.folder=" + out]
    if strace:
        run_trace = os.path.join(work, "run.strace")
        run = ["strace", "-f", "-ttt", "-T", "-yy", "-e", "trace=%file,%desc", "-o",
               run_trace] + run
    else:
        run += ["++workload.iomimic.trace=True"]
        run_trace = os.path.join(out, "trace", "0.pfw")
    subprocess.run(run, check=True, cwd=work, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    report = os.path.join(work, "fidelity.json")
    f = subprocess.run([a.iomimic, "fidelity", trace, run_trace, "--json", report, "--check"],
                       capture_output=True, text=True, cwd=work)
    print("\n### %s: derive -> run -> fidelity\n" % tag)
    print("derive printed: %s\n" % ("; ".join(not_inferred) or "nothing"))
    print("```\n%s```" % f.stdout)
    return f.returncode == 0


def bench_pytorch(a):
    data = os.path.join(a.work, "data")
    make_data(data, a.files)
    program = os.path.join(a.work, "loader.py")
    with open(program, "w") as f:
        f.write(PROGRAM)
    run_original(program, data)  # warm the page cache and Python's bytecode cache
    trace = os.path.join(a.work, "loader.strace")
    t = time.monotonic()
    subprocess.run(["strace", "-f", "-ttt", "-T", "-yy", "-e", "trace=%file,%desc", "-o", trace,
                    PYTHON, program, data], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    traced_wall = time.monotonic() - t
    extra = ["--root", os.path.join(a.work, "root"), "--map",
             data + "=" + os.path.join(a.work, "replayed")]
    rows, first = [], None
    for i in range(a.repeat):
        orig = run_original(program, data)
        rec = replay(a.iomimic, trace, os.path.join(a.work, "rec"), extra)
        fast = replay(a.iomimic, trace, os.path.join(a.work, "fast"), extra + ["--timing", "fast"])
        first = first or rec
        equal = (rec["ops_and_bytes_equal"] and fast["ops_and_bytes_equal"]
                 and counts(rec, "traced") == counts(fast, "replayed"))
        rows.append((i + 1, orig, rec["replay_seconds"], rec["slowdown"],
                     rec["replay_seconds"] / orig, fast["replay_seconds"], equal))
    print("## PyTorch DataLoader (num_workers=4), strace -f -yy\n")
    print("load average before: %s; traced run %.3f s wall; trace: %d threads, %d files, "
          "not modelled %d calls\n" % (a.load_before, traced_wall, first["threads_per_copy"],
                                       first["files"], sum(first["not_modelled"].values())))
    print("| type | traced ops | traced bytes | replayed ops (recorded) | replayed bytes |")
    print("|---|---|---|---|---|")
    for k, (ops, b) in counts(first, "traced").items():
        rops, rb = counts(first, "replayed").get(k, (0, 0))
        print("| %s | %d | %d | %d | %d |" % (k, ops, b, rops, rb))
    print()
    table(rows)
    summarize("pytorch", first["original_seconds"], rows)
    derive_and_check(a, trace, "pytorch", strace=True)
    shutil.rmtree(os.path.join(a.work, "root"), ignore_errors=True)


def bench_dlio(a):
    """iomimic's own .pfw of a shrunk DLIO workload, as the DLIO-format trace."""
    data = os.path.join(a.work, "dlio_data")
    ov = ["workload=" + a.dlio_workload, "++workload.workflow.generate_data=True",
          "++workload.dataset.data_folder=" + data,
          "++workload.dataset.num_files_train=%d" % a.dlio_files,
          "++workload.dataset.num_files_eval=0", "++workload.workflow.evaluation=False",
          "++workload.workflow.checkpoint=False", "++workload.train.epochs=%d" % a.dlio_epochs,
          "++workload.dataset.record_length_bytes=1048576",
          "++workload.dataset.record_length_bytes_stdev=262144",
          "++workload.train.computation_time=0.05", "++workload.iomimic.trace=True"]
    gen = os.path.join(a.work, "dlio_gen")
    shutil.rmtree(gen, ignore_errors=True)  # a run refuses another run's output folder
    subprocess.run([a.iomimic, "run", "-q"] + ov + ["++workload.output.folder=" + gen],
                   check=True, stdout=subprocess.DEVNULL)
    ov[1] = "++workload.workflow.generate_data=False"
    rows, first, trace = [], None, None
    for i in range(a.repeat):
        out = os.path.join(a.work, "dlio_run")
        shutil.rmtree(out, ignore_errors=True)
        t = time.monotonic()
        subprocess.run([a.iomimic, "run", "-q"] + ov + ["++workload.output.folder=" + out],
                       check=True, stdout=subprocess.DEVNULL)
        orig = time.monotonic() - t
        if trace is None:
            trace = os.path.join(a.work, "dlio.pfw")
            shutil.copy(os.path.join(out, "trace", "0.pfw"), trace)
            with open(os.path.join(out, "summary.json")) as f:
                io = json.load(f)["iomimic"]["io_counters"]
        extra = ["--map", data + "=" + os.path.join(a.work, "dlio_replayed")]
        rec = replay(a.iomimic, trace, os.path.join(a.work, "dlio_rec"), extra)
        fast = replay(a.iomimic, trace, os.path.join(a.work, "dlio_fast"),
                      extra + ["--timing", "fast"])
        first = first or rec
        equal = rec["ops_and_bytes_equal"] and fast["ops_and_bytes_equal"]
        rows.append((i + 1, orig, rec["replay_seconds"], rec["slowdown"],
                     rec["replay_seconds"] / orig, fast["replay_seconds"], equal))
    t = first["traced"]
    print("\n## DLIO-format trace: iomimic's own trace/0.pfw of workload=%s (shrunk)\n"
          % a.dlio_workload)
    print("run's io_counters: opens %d, reads %d, bytes_read %d; trace: opens %d, reads %d, "
          "bytes %d\n" % (io["opens"], io["reads"], io["bytes_read"], t["open"]["ops"],
                          t["read"]["ops"], t["read"]["bytes"]))
    table(rows)
    summarize("dlio", first["original_seconds"], rows)
    derive_and_check(a, trace, "dlio", strace=False)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iomimic", required=True)
    ap.add_argument("--files", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--work", default="/tmp/iomimic-bench-torch")
    ap.add_argument("--dlio-workload", default="unet3d_h100")
    # 64 files and 1 epoch (9 steps, a 0.31 s span) left the replay at 0.935
    # of the span: a few slow reads of the loaded original were a large share
    # of so short a run. 256 files, 2 epochs: 72 steps, about 4 s.
    ap.add_argument("--dlio-files", type=int, default=256)
    ap.add_argument("--dlio-epochs", type=int, default=2)
    ap.add_argument("--skip-pytorch", action="store_true")
    a = ap.parse_args()
    a.iomimic = os.path.abspath(a.iomimic)
    a.load_before = benchlib.loadavg()
    os.makedirs(a.work, exist_ok=True)
    print("# %s\n\n%s; load average at start %s\n" % (" ".join(sys.argv),
                                                     benchlib.machine(), a.load_before))
    if not a.skip_pytorch:
        bench_pytorch(a)
    bench_dlio(a)
    print("\nload average at end: %s" % benchlib.loadavg())


if __name__ == "__main__":
    main()
