#include "mmap_storage.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "iomimic/testing/posix_test_storage.h"
#include "iomimic/testing/storage_cases.h"

namespace {

namespace fs = std::filesystem;
using iomimic::AccessHint;
using iomimic::OpenMode;
using iomimic::Storage;
using iomimic::mmap::MmapStorage;

using iomimic::testing::Pattern;
using iomimic::testing::TempDir;

std::unique_ptr<Storage> Make(std::map<std::string, std::string> options = {}) {
  auto s = iomimic::testing::MakeStorage(&iomimic::mmap::CreateMmapStorage, "mmap", options);
  REQUIRE_MESSAGE(s.ok(), s.status().ToString());
  return std::move(s).value();
}

MmapStorage& AsMmap(Storage& s) { return dynamic_cast<MmapStorage&>(s); }

void WritePlain(const std::string& path, const std::vector<std::byte>& data) {
  REQUIRE(iomimic::testing::WritePlain(path, data).ok());
}

std::vector<std::byte> ReadAll(Storage& storage, const std::string& path) {
  auto data = iomimic::testing::ReadThrough(storage, path);
  REQUIRE_MESSAGE(data.ok(), data.status().ToString());
  return std::move(data).value();
}

}  // namespace

TEST_CASE("mmap: reads copy from the mapping at any offset, short at the end") {
  TempDir dir;
  const std::size_t size = 1048576 + 4099;
  const std::string path = (dir.path() / "a.bin").string();
  const auto data = Pattern(size, 1);
  WritePlain(path, data);
  for (const char* advice : {"auto", "normal", "sequential", "random", "willneed"}) {
    CAPTURE(advice);
    auto storage = Make({{"advice", advice}});
    CHECK(storage->capabilities().data_path == "mmap");
    for (AccessHint hint : {AccessHint::kNormal, AccessHint::kSequential, AccessHint::kRandom,
                            AccessHint::kWholeFile}) {
      auto f = storage->Open(path, {OpenMode::kRead, hint});
      REQUIRE(f.ok());
      std::vector<std::byte> buf(70000);
      for (std::uint64_t off : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{4095},
                                std::uint64_t{size - 70000}, std::uint64_t{size - 10}}) {
        auto n = (*f)->ReadAt(off, buf);
        REQUIRE(n.ok());
        const std::size_t expect = std::min<std::size_t>(buf.size(), size - off);
        CHECK(*n == expect);
        CHECK(std::memcmp(buf.data(), data.data() + off, expect) == 0);
      }
      CHECK(*(*f)->ReadAt(size, buf) == 0);
      CHECK(*(*f)->ReadAt(size + 12345, buf) == 0);
    }
    CHECK(AsMmap(*storage).stats().fallbacks == 0);
    CHECK(AsMmap(*storage).stats().live_mappings == 0);  // every File closed
  }
}

TEST_CASE("mmap: an empty file reads 0 bytes without mapping") {
  TempDir dir;
  const std::string path = (dir.path() / "empty.bin").string();
  WritePlain(path, {});
  auto storage = Make();
  auto f = storage->Open(path, {OpenMode::kRead});
  REQUIRE(f.ok());
  std::vector<std::byte> buf(10);
  CHECK(*(*f)->ReadAt(0, buf) == 0);
  CHECK(AsMmap(*storage).stats().maps == 0);
}

TEST_CASE("mmap: max_mappings evicts the least recently used idle mapping") {
  TempDir dir;
  auto storage = Make({{"max_mappings", "2"}});
  std::vector<std::string> paths;
  for (int i = 0; i < 3; ++i) {
    paths.push_back((dir.path() / ("f" + std::to_string(i))).string());
    WritePlain(paths.back(), Pattern(10000 + i, i));
  }
  std::vector<std::unique_ptr<iomimic::File>> files;
  for (const std::string& p : paths) {
    auto f = storage->Open(p, {OpenMode::kRead});
    REQUIRE(f.ok());
    files.push_back(std::move(f).value());
  }
  std::vector<std::byte> buf(100);
  REQUIRE((*files[0]).ReadAt(0, buf).ok());
  REQUIRE((*files[1]).ReadAt(0, buf).ok());
  REQUIRE((*files[0]).ReadAt(0, buf).ok());  // f0 is now more recent than f1
  REQUIRE((*files[2]).ReadAt(0, buf).ok());  // evicts f1
  auto s = AsMmap(*storage).stats();
  CHECK(s.live_mappings == 2);
  CHECK(s.evictions == 1);
  CHECK(s.maps == 3);
  REQUIRE((*files[0]).ReadAt(0, buf).ok());  // still mapped
  CHECK(AsMmap(*storage).stats().maps == 3);
  auto n = (*files[1]).ReadAt(50, buf);  // mapped again, evicting f2
  REQUIRE(n.ok());
  CHECK(std::memcmp(buf.data(), Pattern(10001, 1).data() + 50, 100) == 0);
  s = AsMmap(*storage).stats();
  CHECK(s.maps == 4);
  CHECK(s.evictions == 2);
  CHECK(s.live_mappings == 2);
  CHECK(s.fallbacks == 0);
  files.clear();
  CHECK(AsMmap(*storage).stats().live_mappings == 0);
  CHECK(AsMmap(*storage).stats().mapped_bytes == 0);
}

