#include "csv_parse.h"

#include <charconv>
#include <cstring>
#include <limits>
#include <string_view>

namespace iomimic::csv {
namespace {

std::uint64_t DoubleBits(double d) {
  std::uint64_t b;
  std::memcpy(&b, &d, sizeof(b));
  return b;
}

// At most this many characters of a bad field are quoted in messages.
constexpr std::size_t kQuoteLimit = 40;

std::string Quote(const char* begin, const char* end) {
  std::string s(begin, static_cast<std::size_t>(end - begin));
  if (s.size() > kQuoteLimit) s = s.substr(0, kQuoteLimit) + "...";
  return "'" + s + "'";
}

}  // namespace

const char* TableKindName(TableKind kind) {
  switch (kind) {
    case TableKind::kNone:
      return "none";
    case TableKind::kBool:
      return "bool";
    case TableKind::kInt64:
      return "int64";
    case TableKind::kUInt64:
      return "uint64";
    case TableKind::kFloat64:
      return "float64";
  }
  return "?";
}

CsvParser::CsvParser(const std::string& path, std::string describe_offset, bool count_only,
                     Table* table)
    : path_(path),
      describe_offset_(std::move(describe_offset)),
      count_only_(count_only),
      table_(table) {
  table_->Clear();
}

Status CsvParser::Corrupt(const std::string& what, std::uint64_t offset) const {
  return Status::Corruption(path_ + ": line " + std::to_string(line_) + " at offset " +
                            std::to_string(offset) + " of the " + describe_offset_ + ": " + what);
}

Status CsvParser::Feed(std::span<const char> text) {
  const char* p = text.data();
  const char* const end = p + text.size();
  while (p < end) {
    const char* nl =
        static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(end - p)));
    const std::uint64_t at = offset_ + static_cast<std::uint64_t>(p - text.data());
    if (nl == nullptr) {
      if (carry_.empty()) carry_offset_ = at;
      carry_.append(p, static_cast<std::size_t>(end - p));
      break;
    }
    if (!carry_.empty()) {
      carry_.append(p, static_cast<std::size_t>(nl - p));
      Status s = Line(carry_.data(), carry_.data() + carry_.size(), carry_offset_);
      carry_.clear();
      IOMIMIC_RETURN_IF_ERROR(s);
    } else {
      IOMIMIC_RETURN_IF_ERROR(Line(p, nl, at));
    }
    p = nl + 1;
  }
  offset_ += text.size();
  return Status::OK();
}

Status CsvParser::Finish() {
  if (!carry_.empty()) {
    Status s = Line(carry_.data(), carry_.data() + carry_.size(), carry_offset_);
    carry_.clear();
    IOMIMIC_RETURN_IF_ERROR(s);
  }
  if (table_->rows == 0) {
    return Status::Corruption(path_ + ": no data rows in " + std::to_string(offset_) +
                              " bytes of " + describe_offset_ + " (at offset " +
                              std::to_string(offset_) + ")");
  }
  return Status::OK();
}

Status CsvParser::Line(const char* begin, const char* end, std::uint64_t offset) {
  ++line_;
  if (end > begin && end[-1] == '\r') --end;
  if (begin == end) return Status::OK();  // pandas skips blank lines
  if (first_line_) {
    first_line_ = false;
    std::uint64_t commas = 0;
    for (const char* p = begin; p < end; ++p) commas += *p == ',';
    fields_ = commas + 1;
    if (*begin == ',') {
      // pandas' header: an empty index label, then the column labels.
      has_header_ = true;
      index_column_ = true;
      if (fields_ < 2) return Corrupt("header line without columns", offset);
      table_->columns = fields_ - 1;
      return Status::OK();
    }
    table_->columns = fields_;
  }
  if (count_only_) {
    ++table_->rows;
    return Status::OK();
  }
  return ParseRow(begin, end, offset);
}

Status CsvParser::ParseRow(const char* begin, const char* end, std::uint64_t offset) {
  std::vector<std::uint64_t>& slots = table_->slots;
  if (table_->rows == 0) {
    // Room for the rows the text is expected to hold, judging by this one.
    const std::uint64_t line = static_cast<std::uint64_t>(end - begin) + 1;
    const std::uint64_t rows = expected_bytes_ > offset ? (expected_bytes_ - offset) / line + 1 : 1;
    slots.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(rows, std::uint64_t{1} << 20) *
                                           table_->columns));
  }
  std::uint64_t field = 0;
  const char* p = begin;
  while (true) {
    if (field >= fields_) {
      return Corrupt("more than the " + std::to_string(fields_) + " fields of the first row",
                     offset + static_cast<std::uint64_t>(p - begin));
    }
    const char* f = p;
    // Fast path: a field of up to 18 decimal digits (no sign, no overflow)
    // in an integer table. Lines are always followed by a byte that is not a
    // digit (their '\n', '\r' or the terminator of the carried line), so the
    // digit loop needs no bounds check.
    std::uint64_t value = 0;
    int digits = 0;
    for (unsigned d; (d = static_cast<unsigned>(*p - '0')) <= 9; ++p, ++digits)
      value = value * 10 + d;
    if (digits > 18) p = f;  // may have overflowed: the slow path decides
    const TableKind kind = table_->kind;
    if (digits > 0 && digits <= 18 && (p == end || *p == ',') &&
        (kind == TableKind::kInt64 || kind == TableKind::kUInt64 || kind == TableKind::kNone)) {
      if (!(index_column_ && field == 0)) {
        if (kind == TableKind::kNone) table_->kind = TableKind::kInt64;
        slots.push_back(value);
      }
    } else {
      p = static_cast<const char*>(std::memchr(f, ',', static_cast<std::size_t>(end - f)));
      if (p == nullptr) p = end;
      if (!(index_column_ && field == 0)) {
        IOMIMIC_RETURN_IF_ERROR(
            ParseField(f, p, field, offset + static_cast<std::uint64_t>(f - begin)));
      }
    }
    ++field;
    if (p == end) break;
    ++p;  // the comma
  }
  if (field != fields_) {
    return Corrupt("the row has " + std::to_string(field) + " fields but the first row has " +
                       std::to_string(fields_),
                   offset);
  }
  ++table_->rows;
  return Status::OK();
}

