// The values of iomimic's CSV files: how they are generated from the seed and
// how they are written as text.
//
// A file holds num_samples rows of sample_elements() values. Row i is made
// from iomimic::Xoshiro256(MixSeed(spec.seed, i)) (every row differs, unlike
// DLIO, which repeats one random row; distinct rows let a reader prove it
// returned the right one):
//   bool                 the lowest bit of one stream byte per value
//   (u)int8/16/32/64     the stream bytes, little endian, full range
//   float16/32/64        uniform in [0, 1) with the type's precision:
//                        (Next() >> (64 - m)) * 2^-m for m = 11, 24, 53
// Text follows what pandas' to_csv writes for the dtype: integers in
// decimal, bools as True/False, floats as the shortest decimal that reads
// back to the same value of their own type (numpy's repr), in Python's repr
// notation: positional for 1e-4 <= |x| < 1e16 with at least one digit after
// the point ("0.5", "1.0"), scientific otherwise ("1e-05", "2.5e-07").
// Every value reads back exactly with float()/int() in Python, numpy.loadtxt
// and pandas (floats through float64 and then the element type).

#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "iomimic/format.h"
#include "iomimic/status.h"

namespace iomimic::csv {

enum class ValueKind : std::uint8_t { kBool, kSigned, kUnsigned, kFloat };

struct ValueType {
  ValueKind kind = ValueKind::kUnsigned;
  std::size_t size = 1;  // bytes per binary value
};

// Longest text of one value (a float64 such as -2.2250738585072014e-308).
inline constexpr std::size_t kMaxValueChars = 32;

// The value type of a NumPy element type; kInvalidArgument for types without
// a CSV representation.
Result<ValueType> ValueTypeOf(const ElementType& element_type);

// Fills `out` (columns * type.size bytes) with the binary values of the row
// whose generator is seeded with `seed`.
void GenerateRow(ValueType type, std::uint64_t seed, std::span<std::byte> out);

// Writes the text of the binary value at `value` to `out` (room for
// kMaxValueChars); returns the number of characters.
std::size_t FormatValue(ValueType type, const std::byte* value, char* out);

// Writes the text of `count` consecutive binary values at `values`, each
// followed by a comma, to `out` (room for count * (MaxValueChars(type) + 1)
// characters); returns the number of characters.
std::size_t FormatValues(ValueType type, const std::byte* values, std::size_t count, char* out);

// Upper bound of FormatValue's length for `type`.
std::size_t MaxValueChars(ValueType type);

// Python-repr text of a double given its shortest round-trip digits, e.g.
// FormatRepr(0.5) == "0.5". Exposed for tests.
std::size_t FormatDouble(double v, char* out);
std::size_t FormatFloat(float v, char* out);
std::size_t FormatHalf(std::uint16_t bits, char* out);

// IEEE binary16 conversions (round to nearest even).
float HalfToFloat(std::uint16_t bits);
std::uint16_t DoubleToHalf(double v);

}  // namespace iomimic::csv
