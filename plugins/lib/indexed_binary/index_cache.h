// The per-format cache of sample indexes.
//
// DLIO's indexed-binary readers load the index files of every data file once,
// when a reader (one per DataLoader worker) is created, and keep them for the
// run; after that a sample costs exactly one open, one ranged read and one
// close of the data file. iomimic's core creates one FileReader per sample in
// read_type on_demand, so the index must outlive the readers to keep that
// access pattern: the Format owns this cache, keyed by data file path, and
// readers take the index from it. An index is reused only while its data
// file keeps the size it was validated against; a changed data file has its
// index read again.
//
// Memory is bounded: indexes are evicted least recently used first when the
// total exceeds the capacity, and an index larger than the whole capacity is
// not cached at all (its readers then read the index files themselves, once
// per reader). Capacity 0 disables the cache.

#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace iomimic::indexed_binary {

// The index of one data file, checked against the data file's size: every
// entry lies within [0, data_size).
struct SampleIndex {
  std::vector<std::uint64_t> offsets;
  std::vector<std::uint64_t> sizes;
  std::uint64_t data_size = 0;  // size of the data file it was checked against
  std::uint64_t largest = 0;    // largest entry of `sizes`

  std::uint64_t num_samples() const { return offsets.size(); }
  // Bytes of memory the entries take.
  std::uint64_t memory_bytes() const { return (offsets.size() + sizes.size()) * 8; }
};

// Thread-safe.
class IndexCache {
 public:
  explicit IndexCache(std::uint64_t capacity_bytes) : capacity_(capacity_bytes) {}
  IndexCache(const IndexCache&) = delete;
  IndexCache& operator=(const IndexCache&) = delete;

  // The cached index of `data_path`, or null. A hit becomes the most
  // recently used entry.
  std::shared_ptr<const SampleIndex> Find(const std::string& data_path);

  // Caches `index` for `data_path`, replacing an older one, then evicts least
  // recently used entries until the total fits the capacity. An index larger
  // than the capacity is not kept.
  void Insert(const std::string& data_path, std::shared_ptr<const SampleIndex> index);

  // Forgets everything.
  void Clear();

  std::uint64_t capacity() const { return capacity_; }
  // Bytes held and number of entries, for tests and reports.
  std::uint64_t bytes() const;
  std::size_t entries() const;
  // Indexes handed out by Find and indexes inserted, for tests.
  std::uint64_t hits() const;
  std::uint64_t insertions() const;

 private:
  struct Entry {
    std::shared_ptr<const SampleIndex> index;
    std::list<std::string>::iterator position;  // in lru_
  };

  void EraseLocked(std::unordered_map<std::string, Entry>::iterator it);

  const std::uint64_t capacity_;
  mutable std::mutex mu_;
  std::list<std::string> lru_;  // most recently used first
  std::unordered_map<std::string, Entry> entries_;
  std::uint64_t bytes_ = 0;
  std::uint64_t hits_ = 0;
  std::uint64_t insertions_ = 0;
};

}  // namespace iomimic::indexed_binary
