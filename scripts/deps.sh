#!/usr/bin/env bash
# Installs the Debian 12 packages iomimic needs, when any is missing. Safe to
# run repeatedly: it does nothing when all are present.
#
#   scripts/deps.sh          what building and running need (scripts/quickstart.sh),
#                            doctest included: the installed conformance suites
#                            (`iomimic conformance`) are a doctest program
#   scripts/deps.sh --test   that, plus what the test suite needs: the
#                            interoperability peers (numpy, h5py, PIL, tifffile,
#                            DuckDB's Node.js client), fio and strace, a local
#                            radosgw for the S3 tests, clang for the fuzzers,
#                            Chromium for the report pages (scripts/test.sh)
set -euo pipefail

BUILD_PACKAGES=(
  build-essential cmake pkg-config ccache
  libboost-dev libboost-program-options-dev
  libopenmpi-dev openmpi-bin
  libyaml-cpp-dev nlohmann-json3-dev zlib1g-dev
  libhdf5-dev libpng-dev libjpeg-dev libtiff-dev libprotobuf-dev protobuf-compiler
  liburing-dev libaio-dev libbz2-dev liblzma-dev libisal-dev
  libsnappy-dev liblz4-dev libzstd-dev
  libcurl4-openssl-dev
  libjs-chart.js
  doctest-dev
)
TEST_PACKAGES=(
  ceph-mon ceph-osd radosgw python3-boto3
  python3 python3-numpy python3-h5py python3-pil python3-tifffile python3-protobuf python3-crc32c python3-crcmod
  fio strace
  clang libclang-rt-14-dev
  chromium
)

tests=0
case "${1:-}" in
  --test) tests=1 ;;
  "") ;;
  *) echo "usage: scripts/deps.sh [--test]" >&2; exit 2 ;;
esac

packages=("${BUILD_PACKAGES[@]}")
if [ $tests -eq 1 ]; then packages+=("${TEST_PACKAGES[@]}"); fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# Node.js and npm for DuckDB's client (the Parquet interchange test); a
# Node.js from another source that brings its own npm is fine.
if [ $tests -eq 1 ] && ! command -v npm >/dev/null 2>&1; then
  missing+=(nodejs npm)
fi
if [ ${#missing[@]} -ne 0 ]; then
  echo "installing: ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
if [ $tests -eq 1 ]; then
  # DuckDB (npm @duckdb/node-api, binary included) into build/node.
  # Without the registry the interchange test installs it itself or is skipped.
  "$(dirname "$0")/duckdb_node.sh" || echo "warning: DuckDB's Node.js client not installed" >&2
fi
