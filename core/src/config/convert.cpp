#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <string_view>

#include "config/convert_internal.h"
#include "config/scalar_internal.h"
#include "config/schema_internal.h"

namespace iomimic::config::internal {
namespace {

constexpr std::uint64_t kMaxUInt = std::numeric_limits<std::uint64_t>::max();
constexpr std::int64_t kMinInt = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kMaxInt = std::numeric_limits<std::int64_t>::max();
constexpr double kInfinity = std::numeric_limits<double>::infinity();

using Words = std::vector<std::string_view>;

const Words kFrameworks = {"tensorflow", "pytorch"};
const Words kDataLoaders = {"tensorflow", "pytorch", "dali", "native_dali",
                            "synthetic",  "custom",  "none"};
const Words kStorageTypes = {"local_fs", "parallel_fs", "s3", "aistore"};
// snappy, lz4 and zstd are Parquet codecs (MLPerf Storage's DLIO fork).
const Words kCompressions = {"none", "gzip", "lzf", "bz2", "zip", "xz", "snappy", "lz4", "zstd"};
const Words kReadTypes = {"on_demand", "memory"};
const Words kFileAccess = {"multi", "shared", "collective", "mpio", "posix"};
const Words kMultiprocessingContexts = {"fork", "spawn", "forkserver"};
const Words kSamplers = {"iterative", "index", "none"};
const Words kCheckpointTypes = {"rank_zero", "all_ranks"};
const Words kCheckpointModes = {"default", "subset"};
const Words kProfilers = {"none", "iostat", "darshan", "tensorboard"};
const Words kModelDatatypes = {"int8", "uint8", "fp16", "bf16", "fp32", "fp64"};
const Words kDistributionTypes = {"normal", "uniform", "gamma", "exponential", "poisson"};
const Words kContentKinds = {"random", "zeros"};
// NumPy dtype names; the last three are aliases (see CanonicalDtype).
const Words kDtypes = {"uint8",   "int8",   "uint16", "int16",   "uint32",
                       "int32",   "uint64", "int64",  "float16", "float32",
                       "float64", "bool",   "float",  "int",     "double"};

std::string CanonicalDtype(std::string_view name) {
  if (name == "float" || name == "double") return "float64";
  if (name == "int") return "int64";
  return std::string(name);
}

std::string JoinWords(const Words& words) {
  std::string text;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (i > 0) text += i + 1 == words.size() ? " or " : ", ";
    text += words[i];
  }
  return text;
}

std::string UIntRange(std::uint64_t min, std::uint64_t max) {
  if (max == kMaxUInt) {
    if (min == 0) return "a non-negative integer";
    if (min == 1) return "a positive integer";
    return "an integer >= " + std::to_string(min);
  }
  return "an integer from " + std::to_string(min) + " to " + std::to_string(max);
}

std::string IntRange(std::int64_t min, std::int64_t max) {
  if (max == kMaxInt) {
    if (min == kMinInt) return "an integer";
    if (min == 0) return "a non-negative integer";
    if (min == 1) return "a positive integer";
    return "an integer >= " + std::to_string(min);
  }
  return "an integer from " + std::to_string(min) + " to " + std::to_string(max);
}

std::string NumberRange(double min, double max) {
  if (max == kInfinity) {
    if (min == -kInfinity) return "a number";
    if (min == 0) return "a non-negative number";
    return "a number >= " + FormatDouble(min);
  }
  return "a number from " + FormatDouble(min) + " to " + FormatDouble(max);
}

bool IsPluginName(std::string_view text) {
  if (text.empty() || !std::isalpha(static_cast<unsigned char>(text[0]))) return false;
  return std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
  });
}

