// The npz format plugin: NumPy .npz archives laid out like DLIO's
// npz_generator (np.savez(x=..., y=...), samples on the last axis of x) and
// read like DLIO's NPZReader (np.load(path)['x'], whole member per load).
// See npz_writer.h and npz_reader.h for the byte layout and access pattern.

#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "iomimic/format.h"
#include "iomimic/status.h"
#include "iomimic/storage.h"
#include "npz_reader.h"
#include "npz_writer.h"

namespace iomimic::npz {

// Stateless apart from its constant options, so safe for concurrent use.
class NpzFormat final : public Format {
 public:
  explicit NpzFormat(WriterOptions options = {}, ReadPattern pattern = ReadPattern::kDlio)
      : options_(options), pattern_(pattern) {}

  // "npz".
  std::string name() const override;

  // Extension npz, multi-sample files, whole-file reads, host decoding, exact
  // sizes (for uncompressed files).
  FormatTraits traits() const override;

  // kInvalidArgument for an empty/zero sample shape, zero samples or an
  // inconsistent element type; kNotSupported for compression other than
  // none and zip.
  Status Validate(const FileSpec& spec) const override;

  // Exact size for compression none; kNotSupported for zip.
  Result<std::uint64_t> ExpectedFileSize(const FileSpec& spec) const override;

  // Writes the archive through file.WriteAt in chunk-aligned requests.
  Status WriteFile(Storage& storage, File& file, const FileSpec& spec) override;

  // Opens an NpzReader (reads the archive's metadata) with the format's read
  // pattern (plugin option read_pattern, manifest dataset.read_pattern).
  Result<std::unique_ptr<FileReader>> OpenReader(const std::string& path,
                                                 const ReaderOptions& options) override;

 private:
  const WriterOptions options_;
  const ReadPattern pattern_;
};

}  // namespace iomimic::npz
