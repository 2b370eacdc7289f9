#include "buffer_cache.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>

namespace iomimic::odirect {
namespace {

constexpr std::size_t kHugePage = std::size_t{2} << 20;

// Large blocks are their own mappings, aligned to 2 MiB and marked for
// transparent huge pages: the first touch then faults 512 times fewer.
void* MapBlock(std::size_t capacity) {
  const std::size_t span = capacity + kHugePage;
  void* raw = ::mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const auto base = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t aligned = (base + kHugePage - 1) / kHugePage * kHugePage;
  if (aligned > base) ::munmap(raw, aligned - base);
  const std::uintptr_t end = aligned + capacity;
  if (base + span > end) ::munmap(reinterpret_cast<void*>(end), base + span - end);
  (void)::madvise(reinterpret_cast<void*>(aligned), capacity, MADV_HUGEPAGE);
  return reinterpret_cast<void*>(aligned);
}

void FreeBlock(void* data, std::size_t capacity) { ::munmap(data, capacity); }

}  // namespace

BufferCache* BufferCache::Create(std::size_t alignment, std::size_t max_cached_bytes) {
  return new BufferCache(alignment, max_cached_bytes);
}

BufferCache::~BufferCache() {
  for (const Block& b : idle_) FreeBlock(b.data, b.capacity);
}

void BufferCache::Unref() {
  if (references_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
}

std::size_t BufferCache::cached_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return idle_bytes_;
}

Buffer BufferCache::Get(std::size_t size) {
  if (size == 0) return Buffer();
  if (size < kMinCachedBytes) return Buffer::AllocateHost(size, alignment_);
  const std::size_t unit = std::max(alignment_, kHugePage);
  const std::size_t capacity = (size + unit - 1) / unit * unit;
  void* data = nullptr;
  std::size_t got = 0;
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    // The smallest idle block that fits and wastes at most half of itself.
    auto best = idle_.end();
    for (auto it = idle_.begin(); it != idle_.end(); ++it) {
      if (it->capacity >= capacity && it->capacity / 2 <= capacity &&
          (best == idle_.end() || it->capacity < best->capacity)) {
        best = it;
      }
    }
    if (best != idle_.end()) {
      lent_.emplace(best->data, best->capacity);  // may throw: before any change
      data = best->data;
      got = best->capacity;
      idle_bytes_ -= best->capacity;
      *best = idle_.back();
      idle_.pop_back();
    }
  } catch (...) {
    return Buffer();
  }
  if (data == nullptr) {
    data = MapBlock(capacity);
    if (data == nullptr) return Buffer();
    got = capacity;
    try {
      std::lock_guard<std::mutex> lock(mutex_);
      lent_.emplace(data, got);
    } catch (...) {
      FreeBlock(data, got);
      return Buffer();
    }
  }
  references_.fetch_add(1, std::memory_order_relaxed);
  return Buffer(data, size, &BufferCache::Release, this, MemoryKind::kHost);
}

void BufferCache::Release(void* context, void* data, std::size_t) {
  auto* cache = static_cast<BufferCache*>(context);
  {
    std::lock_guard<std::mutex> lock(cache->mutex_);
    auto it = cache->lent_.find(data);
    const std::size_t capacity = it != cache->lent_.end() ? it->second : 0;
    if (it != cache->lent_.end()) cache->lent_.erase(it);
    bool kept = false;
    if (capacity > 0 && cache->idle_bytes_ + capacity <= cache->max_cached_bytes_) {
      try {
        cache->idle_.push_back({data, capacity});
        cache->idle_bytes_ += capacity;
        kept = true;
      } catch (...) {
      }
    }
    if (!kept && capacity > 0) FreeBlock(data, capacity);
  }
  cache->Unref();
}

}  // namespace iomimic::odirect
