// The webdataset format plugin: WebDataset shards, POSIX tar files whose
// members group into samples by key (000000123.cls, 000000123.npy), written
// as webdataset's TarWriter writes them through Python's tarfile and read as
// webdataset reads them: each shard streamed once from its first byte to its
// last, in transfer-size requests. See webdataset_writer.h and
// webdataset_reader.h for the byte layout and the access pattern,
// docs/formats.md ("webdataset") for what is copied from the library.

#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "iomimic/format.h"
#include "iomimic/status.h"
#include "iomimic/storage.h"
#include "webdataset_writer.h"

namespace iomimic::webdataset {

// Stateless apart from its constant options, so safe for concurrent use.
class WebDatasetFormat final : public Format {
 public:
  explicit WebDatasetFormat(WriterOptions options = {}) : options_(options) {}

  // "webdataset".
  std::string name() const override;

  // Extension tar, multi-sample files, streamed whole-file reads, host
  // decoding, exact sizes, any element type.
  FormatTraits traits() const override;

  // ValidateSpec (webdataset_writer.h).
  Status Validate(const FileSpec& spec) const override;

  // The shard's size from ComputeLayout: exact.
  Result<std::uint64_t> ExpectedFileSize(const FileSpec& spec) const override;

  // Writes the shard through file.WriteAt in chunk-aligned requests.
  Status WriteFile(Storage& storage, File& file, const FileSpec& spec) override;

  // Opens a WebDatasetReader (reads the first chunk, checks the first header).
  Result<std::unique_ptr<FileReader>> OpenReader(const std::string& path,
                                                 const ReaderOptions& options) override;

 private:
  const WriterOptions options_;
};

}  // namespace iomimic::webdataset
