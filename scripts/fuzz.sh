#!/usr/bin/env bash
# Builds the libFuzzer harnesses (tests/fuzz) with clang, coverage
# instrumentation and ASan/UBSan into build-fuzz/ and runs each of them, one
# at a time, for SECONDS_PER_HARNESS seconds (default 60). docs/fuzzing.md.
#
#   scripts/fuzz.sh [SECONDS_PER_HARNESS] [HARNESS...]
#   scripts/fuzz.sh --seeds      # regenerate tests/fuzz/corpus/<format>/ seeds
#
# Jobs: IOMIMIC_JOBS (default 2). The corpus grown by a run stays in
# build-fuzz/tests/fuzz/work/corpus/<harness>/; crash inputs in
# build-fuzz/tests/fuzz/work/artifacts/<harness>/.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${IOMIMIC_JOBS:-2}"
cc="${CC:-clang}"
cxx="${CXX:-clang++}"
command -v "$cxx" >/dev/null || { echo "fuzz.sh: $cxx not found (apt-get install clang)" >&2; exit 77; }
build=build-fuzz
formats="npz npy hdf5 png jpeg tiff tfrecord csv indexed_binary parquet webdataset mds"
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
CC="$cc" CXX="$cxx" cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DIOMIMIC_FUZZ=ON -DIOMIMIC_BUILD_TESTS=OFF -DIOMIMIC_PLUGINS="${formats// /;}" >/dev/null
targets=(iomimic_fuzz_make_corpus iomimic_fuzz_manifest iomimic_fuzz_request_trace
  iomimic_fuzz_apptrace_strace iomimic_fuzz_apptrace_dftracer iomimic_fuzz_apptrace_darshan_dxt)
for f in $formats; do targets+=("iomimic_fuzz_$f"); done
cmake --build "$build" -j "$jobs" --target "${targets[@]}"
if [[ "${1:-}" == "--seeds" ]]; then
  # shellcheck disable=SC2086
  exec "$build/bin/iomimic_fuzz_make_corpus" tests/fuzz/corpus $formats
fi
seconds="${1:-60}"
shift || true
harnesses=("$@")
[[ ${#harnesses[@]} -gt 0 ]] || harnesses=(manifest request_trace apptrace_strace apptrace_dftracer apptrace_darshan_dxt $formats)
exec /usr/bin/python3 tests/fuzz/run_fuzzers.py --source "$PWD" --bin-dir "$build/bin" \
  --work "$PWD/$build/tests/fuzz/work" --seconds "$seconds" --harnesses "${harnesses[@]}"
