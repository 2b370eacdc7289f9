#!/usr/bin/python3
"""Runs every workload file of MLPerf Storage v3.0's DLIO configs as written,
shrunk with overrides only, and prints one row per file: ran, refused (with
iomimic's one error line) or failed.

  bench/mlperf_v3_configs.py CONFIG_DIR [--iomimic build/bin/iomimic]
                             [--work DIR] [--s3] [--only NAME...]

CONFIG_DIR holds the YAML files of the fork's configs/dlio/workload/ (not
shipped here: fetch the fork's tree). With --s3 the object-storage files run
against the local radosgw (scripts/s3_server.sh start; its environment is
read with `s3_server.sh env`): the bucket becomes the server's, every
endpoint (endpoint_url, endpoint_uris) points at it, and files with several
endpoints get two names of the one server (127.0.0.1 and localhost), so the
summary's per-endpoint request counts show the spread. Without --s3 those
files are listed as "needs --s3".

Shrinking: at most 8 training files of at most 4 samples, records of at most
256 KiB, one epoch, compute 1 ms, checkpoints of 1 MiB, data under --work.
Nothing else is changed, so a config's storage keys, URIs and interpolations
are read as written. Prints a Markdown table; with --record, writes it to
bench/results/mlperf_v3_configs.md with the tree's commit.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

OBJECT_HINTS = ("storage_type: s3", "storage_type: object", "storage_library:",
                "endpoint_uris")


def is_object(text):
    """Data on object storage: an s3:// or az:// root or loader root, or an object
    storage type (or library) without a file:// root."""
    body = "\n".join(l.split("#", 1)[0] for l in text.splitlines())
    if re.search(r"(storage_root|data_loader_root|data_folder):\s*(s3|az)://", body):
        return True
    if re.search(r"(storage_root|data_loader_root):\s*file://", body):
        return False
    return any(h in body for h in OBJECT_HINTS)


def s3_env():
    out = subprocess.run([os.path.join(ROOT, "scripts", "s3_server.sh"), "env"], check=True,
                         capture_output=True, text=True).stdout
    env = {}
    for line in out.splitlines():
        m = re.match(r"export (\w+)=(.*)", line)
        if m:
            env[m.group(1)] = m.group(2)
    return env


