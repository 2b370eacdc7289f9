// iomimic plugin SDK: fast deterministic content for synthetic files.
//
// Generated data must be cheap to produce (generation runs at storage speed)
// and reproducible from a seed, so a file can be regenerated or verified.
// FillRandom writes xoshiro256** output seeded through SplitMix64.

#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace iomimic {

// SplitMix64 step: a good 64-bit mixer, used to derive seeds.
constexpr std::uint64_t SplitMix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// Combines two values into one well-mixed 64-bit seed.
constexpr std::uint64_t MixSeed(std::uint64_t a, std::uint64_t b) {
  std::uint64_t s = a * 0x9E3779B97F4A7C15ULL ^ (b + 0x632BE59BD9B4E019ULL);
  return SplitMix64(s);
}

class Xoshiro256 {
 public:
  explicit Xoshiro256(std::uint64_t seed) {
    for (std::uint64_t& w : s_) w = SplitMix64(seed);
  }
  std::uint64_t Next() {
    const std::uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }
  // Fills `out` with pseudo-random bytes.
  void Fill(std::span<std::byte> out) {
    std::size_t i = 0;
    for (; i + 8 <= out.size(); i += 8) {
      std::uint64_t v = Next();
      std::memcpy(out.data() + i, &v, 8);
    }
    if (i < out.size()) {
      std::uint64_t v = Next();
      std::memcpy(out.data() + i, &v, out.size() - i);
    }
  }

 private:
  static constexpr std::uint64_t Rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::uint64_t s_[4];
};

}  // namespace iomimic
