#include "kvcache/reference_cli.h"

#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string_view>

namespace iomimic::kvcache {

namespace {

// How a flag of the reference is taken.
enum class Kind {
  kKey,          // its value is a manifest key's
  kSwitchFalse,  // a switch that sets a key to False
  kIgnored,      // a value accepted and ignored
  kIgnoredSwitch,
  kRefused,       // a switch for a feature the workflow lacks
  kRefusedValue,  // a value for such a feature
  kCacheDir,      // --cache-dir: storage.storage_root and kv_cache.cache_folder
  kOutput,        // --output: the results file, its folder the run folder
  kTraceLog,      // --io-trace-log: the trace, and no I/O (the reference's trace mode)
  kSeed,
};

enum class Value { kNone, kText, kWhole, kNumber };

struct Flag {
  std::string_view name;
  Kind kind;
  Value value;
  std::string_view key;  // kKey / kSwitchFalse: the manifest key under workload.kv_cache
};

// kv-cache.py's flags (its kv_cache/cli.py), in its order.
constexpr Flag kFlags[] = {
    {"--log-level", Kind::kIgnored, Value::kText, ""},
    {"--model", Kind::kKey, Value::kText, "model"},
    {"--num-users", Kind::kKey, Value::kWhole, "num_users"},
    {"--duration", Kind::kKey, Value::kWhole, "duration"},
    {"--gpu-mem-gb", Kind::kKey, Value::kNumber, "gpu_mem_gb"},
    {"--num-gpus", Kind::kKey, Value::kWhole, "num_gpus"},
    {"--tensor-parallel", Kind::kKey, Value::kWhole, "tensor_parallel"},
    {"--cpu-mem-gb", Kind::kKey, Value::kNumber, "cpu_mem_gb"},
    {"--cache-dir", Kind::kCacheDir, Value::kText, ""},
    {"--generation-mode", Kind::kKey, Value::kText, "generation_mode"},
    {"--performance-profile", Kind::kIgnored, Value::kText, ""},
    {"--disable-multi-turn", Kind::kSwitchFalse, Value::kNone, "multi_turn"},
    {"--disable-prefix-caching", Kind::kSwitchFalse, Value::kNone, "prefix_caching"},
    {"--enable-rag", Kind::kRefused, Value::kNone, ""},
    {"--rag-num-docs", Kind::kIgnored, Value::kWhole, ""},
    {"--enable-autoscaling", Kind::kRefused, Value::kNone, ""},
    {"--autoscaler-mode", Kind::kIgnored, Value::kText, ""},
    {"--target-saturation", Kind::kIgnored, Value::kNumber, ""},
    {"--use-burst-trace", Kind::kRefused, Value::kNone, ""},
    {"--burst-trace-path", Kind::kIgnored, Value::kText, ""},
    {"--validation-trace", Kind::kRefusedValue, Value::kText, ""},
    {"--dataset-path", Kind::kRefusedValue, Value::kText, ""},
    {"--max-conversations", Kind::kIgnored, Value::kWhole, ""},
    {"--output", Kind::kOutput, Value::kText, ""},
    {"--seed", Kind::kSeed, Value::kWhole, ""},
    {"--max-concurrent-allocs", Kind::kKey, Value::kWhole, "max_concurrent_allocs"},
    {"--request-rate", Kind::kKey, Value::kNumber, "request_rate"},
    {"--max-requests", Kind::kKey, Value::kWhole, "max_requests"},
    {"--xlsx-output", Kind::kIgnored, Value::kText, ""},
    {"--config", Kind::kIgnored, Value::kText, ""},
    {"--storage-capacity-gb", Kind::kKey, Value::kNumber, "storage_capacity_gb"},
    {"--precondition", Kind::kRefused, Value::kNone, ""},
    {"--precondition-size-gb", Kind::kIgnored, Value::kNumber, ""},
    {"--precondition-threads", Kind::kIgnored, Value::kWhole, ""},
    {"--trace-speedup", Kind::kIgnored, Value::kNumber, ""},
    {"--replay-cycles", Kind::kIgnored, Value::kWhole, ""},
    {"--prefill-only", Kind::kRefused, Value::kNone, ""},
    {"--decode-only", Kind::kRefused, Value::kNone, ""},
    {"--io-trace-log", Kind::kTraceLog, Value::kText, ""},
    {"--enable-latency-tracing", Kind::kIgnoredSwitch, Value::kNone, ""},
};

// The reference's defaults of the mapped keys (its kv_cache/cli.py), which
// differ from the base workload's or the manifest's.
constexpr std::pair<std::string_view, std::string_view> kDefaults[] = {
    {"model", "llama3.1-8b"},
    {"num_users", "100"},
    {"duration", "60"},
    {"gpu_mem_gb", "16"},
    {"num_gpus", "1"},
    {"tensor_parallel", "1"},
    {"cpu_mem_gb", "32"},
    {"generation_mode", "realistic"},
    {"multi_turn", "True"},
    {"prefix_caching", "True"},
    {"max_concurrent_allocs", "0"},
    {"request_rate", "0"},
    {"max_requests", "0"},
    {"storage_capacity_gb", "0"},
};

// The workload the run starts from: the closed option 1 (workflow.kv_cache
// True, the reference's user templates); every key it sets is overridden.
constexpr std::string_view kBaseWorkload = "kvcache_opt1_8b";

const Flag* FindFlag(std::string_view name) {
  for (const Flag& f : kFlags) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

Status CheckValue(const Flag& f, const std::string& v) {
  if (f.value == Value::kWhole) {
    std::uint64_t n = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec == std::errc() && p == v.data() + v.size()) return Status::OK();
    return Status::InvalidArgument("kv-cache.py: " + std::string(f.name) + " '" + v +
                                   "' is not a whole number");
  }
  if (f.value == Value::kNumber) {
    double d = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), d);
    if (ec == std::errc() && p == v.data() + v.size() && std::isfinite(d)) return Status::OK();
    return Status::InvalidArgument("kv-cache.py: " + std::string(f.name) + " '" + v +
                                   "' is not a number");
  }
  return Status::OK();
}

