#include "mds_json.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace iomimic::mds {
namespace {

constexpr int kMaxDepth = 64;

class Parser {
 public:
  Parser(std::string_view text, const std::string& what) : text_(text), what_(what) {}

  Result<JsonValue> ParseAll() {
    JsonValue value;
    IOMIMIC_RETURN_IF_ERROR(Value(&value, 0));
    SkipSpace();
    if (pos_ != text_.size()) return Error("text after the JSON value");
    return value;
  }

 private:
  Status Error(const std::string& why) const {
    return Status::Corruption(what_ + " at offset " + std::to_string(pos_) + ": " + why);
  }

  void SkipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  bool Literal(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  Status Value(JsonValue* out, int depth) {
    if (depth > kMaxDepth) return Error("JSON nested too deeply");
    SkipSpace();
    if (pos_ >= text_.size()) return Error("unexpected end of the JSON text");
    const char c = text_[pos_];
    if (c == '{') return Object(out, depth);
    if (c == '[') return Array(out, depth);
    if (c == '"') {
      out->kind = JsonValue::Kind::kString;
      return String(&out->text);
    }
    if (Literal("null")) {
      out->kind = JsonValue::Kind::kNull;
      return Status::OK();
    }
    if (Literal("true") || Literal("false")) {
      out->kind = JsonValue::Kind::kBool;
      out->boolean = text_[pos_ - 1] == 'e' && text_[pos_ - 2] == 'u';
      return Status::OK();
    }
    if (c == '-' || (c >= '0' && c <= '9')) return Number(out);
    return Error(std::string("unexpected character '") + c + "'");
  }

  Status Object(JsonValue* out, int depth) {
    out->kind = JsonValue::Kind::kObject;
    ++pos_;
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == '}') {
      ++pos_;
      return Status::OK();
    }
    for (;;) {
      SkipSpace();
      if (pos_ >= text_.size() || text_[pos_] != '"') return Error("expected a member name");
      std::string key;
      IOMIMIC_RETURN_IF_ERROR(String(&key));
      SkipSpace();
      if (pos_ >= text_.size() || text_[pos_] != ':') return Error("expected ':'");
      ++pos_;
      JsonValue value;
      IOMIMIC_RETURN_IF_ERROR(Value(&value, depth + 1));
      out->members.push_back(JsonMember{std::move(key), std::move(value)});
      SkipSpace();
      if (pos_ < text_.size() && text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < text_.size() && text_[pos_] == '}') {
        ++pos_;
        return Status::OK();
      }
      return Error("expected ',' or '}'");
    }
  }

  Status Array(JsonValue* out, int depth) {
    out->kind = JsonValue::Kind::kArray;
    ++pos_;
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == ']') {
      ++pos_;
      return Status::OK();
    }
    for (;;) {
      JsonValue value;
      IOMIMIC_RETURN_IF_ERROR(Value(&value, depth + 1));
      out->items.push_back(std::move(value));
      SkipSpace();
      if (pos_ < text_.size() && text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < text_.size() && text_[pos_] == ']') {
        ++pos_;
        return Status::OK();
      }
      return Error("expected ',' or ']'");
    }
  }

  static void AppendUtf8(std::uint32_t cp, std::string* out) {
    if (cp < 0x80) {
      out->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  Status Hex4(std::uint32_t* cp) {
    if (text_.size() - pos_ < 4) return Error("a \\u escape is cut");
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = text_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9') {
        v |= static_cast<std::uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        v |= static_cast<std::uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        v |= static_cast<std::uint32_t>(c - 'A' + 10);
      } else {
        return Error("a \\u escape holds a non-hex digit");
      }
    }
    *cp = v;
    return Status::OK();
  }

