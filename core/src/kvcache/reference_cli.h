// The KV-cache reference's command line (`kv-cache.py --model ... --num-users
// ...`, as MLPerf Storage's mlpstorage builds it in its
// benchmarks/kvcache.py) mapped onto iomimic's KV-cache workflow, so that
// iomimic's `kv-cache.py` entry point can stand in for the reference
// (docs/kvcache-reference.md, "mlpstorage and kv-cache.py").
//
// Every flag of the reference is either mapped onto a manifest key
// (kv_cache.*, storage.storage_root), read (--config: its config.yaml,
// kvcache/reference_config.h), accepted and ignored with a note (it changes
// nothing iomimic does: --log-level, --xlsx-output,
// --enable-latency-tracing, the values of features left off), or refused (a
// feature the workflow does not have: --enable-rag, --enable-autoscaling,
// --use-burst-trace, --dataset-path, ...). Values are checked as the
// reference checks them, with its messages. Flags the command line leaves
// out take the reference's defaults, not the manifest's (--gpu-mem-gb 16,
// --cpu-mem-gb 32, --num-users 100, --duration 60, --generation-mode
// realistic); with no --seed the reference is unseeded, iomimic takes
// kv_cache.seed 42 (every rank must load the same manifest) and says so in
// a note.
//
// The results file is --output FILE, or benchmark_results_<time>.json in the
// working directory as the reference's default; the run writes it
// (kv_cache.reference_results, kvcache/reference_results.h) and keeps its own
// files (summary.json, logs) in FILE's name with .iomimic for .json, a
// folder beside it (-1, -2, ... added when that exists), so that several
// results files share a folder.

#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "iomimic/status.h"

namespace iomimic::kvcache {

struct ReferenceCommandLine {
  // Arguments for `iomimic run`: the base workload, then ++workload.<key>=<value>.
  std::vector<std::string> run_args;
  std::string output;              // the results file, as given (or the default name)
  std::string run_folder;          // the run's own files (output.folder)
  std::vector<std::string> notes;  // one line per flag accepted and ignored
  std::uint64_t seed = 42;         // the seed used (--seed, or 42)
  bool help = false;               // -h / --help
  // Each manifest key the run gets (kv_cache.num_users, storage.storage_root)
  // and what set it: the drop-in's flag ("--num-users"), whether typed or
  // its default, or a --config entry ("--config F: eviction.target_usage_ratio").
  std::vector<std::pair<std::string, std::string>> origins;
};

// The reference's flags and what iomimic does with each, for --help.
const char* ReferenceCommandLineHelp();

// Maps `args` (without the program name). Errors, each "kv-cache.py: ...":
// InvalidArgument for an unknown flag, a missing or malformed value, a value
// the reference refuses (its message: "--num-users must be positive, got
// -4"), a bad --config file (kvcache/reference_config.h); NotSupported for a
// feature the workflow lacks.
Result<ReferenceCommandLine> ParseReferenceCommandLine(const std::vector<std::string>& args);

// `status`, an error of the run `cli` started, in the drop-in's words: the
// manifest keys and overrides it names (kv_cache.num_gpus, override
// '++workload.kv_cache.num_gpus=1') become what set them (--num-gpus 1, a
// --config entry), and the message starts "kv-cache.py: ". The code is kept.
Status ReferenceError(const ReferenceCommandLine& cli, const Status& status);

}  // namespace iomimic::kvcache
