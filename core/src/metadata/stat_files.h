// The metadata workflow (workflow.metadata, docs/architecture.md "A
// workflow"): stat every file of the dataset, as a job's start-up listing or
// a data loader's existence checks do, and measure the storage's metadata
// rate. No data is read.
//
// Each rank stats its share of the dataset's files (train/ then valid/,
// file i to rank i mod ranks) train.epochs times over, on
// reader.read_threads threads; every stat goes through the session's
// counting storage (storage_stat in histograms.json, opens and stats in
// io_counters.csv). A missing file is an error naming it. A signal stops
// the passes at the next file (session/interrupt.h).

#pragma once

#include <cstdint>

#include "iomimic/status.h"
#include "metrics/histogram.h"
#include "metrics/records.h"
#include "output/figures.h"
#include "output/workflow_results.h"
#include "session/session.h"

namespace iomimic::metadata {

// One rank's figures.
struct StatFigures {
  std::uint64_t files = 0;   // this rank's share of the dataset
  std::uint64_t passes = 0;  // done; the last one partial when stopped
  std::uint64_t stats = 0;
  std::uint64_t bytes_listed = 0;  // the sizes the stats returned, summed
  double seconds = 0;              // from the first stat to the last one's end
  metrics::Stamp start, end;
  metrics::LatencyHistogram stat_ns;
  int interrupted_by = 0;
};

// Runs the passes on this rank.
Result<StatFigures> StatFiles(session::Session& session);

// The metadata workflow's headline figures (output/figures.h): stats per
// second and the P50 and P99 of one stat.
const output::FigureList& Figures();

// This rank's figures and, after Collect, the run's: summary.json's
// iomimic.metadata, a "stat_pass" span in events.csv, the metadata_stat
// histogram and a console line.
class StatResults final : public output::WorkflowResults {
 public:
  explicit StatResults(StatFigures local) : local_(std::move(local)) {}

  // The run's, after Collect: counts summed, seconds the slowest rank's.
  const StatFigures& merged() const { return merged_; }

  // output::WorkflowResults (output/workflow_results.h).
  int interrupted_by() const override { return local_.interrupted_by; }
  void AddEvents(std::chrono::system_clock::time_point origin, int rank,
                 std::vector<output::EventEntry>* events) const override;
  std::vector<std::pair<std::string, metrics::LatencyHistogram>> Histograms() const override;
  Status Collect(session::Session& session, output::RunResults& run) override;
  void AddToSummary(const output::RunResults& run, const config::LoadedManifest& manifest,
                    nlohmann::ordered_json& summary,
                    nlohmann::ordered_json& iomimic) const override;
  std::string ConsoleLines(const output::RunResults& run,
                           const config::Config& config) const override;

 private:
  StatFigures local_;
  StatFigures merged_;
};

// The workflow's entry point (output::WorkflowRunner): StatFiles, its
// results as StatResults.
Result<std::shared_ptr<output::WorkflowResults>> RunStatFiles(
    session::Session& session, const output::WorkflowContext& context);

}  // namespace iomimic::metadata
