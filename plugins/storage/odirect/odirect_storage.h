// The `odirect` storage back end: O_DIRECT reads and writes that bypass the
// page cache, with batched and large reads kept in flight through io_uring,
// libaio or (last resort) one pread after another.
//
// Alignment. Direct I/O needs file offsets, lengths and buffer addresses that
// are multiples of the file system's DIO alignment. Each file's alignment is
// asked from the kernel at open (statx STATX_DIOALIGN: stx_dio_offset_align,
// stx_dio_mem_align; 4096 where the kernel does not say). Buffers from
// Allocate() are aligned to capabilities().alignment (option `alignment`,
// default: the page size, 4096, which every local file system's DIO memory
// alignment divides; the storage cannot ask statx before it knows a file).
// Formats need not care: any offset, length and buffer works.
//   * Reads: the part of a request whose file offsets are aligned and whose
//     destination addresses are aligned goes straight into the caller's
//     memory; the rest (an unaligned head or tail block, or the whole request
//     when buffer and offset are misaligned differently) is read as aligned
//     spans into bounce buffers and copied. Reads at the end of the file
//     return the short count (direct reads stop at i_size).
//   * Writes: aligned head-to-tail requests from aligned memory go straight
//     to the file; otherwise the covered aligned blocks are assembled in a
//     bounce buffer (read-modify-write of a partial first or last block; the
//     last partial block written is cached, so sequential writers do not read
//     it back) and written with O_DIRECT. A file whose length is not a
//     multiple of the alignment therefore grows to the next aligned size
//     while being written; Sync() and Close() ftruncate it to its exact
//     length, and Size() and reads through the writing File use the exact
//     length throughout. (The alternative, writing the tail through a second,
//     buffered descriptor, mixes cached and direct I/O on one file; it is
//     not used.)
// Concurrency. Large reads are split into `block_size` pieces and ReadBatch
// requests are queued together, with up to `queue_depth` in flight. Queues
// (an io_uring ring or a libaio context plus bounce buffers) live in a pool
// owned by the Storage; an operation takes one for its duration, so no queue
// is ever used by two threads at once and a thread count of N needs at most
// N queues. A read that is one aligned piece skips the queue: one pread.
//
// Buffers. Allocate() reuses freed buffers of 256 KiB and more (see
// buffer_cache.h): a new multi-MiB buffer costs a page fault per page on its
// first direct read, which is slower than the read itself. At most
// `buffer_cache` bytes (default 512M) are kept idle.
//
// Options: queue_depth (default 32), block_size (default 1M), engine =
// auto | io_uring | libaio | sync (auto: the first that the kernel accepts),
// sync_on_close (fsync written files at close), alignment (0 = page size),
// buffer_cache (idle bytes kept for reuse, 0 = none).

#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "buffer_cache.h"
#include "io_queue.h"
#include "iomimic/file_system.h"
#include "iomimic/iomimic.h"

namespace iomimic::odirect {

struct OdirectOptions {
  std::uint32_t queue_depth = 32;
  std::size_t block_size = std::size_t{1} << 20;
  std::string engine = "auto";
  bool sync_on_close = false;
  std::size_t alignment = 0;  // 0: the page size
  std::size_t buffer_cache = std::size_t{512} << 20;
};

// Parses and checks the plugin options.
Result<OdirectOptions> ParseOptions(const PluginOptions& options);

// The DIO alignment of an open file (statx STATX_DIOALIGN), or 4096 for
// both values where the kernel or file system does not report one.
struct DioAlignment {
  std::size_t memory = 4096;
  std::size_t offset = 4096;
  bool from_statx = false;
};
DioAlignment QueryDioAlignment(int fd);

// One in-flight piece of a read: `length` bytes at file offset `offset`
// into `target` (caller memory when direct, a bounce slot otherwise).
struct ReadOp {
  std::uint64_t offset = 0;
  std::size_t length = 0;
  std::size_t done = 0;         // bytes already transferred (short reads resume)
  std::size_t request = 0;      // index of the request it serves
  std::byte* target = nullptr;  // direct: destination; bounce: set when a slot is taken
  int slot = -1;                // bounce slot index, -1 when direct
  bool bounce = false;
  std::byte* copy_to = nullptr;  // bounce: where the useful bytes go
  std::size_t copy_skip = 0;     // bounce: useful bytes start here in the slot
  std::size_t copy_length = 0;   // bounce: how many useful bytes
};

// What an operation borrows from the storage's pool: a queue, bounce
// buffers and scratch vectors, reused across operations.
struct IoContext {
  std::unique_ptr<IoQueue> queue;
  std::vector<Buffer> slots;  // up to queue depth bounce buffers, grown on demand
  std::vector<ReadOp> ops;
  std::vector<IoCompletion> completions;
  std::vector<std::size_t> retry;
  std::vector<int> free_slots;
  std::vector<std::uint64_t> valid_end;  // per request: end of the bytes known good
  std::vector<std::size_t> lengths;      // per request: bytes asked after clipping
  bool broken = false;                   // the queue failed; do not return it to the pool
};

class OdirectStorage;

class OdirectFile final : public File {
 public:
  // Takes ownership of `fd` (opened with O_DIRECT). `storage` outlives it.
  OdirectFile(OdirectStorage* storage, int fd, std::string path, OpenMode mode,
              DioAlignment alignment, std::uint64_t size);
  ~OdirectFile() override;