std::string StripTrailingSlashes(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

const char* DistributionTypeName(Distribution::Kind kind) {
  switch (kind) {
    case Distribution::Kind::kConstant:
      return "constant";
    case Distribution::Kind::kNormal:
      return "normal";
    case Distribution::Kind::kUniform:
      return "uniform";
    case Distribution::Kind::kGamma:
      return "gamma";
    case Distribution::Kind::kExponential:
      return "exponential";
    case Distribution::Kind::kPoisson:
      return "poisson";
  }
  return "constant";
}

// A section of the manifest: a map, or a null node when absent or empty.
struct Section {
  YAML::Node node;
  std::string path;
};

class Converter {
 public:
  Converter(const Locator& locator, std::vector<Diagnostic>* warnings)
      : locator_(locator), warnings_(warnings) {}

  Status Run(const YAML::Node& root, Config* config);

 private:
  // The entry of `key` in `section`, or nullopt when absent.
  std::optional<Entry> Get(const Section& section, std::string_view key);
  // Errors about a value: at the value, or at its key when the value is an
  // implicit null (yaml-cpp places those where the next token starts).
  Status Bad(const YAML::Node& node, const std::string& path, std::string_view what) const {
    return locator_.Error(node.Mark(), path, what);
  }
  Status Bad(const Entry& entry, const std::string& path, std::string_view what) const {
    return locator_.Error(entry.value.IsNull() ? entry.key.Mark() : entry.value.Mark(), path, what);
  }
  template <typename Where>
  Status Expected(const Where& where, const std::string& path, std::string_view expected) const {
    return Bad(where, path,
               "expected " + std::string(expected) + ", got " + Describe(ValueOf(where)));
  }
  static const YAML::Node& ValueOf(const YAML::Node& node) { return node; }
  static const YAML::Node& ValueOf(const Entry& entry) { return entry.value; }
  void Warn(const YAML::Node& node, const std::string& path, std::string message) {
    warnings_->push_back(locator_.Warning(node.Mark(), path, std::move(message)));
  }

  // Field readers: each leaves `*out` unchanged when the key is absent (or
  // null, where `nullable`), and fails on a value of the wrong type or range.
  Result<Section> Sub(const Section& parent, std::string_view key);
  Status Bool(const Section& section, std::string_view key, bool* out);
  Status UInt(const Section& section, std::string_view key, std::uint64_t* out,
              std::uint64_t min = 0, std::uint64_t max = kMaxUInt, bool nullable = false);
  Status Int(const Section& section, std::string_view key, std::int64_t* out,
             std::int64_t min = kMinInt, std::int64_t max = kMaxInt);
  Status Number(const Section& section, std::string_view key, double* out, double min = -kInfinity,
                double max = kInfinity);
  Status String(const Section& section, std::string_view key, std::string* out,
                bool nullable = false, bool non_empty = false);
  Status Choice(const Section& section, std::string_view key, std::string* out,
                const Words& allowed, bool nullable = false);
  Status PluginName(const Section& section, std::string_view key, std::string* out,
                    bool allow_empty);
  Status Dtype(const Section& section, std::string_view key, std::string* out);
  Status Shuffle(const Section& section, std::string_view key, ShuffleMode* out);
  Status UIntList(const Section& section, std::string_view key, std::vector<std::uint64_t>* out,
                  std::uint64_t min = 0, bool null_is_zero = false);
  Status StringList(const Section& section, std::string_view key, std::vector<std::string>* out);
  Status StringMap(const Section& section, std::string_view key,
                   std::map<std::string, std::string>* out);
  Status Time(const Section& section, std::string_view key, std::string_view stdev_key,
              Distribution* out);
  // dataset.parquet.columns: a list of {name, dtype, size, read} maps.
  Status ParquetColumns(const Section& section, std::vector<DatasetConfig::ParquetColumn>* out);
  Status TimeMap(const YAML::Node& node, const std::string& path, Distribution* out);

  Status ReadModel(const Section& root, ModelConfig* model);
  Status ReadWorkflow(const Section& root, WorkflowConfig* workflow);
  Status ReadStorage(const Section& root, StorageConfig* storage, bool* backend_given);
  Status ReadDataset(const Section& root, DatasetConfig* dataset);
  Status ReadReader(const Section& root, ReaderConfig* reader);
  Status ReadTrain(const Section& root, TrainConfig* train);
  Status ReadEvaluation(const Section& root, EvaluationConfig* evaluation);
  Status ReadCheckpoint(const Section& root, CheckpointConfig* checkpoint);
  Status ReadOutput(const Section& root, OutputConfig* output);
  Status ReadProfiling(const Section& root, ProfilingConfig* profiling);
  Status ReadMetric(const Section& root, MetricConfig* metric);
  Status ReadIomimic(const Section& root, IomimicConfig* iomimic);

  const Locator& locator_;
  std::vector<Diagnostic>* warnings_;
  std::string unlisted_key_;  // a key read here but missing from the schema (a bug)
};

std::optional<Entry> Converter::Get(const Section& section, std::string_view key) {
  const std::string path = JoinPath(section.path, key);
  if (!LookupKey(path) && unlisted_key_.empty()) unlisted_key_ = path;
  return FindEntry(section.node, key);
}

Result<Section> Converter::Sub(const Section& parent, std::string_view key) {
  Section section{YAML::Node(YAML::NodeType::Null), JoinPath(parent.path, key)};
  if (const std::optional<Entry> entry = Get(parent, key)) {
    if (entry->value.IsMap()) {
      section.node.reset(entry->value);
    } else if (!entry->value.IsNull()) {
      return Expected(*entry, section.path, "a map of keys");
    }
  }
  return section;
}

Status Converter::Bool(const Section& section, std::string_view key, bool* out) {
  const std::optional<Entry> entry = Get(section, key);
  if (!entry) return Status::OK();
  const YAML::Node& node = entry->value;
  const std::string path = JoinPath(section.path, key);
  const std::optional<bool> value =
      node.IsScalar() ? ParseBool(node.Scalar()) : std::optional<bool>();
  if (!value) return Expected(*entry, path, "true or false");
  *out = *value;
  return Status::OK();
}

Status Converter::UInt(const Section& section, std::string_view key, std::uint64_t* out,
                       std::uint64_t min, std::uint64_t max, bool nullable) {
  const std::optional<Entry> entry = Get(section, key);
  if (!entry || (nullable && entry->value.IsNull())) return Status::OK();
  const YAML::Node& node = entry->value;
  const std::string path = JoinPath(section.path, key);
  const std::optional<std::uint64_t> value =
      node.IsScalar() ? ParseUInt(node.Scalar()) : std::optional<std::uint64_t>();
  if (!value || *value < min || *value > max) return Expected(*entry, path, UIntRange(min, max));
  *out = *value;
  return Status::OK();
}

Status Converter::Int(const Section& section, std::string_view key, std::int64_t* out,
                      std::int64_t min, std::int64_t max) {
  const std::optional<Entry> entry = Get(section, key);
  if (!entry) return Status::OK();
  const YAML::Node& node = entry->value;
  const std::string path = JoinPath(section.path, key);
  const std::optional<std::int64_t> value =
      node.IsScalar() ? ParseInt(node.Scalar()) : std::optional<std::int64_t>();
  if (!value || *value < min || *value > max) return Expected(*entry, path, IntRange(min, max));
  *out = *value;
  return Status::OK();
}

Status Converter::Number(const Section& section, std::string_view key, double* out, double min,
                         double max) {
  const std::optional<Entry> entry = Get(section, key);
  if (!entry) return Status::OK();
  const YAML::Node& node = entry->value;
  const std::string path = JoinPath(section.path, key);
  const std::optional<double> value =
      node.IsScalar() ? ParseDouble(node.Scalar()) : std::optional<double>();
  if (!value || *value < min || *value > max) return Expected(*entry, path, NumberRange(min, max));
  *out = *value;
  return Status::OK();
}

Status Converter::String(const Section& section, std::string_view key, std::string* out,
                         bool nullable, bool non_empty) {
  const std::optional<Entry> entry = Get(section, key);
  if (!entry || (nullable && entry->value.IsNull())) return Status::OK();
  const YAML::Node& node = entry->value;
  const std::string path = JoinPath(section.path, key);
  if (!node.IsScalar())
    return Expected(*entry, path, non_empty ? "a non-empty string" : "a string");
  if (non_empty && node.Scalar().empty()) return Bad(*entry, path, "expected a non-empty string");
  *out = node.Scalar();
  return Status::OK();
}

Status Converter::Choice(const Section& section, std::string_view key, std::string* out,
                         const Words& allowed, bool nullable) {
  const std::optional<Entry> entry = Get(section, key);
  if (!entry || (nullable && entry->value.IsNull())) return Status::OK();
  const YAML::Node& node = entry->value;
  const std::string path = JoinPath(section.path, key);
  const std::string expected = "one of " + JoinWords(allowed);
  if (!node.IsScalar()) return Expected(*entry, path, expected);
  const std::string& text = node.Scalar();
  if (std::find(allowed.begin(), allowed.end(), text) == allowed.end()) {
    std::string what = "expected " + expected + ", got " + Describe(node);
    if (std::optional<std::string> close = ClosestWord(text, allowed)) {
      what += " (did you mean '" + *close + "'?)";
    }
    return Bad(*entry, path, what);
  }
  *out = text;
  return Status::OK();
}

Status Converter::PluginName(const Section& section, std::string_view key, std::string* out,
                             bool allow_empty) {
  const std::optional<Entry> entry = Get(section, key);
  if (!entry) return Status::OK();
  const YAML::Node& node = entry->value;
  const std::string path = JoinPath(section.path, key);
  if (allow_empty && (node.IsNull() || (node.IsScalar() && node.Scalar().empty()))) {
    out->clear();
    return Status::OK();
  }
  if (!node.IsScalar() || !IsPluginName(node.Scalar())) {
    return Expected(*entry, path, "a plugin name (letters, digits, '_', '-', '.')");
  }
  *out = node.Scalar();
  return Status::OK();
}

Status Converter::Dtype(const Section& section, std::string_view key, std::string* out) {
  std::string name;
  IOMIMIC_RETURN_IF_ERROR(Choice(section, key, &name, kDtypes));
  if (!name.empty()) *out = CanonicalDtype(name);
  return Status::OK();
}

Status Converter::Shuffle(const Section& section, std::string_view key, ShuffleMode* out) {
  const std::optional<Entry> entry = Get(section, key);
  if (!entry) return Status::OK();
  const YAML::Node& node = entry->value;
  const std::string path = JoinPath(section.path, key);
  if (node.IsScalar()) {
    const std::string& text = node.Scalar();
    // YAML 1.1 reads a bare `off` as false (and `on` as true); DLIO's enum
    // names are off/seed/random. An explicit off means off (§1.5).
    if (text == "seed") {
      *out = ShuffleMode::kSeed;
      return Status::OK();
    }
    if (text == "random") {
      *out = ShuffleMode::kRandom;
      return Status::OK();
    }
    if (const std::optional<bool> flag = ParseBool(text)) {
      *out = *flag ? ShuffleMode::kSeed : ShuffleMode::kOff;
      return Status::OK();
    }
  }
  return Expected(*entry, path, "one of off, seed or random");
}

Status Converter::UIntList(const Section& section, std::string_view key,
                           std::vector<std::uint64_t>* out, std::uint64_t min, bool null_is_zero) {
  const std::optional<Entry> entry = Get(section, key);
  if (!entry) return Status::OK();
  const YAML::Node& node = entry->value;
  const std::string path = JoinPath(section.path, key);
  if (node.IsNull()) {
    out->clear();
    return Status::OK();
  }
  if (!node.IsSequence())
    return Expected(*entry, path, "a list of " + UIntRange(min, kMaxUInt) + "s");
  std::vector<std::uint64_t> values;
  for (std::size_t i = 0; i < node.size(); ++i) {
    const YAML::Node element = node[i];
    const std::string element_path = path + "[" + std::to_string(i) + "]";
    if (null_is_zero && element.IsNull()) {
      values.push_back(0);
      continue;
    }
    const std::optional<std::uint64_t> value =
        element.IsScalar() ? ParseUInt(element.Scalar()) : std::optional<std::uint64_t>();
    if (!value || *value < min) {
      return Expected(element, element_path,
                      UIntRange(min, kMaxUInt) + (null_is_zero ? " or null" : ""));
    }
    values.push_back(*value);
  }
  *out = std::move(values);
  return Status::OK();
}

Status Converter::StringList(const Section& section, std::string_view key,
                             std::vector<std::string>* out) {
  const std::optional<Entry> entry = Get(section, key);
  if (!entry) return Status::OK();
  const YAML::Node& node = entry->value;
  const std::string path = JoinPath(section.path, key);
  std::vector<std::string> values;
  if (node.IsScalar()) {
    values.push_back(node.Scalar());
  } else if (node.IsSequence()) {
    for (std::size_t i = 0; i < node.size(); ++i) {
      const YAML::Node element = node[i];
      if (!element.IsScalar()) {
        return Expected(element, path + "[" + std::to_string(i) + "]", "a string");
      }
      values.push_back(element.Scalar());
    }
  } else if (!node.IsNull()) {
    return Expected(*entry, path, "a string or a list of strings");
  }
  *out = std::move(values);
  return Status::OK();
}

Status Converter::ParquetColumns(const Section& section,
                                 std::vector<DatasetConfig::ParquetColumn>* out) {
  const std::optional<Entry> entry = Get(section, "columns");
  if (!entry || entry->value.IsNull()) return Status::OK();
  const YAML::Node& node = entry->value;
  const std::string path = JoinPath(section.path, "columns");
  if (!node.IsSequence()) return Expected(*entry, path, "a list of column maps");
  std::vector<DatasetConfig::ParquetColumn> columns;
  for (std::size_t i = 0; i < node.size(); ++i) {
    const YAML::Node item = node[i];
    const std::string item_path = path + "[" + std::to_string(i) + "]";
    if (!item.IsMap()) return Expected(item, item_path, "a map with name, dtype, size, read");
    DatasetConfig::ParquetColumn column;
    for (auto it = item.begin(); it != item.end(); ++it) {
      const std::string name = KeyText(it->first);
      const YAML::Node value = it->second;
      const std::string value_path = item_path + "." + name;
      if (!value.IsScalar()) return Expected(value, value_path, "a scalar");
      const std::string& text = value.Scalar();
      if (name == "name") {
        if (text.empty() || text.find_first_of(":;,") != std::string::npos) {
          return Expected(value, value_path, "a column name without ':', ';' or ','");
        }
        column.name = text;
      } else if (name == "dtype") {
        if (text.find_first_of(":;") != std::string::npos) {
          return Expected(value, value_path, "a dtype name");
        }
        column.dtype = text;
      } else if (name == "size") {
        const std::optional<std::uint64_t> size = ParseUInt(text);
        if (!size) return Expected(value, value_path, "a non-negative integer");
        column.size = *size;
      } else if (name == "read") {
        const std::optional<bool> read = ParseBool(text);
        if (!read) return Expected(value, value_path, "true or false");
        column.read = *read;
      } else {
        Warn(it->first, value_path,
             "key '" + value_path + "' is not a column key (name, dtype, size, read)");
      }
    }
    if (column.name.empty()) return Expected(item, item_path + ".name", "a column name");
    columns.push_back(std::move(column));
  }
  *out = std::move(columns);
  return Status::OK();
}

Status Converter::StringMap(const Section& section, std::string_view key,
                            std::map<std::string, std::string>* out) {
  const std::optional<Entry> entry = Get(section, key);
  if (!entry) return Status::OK();
  const YAML::Node& node = entry->value;
  const std::string path = JoinPath(section.path, key);
  std::map<std::string, std::string> values;
  if (node.IsMap()) {
    for (auto it = node.begin(); it != node.end(); ++it) {
      const std::string name = KeyText(it->first);
      const std::string value_path = JoinPath(path, name);
      const YAML::Node value = it->second;  // a copy: it-> yields a temporary proxy
      if (value.IsScalar()) {
        values[name] = value.Scalar();
      } else if (value.IsNull()) {
        values[name] = "";
      } else if (value.IsSequence()) {
        // A list of scalars becomes "a,b,c" (plugin options are strings).
        std::string joined;
        for (std::size_t i = 0; i < value.size(); ++i) {
          if (!value[i].IsScalar()) {
            return Expected(value[i], value_path + "[" + std::to_string(i) + "]", "a scalar");
          }
          if (i > 0) joined += ",";
          joined += value[i].Scalar();
        }
        values[name] = joined;
      } else {
        return Expected(value, value_path, "a scalar or a list of scalars");
      }
    }
  } else if (!node.IsNull()) {
    return Expected(*entry, path, "a map of options");
  }
  *out = std::move(values);
  return Status::OK();
}

Status Converter::Time(const Section& section, std::string_view key, std::string_view stdev_key,
                       Distribution* out) {
  const std::string path = JoinPath(section.path, key);
  Distribution distribution;
  bool explicit_type = false;
  bool has_mean = false;
  if (const std::optional<Entry> entry = Get(section, key)) {
    const YAML::Node& node = entry->value;
    if (node.IsScalar()) {
      const std::optional<double> value = ParseDouble(node.Scalar());
      if (!value) return Expected(*entry, path, "a number of seconds or a distribution map");
      distribution.mean = *value;
      has_mean = true;
    } else if (node.IsMap()) {
      IOMIMIC_RETURN_IF_ERROR(TimeMap(node, path, &distribution));
      explicit_type = FindEntry(node, "type").has_value();
      has_mean = FindEntry(node, "mean").has_value();
    } else if (!node.IsNull()) {
      return Expected(*entry, path, "a number of seconds or a distribution map");
    }
  }

  if (const std::optional<Entry> entry = Get(section, stdev_key)) {
    const YAML::Node& node = entry->value;
    const std::string stdev_path = JoinPath(section.path, stdev_key);
    const std::optional<double> stdev =
        node.IsScalar() ? ParseDouble(node.Scalar()) : std::optional<double>();
    if (!stdev || *stdev < 0) return Expected(*entry, stdev_path, "a non-negative number");
    if (explicit_type && distribution.kind != Distribution::Kind::kNormal) {
      Warn(node, stdev_path,
           "'" + stdev_path + "' is ignored: '" + path + "' is a " +
               DistributionTypeName(distribution.kind) + " distribution");
    } else if (!has_mean) {
      return Bad(*entry, stdev_path, "given without " + path);
    } else {
      distribution.kind = Distribution::Kind::kNormal;
      distribution.stdev = *stdev;
    }
  }

  if (distribution.kind == Distribution::Kind::kNormal && distribution.stdev == 0) {
    distribution.kind = Distribution::Kind::kConstant;
  }
  *out = distribution;
  return Status::OK();
}

Status Converter::TimeMap(const YAML::Node& node, const std::string& path, Distribution* out) {
  // Reads one numeric parameter of the map; nullopt when absent.
  auto param = [&](std::string_view name, double min) -> Result<std::optional<double>> {
    const std::optional<YAML::Node> value = Child(node, name);
    if (!value) return std::optional<double>();
    const std::optional<double> number =
        value->IsScalar() ? ParseDouble(value->Scalar()) : std::optional<double>();
    if (!number || *number < min) {
      return Expected(*value, JoinPath(path, name), NumberRange(min, kInfinity));
    }
    return number;
  };
  IOMIMIC_ASSIGN_OR_RETURN(const std::optional<double> mean, param("mean", -kInfinity));
  IOMIMIC_ASSIGN_OR_RETURN(const std::optional<double> stdev, param("stdev", 0));
  IOMIMIC_ASSIGN_OR_RETURN(const std::optional<double> min, param("min", -kInfinity));
  IOMIMIC_ASSIGN_OR_RETURN(const std::optional<double> max, param("max", -kInfinity));
  IOMIMIC_ASSIGN_OR_RETURN(const std::optional<double> shape, param("shape", 0));
  IOMIMIC_ASSIGN_OR_RETURN(const std::optional<double> scale, param("scale", 0));
  IOMIMIC_ASSIGN_OR_RETURN(const std::optional<double> lam, param("lam", 0));

  Distribution result;
  std::string type;
  IOMIMIC_RETURN_IF_ERROR(Choice(Section{node, path}, "type", &type, kDistributionTypes));

  // The parameters `type` reads; the others are reported as unused.
  std::vector<std::string_view> used;
  auto require = [&](std::string_view name, const std::optional<double>& value) -> Status {
    used.push_back(name);
    if (value) return Status::OK();
    return Bad(node, path, "a " + type + " distribution needs '" + std::string(name) + "'");
  };
  if (type.empty()) {
    used = {"mean", "stdev"};
    if (mean) {
      result.mean = *mean;
      if (stdev) {
        result.kind = Distribution::Kind::kNormal;
        result.stdev = *stdev;
      }
    } else if (stdev || min || max || shape || scale || lam) {
      return Bad(node, path,
                 "a distribution needs 'type' (" + JoinWords(kDistributionTypes) +
                     "), or 'mean' with an optional 'stdev'");
    }
  } else if (type == "normal") {
    IOMIMIC_RETURN_IF_ERROR(require("mean", mean));
    used.push_back("stdev");
    result.kind = Distribution::Kind::kNormal;
    result.mean = *mean;
    result.stdev = stdev.value_or(0);
  } else if (type == "uniform") {
    IOMIMIC_RETURN_IF_ERROR(require("min", min));
    IOMIMIC_RETURN_IF_ERROR(require("max", max));
    if (*max < *min) {
      return Bad(*Child(node, "max"), JoinPath(path, "max"),
                 "must not be smaller than min (" + FormatDouble(*min) + ")");
    }
    result.kind = Distribution::Kind::kUniform;
    result.min = *min;
    result.max = *max;
  } else if (type == "gamma") {
    IOMIMIC_RETURN_IF_ERROR(require("shape", shape));
    IOMIMIC_RETURN_IF_ERROR(require("scale", scale));
    result.kind = Distribution::Kind::kGamma;
    result.shape = *shape;
    result.scale = *scale;
  } else if (type == "exponential") {
    IOMIMIC_RETURN_IF_ERROR(require("scale", scale));
    result.kind = Distribution::Kind::kExponential;
    result.scale = *scale;
  } else {  // poisson
    IOMIMIC_RETURN_IF_ERROR(require("lam", lam));
    result.kind = Distribution::Kind::kPoisson;
    result.lam = *lam;
  }

  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string name = KeyText(it->first);
    const auto& known = DistributionKeys();
    if (name == "type" || std::find(known.begin(), known.end(), name) == known.end()) continue;
    if (std::find(used.begin(), used.end(), name) == used.end()) {
      Warn(
          it->first, JoinPath(path, name),
          "key '" + JoinPath(path, name) + "' is not used by a " +
              (type.empty() ? std::string("distribution without 'type'") : type + " distribution"));
    }
  }
  *out = result;
  return Status::OK();
}

