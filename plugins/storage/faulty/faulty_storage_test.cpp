#include "faulty_storage.h"

#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

#include "iomimic/testing/memory_storage.h"
#include "iomimic/testing/storage_cases.h"

namespace {

using iomimic::OpenMode;
using iomimic::ReadRequest;
using iomimic::Status;
using iomimic::StatusCode;
using iomimic::Storage;
using iomimic::testing::MemoryStorage;

std::unique_ptr<Storage> Make(Storage* inner, std::map<std::string, std::string> options) {
  auto s = iomimic::testing::MakeStorage(&iomimic::faulty::CreateFaultyStorage, "faulty",
                                         std::move(options), inner);
  REQUIRE_MESSAGE(s.ok(), s.status().ToString());
  return std::move(s).value();
}

std::vector<std::byte> Pattern(std::size_t n) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = std::byte(i * 7 & 0xff);
  return v;
}

void Fill(MemoryStorage& mem, const std::string& path, std::size_t size) {
  auto f = mem.Open(path, {OpenMode::kWrite});
  REQUIRE(f.ok());
  REQUIRE((*f)->WriteAt(0, Pattern(size)).ok());
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("faulty: with no trigger (error_rate 0) it behaves like the inner back end") {
  MemoryStorage mem;
  auto storage = Make(&mem, {{"error_rate", "0"}});
  CHECK(storage->name() == "faulty");
  CHECK(storage->capabilities().data_path == "memory");
  REQUIRE(storage->CreateDirectories("/d").ok());
  auto w = storage->Open("/d/f", {OpenMode::kWrite});
  REQUIRE(w.ok());
  REQUIRE((*w)->WriteAt(0, Pattern(5000)).ok());
  REQUIRE((*w)->Close().ok());
  auto r = storage->Open("/d/f", {OpenMode::kRead});
  REQUIRE(r.ok());
  std::vector<std::byte> buf(6000);
  CHECK(*(*r)->ReadAt(0, buf) == 5000);
  CHECK(storage->Stat("/d/f")->size == 5000);
  CHECK(storage->Rename("/d/f", "/d/g").ok());
  CHECK(storage->Remove("/d/g").ok());
  CHECK(storage->Open("/d/g", {OpenMode::kRead}).status().IsNotFound());
}

TEST_CASE("faulty: mode eio with fail_at_offset fails exactly the reads covering it") {
  MemoryStorage mem;
  Fill(mem, "/data/train/a.npz", 10000);
  auto storage = Make(&mem, {{"mode", "eio"}, {"fail_at_offset", "4096"}});
  auto f = storage->Open("/data/train/a.npz", {OpenMode::kRead});
  REQUIRE(f.ok());
  std::vector<std::byte> buf(1000);
  CHECK((*f)->ReadAt(0, buf).ok());     // [0, 1000)
  CHECK((*f)->ReadAt(3096, buf).ok());  // [3096, 4096) ends just before
  CHECK((*f)->ReadAt(4097, buf).ok());  // starts just after
  auto bad = (*f)->ReadAt(3097, buf);   // [3097, 4097) covers 4096
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == StatusCode::kIOError);
  const std::string m = bad.status().message();
  MESSAGE(m);
  CHECK(Contains(m, "injected EIO: read of 1000 bytes at offset 3097 in /data/train/a.npz"));
  CHECK(Contains(m, "fail_at_offset 4096"));
  // Writes are not eligible in mode eio unless asked.
  auto w = storage->Open("/data/train/b.npz", {OpenMode::kWrite});
  REQUIRE(w.ok());
  CHECK((*w)->WriteAt(4000, buf).ok());
}

TEST_CASE("faulty: eio on writes with operations=write") {
  MemoryStorage mem;
  auto storage = Make(&mem, {{"mode", "eio"}, {"operations", "write"}, {"error_rate", "1"}});
  auto w = storage->Open("/w", {OpenMode::kWrite});
  REQUIRE(w.ok());
  std::vector<std::byte> buf(10);
  Status s = (*w)->WriteAt(20, buf);
  REQUIRE_FALSE(s.ok());
  CHECK(s.code() == StatusCode::kIOError);
  CHECK(Contains(s.message(), "injected EIO: write of 10 bytes at offset 20 in /w"));
  // The results get the count (summary.json: plugins.storage.statistics).
  bool found = false;
  for (const iomimic::StorageStatistic& stat : storage->Statistics()) {
    if (stat.name == "faulty_injected_faults") {
      found = true;
      CHECK(stat.value == 1);
    }
  }
  CHECK(found);
  Fill(mem, "/r", 100);
  auto r = storage->Open("/r", {OpenMode::kRead});
  CHECK((*r)->ReadAt(0, buf).ok());
}

