// `iomimic compare RUN_A RUN_B... [--html out.html]`: the runs' figures side
// by side (core/src/analysis/compare.h, docs/analysis.md).

#include "analysis/compare.h"

#include <iostream>

#include "analysis/report.h"
#include "analysis/run_folder.h"
#include "cli.h"
#include "run/run.h"

namespace iomimic::app {

namespace {

constexpr const char* kCompareHelp =
    "usage: iomimic compare RUN_A RUN_B [RUN_C...] [--html out.html]\n\n"
    "Prints the runs' figures side by side (AU, throughput, latency, checkpoint\n"
    "rates...) with each run's ratio to RUN_A, and the configuration keys whose\n"
    "values differ (back end, options, format, host). Reads the run folders'\n"
    "summary.json. --html also writes the comparison as one self-contained page\n"
    "with overlaid timelines and histograms (docs/analysis.md); --chart-js FILE\n"
    "inlines that Chart.js file instead of the one built in.\n";

}  // namespace

int CmdCompare(int argc, char** argv) {
  std::vector<std::string> folders;
  std::string html, chart_js;
  int code = 0;
  if (!ParseFolderArgs("compare", argc, argv, kCompareHelp,
                       {{"--html", &html}, {"--chart-js", &chart_js}}, &folders, &code)) {
    return code;
  }
  if (folders.size() < 2) return Usage("compare needs at least two run folders");
  std::vector<analysis::RunFolder> runs;
  for (const std::string& f : folders) {
    Result<analysis::RunFolder> run = analysis::ReadRunFolder(f, run::Figures());
    if (!run.ok()) return Fail(run.status().WithContext("compare"));
    runs.push_back(std::move(run).value());
  }
  std::cout << analysis::CompareText(runs);
  if (!html.empty()) {
    Result<std::string> page = analysis::CompareHtml(folders, {chart_js, run::Figures()});
    if (!page.ok()) return Fail(page.status());
    if (Status s = WriteHtml(html, *page); !s.ok()) return Fail(s.WithContext("compare"));
    std::cout << "\ncompare: wrote " << html << std::endl;
  }
  return 0;
}

}  // namespace iomimic::app
