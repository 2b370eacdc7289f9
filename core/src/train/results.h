// The training workflow's results (docs/dlio-compat.md §5): generation,
// training with evaluation and checkpoints, and the checkpoint-only
// workflow, merged over the ranks with DLIO's formulas, and their part of
// the run folder: DLIO's summary.json keys (metric, epochs), iomimic's
// training figures, the per-accelerator files, DLIO's progress lines and
// [METRIC] block, the console lines.
//
// TrainingResults is training's output::WorkflowResults
// (output/workflow_results.h): run/ hands it this rank's records; output/
// merges and renders it without knowing it is training.

#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "metrics/records.h"
#include "output/figures.h"
#include "output/workflow_results.h"
#include "session/cache_honesty.h"
#include "train/checkpointer.h"
#include "train/generator.h"
#include "train/trainer.h"

namespace iomimic::train {

// A phase's per-epoch series over all accelerators: AU is the mean over the
// accelerators, throughput the sum, as DLIO aggregates over ranks.
struct PhaseSeries {
  std::vector<double> au_percent;  // one per epoch (eval: per evaluated epoch)
  std::vector<double> samples_per_second;
  metrics::MeanStdev au;
  metrics::MeanStdev throughput;
};

// The epoch a signal cut short: run, but left out of every per-epoch series
// and mean (summary.json's iomimic.partial_epoch).
struct PartialEpoch {
  std::uint64_t epoch = 0;
  std::uint64_t steps = 0;  // done before the stop, of steps_per_epoch
};

struct TrainResults {
  std::uint64_t epochs = 0;  // run, a partial one included
  std::optional<PartialEpoch> partial_epoch;
  std::uint64_t steps_per_epoch = 0;
  std::uint64_t eval_steps_per_epoch = 0;
  PhaseSeries train;
  std::optional<PhaseSeries> eval;  // when any epoch evaluated
  // Bytes the storage layer read per epoch over all ranks / the slowest
  // rank's training time of the epoch.
  std::vector<double> actual_MiB_per_second;
  double seconds = 0;            // the epochs' training time, each epoch its slowest rank's
  std::uint64_t bytes_read = 0;  // all epochs, all ranks
  std::vector<std::uint64_t> minor_faults_per_epoch;  // summed over ranks
  double barrier_mean_ms = 0;                         // per-step barrier wait
  double compute_requested_seconds = 0;               // all accelerators
  double compute_measured_seconds = 0;
};

// One checkpoint save or load over all ranks.
struct CheckpointEvent {
  std::uint64_t index = 1;
  std::uint64_t epoch = 1;  // saves during training: the epoch; otherwise 1
  metrics::Stamp start;     // rank 0's
  metrics::Stamp end;
  std::uint64_t bytes = 0;  // all ranks
  double rank0_seconds = 0;
  double max_seconds = 0;
  double min_seconds = 0;
  int slowest_rank = 0;
  int fastest_rank = 0;
  double min_rank_GiB_per_second = 0;  // the slowest rank's own rate
  // Loads: the files' bytes in the page cache right before the read, summed
  // over ranks (ranks 0: a save, not measured).
  session::ResidencyTotals residency;
};

// One checkpoint.async save over all ranks: each figure the slowest rank's.
struct AsyncSaveEvent {
  std::uint64_t index = 1;
  double stall_seconds = 0;    // training blocked: wait + staging
  double wait_seconds = 0;     // for the previous save's background write
  double staging_seconds = 0;  // copy into host memory
  double write_seconds = 0;    // background write of the data files
  std::uint64_t bytes = 0;     // all ranks
};

struct CheckpointResults {
  std::string layout = "dlio";  // checkpoint.layout
  int thread_count = 1;         // layout dcp
  int restore_world_size = 0;   // layout dcp: readers of the loads
  std::vector<AsyncSaveEvent> async_saves;
  std::string storage;  // the back end's chain
  bool fsync = false;
  std::uint64_t fsync_calls = 0;  // all ranks
  std::uint64_t size_bytes = 0;   // one checkpoint, all ranks
  std::uint64_t parameters = 0;
  std::vector<CheckpointEvent> saves;
  std::vector<CheckpointEvent> loads;
  // What the loads found in the page cache, with what was meant to keep
  // them cold (session/cache_honesty.h CheckpointReadLabel); empty without
  // loads.
  std::string read_path;
  double size_gib() const { return static_cast<double>(size_bytes) / (1024.0 * 1024.0 * 1024.0); }
};

struct GenerateResults {
  std::uint64_t files_written = 0;
  std::uint64_t files_skipped = 0;
  // Of files_written: written again over files made with other generation
  // parameters, and the first change seen (train::GenerateReport).
  std::uint64_t files_rewritten = 0;
  std::string rewrite_reason;
  std::uint64_t files_written_by_all_ranks = 0;
  std::uint64_t bytes_written = 0;
  std::vector<std::uint64_t> bytes_written_per_rank;
  double seconds = 0;  // the slowest rank's
};

// The training workflow's headline figures (output/figures.h): DLIO's
// metric means (AU, samples/s, MiB/s, checkpoint GiB/s) and iomimic's read
// latencies and data wait.
const output::FigureList& Figures();

// This rank's records of the training workflow and, after Collect, the
// run's figures over every rank.
class TrainingResults final : public output::WorkflowResults {
 public:
  // What this rank did: generation, training or the checkpoint-only
  // workflow (any of them), and the checkpointer when the run checkpoints.
  struct Local {
    std::optional<GenerateReport> generate;
    std::optional<TrainResult> train;
    std::optional<CheckpointOnlyResult> checkpoint_only;
    // Read by other_storage and Collect only (the run owns it; Collect
    // forgets it, so the results outlive it).
    Checkpointer* checkpointer = nullptr;
    // The training set against the hosts' memory (session/cache_honesty.h).
    session::CacheCheck cache_check;
  };