def shrink(name, text, work, env):
    data = os.path.join(work, "data", name)
    ov = [
        "++workload.dataset.num_files_train=8",
        "++workload.dataset.num_files_eval=0",
        "++workload.dataset.num_subfolders_train=0",
        "++workload.train.epochs=1",
        "++workload.train.computation_time=0.001",
        "++workload.reader.batch_size=2",
        "++workload.evaluation.eval_time=0.001",
        "++workload.checkpoint.checkpoint_folder=" + os.path.join(work, "ckpt", name),
        "++workload.model.model_size_bytes=1048576",
        "++workload.output.folder=" + os.path.join(work, "out", name),
    ]
    m = re.search(r"num_samples_per_file:\s*([0-9]+)", text)
    if m and int(m.group(1)) > 4:
        ov.append("++workload.dataset.num_samples_per_file=4")
    if "llama3" in name:
        # A small transformer with the file's parallelism and layout.
        ov += ["++workload.model.num_layers=128", "++workload.model.transformer.vocab_size=1024",
               "++workload.model.transformer.hidden_size=256",
               "++workload.model.transformer.ffn_hidden_size=512"]
    m = re.search(r"record_length(?:_bytes)?:\s*([0-9.]+)", text)
    if m and float(m.group(1)) > 262144:
        ov += ["++workload.dataset.record_length_bytes=262144",
               "++workload.dataset.record_length_bytes_stdev=0"]
    if "llama3" in name or "checkpoint" in name:
        # Checkpoint files: a small model, whole mode; the fork's defaults otherwise.
        ov = [o for o in ov if "checkpoint_folder" not in o or not env]
    if env:
        bucket = env["IOMIMIC_S3_BUCKET"]
        url = env["AWS_ENDPOINT_URL"]
        if re.search(r"(storage_root|data_loader_root|data_folder):\s*az://", text):
            pass  # left as written: refused (no back end speaks Azure Blob)
        elif re.search(r"storage_root:\s*s3://", text):
            ov.append("++workload.storage.storage_root=s3://%s/%s" % (bucket, name))
            if re.search(r"data_folder:\s*s3://", text):
                ov.append("++workload.dataset.data_folder=s3://%s/%s/data" % (bucket, name))
        elif re.search(r"data_loader_root:\s*s3://", text):
            ov.append("++workload.reader.data_loader_root=s3://%s/%s" % (bucket, name))
        elif "file://" not in text:
            ov.append("++workload.storage.storage_root=" + bucket)
            ov.append("++workload.dataset.data_folder=s3://%s/%s" % (bucket, name))
        if re.search(r"checkpoint_folder:\s*s3://", text):
            # Object-storage checkpoints (the llama3 *_checkpoint files): the
            # server's bucket; their placeholders are meant to be overridden.
            ov.append("++workload.checkpoint.checkpoint_folder=s3://%s/%s/ckpt" % (bucket, name))
        if "LIBRARY_PLACEHOLDER" in text:
            ov.append("++workload.storage.storage_library=s3dlio")
        if "endpoint_uris" in text:
            ov.append("++workload.storage.endpoint_uris=[%s,%s]" %
                      (url, url.replace("127.0.0.1", "localhost")))
        else:
            ov.append("++workload.storage.storage_options.endpoint_url=" + url)
        ov.append("++workload.storage.storage_options.access_key_id=" + env["AWS_ACCESS_KEY_ID"])
        ov.append("++workload.storage.storage_options.secret_access_key=" +
                  env["AWS_SECRET_ACCESS_KEY"])
        ov.append("++workload.storage.storage_options.secure=False")
    else:
        ov.append("++workload.dataset.data_folder=" + data)
        if re.search(r"storage_root:\s*file://", text):
            ov.append("++workload.storage.storage_root=file://" + data)
    return ov


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("configs")
    ap.add_argument("--iomimic", default=os.path.join(ROOT, "build", "bin", "iomimic"))
    ap.add_argument("--work", default="/tmp/iomimic-mlperf-v3-configs")
    ap.add_argument("--s3", action="store_true")
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--record", action="store_true")
    a = ap.parse_args()
    env = s3_env() if a.s3 else {}
    names = sorted(f for f in os.listdir(a.configs) if f.endswith(".yaml"))
    if a.only:
        names = [n for n in names if n[:-5] in a.only]
    rows = []
    counts = {}
    for f in names:
        name = f[:-5]
        path = os.path.join(a.configs, f)
        text = open(path).read()
        obj = is_object(text)
        if obj and not a.s3:
            rows.append((name, "needs --s3", ""))
            counts["needs --s3"] = counts.get("needs --s3", 0) + 1
            continue
        cmd = [a.iomimic, "run", path, "-q", "++workload.workflow.generate_data=True"] + \
            shrink(name, text, a.work, env if obj else {})
        full_env = dict(os.environ)
        full_env.update(env)
        start = time.monotonic()
        p = subprocess.run(cmd, capture_output=True, text=True, env=full_env, timeout=600)
        seconds = time.monotonic() - start
        errors = [l for l in p.stderr.splitlines() if l.startswith("iomimic: error:")]
        if p.returncode == 0:
            detail = ""
            summary = os.path.join(a.work, "out", name, "summary.json")
            if os.path.exists(summary):
                s = json.load(open(summary))
                io = s.get("iomimic", {})
                storage = io.get("plugins", {}).get("storage", {})
                stats = storage.get("statistics", {})
                ends = [int(v) for k, v in sorted(stats.items())
                        if re.match(r"s3_endpoint_\d+_requests", k)]
                detail = "%s, %.1f MiB read, %.1f MiB written" % (
                    storage.get("name", "?"), io.get("bytes_read", 0) / 2**20,
                    io.get("bytes_written", 0) / 2**20)
                if ends:
                    detail += ", endpoint requests %s" % ends
            status = "ran (%.1f s)" % seconds
        elif len(errors) == 1:
            status, detail = "refused", errors[0][len("iomimic: error: "):]
        else:
            status, detail = "FAILED (exit %d)" % p.returncode, (p.stderr.strip().splitlines()
                                                               or [""])[-1]
        key = status.split(" ")[0]
        counts[key] = counts.get(key, 0) + 1
        rows.append((name, status, detail.replace("|", "\\|")))
        print("%-40s %-14s %s" % (name, status, detail), flush=True)
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    table = ["| config | result | detail |", "|---|---|---|"]
    table += ["| %s | %s | %s |" % r for r in rows]
    tally = ", ".join("%s %d" % kv for kv in sorted(counts.items()))
    text = "\n".join(table) + "\n\n%d configs: %s (iomimic %s)\n" % (len(rows), tally, commit)
    print(text)
    if a.record:
        with open(os.path.join(HERE, "results", "mlperf_v3_configs.md"), "w") as f:
            f.write("# MLPerf Storage v3.0 workload files, as written, shrunk\n\n"
                    "`bench/mlperf_v3_configs.py %s%s --record` on commit %s; "
                    "%s.\n\n" % ("CONFIG_DIR", " --s3" if a.s3 else "", commit,
                                 time.strftime("%Y-%m-%d")) + text)
    return 0 if "FAILED" not in counts else 1


if __name__ == "__main__":
    sys.exit(main())
