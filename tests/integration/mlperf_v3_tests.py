#!/usr/bin/python3
"""MLPerf Storage v3.0 on iomimic (issue 16): mlpstorage 3.0's way of
starting its DLIO fork works with iomimic in the fork's place, and the keys
the fork added to DLIO's vocabulary are honoured (docs/dlio-compat.md,
"MLPerf Storage v3.0's DLIO fork").

Usage: mlperf_v3_tests.py <test-name> --iomimic BIN --source DIR --work DIR
"""

import os
import re
import shutil
import time

import iomimic_tests as harness
from iomimic_tests import fail, load_strict_json, mpirun, run


def args():
    return harness.ARGS


def work(*parts):
    return os.path.join(args().work, *parts)


def mlpstorage_config_dir():
    """A config folder laid out as mlpstorage 3.0 ships it (configs/dlio:
    Hydra's config.yaml, workload/<model>_<accelerator>.yaml), holding the
    v3.0 workload files unmodified."""
    root = work("configs", "dlio")
    os.makedirs(os.path.join(root, "workload"), exist_ok=True)
    with open(os.path.join(root, "config.yaml"), "w") as f:
        f.write("defaults:\n - _self_\n - workload:\n"
                " - override hydra/job_logging: disabled\n"
                " - override hydra/hydra_logging: disabled\n"
                "hydra:\n  run:\n    dir: ./results/${workload.model}/${now:%Y-%m-%d}-${now:%H-%M-%S}\n")
    for name in ("dlrm_b200", "dlrm_h100", "dlrm_parquet_h100", "flux_h100", "retinanet_h100"):
        shutil.copy(os.path.join(args().source, "workloads", name + ".yaml"),
                    os.path.join(root, "workload", name + ".yaml"))
    return root


def test_mlpstorage_v3_command_line():
    """mlpstorage 3.0 runs its DLIO fork as `mpirun -n N dlio_benchmark
    workload=<model>_<accelerator> ++hydra.run.dir=DIR
    ++hydra.output_subdir=dlio_config ++workload.k=v ... --config-dir=
    <storage>/configs/dlio`, once to generate (generate_data=True,
    train=False) and once to train; its report step then reads summary.json
    and dlio_config/. Both steps, for the new workloads (parquet dlrm_b200,
    jpeg retinanet_h100), shrunk by overrides as mlpstorage's --param does,
    and its --o-direct shape (storage_type direct_fs, storage_library
    s3dlio) for the training step of one of them."""
    dlio = os.path.join(os.path.dirname(args().iomimic), "dlio_benchmark")
    config_dir = mlpstorage_config_dir()
    cases = {
        "dlrm_b200": ["++workload.dataset.num_files_train=8",
                      "++workload.dataset.num_samples_per_file=12288"],
        "retinanet_h100": ["++workload.dataset.num_files_train=64",
                           "++workload.reader.batch_size=4",
                           "++workload.train.computation_time=0.001"],
    }
    for name, shrink in cases.items():
        data = work("data", name)
        common = shrink + ["++workload.dataset.data_folder=" + data,
                           "++workload.train.epochs=1"]
        for step, flow, extra in (
                ("datagen", ["++workload.workflow.generate_data=True",
                             "++workload.workflow.train=False"], []),
                ("run", ["++workload.workflow.generate_data=False",
                         "++workload.workflow.train=True"],
                 ["++workload.storage.storage_type=direct_fs",
                  "++workload.storage.storage_options.storage_library=s3dlio"]
                 if name == "dlrm_b200" else [])):
            out = work("results", name, step)
            overrides = (["++hydra.run.dir=" + out, "++hydra.output_subdir=dlio_config"] + flow +
                         common + extra)
            p = mpirun(2, [dlio, "workload=" + name] + overrides + ["--config-dir=" + config_dir])
            # A run that only generates keeps its result files in generate/
            # of the folder given, leaving the folder to the training run.
            results = os.path.join(out, "generate") if step == "datagen" else out
            with open(os.path.join(results, "dlio_config", "overrides.yaml")) as f:
                lines = f.read().splitlines()
            if lines != ["- workload=" + name] + ["- " + o for o in overrides]:
                fail("%s %s: overrides.yaml is not Hydra's list:\n%s" % (name, step,
                                                                       "\n".join(lines)))
            for f in ("config.yaml", "hydra.yaml"):
                if not os.path.exists(os.path.join(results, "dlio_config", f)):
                    fail("%s %s: no dlio_config/%s" % (name, step, f))
            if step == "datagen":
                if "generated" not in p.stdout:
                    fail("%s datagen: no generation reported:\n%s" % (name, p.stdout))
                continue
            s = load_strict_json(os.path.join(out, "summary.json"))
            m = s["metric"]
            if s["num_accelerators"] != 2 or not m["train_au_mean_percentage"] > 0:
                fail("%s run: %d accelerators, AU %r" % (name, s["num_accelerators"],
                                                        m["train_au_mean_percentage"]))
            if not m["train_io_mean_MB_per_second"] > 0:
                fail("%s run: no throughput in summary.json" % name)
            with open(os.path.join(out, "dlio.log")) as f:
                log = f.read()
            if "[METRIC] Number of Simulated Accelerators: 2" not in log:
                fail("%s run: dlio.log lacks the [METRIC] block" % name)
            if name == "dlrm_b200":
                with open(os.path.join(out, "dlio_config", "config.yaml")) as f:
                    cfg = f.read()
                for want in ("storage_type: direct_fs", "backend: odirect",
                             "storage_library: s3dlio"):
                    if want not in cfg:
                        fail("dlrm_b200 --o-direct: config.yaml lacks %r:\n%s" % (want, cfg))
            print("%s: %d accelerators, AU %.2f%%, %.1f MB/s" %
                  (name, s["num_accelerators"], m["train_au_mean_percentage"],
                   m["train_io_mean_MB_per_second"]))


