#include "webdataset_format.h"

#include <utility>

#include "iomimic/plugin.h"
#include "webdataset_reader.h"

namespace iomimic::webdataset {

std::string WebDatasetFormat::name() const { return "webdataset"; }

FormatTraits WebDatasetFormat::traits() const {
  // Fields left out keep FormatTraits' defaults; any element type.
  return {.extension = "tar",
          .needs_host_decode = true,
          .predictable_size = true,
          .streamed = true,
          .element_type = ""};
}

Status WebDatasetFormat::Validate(const FileSpec& spec) const { return ValidateSpec(spec); }

Result<std::uint64_t> WebDatasetFormat::ExpectedFileSize(const FileSpec& spec) const {
  IOMIMIC_ASSIGN_OR_RETURN(const ShardLayout layout, ComputeLayout(spec));
  return layout.file_size;
}

Status WebDatasetFormat::WriteFile(Storage& storage, File& file, const FileSpec& spec) {
  return WriteShard(storage, file, spec, options_);
}

Result<std::unique_ptr<FileReader>> WebDatasetFormat::OpenReader(const std::string& path,
                                                                 const ReaderOptions& options) {
  return WebDatasetReader::Open(path, options);
}

namespace {

// The keys this plugin adds to the manifest, below dataset.webdataset.
const IomimicOptionSpec kKeys[] = {
    {"label_classes", "int", "1000", "classes of the .cls labels (ImageNet's 1000), 1 to 2^32"},
    {nullptr, nullptr, nullptr, nullptr},
};

Result<std::unique_ptr<Format>> MakeFormat(const PluginContext& context) {
  WriterOptions options;
  IOMIMIC_ASSIGN_OR_RETURN(const std::int64_t classes,
                           context.options.GetInt("webdataset.label_classes", 1000));
  if (classes < 1 || classes > (std::int64_t{1} << 32)) {
    return Status::InvalidArgument("dataset.webdataset.label_classes " + std::to_string(classes) +
                                   " is out of range (1 to 4294967296)");
  }
  options.label_classes = static_cast<std::uint64_t>(classes);
  return std::unique_ptr<Format>(std::make_unique<WebDatasetFormat>(options));
}

}  // namespace

}  // namespace iomimic::webdataset

IOMIMIC_DEFINE_FORMAT_PLUGIN_WITH_KEYS(
    "webdataset", "1.0.0",
    "WebDataset shards: tar files of <key>.cls + <key>.npy samples as webdataset's TarWriter "
    "writes them; each shard streamed once, front to back, as webdataset reads it",
    IOMIMIC_CAP_MULTI_SAMPLE | IOMIMIC_CAP_HOST_DECODE, IOMIMIC_NO_OPTIONS,
    iomimic::webdataset::kKeys, &iomimic::webdataset::MakeFormat);
