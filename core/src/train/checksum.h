// A fast 64-bit hash of a sample's bytes, for comparing what different runs
// read. Not cryptographic; the run total is an order-independent sum, so the
// same samples read in any order, by any number of ranks, sum the same.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace iomimic::train {

inline std::uint64_t HashBytes(std::span<const std::byte> data) {
  constexpr std::uint64_t kMul = 0x9E3779B97F4A7C15ULL;
  std::uint64_t h = 0x243F6A8885A308D3ULL ^ (data.size() * kMul);
  std::size_t i = 0;
  for (; i + 8 <= data.size(); i += 8) {
    std::uint64_t w;
    std::memcpy(&w, data.data() + i, 8);
    h = (h ^ w) * kMul;
    h ^= h >> 29;
  }
  std::uint64_t tail = 0;
  std::memcpy(&tail, data.data() + i, data.size() - i);
  h = (h ^ tail) * kMul;
  h ^= h >> 32;
  return h;
}

}  // namespace iomimic::train
