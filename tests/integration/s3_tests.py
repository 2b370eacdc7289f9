#!/usr/bin/python3
"""The s3 back end against a real S3 server: Ceph's radosgw started on
loopback by scripts/s3_server.sh (it checks SigV4 signatures strictly), with
boto3 (Debian python3-boto3) as the independent client that lists and reads
back what iomimic wrote (docs/s3.md).

The server is shared by the tests of one build: s3_server_start (a ctest
fixture) starts it under <build>/tests/work/s3-server, s3_server_stop stops
it. A test run on its own starts it when it is not running. When the server
cannot be installed (no ceph-mon, ceph-osd, radosgw), every test is skipped
with a message (exit 77, ctest's SKIP_RETURN_CODE).

Usage: s3_tests.py <test-name> --iomimic BIN --source DIR --work DIR
"""

import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys

import iomimic_tests as harness
from iomimic_tests import fail, run

SKIP = 77


def args():
    return harness.ARGS


def work(*parts):
    return os.path.join(args().work, *parts)


def server_dir():
    return os.path.join(os.path.dirname(os.path.abspath(args().work)), "s3-server")


def server_port():
    # One port per build folder, so that several checkouts can test at once.
    digest = hashlib.sha1(server_dir().encode()).digest()
    return 20000 + int.from_bytes(digest[:2], "big") % 10000


def script():
    return os.path.join(args().source, "scripts", "s3_server.sh")


def skip_without_server():
    missing = [t for t in ("ceph-mon", "ceph-osd", "radosgw", "radosgw-admin")
               if shutil.which(t) is None]
    if missing:
        print("SKIP: the S3 server cannot run here: %s not installed (scripts/deps.sh --test installs "
              "ceph-mon ceph-osd radosgw)" % ", ".join(missing))
        sys.exit(SKIP)


