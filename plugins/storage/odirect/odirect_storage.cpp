#include "odirect_storage.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <new>
#include <numeric>
#include <string>
#include <system_error>
#include <utility>

#include "iomimic/guard.h"
#include "iomimic/posix_io.h"

namespace iomimic::odirect {

// The descriptor's flags, and what capabilities() may claim (async unless the engine is sync).
constexpr std::uint64_t kCapabilities = IOMIMIC_CAP_ASYNC | IOMIMIC_CAP_DIRECT_IO;
namespace {

// glibc 2.36 takes struct statx from <linux/stat.h> when the kernel headers
// have it; older kernel headers lack STATX_DIOALIGN and the two fields, which
// then sit at fixed offsets of the 256-byte structure (Linux 6.1 ABI).
#ifdef STATX_DIOALIGN
constexpr unsigned kStatxDioAlign = STATX_DIOALIGN;
#else
constexpr unsigned kStatxDioAlign = 0x2000U;
#endif
constexpr std::size_t kStatxDioMemAlignOffset = 0x98;
constexpr std::size_t kStatxDioOffsetAlignOffset = 0x9c;
#ifdef STATX_DIOALIGN
static_assert(offsetof(struct statx, stx_dio_mem_align) == 0x98);
static_assert(offsetof(struct statx, stx_dio_offset_align) == 0x9c);
#endif

std::uint64_t RoundDown(std::uint64_t x, std::uint64_t a) { return x / a * a; }
std::uint64_t RoundUp(std::uint64_t x, std::uint64_t a) { return (x + a - 1) / a * a; }
bool IsAligned(const void* p, std::size_t a) {
  return reinterpret_cast<std::uintptr_t>(p) % a == 0;
}
bool IsPowerOfTwo(std::uint64_t x) { return x != 0 && (x & (x - 1)) == 0; }

// Runs `body`, turning any exception into an error naming `what`, so none
// crosses the plugin boundary.
template <typename F>
auto Guarded(const char* what, const std::string& path, F&& body) -> decltype(body()) {
  return Guard("odirect", what, path, std::forward<F>(body));
}

// An operation's loan of a context, given back when it goes out of scope.
class ContextLease {
 public:
  ContextLease(OdirectStorage* storage, std::unique_ptr<IoContext> context)
      : storage_(storage), context_(std::move(context)) {}
  ~ContextLease() { storage_->Release(std::move(context_)); }
  ContextLease(const ContextLease&) = delete;
  ContextLease& operator=(const ContextLease&) = delete;
  IoContext& operator*() { return *context_; }
  IoContext* operator->() { return context_.get(); }

