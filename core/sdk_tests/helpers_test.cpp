// Tests of the SDK's plugin helpers: Guard (iomimic/guard.h),
// AllocateHostBuffer (iomimic/storage.h) and the forwarding bases for
// decorators (iomimic/forwarding_storage.h).

#include <doctest/doctest.h>

#include <cstddef>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "iomimic/forwarding_storage.h"
#include "iomimic/guard.h"
#include "iomimic/storage.h"
#include "iomimic/testing/memory_storage.h"

namespace iomimic {
namespace {

TEST_CASE("Guard passes results through and turns exceptions into errors") {
  CHECK(Guard("p", "writing", "/f", [] { return Status::OK(); }).ok());
  Result<int> value = Guard("p", "reading", "/f", []() -> Result<int> { return 7; });
  REQUIRE(value.ok());
  CHECK(*value == 7);
  const Status not_found =
      Guard("p", "reading", "/f", [] { return Status::NotFound("open /f: missing"); });
  CHECK(not_found.code() == StatusCode::kNotFound);
  CHECK(not_found.message() == "open /f: missing");

  const Status oom =
      Guard("npz", "writing", "/d/a.npz", []() -> Status { throw std::bad_alloc(); });
  CHECK(oom.code() == StatusCode::kResourceExhausted);
  CHECK(oom.message() == "npz: out of memory writing /d/a.npz");

  const Status thrown =
      Guard("npz", "writing", "/d/a.npz", []() -> Status { throw std::runtime_error("boom"); });
  CHECK(thrown.code() == StatusCode::kInternal);
  CHECK(thrown.message() == "npz: writing /d/a.npz: boom");

  const Status other = Guard("npz", "writing", "/d/a.npz", []() -> Status { throw 42; });
  CHECK(other.code() == StatusCode::kInternal);
  CHECK(other.message() == "npz: writing /d/a.npz: unknown exception");
}

TEST_CASE("Guard leaves out an empty object or plugin and runs the clean-up only on a throw") {
  const Status no_object =
      Guard("npy", "validating a file spec", "", []() -> Status { throw std::bad_alloc(); });
  CHECK(no_object.message() == "npy: out of memory validating a file spec");
  const Status no_plugin = Guard("", "reading", "/f", []() -> Status { throw std::bad_alloc(); });
  CHECK(no_plugin.message() == "out of memory reading /f");

  int cleaned = 0;
  CHECK(
      !Guard(
           "p", "reading", "/f", [] { return Status::IOError("read /f: EIO"); }, [&] { ++cleaned; })
           .ok());
  CHECK(cleaned == 0);
  CHECK(!Guard(
             "p", "reading", "/f", []() -> Status { throw std::bad_alloc(); }, [&] { ++cleaned; })
             .ok());
  CHECK(cleaned == 1);
}

// A back end whose Allocate hands out "device" memory (host memory marked
// kDevice, never dereferenced by the test) or fails.
class DeviceStorage final : public testing::MemoryStorage {
 public:
  bool fail = false;
  Result<Buffer> Allocate(std::size_t size) override {
    if (fail) return Status::ResourceExhausted("cannot allocate " + std::to_string(size));
    Buffer host = Buffer::AllocateHost(size);
    void* data = host.data();
    // Keep the memory alive in a host buffer and hand out a non-owning view.
    kept_.push_back(std::move(host));
    return Buffer(data, size, nullptr, nullptr, MemoryKind::kDevice);
  }
  StorageCapabilities capabilities() const override {
    StorageCapabilities caps = MemoryStorage::capabilities();
    caps.alignment = 512;
    return caps;
  }

 private:
  std::vector<Buffer> kept_;
};

TEST_CASE("AllocateHostBuffer prefers the back end's memory and falls back to host memory") {
  testing::MemoryStorage memory;
  Result<Buffer> plain = AllocateHostBuffer(memory, 100, "npz");
  REQUIRE(plain.ok());
  CHECK(plain->size() >= 100);
  CHECK(plain->host_accessible());

  DeviceStorage device;
  Result<Buffer> host = AllocateHostBuffer(device, 1000, "npz");
  REQUIRE(host.ok());
  CHECK(host->kind() == MemoryKind::kHost);
  CHECK(host->size() >= 1000);
  CHECK(reinterpret_cast<std::uintptr_t>(host->data()) % 512 == 0);

  device.fail = true;
  Result<Buffer> failed = AllocateHostBuffer(device, 1000, "npz");
  REQUIRE(!failed.ok());
  CHECK(failed.status().code() == StatusCode::kResourceExhausted);
  CHECK(failed.status().message() == "npz: allocating 1000 bytes: cannot allocate 1000");
}

// A decorator that only counts opens and reads; everything else forwards.
class CountingFile final : public ForwardingFile {
 public:
  CountingFile(std::unique_ptr<File> inner, int* reads)
      : ForwardingFile(std::move(inner)), reads_(reads) {}
  Result<std::size_t> ReadAt(std::uint64_t offset, std::span<std::byte> destination) override {
    ++*reads_;
    return inner().ReadAt(offset, destination);
  }

 private:
  int* reads_;
};

class CountingStorage final : public ForwardingStorage {
 public:
  using ForwardingStorage::ForwardingStorage;
  std::string name() const override { return "counting"; }
  int opens = 0;
  int reads = 0;

 protected:
  Result<std::unique_ptr<File>> WrapFile(std::unique_ptr<File> file, const OpenOptions&) override {
    ++opens;
    return std::unique_ptr<File>(std::make_unique<CountingFile>(std::move(file), &reads));
  }
};

TEST_CASE("ForwardingStorage forwards what a decorator does not override") {
  testing::MemoryStorage memory;
  CountingStorage counting(&memory);
  CHECK(counting.name() == "counting");
  CHECK(counting.capabilities().data_path == memory.capabilities().data_path);
  REQUIRE(counting.CreateDirectories("/d").ok());
  OpenOptions write;
  write.mode = OpenMode::kWrite;
  Result<std::unique_ptr<File>> file = counting.Open("/d/a", write);
  REQUIRE(file.ok());
  const std::byte bytes[4] = {std::byte{1}, std::byte{2}, std::byte{3}, std::byte{4}};
  REQUIRE((*file)->WriteAt(0, bytes).ok());
  CHECK((*file)->path() == "/d/a");
  REQUIRE((*file)->Close().ok());

  Result<FileInfo> info = counting.Stat("/d/a");
  REQUIRE(info.ok());
  CHECK(info->size == 4);
  file = counting.Open("/d/a", OpenOptions{});
  REQUIRE(file.ok());
  std::byte back[4] = {};
  Result<std::size_t> n = (*file)->ReadAt(0, back);
  REQUIRE(n.ok());
  CHECK(*n == 4);
  CHECK(back[3] == std::byte{4});
  CHECK(counting.opens == 2);
  CHECK(counting.reads == 1);

  // Errors of the inner Open come back unchanged and nothing is wrapped.
  Result<std::unique_ptr<File>> missing = counting.Open("/d/missing", OpenOptions{});
  CHECK(missing.status().code() == StatusCode::kNotFound);
  CHECK(counting.opens == 2);
  REQUIRE(counting.Rename("/d/a", "/d/b").ok());
  CHECK(memory.Stat("/d/b").ok());
  REQUIRE(counting.Remove("/d/b").ok());
  CHECK(memory.Stat("/d/b").status().code() == StatusCode::kNotFound);
}

}  // namespace
}  // namespace iomimic
