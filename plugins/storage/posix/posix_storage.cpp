// The `posix` storage back end: buffered file I/O with pread/pwrite.
//
// Reads and writes go straight to the kernel (no user-space buffering), so
// every request a format makes is one system call, as in the Python readers
// DLIO uses. Options:
//   fadvise: none | sequential | random | willneed | dontneed — posix_fadvise
//            hint applied at open (default: from the caller's access hint)
//   drop_cache_on_close: true to fadvise(DONTNEED) when a read file closes,
//            so a later read of it is served by the storage, not the cache
//   sync_on_close: fsync files opened for writing before closing them

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>

#include "iomimic/file_system.h"
#include "iomimic/iomimic.h"
#include "iomimic/posix_io.h"

namespace iomimic::posix {

// The descriptor's flags, and what capabilities() may claim (buffered file I/O: nothing beyond the
// defaults).
constexpr std::uint64_t kCapabilities = IOMIMIC_CAP_NONE;
namespace {

constexpr int kNoAdvice = -1;

struct PosixOptions {
  int fadvise = kNoAdvice;  // explicit advice, or kNoAdvice to follow the hint
  bool drop_cache_on_close = false;
  bool sync_on_close = false;
};

class PosixFile final : public File {
 public:
  // `size_at_open`: the size fstat gave when a read-only file was opened.
  PosixFile(int fd, std::string path, bool writable, const PosixOptions& options,
            std::uint64_t size_at_open)
      : fd_(fd),
        path_(std::move(path)),
        writable_(writable),
        options_(options),
        size_at_open_(size_at_open) {}
  ~PosixFile() override { (void)Close(); }

  Result<std::size_t> ReadAt(std::uint64_t offset, std::span<std::byte> destination) override {
    if (fd_ < 0) return Status::InvalidArgument(path_ + ": read on a closed file");
    // A short read that reaches the size a read-only file had at open is its
    // end: no second pread to see 0 (a reader's calls stay its own, as with
    // read(2): docs/dlio-compat.md §2.4).
    PreadEnd end;
    if (!writable_) end.known_size = size_at_open_;
    return PreadFull(fd_, destination, offset, path_, end);
  }

  Status WriteAt(std::uint64_t offset, std::span<const std::byte> source) override {
    if (fd_ < 0) return Status::InvalidArgument(path_ + ": write on a closed file");
    return PwriteFull(fd_, source, offset, path_);
  }

  Status Sync() override {
    if (fd_ < 0) return Status::InvalidArgument(path_ + ": sync on a closed file");
    if (::fsync(fd_) != 0) return Status::FromErrno(errno, "fsync " + path_);
    return Status::OK();
  }

  Result<std::uint64_t> Size() override {
    struct stat st {};
    if (::fstat(fd_, &st) != 0) return Status::FromErrno(errno, "fstat " + path_);
    return static_cast<std::uint64_t>(st.st_size);
  }

  Status Close() override {
    if (fd_ < 0) return Status::OK();
    Status result;
    if (writable_ && options_.sync_on_close && ::fsync(fd_) != 0) {
      result = Status::FromErrno(errno, "fsync " + path_);
    }
    if (!writable_ && options_.drop_cache_on_close) {
      (void)::posix_fadvise(fd_, 0, 0, POSIX_FADV_DONTNEED);
    }
    if (::close(fd_) != 0 && result.ok()) result = Status::FromErrno(errno, "close " + path_);
    fd_ = -1;
    return result;
  }

  const std::string& path() const override { return path_; }

 private:
  int fd_;
  std::string path_;
  bool writable_;
  PosixOptions options_;
  std::uint64_t size_at_open_ = 0;
};

class PosixStorage final : public FileSystemStorage {
 public:
  explicit PosixStorage(const PosixOptions& options) : options_(options) {}

  std::string name() const override { return "posix"; }

