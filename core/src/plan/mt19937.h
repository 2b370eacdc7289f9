// The Mersenne Twister MT19937 as NumPy's legacy generator (plan/numpy_random.h)
// and CPython's `random` module (kvcache/pyrandom.h) both use it: the 624-word
// state, init_genrand and init_by_array seeding, the tempered 32-bit output,
// and the 53-bit double both build from two outputs.

#pragma once

#include <cstdint>
#include <span>

namespace iomimic::plan {

class Mt19937 {
 public:
  // init_genrand(s): NumPy's integer seeding.
  void InitGenrand(std::uint32_t s);
  // init_by_array(key): CPython's seeding (an empty key acts as {0}).
  void InitByArray(std::span<const std::uint32_t> key);
  // The next tempered 32-bit output.
  std::uint32_t Next() {
    if (index_ >= kN) Twist();
    std::uint32_t y = state_[index_++];
    y ^= (y >> 11);
    y ^= (y << 7) & 0x9d2c5680U;
    y ^= (y << 15) & 0xefc60000U;
    y ^= (y >> 18);
    return y;
  }
  // Uniform in [0, 1) with 53 bits: (a * 2^26 + b) / 2^53, a = Next() >> 5,
  // b = Next() >> 6 (NumPy's random_sample, CPython's random()).
  double Next53() {
    const std::uint32_t a = Next() >> 5;
    const std::uint32_t b = Next() >> 6;
    return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0);
  }

 private:
  static constexpr int kN = 624;
  void Twist();
  std::uint32_t state_[kN] = {};
  int index_ = kN;
};

}  // namespace iomimic::plan
