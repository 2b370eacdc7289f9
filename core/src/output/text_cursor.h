// Reads numbers and words from gathered text without streams: the results
// merge parses every rank's records on rank 0 (output/merge.h), where
// std::istringstream's per-number cost dominated for 1,024 ranks
// (docs/cluster.md, "Scale").

#pragma once

#include <charconv>
#include <cstddef>
#include <string>
#include <string_view>

namespace iomimic::output {

class TextCursor {
 public:
  explicit TextCursor(std::string_view text) : p_(text.data()), end_(text.data() + text.size()) {}

  // The next number after blanks and line breaks; false (and ok() false from
  // then on) when there is none or it does not parse as T.
  template <typename T>
  bool Next(T* value) {
    Skip();
    const std::from_chars_result r = std::from_chars(p_, end_, *value);
    if (r.ec != std::errc() || r.ptr == p_) return ok_ = false;
    p_ = r.ptr;
    return true;
  }
  // The next word (up to a blank or line break).
  bool Word(std::string* out) {
    Skip();
    const char* start = p_;
    while (p_ < end_ && *p_ != ' ' && *p_ != '\n') ++p_;
    if (p_ == start) return ok_ = false;
    out->assign(start, p_);
    return true;
  }
  // Exactly `n` characters after one separating blank (a length-prefixed
  // field, which may hold blanks).
  bool Bytes(std::size_t n, std::string* out) {
    if (p_ < end_ && *p_ == ' ') ++p_;
    if (static_cast<std::size_t>(end_ - p_) < n) return ok_ = false;
    out->assign(p_, n);
    p_ += n;
    return true;
  }
  // True when only blanks and line breaks are left.
  bool AtEnd() {
    Skip();
    return p_ >= end_;
  }
  bool ok() const { return ok_; }

 private:
  void Skip() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n')) ++p_;
  }
  const char* p_;
  const char* end_;
  bool ok_ = true;
};

}  // namespace iomimic::output
