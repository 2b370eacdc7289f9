// The hdf5 format plugin: HDF5 files laid out like DLIO's hdf5_generator
// (h5py, libver='latest': datasets records_0..K-1 of shape
// (num_samples, *row_dims) plus int64 labels) and read like DLIO's
// HDF5Reader (one row per dataset per sample, a partial read). All HDF5 I/O
// goes through the storage plugin by way of a custom HDF5 virtual file
// driver. See hdf5_layout.h, hdf5_writer.h, hdf5_reader.h and hdf5_vfd.h.

#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "hdf5_writer.h"
#include "iomimic/format.h"
#include "iomimic/status.h"
#include "iomimic/storage.h"

namespace iomimic::hdf5 {

// Stateless apart from its constant options, so safe for concurrent use.
// HDF5 calls of concurrent threads are serialised by the library's global
// lock (see hdf5_support.h).
class Hdf5Format final : public Format {
 public:
  explicit Hdf5Format(WriterOptions options = {}) : options_(options) {}

  // "hdf5".
  std::string name() const override;

  // Extension hdf5, multi-sample files, partial reads, host decoding, sizes
  // not predictable.
  FormatTraits traits() const override;

  // kInvalidArgument for shapes, hdf5.* keys or levels h5py would refuse;
  // kNotSupported for compression other than none, gzip and (when the
  // library has the filter) lzf.
  Status Validate(const FileSpec& spec) const override;

  // Always kNotSupported: HDF5's space allocation (metadata blocks, chunk
  // indexes, filters) makes the size hard to predict exactly.
  Result<std::uint64_t> ExpectedFileSize(const FileSpec& spec) const override;

  // Writes the file through the iomimic virtual file driver.
  Status WriteFile(Storage& storage, File& file, const FileSpec& spec) override;

  // Files with one contiguous, uncompressed records dataset can be written
  // in parts (hdf5_writer.h: WriteHdf5Frame); the payload is records_0's data.
  Status CanWriteInParts(const FileSpec& spec) const override;
  Result<PayloadLayout> WriteFrame(Storage& storage, File& file, const FileSpec& spec) override;
  Status FillPayload(const FileSpec& spec, std::uint64_t position,
                     std::span<std::byte> out) const override;

  // Opens an Hdf5Reader (opens the HDF5 file and its records datasets).
  Result<std::unique_ptr<FileReader>> OpenReader(const std::string& path,
                                                 const ReaderOptions& options) override;

 private:
  const WriterOptions options_;
};

}  // namespace iomimic::hdf5
