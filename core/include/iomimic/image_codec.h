// iomimic plugin SDK: what an image codec is made of (header-only).
//
// An image format (a bundled one or a third party's) is a codec behind
// the image format shell of iomimic/image_format.h: the shell is the
// Format (one image per file, DLIO's whole-file read, the options and the
// plugin descriptor), the codec only knows its bytes. This header holds the
// codec interface, ImageCodec, and the parts codecs share: how a FileSpec
// maps onto an image (GeometryFromSpec), the size check of a header
// (CheckDecodedSize), the error of damaged data (CorruptAt) and the
// writing sink (ChunkedWriter). docs/plugins.md ("Image formats") walks
// through writing one.
//
// DLIO's image generators write one image per file:
//   Image.fromarray(np.random.randint(255, size=(d1, d2), dtype=np.uint8))
// so an image has d1 rows (its height) and d2 columns (its width); PIL's
// Image.size is (d2, d1) and np.asarray(Image.open(f)).shape is (d1, d2).
// iomimic follows the same convention: sample_shape {d1, d2} (or
// {d1, d2, c} with c = 1 for greyscale or 3 for RGB) is rows x columns
// [x channels], pixels in row-major order, channels interleaved. The pixel
// bytes are the stream of iomimic::ContentStream(spec.seed, spec.content)
// (codecs then compress them their own way), as if one Fill() produced
// the whole image (multi-byte elements little-endian), whatever the
// chunking of the writer.

#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "iomimic/buffer.h"
#include "iomimic/format.h"
#include "iomimic/options.h"
#include "iomimic/random.h"
#include "iomimic/status.h"
#include "iomimic/storage.h"

namespace iomimic::image {

// Image.open's first read.
inline constexpr std::size_t kProbeSize = 4096;
// PIL's ImageFile.MAXBLOCK: ImageFile.load reads the file in 64 KiB blocks.
inline constexpr std::uint64_t kDefaultTransferSize = 65536;
// Transfer sizes above this are clamped.
inline constexpr std::uint64_t kMaxTransferSize = std::uint64_t{1} << 30;
// Write requests are at most this large.
inline constexpr std::size_t kMaxWriteChunk = std::size_t{4} << 20;
// ... and the write buffer is at least this large.
inline constexpr std::size_t kMinWriteChunk = std::size_t{64} << 10;

// What a decoded image looks like in memory: height rows of width pixels of
// `channels` interleaved samples of bytes_per_sample bytes (little-endian),
// or, with `planar`, `channels` planes of height x width.
struct ImageInfo {
  std::uint64_t width = 0;
  std::uint64_t height = 0;
  std::uint64_t channels = 0;
  std::size_t bytes_per_sample = 1;
  bool planar = false;

  // Bytes of the decoded image.
  std::uint64_t decoded_bytes() const { return width * height * channels * bytes_per_sample; }
};

// What one image of a FileSpec looks like.
struct ImageGeometry {
  std::uint64_t rows = 0;      // d1, the image height
  std::uint64_t cols = 0;      // d2, the image width
  std::uint64_t channels = 1;  // 1 (greyscale) or 3 (RGB)
  std::size_t element_size = 1;