TEST_CASE("mmap: max_mapped_bytes evicts, and a file larger than the bound falls back to pread") {
  TempDir dir;
  auto storage = Make({{"max_mapped_bytes", "2500k"}});
  const std::string a = (dir.path() / "a").string(), b = (dir.path() / "b").string(),
                    c = (dir.path() / "c").string(), big = (dir.path() / "big").string();
  WritePlain(a, Pattern(1 << 20, 1));
  WritePlain(b, Pattern(1 << 20, 2));
  WritePlain(c, Pattern(1 << 20, 3));
  WritePlain(big, Pattern(3 << 20, 4));
  auto fa = storage->Open(a, {OpenMode::kRead});
  auto fb = storage->Open(b, {OpenMode::kRead});
  auto fc = storage->Open(c, {OpenMode::kRead});
  std::vector<std::byte> buf(16);
  REQUIRE((*fa)->ReadAt(0, buf).ok());
  REQUIRE((*fb)->ReadAt(0, buf).ok());
  REQUIRE((*fc)->ReadAt(0, buf).ok());
  auto s = AsMmap(*storage).stats();
  CHECK(s.live_mappings == 2);
  CHECK(s.mapped_bytes == 2u << 20);
  CHECK(s.evictions == 1);
  CHECK(ReadAll(*storage, big) == Pattern(3 << 20, 4));
  CHECK(AsMmap(*storage).stats().fallbacks == 1);
}

TEST_CASE("mmap: when every mapping is in use, the read falls back to pread") {
  TempDir dir;
  const std::string a = (dir.path() / "a").string(), b = (dir.path() / "b").string();
  WritePlain(a, Pattern(5000, 1));
  WritePlain(b, Pattern(6000, 2));
  iomimic::mmap::MmapOptions options;
  options.max_mappings = 1;
  iomimic::mmap::MappingLimiter limiter(options.max_mappings, options.max_mapped_bytes);
  int fda = ::open(a.c_str(), O_RDONLY), fdb = ::open(b.c_str(), O_RDONLY);
  REQUIRE(fda >= 0);
  REQUIRE(fdb >= 0);
  iomimic::mmap::MmapFile file_a(&limiter, &options, fda, a, OpenMode::kRead, -1, 5000);
  iomimic::mmap::MmapFile file_b(&limiter, &options, fdb, b, OpenMode::kRead, -1, 6000);
  auto pinned = limiter.Pin(&file_a, 5000);  // another thread is copying from a
  REQUIRE(pinned.ok());
  REQUIRE(*pinned != nullptr);
  std::vector<std::byte> buf(6000);
  auto n = file_b.ReadAt(0, buf);
  REQUIRE(n.ok());
  CHECK(*n == 6000);
  CHECK(buf == Pattern(6000, 2));
  CHECK(limiter.stats().fallbacks == 1);
  limiter.Unpin(&file_a);
  REQUIRE(file_b.ReadAt(0, buf).ok());  // now a is idle and gives way
  CHECK(limiter.stats().evictions == 1);
  CHECK(limiter.stats().fallbacks == 1);
}