TEST_CASE("faulty: error_rate draws are seeded and near the rate") {
  MemoryStorage mem;
  Fill(mem, "/x", 100);
  auto count = [&](const std::string& seed) {
    auto storage = Make(&mem, {{"error_rate", "0.3"}, {"seed", seed}});
    auto f = storage->Open("/x", {OpenMode::kRead});
    REQUIRE(f.ok());
    std::vector<std::byte> buf(10);
    std::vector<bool> failed;
    for (int i = 0; i < 2000; ++i) failed.push_back(!(*f)->ReadAt(0, buf).ok());
    return failed;
  };
  const auto a = count("1"), b = count("1"), c = count("2");
  CHECK(a == b);
  CHECK(a != c);
  const auto failures = std::count(a.begin(), a.end(), true);
  CHECK(failures > 2000 * 0.25);
  CHECK(failures < 2000 * 0.35);
}

TEST_CASE("faulty: after_ops lets the first operations pass") {
  MemoryStorage mem;
  Fill(mem, "/x", 100);
  auto storage = Make(&mem, {{"error_rate", "1"}, {"after_ops", "5"}});
  auto f = storage->Open("/x", {OpenMode::kRead});
  REQUIRE(f.ok());
  std::vector<std::byte> buf(10);
  for (int i = 0; i < 5; ++i) CHECK((*f)->ReadAt(0, buf).ok());
  auto r = (*f)->ReadAt(30, buf);
  REQUIRE_FALSE(r.ok());
  CHECK(Contains(r.status().message(), "after 5 operations"));
  CHECK(Contains(r.status().message(), "offset 30 in /x"));
  CHECK(Contains(r.status().message(), "eligible operation #6"));
  // Zero-length reads are neither counted nor failed.
  CHECK((*f)->ReadAt(0, std::span<std::byte>()).ok());
}

TEST_CASE("faulty: fail_path limits faults to matching files") {
  MemoryStorage mem;
  Fill(mem, "/data/train/img_1_of_4.npz", 100);
  Fill(mem, "/data/valid/img_0_of_1.npz", 100);
  auto storage = Make(&mem, {{"error_rate", "1"}, {"fail_path", "valid/"}});
  std::vector<std::byte> buf(10);
  auto train = storage->Open("/data/train/img_1_of_4.npz", {OpenMode::kRead});
  auto valid = storage->Open("/data/valid/img_0_of_1.npz", {OpenMode::kRead});
  CHECK((*train)->ReadAt(0, buf).ok());
  auto r = (*valid)->ReadAt(0, buf);
  REQUIRE_FALSE(r.ok());
  CHECK(Contains(r.status().message(), "/data/valid/img_0_of_1.npz"));
}

TEST_CASE("faulty: short_read returns fewer bytes than were there, without an error") {
  MemoryStorage mem;
  Fill(mem, "/s", 10000);
  SUBCASE("at an offset: the bytes before it") {
    auto storage = Make(&mem, {{"mode", "short_read"}, {"fail_at_offset", "5000"}});
    auto f = storage->Open("/s", {OpenMode::kRead});
    std::vector<std::byte> buf(2000);
    CHECK(*(*f)->ReadAt(0, buf) == 2000);
    CHECK(*(*f)->ReadAt(4000, buf) == 1000);
    CHECK(*(*f)->ReadAt(5000, buf) == 0);
  }
  SUBCASE("by rate: half") {
    auto storage = Make(&mem, {{"mode", "short_read"}, {"error_rate", "1"}});
    auto f = storage->Open("/s", {OpenMode::kRead});
    std::vector<std::byte> buf(2000);
    CHECK(*(*f)->ReadAt(0, buf) == 1000);
    CHECK(*(*f)->ReadAt(9000, buf) == 500);  // 1000 were there
    CHECK(*(*f)->ReadAt(10000, buf) == 0);   // at the end stays 0
  }
}

TEST_CASE("faulty: enospc fails writes with ResourceExhausted and writes nothing") {
  MemoryStorage mem;
  auto storage = Make(&mem, {{"mode", "enospc"}, {"fail_at_offset", "1M"}});
  auto w = storage->Open("/out/.f.npz.iomimic-partial", {OpenMode::kWrite});
  REQUIRE(w.ok());
  std::vector<std::byte> chunk(512 * 1024);
  CHECK((*w)->WriteAt(0, chunk).ok());
  CHECK((*w)->WriteAt(512 * 1024, chunk).ok());
  Status s = (*w)->WriteAt(1024 * 1024, chunk);
  REQUIRE_FALSE(s.ok());
  CHECK(s.code() == StatusCode::kResourceExhausted);
  MESSAGE(s.message());
  CHECK(Contains(s.message(),
                 "injected ENOSPC: write of 524288 bytes at offset 1048576 in "
                 "/out/.f.npz.iomimic-partial: No space left on device"));
  CHECK(mem.Content("/out/.f.npz.iomimic-partial").size() == 1024 * 1024);
  // Reads are not affected in mode enospc.
  auto r = storage->Open("/out/.f.npz.iomimic-partial", {OpenMode::kRead});
  std::vector<std::byte> buf(10);
  CHECK((*r)->ReadAt(1024 * 1024 - 5, buf).ok());
}

