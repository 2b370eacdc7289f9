#include "shard_cache_storage.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <system_error>
#include <utility>

#include "iomimic/file_system.h"
#include "iomimic/posix_io.h"

namespace iomimic::shard_cache {

// The descriptor's flags, and what capabilities() may claim.
constexpr std::uint64_t kCapabilities = IOMIMIC_CAP_DECORATOR;

namespace {

// Local names: the remote path's hash, then its base name (for people
// looking at the folder), at most this long.
constexpr std::size_t kMaxBaseName = 80;

std::uint64_t Fnv1a(std::string_view text) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

// A File over the local copy of a cached file: pread of a descriptor opened
// read-only; writes are refused. Close hands the copy back to the cache.
class CachedFile final : public File {
 public:
  CachedFile(int fd, std::string path, std::uint64_t size, ShardCacheStorage* cache,
             std::uint64_t generation)
      : fd_(fd), path_(std::move(path)), size_(size), cache_(cache), generation_(generation) {}
  ~CachedFile() override { (void)Close(); }

  Result<std::size_t> ReadAt(std::uint64_t offset, std::span<std::byte> destination) override {
    if (fd_ < 0) return Status::InvalidArgument(path_ + ": read on a closed file");
    return PreadFull(fd_, destination, offset, path_, PreadEnd{size_}, " (shard cache copy)");
  }
  Status WriteAt(std::uint64_t offset, std::span<const std::byte> source) override {
    (void)source;
    if (fd_ < 0) return Status::InvalidArgument(path_ + ": write on a closed file");
    return Status::InvalidArgument(path_ + ": write at offset " + std::to_string(offset) +
                                   " on a file opened for reading");
  }
  Status Sync() override {
    if (fd_ < 0) return Status::InvalidArgument(path_ + ": sync on a closed file");
    return Status::OK();
  }
  Result<std::uint64_t> Size() override {
    if (fd_ < 0) return Status::InvalidArgument(path_ + ": size of a closed file");
    return size_;
  }
  Status Close() override {
    if (fd_ < 0) return Status::OK();
    ::close(fd_);
    fd_ = -1;
    cache_->Release(path_, generation_);
    return Status::OK();
  }
  const std::string& path() const override { return path_; }

 private:
  int fd_;
  std::string path_;
  std::uint64_t size_;
  ShardCacheStorage* cache_;
  std::uint64_t generation_;
};

// A file the wrapped back end opened for writing: the cached copy of its
// path is dropped when it is opened (by the storage) and again when it is
// closed or abandoned, so no reader keeps bytes older than the write.
class WritingFile final : public DecoratorFile<ShardCacheStorage> {
 public:
  using DecoratorFile::DecoratorFile;
  ~WritingFile() override {
    if (!done_) storage().Invalidate(path());
  }

  Status Close() override {
    Status s = inner().Close();
    Done();
    return s;
  }
  Status Abort() override {
    Status s = inner().Abort();
    Done();
    return s;
  }

