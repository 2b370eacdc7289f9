#!/usr/bin/python3
"""The fault and signal matrix of issue 13 (docs/security.md, "Faults and
signals"): for one back end (posix, odirect, mmap or mpiio), every phase
(generate, train, eval, checkpoint write, checkpoint read) meets every fault
that applies to it:

  eio          an injected EIO (the faulty decorator)
  enospc       an injected ENOSPC on a write
  short_read   a read that returns fewer bytes than were there, no error
  short_write  a write that stops partway, then fails
  latency      a latency spike (the latency decorator: exponential delays)
  sigint       SIGINT while the phase runs
  kill9        kill -9 of one rank of two under mpirun while the phase runs

Each cell must end in one clear error line, a completed run, or a stop at
a signal, within a time bound (a hang fails), and leave no file cut short
under a final name: the dataset is then regenerated (a resume) and read in
full, checkpoints left behind have their planned sizes, and read phases
leave their files untouched. The table of outcomes is printed and written to
the markdown file fault_matrix_<backend> in the work folder.

Usage: fault_matrix_tests.py fault_matrix_<backend> --iomimic BIN --source DIR --work DIR
"""

import os
import re
import signal
import subprocess
import time

import iomimic_tests as harness
from iomimic_tests import fail, run

PHASES = ["generate", "train", "eval", "ckpt_write", "ckpt_read"]
FAULTS = ["eio", "enospc", "short_read", "short_write", "latency", "sigint", "kill9"]
WRITE_PHASES = {"generate", "ckpt_write"}
BOUND = 90  # seconds a cell may take; more is a hang


def args():
    return harness.ARGS


def work(*parts):
    return os.path.join(args().work, *parts)


def applies(phase, fault):
    if fault in ("enospc", "short_write"):
        return phase in WRITE_PHASES
    if fault == "short_read":
        return phase not in WRITE_PHASES
    return True


def launcher():
    cmd = ["mpirun", "-np", "2", "--oversubscribe"]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    return cmd


def data_manifest(phase, data, out, extra=()):
    """A small npz training job: 16 training files (4 when the eval phase is
    tested, with 16 evaluation files), 64 KiB samples, one epoch."""
    evaluating = phase == "eval"
    return [
        "workload=quickstart",
        "++workload.workflow.generate_data=%s" % (phase == "generate"),
        "++workload.workflow.train=%s" % (phase != "generate"),
        "++workload.workflow.evaluation=%s" % evaluating,
        "++workload.dataset.format=npz",
        "++workload.dataset.data_folder=" + data,
        "++workload.dataset.num_files_train=%d" % (4 if evaluating else 16),
        "++workload.dataset.num_files_eval=%d" % (16 if evaluating else 0),
        "++workload.dataset.num_subfolders_train=0",
        "++workload.dataset.num_subfolders_eval=0",
        "++workload.dataset.record_length_bytes=65536",
        "++workload.dataset.record_length_bytes_stdev=0",
        "++workload.reader.batch_size=2",
        "++workload.reader.batch_size_eval=2",
        "++workload.reader.read_threads=1",
        "++workload.train.epochs=1",
        "++workload.train.computation_time=0.001",
        "++workload.evaluation.eval_time=0.001",
        "++workload.iomimic.progress_interval=0.05",
        "++workload.output.folder=" + out,
    ] + list(extra)


def checkpoint_manifest(folder, out, extra=()):
    """A checkpoint-only job: two 8 MiB checkpoints written, then read back."""
    return [
        "workload=quickstart",
        "++workload.workflow.generate_data=False",
        "++workload.workflow.train=False",
        "++workload.workflow.evaluation=False",
        "++workload.workflow.checkpoint=True",
        "++workload.model.model_size_bytes=8388608",
        "++workload.checkpoint.checkpoint_folder=" + folder,
        "++workload.checkpoint.num_checkpoints_write=2",
        "++workload.checkpoint.num_checkpoints_read=2",
        "++workload.checkpoint.time_between_checkpoints=0",
        "++workload.iomimic.progress_interval=0.05",
        "++workload.output.folder=" + out,
    ] + list(extra)


