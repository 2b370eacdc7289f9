#!/usr/bin/env bash
# Installs DuckDB's Node.js client (@duckdb/node-api, whose package brings the
# DuckDB binary) into a folder, for the Parquet interchange test
# (tests/formats/parquet_interop.py). Does nothing when it is already there.
#
# Usage: scripts/duckdb_node.sh [FOLDER]   (default: build/node, or $IOMIMIC_NODE_DIR)
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-${IOMIMIC_NODE_DIR:-build/node}}"
version="1.5.6-r.1"
if [ -f "$dir/node_modules/@duckdb/node-api/package.json" ]; then
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "duckdb_node.sh: npm is missing (apt-get install nodejs npm)" >&2
  exit 1
fi
mkdir -p "$dir"
[ -f "$dir/package.json" ] || echo '{"private": true}' >"$dir/package.json"
npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "@duckdb/node-api@$version"
