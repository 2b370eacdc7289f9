#include "indexed_binary_format.h"

#include <exception>
#include <new>
#include <utility>

#include "indexed_binary_reader.h"
#include "iomimic/guard.h"

namespace iomimic::indexed_binary {

std::string IndexedBinaryFormat::name() const { return std::string(FlavorName(flavor_)); }

FormatTraits IndexedBinaryFormat::traits() const {
  // Fields left out keep FormatTraits' defaults; any element type.
  return {.extension = name(), .partial_reads = true, .predictable_size = true, .element_type = ""};
}

Status IndexedBinaryFormat::Validate(const FileSpec& spec) const {
  return Guard(name(), "validating a file spec", "",
               [&]() -> Status { return ValidateSpec(spec, flavor_); });
}

std::vector<std::string> IndexedBinaryFormat::CompanionPaths(const FileSpec& spec) const {
  return {OffsetIndexPath(spec.path), SizeIndexPath(spec.path)};
}

Result<std::uint64_t> IndexedBinaryFormat::ExpectedFileSize(const FileSpec& spec) const {
  return Guard(name(), "computing a file size", "",
               [&]() -> Result<std::uint64_t> { return ComputeFileSize(spec, flavor_); });
}

Status IndexedBinaryFormat::WriteFile(Storage& storage, File& file, const FileSpec& spec) {
  return WriteIndexedBinaryFile(storage, file, spec, flavor_, writer_options_);
}

Status IndexedBinaryFormat::CanWriteInParts(const FileSpec& spec) const { return Validate(spec); }

Result<PayloadLayout> IndexedBinaryFormat::WriteFrame(Storage& storage, File& file,
                                                      const FileSpec& spec) {
  (void)file;  // the data file is all payload
  IOMIMIC_RETURN_IF_ERROR(WriteIndexedBinaryFrame(storage, spec, flavor_, writer_options_));
  PayloadLayout layout;
  layout.payload_bytes = spec.sample_bytes() * spec.num_samples;
  layout.file_size = layout.payload_bytes;
  return layout;
}

Status IndexedBinaryFormat::FillPayload(const FileSpec& spec, std::uint64_t position,
                                        std::span<std::byte> out) const {
  spec.PayloadContent(position).Fill(out);
  return Status::OK();
}

Result<std::unique_ptr<FileReader>> IndexedBinaryFormat::OpenReader(const std::string& path,
                                                                    const ReaderOptions& options) {
  return IndexedBinaryReader::Open(path, options, flavor_,
                                   cache_.capacity() > 0 ? &cache_ : nullptr);
}

const IomimicOptionSpec kPluginOptions[1] = {
    {"index_cache_size", "bytes", "8G",
     "memory for sample indexes kept across readers, so index files are read once per file "
     "(an index larger than this is read by every reader; 0: no cache)"},
};

Result<std::unique_ptr<Format>> CreateIndexedBinaryFormat(Flavor flavor,
                                                          const PluginContext& context) {
  IOMIMIC_ASSIGN_OR_RETURN(const std::uint64_t cache_bytes,
                           context.options.GetBytes("index_cache_size", kDefaultIndexCacheBytes));
  return std::unique_ptr<Format>(std::make_unique<IndexedBinaryFormat>(flavor, cache_bytes));
}

}  // namespace iomimic::indexed_binary
