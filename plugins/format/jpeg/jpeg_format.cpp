#include "jpeg_format.h"

#include <exception>
#include <new>
#include <utility>

#include "image_common/image_reader.h"
#include "iomimic/guard.h"
#include "iomimic/plugin.h"

namespace iomimic::jpeg {

Result<WriterOptions> ParseOptions(const PluginOptions& options) {
  WriterOptions out;
  IOMIMIC_ASSIGN_OR_RETURN(std::int64_t quality, options.GetInt("quality", 75));
  if (quality < 1 || quality > 100) {
    return Status::InvalidArgument(options.owner() + ": option 'quality' = " +
                                   std::to_string(quality) + " is not a JPEG quality (1-100)");
  }
  out.quality = static_cast<int>(quality);
  return out;
}

std::string JpegFormat::name() const { return "jpeg"; }

FormatTraits JpegFormat::traits() const {
  FormatTraits t;
  t.extension = "jpeg";
  t.element_type = "uint8";  // PIL.Image.fromarray encodes uint8 pixels
  t.multi_sample_files = false;
  t.partial_reads = false;
  t.needs_host_decode = true;
  t.predictable_size = false;
  return t;
}

Status JpegFormat::Validate(const FileSpec& spec) const {
  return Guard("jpeg", "validating a file spec", "",
               [&]() -> Status { return JpegGeometry(spec).status(); });
}

Result<std::uint64_t> JpegFormat::ExpectedFileSize(const FileSpec&) const {
  return Status::NotSupported("jpeg: the size of a JPEG file depends on its pixels");
}

Status JpegFormat::WriteFile(Storage& storage, File& file, const FileSpec& spec) {
  return WriteJpegFile(storage, file, spec, options_);
}

Result<std::unique_ptr<FileReader>> JpegFormat::OpenReader(const std::string& path,
                                                           const ReaderOptions& options) {
  return image::ImageReader::Open(path, options, codec_);
}

}  // namespace iomimic::jpeg

namespace {

const IomimicOptionSpec kJpegOptions[] = {
    {"quality", "int", "75", "JPEG quality, 1-100 (PIL's quality; 75 is PIL's default)"},
};

}  // namespace

IOMIMIC_DEFINE_FORMAT_PLUGIN(
    "jpeg", "1.0.0",
    "JPEG images as PIL's Image.save writes them (baseline JFIF, quality 75, greyscale or RGB, "
    "one image per file), read whole and decoded like np.asarray(PIL.Image.open(f))",
    IOMIMIC_CAP_HOST_DECODE, kJpegOptions,
    [](const iomimic::PluginContext& ctx) -> iomimic::Result<std::unique_ptr<iomimic::Format>> {
      IOMIMIC_ASSIGN_OR_RETURN(iomimic::jpeg::WriterOptions options,
                               iomimic::jpeg::ParseOptions(ctx.options));
      return std::unique_ptr<iomimic::Format>(std::make_unique<iomimic::jpeg::JpegFormat>(options));
    });
