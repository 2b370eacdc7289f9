// Shared by the png, jpeg and tiff format plugins: buffers and the write
// path. An encoder hands its output to a ChunkedWriter, which collects it in
// one storage-allocated buffer and writes it through File::WriteAt in
// buffer-sized requests, so memory stays bounded whatever the image size and
// a small file costs a single write request.

#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "iomimic/buffer.h"
#include "iomimic/status.h"
#include "iomimic/storage.h"

namespace iomimic::image {

// Write requests are at most this large.
inline constexpr std::size_t kMaxWriteChunk = std::size_t{4} << 20;
// ... and the buffer is at least this large.
inline constexpr std::size_t kMinWriteChunk = std::size_t{64} << 10;

// Makes `buffer` hold at least `size` host bytes, reusing it when it is
// large enough.
Status EnsureHostBuffer(Storage& storage, Buffer& buffer, std::size_t size, const char* what);

// The buffer size for a file of about `expected_bytes`: rounded up to 64 KiB
// and to the storage alignment, between kMinWriteChunk and kMaxWriteChunk.
std::size_t WriteChunkSize(const Storage& storage, std::uint64_t expected_bytes);

// A random-access writer that coalesces writes into one window of the file
// held in memory. Appends extend the window; a full window is written out
// and the next one starts where it ended. A write a little past the end of
// the file leaves a gap of zeros in the window (as the file system would),
// which a later write may fill (libtiff writes a directory's out-of-line
// values before the directory). A write outside the window (such as a
// header patched at offset 0 after the window moved on) writes the window
// out and starts a new one there. Not thread-safe; one per file.
class ChunkedWriter {
 public:
  // `buffer` is the window's memory (host accessible, kept alive by the
  // caller); `format` prefixes error messages.
  ChunkedWriter(File& file, const std::string& path, const char* format,
                std::span<std::byte> buffer)
      : file_(file), path_(path), format_(format), buffer_(buffer) {}

  ChunkedWriter(const ChunkedWriter&) = delete;
  ChunkedWriter& operator=(const ChunkedWriter&) = delete;

  // Writes `data` at `offset` (eventually). Errors are the storage's, with
  // the path and offset.
  Status Write(std::uint64_t offset, std::span<const std::byte> data);

  // Writes `data` after the highest byte written so far.
  Status Append(std::span<const std::byte> data) { return Write(size_, data); }

  // Copies bytes [offset, offset + out.size()) into `out` when they are all
  // still in the window; false otherwise.
  bool ReadBack(std::uint64_t offset, std::span<std::byte> out) const;

  // Writes out what the window holds. Call once, after the last Write.
  Status Finish() { return FlushWindow(); }

  // One past the highest byte written: the file size after Finish().
  std::uint64_t size() const { return size_; }
  // Write requests issued so far.
  std::uint64_t requests() const { return requests_; }

 private:
  Status FlushWindow();

  File& file_;
  const std::string& path_;
  const char* format_;
  std::span<std::byte> buffer_;
  std::uint64_t window_start_ = 0;  // file offset of buffer_[0]
  std::size_t window_fill_ = 0;     // valid bytes from buffer_[0]
  std::uint64_t size_ = 0;
  std::uint64_t flushed_end_ = 0;  // one past the highest byte written out
  std::uint64_t requests_ = 0;
};

}  // namespace iomimic::image
