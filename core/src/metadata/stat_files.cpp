#include "metadata/stat_files.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "metrics/figures_json.h"
#include "metrics/rank_merge.h"
#include "output/model.h"
#include "session/interrupt.h"

namespace iomimic::metadata {
namespace {

using json = nlohmann::ordered_json;

// This rank's files: train/ then valid/, every ranks-th one from its rank.
std::vector<std::string> RankFiles(const plan::DatasetLayout& layout, int rank, int ranks) {
  std::vector<std::string> out;
  std::uint64_t global = 0;
  for (plan::Split split : {plan::Split::kTrain, plan::Split::kEval}) {
    for (std::uint64_t i = 0; i < layout.num_files(split); ++i, ++global) {
      if (global % static_cast<std::uint64_t>(ranks) == static_cast<std::uint64_t>(rank)) {
        out.push_back(layout.FilePath(split, i));
      }
    }
  }
  return out;
}

}  // namespace

Result<StatFigures> StatFiles(session::Session& session) {
  const config::Config& c = session.config();
  const std::vector<std::string> files =
      RankFiles(session.layout(), session.cluster().rank(), session.cluster().size());
  const std::uint64_t passes = std::max<std::uint64_t>(1, c.train.epochs);
  const unsigned threads = static_cast<unsigned>(std::max<std::uint64_t>(1, c.reader.read_threads));
  StatFigures f;
  f.files = files.size();
  std::atomic<std::uint64_t> next{0}, stats{0}, bytes{0};
  std::mutex failed_mutex;
  Status failed;
  const std::uint64_t total = passes * files.size();
  auto worker = [&] {
    for (std::uint64_t k = next++; k < total; k = next++) {
      if (session::InterruptSignal() != 0) return;
      const std::string& path = files[k % files.size()];
      const auto t0 = std::chrono::steady_clock::now();
      Result<FileInfo> info = session.storage().Stat(path);
      f.stat_ns.Record(
          static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                         std::chrono::steady_clock::now() - t0)
                                         .count()));
      if (!info.ok()) {
        std::lock_guard<std::mutex> lock(failed_mutex);
        if (failed.ok()) failed = info.status().WithContext("metadata workflow");
        next = total;  // the others stop at their next file
        return;
      }
      stats.fetch_add(1, std::memory_order_relaxed);
      bytes.fetch_add(info->size, std::memory_order_relaxed);
    }
  };
  f.start = metrics::Stamp::Now();
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads && !files.empty(); ++t) pool.emplace_back(worker);
  for (std::thread& t : pool) t.join();
  f.end = metrics::Stamp::Now();
  IOMIMIC_RETURN_IF_ERROR(failed);
  f.stats = stats.load();
  f.bytes_listed = bytes.load();
  f.passes = files.empty() ? 0 : (f.stats + files.size() - 1) / files.size();
  f.seconds = metrics::Seconds(f.start, f.end);
  f.interrupted_by = session::InterruptSignal();
  return f;
}

void StatResults::AddEvents(std::chrono::system_clock::time_point origin, int rank,
                            std::vector<output::EventEntry>* events) const {
  events->push_back({rank, "stat_pass", 0, 0, output::SinceOrigin(origin, local_.start),
                     output::SinceOrigin(origin, local_.end), 0});
}

std::vector<std::pair<std::string, metrics::LatencyHistogram>> StatResults::Histograms() const {
  return {{"metadata_stat", local_.stat_ns}};
}

Status StatResults::Collect(session::Session& session, output::RunResults& run) {
  (void)run;
  cluster::Cluster& cluster = session.cluster();
  const std::vector<std::uint64_t> sums =
      cluster.SumU64s({local_.files, local_.stats, local_.bytes_listed});
  merged_.files = sums[0];
  merged_.stats = sums[1];
  merged_.bytes_listed = sums[2];
  merged_.passes = local_.passes;
  merged_.seconds = cluster.MaxDouble(local_.seconds);
  merged_.stat_ns = std::move(metrics::MergeOverRanks({&local_.stat_ns}, cluster)[0]);
  return Status::OK();
}

void StatResults::AddToSummary(const output::RunResults& run,
                               const config::LoadedManifest& manifest, json& summary,
                               json& iomimic) const {
  (void)run, (void)manifest, (void)summary;
  const StatFigures& m = merged_;
  json o;
  o["files"] = m.files;
  o["passes"] = m.passes;
  o["stats"] = m.stats;
  o["bytes_listed"] = m.bytes_listed;
  o["seconds"] = metrics::JsonNumber<json>(m.seconds);
  o["stats_per_second"] =
      metrics::JsonNumber<json>(m.seconds > 0 ? static_cast<double>(m.stats) / m.seconds : 0.0);
  o["latency_ms"] = metrics::PercentilesJson<json>(m.stat_ns, metrics::kResultQuantiles);
  iomimic["metadata"] = std::move(o);
}

std::string StatResults::ConsoleLines(const output::RunResults& run,
                                      const config::Config& config) const {
  (void)run, (void)config;
  const StatFigures& m = merged_;
  char line[256];
  std::snprintf(line, sizeof line,
                "  metadata: %llu stats of %llu files in %.2f s: %.0f stats/s, p50 %.3f ms, "
                "p99 %.3f ms\n",
                static_cast<unsigned long long>(m.stats), static_cast<unsigned long long>(m.files),
                m.seconds, m.seconds > 0 ? static_cast<double>(m.stats) / m.seconds : 0.0,
                static_cast<double>(m.stat_ns.Percentile(0.5)) / 1e6,
                static_cast<double>(m.stat_ns.Percentile(0.99)) / 1e6);
  return line;
}

Result<std::shared_ptr<output::WorkflowResults>> RunStatFiles(
    session::Session& session, const output::WorkflowContext& context) {
  (void)context;
  return output::ResultsOf<StatResults>(StatFiles(session));
}

const output::FigureList& Figures() {
  static const output::FigureList figures = {
      {"metadata stats/s", {"iomimic", "metadata", "stats_per_second"}, true},
      {"metadata stat p50 ms", {"iomimic", "metadata", "latency_ms", "p50"}, false},
      {"metadata stat p99 ms", {"iomimic", "metadata", "latency_ms", "p99"}, false},
  };
  return figures;
}

}  // namespace iomimic::metadata
