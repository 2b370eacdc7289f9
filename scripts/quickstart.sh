#!/usr/bin/env bash
# Quick start: install what is missing, build, and run the default workload
# (generates a small npz dataset under ./data/quickstart and trains on it).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh
exec build/bin/iomimic run "$@"