 private:
  void Done() {
    if (done_) return;
    done_ = true;
    storage().Invalidate(path());
  }
  bool done_ = false;
};

}  // namespace

Result<ShardCacheOptions> ParseOptions(const PluginOptions& opts) {
  ShardCacheOptions out;
  const std::string owner =
      opts.owner().empty() ? std::string("storage plugin 'shard_cache'") : opts.owner();
  IOMIMIC_ASSIGN_OR_RETURN(out.cache_dir, opts.GetString("cache_dir", out.cache_dir));
  if (out.cache_dir.empty()) {
    return Status::InvalidArgument(owner + ": option 'cache_dir' is empty");
  }
  IOMIMIC_ASSIGN_OR_RETURN(out.capacity, opts.GetBytes("capacity", out.capacity));
  if (out.capacity == 0) {
    return Status::InvalidArgument(owner + ": option 'capacity' must be more than 0 bytes");
  }
  IOMIMIC_ASSIGN_OR_RETURN(out.download_size, opts.GetBytes("download_size", out.download_size));
  if (out.download_size == 0 || out.download_size > (std::uint64_t{1} << 30)) {
    return Status::InvalidArgument(owner + ": option 'download_size' must be 1 byte to 1G");
  }
  IOMIMIC_ASSIGN_OR_RETURN(out.report, opts.GetBool("report", false));
  IOMIMIC_ASSIGN_OR_RETURN(out.keep, opts.GetBool("keep", false));
  return out;
}

ShardCacheStorage::ShardCacheStorage(Storage* inner, const ShardCacheOptions& options)
    : ForwardingStorage(inner),
      options_(options),
      folder_(options.cache_dir + "/rank" + std::to_string(options.rank) + "-" +
              std::to_string(::getpid())) {
  // Every run starts cold: a folder of its own (a process of the same id
  // that left one behind is long gone), so that processes sharing cache_dir
  // never touch each other's files.
  std::error_code ec;
  std::filesystem::remove_all(folder_, ec);
}

ShardCacheStorage::~ShardCacheStorage() {
  if (options_.report) std::fprintf(stderr, "%s\n", ReportLine().c_str());
  if (!options_.keep) {
    std::error_code ec;
    std::filesystem::remove_all(folder_, ec);
  }
}

StorageCapabilities ShardCacheStorage::capabilities() const {
  StorageCapabilities caps = inner().capabilities();
  const StorageCapabilities allowed = CapabilitiesAllowedBy(kCapabilities);
  caps.async = allowed.async;
  caps.collective = allowed.collective;
  caps.device_memory = allowed.device_memory;
  caps.shared_files = false;
  caps.queue_depth = 1;
  caps.data_path = "pread from the shard cache; downloads by " + caps.data_path;
  return caps;
}

Result<Buffer> ShardCacheStorage::Allocate(std::size_t size) {
  if (inner().capabilities().device_memory) return Storage::Allocate(size);
  return inner().Allocate(size);
}

Status ShardCacheStorage::CopyIntoBuffer(Buffer& destination, std::size_t offset,
                                         std::span<const std::byte> source) {
  if (inner().capabilities().device_memory) {
    return Storage::CopyIntoBuffer(destination, offset, source);
  }
  return inner().CopyIntoBuffer(destination, offset, source);
}

Status ShardCacheStorage::CopyOutOfBuffer(const Buffer& source, std::size_t offset,
                                          std::span<std::byte> destination) {
  if (inner().capabilities().device_memory) {
    return Storage::CopyOutOfBuffer(source, offset, destination);
  }
  return inner().CopyOutOfBuffer(source, offset, destination);
}

std::string ShardCacheStorage::LocalName(const std::string& path) {
  std::string base = path.substr(path.rfind('/') + 1);
  if (base.size() > kMaxBaseName) base.resize(kMaxBaseName);
  for (char& c : base) {
    if (c == '/' || c == '\0') c = '_';
  }
  char hash[32];
  std::snprintf(hash, sizeof(hash), "%016llx-%llu-", static_cast<unsigned long long>(Fnv1a(path)),
                static_cast<unsigned long long>(next_name_++));
  return folder_ + "/" + hash + base;
}

bool ShardCacheStorage::MakeRoom(std::uint64_t size) {
  while (stats_.held_bytes + size > options_.capacity) {
    auto coldest = entries_.end();
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      const Entry& e = it->second;
      if (e.ready && e.open == 0 &&
          (coldest == entries_.end() || e.last_use < coldest->second.last_use)) {
        coldest = it;
      }
    }
    if (coldest == entries_.end()) return false;
    Drop(coldest->first, coldest->second, /*eviction=*/true);
    entries_.erase(coldest);
  }
  return true;
}

void ShardCacheStorage::Drop(const std::string& path, Entry& entry, bool eviction) {
  (void)path;
  (void)::unlink(entry.local.c_str());
  stats_.held_bytes -= entry.size;
  if (eviction) {
    ++stats_.evictions;
    stats_.evicted_bytes += entry.size;
  }
}

void ShardCacheStorage::Invalidate(const std::string& path) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(path);
  if (it == entries_.end()) return;
  if (it->second.ready && it->second.open == 0) {
    Drop(path, it->second, /*eviction=*/false);
  } else {
    retired_.emplace(it->second.generation, it->second);  // deleted on its last close
  }
  entries_.erase(it);
  downloaded_.notify_all();
}

void ShardCacheStorage::Release(const std::string& path, std::uint64_t generation) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(path);
  if (it != entries_.end() && it->second.generation == generation) {
    --it->second.open;
    it->second.last_use = ++clock_;
    return;
  }
  auto old = retired_.find(generation);
  if (old == retired_.end()) return;
  if (--old->second.open <= 0) {
    Drop(path, old->second, /*eviction=*/false);
    retired_.erase(old);
  }
}

