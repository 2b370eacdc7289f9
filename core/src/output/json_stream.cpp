#include "output/json_stream.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace iomimic::output {
namespace {

// The buffer is written out when it holds this much.
constexpr std::size_t kFlushBytes = 256 * 1024;
// Values per line in a step list.
constexpr std::uint64_t kValuesPerLine = 10;

}  // namespace

std::size_t FormatNumber(double v, char* out) {
  if (!std::isfinite(v)) {
    std::memcpy(out, "null", 4);
    return 4;
  }
  const std::to_chars_result r = std::to_chars(out, out + kNumberChars - 2, v);
  std::size_t n = static_cast<std::size_t>(r.ptr - out);
  // "1" would read back as an integer; "1e+20" and "0.5" are floats already.
  if (std::find_if(out, r.ptr, [](char ch) { return ch == '.' || ch == 'e'; }) == r.ptr) {
    out[n++] = '.';
    out[n++] = '0';
  }
  return n;
}

std::uint64_t StepsPerEntry(std::uint64_t steps, std::uint64_t bound) {
  if (bound == 0 || steps <= bound) return 1;
  return steps / bound + (steps % bound != 0 ? 1 : 0);
}

std::uint64_t AggregatedSize(std::uint64_t steps, std::uint64_t k) {
  if (k <= 1) return steps;
  return steps / k + (steps % k != 0 ? 1 : 0);
}

double AggregatedEntry(std::span<const double> values, std::uint64_t k, std::uint64_t i) {
  if (k <= 1) return values[i];
  const std::uint64_t begin = i * k;
  const std::uint64_t end = std::min<std::uint64_t>(begin + k, values.size());
  double sum = 0;
  for (std::uint64_t j = begin; j < end; ++j) sum += values[j];
  const double mean = sum / static_cast<double>(end - begin);
  return std::isfinite(mean) ? std::round(mean * 1e9) / 1e9 : mean;
}

JsonStream::JsonStream() = default;

JsonStream::~JsonStream() {
  if (fd_ >= 0) ::close(fd_);
}

Status JsonStream::Open(const std::string& path) {
  path_ = path;
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) return Status::FromErrno(errno, "cannot create " + path);
  buffer_.reserve(kFlushBytes + 4096);
  buffer_ += '{';
  members_.assign(1, 0);
  return Status::OK();
}

void JsonStream::Append(std::string_view text) {
  buffer_.append(text);
  if (buffer_.size() >= kFlushBytes) Flush();
}

void JsonStream::Indent() { buffer_.append(4 * members_.size(), ' '); }

void JsonStream::Flush() {
  std::size_t done = 0;
  while (error_ == 0 && fd_ >= 0 && done < buffer_.size()) {
    const ssize_t n = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
    if (n < 0) {
      if (errno != EINTR) error_ = errno;
    } else {
      done += static_cast<std::size_t>(n);
    }
  }
  buffer_.clear();
}

void JsonStream::Key(std::string_view key) {
  if (members_.back()++ > 0) buffer_ += ',';
  buffer_ += '\n';
  Indent();
  buffer_ += '"';
  for (char ch : key) {
    switch (ch) {
      case '"':
        buffer_ += "\\\"";
        break;
      case '\\':
        buffer_ += "\\\\";
        break;
      case '\b':
        buffer_ += "\\b";
        break;
      case '\f':
        buffer_ += "\\f";
        break;
      case '\n':
        buffer_ += "\\n";
        break;
      case '\r':
        buffer_ += "\\r";
        break;
      case '\t':
        buffer_ += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(ch) < 0x20) {
          char esc[8];
          std::snprintf(esc, sizeof(esc), "\\u%04x", static_cast<unsigned>(ch));
          buffer_ += esc;
        } else {
          buffer_ += ch;
        }
    }
  }
  Append("\": ");
}

void JsonStream::BeginObject() {
  buffer_ += '{';
  members_.push_back(0);
}

void JsonStream::EndObject() {
  const bool empty = members_.back() == 0;
  members_.pop_back();
  if (!empty) {
    buffer_ += '\n';
    Indent();
  }
  Append("}");
}

void JsonStream::Raw(std::string_view json) {
  std::size_t at = 0;
  while (at < json.size()) {
    const std::size_t nl = json.find('\n', at);
    if (nl == std::string_view::npos) {
      buffer_.append(json.substr(at));
      break;
    }
    buffer_.append(json.substr(at, nl + 1 - at));
    Indent();
    at = nl + 1;
  }
  if (buffer_.size() >= kFlushBytes) Flush();
}

void JsonStream::Number(double v) {
  char text[kNumberChars];
  Append(std::string_view(text, FormatNumber(v, text)));
}

void JsonStream::StepList(std::span<const double> values, std::uint64_t k) {
  const std::uint64_t n = AggregatedSize(values.size(), k);
  if (n == 0) {
    Append("[]");
    return;
  }
  buffer_ += '[';
  members_.push_back(0);  // the list's values are one level deeper
  char text[kNumberChars];
  for (std::uint64_t i = 0; i < n; ++i) {
    if (i % kValuesPerLine == 0) {
      if (i > 0) buffer_ += ',';
      buffer_ += '\n';
      Indent();
    } else {
      buffer_ += ", ";
    }
    buffer_.append(text, FormatNumber(AggregatedEntry(values, k, i), text));
    if (buffer_.size() >= kFlushBytes) Flush();
  }
  members_.pop_back();
  buffer_ += '\n';
  Indent();
  Append("]");
}

Status JsonStream::Close() {
  if (fd_ < 0) return Status::Internal("JsonStream::Close without Open");
  if (members_.size() != 1) return Status::Internal("JsonStream: " + path_ + ": object left open");
  EndObject();
  buffer_ += '\n';
  Flush();
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0 && error_ == 0) error_ = errno;
  if (error_ != 0) return Status::FromErrno(error_, "cannot write " + path_);
  return Status::OK();
}

}  // namespace iomimic::output
