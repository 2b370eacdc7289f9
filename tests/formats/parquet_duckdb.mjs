// Runs SQL statements with DuckDB's Node.js client for
// tests/formats/parquet_interop.py and prints each result as one JSON line
// (an array of row objects, numbers that do not fit a double as strings).
//
// Usage: node parquet_duckdb.mjs NODE_DIR SQL...
//   NODE_DIR holds node_modules/@duckdb/node-api (scripts/duckdb_node.sh).

import { createRequire } from 'node:module';
import path from 'node:path';

const [dir, ...statements] = process.argv.slice(2);
const require = createRequire(path.resolve(dir, 'package.json'));
const { DuckDBInstance } = require('@duckdb/node-api');

const instance = await DuckDBInstance.create(':memory:');
const connection = await instance.connect();
for (const sql of statements) {
  const reader = await connection.runAndReadAll(sql);
  console.log(JSON.stringify(reader.getRowObjectsJson()));
}
