// iomimic plugin SDK: fast deterministic content for synthetic files.
//
// Generated data must be cheap to produce (generation runs at storage speed)
// and reproducible from a seed, so a file can be regenerated or verified.
// Xoshiro256 is xoshiro256** seeded through SplitMix64; ContentStream is the
// byte stream formats fill sample payloads with, addressable by position so
// that several writers can each produce their own part of one file.

#pragma once

#include <algorithm>
#include <bit>
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

// What generated payloads contain, like fio's buffer options (manifest keys
// iomimic.content, iomimic.compress_percentage, iomimic.dedupe_percentage;
// README.md, "Content of generated files"). Decisions are taken per 4 KiB
// content block (ContentStream::kContentBlockSize) of the stream:
//   kind kZeros         every byte is 0 (the percentages are ignored).
//   kind kScrambled     fio's default buffer (scramble_buffers): one random
//                       pattern of kScramblePeriod bytes, repeated, with an
//                       8-byte stamp of its own at the start of every 512-byte
//                       sector. Every sector is unique (block deduplication
//                       at any size from 512 bytes finds nothing) and each
//                       piece under the period is incompressible, but a
//                       compressor with a window over the period, or a store
//                       that reduces similar blocks against each other, sees
//                       the repeats. Cheap: a writer that keeps the pattern in
//                       its buffer rewrites only the stamps (1/64 of the
//                       bytes). Takes no percentage (the manifest refuses one).
//   compress_percentage that share of each block (rounded down to whole
//                       8-byte words) is zeros at its end, the rest random,
//                       so a compressor reaches about 100 / (100 - pct).
//   dedupe_percentage   that share of blocks (drawn per block) are copies of
//                       one of kDedupePoolBlocks pool blocks that every
//                       stream shares, so a deduplicating store finds them;
//                       the other blocks are unique.
// Percentages above 100 count as 100.
struct ContentOptions {
  enum class Kind : std::uint8_t { kRandom, kZeros, kScrambled };
  Kind kind = Kind::kRandom;
  std::uint32_t compress_percentage = 0;  // 0..100
  std::uint32_t dedupe_percentage = 0;    // 0..100

  // True for the default: random, incompressible, no duplicate blocks.
  constexpr bool is_default() const {
    return kind == Kind::kRandom && compress_percentage == 0 && dedupe_percentage == 0;
  }
  friend bool operator==(const ContentOptions&, const ContentOptions&) = default;
};

// The content of a generated file's payload: an endless byte stream defined
// by a seed and ContentOptions, producible from any position in constant
// time, whatever the position, and byte-identical however it is split into
// Fill calls. Several writers can therefore each produce their own part of
// one file (shared-file generation, Format::FillPayload).
//
// Definition. Random 64-bit word w (bytes 8w..8w+7, little endian) of a key
// (a, b) is fold(s * (s ^ b)) with s = a + (w + 1) * 0x9E3779B97F4A7C15 mod
// 2^64 and fold(m) = low 64 bits of m xor high 64 bits of the 128-bit
// product (wyrand's mum on a Weyl counter, keyed). A key is the first two
// SplitMix64 outputs from a state: MixSeed(seed, kContentDomain) for the
// stream's own words, kDedupePoolSeed for the dedupe pool every stream shares. With default options
// byte p of the stream is byte p of that word sequence; otherwise content block k (bytes
// 4096k..4096k+4095) is
//   zeros                           with kind kZeros, else
//   pool block j (bytes 4096j.. of the pool key's random words, with the
//   same zero tail)                 when block k is drawn as a duplicate,
//   the stream's own random words   otherwise,
// and in both random cases the block's words from
// floor(512 * (100 - compress_percentage) / 100) on are zero. With kind
// kScrambled byte p is byte (p mod kScramblePeriod) of the stream's own word
// sequence, except bytes 512j..512j+7, which are word j of the key
// MixSeed(seed, kScrambleDomain)'s sequence (the stamp of sector j). Whether block
// k is a duplicate and of which pool block depends only on (seed, k): with
// d = SplitMix64 of the state MixSeed(seed, kDecisionDomain) xor k, it is one
// when ((d >> 32) * 100) >> 32 < dedupe_percentage, a copy of pool block
// (d mod 2^32) mod kDedupePoolBlocks. With `boolean` every byte is then reduced
// to 0 or 1 (NumPy's bool arrays). Datasets written by earlier versions hold
// other bytes (xoshiro256** per 64 KiB); readers never check content.
// Not thread-safe; cheap to construct (one per writer or per slice).
class ContentStream {
 public:
  // The unit of the content options' decisions.
  static constexpr std::uint64_t kContentBlockSize = 4096;
  // Distinct blocks that duplicates are copies of (shared by every stream).
  static constexpr std::uint64_t kDedupePoolBlocks = 64;
  // The constants of the definition above.
  static constexpr std::uint64_t kWeyl = 0x9E3779B97F4A7C15ULL;
  static constexpr std::uint64_t kContentDomain = 0x636F6E74656E7431ULL;   // "content1"
  static constexpr std::uint64_t kDecisionDomain = 0x6465636964653031ULL;  // "decide01"
  static constexpr std::uint64_t kDedupePoolSeed = 0x646564757065706FULL;  // "dedupepo"
  static constexpr std::uint64_t kScrambleDomain = 0x7363726D626C6531ULL;  // "scrmble1"
  // kScrambled: the pattern's length (a multiple of the sector) and the
  // stamped sector.
  static constexpr std::uint64_t kScramblePeriod = 1ULL << 20;
  static constexpr std::uint64_t kScrambleSector = 512;
  static constexpr std::uint64_t kScrambleStampBytes = 8;

