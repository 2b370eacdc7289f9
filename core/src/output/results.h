// The run folder: what DLIO's and MLPerf Storage's tools read, plus iomimic's
// own measurements.
//
//   summary.json                 rank 0; DLIO's keys (§5.4) + an "iomimic" object
//   <rank>_per_epoch_stats.json  every rank (§5.5)
//   <rank>_output.json           every rank (§5.5); streamed, per-step lists
//                                bounded by iomimic.max_step_list (README.md)
//   <output_subdir>/config.yaml  resolved manifest under `workload:` (§6.3)
//   <output_subdir>/overrides.yaml  the command-line overrides, a YAML list
//   status.json                  rank 0; "completed" or "failed" with the error
//
// JSON is strict: non-finite numbers are written as null, never NaN.
// DLIO's "MB" and "GB" keys are binary units (MiB, GiB); the names are kept
// for compatibility and the "iomimic.units" object says so.

#pragma once

#include <optional>
#include <string>

#include "cluster/cluster.h"
#include "engine/checkpointer.h"
#include "engine/generator.h"
#include "engine/session.h"
#include "engine/trainer.h"
#include "metrics/records.h"

namespace iomimic::output {

struct RunOutcome {
  metrics::Stamp start;
  metrics::Stamp end;
  std::optional<engine::GenerateReport> generate;
  std::optional<engine::TrainResult> train;
  std::optional<engine::CheckpointOnlyResult> checkpoint_only;
  // Set when the run checkpoints (training with checkpoints or checkpoint-only).
  engine::Checkpointer* checkpointer = nullptr;
};

// The run folder for a manifest: output.folder, else hydra.run.dir, else
// hydra_log/<model>/<YYYY-mm-dd>-<HH-MM-SS> (DLIO's default).
std::string DefaultOutputFolder(const config::Config& config);

// Creates the run folder on rank 0 and agrees on it across ranks. Refuses a
// folder that already holds results (summary.json or status.json), so a run
// never overwrites another run's results.
Result<std::string> PrepareOutputFolder(const config::Config& config, cluster::Cluster& cluster);

// Writes config.yaml and overrides.yaml (rank 0).
Status WriteConfigFiles(const std::string& folder, const config::LoadedManifest& manifest,
                        const cluster::Cluster& cluster);

// Collective. Aggregates across ranks and writes every result file. On rank 0
// fills `human` with a short summary for the terminal. summary.json's peak
// RSS and iomimic.output_seconds are taken after the per-rank files.
Status WriteResults(const std::string& folder, engine::Session& session, const RunOutcome& outcome,
                    std::string* human);

// Rank 0: status.json with "completed" or "failed" and the error message;
// "interrupted" and "signal": <name> when `signal` is set (a run stopped by
// SIGINT, SIGTERM or SIGHUP, engine/interrupt.h), with an error if any.
Status WriteStatus(const std::string& folder, const Status& run_status,
                   const char* signal = nullptr);

}  // namespace iomimic::output
