#include "plan/mt19937.h"

#include <algorithm>

namespace iomimic::plan {

void Mt19937::InitGenrand(std::uint32_t s) {
  state_[0] = s;
  for (int i = 1; i < kN; ++i) {
    state_[i] =
        1812433253U * (state_[i - 1] ^ (state_[i - 1] >> 30)) + static_cast<std::uint32_t>(i);
  }
  index_ = kN;
}

void Mt19937::InitByArray(std::span<const std::uint32_t> key) {
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

void Mt19937::Twist() {
  constexpr std::uint32_t kUpper = 0x80000000U;
  constexpr std::uint32_t kLower = 0x7fffffffU;
  constexpr std::uint32_t kMatrix = 0x9908b0dfU;
  constexpr int kM = 397;
  for (int i = 0; i < kN; ++i) {
    std::uint32_t y = (state_[i] & kUpper) | (state_[(i + 1) % kN] & kLower);
    state_[i] = state_[(i + kM) % kN] ^ (y >> 1) ^ ((y & 1U) ? kMatrix : 0U);
  }
  index_ = 0;
}

}  // namespace iomimic::plan
