// `iomimic replay TRACE`: replays a recorded application's I/O trace
// (strace text or DFTracer's .pfw/.pfw.gz) on any storage plugin
// (core/src/apptrace/, docs/replay.md). It is `iomimic run
// workload=app_replay` with the options as overrides (app_replay.*): a run
// like any other, in a run folder.

#include <boost/program_options.hpp>
#include <filesystem>
#include <iostream>

#include "cli.h"
#include "config/dlio_compat.h"

namespace iomimic::app {

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace {

struct AppReplayArgs {
  std::vector<std::string> positional;
  std::vector<std::string> plugin_dirs;
  std::string storage{config::kFileStorageBackend};
  std::vector<std::string> storage_options;
  std::vector<std::string> maps;
  std::string root;
  std::string timing = "recorded";
  std::string output;
  unsigned copies = 1;
};

po::options_description AppReplayOptionsOf(AppReplayArgs* a) {
  po::options_description opts("options of 'iomimic replay'");
  opts.add_options()("help,h", "show this help")(
      "storage", po::value<std::string>(&a->storage),
      "storage plugin the files go to (default: the plain file back end)")(
      "storage-option", po::value<std::vector<std::string>>(&a->storage_options),
      "KEY=VALUE option of the storage plugin (repeatable; 'iomimic plugins -v' lists them)")(
      "map", po::value<std::vector<std::string>>(&a->maps),
      "FROM=TO: the trace's paths under FROM go under TO (repeatable; the longest FROM wins; "
      "a relative TO is below storage.storage_root)")(
      "root", po::value<std::string>(&a->root),
      "where paths no --map covers go (ROOT/<path>); without it such an absolute path is an "
      "error naming it")(
      "timing", po::value<std::string>(&a->timing),
      "recorded: each thread waits the gaps the application left between its calls "
      "(default); fast: no waits")(
      "copies", po::value<unsigned>(&a->copies),
      "copies of the application each rank runs at once, each on its own files (default 1)")(
      "output,o", po::value<std::string>(&a->output),
      "run folder (default: hydra_log/app_replay/<date>-<time>); summary.json's app_replay "
      "holds the figures")("plugin-dir", po::value<std::vector<std::string>>(&a->plugin_dirs),
                           "extra plugin folder, searched first (repeatable)");
  return opts;
}

// Checks the arguments; returns false with *exit_code set when the command stops.
bool ParseAppReplayArgs(int argc, char** argv, AppReplayArgs* a, int* exit_code) {
  const po::options_description opts = AppReplayOptionsOf(a);
  po::variables_map vm;
  if (!ParseArgs(argc, argv, opts, po::command_line_style::default_style, &a->positional, &vm,
                 exit_code)) {
    return false;
  }
  if (vm.count("help")) {
    std::cout << "usage: iomimic replay TRACE [options]\n\n"
                 "Replays a recorded application's I/O on a storage plugin: every thread's\n"
                 "opens, reads, writes, syncs, closes, stats and renames in order, on the\n"
                 "files the trace touched (made first at their traced sizes), at the\n"
                 "recorded timing or as fast as possible. TRACE is strace text (strace -f\n"
                 "-ttt -T [-yy] -e trace=%file,%desc -o TRACE) or a DFTracer trace (.pfw,\n"
                 ".pfw.gz); docs/replay.md.\n\n"
              << opts << std::endl;
    *exit_code = 0;
    return false;
  }
  if (a->positional.size() != 1) {
    *exit_code = Usage("replay takes one trace file, got " + std::to_string(a->positional.size()));
    return false;
  }
  if (a->timing != "fast" && a->timing != "recorded") {
    *exit_code = Usage("--timing must be 'recorded' or 'fast', not '" + a->timing + "'");
    return false;
  }
  if (a->copies == 0) {
    *exit_code = Usage("--copies must be at least 1");
    return false;
  }
  for (const std::string& m : a->maps) {
    if (m.find('=') == std::string::npos || m.front() == '=') {
      *exit_code = Usage("--map '" + m + "' is not FROM=TO");
      return false;
    }
  }
  return true;
}

// The `iomimic run` command line of the replay.
Result<std::vector<std::string>> AppReplayRunArgs(const AppReplayArgs& a) {
  std::vector<std::string> run{"iomimic", "workload=app_replay"};
  for (const std::string& dir : a.plugin_dirs) run.insert(run.end(), {"--plugin-dir", dir});
  std::error_code ec;
  const fs::path trace = fs::absolute(a.positional[0], ec);
  const std::string w = "++workload.";
  run.push_back(w + "app_replay.trace=" + (ec ? a.positional[0] : trace.string()));
  if (!a.maps.empty()) {
    std::string list;
    for (const std::string& m : a.maps) list += (list.empty() ? "" : ",") + m;
    run.push_back(w + "app_replay.map=[" + list + "]");
  }
  if (!a.root.empty()) run.push_back(w + "app_replay.root=" + a.root);
  run.push_back(w + "app_replay.timing=" + a.timing);
  run.push_back(w + "app_replay.copies=" + std::to_string(a.copies));
  IOMIMIC_RETURN_IF_ERROR(AppendStorageAndOutput(a.storage, a.storage_options, a.output, &run));
  return run;
}

}  // namespace

int CmdReplay(int argc, char** argv) {
  AppReplayArgs a;
  int code = 0;
  if (!ParseAppReplayArgs(argc, argv, &a, &code)) return code;
  Result<std::vector<std::string>> run = AppReplayRunArgs(a);
  if (!run.ok()) return Fail(run.status());
  return RunWithArgs(std::move(run).value());
}

}  // namespace iomimic::app
