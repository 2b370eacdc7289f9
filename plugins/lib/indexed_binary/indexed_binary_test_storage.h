// Test storages shared by the indexed_binary and mmap_indexed_binary tests:
// the SDK's in-memory storage (with a storage handing out "device" buffers) and
// a minimal POSIX storage for real files. Test code only.

#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "iomimic/iomimic.h"
#include "iomimic/testing/memory_storage.h"
#include "iomimic/testing/posix_test_storage.h"

namespace iomimic::indexed_binary::testing {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------
// An in-memory storage that records every request.

// The SDK's in-memory test storage (iomimic/testing/memory_storage.h).
using MemStorage = ::iomimic::testing::MemoryStorage;
using Request = ::iomimic::testing::StorageRequest;

// Forwards to a MemStorage but allocates "device" buffers (host memory marked
// MemoryKind::kDevice), like a GPU staging back end.
class DeviceMemStorage final : public Storage {
 public:
  explicit DeviceMemStorage(MemStorage* inner) : inner_(inner) {}
  std::string name() const override { return "device-mem"; }
  StorageCapabilities capabilities() const override {
    StorageCapabilities c = inner_->capabilities();
    c.device_memory = true;
    return c;
  }
  Result<std::unique_ptr<File>> Open(const std::string& path, const OpenOptions& options) override {
    return inner_->Open(path, options);
  }
  Status CreateDirectories(const std::string& path) override {
    return inner_->CreateDirectories(path);
  }
  Status Remove(const std::string& path) override { return inner_->Remove(path); }
  Status Rename(const std::string& from, const std::string& to) override {
    return inner_->Rename(from, to);
  }
  Result<FileInfo> Stat(const std::string& path) override { return inner_->Stat(path); }
  Result<Buffer> Allocate(std::size_t size) override {
    ++device_allocations;
    void* p = std::aligned_alloc(64, (size + 63) / 64 * 64);
    if (p == nullptr) return Status::ResourceExhausted("device-mem");
    return Buffer(
        p, size, [](void*, void* data, std::size_t) { std::free(data); }, nullptr,
        MemoryKind::kDevice);
  }
  int device_allocations = 0;

 private:
  MemStorage* inner_;
};

// ---------------------------------------------------------------------------
// A minimal POSIX storage for real files.

// Real files: the SDK's test storage (iomimic/testing/posix_test_storage.h).
using ::iomimic::testing::PosixFile;
using ::iomimic::testing::PosixStorage;
using ::iomimic::testing::TempDir;

}  // namespace iomimic::indexed_binary::testing
