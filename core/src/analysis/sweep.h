// `iomimic sweep DESIGN.csv`: runs a factorial design, the study's way.
//
// The design is a CSV with one row per experiment: a `model` (or `workload`)
// column naming a shipped workload or a manifest path, optionally
// `processes` (MPI ranks, launched through the launcher when > 1),
// `overrides` (Hydra overrides separated by spaces), `run` (Y once done), and
// any other column named by a manifest key (reader.read_threads,
// storage.backend, ...) whose cell, when not empty, becomes an override.
// Lines starting with '#' are comments. Each experiment runs in its own
// folder under the output folder; after each completed row the design's
// `run` cell becomes Y (the file is rewritten in place, comments kept, by an
// atomic rename) and results.csv is rewritten with one row per completed
// experiment: the design's factors, the status and the run's figures. At the
// end report.html beside it plots AU and MiB/s against each factor (report.h;
// a page that cannot be written is logged, not an error). A sweep stopped
// midway runs only the rows not yet Y when started again.

#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "iomimic/status.h"
#include "output/figures.h"

namespace iomimic::analysis {

struct SweepOptions {
  std::string design;                  // the CSV
  std::string output;                  // run folders and results.csv ("" = <design>.runs)
  std::string iomimic;                 // the binary to run
  std::vector<std::string> launcher;   // for processes > 1, "{processes}" replaced
  std::vector<std::string> overrides;  // added to every experiment (e.g. to shrink it)
  output::FigureList figures;          // results.csv's figure columns (run::Figures())
};

struct SweepReport {
  std::uint64_t rows = 0;
  std::uint64_t already_done = 0;
  std::uint64_t completed = 0;
  std::uint64_t failed = 0;
  bool interrupted = false;  // a run was stopped by a signal: the sweep stopped too
  std::string results_csv;
  std::string report_html;  // the sweep's page (AU and MiB/s per factor); "" when not written
};

// Writes `text` to `path` through the file `temp` and a rename, so that a
// reader never sees half a file. Errors: "cannot write <temp>", or
// `rename_error` followed by `path` when the rename fails.
Status ReplaceFile(const std::string& path, const std::string& temp, const std::string& text,
                   const std::string& rename_error = "cannot write ");

// Runs the design's pending rows in order. `log` receives one line per
// experiment (started, finished with status). Errors: an unreadable or
// malformed design (naming file and line), an output folder that cannot be
// made. A failed experiment is not an error: it is counted and its row
// stays pending.
Result<SweepReport> RunSweep(const SweepOptions& options,
                             const std::function<void(const std::string&)>& log);

}  // namespace iomimic::analysis