 private:
  OdirectStorage* storage_;
  std::unique_ptr<IoContext> context_;
};

// Makes `buffer` hold at least `size` bytes aligned to `alignment`.
bool EnsureCapacity(Buffer& buffer, std::size_t size, std::size_t alignment) {
  if (buffer.size() >= size) return true;
  buffer.Reset();
  buffer = Buffer::AllocateHost(size, std::max<std::size_t>(alignment, 64));
  return !buffer.empty();
}

}  // namespace

DioAlignment QueryDioAlignment(int fd) {
  DioAlignment result;
  struct statx stx;
  static_assert(sizeof(stx) >= kStatxDioOffsetAlignOffset + 4, "struct statx too small");
  std::memset(&stx, 0, sizeof(stx));
  if (::statx(fd, "", AT_EMPTY_PATH, kStatxDioAlign, &stx) != 0) return result;
  if ((stx.stx_mask & kStatxDioAlign) == 0) return result;
  std::uint32_t mem = 0;
  std::uint32_t off = 0;
  const auto* raw = reinterpret_cast<const unsigned char*>(&stx);
  std::memcpy(&mem, raw + kStatxDioMemAlignOffset, sizeof(mem));
  std::memcpy(&off, raw + kStatxDioOffsetAlignOffset, sizeof(off));
  // Zero means the file cannot do direct I/O; the open would have failed
  // already, so keep the safe fallback.
  if (mem == 0 || off == 0) return result;
  result.memory = mem;
  result.offset = off;
  result.from_statx = true;
  return result;
}

Result<OdirectOptions> ParseOptions(const PluginOptions& opts) {
  OdirectOptions out;
  const std::string owner =
      opts.owner().empty() ? std::string("storage plugin 'odirect'") : opts.owner();
  IOMIMIC_ASSIGN_OR_RETURN(std::int64_t depth, opts.GetInt("queue_depth", out.queue_depth));
  if (depth < 1 || depth > 4096) {
    return Status::InvalidArgument(owner + ": option 'queue_depth' = " + std::to_string(depth) +
                                   " is not between 1 and 4096");
  }
  out.queue_depth = static_cast<std::uint32_t>(depth);
  IOMIMIC_ASSIGN_OR_RETURN(std::uint64_t block, opts.GetBytes("block_size", out.block_size));
  if (block < 512 || block > (std::uint64_t{1} << 30)) {
    return Status::InvalidArgument(owner + ": option 'block_size' = " + std::to_string(block) +
                                   " is not between 512 bytes and 1 GiB");
  }
  out.block_size = static_cast<std::size_t>(block);
  IOMIMIC_ASSIGN_OR_RETURN(out.engine, opts.GetString("engine", out.engine));
  if (out.engine != "auto" && out.engine != "io_uring" && out.engine != "libaio" &&
      out.engine != "sync") {
    return Status::InvalidArgument(owner + ": option 'engine' = '" + out.engine +
                                   "' is not one of auto, io_uring, libaio, sync");
  }
  IOMIMIC_ASSIGN_OR_RETURN(out.sync_on_close, opts.GetBool("sync_on_close", false));
  IOMIMIC_ASSIGN_OR_RETURN(std::uint64_t align, opts.GetBytes("alignment", 0));
  if (align != 0 && (!IsPowerOfTwo(align) || align < 512 || align > (1u << 20))) {
    return Status::InvalidArgument(owner + ": option 'alignment' = " + std::to_string(align) +
                                   " is not 0 (page size) or a power of two from 512 to 1M");
  }
  out.alignment = static_cast<std::size_t>(align);
  IOMIMIC_ASSIGN_OR_RETURN(std::uint64_t cache, opts.GetBytes("buffer_cache", out.buffer_cache));
  out.buffer_cache = static_cast<std::size_t>(cache);
  return out;
}

// ---------------------------------------------------------------------------
// OdirectFile

OdirectFile::OdirectFile(OdirectStorage* storage, int fd, std::string path, OpenMode mode,
                         DioAlignment alignment, std::uint64_t size)
    : storage_(storage),
      fd_(fd),
      path_(std::move(path)),
      mode_(mode),
      alignment_(alignment),
      size_(size) {
  const std::size_t unit = std::lcm(alignment_.offset, alignment_.memory);
  chunk_ = static_cast<std::size_t>(RoundUp(std::max(storage_->options().block_size, unit), unit));
  physical_end_ = size_;
}

OdirectFile::~OdirectFile() { (void)Close(); }

Status OdirectFile::ReadError(int err, std::uint64_t offset, std::size_t length) const {
  return Status::FromErrno(err, "O_DIRECT read of " + std::to_string(length) + " bytes from " +
                                    PathAt(path_, offset) + " (" + EngineName(storage_->engine()) +
                                    ")");
}

Result<std::size_t> OdirectFile::PreadDirect(std::uint64_t offset, std::byte* buffer,
                                             std::size_t length) {
  // A count that is not a multiple of the alignment ends at end of file
  // (and the next offset would be unaligned).
  PreadEnd end;
  end.block = alignment_.offset;
  const PosixTransfer t = PreadLoop(fd_, std::span<std::byte>(buffer, length), offset, end);
  if (t.error != 0) {
    return Status::FromErrno(t.error, "O_DIRECT pread of " + std::to_string(length - t.done) +
                                          " bytes from " + PathAt(path_, offset + t.done));
  }
  return t.done;
}

Result<std::size_t> OdirectFile::ReadAt(std::uint64_t offset, std::span<std::byte> destination) {
  return Guarded("reading", path_, [&]() -> Result<std::size_t> {
    if (fd_ < 0) return Status::InvalidArgument(path_ + ": read on a closed file");
    std::size_t length = destination.size();
    if (mode_ != OpenMode::kRead) {
      // The file may carry alignment padding past its exact length.
      if (offset >= size_) return std::size_t{0};
      length = static_cast<std::size_t>(std::min<std::uint64_t>(length, size_ - offset));
    }
    if (length == 0) return std::size_t{0};
    // One aligned piece: a single pread, no queue.
    if (offset % alignment_.offset == 0 && length % alignment_.offset == 0 && length <= chunk_ &&
        IsAligned(destination.data(), alignment_.memory)) {
      return PreadDirect(offset, destination.data(), length);
    }
    ReadRequest request;
    request.offset = offset;
    request.destination = destination.first(length);
    IOMIMIC_RETURN_IF_ERROR(RunReads(std::span<ReadRequest>(&request, 1)));
    return request.bytes_read;
  });
}

Status OdirectFile::ReadBatch(std::span<ReadRequest> requests) {
  return Guarded("reading", path_, [&]() -> Status {
    if (fd_ < 0) {
      Status closed = Status::InvalidArgument(path_ + ": read on a closed file");
      for (ReadRequest& r : requests) {
        r.bytes_read = 0;
        r.status = closed;
      }
      return requests.empty() ? Status::OK() : closed;
    }
    return RunReads(requests);
  });
}

void OdirectFile::PlanRead(std::size_t index, std::uint64_t offset,
                           std::span<std::byte> destination, std::vector<ReadOp>* ops) const {
  const std::uint64_t a = alignment_.offset;
  const std::uint64_t end = offset + destination.size();
  const std::uint64_t p0 = RoundUp(offset, a);
  const std::uint64_t p1 = RoundDown(end, a);
  std::byte* dst = destination.data();
  auto add_bounce = [&](std::uint64_t at, std::size_t length, std::byte* copy_to, std::size_t skip,
                        std::size_t copy_length) {
    ReadOp op;
    op.offset = at;
    op.length = length;
    op.request = index;
    op.bounce = true;
    op.copy_to = copy_to;
    op.copy_skip = skip;
    op.copy_length = copy_length;
    ops->push_back(op);
  };
  if (p1 > p0 && IsAligned(dst + (p0 - offset), alignment_.memory)) {
    // Aligned middle straight into the caller's memory, edges bounced.
    if (offset < p0) {
      add_bounce(p0 - a, a, dst, static_cast<std::size_t>(offset - (p0 - a)),
                 static_cast<std::size_t>(p0 - offset));
    }
    for (std::uint64_t p = p0; p < p1; p += chunk_) {
      ReadOp op;
      op.offset = p;
      op.length = static_cast<std::size_t>(std::min<std::uint64_t>(chunk_, p1 - p));
      op.request = index;
      op.target = dst + (p - offset);
      ops->push_back(op);
    }
    if (end > p1) add_bounce(p1, a, dst + (p1 - offset), 0, static_cast<std::size_t>(end - p1));
    return;
  }
  // Buffer and offset misaligned differently: bounce the whole span.
  const std::uint64_t lo = RoundDown(offset, a);
  const std::uint64_t hi = RoundUp(end, a);
  for (std::uint64_t c0 = lo; c0 < hi; c0 += chunk_) {
    const std::uint64_t c1 = std::min<std::uint64_t>(hi, c0 + chunk_);
    const std::uint64_t dlo = std::max(offset, c0);
    const std::uint64_t dhi = std::min(end, c1);
    add_bounce(c0, static_cast<std::size_t>(c1 - c0), dst + (dlo - offset),
               static_cast<std::size_t>(dlo - c0), static_cast<std::size_t>(dhi - dlo));
  }
}

Status OdirectFile::RunReads(std::span<ReadRequest> requests) {
  IOMIMIC_ASSIGN_OR_RETURN(std::unique_ptr<IoContext> borrowed, storage_->Acquire());
  ContextLease context(storage_, std::move(borrowed));
  context->ops.clear();
  std::vector<std::uint64_t>& valid_end = context->valid_end;
  std::vector<std::size_t>& lengths = context->lengths;
  valid_end.assign(requests.size(), 0);
  lengths.assign(requests.size(), 0);
  for (std::size_t i = 0; i < requests.size(); ++i) {
    ReadRequest& r = requests[i];
    r.bytes_read = 0;
    r.status = Status::OK();
    std::size_t length = r.destination.size();
    if (mode_ != OpenMode::kRead) {
      length = r.offset >= size_
                   ? 0
                   : static_cast<std::size_t>(std::min<std::uint64_t>(length, size_ - r.offset));
    }
    lengths[i] = length;
    valid_end[i] = r.offset + length;
    if (length > 0) PlanRead(i, r.offset, r.destination.first(length), &context->ops);
  }
  Status first = ExecuteReads(*context, requests);
  for (std::size_t i = 0; i < requests.size(); ++i) {
    ReadRequest& r = requests[i];
    if (!r.status.ok()) continue;
    r.bytes_read =
        valid_end[i] > r.offset
            ? static_cast<std::size_t>(std::min<std::uint64_t>(lengths[i], valid_end[i] - r.offset))
            : 0;
  }
  return first;
}

Status OdirectFile::ExecuteReads(IoContext& context, std::span<ReadRequest> requests) {
  std::vector<ReadOp>& ops = context.ops;
  std::vector<std::uint64_t>& valid_end = context.valid_end;
  IoQueue& queue = *context.queue;
  const std::size_t depth = queue.depth();
  if (context.slots.size() < depth) context.slots.resize(depth);
  context.free_slots.clear();
  for (std::size_t i = depth; i > 0; --i) context.free_slots.push_back(static_cast<int>(i - 1));
  context.retry.clear();

  Status first;
  auto fail = [&](std::size_t request, const Status& status) {
    if (requests[request].status.ok()) requests[request].status = status;
    if (first.ok()) first = status;
  };
  auto release_slot = [&](ReadOp& op) {
    if (op.slot >= 0) context.free_slots.push_back(op.slot);
    op.slot = -1;
  };
  auto submit = [&](ReadOp& op, std::size_t tag) {
    queue.PrepareRead(fd_, op.target + op.done, op.length - op.done, op.offset + op.done, tag);
  };

  std::size_t next = 0;
  std::size_t in_flight = 0;
  for (;;) {
    while (!context.retry.empty() && in_flight < depth) {
      const std::size_t tag = context.retry.back();
      context.retry.pop_back();
      submit(ops[tag], tag);
      ++in_flight;
    }
    while (next < ops.size() && in_flight < depth) {
      ReadOp& op = ops[next];
      if (!requests[op.request].status.ok()) {  // its request already failed
        ++next;
        continue;
      }
      if (op.bounce) {
        if (context.free_slots.empty()) break;
        const int slot = context.free_slots.back();
        context.free_slots.pop_back();
        Buffer& buffer = context.slots[static_cast<std::size_t>(slot)];
        if (!EnsureCapacity(buffer, std::max(op.length, std::size_t{4096}), alignment_.memory)) {
          context.free_slots.push_back(slot);
          fail(op.request,
               Status::ResourceExhausted("odirect: cannot allocate a " + std::to_string(op.length) +
                                         "-byte bounce buffer reading " + path_));
          ++next;
          continue;
        }
        op.slot = slot;
        op.target = buffer.data();
      }
      submit(op, next);
      ++in_flight;
      ++next;
    }
    if (in_flight == 0) break;
    context.completions.clear();
    Status waited = queue.SubmitAndWait(1, &context.completions);
    if (!waited.ok()) {
      context.broken = true;  // outstanding reads are abandoned with the queue
      Status error = waited.WithContext("odirect: reading " + path_);
      for (std::size_t i = 0; i < requests.size(); ++i) fail(i, error);
      return first;
    }
    for (const IoCompletion& c : context.completions) {
      --in_flight;
      ReadOp& op = ops[static_cast<std::size_t>(c.tag)];
      if (c.result < 0) {
        const int err = static_cast<int>(-c.result);
        if (err == EINTR || err == EAGAIN) {
          context.retry.push_back(static_cast<std::size_t>(c.tag));
          continue;
        }
        fail(op.request, ReadError(err, op.offset + op.done, op.length - op.done));
        release_slot(op);
        continue;
      }
      const std::size_t got = static_cast<std::size_t>(c.result);
      op.done += got;
      if (got > 0 && op.done < op.length && got % alignment_.offset == 0) {
        context.retry.push_back(static_cast<std::size_t>(c.tag));  // short but not at the end
        continue;
      }
      if (op.done < op.length) {
        valid_end[op.request] = std::min(valid_end[op.request], op.offset + op.done);
      }
      if (op.bounce && op.done > op.copy_skip) {
        std::memcpy(op.copy_to, op.target + op.copy_skip,
                    std::min(op.copy_length, op.done - op.copy_skip));
      }
      release_slot(op);
    }
  }
  return first;
}

Status OdirectFile::PwriteAll(const std::byte* data, std::size_t length, std::uint64_t offset) {
  const PosixTransfer t = PwriteLoop(fd_, std::span<const std::byte>(data, length), offset);
  if (t.done > 0) physical_end_ = std::max<std::uint64_t>(physical_end_, offset + t.done);
  if (t.error != 0) {
    return Status::FromErrno(t.error, "O_DIRECT pwrite of " + std::to_string(length - t.done) +
                                          " bytes to " + PathAt(path_, offset + t.done));
  }
  if (t.done < length) {
    return Status::IOError("O_DIRECT pwrite " + PathAt(path_, offset + t.done) + ": wrote 0 bytes");
  }
  return Status::OK();
}

Status OdirectFile::LoadBlock(std::uint64_t block, std::byte* out) {
  const std::size_t a = alignment_.offset;
  if (tail_valid_ && tail_offset_ == block) {
    std::memcpy(out, tail_.data(), a);
    return Status::OK();
  }
  if (block >= size_) {
    std::memset(out, 0, a);
    return Status::OK();
  }
  if (!EnsureCapacity(edge_, a, alignment_.memory)) {
    return Status::ResourceExhausted("odirect: cannot allocate a block buffer writing " + path_);
  }
  IOMIMIC_ASSIGN_OR_RETURN(std::size_t got, PreadDirect(block, edge_.data(), a));
  const std::size_t valid = static_cast<std::size_t>(std::min<std::uint64_t>(size_ - block, got));
  std::memcpy(out, edge_.data(), valid);
  std::memset(out + valid, 0, a - valid);
  return Status::OK();
}

Status OdirectFile::WriteThroughBounce(IoContext& context, std::uint64_t offset,
                                       std::span<const std::byte> source) {
  const std::uint64_t a = alignment_.offset;
  const std::uint64_t end = offset + source.size();
  const std::uint64_t lo = RoundDown(offset, a);
  const std::uint64_t hi = RoundUp(end, a);
  if (context.slots.empty()) context.slots.resize(1);
  Buffer& bounce = context.slots[0];
  const std::size_t need = static_cast<std::size_t>(std::min<std::uint64_t>(chunk_, hi - lo));
  if (!EnsureCapacity(bounce, need, alignment_.memory)) {
    return Status::ResourceExhausted("odirect: cannot allocate a " + std::to_string(need) +
                                     "-byte bounce buffer writing " + path_);
  }
  if (!EnsureCapacity(tail_, static_cast<std::size_t>(a), alignment_.memory)) {
    return Status::ResourceExhausted("odirect: cannot allocate a block buffer writing " + path_);
  }
  std::byte* buf = bounce.data();
  for (std::uint64_t c0 = lo; c0 < hi; c0 += chunk_) {
    const std::uint64_t c1 = std::min<std::uint64_t>(hi, c0 + chunk_);
    const std::uint64_t dlo = std::max(offset, c0);
    const std::uint64_t dhi = std::min(end, c1);
    const bool head_partial = dlo > c0;
    const bool tail_partial = dhi < c1;
    if (head_partial) IOMIMIC_RETURN_IF_ERROR(LoadBlock(c0, buf));
    if (tail_partial && !(head_partial && c1 - a == c0)) {
      IOMIMIC_RETURN_IF_ERROR(LoadBlock(c1 - a, buf + (c1 - a - c0)));
    }
    std::memcpy(buf + (dlo - c0), source.data() + (dlo - offset),
                static_cast<std::size_t>(dhi - dlo));
    IOMIMIC_RETURN_IF_ERROR(PwriteAll(buf, static_cast<std::size_t>(c1 - c0), c0));
    // Keep the cached block equal to what the file holds.
    if (tail_partial) {
      std::memcpy(tail_.data(), buf + (c1 - a - c0), static_cast<std::size_t>(a));
      tail_offset_ = c1 - a;
      tail_valid_ = true;
    } else if (tail_valid_ && tail_offset_ >= c0 && tail_offset_ < c1) {
      std::memcpy(tail_.data(), buf + (tail_offset_ - c0), static_cast<std::size_t>(a));
    }
  }
  return Status::OK();
}

Status OdirectFile::WriteAt(std::uint64_t offset, std::span<const std::byte> source) {
  return Guarded("writing", path_, [&]() -> Status {
    if (fd_ < 0) return Status::InvalidArgument(path_ + ": write on a closed file");
    if (mode_ == OpenMode::kRead)
      return Status::FromErrno(EBADF, "pwrite " + PathAt(path_, offset));
    if (source.empty()) return Status::OK();
    const std::size_t a = alignment_.offset;
    const std::uint64_t end = offset + source.size();
    std::size_t consumed = 0;
    if (offset % a == 0 && IsAligned(source.data(), alignment_.memory)) {
      const std::size_t direct = static_cast<std::size_t>(RoundDown(source.size(), a));
      if (direct > 0) {
        if (tail_valid_ && tail_offset_ >= offset && tail_offset_ < offset + direct) {
          tail_valid_ = false;
        }
        Status written = PwriteAll(source.data(), direct, offset);
        if (!written.ok()) return written;
        size_ = std::max<std::uint64_t>(size_, offset + direct);
        consumed = direct;
      }
    }
    if (consumed < source.size()) {
      IOMIMIC_ASSIGN_OR_RETURN(std::unique_ptr<IoContext> borrowed, storage_->Acquire());
      ContextLease context(storage_, std::move(borrowed));
      IOMIMIC_RETURN_IF_ERROR(
          WriteThroughBounce(*context, offset + consumed, source.subspan(consumed)));
    }
    size_ = std::max(size_, end);
    return Status::OK();
  });
}

Status OdirectFile::TrimToSize() {
  if (mode_ == OpenMode::kRead || physical_end_ <= size_) return Status::OK();
  int rc;
  do {
    rc = ::ftruncate(fd_, static_cast<off_t>(size_));
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    return Status::FromErrno(errno, "ftruncate " + path_ + " to " + std::to_string(size_) +
                                        " bytes (removing O_DIRECT alignment padding)");
  }
  physical_end_ = size_;
  return Status::OK();
}

Status OdirectFile::Sync() {
  if (fd_ < 0) return Status::InvalidArgument(path_ + ": sync on a closed file");
  IOMIMIC_RETURN_IF_ERROR(TrimToSize());
  if (::fsync(fd_) != 0) return Status::FromErrno(errno, "fsync " + path_);
  return Status::OK();
}

Result<std::uint64_t> OdirectFile::Size() {
  if (fd_ < 0) return Status::InvalidArgument(path_ + ": size of a closed file");
  if (mode_ != OpenMode::kRead) return size_;
  struct stat st {};
  if (::fstat(fd_, &st) != 0) return Status::FromErrno(errno, "fstat " + path_);
  return static_cast<std::uint64_t>(st.st_size);
}

Status OdirectFile::Close() {
  if (fd_ < 0) return Status::OK();
  Status result = TrimToSize();
  if (mode_ != OpenMode::kRead && storage_->options().sync_on_close && ::fsync(fd_) != 0 &&
      result.ok()) {
    result = Status::FromErrno(errno, "fsync " + path_);
  }
  if (::close(fd_) != 0 && result.ok()) result = Status::FromErrno(errno, "close " + path_);
  fd_ = -1;
  edge_.Reset();
  tail_.Reset();
  return result;
}

// ---------------------------------------------------------------------------
// OdirectStorage

OdirectStorage::OdirectStorage(const OdirectOptions& options, EngineKind engine,
                               std::unique_ptr<IoQueue> first_queue)
    : options_(options), engine_(engine) {
  const long page = ::sysconf(_SC_PAGESIZE);
  alignment_ = options_.alignment != 0 ? options_.alignment
                                       : static_cast<std::size_t>(page > 0 ? page : 4096);
  buffers_ = BufferCache::Create(alignment_, options_.buffer_cache);
  if (first_queue != nullptr) {
    auto context = std::make_unique<IoContext>();
    context->queue = std::move(first_queue);
    pool_.push_back(std::move(context));
    created_ = 1;
  }
}

OdirectStorage::~OdirectStorage() { buffers_->Unref(); }

StorageCapabilities OdirectStorage::capabilities() const {
  StorageCapabilities caps = CapabilitiesAllowedBy(kCapabilities);
  caps.alignment = alignment_;
  caps.async = caps.async && engine_ != EngineKind::kSync;
  caps.queue_depth = caps.async ? options_.queue_depth : 1;
  caps.data_path = EngineName(engine_);
  return caps;
}

Result<std::unique_ptr<IoContext>> OdirectStorage::Acquire() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!pool_.empty()) {
      std::unique_ptr<IoContext> context = std::move(pool_.back());
      pool_.pop_back();
      return context;
    }
  }
  Result<std::unique_ptr<IoQueue>> queue = MakeIoQueue(engine_, options_.queue_depth);
  if (!queue.ok()) return queue.status().WithContext("odirect: creating another I/O queue");
  auto context = std::make_unique<IoContext>();
  context->queue = std::move(queue).value();
  std::lock_guard<std::mutex> lock(mutex_);
  ++created_;
  return context;
}

