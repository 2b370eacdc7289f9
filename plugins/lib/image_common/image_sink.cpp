#include "image_common/image_sink.h"

#include <algorithm>
#include <cstring>

namespace iomimic::image {

Status EnsureHostBuffer(Storage& storage, Buffer& buffer, std::size_t size, const char* what) {
  if (buffer.size() >= size && buffer.host_accessible()) return Status::OK();
  buffer.Reset();
  IOMIMIC_ASSIGN_OR_RETURN(buffer, AllocateHostBuffer(storage, size, what));
  return Status::OK();
}

std::size_t WriteChunkSize(const Storage& storage, std::uint64_t expected_bytes) {
  std::size_t align = storage.capabilities().alignment;
  if (align == 0) align = 1;
  std::uint64_t size = std::clamp<std::uint64_t>(expected_bytes, kMinWriteChunk, kMaxWriteChunk);
  size = (size + kMinWriteChunk - 1) / kMinWriteChunk * kMinWriteChunk;
  size = (size + align - 1) / align * align;
  return static_cast<std::size_t>(size);
}

Status ChunkedWriter::Write(std::uint64_t offset, std::span<const std::byte> data) {
  while (!data.empty()) {
    const bool inside = offset >= window_start_ && offset - window_start_ < buffer_.size();
    const std::uint64_t fill_end = window_start_ + window_fill_;
    // A gap past the filled part is zeros only if nothing was ever written
    // there, i.e. the window's end is the end of everything written.
    const bool gap_ok = offset <= fill_end || fill_end >= flushed_end_;
    if (!inside || !gap_ok) {
      IOMIMIC_RETURN_IF_ERROR(FlushWindow());
      window_start_ = offset;
      continue;
    }
    const std::size_t at = static_cast<std::size_t>(offset - window_start_);
    if (at > window_fill_) {
      std::memset(buffer_.data() + window_fill_, 0, at - window_fill_);
      window_fill_ = at;
    }
    const std::size_t n = std::min(data.size(), buffer_.size() - at);
    std::memcpy(buffer_.data() + at, data.data(), n);
    window_fill_ = std::max(window_fill_, at + n);
    offset += n;
    data = data.subspan(n);
    size_ = std::max(size_, offset);
    if (window_fill_ == buffer_.size()) {
      IOMIMIC_RETURN_IF_ERROR(FlushWindow());
      window_start_ = offset;
    }
  }
  return Status::OK();
}

bool ChunkedWriter::ReadBack(std::uint64_t offset, std::span<std::byte> out) const {
  if (offset < window_start_ || offset - window_start_ > window_fill_ ||
      out.size() > window_fill_ - (offset - window_start_)) {
    return out.empty();
  }
  if (!out.empty()) {
    std::memcpy(out.data(), buffer_.data() + (offset - window_start_), out.size());
  }
  return true;
}

Status ChunkedWriter::FlushWindow() {
  if (window_fill_ == 0) return Status::OK();
  const std::span<const std::byte> bytes(buffer_.data(), window_fill_);
  ++requests_;
  Status s = file_.WriteAt(window_start_, bytes);
  if (!s.ok()) return s.WithContext(std::string(format_) + ": writing " + path_);
  flushed_end_ = std::max<std::uint64_t>(flushed_end_, window_start_ + window_fill_);
  window_start_ += window_fill_;
  window_fill_ = 0;
  return Status::OK();
}

}  // namespace iomimic::image
