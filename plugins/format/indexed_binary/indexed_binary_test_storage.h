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

class PosixFile final : public File {
 public:
  PosixFile(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~PosixFile() override {
    if (fd_ >= 0) ::close(fd_);
  }
  Result<std::size_t> ReadAt(std::uint64_t offset, std::span<std::byte> destination) override {
    std::size_t done = 0;
    while (done < destination.size()) {
      const ssize_t n = ::pread(fd_, destination.data() + done, destination.size() - done,
                                static_cast<off_t>(offset + done));
      if (n < 0) {
        if (errno == EINTR) continue;
        return Status::FromErrno(errno, "pread " + path_ + " at offset " + std::to_string(offset));
      }
      if (n == 0) break;
      done += static_cast<std::size_t>(n);
    }
    return done;
  }
  Status WriteAt(std::uint64_t offset, std::span<const std::byte> source) override {
    std::size_t done = 0;
    while (done < source.size()) {
      const ssize_t n = ::pwrite(fd_, source.data() + done, source.size() - done,
                                 static_cast<off_t>(offset + done));
      if (n < 0) {
        if (errno == EINTR) continue;
        return Status::FromErrno(errno, "pwrite " + path_ + " at offset " + std::to_string(offset));
      }
      done += static_cast<std::size_t>(n);
    }
    return Status::OK();
  }
  Status Sync() override {
    return ::fsync(fd_) == 0 ? Status::OK() : Status::FromErrno(errno, "fsync " + path_);
  }
  Result<std::uint64_t> Size() override {
    struct stat st;
    if (::fstat(fd_, &st) != 0) return Status::FromErrno(errno, "fstat " + path_);
    return static_cast<std::uint64_t>(st.st_size);
  }
  Status Close() override {
    const int fd = std::exchange(fd_, -1);
    if (fd < 0) return Status::IOError(path_ + ": already closed");
    return ::close(fd) == 0 ? Status::OK() : Status::FromErrno(errno, "close " + path_);
  }
  const std::string& path() const override { return path_; }

 private:
  int fd_;
  std::string path_;
};

class PosixStorage final : public Storage {
 public:
  std::string name() const override { return "posix-test"; }
  StorageCapabilities capabilities() const override {
    StorageCapabilities c;
    c.data_path = "pread";
    return c;
  }
  Result<std::unique_ptr<File>> Open(const std::string& path, const OpenOptions& options) override {
    int flags = O_CLOEXEC;
    switch (options.mode) {
      case OpenMode::kRead:
        flags |= O_RDONLY;
        break;
      case OpenMode::kWrite:
        flags |= O_WRONLY | O_CREAT | O_TRUNC;
        break;
      case OpenMode::kReadWrite:
        flags |= O_RDWR | O_CREAT;
        break;
    }
    const int fd = ::open(path.c_str(), flags, 0644);
    if (fd < 0) return Status::FromErrno(errno, "open " + path);
    return std::unique_ptr<File>(std::make_unique<PosixFile>(fd, path));
  }
  Status CreateDirectories(const std::string& path) override {
    std::error_code ec;
    fs::create_directories(path, ec);
    return ec ? Status::IOError(path + ": " + ec.message()) : Status::OK();
  }
  Status Remove(const std::string& path) override {
    return ::unlink(path.c_str()) == 0 ? Status::OK() : Status::FromErrno(errno, "unlink " + path);
  }
  Status Rename(const std::string& from, const std::string& to) override {
    return ::rename(from.c_str(), to.c_str()) == 0 ? Status::OK()
                                                   : Status::FromErrno(errno, "rename " + from);
  }
  Result<FileInfo> Stat(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return Status::FromErrno(errno, "stat " + path);
    return FileInfo{static_cast<std::uint64_t>(st.st_size), S_ISDIR(st.st_mode)};
  }
};

// A temporary directory removed at scope exit.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ =
        fs::temp_directory_path() / ("iomimic_indexed_binary_test_" + std::to_string(::getpid()) +
                                     "_" + std::to_string(counter++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

}  // namespace iomimic::indexed_binary::testing
