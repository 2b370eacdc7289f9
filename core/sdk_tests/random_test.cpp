// Tests of the SDK's content generator (iomimic/random.h).

#include "iomimic/random.h"

#include <doctest/doctest.h>
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace iomimic {
namespace {

constexpr std::size_t kBlock = ContentStream::kContentBlockSize;

// One byte of the stream, straight from the definition in random.h's
// ContentStream comment, computed byte by byte with nothing shared with the
// implementation but the constants.
class Reference {
 public:
  Reference(std::uint64_t seed, const ContentOptions& options) : seed_(seed), options_(options) {}

  std::byte At(std::uint64_t p) const {
    if (options_.kind == ContentOptions::Kind::kZeros) return std::byte{0};
    if (options_.kind == ContentOptions::Kind::kScrambled) {
      if (p % ContentStream::kScrambleSector < 8) {  // the sector's stamp
        std::uint64_t state = MixSeed(seed_, ContentStream::kScrambleDomain);
        return WordByte(state, p / ContentStream::kScrambleSector * 8 + p % 8);
      }
      std::uint64_t state = MixSeed(seed_, ContentStream::kContentDomain);
      return WordByte(state, p % ContentStream::kScramblePeriod);
    }
    const std::uint64_t k = p / kBlock;
    const std::uint64_t offset = p % kBlock;
    const std::uint64_t pct = std::min<std::uint64_t>(options_.compress_percentage, 100);
    if (offset / 8 >= 512 * (100 - pct) / 100) return std::byte{0};
    std::uint64_t key_state = MixSeed(seed_, ContentStream::kContentDomain);
    std::uint64_t at = p;
    if (options_.dedupe_percentage > 0) {
      std::uint64_t state = MixSeed(seed_, ContentStream::kDecisionDomain) ^ k;
      const std::uint64_t d = SplitMix64(state);
      if (((d >> 32) * 100 >> 32) < options_.dedupe_percentage) {
        key_state = ContentStream::kDedupePoolSeed;
        at = (d & 0xFFFFFFFFu) % ContentStream::kDedupePoolBlocks * kBlock + offset;
      }
    }
    return WordByte(key_state, at);
  }

  // Byte `at` of the word sequence of the key whose SplitMix64 state is
  // `key_state`.
  static std::byte WordByte(std::uint64_t key_state, std::uint64_t at) {
    const std::uint64_t a = SplitMix64(key_state);
    const std::uint64_t b = SplitMix64(key_state);
    const std::uint64_t s = a + (at / 8 + 1) * ContentStream::kWeyl;
    __extension__ using U128 = unsigned __int128;
    const U128 m = static_cast<U128>(s) * static_cast<U128>(s ^ b);
    const std::uint64_t word = static_cast<std::uint64_t>(m) ^ static_cast<std::uint64_t>(m >> 64);
    return static_cast<std::byte>(word >> (8 * (at % 8)));
  }

  std::vector<std::byte> Bytes(std::uint64_t from, std::size_t n) const {
    std::vector<std::byte> out(n);
    for (std::size_t i = 0; i < n; ++i) out[i] = At(from + i);
    return out;
  }

 private:
  std::uint64_t seed_;
  ContentOptions options_;
};

ContentOptions Options(std::uint32_t compress, std::uint32_t dedupe) {
  ContentOptions o;
  o.compress_percentage = compress;
  o.dedupe_percentage = dedupe;
  return o;
}

std::vector<std::byte> Stream(std::uint64_t seed, const ContentOptions& options, std::size_t n,
                              std::uint64_t from = 0) {
  std::vector<std::byte> out(n);
  ContentStream(seed, options, false, from).Fill(out);
  return out;
}

// zlib's compress2 ratio (input / output) at `level`.
double ZlibRatio(const std::vector<std::byte>& data, int level = Z_DEFAULT_COMPRESSION) {
  uLongf size = compressBound(static_cast<uLong>(data.size()));
  std::vector<Bytef> out(size);
  REQUIRE(compress2(out.data(), &size, reinterpret_cast<const Bytef*>(data.data()),
                    static_cast<uLong>(data.size()), level) == Z_OK);
  return static_cast<double>(data.size()) / static_cast<double>(size);
}

std::string_view BlockAt(const std::vector<std::byte>& data, std::size_t i) {
  return {reinterpret_cast<const char*>(data.data()) + i * kBlock, kBlock};
}

// Share of the whole 4 KiB blocks of `data` whose bytes occur more than once
// (what a block deduplicating store finds to share).
double DuplicateBlockShare(const std::vector<std::byte>& data) {
  const std::size_t blocks = data.size() / kBlock;
  std::unordered_map<std::string_view, int> count;
  for (std::size_t i = 0; i < blocks; ++i) ++count[BlockAt(data, i)];
  std::size_t shared = 0;
  for (const auto& [block, n] : count) {
    if (n > 1) shared += static_cast<std::size_t>(n);
  }
  return static_cast<double>(shared) / static_cast<double>(blocks);
}

TEST_CASE("ContentStream is its definition") {
  const std::size_t size = 3 * kBlock + 1001;
  for (const ContentOptions& options : {Options(0, 0), Options(37, 0), Options(0, 40),
                                        Options(50, 30), Options(100, 0), Options(0, 100)}) {
    for (std::uint64_t from : {std::uint64_t{0}, std::uint64_t{5}, std::uint64_t{1} << 40}) {
      CHECK_MESSAGE(Stream(11, options, size, from) == Reference(11, options).Bytes(from, size),
                    "compress " << options.compress_percentage << " dedupe "
                                << options.dedupe_percentage << " from " << from);
    }
  }
  CHECK(Stream(11, {}, size) != Stream(12, {}, size));
}

TEST_CASE("ContentStream keeps its bytes from version to version") {
  // Pinned so that a change of the definition is a decision: the same seed
  // must give the same dataset on every run and every build.
  const std::vector<std::byte> got = Stream(0, {}, 16);
  const unsigned char want[16] = {0x1F, 0x02, 0xB4, 0xEB, 0xCC, 0xBA, 0xCC, 0x45,
                                  0x25, 0x80, 0x1C, 0x1B, 0xC3, 0xF7, 0x9A, 0xF5};
  for (std::size_t i = 0; i < 16; ++i) CHECK(got[i] == std::byte{want[i]});
}

TEST_CASE("ContentStream gives the same bytes however it is split or seeked") {
  const std::size_t size = 5 * kBlock + 4099;
  for (const ContentOptions& options : {Options(0, 0), Options(37, 30)}) {
    const std::vector<std::byte> whole = Stream(5, options, size);
    // Odd piece sizes that cross words and blocks.
    for (std::size_t piece : {std::size_t{1}, std::size_t{3}, std::size_t{7}, std::size_t{13},
                              std::size_t{4097}, std::size_t{65535}}) {
      ContentStream stream(5, options);
      std::vector<std::byte> got(size);
      for (std::size_t at = 0; at < size; at += piece) {
        stream.Fill(std::span<std::byte>(got.data() + at, std::min(piece, size - at)));
      }
      CHECK_MESSAGE(got == whole, "piece " << piece);
      CHECK(stream.position() == size);
    }
    // Starting anywhere, by constructor or Seek.
    for (std::size_t start : {std::size_t{0}, std::size_t{1}, std::size_t{8}, std::size_t{4093},
                              std::size_t{4096}, std::size_t{13000}}) {
      std::vector<std::byte> got(size - start);
      ContentStream(5, options, false, start).Fill(got);
      CHECK_MESSAGE(std::equal(got.begin(), got.end(), whole.begin() + static_cast<long>(start)),
                    "start " << start);
      ContentStream seeked(5, options);
      std::vector<std::byte> skip(100);
      seeked.Fill(skip);
      seeked.Seek(start);
      std::vector<std::byte> again(size - start);
      seeked.Fill(again);
      CHECK(again == got);
    }
  }
}

TEST_CASE("ContentStream slices from different writers compose to the whole") {
  // What shared-file generation does: ranks fill slices from arbitrary
  // positions with streams of their own.
  const std::size_t size = std::size_t{1} << 20;
  const ContentOptions options = Options(25, 20);
  const std::vector<std::byte> whole = Stream(9, options, size);
  std::vector<std::byte> composed(size);
  for (std::size_t at : {std::size_t{700001}, std::size_t{0}, std::size_t{333333}}) {
    const std::size_t end = at == 0 ? 333333 : at == 333333 ? 700001 : size;
    ContentStream(9, options, false, at).Fill(std::span<std::byte>(composed).subspan(at, end - at));
  }
  CHECK(composed == whole);
}

TEST_CASE("default content is incompressible and has no duplicate 4 KiB blocks") {
  const std::vector<std::byte> data = Stream(1, {}, std::size_t{8} << 20);
  const double ratio = ZlibRatio(data, Z_BEST_COMPRESSION);
  CHECK(ratio < 1.0);  // deflate only adds framing to random bytes
  CHECK(ratio > 0.99);
  CHECK(DuplicateBlockShare(data) == 0.0);
  // Nor do two streams share a block, at any alignment of 8 bytes.
  std::unordered_set<std::string_view> blocks;
  for (std::size_t i = 0; i < data.size() / kBlock; ++i) blocks.insert(BlockAt(data, i));
  const std::vector<std::byte> other = Stream(2, {}, std::size_t{1} << 20, 8 * 12345);
  for (std::size_t i = 0; i < other.size() / kBlock; ++i) CHECK(!blocks.count(BlockAt(other, i)));
}

TEST_CASE("compress_percentage makes that share of every block compressible") {
  // Each 4 KiB block is random for (100 - pct)% and zeros for the rest, so
  // deflate stores the random part at about 1:1 and the zeros in a few
  // bytes: the ratio approaches 100 / (100 - pct) from below.
  const std::size_t size = std::size_t{8} << 20;
  const double half = ZlibRatio(Stream(3, Options(50, 0), size));
  CHECK(half >= 1.9);
  CHECK(half <= 2.0);
  const double three_quarters = ZlibRatio(Stream(3, Options(75, 0), size));
  CHECK(three_quarters >= 3.6);
  CHECK(three_quarters <= 4.0);
  // Still unique: compressible blocks are not duplicates of each other.
  CHECK(DuplicateBlockShare(Stream(3, Options(75, 0), size)) == 0.0);
  // All of it: zeros.
  const std::vector<std::byte> all = Stream(3, Options(100, 0), 3 * kBlock + 5);
  CHECK(std::all_of(all.begin(), all.end(), [](std::byte b) { return b == std::byte{0}; }));
}

TEST_CASE("dedupe_percentage makes that share of 4 KiB blocks duplicates") {
  const std::size_t size = std::size_t{8} << 20;  // 2048 blocks: one sigma is 1 point
  const double share = DuplicateBlockShare(Stream(4, Options(0, 30), size));
  CHECK(share >= 0.27);
  CHECK(share <= 0.33);
  CHECK(DuplicateBlockShare(Stream(4, Options(0, 0), size)) == 0.0);
  // Every block from the pool: at most kDedupePoolBlocks distinct ones.
  const std::vector<std::byte> pooled = Stream(4, Options(0, 100), size);
  std::unordered_set<std::string_view> distinct;
  for (std::size_t i = 0; i < pooled.size() / kBlock; ++i) distinct.insert(BlockAt(pooled, i));
  CHECK(distinct.size() <= ContentStream::kDedupePoolBlocks);
  CHECK(distinct.size() >= ContentStream::kDedupePoolBlocks / 2);
  // The pool is shared by every stream, so files of a dataset share blocks.
  const std::vector<std::byte> a = Stream(5, Options(0, 30), std::size_t{1} << 20);
  const std::vector<std::byte> b = Stream(6, Options(0, 30), std::size_t{1} << 20);
  std::unordered_set<std::string_view> in_a;
  for (std::size_t i = 0; i < a.size() / kBlock; ++i) in_a.insert(BlockAt(a, i));
  std::size_t shared = 0;
  for (std::size_t i = 0; i < b.size() / kBlock; ++i) shared += in_a.count(BlockAt(b, i));
  CHECK(shared > 0);
  // Duplicates keep the compressible tail.
  CHECK(ZlibRatio(Stream(7, Options(50, 30), size)) > 1.9);
}

TEST_CASE("zeros content is all zeros, whatever the percentages") {
  ContentOptions options = Options(30, 30);
  options.kind = ContentOptions::Kind::kZeros;
  std::vector<std::byte> data(100000, std::byte{0x55});
  ContentStream(8, options, false, 12345).Fill(data);
  CHECK(std::all_of(data.begin(), data.end(), [](std::byte b) { return b == std::byte{0}; }));
}

TEST_CASE("scrambled content: a 1 MiB pattern with a stamp per 512-byte sector") {
  ContentOptions options;
  options.kind = ContentOptions::Kind::kScrambled;
  const std::uint64_t from = ContentStream::kScramblePeriod - 1000;  // across the period's end
  const std::size_t n = 300000;
  const std::vector<std::byte> whole = Stream(4, options, n, from);
  CHECK(whole == Reference(4, options).Bytes(from, n));
  std::vector<std::byte> pieces(n);
  ContentStream stream(4, options, false, from);
  for (std::size_t at = 0, step = 1; at < n; at += step, step = step * 5 % 4099 + 1) {
    stream.Fill(std::span<std::byte>(pieces).subspan(at, std::min(step, n - at)));
  }
  CHECK(pieces == whole);
  // Unique sectors, each incompressible: zlib's 32 KiB window gains nothing.
  std::unordered_set<std::string_view> sectors;
  for (std::size_t at = 488; at + 512 <= n; at += 512) {  // stream position 512k
    sectors.insert(std::string_view(reinterpret_cast<const char*>(whole.data()) + at, 512));
  }
  CHECK(sectors.size() == (n - 488) / 512);
  CHECK(ZlibRatio(whole) < 1.01);
  // A period on, the same bytes but the stamps.
  const std::vector<std::byte> next =
      Stream(4, options, 4096, from + ContentStream::kScramblePeriod);
  std::size_t differ = 0;
  for (std::size_t i = 0; i < next.size(); ++i) differ += next[i] != whole[i];
  CHECK(differ > 0);
  CHECK(differ <= 8 * 8);
}

TEST_CASE("ContentStream boolean keeps only the lowest bit") {
  for (const ContentOptions& options : {Options(0, 0), Options(50, 30)}) {
    std::vector<std::byte> bits(10000);
    ContentStream(3, options, true).Fill(bits);
    const std::vector<std::byte> whole = Reference(3, options).Bytes(0, bits.size());
    bool saw_one = false;
    for (std::size_t i = 0; i < bits.size(); ++i) {
      CHECK(bits[i] == (whole[i] & std::byte{1}));
      saw_one = saw_one || bits[i] == std::byte{1};
    }
    CHECK(saw_one);
  }
}

TEST_CASE("percentages above 100 count as 100") {
  CHECK(Stream(2, Options(250, 0), 9000) == Stream(2, Options(100, 0), 9000));
  CHECK(Stream(2, Options(0, 250), 9000) == Stream(2, Options(0, 100), 9000));
}

}  // namespace
}  // namespace iomimic
