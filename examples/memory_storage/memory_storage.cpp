// `memory`: a storage back end that keeps files in the process's memory.
//
// An example of a third-party plugin (it includes only the SDK), and a tool:
// with it a run measures the pipeline and the format's cost without any
// storage underneath. Files live as long as the run (generate and train in
// one invocation); a byte budget bounds what it may hold.

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <vector>

#include "iomimic/iomimic.h"

namespace {

using iomimic::Result;
using iomimic::Status;

struct Blob {
  std::shared_mutex mutex;
  std::vector<std::byte> bytes;
};

class MemoryStorage;

class MemoryFile final : public iomimic::File {
 public:
  MemoryFile(std::shared_ptr<Blob> blob, std::string path, MemoryStorage* owner)
      : blob_(std::move(blob)), path_(std::move(path)), owner_(owner) {}
  Result<std::size_t> ReadAt(std::uint64_t offset, std::span<std::byte> dst) override {
    std::shared_lock lock(blob_->mutex);
    if (offset >= blob_->bytes.size()) return std::size_t{0};
    std::size_t n = std::min<std::size_t>(dst.size(), blob_->bytes.size() - offset);
    std::copy_n(blob_->bytes.begin() + static_cast<std::ptrdiff_t>(offset), n, dst.begin());
    return n;
  }
  Status WriteAt(std::uint64_t offset, std::span<const std::byte> src) override;
  Status Sync() override { return Status::OK(); }
  Result<std::uint64_t> Size() override {
    std::shared_lock lock(blob_->mutex);
    return static_cast<std::uint64_t>(blob_->bytes.size());
  }
  Status Close() override { return Status::OK(); }
  const std::string& path() const override { return path_; }

 private:
  std::shared_ptr<Blob> blob_;
  std::string path_;
  MemoryStorage* owner_;
};

class MemoryStorage final : public iomimic::Storage {
 public:
  explicit MemoryStorage(std::uint64_t budget) : budget_(budget) {}
  std::string name() const override { return "memory"; }
  iomimic::StorageCapabilities capabilities() const override {
    iomimic::StorageCapabilities caps;
    caps.data_path = "memory";
    return caps;
  }
  Result<std::unique_ptr<iomimic::File>> Open(const std::string& path,
                                              const iomimic::OpenOptions& options) override {
    std::lock_guard lock(mutex_);
    auto it = files_.find(path);
    if (options.mode == iomimic::OpenMode::kRead) {
      if (it == files_.end()) return Status::NotFound("open " + path + ": no such file in memory");
    } else if (it == files_.end() || options.mode == iomimic::OpenMode::kWrite) {
      if (it != files_.end()) used_ -= it->second->bytes.size();
      it = files_.insert_or_assign(path, std::make_shared<Blob>()).first;
    }
    return std::unique_ptr<iomimic::File>(new MemoryFile(it->second, path, this));
  }
  Status CreateDirectories(const std::string&) override { return Status::OK(); }
  Status Remove(const std::string& path) override {
    std::lock_guard lock(mutex_);
    auto it = files_.find(path);
    if (it == files_.end()) return Status::NotFound("remove " + path + ": no such file");
    used_ -= it->second->bytes.size();
    files_.erase(it);
    return Status::OK();
  }
  Status Rename(const std::string& from, const std::string& to) override {
    std::lock_guard lock(mutex_);
    auto it = files_.find(from);
    if (it == files_.end()) return Status::NotFound("rename " + from + ": no such file");
    auto blob = it->second;
    files_.erase(it);
    files_[to] = blob;
    return Status::OK();
  }
  Result<iomimic::FileInfo> Stat(const std::string& path) override {
    std::lock_guard lock(mutex_);
    auto it = files_.find(path);
    if (it != files_.end()) return iomimic::FileInfo{it->second->bytes.size(), false};
    // A folder exists when some file lies under it.
    auto below = files_.lower_bound(path + "/");
    if (below != files_.end() && below->first.rfind(path + "/", 0) == 0) {
      return iomimic::FileInfo{0, true};
    }
    return Status::NotFound("stat " + path + ": no such file in memory");
  }
  // Accounts for growth; fails when the budget would be exceeded.
  Status Grow(std::uint64_t bytes) {
    std::lock_guard lock(mutex_);
    if (used_ + bytes > budget_) {
      return Status::ResourceExhausted("memory storage budget of " + std::to_string(budget_) +
                                       " bytes exceeded");
    }
    used_ += bytes;
    return Status::OK();
  }

 private:
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<Blob>> files_;
  std::uint64_t budget_;
  std::uint64_t used_ = 0;
};

Status MemoryFile::WriteAt(std::uint64_t offset, std::span<const std::byte> src) {
  std::unique_lock lock(blob_->mutex);
  std::uint64_t end = offset + src.size();
  if (end > blob_->bytes.size()) {
    IOMIMIC_RETURN_IF_ERROR(owner_->Grow(end - blob_->bytes.size()).WithContext("write " + path_));
    blob_->bytes.resize(end);
  }
  std::copy(src.begin(), src.end(), blob_->bytes.begin() + static_cast<std::ptrdiff_t>(offset));
  return Status::OK();
}

Result<std::unique_ptr<iomimic::Storage>> Create(const iomimic::PluginContext& ctx) {
  IOMIMIC_ASSIGN_OR_RETURN(std::uint64_t budget, ctx.options.GetBytes("budget", 4ULL << 30));
  return std::unique_ptr<iomimic::Storage>(new MemoryStorage(budget));
}

const IomimicOptionSpec kOptions[] = {
    {"budget", "bytes", "4G", "most bytes the in-memory files may hold"},
};

}  // namespace

IOMIMIC_DEFINE_STORAGE_PLUGIN("memory", "1.0.0", "files kept in process memory (example plugin)",
                              IOMIMIC_CAP_NONE, kOptions, &Create);