Status ShardCacheStorage::Download(File& remote, const std::string& path, const std::string& local,
                                   std::uint64_t size) {
  const auto start = std::chrono::steady_clock::now();
  std::error_code ec;
  std::filesystem::create_directories(folder_, ec);
  if (ec) return Status::FromErrno(ec.value(), "shard_cache: mkdir -p " + folder_);
  const std::string partial = local + ".partial";
  const int fd = OpenRetrying(partial, O_WRONLY | O_CREAT | O_TRUNC);
  if (fd < 0) return Status::FromErrno(errno, "shard_cache: creating " + partial);
  const std::size_t chunk = static_cast<std::size_t>(
      std::min<std::uint64_t>(options_.download_size, std::max<std::uint64_t>(size, 1)));
  Status s;
  Result<Buffer> buffer = AllocateHostBuffer(inner(), chunk, "shard_cache");
  if (!buffer.ok()) s = buffer.status();
  for (std::uint64_t offset = 0; s.ok() && offset < size;) {
    const std::size_t want =
        static_cast<std::size_t>(std::min<std::uint64_t>(chunk, size - offset));
    Result<std::size_t> n = remote.ReadAt(offset, buffer->span().first(want));
    if (!n.ok()) {
      s = n.status().WithContext("shard_cache: downloading " + path);
    } else if (*n == 0) {
      s = Status::IOError("shard_cache: downloading " + path + ": the file ends at offset " +
                          std::to_string(offset) + " of the " + std::to_string(size) +
                          " bytes it had when opened");
    } else {
      s = PwriteFull(fd, buffer->span().first(*n), offset, partial);
      offset += *n;
    }
  }
  if (::close(fd) != 0 && s.ok()) s = Status::FromErrno(errno, "shard_cache: close " + partial);
  if (s.ok() && ::rename(partial.c_str(), local.c_str()) != 0) {
    s = Status::FromErrno(errno, "shard_cache: rename " + partial + " -> " + local);
  }
  if (!s.ok()) {
    (void)::unlink(partial.c_str());
    return s;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.downloads;
  stats_.download_bytes += size;
  stats_.download_seconds += seconds;
  return Status::OK();
}

Result<std::unique_ptr<File>> ShardCacheStorage::OpenCached(const std::string& path,
                                                            const Entry& entry) {
  const int fd = OpenRetrying(entry.local, O_RDONLY);
  if (fd < 0) {
    Status error = Status::FromErrno(
        errno, "shard_cache: opening the cached copy " + entry.local + " of " + path);
    Release(path, entry.generation);
    return error;
  }
  return Guard("shard_cache", "opening", path, [&]() -> Result<std::unique_ptr<File>> {
    return std::unique_ptr<File>(new CachedFile(fd, path, entry.size, this, entry.generation));
  });
}

Result<std::unique_ptr<File>> ShardCacheStorage::Open(const std::string& path,
                                                      const OpenOptions& options) {
  if (options.mode != OpenMode::kRead) {
    Invalidate(path);
    Result<std::unique_ptr<File>> file = inner().Open(path, options);
    if (!file.ok()) return file.status();
    return WrapIn<WritingFile>("shard_cache", std::move(file).value(), this);
  }
  bool waited = false;
  for (;;) {
    std::unique_lock<std::mutex> lock(mutex_);
    auto it = entries_.find(path);
    if (it != entries_.end()) {
      if (!it->second.ready) {
        // Another thread downloads it: wait for that (streaming's PREPARING).
        if (!waited) ++stats_.waits;
        waited = true;
        const std::uint64_t generation = it->second.generation;
        downloaded_.wait(lock, [&] {
          auto now = entries_.find(path);
          return now == entries_.end() || now->second.generation != generation || now->second.ready;
        });
        continue;
      }
      ++it->second.open;
      it->second.last_use = ++clock_;
      ++stats_.hits;
      const Entry entry = it->second;
      lock.unlock();
      return OpenCached(path, entry);
    }
    lock.unlock();
    // A miss: the file comes whole from the wrapped back end.
    OpenOptions remote_options = options;
    remote_options.hint = AccessHint::kSequential;
    Result<std::unique_ptr<File>> remote = inner().Open(path, remote_options);
    if (!remote.ok()) return remote.status();
    Result<std::uint64_t> size = (*remote)->Size();
    if (!size.ok()) return size.status().WithContext("shard_cache: size of " + path);
    lock.lock();
    if (entries_.count(path) != 0) continue;  // another thread started it meanwhile
    if (*size > options_.capacity) {
      return Status::ResourceExhausted("shard_cache: " + path + " (" + std::to_string(*size) +
                                       " bytes) does not fit the cache's capacity of " +
                                       std::to_string(options_.capacity) + " bytes");
    }
    if (!MakeRoom(*size)) {
      return Status::ResourceExhausted(
          "shard_cache: no room for " + path + " (" + std::to_string(*size) + " bytes): " +
          std::to_string(stats_.held_bytes) + " of the " + std::to_string(options_.capacity) +
          " bytes of the cache are held by files open or being downloaded (raise capacity)");
    }
    Entry entry;
    entry.local = LocalName(path);
    entry.size = *size;
    entry.open = 1;
    entry.last_use = ++clock_;
    entry.generation = ++next_generation_;
    entries_[path] = entry;
    stats_.held_bytes += entry.size;
    stats_.peak_bytes = std::max(stats_.peak_bytes, stats_.held_bytes);
    lock.unlock();

    Status s = Download(**remote, path, entry.local, entry.size);
    (void)(*remote)->Close();
    lock.lock();
    auto now = entries_.find(path);
    const bool current = now != entries_.end() && now->second.generation == entry.generation;
    if (!s.ok()) {
      if (current) {
        stats_.held_bytes -= entry.size;
        entries_.erase(now);
      } else {
        retired_.erase(entry.generation);
        stats_.held_bytes -= entry.size;
      }
      downloaded_.notify_all();
      return s;
    }
    if (current) {
      now->second.ready = true;
    } else {
      auto old = retired_.find(entry.generation);
      if (old != retired_.end()) old->second.ready = true;
    }
    downloaded_.notify_all();
    lock.unlock();
    return OpenCached(path, entry);
  }
}

Status ShardCacheStorage::Remove(const std::string& path) {
  Invalidate(path);
  return inner().Remove(path);
}

Status ShardCacheStorage::Rename(const std::string& from, const std::string& to) {
  Invalidate(from);
  Invalidate(to);
  return inner().Rename(from, to);
}

CacheStats ShardCacheStorage::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

std::vector<StorageStatistic> ShardCacheStorage::Statistics() const {
  std::vector<StorageStatistic> out = ForwardingStorage::Statistics();
  const CacheStats s = stats();
  out.push_back({"shard_cache_downloads", static_cast<double>(s.downloads)});
  out.push_back({"shard_cache_download_bytes", static_cast<double>(s.download_bytes)});
  out.push_back({"shard_cache_download_seconds", s.download_seconds});
  out.push_back({"shard_cache_hits", static_cast<double>(s.hits)});
  out.push_back({"shard_cache_waits", static_cast<double>(s.waits)});
  out.push_back({"shard_cache_evictions", static_cast<double>(s.evictions)});
  out.push_back({"shard_cache_evicted_bytes", static_cast<double>(s.evicted_bytes)});
  out.push_back({"shard_cache_peak_bytes", static_cast<double>(s.peak_bytes)});
  out.push_back({"shard_cache_capacity_bytes", static_cast<double>(options_.capacity)});
  return out;
}

std::string ShardCacheStorage::ReportLine() const {
  const CacheStats s = stats();
  char text[768];
  std::snprintf(text, sizeof(text),
                "iomimic: shard_cache: rank %d: downloaded %llu files, %llu bytes in %.6f s "
                "from %s; %llu hits, %llu waits for a download; %llu evictions (%llu bytes); "
                "peak %llu of %llu bytes in %s",
                options_.rank, static_cast<unsigned long long>(s.downloads),
                static_cast<unsigned long long>(s.download_bytes), s.download_seconds,
                inner().name().c_str(), static_cast<unsigned long long>(s.hits),
                static_cast<unsigned long long>(s.waits),
                static_cast<unsigned long long>(s.evictions),
                static_cast<unsigned long long>(s.evicted_bytes),
                static_cast<unsigned long long>(s.peak_bytes),
                static_cast<unsigned long long>(options_.capacity), folder_.c_str());
  return text;
}

Result<std::unique_ptr<Storage>> CreateShardCacheStorage(const PluginContext& context) {
  return CreateDecorator<ShardCacheStorage>(
      "shard_cache", context, [&](const PluginOptions& options) -> Result<ShardCacheOptions> {
        IOMIMIC_ASSIGN_OR_RETURN(ShardCacheOptions parsed, ParseOptions(options));
        parsed.rank = context.rank;
        return parsed;
      });
}

}  // namespace iomimic::shard_cache

namespace {
const IomimicOptionSpec kShardCacheOptions[] = {
    {"cache_dir", "string", "/tmp/iomimic-shard-cache",
     "local folder of the cache (this rank's files in <cache_dir>/rank<rank>-<pid>)"},
    {"capacity", "bytes", "4G", "most bytes the cache holds; least recently used files go first"},
    {"download_size", "bytes", "8M", "bytes per read of a download from the wrapped back end"},
    {"report", "bool", "false", "one statistics line per rank on stderr at the end"},
    {"keep", "bool", "false", "leave the cached files in cache_dir at the end"},
};
}  // namespace

IOMIMIC_DEFINE_STORAGE_PLUGIN("shard_cache", "1.0.0",
                              "decorator: downloads each file read whole into a local cache "
                              "folder with a capacity and LRU eviction, then reads it there "
                              "(mosaicml/streaming's shard cache)",
                              iomimic::shard_cache::kCapabilities, kShardCacheOptions,
                              &iomimic::shard_cache::CreateShardCacheStorage,
                              "inner=posix,capacity=64M");
