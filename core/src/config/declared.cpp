// Keys that format plugins declare (dataset.<format>.<key>), and the
// description of the schemes storage plugins serve (config/declared_internal.h;
// docs/plugins.md, "URL schemes" and "Declared dataset keys").

#include <algorithm>
#include <cctype>
#include <map>
#include <sstream>
#include <vector>

#include "config/declared_internal.h"
#include "config/keys_internal.h"
#include "config/scalar_internal.h"
#include "config/schema_internal.h"

namespace iomimic::config {

std::string PluginVocabulary::DescribeSchemes() const {
  // By scheme, whatever the search path's order.
  std::vector<const SchemeEntry*> sorted;
  for (const SchemeEntry& entry : schemes) sorted.push_back(&entry);
  std::sort(sorted.begin(), sorted.end(),
            [](const SchemeEntry* a, const SchemeEntry* b) { return a->scheme < b->scheme; });
  std::string text;
  for (const SchemeEntry* entry : sorted) {
    text += (text.empty() ? "" : ", ") + entry->scheme + " (" + entry->backend + ")";
  }
  return text.empty() ? "none" : text;
}

Result<DeclaredKey> CheckDeclaredKey(DeclaredKey key) {
  const auto word_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  };
  if (key.name.empty() || !std::all_of(key.name.begin(), key.name.end(), word_char)) {
    return Status::InvalidArgument("dataset key '" + key.name +
                                   "': a name is letters, digits and '_'");
  }
  if (key.type == "float") key.type = "double";
  if (!internal::IsDeclaredType(key.type)) {
    return Status::InvalidArgument("dataset key '" + key.name + "' has type '" + key.type +
                                   "' (int, double or float, bool, string or int_list)");
  }
  std::optional<std::string> text = internal::DeclaredDefaultText(key.type, key.default_value);
  if (!text) {
    return Status::InvalidArgument("dataset key '" + key.name + "': its default '" +
                                   key.default_value + "' is not " +
                                   internal::DeclaredTypeDescription(key.type));
  }
  key.default_value = std::move(*text);
  return key;
}

}  // namespace iomimic::config