Status Converter::ReadModel(const Section& root, ModelConfig* model) {
  IOMIMIC_ASSIGN_OR_RETURN(const Section section, Sub(root, "model"));
  IOMIMIC_RETURN_IF_ERROR(String(section, "name", &model->name));
  IOMIMIC_RETURN_IF_ERROR(String(section, "type", &model->type, /*nullable=*/true));
  IOMIMIC_RETURN_IF_ERROR(UInt(section, "model_size_bytes", &model->model_size_bytes));
  IOMIMIC_RETURN_IF_ERROR(
      Choice(section, "model_datatype", &model->model_datatype, kModelDatatypes));
  IOMIMIC_RETURN_IF_ERROR(
      Choice(section, "optimizer_datatype", &model->optimizer_datatype, kModelDatatypes));
  IOMIMIC_RETURN_IF_ERROR(UIntList(section, "optimization_groups", &model->optimization_groups));
  IOMIMIC_RETURN_IF_ERROR(Int(section, "num_layers", &model->num_layers));
  IOMIMIC_RETURN_IF_ERROR(UIntList(section, "layer_parameters", &model->layer_parameters));

  IOMIMIC_ASSIGN_OR_RETURN(const Section parallelism, Sub(section, "parallelism"));
  IOMIMIC_RETURN_IF_ERROR(Int(parallelism, "tensor", &model->tensor_parallelism, 1));
  IOMIMIC_RETURN_IF_ERROR(Int(parallelism, "pipeline", &model->pipeline_parallelism, 1));
  IOMIMIC_RETURN_IF_ERROR(Int(parallelism, "data", &model->data_parallelism, -1));
  if (model->data_parallelism == 0) {
    return Expected(*Get(parallelism, "data"), JoinPath(parallelism.path, "data"),
                    "-1 (derived from the world size) or a positive integer");
  }
  IOMIMIC_RETURN_IF_ERROR(Int(parallelism, "zero_stage", &model->zero_stage, 0, 3));

  IOMIMIC_ASSIGN_OR_RETURN(const Section transformer, Sub(section, "transformer"));
  IOMIMIC_RETURN_IF_ERROR(UInt(transformer, "vocab_size", &model->vocab_size, 1));
  IOMIMIC_RETURN_IF_ERROR(UInt(transformer, "hidden_size", &model->hidden_size, 1));
  IOMIMIC_RETURN_IF_ERROR(UInt(transformer, "ffn_hidden_size", &model->ffn_hidden_size, 1));
  IOMIMIC_RETURN_IF_ERROR(UInt(transformer, "num_attention_heads", &model->num_attention_heads, 1));
  IOMIMIC_RETURN_IF_ERROR(UInt(transformer, "num_kv_heads", &model->num_kv_heads, 1));
  return Status::OK();
}

