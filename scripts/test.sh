#!/usr/bin/env bash
# The whole test suite: install what is missing, build, run every test
# (unit, plugin, integration, interoperability with numpy, MPI) with ctest,
# then a bounded run of the libFuzzer harnesses (clang build in build-fuzz/,
# IOMIMIC_FUZZ_SECONDS per harness, default 5; docs/fuzzing.md). Arguments go
# to ctest; with arguments the fuzz run is left out.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh --test
scripts/build.sh --test
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
status=0
(cd build && ctest --output-on-failure -j "$(nproc 2>/dev/null || echo 2)" "$@") || status=$?
if [ $# -eq 0 ]; then
  scripts/fuzz.sh "${IOMIMIC_FUZZ_SECONDS:-5}" || status=$?
fi
exit $status
