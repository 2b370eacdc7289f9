#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <memory>
#include <string_view>
#include <unordered_map>

#include "config/convert_internal.h"
#include "config/declared_internal.h"
#include "config/dlio_compat.h"
#include "config/keys_internal.h"
#include "config/scalar_internal.h"
#include "config/schema_internal.h"

namespace iomimic::config::internal {
namespace {

constexpr std::uint64_t kMaxUInt = std::numeric_limits<std::uint64_t>::max();
constexpr std::int64_t kMinInt = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kMaxInt = std::numeric_limits<std::int64_t>::max();
constexpr double kInfinity = std::numeric_limits<double>::infinity();

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

// A section of the manifest: a map, or a null node when absent or empty.
struct Section {
  YAML::Node node;
  std::string path;
  // The map's entries by key (the first of a repeated key, as FindEntry
  // answers), built when the section is first resolved: every key of the
  // table is looked up in its section, and a scan per lookup would make a
  // manifest with thousands of keys cost keys x table size.
  std::shared_ptr<const std::unordered_map<std::string_view, Entry>> entries = nullptr;
};

// Indexes `section`'s map (see Section::entries).
void IndexEntries(Section* section) {
  if (!section->node.IsMap()) return;
  auto entries = std::make_shared<std::unordered_map<std::string_view, Entry>>();
  for (auto it = section->node.begin(); it != section->node.end(); ++it) {
    if (!it->first.IsScalar()) continue;
    Entry entry{it->first, it->second};
    // The view points into the key node's text, which the entry keeps alive.
    const std::string_view key = entry.key.Scalar();
    entries->emplace(key, std::move(entry));
  }
  section->entries = std::move(entries);
}

class Converter {
 public:
  Converter(const Locator& locator, const PluginVocabulary& plugins,
            std::vector<Diagnostic>* warnings)
      : locator_(locator), plugins_(plugins), warnings_(warnings) {}

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
  // A number parsed by `parse` within [min, max]; out of range, the error
  // says what `range` words. UInt, Int and Number are this with their types.
  template <typename T>
  Status Ranged(const Section& section, std::string_view key, T* out, T min, T max, bool nullable,
                std::optional<T> (*parse)(std::string_view), std::string (*range)(T, T));
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
  // A list of maps whose keys are `fields` (the first one required); values
  // are scalars without ':' or ';' (the separators of its text form).
  Status Records(const Section& section, std::string_view key, const Words& fields,
                 RecordList* out);
  Status StringMap(const Section& section, std::string_view key,
                   std::map<std::string, std::string>* out);
  Status Time(const Section& section, std::string_view key, std::string_view stdev_key,
              Distribution* out);
  Status TimeMap(const YAML::Node& node, const std::string& path, Distribution* out);

  // The section at `path` (a map, or a null node when absent); sections are
  // resolved once and remembered.
  Result<Section> SectionAt(const std::string& path);
  // Reads one key of the table into `config`.
  Status ReadKey(const KeyDef& key, Config* config);
  // The rules that relate keys to each other, after every key is read.
  Status ApplyRules(Config* config);

