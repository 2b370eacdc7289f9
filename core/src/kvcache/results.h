// The KV-cache workflow's results (docs/kvcache.md, "Results"): the ranks'
// figures merged (MLPerf Storage v3.0 rules, section 6.3.4: storage read bandwidth
// and storage tokens/s summed over the ranks, the largest rank's P95), and
// their renderings: summary.json's kv_cache object, the per-rank file
// <rank>_kv_cache.json and the console lines, given to output/ through
// KvCacheResults (output/workflow_results.h).
#pragma once

#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "config/config.h"
#include "kvcache/engine.h"
#include "output/figures.h"
#include "output/workflow_results.h"

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

// The KV-cache workflow's headline figures (output/figures.h; docs/kvcache.md,
// "Results"): requests, tokens/s, hit rate, GiB/s of each tier the run had,
// end-to-end and storage latency percentiles, each QoS class's P95 and SLA.
const output::FigureList& Figures();

// This rank's KV-cache figures and, after Collect, the run's (KvResults).
class KvCacheResults final : public output::WorkflowResults {
 public:
  explicit KvCacheResults(KvFigures local) : local_(std::move(local)) {}

  // This rank's figures, as given.
  const KvFigures& local() const { return local_; }
  // The run's, after Collect.
  const KvResults& merged() const { return merged_; }

  // output::WorkflowResults (output/workflow_results.h).
  int interrupted_by() const override { return local_.interrupted_by; }
  Status Collect(session::Session& session, output::RunResults& run) override;
  void AddToSummary(const output::RunResults& run, const config::LoadedManifest& manifest,
                    nlohmann::ordered_json& summary,
                    nlohmann::ordered_json& iomimic) const override;
  Status WriteRankFiles(const std::string& folder, const output::RunResults& run,
                        const config::Config& config) override;
  std::string ConsoleLines(const output::RunResults& run,
                           const config::Config& config) const override;

 private:
  KvFigures local_;
  KvResults merged_;
};

// The KV-cache workflow's entry point (output::WorkflowRunner, no
// kv_cache.replay_trace): RunKvCache with the run's plugins and the I/O trace
// log in the run folder (kv_cache.io_trace_log; rank r > 0 adds .rank<r>),
// its results as KvCacheResults.
Result<std::shared_ptr<output::WorkflowResults>> RunKvCacheWorkflow(
    session::Session& session, const output::WorkflowContext& context);

}  // namespace iomimic::kvcache
