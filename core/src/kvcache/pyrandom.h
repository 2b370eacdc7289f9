// CPython's `random` module (Mersenne Twister MT19937 with CPython's seeding
// and integer/float draws), reproduced so that iomimic's KV-cache workflow
// makes the same draws as MLPerf Storage's KV-cache reference for the same
// --seed (docs/kvcache-reference.md). Only what the reference uses is here: seed(int),
// random(), getrandbits(k <= 64), randrange/randint (through _randbelow),
// uniform, choice (an index) and shuffle.
//
// Semantics, as CPython 3.x defines them:
//  - seed(int a): the key is |a| split into 32-bit words, least significant
//    first (one word 0 for a == 0), passed to MT19937's init_by_array.
//  - random(): (a * 2^26 + b) / 2^53 with a = next >> 5 and b = next >> 6.
//  - getrandbits(k): 32-bit words least significant first; the last word is
//    the top k % 32 bits of a draw.
//  - _randbelow(n): k = bit_length(n); draw getrandbits(k) until < n.
//  - randrange(a, b) = a + _randbelow(b - a); randint(a, b) = randrange(a, b + 1).
//  - uniform(a, b) = a + (b - a) * random().
//  - shuffle(x): for i = len-1 down to 1: swap x[i], x[_randbelow(i + 1)].
//
// numpy's legacy generator (np.random.seed) is plan/numpy_random.h.

#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>

#include "plan/mt19937.h"

namespace iomimic::kvcache {

class PyRandom {
 public:
  // random.Random(seed): seeds from |seed|.
  explicit PyRandom(std::int64_t seed = 0) { Seed(seed); }

  // random.seed(seed) for an int seed: init_by_array of |seed|'s 32-bit words.
  void Seed(std::int64_t seed);
  // init_by_array(key): equal to random.seed(sum key[i] << 32*i) when the
  // last word is non-zero (an empty key acts as {0}).
  void SeedWords(std::span<const std::uint32_t> key);

  // The next raw 32-bit output of MT19937 (getrandbits(32)).
  std::uint32_t NextU32() { return mt_.Next(); }
  // random.random(): uniform in [0, 1) with 53 bits.
  double Random() { return mt_.Next53(); }
  // random.getrandbits(k) for 0 <= k <= 64 (k outside that range: 0).
  std::uint64_t GetRandBits(int k);
  // random._randbelow(n) for n >= 1: uniform in [0, n). n == 0 returns 0.
  std::uint64_t RandBelow(std::uint64_t n);
  // random.randrange(start, stop) for start < stop: uniform in [start, stop).
  std::int64_t RandRange(std::int64_t start, std::int64_t stop);
  // random.randint(a, b) for a <= b: uniform in [a, b].
  std::int64_t RandInt(std::int64_t a, std::int64_t b) { return RandRange(a, b + 1); }
  // random.uniform(a, b).
  double Uniform(double a, double b) { return a + (b - a) * Random(); }
  // The index random.choice(seq) picks for a sequence of `size` elements.
  std::size_t ChoiceIndex(std::size_t size) { return static_cast<std::size_t>(RandBelow(size)); }
  // random.shuffle(items) in place.
  template <typename T>
  void Shuffle(std::span<T> items) {
    for (std::size_t i = items.size(); i > 1; --i) {
      std::size_t j = static_cast<std::size_t>(RandBelow(i));
      std::swap(items[i - 1], items[j]);
    }
  }

 private:
  plan::Mt19937 mt_;
};

}  // namespace iomimic::kvcache
