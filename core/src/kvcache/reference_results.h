// The KV-cache reference's results JSON (the file its kv-cache.py writes to
// --output) from iomimic's KV-cache figures: every key of the reference's
// file, each with the reference's meaning (docs/kvcache-reference.md, "The
// results JSON"). summary.json's kv_cache.reference is the same `summary`
// object; kv_cache.reference_results (the drop-in kv-cache.py's --output)
// gets the whole file.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "kvcache/engine.h"

namespace iomimic::kvcache {

struct ReferenceResultsOptions {
  std::uint64_t seed = 0;
  bool prefix_caching = true;                   // kv_cache.prefix_caching
  std::string performance_profile = "latency";  // kv_cache.performance_profile
  // The run's storage tokens per second (summed over the ranks:
  // docs/kvcache.md, "Results"); one rank's is its tokens over its storage
  // seconds, the reference's figure.
  double storage_tokens_per_second = 0;
};

// The reference's `summary` object of `f` (a rank's figures or the run's):
// throughput, the latency percentiles (from iomimic's histograms, within
// 0.78 %), cache_stats (storage_health, per-tier bytes and percentiles),
// qos_metrics, prefix_cache_stats, multi_turn_stats, and the autoscaling
// keys (always empty: iomimic refuses autoscaling). Tier percentile keys
// appear only for tiers with operations, no_data for a QoS class without
// requests, as in the reference.
nlohmann::ordered_json ReferenceSummaryJson(const KvFigures& f,
                                            const ReferenceResultsOptions& options);

// The whole file: the reference's top-level counters and per-request latency
// lists in seconds (f.samples; empty when not recorded), its summary, then
// the figures mlpstorage reads at the top level, which the reference does not
// write (total_requests, throughput_req_per_sec, avg_latency_ms,
// p99_latency_ms, storage_throughput_mbps, cache_hit_rate).
nlohmann::ordered_json ReferenceResultsJson(const KvFigures& f,
                                            const ReferenceResultsOptions& options);

}  // namespace iomimic::kvcache
