// iomimic plugin SDK: fast deterministic content for synthetic files.
//
// Generated data must be cheap to produce (generation runs at storage speed)
// and reproducible from a seed, so a file can be regenerated or verified.
// Xoshiro256 is xoshiro256** seeded through SplitMix64; ContentStream is the
// byte stream formats fill sample payloads with, addressable by position so
// that several writers can each produce their own part of one file.

#pragma once

#include <algorithm>
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

// The content of a generated file's payload: an endless byte stream defined
// by a seed, that can be produced from any position. Byte p is byte
// p % kBlockSize of the Xoshiro256(MixSeed(seed, p / kBlockSize)) output, so
// seeking costs at most one block of generator steps, whatever the position.
// With `boolean` every byte is reduced to 0 or 1 (NumPy's bool arrays).
// Not thread-safe; cheap to construct (one per writer).
class ContentStream {
 public:
  static constexpr std::uint64_t kBlockSize = std::uint64_t{64} << 10;

  explicit ContentStream(std::uint64_t seed, bool boolean = false, std::uint64_t position = 0)
      : seed_(seed), boolean_(boolean), rng_(0) {
    Seek(position);
  }

  // Moves to byte `position` of the stream.
  void Seek(std::uint64_t position) {
    pos_ = position;
    Reseed(position / kBlockSize);
    for (std::uint64_t w = (position % kBlockSize) / 8; w > 0; --w) (void)rng_.Next();
    if (position % 8 != 0) StoreWord(rng_.Next());
  }

  std::uint64_t position() const { return pos_; }

  // Writes the next out.size() bytes of the stream into `out`.
  void Fill(std::span<std::byte> out) {
    std::byte* dst = out.data();
    std::size_t left = out.size();
    while (left > 0) {
      const std::size_t in_word = static_cast<std::size_t>(pos_ % 8);
      std::size_t n = 0;
      if (in_word != 0) {  // the rest of the word already drawn
        n = std::min<std::size_t>(8 - in_word, left);
        std::memcpy(dst, word_ + in_word, n);
      } else {
        if (pos_ / kBlockSize != block_) Reseed(pos_ / kBlockSize);
        const std::uint64_t to_block_end = kBlockSize - pos_ % kBlockSize;
        n = static_cast<std::size_t>(std::min<std::uint64_t>(left, to_block_end)) / 8 * 8;
        if (n > 0) {
          rng_.Fill(std::span<std::byte>(dst, n));
        } else {  // fewer than 8 bytes wanted: draw a word, keep its rest
          n = left;
          StoreWord(rng_.Next());
          std::memcpy(dst, word_, n);
        }
      }
      dst += n;
      left -= n;
      pos_ += n;
    }
    if (boolean_) {
      for (std::byte& b : out) b &= std::byte{1};
    }
  }

 private:
  void Reseed(std::uint64_t block) {
    rng_ = Xoshiro256(MixSeed(seed_, block));
    block_ = block;
  }
  void StoreWord(std::uint64_t v) { std::memcpy(word_, &v, sizeof(word_)); }

  std::uint64_t seed_;
  bool boolean_;
  Xoshiro256 rng_;
  std::uint64_t block_ = 0;
  std::uint64_t pos_ = 0;
  std::byte word_[8] = {};  // the word holding pos_ when pos_ % 8 != 0
};

}  // namespace iomimic
