#include "plan/numpy_random.h"

#include <cmath>

namespace iomimic::plan {

NumpyLegacyRandom::NumpyLegacyRandom(std::uint32_t seed) {
  state_[0] = seed;
  for (int i = 1; i < 624; ++i) {
    state_[i] = 1812433253U * (state_[i - 1] ^ (state_[i - 1] >> 30)) + static_cast<std::uint32_t>(i);
  }
  index_ = 624;
}

void NumpyLegacyRandom::Twist() {
  constexpr std::uint32_t kUpper = 0x80000000U;
  constexpr std::uint32_t kLower = 0x7fffffffU;
  constexpr std::uint32_t kMatrix = 0x9908b0dfU;
  for (int i = 0; i < 624; ++i) {
    std::uint32_t y = (state_[i] & kUpper) | (state_[(i + 1) % 624] & kLower);
    state_[i] = state_[(i + 397) % 624] ^ (y >> 1) ^ ((y & 1U) ? kMatrix : 0U);
  }
  index_ = 0;
}

std::uint32_t NumpyLegacyRandom::NextU32() {
  if (index_ >= 624) Twist();
  std::uint32_t y = state_[index_++];
  y ^= (y >> 11);
  y ^= (y << 7) & 0x9d2c5680U;
  y ^= (y << 15) & 0xefc60000U;
  y ^= (y >> 18);
  return y;
}

double NumpyLegacyRandom::NextDouble() {
  std::int32_t a = static_cast<std::int32_t>(NextU32() >> 5);
  std::int32_t b = static_cast<std::int32_t>(NextU32() >> 6);
  return (a * 67108864.0 + b) / 9007199254740992.0;
}

double NumpyLegacyRandom::NextGauss() {
  if (has_gauss_) {
    has_gauss_ = false;
    return gauss_;
  }
  double x1, x2, r2;
  do {
    x1 = 2.0 * NextDouble() - 1.0;
    x2 = 2.0 * NextDouble() - 1.0;
    r2 = x1 * x1 + x2 * x2;
  } while (r2 >= 1.0 || r2 == 0.0);
  double f = std::sqrt(-2.0 * std::log(r2) / r2);
  gauss_ = f * x1;
  has_gauss_ = true;
  return f * x2;
}

}  // namespace iomimic::plan
