#include "png_format.h"

#include <exception>
#include <new>
#include <utility>

#include "image_common/image_reader.h"
#include "iomimic/guard.h"
#include "iomimic/plugin.h"

namespace iomimic::png {

Result<WriterOptions> ParseOptions(const PluginOptions& options) {
  WriterOptions out;
  IOMIMIC_ASSIGN_OR_RETURN(std::int64_t level, options.GetInt("compress_level", 6));
  if (level < 0 || level > 9) {
    return Status::InvalidArgument(options.owner() + ": option 'compress_level' = " +
                                   std::to_string(level) + " is not a zlib level (0-9)");
  }
  out.compress_level = static_cast<int>(level);
  return out;
}

std::string PngFormat::name() const { return "png"; }

FormatTraits PngFormat::traits() const {
  FormatTraits t;
  t.extension = "png";
  t.element_type = "uint8";  // PIL.Image.fromarray encodes uint8 pixels
  t.multi_sample_files = false;
  t.partial_reads = false;
  t.needs_host_decode = true;
  t.predictable_size = false;
  return t;
}

Status PngFormat::Validate(const FileSpec& spec) const {
  return Guard("png", "validating a file spec", "",
               [&]() -> Status { return PngGeometry(spec).status(); });
}

Result<std::uint64_t> PngFormat::ExpectedFileSize(const FileSpec&) const {
  return Status::NotSupported("png: the size of a PNG file depends on how its pixels compress");
}

Status PngFormat::WriteFile(Storage& storage, File& file, const FileSpec& spec) {
  return WritePngFile(storage, file, spec, options_);
}

Result<std::unique_ptr<FileReader>> PngFormat::OpenReader(const std::string& path,
                                                          const ReaderOptions& options) {
  return image::ImageReader::Open(path, options, codec_);
}

}  // namespace iomimic::png

namespace {

const IomimicOptionSpec kPngOptions[] = {
    {"compress_level", "int", "6",
     "zlib compression level of the image data, 0-9 (PIL's compress_level; 6 is PIL's default)"},
};

}  // namespace

IOMIMIC_DEFINE_FORMAT_PLUGIN(
    "png", "1.0.0",
    "PNG images as PIL's Image.save writes them (8-bit greyscale or RGB, one image per file), "
    "read whole and decoded like np.asarray(PIL.Image.open(f))",
    IOMIMIC_CAP_HOST_DECODE, kPngOptions,
    [](const iomimic::PluginContext& ctx) -> iomimic::Result<std::unique_ptr<iomimic::Format>> {
      IOMIMIC_ASSIGN_OR_RETURN(iomimic::png::WriterOptions options,
                               iomimic::png::ParseOptions(ctx.options));
      return std::unique_ptr<iomimic::Format>(std::make_unique<iomimic::png::PngFormat>(options));
    });
