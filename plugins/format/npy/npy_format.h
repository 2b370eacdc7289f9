// The npy format plugin: NumPy .npy files laid out like DLIO's npy_generator
// (np.save of the npz "x" array: samples on the last axis) and read like
// DLIO's NPYReader (np.load(path), the whole array per load, x[..., i]).
// See npy_writer.h and npy_reader.h for the byte layout and access pattern.

#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "iomimic/format.h"
#include "iomimic/status.h"
#include "iomimic/storage.h"
#include "npy_writer.h"

namespace iomimic::npy {

// Stateless apart from its constant options, so safe for concurrent use.
class NpyFormat final : public Format {
 public:
  explicit NpyFormat(WriterOptions options = {}) : options_(options) {}

  // "npy".
  std::string name() const override;

  // Extension npy, multi-sample files, whole-file reads, host decoding, exact
  // sizes.
  FormatTraits traits() const override;

  // kInvalidArgument for an empty/zero sample shape, zero samples or an
  // inconsistent element type; kNotSupported for any compression but none.
  Status Validate(const FileSpec& spec) const override;

  // Header size plus sample_bytes * num_samples.
  Result<std::uint64_t> ExpectedFileSize(const FileSpec& spec) const override;

  // Writes the file through file.WriteAt in chunk-aligned requests.
  Status WriteFile(Storage& storage, File& file, const FileSpec& spec) override;

  // Every valid spec can be written in parts: the frame is the header, the
  // payload the array bytes after it.
  Status CanWriteInParts(const FileSpec& spec) const override;
  Result<PayloadLayout> WriteFrame(Storage& storage, File& file, const FileSpec& spec) override;
  Status FillPayload(const FileSpec& spec, std::uint64_t position,
                     std::span<std::byte> out) const override;

  // Opens an NpyReader (reads the file's header).
  Result<std::unique_ptr<FileReader>> OpenReader(const std::string& path,
                                                 const ReaderOptions& options) override;

 private:
  const WriterOptions options_;
};

}  // namespace iomimic::npy
