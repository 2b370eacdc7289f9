// The csv format plugin: text files of one row of comma-separated values per
// sample, optionally gzip/bz2/xz/zip compressed, laid out like DLIO's
// csv_generator (pandas to_csv) and read like DLIO's CSVReader
// (pd.read_csv of the whole file, row i). See csv_writer.h and csv_reader.h.

#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "csv_writer.h"
#include "iomimic/format.h"
#include "iomimic/status.h"
#include "iomimic/storage.h"

namespace iomimic::csv {

// Stateless apart from its constant options, so safe for concurrent use.
class CsvFormat final : public Format {
 public:
  explicit CsvFormat(WriterOptions options = {}) : options_(options) {}

  // "csv".
  std::string name() const override;

  // Extension csv (also for compressed files: the compressed bytes go into
  // <name>.csv, where DLIO writes <name>.csv.gz etc.), multi-sample files,
  // whole-file reads, host decoding, sizes not predictable (text length
  // depends on the values).
  FormatTraits traits() const override;

  // kInvalidArgument for an empty/zero sample shape, zero samples or an
  // element type without a text form; kNotSupported for compression lzf.
  Status Validate(const FileSpec& spec) const override;

  // kNotSupported: the size depends on the values written.
  Result<std::uint64_t> ExpectedFileSize(const FileSpec& spec) const override;

  // Writes the rows through file.WriteAt in chunk-aligned requests.
  Status WriteFile(Storage& storage, File& file, const FileSpec& spec) override;

  // Opens a CsvReader (performs the first whole-file load).
  Result<std::unique_ptr<FileReader>> OpenReader(const std::string& path,
                                                 const ReaderOptions& options) override;

  const WriterOptions& options() const { return options_; }

 private:
  const WriterOptions options_;
};

}  // namespace iomimic::csv