Status Converter::ReadWorkflow(const Section& root, WorkflowConfig* workflow) {
  IOMIMIC_ASSIGN_OR_RETURN(const Section section, Sub(root, "workflow"));
  IOMIMIC_RETURN_IF_ERROR(Bool(section, "generate_data", &workflow->generate_data));
  IOMIMIC_RETURN_IF_ERROR(Bool(section, "train", &workflow->train));
  IOMIMIC_RETURN_IF_ERROR(Bool(section, "evaluation", &workflow->evaluation));
  IOMIMIC_RETURN_IF_ERROR(Bool(section, "checkpoint", &workflow->checkpoint));
  IOMIMIC_RETURN_IF_ERROR(Bool(section, "profiling", &workflow->profiling));
  std::string query;  // only meaningful to dlio_benchmark_query
  return String(section, "query", &query, /*nullable=*/true);
}

Status Converter::ReadStorage(const Section& root, StorageConfig* storage, bool* backend_given) {
  IOMIMIC_ASSIGN_OR_RETURN(const Section section, Sub(root, "storage"));
  IOMIMIC_RETURN_IF_ERROR(Choice(section, "storage_type", &storage->storage_type, kStorageTypes));
  IOMIMIC_RETURN_IF_ERROR(String(section, "storage_root", &storage->storage_root));
  IOMIMIC_RETURN_IF_ERROR(StringMap(section, "storage_options", &storage->storage_options));
  // MLCommons' DLIO fork reads storage.storage_library into storage_options.
  std::string library;
  IOMIMIC_RETURN_IF_ERROR(String(section, "storage_library", &library, /*nullable=*/true));
  if (!library.empty()) storage->storage_options["storage_library"] = library;
  *backend_given = Get(section, "backend").has_value();
  IOMIMIC_RETURN_IF_ERROR(PluginName(section, "backend", &storage->backend, false));
  return StringMap(section, "options", &storage->options);
}