  explicit TrainingResults(Local local) : local_(std::move(local)) {}

  // This rank's records, as given.
  const Local& local() const { return local_; }

  // The run's figures, after Collect.
  std::optional<GenerateResults> generate;
  std::optional<TrainResults> train;
  std::optional<CheckpointResults> checkpoint;
  session::CacheCheck cache_check;  // rank 0's check (every rank's alike)
  // How training reads the format's files, in words, and how many times the
  // dataset's bytes one epoch reads on purpose (1 unless the access pattern
  // rereads, e.g. DLIO's whole-file read per sample); empty without training.
  std::string read_pattern;
  double read_pattern_factor = 1;
  // After WriteRankFiles: this rank's largest per-step list folding.
  std::uint64_t max_steps_per_entry = 1;

  // output::WorkflowResults (output/workflow_results.h).
  int accelerators_per_process() const override;
  int interrupted_by() const override;
  void AddEvents(std::chrono::system_clock::time_point origin, int rank,
                 std::vector<output::EventEntry>* events) const override;
  std::vector<std::pair<std::string, metrics::LatencyHistogram>> Histograms() const override;
  void AddRankFigures(const config::Config& config, output::RankFigures* figures) const override;
  std::vector<const session::CountingStorage*> other_storage() const override;
  Status Collect(session::Session& session, output::RunResults& run) override;
  void AddToSummary(const output::RunResults& run, const config::LoadedManifest& manifest,
                    nlohmann::ordered_json& summary,
                    nlohmann::ordered_json& iomimic) const override;
  Status WriteRankFiles(const std::string& folder, const output::RunResults& run,
                        const config::Config& config) override;
  std::string LogText(const output::RunResults& run, const config::Config& config,
                      const std::string& folder) const override;
  std::string MetricLines(const output::RunResults& run,
                          const config::Config& config) const override;
  std::string ConsoleLines(const output::RunResults& run,
                           const config::Config& config) const override;
  std::string ConsoleNotes(const output::RunResults& run,
                           const config::Config& config) const override;

 private:
  Local local_;
};

// DLIO's progress lines (its log level OUTPUT, "[OUTPUT] <timestamp> ..."),
// which rank 0 logs as training goes, rebuilt from accelerator 0's records
// with their own timestamps, in time order: per epoch "Starting epoch <e>:
// <n> steps expected" and "Ending epoch <e> - <n> steps completed in <d> s";
// per block "Starting block <b>", "Ending block <b> - <n> steps completed in
// <d> s" and the block's "[Training] Accelerator Utilization [AU] (%)",
// "[Training] Throughput (samples/second)" (times the accelerators, as DLIO)
// and "[Training] Computation time per step (second)"; per evaluation
// "Starting eval", "Ending eval", "[Eval] Accelerator Utilization [AU] (%)"
// and "[Eval] Throughput (samples/second)"; per checkpoint "Starting
// checkpoint <k> after total step <s> for epoch <e>" and "Ending checkpoint
// <k> for epoch <e>". Ends with "Saved outputs in <folder>".
std::string DlioProgressLog(const std::vector<metrics::EpochRecord>& epochs,
                            const config::Config& config, std::uint64_t steps_per_epoch,
                            std::uint64_t eval_steps_per_epoch, int accelerators,
                            const std::string& folder);

}  // namespace iomimic::train
