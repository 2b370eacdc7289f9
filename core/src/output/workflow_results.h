// One workflow's share of a run's results: what output/ asks of training,
// the KV-cache workflow or any workflow that comes next, without knowing
// which it is (docs/architecture.md).
//
// A workflow (train/, kvcache/, ...) ends its work on each rank by handing
// run/ an object of this interface holding that rank's records. output/
// then, on every rank: asks it for its rank-local contributions to the
// common files (events, histograms, host rows, extra storage counters),
// calls Collect (the workflow's own cross-rank merge), and renders the run
// folder, asking it for its summary.json keys, its per-rank files, its log
// and console lines. Everything the workflow adds lives in its own folder.

#pragma once

#include <chrono>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <utility>
#include <vector>

#include "config/config.h"
#include "iomimic/status.h"
#include "metrics/histogram.h"
#include "output/hosts.h"

namespace iomimic::session {
class Session;
class CountingStorage;
}  // namespace iomimic::session

namespace iomimic::plugin {
class Registry;
}  // namespace iomimic::plugin

namespace iomimic::output {

struct RunResults;

// One row of events.csv: a span of one rank, seconds from the run's origin.
struct EventEntry {
  int rank = 0;
  // What the span was: the workflow's word (training: generate, epoch,
  // train_block, eval, checkpoint_save, checkpoint_load, barrier_wait).
  std::string event;
  std::uint64_t epoch = 0;
  std::uint64_t index = 0;  // block or checkpoint number; 0 when none
  double start_seconds = 0;
  double end_seconds = 0;
  std::uint64_t bytes = 0;  // read (epochs, blocks) or written (generation, saves)
};

class WorkflowResults {
 public:
  virtual ~WorkflowResults() = default;

  // --- This rank's, before the merge; no collective. ---

  // The accelerators each process emulates: num_accelerators is the ranks
  // times this. 1 unless the workflow emulates several per process.
  virtual int accelerators_per_process() const { return 1; }
  // The signal (SIGINT, SIGTERM, SIGHUP) that stopped the workflow at a
  // safe point, or 0 when it ran to its end. The same on every rank.
  virtual int interrupted_by() const { return 0; }
  // Appends this rank's spans for events.csv (rank `rank`), seconds from
  // `origin` (the run's shared time origin).
  virtual void AddEvents(std::chrono::system_clock::time_point origin, int rank,
                         std::vector<EventEntry>* events) const {
    (void)origin, (void)rank, (void)events;
  }
  // This rank's histograms of the workflow's own spans (histograms.json,
  // nanoseconds), by name. Every rank returns the same names in the same
  // order, whatever it recorded: output/ merges them position by position.
  virtual std::vector<std::pair<std::string, metrics::LatencyHistogram>> Histograms() const {
    return {};
  }
  // Adds this rank's workflow figures to its row of the host table
  // (output/hosts.h); the storage figures are filled already.
  virtual void AddRankFigures(const config::Config& config, RankFigures* figures) const {
    (void)config, (void)figures;
  }
  // Storage stacks the workflow opened beside the session's whose per-path
  // counters belong in io_counters.csv (the checkpointer's); none by default.
  virtual std::vector<const session::CountingStorage*> other_storage() const { return {}; }

  // --- The merge; collective. ---

  // Merges the ranks' figures. Every rank calls it once, in the order of the
  // run's workflows, before output/ collects the common figures. It may set
  // RunResults::host_rate_seconds; it reads nothing else of `run` but the
  // fields filled before it (ranks, accelerators, hosts' facts). An error
  // is agreed on by the caller.
  virtual Status Collect(session::Session& session, RunResults& run) = 0;

  // --- Renderings, after the merge; no MPI. ---

  // summary.json: the workflow's keys in the top-level object (`summary`,
  // where DLIO's keys live) and in iomimic's own object (`iomimic`).
  virtual void AddToSummary(const RunResults& run, const config::LoadedManifest& manifest,
                            nlohmann::ordered_json& summary,
                            nlohmann::ordered_json& iomimic) const = 0;
  // Writes this rank's own files into the run folder (training's
  // <id>_per_epoch_stats.json and <id>_output.json, the KV-cache workflow's
  // <rank>_kv_cache.json); the caller agrees on the status over the ranks.
  virtual Status WriteRankFiles(const std::string& folder, const RunResults& run,
                                const config::Config& config) {
    (void)folder, (void)run, (void)config;
    return Status::OK();
  }
  // Lines rank 0 appends to the run's log (output.log_file), e.g. DLIO's
  // progress lines; empty for none.
  virtual std::string LogText(const RunResults& run, const config::Config& config,
                              const std::string& folder) const {
    (void)run, (void)config, (void)folder;
    return {};
  }
  // DLIO's closing "[METRIC]" lines of this workflow (between the block's
  // rules); empty for none.
  virtual std::string MetricLines(const RunResults& run, const config::Config& config) const {
    (void)run, (void)config;
    return {};
  }
  // The terminal's lines for this workflow, each ending in a newline.
  virtual std::string ConsoleLines(const RunResults& run, const config::Config& config) const {
    (void)run, (void)config;
    return {};
  }
  // Notes for the end of the terminal's summary (after the byte totals),
  // each ending in a newline.
  virtual std::string ConsoleNotes(const RunResults& run, const config::Config& config) const {
    (void)run, (void)config;
    return {};
  }
};

// What run/ gives a workflow besides its session.
struct WorkflowContext {
  const plugin::Registry* registry = nullptr;  // the plugins the run found
  std::string folder;                          // the run folder
};

// A workflow's entry point (run/run.cpp lists them): runs the workflow on
// this rank, as every rank does, and returns this rank's results. An error
// fails the run; the caller agrees on it over the ranks.
using WorkflowRunner = Result<std::shared_ptr<WorkflowResults>> (*)(session::Session& session,
                                                                    const WorkflowContext& context);

// A runner's return: `local` (this rank's figures, or the error that ended
// the workflow) as the results class `R`, which R(Local) builds.
template <typename R, typename Local>
Result<std::shared_ptr<WorkflowResults>> ResultsOf(Result<Local> local) {
  if (!local.ok()) return local.status();
  return std::shared_ptr<WorkflowResults>(std::make_shared<R>(std::move(local).value()));
}

}  // namespace iomimic::output
