// Tests of the odirect back end. They run on /tmp (ext4 on the project
// machines: 512-byte DIO alignment from statx), not on /dev/shm, because
// tmpfs accepts misaligned O_DIRECT requests and would hide alignment bugs.

#include "odirect_storage.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
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
using iomimic::OpenMode;
using iomimic::ReadRequest;
using iomimic::Storage;
using iomimic::odirect::EngineKind;
using iomimic::odirect::MakeIoQueue;

using iomimic::testing::Pattern;
using iomimic::testing::TempDir;

std::unique_ptr<Storage> Make(std::map<std::string, std::string> options = {}) {
  auto s =
      iomimic::testing::MakeStorage(&iomimic::odirect::CreateOdirectStorage, "odirect", options);
  REQUIRE_MESSAGE(s.ok(), s.status().ToString());
  return std::move(s).value();
}

// Writes `data` with ordinary buffered I/O (the reference the back end is
// compared with), fsync'd.
void WritePlain(const std::string& path, const std::vector<std::byte>& data) {
  REQUIRE(iomimic::testing::WritePlain(path, data).ok());
}

std::vector<std::byte> ReadPlain(const std::string& path) {
  auto data = iomimic::testing::ReadPlain(path);
  REQUIRE_MESSAGE(data.ok(), data.status().ToString());
  return std::move(data).value();
}

// The engines this build and kernel can run.
std::vector<std::string> AvailableEngines() {
  std::vector<std::string> out;
  const std::pair<const char*, EngineKind> all[] = {{"io_uring", EngineKind::kIoUring},
                                                    {"libaio", EngineKind::kLibaio},
                                                    {"sync", EngineKind::kSync}};
  for (const auto& [name, kind] : all) {
    if (MakeIoQueue(kind, 4).ok()) {
      out.push_back(name);
    } else {
      MESSAGE("engine " << name << " is not available here; its cases are skipped");
    }
  }
  return out;
}

std::string ExpectedDataPath(const std::string& engine) {
  return engine == "sync" ? "pread" : engine;
}

}  // namespace

TEST_CASE("odirect: statx reports the DIO alignment of /tmp files") {
  TempDir dir;
  const std::string path = (dir.path() / "a.bin").string();
  WritePlain(path, Pattern(100, 1));
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECT);
  REQUIRE(fd >= 0);
  iomimic::odirect::DioAlignment a = iomimic::odirect::QueryDioAlignment(fd);
  ::close(fd);
  MESSAGE("/tmp DIO alignment: memory " << a.memory << ", offset " << a.offset
                                        << std::string(a.from_statx ? " (statx)" : " (fallback)"));
  CHECK(a.memory >= 1);
  CHECK(a.offset >= 1);
  CHECK((a.offset & (a.offset - 1)) == 0);
  if (!a.from_statx) {
    CHECK(a.memory == 4096);
    CHECK(a.offset == 4096);
  }
}

TEST_CASE("odirect: unaligned offsets, lengths and buffers read exactly, with every engine") {
  TempDir dir;
  const std::size_t size = 3 * 1048576 + 123;
  const std::string path = (dir.path() / "data.bin").string();
  const std::vector<std::byte> data = Pattern(size, 7);
  WritePlain(path, data);
  for (const std::string& engine : AvailableEngines()) {
    CAPTURE(engine);
    // A small block size and queue depth so requests split and queue up.
    auto storage = Make({{"engine", engine}, {"block_size", "64k"}, {"queue_depth", "4"}});
    CHECK(storage->capabilities().data_path == ExpectedDataPath(engine));
    CHECK(storage->capabilities().async == (engine != "sync"));
    auto f = storage->Open(path, {OpenMode::kRead});
    REQUIRE(f.ok());
    const std::uint64_t offsets[] = {0,    1,     511,     512,         4095,
                                     4096, 65535, 1048575, size - 4097, size - 1};
    const std::size_t lengths[] = {1,    511,       512,         4096,
                                   4097, 65536 + 3, 1048576 + 3, 2 * 1048576 + 1};
    const std::size_t shifts[] = {0, 1, 511, 4096 + 3};
    std::vector<std::byte> storage_buf(4 * 1048576 + 8192);
    for (std::uint64_t off : offsets) {
      for (std::size_t len : lengths) {
        for (std::size_t shift : shifts) {
          CAPTURE(off);
          CAPTURE(len);
          CAPTURE(shift);
          std::span<std::byte> dst(storage_buf.data() + shift, len);
          auto n = (*f)->ReadAt(off, dst);
          REQUIRE_MESSAGE(n.ok(), n.status().ToString());
          const std::size_t expect =
              static_cast<std::size_t>(std::min<std::uint64_t>(len, size - off));
          REQUIRE(*n == expect);
          REQUIRE(std::memcmp(dst.data(), data.data() + off, expect) == 0);
        }
      }
    }
    // At and past the end of the file.
    std::vector<std::byte> small(4096);
    CHECK(*(*f)->ReadAt(size, small) == 0);
    CHECK(*(*f)->ReadAt(size + 100000, small) == 0);
    CHECK(*(*f)->Size() == size);
  }
}

