#include "index_cache.h"

#include <utility>

namespace iomimic::indexed_binary {

std::shared_ptr<const SampleIndex> IndexCache::Find(const std::string& data_path) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(data_path);
  if (it == entries_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second.position);
  ++hits_;
  return it->second.index;
}

void IndexCache::Insert(const std::string& data_path, std::shared_ptr<const SampleIndex> index) {
  if (index == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(data_path);
  if (it != entries_.end()) EraseLocked(it);
  const std::uint64_t size = index->memory_bytes();
  if (size > capacity_) return;
  lru_.push_front(data_path);
  entries_.emplace(data_path, Entry{std::move(index), lru_.begin()});
  bytes_ += size;
  ++insertions_;
  while (bytes_ > capacity_ && !lru_.empty()) EraseLocked(entries_.find(lru_.back()));
}

void IndexCache::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  entries_.clear();
  lru_.clear();
  bytes_ = 0;
}

void IndexCache::EraseLocked(std::unordered_map<std::string, Entry>::iterator it) {
  bytes_ -= it->second.index->memory_bytes();
  lru_.erase(it->second.position);
  entries_.erase(it);
}

std::uint64_t IndexCache::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

std::size_t IndexCache::entries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

std::uint64_t IndexCache::hits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return hits_;
}

std::uint64_t IndexCache::insertions() const {
  std::lock_guard<std::mutex> lock(mu_);
  return insertions_;
}

}  // namespace iomimic::indexed_binary
