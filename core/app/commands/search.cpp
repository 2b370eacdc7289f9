// `iomimic search WORKLOAD --min-au 90`: the most accelerators that keep AU;
// `iomimic search KV_WORKLOAD`: the most users that meet the QoS target
// (core/src/analysis/search.h, docs/analysis.md).

#include "analysis/search.h"

#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli.h"
#include "run/run.h"

namespace iomimic::app {

namespace {

// "users" for a KV-cache workload (workflow.kv_cache after the overrides),
// else "accelerators". A manifest that does not load is left to the first
// run to report.
std::string DefaultBy(const analysis::SearchOptions& options, const ExperimentArgs& args) {
  CommonArgs common;
  common.config_dir = args.config_dir;
  const bool path = options.workload.ends_with(".yaml") || options.workload.ends_with(".yml");
  common.positional.push_back(path ? options.workload : "workload=" + options.workload);
  for (const std::string& o : options.overrides) {
    if (o.rfind("--config-dir", 0) != 0) common.positional.push_back(o);
  }
  plugin::Registry registry;
  DiscoverPlugins(common, &registry);
  Result<config::LoadedManifest> manifest = LoadFromArgs(common, registry);
  return manifest.ok() && manifest->config.workflow.kv_cache ? "users" : "accelerators";
}

void PrintPoint(const analysis::SearchOptions& options, const analysis::SearchPoint& p) {
  if (options.by == "users") {
    std::cout << "search: " << p.n << " user(s): " << Format("%.0f", p.requests)
              << " requests, storage " << Format("%.1f", p.storage_tokens_per_second)
              << " tokens/s: " << (p.held ? "meets the target" : "misses (" + p.why + ")")
              << std::endl;
    return;
  }
  std::cout << "search: " << p.n << " accelerator(s): AU " << Format("%.2f", p.au_percent) << "%"
            << (p.held ? "" : " (below)") << std::endl;
}

}  // namespace

int CmdSearch(int argc, char** argv) {
  ExperimentArgs args;
  int code = 0;
  if (!ParseExperiment("search", argc, argv, &args, &code)) return code;
  analysis::SearchOptions options;
  options.workload = kDefaultWorkload;
  options.figures = run::Figures();
  for (const std::string& p : args.positional) {
    const bool is_override = p.find('=') != std::string::npos || p.rfind("~", 0) == 0;
    if (is_override) {
      options.overrides.push_back(p);
    } else {
      options.workload = p;
    }
  }
  options.by = args.by.empty() ? DefaultBy(options, args) : args.by;
  PassConfigDir(args.config_dir, &options.overrides);
  options.iomimic = args.iomimic;
  options.min_au_percent = args.min_au;
  options.max = args.max;
  options.qos.qos_class = args.qos_class;
  options.qos.percentile = args.percentile;
  options.qos.max_ms = args.max_ms;
  options.launcher = LauncherOf(args);
  options.output = args.output.empty()
                       ? "search-" + std::filesystem::path(options.workload).stem().string()
                       : args.output;
  if (options.by == "users") {
    std::cout << "search: the most users for which " << analysis::DescribeQosTarget(options.qos)
              << std::endl;
  }
  Result<analysis::SearchResult> result =
      analysis::RunSearch(options, [&](const analysis::SearchPoint& p) { PrintPoint(options, p); });
  if (!result.ok()) return Fail(result.status());
  std::cout << analysis::SearchTable(*result, options);
  std::ofstream csv(options.output + "/search.csv", std::ios::trunc);
  csv << analysis::SearchCsv(*result, options);
  if (!csv) return Fail(Status::IOError("cannot write " + options.output + "/search.csv"));
  return 0;
}

}  // namespace iomimic::app
