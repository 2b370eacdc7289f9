#include "csv_values.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <string_view>

#include "iomimic/random.h"

namespace iomimic::csv {
namespace {

// Decimal text of 0..255, for the common uint8 case.
struct ByteTexts {
  char text[256][4];
  std::uint8_t length[256];
};

constexpr ByteTexts MakeByteTexts() {
  ByteTexts t{};
  for (int v = 0; v < 256; ++v) {
    int n = 0;
    if (v >= 100) t.text[v][n++] = static_cast<char>('0' + v / 100);
    if (v >= 10) t.text[v][n++] = static_cast<char>('0' + v / 10 % 10);
    t.text[v][n++] = static_cast<char>('0' + v % 10);
    t.length[v] = static_cast<std::uint8_t>(n);
  }
  return t;
}

constexpr ByteTexts kByteTexts = MakeByteTexts();

template <typename T>
T Load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

template <typename T>
void Store(T v, std::byte* p) {
  std::memcpy(p, &v, sizeof(T));
}

template <typename T>
std::size_t Integer(T v, char* out) {
  return static_cast<std::size_t>(std::to_chars(out, out + kMaxValueChars, v).ptr - out);
}

// Rewrites the output of to_chars(..., chars_format::scientific) ("-d.ddde-XX")
// in Python's repr notation. `sci` and `out` may not overlap.
std::size_t ReprFromScientific(std::string_view sci, char* out) {
  char* p = out;
  std::size_t i = 0;
  if (i < sci.size() && sci[i] == '-') {
    *p++ = '-';
    ++i;
  }
  char digits[kMaxValueChars];
  std::size_t nd = 0;
  while (i < sci.size() && sci[i] != 'e') {
    if (sci[i] != '.') digits[nd++] = sci[i];
    ++i;
  }
  int exponent = 0;
  if (i < sci.size()) {
    std::from_chars(sci.data() + i + 1 + (sci[i + 1] == '+' ? 1 : 0), sci.data() + sci.size(),
                    exponent);
  }
  if (exponent >= -4 && exponent < 16) {
    if (exponent >= 0) {
      const std::size_t whole = static_cast<std::size_t>(exponent) + 1;
      for (std::size_t k = 0; k < whole; ++k) *p++ = k < nd ? digits[k] : '0';
      *p++ = '.';
      if (nd > whole) {
        for (std::size_t k = whole; k < nd; ++k) *p++ = digits[k];
      } else {
        *p++ = '0';
      }
    } else {
      *p++ = '0';
      *p++ = '.';
      for (int k = 0; k < -exponent - 1; ++k) *p++ = '0';
      for (std::size_t k = 0; k < nd; ++k) *p++ = digits[k];
    }
  } else {
    *p++ = digits[0];
    if (nd > 1) {
      *p++ = '.';
      for (std::size_t k = 1; k < nd; ++k) *p++ = digits[k];
    }
    *p++ = 'e';
    *p++ = exponent < 0 ? '-' : '+';
    const int magnitude = exponent < 0 ? -exponent : exponent;
    if (magnitude < 10) *p++ = '0';
    p = std::to_chars(p, out + kMaxValueChars, magnitude).ptr;
  }
  return static_cast<std::size_t>(p - out);
}

std::size_t NonFinite(double v, char* out) {
  const char* text = std::isnan(v) ? "nan" : (v < 0 ? "-inf" : "inf");
  const std::size_t n = std::strlen(text);
  std::memcpy(out, text, n);
  return n;
}

double ParseDouble(const char* begin, const char* end) {
  double d = 0;
  std::from_chars(begin, end, d);
  return d;
}

}  // namespace

Result<ValueType> ValueTypeOf(const ElementType& element_type) {
  const std::string& d = element_type.descr;
  if (d.size() == 3) {
    const char kind = d[1];
    const std::size_t size = static_cast<std::size_t>(d[2] - '0');
    const bool size_ok = size == 1 || size == 2 || size == 4 || size == 8;
    if (size_ok && size == element_type.size) {
      if (kind == 'b' && size == 1) return ValueType{ValueKind::kBool, 1};
      if (kind == 'u') return ValueType{ValueKind::kUnsigned, size};
      if (kind == 'i') return ValueType{ValueKind::kSigned, size};
      if (kind == 'f' && size >= 2) return ValueType{ValueKind::kFloat, size};
    }
  }
  return Status::InvalidArgument("csv: element type '" + element_type.name + "' (descr '" + d +
                                 "') has no CSV representation");
}

void GenerateRow(ValueType type, std::uint64_t seed, std::span<std::byte> out) {
  Xoshiro256 rng(seed);
  switch (type.kind) {
    case ValueKind::kBool:
      rng.Fill(out);
      for (std::byte& b : out) b &= std::byte{1};
      return;
    case ValueKind::kSigned:
    case ValueKind::kUnsigned:
      rng.Fill(out);
      return;
    case ValueKind::kFloat:
      break;
  }
  const std::size_t n = out.size() / type.size;
  std::byte* p = out.data();
  for (std::size_t i = 0; i < n; ++i, p += type.size) {
    const std::uint64_t u = rng.Next();
    if (type.size == 8) {
      Store(static_cast<double>(u >> 11) * 0x1p-53, p);
    } else if (type.size == 4) {
      Store(static_cast<float>(u >> 40) * 0x1p-24f, p);
    } else {
      // k * 2^-11 for k < 2^11 is exact in binary16.
      Store(DoubleToHalf(static_cast<double>(u >> 53) * 0x1p-11), p);
    }
  }
}

std::size_t FormatDouble(double v, char* out) {
  if (!std::isfinite(v)) return NonFinite(v, out);
  char sci[kMaxValueChars];
  const char* end = std::to_chars(sci, sci + sizeof(sci), v, std::chars_format::scientific).ptr;
  return ReprFromScientific(std::string_view(sci, static_cast<std::size_t>(end - sci)), out);
}

std::size_t FormatFloat(float v, char* out) {
  if (!std::isfinite(v)) return NonFinite(v, out);
  char sci[kMaxValueChars];
  const char* end = std::to_chars(sci, sci + sizeof(sci), v, std::chars_format::scientific).ptr;
  // Readers parse through float64 first; keep the float's shortest digits
  // only when that path gives the float back (otherwise the double's digits,
  // which always do).
  if (static_cast<float>(ParseDouble(sci, end)) != v) {
    end =
        std::to_chars(sci, sci + sizeof(sci), static_cast<double>(v), std::chars_format::scientific)
            .ptr;
  }
  return ReprFromScientific(std::string_view(sci, static_cast<std::size_t>(end - sci)), out);
}

std::size_t FormatHalf(std::uint16_t bits, char* out) {
  const double v = HalfToFloat(bits);
  if (!std::isfinite(v) || v == 0) return FormatDouble(v, out);
  // numpy prints the fewest significant digits that read back to the same
  // binary16 value, choosing the closest such string. Round-to-nearest at
  // each length is not enough: at a power of two the interval that rounds
  // to the value is lopsided, so both neighbours at each length are tried.
  const double a = std::fabs(v);
  int e10 = static_cast<int>(std::floor(std::log10(a)));
  if (std::pow(10.0, e10) > a) --e10;
  if (std::pow(10.0, e10 + 1) <= a) ++e10;
  for (int digits = 1; digits <= 6; ++digits) {
    const double scale = std::pow(10.0, digits - 1 - e10);
    const double m = a * scale;
    char best[kMaxValueChars];
    std::size_t best_size = 0;
    double best_distance = 0;
    for (const double c : {std::floor(m), std::ceil(m)}) {
      if (c <= 0) continue;
      // The candidate c * 10^(e10 - digits + 1) in scientific notation.
      char mantissa[24] = {};
      const char* end =
          std::to_chars(mantissa, mantissa + sizeof(mantissa), static_cast<std::uint64_t>(c)).ptr;
      std::size_t nd = static_cast<std::size_t>(end - mantissa);
      const int exponent = e10 + static_cast<int>(nd) - digits;  // c may have gained a digit
      while (nd > 1 && mantissa[nd - 1] == '0') --nd;
      char sci[kMaxValueChars];
      char* p = sci;
      if (v < 0) *p++ = '-';
      *p++ = mantissa[0];
      if (nd > 1) {
        *p++ = '.';
        for (std::size_t k = 1; k < nd; ++k) *p++ = mantissa[k];
      }
      *p++ = 'e';
      p = std::to_chars(p, sci + sizeof(sci), exponent).ptr;
      const std::size_t size = static_cast<std::size_t>(p - sci);
      if (DoubleToHalf(ParseDouble(sci, p)) != bits) continue;
      const double distance = std::fabs(c - m);
      if (best_size == 0 || distance < best_distance ||
          (distance == best_distance && static_cast<std::uint64_t>(c) % 2 == 0)) {
        std::memcpy(best, sci, size);
        best_size = size;
        best_distance = distance;
      }
    }
    if (best_size > 0) return ReprFromScientific(std::string_view(best, best_size), out);
  }
  return FormatFloat(static_cast<float>(v), out);
}

std::size_t FormatValue(ValueType type, const std::byte* value, char* out) {
  switch (type.kind) {
    case ValueKind::kBool:
      if (std::to_integer<int>(*value) != 0) {
        std::memcpy(out, "True", 4);
        return 4;
      }
      std::memcpy(out, "False", 5);
      return 5;
    case ValueKind::kUnsigned:
      switch (type.size) {
        case 1: {
          const std::uint8_t b = std::to_integer<std::uint8_t>(*value);
          std::memcpy(out, kByteTexts.text[b], 4);
          return kByteTexts.length[b];
        }
        case 2:
          return Integer(Load<std::uint16_t>(value), out);
        case 4:
          return Integer(Load<std::uint32_t>(value), out);
        default:
          return Integer(Load<std::uint64_t>(value), out);
      }
    case ValueKind::kSigned:
      switch (type.size) {
        case 1:
          return Integer(static_cast<int>(Load<std::int8_t>(value)), out);
        case 2:
          return Integer(Load<std::int16_t>(value), out);
        case 4:
          return Integer(Load<std::int32_t>(value), out);
        default:
          return Integer(Load<std::int64_t>(value), out);
      }
    case ValueKind::kFloat:
      switch (type.size) {
        case 2:
          return FormatHalf(Load<std::uint16_t>(value), out);
        case 4:
          return FormatFloat(Load<float>(value), out);
        default:
          return FormatDouble(Load<double>(value), out);
      }
  }
  return 0;
}

namespace {

template <typename T>
std::size_t FormatIntegers(const std::byte* values, std::size_t count, char* out) {
  char* p = out;
  for (std::size_t i = 0; i < count; ++i, values += sizeof(T)) {
    p = std::to_chars(p, p + kMaxValueChars, Load<T>(values)).ptr;
    *p++ = ',';
  }
  return static_cast<std::size_t>(p - out);
}

}  // namespace

std::size_t FormatValues(ValueType type, const std::byte* values, std::size_t count, char* out) {
  if (type.kind == ValueKind::kUnsigned && type.size == 1) {
    char* p = out;
    for (std::size_t i = 0; i < count; ++i) {
      const std::uint8_t b = std::to_integer<std::uint8_t>(values[i]);
      std::memcpy(p, kByteTexts.text[b], 4);
      p += kByteTexts.length[b];
      *p++ = ',';
    }
    return static_cast<std::size_t>(p - out);
  }
  if (type.kind == ValueKind::kUnsigned) {
    if (type.size == 2) return FormatIntegers<std::uint16_t>(values, count, out);
    if (type.size == 4) return FormatIntegers<std::uint32_t>(values, count, out);
    return FormatIntegers<std::uint64_t>(values, count, out);
  }
  if (type.kind == ValueKind::kSigned) {
    if (type.size == 1) return FormatIntegers<std::int8_t>(values, count, out);
    if (type.size == 2) return FormatIntegers<std::int16_t>(values, count, out);
    if (type.size == 4) return FormatIntegers<std::int32_t>(values, count, out);
    return FormatIntegers<std::int64_t>(values, count, out);
  }
  char* p = out;
  for (std::size_t i = 0; i < count; ++i, values += type.size) {
    p += FormatValue(type, values, p);
    *p++ = ',';
  }
  return static_cast<std::size_t>(p - out);
}

std::size_t MaxValueChars(ValueType type) {
  switch (type.kind) {
    case ValueKind::kBool:
      return 5;
    case ValueKind::kUnsigned:
      return type.size == 1 ? 3 : type.size == 2 ? 5 : type.size == 4 ? 10 : 20;
    case ValueKind::kSigned:
      return type.size == 1 ? 4 : type.size == 2 ? 6 : type.size == 4 ? 11 : 20;
    case ValueKind::kFloat:
      return 24;
  }
  return kMaxValueChars;
}

float HalfToFloat(std::uint16_t bits) {
  const std::uint32_t sign = static_cast<std::uint32_t>(bits >> 15) << 31;
  const std::uint32_t exponent = (bits >> 10) & 0x1F;
  std::uint32_t mantissa = bits & 0x3FF;
  std::uint32_t out;
  if (exponent == 0x1F) {
    out = sign | 0x7F800000u | (mantissa << 13);
  } else if (exponent != 0) {
    out = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    out = sign;
  } else {
    // Subnormal: normalise.
    int e = -1;
    do {
      ++e;
      mantissa <<= 1;
    } while ((mantissa & 0x400) == 0);
    out = sign | (static_cast<std::uint32_t>(112 - e) << 23) | ((mantissa & 0x3FF) << 13);
  }
  float f;
  std::memcpy(&f, &out, sizeof(f));
  return f;
}

std::uint16_t DoubleToHalf(double v) {
  std::uint64_t b;
  std::memcpy(&b, &v, sizeof(b));
  const std::uint16_t sign = static_cast<std::uint16_t>((b >> 48) & 0x8000);
  const int biased = static_cast<int>((b >> 52) & 0x7FF);
  const std::uint64_t mantissa = b & ((std::uint64_t{1} << 52) - 1);
  if (biased == 0x7FF) return static_cast<std::uint16_t>(sign | 0x7C00 | (mantissa ? 0x200 : 0));
  if (biased == 0) return sign;  // zero or a double subnormal: far below half's range
  const int exponent = biased - 1023;
  if (exponent > 15) return static_cast<std::uint16_t>(sign | 0x7C00);
  std::uint64_t full = mantissa | (std::uint64_t{1} << 52);
  int shift;
  std::uint64_t base;
  if (exponent >= -14) {
    shift = 42;
    base = static_cast<std::uint64_t>(exponent + 15) << 10;
    full = mantissa;  // the implicit bit is in the exponent field
  } else {
    shift = 28 - exponent;  // units of 2^-24
    base = 0;
    if (shift > 63) return sign;
  }
  std::uint64_t h = full >> shift;
  const std::uint64_t rest = full & ((std::uint64_t{1} << shift) - 1);
  const std::uint64_t half = std::uint64_t{1} << (shift - 1);
  if (rest > half || (rest == half && (h & 1))) ++h;
  return static_cast<std::uint16_t>(sign | (base + h));  // a carry rounds up the exponent
}

}  // namespace iomimic::csv
