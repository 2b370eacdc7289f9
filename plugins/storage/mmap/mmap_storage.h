// The `mmap` storage back end: reads served from a shared read-only mapping
// of each file, the way np.memmap and np.load(mmap_mode=...) read. ReadAt
// copies from the mapping into the destination, so the I/O happens as page
// faults (and the readahead the kernel does for them), not as read calls.
//
//   * A File maps the whole file (PROT_READ, MAP_SHARED) at its first read
//     and keeps the mapping until it closes or the limiter takes it away;
//     a file that grew since is mapped again at its new length.
//   * madvise follows the caller's access hint (sequential ->
//     MADV_SEQUENTIAL, random -> MADV_RANDOM, whole file -> MADV_WILLNEED)
//     unless option `advice` forces one; `populate` adds MAP_POPULATE.
//     Sequential and random advice also go to the descriptor
//     (posix_fadvise), whose readahead window the page faults use.
//     MADV_WILLNEED covers the whole file when it is mapped (default), or a
//     window ahead of each read (option willneed_window > 0): for files of
//     many GiB the whole-file call reads (and may evict) far more than the
//     reader is about to use. On 16 x 128 MiB files read cold by 2 readers
//     the whole-file call matched fio's mmap engine (1534 and 1499 vs 1486
//     and 1512 MiB/s) while a 16M window reached 1176-1364 MiB/s (0.8x).
//   * A limiter bounds the live mappings of the Storage (option
//     max_mappings, default 1024) and the bytes they span (max_mapped_bytes,
//     default 16G), like LevelDB's Limiter for mmap'ed tables. When a new
//     mapping would exceed a bound, the least recently used idle mapping of
//     another File is unmapped (that File maps again when it reads next).
//     When no idle mapping can be given up (all are being read from at that
//     moment) or the file alone is larger than max_mapped_bytes, that one
//     read falls back to pread. Both are counted (stats()).
//   * Writes go through pwrite; mapping for writing is not needed. Reads of
//     a file opened for writing see what was written (the mapping and
//     pwrite share the page cache).
// Caveat of every mmap reader: a file truncated by another process while
// mapped raises SIGBUS on access; iomimic never truncates files it reads.

#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>

#include "iomimic/file_system.h"
#include "iomimic/iomimic.h"

namespace iomimic::mmap {

struct MmapOptions {
  std::string advice = "auto";  // auto, normal, sequential, random, willneed
  bool populate = false;
  std::uint64_t max_mappings = 1024;
  std::uint64_t max_mapped_bytes = std::uint64_t{16} << 30;
  bool sync_on_close = false;
  std::uint64_t willneed_window = 0;  // 0: whole file at map time
};

Result<MmapOptions> ParseOptions(const PluginOptions& options);

// Counters of the limiter (tests and diagnostics).
struct MmapStats {
  std::uint64_t live_mappings = 0;
  std::uint64_t mapped_bytes = 0;
  std::uint64_t maps = 0;       // mmap calls made
  std::uint64_t evictions = 0;  // mappings taken from idle files
  std::uint64_t fallbacks = 0;  // reads served by pread instead
};

class MmapFile;

// Owns the accounting of live mappings. Every field of a File's mapping is
// read and changed under the limiter's mutex, except the bytes themselves.
class MappingLimiter {
 public:
  MappingLimiter(std::uint64_t max_mappings, std::uint64_t max_bytes)
      : max_mappings_(max_mappings), max_bytes_(max_bytes) {}

  // Makes `file`'s mapping span at least `length` bytes and marks it in use.
  // Returns its base address, or null when this read should use pread.
  Result<const std::byte*> Pin(MmapFile* file, std::uint64_t length);
  // Ends the use Pin began.
  void Unpin(MmapFile* file);
  // Unmaps `file` (at close).
  void Forget(MmapFile* file);

  MmapStats stats() const;

 private:
  // Unmaps one entry; the mutex is held.
  void UnmapLocked(MmapFile* file);

  const std::uint64_t max_mappings_;
  const std::uint64_t max_bytes_;
  mutable std::mutex mutex_;
  std::list<MmapFile*> lru_;  // least recently used first
  std::uint64_t live_ = 0;
  std::uint64_t bytes_ = 0;
  std::uint64_t maps_ = 0;
  std::uint64_t evictions_ = 0;
  std::uint64_t fallbacks_ = 0;
};

class MmapFile final : public File {
 public:
  // Takes ownership of `fd`. `limiter` outlives the file.
  MmapFile(MappingLimiter* limiter, const MmapOptions* options, int fd, std::string path,
           OpenMode mode, int advice, std::uint64_t size);
  ~MmapFile() override;

  Result<std::size_t> ReadAt(std::uint64_t offset, std::span<std::byte> destination) override;
  Status WriteAt(std::uint64_t offset, std::span<const std::byte> source) override;
  Status Sync() override;
  Result<std::uint64_t> Size() override;
  Status Close() override;
  const std::string& path() const override { return path_; }

 private:
  friend class MappingLimiter;

  // Windowed MADV_WILLNEED ahead of a read that ends at `end`.
  void PrefetchAhead(const std::byte* base, std::uint64_t end);

  MappingLimiter* limiter_;
  const MmapOptions* options_;
  int fd_;
  std::string path_;
  OpenMode mode_;
  int advice_;  // madvise value, or -1 for none
  std::uint64_t size_;

  // Mapping state, guarded by the limiter's mutex.
  std::byte* base_ = nullptr;
  std::uint64_t mapped_ = 0;
  int users_ = 0;
  bool listed_ = false;
  std::list<MmapFile*>::iterator lru_position_;
  std::uint64_t advised_until_ = 0;  // MADV_WILLNEED given up to here (this mapping)
};

class MmapStorage final : public FileSystemStorage {
 public:
  explicit MmapStorage(const MmapOptions& options);
  ~MmapStorage() override = default;

  std::string name() const override { return "mmap"; }
  StorageCapabilities capabilities() const override;
  Result<std::unique_ptr<File>> Open(const std::string& path, const OpenOptions& options) override;

  MmapStats stats() const { return limiter_.stats(); }

 private:
  MmapOptions options_;
  MappingLimiter limiter_;
};

Result<std::unique_ptr<Storage>> CreateMmapStorage(const PluginContext& context);

}  // namespace iomimic::mmap