Status Converter::ReadDataset(const Section& root, DatasetConfig* dataset) {
  IOMIMIC_ASSIGN_OR_RETURN(const Section section, Sub(root, "dataset"));
  // Formats are plugins: any plugin-like name is accepted here and checked
  // against the loaded plugins later.
  IOMIMIC_RETURN_IF_ERROR(PluginName(section, "format", &dataset->format, false));
  IOMIMIC_RETURN_IF_ERROR(String(section, "data_folder", &dataset->data_folder, false, true));
  dataset->data_folder = StripTrailingSlashes(dataset->data_folder);
  IOMIMIC_RETURN_IF_ERROR(UInt(section, "num_files_train", &dataset->num_files_train));
  IOMIMIC_RETURN_IF_ERROR(UInt(section, "num_files_eval", &dataset->num_files_eval));
  IOMIMIC_RETURN_IF_ERROR(UInt(section, "num_samples_per_file", &dataset->num_samples_per_file, 1));
  IOMIMIC_RETURN_IF_ERROR(Number(section, "record_length_bytes", &dataset->record_length_bytes, 0));
  IOMIMIC_RETURN_IF_ERROR(
      Number(section, "record_length_bytes_stdev", &dataset->record_length_bytes_stdev, 0));
  IOMIMIC_RETURN_IF_ERROR(
      Number(section, "record_length_bytes_resize", &dataset->record_length_bytes_resize, 0));
  IOMIMIC_RETURN_IF_ERROR(UIntList(section, "record_dims", &dataset->record_dims, 1));
  IOMIMIC_RETURN_IF_ERROR(Dtype(section, "record_element_type", &dataset->record_element_type));
  std::uint64_t element_bytes = 0;  // DLIO recomputes it from the element type
  IOMIMIC_RETURN_IF_ERROR(UInt(section, "record_element_bytes", &element_bytes));
  IOMIMIC_RETURN_IF_ERROR(UInt(section, "num_subfolders_train", &dataset->num_subfolders_train));
  IOMIMIC_RETURN_IF_ERROR(UInt(section, "num_subfolders_eval", &dataset->num_subfolders_eval));
  IOMIMIC_RETURN_IF_ERROR(String(section, "file_prefix", &dataset->file_prefix));
  IOMIMIC_RETURN_IF_ERROR(
      Choice(section, "compression", &dataset->compression, kCompressions, /*nullable=*/true));
  std::int64_t level = dataset->compression_level;
  IOMIMIC_RETURN_IF_ERROR(Int(section, "compression_level", &level, 0, 9));
  dataset->compression_level = static_cast<int>(level);
  IOMIMIC_RETURN_IF_ERROR(Bool(section, "enable_chunking", &dataset->enable_chunking));
  IOMIMIC_RETURN_IF_ERROR(UInt(section, "chunk_size", &dataset->chunk_size));
  IOMIMIC_RETURN_IF_ERROR(Bool(section, "keep_files", &dataset->keep_files));
  IOMIMIC_RETURN_IF_ERROR(
      UInt(section, "generation_buffer_size", &dataset->generation_buffer_size, 1));

  IOMIMIC_ASSIGN_OR_RETURN(const Section hdf5, Sub(section, "hdf5"));
  IOMIMIC_RETURN_IF_ERROR(UIntList(hdf5, "chunk_dims", &dataset->hdf5_chunk_dims, 1));
  IOMIMIC_RETURN_IF_ERROR(UInt(hdf5, "num_dset_per_record", &dataset->hdf5_num_dset_per_record, 1));
  // h5py's maxshape takes None for an unlimited dimension; kept as 0.
  IOMIMIC_RETURN_IF_ERROR(
      UIntList(hdf5, "max_shape", &dataset->hdf5_max_shape, 0, /*null_is_zero=*/true));
  IOMIMIC_ASSIGN_OR_RETURN(const Section parquet, Sub(section, "parquet"));
  IOMIMIC_RETURN_IF_ERROR(ParquetColumns(parquet, &dataset->parquet_columns));
  IOMIMIC_RETURN_IF_ERROR(UInt(parquet, "row_group_size", &dataset->parquet_row_group_size, 1));
  IOMIMIC_RETURN_IF_ERROR(String(parquet, "read_mode", &dataset->parquet_read_mode, true));
  IOMIMIC_RETURN_IF_ERROR(String(parquet, "partition_by", &dataset->parquet_partition_by, true));
  IOMIMIC_RETURN_IF_ERROR(
      UInt(parquet, "generation_batch_size", &dataset->parquet_generation_batch_size));
  IOMIMIC_RETURN_IF_ERROR(Bool(parquet, "use_s3dlio_gen", &dataset->parquet_use_s3dlio_gen));
  IOMIMIC_RETURN_IF_ERROR(StringMap(section, "options", &dataset->options));

  if ((dataset->format == "jpeg" || dataset->format == "png") &&
      dataset->record_element_type != "uint8") {
    // DLIO forces uint8 for images (PIL.Image.fromarray needs it).
    if (const std::optional<Entry> entry = Get(section, "record_element_type")) {
      Warn(entry->value, JoinPath(section.path, "record_element_type"),
           "dataset.record_element_type " + dataset->record_element_type +
               " is replaced by uint8 for format " + dataset->format);
    }
    dataset->record_element_type = "uint8";
  }
  return Status::OK();
}