std::string Override(std::string_view key, std::string_view value) {
  return "++workload.kv_cache." + std::string(key) + "=" + std::string(value);
}

// Applies one flag (with its value when it takes one) to `out` and `keys`.
Status Apply(const Flag& f, const std::string& v, ReferenceCommandLine* out,
             std::map<std::string, std::string>* keys) {
  IOMIMIC_RETURN_IF_ERROR(CheckValue(f, v));
  namespace fs = std::filesystem;
  switch (f.kind) {
    case Kind::kKey:
      (*keys)[std::string(f.key)] = v;
      break;
    case Kind::kSwitchFalse:
      (*keys)[std::string(f.key)] = "False";
      break;
    case Kind::kIgnored:
    case Kind::kIgnoredSwitch:
      out->notes.push_back(std::string(f.name) + (v.empty() ? "" : " " + v) +
                           ": accepted, changes nothing in iomimic");
      break;
    case Kind::kRefused:
    case Kind::kRefusedValue:
      return Status::NotSupported("kv-cache.py: " + std::string(f.name) +
                                  " is not supported by iomimic's KV-cache workflow "
                                  "(docs/kvcache-reference.md)");
    case Kind::kCacheDir: {
      const fs::path dir = fs::path(v).lexically_normal();
      const std::string name =
          dir.has_filename() ? dir.filename().string() : dir.parent_path().filename().string();
      if (name.empty() || name == "." || name == "..") {
        return Status::InvalidArgument("kv-cache.py: --cache-dir '" + v +
                                       "' names no folder of its own");
      }
      const fs::path parent = (dir.has_filename() ? dir : dir.parent_path()).parent_path();
      out->run_args.push_back("++workload.storage.storage_root=" +
                              (parent.empty() ? std::string(".") : parent.string()));
      (*keys)["cache_folder"] = name;
      break;
    }
    case Kind::kOutput: {
      out->output = v;
      const fs::path folder = fs::path(v).parent_path();
      out->run_args.push_back("++workload.output.folder=" +
                              (folder.empty() ? std::string(".") : folder.string()));
      break;
    }
    case Kind::kTraceLog:
      // The reference's trace mode (docs/kvcache-reference.md, "The reference's I/O trace"): the
      // whole simulation runs, no tier I/O is performed, every operation is
      // written to FILE (relative to the working directory, as there).
      if (v.empty()) return Status::InvalidArgument("kv-cache.py: --io-trace-log names no file");
      {
        std::error_code ec;
        const fs::path file = fs::absolute(fs::path(v), ec);
        if (ec) {
          return Status::InvalidArgument("kv-cache.py: --io-trace-log '" + v +
                                         "': " + ec.message());
        }
        (*keys)["io_trace_log"] = file.lexically_normal().string();
      }
      (*keys)["trace_only"] = "True";
      break;
    case Kind::kSeed:
      out->seed = std::stoull(v);
      break;
  }
  return Status::OK();
}

}  // namespace

