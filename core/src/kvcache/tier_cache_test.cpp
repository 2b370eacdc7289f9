#include "kvcache/tier_cache.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace iomimic::kvcache {
namespace {

constexpr Tier G = Tier::kAccelerator;
constexpr Tier C = Tier::kHost;
constexpr Tier S = Tier::kStorage;

TierOp Write(const char* key, std::uint64_t bytes, Tier to) {
  return {TierOp::Kind::kWrite, key, bytes, to, to};
}
TierOp Demote(const char* key, std::uint64_t bytes, Tier from, Tier to) {
  return {TierOp::Kind::kDemote, key, bytes, from, to};
}
TierOp Delete(const char* key, std::uint64_t bytes) {
  return {TierOp::Kind::kDelete, key, bytes, S, S};
}

// Inserts, checks the decisions, and completes them as the engine would.
void Expect(TierCache& cache, const char* key, std::uint64_t bytes,
            const std::vector<TierOp>& expected) {
  std::vector<TierOp> ops;
  REQUIRE(cache.Insert(key, bytes, &ops));
  CHECK(ops == expected);
  cache.Complete(ops);
}

void Access(TierCache& cache, const char* key, Tier where) {
  std::optional<TierCache::Hit> hit = cache.Acquire(key);
  REQUIRE(hit.has_value());
  CHECK(hit->tier == where);
  cache.Release(key);
}

}  // namespace

// THE eviction test: three tiers of 100, 200 and 300 bytes with the
// reference's ratios (gpu fills to 80, refuses entries over 95; cpu fills to
// 160, refuses over 190; storage fills to 300). Every decision hand-computed.
TEST_CASE("kvcache tier cache: LRU waterfall through three tiers, hand-computed") {
  TierCache cache({100, 200, 300});
  Expect(cache, "A", 50, {Write("A", 50, G)});  // gpu 50
  Expect(cache, "B", 30, {Write("B", 30, G)});  // gpu 80 = target
  // gpu 80 + 40 > 80: A (least recent) goes down to cpu.
  Expect(cache, "C", 40, {Demote("A", 50, G, C), Write("C", 40, G)});
  Access(cache, "A", C);  // A and then B become the most recent
  Access(cache, "B", G);
  // gpu 70 + 60: C (least recent on gpu) then B go down; D alone on gpu.
  Expect(cache, "D", 60, {Demote("C", 40, G, C), Demote("B", 30, G, C), Write("D", 60, G)});
  CHECK(cache.used(C) == 120);
  // gpu evicts D; cpu (120 + 60 > 160) first moves its least recent, C, to
  // storage.
  Expect(cache, "E", 70, {Demote("C", 40, C, S), Demote("D", 60, G, C), Write("E", 70, G)});
  // F (90 <= 95): E down to cpu, which sends A (least recent there) to
  // storage; the empty gpu (< 5 % used) takes 90 over its 80 target.
  Expect(cache, "F", 90, {Demote("A", 50, C, S), Demote("E", 70, G, C), Write("F", 90, G)});
  CHECK(cache.used(G) == 90);
  CHECK(cache.used(C) == 160);
  CHECK(cache.used(S) == 90);
  // G is too large for gpu (> 95) and cpu (> 190): straight to storage.
  Expect(cache, "G", 200, {Write("G", 200, S)});
  // H (100) skips gpu, lands on cpu, which must send B, D and E down; the
  // full storage deletes its least recent ready entries: C, A, then G (B
  // and D, being moved, are not candidates).
  Expect(cache, "H", 100,
         {Delete("C", 40), Demote("B", 30, C, S), Delete("A", 50), Demote("D", 60, C, S),
          Delete("G", 200), Demote("E", 70, C, S), Write("H", 100, C)});
  CHECK(cache.used(G) == 90);
  CHECK(cache.used(C) == 100);
  CHECK(cache.used(S) == 160);
  CHECK(cache.entries(S) == 3);
  CHECK_FALSE(cache.Acquire("C").has_value());  // deleted: a miss
  CHECK_FALSE(cache.Acquire("G").has_value());
  Access(cache, "B", S);
  Access(cache, "F", G);
  const CacheCounters n = cache.counters();
  CHECK(n.demotions[0] == 5);
  CHECK(n.demotions[1] == 5);
  CHECK(n.deletions == 3);
  CHECK(n.forced == 0);
  // An existing key is kept, as the reference's allocate_cache does.
  std::vector<TierOp> ops;
  CHECK_FALSE(cache.Insert("F", 10, &ops));
  CHECK(ops.empty());
}

