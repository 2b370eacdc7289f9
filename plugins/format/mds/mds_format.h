// The mds format plugin: mosaicml/streaming's MDS shards with their
// index.json (mds_layout.h), written as MDSWriter writes them and read as
// MDSReader reads a sample from a shard in its local cache (mds_reader.h).
// The download into that cache is the shard_cache storage decorator's
// (plugins/storage/shard_cache); docs/formats.md ("mds") has both.

#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "iomimic/format.h"
#include "iomimic/status.h"
#include "iomimic/storage.h"
#include "mds_layout.h"

namespace iomimic::mds {

// Keeps each shard's index entry once read (behind a lock), so a reader per
// sample (read_type on_demand) reads index.json once per shard; safe for
// concurrent use.
class MdsFormat final : public Format {
 public:
  explicit MdsFormat(MdsOptions options = {}) : options_(std::move(options)) {}

  // "mds".
  std::string name() const override;

  // Extension mds, multi-sample files, partial reads, exact sizes (for
  // uncompressed shards), any ndarray element type.
  FormatTraits traits() const override;

  // ValidateSpec (mds_layout.h).
  Status Validate(const FileSpec& spec) const override;

  // The uncompressed shard's size; kNotSupported for zstd (content-dependent).
  Result<std::uint64_t> ExpectedFileSize(const FileSpec& spec) const override;

  // The shard's index.json (IndexPathFor).
  std::vector<std::string> CompanionPaths(const FileSpec& spec) const override;

  // Writes the shard, then its index; forgets what it kept of an older index
  // of the same path.
  Status WriteFile(Storage& storage, File& file, const FileSpec& spec) override;

  // Opens the shard (kNotFound naming it when missing), then finds it in its
  // index.json (read once per shard and kept), then opens an MdsReader.
  Result<std::unique_ptr<FileReader>> OpenReader(const std::string& path,
                                                 const ReaderOptions& options) override;

 private:
  // The index entry of the shard at `path`, read through `storage` the first
  // time.
  Result<std::shared_ptr<const ShardInfo>> InfoFor(Storage& storage, const std::string& path);

  const MdsOptions options_;
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const ShardInfo>> infos_;
};

}  // namespace iomimic::mds
