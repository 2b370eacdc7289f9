// A small writer and reader of Apache Thrift's compact protocol, enough for
// the Parquet structures the parquet plugin writes and reads (page headers
// and the footer's FileMetaData, see docs/parquet.md). Only what those
// structures use is supported: structs, i32/i64/i16/i8, booleans, binary
// (strings) and lists. Unknown fields are skipped on reading, so files from
// other writers (DuckDB, pyarrow) parse.

#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace iomimic::parquet::thrift {

// Compact protocol type ids (the low nibble of a field header).
enum Type : std::uint8_t {
  kStop = 0,
  kTrue = 1,
  kFalse = 2,
  kByte = 3,
  kI16 = 4,
  kI32 = 5,
  kI64 = 6,
  kDouble = 7,
  kBinary = 8,
  kList = 9,
  kSet = 10,
  kMap = 11,
  kStruct = 12,
};

// Appends compact-protocol bytes to a byte vector. Field ids of one struct
// must be written in increasing order (the deltas are kept per nesting
// level by BeginStruct/EndStruct).
class Writer {
 public:
  explicit Writer(std::vector<std::byte>* out) : out_(out) {}

  void I16(std::int16_t field, std::int16_t v);
  void I32(std::int16_t field, std::int32_t v);
  void I64(std::int16_t field, std::int64_t v);
  void Bool(std::int16_t field, bool v);
  void Byte(std::int16_t field, std::int8_t v);
  void String(std::int16_t field, std::string_view v);
  // A struct field: call EndStruct after writing its fields.
  void BeginStructField(std::int16_t field);
  // A struct as a list element: call EndStruct after writing its fields.
  void BeginStruct();
  void EndStruct();
  // A list field header of `size` elements of `element` type; the elements
  // follow (ListI32/ListString elements, or BeginStruct...EndStruct).
  void BeginList(std::int16_t field, Type element, std::size_t size);
  void ListI32(std::int32_t v) { Varint(ZigZag(v)); }
  void ListString(std::string_view v);
  // Ends the outermost struct (the stop byte).
  void Stop() { Put(kStop); }

 private:
  static std::uint64_t ZigZag(std::int64_t v) {
    return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
  }
  void FieldHeader(std::int16_t field, Type type);
  void Varint(std::uint64_t v);
  void Put(std::uint8_t b) { out_->push_back(static_cast<std::byte>(b)); }

  std::vector<std::byte>* out_;
  std::int16_t last_ = 0;
  std::vector<std::int16_t> stack_;
};

// Reads compact-protocol bytes from a span. Every method returns false on
// malformed or truncated input; position() then says where.
class Reader {
 public:
  Reader(const std::byte* data, std::size_t size) : data_(data), size_(size) {}

  // The next field header of the current struct: false on error; `type`
  // kStop at the end of the struct.
  bool Field(std::int16_t* id, Type* type);
  bool BoolValue(Type type, bool* v) const {
    *v = type == kTrue;
    return type == kTrue || type == kFalse;
  }
  bool I64(std::int64_t* v);
  bool I32(std::int32_t* v);
  bool Byte(std::int8_t* v);
  bool String(std::string* v);
  bool ListHeader(Type* element, std::size_t* size);
  // Before reading the fields of a nested struct, and after its stop.
  void EnterStruct();
  void LeaveStruct();
  // Skips a value of `type` (structs, lists, maps included).
  bool Skip(Type type, int depth = 0);

  std::size_t position() const { return pos_; }

 private:
  bool Varint(std::uint64_t* v);

  const std::byte* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
  std::int16_t last_ = 0;
  std::vector<std::int16_t> stack_;
};

}  // namespace iomimic::parquet::thrift
