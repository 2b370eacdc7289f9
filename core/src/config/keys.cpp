// The key table (config/key_table.h) turned into KeyDefs, and the manifest
// reference generated from it (docs/manifest.md).

#include <algorithm>
#include <iterator>
#include <map>
#include <sstream>
#include <type_traits>
#include <unordered_map>
#include <variant>

#include "config/content.h"
#include "config/declared_internal.h"
#include "config/keys_internal.h"
#include "config/scalar_internal.h"
#include "iomimic/enum_names.h"

namespace iomimic::config::internal {

const Words kDistributionTypes = {"normal", "uniform", "gamma", "exponential", "poisson"};
const Words kReadTypes = {"on_demand", "memory"};

namespace {

const Words kFrameworks = {"tensorflow", "pytorch"};
const Words kDataLoaders = {"tensorflow", "pytorch", "dali", "native_dali",
                            "synthetic",  "custom",  "none"};
// direct_fs: MLPerf Storage v3.0's fork, O_DIRECT on a local file system.
// s3dlio and object: MLPerf Storage v3.0's object-storage spellings
// (docs/s3.md, "MLPerf Storage v3.0's spellings").
const Words kStorageTypes = {"local_fs", "direct_fs", "parallel_fs", "s3",
                             "aistore",  "s3dlio",    "object"};
const Words kLoadBalanceStrategies = {"round_robin", "least_connections", "random"};
const Words kDataGenMethods = {"dgen", "numpy"};
// snappy, lz4 and zstd are Parquet codecs (MLPerf Storage's DLIO fork).
const Words kCompressions = {"none", "gzip", "lzf", "bz2", "zip", "xz", "snappy", "lz4", "zstd"};
const Words kParquetColumnFields = {"name", "dtype", "size", "read"};
const Words kFileAccess = {"multi", "shared", "collective", "mpio", "posix"};
const Words kMultiprocessingContexts = {"fork", "spawn", "forkserver"};
const Words kSamplers = {"iterative", "index", "none"};
const Words kCheckpointTypes = {"rank_zero", "all_ranks"};
const Words kCheckpointModes = {"default", "subset"};
const Words kCheckpointLayouts = {"dlio", "dcp", "safetensors"};
const Words kProfilers = {"none", "iostat", "darshan", "tensorboard"};
const Words kModelDatatypes = {"int8", "uint8", "fp16", "bf16", "fp32", "fp64"};
const Words kContentKinds = {"random", "zeros", "scrambled"};
const Words kShardings = {"samples", "files"};
const Words kReadPatterns = {"dlio", "direct", "whole"};
const Words kReplicateModes = {"none", "dataset", "batch"};
// The reference's model table (kvcache/models.cpp holds the figures; a unit
// test checks that every name here has them).
const Words kKvCacheModels = {
    "tiny-1b",     "mistral-7b", "llama2-7b",    "llama3.1-8b", "llama3.1-70b-instruct",
    "deepseek-v3", "qwen3-32b",  "gpt-oss-120b", "gpt-oss-20b"};
const Words kKvGenerationModes = {"none", "fast", "realistic"};
const Words kKvAccelerators = {"auto", "gds", "emulated"};
const Words kKvReplayTimings = {"fast", "recorded"};
const Words kKvPerformanceProfiles = {"latency", "throughput"};
const Words kKvLayouts = {"whole", "chunked"};
const Words kKvTraceFormats = {"auto", "mooncake", "burstgpt", "sharegpt"};
const Words kKvPromotions = {"none", "on_hit"};
const Words kKvChunkObjects = {"chunk", "layer"};
const Words kModelLoadMethods = {"tensors", "chunks"};
const Words kModelLoadCaches = {"both", "cold", "warm"};
const Words kModelLoadSplits = {"replicate", "shard"};
const Words kAppReplayTimings = {"recorded", "fast"};

// The vocabulary of key_table.h's specs.
KeySpec Of(ValueType type) {
  KeySpec k;
  k.type = type;
  return k;
}
KeySpec Bool() { return Of(ValueType::kBool); }
KeySpec UInt(std::uint64_t min, std::uint64_t max) {
  KeySpec k = Of(ValueType::kUInt);
  k.umin = min;
  k.umax = max;
  return k;
}
KeySpec Int(std::int64_t min, std::uint64_t max) {
  KeySpec k = Of(ValueType::kInt);
  k.imin = min;
  k.imax = max >= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())
               ? std::numeric_limits<std::int64_t>::max()
               : static_cast<std::int64_t>(max);
  return k;
}
KeySpec Number(double min, double max) {
  KeySpec k = Of(ValueType::kNumber);
  k.dmin = min;
  k.dmax = max;
  return k;
}
KeySpec Text() { return Of(ValueType::kText); }
KeySpec Choice(const Words& words) {
  KeySpec k = Of(ValueType::kChoice);
  k.choices = &words;
  return k;
}
KeySpec Plugin() { return Of(ValueType::kPlugin); }
KeySpec Dtype() { return Of(ValueType::kDtype); }
KeySpec Shuffle() { return Of(ValueType::kShuffle); }
KeySpec ReadTypeKey() {
  KeySpec k = Of(ValueType::kReadType);
  k.choices = &kReadTypes;
  return k;
}
KeySpec UIntList(std::uint64_t min) {
  KeySpec k = Of(ValueType::kUIntList);
  k.umin = min;
  return k;
}
KeySpec TextList() { return Of(ValueType::kTextList); }
KeySpec FreeMap() { return Of(ValueType::kTextMap); }
KeySpec Time(std::string_view stdev_key) {
  KeySpec k = Of(ValueType::kTime);
  k.stdev_key = stdev_key;
  return k;
}
KeySpec Presence() { return Of(ValueType::kPresence); }
KeySpec Records(const Words& fields) {
  KeySpec k = Of(ValueType::kRecordList);
  k.fields = &fields;
  return k;
}

// One row per key: the member's accessor is a captureless lambda.
#define IOMIMIC_ROW(path, type, member_expr, spec) \
  KeyDef{path, spec, FieldRef(+[](Config& c) -> type& { return member_expr; })},
#define IOMIMIC_MODEL_ROW(key, member, type, def, spec) \
  IOMIMIC_ROW("model." key, type, c.model.member, spec)
#define IOMIMIC_ROOT_ROW(key, member, type, def, spec) IOMIMIC_ROW(key, type, c.member, spec)
#define IOMIMIC_WORKFLOW_ROW(key, member, type, def, spec) \
  IOMIMIC_ROW("workflow." key, type, c.workflow.member, spec)
#define IOMIMIC_STORAGE_ROW(key, member, type, def, spec) \
  IOMIMIC_ROW("storage." key, type, c.storage.member, spec)
#define IOMIMIC_DATASET_ROW(key, member, type, def, spec) \
  IOMIMIC_ROW("dataset." key, type, c.dataset.member, spec)
#define IOMIMIC_READER_ROW(key, member, type, def, spec) \
  IOMIMIC_ROW("reader." key, type, c.reader.member, spec)
#define IOMIMIC_TRAIN_ROW(key, member, type, def, spec) \
  IOMIMIC_ROW("train." key, type, c.train.member, spec)
#define IOMIMIC_EVALUATION_ROW(key, member, type, def, spec) \
  IOMIMIC_ROW("evaluation." key, type, c.evaluation.member, spec)
#define IOMIMIC_CHECKPOINT_ROW(key, member, type, def, spec) \
  IOMIMIC_ROW("checkpoint." key, type, c.checkpoint.member, spec)
#define IOMIMIC_OUTPUT_ROW(key, member, type, def, spec) \
  IOMIMIC_ROW("output." key, type, c.output.member, spec)
#define IOMIMIC_PROFILING_ROW(key, member, type, def, spec) \
  IOMIMIC_ROW("profiling." key, type, c.profiling.member, spec)
#define IOMIMIC_METRIC_ROW(key, member, type, def, spec) \
  IOMIMIC_ROW("metric." key, type, c.metric.member, spec)
#define IOMIMIC_KV_CACHE_ROW(key, member, type, def, spec) \
  IOMIMIC_ROW("kv_cache." key, type, c.kv_cache.member, spec)
#define IOMIMIC_MODEL_LOAD_ROW(key, member, type, def, spec) \
  IOMIMIC_ROW("model_load." key, type, c.model_load.member, spec)
#define IOMIMIC_APP_REPLAY_ROW(key, member, type, def, spec) \
  IOMIMIC_ROW("app_replay." key, type, c.app_replay.member, spec)
#define IOMIMIC_IOMIMIC_ROW(key, member, type, def, spec) \
  IOMIMIC_ROW("iomimic." key, type, c.iomimic.member, spec)
#define IOMIMIC_ACCEPTED_ROW(path, spec) KeyDef{path, spec, FieldRef()},

std::vector<KeyDef> BuildKeys() {
  return {IOMIMIC_KEYS_MODEL(IOMIMIC_MODEL_ROW) IOMIMIC_KEYS_ROOT(IOMIMIC_ROOT_ROW)
              IOMIMIC_KEYS_WORKFLOW(IOMIMIC_WORKFLOW_ROW) IOMIMIC_KEYS_STORAGE(IOMIMIC_STORAGE_ROW)
                  IOMIMIC_KEYS_DATASET(IOMIMIC_DATASET_ROW) IOMIMIC_KEYS_READER(IOMIMIC_READER_ROW)
                      IOMIMIC_KEYS_TRAIN(IOMIMIC_TRAIN_ROW) IOMIMIC_KEYS_EVALUATION(
                          IOMIMIC_EVALUATION_ROW) IOMIMIC_KEYS_CHECKPOINT(IOMIMIC_CHECKPOINT_ROW)
                          IOMIMIC_KEYS_OUTPUT(IOMIMIC_OUTPUT_ROW)
                              IOMIMIC_KEYS_PROFILING(IOMIMIC_PROFILING_ROW)
                                  IOMIMIC_KEYS_METRIC(IOMIMIC_METRIC_ROW)
                                      IOMIMIC_KEYS_KV_CACHE(IOMIMIC_KV_CACHE_ROW)
                                          IOMIMIC_KEYS_MODEL_LOAD(IOMIMIC_MODEL_LOAD_ROW)
                                              IOMIMIC_KEYS_APP_REPLAY(IOMIMIC_APP_REPLAY_ROW)
                                                  IOMIMIC_KEYS_IOMIMIC(IOMIMIC_IOMIMIC_ROW)
                                                      IOMIMIC_KEYS_ACCEPTED(IOMIMIC_ACCEPTED_ROW)};
}

std::string TypeName(const KeySpec& k) {
  switch (k.type) {
    case ValueType::kBool:
      return "bool";
    case ValueType::kUInt:
      if (k.umax != kNoMax) {
        return "integer " + std::to_string(k.umin) + ".." + std::to_string(k.umax);
      }
      return k.umin == 0 ? "integer >= 0" : "integer >= " + std::to_string(k.umin);
    case ValueType::kInt:
      if (k.imin == kNoMin) return "integer";
      if (k.imax != std::numeric_limits<std::int64_t>::max()) {
        return "integer " + std::to_string(k.imin) + ".." + std::to_string(k.imax);
      }
      return "integer >= " + std::to_string(k.imin);
    case ValueType::kNumber:
      if (k.dmin == kNoLimitMin) return "number";
      if (k.dmax != kNoLimit) return "number " + FormatDouble(k.dmin) + ".." + FormatDouble(k.dmax);
      return "number >= " + FormatDouble(k.dmin);
    case ValueType::kText:
      return "string";
    case ValueType::kChoice:
    case ValueType::kReadType: {
      std::string words;
      for (std::string_view w : *k.choices)
        words += (words.empty() ? "" : " \\| ") + std::string(w);
      return words;
    }
    case ValueType::kPlugin:
      return "plugin name";
    case ValueType::kDtype:
      return "NumPy dtype";
    case ValueType::kShuffle:
      return "off \\| seed \\| random";
    case ValueType::kUIntList:
      return "list of integers";
    case ValueType::kTextList:
      return "list of strings";
    case ValueType::kTextMap:
      return "map";
    case ValueType::kTime:
      return "seconds or distribution";
    case ValueType::kPresence:
      return "map or bool";
    case ValueType::kRecordList: {
      std::string fields;
      for (std::string_view f : *k.fields) fields += (fields.empty() ? "" : ", ") + std::string(f);
      return "list of {" + fields + "}";
    }
  }
  return "";
}

// The default of a key: the value a default Config holds, as the emitter
// would write it.
std::string DefaultText(const KeyDef& key) {
  static Config defaults;
  std::string text;
  VisitValue(key, defaults, [&](const auto& v) {
    using V = std::decay_t<decltype(v)>;
    if constexpr (std::is_same_v<V, bool>) {
      text = v ? "True" : "False";
    } else if constexpr (std::is_same_v<V, std::uint64_t> || std::is_same_v<V, std::int64_t> ||
                         std::is_same_v<V, int>) {
      text = key.spec.null_when_zero && v == 0 ? "null" : std::to_string(v);
    } else if constexpr (std::is_same_v<V, double>) {
      text = FormatDouble(v);
    } else if constexpr (std::is_same_v<V, std::string>) {
      text = v.empty() ? (key.spec.null_when_empty ? "null" : "\"\"") : v;
    } else if constexpr (std::is_same_v<V, Distribution>) {
      text = FormatDouble(v.mean);
    } else if constexpr (std::is_same_v<V, ShuffleMode>) {
      text = ShuffleModeName(v);
    } else if constexpr (std::is_same_v<V, ReadType>) {
      text = ReadTypeName(v);
    } else {
      text = v.empty() ? "[]" : "...";  // lists and maps
    }
  });
  return text;
}

std::string OriginName(Origin origin) {
  static constexpr const char* kNames[] = {"DLIO", "MLPerf", "iomimic"};
  static_assert(std::size(kNames) == static_cast<std::size_t>(Origin::kIomimic) + 1);
  return EnumName(origin, kNames, "");
}

}  // namespace