def server_env():
    """Starts the server when it is not running; returns its environment."""
    skip_without_server()
    env_vars = dict(os.environ, IOMIMIC_S3_PORT=str(server_port()))
    pid = os.path.join(server_dir(), "radosgw.pid")
    running = False
    if os.path.exists(pid):
        try:
            os.kill(int(open(pid).read().strip()), 0)
            running = True
        except (OSError, ValueError):
            running = False
    cmd = [script(), "env" if running else "start", server_dir()]
    p = subprocess.run(cmd, env=env_vars, capture_output=True, text=True, timeout=240)
    if p.returncode != 0:
        fail("s3_server.sh %s failed:\n%s%s" % (cmd[1], p.stdout, p.stderr))
    out = {}
    for line in p.stdout.splitlines():
        m = re.match(r"export (\w+)=(.*)", line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def s3_env():
    """os.environ with the server's credentials (AWS_*)."""
    e = dict(os.environ)
    e.update(server_env())
    return e


def boto3_client(env):
    import boto3
    import botocore.config
    return boto3.client(
        "s3", endpoint_url=env["AWS_ENDPOINT_URL"], aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"], region_name="us-east-1",
        config=botocore.config.Config(s3={"addressing_style": "path"}))


def list_keys(client, bucket, prefix):
    keys = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for o in page.get("Contents", []):
            keys[o["Key"]] = o["Size"]
    return keys


def expect_nothing_left(client, bucket, prefix):
    """After a failed upload: no object under prefix/ and no multipart upload
    in progress there."""
    keys = list_keys(client, bucket, prefix + "/")
    if keys:
        fail("objects visible after a failed upload: %s" % keys)
    uploads = client.list_multipart_uploads(Bucket=bucket, Prefix=prefix + "/").get("Uploads", [])
    if uploads:
        fail("multipart uploads left in progress: %s" % uploads)


def uniq(prefix):
    """A prefix of this process: a server kept between runs holds older ones."""
    return "run%d/%s" % (os.getpid(), prefix)


def small(env, prefix, out, fmt="npz", files=6, extra=()):
    """A small run on the s3 back end: data under s3://<bucket>/<prefix>."""
    return [
        "workload=quickstart",
        "++workload.workflow.generate_data=True",
        "++workload.workflow.evaluation=False",
        "++workload.storage.storage_type=s3",
        "++workload.storage.storage_root=" + env["IOMIMIC_S3_BUCKET"],
        "++workload.storage.storage_options.endpoint_url=" + env["AWS_ENDPOINT_URL"],
        "++workload.dataset.format=" + fmt,
        "++workload.dataset.data_folder=s3://%s/%s" % (env["IOMIMIC_S3_BUCKET"], prefix),
        "++workload.dataset.num_files_train=%d" % files,
        "++workload.dataset.num_files_eval=0",
        "++workload.dataset.num_subfolders_train=0",
        "++workload.dataset.num_samples_per_file=1",
        "++workload.dataset.record_length_bytes=65536",
        "++workload.dataset.record_length_bytes_stdev=0",
        "++workload.reader.batch_size=2",
        "++workload.reader.read_threads=2",
        "++workload.train.epochs=1",
        "++workload.train.computation_time=0.001",
        "++workload.output.folder=" + out,
    ] + list(extra)


def expect_one_error(p, pattern):
    lines = [l for l in p.stderr.splitlines() if l.strip() and "warning" not in l]
    if p.returncode == 0:
        fail("expected a non-zero exit")
    if len(lines) != 1 or not lines[0].startswith("iomimic: error: "):
        fail("expected exactly one 'iomimic: error:' line, got:\n" + p.stderr)
    if not re.search(pattern, lines[0]):
        fail("error line %r does not match %r" % (lines[0], pattern))
    print("error as expected: " + lines[0])


# --- the server as a ctest fixture --------------------------------------------

def test_s3_server_start():
    env = server_env()
    print("S3 server at %s, bucket %s" % (env["AWS_ENDPOINT_URL"], env["IOMIMIC_S3_BUCKET"]))


def test_s3_server_stop():
    if os.path.isdir(server_dir()):
        run([script(), "stop", server_dir()])


# --- tests --------------------------------------------------------------------

def listening_addresses(pid):
    """(address, port) of every TCP socket process `pid` listens on, read as
    `ss -ltnp` reads them (/proc/<pid>/fd and /proc/<pid>/net/tcp{,6})."""
    inodes = set()
    for fd in glob.glob("/proc/%d/fd/*" % pid):
        try:
            m = re.match(r"socket:\[(\d+)\]", os.readlink(fd))
        except OSError:
            continue
        if m:
            inodes.add(m.group(1))
    out = []
    for table, width in (("tcp", 8), ("tcp6", 32)):
        try:
            lines = open("/proc/%d/net/%s" % (pid, table)).read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            cols = line.split()
            if cols[3] != "0A" or cols[9] not in inodes:  # 0A: LISTEN
                continue
            addr, port = cols[1].split(":")
            raw = bytes.fromhex(addr)
            if width == 8:
                text = ".".join(str(b) for b in reversed(raw))
            else:  # four little-endian 32-bit words
                words = [raw[i:i + 4][::-1] for i in range(0, 16, 4)]
                text = "[" + b"".join(words).hex() + "]"
            out.append((text, int(port, 16)))
    return out


def test_s3_server_loopback_only():
    """Every daemon of scripts/s3_server.sh (monitor, OSD, radosgw) listens
    on 127.0.0.1 only (docs/s3.md: a server on loopback); the OSD bound
    0.0.0.0:6800-6803 until it was given public and cluster addresses."""
    server_env()
    seen = 0
    for name in ("mon", "osd", "radosgw"):
        pid = int(open(os.path.join(server_dir(), name + ".pid")).read().strip())
        listening = listening_addresses(pid)
        if not listening:
            fail("%s (pid %d) listens on nothing that /proc shows" % (name, pid))
        for addr, port in listening:
            print("%s listens on %s:%d" % (name, addr, port))
            seen += 1
            if addr != "127.0.0.1":
                fail("%s listens on %s:%d, outside loopback" % (name, addr, port))
    print("%d listening sockets, all on 127.0.0.1" % seen)


def test_s3_conformance():
    """The storage conformance suite on s3 against the server, under a fresh
    prefix of its bucket (--root), as docs/plugins.md describes: every case
    runs on s3 and passes, and what the cases wrote is removed."""
    env = s3_env()
    bucket = env["IOMIMIC_S3_BUCKET"]
    prefix = uniq("conformance")
    p = run([args().iomimic, "conformance", "--plugin", "s3", "--root",
             "s3=%s/%s" % (bucket, prefix)], env=env)
    if "plugins under test: storage s3" not in p.stdout or "Status: SUCCESS" not in p.stdout:
        fail("the conformance cases must run on s3 and pass")
    m = re.search(r"assertions:\s+(\d+) \|\s+(\d+) passed", p.stdout)
    if not m or int(m.group(1)) < 100 or m.group(1) != m.group(2):
        fail("expected the storage cases' assertions, all passed")
    left = list_keys(boto3_client(env), bucket, prefix + "/")
    if left:
        fail("the cases left objects: %s" % sorted(left)[:5])

def test_s3_shard_format_conformance():
    """The format conformance suite of the shard formats (webdataset, mds)
    on s3 against the server, under a fresh prefix of its bucket (--root):
    every case runs on s3 and passes."""
    env = s3_env()
    bucket = env["IOMIMIC_S3_BUCKET"]
    prefix = uniq("format-conformance")
    p = run([args().iomimic, "conformance", "--plugin", "webdataset", "--plugin", "mds",
             "--storage", "s3", "--root", "s3=%s/%s" % (bucket, prefix)], env=env)
    if "plugins under test: format mds format webdataset" not in p.stdout or \
            "Status: SUCCESS" not in p.stdout or "skipped:" in p.stdout:
        fail("the format cases of webdataset and mds must run on s3 and pass")
    written = list_keys(boto3_client(env), bucket, prefix + "/")
    if not any(k.endswith(".tar") for k in written) or \
            not any(k.endswith("/index.json") for k in written):
        fail("no shard or index object under %s/: %s" % (prefix, sorted(written)[:5]))
    print("%d objects written on s3 by the format cases" % len(written))


def test_s3_mds_through_shard_cache():
    """MDS shards on s3 read through the shard_cache decorator (s3 as its
    inner back end): every shard and index downloaded once, later samples
    served from the local cache, the run's statistics say so."""
    env = s3_env()
    prefix = uniq("mds-cache")
    out = work("mds-cache-gen")
    run([args().iomimic, "run", "-q"] + small(env, prefix, out, fmt="mds", extra=[
        "++workload.dataset.num_samples_per_file=8",
        "++workload.dataset.record_length_bytes=4096"]), env=env)
    cache = work("mds-cache-folder")
    out = work("mds-cache")
    run([args().iomimic, "run", "-q"] + small(env, prefix, out, fmt="mds", extra=[
        "++workload.dataset.num_samples_per_file=8",
        "++workload.dataset.record_length_bytes=4096",
        "++workload.workflow.generate_data=False",
        "++workload.train.epochs=2",
        "++workload.storage.backend=shard_cache",
        "++workload.storage.options={inner: s3, inner.endpoint_url: %s, cache_dir: %s, "
        "capacity: 64M}" % (env["AWS_ENDPOINT_URL"], cache)]), env=env)
    s = harness.load_strict_json(os.path.join(out, "summary.json"))["iomimic"]
    storage = s["plugins"]["storage"]
    stats = storage.get("statistics", {})
    if storage["name"] != "shard_cache" or stats.get("shard_cache_downloads") != 12:
        fail("expected 6 shards and 6 indexes downloaded from s3 once: %s" %
             json.dumps(storage))
    # (Two reader threads may both open a shard's index the first time.)
    if stats.get("shard_cache_hits", 0) < 2 * 6 * 8 - 6:
        fail("expected every later open a hit: %s" % json.dumps(stats))
    print("shard_cache over s3: %s" % json.dumps(stats, sort_keys=True))


def test_s3_plugin_unit_live():
    """The plugin's own tests, live cases included, against the server."""
    env = s3_env()
    binary = os.path.join(os.path.dirname(args().iomimic), "iomimic_storage_s3_test")
    if not os.path.exists(binary):
        fail("%s not built" % binary)
    env["IOMIMIC_S3_TEST_ENDPOINT"] = env["AWS_ENDPOINT_URL"]
    p = run([binary], env=env)
    if "live test skipped" in p.stdout + p.stderr:
        fail("the live cases did not run")


def test_s3_format_matrix():
    """Several formats generated and trained on s3; boto3 lists the objects
    with the sizes iomimic reported and reads them back."""
    env = s3_env()
    client = boto3_client(env)
    bucket = env["IOMIMIC_S3_BUCKET"]
    formats = ["npz", "npy", "hdf5", "png", "jpeg", "tfrecord", "csv", "indexed_binary",
               "parquet", "webdataset", "mds"]
    plugins = run([args().iomimic, "plugins"], env=env).stdout
    ran = []
    for fmt in formats:
        if not re.search(r"^format\s+%s\s" % fmt, plugins, re.M):
            continue
        prefix = uniq("matrix/%s" % fmt)
        out = work(fmt)
        # tf.data reads every format, tfrecord included.
        run([args().iomimic, "run", "-q"] + small(env, prefix, out, fmt=fmt, extra=[
            "++workload.framework=tensorflow", "++workload.reader.data_loader=tensorflow"]),
            env=env)
        s = harness.load_strict_json(os.path.join(out, "summary.json"))
        io = s["iomimic"]
        if io["plugins"]["storage"]["name"] != "s3":
            fail(fmt + ": the run did not use the s3 back end")
        if io["bytes_read"] <= 0:
            fail(fmt + ": nothing was read")
        # The same objects read again through ranged GETs of 16 KiB.
        ranged = work(fmt + "-ranged")
        run([args().iomimic, "run", "-q"] + small(env, prefix, ranged, fmt=fmt, extra=[
            "++workload.framework=tensorflow", "++workload.reader.data_loader=tensorflow",
            "++workload.workflow.generate_data=False",
            "++workload.storage.options.read_mode=ranged",
            "++workload.storage.options.range_size=16K"]), env=env)
        rio = harness.load_strict_json(os.path.join(ranged, "summary.json"))["iomimic"]
        stats = rio["plugins"]["storage"].get("statistics", {})
        if rio["plugins"]["storage"]["data_path"] != "s3-ranged-get" or \
                stats.get("s3_ranged_gets", 0) <= 0 or rio["bytes_read"] <= 0:
            fail("%s: ranged reads did not run: %s" % (fmt, json.dumps(rio["plugins"]["storage"])))
        keys = list_keys(client, bucket, prefix + "/train/")
        data = {k: v for k, v in keys.items() if not k.endswith(".idx")}
        if len(data) < 6:
            fail("%s: boto3 lists %d data objects under %s/train/, expected 6: %s" %
                 (fmt, len(data), prefix, sorted(keys)))
        if any(k.endswith(".iomimic-partial") or ".iomimic-complete" in k for k in keys):
            fail("%s: temporary or record objects on s3: %s" % (fmt, sorted(keys)))
        first = sorted(data)[0]
        body = client.get_object(Bucket=bucket, Key=first)["Body"].read()
        if len(body) != data[first] or len(body) == 0:
            fail("%s: boto3 read %d bytes of %s, listed %d" % (fmt, len(body), first, data[first]))
        if fmt == "npz":
            import io as pyio
            import numpy
            x = numpy.load(pyio.BytesIO(body))["x"]
            print("numpy reads %s from s3: x %s %s" % (first, x.shape, x.dtype))
        ran.append(fmt)
    print("s3 matrix: %s" % ", ".join(ran))
    if len(ran) < 5:
        fail("fewer than 5 formats ran on s3: %s" % ran)


def test_s3_checkpoint_multipart():
    """A checkpoint workload writes multipart objects (5 MiB parts) to s3;
    boto3 sees each at its planned size; they are read back."""
    env = s3_env()
    client = boto3_client(env)
    bucket = env["IOMIMIC_S3_BUCKET"]
    out = work("out")
    run([args().iomimic, "run", "-q", harness.workload("llama_8b_zero3")] +
        harness.LLAMA_SHRINK +
        ["++workload.storage.storage_type=s3",
         "++workload.storage.storage_root=" + bucket,
         "++workload.storage.storage_options.endpoint_url=" + env["AWS_ENDPOINT_URL"],
         "++workload.storage.options.multipart_threshold=5M",
         "++workload.storage.options.part_size=5M",
         "++workload.checkpoint.checkpoint_folder=s3://%s/%s" % (bucket, uniq("ckpt")),
         "++workload.output.folder=" + out], env=env)
    keys = list_keys(client, bucket, uniq("ckpt") + "/")
    if not keys:
        fail("no checkpoint objects under s3://%s/ckpt/" % bucket)
    s = harness.load_strict_json(os.path.join(out, "summary.json"))
    stats = s["iomimic"]["plugins"]["storage"].get("statistics", {})
    print("checkpoint objects: %d, %d bytes; statistics %s" %
          (len(keys), sum(keys.values()), json.dumps(stats)))
    if sum(keys.values()) <= 0:
        fail("checkpoint objects are empty")
    if not any(v > 5 << 20 for v in keys.values()):
        fail("no checkpoint object above the 5 MiB multipart threshold")
    big = max(keys, key=keys.get)
    head = client.head_object(Bucket=bucket, Key=big)
    if "-" not in head["ETag"]:
        fail("%s was not written as a multipart upload (ETag %s)" % (big, head["ETag"]))


def test_s3_wrong_secret():
    """A wrong secret is exactly one clear 403 error line and a non-zero exit."""
    env = s3_env()
    env["AWS_SECRET_ACCESS_KEY"] = "not-the-secret-0123456789"
    p = run([args().iomimic, "run"] + small(env, uniq("wrong"), work("out")), env=env, expect_ok=False)
    expect_one_error(p, r"HTTP 403.*access denied")
    if "not-the-secret" in p.stdout + p.stderr:
        fail("the secret was printed")


def test_s3_failed_multipart_leaves_no_object():
    """A generation whose multipart upload fails midway (plugin option
    fail_after_parts) leaves no object and no upload in progress."""
    env = s3_env()
    client = boto3_client(env)
    bucket = env["IOMIMIC_S3_BUCKET"]
    prefix = uniq("failing")
    p = run([args().iomimic, "generate"] + small(env, prefix, work("out"), files=2, extra=[
        "++workload.dataset.record_length_bytes=12582912",
        "++workload.storage.options.multipart_threshold=5M",
        "++workload.storage.options.part_size=5M",
        "++workload.storage.options.parts_in_flight=1",
        "++workload.storage.options.fail_after_parts=1"]), env=env, expect_ok=False)
    expect_one_error(p, r"injected failure")
    expect_nothing_left(client, bucket, prefix)


def test_s3_faulty_decorator_mid_upload():
    """The faulty decorator over s3 fails a write after a multipart part went
    up: the core aborts the file (File::Abort through the decorator), so no
    object and no upload in progress remain."""
    env = s3_env()
    client = boto3_client(env)
    bucket = env["IOMIMIC_S3_BUCKET"]
    prefix = uniq("faulty")
    manifest = work("faulty_s3.yaml")
    with open(manifest, "w") as f:
        f.write("""model: {name: faulty_s3}
framework: pytorch
workflow: {generate_data: True, train: False}
dataset:
  data_folder: s3://%s/%s
  format: npz
  num_files_train: 2
  num_samples_per_file: 1
  record_length_bytes: 33554432
storage:
  backend: faulty
  options:
    inner: s3
    inner.endpoint_url: %s
    inner.multipart_threshold: 5M
    inner.part_size: 5M
    inner.parts_in_flight: 1
    mode: enospc
    error_rate: 1
    after_ops: 3
reader: {batch_size: 1}
""" % (bucket, prefix, env["AWS_ENDPOINT_URL"]))
    p = run([args().iomimic, "generate", manifest, "++workload.output.folder=" + work("out")],
            env=env, expect_ok=False)
    expect_one_error(p, r"injected ENOSPC")
    expect_nothing_left(client, bucket, prefix)


def test_s3_resume_skips_complete_objects():
    """A second generation skips complete objects; a missing one is written
    again; an object of the wrong size is refused, not overwritten."""
    env = s3_env()
    client = boto3_client(env)
    bucket = env["IOMIMIC_S3_BUCKET"]
    prefix = uniq("resume")
    ov = small(env, prefix, work("out"), files=6)
    run([args().iomimic, "generate"] + ov, env=env)
    p = run([args().iomimic, "generate"] + ov, env=env)
    if "6 already complete" not in p.stdout:
        fail("a second generation should skip the 6 complete objects:\n" + p.stdout)
    keys = sorted(list_keys(client, bucket, prefix + "/train/"))
    client.delete_object(Bucket=bucket, Key=keys[0])
    p = run([args().iomimic, "generate"] + ov, env=env)
    if "5 already complete" not in p.stdout:
        fail("generation should rewrite only the deleted object:\n" + p.stdout)
    client.put_object(Bucket=bucket, Key=keys[1], Body=b"user data")
    p = run([args().iomimic, "generate"] + ov, env=env, expect_ok=False)
    expect_one_error(p, r"refusing to overwrite")
    if client.get_object(Bucket=bucket, Key=keys[1])["Body"].read() != b"user data":
        fail("the user's object was overwritten")


def test_s3_regenerates_changed_parameters():
    """Generating again on s3 with another record length (every format) or
    compression writes the objects again; the completeness records live
    under the sibling
    prefix <data_folder>.iomimic-records/, never among the data objects.
    Before issue 31 an object counted as complete because it existed."""
    env = s3_env()
    client = boto3_client(env)
    bucket = env["IOMIMIC_S3_BUCKET"]
    cases = [(fmt, "++workload.dataset.record_length_bytes=4096")
             for fmt in ("npz", "npy", "hdf5", "png", "tiff", "jpeg", "tfrecord", "csv",
                         "parquet", "indexed_binary", "mmap_indexed_binary")]
    cases += [("npz", "++workload.dataset.compression=zip"),
              ("parquet", "++workload.dataset.compression=snappy")]
    for fmt, change in cases:
        prefix = uniq("regen-%s-%s" % (fmt, change.split(".")[-1].split("=")[0]))
        one = fmt in ("png", "tiff", "jpeg")  # one image per file
        extra = ["++workload.dataset.num_samples_per_file=%d" % (1 if one else 8)]
        if fmt == "tfrecord":  # read by the tensorflow loader
            extra += ["++workload.framework=tensorflow", "++workload.reader.data_loader=tensorflow"]
        run([args().iomimic, "generate"] + small(env, prefix, work(prefix + "-1"), fmt,
                                                  files=4, extra=extra), env=env)
        before = list_keys(client, bucket, prefix + "/")
        p = run([args().iomimic, "generate"] + small(env, prefix, work(prefix + "-2"), fmt,
                                                      files=4, extra=extra + [change]), env=env)
        after = list_keys(client, bucket, prefix + "/")
        print("%s: %s -> %s" % (fmt, sorted(before.values()), sorted(after.values())))
        if "4 of them written again" not in p.stdout or before == after:
            fail("%s on s3: %s did not write the objects again:\n%s" % (fmt, change, p.stdout))
        if any(".iomimic" in k for k in after):
            fail("%s on s3: record objects among the data: %s" % (fmt, sorted(after)))
        records = list_keys(client, bucket, prefix + ".iomimic-records/")
        if len(records) != 4:
            fail("%s on s3: %d records under %s.iomimic-records/, expected 4" %
                 (fmt, len(records), prefix))


def test_s3_credentials_in_no_output_file():
    """Credentials given in the manifest (DLIO's storage_options) and as
    overrides appear in no file of the run folder, nor in its output."""
    env = s3_env()
    key, secret = env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"]
    bare = {k: v for k, v in env.items() if not k.startswith("AWS_")}
    out = work("out")
    p = run([args().iomimic, "run"] + small(env, uniq("secret"), out, extra=[
        "++workload.storage.storage_options.access_key_id=" + key,
        "++workload.storage.storage_options.secret_access_key=" + secret,
        "++workload.train.epochs=2"]), env=bare)
    found = []
    for path in glob.glob(os.path.join(out, "**", "*"), recursive=True) + \
            glob.glob(os.path.join(out, "**", ".*", "*"), recursive=True):
        if os.path.isfile(path):
            text = open(path, "rb").read()
            for name, value in (("access key", key), ("secret", secret)):
                if value.encode() in text:
                    found.append("%s in %s" % (name, path))
    for name, value in (("access key", key), ("secret", secret)):
        if value in p.stdout + p.stderr:
            found.append(name + " in the console output")
    files = len([f for f in glob.glob(os.path.join(out, "**"), recursive=True)
                 if os.path.isfile(f)])
    if files < 3:
        fail("the run wrote only %d files" % files)
    if found:
        fail("credentials leaked: " + "; ".join(found))
    shown = run([args().iomimic, "config", "workload=quickstart",
                 "++workload.storage.storage_options.secret_access_key=" + secret]).stdout
    if secret in shown or "<redacted>" not in shown:
        fail("iomimic config printed the secret")
    config = open(os.path.join(out, ".hydra", "config.yaml")).read()
    if "<redacted>" not in config:
        fail("config.yaml does not show the redacted credentials")
    print("%d files checked, no credential in any" % files)


def test_s3_two_ranks_under_mpirun():
    """Two ranks under mpirun share generation (each writes its files),
    train on their shards and write their checkpoint shards, all on s3:
    boto3 lists every object, and the summary counts both ranks."""
    env = s3_env()
    client = boto3_client(env)
    bucket = env["IOMIMIC_S3_BUCKET"]
    out = work("out")
    harness.mpirun(2, [args().iomimic, "run", "-q"] + small(env, uniq("mpi"), out, files=8, extra=[
        "++workload.train.epochs=2",
        "++workload.checkpoint.checkpoint_folder=s3://%s/%s" % (bucket, uniq("mpi-ckpt")),
        "++workload.checkpoint.epochs_between_checkpoints=1",
        "++workload.workflow.checkpoint=True",
        "++workload.model.model_size_bytes=1048576"]), env=env)
    data = list_keys(client, bucket, uniq("mpi") + "/train/")
    if len(data) != 8:
        fail("boto3 lists %d data objects, expected 8" % len(data))
    ckpt = list_keys(client, bucket, uniq("mpi-ckpt") + "/")
    s = harness.load_strict_json(os.path.join(out, "summary.json"))
    ranks = s["num_accelerators"]
    read = s["iomimic"]["bytes_read"]
    print("2 ranks: %d data objects, %d checkpoint objects (%d bytes), %d bytes read, "
          "num_accelerators %s" % (len(data), len(ckpt), sum(ckpt.values()), read, ranks))
    if ranks != 2:
        fail("summary.json num_accelerators = %r, expected 2" % ranks)
    if not ckpt or sum(ckpt.values()) <= 0:
        fail("no checkpoint objects written by the two ranks")
    # Both epochs read every object once across the two ranks.
    if read < 2 * sum(data.values()) * 0.99:
        fail("the ranks read %d bytes, expected about %d" % (read, 2 * sum(data.values())))


def endpoint_counts(summary):
    stats = summary["iomimic"]["plugins"]["storage"].get("statistics", {})
    counts = []
    while "s3_endpoint_%d_requests" % len(counts) in stats:
        counts.append(int(stats["s3_endpoint_%d_requests" % len(counts)]))
    return counts, int(stats.get("s3_requests", 0))


def test_s3_mlperf_object_spellings():
    """MLPerf v3.0's object-storage files as written (hybrid_storage's shape): storage_type
    s3dlio, storage_root s3://bucket/prefix, endpoint_uris with round robin, an absolute
    data_folder under the prefix, checkpoints on a file:// folder. Then two ranks with
    use_mpi_endpoint_distribution over three endpoints: each rank uses its own only."""
    env = s3_env()
    client = boto3_client(env)
    bucket = env["IOMIMIC_S3_BUCKET"]
    url = env["AWS_ENDPOINT_URL"]
    # Two names of the one local server: two endpoints as the client sees them.
    other = url.replace("127.0.0.1", "localhost")
    if other == url:
        fail("the local server's endpoint %s is not on 127.0.0.1" % url)
    prefix = uniq("hybrid")
    ckpt = work("ckpt")
    manifest = work("hybrid.yaml")
    with open(manifest, "w") as f:
        f.write("""model: {name: resnet50_hybrid_storage, type: cnn}
framework: pytorch
workflow: {generate_data: True, train: True, checkpoint: True}
dataset: {data_folder: /imagenet, format: npz, num_files_train: 12, num_samples_per_file: 2,
          record_length_bytes: 65536, record_length_bytes_stdev: 0}
storage:
  storage_type: s3dlio
  storage_root: s3://%s/%s/
  endpoint_uris: [%s, %s]
  load_balance_strategy: round_robin
  storage_options: {region: us-east-1}
reader: {data_loader: pytorch, batch_size: 4, read_threads: 2}
train: {epochs: 2, computation_time: 0.001}
checkpoint: {checkpoint_folder: "file://%s/", checkpoint_after_epoch: 1,
             epochs_between_checkpoints: 1}
""" % (bucket, prefix, url, other, ckpt))
    out = work("out")
    run([args().iomimic, "run", manifest, "-q",
         "++workload.model.model_size_bytes=65536", "++workload.output.folder=" + out], env=env)
    s = harness.load_strict_json(os.path.join(out, "summary.json"))
    keys = list_keys(client, bucket, prefix + "/imagenet/train/")
    counts, total = endpoint_counts(s)
    saved = [os.path.join(d, n) for d, _, names in os.walk(ckpt) for n in names]
    print("hybrid: %d objects under s3://%s/%s/imagenet/train/, endpoint requests %s of %d, "
          "%d checkpoint files under %s" % (len(keys), bucket, prefix, counts, total, len(saved),
                                            ckpt))
    if len(keys) != 12:
        fail("expected 12 data objects under the prefix, boto3 lists %d" % len(keys))
    if len(counts) != 2 or sum(counts) != total or max(counts) - min(counts) > 1:
        fail("round robin over 2 endpoints: counts %s of %d requests" % (counts, total))
    if not saved:
        fail("no checkpoint file under the file:// folder %s" % ckpt)
    # One endpoint per rank: 2 ranks, 3 endpoints; the third gets nothing.
    out = work("out-ranks")
    harness.mpirun(2, [args().iomimic, "run", manifest, "-q",
                       "++workload.model.model_size_bytes=65536",
                       "++workload.workflow.checkpoint=False",
                       "++workload.storage.endpoint_uris=[%s,%s,%s]" % (url, other, url),
                       "++workload.storage.use_mpi_endpoint_distribution=True",
                       "++workload.output.folder=" + out], env=env)
    s = harness.load_strict_json(os.path.join(out, "summary.json"))
    counts, total = endpoint_counts(s)
    print("per rank: endpoint requests %s of %d" % (counts, total))
    if len(counts) != 3 or counts[2] != 0 or counts[0] == 0 or counts[1] == 0 or \
            sum(counts) != total:
        fail("use_mpi_endpoint_distribution: counts %s of %d (rank r must use endpoint r only)" %
             (counts, total))


def test_s3_unet3d_h100_shrunk():
    """The shipped unet3d_h100_s3.yaml, unmodified, against the local server:
    overrides only shrink it and point it at the server; boto3 lists and
    reads the objects."""
    env = s3_env()
    client = boto3_client(env)
    bucket = env["IOMIMIC_S3_BUCKET"]
    out = work("out")
    p = run([args().iomimic, "run", os.path.join(args().source, "workloads",
                                                   "unet3d_h100_s3.yaml"),
             "++workload.storage.storage_root=" + bucket,
             "++workload.dataset.data_folder=s3://%s/%s" % (bucket, uniq("unet3d")),
             "++workload.storage.storage_options.endpoint_url=" + env["AWS_ENDPOINT_URL"],
             "++workload.storage.storage_options.access_key_id=" + env["AWS_ACCESS_KEY_ID"],
             "++workload.storage.storage_options.secret_access_key=" +
             env["AWS_SECRET_ACCESS_KEY"],
             "++workload.dataset.num_files_train=42",
             "++workload.dataset.record_length_bytes=2097152",
             "++workload.train.epochs=1",
             "++workload.train.computation_time=0.01",
             "++workload.output.folder=" + out], env=env)
    s = harness.load_strict_json(os.path.join(out, "summary.json"))
    tput = s["metric"]["train_throughput_mean_samples_per_second"]
    io = s["iomimic"]
    print("unet3d_h100_s3 shrunk: %s samples/s, %d bytes read, storage %s" %
          (tput, io["bytes_read"], io["plugins"]["storage"]["name"]))
    if io["plugins"]["storage"]["name"] != "s3" or tput <= 0:
        fail("the run did not use s3 or reported no throughput")
    keys = list_keys(client, bucket, uniq("unet3d") + "/train/")
    if len(keys) != 42:
        fail("boto3 lists %d objects under unet3d/train/, expected 42" % len(keys))
    import io as pyio
    import numpy
    first = sorted(keys)[0]
    x = numpy.load(pyio.BytesIO(client.get_object(Bucket=bucket, Key=first)["Body"].read()))["x"]
    print("boto3 + numpy read %s: x %s %s" % (first, x.shape, x.dtype))


def test_s3_kvcache_quickstart():
    """The KV-cache workflow (docs/kvcache.md) with its storage tier on s3:
    the entries are objects numpy loads with tiny-1b's shape, the tier's
    bytes are the counting storage's, and without keep_entries the run
    deletes what it wrote."""
    import io as bytes_io
    import numpy as np
    env = s3_env()
    client = boto3_client(env)
    bucket = env["IOMIMIC_S3_BUCKET"]
    for keep in (True, False):
        folder = uniq("kvcache_%s" % keep)
        out = work("kv_out_%s" % keep)
        run([args().iomimic, "run", "-q", "workload=kvcache_quickstart",
             "++workload.storage.storage_type=s3",
             "++workload.storage.storage_root=" + bucket,
             "++workload.storage.storage_options.endpoint_url=" + env["AWS_ENDPOINT_URL"],
             "++workload.kv_cache.cache_folder=" + folder,
             "++workload.kv_cache.duration=3",
             "++workload.kv_cache.keep_entries=%s" % keep,
             "++workload.output.folder=" + out], env=env)
        with open(os.path.join(out, "summary.json")) as f:
            s = json.load(f)
        kv, io = s["kv_cache"], s["iomimic"]
        st = kv["tiers"]["storage"]
        written = (st["write_bytes"] + st["eviction_write_bytes"] +
                   kv["storage_header_bytes_written"] + kv["storage_cut_short_bytes_written"])
        if kv["requests"] <= 0 or io["bytes_written"] != written:
            fail("requests %d, counting storage wrote %d, the storage tier %d" %
                 (kv["requests"], io["bytes_written"], written))
        keys = list_keys(client, bucket, folder + "/rank_0/")
        if not keep:
            if keys:
                fail("objects left without keep_entries: %s" % sorted(keys)[:5])
            continue
        if not keys:
            fail("no objects under %s/rank_0/" % folder)
        for key in sorted(keys)[:3]:
            body = client.get_object(Bucket=bucket, Key=key)["Body"].read()
            a = np.load(bytes_io.BytesIO(body))
            if a.dtype != np.float16 or a.shape[:2] != (12, 2) or len(body) != 128 + a.nbytes:
                fail("%s: %s %s, %d bytes" % (key, a.dtype, a.shape, len(body)))


def test_s3_kvcache_chunked_object_tier():
    """The KV chunked mode's object tier on s3 (Dynamo KVBM's G4): host and
    a small local storage tier above a bucket. The hits per tier, demotions
    and chunks written equal the independent four-tier LRU's
    (kvcache_chunked_tests.expected_tiers); the chunks demoted to the bucket
    are objects numpy loads, of whole tokens."""
    import io as bytes_io
    import numpy as np
    import kvcache_chunked_tests as chunked
    env = s3_env()
    client = boto3_client(env)
    bucket = env["IOMIMIC_S3_BUCKET"]
    prefix = uniq("kv_object_tier")
    path = chunked.trace("object_tier.jsonl", 60, 21)
    chunk, tp = 128, 8
    caps_gb = {"cpu": 0.002, "storage": 0.004}
    want = chunked.expected_tiers(path, chunk, tp, [int(caps_gb["cpu"] * 2**30),
                                                    int(caps_gb["storage"] * 2**30), None])
    out = work("kv_object_tier")
    cmd = chunked.chunked_command(path, out, chunk, tp, str(caps_gb["storage"]), [
        "++workload.kv_cache.cpu_mem_gb=%s" % caps_gb["cpu"],
        "++workload.kv_cache.object_tier=s3",
        "++workload.kv_cache.object_tier_options.endpoint_url=" + env["AWS_ENDPOINT_URL"],
        "++workload.kv_cache.object_tier_folder=%s/%s" % (bucket, prefix),
        "++workload.kv_cache.keep_entries=True",
        "++workload.kv_cache.cache_folder=" + work("kv_object_tier_cache")])
    run(cmd, env=env)
    with open(os.path.join(out, "summary.json")) as f:
        s = json.load(f)["kv_cache_chunked"]
    got = ([s["chunk_hits"][t] for t in ("cpu", "storage", "object")], s["demotions"],
           s["deletions"], s["chunks_written"])
    if got != want:
        fail("s3 object tier: hits per tier, demotions, deletions, written %r; the LRU gives %r"
             % (got, want))
    if want[0][2] == 0:
        fail("the trace should hit the object tier: %r" % (want,))
    keys = list_keys(client, bucket, prefix + "/rank_0/")
    if not keys or s["tiers"]["object"]["write_bytes"] == 0:
        fail("no chunk objects under %s/rank_0/ (%d bytes written)" % (
            prefix, s["tiers"]["object"]["write_bytes"]))
    for key in sorted(keys)[:3]:
        body = client.get_object(Bucket=bucket, Key=key)["Body"].read()
        a = np.load(bytes_io.BytesIO(body))
        if a.nbytes % (chunked.TINY_BYTES_PER_TOKEN // tp) or a.nbytes == 0:
            fail("%s: %d bytes, not whole tokens of a chunk" % (key, a.nbytes))


def test_s3_kvcache_closed_options():
    """MLPerf Storage's three closed KV-cache options as shipped, shrunk by
    overrides only (kvcache_workflow_tests.CLOSED_OPTIONS: 4 users, 5 s (the
    local radosgw is slower than a disk), contexts / 16, small tiers), with
    the storage tier on s3: each completes
    requests, writes storage-tier objects, keeps its tier structure, has the
    summary's aggregate keys, and deletes its objects at the end."""
    from kvcache_workflow_tests import (CLOSED_OPTIONS, check_closed_option,
                                        closed_option_overrides)
    env = s3_env()
    client = boto3_client(env)
    bucket = env["IOMIMIC_S3_BUCKET"]
    for workload in CLOSED_OPTIONS:
        folder = uniq(workload)
        out = work(workload + "_out")
        run([args().iomimic, "run", "-q"] + closed_option_overrides(workload, seconds=5) + [
            "++workload.storage.storage_type=s3",
            "++workload.storage.storage_root=" + bucket,
            "++workload.storage.storage_options.endpoint_url=" + env["AWS_ENDPOINT_URL"],
            "++workload.kv_cache.cache_folder=" + folder,
            "++workload.output.folder=" + out], env=env)
        check_closed_option(workload, out, "s3")
        left = list_keys(client, bucket, folder + "/")
        if left:
            fail("%s on s3: objects left without keep_entries: %s" % (workload, sorted(left)[:3]))


def test_s3_model_load():
    """The model-loading workflow (docs/model-loading.md) on s3: the shards
    are written as objects under their own names (no temporary name), read
    back as safetensors by the spec's reader, and loaded by 4 workers in
    ranged reads of read_size: every object's bytes once, headers included;
    the page cache is reported as not measured."""
    import math
    import safetensors_check
    from model_load_tests import READ_SIZE, SHRUNK
    env = s3_env()
    client = boto3_client(env)
    bucket = env["IOMIMIC_S3_BUCKET"]
    folder = uniq("model")
    out = work("model_out")
    run([args().iomimic, "run", "-q", os.path.join(args().source, "workloads",
                                                   "model_load_70b.yaml")] + SHRUNK + [
        "++workload.storage.storage_type=s3",
        "++workload.storage.storage_root=" + bucket,
        "++workload.storage.storage_options.endpoint_url=" + env["AWS_ENDPOINT_URL"],
        "++workload.model_load.folder=" + folder,
        "++workload.model_load.read_size=%d" % READ_SIZE,
        "++workload.model_load.method=chunks", "++workload.model_load.workers=4",
        "++workload.output.folder=" + out], env=env)
    keys = sorted(list_keys(client, bucket, folder + "/"))
    shards = [k for k in keys if k.endswith(".safetensors")]
    if len(shards) < 3 or any(".partial" in k for k in keys):
        fail("objects under %s: %s" % (folder, keys))
    local = work("model_objects")
    os.makedirs(local, exist_ok=True)
    size, requests = 0, 0
    for key in shards:
        path = os.path.join(local, os.path.basename(key))
        with open(path, "wb") as f:
            f.write(client.get_object(Bucket=bucket, Key=key)["Body"].read())
        safetensors_check.check_file(path)
        _, data, n = safetensors_check.read_header(path)
        size += n
        requests += 2 + math.ceil((n - data) / READ_SIZE)
    with open(os.path.join(out, "summary.json")) as f:
        loads = json.load(f)["model_load"]["loads"]
    for cache in ("cold", "warm"):
        got = (loads[cache]["bytes"], loads[cache]["requests"])
        if got != (size, requests):
            fail("%s load: bytes, requests %r, the objects make %r" % (cache, got,
                                                                       (size, requests)))
        if loads[cache]["page_cache_before"]["ranks_measured"] != 0:
            fail("a page cache measured on object storage: %r" %
                 loads[cache]["page_cache_before"])


if __name__ == "__main__":
    harness.main(globals())
