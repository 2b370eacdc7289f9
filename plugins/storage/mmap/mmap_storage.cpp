#include "mmap_storage.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <new>
#include <system_error>
#include <utility>

#include "iomimic/guard.h"
#include "iomimic/posix_io.h"

namespace iomimic::mmap {

// The descriptor's flags, and what capabilities() may claim (copies from mappings: nothing beyond
// the defaults).
constexpr std::uint64_t kCapabilities = IOMIMIC_CAP_NONE;
namespace {

constexpr int kNoAdvice = -1;

template <typename F>
auto Guarded(const char* what, const std::string& path, F&& body) -> decltype(body()) {
  return Guard("mmap", what, path, std::forward<F>(body));
}

int AdviceFor(const std::string& advice, AccessHint hint) {
  if (advice == "normal") return MADV_NORMAL;
  if (advice == "sequential") return MADV_SEQUENTIAL;
  if (advice == "random") return MADV_RANDOM;
  if (advice == "willneed") return MADV_WILLNEED;
  switch (hint) {  // auto
    case AccessHint::kSequential:
      return MADV_SEQUENTIAL;
    case AccessHint::kRandom:
      return MADV_RANDOM;
    case AccessHint::kWholeFile:
      return MADV_WILLNEED;
    case AccessHint::kNormal:
      break;
  }
  return kNoAdvice;
}

}  // namespace

Result<MmapOptions> ParseOptions(const PluginOptions& opts) {
  MmapOptions out;
  const std::string owner =
      opts.owner().empty() ? std::string("storage plugin 'mmap'") : opts.owner();
  IOMIMIC_ASSIGN_OR_RETURN(out.advice, opts.GetString("advice", out.advice));
  if (out.advice != "auto" && out.advice != "normal" && out.advice != "sequential" &&
      out.advice != "random" && out.advice != "willneed") {
    return Status::InvalidArgument(owner + ": option 'advice' = '" + out.advice +
                                   "' is not one of auto, normal, sequential, random, willneed");
  }
  IOMIMIC_ASSIGN_OR_RETURN(out.populate, opts.GetBool("populate", false));
  IOMIMIC_ASSIGN_OR_RETURN(
      std::int64_t mappings,
      opts.GetInt("max_mappings", static_cast<std::int64_t>(out.max_mappings)));
  if (mappings < 1) {
    return Status::InvalidArgument(owner + ": option 'max_mappings' = " + std::to_string(mappings) +
                                   " must be at least 1");
  }
  out.max_mappings = static_cast<std::uint64_t>(mappings);
  IOMIMIC_ASSIGN_OR_RETURN(out.max_mapped_bytes,
                           opts.GetBytes("max_mapped_bytes", out.max_mapped_bytes));
  if (out.max_mapped_bytes == 0) {
    return Status::InvalidArgument(owner + ": option 'max_mapped_bytes' must be more than 0");
  }
  IOMIMIC_ASSIGN_OR_RETURN(out.sync_on_close, opts.GetBool("sync_on_close", false));
  IOMIMIC_ASSIGN_OR_RETURN(out.willneed_window,
                           opts.GetBytes("willneed_window", out.willneed_window));
  return out;
}

// ---------------------------------------------------------------------------
// MappingLimiter

void MappingLimiter::UnmapLocked(MmapFile* file) {
  if (file->base_ != nullptr) ::munmap(file->base_, file->mapped_);
  if (file->listed_) {
    lru_.erase(file->lru_position_);
    file->listed_ = false;
    --live_;
    bytes_ -= file->mapped_;
  }
  file->base_ = nullptr;
  file->mapped_ = 0;
}

Result<const std::byte*> MappingLimiter::Pin(MmapFile* file, std::uint64_t length) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (file->base_ != nullptr && file->mapped_ >= length) {
    ++file->users_;
    lru_.splice(lru_.end(), lru_, file->lru_position_);
    return static_cast<const std::byte*>(file->base_);
  }
  // Not mapped, or the file grew: map it (again) at its current length. A
  // File is used by one thread at a time, so its own mapping is idle here.
  if (file->listed_) UnmapLocked(file);
  if (length > max_bytes_) {
    ++fallbacks_;
    return static_cast<const std::byte*>(nullptr);
  }
  while (live_ + 1 > max_mappings_ || bytes_ + length > max_bytes_) {
    auto victim = std::find_if(lru_.begin(), lru_.end(), [](const MmapFile* f) {
      return f->users_ == 0 && f->base_ != nullptr;
    });
    if (victim == lru_.end()) {
      ++fallbacks_;
      return static_cast<const std::byte*>(nullptr);
    }
    UnmapLocked(*victim);
    ++evictions_;
  }
  // Reserve the slot, then map without holding the lock (MAP_POPULATE reads
  // the whole file); a reserved entry is in use, so nobody evicts it.
  file->lru_position_ = lru_.insert(lru_.end(), file);  // may throw: first
  file->listed_ = true;
  ++live_;
  bytes_ += length;
  ++file->users_;
  file->mapped_ = length;
  lock.unlock();

