#include "npz_format.h"

#include <exception>
#include <new>
#include <utility>

#include "iomimic/guard.h"
#include "iomimic/plugin.h"
#include "npz_reader.h"

namespace iomimic::npz {

std::string NpzFormat::name() const { return "npz"; }

FormatTraits NpzFormat::traits() const {
  // Fields left out keep FormatTraits' defaults; any element type.
  return {
      .extension = "npz", .needs_host_decode = true, .predictable_size = true, .element_type = ""};
}

Status NpzFormat::Validate(const FileSpec& spec) const {
  return Guard("npz", "validating a file spec", "", [&]() -> Status { return ValidateSpec(spec); });
}

Result<std::uint64_t> NpzFormat::ExpectedFileSize(const FileSpec& spec) const {
  return ComputeFileSize(spec, options_);
}

Status NpzFormat::WriteFile(Storage& storage, File& file, const FileSpec& spec) {
  return WriteNpzFile(storage, file, spec, options_);
}

Result<std::unique_ptr<FileReader>> NpzFormat::OpenReader(const std::string& path,
                                                          const ReaderOptions& options) {
  return NpzReader::Open(path, options, pattern_);
}

}  // namespace iomimic::npz

namespace {

const IomimicOptionSpec kNpzOptions[] = {
    {"read_pattern", "string", "dlio",
     "how samples are read: dlio (np.load's calls through Python's 4 KiB buffered file, as "
     "DLIO makes them), direct (numpy's 256 KiB requests without the buffering), whole (one "
     "request for the whole file)"},
};

}  // namespace

IOMIMIC_DEFINE_FORMAT_PLUGIN(
    "npz", "1.0.0",
    "NumPy .npz archives as np.savez writes them (x.npy samples on the last axis, y.npy labels; "
    "stored or zip-deflated), read whole per sample like np.load(f)['x']",
    IOMIMIC_CAP_MULTI_SAMPLE | IOMIMIC_CAP_HOST_DECODE, kNpzOptions,
    [](const iomimic::PluginContext& ctx) -> iomimic::Result<std::unique_ptr<iomimic::Format>> {
      IOMIMIC_ASSIGN_OR_RETURN(std::string text, ctx.options.GetString("read_pattern", "dlio"));
      iomimic::Result<iomimic::npz::ReadPattern> pattern = iomimic::npz::ParseReadPattern(text);
      if (!pattern.ok()) return pattern.status();
      return std::unique_ptr<iomimic::Format>(
          std::make_unique<iomimic::npz::NpzFormat>(iomimic::npz::WriterOptions{}, *pattern));
    });
