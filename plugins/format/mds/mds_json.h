// The JSON the mds plugin writes and reads: index.json and the configuration
// text inside each shard. Writing follows Python's json.dumps(obj,
// sort_keys=True) with its default separators (", " and ": "), which is how
// mosaicml/streaming writes both, so the bytes are the library's; reading is
// a small strict JSON parser (RFC 8259 values, UTF-8 passed through) whose
// errors give the byte offset.

#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "iomimic/status.h"

namespace iomimic::mds {

struct JsonMember;

// A parsed JSON value. Numbers keep their text's integer value when they are
// non-negative integers that fit 64 bits (is_uint), and a double otherwise.
struct JsonValue {
  enum class Kind : std::uint8_t { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  bool boolean = false;
  double number = 0;
  std::uint64_t uint = 0;
  bool is_uint = false;
  std::string text;
  std::vector<JsonValue> items;     // kArray
  std::vector<JsonMember> members;  // kObject, in file order

  // The member `key` of an object, or null when absent (or not an object).
  const JsonValue* Find(std::string_view key) const;
};

// An object's member: its key and value. (A struct, not a std::pair: a pair
// of the still-incomplete JsonValue does not compile with every library.)
struct JsonMember {
  std::string first;
  JsonValue second;
};

// Parses `text` as one JSON value (surrounding whitespace allowed).
// kCorruption "<what> at offset <n>: <reason>" otherwise, `what` naming the
// text's origin (a file path).
Result<JsonValue> ParseJson(std::string_view text, const std::string& what);

// `s` as a JSON string literal as Python's json.dumps writes it (ASCII only:
// other characters as \uXXXX escapes, surrogate pairs above U+FFFF).
std::string JsonString(std::string_view s);

}  // namespace iomimic::mds
