// Test storages shared by the indexed_binary and mmap_indexed_binary tests:
// an in-memory storage that records every request (with fault injection) and
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
#include "iomimic/testing/posix_test_storage.h"

namespace iomimic::indexed_binary::testing {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------
// An in-memory storage that records every request.

struct Request {
  bool write = false;
  std::string path;
  std::uint64_t offset = 0;
  std::size_t length = 0;
};

struct Blob {
  std::mutex mu;
  std::vector<std::byte> data;
};

class MemStorage;

class MemFile final : public File {
 public:
  MemFile(MemStorage* storage, std::string path, std::shared_ptr<Blob> blob)
      : storage_(storage), path_(std::move(path)), blob_(std::move(blob)) {}
  ~MemFile() override;

  Result<std::size_t> ReadAt(std::uint64_t offset, std::span<std::byte> destination) override;
  Status WriteAt(std::uint64_t offset, std::span<const std::byte> source) override;
  Status Sync() override { return closed_ ? Closed() : Status::OK(); }
  Result<std::uint64_t> Size() override {
    if (closed_) return Closed();
    std::lock_guard<std::mutex> lock(blob_->mu);
    return static_cast<std::uint64_t>(blob_->data.size());
  }
  Status Close() override;
  const std::string& path() const override { return path_; }

 private:
  Status Closed() const { return Status::IOError(path_ + ": file is closed"); }

  MemStorage* storage_;
  std::string path_;
  std::shared_ptr<Blob> blob_;
  bool closed_ = false;
};

class MemStorage final : public Storage {
 public:
  std::string name() const override { return "mem"; }
  StorageCapabilities capabilities() const override {
    StorageCapabilities c;
    c.alignment = alignment_;
    c.data_path = "memory";
    return c;
  }
  Result<std::unique_ptr<File>> Open(const std::string& path, const OpenOptions& options) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = files_.find(path);
    if (options.mode == OpenMode::kRead) {
      if (it == files_.end()) return Status::NotFound(path + ": no such file");
    } else if (it == files_.end()) {
      it = files_.emplace(path, std::make_shared<Blob>()).first;
    } else if (options.mode == OpenMode::kWrite) {
      std::lock_guard<std::mutex> blob_lock(it->second->mu);
      it->second->data.clear();
    }
    ++opens_;
    ++open_files_;
    return std::unique_ptr<File>(std::make_unique<MemFile>(this, path, it->second));
  }
  Status CreateDirectories(const std::string&) override { return Status::OK(); }
  Status Remove(const std::string& path) override {
    std::lock_guard<std::mutex> lock(mu_);
    return files_.erase(path) ? Status::OK() : Status::NotFound(path);
  }
  Status Rename(const std::string& from, const std::string& to) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!fail_rename_to_.empty() && to.find(fail_rename_to_) != std::string::npos) {
      return Status::IOError("injected rename failure: " + from + " -> " + to);
    }
    auto it = files_.find(from);
    if (it == files_.end()) return Status::NotFound(from);
    files_[to] = it->second;
    files_.erase(from);
    return Status::OK();
  }
  Result<FileInfo> Stat(const std::string& path) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = files_.find(path);
    if (it == files_.end()) return Status::NotFound(path);
    std::lock_guard<std::mutex> blob_lock(it->second->mu);
    return FileInfo{it->second->data.size(), false};
  }

  std::vector<std::byte> Bytes(const std::string& path) {
    std::lock_guard<std::mutex> lock(mu_);
    auto blob = files_.at(path);
    std::lock_guard<std::mutex> blob_lock(blob->mu);
    return blob->data;
  }
  void SetBytes(const std::string& path, std::vector<std::byte> data) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& blob = files_[path];
    if (!blob) blob = std::make_shared<Blob>();
    std::lock_guard<std::mutex> blob_lock(blob->mu);
    blob->data = std::move(data);
  }
  void Log(Request r) {
    std::lock_guard<std::mutex> lock(log_mu_);
    if (logging_) log_.push_back(std::move(r));
  }
  std::vector<Request> TakeLog() {
    std::lock_guard<std::mutex> lock(log_mu_);
    return std::exchange(log_, {});
  }
  void SetLogging(bool on) {
    std::lock_guard<std::mutex> lock(log_mu_);
    logging_ = on;
    log_.clear();
  }
  void set_alignment(std::size_t a) { alignment_ = a; }
  // Fault injection: writes to paths containing `fragment` fail (empty: none).
  void FailWritesTo(std::string fragment) {
    std::lock_guard<std::mutex> lock(mu_);
    fail_writes_to_ = std::move(fragment);
  }
  bool FailsWritesTo(const std::string& path) {
    std::lock_guard<std::mutex> lock(mu_);
    return !fail_writes_to_.empty() && path.find(fail_writes_to_) != std::string::npos;
  }
  // Fault injection: renames to paths containing `fragment` fail.
  void FailRenameTo(std::string fragment) {
    std::lock_guard<std::mutex> lock(mu_);
    fail_rename_to_ = std::move(fragment);
  }
  bool Exists(const std::string& path) {
    std::lock_guard<std::mutex> lock(mu_);
    return files_.count(path) != 0;
  }
  std::vector<std::string> Paths() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::string> out;
    for (const auto& [path, blob] : files_) out.push_back(path);
    return out;
  }
  void FileClosed() { --open_files_; }
  int open_files() const { return open_files_; }
  int opens() const { return opens_; }

 private:
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Blob>> files_;
  std::mutex log_mu_;
  bool logging_ = false;
  std::vector<Request> log_;
  std::size_t alignment_ = 1;
  std::string fail_writes_to_;
  std::string fail_rename_to_;
  std::atomic<int> open_files_{0};
  std::atomic<int> opens_{0};
};

inline MemFile::~MemFile() {
  if (!closed_) storage_->FileClosed();
}

inline Result<std::size_t> MemFile::ReadAt(std::uint64_t offset, std::span<std::byte> destination) {
  if (closed_) return Closed();
  storage_->Log({false, path_, offset, destination.size()});
  std::lock_guard<std::mutex> lock(blob_->mu);
  if (offset >= blob_->data.size()) return std::size_t{0};
  const std::size_t n = std::min<std::size_t>(
      destination.size(), blob_->data.size() - static_cast<std::size_t>(offset));
  std::memcpy(destination.data(), blob_->data.data() + offset, n);
  return n;
}

inline Status MemFile::WriteAt(std::uint64_t offset, std::span<const std::byte> source) {
  if (closed_) return Closed();
  storage_->Log({true, path_, offset, source.size()});
  if (storage_->FailsWritesTo(path_)) {
    return Status::IOError("injected write failure on " + path_ + " at offset " +
                           std::to_string(offset));
  }
  std::lock_guard<std::mutex> lock(blob_->mu);
  if (blob_->data.size() < offset + source.size()) blob_->data.resize(offset + source.size());
  std::memcpy(blob_->data.data() + offset, source.data(), source.size());
  return Status::OK();
}

inline Status MemFile::Close() {
  if (closed_) return Closed();
  closed_ = true;
  storage_->FileClosed();
  return Status::OK();
}

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