  StorageCapabilities capabilities() const override {
    StorageCapabilities caps = CapabilitiesAllowedBy(kCapabilities);
    caps.data_path = "pread";
    return caps;
  }

  Result<std::unique_ptr<File>> Open(const std::string& path, const OpenOptions& options) override {
    const int fd = OpenRetrying(path, OpenFlags(options.mode));
    if (fd < 0) return Status::FromErrno(errno, "open " + path);
    std::uint64_t size = 0;
    IOMIMIC_RETURN_IF_ERROR(CheckRegularFile(fd, path, &size));
    int advice = options_.fadvise;
    if (advice == kNoAdvice) {
      switch (options.hint) {
        case AccessHint::kSequential:
        case AccessHint::kWholeFile:
          advice = POSIX_FADV_SEQUENTIAL;
          break;
        case AccessHint::kRandom:
          advice = POSIX_FADV_RANDOM;
          break;
        case AccessHint::kNormal:
          break;
      }
    }
    if (options.drop_cache) (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    if (advice != kNoAdvice) (void)::posix_fadvise(fd, 0, 0, advice);
    if (options.mode == OpenMode::kWrite && options.expected_size > 0) {
      // Best effort: file systems without fallocate support simply skip it.
      (void)::posix_fallocate(fd, 0, static_cast<off_t>(options.expected_size));
    }
    return std::unique_ptr<File>(
        new PosixFile(fd, path, options.mode != OpenMode::kRead, options_, size));
  }

 private:
  PosixOptions options_;
};

Result<PosixOptions> ParseOptions(const PluginOptions& opts) {
  PosixOptions out;
  IOMIMIC_ASSIGN_OR_RETURN(std::string advice, opts.GetString("fadvise", ""));
  if (advice.empty()) {
    out.fadvise = kNoAdvice;
  } else if (advice == "none") {
    out.fadvise = POSIX_FADV_NORMAL;
  } else if (advice == "sequential") {
    out.fadvise = POSIX_FADV_SEQUENTIAL;
  } else if (advice == "random") {
    out.fadvise = POSIX_FADV_RANDOM;
  } else if (advice == "willneed") {
    out.fadvise = POSIX_FADV_WILLNEED;
  } else if (advice == "dontneed") {
    out.fadvise = POSIX_FADV_DONTNEED;
  } else {
    return Status::InvalidArgument(opts.owner() + ": option 'fadvise' = '" + advice +
                                   "' is not one of none, sequential, random, willneed, dontneed");
  }
  IOMIMIC_ASSIGN_OR_RETURN(out.drop_cache_on_close, opts.GetBool("drop_cache_on_close", false));
  IOMIMIC_ASSIGN_OR_RETURN(out.sync_on_close, opts.GetBool("sync_on_close", false));
  return out;
}

}  // namespace

Result<std::unique_ptr<Storage>> CreatePosixStorage(const PluginContext& context) {
  IOMIMIC_ASSIGN_OR_RETURN(PosixOptions options, ParseOptions(context.options));
  return std::unique_ptr<Storage>(new PosixStorage(options));
}

}  // namespace iomimic::posix

namespace {
const IomimicOptionSpec kPosixOptions[] = {
    {"fadvise", "string", "",
     "posix_fadvise at open: none, sequential, random, willneed, dontneed"},
    {"drop_cache_on_close", "bool", "false", "fadvise(DONTNEED) when a read-only file closes"},
    {"sync_on_close", "bool", "false", "fsync files opened for writing when they close"},
};
}  // namespace

// Serves file:// folders: the MLPerf Storage fork's spelling of local files
// (docs/plugins.md, "URL schemes").
IOMIMIC_DEFINE_STORAGE_PLUGIN_SERVING("posix", "file", "1.0.0",
                                      "buffered POSIX I/O with pread/pwrite",
                                      iomimic::posix::kCapabilities, kPosixOptions,
                                      &iomimic::posix::CreatePosixStorage);
