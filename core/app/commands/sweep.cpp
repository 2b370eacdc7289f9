// `iomimic sweep DESIGN.csv`: runs a factorial design (resumable) and writes
// results.csv (core/src/analysis/sweep.h, docs/analysis.md).

#include "analysis/sweep.h"

#include <iostream>

#include "cli.h"
#include "run/run.h"

namespace iomimic::app {

int CmdSweep(int argc, char** argv) {
  ExperimentArgs args;
  int code = 0;
  if (!ParseExperiment("sweep", argc, argv, &args, &code)) return code;
  if (args.positional.empty()) return Usage("sweep needs a design file");
  analysis::SweepOptions options;
  options.design = args.positional[0];
  options.overrides.assign(args.positional.begin() + 1, args.positional.end());
  PassConfigDir(args.config_dir, &options.overrides);
  options.output = args.output;
  options.iomimic = args.iomimic;
  options.launcher = LauncherOf(args);
  options.figures = run::Figures();
  Result<analysis::SweepReport> report = analysis::RunSweep(
      options, [](const std::string& line) { std::cout << "sweep: " << line << std::endl; });
  if (!report.ok()) return Fail(report.status());
  std::cout << "sweep: " << report->completed << " completed, " << report->failed << " failed, "
            << report->already_done << " done before, of " << report->rows
            << " experiments; results in " << report->results_csv << std::endl;
  if (!report->report_html.empty()) {
    std::cout << "sweep: report page " << report->report_html << std::endl;
  }
  if (report->interrupted) return 130;
  return report->failed > 0 ? 1 : 0;
}

}  // namespace iomimic::app