const std::vector<KeyDef>& Keys() {
  static const std::vector<KeyDef> keys = BuildKeys();
  return keys;
}

const KeyDef* FindKeyDef(std::string_view path) {
  static const std::unordered_map<std::string_view, const KeyDef*> index = [] {
    std::unordered_map<std::string_view, const KeyDef*> out;
    for (const KeyDef& k : Keys()) out.emplace(k.path, &k);
    return out;
  }();
  auto it = index.find(path);
  return it == index.end() ? nullptr : it->second;
}

std::string EscapeMarkdown(std::string_view text) {
  std::string out;
  for (char ch : text) {
    if (ch == '<') {
      out += "&lt;";
    } else if (ch == '>') {
      out += "&gt;";
    } else if (ch == '|') {
      out += "\\|";
    } else {
      out += ch;
    }
  }
  return out;
}

std::string KeysMarkdown() {
  std::ostringstream md;
  md << "# Manifest keys\n\n"
        "Generated from `core/src/config/key_table.h` by `iomimic config --keys`; a test\n"
        "checks that this file matches it. Keys are relative to the workload root\n"
        "(a manifest may nest them under `workload:`); on the command line they are\n"
        "set as `++workload.<key>=<value>`. DLIO's meaning of each key and the\n"
        "formulas behind the results: [dlio-compat.md](dlio-compat.md). Unknown keys\n"
        "are reported with the closest known key.\n";
  // Sections in the table's order; the accepted-only keys at the table's end
  // join their sections.
  auto top_of = [](const std::string& path) {
    const std::size_t dot = path.find('.');
    return dot == std::string::npos ? std::string() : path.substr(0, dot);
  };
  std::vector<std::string> sections;
  for (const KeyDef& key : Keys()) {
    const std::string top = top_of(key.path);
    if (std::find(sections.begin(), sections.end(), top) == sections.end()) {
      sections.push_back(top);
    }
  }
  for (const std::string& section : sections) {
    md << "\n## " << (section.empty() ? "top level" : "`" + section + "`") << "\n\n"
       << "| key | type | default | from | meaning |\n|---|---|---|---|---|\n";
    for (const KeyDef& key : Keys()) {
      if (top_of(key.path) != section) continue;
      std::string doc = EscapeMarkdown(key.spec.doc);
      if (!key.spec.legacy.empty()) {
        doc += " Legacy spelling: `" + std::string(key.spec.legacy) + "`.";
      }
      if (std::holds_alternative<std::monostate>(key.field) && !key.spec.by_rule) {
        doc += " (Accepted, not used.)";
      }
      if (key.spec.type == ValueType::kTime) {
        doc += " `" + std::string(key.spec.stdev_key) + "` adds a normal spread.";
      }
      const std::string def = DefaultText(key);
      md << "| `" << key.path << "` | " << TypeName(key.spec) << " | "
         << (def.empty() ? "" : "`" + def + "`") << " | " << OriginName(key.spec.origin) << " | "
         << doc << " |\n";
    }
  }
  return md.str();
}

}  // namespace iomimic::config::internal