  // The default content (random, incompressible, no duplicates).
  explicit ContentStream(std::uint64_t seed, bool boolean = false, std::uint64_t position = 0)
      : ContentStream(seed, ContentOptions{}, boolean, position) {}

  // The stream of `seed` with `options` (see above), every byte reduced to 0
  // or 1 with `boolean`, positioned at byte `position`. Constant time.
  ContentStream(std::uint64_t seed, const ContentOptions& options, bool boolean = false,
                std::uint64_t position = 0)
      : key_(KeyOf(MixSeed(seed, kContentDomain))),
        pool_key_(KeyOf(kDedupePoolSeed)),
        decision_key_(MixSeed(seed, kDecisionDomain)),
        stamp_key_(KeyOf(MixSeed(seed, kScrambleDomain))),
        zeros_(options.kind == ContentOptions::Kind::kZeros),
        scrambled_(options.kind == ContentOptions::Kind::kScrambled),
        plain_(options.is_default()),
        boolean_(boolean),
        dedupe_(std::min<std::uint32_t>(options.dedupe_percentage, 100)),
        random_bytes_(RandomBytesPerBlock(options.compress_percentage)),
        pos_(position) {}

  // Moves to byte `position` of the stream (constant time).
  void Seek(std::uint64_t position) { pos_ = position; }

  // The byte the next Fill starts at.
  std::uint64_t position() const { return pos_; }

  // Writes the next out.size() bytes of the stream into `out` and advances
  // position() by as many; the bytes do not depend on how a range is split
  // into Fill calls.
  void Fill(std::span<std::byte> out) {
    if (zeros_) {
      std::fill(out.begin(), out.end(), std::byte{0});
    } else if (scrambled_) {
      FillScrambled(out);
    } else if (plain_) {
      FillRandom(key_, pos_, out.data(), out.size());
    } else {
      FillBlocks(out);
    }
    pos_ += out.size();
    if (boolean_) {
      for (std::byte& b : out) b &= std::byte{1};
    }
  }

 private:
  struct Key {
    std::uint64_t offset;  // a: the counter's start
    std::uint64_t mixer;   // b: xored into one factor
  };
  static constexpr Key KeyOf(std::uint64_t seed) {
    std::uint64_t state = seed;
    const std::uint64_t a = SplitMix64(state);
    return Key{a, SplitMix64(state)};
  }

  static constexpr std::uint64_t RandomBytesPerBlock(std::uint32_t compress_percentage) {
    const std::uint64_t pct = std::min<std::uint32_t>(compress_percentage, 100);
    return kContentBlockSize / 8 * (100 - pct) / 100 * 8;
  }

  // The random word at counter value `s` (a + (w + 1) * kWeyl for word w of
  // key (a, b)), `mixer` being b; see the class comment.
  static std::uint64_t Word(std::uint64_t s, std::uint64_t mixer) {
#if defined(__SIZEOF_INT128__)
    __extension__ using U128 = unsigned __int128;
    const U128 m = static_cast<U128>(s) * static_cast<U128>(s ^ mixer);
    return static_cast<std::uint64_t>(m) ^ static_cast<std::uint64_t>(m >> 64);
#else
    const std::uint64_t x = s, y = s ^ mixer;
    const std::uint64_t xl = x & 0xFFFFFFFFu, xh = x >> 32, yl = y & 0xFFFFFFFFu, yh = y >> 32;
    const std::uint64_t ll = xl * yl, lh = xl * yh, hl = xh * yl, hh = xh * yh;
    const std::uint64_t mid = (ll >> 32) + (lh & 0xFFFFFFFFu) + (hl & 0xFFFFFFFFu);
    const std::uint64_t lo = (mid << 32) | (ll & 0xFFFFFFFFu);
    const std::uint64_t hi = hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
    return lo ^ hi;
#endif
  }

  static void StoreWord(std::byte* dst, std::uint64_t v) {
    if constexpr (std::endian::native == std::endian::big) {
      std::uint64_t le = 0;
      for (int i = 0; i < 8; ++i) le = (le << 8) | ((v >> (8 * i)) & 0xFF);
      v = le;
    }
    std::memcpy(dst, &v, sizeof(v));
  }

