// The KV-cache reference's command line (`kv-cache.py --model ... --num-users
// ...`, as MLPerf Storage's mlpstorage builds it in its
// benchmarks/kvcache.py) mapped onto iomimic's KV-cache workflow, so that
// iomimic's `kv-cache.py` entry point can stand in for the reference
// (docs/kvcache-reference.md, "mlpstorage and kv-cache.py").
//
// Every flag of the reference is either mapped onto a manifest key
// (kv_cache.*, storage.storage_root, output.folder), accepted and ignored
// with a note (it changes nothing iomimic does: --performance-profile,
// --log-level, --xlsx-output, --config, the values of features left off), or
// refused (a feature the workflow does not have: --enable-rag,
// --enable-autoscaling, --use-burst-trace, --dataset-path, ...). Flags the
// command line leaves out take the reference's defaults, not the manifest's
// (--gpu-mem-gb 16, --cpu-mem-gb 32, --num-users 100, --duration 60,
// --generation-mode realistic); with no --seed the reference is unseeded,
// iomimic takes kv_cache.seed 42 (every rank must load the same manifest)
// and says so in a note.

#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "iomimic/status.h"

namespace iomimic::kvcache {

struct ReferenceCommandLine {
  // Arguments for `iomimic run`: the base workload, then ++workload.<key>=<value>.
  std::vector<std::string> run_args;
  std::string output;              // --output FILE, written after the run ("" = none)
  std::vector<std::string> notes;  // one line per flag accepted and ignored
  std::uint64_t seed = 42;         // the seed used (--seed, or 42)
  bool help = false;               // -h / --help
};

// The reference's flags and what iomimic does with each, for --help.
const char* ReferenceCommandLineHelp();

// Maps `args` (without the program name). Errors: InvalidArgument "kv-cache.py: <flag> ..." for
// an unknown flag, a missing or malformed value; NotSupported for a feature
// the workflow lacks.
Result<ReferenceCommandLine> ParseReferenceCommandLine(const std::vector<std::string>& args);

// Writes the reference's results file (--output) from a finished run's
// summary.json: {"requests_completed", "total_tokens_generated", "seed",
// "summary": <kv_cache.reference, the reference-shaped summary>,
// "iomimic_kv_cache": <the whole kv_cache object>} and the top-level figures
// mlpstorage reads from it (total_requests, throughput_req_per_sec,
// avg_latency_ms, p99_latency_ms, storage_throughput_mbps, cache_hit_rate).
// Errors name the file.
Status WriteReferenceResults(const std::string& summary_json, const std::string& output,
                             std::uint64_t seed);

}  // namespace iomimic::kvcache