namespace iomimic::config {

std::string ManifestKeysMarkdown(const PluginVocabulary& plugins) {
  return internal::KeysMarkdown() + internal::DeclaredKeysMarkdown(plugins);
}

std::map<std::string, std::string> FormatParameters(const Config& config) {
  std::map<std::string, std::string> out;
  for (const internal::KeyDef& key : internal::Keys()) {
    if (!key.spec.format_param || !key.path.starts_with("dataset.")) continue;
    const std::string name = key.path.substr(8);
    internal::VisitValue(key, config, [&](const auto& v) {
      using V = std::decay_t<decltype(v)>;
      if constexpr (std::is_same_v<V, RecordList>) {
        std::string text;
        for (const std::vector<std::string>& record : v) {
          if (!text.empty()) text += ';';
          for (std::size_t i = 0; i < record.size(); ++i) {
            text += (i > 0 ? ":" : "") + record[i];
          }
        }
        if (!text.empty()) out[name] = text;
      } else if constexpr (std::is_same_v<V, UIntVector>) {
        std::string text;
        for (std::uint64_t x : v) text += (text.empty() ? "" : ",") + std::to_string(x);
        if (!text.empty()) out[name] = text;
      } else if constexpr (std::is_same_v<V, std::uint64_t> || std::is_same_v<V, std::int64_t> ||
                           std::is_same_v<V, int>) {
        out[name] = std::to_string(v);
      } else if constexpr (std::is_same_v<V, double>) {
        out[name] = internal::FormatDouble(v);
      } else if constexpr (std::is_same_v<V, bool>) {
        out[name] = v ? "true" : "false";
      } else if constexpr (std::is_same_v<V, std::string>) {
        out[name] = v;
      }
    });
  }
  // The keys format plugins declare, as their plugins receive them (lists
  // are left out when empty, as above).
  for (const auto& [name, value] : config.dataset.declared_keys) {
    if (value.type == "int_list" && value.text.empty()) continue;
    out.emplace(name, value.text);
  }
  return out;
}

std::string OneLineText(const std::string& text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (u < 0x20 || u == 0x7f) {
      out += std::string("\\x") + kHex[u >> 4] + kHex[u & 15];
    } else {
      out += c;
    }
  }
  return out;
}

ContentOptions ContentOf(const IomimicConfig& iomimic) {
  ContentOptions content;
  if (iomimic.content == "zeros") {
    content.kind = ContentOptions::Kind::kZeros;
  } else if (iomimic.content == "scrambled") {
    content.kind = ContentOptions::Kind::kScrambled;
  }
  content.compress_percentage = static_cast<std::uint32_t>(iomimic.compress_percentage);
  content.dedupe_percentage = static_cast<std::uint32_t>(iomimic.dedupe_percentage);
  return content;
}

}  // namespace iomimic::config
