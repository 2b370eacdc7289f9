#include "csv_format.h"

#include <utility>

#include "csv_reader.h"
#include "iomimic/plugin.h"

namespace iomimic::csv {

std::string CsvFormat::name() const { return "csv"; }

FormatTraits CsvFormat::traits() const {
  // Fields left out keep FormatTraits' defaults; any element type.
  return {.extension = "csv", .needs_host_decode = true, .element_type = ""};
}

Status CsvFormat::Validate(const FileSpec& spec) const { return ValidateSpec(spec); }

Result<std::uint64_t> CsvFormat::ExpectedFileSize(const FileSpec& spec) const {
  IOMIMIC_RETURN_IF_ERROR(ValidateSpec(spec));
  return Status::NotSupported("csv: the size of a CSV file depends on the text of its values");
}

Status CsvFormat::WriteFile(Storage& storage, File& file, const FileSpec& spec) {
  return WriteCsvFile(storage, file, spec, options_);
}

Result<std::unique_ptr<FileReader>> CsvFormat::OpenReader(const std::string& path,
                                                          const ReaderOptions& options) {
  return CsvReader::Open(path, options);
}

namespace {

const IomimicOptionSpec kOptions[] = {
    {"pandas_header", "bool", "false",
     "write pandas' default to_csv layout, as DLIO's csv_generator really does: a header line "
     "',0,1,...' and the row index as first column (readers accept both layouts)"},
    {nullptr, nullptr, nullptr, nullptr},
};

Result<std::unique_ptr<Format>> MakeFormat(const PluginContext& context) {
  WriterOptions options;
  IOMIMIC_ASSIGN_OR_RETURN(options.pandas_header, context.options.GetBool("pandas_header", false));
  return std::unique_ptr<Format>(std::make_unique<CsvFormat>(options));
}

}  // namespace

}  // namespace iomimic::csv

IOMIMIC_DEFINE_FORMAT_PLUGIN(
    "csv", "1.0.0",
    "CSV text, one row of values per sample (optionally gzip/bz2/xz/zip compressed), as DLIO's "
    "csv_generator writes it with pandas; read whole per sample like pd.read_csv",
    IOMIMIC_CAP_MULTI_SAMPLE | IOMIMIC_CAP_HOST_DECODE, iomimic::csv::kOptions,
    &iomimic::csv::MakeFormat);
