// The jpeg format plugin: JPEG files as DLIO's jpeg_generator writes them
// and its image reader reads them, with libjpeg (Debian's libjpeg62-turbo).
// The codec below is the whole plugin: the image format shell of the SDK
// (iomimic/image_format.h) supplies the Format, the whole-file reader with
// PIL's access pattern and the plugin descriptor.
//
// Writing, like PIL's Image.fromarray(x).save(f, format='JPEG'): one image
// per file, baseline JFIF, quality 75 (PIL's default, plugin option
// `quality`), libjpeg's default Huffman tables, no optimisation, not
// progressive. A {d1, d2} or {d1, d2, 1} sample is greyscale (one
// component), {d1, d2, 3} is RGB stored as YCbCr with 4:2:0 chroma
// subsampling (PIL's default); d1 rows, d2 columns, at most 65,500 each.
// For the same pixels the bytes are those PIL writes. Pixels are the
// content stream of spec.seed (image_spec.h); JPEG is lossy, so decoding
// gives pixels near, not equal to, those. Rows are generated and compressed
// one at a time and the output streams through a ChunkedWriter. Random
// pixels compress badly and the size depends on them: ExpectedFileSize is
// kNotSupported.
//
// Reading (decode on) decodes into the layout np.asarray(PIL.Image.open(f))
// gives: greyscale files give one 8-bit channel (mode L), YCbCr and RGB
// files three (RGB), CMYK and YCCK files four (CMYK, inverted as PIL reads
// them, Adobe's convention). libjpeg's errors and
// its corrupt-data warnings (bad Huffman code, premature end of a data
// segment, extraneous bytes before a marker...) are corruption; so is data
// that ends before the EOI marker (libjpeg would otherwise pad it with a fake
// EOI and return grey rows). Errors name the path and the offset libjpeg had
// reached.

#pragma once

#include <span>
#include <string>

#include "iomimic/format.h"
#include "iomimic/image_codec.h"
#include "iomimic/options.h"
#include "iomimic/status.h"
#include "iomimic/storage.h"

namespace iomimic::jpeg {

// JPEG's largest side (libjpeg's JPEG_MAX_DIMENSION).
inline constexpr std::uint64_t kMaxSide = 65500;
// Decoded bytes per file byte cannot exceed this (a bit per 8x8 block and
// component, subsampled chroma) for any decodable file.
inline constexpr std::uint64_t kMaxExpansion = 4096;

struct WriterOptions {
  int quality = 75;  // libjpeg quality 1-100 (PIL's default)
};

// kInvalidArgument/kNotSupported when `spec` is not a writable JPEG image;
// otherwise its geometry.
Result<image::ImageGeometry> JpegGeometry(const FileSpec& spec);

// Reads the plugin options (quality, 1-100).
Result<WriterOptions> ParseOptions(const PluginOptions& options);

// Encoding and decoding with libjpeg; stateless apart from constant options.
// The contracts are ImageCodec's (iomimic/image_codec.h).
class JpegCodec final : public image::ImageCodec {
 public:
  explicit JpegCodec(WriterOptions options = {}) : options_(options) {}

  const char* name() const override { return "jpeg"; }
  // PIL.Image.fromarray encodes uint8 pixels.
  const char* element_type() const override { return "uint8"; }
  // JpegGeometry's checks.
  Status CheckSpec(const FileSpec& spec) const override { return JpegGeometry(spec).status(); }
  // Always kNotSupported: the size depends on the pixels.
  Result<std::uint64_t> ExpectedFileSize(const FileSpec&) const override {
    return Status::NotSupported("jpeg: the size of a JPEG file depends on its pixels");
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

}  // namespace iomimic::jpeg