Status Converter::ReadReader(const Section& root, ReaderConfig* reader) {
  IOMIMIC_ASSIGN_OR_RETURN(const Section section, Sub(root, "reader"));
  IOMIMIC_RETURN_IF_ERROR(Choice(section, "data_loader", &reader->data_loader, kDataLoaders));
  reader->data_loader_given = Get(section, "data_loader").has_value();
  IOMIMIC_RETURN_IF_ERROR(UInt(section, "batch_size", &reader->batch_size, 1));
  IOMIMIC_RETURN_IF_ERROR(UInt(section, "batch_size_eval", &reader->batch_size_eval, 1));
  IOMIMIC_RETURN_IF_ERROR(UInt(section, "read_threads", &reader->read_threads));
  IOMIMIC_RETURN_IF_ERROR(UInt(section, "computation_threads", &reader->computation_threads, 1));
  IOMIMIC_RETURN_IF_ERROR(UInt(section, "prefetch_size", &reader->prefetch_size));
  IOMIMIC_RETURN_IF_ERROR(Shuffle(section, "file_shuffle", &reader->file_shuffle));
  IOMIMIC_RETURN_IF_ERROR(Shuffle(section, "sample_shuffle", &reader->sample_shuffle));
  IOMIMIC_RETURN_IF_ERROR(UInt(section, "shuffle_size", &reader->shuffle_size));
  IOMIMIC_RETURN_IF_ERROR(
      UInt(section, "transfer_size", &reader->transfer_size, 0, kMaxUInt, /*nullable=*/true));
  std::string read_type = ReadTypeName(reader->read_type);
  IOMIMIC_RETURN_IF_ERROR(Choice(section, "read_type", &read_type, kReadTypes));
  reader->read_type = read_type == "memory" ? ReadType::kMemory : ReadType::kOnDemand;
  IOMIMIC_RETURN_IF_ERROR(Choice(section, "file_access", &reader->file_access, kFileAccess));
  IOMIMIC_RETURN_IF_ERROR(Bool(section, "dont_use_mmap", &reader->dont_use_mmap));
  IOMIMIC_RETURN_IF_ERROR(Bool(section, "odirect", &reader->odirect));
  IOMIMIC_RETURN_IF_ERROR(Bool(section, "pin_memory", &reader->pin_memory));
  IOMIMIC_RETURN_IF_ERROR(Choice(section, "multiprocessing_context",
                                 &reader->multiprocessing_context, kMultiprocessingContexts));
  IOMIMIC_RETURN_IF_ERROR(
      Time(section, "preprocess_time", "preprocess_time_stdev", &reader->preprocess_time));
  IOMIMIC_RETURN_IF_ERROR(
      UIntList(section, "transformed_record_dims", &reader->transformed_record_dims, 1));
  IOMIMIC_RETURN_IF_ERROR(
      Dtype(section, "transformed_record_element_type", &reader->transformed_record_element_type));
  IOMIMIC_RETURN_IF_ERROR(
      String(section, "reader_classname", &reader->reader_classname, /*nullable=*/true));
  IOMIMIC_RETURN_IF_ERROR(
      String(section, "data_loader_classname", &reader->data_loader_classname, /*nullable=*/true));
  IOMIMIC_RETURN_IF_ERROR(Choice(section, "data_loader_sampler", &reader->data_loader_sampler,
                                 kSamplers, /*nullable=*/true));
  return Bool(section, "decode", &reader->decode);
}

