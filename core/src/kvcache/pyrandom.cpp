#include "kvcache/pyrandom.h"

#include <algorithm>
#include <bit>

namespace iomimic::kvcache {

namespace {
constexpr int kN = 624;
constexpr int kM = 397;
}  // namespace

void PyRandom::InitGenrand(std::uint32_t s) {
  state_[0] = s;
  for (int i = 1; i < kN; ++i) {
    state_[i] =
        1812433253U * (state_[i - 1] ^ (state_[i - 1] >> 30)) + static_cast<std::uint32_t>(i);
  }
  index_ = kN;
}

void PyRandom::SeedWords(std::span<const std::uint32_t> key) {
  static constexpr std::uint32_t kZero[1] = {0};
  if (key.empty()) key = kZero;
  InitGenrand(19650218U);
  int i = 1;
  std::size_t j = 0;
  for (std::size_t k = std::max<std::size_t>(kN, key.size()); k > 0; --k) {
    state_[i] = (state_[i] ^ ((state_[i - 1] ^ (state_[i - 1] >> 30)) * 1664525U)) + key[j] +
                static_cast<std::uint32_t>(j);
    ++i;
    ++j;
    if (i >= kN) {
      state_[0] = state_[kN - 1];
      i = 1;
    }
    if (j >= key.size()) j = 0;
  }
  for (int k = kN - 1; k > 0; --k) {
    state_[i] = (state_[i] ^ ((state_[i - 1] ^ (state_[i - 1] >> 30)) * 1566083941U)) -
                static_cast<std::uint32_t>(i);
    ++i;
    if (i >= kN) {
      state_[0] = state_[kN - 1];
      i = 1;
    }
  }
  state_[0] = 0x80000000U;
  index_ = kN;
}

void PyRandom::Seed(std::int64_t seed) {
  // |INT64_MIN| does not fit an int64: take the magnitude as unsigned.
  std::uint64_t magnitude =
      seed < 0 ? ~static_cast<std::uint64_t>(seed) + 1 : static_cast<std::uint64_t>(seed);
  std::uint32_t words[2] = {static_cast<std::uint32_t>(magnitude),
                            static_cast<std::uint32_t>(magnitude >> 32)};
  SeedWords(std::span<const std::uint32_t>(words, words[1] != 0 ? 2 : 1));
}

void PyRandom::Twist() {
  constexpr std::uint32_t kUpper = 0x80000000U;
  constexpr std::uint32_t kLower = 0x7fffffffU;
  constexpr std::uint32_t kMatrix = 0x9908b0dfU;
  for (int i = 0; i < kN; ++i) {
    std::uint32_t y = (state_[i] & kUpper) | (state_[(i + 1) % kN] & kLower);
    state_[i] = state_[(i + kM) % kN] ^ (y >> 1) ^ ((y & 1U) ? kMatrix : 0U);
  }
  index_ = 0;
}

std::uint32_t PyRandom::NextU32() {
  if (index_ >= kN) Twist();
  std::uint32_t y = state_[index_++];
  y ^= (y >> 11);
  y ^= (y << 7) & 0x9d2c5680U;
  y ^= (y << 15) & 0xefc60000U;
  y ^= (y >> 18);
  return y;
}

double PyRandom::Random() {
  std::uint32_t a = NextU32() >> 5;
  std::uint32_t b = NextU32() >> 6;
  return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0);
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
