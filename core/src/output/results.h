// The run folder: what DLIO's and MLPerf Storage's tools read, plus iomimic's
// own measurements.
//
//   summary.json                 rank 0; DLIO's keys (docs/dlio-compat.md §5.2) + "iomimic"
//   <id>_per_epoch_stats.json    one per emulated accelerator (docs/dlio-compat.md §5.3)
//   <id>_output.json             one per emulated accelerator (§5.3); streamed,
//                                per-step lists bounded by iomimic.max_step_list
//   <output_subdir>/config.yaml  resolved manifest under `workload:` (§5.4)
//   <output_subdir>/overrides.yaml  the command-line overrides, a YAML list
//   status.json                  rank 0; "completed" or "failed" with the error
//   timeline.csv, events.csv     rank 0; every rank's intervals and spans
//   histograms.json              rank 0; every latency histogram, merged
//
// The figures come from the results model (output/model.h) and the files
// from its writers (output/writers.h); docs/dlio-compat.md has the layouts.
// DLIO's "MB" and "GB" keys are binary units (MiB, GiB); the names are kept
// for compatibility and the "iomimic.units" object says so.

#pragma once

#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "output/model.h"
#include "output/rank_ledger.h"
#include "session/session.h"

namespace iomimic::output {

// The run folder for a manifest: output.folder, else hydra.run.dir, else
// hydra_log/<model>/<YYYY-mm-dd>-<HH-MM-SS> (DLIO's default).
std::string DefaultOutputFolder(const config::Config& config);

// Creates the run folder on rank 0 and agrees on it across ranks. Refuses a
// folder that already holds results (summary.json or status.json), so a run
// never overwrites another run's results. With `subfolder` (a generate-only
// run: "generate"), a folder the user named (output.folder, hydra.run.dir)
// gets the run in <folder>/<subfolder>, or <subfolder>-1, -2, ... when taken,
// leaving <folder> itself to the training run that follows; a derived
// (timestamped) folder is used as it is.
Result<std::string> PrepareOutputFolder(const config::Config& config, cluster::Cluster& cluster,
                                        const std::string& subfolder = "");

// Writes config.yaml and overrides.yaml (rank 0).
Status WriteConfigFiles(const std::string& folder, const config::LoadedManifest& manifest,
                        const cluster::Cluster& cluster);

// Collective: collects the results model, writes this rank's
// per-accelerator files and, on rank 0, summary.json. The model returned has
// the peak RSS and output time measured after the per-rank files, so their
// cost is counted.
Result<RunResults> WriteResults(const std::string& folder, session::Session& session,
                                const RunOutcome& outcome);

// What status.json adds when a run did not end as one (docs/run-folder.md).
struct StatusDetails {
  int written_by_rank = 0;  // the lowest rank that answered, when rank 0 did not
  // Ranks whose record (output/rank_ledger.h) never answered the signal, and
  // their hosts in rank order: the lost ones.
  std::vector<int> lost_ranks;
  std::vector<std::string> lost_hosts;
  // Ranks that had not answered when it was written, without a sign of a
  // fault (alive, or killed by the launcher before they could answer).
  std::vector<int> unanswered_ranks;
  // Which results the folder holds, in words; empty for a complete run.
  std::string results;
};

// status.json with "completed" or "failed" and the error message;
// "interrupted" and "signal": <name> when `signal` is set (a run stopped by
// SIGINT, SIGTERM or SIGHUP, session/interrupt.h), with an error if any, and
// the details when given. Written atomically (WriteTextFile), by rank 0, or
// by the lowest rank alive when rank 0 is lost.
Status WriteStatus(const std::string& folder, const Status& run_status,
                   const char* signal = nullptr, const StatusDetails& details = {});

}  // namespace iomimic::output
