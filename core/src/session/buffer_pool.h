// Buffers that belong to a reader for the whole run.
//
// First touch of new memory is the most expensive thing a reader can do on a
// virtual machine (a minor page fault per 4 KiB page, 20-40 us each), and
// format readers ask for their buffers afresh for every sample (with
// read_type on_demand a reader is opened per sample). A BufferPool keeps the
// buffers handed back for the next request of a fitting size instead of
// freeing them, so after the first samples the hot path neither allocates
// nor faults; see docs/performance.md.
//
// ReaderStorage is the Storage a reader thread gives the format plugin: it
// forwards every operation to the session's storage, except that Allocate
// draws from the thread's pool. Buffers still come from the back end
// (Storage::Allocate), so O_DIRECT alignment and device memory keep working.

#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "iomimic/storage.h"

namespace iomimic::session {

class BufferPool {
 public:
  struct Stats {
    std::uint64_t requests = 0;      // Acquire calls that returned a buffer
    std::uint64_t allocations = 0;   // requests served by the back end
    std::uint64_t evictions = 0;     // cached buffers freed to make room
    std::uint64_t cached_bytes = 0;  // capacity held, in use or free
  };

  // Buffers come from `source`, which must outlive the pool. At most
  // `max_free_bytes` of capacity is kept while not in use (least recently
  // used buffers beyond that are freed). `prefault`: touch every page of a
  // newly allocated host buffer at once, so its faults happen at allocation.
  // `huge_pages`: ask the kernel to back the 2 MiB-aligned part of new host
  // buffers of 2 MiB or more with transparent huge pages (MADV_HUGEPAGE;
  // a hint, honoured when THP is "always" or "madvise").
  BufferPool(Storage& source, std::uint64_t max_free_bytes, bool prefault = true,
             bool huge_pages = false);
  // Precondition: every buffer handed out has been destroyed.
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A buffer of exactly `size` bytes (Buffer::size() == size) whose memory
  // is the smallest free cached buffer that fits, or a new one from the
  // source (capacity rounded up so that slightly larger later requests
  // still fit). Destroying the returned Buffer gives the memory back to the
  // pool. Thread-safe. Errors are the source's.
  Result<Buffer> Acquire(std::size_t size);

  Stats stats() const;

 private:
  struct Entry {
    BufferPool* pool = nullptr;
    Buffer memory;  // from the source; capacity = memory.size()
    bool in_use = false;
    std::uint64_t last_used = 0;
  };
  static void Release(void* context, void* data, std::size_t size);
  void Return(Entry* entry);
  // Frees least recently used free entries until the free capacity fits the
  // bound. Caller holds mutex_.
  void EvictLocked();

  Storage& source_;
  const std::uint64_t max_free_bytes_;
  const bool prefault_;
  const bool huge_pages_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Entry>> entries_;
  std::uint64_t clock_ = 0;
  std::uint64_t free_bytes_ = 0;
  Stats stats_;
};

// The storage one reader thread hands to the format: the session's storage
// with Allocate served by `pool`. Both must outlive this object.
class ReaderStorage final : public Storage {
 public:
  ReaderStorage(Storage& inner, BufferPool& pool) : inner_(inner), pool_(pool) {}

  std::string name() const override { return inner_.name(); }
  StorageCapabilities capabilities() const override { return inner_.capabilities(); }
  Result<std::unique_ptr<File>> Open(const std::string& path, const OpenOptions& options) override {
    return inner_.Open(path, options);
  }
  Status CreateDirectories(const std::string& path) override {
    return inner_.CreateDirectories(path);
  }
  Status Remove(const std::string& path) override { return inner_.Remove(path); }
  Status Rename(const std::string& from, const std::string& to) override {
    return inner_.Rename(from, to);
  }
  Result<FileInfo> Stat(const std::string& path) override { return inner_.Stat(path); }
  std::vector<StorageStatistic> Statistics() const override { return inner_.Statistics(); }
  Result<Buffer> Allocate(std::size_t size) override { return pool_.Acquire(size); }
  // The pool's buffers are the inner storage's (BufferPool allocates them there).
  Status CopyIntoBuffer(Buffer& destination, std::size_t offset,
                        std::span<const std::byte> source) override {
    return inner_.CopyIntoBuffer(destination, offset, source);
  }
  Status CopyOutOfBuffer(const Buffer& source, std::size_t offset,
                         std::span<std::byte> destination) override {
    return inner_.CopyOutOfBuffer(source, offset, destination);
  }

 private:
  Storage& inner_;
  BufferPool& pool_;
};

// Capacity a pool allocates for a request of `size` bytes: `size` rounded up
// to a multiple of an eighth of its power of two (at least 4 KiB), so
// requests that vary by a few percent (images, drawn sample shapes) reuse
// one buffer. Exposed for tests.
std::size_t PoolCapacityFor(std::size_t size);

}  // namespace iomimic::session
