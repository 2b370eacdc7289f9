// The tiff format plugin: one image per file, written and read with libtiff
// through memory (TIFFClientOpenExt) so that every byte goes through the
// storage. Reading follows DLIO's image reader: a sequential whole-file
// read, then a full decode. See tiff_codec.h for the bytes and
// image_common/image_reader.h for the access pattern.

#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "iomimic/format.h"
#include "iomimic/options.h"
#include "iomimic/status.h"
#include "iomimic/storage.h"
#include "tiff_codec.h"

namespace iomimic::tiff {

// Reads the plugin options: compression (none|deflate|lzw|packbits),
// compress_level (1-9), rows_per_strip (0 = strips of at most 64 KiB).
Result<WriterOptions> ParseOptions(const PluginOptions& options);

// Stateless apart from constant options, so safe for concurrent use.
class TiffFormat final : public Format {
 public:
  // Installs libtiff's process-wide message handlers (see tiff_codec.h).
  explicit TiffFormat(WriterOptions options = {});

  // "tiff".
  std::string name() const override;

  // Extension tiff, one sample per file, whole-file reads, host decoding,
  // sizes not predictable (compression; libtiff's tag layout).
  FormatTraits traits() const override;

  // kInvalidArgument unless the sample is {d1, d2} or {d1, d2, 1|3} of a
  // numeric element type with one sample per file; kNotSupported for an
  // unsupported compression.
  Status Validate(const FileSpec& spec) const override;

  // Always kNotSupported.
  Result<std::uint64_t> ExpectedFileSize(const FileSpec& spec) const override;

  // Encodes the image strip by strip, streaming through file.WriteAt.
  Status WriteFile(Storage& storage, File& file, const FileSpec& spec) override;

  // Opens an ImageReader with the TIFF codec.
  Result<std::unique_ptr<FileReader>> OpenReader(const std::string& path,
                                                 const ReaderOptions& options) override;

 private:
  const WriterOptions options_;
  const TiffCodec codec_;
};

}  // namespace iomimic::tiff
