#include "plan/permutation.h"

#include "iomimic/random.h"

namespace iomimic::plan {

Permutation::Permutation(std::uint64_t n, std::uint64_t key, bool enabled)
    : n_(n), enabled_(enabled && n > 1) {
  if (!enabled_) return;
  int bits = 2;
  while (bits < 64 && (std::uint64_t{1} << bits) < n) bits += 2;
  half_bits_ = bits / 2;
  half_mask_ = (std::uint64_t{1} << half_bits_) - 1;
  std::uint64_t state = key;
  for (std::uint64_t& k : round_keys_) k = SplitMix64(state);
}

std::uint64_t Permutation::Encrypt(std::uint64_t x) const {
  std::uint64_t left = x >> half_bits_;
  std::uint64_t right = x & half_mask_;
  for (std::uint64_t k : round_keys_) {
    std::uint64_t mix = right ^ k;
    mix = SplitMix64(mix);
    std::uint64_t next = left ^ (mix & half_mask_);
    left = right;
    right = next;
  }
  return (left << half_bits_) | right;
}

std::uint64_t Permutation::operator()(std::uint64_t i) const {
  if (!enabled_) return i;
  // Cycle walking: the domain is at most 4x larger than n, so few steps.
  std::uint64_t x = Encrypt(i);
  while (x >= n_) x = Encrypt(x);
  return x;
}

}  // namespace iomimic::plan