  const int flags = MAP_SHARED | (file->options_->populate ? MAP_POPULATE : 0);
  void* p = ::mmap(nullptr, static_cast<std::size_t>(length), PROT_READ, flags, file->fd_, 0);
  const int err = errno;
  // MADV_WILLNEED over a whole large file would read it all from inside this
  // call; with a window the reads prefetch ahead of themselves instead.
  const bool windowed = file->advice_ == MADV_WILLNEED && file->options_->willneed_window > 0;
  if (p != MAP_FAILED && file->advice_ != kNoAdvice && !windowed) {
    (void)::madvise(p, static_cast<std::size_t>(length), file->advice_);
  }

  lock.lock();
  if (p == MAP_FAILED) {
    --file->users_;
    UnmapLocked(file);
    if (err == ENOMEM) {  // out of address space or map count: read instead
      ++fallbacks_;
      return static_cast<const std::byte*>(nullptr);
    }
    return Status::FromErrno(err,
                             "mmap " + file->path_ + " (" + std::to_string(length) + " bytes)");
  }
  file->base_ = static_cast<std::byte*>(p);
  file->advised_until_ = 0;
  ++maps_;
  return static_cast<const std::byte*>(file->base_);
}

void MappingLimiter::Unpin(MmapFile* file) {
  std::lock_guard<std::mutex> lock(mutex_);
  --file->users_;
}

void MappingLimiter::Forget(MmapFile* file) {
  std::lock_guard<std::mutex> lock(mutex_);
  UnmapLocked(file);
}

MmapStats MappingLimiter::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  MmapStats s;
  s.live_mappings = live_;
  s.mapped_bytes = bytes_;
  s.maps = maps_;
  s.evictions = evictions_;
  s.fallbacks = fallbacks_;
  return s;
}

// ---------------------------------------------------------------------------
// MmapFile

MmapFile::MmapFile(MappingLimiter* limiter, const MmapOptions* options, int fd, std::string path,
                   OpenMode mode, int advice, std::uint64_t size)
    : limiter_(limiter),
      options_(options),
      fd_(fd),
      path_(std::move(path)),
      mode_(mode),
      advice_(advice),
      size_(size) {}

MmapFile::~MmapFile() { (void)Close(); }

Result<std::size_t> MmapFile::ReadAt(std::uint64_t offset, std::span<std::byte> destination) {
  return Guarded("reading", path_, [&]() -> Result<std::size_t> {
    if (fd_ < 0) return Status::InvalidArgument(path_ + ": read on a closed file");
    if (destination.empty()) return std::size_t{0};
    if (offset + destination.size() > size_) {
      // A read reaching past the known end: the file may have grown.
      struct stat st {};
      if (::fstat(fd_, &st) != 0) return Status::FromErrno(errno, "fstat " + path_);
      size_ = static_cast<std::uint64_t>(st.st_size);
    }
    if (offset >= size_) return std::size_t{0};
    const std::size_t n =
        static_cast<std::size_t>(std::min<std::uint64_t>(destination.size(), size_ - offset));
    Result<const std::byte*> base = limiter_->Pin(this, size_);
    if (!base.ok()) return base.status();
    if (*base == nullptr) return PreadFull(fd_, destination.first(n), offset, path_);
    if (advice_ == MADV_WILLNEED && options_->willneed_window > 0) {
      PrefetchAhead(*base, offset + n);
    }
    std::memcpy(destination.data(), *base + offset, n);
    limiter_->Unpin(this);
    return n;
  });
}

void MmapFile::PrefetchAhead(const std::byte* base, std::uint64_t end) {
  // Ask for the next window once half of the last one has been used, so a
  // sequential reader keeps about a window of reads in flight.
  const std::uint64_t window = options_->willneed_window;
  const std::uint64_t target = std::min(size_, end + window);
  if (target <= advised_until_ || (target - advised_until_ < window / 2 && target < size_)) return;
  static const std::uint64_t kPage = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  const std::uint64_t from = std::max(advised_until_, end) / kPage * kPage;
  if (target > from) {
    (void)::madvise(const_cast<std::byte*>(base) + from, static_cast<std::size_t>(target - from),
                    MADV_WILLNEED);
  }
  advised_until_ = target;
}

