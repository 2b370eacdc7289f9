// The indexed_binary and mmap_indexed_binary format plugins: DLIO's indexed
// binary datasets (a data file of fixed-size samples plus .off.idx and
// .sz.idx uint64 index files, see indexed_binary_common.h), written like
// DLIO's indexed_binary_generator (indexed_binary_writer.h) and read like its
// IndexedBinaryReader and IndexedBinaryMMapReader (indexed_binary_reader.h).
// One class serves both; the Flavor given by each plugin's factory selects
// the name.

#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "index_cache.h"
#include "indexed_binary_common.h"
#include "indexed_binary_writer.h"
#include "iomimic/format.h"
#include "iomimic/plugin.h"
#include "iomimic/status.h"
#include "iomimic/storage.h"

namespace iomimic::indexed_binary {

// Default capacity of the index cache (plugin option index_cache_size): room
// for the index of DLIO's megatron_deepspeed_LLNL.yaml (277,203,535 samples,
// 4.4 GB of offsets and sizes).
inline constexpr std::uint64_t kDefaultIndexCacheBytes = std::uint64_t{8} << 30;

// Thread-safe: the only mutable state is the (internally locked) index cache.
class IndexedBinaryFormat final : public Format {
 public:
  explicit IndexedBinaryFormat(Flavor flavor,
                               std::uint64_t index_cache_bytes = kDefaultIndexCacheBytes,
                               WriterOptions writer_options = {})
      : flavor_(flavor), writer_options_(writer_options), cache_(index_cache_bytes) {}

  // "indexed_binary" or "mmap_indexed_binary".
  std::string name() const override;

  // Extension = name, multi-sample files, partial reads (one sample's bytes
  // per read), no decoding, exact sizes.
  FormatTraits traits() const override;

  // kInvalidArgument for a zero dimension, zero samples or a bad
  // generation_buffer_size; kNotSupported for any compression but none.
  Status Validate(const FileSpec& spec) const override;

  // The data file's size: sample_bytes * num_samples.
  Result<std::uint64_t> ExpectedFileSize(const FileSpec& spec) const override;

  // The two index files: OffsetIndexPath and SizeIndexPath of spec.path.
  std::vector<std::string> CompanionPaths(const FileSpec& spec) const override;

  // Writes the data into `file` and the index files beside spec.path (which
  // must be the data file's final path).
  Status WriteFile(Storage& storage, File& file, const FileSpec& spec) override;

  // Every valid spec can be written in parts: the frame is the index files,
  // the payload the whole data file.
  Status CanWriteInParts(const FileSpec& spec) const override;
  Result<PayloadLayout> WriteFrame(Storage& storage, File& file, const FileSpec& spec) override;
  Status FillPayload(const FileSpec& spec, std::uint64_t position,
                     std::span<std::byte> out) const override;

  // Opens an IndexedBinaryReader with its index from the cache.
  Result<std::unique_ptr<FileReader>> OpenReader(const std::string& path,
                                                 const ReaderOptions& options) override;

  Flavor flavor() const { return flavor_; }
  IndexCache& index_cache() { return cache_; }

 private:
  const Flavor flavor_;
  const WriterOptions writer_options_;
  IndexCache cache_;
};

// The option table of both descriptors: index_cache_size.
extern const IomimicOptionSpec kPluginOptions[1];

// The plugin factory of both descriptors: reads the option index_cache_size
// (bytes) from `context`.
Result<std::unique_ptr<Format>> CreateIndexedBinaryFormat(Flavor flavor,
                                                          const PluginContext& context);

}  // namespace iomimic::indexed_binary