def test_fork_file_sharding():
    """iomimic.sharding=files under mpirun -np 2: rank r reads files r, r + 2,
    ... whole, every file by one rank per epoch, dealt out again in the
    next epoch when files are shuffled ({rank}_samples.csv)."""
    import csv
    data, out = work("data"), work("out")
    mpirun(2, [args().iomimic, "run"] + quick(data, out, [
        "++workload.dataset.num_files_train=16",
        "++workload.dataset.num_samples_per_file=2",
        "++workload.reader.batch_size=2",
        "++workload.reader.file_shuffle=seed",
        "++workload.reader.sample_shuffle=seed",
        "++workload.train.epochs=2",
        "++workload.iomimic.sample_log=True",
        "++workload.iomimic.sharding=files"]))
    files = {}  # (epoch, rank) -> {file: samples read}
    for rank in (0, 1):
        with open(os.path.join(out, "%d_samples.csv" % rank)) as f:
            for row in csv.DictReader(f):
                if row["phase"] == "train":
                    per = files.setdefault((int(row["epoch"]), rank), {})
                    per[int(row["file"])] = per.get(int(row["file"]), 0) + 1
    for epoch in (1, 2):
        mine = [files.get((epoch, r), {}) for r in (0, 1)]
        if set(mine[0]) & set(mine[1]):
            fail("epoch %d: files read by both ranks: %s" % (epoch, set(mine[0]) & set(mine[1])))
        if len(mine[0]) + len(mine[1]) != 16 or any(n != 2 for m in mine for n in m.values()):
            fail("epoch %d: not every file read whole by one rank: %r" % (epoch, mine))
    if set(files[(1, 0)]) == set(files[(2, 0)]):
        fail("file_shuffle did not deal the files out again in epoch 2")
    print("rank 0 read files %s, then %s" % (sorted(files[(1, 0)]), sorted(files[(2, 0)])))


def quick(data, out, extra=()):
    return ["workload=quickstart",
            "++workload.workflow.generate_data=True",
            "++workload.workflow.evaluation=False",
            "++workload.dataset.format=npy",
            "++workload.dataset.data_folder=" + data,
            "++workload.dataset.num_files_train=8",
            "++workload.dataset.num_files_eval=0",
            "++workload.dataset.num_subfolders_train=0",
            "++workload.dataset.record_length_bytes=4096",
            "++workload.dataset.record_length_bytes_stdev=0",
            "++workload.reader.batch_size=1",
            "++workload.reader.read_threads=1",
            "++workload.train.epochs=1",
            "++workload.train.computation_time=0.001",
            "++workload.output.folder=" + out] + list(extra)