Status MmapFile::WriteAt(std::uint64_t offset, std::span<const std::byte> source) {
  if (fd_ < 0) return Status::InvalidArgument(path_ + ": write on a closed file");
  IOMIMIC_RETURN_IF_ERROR(PwriteFull(fd_, source, offset, path_));
  size_ = std::max<std::uint64_t>(size_, offset + source.size());
  return Status::OK();
}

Status MmapFile::Sync() {
  if (fd_ < 0) return Status::InvalidArgument(path_ + ": sync on a closed file");
  if (::fsync(fd_) != 0) return Status::FromErrno(errno, "fsync " + path_);
  return Status::OK();
}

Result<std::uint64_t> MmapFile::Size() {
  if (fd_ < 0) return Status::InvalidArgument(path_ + ": size of a closed file");
  struct stat st {};
  if (::fstat(fd_, &st) != 0) return Status::FromErrno(errno, "fstat " + path_);
  return static_cast<std::uint64_t>(st.st_size);
}

Status MmapFile::Close() {
  if (fd_ < 0) return Status::OK();
  limiter_->Forget(this);
  Status result;
  if (mode_ != OpenMode::kRead && options_->sync_on_close && ::fsync(fd_) != 0) {
    result = Status::FromErrno(errno, "fsync " + path_);
  }
  if (::close(fd_) != 0 && result.ok()) result = Status::FromErrno(errno, "close " + path_);
  fd_ = -1;
  return result;
}

// ---------------------------------------------------------------------------
// MmapStorage

MmapStorage::MmapStorage(const MmapOptions& options)
    : options_(options), limiter_(options.max_mappings, options.max_mapped_bytes) {}

StorageCapabilities MmapStorage::capabilities() const {
  StorageCapabilities caps = CapabilitiesAllowedBy(kCapabilities);
  caps.data_path = "mmap";
  return caps;
}

Result<std::unique_ptr<File>> MmapStorage::Open(const std::string& path,
                                                const OpenOptions& options) {
  return Guarded("opening", path, [&]() -> Result<std::unique_ptr<File>> {
    // Mapping for reads needs a readable descriptor, also when writing.
    const int fd = OpenRetrying(path, OpenFlags(options.mode, /*readable_writes=*/true));
    if (fd < 0) return Status::FromErrno(errno, "open " + path);
    IOMIMIC_RETURN_IF_ERROR(CheckRegularFile(fd, path));
    IOMIMIC_ASSIGN_OR_RETURN(const std::uint64_t size, FstatSizeOrClose(fd, path));
    ReserveExpectedSize(fd, options);
    if (options.drop_cache) (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    const int advice = AdviceFor(options_.advice, options.hint);
    // The readahead window of a fault on a file mapping is the descriptor's
    // (its struct file's): MADV_SEQUENTIAL alone keeps the default window,
    // POSIX_FADV_SEQUENTIAL doubles it. fio's mmap engine sets both for a
    // sequential job; so does this back end, and the random pair likewise.
    if (advice == MADV_SEQUENTIAL) (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    if (advice == MADV_RANDOM) (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
    return std::unique_ptr<File>(
        new MmapFile(&limiter_, &options_, fd, path, options.mode, advice, size));
  });
}

Result<std::unique_ptr<Storage>> CreateMmapStorage(const PluginContext& context) {
  IOMIMIC_ASSIGN_OR_RETURN(MmapOptions options, ParseOptions(context.options));
  return std::unique_ptr<Storage>(new MmapStorage(options));
}

}  // namespace iomimic::mmap

namespace {
const IomimicOptionSpec kMmapOptions[] = {
    {"advice", "string", "auto",
     "madvise: auto (from the access hint), normal, sequential, random, willneed"},
    {"populate", "bool", "false", "MAP_POPULATE: fault the whole file in when it is mapped"},
    {"max_mappings", "int", "1024", "live mappings before idle ones are unmapped (LRU)"},
    {"max_mapped_bytes", "bytes", "16G", "bytes mapped before idle mappings are unmapped (LRU)"},
    {"sync_on_close", "bool", "false", "fsync files opened for writing when they close"},
    {"willneed_window", "bytes", "0",
     "MADV_WILLNEED this far ahead of each read (0: the whole file when it is mapped)"},
};
}  // namespace

IOMIMIC_DEFINE_STORAGE_PLUGIN("mmap", "1.0.0",
                              "reads copied from shared read-only mappings (np.memmap-like)",
                              iomimic::mmap::kCapabilities, kMmapOptions,
                              &iomimic::mmap::CreateMmapStorage);
