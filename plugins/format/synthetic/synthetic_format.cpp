#include "synthetic_format.h"

#include <cstring>
#include <exception>
#include <new>
#include <utility>

#include "iomimic/format_helpers.h"
#include "iomimic/guard.h"
#include "iomimic/plugin.h"

namespace iomimic::synthetic {

std::string FileText(std::uint64_t file_index) { return std::to_string(file_index); }

Result<SampleView> SyntheticReader::ReadSample(std::uint64_t) { return SampleView{}; }

std::string SyntheticFormat::name() const { return "synthetic"; }

FormatTraits SyntheticFormat::traits() const {
  // Fields left out keep FormatTraits' defaults; any element type.
  return {.extension = "synthetic",
          .partial_reads = true,
          .predictable_size = true,
          .element_type = ""};
}

Status SyntheticFormat::Validate(const FileSpec& spec) const {
  if (spec.num_samples == 0) {
    return Status::InvalidArgument("synthetic: num_samples must be at least 1");
  }
  return Status::OK();
}

Result<std::uint64_t> SyntheticFormat::ExpectedFileSize(const FileSpec& spec) const {
  IOMIMIC_RETURN_IF_ERROR(Validate(spec));
  return FileText(spec.file_index).size();
}

Status SyntheticFormat::WriteFile(Storage& storage, File& file, const FileSpec& spec) {
  return Guard("synthetic", "writing", spec.path, [&]() -> Status {
    IOMIMIC_RETURN_IF_ERROR(Validate(spec));
    const std::string text = FileText(spec.file_index);
    // A buffer from the storage, so that back ends with alignment needs
    // (O_DIRECT) get memory they accept.
    Result<Buffer> buffer = storage.Allocate(text.size());
    if (!buffer.ok()) return buffer.status().WithContext("synthetic: writing " + spec.path);
    Buffer host;
    std::byte* out = nullptr;
    if (buffer->host_accessible() && buffer->size() >= text.size()) {
      out = buffer->data();
    } else {
      host = Buffer::AllocateHost(text.size(), 64);
      if (host.empty()) {
        return Status::ResourceExhausted("synthetic: cannot allocate " +
                                         std::to_string(text.size()) + " bytes");
      }
      out = host.data();
    }
    std::memcpy(out, text.data(), text.size());
    Status s = file.WriteAt(0, std::span<const std::byte>(out, text.size()));
    if (!s.ok()) return s.WithContext("synthetic: writing " + spec.path);
    return Status::OK();
  });
}

Result<std::unique_ptr<FileReader>> SyntheticFormat::OpenReader(const std::string&,
                                                                const ReaderOptions&) {
  return Guard("synthetic", "creating a reader", "", [&]() -> Result<std::unique_ptr<FileReader>> {
    return std::unique_ptr<FileReader>(std::make_unique<SyntheticReader>());
  });
}

}  // namespace iomimic::synthetic

IOMIMIC_DEFINE_FORMAT_PLUGIN(
    "synthetic", "1.0.0",
    "DLIO's synthetic format: tiny text files holding the file index; reading performs no I/O "
    "(measures the input pipeline alone; samples report 0 bytes)",
    IOMIMIC_CAP_MULTI_SAMPLE | IOMIMIC_CAP_PARTIAL_READS, IOMIMIC_NO_OPTIONS,
    &iomimic::MakeDefaultFormat<iomimic::synthetic::SyntheticFormat>);