TEST_CASE("odirect: a whole-file read into an Allocate buffer keeps the queue full") {
  TempDir dir;
  const std::size_t size = 8 * 1048576 + 5;
  const std::string path = (dir.path() / "big.bin").string();
  const std::vector<std::byte> data = Pattern(size, 3);
  WritePlain(path, data);
  for (const std::string& engine : AvailableEngines()) {
    CAPTURE(engine);
    auto storage = Make({{"engine", engine}, {"block_size", "256k"}, {"queue_depth", "8"}});
    auto buffer = storage->Allocate(size + 4096);
    REQUIRE(buffer.ok());
    CHECK(reinterpret_cast<std::uintptr_t>(buffer->data()) % storage->capabilities().alignment ==
          0);
    auto f = storage->Open(path, {OpenMode::kRead, iomimic::AccessHint::kWholeFile});
    REQUIRE(f.ok());
    auto n = (*f)->ReadAt(0, buffer->span());
    REQUIRE(n.ok());
    CHECK(*n == size);
    CHECK(std::memcmp(buffer->data(), data.data(), size) == 0);
  }
}

TEST_CASE("odirect: ReadBatch fills every request, past the end included") {
  TempDir dir;
  const std::size_t size = 1048576 + 777;
  const std::string path = (dir.path() / "batch.bin").string();
  const std::vector<std::byte> data = Pattern(size, 11);
  WritePlain(path, data);
  for (const std::string& engine : AvailableEngines()) {
    CAPTURE(engine);
    auto storage = Make({{"engine", engine}, {"queue_depth", "3"}});
    auto f = storage->Open(path, {OpenMode::kRead});
    REQUIRE(f.ok());
    std::vector<std::vector<std::byte>> bufs;
    std::vector<ReadRequest> reqs;
    std::vector<std::uint64_t> offs;
    for (int i = 0; i < 40; ++i) {
      std::uint64_t off = static_cast<std::uint64_t>(i) * 29989 % (size + 5000);
      std::size_t len = 1 + static_cast<std::size_t>(i) * 7919 % 70000;
      if (i % 5 == 0) {
        off = off / 4096 * 4096;  // some aligned ones go straight through
        len = 65536;
      }
      bufs.emplace_back(len + 1);
      offs.push_back(off);
    }
    for (std::size_t i = 0; i < bufs.size(); ++i) {
      ReadRequest r;
      r.offset = offs[i];
      r.destination = std::span<std::byte>(bufs[i].data() + (i % 2), bufs[i].size() - 1);
      reqs.push_back(r);
    }
    REQUIRE((*f)->ReadBatch(reqs).ok());
    for (std::size_t i = 0; i < reqs.size(); ++i) {
      CAPTURE(i);
      const ReadRequest& r = reqs[i];
      CHECK(r.status.ok());
      const std::size_t expect =
          r.offset >= size ? 0 : std::min<std::size_t>(r.destination.size(), size - r.offset);
      REQUIRE(r.bytes_read == expect);
      CHECK(std::memcmp(r.destination.data(), data.data() + std::min<std::uint64_t>(r.offset, size),
                        expect) == 0);
    }
  }
}

TEST_CASE("odirect: unaligned writes and the tail of the file") {
  TempDir dir;
  auto storage = Make();
  const std::size_t sizes[] = {1, 511, 512, 513, 4097, 1048576 + 3};
  for (std::size_t size : sizes) {
    CAPTURE(size);
    const std::string path = (dir.path() / ("w" + std::to_string(size))).string();
    const std::vector<std::byte> data = Pattern(size, static_cast<unsigned>(size));
    auto f = storage->Open(path, {OpenMode::kWrite, iomimic::AccessHint::kSequential, size});
    REQUIRE(f.ok());
    // Sequential pieces of an odd size, as a format's writer makes them.
    for (std::size_t pos = 0; pos < size; pos += 1000) {
      const std::size_t n = std::min<std::size_t>(1000, size - pos);
      REQUIRE((*f)->WriteAt(pos, std::span<const std::byte>(data.data() + pos, n)).ok());
      CHECK(*(*f)->Size() == pos + n);
    }
    // The padding past the exact end is never visible through the File.
    std::vector<std::byte> back(size + 4096);
    auto n = (*f)->ReadAt(0, back);
    REQUIRE(n.ok());
    CHECK(*n == size);
    CHECK(std::memcmp(back.data(), data.data(), size) == 0);
    REQUIRE((*f)->Close().ok());
    CHECK(fs::file_size(path) == size);
    CHECK(ReadPlain(path) == data);
  }
}