TEST_CASE("faulty: short_write lets the first part through, then fails") {
  MemoryStorage mem;
  SUBCASE("at an offset: the bytes before it reach the file") {
    auto storage = Make(&mem, {{"mode", "short_write"}, {"fail_at_offset", "600K"}});
    auto w = storage->Open("/out/f.bin", {OpenMode::kWrite});
    REQUIRE(w.ok());
    const std::vector<std::byte> chunk = Pattern(512 * 1024);
    CHECK((*w)->WriteAt(0, chunk).ok());
    Status s = (*w)->WriteAt(512 * 1024, chunk);
    REQUIRE_FALSE(s.ok());
    CHECK(s.code() == StatusCode::kIOError);
    MESSAGE(s.message());
    CHECK(Contains(s.message(),
                   "injected short write: write of 524288 bytes at offset 524288 in /out/f.bin "
                   "stopped after 90112 bytes"));
    CHECK(mem.Content("/out/f.bin").size() == 600 * 1024);
  }
  SUBCASE("by rate: half") {
    auto storage = Make(&mem, {{"mode", "short_write"}, {"error_rate", "1"}});
    auto w = storage->Open("/out/g.bin", {OpenMode::kWrite});
    REQUIRE(w.ok());
    CHECK_FALSE((*w)->WriteAt(0, Pattern(1000)).ok());
    CHECK(mem.Content("/out/g.bin").size() == 500);
    // Reads are not affected.
    auto r = storage->Open("/out/g.bin", {OpenMode::kRead});
    std::vector<std::byte> buf(10);
    CHECK((*r)->ReadAt(0, buf).ok());
  }
}

TEST_CASE("faulty: ReadBatch fails only the requests that are chosen") {
  MemoryStorage mem;
  Fill(mem, "/b", 10000);
  std::vector<std::vector<std::byte>> bufs(5, std::vector<std::byte>(100));
  auto batch = [&]() {
    std::vector<ReadRequest> reqs;
    for (std::size_t i = 0; i < bufs.size(); ++i) {
      ReadRequest r;
      r.offset = i * 1000;
      r.destination = bufs[i];
      reqs.push_back(r);
    }
    return reqs;
  };
  {
    auto storage = Make(&mem, {{"fail_at_offset", "2050"}});
    auto f = storage->Open("/b", {OpenMode::kRead});
    auto reqs = batch();
    Status s = (*f)->ReadBatch(reqs);
    REQUIRE_FALSE(s.ok());
    CHECK(Contains(s.message(), "offset 2000 in /b"));
    for (std::size_t i = 0; i < reqs.size(); ++i) {
      CAPTURE(i);
      CHECK(reqs[i].status.ok() == (i != 2));
      CHECK(reqs[i].bytes_read == (i == 2 ? 0u : 100u));
    }
    const auto expect = Pattern(3100);
    CHECK(bufs[3] == std::vector<std::byte>(expect.begin() + 3000, expect.end()));
  }
  {
    auto storage = Make(&mem, {{"mode", "short_read"}, {"fail_at_offset", "4050"}});
    auto f = storage->Open("/b", {OpenMode::kRead});
    auto reqs = batch();
    REQUIRE((*f)->ReadBatch(reqs).ok());
    CHECK(reqs[4].bytes_read == 50);
    CHECK(reqs[3].bytes_read == 100);
  }
}

TEST_CASE("faulty: options are validated") {
  MemoryStorage mem;
  const std::vector<std::map<std::string, std::string>> bad = {
      {{"error_rate", "1.5"}},
      {{"error_rate", "often"}},
      {{"mode", "crash"}},
      {{"after_ops", "-1"}},
      {{"fail_at_offset", "here"}},
      {{"operations", "stat"}},
      {{"mode", "short_read"}, {"operations", "write"}},
      {{"mode", "enospc"}, {"operations", "read"}},
      {{"mode", "short_write"}, {"operations", "all"}},
  };
  for (const auto& options : bad) {
    iomimic::PluginContext ctx;
    ctx.options = iomimic::PluginOptions("storage plugin 'faulty'", options);
    ctx.inner = &mem;
    auto s = iomimic::faulty::CreateFaultyStorage(ctx);
    REQUIRE_FALSE(s.ok());
    CHECK(s.status().code() == StatusCode::kInvalidArgument);
    bool named = false;
    for (const auto& [key, value] : options) named = named || Contains(s.status().message(), key);
    CHECK(named);
  }
  iomimic::PluginContext alone;
  CHECK_FALSE(iomimic::faulty::CreateFaultyStorage(alone).ok());
}
