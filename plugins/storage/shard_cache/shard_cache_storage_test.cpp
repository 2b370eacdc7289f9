// Tests of the shard_cache decorator: downloads, hits, LRU eviction, the
// capacity bound (also under concurrent readers), writes dropping cached
// copies, its statistics and options. The storage conformance suite runs the
// common cases on it (tests/conformance/storage_conformance_test.cpp).

#include "shard_cache_storage.h"

#include <doctest/doctest.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "iomimic/testing/memory_storage.h"
#include "iomimic/testing/posix_test_storage.h"
#include "iomimic/testing/storage_cases.h"

namespace {

namespace fs = std::filesystem;
using iomimic::File;
using iomimic::OpenMode;
using iomimic::Result;
using iomimic::StatusCode;
using iomimic::Storage;
using iomimic::shard_cache::ShardCacheStorage;
using iomimic::testing::MemoryStorage;
using iomimic::testing::Pattern;
using iomimic::testing::TempDir;

using Options = std::map<std::string, std::string>;

struct Cache {
  TempDir dir{"shard_cache"};
  MemoryStorage remote;
  std::unique_ptr<Storage> storage;

  explicit Cache(std::map<std::string, std::string> options) {
    options["cache_dir"] = (dir.path() / "cache").string();
    auto made = iomimic::testing::MakeStorage(&iomimic::shard_cache::CreateShardCacheStorage,
                                              "shard_cache", std::move(options), &remote);
    REQUIRE_MESSAGE(made.ok(), made.status().ToString());
    storage = std::move(made).value();
  }
  ShardCacheStorage& cache() { return dynamic_cast<ShardCacheStorage&>(*storage); }
  void Put(const std::string& path, std::size_t size, std::uint64_t seed) {
    REQUIRE(iomimic::testing::WriteThrough(remote, path, Pattern(size, seed)).ok());
  }
  // Bytes the cache folder holds now (partial downloads included).
  std::uint64_t FolderBytes() {
    std::uint64_t total = 0;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(cache().folder(), ec)) {
      std::error_code size_ec;
      const auto size = fs::file_size(e.path(), size_ec);
      if (!size_ec) total += size;
    }
    return total;
  }
  std::vector<std::byte> ReadWhole(const std::string& path) {
    Result<std::unique_ptr<File>> f = storage->Open(path, {OpenMode::kRead});
    REQUIRE_MESSAGE(f.ok(), f.status().ToString());
    std::vector<std::byte> out(*(*f)->Size());
    Result<std::size_t> n = (*f)->ReadAt(0, out);
    REQUIRE(n.ok());
    CHECK(*n == out.size());
    return out;
  }
};

}  // namespace

TEST_CASE("shard_cache: a miss downloads the file whole, a hit reads only the local copy") {
  Cache c(Options{{"capacity", "1M"}, {"download_size", "4096"}});
  c.Put("d/a", 10000, 1);
  c.remote.SetLogging(true);
  CHECK(c.ReadWhole("d/a") == Pattern(10000, 1));
  std::vector<iomimic::testing::StorageRequest> log = c.remote.TakeLog();
  REQUIRE(log.size() == 3);  // 4096, 4096, 1808 from offset 0
  for (std::size_t k = 0; k < log.size(); ++k) CHECK(log[k].offset == k * 4096);
  CHECK(c.ReadWhole("d/a") == Pattern(10000, 1));
  CHECK(c.remote.TakeLog().empty());
  const iomimic::shard_cache::CacheStats s = c.cache().stats();
  CHECK(s.downloads == 1);
  CHECK(s.download_bytes == 10000);
  CHECK(s.hits == 1);
  CHECK(c.FolderBytes() == 10000);
  // Reads past the end are short, then empty, as any file's.
  Result<std::unique_ptr<File>> f = c.storage->Open("d/a", {OpenMode::kRead});
  REQUIRE(f.ok());
  std::vector<std::byte> buf(100);
  CHECK(*(*f)->ReadAt(9950, buf) == 50);
  CHECK(*(*f)->ReadAt(10000, buf) == 0);
  CHECK_FALSE((*f)->WriteAt(0, buf).ok());
  REQUIRE((*f)->Close().ok());
  CHECK_FALSE((*f)->ReadAt(0, buf).ok());
  CHECK(c.storage->Open("d/missing", {OpenMode::kRead}).status().code() == StatusCode::kNotFound);
}

TEST_CASE("shard_cache: least recently used files are evicted, the capacity is never passed") {
  Cache c(Options{{"capacity", "30000"}});
  for (int i = 0; i < 5; ++i) c.Put("f" + std::to_string(i), 10000, i);
  for (int i : {0, 1, 2}) c.ReadWhole("f" + std::to_string(i));
  CHECK(c.cache().stats().evictions == 0);
  c.ReadWhole("f0");  // f1 is now the coldest
  c.ReadWhole("f3");
  iomimic::shard_cache::CacheStats s = c.cache().stats();
  CHECK(s.evictions == 1);
  c.remote.SetLogging(true);
  c.ReadWhole("f0");  // still cached
  c.ReadWhole("f2");
  CHECK(c.remote.TakeLog().empty());
  c.ReadWhole("f1");  // evicted: downloaded again
  CHECK_FALSE(c.remote.TakeLog().empty());
  s = c.cache().stats();
  CHECK(s.downloads == 5);
  CHECK(s.peak_bytes <= 30000);
  CHECK(c.FolderBytes() <= 30000);
}