TEST_CASE("odirect: random-access overwrites, aligned direct writes and read-write opens") {
  TempDir dir;
  auto storage = Make({{"block_size", "8k"}});
  const std::string path = (dir.path() / "rw.bin").string();
  std::vector<std::byte> expect = Pattern(100000, 5);
  {
    auto f = storage->Open(path, {OpenMode::kWrite});
    REQUIRE(f.ok());
    // An aligned buffer at an aligned offset goes straight through.
    auto aligned = storage->Allocate(65536);
    REQUIRE(aligned.ok());
    std::memcpy(aligned->data(), expect.data(), 65536);
    REQUIRE((*f)->WriteAt(0, aligned->span()).ok());
    REQUIRE((*f)->WriteAt(65536, std::span<const std::byte>(expect).subspan(65536)).ok());
    // Patch a header-like range after the fact (npz writers do this).
    std::vector<std::byte> patch = Pattern(37, 9);
    std::memcpy(expect.data() + 10, patch.data(), patch.size());
    REQUIRE((*f)->WriteAt(10, patch).ok());
    // Across a block boundary in the middle.
    std::vector<std::byte> mid = Pattern(9000, 10);
    std::memcpy(expect.data() + 40000 - 3, mid.data(), mid.size());
    REQUIRE((*f)->WriteAt(40000 - 3, mid).ok());
    REQUIRE((*f)->Sync().ok());
    CHECK(fs::file_size(path) == expect.size());
    REQUIRE((*f)->Close().ok());
  }
  CHECK(ReadPlain(path) == expect);
  {
    // Read-write keeps the content, extends with a gap of zeros.
    auto f = storage->Open(path, {OpenMode::kReadWrite});
    REQUIRE(f.ok());
    CHECK(*(*f)->Size() == expect.size());
    std::vector<std::byte> more = Pattern(3001, 12);
    REQUIRE((*f)->WriteAt(expect.size() + 5, more).ok());
    expect.resize(expect.size() + 5, std::byte{0});
    expect.insert(expect.end(), more.begin(), more.end());
    std::vector<std::byte> inside = Pattern(3, 13);
    std::memcpy(expect.data() + 99999, inside.data(), 3);
    REQUIRE((*f)->WriteAt(99999, inside).ok());
    CHECK(*(*f)->Size() == expect.size());
    REQUIRE((*f)->Close().ok());
  }
  CHECK(ReadPlain(path) == expect);
}

