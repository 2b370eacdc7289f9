#include "kvcache/pyrandom.h"

#include <bit>

namespace iomimic::kvcache {

void PyRandom::SeedWords(std::span<const std::uint32_t> key) { mt_.InitByArray(key); }

void PyRandom::Seed(std::int64_t seed) {
  // |INT64_MIN| does not fit an int64: take the magnitude as unsigned.
  std::uint64_t magnitude =
      seed < 0 ? ~static_cast<std::uint64_t>(seed) + 1 : static_cast<std::uint64_t>(seed);
  std::uint32_t words[2] = {static_cast<std::uint32_t>(magnitude),
                            static_cast<std::uint32_t>(magnitude >> 32)};
  SeedWords(std::span<const std::uint32_t>(words, words[1] != 0 ? 2 : 1));
}

std::uint64_t PyRandom::GetRandBits(int k) {
  if (k <= 0 || k > 64) return 0;
  if (k <= 32) return NextU32() >> (32 - k);
  std::uint64_t low = NextU32();
  std::uint64_t high = NextU32() >> (64 - k);
  return low | (high << 32);
}

std::uint64_t PyRandom::RandBelow(std::uint64_t n) {
  if (n == 0) return 0;
  int k = std::bit_width(n);
  std::uint64_t r = GetRandBits(k);
  while (r >= n) r = GetRandBits(k);
  return r;
}

std::int64_t PyRandom::RandRange(std::int64_t start, std::int64_t stop) {
  if (stop <= start) return start;
  std::uint64_t width = static_cast<std::uint64_t>(stop) - static_cast<std::uint64_t>(start);
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(start) + RandBelow(width));
}

}  // namespace iomimic::kvcache
