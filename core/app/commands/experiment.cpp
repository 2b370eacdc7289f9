// The options of `iomimic sweep` and `iomimic search` (core/app/cli.h,
// ExperimentArgs): --iomimic, --launcher, --output, --config-dir and
// overrides added to every run; search's threshold and range.

#include <boost/program_options.hpp>
#include <iostream>

#include "analysis/launch.h"
#include "cli.h"

namespace iomimic::app {

namespace po = boost::program_options;

namespace {

// The options of `command`, bound to `args`.
po::options_description ExperimentOptions(const std::string& command, ExperimentArgs* args) {
  po::options_description opts("options");
  opts.add_options()("help,h", "this help")(
      "output,o", po::value<std::string>(&args->output),
      command == "sweep" ? "folder of the runs and results.csv (default: DESIGN.runs)"
                         : "folder of the runs and search.csv (default: search-<workload>)")(
      "launcher", po::value<std::string>(&args->launcher),
      "MPI launcher for more than one process, {processes} replaced (default: mpirun "
      "[--allow-run-as-root] --oversubscribe -np {processes})")(
      "iomimic", po::value<std::string>(&args->iomimic),
      "the iomimic binary to run (default: this one)")(
      "config-dir", po::value<std::string>(&args->config_dir),
      "folder of workload files (<dir>/<name>.yaml or <dir>/workload/<name>.yaml), as for run");
  if (command == "search") {
    opts.add_options()("min-au", po::value<double>(&args->min_au)->default_value(90),
                       "AU threshold in percent")(
        "by", po::value<std::string>(&args->by),
        "what grows: accelerators (per process, one process), ranks (MPI processes) or users "
        "(kv_cache.num_users; the default for a KV-cache workload, else accelerators)")(
        "max", po::value<std::uint64_t>(&args->max)->default_value(4096),
        "the largest number tried")(
        "qos-class", po::value<std::string>(&args->qos_class)->default_value("all"),
        "--by users: the QoS class that must meet the target (all, interactive, responsive, "
        "batch)")("percentile", po::value<std::string>(&args->percentile)->default_value("p95"),
                  "--by users: the end-to-end latency percentile checked (p50 ... p9999, max)")(
        "max-ms", po::value<double>(&args->max_ms)->default_value(0),
        "--by users: the latency limit in ms (0: each class's P95 target, 50/100/1000 ms)");
  }
  return opts;
}

void PrintExperimentHelp(const std::string& command, const po::options_description& opts) {
  if (command == "sweep") {
    std::cout << "usage: iomimic sweep DESIGN.csv [options] [OVERRIDES...]\n\n"
                 "Runs every row of DESIGN.csv not yet marked run=Y, each in its own folder,\n"
                 "and writes results.csv (docs/analysis.md). Columns: model (or workload),\n"
                 "processes, overrides, run, and manifest keys (reader.read_threads...).\n"
                 "OVERRIDES are added to every experiment.\n\n";
  } else {
    std::cout << "usage: iomimic search [MANIFEST.yaml | WORKLOAD] [options] [OVERRIDES...]\n\n"
                 "Finds the largest number of emulated accelerators whose training AU stays\n"
                 "at or above --min-au, or for a KV-cache workload the most users whose runs\n"
                 "meet the QoS target: doubling, then bisection (docs/analysis.md).\n\n";
  }
  std::cout << opts;
}

}  // namespace

bool ParseExperiment(const std::string& command, int argc, char** argv, ExperimentArgs* args,
                     int* exit_code) {
  const po::options_description opts = ExperimentOptions(command, args);
  po::variables_map vm;
  if (!ParseArgs(argc, argv, opts,
                 po::command_line_style::default_style & ~po::command_line_style::allow_guessing,
                 &args->positional, &vm, exit_code)) {
    return false;
  }
  if (vm.count("help")) {
    PrintExperimentHelp(command, opts);
    *exit_code = 0;
    return false;
  }
  if (args->iomimic.empty()) args->iomimic = analysis::SelfPath();
  return true;
}

std::vector<std::string> LauncherOf(const ExperimentArgs& args) {
  return args.launcher.empty() ? analysis::DefaultLauncher() : analysis::SplitWords(args.launcher);
}

}  // namespace iomimic::app
