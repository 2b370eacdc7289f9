#!/usr/bin/env bash
# Installs the Debian 12 packages iomimic needs to build and test, when any is
# missing. Safe to run repeatedly: it does nothing when all are present.
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config ccache
  libboost-dev libboost-program-options-dev
  libopenmpi-dev openmpi-bin
  libyaml-cpp-dev nlohmann-json3-dev zlib1g-dev doctest-dev
  libhdf5-dev libpng-dev libjpeg-dev libtiff-dev libprotobuf-dev protobuf-compiler
  liburing-dev libaio-dev libbz2-dev liblzma-dev libisal-dev
  python3 python3-numpy python3-h5py python3-pil python3-tifffile python3-protobuf python3-crc32c python3-crcmod
  fio strace
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "installing: ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
