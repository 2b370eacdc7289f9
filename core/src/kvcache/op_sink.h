// The KV-cache engine's hook for every tier operation (docs/kvcache.md,
// "Trace"): the io-trace CSV writer, or anything else that wants the
// operations, plugs in here.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "iomimic/status.h"
#include "kvcache/tier_cache.h"

namespace iomimic::kvcache {

struct OpEvent {
  enum class Kind : std::uint8_t { kRead, kWrite, kDelete };
  Kind kind = Kind::kRead;
  std::uint64_t bytes = 0;  // the entry's KV bytes (the .npy header not counted)
  Tier tier = Tier::kStorage;
  std::string_view key;
  // "Prefill", "Decode" (request reads: decode, multi-turn and prefix
  // reads) or "Evict" (a demotion's read and write, a deletion).
  std::string_view phase;
  double unix_seconds = 0;  // when it completed (wall clock), as the reference logs it
};

// Receives every tier operation, from many worker threads at once.
class OpSink {
 public:
  virtual ~OpSink() = default;
  // Called after the operation completed; must be thread-safe and must not
  // block for long (the workers wait for it).
  virtual void Record(const OpEvent& event) = 0;
  // Called once after the last Record; errors (a full disk) fail the run.
  virtual Status Close() = 0;
};

// The reference's io-trace CSV (kvcache/trace.h's TraceWriter: Timestamp,
// Operation, Object_Size_Bytes, Tier, Key, Phase; tiers Tier-0/1/2; reads
// and writes only; zstd when the path ends in .zst) at `path`. Errors name
// the key and the path.
Result<std::unique_ptr<OpSink>> OpenCsvTrace(const std::string& path);

}  // namespace iomimic::kvcache
