// The KV-cache workflow's results (docs/kvcache.md, "Results"): the ranks'
// figures merged (MLPerf Storage v3.0 rules, section 6.3.4: storage read bandwidth
// and storage tokens/s summed over the ranks, the largest rank's P95), and
// their renderings: summary.json's kv_cache object, the per-rank file
// <rank>_kv_cache.json and the console lines.
#pragma once

#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "config/config.h"
#include "kvcache/engine.h"

namespace iomimic::kvcache {

// One rank's headline figures.
struct KvRankFigures {
  int rank = 0;
  std::uint64_t requests = 0;
  double seconds = 0;
  double storage_tokens_per_second = 0;  // tokens generated / storage I/O seconds
  double wall_tokens_per_second = 0;     // tokens generated / benchmark seconds
  double storage_read_GiB_per_second = 0;
  double storage_write_GiB_per_second = 0;
  double end_to_end_p95_ms = 0;
  double storage_p95_ms = 0;
};

struct KvResults {
  KvFigures all;  // summed over ranks, histograms merged; seconds: the slowest rank's
  std::vector<KvRankFigures> ranks;
};

// The figures of `f` alone (rank `rank`).
KvRankFigures RankFigures(const KvFigures& f, int rank);

// Collective: every rank calls it with its figures and gets the run's.
KvResults CollectKvResults(const KvFigures& local, cluster::Cluster& cluster);

// summary.json's "kv_cache" object as JSON text.
std::string KvCacheJson(const KvResults& results, const config::KvCacheConfig& config);

// <rank>_kv_cache.json's text: the same object for one rank's figures.
std::string KvRankJson(const KvFigures& local, int rank, const config::KvCacheConfig& config);

// A few console lines (each ending in a newline).
std::string KvConsoleLines(const KvResults& results);

}  // namespace iomimic::kvcache
