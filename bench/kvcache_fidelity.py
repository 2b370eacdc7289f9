#!/usr/bin/python3
"""Fidelity of iomimic's KV-cache workflow to MLPerf Storage's KV-cache
reference (kv-cache.py), measured on their I/O traces
(docs/kvcache-reference.md, "Fidelity").

Both programs run with the same seed, model, users, request count and tier
sizes; the reference writes its trace with --io-trace-log (it then performs
no I/O), iomimic writes the same format from its own run. The traces are
compared per (Operation, Tier, Phase): the number of operations and their
bytes must agree within --tolerance (5 %), and the object sizes must be the
same set, or, where the two runs' per-request draws differ (more than one
user: the reference shares one random stream among its threads), have
quantiles (p10, p50, p90) within the tolerance. Each user's request sizes
are compared too, over the requests both runs made.

With several users the reference differs from itself between two runs of the
same seed (its threads' timing decides which thread takes which draw when
two wake within a millisecond): --baseline runs it twice and reports that
spread beside iomimic's difference. --scale-templates N divides the users'
token ranges by N in both programs, so that iomimic's real I/O stays small
next to the think times, as the reference's trace mode (no I/O) assumes.
--trace-only runs iomimic in its own trace mode (kv_cache.trace_only: the same
logic with no tier transfer), which compares like with like: neither program
then spends time on I/O.

  bench/kvcache_fidelity.py run --reference PATH/kv_cache_benchmark \\
        --iomimic build/bin/iomimic [--model llama3.1-8b] [--users 1] \\
        [--requests 40] [--seed 42] [--work DIR] [--markdown OUT.md]
        [--scale-templates N] [--baseline] [--trace-only]
  bench/kvcache_fidelity.py compare A.csv[.zst] B.csv[.zst]
  bench/kvcache_fidelity.py selftest TRACE.csv    # the comparison on a trace
        against itself (must pass) and perturbed copies (must fail)

Not run in CI: it needs the reference, whose path is an argument. Exit
status 0 when the comparison passes.
"""
import argparse
import collections
import csv
import datetime
import io
import json
import os
import random
import shutil
import statistics
import subprocess
import sys

HEADER = ["Timestamp", "Operation", "Object_Size_Bytes", "Tier", "Key", "Phase"]


# --- Traces --------------------------------------------------------------

def read_trace(path):
    """The rows of a trace as dicts; .zst through the zstd tool."""
    with open(path, "rb") as f:
        magic = f.read(4)
    if magic == b"\x28\xb5\x2f\xfd":
        text = subprocess.run(["zstd", "-dc", path], check=True, capture_output=True).stdout
        text = text.decode("utf-8")
    else:
        with open(path, newline="", encoding="utf-8") as f:
            text = f.read()
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, None)
    if header != HEADER:
        raise SystemExit("%s: header %s is not %s" % (path, header, HEADER))
    return [dict(zip(HEADER, row)) for row in reader]


def group_of(row):
    return (row["Operation"], row["Tier"], row["Phase"] or "(none)")


def summarize(rows):
    """Per group: ops, bytes and the list of object sizes."""
    groups = collections.defaultdict(lambda: {"ops": 0, "bytes": 0, "sizes": []})
    for row in rows:
        g = groups[group_of(row)]
        size = int(row["Object_Size_Bytes"])
        g["ops"] += 1
        g["bytes"] += size
        g["sizes"].append(size)
    return groups


def quantiles(values):
    v = sorted(values)
    pick = lambda q: v[min(len(v) - 1, int(q * (len(v) - 1) + 0.5))]
    return [pick(0.1), pick(0.5), pick(0.9)]


def rel(a, b):
    """Relative difference of b to a (0 when both are 0)."""
    if a == b:
        return 0.0
    return abs(b - a) / max(abs(a), abs(b))


