#include <doctest/doctest.h>
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
