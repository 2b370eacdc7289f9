// Micro benchmark: the payload content generator, previous against current.
//
//   content_fill [--mib 4] [--total-mib 2048] [--rounds 5]
//
// Fills a buffer of --mib MiB again and again (--total-mib per measurement)
// through a ContentStream object held by reference, as the format writers do
// (npz, npy, hdf5, indexed binary, tfrecord keep one stream and call Fill per
// chunk), and reports GiB/s. Rounds alternate the variants (old, new, new
// with content options) so that load changes hit them alike; the summary is
// the median and min-max of the rounds; the last variant shows what the old
// generator reached when its state stayed in registers. "old" is the generator of commit
// 9c46857 (xoshiro256** reseeded per 64 KiB, state in the object), copied
// below verbatim but for its name. Results: bench/results/content_fill.md.

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "iomimic/random.h"

namespace {

using iomimic::MixSeed;
using iomimic::Xoshiro256;

// The content of a generated file's payload: an endless byte stream defined
// by a seed, that can be produced from any position. Byte p is byte
// p % kBlockSize of the Xoshiro256(MixSeed(seed, p / kBlockSize)) output, so
// seeking costs at most one block of generator steps, whatever the position.
// With `boolean` every byte is reduced to 0 or 1 (NumPy's bool arrays).
// Not thread-safe; cheap to construct (one per writer).
class LegacyContentStream {
 public:
  static constexpr std::uint64_t kBlockSize = std::uint64_t{64} << 10;

  explicit LegacyContentStream(std::uint64_t seed, bool boolean = false, std::uint64_t position = 0)
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

// Out of line, like a writer's call into a stream it keeps: the stream lives
// in memory, not in registers.
template <typename Stream>
__attribute__((noinline)) void FillChunk(Stream& stream, std::span<std::byte> out) {
  stream.Fill(out);
}

double Measure(const std::function<void(std::span<std::byte>)>& fill, std::vector<std::byte>& buf,
               std::uint64_t total) {
  const std::uint64_t reps = std::max<std::uint64_t>(1, total / buf.size());
  const auto start = std::chrono::steady_clock::now();
  for (std::uint64_t r = 0; r < reps; ++r) fill(buf);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return static_cast<double>(reps * buf.size()) / seconds / (1u << 30);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t mib = 4, total_mib = 2048, rounds = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const std::uint64_t value = std::strtoull(argv[i + 1], nullptr, 10);
    if (flag == "--mib") {
      mib = value;
    } else if (flag == "--total-mib") {
      total_mib = value;
    } else if (flag == "--rounds") {
      rounds = value;
    } else {
      std::fprintf(stderr, "usage: content_fill [--mib N] [--total-mib N] [--rounds N]\n");
      return 2;
    }
  }
  std::vector<std::byte> buf(mib << 20);
  const std::uint64_t total = total_mib << 20;

  LegacyContentStream old_stream(1);
  iomimic::ContentStream new_stream(1);
  iomimic::ContentOptions options;
  options.compress_percentage = 50;
  options.dedupe_percentage = 30;
  iomimic::ContentStream controlled(1, options);
  struct Variant {
    const char* name;
    std::function<void(std::span<std::byte>)> fill;
    std::vector<double> rates = {};
  };
  std::vector<Variant> variants = {
      {"old (xoshiro256** per 64 KiB)", [&](std::span<std::byte> b) { FillChunk(old_stream, b); }},
      {"new (keyed wyrand counter)", [&](std::span<std::byte> b) { FillChunk(new_stream, b); }},
      {"new, compress 50% dedupe 30%", [&](std::span<std::byte> b) { FillChunk(controlled, b); }},
      // A temporary stream per call, whose state the compiler may keep in
      // registers: the old generator's best case, which writers do not get.
      {"old, temporary stream (best case)",
       [](std::span<std::byte> b) { LegacyContentStream(1).Fill(b); }},
  };
  std::printf("buffer %llu MiB, %llu MiB per measurement, %llu rounds\n",
              static_cast<unsigned long long>(mib), static_cast<unsigned long long>(total_mib),
              static_cast<unsigned long long>(rounds));
  for (std::uint64_t r = 0; r < rounds; ++r) {
    for (Variant& v : variants) {
      v.rates.push_back(Measure(v.fill, buf, total));
      std::printf("round %llu  %-34s %6.2f GiB/s\n", static_cast<unsigned long long>(r + 1), v.name,
                  v.rates.back());
    }
  }
  std::printf("\n| variant | median GiB/s | min | max |\n|---|---:|---:|---:|\n");
  for (const Variant& v : variants) {
    std::printf("| %s | %.2f | %.2f | %.2f |\n", v.name, Median(v.rates),
                *std::min_element(v.rates.begin(), v.rates.end()),
                *std::max_element(v.rates.begin(), v.rates.end()));
  }
  return 0;
}
