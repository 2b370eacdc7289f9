// Compression of CSV files, as pandas' to_csv/read_csv apply it: gzip (zlib,
// gzip wrapper), bz2 (libbz2), xz (liblzma, .xz container with CRC64) and
// zip (one deflated member; the container is in zip/zip_records.h, this file only
// provides its raw deflate stream).
//
// Compressors and decompressors stream: memory stays at their own state and
// one staging buffer whatever the file size. Decompressors accept several
// concatenated gzip members / bz2 streams / xz streams, as Python's modules
// do, and report a stream that ends early as kCorruption with the file
// offset where the data stopped.

#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "iomimic/status.h"

namespace iomimic::csv {

enum class Codec : std::uint8_t { kNone, kGzip, kBzip2, kXz, kZip };

// "none", "gzip", "bz2", "xz", "zip".
const char* CodecName(Codec codec);

// DLIO's compression names: none (or empty), gzip, bz2, xz, zip. lzf (an
// HDF5 filter) is kNotSupported.
Result<Codec> CodecFromName(const std::string& name);

// The codec whose magic number starts `head` (kNone for plain text).
Codec SniffCodec(std::span<const std::byte> head);

// Where compressed output goes: Writable() is never empty; Commit(n)
// accounts for n bytes written at its start.
class ByteSink {
 public:
  virtual ~ByteSink() = default;
  virtual std::span<std::byte> Writable() = 0;
  virtual Status Commit(std::size_t n) = 0;
};

class Compressor {
 public:
  // A compressor for gzip, bz2, xz, or kZip (raw deflate, no header). `level`
  // is clamped to the codec's range (gzip/zip 0-9, bz2 1-9, xz 0-9).
  static Result<std::unique_ptr<Compressor>> Make(Codec codec, int level);

  virtual ~Compressor() = default;
  // Compresses `input` into `sink`.
  virtual Status Write(std::span<const std::byte> input, ByteSink& sink) = 0;
  // Flushes the end of the stream into `sink`.
  virtual Status Finish(ByteSink& sink) = 0;
};

// Receives decompressed text; an error stops decompression.
using TextSink = std::function<Status(std::span<const char>)>;

class Decompressor {
 public:
  // A decompressor for gzip, bz2, xz, or kZip (raw deflate). `path` names the
  // file in errors.
  static Result<std::unique_ptr<Decompressor>> Make(Codec codec, const std::string& path);

  virtual ~Decompressor() = default;
  // Decompresses `input`, the stored bytes at file offset `offset`, passing
  // the output to `out` in pieces. kCorruption for invalid data.
  virtual Status Feed(std::span<const std::byte> input, std::uint64_t offset,
                      const TextSink& out) = 0;
  // After the last Feed, whose data ended at file offset `end`: kCorruption
  // when the stream is incomplete (truncated file).
  virtual Status Finish(std::uint64_t end, const TextSink& out) = 0;
  // Decompressed bytes produced so far.
  virtual std::uint64_t produced() const = 0;
};

}  // namespace iomimic::csv
