// A small thread-safe in-memory Storage for the decorators' unit tests: the
// layer under test is the decorator, not a file system. Not built into any
// plugin.

#pragma once

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "iomimic/iomimic.h"

namespace iomimic::decorator::testing {

class MemoryStorage final : public Storage {
 public:
  std::string name() const override { return "memory"; }
  StorageCapabilities capabilities() const override {
    StorageCapabilities caps;
    caps.data_path = "memory";
    return caps;
  }

  Result<std::unique_ptr<File>> Open(const std::string& path, const OpenOptions& options) override {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = files_.find(path);
    if (options.mode == OpenMode::kRead && it == files_.end()) {
      return Status::NotFound("open " + path + ": No such file or directory");
    }
    if (it == files_.end() || options.mode == OpenMode::kWrite) {
      files_[path] = std::make_shared<FileContent>();
      it = files_.find(path);
    }
    return std::unique_ptr<File>(new MemoryFile(path, it->second));
  }
  Status CreateDirectories(const std::string& path) override {
    std::lock_guard<std::mutex> lock(mutex_);
    directories_.insert(path);
    return Status::OK();
  }
  Status Remove(const std::string& path) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (files_.erase(path) == 0) return Status::NotFound("unlink " + path + ": No such file");
    return Status::OK();
  }
  Status Rename(const std::string& from, const std::string& to) override {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = files_.find(from);
    if (it == files_.end()) return Status::NotFound("rename " + from + ": No such file");
    files_[to] = it->second;
    files_.erase(from);
    return Status::OK();
  }
  Result<FileInfo> Stat(const std::string& path) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (directories_.count(path) != 0) return FileInfo{0, true};
    auto it = files_.find(path);
    if (it == files_.end()) return Status::NotFound("stat " + path + ": No such file");
    std::lock_guard<std::mutex> content_lock(it->second->mutex);
    return FileInfo{it->second->bytes.size(), false};
  }

  // Test helper: the content of `path` (empty when missing).
  std::vector<std::byte> Content(const std::string& path) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = files_.find(path);
    if (it == files_.end()) return {};
    std::lock_guard<std::mutex> content_lock(it->second->mutex);
    return it->second->bytes;
  }

 private:
  struct FileContent {
    std::mutex mutex;
    std::vector<std::byte> bytes;
  };

  class MemoryFile final : public File {
   public:
    MemoryFile(std::string path, std::shared_ptr<FileContent> content)
        : path_(std::move(path)), content_(std::move(content)) {}
    Result<std::size_t> ReadAt(std::uint64_t offset, std::span<std::byte> destination) override {
      if (closed_) return Status::InvalidArgument(path_ + ": read on a closed file");
      std::lock_guard<std::mutex> lock(content_->mutex);
      if (offset >= content_->bytes.size()) return std::size_t{0};
      const std::size_t n =
          std::min<std::size_t>(destination.size(), content_->bytes.size() - offset);
      if (n > 0) std::memcpy(destination.data(), content_->bytes.data() + offset, n);
      return n;
    }
    Status WriteAt(std::uint64_t offset, std::span<const std::byte> source) override {
      if (closed_) return Status::InvalidArgument(path_ + ": write on a closed file");
      std::lock_guard<std::mutex> lock(content_->mutex);
      if (content_->bytes.size() < offset + source.size())
        content_->bytes.resize(offset + source.size());
      std::memcpy(content_->bytes.data() + offset, source.data(), source.size());
      return Status::OK();
    }
    Status Sync() override { return Status::OK(); }
    Result<std::uint64_t> Size() override {
      std::lock_guard<std::mutex> lock(content_->mutex);
      return static_cast<std::uint64_t>(content_->bytes.size());
    }
    Status Close() override {
      closed_ = true;
      return Status::OK();
    }
    const std::string& path() const override { return path_; }

   private:
    std::string path_;
    std::shared_ptr<FileContent> content_;
    bool closed_ = false;
  };

  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<FileContent>> files_;
  std::set<std::string> directories_;
};

}  // namespace iomimic::decorator::testing
