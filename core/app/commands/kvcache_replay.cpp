// `iomimic kvcache-replay TRACE.csv`: replays the I/O trace of MLPerf
// Storage's KV-cache reference (kv-cache.py --io-trace-log) on any storage
// back end: Tier-2 writes create .npy objects, Tier-2 reads read them whole
// past the page cache (core/src/kvcache/replay.h, docs/kvcache-reference.md).
// It is `iomimic run workload=kvcache_replay` with the options as overrides
// (kv_cache.replay_*): a run like any other, in a run folder.

#include <boost/program_options.hpp>
#include <filesystem>
#include <iostream>

#include "cli.h"
#include "config/dlio_compat.h"

namespace iomimic::app {

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace {

struct ReplayArgs {
  std::vector<std::string> positional;
  std::vector<std::string> plugin_dirs;
  std::string storage{config::kFileStorageBackend};
  std::vector<std::string> storage_options;
  std::string timing = "fast";
  std::string output;
  std::string root = "kvcache_replay";
  unsigned threads = 1;
  std::size_t transfer_bytes = 16u << 20;
  bool keep_objects = false;
};

po::options_description ReplayOptionsOf(ReplayArgs* a) {
  po::options_description opts("options of 'iomimic kvcache-replay'");
  opts.add_options()("help,h", "show this help")(
      "storage", po::value<std::string>(&a->storage),
      "storage plugin the objects go to (default: the plain file back end)")(
      "storage-option", po::value<std::vector<std::string>>(&a->storage_options),
      "KEY=VALUE option of the storage plugin (repeatable; 'iomimic plugins -v' lists them)")(
      "root", po::value<std::string>(&a->root),
      "folder of the objects, in the storage's namespace (default: kvcache_replay)")(
      "timing", po::value<std::string>(&a->timing),
      "fast: each operation as soon as a thread and its key are free (default); recorded: "
      "also not before its time in the trace")(
      "threads", po::value<unsigned>(&a->threads),
      "operations in flight on different keys (default 1)")(
      "transfer-size", po::value<std::size_t>(&a->transfer_bytes),
      "bytes per read or write call (default 16 MiB)")(
      "keep-objects", po::bool_switch(&a->keep_objects), "leave the objects in place at the end")(
      "output,o", po::value<std::string>(&a->output),
      "run folder (default: hydra_log/kvcache_replay/<date>-<time>); summary.json's "
      "kv_cache_replay holds the figures, latencies in seconds")(
      "plugin-dir", po::value<std::vector<std::string>>(&a->plugin_dirs),
      "extra plugin folder, searched first (repeatable)");
  return opts;
}

// Checks the arguments; returns false with *exit_code set when the command stops.
bool ParseReplayArgs(int argc, char** argv, ReplayArgs* a, int* exit_code) {
  const po::options_description opts = ReplayOptionsOf(a);
  po::variables_map vm;
  if (!ParseArgs(argc, argv, opts, po::command_line_style::default_style, &a->positional, &vm,
                 exit_code)) {
    return false;
  }
  if (vm.count("help")) {
    std::cout << "usage: iomimic kvcache-replay TRACE.csv[.zst] [options]\n\n"
                 "Replays the I/O trace of MLPerf Storage's KV-cache benchmark (kv-cache.py\n"
                 "--io-trace-log) on a storage plugin: Tier-2 writes create <root>/<key>.npy\n"
                 "and sync it, Tier-2 reads read it whole past the page cache; Tier-0 and\n"
                 "Tier-1 rows (GPU and CPU memory) are counted, not replayed.\n\n"
              << opts << std::endl;
    *exit_code = 0;
    return false;
  }
  if (a->positional.size() != 1) {
    *exit_code =
        Usage("kvcache-replay takes one trace file, got " + std::to_string(a->positional.size()));
    return false;
  }
  if (a->timing != "fast" && a->timing != "recorded") {
    *exit_code = Usage("--timing must be 'fast' or 'recorded', not '" + a->timing + "'");
    return false;
  }
  if (a->threads == 0 || a->transfer_bytes == 0) {
    *exit_code = Usage("--threads and --transfer-size must be at least 1");
    return false;
  }
  return true;
}

// The `iomimic run` command line of the replay.
Result<std::vector<std::string>> RunArgsOf(const ReplayArgs& a) {
  std::vector<std::string> run{"iomimic", "workload=kvcache_replay"};
  for (const std::string& dir : a.plugin_dirs) run.insert(run.end(), {"--plugin-dir", dir});
  std::error_code ec;
  const fs::path trace = fs::absolute(a.positional[0], ec);
  const std::string w = "++workload.";
  run.push_back(w + "kv_cache.replay_trace=" + (ec ? a.positional[0] : trace.string()));
  run.push_back(w + "kv_cache.cache_folder=" + a.root);
  run.push_back(w + "kv_cache.replay_timing=" + a.timing);
  run.push_back(w + "kv_cache.replay_threads=" + std::to_string(a.threads));
  run.push_back(w + "kv_cache.transfer_size=" + std::to_string(a.transfer_bytes));
  run.push_back(w + "kv_cache.keep_entries=" + (a.keep_objects ? "True" : "False"));
  IOMIMIC_RETURN_IF_ERROR(AppendStorageAndOutput(a.storage, a.storage_options, a.output, &run));
  return run;
}

}  // namespace

int CmdKvcacheReplay(int argc, char** argv) {
  ReplayArgs a;
  int code = 0;
  if (!ParseReplayArgs(argc, argv, &a, &code)) return code;
  Result<std::vector<std::string>> run = RunArgsOf(a);
  if (!run.ok()) return Fail(run.status());
  return RunWithArgs(std::move(run).value());
}

}  // namespace iomimic::app