  Status Escape(std::string* out) {
    if (pos_ >= text_.size()) return Error("a string ends inside an escape");
    const char e = text_[pos_++];
    static constexpr std::string_view kFrom = "\"\\/bfnrt";
    static constexpr std::string_view kTo = "\"\\/\b\f\n\r\t";
    const std::size_t k = kFrom.find(e);
    if (k != std::string_view::npos) {
      out->push_back(kTo[k]);
      return Status::OK();
    }
    if (e != 'u') return Error(std::string("unknown escape '\\") + e + "'");
    std::uint32_t cp = 0;
    IOMIMIC_RETURN_IF_ERROR(Hex4(&cp));
    if (cp >= 0xD800 && cp < 0xDC00 && Literal("\\u")) {
      std::uint32_t low = 0;
      IOMIMIC_RETURN_IF_ERROR(Hex4(&low));
      if (low >= 0xDC00 && low < 0xE000) cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    }
    AppendUtf8(cp, out);
    return Status::OK();
  }

  Status String(std::string* out) {
    ++pos_;  // the opening quote
    for (;;) {
      if (pos_ >= text_.size()) return Error("a string is not closed");
      const char c = text_[pos_++];
      if (c == '"') return Status::OK();
      if (static_cast<unsigned char>(c) < 0x20) return Error("a control character in a string");
      if (c == '\\') {
        IOMIMIC_RETURN_IF_ERROR(Escape(out));
      } else {
        out->push_back(c);
      }
    }
  }

  Status Number(JsonValue* out) {
    const std::size_t start = pos_;
    if (text_[pos_] == '-') ++pos_;
    auto digits = [&] {
      const std::size_t from = pos_;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
      return pos_ - from;
    };
    if (digits() == 0) return Error("a number without digits");
    bool integer = true;
    if (pos_ < text_.size() && text_[pos_] == '.') {
      ++pos_;
      integer = false;
      if (digits() == 0) return Error("a number without digits after '.'");
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      ++pos_;
      integer = false;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      if (digits() == 0) return Error("a number without exponent digits");
    }
    const std::string literal(text_.substr(start, pos_ - start));
    out->kind = JsonValue::Kind::kNumber;
    out->number = std::strtod(literal.c_str(), nullptr);
    if (integer && literal[0] != '-' && literal.size() <= 20) {
      errno = 0;
      const unsigned long long v = std::strtoull(literal.c_str(), nullptr, 10);
      if (errno == 0) {
        out->uint = v;
        out->is_uint = true;
      }
    }
    return Status::OK();
  }

  std::string_view text_;
  const std::string& what_;
  std::size_t pos_ = 0;
};

}  // namespace

const JsonValue* JsonValue::Find(std::string_view key) const {
  for (const auto& [name, value] : members) {
    if (name == key) return &value;
  }
  return nullptr;
}

Result<JsonValue> ParseJson(std::string_view text, const std::string& what) {
  return Parser(text, what).ParseAll();
}

std::string JsonString(std::string_view s) {
  std::string out = "\"";
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    char escape[16];
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\b') {
      out += "\\b";
    } else if (c == '\f') {
      out += "\\f";
    } else if (c < 0x20 || c >= 0x80) {
      // Bytes of a UTF-8 sequence become one \uXXXX (two for a pair); a
      // byte that starts no valid sequence is written as its code point.
      std::uint32_t cp = c;
      std::size_t extra = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : 0;
      if (extra > 0 && i + extra < s.size()) {
        cp = c & (0x3F >> extra);
        for (std::size_t k = 1; k <= extra; ++k) {
          cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
        }
        i += extra;
      }
      if (cp >= 0x10000) {
        cp -= 0x10000;
        std::snprintf(escape, sizeof(escape), "\\u%04x\\u%04x", 0xD800 + (cp >> 10),
                      0xDC00 + (cp & 0x3FF));
      } else {
        std::snprintf(escape, sizeof(escape), "\\u%04x", cp);
      }
      out += escape;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  out.push_back('"');
  return out;
}

}  // namespace iomimic::mds
