// The tiff format plugin: TIFF files with libtiff, through memory
// (TIFFClientOpenExt) so that every byte goes through the storage. The codec
// below is the whole plugin: the image format shell of the SDK
// (iomimic/image_format.h) supplies the Format, the whole-file reader with
// PIL's access pattern and the plugin descriptor.
//
// DLIO has no tiff format; this plugin writes TIFF
// images the way the png/jpeg generators write theirs (one image per file,
// d1 rows by d2 columns) and reads them like DLIO's image reader reads png
// and jpeg files (a sequential whole-file read, then a full decode).
//
// Writing: little-endian classic TIFF (BigTIFF only for images that would
// pass 4 GiB), one image (IFD), chunky (interleaved) samples, greyscale
// (PhotometricInterpretation MinIsBlack) for {d1, d2} or {d1, d2, 1},
// RGB for {d1, d2, 3}. Unlike png and jpeg, any numeric element type is
// accepted: BitsPerSample is 8 times the element size and SampleFormat says
// unsigned, signed or IEEE float, so uint8 through float64 round-trip
// exactly (tifffile reads them all; PIL reads the common ones). Strips hold
// as many rows as fit in 64 KiB (PIL's strip size; plugin option
// rows_per_strip). Compression is none by default (PIL's default); the
// plugin option `compression` selects deflate, lzw or packbits, and
// dataset.compression gzip or zip means deflate at dataset.compression_level.
// Pixels are the content stream of spec.seed (image_spec.h), multi-byte
// elements little-endian. Strips are generated one at a time and the output
// streams through a ChunkedWriter; libtiff writes the directory last and
// patches the header's directory offset, which the writer handles in memory
// for files that fit in one write request.
//
// Reading (decode on) decodes the first image into the layout
// tifffile.imread gives: rows of pixels with interleaved samples, or for
// planar (separate) files one plane per sample; samples of 8 to 64 bits as
// stored, in little-endian order. Strips and tiles, and every codec libtiff
// was built with, are supported. libtiff's errors (a bad header or
// directory, strips past the end, damaged compressed data) are corruption,
// reported with the path and the offset of the header, the directory or the
// strip. libtiff's messages are captured per file, never printed.

#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "iomimic/format.h"
#include "iomimic/image_codec.h"
#include "iomimic/options.h"
#include "iomimic/status.h"
#include "iomimic/storage.h"

namespace iomimic::tiff {

enum class Compression { kNone, kDeflate, kLzw, kPackBits };

// "none", "deflate", "lzw", "packbits".
const char* CompressionName(Compression c);
// Parses a name (also "zip" and "adobe_deflate" for deflate); kInvalidArgument otherwise.
Result<Compression> ParseCompression(const std::string& name);

// Strips of at most this many bytes when rows_per_strip is automatic.
inline constexpr std::uint64_t kStripBytes = 65536;
// LZW, the codec that expands least favourably, stays below this ratio of
// decoded to stored bytes for decodable data.
inline constexpr std::uint64_t kMaxExpansion = 4096;

struct WriterOptions {
  Compression compression = Compression::kNone;
  int compress_level = 6;            // deflate level 1-9
  std::uint32_t rows_per_strip = 0;  // 0: strips of at most kStripBytes
};

// How one file is written.
struct TiffPlan {
  image::ImageGeometry geometry;
  Compression compression = Compression::kNone;
  int compress_level = 6;
  std::uint32_t rows_per_strip = 1;
  std::uint16_t sample_format = 1;  // SAMPLEFORMAT_UINT
  bool bigtiff = false;
};

// kInvalidArgument/kNotSupported when `spec` cannot be written as TIFF with
// `options`; otherwise the plan.
Result<TiffPlan> PlanTiff(const FileSpec& spec, const WriterOptions& options);

// Reads the plugin options: compression (none|deflate|lzw|packbits),
// compress_level (1-9), rows_per_strip (0 = strips of at most 64 KiB).
Result<WriterOptions> ParseOptions(const PluginOptions& options);

// Routes libtiff's process-wide error and warning handlers away from stderr
// (once per process; restored when the plugin is unloaded). Messages of
// files this plugin opens are captured per file; anything else is dropped.
void InstallTiffHandlers();

// Encoding and decoding with libtiff; stateless apart from constant
// options. The contracts are ImageCodec's (iomimic/image_codec.h).
class TiffCodec final : public image::ImageCodec {
 public:
  // Installs libtiff's process-wide message handlers (InstallTiffHandlers).
  explicit TiffCodec(WriterOptions options = {}) : options_(options) { InstallTiffHandlers(); }

  const char* name() const override { return "tiff"; }
  // PlanTiff's checks (any numeric element type).
  Status CheckSpec(const FileSpec& spec) const override {
    return PlanTiff(spec, options_).status();
  }
  // Always kNotSupported: libtiff's layout and compression decide.
  Result<std::uint64_t> ExpectedFileSize(const FileSpec&) const override {
    return Status::NotSupported("tiff: file sizes depend on libtiff's layout and compression");
  }
  // Encodes the image strip by strip, streaming through a ChunkedWriter.
  Status Encode(Storage& storage, File& file, const FileSpec& spec) const override;
  Status CheckSignature(std::span<const std::byte> head, const std::string& path) const override;
  Status ReadHeader(std::span<const std::byte> file, const std::string& path,
                    image::ImageInfo* info) const override;
  Status Decode(std::span<const std::byte> file, const std::string& path, Storage& storage,
                Buffer* pixels, image::ImageInfo* info) const override;

 private:
  const WriterOptions options_;
};

}  // namespace iomimic::tiff