void OdirectStorage::Release(std::unique_ptr<IoContext> context) {
  if (context == nullptr || context->broken) return;
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    pool_.push_back(std::move(context));
  } catch (...) {
    // Out of memory growing the pool: the context is simply freed.
  }
}

std::size_t OdirectStorage::contexts_created() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return created_;
}

Result<std::unique_ptr<File>> OdirectStorage::Open(const std::string& path,
                                                   const OpenOptions& options) {
  return Guarded("opening", path, [&]() -> Result<std::unique_ptr<File>> {
    // Read-modify-write of partial blocks needs read access, also when writing.
    const int fd = OpenRetrying(path, O_DIRECT | OpenFlags(options.mode, /*readable_writes=*/true));
    if (fd < 0) {
      if (errno == EINVAL) {
        IOMIMIC_RETURN_IF_ERROR(CheckRegularPath(path));
        return Status::NotSupported("open " + path +
                                    " with O_DIRECT: the file system does not support direct "
                                    "I/O (use storage.backend posix there)");
      }
      return Status::FromErrno(errno, "open " + path);
    }
    IOMIMIC_RETURN_IF_ERROR(CheckRegularFile(fd, path));
    IOMIMIC_ASSIGN_OR_RETURN(const std::uint64_t size, FstatSizeOrClose(fd, path));
    ReserveExpectedSize(fd, options);
    return std::unique_ptr<File>(
        new OdirectFile(this, fd, path, options.mode, QueryDioAlignment(fd), size));
  });
}

