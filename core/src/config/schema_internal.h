// The set of manifest keys iomimic knows (docs/dlio-compat.md §1.3 and
// iomimic's own keys), DLIO's legacy spellings (§1.4), and "did you mean"
// suggestions for unknown keys. Paths are dotted and relative to the
// workload root, e.g. "dataset.hdf5.chunk_dims".

#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace iomimic::config::internal {

enum class KeyKind {
  kSection,       // a map of known keys
  kValue,         // a scalar or a list
  kDistribution,  // a number or a distribution map (docs/dlio-compat.md §1.7)
  kFreeMap,       // a map whose keys are free (storage_options, plugin options)
};

// The kind of the known key at `path`, or nullopt when the key is unknown.
// Keys below a kFreeMap are known (as kValue); so are the parameters of a
// distribution map (type, mean, stdev, ...).
std::optional<KeyKind> LookupKey(std::string_view path);

// The parameter names a distribution map may hold.
const std::vector<std::string_view>& DistributionKeys();

// `path` with legacy spellings replaced by the current ones:
// data_reader.* -> reader.*, dataset.record_length -> dataset.record_length_bytes
// (also _stdev, _resize), checkpoint.model_size -> model.model_size_bytes.
std::string CanonicalKeyPath(std::string_view path);

// The known key an unknown `path` most likely meant (a close spelling in the
// same section, the same name in another section, or a known key that
// extends the name), or nullopt when none is close.
std::optional<std::string> SuggestKey(std::string_view path);

// The closest of `candidates` to `word`, when reasonably close.
std::optional<std::string> ClosestWord(std::string_view word,
                                       const std::vector<std::string_view>& candidates);

// Levenshtein distance (insertions, deletions, substitutions).
std::size_t EditDistance(std::string_view a, std::string_view b);

// "a.b" + "c" -> "a.b.c"; "" + "c" -> "c".
std::string JoinPath(std::string_view parent, std::string_view key);

}  // namespace iomimic::config::internal
