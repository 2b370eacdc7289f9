#include "npy_format.h"

#include <exception>
#include <new>
#include <utility>

#include "iomimic/format_helpers.h"
#include "iomimic/guard.h"
#include "iomimic/plugin.h"
#include "npy_reader.h"

namespace iomimic::npy {

std::string NpyFormat::name() const { return "npy"; }

FormatTraits NpyFormat::traits() const {
  // Fields left out keep FormatTraits' defaults; any element type.
  return {
      .extension = "npy", .needs_host_decode = true, .predictable_size = true, .element_type = ""};
}

Status NpyFormat::Validate(const FileSpec& spec) const {
  return Guard("npy", "validating a file spec", "", [&]() -> Status { return ValidateSpec(spec); });
}

Result<std::uint64_t> NpyFormat::ExpectedFileSize(const FileSpec& spec) const {
  return ComputeFileSize(spec);
}

Status NpyFormat::WriteFile(Storage& storage, File& file, const FileSpec& spec) {
  return WriteNpyFile(storage, file, spec, options_);
}

Status NpyFormat::CanWriteInParts(const FileSpec& spec) const { return Validate(spec); }

Result<PayloadLayout> NpyFormat::WriteFrame(Storage& storage, File& file, const FileSpec& spec) {
  (void)storage;
  IOMIMIC_ASSIGN_OR_RETURN(const std::string header, EncodeHeader(spec));
  IOMIMIC_RETURN_IF_ERROR(
      file.WriteAt(0, std::as_bytes(std::span<const char>(header.data(), header.size())))
          .WithContext("npy: writing the header of " + spec.path));
  PayloadLayout layout;
  layout.payload_offset = header.size();
  layout.payload_bytes = spec.sample_bytes() * spec.num_samples;
  layout.file_size = layout.payload_offset + layout.payload_bytes;
  return layout;
}

Status NpyFormat::FillPayload(const FileSpec& spec, std::uint64_t position,
                              std::span<std::byte> out) const {
  spec.PayloadContent(position).Fill(out);
  return Status::OK();
}

Result<std::unique_ptr<FileReader>> NpyFormat::OpenReader(const std::string& path,
                                                          const ReaderOptions& options) {
  return NpyReader::Open(path, options);
}

}  // namespace iomimic::npy

IOMIMIC_DEFINE_FORMAT_PLUGIN(
    "npy", "1.0.0",
    "NumPy .npy files as np.save writes them (NPY v1.0, samples on the last axis), read whole "
    "per sample like np.load(f)[..., i]",
    IOMIMIC_CAP_MULTI_SAMPLE | IOMIMIC_CAP_HOST_DECODE, IOMIMIC_NO_OPTIONS,
    &iomimic::MakeDefaultFormat<iomimic::npy::NpyFormat>);
