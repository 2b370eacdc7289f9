// The synthetic format plugin: DLIO's format "synthetic", which measures the
// input pipeline without storage I/O.
//
// Generation (DLIO's synthetic_generator) writes, for each file of the
// dataset, a tiny text file holding the file's global index in decimal (no
// newline): "0", "1", ... "17". It exists only so the dataset layout and the
// core's check for complete files work as for any other format; its size is
// the number of digits, so ExpectedFileSize is exact.
//
// Reading (DLIO's SyntheticReader returns the preallocated resized_image and
// never opens a file) performs no I/O at all: OpenReader opens nothing and
// ReadSample returns an empty view with bytes = 0. A reader is not given the
// FileSpec, so it cannot know the sample size without reading something, and
// not reading is the point; the core's per-sample work (the resized tensor
// DLIO returns, preprocessing, compute) is unaffected. Runs therefore report
// no sample bytes and no read requests: what is measured is the pipeline
// alone. There is no metadata either, so num_samples() is unknown (reported
// as the largest uint64) and every sample index is accepted.

#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>

#include "iomimic/format.h"
#include "iomimic/status.h"
#include "iomimic/storage.h"

namespace iomimic::synthetic {

// What a reader reports as its sample count: unknown, so unbounded.
inline constexpr std::uint64_t kUnknownSampleCount = std::numeric_limits<std::uint64_t>::max();

// The text of the file with global index `file_index`.
std::string FileText(std::uint64_t file_index);

// Performs no I/O. Stateless, so any thread may use it.
class SyntheticReader final : public FileReader {
 public:
  // kUnknownSampleCount.
  std::uint64_t num_samples() const override { return kUnknownSampleCount; }

  // An empty view with bytes = 0, for any index.
  Result<SampleView> ReadSample(std::uint64_t index) override;
};

// Stateless, so safe for concurrent use.
class SyntheticFormat final : public Format {
 public:
  // "synthetic".
  std::string name() const override;

  // Extension synthetic, multi-sample files, partial reads (none at all), no
  // decoding, exact sizes.
  FormatTraits traits() const override;

  // kInvalidArgument for zero samples; shape, element type and compression
  // describe data that is never written, so any value is accepted.
  Status Validate(const FileSpec& spec) const override;

  // The number of decimal digits of spec.file_index.
  Result<std::uint64_t> ExpectedFileSize(const FileSpec& spec) const override;

  // Writes FileText(spec.file_index) at offset 0 of `file`.
  Status WriteFile(Storage& storage, File& file, const FileSpec& spec) override;

  // A SyntheticReader; opens nothing (`options.storage` may be null).
  Result<std::unique_ptr<FileReader>> OpenReader(const std::string& path,
                                                 const ReaderOptions& options) override;
};

}  // namespace iomimic::synthetic