  const Locator& locator_;
  const PluginVocabulary& plugins_;
  std::vector<Diagnostic>* warnings_;
  std::map<std::string, Section> sections_;
};

std::optional<Entry> Converter::Get(const Section& section, std::string_view key) {
  if (section.entries == nullptr) return FindEntry(section.node, key);
  auto it = section.entries->find(key);
  if (it == section.entries->end()) return std::nullopt;
  return it->second;
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

template <typename T>
Status Converter::Ranged(const Section& section, std::string_view key, T* out, T min, T max,
                         bool nullable, std::optional<T> (*parse)(std::string_view),
                         std::string (*range)(T, T)) {
  const std::optional<Entry> entry = Get(section, key);
  if (!entry || (nullable && entry->value.IsNull())) return Status::OK();
  const YAML::Node& node = entry->value;
  const std::optional<T> value = node.IsScalar() ? parse(node.Scalar()) : std::optional<T>();
  if (!value || *value < min || *value > max) {
    return Expected(*entry, JoinPath(section.path, key), range(min, max));
  }
  *out = *value;
  return Status::OK();
}

Status Converter::UInt(const Section& section, std::string_view key, std::uint64_t* out,
                       std::uint64_t min, std::uint64_t max, bool nullable) {
  return Ranged(section, key, out, min, max, nullable, &ParseUInt, &UIntRange);
}

Status Converter::Int(const Section& section, std::string_view key, std::int64_t* out,
                      std::int64_t min, std::int64_t max) {
  return Ranged(section, key, out, min, max, false, &ParseInt, &IntRange);
}

Status Converter::Number(const Section& section, std::string_view key, double* out, double min,
                         double max) {
  return Ranged(section, key, out, min, max, false, &ParseDouble, &NumberRange);
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
    // names are off/seed/random. An explicit off means off
    // (docs/dlio-compat.md §1.5).
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

Status Converter::Records(const Section& section, std::string_view key, const Words& fields,
                          RecordList* out) {
  const std::optional<Entry> entry = Get(section, key);
  if (!entry || entry->value.IsNull()) return Status::OK();
  const YAML::Node& node = entry->value;
  const std::string path = JoinPath(section.path, key);
  std::string field_list;
  for (std::string_view f : fields) field_list += (field_list.empty() ? "" : ", ") + std::string(f);
  if (!node.IsSequence()) return Expected(*entry, path, "a list of maps of " + field_list);
  RecordList records;
  for (std::size_t i = 0; i < node.size(); ++i) {
    const YAML::Node item = node[i];
    const std::string item_path = path + "[" + std::to_string(i) + "]";
    if (!item.IsMap()) return Expected(item, item_path, "a map of " + field_list);
    std::vector<std::string> record(fields.size());
    for (auto it = item.begin(); it != item.end(); ++it) {
      const std::string name = KeyText(it->first);
      const std::string value_path = item_path + "." + name;
      const auto field = std::find(fields.begin(), fields.end(), name);
      if (field == fields.end()) {
        Warn(it->first, value_path,
             "key '" + value_path + "' is not one of " + field_list + " (ignored)");
        continue;
      }
      if (!it->second.IsScalar()) return Expected(it->second, value_path, "a scalar");
      const std::string& text = it->second.Scalar();
      if (text.find_first_of(":;") != std::string::npos) {
        return Expected(it->second, value_path, "a value without ':' or ';'");
      }
      record[static_cast<std::size_t>(field - fields.begin())] = text;
    }
    if (record[0].empty()) {
      return Expected(item, item_path + "." + std::string(fields[0]),
                      "a " + std::string(fields[0]));
    }
    records.push_back(std::move(record));
  }
  *out = std::move(records);
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
               Distribution::KindName(distribution.kind) + " distribution");
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

Result<Section> Converter::SectionAt(const std::string& path) {
  if (path.empty()) return sections_.at("");
  auto it = sections_.find(path);
  if (it != sections_.end()) return it->second;
  const std::size_t dot = path.rfind('.');
  const std::string parent_path = dot == std::string::npos ? "" : path.substr(0, dot);
  const std::string leaf = dot == std::string::npos ? path : path.substr(dot + 1);
  IOMIMIC_ASSIGN_OR_RETURN(const Section parent, SectionAt(parent_path));
  Section section{YAML::Node(), path};
  const KeyDef* def = FindKeyDef(path);
  const std::optional<Entry> entry = Get(parent, leaf);
  if (def != nullptr && def->spec.type == ValueType::kPresence && entry &&
      entry->value.IsScalar()) {
    // `ksm: true` enables the section without settings.
  } else {
    IOMIMIC_ASSIGN_OR_RETURN(section, Sub(parent, leaf));
  }
  IndexEntries(&section);
  sections_.emplace(path, section);
  return section;
}

Status Converter::ReadKey(const KeyDef& key, Config* config) {
  const std::size_t dot = key.path.rfind('.');
  const std::string parent_path = dot == std::string::npos ? "" : key.path.substr(0, dot);
  const std::string leaf = dot == std::string::npos ? key.path : key.path.substr(dot + 1);
  IOMIMIC_ASSIGN_OR_RETURN(const Section section, SectionAt(parent_path));
  const KeySpec& k = key.spec;
  const std::optional<Entry> entry = Get(section, leaf);
  if (k.given != nullptr) config->reader.*k.given = entry.has_value();
  if (!entry && k.type != ValueType::kTime) return Status::OK();

  // The key's member in `config`, selected by type. Keys without a member
  // (accepted and checked, never used) are read into a scratch value.
  auto field = [&](auto* type_tag) -> decltype(*type_tag) {
    using T = std::remove_pointer_t<decltype(type_tag)>;
    if (auto* get = std::get_if<T& (*)(Config&)>(&key.field)) return (*get)(*config);
    static T scratch;  // parsing is single-threaded
    scratch = T{};
    return scratch;
  };
  switch (k.type) {
    case ValueType::kBool:
      return Bool(section, leaf, &field(static_cast<bool*>(nullptr)));
    case ValueType::kUInt:
      return UInt(section, leaf, &field(static_cast<std::uint64_t*>(nullptr)), k.umin, k.umax,
                  k.nullable);
    case ValueType::kInt: {
      if (std::holds_alternative<int& (*)(Config&)>(key.field)) {
        int& out = field(static_cast<int*>(nullptr));
        std::int64_t value = out;
        IOMIMIC_RETURN_IF_ERROR(Int(section, leaf, &value, k.imin, k.imax));
        out = static_cast<int>(value);
        return Status::OK();
      }
      return Int(section, leaf, &field(static_cast<std::int64_t*>(nullptr)), k.imin, k.imax);
    }
    case ValueType::kNumber:
      return Number(section, leaf, &field(static_cast<double*>(nullptr)), k.dmin, k.dmax);
    case ValueType::kText: {
      std::string& out = field(static_cast<std::string*>(nullptr));
      IOMIMIC_RETURN_IF_ERROR(String(section, leaf, &out, k.nullable, k.non_empty));
      if (k.strip_slashes) out = StripTrailingSlashes(out);
      return Status::OK();
    }
    case ValueType::kChoice:
      return Choice(section, leaf, &field(static_cast<std::string*>(nullptr)), *k.choices,
                    k.nullable);
    case ValueType::kPlugin:
      return PluginName(section, leaf, &field(static_cast<std::string*>(nullptr)), k.allow_empty);
    case ValueType::kDtype:
      return Dtype(section, leaf, &field(static_cast<std::string*>(nullptr)));
    case ValueType::kShuffle:
      return Shuffle(section, leaf, &field(static_cast<ShuffleMode*>(nullptr)));
    case ValueType::kReadType: {
      ReadType& out = field(static_cast<ReadType*>(nullptr));
      std::string name = ReadTypeName(out);
      IOMIMIC_RETURN_IF_ERROR(Choice(section, leaf, &name, *k.choices));
      out = name == "memory" ? ReadType::kMemory : ReadType::kOnDemand;
      return Status::OK();
    }
    case ValueType::kUIntList:
      return UIntList(section, leaf, &field(static_cast<UIntVector*>(nullptr)), k.umin,
                      k.null_is_zero);
    case ValueType::kTextList:
      return StringList(section, leaf, &field(static_cast<std::vector<std::string>*>(nullptr)));
    case ValueType::kTextMap:
      return StringMap(section, leaf, &field(static_cast<TextMap*>(nullptr)));
    case ValueType::kTime:
      return Time(section, leaf, k.stdev_key, &field(static_cast<Distribution*>(nullptr)));
    case ValueType::kRecordList:
      return Records(section, leaf, *k.fields, &field(static_cast<RecordList*>(nullptr)));
    case ValueType::kPresence: {
      // Enabled by its presence (DLIO); `false` is read as off.
      const std::string path = key.path;
      bool& out = field(static_cast<bool*>(nullptr));
      if (entry->value.IsScalar()) {
        const std::optional<bool> enabled = ParseBool(entry->value.Scalar());
        if (!enabled) return Expected(*entry, path, "a map of settings or true/false");
        out = *enabled;
      } else if (entry->value.IsMap() || entry->value.IsNull()) {
        out = true;
      } else {
        return Expected(*entry, path, "a map of settings or true/false");
      }
      return Status::OK();
    }
  }
  return Status::OK();
}

Status Converter::ApplyRules(Config* config) {
  // model.parallelism.data: -1 (derived) or a positive degree.
  if (config->model.data_parallelism == 0) {
    IOMIMIC_ASSIGN_OR_RETURN(const Section parallelism, SectionAt("model.parallelism"));
    return Expected(*Get(parallelism, "data"), "model.parallelism.data",
                    "-1 (derived from the world size) or a positive integer");
  }
  // MLPerf's unet3d files size the checkpoint with model.model_size, which
  // DLIO ignores (its checkpoint is then 10 KiB); iomimic honours what the
  // workload means, unless model_size_bytes says otherwise, and says so.
  {
    IOMIMIC_ASSIGN_OR_RETURN(const Section model, SectionAt("model"));
    const std::optional<Entry> size = Get(model, "model_size");
    if (size && size->value.IsScalar() && !Get(model, "model_size_bytes")) {
      if (const std::optional<std::uint64_t> bytes = ParseUInt(size->value.Scalar())) {
        config->model.model_size_bytes = *bytes;
        Warn(size->key, "model.model_size",
             "model.model_size (" + size->value.Scalar() +
                 ") is used as model.model_size_bytes; DLIO ignores this key and would write "
                 "10240-byte checkpoints");
      }
    }
  }
  // The fork's content generators (dgen, numpy) differ in the bytes only;
  // iomimic's own generator writes them, which the user should know.
  if (!config->dataset.data_gen_method.empty()) {
    IOMIMIC_ASSIGN_OR_RETURN(const Section dataset, SectionAt("dataset"));
    if (const std::optional<Entry> method = Get(dataset, "data_gen_method")) {
      Warn(method->key, "dataset.data_gen_method",
           "dataset.data_gen_method (" + config->dataset.data_gen_method +
               ") selects the DLIO fork's content generator; iomimic's own generator writes the "
               "same file layout (iomimic.content, compress_percentage and dedupe_percentage "
               "control the bytes)");
    }
  }
  // Scrambled content is defined without the percentages (random.h,
  // ContentOptions): a ratio asked with it would silently not be the one
  // written.
  if (config->iomimic.content == "scrambled") {
    IOMIMIC_ASSIGN_OR_RETURN(const Section iomimic, SectionAt("iomimic"));
    const std::pair<const char*, std::uint64_t> percentages[] = {
        {"compress_percentage", config->iomimic.compress_percentage},
        {"dedupe_percentage", config->iomimic.dedupe_percentage}};
    for (const auto& [key, value] : percentages) {
      const std::optional<Entry> entry = Get(iomimic, key);
      if (entry && value != 0) {
        return Bad(*entry, std::string("iomimic.") + key,
                   "does not combine with iomimic.content: scrambled (its sectors are unique "
                   "and its pattern random by definition); use iomimic.content: random for a "
                   "compression or deduplication ratio");
      }
    }
  }
  // MLCommons' DLIO fork reads storage.storage_library into storage_options.
  IOMIMIC_ASSIGN_OR_RETURN(const Section storage, SectionAt("storage"));
  if (const std::optional<Entry> library = Get(storage, "storage_library")) {
    if (library->value.IsScalar() && !library->value.Scalar().empty()) {
      config->storage.storage_options["storage_library"] = library->value.Scalar();
    }
  }
  ObjectStorageKeys object;
  if (const std::optional<Entry> protocol = Get(storage, "protocol");
      protocol && protocol->value.IsScalar()) {
    object.protocol = protocol->value.Scalar();
  }
  if (const std::optional<Entry> uris = Get(storage, "endpoint_uris");
      uris && uris->value.IsSequence()) {
    for (const YAML::Node& uri : uris->value) {
      if (uri.IsScalar()) object.endpoint_uris.push_back(uri.Scalar());
    }
  }
  if (const std::optional<Entry> strategy = Get(storage, "load_balance_strategy");
      strategy && strategy->value.IsScalar()) {
    object.load_balance_strategy = strategy->value.Scalar();
  }
  if (const std::optional<Entry> per_rank = Get(storage, "use_mpi_endpoint_distribution");
      per_rank && per_rank->value.IsScalar()) {
    object.use_mpi_endpoint_distribution = ParseBool(per_rank->value.Scalar()).value_or(false);
  }
  std::string refused_key = "storage";
  const Status selected = SelectDlioBackend(Get(storage, "backend").has_value(), object, plugins_,
                                            config, &refused_key);
  if (!selected.ok()) {
    // At the key that holds the refused value (reader.data_loader_root,
    // moved to dataset.data_folder, keeps its line: Locator::MovedFrom).
    const std::optional<YAML::Node> at = FindPath(sections_.at("").node, refused_key);
    return locator_.Error(at ? at->Mark() : storage.node.Mark(), refused_key, selected.message());
  }
  return Status::OK();
}

Status Converter::Run(const YAML::Node& root, Config* config) {
  Section top{root, ""};
  IndexEntries(&top);
  sections_.emplace("", std::move(top));
  for (const KeyDef& key : Keys()) IOMIMIC_RETURN_IF_ERROR(ReadKey(key, config));
  return ApplyRules(config);
}

void WalkUnknownKeys(const YAML::Node& map, const std::string& path, const Locator& locator,
                     const PluginVocabulary& plugins, std::vector<Diagnostic>* warnings) {
  for (auto it = map.begin(); it != map.end(); ++it) {
    const std::string child = JoinPath(path, KeyText(it->first));
    if (IsDeclaredSection(plugins, child)) continue;  // ReadDeclaredKeys checks it
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
    if (has_keys && it->second.IsMap()) {
      WalkUnknownKeys(it->second, child, locator, plugins, warnings);
    }
  }
}

}  // namespace

void WarnUnknownKeys(const YAML::Node& root, const Locator& locator,
                     const PluginVocabulary& plugins, std::vector<Diagnostic>* warnings) {
  if (root.IsMap()) WalkUnknownKeys(root, "", locator, plugins, warnings);
}

Status ConvertTree(const YAML::Node& root, const Locator& locator, const PluginVocabulary& plugins,
                   Config* config, std::vector<Diagnostic>* warnings) {
  return Converter(locator, plugins, warnings).Run(root, config);
}

}  // namespace iomimic::config::internal
