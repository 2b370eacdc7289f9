// The manifest as a YAML tree before it is typed: where each value came from
// (file position or command-line override), lookups that never modify the
// tree, and the rewrites done before typing (duplicate keys, the optional
// `workload:` root, legacy spellings).

#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
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
  // Records that the value now at `path` was written at `from` (MLPerf v3's
  // reader.data_loader_root, read as dataset.data_folder): errors about
  // `path` then name `from` as written, "<from> (read as <path>)".
  void SetMovedFrom(const std::string& path, const std::string& from);

  // InvalidArgument "<file>:<line>:<col>: error: <path>: <what>", or
  // "override '<text>': <path>: <what>" when an override set `path`. The
  // position is left out when `mark` is a null mark.
  Status Error(const YAML::Mark& mark, std::string_view path, std::string_view what) const;
  // InvalidArgument "<file>:<line>:<col>: error: <what>" (no key involved).
  Status FileError(const YAML::Mark& mark, std::string_view what) const;
  // Where the value of `path` at `mark` comes from: "<file>:<line>:<col>"
  // ("<file>" without a position), or "override '<text>'".
  std::string Where(const YAML::Mark& mark, std::string_view path) const;
  // A warning about the key at `path` that starts at `mark`.
  Diagnostic Warning(const YAML::Mark& mark, std::string_view path, std::string message) const;

 private:
  std::string file_;
  std::map<std::string, std::string, std::less<>> overrides_;  // path -> override text
  std::map<std::string, std::string, std::less<>> moved_;      // path -> as written
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

// Bounds on a YAML document before it is loaded as a tree (issue 13,
// defect 3). yaml-cpp shares the node of an anchor with each of its aliases,
// so a few bytes of aliases of aliases ("billion laughs") make a tree whose
// walk visits billions of nodes, and an alias inside its own anchor
// (`a: &a [*a]`) makes a cycle. The largest manifest in workloads/ has a few
// hundred nodes, at most 4 levels deep; the bounds leave room for long lists.
inline constexpr std::uint64_t kMaxYamlNodes = 100000;  // counting each alias expanded
inline constexpr int kMaxYamlDepth = 64;                // maps and lists nested

// Why a YAML document may not be loaded, and where.
struct YamlBoundsError {
  YAML::Mark mark;
  std::string what;
};
// Scans the first document of `text` with yaml-cpp's event parser (no tree)
// and returns an error for an alias that refers to its own anchor, more than
// kMaxYamlNodes nodes with aliases expanded, or nesting deeper than
// kMaxYamlDepth. Malformed YAML is left to YAML::Load to report (nullopt).
std::optional<YamlBoundsError> CheckYamlBounds(const std::string& text);

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

// MLPerf Storage v3.0's fork also reads its storage keys from `reader:`
// (storage_type, protocol, storage_library, storage_root, storage_options,
// endpoint_uris, load_balance_strategy, use_mpi_endpoint_distribution) and
// its training data from reader.data_loader_root. Moves them to storage.*,
// dataset.data_folder (replacing it) and checkpoint.checkpoint_folder, so
// one set of rules reads them; the same key in both places with different
// values is an error naming the reader's line. Each moved key is recorded
// in `locator` (SetMovedFrom), so later errors name the key as written.
Status MoveReaderStorageKeys(YAML::Node root, Locator* locator);

// Records where every value of `root` (each key that is not a map) was
// set, by path, into `origins` (Config::origins, for config::ErrorAt).
void RecordKeyOrigins(const YAML::Node& root, const Locator& locator,
                      std::map<std::string, std::string, std::less<>>* origins);

// Resolves OmegaConf interpolations in every scalar below `root` (the
// workload root, after overrides) in place, as Hydra does when DLIO loads a
// workload (docs/dlio-compat.md, "Interpolation"): ${a.b} names a key from the
// workload root (a leading `workload.` is accepted), ${.b} one in the same
// map and ${..b} one a level up; ${oc.env:VAR} and ${oc.env:VAR,default}
// (and OmegaConf 2.0's ${env:...}) read the environment; \${ is a literal
// "${". A value that is exactly one interpolation takes the referenced value
// whole; one inside a text is replaced by the value's text. A missing key
// or variable, an unknown resolver or a cycle is an error naming file:line.
// ${NAME} that names no key but a set environment variable (MLPerf's
// ${AWS_REGION}) takes the variable's value, with a warning.
Status ResolveInterpolations(YAML::Node root, const Locator& locator,
                             std::vector<Diagnostic>* warnings);

}  // namespace iomimic::config::internal
