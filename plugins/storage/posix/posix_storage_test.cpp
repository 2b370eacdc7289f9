#include <doctest/doctest.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "iomimic/iomimic.h"
#include "iomimic/testing/posix_test_storage.h"
#include "iomimic/testing/storage_cases.h"

namespace iomimic::posix {
Result<std::unique_ptr<Storage>> CreatePosixStorage(const PluginContext& context);
}

namespace {

namespace fs = std::filesystem;

using iomimic::testing::Pattern;
using iomimic::testing::TempDir;

std::unique_ptr<iomimic::Storage> Make(std::map<std::string, std::string> options = {}) {
  auto s = iomimic::testing::MakeStorage(&iomimic::posix::CreatePosixStorage, "posix", options);
  REQUIRE_MESSAGE(s.ok(), s.status().ToString());
  return std::move(s).value();
}

}  // namespace

TEST_CASE("posix: write at odd offsets, read back, size, sync, rename") {
  TempDir dir;
  auto storage = Make();
  const std::string path = (dir.path() / "sub" / "f.bin").string();
  REQUIRE(storage->CreateDirectories((dir.path() / "sub").string()).ok());
  {
    auto f = storage->Open(path, {iomimic::OpenMode::kWrite});
    REQUIRE(f.ok());
    auto a = Pattern(1000, 1), b = Pattern(777, 2);
    CHECK((*f)->WriteAt(0, a).ok());
    CHECK((*f)->WriteAt(1000, b).ok());
    CHECK((*f)->Sync().ok());
    CHECK(*(*f)->Size() == 1777);
    CHECK((*f)->Close().ok());
  }
  auto f = storage->Open(path, {iomimic::OpenMode::kRead});
  REQUIRE(f.ok());
  std::vector<std::byte> buf(500);
  auto n = (*f)->ReadAt(999, buf);
  REQUIRE(n.ok());
  CHECK(*n == 500);
  CHECK(buf[0] == Pattern(1000, 1)[999]);
  CHECK(buf[1] == Pattern(777, 2)[0]);
  // Short read at the end of the file, zero past it.
  CHECK(*(*f)->ReadAt(1500, buf) == 277);
  CHECK(*(*f)->ReadAt(5000, buf) == 0);
  // Batched reads fill each request.
  std::vector<std::byte> r1(10), r2(10);
  iomimic::ReadRequest reqs[2] = {{0, r1}, {1770, r2}};
  CHECK((*f)->ReadBatch(reqs).ok());
  CHECK(reqs[0].bytes_read == 10);
  CHECK(reqs[1].bytes_read == 7);
  (*f).reset();
  const std::string moved = (dir.path() / "moved.bin").string();
  CHECK(storage->Rename(path, moved).ok());
  CHECK(storage->Stat(moved)->size == 1777);
  CHECK(storage->Stat(path).status().IsNotFound());
  CHECK(storage->Remove(moved).ok());
  CHECK(storage->Remove(moved).IsNotFound());
}

TEST_CASE("posix: errors name the path") {
  auto storage = Make();
  auto f = storage->Open("/nonexistent-dir/x.npz", {iomimic::OpenMode::kRead});
  REQUIRE_FALSE(f.ok());
  CHECK(f.status().IsNotFound());
  CHECK(f.status().message().find("/nonexistent-dir/x.npz") != std::string::npos);
}

TEST_CASE("posix: options are validated") {
  iomimic::PluginContext ctx;
  ctx.options = iomimic::PluginOptions("storage plugin 'posix'", {{"fadvise", "sometimes"}});
  auto s = iomimic::posix::CreatePosixStorage(ctx);
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().message().find("fadvise") != std::string::npos);
  auto ok = Make({{"fadvise", "random"}, {"drop_cache_on_close", "true"}});
  CHECK(ok->name() == "posix");
  CHECK(ok->capabilities().data_path == "pread");
}

// OpenOptions::drop_cache: the file's pages leave the page cache when it
// opens, so the read that follows comes from the device.
TEST_CASE("posix: drop_cache drops the file's cached pages at open") {
  TempDir dir;
  auto storage = Make();
  const std::string path = (dir.path() / "cached.bin").string();
  const std::size_t size = 64 * 4096;
  {
    auto f = storage->Open(path, {iomimic::OpenMode::kWrite});
    REQUIRE(f.ok());
    REQUIRE((*f)->WriteAt(0, Pattern(size, 3)).ok());
    REQUIRE((*f)->Sync().ok());  // clean pages only can be dropped
    REQUIRE((*f)->Close().ok());
  }
  const auto resident_pages = [&] {
    const int fd = ::open(path.c_str(), O_RDONLY);
    REQUIRE(fd >= 0);
    void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
    ::close(fd);
    REQUIRE(map != MAP_FAILED);
    std::vector<unsigned char> in_core(size / 4096);
    REQUIRE(::mincore(map, size, in_core.data()) == 0);
    ::munmap(map, size);
    std::size_t n = 0;
    for (unsigned char c : in_core) n += c & 1;
    return n;
  };
  iomimic::OpenOptions keep;
  CHECK((*storage->Open(path, keep))->Close().ok());
  const std::size_t before = resident_pages();
  iomimic::OpenOptions drop;
  drop.drop_cache = true;
  auto f = storage->Open(path, drop);
  REQUIRE(f.ok());
  const std::size_t after = resident_pages();
  CHECK((*f)->Close().ok());
  INFO("resident pages before " << before << ", after " << after);
  // tmpfs keeps every page (it has no backing store to drop to).
  struct statfs fs_info {};
  REQUIRE(::statfs(path.c_str(), &fs_info) == 0);
  if (fs_info.f_type != TMPFS_MAGIC) {
    CHECK(before > 0);
    CHECK(after == 0);
  }
}
