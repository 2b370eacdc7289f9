#!/usr/bin/env bash
# Configures and builds iomimic into ./build (Release). Uses ccache when present.
#
#   scripts/build.sh          the tool, its plugins and the conformance suites
#                             (iomimic-conformance, when doctest is installed)
#                             (scripts/quickstart.sh)
#   scripts/build.sh --test   that, plus every test binary (scripts/test.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
tests=OFF
case "${1:-}" in
  --test) tests=ON ;;
  "") ;;
  *) echo "usage: scripts/build.sh [--test]" >&2; exit 2 ;;
esac
jobs=$(nproc 2>/dev/null || echo 2)
# Unity sources for the core and plugins halve a fresh build's compile time.
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DIOMIMIC_BUILD_TESTS=$tests \
  -DIOMIMIC_UNITY_BUILD=ON >/dev/null
cmake --build build -j "$jobs"
