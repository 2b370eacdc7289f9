// `iomimic report RUN_DIR... | SWEEP_DIR [-o out.html]`: one self-contained
// HTML page (core/src/analysis/report.h, docs/analysis.md).

#include "analysis/report.h"

#include <iostream>

#include "analysis/run_folder.h"
#include "cli.h"
#include "run/run.h"

namespace iomimic::app {

namespace {

constexpr const char* kReportHelp =
    "usage: iomimic report RUN_DIR... [-o out.html] [--chart-js FILE]\n"
    "       iomimic report SWEEP_DIR [-o out.html]\n\n"
    "Writes one self-contained HTML page (opens offline): the resolved\n"
    "configuration, AU and throughput per epoch, throughput and AU timelines with\n"
    "epoch/eval/checkpoint markers, latency and access-size histograms, per-rank\n"
    "spread, hottest files, checkpoints and the back end's own figures of each run\n"
    "(docs/analysis.md). A sweep folder (results.csv) gives the sweep's page: AU\n"
    "and MiB/s against each factor. Default output: DIR/report.html for one\n"
    "folder, ./report.html for several. --chart-js FILE inlines that Chart.js\n"
    "file instead of the one built in.\n";

}  // namespace

int CmdReport(int argc, char** argv) {
  std::vector<std::string> folders;
  std::string output, chart_js;
  int code = 0;
  if (!ParseFolderArgs("report", argc, argv, kReportHelp,
                       {{"-o", &output}, {"--output", &output}, {"--chart-js", &chart_js}},
                       &folders, &code)) {
    return code;
  }
  if (folders.empty()) return Usage("report needs a run folder (or a sweep folder)");
  std::size_t sweeps = 0;
  for (const std::string& f : folders) sweeps += analysis::IsSweepFolder(f) ? 1 : 0;
  if (sweeps > 0 && folders.size() > 1) {
    return Usage("report: a sweep folder is reported alone (" + std::to_string(sweeps) + " of " +
                 std::to_string(folders.size()) + " folders are sweeps)");
  }
  if (output.empty()) output = folders.size() == 1 ? folders[0] + "/report.html" : "report.html";
  const analysis::ReportOptions options{chart_js, run::Figures()};
  Result<std::string> page = sweeps > 0 ? analysis::SweepHtml(folders[0], options)
                                        : analysis::RunReportHtml(folders, options);
  if (!page.ok()) return Fail(page.status());
  if (Status s = WriteHtml(output, *page); !s.ok()) return Fail(s.WithContext("report"));
  std::cout << "report: wrote " << output << std::endl;
  for (const std::string& f : folders) {
    if (sweeps > 0) break;
    // A folder whose merge never happened: say what the page stands on.
    Result<analysis::RunFolder> run = analysis::ReadRunFolder(f, run::Figures());
    if (run.ok() && run->partial) std::cout << "report: " << f << ": " << run->partial_note << "\n";
  }
  return 0;
}

}  // namespace iomimic::app