TEST_CASE("kvcache tier cache: pinned and busy entries are not evicted") {
  TierCache cache({0, 0, 100});  // storage only
  Expect(cache, "A", 40, {Write("A", 40, S)});
  Expect(cache, "B", 40, {Write("B", 40, S)});
  REQUIRE(cache.Acquire("A").has_value());  // a reader holds A
  Expect(cache, "C", 40, {Delete("B", 40), Write("C", 40, S)});
  cache.Release("A");
  std::vector<TierOp> ops;
  REQUIRE(cache.Insert("D", 40, &ops));  // not completed: D stays busy
  CHECK(ops == std::vector<TierOp>{Delete("A", 40), Write("D", 40, S)});
  cache.Complete({ops[0]});
  std::vector<TierOp> more;
  REQUIRE(cache.Insert("E", 40, &more));  // C is the only candidate
  CHECK(more == std::vector<TierOp>{Delete("C", 40), Write("E", 40, S)});
  cache.Complete(more);
  // Nothing left to evict but busy D: the storage takes E2 over capacity.
  std::vector<TierOp> forced;
  REQUIRE(cache.Insert("E2", 40, &forced));
  CHECK(forced == std::vector<TierOp>{Delete("E", 40), Write("E2", 40, S)});
  cache.Complete(forced);
  cache.Forget("D");  // its write failed
  CHECK(cache.used(S) == 40);
}

TEST_CASE("kvcache tier cache: a tier smaller than an entry is an error naming it") {
  TierCache cache({0, 1000, 5000});
  CHECK(cache.CheckEntrySizes(100, 5000).ok());
  Status s = cache.CheckEntrySizes(2000, 5000);
  REQUIRE_FALSE(s.ok());
  CHECK(s.message().find("kv_cache.cpu_mem_gb") != std::string::npos);
  s = cache.CheckEntrySizes(100, 6000);
  REQUIRE_FALSE(s.ok());
  CHECK(s.message().find("kv_cache.storage_capacity_gb") != std::string::npos);
  CHECK(s.message().find("6000") != std::string::npos);
  CHECK(TierCache({0, 0, 0}).CheckEntrySizes(1, 1ULL << 60).ok());  // unlimited storage
}

// The reference's eviction budget (its eviction.max_evictions_hard_cap and
// max_evictions_min, kv_cache.eviction_max_per_call / _min_per_call): after
// that many evictions a tier other than the last refuses the entry and the
// last takes it over its capacity.
TEST_CASE("kvcache tier cache: the eviction budget of the reference's config") {
  CachePolicy policy;
  policy.max_evictions = 1;
  policy.min_evictions = 0;
  TierCache cpu({0, 100, 1000}, policy);
  Expect(cpu, "A", 40, {Write("A", 40, C)});
  Expect(cpu, "B", 40, {Write("B", 40, C)});  // cpu 80 = target
  // cpu 80 + 80 > 80 takes two evictions, one allowed: cpu refuses it (A
  // has gone down already), storage takes it.
  Expect(cpu, "C", 80, {Demote("A", 40, C, S), Write("C", 80, S)});
  TierCache storage({0, 0, 100}, policy);
  Expect(storage, "A", 40, {Write("A", 40, S)});
  Expect(storage, "B", 40, {Write("B", 40, S)});
  // 80 + 70 > 100: one deletion (A), then over the capacity.
  Expect(storage, "C", 70, {Delete("A", 40), Write("C", 70, S)});
  CHECK(storage.used(S) == 110);
  CHECK(storage.counters().forced == 1);
  // The default budget evicts as many as it takes.
  TierCache unbounded({0, 0, 100});
  Expect(unbounded, "A", 40, {Write("A", 40, S)});
  Expect(unbounded, "B", 40, {Write("B", 40, S)});
  Expect(unbounded, "C", 70, {Delete("A", 40), Delete("B", 40), Write("C", 70, S)});
  CHECK(unbounded.counters().forced == 0);
}

}  // namespace iomimic::kvcache
