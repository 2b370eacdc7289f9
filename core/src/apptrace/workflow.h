// The application-replay workflow (workflow.app_replay, docs/replay.md):
// reads the trace named by app_replay.trace (apptrace/model.h) and replays
// it (apptrace/replay.h) on the session's storage, app_replay.copies copies
// per rank, each rank's on its own files; the run's results are the ops and
// bytes per operation type of the trace and of the replay, the latency of
// each type, and the replay's wall time against the original's span.

#pragma once

#include <map>
#include <memory>
#include <string>

#include "apptrace/model.h"
#include "apptrace/replay.h"
#include "iomimic/status.h"
#include "output/figures.h"
#include "output/workflow_results.h"
#include "session/session.h"

namespace iomimic::apptrace {

// One rank's replay, and what the trace held.
struct AppReplayFigures {
  std::string trace, format;
  std::uint64_t trace_threads = 0, trace_files = 0;
  std::map<std::string, std::uint64_t> ignored;  // calls not modelled
  ReplayFigures replay;
  int interrupted_by = 0;
};

// Reads the trace and replays it on this rank; collective (a barrier
// between making the files and the replay, so that the copies start
// together).
Result<AppReplayFigures> ReplayApplication(session::Session& session);

// summary.json's iomimic.app_replay (traced and replayed ops and bytes per
// type, mismatches, wall time, original span, slowdown, latency per type),
// histograms app_replay_<type>, an "app_replay" span per rank in
// events.csv and the console lines.
class AppReplayResults final : public output::WorkflowResults {
 public:
  explicit AppReplayResults(AppReplayFigures local) : local_(std::move(local)), merged_(local_) {}

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
  std::string ConsoleNotes(const output::RunResults& run,
                           const config::Config& config) const override;

  const AppReplayFigures& merged() const { return merged_; }

 private:
  AppReplayFigures local_;
  AppReplayFigures merged_;
};

// The entry point of run/'s table (output::WorkflowRunner).
Result<std::shared_ptr<output::WorkflowResults>> RunAppReplay(
    session::Session& session, const output::WorkflowContext& context);

// The workflow's headline figures (output/figures.h): the replay's wall
// time, its slowdown against the original, bytes per second.
const output::FigureList& Figures();

}  // namespace iomimic::apptrace