const char* ReferenceCommandLineHelp() {
  return "usage: kv-cache.py [--model M] [--num-users N] [--duration S] [--gpu-mem-gb G]\n"
         "                   [--cpu-mem-gb C] [--cache-dir DIR] [--generation-mode MODE]\n"
         "                   [--output FILE] [--seed N] [--max-requests N] ...\n\n"
         "iomimic's stand-in for MLPerf Storage's KV-cache benchmark (kv-cache.py): the\n"
         "reference's flags run iomimic's KV-cache workflow (docs/kvcache-reference.md).\n"
         "Mapped onto kv_cache.<key>: --model, --num-users, --duration, --gpu-mem-gb,\n"
         "--num-gpus, --tensor-parallel, --cpu-mem-gb, --generation-mode,\n"
         "--disable-multi-turn, --disable-prefix-caching, --max-concurrent-allocs,\n"
         "--request-rate, --max-requests, --storage-capacity-gb, --seed; --io-trace-log FILE:\n"
         "the reference's trace mode (kv_cache.trace_only: the operations are written to\n"
         "FILE, none is performed); --cache-dir DIR: storage.storage_root and\n"
         "kv_cache.cache_folder; --output FILE:\n"
         "the run folder is FILE's folder and FILE gets the reference's results.\n"
         "Accepted, changing nothing: --log-level, --performance-profile, --xlsx-output,\n"
         "--config, --enable-latency-tracing and the values of features left off.\n"
         "Refused: --enable-rag, --enable-autoscaling, --use-burst-trace, --dataset-path,\n"
         "--validation-trace, --precondition, --prefill-only, --decode-only.\n"
         "Flags left out take the reference's defaults (--gpu-mem-gb 16, --cpu-mem-gb 32,\n"
         "--num-users 100, --duration 60, --generation-mode realistic, no --seed: 42).\n";
}

Result<ReferenceCommandLine> ParseReferenceCommandLine(const std::vector<std::string>& args) {
  ReferenceCommandLine out;
  bool seeded = false;
  out.run_args.push_back("workload=" + std::string(kBaseWorkload));
  std::map<std::string, std::string> keys;
  for (const auto& [k, v] : kDefaults) keys[std::string(k)] = std::string(v);
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") {
      out.help = true;
      return out;
    }
    const std::size_t eq = a.find('=');
    const std::string name = a.substr(0, eq);
    const Flag* f = a.starts_with("--") ? FindFlag(name) : nullptr;
    if (f == nullptr) {
      return Status::InvalidArgument("kv-cache.py: unrecognized argument '" + a +
                                     "' (kv-cache.py --help lists the flags)");
    }
    std::string value;
    if (f->value != Value::kNone) {
      if (eq != std::string::npos) {
        value = a.substr(eq + 1);
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        return Status::InvalidArgument("kv-cache.py: " + name + " needs a value");
      }
    } else if (eq != std::string::npos) {
      return Status::InvalidArgument("kv-cache.py: " + name + " takes no value");
    }
    IOMIMIC_RETURN_IF_ERROR(Apply(*f, value, &out, &keys));
    seeded |= f->kind == Kind::kSeed;
  }
  if (!seeded) {
    out.notes.push_back("no --seed: the reference would be unseeded; iomimic uses seed " +
                        std::to_string(out.seed));
  }
  keys["seed"] = std::to_string(out.seed);
  for (const auto& [k, v] : keys) out.run_args.push_back(Override(k, v));
  return out;
}

Status WriteReferenceResults(const std::string& summary_json, const std::string& output,
                             std::uint64_t seed) {
  using json = nlohmann::json;
  std::ifstream in(summary_json);
  if (!in) return Status::NotFound("cannot read " + summary_json);
  json summary = json::parse(in, nullptr, false);
  if (summary.is_discarded() || !summary.contains("kv_cache")) {
    return Status::Corruption(summary_json + ": no kv_cache object");
  }
  // The reference-shaped summary (its `summary` keys) sits in kv_cache.reference.
  const json& all = summary["kv_cache"];
  const json& kv = all.contains("reference") ? all["reference"] : all;
  auto num = [&](const json& o, const char* key) {
    return o.contains(key) && o[key].is_number() ? o[key].get<double>() : 0.0;
  };
  json out;
  out["requests_completed"] = kv.value("total_requests", 0);
  out["total_tokens_generated"] = kv.value("total_tokens", 0);
  out["seed"] = seed;
  out["summary"] = kv;
  out["iomimic_kv_cache"] = all;
  // The figures mlpstorage's benchmarks/kvcache.py reads at the top level.
  const json e2e = kv.value("end_to_end_latency_ms", json::object());
  const json stats = kv.value("cache_stats", json::object());
  const double seconds = num(kv, "elapsed_time");
  out["total_requests"] = kv.value("total_requests", 0);
  out["throughput_req_per_sec"] = num(kv, "requests_per_second");
  out["avg_latency_ms"] = num(e2e, "mean");
  out["p99_latency_ms"] = num(e2e, "p99");
  out["storage_throughput_mbps"] =
      seconds > 0 ? (num(stats, "total_read_gb") + num(stats, "total_write_gb")) * 1024 / seconds
                  : 0.0;
  out["cache_hit_rate"] = num(stats, "cache_hit_rate");
  std::ofstream f(output);
  f << out.dump(2) << "\n";
  f.close();
  if (!f) return Status::IOError("cannot write " + output);
  return Status::OK();
}

}  // namespace iomimic::kvcache
