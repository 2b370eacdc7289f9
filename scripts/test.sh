#!/usr/bin/env bash
# The whole test suite: install what is missing, build, run every test
# (unit, plugin, integration, interoperability with numpy, MPI) with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
cd build
exec ctest --output-on-failure -j "$(nproc 2>/dev/null || echo 2)" "$@"