def compare(a_rows, b_rows, tolerance):
    """A list of per-group verdicts and the overall pass."""
    a, b = summarize(a_rows), summarize(b_rows)
    verdicts = []
    for key in sorted(set(a) | set(b)):
        ga = a.get(key, {"ops": 0, "bytes": 0, "sizes": []})
        gb = b.get(key, {"ops": 0, "bytes": 0, "sizes": []})
        sa, sb = set(ga["sizes"]), set(gb["sizes"])
        same_sizes = sa == sb
        if same_sizes:
            size_note, sizes_ok = "same %d sizes" % len(sa), True
        elif sa and sb:
            qa, qb = quantiles(ga["sizes"]), quantiles(gb["sizes"])
            worst = max(rel(x, y) for x, y in zip(qa, qb))
            sizes_ok = worst <= tolerance
            size_note = "%d/%d sizes shared, p10/p50/p90 within %.1f %%" % (
                len(sa & sb), len(sa | sb), 100 * worst)
        else:
            size_note, sizes_ok = "sizes on one side only", False
        d_ops, d_bytes = rel(ga["ops"], gb["ops"]), rel(ga["bytes"], gb["bytes"])
        ok = d_ops <= tolerance and d_bytes <= tolerance and sizes_ok
        verdicts.append({"group": " ".join(key), "a_ops": ga["ops"], "b_ops": gb["ops"],
                         "a_bytes": ga["bytes"], "b_bytes": gb["bytes"], "ops_diff": d_ops,
                         "bytes_diff": d_bytes, "sizes": size_note, "pass": ok})
    return verdicts, all(v["pass"] for v in verdicts) and bool(verdicts)


def user_of(key):
    """user_NNNN in the reference's keys (conv_user_NNNN_<ms>_turn_<n>,
    user_NNNN_req_<id>), or None."""
    parts = key.split("_")
    for i in range(len(parts) - 1):
        if parts[i] == "user" and parts[i + 1].isdigit():
            return "user_" + parts[i + 1]
    return None


def per_user_prefill(rows):
    """Each user's Prefill write sizes in trace order."""
    users = collections.defaultdict(list)
    for row in rows:
        if row["Operation"] == "Write" and row["Phase"] == "Prefill":
            user = user_of(row["Key"])
            if user:
                users[user].append(int(row["Object_Size_Bytes"]))
    return users


def request_sequences(a_rows, b_rows):
    """How many of each user's requests (prefill writes), over the requests
    both runs made, have the same size in both: the per-request draws, free
    of where the runs stopped and of how the users interleave."""
    a, b = per_user_prefill(a_rows), per_user_prefill(b_rows)
    same = common = 0
    for user in set(a) & set(b):
        n = min(len(a[user]), len(b[user]))
        common += n
        same += sum(1 for x, y in zip(a[user][:n], b[user][:n]) if x == y)
    return same, common


def table(verdicts, a_name, b_name):
    lines = ["| Operation Tier Phase | %s ops | %s ops | ops diff | %s bytes | %s bytes | "
             "bytes diff | object sizes | pass |" % (a_name, b_name, a_name, b_name),
             "|---|---:|---:|---:|---:|---:|---:|---|---|"]
    for v in verdicts:
        lines.append("| %s | %d | %d | %.2f %% | %d | %d | %.2f %% | %s | %s |" % (
            v["group"], v["a_ops"], v["b_ops"], 100 * v["ops_diff"], v["a_bytes"], v["b_bytes"],
            100 * v["bytes_diff"], v["sizes"], "yes" if v["pass"] else "**no**"))
    return "\n".join(lines)


# --- Self-test of the comparison ----------------------------------------

