// `iomimic kvcache-replay TRACE.csv`: replays the I/O trace of MLPerf
// Storage's KV-cache reference (kv-cache.py --io-trace-log) on any storage
// back end: Tier-2 writes create .npy objects, Tier-2 reads read them whole
// past the page cache (core/src/kvcache/replay.h, docs/kvcache-reference.md).

#include <boost/program_options.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include "cli.h"
#include "config/dlio_compat.h"
#include "session/interrupt.h"
#include "kvcache/replay.h"
#include "kvcache/trace.h"

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
  kvcache::ReplayOptions replay;
};

po::options_description ReplayOptionsOf(ReplayArgs* a) {
  po::options_description opts("options of 'iomimic kvcache-replay'");
  opts.add_options()("help,h", "show this help")(
      "storage", po::value<std::string>(&a->storage),
      "storage plugin the objects go to (default: the plain file back end)")(
      "storage-option", po::value<std::vector<std::string>>(&a->storage_options),
      "KEY=VALUE option of the storage plugin (repeatable; 'iomimic plugins -v' lists them)")(
      "root", po::value<std::string>(&a->replay.root),
      "folder of the objects, in the storage's namespace (default: kvcache_replay)")(
      "timing", po::value<std::string>(&a->timing),
      "fast: each operation as soon as a thread and its key are free (default); recorded: "
      "also not before its time in the trace")(
      "threads", po::value<unsigned>(&a->replay.threads),
      "operations in flight on different keys (default 1)")(
      "transfer-size", po::value<std::size_t>(&a->replay.transfer_bytes),
      "bytes per read or write call (default 16 MiB)")("keep-objects",
                                                       po::bool_switch(&a->replay.keep_objects),
                                                       "leave the objects in place at the end")(
      "output,o", po::value<std::string>(&a->output),
      "folder for kvcache_replay.json (the figures below, latencies in seconds)")(
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
  a->replay.timing =
      a->timing == "recorded" ? kvcache::ReplayTiming::kRecorded : kvcache::ReplayTiming::kFast;
  if (a->replay.threads == 0 || a->replay.transfer_bytes == 0) {
    *exit_code = Usage("--threads and --transfer-size must be at least 1");
    return false;
  }
  return true;
}

Result<std::map<std::string, std::string>> StorageOptionsOf(const ReplayArgs& a) {
  std::map<std::string, std::string> options;
  for (const std::string& kv : a.storage_options) {
    const std::size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status::InvalidArgument("--storage-option '" + kv + "' is not KEY=VALUE");
    }
    options[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return options;
}

// Writes <output>/kvcache_replay.json, refusing to replace one.
Status WriteResult(const std::string& folder, const kvcache::ReplayResult& result) {
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec) return Status::IOError("cannot create " + folder + ": " + ec.message());
  const fs::path path = fs::path(folder) / "kvcache_replay.json";
  if (fs::exists(path)) {
    return Status::AlreadyExists(path.string() + " exists; choose another --output");
  }
  std::ofstream out(path);
  out << kvcache::ReplayResultJson(result);
  out.close();
  if (!out) return Status::IOError("cannot write " + path.string());
  return Status::OK();
}

}  // namespace

int CmdKvcacheReplay(int argc, char** argv) {
  ReplayArgs a;
  int code = 0;
  if (!ParseReplayArgs(argc, argv, &a, &code)) return code;
  if (!a.output.empty() && fs::exists(fs::path(a.output) / "kvcache_replay.json")) {
    return Fail(Status::AlreadyExists(a.output + "/kvcache_replay.json exists; choose another "
                                                 "--output"));
  }
  Result<std::vector<kvcache::TraceRow>> rows = kvcache::ReadTrace(a.positional[0]);
  if (!rows.ok()) return Fail(rows.status());
  Result<std::map<std::string, std::string>> options = StorageOptionsOf(a);
  if (!options.ok()) return Fail(options.status());
  plugin::Registry registry;
  registry.Discover(plugin::Registry::SearchPath(a.plugin_dirs, {}));
  Result<plugin::StorageStack> stack =
      plugin::StorageStack::Open(registry, a.storage, *options, 0, 1);
  if (!stack.ok()) return Fail(stack.status());

  session::InstallInterruptHandlers();
  a.replay.stop = [] { return session::InterruptSignal() != 0; };
  std::cout << "kvcache-replay: " << rows->size() << " rows from " << a.positional[0] << " on "
            << stack->Describe() << " under " << a.replay.root << " (" << a.timing << ", "
            << a.replay.threads << " thread(s))" << std::endl;
  Result<kvcache::ReplayResult> result = kvcache::Replay(*stack->top(), *rows, a.replay);
  if (!result.ok()) return Fail(result.status());
  std::cout << kvcache::ReplayResultText(*result);
  if (!a.output.empty()) {
    if (Status s = WriteResult(a.output, *result); !s.ok()) return Fail(s);
  }
  const int signal = session::InterruptSignal();
  return signal != 0 ? 128 + signal : 0;
}

}  // namespace iomimic::app