Status Converter::ReadTrain(const Section& root, TrainConfig* train) {
  IOMIMIC_ASSIGN_OR_RETURN(const Section section, Sub(root, "train"));
  IOMIMIC_RETURN_IF_ERROR(UInt(section, "epochs", &train->epochs, 1));
  IOMIMIC_RETURN_IF_ERROR(
      Time(section, "computation_time", "computation_time_stdev", &train->computation_time));
  IOMIMIC_RETURN_IF_ERROR(Int(section, "total_training_steps", &train->total_training_steps));
  IOMIMIC_RETURN_IF_ERROR(Bool(section, "seed_change_epoch", &train->seed_change_epoch));
  // NumPy seeds are 32-bit.
  return UInt(section, "seed", &train->seed, 0, 0xFFFFFFFFu);
}

Status Converter::ReadEvaluation(const Section& root, EvaluationConfig* evaluation) {
  IOMIMIC_ASSIGN_OR_RETURN(const Section section, Sub(root, "evaluation"));
  IOMIMIC_RETURN_IF_ERROR(Time(section, "eval_time", "eval_time_stdev", &evaluation->eval_time));
  IOMIMIC_RETURN_IF_ERROR(UInt(section, "eval_after_epoch", &evaluation->eval_after_epoch));
  return UInt(section, "epochs_between_evals", &evaluation->epochs_between_evals, 1);
}

Status Converter::ReadCheckpoint(const Section& root, CheckpointConfig* checkpoint) {
  IOMIMIC_ASSIGN_OR_RETURN(const Section section, Sub(root, "checkpoint"));
  IOMIMIC_RETURN_IF_ERROR(
      String(section, "checkpoint_folder", &checkpoint->checkpoint_folder, false, true));
  checkpoint->checkpoint_folder = StripTrailingSlashes(checkpoint->checkpoint_folder);
  IOMIMIC_RETURN_IF_ERROR(
      UInt(section, "checkpoint_after_epoch", &checkpoint->checkpoint_after_epoch));
  IOMIMIC_RETURN_IF_ERROR(
      UInt(section, "epochs_between_checkpoints", &checkpoint->epochs_between_checkpoints, 1));
  IOMIMIC_RETURN_IF_ERROR(
      Int(section, "steps_between_checkpoints", &checkpoint->steps_between_checkpoints));
  IOMIMIC_RETURN_IF_ERROR(Choice(section, "type", &checkpoint->type, kCheckpointTypes));
  IOMIMIC_RETURN_IF_ERROR(Choice(section, "mode", &checkpoint->mode, kCheckpointModes));
  IOMIMIC_RETURN_IF_ERROR(Bool(section, "fsync", &checkpoint->fsync));
  IOMIMIC_RETURN_IF_ERROR(
      Number(section, "time_between_checkpoints", &checkpoint->time_between_checkpoints));
  IOMIMIC_RETURN_IF_ERROR(
      Int(section, "num_checkpoints_write", &checkpoint->num_checkpoints_write));
  IOMIMIC_RETURN_IF_ERROR(Int(section, "num_checkpoints_read", &checkpoint->num_checkpoints_read));
  IOMIMIC_RETURN_IF_ERROR(Bool(section, "recovery_rank_shift", &checkpoint->recovery_rank_shift));
  IOMIMIC_RETURN_IF_ERROR(Bool(section, "rank_sync", &checkpoint->rank_sync));
  IOMIMIC_RETURN_IF_ERROR(Bool(section, "randomize_tensor", &checkpoint->randomize_tensor));
  IOMIMIC_RETURN_IF_ERROR(String(section, "checkpoint_mechanism_classname",
                                 &checkpoint->checkpoint_mechanism_classname, /*nullable=*/true));

  // `ksm:` enables KSM by its presence (DLIO); `ksm: false` is read as off.
  if (const std::optional<Entry> entry = Get(section, "ksm")) {
    const YAML::Node& ksm = entry->value;
    const std::string path = JoinPath(section.path, "ksm");
    if (ksm.IsScalar()) {
      const std::optional<bool> enabled = ParseBool(ksm.Scalar());
      if (!enabled) return Expected(*entry, path, "a map of KSM settings or true/false");
      checkpoint->ksm_present = *enabled;
    } else if (ksm.IsMap() || ksm.IsNull()) {
      checkpoint->ksm_present = true;
      IOMIMIC_ASSIGN_OR_RETURN(const Section settings, Sub(section, "ksm"));
      std::uint64_t ignored_id = 0;
      double ignored_percent = 0;
      IOMIMIC_RETURN_IF_ERROR(UInt(settings, "madv_mergeable_id", &ignored_id));
      IOMIMIC_RETURN_IF_ERROR(Number(settings, "high_ram_trigger", &ignored_percent, 0, 100));
      IOMIMIC_RETURN_IF_ERROR(Number(settings, "low_ram_exit", &ignored_percent, 0, 100));
      IOMIMIC_RETURN_IF_ERROR(Number(settings, "await_time", &ignored_percent, 0));
    } else {
      return Expected(*entry, path, "a map of KSM settings or true/false");
    }
  }
  IOMIMIC_RETURN_IF_ERROR(PluginName(section, "backend", &checkpoint->backend, true));
  return StringMap(section, "options", &checkpoint->options);
}