  // Writes bytes [position, position + n) of `key`'s random word sequence.
  // The key is taken by value so that the loop keeps it in registers: `dst`
  // is std::byte and could otherwise alias it.
  static void FillRandom(Key key, std::uint64_t position, std::byte* dst, std::size_t n) {
    std::uint64_t w = position / 8;
    if (const std::size_t skip = static_cast<std::size_t>(position % 8); skip != 0 && n > 0) {
      std::byte word[8];
      StoreWord(word, Word(key.offset + (w + 1) * kWeyl, key.mixer));
      const std::size_t k = std::min<std::size_t>(8 - skip, n);
      std::memcpy(dst, word + skip, k);
      dst += k;
      n -= k;
      ++w;
    }
    std::uint64_t s = key.offset + (w + 1) * kWeyl;
    const std::uint64_t mixer = key.mixer;
    std::byte* const words_end = dst + (n - n % 8);
    for (; words_end - dst >= 32; dst += 32, s += 4 * kWeyl) {  // four independent words
      StoreWord(dst, Word(s, mixer));
      StoreWord(dst + 8, Word(s + kWeyl, mixer));
      StoreWord(dst + 16, Word(s + 2 * kWeyl, mixer));
      StoreWord(dst + 24, Word(s + 3 * kWeyl, mixer));
    }
    for (; dst != words_end; dst += 8, s += kWeyl) StoreWord(dst, Word(s, mixer));
    if (const std::size_t rest = n % 8; rest != 0) {
      std::byte word[8];
      StoreWord(word, Word(s, mixer));
      std::memcpy(dst, word, rest);
    }
  }

  // Fill() of kScrambled: the pattern's bytes, then the stamps of the
  // sectors the range meets (a stamp cut by the range's ends in part).
  void FillScrambled(std::span<std::byte> out) {
    for (std::size_t done = 0; done < out.size();) {
      const std::uint64_t at = (pos_ + done) % kScramblePeriod;
      const std::size_t n = static_cast<std::size_t>(
          std::min<std::uint64_t>(out.size() - done, kScramblePeriod - at));
      FillRandom(key_, at, out.data() + done, n);
      done += n;
    }
    const std::uint64_t end = pos_ + out.size();
    for (std::uint64_t sector = pos_ / kScrambleSector; sector * kScrambleSector < end; ++sector) {
      const std::uint64_t begin = sector * kScrambleSector;
      const std::uint64_t from = std::max(begin, pos_);
      const std::uint64_t to = std::min(begin + kScrambleStampBytes, end);
      if (from >= to) continue;
      std::byte stamp[kScrambleStampBytes];
      StoreWord(stamp, Word(stamp_key_.offset + (sector + 1) * kWeyl, stamp_key_.mixer));
      std::memcpy(out.data() + (from - pos_), stamp + (from - begin), to - from);
    }
  }

  // Fill() with content options: block by block.
  void FillBlocks(std::span<std::byte> out) {
    std::byte* dst = out.data();
    std::size_t left = out.size();
    std::uint64_t pos = pos_;
    while (left > 0) {
      const std::uint64_t block = pos / kContentBlockSize;
      const std::uint64_t begin = pos % kContentBlockSize;
      const std::size_t n =
          static_cast<std::size_t>(std::min<std::uint64_t>(left, kContentBlockSize - begin));
      // Where this block's random words come from: its own place in this
      // stream, or a pool block.
      Key key = key_;
      std::uint64_t base = block * kContentBlockSize;
      if (dedupe_ > 0) {
        std::uint64_t state = decision_key_ ^ block;
        const std::uint64_t draw = SplitMix64(state);
        if (((draw >> 32) * 100 >> 32) < dedupe_) {
          key = pool_key_;
          base = (draw & 0xFFFFFFFFu) % kDedupePoolBlocks * kContentBlockSize;
        }
      }
      const std::uint64_t end = begin + n;
      if (begin < random_bytes_) {
        const std::uint64_t random_end = std::min(end, random_bytes_);
        FillRandom(key, base + begin, dst, static_cast<std::size_t>(random_end - begin));
      }
      if (end > random_bytes_) {
        const std::uint64_t zero_begin = std::max(begin, random_bytes_);
        std::fill(dst + (zero_begin - begin), dst + n, std::byte{0});
      }
      dst += n;
      left -= n;
      pos += n;
    }
  }

  Key key_;
  Key pool_key_;
  std::uint64_t decision_key_;
  Key stamp_key_;
  bool zeros_;
  bool scrambled_;
  bool plain_;
  bool boolean_;
  std::uint32_t dedupe_;
  std::uint64_t random_bytes_;  // per content block, a multiple of 8
  std::uint64_t pos_ = 0;
};

}  // namespace iomimic