namespace iomimic::config::internal {
namespace {

// "1,2,3" from integers given as `texts`; nullopt when one is not an integer.
std::optional<std::string> JoinIntegers(const std::vector<std::string>& texts) {
  std::string joined;
  for (const std::string& text : texts) {
    const std::optional<std::int64_t> value = ParseInt(Trim(text));
    if (!value) return std::nullopt;
    joined += (joined.empty() ? "" : ",") + std::to_string(*value);
  }
  return joined;
}

// The declared keys of `format`, in declaration order.
std::vector<const DeclaredKey*> KeysOf(const PluginVocabulary& plugins, std::string_view format) {
  std::vector<const DeclaredKey*> keys;
  for (const DeclaredKey& key : plugins.dataset_keys) {
    if (key.format == format) keys.push_back(&key);
  }
  return keys;
}

// Why `name` is not a key of `format`, with its keys and the closest one.
std::string UnknownKey(std::string_view format, const std::string& name,
                       const std::vector<const DeclaredKey*>& keys) {
  std::string list;
  std::vector<std::string_view> names;
  for (const DeclaredKey* key : keys) {
    list += (list.empty() ? "" : ", ") + key->name;
    names.push_back(key->name);
  }
  std::string what = "unknown key: format plugin '" + std::string(format) + "' declares " + list;
  if (std::optional<std::string> close = ClosestWord(name, names)) {
    what += " (did you mean '" + *close + "'?)";
  }
  return what;
}

// Reads the map `section` (dataset.<format>) into `out`.
Status ReadSection(const YAML::Node& section, const std::string& format, const Locator& locator,
                   const PluginVocabulary& plugins, std::map<std::string, DeclaredValue>* out) {
  const std::string path = "dataset." + format;
  if (section.IsNull()) return Status::OK();
  if (!section.IsMap()) {
    return locator.Error(section.Mark(), path,
                         "expected a map of the keys format plugin '" + format +
                             "' declares, got " + Describe(section));
  }
  const std::vector<const DeclaredKey*> keys = KeysOf(plugins, format);
  for (auto it = section.begin(); it != section.end(); ++it) {
    const std::string name = KeyText(it->first);
    const std::string key_path = path + "." + name;
    const auto declared = std::find_if(keys.begin(), keys.end(),
                                       [&](const DeclaredKey* k) { return k->name == name; });
    if (declared == keys.end()) {
      return locator.Error(it->first.Mark(), key_path, UnknownKey(format, name, keys));
    }
    const std::string& type = (*declared)->type;
    std::optional<std::string> text = DeclaredText(type, it->second);
    if (!text) {
      const YAML::Mark mark = it->second.IsNull() ? it->first.Mark() : it->second.Mark();
      return locator.Error(mark, key_path,
                           "expected " + DeclaredTypeDescription(type) + " (format plugin '" +
                               format + "' declares it " + type + "), got " + Describe(it->second));
    }
    (*out)[format + "." + name] = DeclaredValue{type, std::move(*text)};
  }
  return Status::OK();
}

std::string MarkdownTypeName(std::string_view type) {
  if (type == "int") return "integer";
  if (type == "double") return "number";
  if (type == "int_list") return "list of integers";
  return std::string(type);
}

// A default as the manifest would write it.
std::string MarkdownDefault(const DeclaredKey& key) {
  if (key.type == "int_list") return "[" + key.default_value + "]";
  if (key.type == "bool") return key.default_value == "true" ? "True" : "False";
  if (key.type == "string" && key.default_value.empty()) return "\"\"";
  return key.default_value;
}

}  // namespace

bool IsDeclaredType(std::string_view type) {
  return std::find(std::begin(kDeclaredTypes), std::end(kDeclaredTypes), type) !=
         std::end(kDeclaredTypes);
}

std::optional<std::string> DeclaredText(std::string_view type, const YAML::Node& node) {
  if (node.IsNull()) {
    // No value: an empty string or list; other types need one.
    if (type == "string" || type == "int_list") return std::string();
    return std::nullopt;
  }
  if (type == "int_list") {
    if (node.IsScalar()) return JoinIntegers({node.Scalar()});
    if (!node.IsSequence()) return std::nullopt;
    std::vector<std::string> texts;
    for (std::size_t i = 0; i < node.size(); ++i) {
      if (!node[i].IsScalar()) return std::nullopt;
      texts.push_back(node[i].Scalar());
    }
    return JoinIntegers(texts);
  }
  if (!node.IsScalar()) return std::nullopt;
  return type == "string" ? std::optional<std::string>(node.Scalar())
                          : DeclaredDefaultText(type, node.Scalar());
}

std::optional<std::string> DeclaredDefaultText(std::string_view type, std::string_view text) {
  if (type == "string") return std::string(text);
  if (type == "int") {
    const std::optional<std::int64_t> value = ParseInt(Trim(text));
    return value ? std::optional<std::string>(std::to_string(*value)) : std::nullopt;
  }
  if (type == "double") {
    const std::optional<double> value = ParseDouble(Trim(text));
    return value ? std::optional<std::string>(FormatDouble(*value)) : std::nullopt;
  }
  if (type == "bool") {
    const std::optional<bool> value = ParseBool(Trim(text));
    return value ? std::optional<std::string>(*value ? "true" : "false") : std::nullopt;
  }
  if (type == "int_list") {
    std::vector<std::string> texts;
    if (!Trim(text).empty()) {
      std::stringstream items{std::string(text)};
      for (std::string item; std::getline(items, item, ',');) texts.push_back(item);
    }
    return JoinIntegers(texts);
  }
  return std::nullopt;
}

std::string DeclaredTypeDescription(std::string_view type) {
  if (type == "int") return "an integer";
  if (type == "double") return "a number";
  if (type == "bool") return "true or false";
  if (type == "int_list") return "a list of integers";
  return "a string";
}

bool IsDeclaredSection(const PluginVocabulary& plugins, std::string_view path) {
  constexpr std::string_view kDataset = "dataset.";
  if (!path.starts_with(kDataset)) return false;
  const std::string_view format = path.substr(kDataset.size());
  if (format.find('.') != std::string_view::npos || LookupKey(path).has_value()) return false;
  return std::any_of(plugins.dataset_keys.begin(), plugins.dataset_keys.end(),
                     [&](const DeclaredKey& key) { return key.format == format; });
}

Status ReadDeclaredKeys(const YAML::Node& root, const Locator& locator,
                        const PluginVocabulary& plugins, Config* config) {
  std::map<std::string, DeclaredValue>& out = config->dataset.declared_keys;
  if (plugins.dataset_keys.empty()) return Status::OK();
  if (const std::optional<YAML::Node> dataset = Child(root, "dataset");
      dataset && dataset->IsMap()) {
    for (auto it = dataset->begin(); it != dataset->end(); ++it) {
      const std::string format = KeyText(it->first);
      if (!IsDeclaredSection(plugins, "dataset." + format)) continue;
      IOMIMIC_RETURN_IF_ERROR(ReadSection(it->second, format, locator, plugins, &out));
    }
  }
  // The selected format's keys that the manifest leaves out: their defaults,
  // so that `iomimic config` and the results show every effective value.
  if (!IsDeclaredSection(plugins, "dataset." + config->dataset.format)) return Status::OK();
  for (const DeclaredKey* key : KeysOf(plugins, config->dataset.format)) {
    out.emplace(key->format + "." + key->name, DeclaredValue{key->type, key->default_value});
  }
  return Status::OK();
}

std::string DeclaredKeysMarkdown(const PluginVocabulary& plugins) {
  std::ostringstream md;
  md << "\n## Keys of format plugins\n\n"
        "A format plugin may declare keys of its own below `dataset.<format>.`, each with a\n"
        "type (integer, number, bool, string, list of integers), a default and one line\n"
        "of documentation, without a change to the key table (docs/plugins.md, \"Declared\n"
        "dataset keys\"). A manifest's values are checked against the declared type; a\n"
        "wrong value, or a key the plugin does not declare, is an error naming the\n"
        "file and line. The plugin receives each value as its option and FileSpec\n"
        "parameter `<format>.<key>`. `iomimic config --keys` lists here the keys of the\n"
        "format plugins it finds (`--plugin-dir` adds folders).\n";
  std::vector<const DeclaredKey*> keys;
  for (const DeclaredKey& key : plugins.dataset_keys) keys.push_back(&key);
  if (keys.empty()) {
    md << "\nNone of the installed format plugins declares keys.\n";
    return md.str();
  }
  md << "\n| key | type | default | from | meaning |\n|---|---|---|---|---|\n";
  for (const DeclaredKey* key : keys) {
    md << "| `dataset." << key->format << "." << key->name << "` | " << MarkdownTypeName(key->type)
       << " | `" << EscapeMarkdown(MarkdownDefault(*key)) << "` | format plugin `" << key->format
       << "` | " << EscapeMarkdown(key->doc) << " |\n";
  }
  return md.str();
}

}  // namespace iomimic::config::internal
