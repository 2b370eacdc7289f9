// The tfrecord format plugin: TFRecord files of tf.train.Example records laid
// out like DLIO's tf_generator (features "image" and "size", plus the DALI
// index file) and read like tf.data.TFRecordDataset (whole files streamed in
// transfer-size requests, CRCs checked). See tfrecord_writer.h and
// tfrecord_reader.h for the byte layout and the access pattern.

#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "iomimic/format.h"
#include "iomimic/status.h"
#include "iomimic/storage.h"
#include "tfrecord_writer.h"

namespace iomimic::tfrecord {

// Stateless apart from its constant options, so safe for concurrent use.
class TfRecordFormat final : public Format {
 public:
  explicit TfRecordFormat(WriterOptions options = {}) : options_(options) {}

  // "tfrecord".
  std::string name() const override;

  // Extension tfrecord, multi-sample files, streamed whole-file reads, host
  // decoding, exact sizes.
  FormatTraits traits() const override;

  // kInvalidArgument for an empty/zero sample shape, zero samples or an
  // Example of 2 GiB or more; kNotSupported for any compression.
  Status Validate(const FileSpec& spec) const override;

  // num_samples * (16 + serialized Example size): exact.
  Result<std::uint64_t> ExpectedFileSize(const FileSpec& spec) const override;

  // The DALI index file (IndexLocationFor) when the index is enabled.
  std::vector<std::string> CompanionPaths(const FileSpec& spec) const override;

  // Writes the records through file.WriteAt in chunk-aligned requests, then
  // the index file (when enabled) through `storage`.
  Status WriteFile(Storage& storage, File& file, const FileSpec& spec) override;

  // Opens a TfRecordReader (reads the first chunk, counts the records).
  Result<std::unique_ptr<FileReader>> OpenReader(const std::string& path,
                                                 const ReaderOptions& options) override;

  const WriterOptions& options() const { return options_; }

 private:
  const WriterOptions options_;
};

}  // namespace iomimic::tfrecord
