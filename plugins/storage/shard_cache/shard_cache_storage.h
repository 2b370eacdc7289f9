// The `shard_cache` storage decorator: the local shard cache of
// mosaicml/streaming (docs/formats.md, "mds"). The back end it wraps is the
// remote store; opening a file for reading downloads it whole from there
// into a local folder (plain POSIX files) and serves every read from the
// local copy, as StreamingDataset prepares a shard (downloads it into its
// `local` folder) before reading samples from it.
//
//   storage:
//     backend: shard_cache
//     options: {inner: s3, cache_dir: /local/nvme/cache, capacity: 64G, report: true}
//
// - A file already in the cache is a hit: no request reaches the wrapped
//   back end. A file being downloaded by another thread is waited for
//   (streaming's PREPARING state), then is a hit.
// - A miss downloads the file: one inner open, sequential inner reads of
//   `download_size` bytes from offset 0 to its end, written to a temporary
//   local file renamed into place when complete.
// - The cache holds at most `capacity` bytes: before a download, the least
//   recently used files that no File has open are evicted (deleted) until
//   the new file fits, as streaming's cache_limit evicts its coldest shards.
//   Bytes being downloaded and bytes of a file still open count until they
//   are deleted, so the folder never holds more than `capacity` bytes. A file
//   larger than the capacity, or one that cannot fit because every cached
//   byte is held by open files, is kResourceExhausted naming the file.
// - Writing (kWrite, kReadWrite), Remove and Rename go to the wrapped back
//   end; they drop the cached copy of the paths they touch (a copy still
//   open is deleted when closed). Stat goes to the wrapped back end.
//
// The cache is the folder `<cache_dir>/rank<rank>-<process id>` of this rank
// (streaming shares one folder per node between ranks; here each rank has
// its own), so every run starts cold and processes sharing cache_dir never
// touch each other's files. It is removed when the storage is destroyed,
// unless `keep` is set (a run killed midway leaves it behind).
//
// Statistics (summed over ranks into summary.json; with `report` also one
// line on stderr per rank when the storage is destroyed):
//   shard_cache_downloads, shard_cache_download_bytes,
//   shard_cache_download_seconds  files fetched from the wrapped back end
//   shard_cache_hits              opens served from the cache
//   shard_cache_waits             opens that waited for another's download
//   shard_cache_evictions, shard_cache_evicted_bytes
//   shard_cache_peak_bytes        the most the folder held at once
//   shard_cache_capacity_bytes    the capacity

#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "iomimic/forwarding_storage.h"
#include "iomimic/iomimic.h"

namespace iomimic::shard_cache {

struct ShardCacheOptions {
  std::string cache_dir = "/tmp/iomimic-shard-cache";
  std::uint64_t capacity = std::uint64_t{4} << 30;
  std::uint64_t download_size = std::uint64_t{8} << 20;
  bool report = false;
  bool keep = false;
  int rank = 0;
};

Result<ShardCacheOptions> ParseOptions(const PluginOptions& options);

// What the cache has done so far.
struct CacheStats {
  std::uint64_t downloads = 0;
  std::uint64_t download_bytes = 0;
  double download_seconds = 0;
  std::uint64_t hits = 0;
  std::uint64_t waits = 0;
  std::uint64_t evictions = 0;
  std::uint64_t evicted_bytes = 0;
  std::uint64_t peak_bytes = 0;
  std::uint64_t held_bytes = 0;  // now
};

class ShardCacheStorage final : public ForwardingStorage {
 public:
  ShardCacheStorage(Storage* inner, const ShardCacheOptions& options);
  ~ShardCacheStorage() override;

  std::string name() const override { return "shard_cache"; }

  // The wrapped back end's, with reads served by pread from the local folder:
  // never asynchronous, collective or in device memory.
  StorageCapabilities capabilities() const override;

  // kRead: a hit, a wait, or a download (see the file comment), then a File
  // reading the local copy. Other modes: the wrapped back end's file, which
  // drops the cached copy when it is opened and when it is closed.
  Result<std::unique_ptr<File>> Open(const std::string& path, const OpenOptions& options) override;
  // The wrapped back end's, after dropping the cached copy of `path`.
  Status Remove(const std::string& path) override;
  // The wrapped back end's, after dropping the cached copies of both paths.
  Status Rename(const std::string& from, const std::string& to) override;
  // Host buffers when the wrapped back end hands out device memory (reads
  // are pread into them); the wrapped back end's otherwise.
  Result<Buffer> Allocate(std::size_t size) override;
  Status CopyIntoBuffer(Buffer& destination, std::size_t offset,
                        std::span<const std::byte> source) override;
  Status CopyOutOfBuffer(const Buffer& source, std::size_t offset,
                         std::span<std::byte> destination) override;
  // The wrapped back end's figures and the cache's (see the file comment).
  std::vector<StorageStatistic> Statistics() const override;

  CacheStats stats() const;
  const std::string& folder() const { return folder_; }
  // The stderr line of `report`.
  std::string ReportLine() const;

  // For CachedFile: a File of the entry of `path` was closed.
  void Release(const std::string& path, std::uint64_t generation);
  // For the writing files: `path` changed on the wrapped back end.
  void Invalidate(const std::string& path);

 private:
  struct Entry {
    std::string local;  // the local copy's path
    std::uint64_t size = 0;
    bool ready = false;  // downloaded (false: being downloaded)
    int open = 0;        // Files reading it
    std::uint64_t last_use = 0;
    std::uint64_t generation = 0;
  };

  // Downloads `path` (its inner file `remote` of `size` bytes) into `local`.
  Status Download(File& remote, const std::string& path, const std::string& local,
                  std::uint64_t size);
  // Makes room for `size` bytes (lock held): evicts unused entries, least
  // recently used first. False when they cannot make enough room.
  bool MakeRoom(std::uint64_t size);
  // Deletes an entry's file and gives back its bytes (lock held).
  void Drop(const std::string& path, Entry& entry, bool eviction);
  // The local file name for `path`.
  std::string LocalName(const std::string& path);
  Result<std::unique_ptr<File>> OpenCached(const std::string& path, const Entry& entry);

  ShardCacheOptions options_;
  std::string folder_;
  mutable std::mutex mutex_;
  std::condition_variable downloaded_;
  std::map<std::string, Entry> entries_;
  // Files dropped while open (or being downloaded), by generation: deleted
  // on their last close.
  std::map<std::uint64_t, Entry> retired_;
  std::uint64_t clock_ = 0;
  std::uint64_t next_generation_ = 0;
  std::uint64_t next_name_ = 0;
  CacheStats stats_;
};

Result<std::unique_ptr<Storage>> CreateShardCacheStorage(const PluginContext& context);

}  // namespace iomimic::shard_cache
