// Reading MDS shards the way mosaicml/streaming's MDSReader reads a sample
// from a shard in its local cache (get_sample_data): open the shard, read
// the 8 bytes of the sample's begin and end offsets at 4 + 4 * index, read
// the sample's bytes [begin, end), close. The sample count and the shard's
// size come from its index.json (the Format reads and keeps it); a shard
// whose size or sample count differs from its index, or whose offsets
// disagree with it, is kCorruption naming the file and the offset. The count
// (the shard's first 4 bytes) is read once per shard and Format: the first
// reader of a shard makes one 4-byte read more than the library.
//
// A zstd shard is read whole (one request of its size, or transfer-size
// requests when a transfer size is set) and decompressed in memory when the
// reader opens, as streaming decompresses a downloaded shard before reading
// samples from it; its samples then come from memory with the same checks.
//
// A reader keeps the shard open for its lifetime, whatever keep_in_memory
// says: with read_type on_demand the core opens a reader per sample, so each
// sample costs open, two reads and close, as in the library.

#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "iomimic/buffer.h"
#include "iomimic/format.h"
#include "iomimic/status.h"
#include "iomimic/storage.h"
#include "mds_layout.h"

namespace iomimic::mds {

class MdsReader final : public FileReader {
 public:
  // Opens `path` on options.storage and checks its size against `info`
  // (its entry in its index.json); a zstd shard is read and decompressed.
  static Result<std::unique_ptr<FileReader>> Open(const std::string& path,
                                                  const ReaderOptions& options,
                                                  std::shared_ptr<const ShardInfo> info);

  ~MdsReader() override;

  // The index's count.
  std::uint64_t num_samples() const override { return info_->samples; }

  // The values of sample `index` (its bytes after the column size head); the
  // same bytes, decoding or not (the ndarray values need no decoding).
  // kOutOfRange past the index's count; kCorruption naming the path and the
  // offset for offsets outside the shard or a sample of another size than
  // the index's columns.
  Result<SampleView> ReadSample(std::uint64_t index) override;

  // The sample's bytes [begin, end) (one 8-byte read of its offsets); not
  // for zstd shards.
  Result<std::vector<ByteRange>> SampleRanges(std::uint64_t index) override;
  File* data_file() override { return info_->compressed ? nullptr : file_.get(); }

 private:
  MdsReader(std::string path, const ReaderOptions& options, std::shared_ptr<const ShardInfo> info);

  Status Init();
  // Reads and decompresses a zstd shard into image_.
  Status LoadCompressed();
  // Compares the shard's own sample count with the index's.
  Status CheckCount(std::uint64_t count);
  // The checked offsets [begin, end) of sample `index`.
  Result<ByteRange> Offsets(std::uint64_t index);
  Status Corrupt(const std::string& what, std::uint64_t offset) const;

  std::string path_;
  Storage* storage_ = nullptr;
  std::uint64_t transfer_ = 0;
  std::shared_ptr<const ShardInfo> info_;
  std::unique_ptr<File> file_;
  Buffer pair_;                   // the 8 bytes of a sample's offsets
  Buffer sample_;                 // the sample read last
  std::vector<std::byte> image_;  // a decompressed zstd shard
};

}  // namespace iomimic::mds