TEST_CASE("mmap: populate faults the whole file in when it is mapped") {
  TempDir dir;
  const std::size_t size = 8 << 20;
  const std::string path = (dir.path() / "p.bin").string();
  WritePlain(path, Pattern(size, 5));
  int fd = ::open(path.c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  ::fdatasync(fd);
  auto resident = [&] {
    void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
    REQUIRE(map != MAP_FAILED);
    std::vector<unsigned char> pages(size / 4096);
    REQUIRE(::mincore(map, size, pages.data()) == 0);
    ::munmap(map, size);
    return std::count_if(pages.begin(), pages.end(), [](unsigned char c) { return c & 1; });
  };
  REQUIRE(::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0);
  const auto before = resident();
  auto storage = Make({{"populate", "true"}, {"advice", "random"}});
  auto f = storage->Open(path, {OpenMode::kRead});
  REQUIRE(f.ok());
  std::vector<std::byte> one(1);
  REQUIRE(*(*f)->ReadAt(0, one) == 1);
  const auto after = resident();
  ::close(fd);
  MESSAGE("resident pages before " << before << ", after a 1-byte read " << after << " of "
                                   << size / 4096);
  CHECK(after == static_cast<long>(size / 4096));
}

TEST_CASE("mmap: writes go through pwrite and reads of a writable file see them") {
  TempDir dir;
  auto storage = Make();
  const std::string path = (dir.path() / "w.bin").string();
  auto f = storage->Open(path, {OpenMode::kWrite, AccessHint::kSequential, 30000});
  REQUIRE(f.ok());
  const auto data = Pattern(30000, 9);
  REQUIRE((*f)->WriteAt(0, std::span<const std::byte>(data).first(10000)).ok());
  std::vector<std::byte> buf(30000);
  CHECK(*(*f)->ReadAt(0, buf) == 10000);
  REQUIRE((*f)->WriteAt(10000, std::span<const std::byte>(data).subspan(10000)).ok());
  auto n = (*f)->ReadAt(0, buf);  // the file grew: mapped again
  REQUIRE(n.ok());
  CHECK(*n == 30000);
  CHECK(buf == data);
  CHECK((*f)->Sync().ok());
  CHECK(*(*f)->Size() == 30000);
  CHECK((*f)->Close().ok());
  CHECK(fs::file_size(path) == 30000);
  CHECK(ReadAll(*storage, path) == data);
}

TEST_CASE("mmap: concurrent readers under a tight mapping bound") {
  TempDir dir;
  auto storage = Make({{"max_mappings", "3"}});
  std::vector<std::string> paths;
  for (int i = 0; i < 6; ++i) {
    paths.push_back((dir.path() / ("c" + std::to_string(i))).string());
    WritePlain(paths.back(), Pattern(200000 + i, i));
  }
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      std::vector<std::byte> buf(4096);
      for (int round = 0; round < 200; ++round) {
        const int i = (t + round) % 6;
        auto f = storage->Open(paths[i], {OpenMode::kRead});
        if (!f.ok()) {
          ++failures;
          continue;
        }
        const std::uint64_t off = static_cast<std::uint64_t>(round * 997 % 190000);
        auto n = (*f)->ReadAt(off, buf);
        const auto expect = Pattern(200000 + i, i);
        if (!n.ok() || *n != buf.size() ||
            std::memcmp(buf.data(), expect.data() + off, buf.size()) != 0) {
          ++failures;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(failures.load() == 0);
  auto s = AsMmap(*storage).stats();
  CHECK(s.live_mappings == 0);
  MESSAGE("maps " << s.maps << ", evictions " << s.evictions << ", fallbacks " << s.fallbacks);
}

TEST_CASE("mmap: errors name the path, options are validated") {
  TempDir dir;
  auto storage = Make();
  const std::string missing = (dir.path() / "nope.bin").string();
  auto f = storage->Open(missing, {OpenMode::kRead});
  REQUIRE_FALSE(f.ok());
  CHECK(f.status().IsNotFound());
  CHECK(f.status().message().find(missing) != std::string::npos);
  for (const auto& [key, value] : std::map<std::string, std::string>{{"advice", "dontneed"},
                                                                     {"max_mappings", "0"},
                                                                     {"max_mapped_bytes", "0"},
                                                                     {"populate", "sometimes"}}) {
    iomimic::PluginContext ctx;
    ctx.options = iomimic::PluginOptions("storage plugin 'mmap'", {{key, value}});
    auto s = iomimic::mmap::CreateMmapStorage(ctx);
    REQUIRE_FALSE(s.ok());
    CHECK(s.status().message().find(key) != std::string::npos);
  }
}
