// Tests of the SDK's NPY header encoder (iomimic/npy.h): byte-exact against
// what numpy 1.24 writes. The expected headers were printed by
//   numpy.lib.format._write_array_header(f, {'descr': ..., 'fortran_order':
//   ..., 'shape': ...}, None)
// (Debian's python3-numpy 1.24.2) and are hard-coded here.

#include "iomimic/npy.h"

#include <doctest/doctest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace iomimic::numpy {
namespace {

// Magic, version 1.0 and the length 118 (0x76): every 128-byte header.
const std::string kPreamble128("\x93NUMPY\x01\x00\x76\x00", 10);

struct Case {
  std::string_view descr;
  std::vector<std::uint64_t> shape;
  bool fortran_order;
  std::string expected;
};

std::vector<Case> NumpyCases() {
  return {
      {"<f4",
       {3, 4, 1},
       false,
       kPreamble128 + "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4, 1), }"
                      "                                                       \n"},
      {"|u1",
       {7},
       false,
       kPreamble128 + "{'descr': '|u1', 'fortran_order': False, 'shape': (7,), }"
                      "                                                            \n"},
      {"<f8",
       {},
       false,
       kPreamble128 + "{'descr': '<f8', 'fortran_order': False, 'shape': (), }"
                      "                                                              \n"},
      // Fortran order: the growth axis is the last one.
      {"<i2",
       {2, 300},
       true,
       kPreamble128 + "{'descr': '<i2', 'fortran_order': True, 'shape': (2, 300), }"
                      "                                                         \n"},
      // A KV-cache entry (docs/kvcache.md, "Storage").
      {"<f2",
       {32, 2, 1000, 8, 128},
       false,
       kPreamble128 + "{'descr': '<f2', 'fortran_order': False, 'shape': (32, 2, 1000, 8, 128), }"
                      "                                           \n"},
      // Text that ends on the 64-byte boundary gets a full 64 bytes of
      // padding (20 growth-axis spaces + 64): 192 bytes, length 0xb6.
      {"<u2",
       {1, 10000000000000000, 10000000000000000000u},
       false,
       std::string("\x93NUMPY\x01\x00\xb6\x00", 10) +
           "{'descr': '<u2', 'fortran_order': False, 'shape': (1, 10000000000000000, "
           "10000000000000000000), }"
           "                                                                                    "
           "\n"},
  };
}

TEST_CASE("EncodeNpyHeader writes numpy's header byte for byte") {
  for (const Case& c : NumpyCases()) {
    CAPTURE(c.expected);
    Result<std::string> header = EncodeNpyHeader(c.descr, c.shape, c.fortran_order);
    REQUIRE(header.ok());
    CHECK(*header == c.expected);
    CHECK(header->size() % kNpyArrayAlign == 0);
    Result<std::size_t> size = NpyHeaderSize(c.descr, c.shape, c.fortran_order);
    REQUIRE(size.ok());
    CHECK(*size == c.expected.size());
  }
}

TEST_CASE("WriteNpyHeader writes the same header into a buffer and refuses a short one") {
  for (const Case& c : NumpyCases()) {
    CAPTURE(c.expected);
    std::array<char, 256> buffer{};
    Result<std::size_t> n = WriteNpyHeader(c.descr, c.shape, c.fortran_order, buffer);
    REQUIRE(n.ok());
    CHECK(std::string(buffer.data(), *n) == c.expected);

    std::vector<char> small(c.expected.size() - 1, 'x');
    Result<std::size_t> refused = WriteNpyHeader(c.descr, c.shape, c.fortran_order, small);
    CHECK(refused.status().code() == StatusCode::kInvalidArgument);
    CHECK(small == std::vector<char>(c.expected.size() - 1, 'x'));  // untouched
  }
}

TEST_CASE("Every header ends on the 64-byte boundary, whatever the digits") {
  for (std::uint64_t d = 1; d < 100000000000ull; d = d * 10 + 7) {
    CAPTURE(d);
    const std::vector<std::uint64_t> shape = {d, 3, d};
    Result<std::string> header = EncodeNpyHeader("<f8", shape);
    REQUIRE(header.ok());
    CHECK(header->size() % kNpyArrayAlign == 0);
    CHECK(header->back() == '\n');
  }
}

TEST_CASE("A dictionary over 65535 bytes gets an NPY 2.0 header") {
  // 22,000 dimensions of 1; numpy writes version 2.0 with a uint32 length
  // 0x00010234 and 66,112 bytes in all.
  const std::vector<std::uint64_t> shape(22000, 1);
  Result<std::string> header = EncodeNpyHeader("|u1", shape);
  REQUIRE(header.ok());
  CHECK(header->size() == 66112);
  CHECK(header->substr(0, 12) == std::string("\x93NUMPY\x02\x00\x34\x02\x01\x00", 12));
  CHECK(header->substr(12, 50) == "{'descr': '|u1', 'fortran_order': False, 'shape': ");
  CHECK(header->substr(header->size() - 80) ==
        " 1, 1, 1, 1, 1, 1, 1, 1, 1, 1), }                                              \n");
}

TEST_CASE("A descr that is no plain Python string is refused") {
  const std::vector<std::uint64_t> shape = {2};
  for (std::string_view descr : {std::string_view(""), std::string_view("<f'4"),
                                 std::string_view("<f\\4"), std::string_view("<f\n4")}) {
    CAPTURE(descr);
    CHECK(EncodeNpyHeader(descr, shape).status().code() == StatusCode::kInvalidArgument);
    CHECK(NpyHeaderSize(descr, shape).status().code() == StatusCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace iomimic::numpy
