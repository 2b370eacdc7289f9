#include "tiff_format.h"

#include <exception>
#include <new>
#include <utility>

#include "image_common/image_reader.h"
#include "iomimic/guard.h"
#include "iomimic/plugin.h"

namespace iomimic::tiff {

Result<WriterOptions> ParseOptions(const PluginOptions& options) {
  WriterOptions out;
  IOMIMIC_ASSIGN_OR_RETURN(std::string compression, options.GetString("compression", "none"));
  Result<Compression> parsed = ParseCompression(compression);
  if (!parsed.ok()) {
    return Status::InvalidArgument(options.owner() + ": option 'compression' = '" + compression +
                                   "' is not one of none, deflate, lzw, packbits");
  }
  out.compression = *parsed;
  IOMIMIC_ASSIGN_OR_RETURN(std::int64_t level, options.GetInt("compress_level", 6));
  if (level < 1 || level > 9) {
    return Status::InvalidArgument(options.owner() + ": option 'compress_level' = " +
                                   std::to_string(level) + " is not a deflate level (1-9)");
  }
  out.compress_level = static_cast<int>(level);
  IOMIMIC_ASSIGN_OR_RETURN(std::int64_t rows, options.GetInt("rows_per_strip", 0));
  if (rows < 0 || rows > 0xFFFFFFFFll) {
    return Status::InvalidArgument(options.owner() + ": option 'rows_per_strip' = " +
                                   std::to_string(rows) + " is out of range (0 = automatic)");
  }
  out.rows_per_strip = static_cast<std::uint32_t>(rows);
  return out;
}

TiffFormat::TiffFormat(WriterOptions options) : options_(options) { InstallTiffHandlers(); }

std::string TiffFormat::name() const { return "tiff"; }

FormatTraits TiffFormat::traits() const {
  FormatTraits t;
  t.extension = "tiff";
  t.multi_sample_files = false;
  t.partial_reads = false;
  t.needs_host_decode = true;
  t.predictable_size = false;
  return t;
}

Status TiffFormat::Validate(const FileSpec& spec) const {
  return Guard("tiff", "validating a file spec", "",
               [&]() -> Status { return PlanTiff(spec, options_).status(); });
}

Result<std::uint64_t> TiffFormat::ExpectedFileSize(const FileSpec&) const {
  return Status::NotSupported("tiff: file sizes depend on libtiff's layout and compression");
}

Status TiffFormat::WriteFile(Storage& storage, File& file, const FileSpec& spec) {
  return WriteTiffFile(storage, file, spec, options_);
}

Result<std::unique_ptr<FileReader>> TiffFormat::OpenReader(const std::string& path,
                                                           const ReaderOptions& options) {
  return image::ImageReader::Open(path, options, codec_);
}

}  // namespace iomimic::tiff

namespace {

const IomimicOptionSpec kTiffOptions[] = {
    {"compression", "string", "none",
     "compression of the strips: none, deflate, lzw or packbits (dataset.compression gzip or zip "
     "also means deflate)"},
    {"compress_level", "int", "6", "deflate level, 1-9"},
    {"rows_per_strip", "int", "0", "rows per strip; 0 = as many as fit in 64 KiB (like PIL)"},
};

}  // namespace

IOMIMIC_DEFINE_FORMAT_PLUGIN(
    "tiff", "1.0.0",
    "TIFF images written with libtiff (greyscale or RGB, any numeric type, one image per file, "
    "uncompressed or deflate/lzw/packbits), read whole and decoded like tifffile.imread",
    IOMIMIC_CAP_HOST_DECODE, kTiffOptions,
    [](const iomimic::PluginContext& ctx) -> iomimic::Result<std::unique_ptr<iomimic::Format>> {
      IOMIMIC_ASSIGN_OR_RETURN(iomimic::tiff::WriterOptions options,
                               iomimic::tiff::ParseOptions(ctx.options));
      return std::unique_ptr<iomimic::Format>(std::make_unique<iomimic::tiff::TiffFormat>(options));
    });
