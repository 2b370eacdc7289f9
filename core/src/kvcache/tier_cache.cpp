#include "kvcache/tier_cache.h"

#include <algorithm>
#include <iterator>

#include "iomimic/enum_names.h"

namespace iomimic::kvcache {
namespace {

std::string_view TierKey(int tier) {
  static constexpr std::string_view kKeys[] = {"kv_cache.gpu_mem_gb", "kv_cache.cpu_mem_gb",
                                               "kv_cache.storage_capacity_gb"};
  return kKeys[tier];
}

std::string Bytes(std::uint64_t n) { return std::to_string(n) + " bytes"; }

}  // namespace

std::string_view TierName(Tier tier) {
  static constexpr std::string_view kNames[] = {"gpu", "cpu", "storage"};
  static_assert(std::size(kNames) == kTierCount);
  return EnumName(tier, kNames, "storage");
}

TierCache::TierCache(std::array<std::uint64_t, kTierCount> capacity, CachePolicy policy)
    : capacity_(capacity), policy_(policy) {
  if (capacity_[kTierCount - 1] == 0) capacity_[kTierCount - 1] = kUnlimited;
}

Status TierCache::CheckEntrySizes(std::uint64_t smallest, std::uint64_t largest) const {
  for (int t = 0; t < kTierCount; ++t) {
    if (!Present(t)) continue;
    const bool last = t == kTierCount - 1;
    const std::uint64_t need = last ? largest : smallest;
    if (capacity_[t] >= need) continue;
    return Status::InvalidArgument(
        std::string(TierKey(t)) + ": the " + std::string(TierName(static_cast<Tier>(t))) +
        " tier (" + Bytes(capacity_[t]) + ") is smaller than " +
        (last ? "the largest entry the run can write (" : "the smallest entry (") + Bytes(need) +
        (last ? "); raise it or lower the users' context_max" : "); raise it or set it to 0"));
  }
  return Status::OK();
}

int TierCache::NextTier(int tier) const {
  for (int t = tier + 1; t < kTierCount; ++t) {
    if (Present(t)) return t;
  }
  return -1;
}

TierCache::Map::iterator TierCache::LeastRecent(int tier) {
  for (const auto& [tick, key] : lru_[tier]) {
    auto it = entries_.find(*key);
    if (it->second.state == State::kReady && it->second.pins == 0) return it;
  }
  return entries_.end();
}

void TierCache::Touch(Map::iterator it) {
  Entry& e = it->second;
  const int t = static_cast<int>(e.tier);
  // The set's node is moved, not freed and made again: a touch allocates
  // nothing.
  auto node = lru_[t].extract({e.tick, &it->first});
  e.tick = ++clock_;
  if (node.empty()) {
    lru_[t].insert({e.tick, &it->first});
    return;
  }
  node.value() = {e.tick, &it->first};
  lru_[t].insert(std::move(node));
}

bool TierCache::EnsureSpace(int tier, std::uint64_t bytes, int depth, std::vector<TierOp>* ops) {
  if (depth > policy_.max_depth) return false;
  const int next = NextTier(tier);
  const bool last = next < 0;
  const double limit = static_cast<double>(capacity_[tier]);
  if (!last && static_cast<double>(bytes) > limit * policy_.large_entry_ratio) return false;
  const double target = last ? limit : limit * policy_.target_ratio;
  if (last && capacity_[tier] == kUnlimited) {
    used_[tier] += bytes;
    return true;
  }
  bool first = true;
  const std::uint64_t budget = std::min<std::uint64_t>(
      policy_.max_evictions, std::max<std::uint64_t>(policy_.min_evictions, count_[tier] + 100));
  for (std::uint64_t evicted = 0;; ++evicted) {
    // The budget spent: the reference stops without looking again.
    if (evicted >= budget) {
      if (!last) return false;
      used_[tier] += bytes;  // over the capacity, as the reference places it
      ++counters_.forced;
      return true;
    }
    const double used = static_cast<double>(used_[tier]);
    if (used + static_cast<double>(bytes) <= target || used < limit * policy_.nearly_empty_ratio) {
      used_[tier] += bytes;
      return true;
    }
    if (first && !last &&
        used<limit * policy_.sparse_ratio&& static_cast<double>(bytes)> target *
            policy_.sparse_entry_ratio) {
      return false;
    }
    first = false;
    Map::iterator victim = LeastRecent(tier);
    if (victim == entries_.end()) {
      if (!last) return false;
      used_[tier] += bytes;  // the reference's forced placement in the last tier
      ++counters_.forced;
      return true;
    }
    Entry& v = victim->second;
    if (!last && !EnsureSpace(next, v.bytes, depth + 1, ops)) return false;
    auto node = lru_[tier].extract({v.tick, &victim->first});
    used_[tier] -= v.bytes;
    --count_[tier];
    TierOp op;
    op.key = victim->first;
    op.bytes = v.bytes;
    op.from = static_cast<Tier>(tier);
    if (last) {
      op.kind = TierOp::Kind::kDelete;
      op.to = op.from;
      v.state = State::kDeleting;
      ++counters_.deletions;
    } else {
      op.kind = TierOp::Kind::kDemote;
      op.to = static_cast<Tier>(next);
      v.tier = op.to;
      v.state = State::kBusy;
      lru_[next].insert(std::move(node));  // same tick: its place in the order
      ++count_[next];
      ++counters_.demotions[tier];
    }
    ops->push_back(std::move(op));
  }
}

bool TierCache::Insert(const std::string& key, std::uint64_t bytes, std::vector<TierOp>* ops) {
  std::unique_lock<std::mutex> lock(mutex_);
  Map::iterator it;
  for (;;) {
    it = entries_.find(key);
    if (it == entries_.end()) break;
    if (it->second.state != State::kDeleting) return false;
    changed_.wait(lock);
  }
  int placed = -1;
  for (int t = 0; t < kTierCount && placed < 0; ++t) {
    if (Present(t) && EnsureSpace(t, bytes, 0, ops)) placed = t;
  }
  if (placed < 0) {
    placed = kTierCount - 1;
    used_[placed] += bytes;
    ++counters_.forced;
  }
  it = entries_.emplace(key, Entry{}).first;
  Entry& e = it->second;
  e.tier = static_cast<Tier>(placed);
  e.bytes = bytes;
  e.tick = ++clock_;
  e.state = State::kBusy;
  lru_[placed].insert({e.tick, &it->first});
  ++count_[placed];
  TierOp op;
  op.kind = TierOp::Kind::kWrite;
  op.key = key;
  op.bytes = bytes;
  op.from = op.to = e.tier;
  ops->push_back(std::move(op));
  return true;
}

void TierCache::Complete(const std::vector<TierOp>& ops) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const TierOp& op : ops) {
      auto it = entries_.find(op.key);
      if (it == entries_.end()) continue;
      if (op.kind == TierOp::Kind::kDelete) {
        if (it->second.state == State::kDeleting) entries_.erase(it);
      } else if (it->second.state == State::kBusy) {
        it->second.state = State::kReady;
      }
    }
  }
  changed_.notify_all();
}

