// ToYaml: the resolved Config as a DLIO workload manifest.

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "config/config.h"
#include "config/keys_internal.h"
#include "config/scalar_internal.h"

namespace iomimic::config {
namespace {

// Writes key/value pairs to a block-style YAML emitter.
class Writer {
 public:
  explicit Writer(YAML::Emitter* out) : out_(*out) {}

  void BeginSection(std::string_view key) {
    out_ << YAML::Key << std::string(key) << YAML::Value << YAML::BeginMap;
  }
  void EndSection() { out_ << YAML::EndMap; }

  void String(std::string_view key, const std::string& value) {
    out_ << YAML::Key << std::string(key) << YAML::Value;
    WriteString(value);
  }
  // An empty string is DLIO's None.
  void OptionalString(std::string_view key, const std::string& value) {
    if (value.empty()) {
      Null(key);
    } else {
      String(key, value);
    }
  }
  void Null(std::string_view key) {
    out_ << YAML::Key << std::string(key) << YAML::Value << YAML::Null;
  }
  void Bool(std::string_view key, bool value) {
    out_ << YAML::Key << std::string(key) << YAML::Value << (value ? "True" : "False");
  }
  void UInt(std::string_view key, std::uint64_t value) {
    out_ << YAML::Key << std::string(key) << YAML::Value << std::to_string(value);
  }
  void Int(std::string_view key, std::int64_t value) {
    out_ << YAML::Key << std::string(key) << YAML::Value << std::to_string(value);
  }
  void Number(std::string_view key, double value) {
    out_ << YAML::Key << std::string(key) << YAML::Value << internal::FormatDouble(value);
  }
  void UIntList(std::string_view key, const std::vector<std::uint64_t>& values) {
    out_ << YAML::Key << std::string(key) << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (std::uint64_t value : values) out_ << std::to_string(value);
    out_ << YAML::EndSeq;
  }
  void StringList(std::string_view key, const std::vector<std::string>& values) {
    out_ << YAML::Key << std::string(key) << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (const std::string& value : values) WriteString(value);
    out_ << YAML::EndSeq;
  }
  // Records as flow maps of their non-empty fields.
  void RecordList(std::string_view key, const std::vector<std::string_view>& fields,
                  const config::RecordList& records) {
    out_ << YAML::Key << std::string(key) << YAML::Value;
    if (records.empty()) out_ << YAML::Flow;
    out_ << YAML::BeginSeq;
    for (const std::vector<std::string>& record : records) {
      out_ << YAML::Flow << YAML::BeginMap;
      for (std::size_t i = 0; i < fields.size() && i < record.size(); ++i) {
        if (record[i].empty()) continue;
        out_ << YAML::Key << std::string(fields[i]) << YAML::Value;
        WriteString(record[i]);
      }
      out_ << YAML::EndMap;
    }
    out_ << YAML::EndSeq;
  }
  void StringMap(std::string_view key, const std::map<std::string, std::string>& values) {
    out_ << YAML::Key << std::string(key) << YAML::Value;
    if (values.empty()) out_ << YAML::Flow;
    out_ << YAML::BeginMap;
    for (const auto& [name, value] : values) {
      out_ << YAML::Key << name << YAML::Value;
      WriteString(value);
    }
    out_ << YAML::EndMap;
  }
  // A key a format plugin declares, in its type's YAML form.
  void Declared(std::string_view key, const DeclaredValue& value) {
    if (value.type == "string") {
      String(key, value.text);
      return;
    }
    out_ << YAML::Key << std::string(key) << YAML::Value;
    if (value.type == "bool") {
      out_ << (value.text == "true" ? "True" : "False");
    } else if (value.type == "int_list") {
      out_ << YAML::Flow << YAML::BeginSeq;
      for (std::size_t at = 0; at < value.text.size();) {
        const std::size_t comma = std::min(value.text.find(',', at), value.text.size());
        out_ << value.text.substr(at, comma - at);
        at = comma + 1;
      }
      out_ << YAML::EndSeq;
    } else {
      out_ << value.text;
    }
  }
  void Time(std::string_view key, const Distribution& time) {
    if (time.kind == Distribution::Kind::kConstant) {
      Number(key, time.mean);
      return;
    }
    BeginSection(key);
    String("type", Distribution::KindName(time.kind));
    for (const Distribution::Param& p : Distribution::Params(time.kind)) {
      Number(p.name, time.*p.member);
    }
    EndSection();
  }

 private:
  // Quotes strings that a YAML reader would otherwise take for a boolean,
  // null or number (e.g. the shuffle mode "off").
  void WriteString(const std::string& value) {
    if (internal::LooksLikeNonString(value)) out_ << YAML::DoubleQuoted;
    out_ << value;
  }