TEST_CASE("shard_cache: files held open are not evicted, and what cannot fit is refused") {
  Cache c(Options{{"capacity", "25000"}});
  for (int i = 0; i < 3; ++i) c.Put("f" + std::to_string(i), 10000, i);
  c.Put("big", 30000, 9);
  Result<std::unique_ptr<File>> a = c.storage->Open("f0", {OpenMode::kRead});
  Result<std::unique_ptr<File>> b = c.storage->Open("f1", {OpenMode::kRead});
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  Result<std::unique_ptr<File>> third = c.storage->Open("f2", {OpenMode::kRead});
  CHECK(third.status().code() == StatusCode::kResourceExhausted);
  CHECK(third.status().message().find("f2") != std::string::npos);
  Result<std::unique_ptr<File>> big = c.storage->Open("big", {OpenMode::kRead});
  CHECK(big.status().code() == StatusCode::kResourceExhausted);
  CHECK(big.status().message().find("capacity") != std::string::npos);
  REQUIRE((*a)->Close().ok());
  CHECK(c.storage->Open("f2", {OpenMode::kRead}).ok());  // f0 goes
  CHECK(c.cache().stats().evictions == 1);
}

TEST_CASE("shard_cache: writing, removing or renaming a file drops its cached copy") {
  Cache c(Options{{"capacity", "1M"}});
  c.Put("a", 5000, 1);
  CHECK(c.ReadWhole("a") == Pattern(5000, 1));
  // Written through the decorator (the generator writes through it).
  REQUIRE(iomimic::testing::WriteThrough(*c.storage, "a", Pattern(6000, 2)).ok());
  CHECK(c.ReadWhole("a") == Pattern(6000, 2));
  CHECK(c.cache().stats().downloads == 2);
  // A copy open while the file is replaced stays readable, then goes.
  Result<std::unique_ptr<File>> open = c.storage->Open("a", {OpenMode::kRead});
  REQUIRE(open.ok());
  c.Put("b", 100, 3);
  REQUIRE(c.storage->Rename("b", "a").ok());
  std::vector<std::byte> buf(6000);
  CHECK(*(*open)->ReadAt(0, buf) == 6000);
  CHECK(buf == Pattern(6000, 2));
  REQUIRE((*open)->Close().ok());
  CHECK(c.ReadWhole("a") == Pattern(100, 3));
  REQUIRE(c.storage->Remove("a").ok());
  CHECK(c.storage->Open("a", {OpenMode::kRead}).status().code() == StatusCode::kNotFound);
  CHECK(c.FolderBytes() == 0);
  CHECK(c.cache().stats().held_bytes == 0);
}

TEST_CASE("shard_cache: concurrent readers share downloads and never pass the capacity") {
  Cache c(Options{{"capacity", "64K"}, {"download_size", "4K"}});
  constexpr int kFiles = 12;
  for (int i = 0; i < kFiles; ++i) c.Put("f" + std::to_string(i), 12000 + 1000 * i, i);
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> most{0};
  std::thread watcher([&] {
    while (!stop.load()) {
      const std::uint64_t now = c.FolderBytes();
      if (now > most.load()) most.store(now);
    }
  });
  std::atomic<int> errors{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&, t] {
      std::mt19937 rng(t);
      for (int k = 0; k < 60; ++k) {
        const int i = static_cast<int>(rng() % kFiles);
        const std::string path = "f" + std::to_string(i);
        Result<std::unique_ptr<File>> f = c.storage->Open(path, {OpenMode::kRead});
        if (!f.ok()) {
          // Four readers may hold four files while a fifth does not fit.
          if (f.status().code() != StatusCode::kResourceExhausted) ++errors;
          continue;
        }
        std::vector<std::byte> got(*(*f)->Size());
        if (*(*f)->ReadAt(0, got) != got.size() || got != Pattern(got.size(), i)) ++errors;
      }
    });
  }
  for (std::thread& r : readers) r.join();
  stop.store(true);
  watcher.join();
  CHECK(errors.load() == 0);
  const iomimic::shard_cache::CacheStats s = c.cache().stats();
  CHECK(s.peak_bytes <= 64 * 1024);
  CHECK(most.load() <= 64 * 1024);
  CHECK(s.hits + s.downloads > 0);
  CHECK(s.evictions > 0);
}

TEST_CASE("shard_cache: statistics, the report line and the options") {
  Cache c(Options{{"capacity", "1M"}, {"report", "true"}});
  c.Put("a", 1000, 1);
  c.ReadWhole("a");
  c.ReadWhole("a");
  std::map<std::string, double> stats;
  for (const auto& s : c.storage->Statistics()) stats[s.name] = s.value;
  CHECK(stats["shard_cache_downloads"] == 1);
  CHECK(stats["shard_cache_download_bytes"] == 1000);
  CHECK(stats["shard_cache_hits"] == 1);
  CHECK(stats["shard_cache_capacity_bytes"] == 1024 * 1024);
  CHECK(stats.count("shard_cache_evictions") == 1);
  const std::string line = c.cache().ReportLine();
  CHECK(line.find("downloaded 1 files, 1000 bytes") != std::string::npos);
  CHECK(line.find("1 hits") != std::string::npos);
  CHECK(c.storage->capabilities().data_path.find("memory") != std::string::npos);
  for (const auto& bad : std::vector<std::map<std::string, std::string>>{
           {{"capacity", "0"}}, {{"download_size", "0"}}, {{"cache_dir", ""}}}) {
    auto made = iomimic::testing::MakeStorage(&iomimic::shard_cache::CreateShardCacheStorage,
                                              "shard_cache", bad, &c.remote);
    CHECK(made.status().code() == StatusCode::kInvalidArgument);
  }
  auto no_inner = iomimic::testing::MakeStorage(&iomimic::shard_cache::CreateShardCacheStorage,
                                                "shard_cache", {});
  CHECK(no_inner.status().code() == StatusCode::kInvalidArgument);
}
