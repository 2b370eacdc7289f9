#include "kvcache/chunked.h"

#include <doctest/doctest.h>

#include <vector>

namespace iomimic::kvcache {
namespace {

using Kind = ChunkLru::Move::Kind;

// The moves as (kind, key, from) triples, for comparison.
struct M {
  Kind kind;
  std::uint64_t key;
  int from;
  friend bool operator==(const M&, const M&) = default;
};
std::vector<M> Triples(const std::vector<ChunkLru::Move>& moves) {
  std::vector<M> out;
  for (const ChunkLru::Move& m : moves) out.push_back({m.kind, m.key, m.from});
  return out;
}

}  // namespace

TEST_CASE("chunk lru: four tiers demote down the chain and delete at the bottom") {
  // gpu 100, cpu 200, storage 300, object 400 bytes; chunks of 100.
  ChunkLru lru({100, 200, 300, 400});
  std::vector<ChunkLru::Move> moves;
  CHECK(lru.Insert(1, 100, &moves) == 0);
  CHECK(moves.empty());
  CHECK(lru.Insert(2, 100, &moves) == 0);
  CHECK(Triples(moves) == std::vector<M>{{Kind::kDemote, 1, 0}});
  moves.clear();
  CHECK(lru.Insert(3, 100, &moves) == 0);  // 2 to cpu (which holds 1 and 2)
  CHECK(Triples(moves) == std::vector<M>{{Kind::kDemote, 2, 0}});
  moves.clear();
  CHECK(lru.Insert(4, 100, &moves) == 0);  // 3 to cpu, whose oldest (1) goes to storage
  CHECK(Triples(moves) == std::vector<M>{{Kind::kDemote, 3, 0}, {Kind::kDemote, 1, 1}});
  CHECK(lru.Touch(1) == 2);
  CHECK(lru.Touch(4) == 0);
  // Fill to the bottom: 10 chunks fit (1 + 2 + 3 + 4); the eleventh deletes the oldest.
  for (std::uint64_t k = 5; k <= 10; ++k) {
    moves.clear();
    lru.Insert(k, 100, &moves);
  }
  for (int level = 0; level < 4; ++level) CHECK(lru.used(level) == 100 * (level + 1));
  moves.clear();
  lru.Insert(11, 100, &moves);
  REQUIRE(!moves.empty());
  CHECK(moves.back().kind == Kind::kDelete);
  CHECK(moves.back().from == 3);
  CHECK_FALSE(lru.Touch(moves.back().key).has_value());
}

TEST_CASE("chunk lru: promotion moves a lower hit to the top tier") {
  ChunkLru lru({100, kUnlimited});
  std::vector<ChunkLru::Move> moves;
  lru.Insert(1, 100, &moves);
  lru.Insert(2, 100, &moves);  // 1 demoted to storage
  moves.clear();
  CHECK(lru.Touch(1) == 1);
  CHECK(lru.Promote(1, &moves));  // 2 makes room, then 1 is on top
  CHECK(Triples(moves) == std::vector<M>{{Kind::kDemote, 2, 0}});
  CHECK(lru.Touch(1) == 0);
  CHECK_FALSE(lru.Promote(1, &moves));  // already on top
  ChunkLru big({50, kUnlimited});
  big.Insert(7, 100, &moves);  // too large for the top: placed on storage
  CHECK(big.Touch(7) == 1);
  CHECK_FALSE(big.Promote(7, &moves));
}

TEST_CASE("chunk lru: one unlimited tier never moves anything, and shared chunks are adopted") {
  ChunkLru lru({kUnlimited});
  std::vector<ChunkLru::Move> moves;
  for (std::uint64_t k = 0; k < 1000; ++k) CHECK(lru.Insert(k, 1 << 20, &moves) == 0);
  CHECK(moves.empty());
  lru.Adopt(5000, 10, 0);
  CHECK(lru.Touch(5000) == 0);
  CHECK(lru.levels() == 1);
}

TEST_CASE("chunk tiers and hit sources have their results' names") {
  CHECK(std::string(ChunkTierName(0)) == "gpu");
  CHECK(std::string(ChunkTierName(3)) == "object");
  CHECK(std::string(HitSourceName(3)) == "other_host");
  CHECK(std::string(HitSourceName(4)) == "earlier_run");
}

}  // namespace iomimic::kvcache
