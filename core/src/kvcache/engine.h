// The KV-cache offload workflow's engine (docs/kvcache.md): MLPerf Storage
// v3.0's kv-cache benchmark as an iomimic workflow beside training, on the
// same session, storage plugins and results model.
//
// One rank is one inference server: its users (threads) issue requests after
// their think times into a queue ordered by QoS class; min(num_users, 500)
// workers take them and, per request as the reference's process_requests:
// the prefix check, the reads of a conversation's earlier turns, the prefill
// write of the request's entry, the decode reads (the entry once, then once
// per decode_batch_size generated tokens) and the emulated generation time.
// Entries live in the tiers of kvcache/tier_cache.h, their bytes in
// kvcache/tier_store.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "iomimic/status.h"
#include "iomimic/storage.h"
#include "kvcache/op_sink.h"
#include "kvcache/tier_cache.h"
#include "kvcache/users.h"
#include "metrics/histogram.h"
#include "session/session.h"

namespace iomimic::kvcache {

inline constexpr int kQosCount = 3;  // QosLevel's values
// The reference's qos_profiles P95 targets: 50, 100 and 1000 ms.
double QosTargetP95Ms(QosLevel qos);

// One tier's operations on one rank (or summed over ranks). "evict" counts
// the demotions' reads (from this tier) and writes (into it) and the
// deletions; the others are the requests' own.
struct TierFigures {
  std::uint64_t reads = 0, writes = 0, read_bytes = 0, write_bytes = 0;
  std::uint64_t evict_reads = 0, evict_writes = 0, evict_read_bytes = 0, evict_write_bytes = 0;
  std::uint64_t deletes = 0, delete_bytes = 0;
  std::uint64_t entries = 0, used_bytes = 0, capacity_bytes = 0;  // at the end
  metrics::LatencyHistogram read, write;  // every read and write, evictions included
  metrics::LatencyHistogram read_device, read_host, write_device, write_host;
  // The requests' own reads and prefill writes only (no demotion): the
  // reference's <tier>_read/write percentiles (docs/kvcache-reference.md,
  // "The results JSON").
  metrics::LatencyHistogram request_read, request_write;
};

// Per-request latencies in seconds, one per counted request in the order the
// requests completed: the reference's lists (docs/kvcache-reference.md, "The
// results JSON"). Kept only with kv_cache.reference_results (`recorded`).
struct KvRequestSamples {
  bool recorded = false;
  std::vector<double> end_to_end, storage, generation;
  std::vector<double> prefill;  // the prefill write (0 when the entry existed)
  std::vector<double> decode;   // the decode reads, requests that decode
};

struct KvFigures {
  double seconds = 0;      // the benchmark's wall time (the slowest rank's when merged)
  int interrupted_by = 0;  // the signal that ended the run early, 0 when none (any rank's)
  std::uint64_t requests = 0;
  std::uint64_t tokens_generated = 0;
  std::uint64_t context_tokens = 0;
  std::uint64_t cache_hits = 0, cache_misses = 0;
  std::uint64_t multi_turn_hits = 0, multi_turn_misses = 0;
  std::uint64_t prefix_lookups = 0;  // system-prompt checks (always misses: docs/kvcache.md)
  // With prefix_caching, the requests that drew no system prompt, and the
  // drawn prompts' tokens x the model's bytes per token (the reference's
  // prefix_misses and bytes_saved; its prefix_hits are prefix_lookups).
  std::uint64_t prefix_misses = 0, prefix_bytes_saved = 0;
  // Cache hits by the reference's kind: the decode reads of requests without
  // a system prompt (user) and with one (system prompt).
  std::uint64_t user_cache_hits = 0, system_prompt_hits = 0;
  std::uint64_t prefill_writes = 0, decode_reads = 0;
  std::uint64_t read_operations = 0, write_operations = 0;
  std::uint64_t total_read_bytes = 0, total_write_bytes = 0;
  std::uint64_t storage_header_bytes_written = 0, storage_header_bytes_read = 0;
  // Storage bytes of transfers the benchmark's end cut short.
  std::uint64_t storage_cut_short_bytes_written = 0, storage_cut_short_bytes_read = 0;
  std::uint64_t evictions = 0, offloads_cpu = 0, offloads_storage = 0, forced = 0;
  double storage_tokens_processed = 0;
  double storage_io_seconds = 0;  // the requests' storage latencies summed
  double generation_seconds = 0;
  metrics::LatencyHistogram end_to_end, storage, generation;
  metrics::LatencyHistogram qos_end_to_end[kQosCount];
  std::uint64_t qos_requests[kQosCount] = {}, qos_violations[kQosCount] = {};
  TierFigures tier[kTierCount];
  // The device and host parts of the storage tier's request_read and
  // request_write (as TierFigures' read_device ... of all its operations).
  metrics::LatencyHistogram request_read_device, request_read_host, request_write_device,
      request_write_host;
  KvRequestSamples samples;
  // Where the accelerator tier kept its entries (kv_cache.accelerator; empty
  // without the tier): "emulated (host memory, gpu_copy_gbps)", or the
  // device-memory plugin's name and data path ("<plugin>:emulated",
  // "<plugin>:cuda-bounce", ...; docs/kvcache.md); why that one; and the
  // plugin's figures (its copies; summed over the ranks when merged).
  std::string accelerator_path, accelerator_reason;
  std::vector<StorageStatistic> accelerator_statistics;
};

struct KvRunOptions {
  // The io-trace CSV to write ("" = none); an OpSink of the caller's is
  // used instead when given.
  std::string trace_path;
  OpSink* sink = nullptr;
  // Where kv_cache.accelerator finds its device-memory storage plugin
  // (null: nowhere, as if it were not installed).
  const plugin::Registry* registry = nullptr;
};

// Runs the workflow on this rank (no collective call). Errors: the tier
// capacity checks (naming the key), the storage's (naming the object), a
// back end refusing deletes (naming it), a kv_cache.accelerator plugin that
// was asked for and does not open or cannot allocate an entry (naming the
// plugin, the bytes).
Result<KvFigures> RunKvCache(session::Session& session, const KvRunOptions& options);

}  // namespace iomimic::kvcache
