#include "tfrecord_format.h"

#include <exception>
#include <new>
#include <utility>

#include "iomimic/plugin.h"
#include "tfrecord_reader.h"

namespace iomimic::tfrecord {

std::string TfRecordFormat::name() const { return "tfrecord"; }

FormatTraits TfRecordFormat::traits() const {
  // Fields left out keep FormatTraits' defaults; any element type.
  return {.extension = "tfrecord",
          .needs_host_decode = true,
          .predictable_size = true,
          .streamed = true,
          .element_type = ""};
}

Status TfRecordFormat::Validate(const FileSpec& spec) const { return ValidateSpec(spec); }

std::vector<std::string> TfRecordFormat::CompanionPaths(const FileSpec& spec) const {
  if (!options_.write_index) return {};
  return {IndexLocationFor(spec.path).path};
}

Result<std::uint64_t> TfRecordFormat::ExpectedFileSize(const FileSpec& spec) const {
  return ComputeFileSize(spec);
}

Status TfRecordFormat::WriteFile(Storage& storage, File& file, const FileSpec& spec) {
  return WriteTfRecordFile(storage, file, spec, options_);
}

Result<std::unique_ptr<FileReader>> TfRecordFormat::OpenReader(const std::string& path,
                                                               const ReaderOptions& options) {
  return TfRecordReader::Open(path, options);
}

namespace {

const IomimicOptionSpec kOptions[] = {
    {"index", "bool", "true",
     "write the DALI index file <data_folder>/index/<split>/<file>.idx beside each data file, "
     "as DLIO does"},
    {nullptr, nullptr, nullptr, nullptr},
};

Result<std::unique_ptr<Format>> MakeFormat(const PluginContext& context) {
  WriterOptions options;
  IOMIMIC_ASSIGN_OR_RETURN(options.write_index, context.options.GetBool("index", true));
  return std::unique_ptr<Format>(std::make_unique<TfRecordFormat>(options));
}

}  // namespace

}  // namespace iomimic::tfrecord

IOMIMIC_DEFINE_FORMAT_PLUGIN(
    "tfrecord", "1.0.0",
    "TFRecord files of tf.train.Example records (image bytes + size) with DALI index files, as "
    "DLIO's tf_generator writes them; streamed whole like tf.data.TFRecordDataset, CRC32C checked",
    IOMIMIC_CAP_MULTI_SAMPLE | IOMIMIC_CAP_HOST_DECODE, iomimic::tfrecord::kOptions,
    &iomimic::tfrecord::MakeFormat);
