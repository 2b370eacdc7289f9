// `memory`: a storage back end that keeps files in the process's memory.
//
// An example of a third-party plugin (it includes only the SDK), and a tool:
// with it a run measures the pipeline and the format's cost without any
// storage underneath. Files live as long as the run (generate and train in
// one invocation); a byte budget bounds what it may hold.
//
// Folders written as mem://... are its own (the descriptor's schemes).
// It keeps its own namespace, as a file system does: folders exist once
// CreateDirectories made them (with their parents), a file can only be
// created in an existing folder, and a closed File refuses further calls.
// It passes the storage conformance suite (`iomimic conformance`,
// docs/plugins.md).

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <vector>

#include "iomimic/iomimic.h"

namespace {

using iomimic::Result;
using iomimic::Status;

// The plugin's name and the URL scheme it serves: what a manifest selects it
// by (storage.backend: memory, or a folder written mem://...).
constexpr char kName[] = "memory";
constexpr char kScheme[] = "mem";

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
    if (closed_) return Closed("read");
    std::shared_lock lock(blob_->mutex);
    if (offset >= blob_->bytes.size()) return std::size_t{0};
    std::size_t n = std::min<std::size_t>(dst.size(), blob_->bytes.size() - offset);
    std::copy_n(blob_->bytes.begin() + static_cast<std::ptrdiff_t>(offset), n, dst.begin());
    return n;
  }
  Status WriteAt(std::uint64_t offset, std::span<const std::byte> src) override;
  Status Sync() override { return closed_ ? Closed("sync") : Status::OK(); }
  Result<std::uint64_t> Size() override {
    if (closed_) return Closed("size");
    std::shared_lock lock(blob_->mutex);
    return static_cast<std::uint64_t>(blob_->bytes.size());
  }
  // A second Close is harmless; every other call on a closed file fails.
  Status Close() override {
    closed_ = true;
    return Status::OK();
  }
  const std::string& path() const override { return path_; }

 private:
  Status Closed(const char* what) const {
    return Status::IOError(std::string(what) + " " + path_ + ": the file is closed");
  }

  std::shared_ptr<Blob> blob_;
  std::string path_;
  MemoryStorage* owner_;
  bool closed_ = false;  // a File is used by one thread at a time
};

class MemoryStorage final : public iomimic::Storage {
 public:
  explicit MemoryStorage(std::uint64_t budget) : budget_(budget) {}
  std::string name() const override { return kName; }
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
    } else if (it == files_.end() && !IsFolder(Parent(path))) {
      return Status::NotFound("open " + path + ": no such folder in memory");
    } else if (it == files_.end() || options.mode == iomimic::OpenMode::kWrite) {
      if (it != files_.end()) used_ -= it->second->bytes.size();
      it = files_.insert_or_assign(path, std::make_shared<Blob>()).first;
    }
    return std::unique_ptr<iomimic::File>(new MemoryFile(it->second, path, this));
  }
  // Creates `path` and every missing parent.
  Status CreateDirectories(const std::string& path) override {
    std::lock_guard lock(mutex_);
    for (std::string p = Normal(path); !p.empty(); p = Parent(p)) {
      if (files_.count(p) != 0) return Status::AlreadyExists("mkdir " + p + ": a file is there");
      folders_.insert(p);
    }
    return Status::OK();
  }
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
    if (it != files_.end()) {
      std::shared_lock blob_lock(it->second->mutex);
      return iomimic::FileInfo{it->second->bytes.size(), false};
    }
    if (IsFolder(Normal(path))) return iomimic::FileInfo{0, true};
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
  // "/a/b/" -> "/a/b"; the root stays "/".
  static std::string Normal(std::string path) {
    while (path.size() > 1 && path.back() == '/') path.pop_back();
    return path;
  }
  // "/a/b" -> "/a", "/a" -> "/", "a" -> "" (relative paths have no parent).
  static std::string Parent(const std::string& path) {
    if (path == "/") return "";
    const std::size_t slash = path.find_last_of('/');
    if (slash == std::string::npos) return "";
    return slash == 0 ? "/" : path.substr(0, slash);
  }
  // Called with mutex_ held. The root and the current folder always exist.
  bool IsFolder(const std::string& path) const {
    return path.empty() || path == "/" || folders_.count(path) != 0;
  }

  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<Blob>> files_;
  std::set<std::string> folders_;
  std::uint64_t budget_;
  std::uint64_t used_ = 0;
};

Status MemoryFile::WriteAt(std::uint64_t offset, std::span<const std::byte> src) {
  if (closed_) return Closed("write");
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

// It serves mem:// folders: a manifest's dataset.data_folder (or
// storage.storage_root, checkpoint.checkpoint_folder) written as
// "mem://bucket/data" selects this plugin, as "s3://" selects the bundled
// object back end, with no change to the core; the plugin sees the path after
// "mem://" (docs/plugins.md, "URL schemes").
IOMIMIC_DEFINE_STORAGE_PLUGIN_SERVING(kName, kScheme, "1.0.0",
                                      "files kept in process memory (example plugin)",
                                      IOMIMIC_CAP_NONE, kOptions, &Create);
