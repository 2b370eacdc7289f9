// NPY array headers (numpy.lib.format) as numpy 1.24 reads them: the
// preamble and dictionary parser of the npy and npz plugins. The header's
// layout and its one encoder, EncodeNpyHeader, are in the SDK
// (iomimic/npy.h), which this header includes.

#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "iomimic/npy.h"
#include "iomimic/status.h"

namespace iomimic::numpy {

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