def decorator(section, name, backend, options):
    ov = ["++workload.%s.backend=%s" % (section, name),
          "++workload.%s.options.inner=%s" % (section, backend)]
    return ov + ["++workload.%s.options.%s=%s" % (section, k, v) for k, v in options.items()]


def fault_overrides(phase, fault, backend):
    """The decorator overrides that inject `fault` into `phase`."""
    section = "checkpoint" if phase.startswith("ckpt") else "storage"
    where = {"generate": "train/", "train": "train/", "eval": "valid/"}.get(phase, "")
    opts = {}
    if fault in ("eio", "enospc", "short_read", "short_write"):
        opts = {"mode": fault, "error_rate": 1, "after_ops": 2}
        if fault == "eio":
            opts["operations"] = "write" if phase in WRITE_PHASES else "read"
        if where:
            opts["fail_path"] = where
        return decorator(section, "faulty", backend, opts)
    if fault == "latency":
        return decorator(section, "latency", backend,
                         {"delay": "2ms", "distribution": "exponential", "delay_max": "200ms"})
    # Signals: the phase is slowed so that it is still running when one comes.
    # A checkpoint read is a handful of 4 MiB requests: at 40 ms each it was
    # over in about 0.13 s, which a loaded machine could miss (the signal then
    # came after the run ended, exit 0); 250 ms each keeps it open ~0.75 s.
    return decorator(section, "latency", backend,
                     {"delay": "250ms" if phase == "ckpt_read" else "40ms"})


def snapshot(folder):
    """{relative path: (size, mtime_ns)} of every file below `folder`."""
    out = {}
    for root, _, files in os.walk(folder):
        for name in files:
            p = os.path.join(root, name)
            st = os.stat(p)
            out[os.path.relpath(p, folder)] = (st.st_size, st.st_mtime_ns)
    return out


def sizes(folder):
    return {k: v[0] for k, v in snapshot(folder).items()}


PHASE_MARK = {
    "generate": "generating:",
    "train": "step ",
    "eval": "eval step",
    "ckpt_write": "checkpoint: writing",
    "ckpt_read": "checkpoint: reading",
}


def wait_for_phase(proc, log, phase):
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with open(log) as f:
            if PHASE_MARK[phase] in f.read():
                return True
        if proc.poll() is not None:
            return False
        time.sleep(0.02)
    return False


def rank_pids(parent):
    """The iomimic processes below mpirun (pgrep -P, one level down or two)."""
    found = []
    todo = [parent]
    while todo:
        pid = todo.pop()
        kids = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True,
                              text=True).stdout.split()
        for k in kids:
            try:
                with open("/proc/%s/comm" % k) as f:
                    comm = f.read().strip()
            except OSError:
                continue
            if comm == "iomimic":
                found.append(int(k))
            else:
                todo.append(int(k))
    return found


class Cell:
    def __init__(self, backend, phase, fault):
        self.backend, self.phase, self.fault = backend, phase, fault
        self.tag = "%s_%s" % (phase, fault)
        self.out = work("out", self.tag)

    def command(self, data, ckpt, extra):
        if self.phase.startswith("ckpt"):
            return checkpoint_manifest(ckpt, self.out, extra)
        return data_manifest(self.phase, data, self.out, extra)


def one_error_line(p, cell):
    lines = [l for l in p.stderr.splitlines() if l.startswith("iomimic: error: ")]
    others = [l for l in p.stderr.splitlines()
              if l.strip() and not l.startswith("iomimic: warning") and l not in lines]
    if p.returncode == 0:
        fail("%s: the fault did not fail the run" % cell.tag)
    if p.returncode < 0 or p.returncode >= 128:
        fail("%s: ended by a signal (exit %d) instead of an error" % (cell.tag, p.returncode))
    if len(lines) != 1 or others:
        fail("%s: expected exactly one 'iomimic: error:' line, got:\n%s" % (cell.tag, p.stderr))
    return lines[0][len("iomimic: error: "):]


