// Tests of the SDK's content generator (iomimic/random.h).

#include "iomimic/random.h"

#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace iomimic {
namespace {

// The stream by its definition: block k is the Xoshiro256(MixSeed(seed, k))
// output.
std::vector<std::byte> ByDefinition(std::uint64_t seed, std::size_t size) {
  std::vector<std::byte> out(size);
  for (std::size_t at = 0; at < size; at += ContentStream::kBlockSize) {
    const std::size_t n = std::min<std::size_t>(ContentStream::kBlockSize, size - at);
    Xoshiro256(MixSeed(seed, at / ContentStream::kBlockSize))
        .Fill(std::span<std::byte>(out.data() + at, n));
  }
  return out;
}

TEST_CASE("ContentStream is block k = Xoshiro256(MixSeed(seed, k)) as one fill") {
  const std::size_t size = 3 * ContentStream::kBlockSize + 1001;
  std::vector<std::byte> got(size);
  ContentStream(11).Fill(got);
  CHECK(got == ByDefinition(11, size));
  std::vector<std::byte> other(size);
  ContentStream(12).Fill(other);
  CHECK(got != other);
}

TEST_CASE("ContentStream gives the same bytes however it is split or seeked") {
  const std::size_t size = 2 * ContentStream::kBlockSize + 4099;
  const std::vector<std::byte> whole = ByDefinition(5, size);
  // Odd piece sizes that cross words and blocks.
  for (std::size_t piece : {std::size_t{1}, std::size_t{3}, std::size_t{7}, std::size_t{13},
                            std::size_t{4097}, std::size_t{65535}}) {
    ContentStream stream(5);
    std::vector<std::byte> got(size);
    for (std::size_t at = 0; at < size; at += piece) {
      stream.Fill(std::span<std::byte>(got.data() + at, std::min(piece, size - at)));
    }
    CHECK_MESSAGE(got == whole, "piece " << piece);
    CHECK(stream.position() == size);
  }
  // Starting anywhere, by constructor or Seek.
  for (std::size_t start : {std::size_t{0}, std::size_t{1}, std::size_t{8}, std::size_t{65531},
                            std::size_t{65536}, std::size_t{131077}}) {
    std::vector<std::byte> got(size - start);
    ContentStream(5, false, start).Fill(got);
    CHECK_MESSAGE(std::equal(got.begin(), got.end(), whole.begin() + start), "start " << start);
    ContentStream seeked(5);
    std::vector<std::byte> skip(100);
    seeked.Fill(skip);
    seeked.Seek(start);
    std::vector<std::byte> again(size - start);
    seeked.Fill(again);
    CHECK(again == got);
  }
}

TEST_CASE("ContentStream boolean keeps only the lowest bit") {
  std::vector<std::byte> bits(10000);
  ContentStream(3, true).Fill(bits);
  const std::vector<std::byte> whole = ByDefinition(3, bits.size());
  bool saw_one = false;
  for (std::size_t i = 0; i < bits.size(); ++i) {
    CHECK(bits[i] == (whole[i] & std::byte{1}));
    saw_one = saw_one || bits[i] == std::byte{1};
  }
  CHECK(saw_one);
}

}  // namespace
}  // namespace iomimic
