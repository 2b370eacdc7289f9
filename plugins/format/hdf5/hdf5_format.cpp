#include "hdf5_format.h"

#include <exception>
#include <new>
#include <utility>

#include "hdf5_layout.h"
#include "hdf5_reader.h"
#include "hdf5_vfd.h"
#include "iomimic/plugin.h"

namespace iomimic::hdf5 {

std::string Hdf5Format::name() const { return "hdf5"; }

FormatTraits Hdf5Format::traits() const {
  // Fields left out keep FormatTraits' defaults; any element type.
  return {
      .extension = "hdf5", .partial_reads = true, .needs_host_decode = true, .element_type = ""};
}

Status Hdf5Format::Validate(const FileSpec& spec) const { return PlanLayout(spec).status(); }

Result<std::uint64_t> Hdf5Format::ExpectedFileSize(const FileSpec& spec) const {
  return Status::NotSupported(
      "hdf5: the size of an HDF5 file depends on HDF5's space allocation and filters");
}

Status Hdf5Format::WriteFile(Storage& storage, File& file, const FileSpec& spec) {
  return WriteHdf5File(storage, file, spec, options_);
}

Status Hdf5Format::CanWriteInParts(const FileSpec& spec) const { return CanWriteHdf5InParts(spec); }

Result<PayloadLayout> Hdf5Format::WriteFrame(Storage& storage, File& file, const FileSpec& spec) {
  return WriteHdf5Frame(storage, file, spec, options_);
}

Status Hdf5Format::FillPayload(const FileSpec& spec, std::uint64_t position,
                               std::span<std::byte> out) const {
  ContentStream(spec.seed, spec.content, spec.element_type.name == "bool", position).Fill(out);
  return Status::OK();
}

Result<std::unique_ptr<FileReader>> Hdf5Format::OpenReader(const std::string& path,
                                                           const ReaderOptions& options) {
  return Hdf5Reader::Open(path, options);
}

}  // namespace iomimic::hdf5

IOMIMIC_DEFINE_FORMAT_PLUGIN(
    "hdf5", "1.0.0",
    "HDF5 files as DLIO's h5py generator writes them (records_0..K-1 of shape (samples, ...) and "
    "labels; contiguous, chunked, gzip) read one row per sample like h5py, all through the "
    "storage plugin via an HDF5 virtual file driver",
    IOMIMIC_CAP_PARTIAL_READS | IOMIMIC_CAP_MULTI_SAMPLE | IOMIMIC_CAP_HOST_DECODE,
    IOMIMIC_NO_OPTIONS,
    [](const iomimic::PluginContext&) -> iomimic::Result<std::unique_ptr<iomimic::Format>> {
      // Fails here, with a clear message, if HDF5 refuses the driver.
      IOMIMIC_RETURN_IF_ERROR(iomimic::hdf5::DriverId().status());
      return std::unique_ptr<iomimic::Format>(std::make_unique<iomimic::hdf5::Hdf5Format>());
    });
