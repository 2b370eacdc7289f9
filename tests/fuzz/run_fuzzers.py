#!/usr/bin/env python3
"""Runs the libFuzzer harnesses one at a time for a bounded time each and
prints executions per harness (docs/fuzzing.md). Each run first replays the
committed corpus (tests/fuzz/corpus/<name>: seeds and the inputs of crashes
found before), then mutates. Fails when any harness reports a crash, leak or
timeout; the input is left under WORK/artifacts/<name>/.

With --not-built (builds without -DIOMIMIC_FUZZ=ON) it exits 77, which ctest
reports as skipped.
"""
import argparse
import os
import re
import subprocess
import sys
import time


# libFuzzer flags for one harness.
#
# hdf5: libhdf5 keeps freed objects on its own free lists (the harness raises
# their limits so a file open reuses its metadata cache), so most inputs end
# with more mallocs than frees and libFuzzer's per-input leak check would
# run a full LeakSanitizer scan on nearly every input (15x slower). The
# harness checks instead that no HDF5 object is left open after each input,
# and LeakSanitizer still checks the whole run at exit, with allocations made
# inside libhdf5 suppressed by module (tests/fuzz/hdf5.lsan.supp).
HARNESS_FLAGS = {"hdf5": ["-detect_leaks=0"]}

# AddressSanitizer options for one harness, added to the defaults below.
#
# manifest: ASan records the stack of every allocation (up to
# malloc_context_size frames) in a depot that is never freed, unwinding by
# frame pointers. Debian builds libyaml-cpp without frame pointers, so walking
# out of its allocations reads garbage "frames" and nearly every stack is new:
# the depot grows without bound. In long runs its hashing (StackDepot::Put)
# took 24-26% of the time, with 30 frames and still with 8, and the process
# grew by 8-16 MiB a minute towards -rss_limit_mb. One frame, the allocating
# call itself, is always valid: 1,330 executions a second instead of 700-900
# on the same corpus, and no growth.
HARNESS_ASAN = {"manifest": "malloc_context_size=1"}

# LeakSanitizer options for one harness.
#
# tiff: libtiff's JPEG codec calls libjpeg, whose thread-local state lives in
# dynamic TLS (the plugin, and libjpeg with it, is loaded with dlopen). The
# sanitizer runtime of clang 14 with glibc 2.36 records a bogus range for that
# block (seen as "DTLS 11 at 0x1c3-0x8000012c5" with log_threads=1), and every
# leak scan that reaches it dies in the scanner ("Tracer caught signal 11",
# rc 1, an empty crash input). Not scanning thread-local storage as a root can
# only report more leaks, never hide one, so the check stays sound.
HARNESS_LSAN = {"tiff": "use_tls=0"}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--source", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--bin-dir")
    p.add_argument("--seconds", type=int, default=8)
    p.add_argument("--harnesses", nargs="*", default=[])
    p.add_argument("--not-built", action="store_true")
    args = p.parse_args()
    if args.not_built:
        print("fuzz harnesses are not part of this build: they need clang and "
              "-DIOMIMIC_FUZZ=ON (scripts/fuzz.sh builds and runs them)")
        return 77
    fuzz_dir = os.path.join(args.source, "tests", "fuzz")
    failed = []
    rows = []
    for name in args.harnesses:
        binary = os.path.join(args.bin_dir, "iomimic_fuzz_" + name)
        corpus = os.path.join(args.work, "corpus", name)
        artifacts = os.path.join(args.work, "artifacts", name)
        os.makedirs(corpus, exist_ok=True)
        os.makedirs(artifacts, exist_ok=True)
        # -reload=0: one process per harness, so nothing else adds to the
        # corpus folder; rescanning it every second cost 5-8% of a long run.
        cmd = [binary, "-max_total_time=%d" % args.seconds, "-timeout=10",
               "-rss_limit_mb=2048", "-malloc_limit_mb=1024", "-print_final_stats=1",
               "-reload=0", "-artifact_prefix=" + artifacts + "/"]
        cmd += HARNESS_FLAGS.get(name, [])
        d = os.path.join(fuzz_dir, "dict", name + ".dict")
        if os.path.exists(d):
            cmd.append("-dict=" + d)
        cmd.append(corpus)
        seeds = os.path.join(fuzz_dir, "corpus", name)
        if os.path.isdir(seeds):
            cmd.append(seeds)
        env = dict(os.environ)
        asan = "detect_leaks=1:abort_on_error=0"
        lsan = [env["LSAN_OPTIONS"]] if env.get("LSAN_OPTIONS") else []
        supp = os.path.join(fuzz_dir, name + ".lsan.supp")
        if os.path.exists(supp):
            lsan.append("suppressions=" + supp + ":print_suppressions=0")
        if name in HARNESS_LSAN:
            lsan.append(HARNESS_LSAN[name])
        if lsan:
            env["LSAN_OPTIONS"] = ":".join(lsan)
        if name in HARNESS_ASAN:
            asan += ":" + HARNESS_ASAN[name]
        env.setdefault("ASAN_OPTIONS", asan)
        env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
        start = time.time()
        proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, errors="replace")
        elapsed = time.time() - start
        m = re.search(r"stat::number_of_executed_units:\s*(\d+)", proc.stdout)
        execs = int(m.group(1)) if m else 0
        rows.append((name, execs, elapsed, proc.returncode))
        if proc.returncode != 0:
            failed.append(name)
            print(proc.stdout[-8000:])
    print("%-16s %12s %8s %s" % ("harness", "executions", "seconds", "result"))
    for name, execs, elapsed, rc in rows:
        print("%-16s %12d %8.1f %s" % (name, execs, elapsed, "ok" if rc == 0 else "FAILED rc=%d" % rc))
    print("total executions: %d" % sum(r[1] for r in rows))
    if failed:
        print("failed: " + " ".join(failed) + " (inputs under " +
              os.path.join(args.work, "artifacts") + ")")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
