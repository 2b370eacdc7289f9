#include "kvcache/reference_cli.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <map>
#include <string_view>

#include "kvcache/reference_config.h"

namespace iomimic::kvcache {

namespace {

namespace fs = std::filesystem;

// How a flag of the reference is taken.
enum class Kind {
  kKey,          // its value is a manifest key's
  kSwitchFalse,  // a switch that sets a key to False
  kIgnored,      // a value accepted and ignored
  kIgnoredSwitch,
  kRefused,       // a switch for a feature the workflow lacks
  kRefusedValue,  // a value for such a feature
  kCacheDir,      // --cache-dir: storage.storage_root and kv_cache.cache_folder
  kOutput,        // --output: the results file
  kTraceLog,      // --io-trace-log: the trace, and no I/O (the reference's trace mode)
  kSeed,
  kConfig,  // --config: the reference's config.yaml
};

enum class Value { kNone, kText, kWhole, kNumber };

// The reference's checks of a number (its validate_args), with its messages.
enum class Rule {
  kPositive,     // "<flag> must be positive, got <v>"
  kNonNegative,  // "<flag> cannot be negative, got <v>"
  kAtLeastOne,   // "<flag> must be >= 1, got <v>"
  kFraction,     // "<flag> must be between 0.0 and 1.0, got <v>"
  kSeed,         // numpy's seed range, which the reference seeds too
};

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
    {"--performance-profile", Kind::kKey, Value::kText, "performance_profile"},
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
    {"--config", Kind::kConfig, Value::kText, ""},
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

// The reference's checks of its numbers (its validate_args): the rule and,
// where there is one, the limit and how its message names it ("<flag>
// exceeds <limit>, got <v>").
constexpr struct {
  std::string_view flag;
  Rule rule;
  double max;
  std::string_view limit;
} kChecks[] = {
    {"--num-users", Rule::kPositive, 100000, "limit (100000)"},
    {"--duration", Rule::kPositive, 86400, "24 hours (86400s)"},
    {"--gpu-mem-gb", Rule::kNonNegative, 65536, "limit (65536GiB)"},
    {"--cpu-mem-gb", Rule::kNonNegative, 131072, "limit (131072GiB)"},
    {"--num-gpus", Rule::kAtLeastOne, 0, ""},
    {"--tensor-parallel", Rule::kAtLeastOne, 0, ""},
    {"--rag-num-docs", Rule::kNonNegative, 0, ""},
    {"--target-saturation", Rule::kFraction, 0, ""},
    {"--max-conversations", Rule::kPositive, 0, ""},
    {"--seed", Rule::kSeed, 0, ""},
    {"--max-concurrent-allocs", Rule::kNonNegative, 0, ""},
    {"--request-rate", Rule::kNonNegative, 0, ""},
    {"--max-requests", Rule::kNonNegative, 0, ""},
    {"--storage-capacity-gb", Rule::kNonNegative, 0, ""},
    {"--precondition-size-gb", Rule::kNonNegative, 0, ""},
    {"--precondition-threads", Rule::kNonNegative, 0, ""},
    {"--trace-speedup", Rule::kNonNegative, 0, ""},
    {"--replay-cycles", Rule::kNonNegative, 0, ""},
};

// argparse's choices of the reference's flags, '|'-separated.
constexpr std::pair<std::string_view, std::string_view> kChoices[] = {
    {"--log-level", "DEBUG|INFO|WARNING|ERROR|CRITICAL"},
    {"--generation-mode", "none|fast|realistic"},
    {"--performance-profile", "latency|throughput"},
    {"--autoscaler-mode", "qos|capacity"},
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
    {"performance_profile", "latency"},
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

// Folders the reference refuses as --cache-dir (its validate_args).
constexpr std::string_view kSystemFolders[] = {"/etc",  "/bin", "/sbin", "/usr/bin", "/usr/sbin",
                                               "/boot", "/sys", "/proc", "/dev",     "/root"};

const Flag* FindFlag(std::string_view name) {
  for (const Flag& f : kFlags) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

Status Invalid(const std::string& what) { return Status::InvalidArgument("kv-cache.py: " + what); }

// The parse of `v` as the flag's kind of value, then the reference's checks.
Status CheckValue(const Flag& f, const std::string& v) {
  const std::string name(f.name);
  for (const auto& [flag, choices] : kChoices) {
    if (flag != f.name) continue;
    std::string list;
    bool found = false;
    for (std::size_t at = 0; at <= choices.size();) {
      const std::size_t bar = std::min(choices.find('|', at), choices.size());
      const std::string_view choice = choices.substr(at, bar - at);
      found |= choice == v;
      list += (list.empty() ? "'" : ", '") + std::string(choice) + "'";
      at = bar + 1;
    }
    if (found) return Status::OK();
    return Invalid("argument " + name + ": invalid choice: '" + v + "' (choose from " + list + ")");
  }
  if (f.value != Value::kWhole && f.value != Value::kNumber) return Status::OK();
  const char* begin = v.data() + (v.starts_with('+') ? 1 : 0);
  const char* end = v.data() + v.size();
  double n = 0;
  if (f.value == Value::kWhole) {
    std::int64_t w = 0;
    auto [p, ec] = std::from_chars(begin, end, w);
    if (v.empty() || ec != std::errc() || p != end) {
      return Invalid(name + " '" + v + "' is not a whole number");
    }
    n = static_cast<double>(w);
  } else {
    auto [p, ec] = std::from_chars(begin, end, n);
    if (v.empty() || ec != std::errc() || p != end || !std::isfinite(n)) {
      return Invalid(name + " '" + v + "' is not a number");
    }
  }
  for (const auto& c : kChecks) {
    if (c.flag != f.name) continue;
    switch (c.rule) {
      case Rule::kPositive:
        if (n <= 0) return Invalid(name + " must be positive, got " + v);
        break;
      case Rule::kNonNegative:
        if (n < 0) return Invalid(name + " cannot be negative, got " + v);
        break;
      case Rule::kAtLeastOne:
        if (n < 1) return Invalid(name + " must be >= 1, got " + v);
        break;
      case Rule::kFraction:
        if (n < 0 || n > 1) return Invalid(name + " must be between 0.0 and 1.0, got " + v);
        break;
      case Rule::kSeed:
        if (n < 0 || n > 4294967295.0) {
          return Invalid(name +
                         " must be between 0 and 2**32 - 1 (the reference seeds numpy with it), "
                         "got " +
                         v);
        }
        break;
    }
    if (c.max > 0 && n > c.max) {
      return Invalid(name + " exceeds " + std::string(c.limit) + ", got " + v);
    }
  }
  return Status::OK();
}

// What the parse gathers before the run's arguments are made.
struct Parsed {
  std::map<std::string, std::string> keys;     // kv_cache.<key> -> value
  std::map<std::string, std::string> origins;  // manifest path -> what set it
  std::string storage_root;                    // --cache-dir's parent ("" = the workload's)
  std::string config;                          // --config FILE
  bool seeded = false;
};

// Applies one flag (with its value when it takes one) to `out` and `p`.
Status Apply(const Flag& f, const std::string& v, ReferenceCommandLine* out, Parsed* p) {
  IOMIMIC_RETURN_IF_ERROR(CheckValue(f, v));
  const std::string name(f.name);
  switch (f.kind) {
    case Kind::kKey:
      p->keys[std::string(f.key)] = v;
      break;
    case Kind::kSwitchFalse:
      p->keys[std::string(f.key)] = "False";
      break;
    case Kind::kIgnored:
    case Kind::kIgnoredSwitch:
      out->notes.push_back(name + (v.empty() ? "" : " " + v) +
                           ": accepted, changes nothing in iomimic");
      break;
    case Kind::kRefused:
    case Kind::kRefusedValue:
      return Status::NotSupported("kv-cache.py: " + name +
                                  " is not supported by iomimic's KV-cache workflow "
                                  "(docs/kvcache-reference.md)");
    case Kind::kCacheDir: {
      const fs::path dir = fs::path(v).lexically_normal();
      const std::string leaf =
          dir.has_filename() ? dir.filename().string() : dir.parent_path().filename().string();
      if (leaf.empty() || leaf == "." || leaf == "..") {
        return Invalid("--cache-dir '" + v + "' names no folder of its own");
      }
      std::error_code ec;
      const std::string resolved = fs::weakly_canonical(fs::absolute(dir, ec), ec).string();
      for (std::string_view system : kSystemFolders) {
        if (resolved.starts_with(system)) {
          return Invalid("--cache-dir cannot be a system directory: " + resolved);
        }
      }
      const fs::path parent = (dir.has_filename() ? dir : dir.parent_path()).parent_path();
      p->storage_root = parent.empty() ? std::string(".") : parent.string();
      p->keys["cache_folder"] = leaf;
      break;
    }
    case Kind::kOutput:
      if (v.empty()) return Invalid("--output names no file");
      out->output = v;
      break;
    case Kind::kTraceLog:
      // The reference's trace mode (docs/kvcache-reference.md, "The reference's I/O trace"): the
      // whole simulation runs, no tier I/O is performed, every operation is
      // written to FILE (relative to the working directory, as there).
      if (v.empty()) return Invalid("--io-trace-log names no file");
      {
        std::error_code ec;
        const fs::path file = fs::absolute(fs::path(v), ec);
        if (ec) return Invalid("--io-trace-log '" + v + "': " + ec.message());
        p->keys["io_trace_log"] = file.lexically_normal().string();
      }
      p->keys["trace_only"] = "True";
      break;
    case Kind::kSeed:
      out->seed = std::stoull(v.starts_with('+') ? v.substr(1) : v);
      p->seeded = true;
      break;
    case Kind::kConfig:
      if (v.empty()) return Invalid("--config names no file");
      p->config = v;
      break;
  }
  if (f.kind == Kind::kKey || f.kind == Kind::kSwitchFalse) {
    p->origins["kv_cache." + std::string(f.key)] = name;
  }
  return Status::OK();
}

// The reference's default results file: benchmark_results_<local time>.json.
std::string DefaultOutput() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char name[64];
  std::strftime(name, sizeof name, "benchmark_results_%Y%m%d_%H%M%S.json", &tm);
  return name;
}

// The run's own folder for results file `output`: its name with .iomimic
// for .json, -1, -2, ... added while that exists.
std::string RunFolderFor(const std::string& output) {
  fs::path base = fs::path(output).lexically_normal();
  if (base.extension() == ".json") base.replace_extension();
  const std::string stem = base.string() + ".iomimic";
  std::string folder = stem;
  std::error_code ec;
  for (int i = 1; fs::exists(folder, ec); ++i) folder = stem + "-" + std::to_string(i);
  return folder;
}

// The reference's checks across flags (its validate_args).
Status CheckTogether(const Parsed& p) {
  const auto whole = [&](const char* key) { return std::stoll(p.keys.at(key)); };
  const long long tp = whole("tensor_parallel"), gpus = whole("num_gpus");
  if (tp > gpus) {
    return Invalid("--tensor-parallel (" + std::to_string(tp) + ") cannot exceed --num-gpus (" +
                   std::to_string(gpus) + ")");
  }
  return Status::OK();
}

}  // namespace

const char* ReferenceCommandLineHelp() {
  return "usage: kv-cache.py [--model M] [--num-users N] [--duration S] [--gpu-mem-gb G]\n"
         "                   [--cpu-mem-gb C] [--cache-dir DIR] [--generation-mode MODE]\n"
         "                   [--config FILE] [--output FILE] [--seed N] [--max-requests N] ...\n\n"
         "iomimic's stand-in for MLPerf Storage's KV-cache benchmark (kv-cache.py): the\n"
         "reference's flags run iomimic's KV-cache workflow (docs/kvcache-reference.md).\n"
         "Mapped onto kv_cache.<key>: --model, --num-users, --duration, --gpu-mem-gb,\n"
         "--num-gpus, --tensor-parallel, --cpu-mem-gb, --generation-mode,\n"
         "--performance-profile, --disable-multi-turn, --disable-prefix-caching,\n"
         "--max-concurrent-allocs, --request-rate, --max-requests, --storage-capacity-gb,\n"
         "--seed; --io-trace-log FILE: the reference's trace mode (kv_cache.trace_only: the\n"
         "operations are written to FILE, none is performed); --cache-dir DIR:\n"
         "storage.storage_root and kv_cache.cache_folder; --config FILE: the reference's\n"
         "config.yaml (user templates, QoS distribution, eviction, system-prompt\n"
         "probability, turns per conversation, decode batch; its models must be iomimic's);\n"
         "--output FILE (default benchmark_results_<time>.json): the reference's results\n"
         "JSON, the run's own files in FILE's name with .iomimic for .json.\n"
         "Accepted, changing nothing: --log-level, --xlsx-output, --enable-latency-tracing\n"
         "and the values of features left off.\n"
         "Refused: --enable-rag, --enable-autoscaling, --use-burst-trace, --dataset-path,\n"
         "--validation-trace, --precondition, --prefill-only, --decode-only.\n"
         "Flags left out take the reference's defaults (--gpu-mem-gb 16, --cpu-mem-gb 32,\n"
         "--num-users 100, --duration 60, --generation-mode realistic, no --seed: 42).\n";
}

Result<ReferenceCommandLine> ParseReferenceCommandLine(const std::vector<std::string>& args) {
  ReferenceCommandLine out;
  Parsed p;
  for (const auto& [k, v] : kDefaults) p.keys[std::string(k)] = std::string(v);
  for (const Flag& f : kFlags) {
    if (f.kind == Kind::kKey || f.kind == Kind::kSwitchFalse) {
      p.origins["kv_cache." + std::string(f.key)] = std::string(f.name);
    }
  }
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
      return Invalid("unrecognized argument '" + a + "' (kv-cache.py --help lists the flags)");
    }
    std::string value;
    if (f->value != Value::kNone) {
      if (eq != std::string::npos) {
        value = a.substr(eq + 1);
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        return Invalid(name + " needs a value");
      }
    } else if (eq != std::string::npos) {
      return Invalid(name + " takes no value");
    }
    IOMIMIC_RETURN_IF_ERROR(Apply(*f, value, &out, &p));
  }
  IOMIMIC_RETURN_IF_ERROR(CheckTogether(p));
  if (!p.config.empty()) {
    IOMIMIC_ASSIGN_OR_RETURN(ReferenceConfigKeys config,
                             ReadReferenceConfig(p.config, p.keys["model"]));
    for (const auto& [k, v] : config.keys) p.keys[k] = v;
    for (const auto& [path, origin] : config.origins) p.origins[path] = origin;
    out.notes.insert(out.notes.end(), config.notes.begin(), config.notes.end());
  }
  if (!p.seeded) {
    out.notes.push_back("no --seed: the reference would be unseeded; iomimic uses seed " +
                        std::to_string(out.seed));
  }
  p.keys["seed"] = std::to_string(out.seed);
  p.origins["kv_cache.seed"] = "--seed";
  if (out.output.empty()) out.output = DefaultOutput();
  std::error_code ec;
  const fs::path results = fs::absolute(fs::path(out.output), ec);
  if (ec) return Invalid("--output '" + out.output + "': " + ec.message());
  p.keys["reference_results"] = results.lexically_normal().string();
  out.run_folder = RunFolderFor(out.output);
  for (const char* path : {"kv_cache.reference_results", "output.folder"}) {
    p.origins[path] = "--output";
  }
  out.run_args.push_back("workload=" + std::string(kBaseWorkload));
  if (!p.storage_root.empty()) {
    out.run_args.push_back("++workload.storage.storage_root=" + p.storage_root);
    p.origins["storage.storage_root"] = "--cache-dir";
    p.origins["kv_cache.cache_folder"] = "--cache-dir";
  }
  out.run_args.push_back("++workload.output.folder=" + out.run_folder);
  for (const auto& [k, v] : p.keys) out.run_args.push_back("++workload.kv_cache." + k + "=" + v);
  out.origins.assign(p.origins.begin(), p.origins.end());
  return out;
}

