// `rawimage`: an image format written as a codec behind the SDK's image
// format shell (iomimic/image_format.h, docs/plugins.md "Image formats"),
// which supplies the Format, PIL's whole-file read and the descriptor. The
// bytes: magic "IOMIRIMG", uint32 rows, uint32 columns, uint16 channels,
// uint16 bytes per element (little-endian; 20 bytes in all), then the
// generated pixels, row-major, channels interleaved.

#include <cstring>
#include <memory>
#include <string>

#include "iomimic/image_format.h"

namespace {

namespace img = iomimic::image;
using iomimic::Result;
using iomimic::Status;

constexpr unsigned char kMagic[8] = {'I', 'O', 'M', 'I', 'R', 'I', 'M', 'G'};
constexpr std::size_t kHeaderBytes = 20;

std::uint64_t Get(const std::byte* p, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<std::uint64_t>(p[i]) << (8 * i);
  return v;
}
void Put(std::byte* p, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = static_cast<std::byte>(v >> (8 * i));
}

class RawImageCodec final : public img::ImageCodec {
 public:
  const char* name() const override { return "rawimage"; }

  Status CheckSpec(const iomimic::FileSpec& spec) const override { return Geometry(spec).status(); }

  bool predictable_size() const override { return true; }
  Result<std::uint64_t> ExpectedFileSize(const iomimic::FileSpec& spec) const override {
    IOMIMIC_ASSIGN_OR_RETURN(img::ImageGeometry g, Geometry(spec));
    return kHeaderBytes + g.bytes();
  }

  // The header, then the pixels through a ChunkedWriter (bounded memory).
  Status Encode(iomimic::Storage& storage, iomimic::File& file,
                const iomimic::FileSpec& spec) const override {
    IOMIMIC_ASSIGN_OR_RETURN(img::ImageGeometry g, Geometry(spec));
    const std::size_t chunk = img::WriteChunkSize(storage, kHeaderBytes + g.bytes());
    IOMIMIC_ASSIGN_OR_RETURN(iomimic::Buffer window,
                             iomimic::AllocateHostBuffer(storage, chunk, "rawimage"));
    img::ChunkedWriter sink(file, spec.path, "rawimage", window.span().first(chunk));
    std::byte header[kHeaderBytes];
    std::memcpy(header, kMagic, sizeof(kMagic));
    Put(header + 8, g.rows, 4);
    Put(header + 12, g.cols, 4);
    Put(header + 16, g.channels, 2);
    Put(header + 18, g.element_size, 2);
    IOMIMIC_RETURN_IF_ERROR(sink.Append(header));
    iomimic::ContentStream content(spec.seed, spec.content);
    std::byte row[4096];
    for (std::uint64_t left = g.bytes(); left > 0;) {
      const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(left, sizeof(row)));
      content.Fill(std::span<std::byte>(row, n));
      IOMIMIC_RETURN_IF_ERROR(sink.Append(std::span<const std::byte>(row, n)));
      left -= n;
    }
    return sink.Finish();
  }

  Status CheckSignature(std::span<const std::byte> head, const std::string& path) const override {
    return img::CheckMagic(head, path, kMagic, "rawimage", "bad magic");
  }

  // The header, checked against the file's size.
  Status ReadHeader(std::span<const std::byte> file, const std::string& path,
                    img::ImageInfo* info) const override {
    if (file.size() < kHeaderBytes) {
      return img::CorruptAt(path, "truncated rawimage header: the file ends", file.size());
    }
    info->height = Get(file.data() + 8, 4);
    info->width = Get(file.data() + 12, 4);
    info->channels = Get(file.data() + 16, 2);
    info->bytes_per_sample = static_cast<std::size_t>(Get(file.data() + 18, 2));
    IOMIMIC_RETURN_IF_ERROR(img::CheckDecodedSize(path, "rawimage", *info, file.size(), 1, 8));
    if (kHeaderBytes + info->decoded_bytes() != file.size()) {
      return img::CorruptAt(path,
                            "the header says " + std::to_string(info->decoded_bytes()) +
                                " bytes of pixels, but the file ends",
                            file.size());
    }
    return Status::OK();
  }

  Status Decode(std::span<const std::byte> file, const std::string& path, iomimic::Storage& storage,
                iomimic::Buffer* pixels, img::ImageInfo* info) const override {
    IOMIMIC_RETURN_IF_ERROR(ReadHeader(file, path, info));
    IOMIMIC_ASSIGN_OR_RETURN(std::byte * out, img::PixelsFor(storage, pixels, *info, "rawimage"));
    if (info->decoded_bytes() > 0) {
      std::memcpy(out, file.data() + kHeaderBytes, info->decoded_bytes());
    }
    return Status::OK();
  }

 private:
  static Result<img::ImageGeometry> Geometry(const iomimic::FileSpec& spec) {
    img::SpecRules rules;
    rules.format = "rawimage";
    rules.max_side = 0xFFFFFFFFu;
    rules.max_bytes = std::uint64_t{1} << 40;
    rules.any_element_type = true;
    rules.compression_note = "the pixels are stored as they are";
    return img::GeometryFromSpec(spec, rules);
  }
};

}  // namespace

IOMIMIC_DEFINE_IMAGE_FORMAT_PLUGIN(
    "rawimage", "1.0.0", "uncompressed images after a 20-byte header (example image plugin)",
    IOMIMIC_NO_OPTIONS, img::CodecWithoutOptions<RawImageCodec>);
