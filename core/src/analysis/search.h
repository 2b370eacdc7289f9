// `iomimic search WORKLOAD --min-au 90`: MLPerf Storage's headline question,
// the largest number of emulated accelerators whose training AU stays at or
// above the threshold on this storage. Doubling from 1 until AU falls below
// the threshold (or the bound is reached), then bisection between the last
// number that held and the first that did not; every point is a full run in
// its own folder.
//
// A KV-cache workload (`--by users`, docs/kvcache.md) is searched the same
// way over `kv_cache.num_users`: the most users whose run meets a QoS
// target (by default every QoS class with requests meets its P95 target,
// summary.json's kv_cache.qos.<class>.meets_target).

#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/run_folder.h"
#include "iomimic/status.h"
#include "output/figures.h"

namespace iomimic::analysis {

// The QoS a KV-cache probe must meet. Default: every class with requests
// meets its own P95 target (summary.json's meets_target). A class, a
// percentile or a threshold picks another test: the class's (or every
// class's) end-to-end `percentile` within `max_ms` (0: the class's own P95
// target).
struct QosTarget {
  std::string qos_class = "all";   // all, interactive, responsive or batch
  std::string percentile = "p95";  // p50, p90, p95, p99, p999, p9999, max
  double max_ms = 0;
};

// Checks a target's words: one error naming the bad class or percentile.
Status ValidateQosTarget(const QosTarget& target);

// Whether a KV-cache run with these QoS classes and `requests` requests in
// all meets `target`. A class without requests imposes nothing; a run
// without requests meets nothing. `why` (when not null) gets a short reason:
// the first class that misses, with its figure and threshold.
bool MeetsQos(const std::vector<KvQosClass>& qos, double requests, const QosTarget& target,
              std::string* why);

struct SearchOptions {
  std::string iomimic;   // the binary to run
  std::string workload;  // shipped name or manifest path
  std::vector<std::string> overrides;
  double min_au_percent = 90;
  // What grows: "accelerators" (accelerators per process, one process),
  // "ranks" (MPI processes through `launcher`) or "users"
  // (kv_cache.num_users of a KV-cache workload, one process).
  std::string by = "accelerators";
  QosTarget qos;  // for "users"
  std::vector<std::string> launcher;
  std::uint64_t max = 4096;    // the largest number tried
  std::string output;          // run folders and search.csv
  output::FigureList figures;  // the figures read from each probe's folder (run::Figures())
};

struct SearchPoint {
  std::uint64_t n = 0;  // accelerators, ranks or users
  double au_percent = 0;
  double samples_per_second = 0;
  double mib_per_second = 0;
  // KV-cache probes: requests, the aggregate storage and wall tokens/s, each
  // class's end-to-end latency at the target's percentile (NaN: no
  // requests), and why it missed the target.
  double requests = 0;
  double storage_tokens_per_second = 0;
  double wall_tokens_per_second = 0;
  std::vector<std::pair<std::string, double>> qos_ms;
  std::string why;
  bool held = false;  // AU at or above the threshold, or the QoS target met
  std::string folder;
};

struct SearchResult {
  std::uint64_t answer = 0;         // 0: not even one accelerator holds
  bool bounded = false;             // the bound was reached while AU still held
  std::vector<SearchPoint> points;  // in the order tried
};

// Runs the search. A run that fails is an error naming its folder.
Result<SearchResult> RunSearch(const SearchOptions& options,
                               const std::function<void(const SearchPoint&)>& on_point);

// The points as a table (text) and as CSV; their columns follow `options.by`.
std::string SearchTable(const SearchResult& result, const SearchOptions& options);
std::string SearchCsv(const SearchResult& result, const SearchOptions& options);

// The target in words, e.g. "every QoS class with requests meets its P95
// target" or "interactive p99 <= 20 ms".
std::string DescribeQosTarget(const QosTarget& target);

}  // namespace iomimic::analysis
