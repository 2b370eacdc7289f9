// iomimic plugin SDK, for tests: the in-memory Storage of unit tests where
// the layer under test sits above the storage (formats, decorators) rather
// than being a file system, and one of the back ends the format conformance
// suite writes through (tests/conformance/format_conformance_test.cpp).
// Header-only, thread-safe; not for production use (the bundled example
// examples/memory_storage is a real back end).
//
// Beside the Storage contract it lets a test look inside: the bytes of a
// file (Bytes, Text, SetBytes), which paths exist, how many files are open,
// a log of every read and write request, the folders asked for, and
// injected failures (CreateDirectories, the next reads, writes past a byte
// budget). Folders are not enforced: a file
// may be opened for writing under a folder nobody created.

#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "iomimic/iomimic.h"

namespace iomimic::testing {

// One request a MemoryStorage file served, in the order they came.
struct StorageRequest {
  bool write = false;
  std::string path;
  std::uint64_t offset = 0;
  std::size_t length = 0;    // bytes requested
  std::size_t returned = 0;  // bytes a read returned (a write: length)
};

class MemoryStorage : public Storage {
 public:
  using Request = StorageRequest;

  std::string name() const override { return "memory"; }
  StorageCapabilities capabilities() const override {
    StorageCapabilities caps;
    caps.data_path = "memory";
    caps.alignment = alignment_;
    return caps;
  }

