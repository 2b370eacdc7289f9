// The manifest vocabulary the installed plugins bring (config::PluginVocabulary):
// the keys a format plugin declares below dataset.<format>. (docs/plugins.md,
// "Declared dataset keys"). They are typed and checked like the key table's
// keys (config/key_table.h), but come from the plugins' descriptors, so a new
// format plugin adds keys with no core edit.

#pragma once

#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>
#include <string_view>

#include "config/config.h"
#include "config/tree_internal.h"
#include "iomimic/status.h"

namespace iomimic::config::internal {

// The types a declared key may have.
inline constexpr std::string_view kDeclaredTypes[] = {"int", "double", "bool", "string",
                                                      "int_list"};

// Whether `type` is one of kDeclaredTypes.
bool IsDeclaredType(std::string_view type);

// `node`'s value as a key of type `type` receives it (DeclaredValue::text),
// or nullopt when it is not of that type. int: a decimal integer; double: a
// finite number; bool: YAML's true and false words; string: any scalar;
// int_list: a list of integers (a single integer is a list of one).
std::optional<std::string> DeclaredText(std::string_view type, const YAML::Node& node);

// The same for a default value written as the plugin receives values
// (IomimicOptionSpec::default_value): nullopt when it is not of type `type`.
std::optional<std::string> DeclaredDefaultText(std::string_view type, std::string_view text);

// What a value of `type` must be, for messages: "an integer", "a list of
// integers", ...
std::string DeclaredTypeDescription(std::string_view type);

// Whether dataset.<format> (given as `path`) holds keys a format plugin of
// `plugins` declares. A section of the key table (dataset.hdf5,
// dataset.parquet) never does: its keys are the table's.
bool IsDeclaredSection(const PluginVocabulary& plugins, std::string_view path);

// Reads every dataset.<format>.<key> of `root` that an installed format
// plugin declares into config->dataset.declared_keys, then the defaults of
// dataset.format's keys the manifest leaves out. A value of the wrong type,
// or a key its plugin does not declare, is one error at the key
// ("<file>:<line>:<col>: error: dataset.<format>.<key>: ...").
Status ReadDeclaredKeys(const YAML::Node& root, const Locator& locator,
                        const PluginVocabulary& plugins, Config* config);

// The "Keys of format plugins" part of docs/manifest.md: how a format plugin
// declares keys, and a table of those `plugins` declare (none: no table).
std::string DeclaredKeysMarkdown(const PluginVocabulary& plugins);

}  // namespace iomimic::config::internal