void TierCache::Forget(const std::string& key) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(key);
    if (it == entries_.end()) return;
    const int t = static_cast<int>(it->second.tier);
    if (it->second.state != State::kDeleting) {
      lru_[t].erase({it->second.tick, &it->first});
      used_[t] -= it->second.bytes;
      --count_[t];
    }
    entries_.erase(it);
  }
  changed_.notify_all();
}

std::optional<TierCache::Hit> TierCache::Acquire(const std::string& key) {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    auto it = entries_.find(key);
    if (it == entries_.end() || it->second.state == State::kDeleting) return std::nullopt;
    if (it->second.state == State::kReady) {
      ++it->second.pins;
      Touch(it);
      return Hit{it->second.tier, it->second.bytes};
    }
    changed_.wait(lock);
  }
}

void TierCache::Release(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(key);
  if (it != entries_.end() && it->second.pins > 0) --it->second.pins;
}

std::optional<Tier> TierCache::Where(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(key);
  if (it == entries_.end() || it->second.state == State::kDeleting) return std::nullopt;
  return it->second.tier;
}

std::uint64_t TierCache::used(Tier tier) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return used_[static_cast<int>(tier)];
}

std::size_t TierCache::entries(Tier tier) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return count_[static_cast<int>(tier)];
}

CacheCounters TierCache::counters() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return counters_;
}

}  // namespace iomimic::kvcache
