// iomimic plugin SDK: the header numpy writes in front of a .npy array
// (numpy.lib.format), byte for byte as numpy 1.24's np.save writes it. The
// one encoder of such headers: format plugins use it for their files and
// members, the core for the KV-cache tier's .npy objects (docs/kvcache.md,
// "Storage"). Header-only; allocates nothing but in EncodeNpyHeader.
//
// An NPY header is: the magic "\x93NUMPY", a major and minor version byte,
// the length of the dictionary text (little-endian uint16 for version 1.0,
// uint32 for 2.0 and 3.0), then the text of a Python dict literal
//   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4, 1), }
// padded with spaces and ended by '\n' so that the array data start on a
// 64-byte boundary. numpy >= 1.23 also reserves room after the dict for the
// growth axis to gain digits (GROWTH_AXIS_MAX_DIGITS = 21).

#pragma once

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "iomimic/status.h"

namespace iomimic::numpy {

inline constexpr std::string_view kNpyMagic = "\x93NUMPY";
// Magic plus the two version bytes.
inline constexpr std::size_t kNpyPreambleSize = 8;
// numpy.lib.format.ARRAY_ALIGN.
inline constexpr std::size_t kNpyArrayAlign = 64;
// numpy.lib.format.GROWTH_AXIS_MAX_DIGITS.
inline constexpr std::size_t kNpyGrowthAxisMaxDigits = 21;

namespace npy_internal {

// The fixed text of the dictionary, keys sorted as numpy writes them.
inline constexpr std::string_view kDescrKey = "{'descr': '";
inline constexpr std::string_view kOrderKey = "', 'fortran_order': ";
inline constexpr std::string_view kShapeKey = ", 'shape': (";
inline constexpr std::string_view kDictEnd = "), }";

inline std::size_t DecimalDigits(std::uint64_t value) {
  std::size_t digits = 1;
  for (; value >= 10; value /= 10) ++digits;
  return digits;
}

// The header's parts: dictionary text (growth-axis spaces included), the
// padding spaces before the '\n', the width of the length field and the
// major version.
struct NpyLayout {
  std::size_t dict = 0;
  std::size_t padding = 0;
  std::size_t length_width = 2;
  int major = 1;

  std::size_t size() const { return kNpyPreambleSize + length_width + dict + padding + 1; }
};

// numpy's _write_array_header and _wrap_header: version 1.0 unless the
// dictionary needs more than 65535 bytes, then 2.0; a full ARRAY_ALIGN of
// padding when the text already ends on the boundary. kInvalidArgument for a
// descr that is not a plain printable Python string or a header over 4 GiB.
inline Result<NpyLayout> PlanNpyHeader(std::string_view descr, std::span<const std::uint64_t> shape,
                                       bool fortran_order) {
  if (descr.empty()) return Status::InvalidArgument("empty dtype descr");
  for (char c : descr) {
    if (c < 0x20 || c > 0x7e || c == '\'' || c == '\\') {
      return Status::InvalidArgument("dtype descr '" + std::string(descr) +
                                     "' cannot be written into an NPY header");
    }
  }
  NpyLayout layout;
  layout.dict = kDescrKey.size() + descr.size() + kOrderKey.size() + (fortran_order ? 4 : 5) +
                kShapeKey.size() + kDictEnd.size();
  for (std::size_t i = 0; i < shape.size(); ++i) {
    layout.dict += DecimalDigits(shape[i]) + (i > 0 ? 2 : 0);
  }
  if (shape.size() == 1) ++layout.dict;  // "(7,)"
  if (!shape.empty()) {
    const std::size_t digits = DecimalDigits(shape[fortran_order ? shape.size() - 1 : 0]);
    if (digits < kNpyGrowthAxisMaxDigits) layout.dict += kNpyGrowthAxisMaxDigits - digits;
  }
  const std::size_t text = layout.dict + 1;  // and the '\n'
  for (;;) {
    layout.padding =
        kNpyArrayAlign - (kNpyPreambleSize + layout.length_width + text) % kNpyArrayAlign;
    if (layout.length_width == 4 || text + layout.padding <= 0xFFFF) break;
    layout.length_width = 4;
    layout.major = 2;
  }
  if (text + layout.padding > 0xFFFFFFFFull) return Status::InvalidArgument("NPY header too large");
  return layout;
}

inline char* Append(char* out, std::string_view text) {
  for (char c : text) *out++ = c;
  return out;
}

}  // namespace npy_internal

// The size in bytes of the header of an array of `descr` (a numpy dtype
// string such as "<f4" or "|u1") and `shape`: what WriteNpyHeader writes and
// what EncodeNpyHeader returns. kInvalidArgument for a descr that cannot
// appear in a Python string literal (empty, quote, backslash, non-printable).
inline Result<std::size_t> NpyHeaderSize(std::string_view descr,
                                         std::span<const std::uint64_t> shape,
                                         bool fortran_order = false) {
  IOMIMIC_ASSIGN_OR_RETURN(npy_internal::NpyLayout layout,
                           npy_internal::PlanNpyHeader(descr, shape, fortran_order));
  return layout.size();
}

// Writes the complete header (preamble, length, dict, padding, '\n') that
// numpy 1.24 writes for an array of `descr` and `shape` into the front of
// `out` and returns its size; allocates nothing. kInvalidArgument for a bad
// descr (as NpyHeaderSize) or when `out` is shorter than the header.
inline Result<std::size_t> WriteNpyHeader(std::string_view descr,
                                          std::span<const std::uint64_t> shape, bool fortran_order,
                                          std::span<char> out) {
  IOMIMIC_ASSIGN_OR_RETURN(npy_internal::NpyLayout layout,
                           npy_internal::PlanNpyHeader(descr, shape, fortran_order));
  if (out.size() < layout.size()) {
    return Status::InvalidArgument("NPY header of " + std::to_string(layout.size()) +
                                   " bytes does not fit a buffer of " + std::to_string(out.size()));
  }
  using npy_internal::Append;
  char* p = Append(out.data(), kNpyMagic);
  *p++ = static_cast<char>(layout.major);
  *p++ = '\0';
  const std::uint64_t length = layout.dict + layout.padding + 1;
  for (std::size_t i = 0; i < layout.length_width; ++i) {
    *p++ = static_cast<char>((length >> (8 * i)) & 0xFF);
  }
  char* const dict = p;
  p = Append(p, npy_internal::kDescrKey);
  p = Append(p, descr);
  p = Append(p, npy_internal::kOrderKey);
  p = Append(p, fortran_order ? "True" : "False");
  p = Append(p, npy_internal::kShapeKey);
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) p = Append(p, ", ");
    p = std::to_chars(p, out.data() + out.size(), shape[i]).ptr;
  }
  if (shape.size() == 1) *p++ = ',';
  p = Append(p, npy_internal::kDictEnd);
  // The growth-axis room and the alignment padding are both spaces.
  for (char* end = dict + layout.dict + layout.padding; p < end;) *p++ = ' ';
  *p = '\n';
  return layout.size();
}

// The header of WriteNpyHeader as a string.
inline Result<std::string> EncodeNpyHeader(std::string_view descr,
                                           std::span<const std::uint64_t> shape,
                                           bool fortran_order = false) {
  IOMIMIC_ASSIGN_OR_RETURN(std::size_t size, NpyHeaderSize(descr, shape, fortran_order));
  std::string header(size, '\0');
  IOMIMIC_RETURN_IF_ERROR(WriteNpyHeader(descr, shape, fortran_order, header).status());
  return header;
}

}  // namespace iomimic::numpy
