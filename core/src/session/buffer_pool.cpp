#include "session/buffer_pool.h"

#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <cassert>

namespace iomimic::session {
namespace {
constexpr std::size_t kPage = 4096;
constexpr std::uintptr_t kHugePage = std::uintptr_t{2} << 20;

// MADV_HUGEPAGE over the whole 2 MiB pages inside [data, data + size).
void AdviseHugePages(std::byte* data, std::size_t size) {
  const std::uintptr_t begin = reinterpret_cast<std::uintptr_t>(data);
  const std::uintptr_t first = (begin + kHugePage - 1) & ~(kHugePage - 1);
  const std::uintptr_t last = (begin + size) & ~(kHugePage - 1);
  if (last > first) {
    (void)::madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
  }
}
}  // namespace

std::size_t PoolCapacityFor(std::size_t size) {
  if (size <= kPage) return kPage;
  // Granularity: an eighth of the power of two at or below `size`.
  const std::size_t top = std::bit_floor(size);
  const std::size_t step = std::max(kPage, top / 8);
  return (size + step - 1) / step * step;
}

BufferPool::BufferPool(Storage& source, std::uint64_t max_free_bytes, bool prefault,
                       bool huge_pages)
    : source_(source),
      max_free_bytes_(max_free_bytes),
      prefault_(prefault),
      huge_pages_(huge_pages) {}

BufferPool::~BufferPool() {
#ifndef NDEBUG
  for (const auto& e : entries_) assert(!e->in_use && "a pooled buffer outlived its pool");
#endif
}

Result<Buffer> BufferPool::Acquire(std::size_t size) {
  if (size == 0) return Buffer();
  std::unique_lock<std::mutex> lock(mutex_);
  Entry* best = nullptr;
  for (const auto& e : entries_) {
    if (e->in_use || e->memory.size() < size) continue;
    if (best == nullptr || e->memory.size() < best->memory.size()) best = e.get();
  }
  if (best == nullptr) {
    const std::size_t capacity = PoolCapacityFor(size);
    lock.unlock();  // the back end may be slow (pinned or device memory)
    IOMIMIC_ASSIGN_OR_RETURN(Buffer memory, source_.Allocate(capacity));
    if (memory.size() < size) {
      return Status::Internal("storage '" + source_.name() + "' allocated " +
                              std::to_string(memory.size()) + " bytes when " +
                              std::to_string(capacity) + " were asked for");
    }
    if (huge_pages_ && memory.host_accessible()) AdviseHugePages(memory.data(), memory.size());
    if (prefault_ && memory.host_accessible()) {
      // One write per page: the faults happen now, once, not on the hot path.
      volatile std::byte* p = memory.data();
      for (std::size_t at = 0; at < memory.size(); at += kPage) p[at] = std::byte{0};
    }
    auto entry = std::make_unique<Entry>();
    entry->pool = this;
    entry->memory = std::move(memory);
    lock.lock();
    best = entry.get();
    stats_.allocations += 1;
    stats_.cached_bytes += best->memory.size();
    entries_.push_back(std::move(entry));
  } else {
    free_bytes_ -= best->memory.size();
  }
  best->in_use = true;
  best->last_used = ++clock_;
  stats_.requests += 1;
  return Buffer(best->memory.data(), size, &BufferPool::Release, best, best->memory.kind());
}

void BufferPool::Release(void* context, void*, std::size_t) {
  Entry* entry = static_cast<Entry*>(context);
  entry->pool->Return(entry);
}

void BufferPool::Return(Entry* entry) {
  std::lock_guard<std::mutex> lock(mutex_);
  entry->in_use = false;
  entry->last_used = ++clock_;
  free_bytes_ += entry->memory.size();
  EvictLocked();
}

void BufferPool::EvictLocked() {
  while (free_bytes_ > max_free_bytes_) {
    auto victim = entries_.end();
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if ((*it)->in_use) continue;
      if (victim == entries_.end() || (*it)->last_used < (*victim)->last_used) victim = it;
    }
    if (victim == entries_.end()) return;
    free_bytes_ -= (*victim)->memory.size();
    stats_.cached_bytes -= (*victim)->memory.size();
    stats_.evictions += 1;
    entries_.erase(victim);
  }
}

BufferPool::Stats BufferPool::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace iomimic::session
