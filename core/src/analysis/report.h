// `iomimic report` and the HTML pages of `compare --html` and `sweep`: one
// self-contained HTML file per page (the data, the page's script and the
// charting library inlined), which opens offline in any browser.
//
// The page's template (report_template.html) is compiled in; the charting
// library (Debian's libjs-chart.js) is read at build time from the path CMake
// found (IOMIMIC_CHART_JS) and compiled in as well. A build that found none
// still builds: these functions then return a clear error unless
// ReportOptions::chart_js names the library file to inline.
//
// Every page measures itself: after its charts are drawn it writes a
// self-check (charts expected, canvases with pixels, script errors) into the
// element #iomimic-selfcheck, which the tests read through headless Chromium
// (docs/analysis.md, "Reports").

#pragma once

#include <string>
#include <vector>

#include "iomimic/status.h"
#include "output/figures.h"

namespace iomimic::analysis {

struct ReportOptions {
  std::string chart_js;        // a Chart.js UMD file to inline ("" = the one built in)
  output::FigureList figures;  // the runs' headline figures (run::Figures())
};

// One page with every run's sections: configuration, AU and throughput per
// epoch, the throughput and AU timelines with epoch/eval/checkpoint markers,
// latency and access-size histograms, per-rank spread, hottest files,
// checkpoints, the back end's own figures. Sections whose file is missing
// (timeline.csv, events.csv, histograms.json, io_counters.csv) fall back to
// summary.json or say what is missing. Errors: a folder without summary.json.
Result<std::string> RunReportHtml(const std::vector<std::string>& run_dirs,
                                  const ReportOptions& options);

// The comparison of `iomimic compare` as a page: the figures with ratios to
// the first run, the differing configuration highlighted, busy accelerators
// (accelerators x AU) per run, where each run stalls (data wait, barriers,
// its lowest-AU interval), and overlaid timelines and histograms.
Result<std::string> CompareHtml(const std::vector<std::string>& run_dirs,
                                const ReportOptions& options);

// The page of a sweep folder (its results.csv): AU and MiB/s against each
// factor that varies, one series per combination of the others, and the
// results table. Errors: no results.csv, or one without a status column.
Result<std::string> SweepHtml(const std::string& sweep_dir, const ReportOptions& options);

// True when `dir` holds a sweep's results.csv and no summary.json.
bool IsSweepFolder(const std::string& dir);

}  // namespace iomimic::analysis