def test_fork_keys():
    """Every key the fork added to DLIO's vocabulary does what it says:
    reader.write_threads sets the generation threads, dataset.skip_listing
    with listing_validation_interval sets which files are checked before
    training, storage.post_generation_settle_seconds waits before training,
    storage_type direct_fs reads with O_DIRECT, dataset.data_gen_method is
    accepted with a warning naming it."""
    iomimic = args().iomimic
    # write_threads: the generation threads per rank.
    p = run([iomimic, "generate"] + quick(work("d1"), work("o1"),
                                          ["++workload.reader.write_threads=3"]))
    if "3 thread(s) per rank" not in p.stdout:
        fail("reader.write_threads=3 did not set the generation threads:\n" + p.stdout)
    # skip_listing: with an interval of 3 files 0, 3, 6 and 7 are checked.
    data = work("d2")
    run([iomimic, "generate"] + quick(data, work("o2")))
    os.remove(os.path.join(data, "train", "img_3_of_8.npy"))
    p = run([iomimic, "run"] + quick(data, work("o3"), [
        "++workload.workflow.generate_data=False", "++workload.dataset.skip_listing=True",
        "++workload.dataset.listing_validation_interval=3"]), expect_ok=False)
    if p.returncode == 0 or not re.search(r"img_3_of_8\.npy is missing", p.stderr):
        fail("skip_listing with interval 3 did not find file 3 missing:\n" + p.stderr)
    # Without skip_listing only the first and the last are checked before
    # training: the missing file is found when it is read, naming it too.
    p = run([iomimic, "run"] + quick(data, work("o4"), [
        "++workload.workflow.generate_data=False"]), expect_ok=False)
    if p.returncode == 0 or "is missing" in p.stderr or "img_3_of_8.npy" not in p.stderr:
        fail("without skip_listing the read of file 3 should fail, naming it:\n" + p.stderr)
    # An interval of 0 checks nothing: the first file's absence is found by the read.
    os.remove(os.path.join(data, "train", "img_0_of_8.npy"))
    p = run([iomimic, "run"] + quick(data, work("o5"), [
        "++workload.workflow.generate_data=False", "++workload.dataset.skip_listing=True",
        "++workload.dataset.listing_validation_interval=0"]), expect_ok=False)
    if p.returncode == 0 or "is missing" in p.stderr:
        fail("listing_validation_interval=0 should check no file before training:\n" + p.stderr)
    # post_generation_settle_seconds: the wait lies between generation and training.
    start = time.monotonic()
    run([iomimic, "run"] + quick(work("d6"), work("o6"), [
        "++workload.storage.post_generation_settle_seconds=1.5"]))
    if time.monotonic() - start < 1.5:
        fail("post_generation_settle_seconds=1.5: the run took less than 1.5 s")
    # direct_fs: O_DIRECT reads (the odirect back end) with DLIO's own keys.
    p = run([iomimic, "config"] + quick(work("d6"), work("o7"), [
        "++workload.storage.storage_type=direct_fs"]))
    if not re.search(r"^  backend: odirect$", p.stdout, re.M):
        fail("storage_type direct_fs did not select the odirect back end:\n" + p.stdout)
    # data_gen_method: accepted, with a warning that names the key and where.
    p = run([iomimic, "config"] + quick(work("d6"), work("o8"), [
        "++workload.dataset.data_gen_method=numpy"]))
    if not re.search(r"warning: .*dataset\.data_gen_method \(numpy\)", p.stderr):
        fail("no warning for dataset.data_gen_method:\n" + p.stderr)
    p = run([iomimic, "config"] + quick(work("d6"), work("o9"), [
        "++workload.dataset.data_gen_method=fast"]), expect_ok=False)
    if p.returncode == 0 or "data_gen_method" not in p.stderr:
        fail("dataset.data_gen_method=fast was not refused:\n" + p.stderr)


def one_error(p, what):
    """The single `iomimic: error:` line of a refused command (warnings
    aside), with a non-zero exit."""
    lines = [l for l in p.stderr.splitlines() if l.strip() and ": warning: " not in l]
    if p.returncode == 0 or len(lines) != 1 or not lines[0].startswith("iomimic: error: "):
        fail("%s: expected one 'iomimic: error:' line and a non-zero exit, got exit %d:\n%s" %
             (what, p.returncode, p.stderr))
    print("%s: %s" % (what, lines[0]))
    return lines[0]