  YAML::Emitter& out_;
};

// Writes one key's value from `c`.
void WriteKey(const internal::KeyDef& key, std::string_view leaf, const Config& c, Writer& w) {
  const internal::KeySpec& k = key.spec;
  internal::VisitValue(key, c, [&](const auto& v) {
    using V = std::decay_t<decltype(v)>;
    if constexpr (std::is_same_v<V, bool>) {
      if (k.type == internal::ValueType::kPresence) {
        if (v) w.StringMap(leaf, {});  // enabled by its presence
      } else {
        w.Bool(leaf, v);
      }
    } else if constexpr (std::is_same_v<V, std::uint64_t>) {
      if (k.null_when_zero && v == 0) {
        w.Null(leaf);
      } else {
        w.UInt(leaf, v);
      }
    } else if constexpr (std::is_same_v<V, std::int64_t> || std::is_same_v<V, int>) {
      w.Int(leaf, v);
    } else if constexpr (std::is_same_v<V, double>) {
      w.Number(leaf, v);
    } else if constexpr (std::is_same_v<V, std::string>) {
      if (k.omit_when_empty && v.empty()) {
        // Left out: DLIO reads a null here as an invalid enum value.
      } else if (k.null_when_empty) {
        w.OptionalString(leaf, v);
      } else {
        w.String(leaf, v);
      }
    } else if constexpr (std::is_same_v<V, UIntVector>) {
      w.UIntList(leaf, v);
    } else if constexpr (std::is_same_v<V, std::vector<std::string>>) {
      w.StringList(leaf, v);
    } else if constexpr (std::is_same_v<V, TextMap>) {
      w.StringMap(leaf, v);
    } else if constexpr (std::is_same_v<V, Distribution>) {
      w.Time(leaf, v);
    } else if constexpr (std::is_same_v<V, ShuffleMode>) {
      w.String(leaf, ShuffleModeName(v));
    } else if constexpr (std::is_same_v<V, ReadType>) {
      w.String(leaf, ReadTypeName(v));
    } else if constexpr (std::is_same_v<V, RecordList>) {
      w.RecordList(leaf, *k.fields, v);
    }
  });
}

// The keys format plugins declare (dataset.<format>.<key>), one section per
// format, at the end of the open `dataset:` section.
void WriteDeclaredKeys(const Config& c, Writer& w) {
  std::string format;  // the section open, "" for none
  for (const auto& [name, value] : c.dataset.declared_keys) {
    const std::size_t dot = name.find('.');
    if (name.substr(0, dot) != format) {
      if (!format.empty()) w.EndSection();
      format = name.substr(0, dot);
      w.BeginSection(format);
    }
    w.Declared(name.substr(dot + 1), value);
  }
  if (!format.empty()) w.EndSection();
}

// Every key of the table with a Config member, in the table's order, nested
// into its sections; the keys format plugins declare close `dataset:`.
void WriteConfig(const Config& c, Writer& w) {
  std::vector<std::string> open;  // the sections currently open, outermost first
  const auto close = [&]() {
    if (open.size() == 1 && open.front() == "dataset") WriteDeclaredKeys(c, w);
    w.EndSection();
    open.pop_back();
  };
  for (const internal::KeyDef& key : internal::Keys()) {
    if (std::holds_alternative<std::monostate>(key.field)) continue;
    if (key.spec.given != nullptr && !(c.reader.*key.spec.given)) continue;
    std::vector<std::string> parts;
    for (std::size_t at = 0;;) {
      const std::size_t dot = key.path.find('.', at);
      parts.push_back(key.path.substr(at, dot - at));
      if (dot == std::string::npos) break;
      at = dot + 1;
    }
    const std::size_t depth = parts.size() - 1;  // sections above the key
    std::size_t common = 0;
    while (common < open.size() && common < depth && open[common] == parts[common]) ++common;
    while (open.size() > common) close();
    while (open.size() < depth) {
      w.BeginSection(parts[open.size()]);
      open.push_back(parts[open.size()]);
    }
    WriteKey(key, parts.back(), c, w);
  }
  while (!open.empty()) close();
}

// yaml-cpp places a comment at the end of the previous line, so the note on
// an unnamed data loader is added as its own line after `reader:`.
void NoteUnnamedDataLoader(const Config& config, bool workload_root, std::string* text) {
  if (config.reader.data_loader_given) return;
  const std::string indent = workload_root ? "  " : "";
  const std::string header = indent + "reader:\n";
  std::size_t at = text->starts_with(header) ? 0 : text->find("\n" + header);
  if (at == std::string::npos) return;
  if (at != 0) ++at;
  text->insert(at + header.size(),
               indent + "  # data_loader: " + config.reader.data_loader +
                   " (not named in the manifest: DLIO's default, not checked against the "
                   "framework)\n");
}

}  // namespace

bool IsCredentialKey(std::string_view key) {
  std::string lower(key);
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  for (std::string_view word : {"secret", "password", "token", "access_key"}) {
    if (lower.find(word) != std::string::npos) return true;
  }
  return false;
}

TextMap Redacted(const TextMap& options) {
  TextMap out = options;
  for (auto& [key, value] : out) {
    if (IsCredentialKey(key)) value = kRedacted;
  }
  return out;
}

LoadedManifest Redacted(const LoadedManifest& manifest) {
  LoadedManifest out = manifest;
  Config& c = out.config;
  for (TextMap* map : {&c.storage.storage_options, &c.storage.options, &c.checkpoint.options,
                       &c.dataset.options}) {
    *map = Redacted(*map);
  }
  // key=value overrides (with Hydra's +, ++, ~ prefixes): the key's last
  // dotted part decides.
  for (std::string& o : out.raw_overrides) {
    const std::size_t eq = o.find('=');
    if (eq == std::string::npos) continue;
    std::string_view key(o.data(), eq);
    const std::size_t dot = key.rfind('.');
    if (dot != std::string_view::npos) key.remove_prefix(dot + 1);
    if (IsCredentialKey(key)) o = o.substr(0, eq + 1) + kRedacted;
  }
  return out;
}

std::string ToYaml(const Config& config, bool workload_root) {
  YAML::Emitter out;
  out.SetIndent(2);
  out << YAML::BeginMap;
  if (workload_root) out << YAML::Key << "workload" << YAML::Value << YAML::BeginMap;
  Writer writer(&out);
  WriteConfig(config, writer);
  if (workload_root) out << YAML::EndMap;
  out << YAML::EndMap;
  std::string text = out.c_str();
  text += "\n";
  NoteUnnamedDataLoader(config, workload_root, &text);
  return text;
}

}  // namespace iomimic::config
