// A zlib deflate stream that writes into a chunked output: the csv plugin's
// gzip and zip compression and the npz plugin's zip-deflated members.
// Header-only; its users link zlib (ZLIB::ZLIB) themselves.

#pragma once

#include <zlib.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstring>
#include <span>
#include <string>
#include <utility>

#include "iomimic/status.h"

namespace iomimic::zip {

// Compresses what Write is given into a sink: any object with
// std::span<std::byte> Writable() (a non-empty window to fill) and
// Status Commit(std::size_t n) (n bytes of the window were filled), the
// shape iomimic/format_helpers.h's AppendToSink writes into.
class DeflateStream {
 public:
  // `who` starts error messages ("csv"); zlib is handed at most `max_piece`
  // bytes of input and of output at once (its counters are 32-bit).
  explicit DeflateStream(std::string who, std::size_t max_piece = UINT_MAX)
      : who_(std::move(who)), max_piece_(std::min<std::size_t>(max_piece, UINT_MAX)) {}
  DeflateStream(const DeflateStream&) = delete;
  DeflateStream& operator=(const DeflateStream&) = delete;
  ~DeflateStream() {
    if (initialized_) deflateEnd(&z_);
  }

  // deflateInit2 with `level` (0-9 or Z_DEFAULT_COMPRESSION) and
  // `window_bits` (-15: raw deflate as in ZIP members, 31: gzip).
  // kResourceExhausted or kInternal when zlib refuses.
  Status Init(int level, int window_bits) {
    std::memset(&z_, 0, sizeof(z_));
    const int rc = deflateInit2(&z_, level, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY);
    if (rc == Z_MEM_ERROR) {
      return Status::ResourceExhausted(who_ + ": zlib deflateInit2: out of memory");
    }
    if (rc != Z_OK)
      return Status::Internal(who_ + ": zlib deflateInit2 failed: " + std::to_string(rc));
    initialized_ = true;
    return Status::OK();
  }

  // Compresses `input` into `sink` (Z_NO_FLUSH). The first error of the
  // sink or of zlib.
  template <typename Sink>
  Status Write(std::span<const std::byte> input, Sink& sink) {
    while (!input.empty()) {
      const std::size_t piece = std::min(input.size(), max_piece_);
      z_.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(input.data()));
      z_.avail_in = static_cast<uInt>(piece);
      while (true) {
        std::span<std::byte> out = Window(sink);
        const int rc = deflate(&z_, Z_NO_FLUSH);
        if (rc != Z_OK && rc != Z_BUF_ERROR) return Failed(rc);
        IOMIMIC_RETURN_IF_ERROR(sink.Commit(out.size() - z_.avail_out));
        if (z_.avail_in == 0 && z_.avail_out != 0) break;
      }
      input = input.subspan(piece);
    }
    return Status::OK();
  }

  // Flushes the end of the stream into `sink` (Z_FINISH).
  template <typename Sink>
  Status Finish(Sink& sink) {
    z_.next_in = nullptr;
    z_.avail_in = 0;
    while (true) {
      std::span<std::byte> out = Window(sink);
      const int rc = deflate(&z_, Z_FINISH);
      if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) return Failed(rc);
      IOMIMIC_RETURN_IF_ERROR(sink.Commit(out.size() - z_.avail_out));
      if (rc == Z_STREAM_END) return Status::OK();
    }
  }

 private:
  // Points zlib's output at the sink's window (at most max_piece_ bytes).
  template <typename Sink>
  std::span<std::byte> Window(Sink& sink) {
    std::span<std::byte> out = sink.Writable();
    out = out.first(std::min(out.size(), max_piece_));
    z_.next_out = reinterpret_cast<Bytef*>(out.data());
    z_.avail_out = static_cast<uInt>(out.size());
    return out;
  }

  Status Failed(int rc) const {
    return Status::Internal(who_ + ": zlib deflate failed with code " + std::to_string(rc));
  }

  std::string who_;
  std::size_t max_piece_;
  z_stream z_{};
  bool initialized_ = false;
};

}  // namespace iomimic::zip