Status ReferenceError(const ReferenceCommandLine& cli, const Status& status) {
  if (status.ok()) return status;
  std::string m = status.message();
  // The longest paths first: none is then taken for the start of another.
  std::vector<std::pair<std::string, std::string>> origins = cli.origins;
  std::sort(origins.begin(), origins.end(),
            [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  // "override '++workload.<path>=<value>': <path>: " -> "<origin> <value>: ".
  for (std::size_t at = m.find("override '++workload."); at != std::string::npos;
       at = m.find("override '++workload.", at + 1)) {
    const std::size_t text = at + std::string_view("override '++workload.").size();
    const std::size_t close = m.find("': ", text);
    const std::size_t eq = m.find('=', text);
    if (close == std::string::npos || eq == std::string::npos || eq > close) break;
    const std::string path = m.substr(text, eq - text);
    const std::string value = m.substr(eq + 1, close - eq - 1);
    const auto it = std::find_if(origins.begin(), origins.end(),
                                 [&](const auto& o) { return o.first == path; });
    if (it == origins.end()) continue;
    std::size_t end = close + 3;
    if (m.compare(end, path.size() + 2, path + ": ") == 0) end += path.size() + 2;
    const std::string shown = it->second + " " + value + ": ";
    m.replace(at, end - at, shown);
  }
  // The run's hint at the folder the drop-in chooses.
  constexpr std::string_view kHint = "with ++workload.output.folder=<dir>";
  if (const std::size_t at = m.find(kHint); at != std::string::npos) {
    m.replace(at, kHint.size(), "with another --output");
  }
  // What remains of the manifest's words: its paths.
  for (const auto& [path, origin] : origins) {
    for (std::size_t at = m.find(path); at != std::string::npos; at = m.find(path, at)) {
      const std::size_t after = at + path.size();
      const bool word = after == m.size() ||
                        !(std::isalnum(static_cast<unsigned char>(m[after])) || m[after] == '_');
      if (!word) {
        at = after;
        continue;
      }
      m.replace(at, path.size(), origin);
      at += origin.size();
    }
  }
  if (!m.starts_with("kv-cache.py: ")) m = "kv-cache.py: " + m;
  return Status(status.code(), m);
}

}  // namespace iomimic::kvcache
