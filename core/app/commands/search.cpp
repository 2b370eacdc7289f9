// `iomimic search WORKLOAD --min-au 90`: the most accelerators that keep AU
// (core/src/analysis/search.h, docs/analysis.md).

#include "analysis/search.h"

#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli.h"

namespace iomimic::app {

int CmdSearch(int argc, char** argv) {
  ExperimentArgs args;
  int code = 0;
  if (!ParseExperiment("search", argc, argv, &args, &code)) return code;
  analysis::SearchOptions options;
  options.workload = kDefaultWorkload;
  for (const std::string& p : args.positional) {
    const bool is_override = p.find('=') != std::string::npos || p.rfind("~", 0) == 0;
    if (is_override) {
      options.overrides.push_back(p);
    } else {
      options.workload = p;
    }
  }
  PassConfigDir(args.config_dir, &options.overrides);
  options.iomimic = args.iomimic;
  options.min_au_percent = args.min_au;
  options.by = args.by;
  options.max = args.max;
  options.launcher = LauncherOf(args);
  options.output = args.output.empty()
                       ? "search-" + std::filesystem::path(options.workload).stem().string()
                       : args.output;
  Result<analysis::SearchResult> result =
      analysis::RunSearch(options, [](const analysis::SearchPoint& p) {
        std::cout << "search: " << p.accelerators << " accelerator(s): AU "
                  << Format("%.2f", p.au_percent) << "%" << (p.held ? "" : " (below)") << std::endl;
      });
  if (!result.ok()) return Fail(result.status());
  const std::string table = analysis::SearchTable(*result, options.min_au_percent);
  std::cout << table;
  std::ofstream csv(options.output + "/search.csv", std::ios::trunc);
  csv << analysis::SearchCsv(*result);
  if (!csv) return Fail(Status::IOError("cannot write " + options.output + "/search.csv"));
  return 0;
}

}  // namespace iomimic::app
