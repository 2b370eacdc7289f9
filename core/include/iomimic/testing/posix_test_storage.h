// iomimic plugin SDK, for tests: a plain POSIX storage and a temporary
// folder, so a plugin's unit tests can write and read real files without the
// core (the `posix` plugin itself lives behind the loader). Header-only; not
// for production use: no hints, no preallocation, no options.

#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <utility>

#include "iomimic/file_system.h"
#include "iomimic/posix_io.h"
#include "iomimic/storage.h"

namespace iomimic::testing {

namespace fs = std::filesystem;

// A file opened by PosixStorage: whole pread/pwrite transfers (posix_io.h).
class PosixFile final : public File {
 public:
  PosixFile(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~PosixFile() override {
    if (fd_ >= 0) ::close(fd_);
  }
  Result<std::size_t> ReadAt(std::uint64_t offset, std::span<std::byte> destination) override {
    return PreadFull(fd_, destination, offset, path_);
  }
  Status WriteAt(std::uint64_t offset, std::span<const std::byte> source) override {
    return PwriteFull(fd_, source, offset, path_);
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

// Opens files with open(2); metadata from FileSystemStorage.
class PosixStorage final : public FileSystemStorage {
 public:
  std::string name() const override { return "posix-test"; }
  StorageCapabilities capabilities() const override {
    StorageCapabilities c;
    c.data_path = "pread";
    return c;
  }
  Result<std::unique_ptr<File>> Open(const std::string& path, const OpenOptions& options) override {
    const int fd = OpenRetrying(path, OpenFlags(options.mode));
    if (fd < 0) return Status::FromErrno(errno, "open " + path);
    return std::unique_ptr<File>(std::make_unique<PosixFile>(fd, path));
  }
};

// A temporary directory removed at scope exit.
class TempDir {
 public:
  TempDir() : TempDir("plugin") {}
  explicit TempDir(const std::string& tag) {
    static std::atomic<int> counter{0};
    path_ = fs::temp_directory_path() / ("iomimic_" + tag + "_test_" + std::to_string(::getpid()) +
                                         "_" + std::to_string(counter++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }
  // Writes `text` to the file `relative` below the folder, creating the
  // folders on its way.
  void Write(const fs::path& relative, const std::string& text) const {
    fs::create_directories((path_ / relative).parent_path());
    std::ofstream(path_ / relative) << text;
  }

 private:
  fs::path path_;
};

}  // namespace iomimic::testing
