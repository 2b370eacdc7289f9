// NPY array headers (numpy.lib.format), as numpy 1.24 writes and reads them.
//
// An NPY header is: the magic "\x93NUMPY", a major and minor version byte,
// the length of the dictionary text (little-endian uint16 for version 1.0,
// uint32 for 2.0 and 3.0), then the text of a Python dict literal
//   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4, 1), }
// padded with spaces and ended by '\n' so that the array data start on a
// 64-byte boundary. numpy >= 1.23 also reserves room after the dict for the
// growth axis to gain digits (GROWTH_AXIS_MAX_DIGITS = 21).

#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "iomimic/status.h"

namespace iomimic::numpy {

inline constexpr std::string_view kNpyMagic = "\x93NUMPY";
// Magic plus the two version bytes.
inline constexpr std::size_t kNpyPreambleSize = 8;
// numpy.lib.format.ARRAY_ALIGN.
inline constexpr std::size_t kNpyArrayAlign = 64;
// numpy.lib.format.GROWTH_AXIS_MAX_DIGITS.
inline constexpr std::size_t kNpyGrowthAxisMaxDigits = 21;
// numpy's default max_header_size for np.load (allow_pickle=False): longer
// dictionaries are refused.
inline constexpr std::size_t kNpyMaxHeaderSize = 10000;

// An element type decoded from a descr string such as "<f4" or "|u1".
struct NpyDtype {
  char byte_order = '|';  // '<', '>', '|' or '='
  char kind = 'u';        // numpy kind character: b i u f c S V U M m
  std::size_t itemsize = 1;
};

// Decodes a simple (non-structured) descr string. kNotSupported for object
// arrays, structured types and anything this reader cannot size.
Result<NpyDtype> ParseNpyDescr(std::string_view descr);

// A parsed NPY header.
struct NpyHeader {
  int major_version = 1;
  int minor_version = 0;
  std::string descr;
  NpyDtype dtype;
  bool fortran_order = false;
  std::vector<std::uint64_t> shape;
  // Bytes before the array data: preamble, length field and dictionary.
  std::uint64_t header_size = 0;

  // Number of elements, or kCorruption when the product overflows 64 bits.
  Result<std::uint64_t> ElementCount() const;
  // ElementCount() * itemsize, or kCorruption on overflow.
  Result<std::uint64_t> DataBytes() const;
};

// Returns the complete header (preamble, length, dict, padding, '\n') that
// numpy 1.24 writes for an array of `descr` and `shape`: version 1.0 unless
// the dictionary needs more than 65535 bytes, then 2.0. kInvalidArgument for a
// descr that cannot appear in a Python string literal.
Result<std::string> EncodeNpyHeader(std::string_view descr, std::span<const std::uint64_t> shape,
                                    bool fortran_order = false);

// Checks the magic and version of the first kNpyPreambleSize bytes. On
// success returns the width in bytes (2 or 4) of the header-length field that
// follows. kCorruption ("bad NPY magic", "unsupported NPY version") otherwise.
Result<std::size_t> ParseNpyPreamble(std::span<const std::byte> preamble, int* major_version,
                                     int* minor_version);

// Parses the dictionary text of a header of the given version (the bytes after
// the length field). Follows numpy's checks: exactly the keys descr,
// fortran_order and shape; shape a tuple of non-negative ints; fortran_order a
// bool. Messages do not name a file; callers add path and offset.
// kCorruption for text that is not such a dictionary, kNotSupported for a
// valid but unsupported descr. `header_size` is left 0 for the caller.
Result<NpyHeader> ParseNpyDict(std::string_view text, int major_version);

}  // namespace iomimic::numpy