TEST_CASE("odirect: reads bypass the page cache") {
  TempDir dir;
  const std::size_t size = 4 * 1048576;
  const std::string path = (dir.path() / "cold.bin").string();
  WritePlain(path, Pattern(size, 21));
  int fd = ::open(path.c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  REQUIRE(::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0);
  auto storage = Make();
  {
    auto f = storage->Open(path, {OpenMode::kRead});
    REQUIRE(f.ok());
    auto buffer = storage->Allocate(size);
    REQUIRE(buffer.ok());
    REQUIRE(*(*f)->ReadAt(0, buffer->span()) == size);
  }
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  REQUIRE(map != MAP_FAILED);
  std::vector<unsigned char> resident(size / 4096);
  REQUIRE(::mincore(map, size, resident.data()) == 0);
  const auto cached =
      std::count_if(resident.begin(), resident.end(), [](unsigned char c) { return c & 1; });
  ::munmap(map, size);
  ::close(fd);
  CHECK(cached == 0);
}

TEST_CASE("odirect: concurrent readers borrow at most one queue each") {
  TempDir dir;
  const std::size_t size = 2 * 1048576 + 99;
  const std::string path = (dir.path() / "shared.bin").string();
  const std::vector<std::byte> data = Pattern(size, 17);
  WritePlain(path, data);
  auto storage = Make({{"block_size", "128k"}});
  auto* odirect = dynamic_cast<iomimic::odirect::OdirectStorage*>(storage.get());
  REQUIRE(odirect != nullptr);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      auto f = storage->Open(path, {OpenMode::kRead});
      if (!f.ok()) {
        ++failures;
        return;
      }
      std::vector<std::byte> buf(size + 1);
      for (int round = 0; round < 10; ++round) {
        const std::uint64_t off = static_cast<std::uint64_t>(t * 1000 + round * 37);
        auto n = (*f)->ReadAt(off, std::span<std::byte>(buf.data() + (round % 2), size - off));
        if (!n.ok() || *n != size - off ||
            std::memcmp(buf.data() + (round % 2), data.data() + off, *n) != 0) {
          ++failures;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(failures.load() == 0);
  CHECK(odirect->contexts_created() <= 9);
}

TEST_CASE("odirect: errors name the path, closed files refuse") {
  TempDir dir;
  auto storage = Make();
  const std::string missing = (dir.path() / "missing.bin").string();
  auto f = storage->Open(missing, {OpenMode::kRead});
  REQUIRE_FALSE(f.ok());
  CHECK(f.status().IsNotFound());
  CHECK(f.status().message().find(missing) != std::string::npos);
  const std::string path = (dir.path() / "c.bin").string();
  WritePlain(path, Pattern(10, 1));
  auto g = storage->Open(path, {OpenMode::kRead});
  REQUIRE(g.ok());
  std::vector<std::byte> buf(10);
  auto w = (*g)->WriteAt(0, buf);
  CHECK_FALSE(w.ok());
  CHECK(w.message().find(path) != std::string::npos);
  REQUIRE((*g)->Close().ok());
  auto r = (*g)->ReadAt(0, buf);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find(path) != std::string::npos);
  CHECK(storage->Remove(missing).IsNotFound());
  CHECK(storage->Stat(missing).status().IsNotFound());
}

TEST_CASE("odirect: options are validated") {
  const std::map<std::string, std::string> bad[] = {
      {{"engine", "spdk"}},    {{"queue_depth", "0"}},  {{"queue_depth", "lots"}},
      {{"block_size", "100"}}, {{"alignment", "1000"}}, {{"sync_on_close", "maybe"}},
  };
  for (const auto& options : bad) {
    iomimic::PluginContext ctx;
    ctx.options = iomimic::PluginOptions("storage plugin 'odirect'", options);
    auto s = iomimic::odirect::CreateOdirectStorage(ctx);
    REQUIRE_FALSE(s.ok());
    CHECK(s.status().message().find(options.begin()->first) != std::string::npos);
  }
  auto s = Make({{"alignment", "512"}, {"queue_depth", "64"}, {"sync_on_close", "true"}});
  CHECK(s->name() == "odirect");
  CHECK(s->capabilities().alignment == 512);
  if (s->capabilities().async) CHECK(s->capabilities().queue_depth == 64);
}

TEST_CASE(
    "odirect: freed large buffers are reused, within the bound, and may outlive the storage") {
  auto storage = Make({{"buffer_cache", "8M"}});
  auto* odirect = dynamic_cast<iomimic::odirect::OdirectStorage*>(storage.get());
  REQUIRE(odirect != nullptr);
  void* first = nullptr;
  {
    auto b = storage->Allocate(3 * 1048576);
    REQUIRE(b.ok());
    first = b->data();
    std::memset(b->data(), 1, b->size());
  }
  CHECK(odirect->cached_buffer_bytes() >= 3 * 1048576);  // rounded up to 2 MiB units
  {
    auto again = storage->Allocate(3 * 1048576 - 100);  // a similar size takes it back
    REQUIRE(again.ok());
    CHECK(again->data() == first);
    CHECK(again->size() == 3 * 1048576 - 100);
    CHECK(odirect->cached_buffer_bytes() == 0);
    auto tiny = storage->Allocate(100);  // small ones are not cached
    REQUIRE(tiny.ok());
    CHECK(reinterpret_cast<std::uintptr_t>(tiny->data()) % storage->capabilities().alignment == 0);
  }
  {
    std::vector<iomimic::Buffer> many;
    for (int i = 0; i < 5; ++i) many.push_back(std::move(storage->Allocate(4 * 1048576)).value());
  }
  CHECK(odirect->cached_buffer_bytes() <= 8 * 1048576);
  auto survivor = storage->Allocate(1048576);
  REQUIRE(survivor.ok());
  storage.reset();  // the buffer keeps the cache alive
  std::memset(survivor->data(), 2, survivor->size());
  survivor->Reset();
}