  // kRead: kNotFound naming the path when missing. kWrite empties an
  // existing file in place (handles already open see it empty); kReadWrite
  // keeps it. Each open counts in opens() and, until closed or destroyed, in
  // open_files().
  Result<std::unique_ptr<File>> Open(const std::string& path, const OpenOptions& options) override {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = files_.find(path);
    if (options.mode == OpenMode::kRead) {
      if (it == files_.end()) return Status::NotFound("open " + path + ": No such file");
    } else if (it == files_.end()) {
      it = files_.emplace(path, std::make_shared<Blob>()).first;
    } else if (options.mode == OpenMode::kWrite) {
      std::lock_guard<std::mutex> content_lock(it->second->mutex);
      it->second->bytes.clear();
    }
    ++opens_;
    ++open_files_;
    return std::unique_ptr<File>(new MemoryFile(this, path, it->second));
  }
  // Records the folder (directories()); fails when set_fail_mkdir(true).
  Status CreateDirectories(const std::string& path) override {
    std::lock_guard<std::mutex> lock(mutex_);
    directories_.push_back(path);
    return fail_mkdir_ ? Status::IOError("mkdir " + path + ": refused by the test") : Status::OK();
  }
  Status Remove(const std::string& path) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (files_.erase(path) == 0) return Status::NotFound("unlink " + path + ": No such file");
    return Status::OK();
  }
  Status Rename(const std::string& from, const std::string& to) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!fail_rename_to_.empty() && to.find(fail_rename_to_) != std::string::npos) {
      return Status::IOError("rename " + from + " to " + to + ": injected failure");
    }
    auto it = files_.find(from);
    if (it == files_.end()) return Status::NotFound("rename " + from + ": No such file");
    std::shared_ptr<Blob> content = it->second;
    files_.erase(it);
    files_[to] = std::move(content);
    return Status::OK();
  }
  // A file, or a folder that was created or holds a file.
  Result<FileInfo> Stat(const std::string& path) override {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = files_.find(path);
    if (it != files_.end()) {
      std::lock_guard<std::mutex> content_lock(it->second->mutex);
      return FileInfo{it->second->bytes.size(), false};
    }
    const std::string prefix = path + "/";
    for (const std::string& d : directories_) {
      if (d == path || d.rfind(prefix, 0) == 0) return FileInfo{0, true};
    }
    auto below = files_.lower_bound(prefix);
    if (below != files_.end() && below->first.rfind(prefix, 0) == 0) return FileInfo{0, true};
    return Status::NotFound("stat " + path + ": No such file");
  }

  // Test helpers.

  bool Has(const std::string& path) {
    std::lock_guard<std::mutex> lock(mutex_);
    return files_.count(path) != 0;
  }
  bool Exists(const std::string& path) { return Has(path); }
  std::vector<std::string> Paths() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::string> out;
    for (const auto& entry : files_) out.push_back(entry.first);
    return out;
  }
  // The content of `path` (empty when missing).
  std::vector<std::byte> Bytes(const std::string& path) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = files_.find(path);
    if (it == files_.end()) return {};
    std::lock_guard<std::mutex> content_lock(it->second->mutex);
    return it->second->bytes;
  }
  std::vector<std::byte> Content(const std::string& path) { return Bytes(path); }
  std::string Text(const std::string& path) {
    const std::vector<std::byte> b = Bytes(path);
    return std::string(reinterpret_cast<const char*>(b.data()), b.size());
  }
  // Creates or replaces `path`'s content (open handles see the new bytes).
  void SetBytes(const std::string& path, std::vector<std::byte> bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::shared_ptr<Blob>& content = files_[path];
    if (!content) content = std::make_shared<Blob>();
    std::lock_guard<std::mutex> content_lock(content->mutex);
    content->bytes = std::move(bytes);
  }
  // The request log: off until SetLogging(true), which also clears it.
  void SetLogging(bool on) {
    std::lock_guard<std::mutex> lock(log_mutex_);
    logging_ = on;
    log_.clear();
  }
  std::vector<Request> TakeLog() {
    std::lock_guard<std::mutex> lock(log_mutex_);
    return std::exchange(log_, {});
  }
  std::vector<std::string> directories() {
    std::lock_guard<std::mutex> lock(mutex_);
    return directories_;
  }
  void set_fail_mkdir(bool fail) { fail_mkdir_ = fail; }
  // Makes the next `count` reads of any file fail with kIOError naming the
  // path and offset ("injected failure"); failed reads are not logged.
  void FailReads(int count) { fail_reads_ = count; }
  // Makes writes fail with kResourceExhausted (as ENOSPC) once `bytes` more
  // bytes have been written; -1: never (the default).
  void FailWritesAfter(std::int64_t bytes) { write_budget_ = bytes; }
  // Makes every write to a path containing `fragment` fail with kIOError
  // (after it is logged); "" stops it.
  void FailWritesTo(std::string fragment) {
    std::lock_guard<std::mutex> lock(mutex_);
    fail_writes_to_ = std::move(fragment);
  }
  // Makes every Rename to a path containing `fragment` fail; "" stops it.
  void FailRenameTo(std::string fragment) {
    std::lock_guard<std::mutex> lock(mutex_);
    fail_rename_to_ = std::move(fragment);
  }
  // The alignment capabilities() reports (a power of two; 1 by default).
  void set_alignment(std::size_t alignment) { alignment_ = alignment; }
  int open_files() const { return open_files_; }
  int opens() const { return opens_; }

 private:
  struct Blob {
    std::mutex mutex;
    std::vector<std::byte> bytes;
  };

  void Log(Request r) {
    std::lock_guard<std::mutex> lock(log_mutex_);
    if (logging_) log_.push_back(std::move(r));
  }
  bool FailsWritesTo(const std::string& path) {
    std::lock_guard<std::mutex> lock(mutex_);
    return !fail_writes_to_.empty() && path.find(fail_writes_to_) != std::string::npos;
  }
  bool TakeReadFailure() {
    int left = fail_reads_.load();
    while (left > 0) {
      if (fail_reads_.compare_exchange_weak(left, left - 1)) return true;
    }
    return false;
  }
  bool TakeWriteBudget(std::size_t n) {
    std::int64_t budget = write_budget_.load();
    while (budget >= 0) {
      if (static_cast<std::int64_t>(n) > budget) return false;
      if (write_budget_.compare_exchange_weak(budget, budget - static_cast<std::int64_t>(n))) {
        return true;
      }
    }
    return true;
  }

  // A handle on a file's content. After Close every call but Close fails
  // with an error naming the path; a second Close is harmless.
  class MemoryFile final : public File {
   public:
    MemoryFile(MemoryStorage* owner, std::string path, std::shared_ptr<Blob> content)
        : owner_(owner), path_(std::move(path)), content_(std::move(content)) {}
    ~MemoryFile() override {
      if (!closed_) --owner_->open_files_;
    }
    Result<std::size_t> ReadAt(std::uint64_t offset, std::span<std::byte> destination) override {
      if (closed_) return Closed("read");
      if (owner_->TakeReadFailure()) {
        return Status::IOError("pread " + path_ + " at offset " + std::to_string(offset) +
                               ": injected failure");
      }
      std::size_t n = 0;
      {
        std::lock_guard<std::mutex> lock(content_->mutex);
        if (offset < content_->bytes.size()) {
          n = std::min<std::size_t>(destination.size(),
                                    content_->bytes.size() - static_cast<std::size_t>(offset));
          if (n > 0) std::memcpy(destination.data(), content_->bytes.data() + offset, n);
        }
      }
      owner_->Log({false, path_, offset, destination.size(), n});
      return n;
    }
    Status WriteAt(std::uint64_t offset, std::span<const std::byte> source) override {
      if (closed_) return Closed("write");
      if (!owner_->TakeWriteBudget(source.size())) {
        return Status::ResourceExhausted("pwrite " + path_ + " at offset " +
                                         std::to_string(offset) +
                                         ": no space left on device (injected)");
      }
      owner_->Log({true, path_, offset, source.size(), source.size()});
      if (owner_->FailsWritesTo(path_)) {
        return Status::IOError("pwrite " + path_ + " at offset " + std::to_string(offset) +
                               ": injected failure");
      }
      std::lock_guard<std::mutex> lock(content_->mutex);
      if (content_->bytes.size() < offset + source.size()) {
        content_->bytes.resize(offset + source.size());
      }
      if (!source.empty())
        std::memcpy(content_->bytes.data() + offset, source.data(), source.size());
      return Status::OK();
    }
    Status Sync() override { return closed_ ? Closed("sync") : Status::OK(); }
    Result<std::uint64_t> Size() override {
      if (closed_) return Closed("size");
      std::lock_guard<std::mutex> lock(content_->mutex);
      return static_cast<std::uint64_t>(content_->bytes.size());
    }
    Status Close() override {
      if (!closed_) --owner_->open_files_;
      closed_ = true;
      return Status::OK();
    }
    const std::string& path() const override { return path_; }

   private:
    Status Closed(const char* what) const {
      return Status::IOError(std::string(what) + " " + path_ + ": the file is closed");
    }

    MemoryStorage* owner_;
    std::string path_;
    std::shared_ptr<Blob> content_;
    bool closed_ = false;
  };

  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<Blob>> files_;
  std::vector<std::string> directories_;
  std::atomic<bool> fail_mkdir_{false};
  std::atomic<std::size_t> alignment_{1};
  std::string fail_writes_to_;
  std::string fail_rename_to_;
  std::atomic<int> fail_reads_{0};
  std::atomic<std::int64_t> write_budget_{-1};
  std::mutex log_mutex_;
  bool logging_ = false;
  std::vector<Request> log_;
  std::atomic<int> open_files_{0};
  std::atomic<int> opens_{0};
};

}  // namespace iomimic::testing