  // Bytes of one row, and of the whole image.
  std::uint64_t row_bytes() const { return cols * channels * element_size; }
  std::uint64_t bytes() const { return rows * row_bytes(); }
};

// What a format accepts; GeometryFromSpec checks a spec against it.
struct SpecRules {
  const char* format = "";        // plugin name, for messages
  std::uint64_t max_side = 0;     // largest rows or cols
  std::uint64_t max_bytes = 0;    // largest image in bytes
  bool any_element_type = false;  // false: uint8 only (formats PIL encodes)
  // Extra words for the message that refuses another element type.
  const char* element_type_note = "";
  // Set for formats that take no dataset.compression: another value than
  // "none" is kNotSupported "<format>: compression '<c>' is not supported
  // (<compression_note>)".
  const char* compression_note = nullptr;
};

// Returns kCorruption "<path>: <what> at offset <offset>", the error of
// damaged data (tests and the interop scripts look for " at offset ").
inline Status CorruptAt(const std::string& path, const std::string& what, std::uint64_t offset) {
  return Status::Corruption(path + ": " + what + " at offset " + std::to_string(offset));
}

// Checks that a header's declared image can come out of `file_size` bytes
// (at most `max_ratio` decoded bytes per file byte, plus 64 MiB), so a
// damaged header cannot make the reader allocate absurd amounts of memory.
// kCorruption at `header_offset` when it cannot; kResourceExhausted when
// the image does not fit the address space.
inline Status CheckDecodedSize(const std::string& path, const char* format, const ImageInfo& info,
                               std::uint64_t file_size, std::uint64_t max_ratio,
                               std::uint64_t header_offset) {
  constexpr std::uint64_t kSlack = std::uint64_t{64} << 20;
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  const std::uint64_t limit =
      file_size > (kMax - kSlack) / max_ratio ? kMax : file_size * max_ratio + kSlack;
  // Multiply step by step so that absurd headers cannot overflow.
  std::uint64_t bytes = info.bytes_per_sample;
  for (std::uint64_t factor : {info.channels, info.width, info.height}) {
    if (factor != 0 && bytes > limit / factor) {
      return CorruptAt(path,
                       std::string("corrupt ") + format + " header: it declares a " +
                           std::to_string(info.width) + "x" + std::to_string(info.height) +
                           " image with " + std::to_string(info.channels) +
                           " channels, more than a file of " + std::to_string(file_size) +
                           " bytes can hold",
                       header_offset);
    }
    bytes *= factor;
  }
  if (bytes > std::numeric_limits<std::size_t>::max()) {
    return Status::ResourceExhausted(path + ": a " + std::to_string(bytes) +
                                     "-byte image does not fit this address space");
  }
  return Status::OK();
}

// "64x48" or "64x48x3", for messages.
inline std::string GeometryText(const ImageGeometry& g) {
  std::string s = std::to_string(g.rows) + 'x' + std::to_string(g.cols);
  if (g.channels != 1) s += 'x' + std::to_string(g.channels);
  return s;
}

// Checks `spec` (shape rank, channels, element type, one sample per file,
// sizes) against `rules` and returns its geometry. kInvalidArgument names
// the problem. Compression is the codec's business.
inline Result<ImageGeometry> GeometryFromSpec(const FileSpec& spec, const SpecRules& rules) {
  const std::string fmt = rules.format;
  const std::vector<std::uint64_t>& shape = spec.sample_shape;
  if (shape.size() != 2 && shape.size() != 3) {
    return Status::InvalidArgument(
        fmt + ": sample_shape has " + std::to_string(shape.size()) +
        " dimensions; an image needs 2 (rows, columns) or 3 with a last dimension of 1 "
        "(greyscale) or 3 (RGB)");
  }
  ImageGeometry g;
  g.rows = shape[0];
  g.cols = shape[1];
  if (shape.size() == 3) {
    if (shape[2] != 1 && shape[2] != 3) {
      return Status::InvalidArgument(fmt + ": sample_shape's last dimension is " +
                                     std::to_string(shape[2]) +
                                     "; images have 1 (greyscale) or 3 (RGB) channels");
    }
    g.channels = shape[2];
  }
  if (g.rows == 0 || g.cols == 0) {
    return Status::InvalidArgument(fmt + ": sample_shape has a zero dimension");
  }
  if (g.rows > rules.max_side || g.cols > rules.max_side) {
    return Status::InvalidArgument(fmt + ": a " + std::to_string(g.rows) + "x" +
                                   std::to_string(g.cols) + " image is larger than the format's " +
                                   std::to_string(rules.max_side) + " pixels per side");
  }
  if (spec.num_samples != 1) {
    return Status::InvalidArgument(
        fmt + ": num_samples_per_file is " + std::to_string(spec.num_samples) +
        ", but an image file holds exactly one sample (DLIO writes one image per file); set "
        "dataset.num_samples_per_file to 1");
  }
  if (spec.element_type.size == 0 || spec.element_type.size > 8) {
    return Status::InvalidArgument(fmt + ": element type '" + spec.element_type.name +
                                   "' has an unusable size " +
                                   std::to_string(spec.element_type.size));
  }
  if (!rules.any_element_type && spec.element_type.name != "uint8") {
    return Status::InvalidArgument(fmt + ": element type '" + spec.element_type.name +
                                   "' is not supported: " + fmt + " files hold 8-bit pixels" +
                                   rules.element_type_note);
  }
  g.element_size = spec.element_type.size;
  const std::uint64_t limit = rules.max_bytes;
  if (g.cols > limit / g.channels / g.element_size ||
      g.rows > limit / (g.cols * g.channels * g.element_size)) {
    return Status::InvalidArgument(fmt + ": a " + GeometryText(g) + " image of " +
                                   spec.element_type.name + " is larger than " +
                                   std::to_string(limit) + " bytes");
  }
  if (rules.compression_note != nullptr && spec.compression != "none") {
    return Status::NotSupported(fmt + ": compression '" + spec.compression +
                                "' is not supported (" + rules.compression_note + ")");
  }
  return g;
}

// Reads the integer plugin option `key` (`fallback` when absent) and checks
// that it lies in [lo, hi]: kInvalidArgument "<owner>: option '<key>' =
// <value> <refusal>" otherwise (refusal: "is not a zlib level (0-9)"), or
// PluginOptions' error for a value that is not an integer.
inline Result<std::int64_t> IntOptionIn(const PluginOptions& options, const std::string& key,
                                        std::int64_t fallback, std::int64_t lo, std::int64_t hi,
                                        const char* refusal) {
  IOMIMIC_ASSIGN_OR_RETURN(std::int64_t value, options.GetInt(key, fallback));
  if (value < lo || value > hi) {
    return Status::InvalidArgument(options.owner() + ": option '" + key +
                                   "' = " + std::to_string(value) + " " + refusal);
  }
  return value;
}

// Checks that `head` (the first bytes of a file) starts with `magic`:
// kCorruption "not a <format> file (<mismatch>)" at the first byte that
// differs, or "truncated <format> file: <n> bytes<short_detail>; the file
// ends" at offset n when the file is shorter than `magic`.
inline Status CheckMagic(std::span<const std::byte> head, const std::string& path,
                         std::span<const unsigned char> magic, const std::string& format,
                         const std::string& mismatch, const std::string& short_detail = "") {
  const std::size_t n = std::min(head.size(), magic.size());
  for (std::size_t i = 0; i < n; ++i) {
    if (static_cast<unsigned char>(head[i]) != magic[i]) {
      return CorruptAt(path, "not a " + format + " file (" + mismatch + ")", i);
    }
  }
  if (n < magic.size()) {
    return CorruptAt(path,
                     "truncated " + format + " file: " + std::to_string(head.size()) + " bytes" +
                         short_detail + "; the file ends",
                     head.size());
  }
  return Status::OK();
}

// Makes `buffer` hold at least `size` host bytes, reusing it when it is
// large enough. Errors are AllocateHostBuffer's, naming `what`.
inline Status EnsureHostBuffer(Storage& storage, Buffer& buffer, std::size_t size,
                               const char* what) {
  if (buffer.size() >= size && buffer.host_accessible()) return Status::OK();
  buffer.Reset();
  IOMIMIC_ASSIGN_OR_RETURN(buffer, AllocateHostBuffer(storage, size, what));
  return Status::OK();
}

// The write buffer size for a file of about `expected_bytes`: rounded up to
// 64 KiB and to the storage alignment, between kMinWriteChunk and
// kMaxWriteChunk.
inline std::size_t WriteChunkSize(const Storage& storage, std::uint64_t expected_bytes) {
  std::size_t align = storage.capabilities().alignment;
  if (align == 0) align = 1;
  std::uint64_t size = std::clamp<std::uint64_t>(expected_bytes, kMinWriteChunk, kMaxWriteChunk);
  size = (size + kMinWriteChunk - 1) / kMinWriteChunk * kMinWriteChunk;
  size = (size + align - 1) / align * align;
  return static_cast<std::size_t>(size);
}

// The writing sink. An encoder hands its output to a ChunkedWriter, which
// collects it in one storage-allocated buffer and writes it through
// File::WriteAt in buffer-sized requests, so memory stays bounded whatever
// the image size and a small file costs a single write request.
//
// It is a random-access writer that coalesces writes into one window of the
// file held in memory. Appends extend the window; a full window is written
// out and the next one starts where it ended. A write a little past the end
// of the file leaves a gap of zeros in the window (as the file system
// would), which a later write may fill (libtiff writes a directory's
// out-of-line values before the directory). A write outside the window
// (such as a header patched at offset 0 after the window moved on) writes
// the window out and starts a new one there. Not thread-safe; one per file.
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
  Status Write(std::uint64_t offset, std::span<const std::byte> data) {
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

  // Writes `data` after the highest byte written so far.
  Status Append(std::span<const std::byte> data) { return Write(size_, data); }

  // Copies bytes [offset, offset + out.size()) into `out` when they are all
  // still in the window; false otherwise.
  bool ReadBack(std::uint64_t offset, std::span<std::byte> out) const {
    if (offset < window_start_ || offset - window_start_ > window_fill_ ||
        out.size() > window_fill_ - (offset - window_start_)) {
      return out.empty();
    }
    if (!out.empty()) {
      std::memcpy(out.data(), buffer_.data() + (offset - window_start_), out.size());
    }
    return true;
  }

  // Writes out what the window holds. Call once, after the last Write.
  Status Finish() { return FlushWindow(); }

  // One past the highest byte written: the file size after Finish().
  std::uint64_t size() const { return size_; }
  // Write requests issued so far.
  std::uint64_t requests() const { return requests_; }

 private:
  Status FlushWindow() {
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

// One image codec: the bytes of one image format, and nothing else. The
// shell (ImageFormat, iomimic/image_format.h) calls it; the codec never
// opens files for reading, never sees ReaderOptions and holds no mutable
// state, so one codec serves every thread at once. The shell wraps every
// call in Guard (iomimic/guard.h), so an exception thrown by a codec (a
// library in C++, std::bad_alloc) becomes an error, but a codec must not
// let one cross a C library's frames (longjmp-based libraries: keep
// objects with destructors above the setjmp).
class ImageCodec {
 public:
  virtual ~ImageCodec() = default;

  // The format name: the plugin's name, the file extension, the prefix of
  // messages ("myimage").
  virtual const char* name() const = 0;

  // The one NumPy element type the format writes (FormatTraits::
  // element_type: "uint8" for formats PIL encodes), or "" when any is fine.
  virtual const char* element_type() const { return ""; }

  // Checks that `spec` can be written (GeometryFromSpec with the format's
  // rules, compression, options): kInvalidArgument or kNotSupported naming
  // the problem, OK otherwise. Format::Validate.
  virtual Status CheckSpec(const FileSpec& spec) const = 0;

  // True when ExpectedFileSize returns the exact size of what Encode writes
  // (FormatTraits::predictable_size). Most codecs compress: false.
  virtual bool predictable_size() const { return false; }

  // The size of the file Encode writes for `spec` when predictable_size();
  // otherwise kNotSupported saying why. Format::ExpectedFileSize.
  virtual Result<std::uint64_t> ExpectedFileSize(const FileSpec& /*spec*/) const {
    return Status::NotSupported(std::string(name()) + ": the size of a file depends on its pixels");
  }

  // Writes the image of `spec` (its pixels are ContentStream(spec.seed,
  // spec.content), see the top of this header) into `file`, which the
  // caller opened for writing and closes. Every byte goes through `file`;
  // buffers come from `storage` (AllocateHostBuffer). Encoders stream
  // through a ChunkedWriter so that memory stays bounded. Errors are the
  // storage's or CheckSpec's. Format::WriteFile.
  virtual Status Encode(Storage& storage, File& file, const FileSpec& spec) const = 0;

  // Checks the format signature at the start of the file (`head` is what the
  // first read returned, possibly less than kProbeSize bytes, never empty).
  // kCorruption (CorruptAt) naming `path` and the offset when the file is not
  // of this format or too short to tell.
  virtual Status CheckSignature(std::span<const std::byte> head, const std::string& path) const = 0;

  // Parses only the header of the complete file `file` (what Image.open
  // does; its signature was checked) and fills `info` with what a decode
  // would produce. kCorruption with path and offset when the header is
  // damaged (CheckDecodedSize for absurd sizes); kNotSupported for valid
  // images this codec cannot decode.
  virtual Status ReadHeader(std::span<const std::byte> file, const std::string& path,
                            ImageInfo* info) const = 0;

  // Decodes the complete file `file` (its signature was checked) into
  // `*pixels` and fills `info`. `*pixels` is reused when large enough, grown
  // with EnsureHostBuffer(storage, ...) otherwise (the shell's PixelsFor does
  // both). Errors as ReadHeader, and kCorruption for damaged image data
  // (checksums, truncation).
  virtual Status Decode(std::span<const std::byte> file, const std::string& path, Storage& storage,
                        Buffer* pixels, ImageInfo* info) const = 0;
};

// For Decode: makes `*pixels` hold the decoded image `info` describes (at
// least one byte) and returns its start. Errors are EnsureHostBuffer's.
inline Result<std::byte*> PixelsFor(Storage& storage, Buffer* pixels, const ImageInfo& info,
                                    const char* format) {
  const std::size_t bytes = static_cast<std::size_t>(info.decoded_bytes());
  IOMIMIC_RETURN_IF_ERROR(
      EnsureHostBuffer(storage, *pixels, std::max<std::size_t>(bytes, 1), format));
  return pixels->data();
}

}  // namespace iomimic::image
