// The engine as a library: one call runs a workload manifest end to end.
//
// RunWorkload does what DLIO's main does: make the plugins, generate the
// dataset, train (with evaluation and checkpoints) or run the checkpoint-only
// workflow, write the run folder (output/results.h) and status.json, and
// return the results model (output/model.h). It prints nothing: front ends
// (the CLI, sweeps, searches, tests) learn what happens through a
// RunObserver and render the model themselves (output/writers.h).

#pragma once

#include <cstdint>
#include <string>

#include "cluster/cluster.h"
#include "config/config.h"
#include "iomimic/status.h"
#include "metrics/records.h"
#include "output/figures.h"
#include "output/model.h"
#include "plugin/registry.h"
#include "train/results.h"

namespace iomimic::run {

struct RunOptions {
  // `iomimic generate`: write the dataset and stop (no training, evaluation
  // or checkpoints, whatever the manifest's workflow says).
  bool generate_only = false;
  // Writer threads per rank for generation; 0 = the host's hardware threads.
  unsigned generate_threads = 0;
  // Seconds between RunObserver::OnProgress calls on this rank; 0 = none
  // (and no progress thread). Front ends ask on one rank only.
  double progress_interval = 0;
};

// A snapshot of where this rank is (RunObserver::OnProgress). Counts are this
// rank's; times are seconds since the phase's start (generation, training,
// the checkpoint-only workflow).
struct Progress {
  enum class Phase { kIdle, kGenerate, kTrain, kEval, kCheckpointWrite, kCheckpointRead, kKvCache };
  Phase phase = Phase::kIdle;
  double seconds = 0;
  int rank = 0;
  int ranks = 1;
  // Generation: this rank's files (written, or found complete), done and in
  // all, and the bytes it wrote.
  std::uint64_t files_done = 0;
  std::uint64_t files_total = 0;
  std::uint64_t bytes_written = 0;
  // Training: epoch (1-based) of epochs; step of steps, the steps done of
  // the current pass (training or evaluation); training steps done so far
  // (evaluation not counted) of epochs x steps_per_epoch.
  std::uint64_t epoch = 0;
  std::uint64_t epochs = 0;
  std::uint64_t step = 0;
  std::uint64_t steps = 0;
  std::uint64_t steps_per_epoch = 0;
  std::uint64_t train_steps_done = 0;
  // Samples read by this process since training began, and the share of the
  // wall time its accelerators computed (percent; checkpoints and
  // evaluation included, so a lower bound of the AU of the report).
  std::uint64_t samples = 0;
  double au_percent = 0;
  // Checkpoints: the one being written or read (1-based) and how many in all
  // (0 when not known ahead, as during training).
  std::int64_t checkpoint = 0;
  std::int64_t checkpoints = 0;
  // The KV-cache workflow: requests completed, and the run's duration
  // (kv_cache.duration, seconds).
  std::uint64_t requests = 0;
  double duration = 0;
};

// What generation is about to do.
struct GenerateStart {
  std::uint64_t files = 0;   // over all ranks
  std::string train_folder;  // where the training files go (valid/ beside it)
  unsigned threads = 1;      // files each rank writes at once (at most)
};

// The shape of the training about to start.
struct TrainStart {
  std::uint64_t epochs = 0;
  std::uint64_t steps_per_epoch = 0;  // per accelerator
  std::uint64_t batch_size = 0;
  int ranks = 1;
  int accelerators_per_process = 1;
  std::uint64_t read_threads = 0;  // per accelerator
};

// The checkpoint-only workflow about to start.
struct CheckpointStart {
  std::int64_t writes = 0;
  std::int64_t reads = 0;
  double size_gib = 0;  // one checkpoint, all ranks
  int ranks = 1;
  int tensor = 1, pipeline = 1, data = 1, zero_stage = 0;
  std::string storage;  // the back end's chain
  bool fsync = false;
};

// Generation totals over all ranks: the results model's generation figures
// (files written and skipped, bytes, the slowest rank's seconds; the
// per-rank bytes are left empty here).
using GenerateTotals = train::GenerateResults;

// What a front end learns while a run goes on. Every method but OnProgress
// is called on every rank (a front end that prints checks its rank), from
// the thread that called RunWorkload, one at a time, in the order listed;
// OnProgress only where RunOptions::progress_interval asks for it, from the
// engine's progress thread. The defaults do nothing, so an observer
// overrides only what it needs.
class RunObserver {
 public:
  virtual ~RunObserver() = default;
  // A remark about the manifest made once the plugins are loaded (the same
  // on every rank), e.g. an element type a format replaces.
  virtual void OnWarning(const std::string& message) { (void)message; }
  // The run folder exists (every run, generate-only ones included); results,
  // logs and anything else the front end writes for this run belong in it.
  virtual void OnRunFolder(const std::string& folder) { (void)folder; }
  // Generation starts (what GenerateStart describes).
  virtual void OnGenerateStart(const GenerateStart& start) { (void)start; }
  virtual void OnGenerateEnd(const GenerateTotals& totals) { (void)totals; }
  virtual void OnTrainStart(const TrainStart& start) { (void)start; }
  // After each epoch, with this process's first accelerator's record and its
  // figures (metrics::ComputeEpochMetrics).
  virtual void OnEpochEnd(const metrics::EpochRecord& record,
                          const metrics::EpochMetrics& metrics) {
    (void)record;
    (void)metrics;
  }
  virtual void OnCheckpointOnlyStart(const CheckpointStart& start) { (void)start; }
  // Where this rank is, every RunOptions::progress_interval seconds while
  // the run goes on (never when that is 0). The exception to the rules
  // above: it is called from the engine's progress thread, so it may run
  // while another method runs on the calling thread (a front end that
  // prints serialises its output), never twice at once, and never after
  // RunWorkload returns. It must be quick (it delays the next snapshot, not
  // the run).
  virtual void OnProgress(const Progress& progress) { (void)progress; }
  // The run failed with `status` (the same on every rank when it is a
  // collective failure); status.json already says so when a run folder exists.
  virtual void OnError(const Status& status) { (void)status; }
};

// Every workflow's headline figures, for the analysis commands (compare,
// sweep, search, report; output/figures.h): training's, the session's,
// then those of each workflow of run/'s table, in its order. Names are
// unique (a test checks it).
const output::FigureList& Figures();

// Collective: every rank calls it with the same manifest. Returns the results
// model (only generation figures for a generate-only run), or the error that stopped
// the run, which is then also in status.json when the run folder exists.
// `observer` may be null.
Result<output::RunResults> RunWorkload(const config::LoadedManifest& manifest,
                                       const plugin::Registry& registry, cluster::Cluster& cluster,
                                       const RunOptions& options, RunObserver* observer);

}  // namespace iomimic::run
