#include "npy_header/npy_header.h"

#include <cstring>
#include <limits>
#include <optional>
#include <utility>

namespace iomimic::numpy {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Parses a run of decimal digits; nullopt when empty or above 2^64-1.
std::optional<std::uint64_t> ParseDigits(std::string_view digits) {
  if (digits.empty()) return std::nullopt;
  std::uint64_t value = 0;
  for (char c : digits) {
    if (!IsDigit(c)) return std::nullopt;
    const auto d = static_cast<std::uint64_t>(c - '0');
    if (value > (std::numeric_limits<std::uint64_t>::max() - d) / 10) return std::nullopt;
    value = value * 10 + d;
  }
  return value;
}

Status BadDescr(std::string_view descr) {
  return Status::InvalidArgument("'" + std::string(descr) + "' is not a valid dtype descr");
}

// A cursor over the dictionary text of an NPY header. Understands the subset
// of Python literal syntax numpy writes: a dict with string keys whose values
// are strings, True/False and tuples of ints.
class DictParser {
 public:
  DictParser(std::string_view text, bool allow_long_suffix)
      : text_(text), allow_long_suffix_(allow_long_suffix) {}

  Result<NpyHeader> Parse() {
    NpyHeader header;
    bool have_descr = false;
    bool have_order = false;
    bool have_shape = false;
    SkipSpace();
    if (!Consume('{')) return Error("header is not a dictionary");
    while (true) {
      SkipSpace();
      if (Consume('}')) break;
      std::string key;
      IOMIMIC_RETURN_IF_ERROR(ParseString(&key));
      SkipSpace();
      if (!Consume(':')) return Error("expected ':' after key '" + key + "'");
      SkipSpace();
      if (key == "descr") {
        if (have_descr) return Error("duplicate key 'descr'");
        have_descr = true;
        if (Peek() == '[') {
          return Status::NotSupported("structured dtypes (a descr list) are not supported");
        }
        IOMIMIC_RETURN_IF_ERROR(ParseString(&header.descr));
      } else if (key == "fortran_order") {
        if (have_order) return Error("duplicate key 'fortran_order'");
        have_order = true;
        if (ConsumeWord("True")) {
          header.fortran_order = true;
        } else if (ConsumeWord("False")) {
          header.fortran_order = false;
        } else {
          return Error("fortran_order is not a valid bool");
        }
      } else if (key == "shape") {
        if (have_shape) return Error("duplicate key 'shape'");
        have_shape = true;
        IOMIMIC_RETURN_IF_ERROR(ParseShape(&header.shape));
      } else {
        return Error("unexpected key '" + key + "'");
      }
      SkipSpace();
      if (Consume(',')) continue;
      if (Consume('}')) break;
      return Error("expected ',' or '}' after the value of '" + key + "'");
    }
    SkipSpace();
    if (pos_ != text_.size()) return Error("unexpected text after the dictionary");
    if (!have_descr || !have_order || !have_shape) {
      return Error("header does not contain the keys descr, fortran_order and shape");
    }
    Result<NpyDtype> dtype = ParseNpyDescr(header.descr);
    if (!dtype.ok()) {
      if (dtype.status().code() == StatusCode::kNotSupported) return dtype.status();
      return Error(dtype.status().message());
    }
    header.dtype = *dtype;
    return header;
  }

 private:
  char Peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }

  bool Consume(char c) {
    if (Peek() != c) return false;
    ++pos_;
    return true;
  }

  bool ConsumeWord(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    const std::size_t end = pos_ + word.size();
    if (end < text_.size()) {
      const char next = text_[end];
      if (IsDigit(next) || (next >= 'a' && next <= 'z') || (next >= 'A' && next <= 'Z') ||
          next == '_') {
        return false;
      }
    }
    pos_ = end;
    return true;
  }

  void SkipSpace() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' ||
            text_[pos_] == '\r' || text_[pos_] == '\f' || text_[pos_] == '\v')) {
      ++pos_;
    }
  }

  Status Error(std::string what) const {
    return Status::Corruption(std::move(what) + " (dictionary byte " + std::to_string(pos_) + ")");
  }

  Status ParseString(std::string* out) {
    const char quote = Peek();
    if (quote != '\'' && quote != '"') return Error("expected a quoted string");
    ++pos_;
    const std::size_t start = pos_;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      if (text_[pos_] == '\\' || text_[pos_] == '\n') return Error("unsupported string literal");
      ++pos_;
    }
    if (pos_ >= text_.size()) return Error("unterminated string");
    *out = std::string(text_.substr(start, pos_ - start));
    ++pos_;
    return Status::OK();
  }

  Status ParseInt(std::uint64_t* out) {
    if (Peek() == '-') return Error("shape has a negative dimension");
    const std::size_t start = pos_;
    while (IsDigit(Peek())) ++pos_;
    std::optional<std::uint64_t> value = ParseDigits(text_.substr(start, pos_ - start));
    if (!value)
      return Error(pos_ == start ? "shape is not a tuple of ints" : "shape value too large");
    if (allow_long_suffix_ && (Peek() == 'L' || Peek() == 'l')) ++pos_;
    *out = *value;
    return Status::OK();
  }

  Status ParseShape(std::vector<std::uint64_t>* shape) {
    if (!Consume('(')) return Error("shape is not a tuple");
    shape->clear();
    SkipSpace();
    if (Consume(')')) return Status::OK();
    bool saw_comma = false;
    while (true) {
      std::uint64_t dim = 0;
      IOMIMIC_RETURN_IF_ERROR(ParseInt(&dim));
      shape->push_back(dim);
      SkipSpace();
      if (Consume(')')) break;
      if (!Consume(',')) return Error("expected ',' or ')' in shape");
      saw_comma = true;
      SkipSpace();
      if (Consume(')')) break;
    }
    // "(3)" is the int 3 in Python, not a tuple.
    if (!saw_comma) return Error("shape is not a tuple");
    return Status::OK();
  }

  std::string_view text_;
  bool allow_long_suffix_;
  std::size_t pos_ = 0;
};

}  // namespace

