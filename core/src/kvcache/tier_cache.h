// The KV-cache workflow's tier cache: where each entry lives and what moves
// when a tier is full (docs/kvcache.md, "Tiers and eviction"). No I/O: every
// decision comes back as a list of operations (TierOp) that the engine
// performs, in order, then reports done (Complete).
//
// Three tiers, fastest first: the accelerator (emulated device memory), the
// host memory and the storage. A tier with capacity 0 is absent (the
// storage tier is always present). The rules are the reference's
// (kv_cache/cache.py, MultiTierCache._ensure_space_in_tier), with its
// ratios in CachePolicy:
//   - a new entry goes to the first tier that makes room for it;
//   - a tier other than the last refuses an entry larger than
//     large_entry_ratio of its capacity, fills up to target_ratio of its
//     capacity, and refuses (without evicting) an entry larger than
//     sparse_entry_ratio x target when it holds less than sparse_ratio of
//     its capacity; any tier takes an entry while it holds less than
//     nearly_empty_ratio of its capacity;
//   - making room evicts the tier's least recently used entry: one tier
//     down (a demotion: read here, write there, which first makes room
//     there the same way), or, from the last tier, a deletion;
//   - when no tier makes room the entry goes to the storage tier over its
//     capacity (counted as forced).
// Entries being written, moved or read are never chosen for eviction; a
// reader waits while its entry moves. Thread-safe.
#pragma once

#include <array>
#include <condition_variable>
#include <cstdint>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "iomimic/status.h"

namespace iomimic::kvcache {

enum class Tier : std::uint8_t { kAccelerator = 0, kHost = 1, kStorage = 2 };
inline constexpr int kTierCount = 3;
inline constexpr std::uint64_t kUnlimited = std::numeric_limits<std::uint64_t>::max();

// "gpu", "cpu", "storage": the names results use (the reference's keys).
std::string_view TierName(Tier tier);

// One operation the engine performs for a decision of the cache.
struct TierOp {
  enum class Kind : std::uint8_t {
    kDelete,  // remove `key` from tier `from` (the last tier)
    kDemote,  // read `key` from `from`, write it to `to`, free it in `from`
    kWrite,   // write the new entry `key` to `to`
  };
  Kind kind = Kind::kWrite;
  std::string key;
  std::uint64_t bytes = 0;
  Tier from = Tier::kStorage;
  Tier to = Tier::kStorage;
  friend bool operator==(const TierOp&, const TierOp&) = default;
};

struct CachePolicy {
  double target_ratio = 0.8;
  double large_entry_ratio = 0.95;
  double nearly_empty_ratio = 0.05;
  double sparse_ratio = 0.2;
  double sparse_entry_ratio = 0.5;
  // Most tiers a placement's demotions cascade through below the first.
  int max_depth = 10;
  // Making room in a tier evicts at most min(max_evictions,
  // max(min_evictions, entries in the tier + 100)) entries; then the last
  // tier takes the entry over its capacity (counted as forced) and another
  // tier refuses it.
  std::uint64_t max_evictions = 5000;
  std::uint64_t min_evictions = 1000;
};

struct CacheCounters {
  std::uint64_t demotions[kTierCount] = {};  // entries moved out of each tier
  std::uint64_t deletions = 0;               // entries deleted from the last tier
  std::uint64_t forced = 0;                  // entries placed over the storage's capacity
};

class TierCache {
 public:
  // `capacity` in bytes per tier (Tier order); 0 = absent; the storage's
  // must not be 0 (kUnlimited for no limit).
  explicit TierCache(std::array<std::uint64_t, kTierCount> capacity, CachePolicy policy = {});

  // InvalidArgument naming the tier (its manifest key) when a present
  // memory tier is smaller than `smallest` (no entry could ever live there)
  // or the storage tier smaller than `largest` (an entry it must hold).
  Status CheckEntrySizes(std::uint64_t smallest, std::uint64_t largest) const;

  // Places a new entry of `bytes`. Appends the operations to perform to
  // `ops` (deletions and demotions making room, then the kWrite) and
  // returns true, the entry being busy until Complete; returns false and
  // appends nothing when `key` already exists (the reference keeps it).
  // Waits while an entry of the same key is being deleted.
  bool Insert(const std::string& key, std::uint64_t bytes, std::vector<TierOp>* ops);

  // Marks the operations done: written and moved entries become readable,
  // deleted ones disappear. Wakes waiting readers.
  void Complete(const std::vector<TierOp>& ops);

  // Drops `key` (its write failed): its space is freed.
  void Forget(const std::string& key);

  struct Hit {
    Tier tier = Tier::kStorage;
    std::uint64_t bytes = 0;
  };
  // A read of `key`: waits while it moves, then pins it where it is (it is
  // not evicted until Release) and makes it the most recently used. nullopt
  // when the cache does not hold it (a miss).
  std::optional<Hit> Acquire(const std::string& key);
  void Release(const std::string& key);

  // For results and tests.
  std::optional<Tier> Where(const std::string& key) const;
  std::uint64_t used(Tier tier) const;
  std::uint64_t capacity(Tier tier) const { return capacity_[static_cast<int>(tier)]; }
  std::size_t entries(Tier tier) const;
  CacheCounters counters() const;

 private:
  enum class State : std::uint8_t { kReady, kBusy, kDeleting };
  struct Entry {
    Tier tier = Tier::kStorage;
    std::uint64_t bytes = 0;
    std::uint64_t tick = 0;  // last use: the LRU order
    int pins = 0;
    State state = State::kBusy;
  };
  using Map = std::unordered_map<std::string, Entry>;

  bool Present(int tier) const { return tier == kTierCount - 1 || capacity_[tier] > 0; }
  int NextTier(int tier) const;
  bool EnsureSpace(int tier, std::uint64_t bytes, int depth, std::vector<TierOp>* ops);
  Map::iterator LeastRecent(int tier);
  void Touch(Map::iterator it);

  std::array<std::uint64_t, kTierCount> capacity_;
  CachePolicy policy_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  Map entries_;
  std::array<std::set<std::pair<std::uint64_t, const std::string*>>, kTierCount> lru_;
  std::array<std::uint64_t, kTierCount> used_{};
  std::array<std::size_t, kTierCount> count_{};
  std::uint64_t clock_ = 0;
  CacheCounters counters_;
};

}  // namespace iomimic::kvcache