Status CsvParser::ParseField(const char* f, const char* q, std::uint64_t field, std::uint64_t at) {
  if (f == q) return Corrupt("empty field in column " + std::to_string(field), at);
  if (*f == 'T' || *f == 'F') {
    const std::string_view word(f, static_cast<std::size_t>(q - f));
    if (word == "True" || word == "False") {
      return Store(word == "True" ? 1 : 0, TableKind::kBool, at, f, q);
    }
  }
  // Integers: an optional sign and decimal digits.
  bool negative = false;
  const char* d = f;
  if (*d == '-' || *d == '+') {
    negative = *d == '-';
    ++d;
  }
  std::uint64_t magnitude = 0;
  bool integer = d < q;
  for (const char* c = d; c < q && integer; ++c) {
    const unsigned digit = static_cast<unsigned>(*c - '0');
    if (digit > 9 || magnitude > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) {
      integer = false;  // not an integer, or too large for one: read as a float like pandas
    } else {
      magnitude = magnitude * 10 + digit;
    }
  }
  if (integer) {
    constexpr std::uint64_t kInt64Max = std::numeric_limits<std::int64_t>::max();
    if (negative && magnitude <= kInt64Max + 1) {
      if (magnitude != 0) negative_seen_ = true;
      return Store(~magnitude + 1, TableKind::kInt64, at, f, q);  // two's complement
    }
    if (!negative) {
      return Store(magnitude, magnitude <= kInt64Max ? TableKind::kInt64 : TableKind::kUInt64, at,
                   f, q);
    }
  }
  // Floats (also nan and inf).
  const char* from = *f == '+' ? f + 1 : f;
  double value = 0;
  const std::from_chars_result r = std::from_chars(from, q, value);
  if (r.ec != std::errc() || r.ptr != q || from == q) {
    return Corrupt("malformed number " + Quote(f, q) + " in column " + std::to_string(field), at);
  }
  return Store(DoubleBits(value), TableKind::kFloat64, at, f, q);
}

void CsvParser::PromoteToDouble() {
  const bool was_signed = table_->kind == TableKind::kInt64;
  for (std::uint64_t& slot : table_->slots) {
    const double d = was_signed ? static_cast<double>(static_cast<std::int64_t>(slot))
                                : static_cast<double>(slot);
    slot = DoubleBits(d);
  }
  table_->kind = TableKind::kFloat64;
}

Status CsvParser::Store(std::uint64_t value, TableKind token, std::uint64_t offset,
                        const char* begin, const char* end) {
  TableKind& kind = table_->kind;
  if (kind == TableKind::kNone) kind = token;
  if ((kind == TableKind::kBool) != (token == TableKind::kBool)) {
    return Corrupt("value " + Quote(begin, end) + " mixes booleans and numbers (the table is " +
                       TableKindName(kind) + ")",
                   offset);
  }
  switch (kind) {
    case TableKind::kInt64:
      if (token == TableKind::kUInt64) {
        if (negative_seen_) {
          PromoteToDouble();
          value = DoubleBits(static_cast<double>(value));
        } else {
          kind = TableKind::kUInt64;  // every stored int64 is >= 0: same bits
        }
      } else if (token == TableKind::kFloat64) {
        PromoteToDouble();
      }
      break;
    case TableKind::kUInt64:
      if (token == TableKind::kInt64 && static_cast<std::int64_t>(value) < 0) {
        PromoteToDouble();
        value = DoubleBits(static_cast<double>(static_cast<std::int64_t>(value)));
      } else if (token == TableKind::kFloat64) {
        PromoteToDouble();
      }
      break;
    case TableKind::kFloat64:
      if (token == TableKind::kInt64) {
        value = DoubleBits(static_cast<double>(static_cast<std::int64_t>(value)));
      } else if (token == TableKind::kUInt64) {
        value = DoubleBits(static_cast<double>(value));
      }
      break;
    case TableKind::kBool:
    case TableKind::kNone:
      break;
  }
  table_->slots.push_back(value);
  return Status::OK();
}

}  // namespace iomimic::csv