def short(text, n=110):
    """The error line's cause for the table: from the injected fault, or
    what the format found, without folders."""
    text = re.sub(r"/\S*/", "", text)
    m = re.search(r"injected [^(]*", text)
    cause = m.group(0).strip() if m else text.split(": ", 1)[-1]
    where = re.match(r"(\w+ (?:sample \d+ of )?\S+)", text)
    cause = (where.group(1) + ": " if where else "") + cause
    return cause if len(cause) <= n else cause[:n - 1] + "…"


def run_matrix(backend):
    iomimic = args().iomimic
    mpi = backend == "mpiio"
    data = work("data")
    ckpt = work("ckpt")
    table = []

    # The dataset the read phases use, and a clean checkpoint set whose file
    # sizes are the plan's.
    for phase in ("train", "eval"):
        run([iomimic, "generate"] + data_manifest(phase, data, work("setup_" + phase), [
            "++workload.workflow.generate_data=True"]))
    run([iomimic, "run"] + checkpoint_manifest(work("ckpt_ref"), work("setup_ckpt")))
    planned = sizes(work("ckpt_ref"))
    if not planned:
        fail("the reference checkpoint run wrote no files")

    def check_dataset_whole(cell, phase):
        """Resume: generation completes what is missing; then every file is read."""
        folder = work("gen_" + cell.tag)
        p = run([iomimic, "generate"] + data_manifest("generate", folder, cell.out + "_resume"))
        m = re.search(r"generated (\d+) files \((\d+) already complete\)", p.stdout)
        if not m or int(m.group(1)) + int(m.group(2)) != 16:
            fail("%s: the resume did not account for 16 files:\n%s" % (cell.tag, p.stdout))
        run([iomimic, "run"] + data_manifest("train", folder, cell.out + "_read", [
            "++workload.workflow.generate_data=False"]))
        return "resume wrote %s, kept %s; all read back" % (m.group(1), m.group(2))

    def check_checkpoints(cell, folder):
        """No checkpoint under its final name may be cut short (checkpoint.atomic,
        the default, writes under a temporary name and renames: docs/security.md);
        a temporary file a kill left behind is reported."""
        left = sizes(folder)
        final = {k: v for k, v in left.items() if not k.endswith(".iomimic-partial")}
        partial = [k for k in left if k.endswith(".iomimic-partial")]
        bad = {k: v for k, v in final.items() if planned.get(k) != v}
        if bad:
            fail("%s: checkpoint files cut short or unknown under final names: %r" % (cell.tag, bad))
        if partial and cell.fault != "kill9":
            fail("%s: temporary checkpoint files left behind: %r" % (cell.tag, partial))
        left = "%d checkpoint file(s) left, all whole" % len(final)
        if partial:
            left += "; %d temporary file(s) of the write the kill stopped" % len(partial)
        return left

    for phase in PHASES:
        for fault in FAULTS:
            cell = Cell(backend, phase, fault)
            if not applies(phase, fault):
                table.append((phase, fault, "n/a", ""))
                continue
            folder = ckpt_folder = None
            if phase == "generate":
                folder = work("gen_" + cell.tag)
            elif phase == "ckpt_write":
                ckpt_folder = work("ckpt_" + cell.tag)
            elif phase == "ckpt_read":
                # Checkpoints written cleanly first; the cell reads them.
                ckpt_folder = work("ckpt_" + cell.tag)
            data_folder = folder or data
            before = snapshot(data) if phase in ("train", "eval") else None
            extra = fault_overrides(phase, fault, backend)
            cmd = [iomimic, "run"] + cell.command(data_folder, ckpt_folder, extra)
            started = time.monotonic()
            if fault in ("sigint", "kill9"):
                log = cell.out + ".log"
                os.makedirs(os.path.dirname(log), exist_ok=True)
                use_mpi = fault == "kill9" or mpi
                full = (launcher() if use_mpi else []) + cmd
                with open(log, "w") as f:
                    proc = subprocess.Popen(full, stdout=f, stderr=subprocess.STDOUT,
                                            cwd=args().work)
                if not wait_for_phase(proc, log, phase):
                    proc.kill()
                    fail("%s: the phase never showed in the log:\n%s" % (cell.tag,
                                                                        open(log).read()[-1500:]))
                if fault == "sigint":
                    if use_mpi:
                        os.kill(rank_pids(proc.pid)[0], signal.SIGINT)
                    else:
                        proc.send_signal(signal.SIGINT)
                else:
                    ranks = rank_pids(proc.pid)
                    if len(ranks) != 2:
                        proc.kill()
                        fail("%s: expected 2 ranks under mpirun, found %r" % (cell.tag, ranks))
                    os.kill(ranks[-1], signal.SIGKILL)
                try:
                    rc = proc.wait(timeout=BOUND)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    fail("%s: still running %d s after the signal (a hang)" % (cell.tag, BOUND))
                took = time.monotonic() - started
                text = open(log).read()
                if fault == "sigint":
                    if rc != 128 + signal.SIGINT:
                        fail("%s: exit %d after SIGINT, expected 130:\n%s" % (cell.tag, rc,
                                                                              text[-1500:]))
                    outcome = "stopped, exit 130"
                else:
                    if rc == 0:
                        fail("%s: mpirun exited 0 after a rank was killed" % cell.tag)
                    outcome = "job ended (exit %d) in %.1f s" % (rc, took)
            else:
                p = run(cmd, expect_ok=False, timeout=BOUND)
                took = time.monotonic() - started
                if fault == "latency":
                    if p.returncode != 0:
                        fail("%s: a latency spike failed the run:\n%s" % (cell.tag, p.stderr))
                    outcome = "completed in %.1f s" % took
                else:
                    outcome = "error: " + short(one_error_line(p, cell))
            # What the cell left behind.
            if phase == "generate":
                after = check_dataset_whole(cell, phase)
            elif phase == "ckpt_write":
                after = check_checkpoints(cell, ckpt_folder)
            elif phase == "ckpt_read":
                after = check_checkpoints(cell, ckpt_folder)
            else:
                now = snapshot(data)
                # Open MPI's MPI-IO (OMPIO) creates a shared-file-pointer lock
                # file, <file>-<job>-<pid>.lock, beside each file a rank opens
                # and removes it at close; a rank killed with the file open
                # leaves it. The dataset's own files are what must not change.
                lock = re.compile(r"-\d+-\d+\.lock$")
                locks = [k for k in now if k not in before and lock.search(k)]
                if fault == "kill9" and backend == "mpiio":
                    for k in locks:
                        del now[k]
                after = "dataset untouched" + (
                    "; Open MPI left %d lock file(s) of the killed rank" % len(locks)
                    if locks and fault == "kill9" and backend == "mpiio" else "")
                if now != before:
                    changed = sorted(k for k in set(now) | set(before)
                                     if now.get(k) != before.get(k))
                    fail("%s: a read phase changed the dataset: %s" % (
                        cell.tag, ", ".join("%s %s -> %s" % (k, before.get(k), now.get(k))
                                            for k in changed[:5])))
            print("%-10s %-11s %s; %s" % (phase, fault, outcome, after), flush=True)
            table.append((phase, fault, outcome, after))

    lines = ["| phase | fault | outcome | afterwards |", "|---|---|---|---|"]
    lines += ["| %s | %s | %s | %s |" % row for row in table]
    text = "\n".join(lines) + "\n"
    with open(work("fault_matrix_" + backend + ".md"), "w") as f:
        f.write("Back end: %s\n\n" % backend + text)
    print("\n" + text)


def test_fault_matrix_posix():
    run_matrix("posix")


def test_fault_matrix_odirect():
    run_matrix("odirect")


def test_fault_matrix_mmap():
    run_matrix("mmap")


def test_fault_matrix_mpiio():
    run_matrix("mpiio")


if __name__ == "__main__":
    harness.main(globals())
