// Parsing CSV text into a table the way pandas.read_csv(...).to_numpy() does
// for iomimic's (and DLIO's) files: every line is a row of comma-separated
// numbers; blank lines are skipped; the table's dtype is inferred from all
// values: bool when every value is True/False, int64 for integers, uint64
// when an integer exceeds int64 and none is negative, float64 otherwise.
//
// Text arrives in pieces of any size (file chunks or decompressor output);
// a line that straddles pieces is carried over. Two layouts are accepted:
// plain rows, and pandas' default to_csv layout (what DLIO's csv_generator
// writes), recognised by a header line that starts with a comma
// (",0,1,2,...") and followed by rows whose first field is the row index,
// which is dropped.
//
// Errors are kCorruption naming the file, the line number and the byte
// offset of the line in the (decompressed) text.

#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "iomimic/status.h"

namespace iomimic::csv {

// The dtype pandas infers for the table.
enum class TableKind : std::uint8_t { kNone, kBool, kInt64, kUInt64, kFloat64 };

const char* TableKindName(TableKind kind);

// Parsed rows. Every value occupies one 8-byte slot holding an int64,
// uint64 or double (bit pattern) according to kind, or 0/1 for bool.
struct Table {
  TableKind kind = TableKind::kNone;
  std::uint64_t rows = 0;
  std::uint64_t columns = 0;
  std::vector<std::uint64_t> slots;  // rows * columns, row after row

  // Bytes of one row as returned to readers: 1 per value for bool, else 8.
  std::uint64_t row_bytes() const { return columns * (kind == TableKind::kBool ? 1 : 8); }
  void Clear() {
    kind = TableKind::kNone;
    rows = columns = 0;
    slots.clear();
  }
};

class CsvParser {
 public:
  // `describe_offset` names where offsets point ("file" for plain text, e.g.
  // "decompressed text" otherwise). With `count_only`, rows are counted and
  // the fields of the first row split, but no value is parsed or stored.
  CsvParser(const std::string& path, std::string describe_offset, bool count_only, Table* table);

  // Parses the next piece of text.
  Status Feed(std::span<const char> text);

  // Ends the text: parses a last line without a newline and completes the
  // table. kCorruption for a file without rows.
  Status Finish();

  // The expected size of the whole text, when known (the file size of plain
  // text): lets the table reserve its rows once.
  void set_expected_bytes(std::uint64_t bytes) { expected_bytes_ = bytes; }

  // True when the text starts with pandas' header line.
  bool has_header() const { return has_header_; }
  std::uint64_t text_bytes() const { return offset_; }

 private:
  Status Line(const char* begin, const char* end, std::uint64_t offset);
  Status ParseRow(const char* begin, const char* end, std::uint64_t offset);
  Status ParseField(const char* begin, const char* end, std::uint64_t field, std::uint64_t offset);
  Status Corrupt(const std::string& what, std::uint64_t offset) const;
  Status Store(std::uint64_t slot_value, TableKind token, std::uint64_t offset, const char* begin,
               const char* end);
  void PromoteToDouble();

  const std::string& path_;
  std::string describe_offset_;
  bool count_only_;
  Table* table_;

  std::string carry_;  // a partial line from the previous piece
  std::uint64_t carry_offset_ = 0;
  std::uint64_t offset_ = 0;  // text bytes fed so far
  std::uint64_t line_ = 0;    // lines completed so far (1-based numbering)
  bool first_line_ = true;    // no non-blank line seen yet
  bool has_header_ = false;
  bool index_column_ = false;
  std::uint64_t fields_ = 0;          // fields per row, index included
  bool negative_seen_ = false;        // an int64 below zero is stored
  std::uint64_t expected_bytes_ = 0;  // set_expected_bytes()
};

}  // namespace iomimic::csv
