// Reuse of large aligned buffers for Storage::Allocate.
//
// Direct I/O lands data by DMA into the caller's pages; a freshly allocated
// buffer of many MiB is a fresh anonymous mapping whose every page the
// kernel must fault in, zero and charge before the first read can use it,
// and unmap again when it is freed. Formats allocate per file they open
// (the npz reader's staging buffer is as large as its transfer size), so
// without reuse a whole-file O_DIRECT read spends more time in page faults
// than in I/O. The cache keeps freed buffers of at least kMinCachedBytes,
// up to a byte bound, and hands them out again for requests of a similar
// size (fio's io buffers are allocated once for the same reason). Cached
// blocks are anonymous mappings rounded to 2 MiB and advised
// MADV_HUGEPAGE, so even their first use faults once per 2 MiB, not per
// 4 KiB page. Their alignment (2 MiB) exceeds any DIO alignment.
//
// Buffers keep the cache alive through a reference count, so a Buffer may
// outlive the Storage that made it (not the plugin's shared object).

#pragma once

#include <atomic>
#include <cstddef>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "iomimic/iomimic.h"

namespace iomimic::odirect {

class BufferCache {
 public:
  // Buffers smaller than this are plain allocations.
  static constexpr std::size_t kMinCachedBytes = 256 * 1024;

  // Returns a cache holding one reference for the caller.
  static BufferCache* Create(std::size_t alignment, std::size_t max_cached_bytes);

  // Drops one reference; the last one frees every cached buffer.
  void Unref();

  // A buffer of `size` bytes aligned to the cache's alignment, or an empty
  // one when out of memory (size 0 gives an empty buffer too).
  Buffer Get(std::size_t size);

  // Bytes held idle in the cache now (tests).
  std::size_t cached_bytes() const;

 private:
  BufferCache(std::size_t alignment, std::size_t max_cached_bytes)
      : alignment_(alignment), max_cached_bytes_(max_cached_bytes) {}
  ~BufferCache();

  static void Release(void* context, void* data, std::size_t size);

  struct Block {
    void* data;
    std::size_t capacity;
  };

  const std::size_t alignment_;
  const std::size_t max_cached_bytes_;
  std::atomic<std::size_t> references_{1};
  mutable std::mutex mutex_;
  std::vector<Block> idle_;
  std::size_t idle_bytes_ = 0;
  std::unordered_map<void*, std::size_t> lent_;  // data -> capacity
};

}  // namespace iomimic::odirect
