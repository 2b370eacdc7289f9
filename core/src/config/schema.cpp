#include <algorithm>
#include <unordered_map>
#include <utility>
#include <vector>

#include "config/keys_internal.h"
#include "config/schema_internal.h"

namespace iomimic::config::internal {
namespace {

struct KnownKey {
  std::string path;
  KeyKind kind;
};

KeyKind KindOf(ValueType type) {
  switch (type) {
    case ValueType::kPresence:
      return KeyKind::kSection;
    case ValueType::kTime:
      return KeyKind::kDistribution;
    case ValueType::kTextMap:
      return KeyKind::kFreeMap;
    default:
      return KeyKind::kValue;
  }
}

// Every key of the table (config/key_table.h), the sections above them, and
// the _stdev companions of time keys, in the table's order.
const std::vector<KnownKey>& KnownKeys() {
  static const std::vector<KnownKey> keys = [] {
    std::vector<KnownKey> out;
    auto add = [&out](std::string path, KeyKind kind) {
      for (const KnownKey& k : out) {
        if (k.path == path) return;
      }
      out.push_back({std::move(path), kind});
    };
    for (const KeyDef& key : Keys()) {
      for (std::size_t dot = key.path.find('.'); dot != std::string::npos;
           dot = key.path.find('.', dot + 1)) {
        add(key.path.substr(0, dot), KeyKind::kSection);
      }
      add(key.path, KindOf(key.spec.type));
      if (key.spec.type == ValueType::kTime) {
        const std::size_t dot = key.path.rfind('.');
        add(JoinPath(dot == std::string::npos ? "" : key.path.substr(0, dot), key.spec.stdev_key),
            KeyKind::kValue);
      }
    }
    return out;
  }();
  return keys;
}

// DLIO's legacy leaf keys (the table's Legacy()) and their current spelling.
const std::vector<std::pair<std::string_view, std::string_view>>& LegacyKeys() {
  static const std::vector<std::pair<std::string_view, std::string_view>> keys = [] {
    std::vector<std::pair<std::string_view, std::string_view>> out;
    for (const KeyDef& key : Keys()) {
      if (!key.spec.legacy.empty()) out.emplace_back(key.spec.legacy, key.path);
    }
    return out;
  }();
  return keys;
}

std::string_view ParentOf(std::string_view path) {
  const std::size_t dot = path.rfind('.');
  return dot == std::string_view::npos ? std::string_view() : path.substr(0, dot);
}

std::string_view LeafOf(std::string_view path) {
  const std::size_t dot = path.rfind('.');
  return dot == std::string_view::npos ? path : path.substr(dot + 1);
}

// KnownKeys() indexed by path, by parent (the leaves below it, in table
// order) and by leaf (the paths that end in it, in table order). Every
// unknown key of a manifest is looked up here several times, so a hostile
// manifest with thousands of keys costs hash lookups, not table scans.
struct KnownKeyIndex {
  std::unordered_map<std::string_view, const KnownKey*> by_path;
  std::unordered_map<std::string_view, std::vector<std::string_view>> leaves_by_parent;
  std::unordered_map<std::string_view, std::vector<std::string_view>> paths_by_leaf;
};

const KnownKeyIndex& Index() {
  static const KnownKeyIndex index = [] {
    KnownKeyIndex out;
    for (const KnownKey& key : KnownKeys()) {
      out.by_path.emplace(key.path, &key);
      out.leaves_by_parent[ParentOf(key.path)].push_back(LeafOf(key.path));
      out.paths_by_leaf[LeafOf(key.path)].push_back(key.path);
    }
    return out;
  }();
  return index;
}

const KnownKey* FindKnown(std::string_view path) {
  const auto& by_path = Index().by_path;
  auto it = by_path.find(path);
  return it == by_path.end() ? nullptr : it->second;
}

const std::vector<std::string_view>& Lookup(
    const std::unordered_map<std::string_view, std::vector<std::string_view>>& map,
    std::string_view key) {
  static const std::vector<std::string_view> kNone;
  auto it = map.find(key);
  return it == map.end() ? kNone : it->second;
}

// How many edits still count as a likely typo of a word of this length.
std::size_t TypoBudget(std::size_t length) {
  if (length <= 4) return 1;
  if (length <= 9) return 2;
  return 3;
}

}  // namespace

std::optional<KeyKind> LookupKey(std::string_view path) {
  if (const KnownKey* key = FindKnown(path)) return key->kind;
  // Below a free map or a distribution map?
  for (std::string_view parent = ParentOf(path); !parent.empty(); parent = ParentOf(parent)) {
    const KnownKey* key = FindKnown(parent);
    if (key == nullptr) continue;
    if (key->kind == KeyKind::kFreeMap) return KeyKind::kValue;
    if (key->kind == KeyKind::kDistribution && ParentOf(path) == parent) {
      const auto& params = DistributionKeys();
      if (std::find(params.begin(), params.end(), LeafOf(path)) != params.end()) {
        return KeyKind::kValue;
      }
    }
    return std::nullopt;
  }
  return std::nullopt;
}

const std::vector<std::string_view>& DistributionKeys() {
  static const std::vector<std::string_view> kKeys = {"type", "mean",  "stdev", "min",
                                                      "max",  "shape", "scale", "lam"};
  return kKeys;
}

std::string CanonicalKeyPath(std::string_view path) {
  std::string result(path);
  constexpr std::string_view kOldReader = "data_reader";
  if (result == kOldReader || result.starts_with(std::string(kOldReader) + ".")) {
    result.replace(0, kOldReader.size(), "reader");
  }
  for (const auto& [old_path, new_path] : LegacyKeys()) {
    if (result == old_path) return std::string(new_path);
    // A legacy key never has children, but keep "x.y.z" below it consistent.
    if (result.starts_with(std::string(old_path) + ".")) {
      return std::string(new_path) + result.substr(old_path.size());
    }
  }
  return result;
}

std::optional<std::string> SuggestKey(std::string_view path) {
  const std::string_view parent = ParentOf(path);
  const std::string_view leaf = LeafOf(path);
  const KnownKey* parent_key = parent.empty() ? nullptr : FindKnown(parent);
  if (parent_key != nullptr && parent_key->kind == KeyKind::kDistribution) {
    if (auto word = ClosestWord(leaf, DistributionKeys())) return JoinPath(parent, *word);
    return std::nullopt;
  }

  // 1. A close spelling among the siblings.
  const std::vector<std::string_view>& siblings = Lookup(Index().leaves_by_parent, parent);
  if (auto word = ClosestWord(leaf, siblings)) return JoinPath(parent, *word);

  // 2. The same name in another section (dataset.batch_size -> reader.batch_size).
  for (std::string_view other : Lookup(Index().paths_by_leaf, leaf)) {
    if (ParentOf(other) != parent) return std::string(other);
  }

  // 3. A sibling that extends the name (model.model_size -> model.model_size_bytes).
  if (leaf.size() >= 4) {
    for (std::string_view sibling : siblings) {
      if (sibling.size() > leaf.size() && sibling.starts_with(leaf)) {
        return JoinPath(parent, sibling);
      }
    }
  }
  return std::nullopt;
}

std::optional<std::string> ClosestWord(std::string_view word,
                                       const std::vector<std::string_view>& candidates) {
  std::optional<std::string> best;
  std::size_t best_distance = TypoBudget(word.size()) + 1;
  for (std::string_view candidate : candidates) {
    // The distance is at least the difference in length: skip what cannot
    // be within the budget without computing it (a hostile manifest's
    // megabyte-long key costs one comparison per candidate, not len^2).
    const std::size_t longer = std::max(word.size(), candidate.size());
    const std::size_t shorter = std::min(word.size(), candidate.size());
    if (longer - shorter >= best_distance) continue;
    const std::size_t distance = EditDistance(word, candidate);
    if (distance < best_distance && distance < std::max(word.size(), candidate.size())) {
      best_distance = distance;
      best = std::string(candidate);
    }
  }
  return best;
}

std::size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      const std::size_t substitution = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      row[j] = std::min({above + 1, row[j - 1] + 1, substitution});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string JoinPath(std::string_view parent, std::string_view key) {
  if (parent.empty()) return std::string(key);
  std::string path;
  path.reserve(parent.size() + 1 + key.size());
  path.append(parent).append(".").append(key);
  return path;
}

}  // namespace iomimic::config::internal
