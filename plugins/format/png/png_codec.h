// The png format plugin: PNG files as DLIO's png_generator writes them and
// its image reader reads them, with libpng. The codec below is the whole
// plugin: the image format shell of the SDK (iomimic/image_format.h)
// supplies the Format, the whole-file reader with PIL's access pattern and
// the plugin descriptor.
//
// Writing, like PIL's Image.fromarray(x).save(f, format='PNG'): one image
// per file, 8-bit greyscale (colour type 0) for a {d1, d2} or {d1, d2, 1}
// sample, 8-bit RGB (colour type 2) for {d1, d2, 3}; d1 rows, d2 columns;
// not interlaced; chunks IHDR, IDAT..., IEND and nothing else; zlib level 6
// (PIL's default compress_level, plugin option `compress_level`) with
// libpng's adaptive per-row filter choice (as PIL for 8-bit images), and
// IDAT chunks of at most 64 KiB (PIL's block size). Pixels are the
// content stream of spec.seed (see image_spec.h). Rows are generated and
// compressed one at a time and the output streams through a ChunkedWriter,
// so memory does not grow with the image. Random pixels do not compress:
// files are a little larger than d1*d2 bytes and their exact size depends on
// the content, so ExpectedFileSize is kNotSupported.
//
// Reading (decode on) checks every chunk's CRC, critical and ancillary alike
// (a CRC mismatch is an error, not a warning), and the zlib stream, and
// decodes into the layout np.asarray(PIL.Image.open(f)) gives: 8-bit samples
// stay 8-bit, 16-bit samples become little-endian uint16, greyscale below 8
// bits is scaled to 8 bits, palette images give their indices (PIL mode P),
// channels stay as stored (L, LA, RGB, RGBA). Interlaced files are decoded.
// Errors name the path and the offset of the chunk being read.

#pragma once

#include <span>
#include <string>

#include "iomimic/format.h"
#include "iomimic/image_codec.h"
#include "iomimic/options.h"
#include "iomimic/status.h"
#include "iomimic/storage.h"

namespace iomimic::png {

// The 8-byte PNG signature.
inline constexpr unsigned char kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
// IDAT chunks carry at most this much (PIL's ImageFile block size).
inline constexpr std::size_t kIdatSize = 65536;
// Deflate expands at most about 1032:1; PNG adds a filter byte per row.
inline constexpr std::uint64_t kMaxExpansion = 1100;

struct WriterOptions {
  int compress_level = 6;  // zlib level 0-9
};

// kInvalidArgument/kNotSupported when `spec` is not a writable PNG image;
// otherwise its geometry.
Result<image::ImageGeometry> PngGeometry(const FileSpec& spec);

// Reads the plugin options (compress_level, 0-9).
Result<WriterOptions> ParseOptions(const PluginOptions& options);

// Encoding and decoding with libpng; stateless apart from constant options.
// The contracts are ImageCodec's (iomimic/image_codec.h).
class PngCodec final : public image::ImageCodec {
 public:
  explicit PngCodec(WriterOptions options = {}) : options_(options) {}

  const char* name() const override { return "png"; }
  // PIL.Image.fromarray encodes uint8 pixels.
  const char* element_type() const override { return "uint8"; }
  // PngGeometry's checks.
  Status CheckSpec(const FileSpec& spec) const override { return PngGeometry(spec).status(); }
  // Always kNotSupported: the size depends on how the pixels compress.
  Result<std::uint64_t> ExpectedFileSize(const FileSpec&) const override {
    return Status::NotSupported("png: the size of a PNG file depends on how its pixels compress");
  }
  // Encodes the image row by row, streaming through a ChunkedWriter.
  Status Encode(Storage& storage, File& file, const FileSpec& spec) const override;
  Status CheckSignature(std::span<const std::byte> head, const std::string& path) const override;
  Status ReadHeader(std::span<const std::byte> file, const std::string& path,
                    image::ImageInfo* info) const override;
  Status Decode(std::span<const std::byte> file, const std::string& path, Storage& storage,
                Buffer* pixels, image::ImageInfo* info) const override;

 private:
  const WriterOptions options_;
};

}  // namespace iomimic::png