def test_fork_refusals_name_their_source():
    """The messages a user hits with MLPerf Storage v3.0's object-storage and
    checkpoint files (issue 31, item 8), on manifests of their shapes: every
    problem of pytorch_file_backend's shape in one line, a refused tfrecord
    saying it is DLIO's default for a missing dataset.format, pytorch with
    tfrecord accepted through storage_library s3dlio as the fork accepts it,
    az:// from reader.data_loader_root and llama3_1t's default-mode rank count
    at the manifest's line, and an empty endpoint_url refused, not sent to
    AWS."""
    def manifest(name, text):
        path = work(name + ".yaml")
        with open(path, "w") as f:
            f.write(text)
        return path

    backend = manifest("file_backend", "model: resnet50\n"
                       "workflow: {generate_data: False, train: True}\n"
                       "dataset:\n  data_folder: /tmp/unused\n  num_files_train: 4\n"
                       "reader:\n  data_loader: pytorch\n"
                       "  data_loader_classname: torch.utils.data.DataLoader\n"
                       "  data_loader_root: file:///tmp/dlio_data/train\n")
    line = one_error(run([args().iomimic, "config", backend], expect_ok=False), "file backend")
    for needle in ("file_backend.yaml:7:16: error: reader.data_loader: the pytorch loader cannot "
                   "read tfrecord files (dataset.format is not set: DLIO's default is tfrecord)",
                   "file_backend.yaml:7:16: reader.data_loader: 'pytorch' does not match "
                   "framework 'tensorflow' (framework is not set: DLIO's default is tensorflow)",
                   "file_backend.yaml:8:26: reader.data_loader_classname: needs "
                   "reader.data_loader_sampler"):
        if needle not in line:
            fail("file backend: %r not in the error" % needle)
    if line.count("; also ") != 2:
        fail("file backend: the three problems must be named in one line")
    s3dlio = manifest("s3dlio", "framework: pytorch\n"
                      "dataset: {data_folder: /tmp/unused, num_files_train: 4}\n"
                      "reader:\n  data_loader: pytorch\n  storage_library: s3dlio\n"
                      "  data_loader_root: s3://my-bucket/training-data\n"
                      "  storage_options: {endpoint_url: \"http://localhost:9000\"}\n")
    p = run([args().iomimic, "config", s3dlio])
    if "format: tfrecord" not in p.stdout or "data_folder: s3://my-bucket/training-data" not in p.stdout:
        fail("pytorch with tfrecord through s3dlio must load, as the fork accepts it")
    azure = manifest("azure", "framework: pytorch\n"
                     "dataset: {data_folder: /tmp/unused, format: npz}\n"
                     "reader:\n  data_loader: pytorch\n  storage_library: s3dlio\n"
                     "  data_loader_root: az://mlperf-container/training-data\n")
    line = one_error(run([args().iomimic, "config", azure], expect_ok=False), "azure")
    if ("azure.yaml:6:21: error: reader.data_loader_root (read as dataset.data_folder): "
            "'az://mlperf-container/training-data': no installed storage plugin serves az:// "
            "(installed: ") not in line or "s3 (s3)" not in line:
        fail("azure: the error must name reader.data_loader_root at its line and the schemes "
             "the installed plugins serve")
    llama = manifest("llama1t", "model:\n  name: llama_1t\n  type: transformer\n"
                     "  num_layers: 128\n  parallelism:\n    tensor: 8\n    pipeline: 64\n"
                     "framework: pytorch\n"
                     "workflow: {generate_data: False, train: False, checkpoint: True}\n"
                     "checkpoint: {checkpoint_folder: %s, num_checkpoints_write: 1}\n"
                     % work("ckpt"))
    line = one_error(run([args().iomimic, "run", llama, "++workload.output.folder=" + work("out")],
                         expect_ok=False), "llama_1t")
    if ("llama1t.yaml:6:13: error: model.parallelism.tensor: checkpointing in checkpoint.mode "
            "default needs a world size that is a multiple of tensor x pipeline parallelism "
            "(8 x 64 = 512), got 1 rank(s)") not in line:
        fail("llama_1t: the rank-count error must name the manifest's line")
    env = {k: "" for k in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3")}
    p = run([args().iomimic, "run", "workload=quickstart", "++workload.storage.storage_type=s3",
             "++workload.storage.storage_root=bucket",
             "++workload.storage.storage_options.endpoint_url=",
             "++workload.output.folder=" + work("s3out")], expect_ok=False, env=env)
    line = one_error(p, "empty endpoint_url")
    if "option 'endpoint_url' is empty" not in line or "storage plugin 's3'" not in line:
        fail("empty endpoint_url: must be refused naming the plugin and the option")


if __name__ == "__main__":
    harness.main(globals())
