// A keyed pseudo-random permutation of [0, n) that needs no memory.
//
// Element i of the permutation is computed on demand by a balanced Feistel
// network over the smallest power-of-four domain that holds n, walking the
// cycle until the value falls inside [0, n). So a million-file dataset is
// shuffled without a million-entry table, and any position of any epoch can
// be computed independently (what the plan needs to be a pure function).

#pragma once

#include <cstdint>

namespace iomimic::plan {

class Permutation {
 public:
  // The identity when `enabled` is false.
  Permutation(std::uint64_t n, std::uint64_t key, bool enabled = true);

  std::uint64_t size() const { return n_; }
  // The element at position `i` (i < size()).
  std::uint64_t operator()(std::uint64_t i) const;

 private:
  std::uint64_t Encrypt(std::uint64_t x) const;

  std::uint64_t n_;
  bool enabled_;
  int half_bits_ = 1;
  std::uint64_t half_mask_ = 1;
  std::uint64_t round_keys_[4] = {};
};

}  // namespace iomimic::plan
