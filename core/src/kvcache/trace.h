// The KV-cache reference's I/O trace (`kv-cache.py --io-trace-log FILE`):
// one CSV row per KV-cache operation, written by its kv_cache/tracer.py
// (docs/kvcache-reference.md, "The reference's I/O trace"):
//
//   Timestamp,Operation,Object_Size_Bytes,Tier,Key,Phase
//   1795777524.343443,Write,752353280,Tier-2,conv_user_0000_1795777524343_turn_1,Prefill
//
//   Timestamp          Unix time in seconds, 6 decimals (Python's f'{t:.6f}')
//   Operation          Read or Write
//   Object_Size_Bytes  the entry's bytes on this rank (tensor-parallel share)
//   Tier               Tier-0 (GPU), Tier-1 (CPU), Tier-2 (NVMe / storage)
//   Key                the cache entry's name
//   Phase              Prefill, Decode, Evict (a demotion's read and write),
//                      Both (a prefix read of a prefill+decode request), or
//                      empty
//
// Python's csv module writes it: rows end in "\r\n" and a field is quoted
// ("...", inner quotes doubled) only when it holds a comma, a quote or a line
// break. A path ending in ".zst" is one zstd stream (level 3 by default).

#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "iomimic/status.h"

namespace iomimic::kvcache {

enum class TraceOp { kRead, kWrite };
enum class TracePhase { kNone, kPrefill, kDecode, kBoth, kEvict };

// Tier numbers of the trace: Tier-0 GPU, Tier-1 CPU, Tier-2 storage.
inline constexpr int kTierGpu = 0;
inline constexpr int kTierCpu = 1;
inline constexpr int kTierStorage = 2;

struct TraceRow {
  double timestamp = 0;  // Unix seconds
  TraceOp op = TraceOp::kRead;
  std::uint64_t size = 0;  // bytes
  int tier = kTierStorage;
  std::string key;
  TracePhase phase = TracePhase::kNone;
  std::size_t line = 0;  // 1-based line in the file (0 for rows not read from one)
};

// "Read", "Write".
const char* TraceOpName(TraceOp op);
// "Prefill", "Decode", "Both", "Evict", "" (kNone).
const char* TracePhaseName(TracePhase phase);
// "Tier-0", "Tier-1", "Tier-2" (tier outside 0..2: "Tier-?").
const char* TraceTierName(int tier);

// The header line, without its line end.
inline constexpr std::string_view kTraceHeader =
    "Timestamp,Operation,Object_Size_Bytes,Tier,Key,Phase";

// The longest line a trace may hold, in bytes, its line end ("\n" or
// "\r\n") not counted: 64 KiB.
inline constexpr std::size_t kMaxTraceLine = 64 << 10;

// `text` for an error message: whole when at most 48 bytes, else its first 48
// bytes then "... (N bytes)", so that a long field or key cannot make an
// error line long.
std::string TraceExcerpt(std::string_view text);

// One row as the reference writes it, "\r\n" included.
std::string FormatTraceRow(const TraceRow& row);

// Parses a whole trace (already decompressed). Strict: the first line must be
// the header, then every line holds six fields of the forms above (a final
// line end is optional, "\n" and "\r\n" both end a line; a line break
// inside a quoted field and lines over kMaxTraceLine are refused). The first
// bad line is the error, one short line, InvalidArgument "<name>:<line>:
// <what>", e.g. "t.csv:7: Object_Size_Bytes '12x' is not a whole number"
// (fields quoted as TraceExcerpt), "t.csv:2: a line longer than 64 KiB
// (65536 bytes)".
Result<std::vector<TraceRow>> ParseTrace(std::string_view text, const std::string& name);

// Reads and parses the trace file at `path` 1 MiB at a time; a zstd stream
// (by its magic number, whatever the name) is decompressed as it is read.
// Errors name the path.
Result<std::vector<TraceRow>> ReadTrace(const std::string& path);

// Writes a trace as the reference does: the header, then one row per Write
// call; through a zstd stream when the path ends in ".zst". Thread-safe.
class TraceWriter {
 public:
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // Creates (or truncates) `path` and writes the header. zstd_level applies
  // to ".zst" paths (the reference's default is 3).
  static Result<std::unique_ptr<TraceWriter>> Open(const std::string& path, int zstd_level = 3);

  // Appends `row` (its `line` is ignored).
  Status Write(const TraceRow& row);
  // Flushes, ends the zstd frame and closes the file. Further writes fail.
  Status Close();
  const std::string& path() const { return path_; }

 private:
  struct Impl;
  explicit TraceWriter(std::string path);
  Status WriteLocked(std::string_view text);

  std::string path_;
  std::mutex mu_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace iomimic::kvcache