def perturbed(rows, how, rng):
    """A copy of rows with one kind of damage the comparison must catch."""
    out = [dict(r) for r in rows]
    if how == "drop 10% of the reads":
        reads = [i for i, r in enumerate(out) if r["Operation"] == "Read"]
        drop = set(rng.sample(reads, max(1, len(reads) // 10)))
        return [r for i, r in enumerate(out) if i not in drop]
    if how == "writes 6% larger":
        for r in out:
            if r["Operation"] == "Write":
                r["Object_Size_Bytes"] = str(int(int(r["Object_Size_Bytes"]) * 1.06))
        return out
    if how == "one write moved to Tier-1":
        for r in out:
            if r["Operation"] == "Write" and r["Tier"] == "Tier-2":
                r["Tier"] = "Tier-1"
                return out
    if how == "shuffled timestamps and keys":  # must still pass: neither is compared
        keys = [r["Key"] for r in out]
        rng.shuffle(keys)
        for r, k in zip(out, keys):
            r["Key"] = k
            r["Timestamp"] = "%.6f" % (float(r["Timestamp"]) + 100)
        return out
    raise ValueError(how)


def selftest(path, tolerance):
    rows = read_trace(path)
    rng = random.Random(1)
    failures = []
    _, same = compare(rows, rows, tolerance)
    print("itself: %s" % ("pass" if same else "FAIL"))
    if not same:
        failures.append("a trace against itself fails")
    for how, should_pass in (("drop 10% of the reads", False), ("writes 6% larger", False),
                             ("one write moved to Tier-1", False),
                             ("shuffled timestamps and keys", True)):
        verdicts, ok = compare(rows, perturbed(rows, how, rng), tolerance)
        print("%s: %s (expected %s)" % (how, "pass" if ok else "fail",
                                        "pass" if should_pass else "fail"))
        if ok != should_pass:
            failures.append(how)
            print(table(verdicts, "trace", "perturbed"))
    if failures:
        raise SystemExit("selftest: the comparison misjudged: " + ", ".join(failures))
    print("selftest passed")


# --- Running both programs -------------------------------------------------

# The reference's user templates (its config.yaml): context, generation
# (tokens) and think time (seconds) ranges.
TEMPLATES = {
    "chatbot": ((512, 4096), (50, 200), (0.1, 0.5)),
    "coding": ((4096, 25000), (100, 500), (0.2, 1.0)),
    "document": ((4096, 16384), (200, 800), (0.3, 1.5)),
}


def scaled_templates(scale):
    """Token ranges divided by `scale` (think times kept), so that the runs'
    I/O is small next to the think times."""
    out = {}
    for name, (ctx, gen, think) in TEMPLATES.items():
        out[name] = ([max(1, ctx[0] // scale), max(1, ctx[1] // scale)],
                     [max(1, gen[0] // scale), max(1, gen[1] // scale)], list(think))
    return out


def write_reference_config(a):
    """The reference's config.yaml, with scaled user templates when asked."""
    src = os.path.join(a.reference, "config.yaml")
    if a.scale_templates <= 1:
        return src
    t = scaled_templates(a.scale_templates)
    with open(src) as f:
        lines = f.read().splitlines()
    out, user = [], None
    for line in lines:
        stripped = line.strip()
        if line.startswith("  ") and not line.startswith("    ") and stripped.rstrip(":") in t:
            user = stripped.rstrip(":")
        elif not line.startswith(" ") and stripped and not stripped.startswith("#"):
            user = None
        if user and stripped.startswith(("context_range:", "generation_range:")):
            which = 0 if stripped.startswith("context") else 1
            line = "    %s: [%d, %d]" % (stripped.split(":")[0], *t[user][which])
        out.append(line)
    path = os.path.join(a.work, "reference_config.yaml")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
    return path


def template_overrides(a):
    if a.scale_templates <= 1:
        return []
    ov = []
    for name, (ctx, gen, _) in scaled_templates(a.scale_templates).items():
        ov += ["++workload.kv_cache.users.%s.context_min=%d" % (name, ctx[0]),
               "++workload.kv_cache.users.%s.context_max=%d" % (name, ctx[1]),
               "++workload.kv_cache.users.%s.generation_min=%d" % (name, gen[0]),
               "++workload.kv_cache.users.%s.generation_max=%d" % (name, gen[1])]
    return ov


def run_reference(a, trace, cache="reference_cache", output="reference.json"):
    """kv-cache.py with --io-trace-log: the trace and the results file."""
    out = os.path.join(a.work, output)
    cmd = [a.python, "kv-cache.py", "--config", a.config, "--model", a.model,
           "--num-users", str(a.users), "--duration", str(a.duration),
           "--max-requests", str(a.requests), "--gpu-mem-gb", str(a.gpu_mem_gb),
           "--cpu-mem-gb", str(a.cpu_mem_gb), "--storage-capacity-gb", str(a.storage_gb),
           "--cache-dir", os.path.join(a.work, cache), "--generation-mode", "none",
           "--seed", str(a.seed), "--output", out, "--io-trace-log", trace]
    print("$ (cd %s) %s" % (a.reference, " ".join(cmd)), flush=True)
    p = subprocess.run(cmd, cwd=a.reference, capture_output=True, text=True)
    if p.returncode != 0:
        sys.stderr.write(p.stdout[-4000:] + p.stderr[-4000:])
        raise SystemExit("the reference failed (exit %d)" % p.returncode)
    return cmd


def run_iomimic(a, trace):
    """iomimic's KV-cache workflow with the same settings, writing the
    reference's trace format (kv_cache.io_trace_log)."""
    out = os.path.join(a.work, "iomimic_run")
    cmd = [a.iomimic, "run", "-q", "workload=" + a.workload,
           "++workload.kv_cache.model=" + a.model,
           "++workload.kv_cache.num_users=%d" % a.users,
           "++workload.kv_cache.max_requests=%d" % a.requests,
           "++workload.kv_cache.duration=%d" % a.duration,
           "++workload.kv_cache.gpu_mem_gb=%g" % a.gpu_mem_gb,
           "++workload.kv_cache.cpu_mem_gb=%g" % a.cpu_mem_gb,
           "++workload.kv_cache.storage_capacity_gb=%g" % a.storage_gb,
           "++workload.kv_cache.seed=%d" % a.seed,
           "++workload.kv_cache.generation_mode=none",
           "++workload.kv_cache.max_concurrent_allocs=0",
           "++workload.kv_cache.io_trace_log=" + trace,
           "++workload.storage.storage_root=" + os.path.join(a.work, "iomimic_cache"),
           "++workload.output.folder=" + out] + template_overrides(a) + a.override
    if a.trace_only:
        cmd.append("++workload.kv_cache.trace_only=True")
    print("$ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.stderr.write(p.stdout[-4000:] + p.stderr[-4000:])
        raise SystemExit("iomimic failed (exit %d)" % p.returncode)
    return cmd


def git_commit(path):
    p = subprocess.run(["git", "-C", path, "rev-parse", "--short", "HEAD"], capture_output=True,
                       text=True)
    return p.stdout.strip() if p.returncode == 0 else "unknown"


def within_spread(verdicts, baseline, tolerance):
    """Whether every group of iomimic's comparison is within the tolerance or
    within twice the reference's own run-to-run difference of that group."""
    spread = {v["group"]: max(v["ops_diff"], v["bytes_diff"]) for v in baseline}
    return all(max(v["ops_diff"], v["bytes_diff"]) <= max(tolerance, 2 * spread.get(v["group"], 0))
               for v in verdicts)


def sequences_line(a_rows, b_rows):
    same, common = request_sequences(a_rows, b_rows)
    return ("Per-user request sequences: %d of the %d requests both runs made (each user's "
            "first ones) have the same prefill size." % (same, common))


def run_both(a):
    os.makedirs(a.work, exist_ok=True)
    for name in ("reference_cache", "reference_cache2", "iomimic_cache", "iomimic_run"):
        shutil.rmtree(os.path.join(a.work, name), ignore_errors=True)
    ref_trace = os.path.join(a.work, "reference_trace.csv")
    ref2_trace = os.path.join(a.work, "reference_trace2.csv")
    iom_trace = os.path.join(a.work, "iomimic_trace.csv")
    for t in (ref_trace, ref2_trace, iom_trace):
        if os.path.exists(t):
            os.remove(t)
    a.config = write_reference_config(a)
    ref_cmd = run_reference(a, ref_trace)
    iom_cmd = run_iomimic(a, iom_trace)
    ref_rows, iom_rows = read_trace(ref_trace), read_trace(iom_trace)
    verdicts, ok = compare(ref_rows, iom_rows, a.tolerance)
    text = table(verdicts, "reference", "iomimic") + "\n\n" + sequences_line(ref_rows, iom_rows)
    if a.baseline:
        run_reference(a, ref2_trace, cache="reference_cache2", output="reference2.json")
        ref2_rows = read_trace(ref2_trace)
        baseline, _ = compare(ref_rows, ref2_rows, a.tolerance)
        spread_ok = within_spread(verdicts, baseline, a.tolerance)
        text += ("\n\nThe reference against itself (a second run, same settings):\n\n" +
                 table(baseline, "reference", "reference again") + "\n\n" +
                 sequences_line(ref_rows, ref2_rows) +
                 "\n\nWithin 5 %% or twice the reference's own difference in every group: "
                 "%s." % ("yes" if spread_ok else "no"))
    print(text)
    print("fidelity: %s" % ("PASS" if ok else "FAIL"))
    if a.markdown:
        write_markdown(a, ref_cmd, iom_cmd, ref_rows, iom_rows, text, ok)
    return ok


def write_markdown(a, ref_cmd, iom_cmd, ref_rows, iom_rows, text, ok):
    source = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    lines = [
        "## %s: %s, %d user(s), %s, seed %d%s" % (
            datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            a.model, a.users,
            "%d requests" % a.requests if a.requests else "%d s" % a.duration, a.seed,
            (", token ranges / %d" % a.scale_templates if a.scale_templates > 1 else "") +
            (", iomimic trace-only" if a.trace_only else "")),
        "",
        "iomimic commit %s; reference at %s." % (git_commit(source), a.reference),
        "",
        "Reference: `%s`" % " ".join(ref_cmd[1:]),
        "",
        "iomimic: `%s`" % " ".join(os.path.basename(c) if i == 0 else c
                                   for i, c in enumerate(iom_cmd)),
        "",
        "Rows: reference %d, iomimic %d. Tolerance %.0f %% on operations and bytes per group."
        % (len(ref_rows), len(iom_rows), 100 * a.tolerance),
        "",
        text,
        "",
        "Result: **%s**." % ("pass" if ok else "fail"),
        "",
    ]
    with open(a.markdown, "a") as f:
        f.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    c = sub.add_parser("compare", help="compare two traces")
    c.add_argument("a")
    c.add_argument("b")
    s = sub.add_parser("selftest", help="the comparison on a trace and perturbed copies")
    s.add_argument("trace")
    r = sub.add_parser("run", help="run the reference and iomimic, compare their traces")
    r.add_argument("--reference", required=True, help="the kv_cache_benchmark folder")
    r.add_argument("--iomimic", required=True)
    r.add_argument("--python", default="/usr/bin/python3")
    r.add_argument("--workload", default="kvcache_opt1_8b",
                   help="base workload; it must keep the reference's user templates")
    r.add_argument("--model", default="llama3.1-8b")
    r.add_argument("--users", type=int, default=1)
    r.add_argument("--requests", type=int, default=40)
    r.add_argument("--duration", type=int, default=120,
                   help="upper bound in seconds; --requests ends the runs")
    r.add_argument("--seed", type=int, default=42)
    r.add_argument("--gpu-mem-gb", type=float, default=0)
    r.add_argument("--cpu-mem-gb", type=float, default=0)
    r.add_argument("--storage-gb", type=float, default=100)
    r.add_argument("--scale-templates", type=int, default=1,
                   help="divide the user templates' token ranges by this in both runs "
                        "(think times kept), so that I/O stays small next to think time")
    r.add_argument("--baseline", action="store_true",
                   help="run the reference a second time and compare it with itself too: "
                        "the run-to-run spread of a multi-user reference")
    r.add_argument("--trace-only", action="store_true",
                   help="run iomimic with kv_cache.trace_only (no I/O, as the reference's "
                        "--io-trace-log mode)")
    r.add_argument("--override", action="append", default=[],
                   help="extra ++workload.k=v for iomimic (repeatable)")
    r.add_argument("--work", default="kvcache_fidelity_work")
    r.add_argument("--markdown", help="append the result to this Markdown file")
    for p in (c, s, r):
        p.add_argument("--tolerance", type=float, default=0.05)
    a = ap.parse_args()
    if a.command == "compare":
        rows_a, rows_b = read_trace(a.a), read_trace(a.b)
        verdicts, ok = compare(rows_a, rows_b, a.tolerance)
        print(table(verdicts, "A", "B"))
        print("per-user request sequences: %d of %d the same" % request_sequences(rows_a, rows_b))
        print("comparison: %s" % ("PASS" if ok else "FAIL"))
        return 0 if ok else 1
    if a.command == "selftest":
        selftest(a.trace, a.tolerance)
        return 0
    a.work = os.path.abspath(a.work)
    a.reference = os.path.abspath(a.reference)
    return 0 if run_both(a) else 1


if __name__ == "__main__":
    sys.exit(main())