Result<Buffer> OdirectStorage::Allocate(std::size_t size) {
  Buffer b = buffers_->Get(size);
  if (size != 0 && b.empty()) {
    return Status::ResourceExhausted("odirect: cannot allocate " + std::to_string(size) +
                                     " bytes aligned to " + std::to_string(alignment_));
  }
  return b;
}

Result<std::unique_ptr<Storage>> CreateOdirectStorage(const PluginContext& context) {
  IOMIMIC_ASSIGN_OR_RETURN(OdirectOptions options, ParseOptions(context.options));
  std::vector<EngineKind> candidates;
  if (options.engine == "io_uring") {
    candidates = {EngineKind::kIoUring};
  } else if (options.engine == "libaio") {
    candidates = {EngineKind::kLibaio};
  } else if (options.engine == "sync") {
    candidates = {EngineKind::kSync};
  } else {
    candidates = {EngineKind::kIoUring, EngineKind::kLibaio, EngineKind::kSync};
  }
  Status last;
  for (EngineKind kind : candidates) {
    Result<std::unique_ptr<IoQueue>> queue = MakeIoQueue(kind, options.queue_depth);
    if (queue.ok()) {
      return std::unique_ptr<Storage>(new OdirectStorage(options, kind, std::move(queue).value()));
    }
    last = queue.status();
  }
  return last.WithContext("odirect: engine '" + options.engine + "' is not available");
}

}  // namespace iomimic::odirect

namespace {
const IomimicOptionSpec kOdirectOptions[] = {
    {"queue_depth", "int", "32", "reads kept in flight by ReadBatch and large reads"},
    {"block_size", "bytes", "1M", "large reads are split into requests of this size"},
    {"engine", "string", "auto", "auto, io_uring, libaio or sync (one pread at a time)"},
    {"sync_on_close", "bool", "false", "fsync files opened for writing when they close"},
    {"alignment", "bytes", "0", "alignment of Allocate() buffers (0: the page size)"},
    {"buffer_cache", "bytes", "512M", "freed Allocate() buffers kept for reuse (0: none)"},
};
}  // namespace

// Serves direct:// folders: local files read with O_DIRECT, as s3dlio reads
// direct:// URIs (docs/plugins.md, "URL schemes").
IOMIMIC_DEFINE_STORAGE_PLUGIN_SERVING(
    "odirect", "direct", "1.0.0",
    "O_DIRECT I/O through io_uring or libaio, bypassing the page cache",
    iomimic::odirect::kCapabilities, kOdirectOptions, &iomimic::odirect::CreateOdirectStorage);