Result<NpyDtype> ParseNpyDescr(std::string_view descr) {
  NpyDtype dtype;
  std::string_view rest = descr;
  if (!rest.empty() && (rest[0] == '<' || rest[0] == '>' || rest[0] == '|' || rest[0] == '=')) {
    dtype.byte_order = rest[0];
    rest.remove_prefix(1);
  } else {
    dtype.byte_order = '=';
  }
  if (rest.empty()) return BadDescr(descr);
  dtype.kind = rest[0];
  rest.remove_prefix(1);
  switch (dtype.kind) {
    case '?':
      if (!rest.empty()) return BadDescr(descr);
      dtype.kind = 'b';
      dtype.itemsize = 1;
      return dtype;
    case 'O':
      return Status::NotSupported("object arrays ('" + std::string(descr) +
                                  "') need pickle and are not supported");
    case 'M':
    case 'm': {
      // datetime64 / timedelta64: "M8" or "M8[unit]"; always 8 bytes.
      if (rest.empty() || rest[0] != '8') return BadDescr(descr);
      rest.remove_prefix(1);
      if (!rest.empty() && (rest.front() != '[' || rest.back() != ']')) return BadDescr(descr);
      dtype.itemsize = 8;
      return dtype;
    }
    default:
      break;
  }
  std::optional<std::uint64_t> n = ParseDigits(rest);
  if (!n || *n > (std::uint64_t{1} << 31)) return BadDescr(descr);
  const std::uint64_t size = *n;
  switch (dtype.kind) {
    case 'b':
      if (size != 1) return BadDescr(descr);
      break;
    case 'i':
    case 'u':
      if (size != 1 && size != 2 && size != 4 && size != 8) return BadDescr(descr);
      break;
    case 'f':
      if (size != 2 && size != 4 && size != 8 && size != 16) return BadDescr(descr);
      break;
    case 'c':
      if (size != 8 && size != 16 && size != 32) return BadDescr(descr);
      break;
    case 'S':
    case 'a':
    case 'V':
      dtype.kind = dtype.kind == 'a' ? 'S' : dtype.kind;
      break;
    case 'U':
      dtype.itemsize = static_cast<std::size_t>(size * 4);
      return dtype;
    default:
      return BadDescr(descr);
  }
  dtype.itemsize = static_cast<std::size_t>(size);
  return dtype;
}

Result<std::uint64_t> NpyHeader::ElementCount() const {
  std::uint64_t count = 1;
  for (std::uint64_t d : shape) {
    if (d != 0 && count > std::numeric_limits<std::uint64_t>::max() / d) {
      return Status::Corruption("array shape overflows 64 bits");
    }
    count *= d;
  }
  return count;
}

Result<std::uint64_t> NpyHeader::DataBytes() const {
  IOMIMIC_ASSIGN_OR_RETURN(std::uint64_t count, ElementCount());
  if (dtype.itemsize != 0 && count > std::numeric_limits<std::uint64_t>::max() / dtype.itemsize) {
    return Status::Corruption("array size overflows 64 bits");
  }
  return count * dtype.itemsize;
}

Result<std::size_t> ParseNpyPreamble(std::span<const std::byte> preamble, int* major_version,
                                     int* minor_version) {
  if (preamble.size() < kNpyPreambleSize ||
      std::memcmp(preamble.data(), kNpyMagic.data(), kNpyMagic.size()) != 0) {
    return Status::Corruption("bad NPY magic (expected \\x93NUMPY)");
  }
  const int major = static_cast<int>(preamble[6]);
  const int minor = static_cast<int>(preamble[7]);
  if (minor != 0 || major < 1 || major > 3) {
    return Status::Corruption("unsupported NPY version " + std::to_string(major) + "." +
                              std::to_string(minor));
  }
  *major_version = major;
  *minor_version = minor;
  return major == 1 ? std::size_t{2} : std::size_t{4};
}

Result<NpyHeader> ParseNpyDict(std::string_view text, int major_version) {
  DictParser parser(text, /*allow_long_suffix=*/major_version <= 2);
  IOMIMIC_ASSIGN_OR_RETURN(NpyHeader header, parser.Parse());
  header.major_version = major_version;
  header.minor_version = 0;
  return header;
}

}  // namespace iomimic::numpy
