#include "session/buffer_pool.h"

#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace iomimic::session {
namespace {

// Counts what the pool takes from the back end.
class AllocCountingStorage final : public Storage {
 public:
  std::string name() const override { return "counting"; }
  StorageCapabilities capabilities() const override { return {}; }
  Result<std::unique_ptr<File>> Open(const std::string&, const OpenOptions&) override {
    return Status::NotSupported("no files");
  }
  Status CreateDirectories(const std::string&) override { return Status::OK(); }
  Status Remove(const std::string&) override { return Status::OK(); }
  Status Rename(const std::string&, const std::string&) override { return Status::OK(); }
  Result<FileInfo> Stat(const std::string&) override { return Status::NotFound("none"); }
  Result<Buffer> Allocate(std::size_t size) override {
    allocations += 1;
    live += 1;
    void* p = std::aligned_alloc(4096, (size + 4095) / 4096 * 4096);
    if (p == nullptr) return Status::ResourceExhausted("test allocation");
    return Buffer(p, size, &Free, this);
  }
  static void Free(void* self, void* data, std::size_t) {
    static_cast<AllocCountingStorage*>(self)->live -= 1;
    std::free(data);
  }
  int allocations = 0;
  int live = 0;
};

TEST_CASE("PoolCapacityFor rounds to an eighth of the power of two") {
  CHECK(PoolCapacityFor(1) == 4096);
  CHECK(PoolCapacityFor(4096) == 4096);
  CHECK(PoolCapacityFor(4097) == 8192);
  CHECK(PoolCapacityFor(4 << 20) == (4u << 20));
  CHECK(PoolCapacityFor((4 << 20) + 1) == (4u << 20) + (512u << 10));
  CHECK(PoolCapacityFor(300000) >= 300000);
  CHECK(PoolCapacityFor(300000) <= 300000 + 300000 / 8 + 4096);
}

TEST_CASE("a pool reuses returned buffers instead of allocating") {
  AllocCountingStorage storage;
  {
    BufferPool pool(storage, std::uint64_t{1} << 30);
    for (int sample = 0; sample < 100; ++sample) {
      // The buffers of one on-demand npz read: probe, staging, payload.
      Result<Buffer> probe = pool.Acquire(4096);
      Result<Buffer> staging = pool.Acquire(262144);
      Result<Buffer> payload = pool.Acquire(4 << 20);
      REQUIRE(probe.ok());
      REQUIRE(staging.ok());
      REQUIRE(payload.ok());
      CHECK(probe->size() == 4096);
      CHECK(payload->size() == (4u << 20));
      std::memset(payload->data(), sample, payload->size());
    }
    CHECK(storage.allocations == 3);
    BufferPool::Stats stats = pool.stats();
    CHECK(stats.requests == 300);
    CHECK(stats.allocations == 3);
    CHECK(stats.evictions == 0);
  }
  CHECK(storage.live == 0);  // the pool frees everything it took
}

TEST_CASE("a pool hands each request the smallest free buffer that fits") {
  AllocCountingStorage storage;
  BufferPool pool(storage, std::uint64_t{1} << 30);
  std::byte* small_at = nullptr;
  std::byte* large_at = nullptr;
  {
    Result<Buffer> large = pool.Acquire(1 << 20);
    Result<Buffer> small = pool.Acquire(8192);
    large_at = large->data();
    small_at = small->data();
  }
  Result<Buffer> small = pool.Acquire(6000);
  CHECK(small->data() == small_at);
  Result<Buffer> large = pool.Acquire(900000);
  CHECK(large->data() == large_at);
  // Slightly larger than before still fits the rounded capacity.
  CHECK(storage.allocations == 2);
}

TEST_CASE("a pool bounds the memory it keeps while unused") {
  AllocCountingStorage storage;
  BufferPool pool(storage, 3 << 20);
  {
    Result<Buffer> a = pool.Acquire(1 << 20);
    Result<Buffer> b = pool.Acquire(1 << 20);
    Result<Buffer> c = pool.Acquire(2 << 20);
  }
  BufferPool::Stats stats = pool.stats();
  CHECK(stats.evictions >= 1);
  CHECK(stats.cached_bytes <= (3u << 20));
  CHECK(storage.live == static_cast<int>(stats.allocations - stats.evictions));
}

TEST_CASE("buffers taken on several threads all come back") {
  AllocCountingStorage storage;
  BufferPool pool(storage, std::uint64_t{1} << 30);
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i) {
        Result<Buffer> b = pool.Acquire(65536);
        if (!b.ok() || b->size() != 65536) failures += 1;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  CHECK(failures == 0);
  CHECK(storage.allocations <= 4);  // at most one buffer per thread in use at a time
}

}  // namespace
}  // namespace iomimic::session