Status Converter::ReadOutput(const Section& root, OutputConfig* output) {
  IOMIMIC_ASSIGN_OR_RETURN(const Section section, Sub(root, "output"));
  IOMIMIC_RETURN_IF_ERROR(String(section, "folder", &output->folder, /*nullable=*/true));
  IOMIMIC_RETURN_IF_ERROR(String(section, "log_file", &output->log_file, false, true));
  IOMIMIC_ASSIGN_OR_RETURN(const Section metric, Sub(section, "metric"));
  IOMIMIC_RETURN_IF_ERROR(UInt(metric, "exclude_start_steps", &output->exclude_start_steps));
  return UInt(metric, "exclude_end_steps", &output->exclude_end_steps);
}

Status Converter::ReadProfiling(const Section& root, ProfilingConfig* profiling) {
  IOMIMIC_ASSIGN_OR_RETURN(const Section section, Sub(root, "profiling"));
  IOMIMIC_RETURN_IF_ERROR(Choice(section, "profiler", &profiling->profiler, kProfilers));
  return StringList(section, "iostat_devices", &profiling->iostat_devices);
}

Status Converter::ReadMetric(const Section& root, MetricConfig* metric) {
  IOMIMIC_ASSIGN_OR_RETURN(const Section section, Sub(root, "metric"));
  return Number(section, "au", &metric->au, 0, 1);
}

Status Converter::ReadIomimic(const Section& root, IomimicConfig* iomimic) {
  IOMIMIC_ASSIGN_OR_RETURN(const Section section, Sub(root, "iomimic"));
  IOMIMIC_RETURN_IF_ERROR(Bool(section, "sample_log", &iomimic->sample_log));
  IOMIMIC_RETURN_IF_ERROR(Bool(section, "checksum", &iomimic->checksum));
  // Bounded so a typo cannot start millions of threads (docs/performance.md).
  IOMIMIC_RETURN_IF_ERROR(UInt(section, "accelerators_per_process",
                               &iomimic->accelerators_per_process, 1, kMaxAcceleratorsPerProcess));
  IOMIMIC_RETURN_IF_ERROR(UInt(section, "max_step_list", &iomimic->max_step_list));
  IOMIMIC_RETURN_IF_ERROR(Bool(section, "huge_pages", &iomimic->huge_pages));
  IOMIMIC_RETURN_IF_ERROR(Choice(section, "content", &iomimic->content, kContentKinds));
  IOMIMIC_RETURN_IF_ERROR(
      UInt(section, "compress_percentage", &iomimic->compress_percentage, 0, 100));
  IOMIMIC_RETURN_IF_ERROR(UInt(section, "dedupe_percentage", &iomimic->dedupe_percentage, 0, 100));
  return Bool(section, "dlio_order", &iomimic->dlio_order);
}

Status Converter::Run(const YAML::Node& root, Config* config) {
  const Section top{root, ""};
  bool storage_backend_given = false;
  IOMIMIC_RETURN_IF_ERROR(ReadModel(top, &config->model));
  IOMIMIC_RETURN_IF_ERROR(Choice(top, "framework", &config->framework, kFrameworks));
  IOMIMIC_RETURN_IF_ERROR(ReadWorkflow(top, &config->workflow));
  IOMIMIC_RETURN_IF_ERROR(ReadStorage(top, &config->storage, &storage_backend_given));
  IOMIMIC_RETURN_IF_ERROR(ReadDataset(top, &config->dataset));
  IOMIMIC_RETURN_IF_ERROR(ReadReader(top, &config->reader));
  IOMIMIC_RETURN_IF_ERROR(ReadTrain(top, &config->train));
  IOMIMIC_RETURN_IF_ERROR(ReadEvaluation(top, &config->evaluation));
  IOMIMIC_RETURN_IF_ERROR(ReadCheckpoint(top, &config->checkpoint));
  IOMIMIC_RETURN_IF_ERROR(ReadOutput(top, &config->output));
  IOMIMIC_RETURN_IF_ERROR(ReadProfiling(top, &config->profiling));
  IOMIMIC_RETURN_IF_ERROR(ReadMetric(top, &config->metric));
  IOMIMIC_RETURN_IF_ERROR(ReadIomimic(top, &config->iomimic));
  if (!unlisted_key_.empty()) {
    return Status::Internal("config: key '" + unlisted_key_ + "' is read but not in the schema");
  }
  // DLIO's O_DIRECT readers become iomimic's O_DIRECT storage back end.
  if (config->reader.odirect && !storage_backend_given) config->storage.backend = "odirect";
  // DLIO parses reader.file_access but never uses it; iomimic maps the
  // shared-file values to the MPI-IO back end: shared and mpio read
  // independently, collective reads each step with one collective call.
  const std::string& access = config->reader.file_access;
  if ((access == "shared" || access == "mpio" || access == "collective") &&
      !storage_backend_given && !config->reader.odirect) {
    config->storage.backend = "mpiio";
    if (config->storage.options.count("mode") == 0) {
      config->storage.options["mode"] = access == "collective" ? "collective" : "independent";
    }
  }
  return Status::OK();
}

void WalkUnknownKeys(const YAML::Node& map, const std::string& path, const Locator& locator,
                     std::vector<Diagnostic>* warnings) {
  for (auto it = map.begin(); it != map.end(); ++it) {
    const std::string child = JoinPath(path, KeyText(it->first));
    const std::optional<KeyKind> kind = LookupKey(child);
    if (!kind) {
      std::string message = "unknown key '" + child + "'";
      if (std::optional<std::string> suggestion = SuggestKey(child)) {
        message += " (did you mean '" + *suggestion + "'?)";
      }
      warnings->push_back(locator.Warning(it->first.Mark(), child, std::move(message)));
      continue;
    }
    const bool has_keys = *kind == KeyKind::kSection || *kind == KeyKind::kDistribution;
    if (has_keys && it->second.IsMap()) WalkUnknownKeys(it->second, child, locator, warnings);
  }
}

}  // namespace

void WarnUnknownKeys(const YAML::Node& root, const Locator& locator,
                     std::vector<Diagnostic>* warnings) {
  if (root.IsMap()) WalkUnknownKeys(root, "", locator, warnings);
}

Status ConvertTree(const YAML::Node& root, const Locator& locator, Config* config,
                   std::vector<Diagnostic>* warnings) {
  return Converter(locator, warnings).Run(root, config);
}

}  // namespace iomimic::config::internal
