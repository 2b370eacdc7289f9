// The jpeg format plugin: one 8-bit image per file, written like DLIO's
// jpeg_generator (PIL Image.fromarray(...).save(JPEG)) and read like DLIO's
// image reader (np.asarray(PIL.Image.open(path))): a sequential whole-file
// read, then a full decode from memory. See jpeg_codec.h for the bytes and
// image_common/image_reader.h for the access pattern.

#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "iomimic/format.h"
#include "iomimic/options.h"
#include "iomimic/status.h"
#include "iomimic/storage.h"
#include "jpeg_codec.h"

namespace iomimic::jpeg {

// Reads the plugin options (quality, 1-100).
Result<WriterOptions> ParseOptions(const PluginOptions& options);

// Stateless apart from constant options, so safe for concurrent use.
class JpegFormat final : public Format {
 public:
  explicit JpegFormat(WriterOptions options = {}) : options_(options) {}

  // "jpeg".
  std::string name() const override;

  // Extension jpeg, one sample per file, whole-file reads, host decoding,
  // sizes not predictable.
  FormatTraits traits() const override;

  // kInvalidArgument unless the sample is {d1, d2} or {d1, d2, 1|3} uint8,
  // at most 65,500 per side, with one sample per file; kNotSupported for
  // compression other than none.
  Status Validate(const FileSpec& spec) const override;

  // Always kNotSupported: the size depends on the pixels.
  Result<std::uint64_t> ExpectedFileSize(const FileSpec& spec) const override;

  // Encodes the image row by row, streaming through file.WriteAt.
  Status WriteFile(Storage& storage, File& file, const FileSpec& spec) override;

  // Opens an ImageReader with the JPEG codec.
  Result<std::unique_ptr<FileReader>> OpenReader(const std::string& path,
                                                 const ReaderOptions& options) override;

 private:
  const WriterOptions options_;
  const JpegCodec codec_;
};

}  // namespace iomimic::jpeg