  Result<std::size_t> ReadAt(std::uint64_t offset, std::span<std::byte> destination) override;
  Status WriteAt(std::uint64_t offset, std::span<const std::byte> source) override;
  Status ReadBatch(std::span<ReadRequest> requests) override;
  Status Sync() override;
  Result<std::uint64_t> Size() override;
  Status Close() override;
  const std::string& path() const override { return path_; }

  // The alignment in use for this file (tests).
  const DioAlignment& alignment() const { return alignment_; }

 private:
  // Plans and performs `requests` (already checked), filling each one's
  // bytes_read and status; returns the first error.
  Status RunReads(std::span<ReadRequest> requests);
  void PlanRead(std::size_t index, std::uint64_t offset, std::span<std::byte> destination,
                std::vector<ReadOp>* ops) const;
  Status ExecuteReads(IoContext& context, std::span<ReadRequest> requests);
  Result<std::size_t> PreadDirect(std::uint64_t offset, std::byte* buffer, std::size_t length);

  Status PwriteAll(const std::byte* data, std::size_t length, std::uint64_t offset);
  Status WriteThroughBounce(IoContext& context, std::uint64_t offset,
                            std::span<const std::byte> source);
  // Fills `out` (one alignment block) with the current content of the block
  // at `block`: the cached tail, zeros past the end, or a direct read.
  Status LoadBlock(std::uint64_t block, std::byte* out);
  Status TrimToSize();
  Status ReadError(int err, std::uint64_t offset, std::size_t length) const;

  OdirectStorage* storage_;
  int fd_;
  std::string path_;
  OpenMode mode_;
  DioAlignment alignment_;
  std::size_t chunk_;  // block_size rounded to the alignment

  // Writable files only.
  std::uint64_t size_;              // exact length
  std::uint64_t physical_end_ = 0;  // aligned end written, may exceed size_
  Buffer edge_;                     // one aligned block for read-modify-write
  Buffer tail_;                     // the last partial block written
  std::uint64_t tail_offset_ = 0;
  bool tail_valid_ = false;
};

class OdirectStorage final : public FileSystemStorage {
 public:
  // `first_queue` is the probe queue the factory made; it seeds the pool.
  OdirectStorage(const OdirectOptions& options, EngineKind engine,
                 std::unique_ptr<IoQueue> first_queue);
  ~OdirectStorage() override;

  std::string name() const override { return "odirect"; }
  StorageCapabilities capabilities() const override;
  Result<std::unique_ptr<File>> Open(const std::string& path, const OpenOptions& options) override;
  Result<Buffer> Allocate(std::size_t size) override;

  const OdirectOptions& options() const { return options_; }
  EngineKind engine() const { return engine_; }

  // Lends a context for one operation; give it back with Release().
  Result<std::unique_ptr<IoContext>> Acquire();
  void Release(std::unique_ptr<IoContext> context);
  // Contexts created so far (tests: bounded by the number of threads).
  std::size_t contexts_created() const;
  // Bytes of freed buffers kept for reuse (tests).
  std::size_t cached_buffer_bytes() const { return buffers_->cached_bytes(); }

 private:
  OdirectOptions options_;
  EngineKind engine_;
  std::size_t alignment_;
  BufferCache* buffers_;  // one reference held by this storage
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<IoContext>> pool_;
  std::size_t created_ = 0;
};

// Creates the storage from plugin options (the plugin factory).
Result<std::unique_ptr<Storage>> CreateOdirectStorage(const PluginContext& context);

}  // namespace iomimic::odirect
