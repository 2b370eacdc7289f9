// Times DuckDB reading Parquet files for bench/parquet_vs_duckdb.py: runs
// SQL once to warm up, then REPEATS times, and prints one JSON line with the
// seconds of each timed run and the first row of the last result.
//
// Usage: node parquet_duckdb_read.mjs NODE_DIR THREADS REPEATS SQL
//   NODE_DIR holds node_modules/@duckdb/node-api (scripts/duckdb_node.sh).

import { createRequire } from 'node:module';
import path from 'node:path';

const [dir, threads, repeats, sql] = process.argv.slice(2);
const require = createRequire(path.resolve(dir, 'package.json'));
const { DuckDBInstance } = require('@duckdb/node-api');

const instance = await DuckDBInstance.create(':memory:', { threads: String(threads) });
const connection = await instance.connect();
await connection.runAndReadAll(sql);  // warm-up: the page cache and DuckDB's caches
const seconds = [];
let rows = null;
for (let i = 0; i < Number(repeats); ++i) {
  const start = process.hrtime.bigint();
  const reader = await connection.runAndReadAll(sql);
  seconds.push(Number(process.hrtime.bigint() - start) / 1e9);
  rows = reader.getRowObjectsJson();
}
console.log(JSON.stringify({ seconds, first: rows[0] }));
