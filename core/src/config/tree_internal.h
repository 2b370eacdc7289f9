// The manifest as a YAML tree before it is typed: where each value came from
// (file position or command-line override), lookups that never modify the
// tree, and the rewrites done before typing (duplicate keys, the optional
// `workload:` root, legacy spellings).

#pragma once

#include <yaml-cpp/yaml.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/config.h"
#include "iomimic/status.h"

namespace iomimic::config::internal {

// Knows the manifest's display name and which paths were set by overrides,
// and formats messages about a value accordingly.
class Locator {
 public:
  explicit Locator(std::string file) : file_(std::move(file)) {}

  const std::string& file() const { return file_; }

  // Records that `path` and everything below it now come from override `text`.
  void SetOverride(const std::string& path, const std::string& text);
  // Forgets any override origin of `path` and below (the key was deleted).
  void ClearOverride(const std::string& path);
  // The override that set `path` or one of its parents, or nullptr.
  const std::string* OverrideFor(std::string_view path) const;

  // InvalidArgument "<file>:<line>:<col>: error: <path>: <what>", or
  // "override '<text>': <path>: <what>" when an override set `path`. The
  // position is left out when `mark` is a null mark.
  Status Error(const YAML::Mark& mark, std::string_view path, std::string_view what) const;
  // InvalidArgument "<file>:<line>:<col>: error: <what>" (no key involved).
  Status FileError(const YAML::Mark& mark, std::string_view what) const;
  // A warning about the key at `path` that starts at `mark`.
  Diagnostic Warning(const YAML::Mark& mark, std::string_view path, std::string message) const;

 private:
  std::string file_;
  std::map<std::string, std::string, std::less<>> overrides_;  // path -> override text
};

// A key and its value inside a map.
struct Entry {
  YAML::Node key;
  YAML::Node value;
};

// The entry of `map` whose key is `key`, or nullopt (also when `map` is not
// a map). Never inserts anything, unlike yaml-cpp's non-const operator[].
std::optional<Entry> FindEntry(const YAML::Node& map, std::string_view key);
std::optional<YAML::Node> Child(const YAML::Node& map, std::string_view key);
// The node at dotted `path` below `root`, or nullopt.
std::optional<YAML::Node> FindPath(const YAML::Node& root, std::string_view path);

// A value for messages: 'text' for a scalar, else null, a map or a list.
std::string Describe(const YAML::Node& node);
// The text of a map key (scalar keys; others are described).
std::string KeyText(const YAML::Node& key);

// Fails on a map that holds the same key twice (OmegaConf refuses those).
Status CheckDuplicateKeys(const YAML::Node& node, const std::string& path, const Locator& locator);

// A saved, Hydra-style config has everything under `workload:`; returns that
// map when `root` has it and no known section of its own, else `root`. Other
// top-level keys next to `workload:` are reported in `warnings`.
YAML::Node UnwrapWorkloadRoot(const YAML::Node& root, const Locator& locator,
                              std::vector<Diagnostic>* warnings);

// Rewrites DLIO's legacy spellings (docs/dlio-compat.md §1.4) in place to the current ones:
// `data_reader:` -> `reader:`, scalar `model: <name>` -> `model.name`,
// dataset.record_length{,_stdev,_resize} -> record_length_bytes{,_stdev,_resize},
// checkpoint.model_size -> model.model_size_bytes. Fails when both spellings
// are given. Notes each rewrite in `warnings` unless it is null.
Status CanonicalizeLegacy(YAML::Node root, const Locator& locator,
                          std::vector<Diagnostic>* warnings);

}  // namespace iomimic::config::internal
