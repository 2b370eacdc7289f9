#include "gds_storage.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <mutex>
#include <new>
#include <optional>
#include <set>
#include <shared_mutex>
#include <system_error>
#include <utility>
#include <vector>

#include "device_path.h"
#include "h2d_model.h"
#include "iomimic/posix_io.h"

namespace iomimic::gds {

// The descriptor's flags, and what capabilities() may claim (device memory on every data path).
constexpr std::uint64_t kCapabilities = IOMIMIC_CAP_DEVICE_MEMORY;

// What State holds: in iomimic::gds, not an anonymous namespace, because State
// (declared in gds_storage.h) has external linkage. The plugin exports none of
// it (hidden visibility), and no other file of the plugin uses these names.

constexpr std::uint64_t kMaxFileOffset =
    static_cast<std::uint64_t>(std::numeric_limits<off_t>::max());

std::size_t RoundUp(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

std::uint64_t Nanos(Clock::duration d) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
}

struct GdsOptions {
  PathOptions path;
  bool direct = false;
  std::size_t staging_size = 4u << 20;
  std::size_t allocation_cache = 256u << 20;
  bool report = false;
};

// Where a destination range lies relative to the device allocations.
enum class Where : std::uint8_t { kHost, kDevice, kStraddles };

struct Lookup {
  Where where = Where::kHost;
  std::byte* base = nullptr;  // the device block holding the range (kDevice)
};

// The address ranges of live device allocations, to tell a device
// destination from a host one. Thread-safe; lookups share a lock.
class DeviceRegistry {
 public:
  void Add(std::byte* base, std::size_t size) {
    std::unique_lock lock(mu_);
    regions_[Key(base)] = size;
  }

  void Remove(std::byte* base) {
    std::unique_lock lock(mu_);
    regions_.erase(Key(base));
  }

  Lookup Find(const std::byte* data, std::size_t size) const {
    const std::uintptr_t begin = Key(data);
    const std::uintptr_t end = begin + size;
    std::shared_lock lock(mu_);
    auto next = regions_.upper_bound(begin);  // first region starting after `begin`
    if (next != regions_.end() && next->first < end) return {Where::kStraddles, nullptr};
    if (next == regions_.begin()) return {Where::kHost, nullptr};
    auto holder = std::prev(next);
    const std::uintptr_t region_end = holder->first + holder->second;
    if (begin >= region_end) return {Where::kHost, nullptr};
    if (end > region_end) return {Where::kStraddles, nullptr};
    return {Where::kDevice, reinterpret_cast<std::byte*>(holder->first)};
  }

 private:
  static std::uintptr_t Key(const std::byte* p) { return reinterpret_cast<std::uintptr_t>(p); }

  mutable std::shared_mutex mu_;
  std::map<std::uintptr_t, std::size_t> regions_;
};

// Host staging buffers, created on demand (one per concurrently reading
// thread) and kept for reuse: pinned allocations are too slow to make per
// read.
class StagingPool {
 public:
  StagingPool(DevicePath* path, std::size_t capacity) : path_(path), capacity_(capacity) {}
  StagingPool(const StagingPool&) = delete;
  StagingPool& operator=(const StagingPool&) = delete;
  ~StagingPool() {
    for (StagingBuffer& b : free_) path_->DeleteStaging(b);
  }

  // A buffer held for the lease's lifetime.
  class Lease {
   public:
    Lease(StagingPool* pool, StagingBuffer buffer) : pool_(pool), buffer_(buffer) {}
    Lease(Lease&& other) noexcept
        : pool_(std::exchange(other.pool_, nullptr)), buffer_(other.buffer_) {}
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    Lease& operator=(Lease&&) = delete;
    ~Lease() {
      if (pool_ != nullptr) pool_->Return(buffer_);
    }
    StagingBuffer& buffer() { return buffer_; }

   private:
    StagingPool* pool_;
    StagingBuffer buffer_;
  };

  Result<Lease> Acquire() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!free_.empty()) {
        StagingBuffer b = free_.back();
        free_.pop_back();
        return Lease(this, b);
      }
    }
    IOMIMIC_ASSIGN_OR_RETURN(StagingBuffer b, path_->NewStaging(capacity_));
    return Lease(this, b);
  }

  std::size_t capacity() const { return capacity_; }

 private:
  void Return(StagingBuffer buffer) {
    std::lock_guard<std::mutex> lock(mu_);
    try {
      free_.push_back(buffer);
    } catch (...) {
      path_->DeleteStaging(buffer);
    }
  }

  DevicePath* path_;
  const std::size_t capacity_;
  std::mutex mu_;
  std::vector<StagingBuffer> free_;
};

// The staging buffers of one transfer: a second one when the transfer spans
// more than one buffer and pinned memory for it is to be had (one still
// works: each copy out of it is waited for before it is reused).
struct StagingPair {
  StagingPool::Lease first;
  std::optional<StagingPool::Lease> second;

  int count() const { return second ? 2 : 1; }
  StagingBuffer& buffer(int k) { return k == 1 && second ? second->buffer() : first.buffer(); }
};

Result<StagingPair> AcquirePair(StagingPool& pool, std::size_t bytes) {
  IOMIMIC_ASSIGN_OR_RETURN(StagingPool::Lease first, pool.Acquire());
  StagingPair pair{std::move(first), std::nullopt};
  if (bytes > pair.first.buffer().capacity) {
    Result<StagingPool::Lease> more = pool.Acquire();
    if (more.ok()) pair.second.emplace(std::move(more).value());
  }
  return pair;
}

struct Counters {
  std::atomic<std::uint64_t> device_reads{0};
  std::atomic<std::uint64_t> device_bytes{0};
  std::atomic<std::uint64_t> storage_nanos{0};
  std::atomic<std::uint64_t> h2d_nanos{0};
  std::atomic<std::uint64_t> host_reads{0};
  std::atomic<std::uint64_t> host_bytes{0};
  std::atomic<std::uint64_t> allocations{0};
  std::atomic<std::uint64_t> cache_hits{0};
  std::atomic<std::uint64_t> refused_files{0};
  // Buffer copies, [0] host to device (CopyIntoBuffer), [1] device to host.
  std::atomic<std::uint64_t> copies[2] = {0, 0};
  std::atomic<std::uint64_t> copy_bytes[2] = {0, 0};
  std::atomic<std::uint64_t> copy_nanos[2] = {0, 0};
};

// Everything the storage, its files and its buffers share. Buffers keep it
// alive, so a buffer released after the storage still frees correctly.
struct State {
  State(GdsOptions opts, PathSelection selection, int rank_in)
      : options(std::move(opts)),
        path(std::move(selection.path)),
        reason(std::move(selection.reason)),
        data_path(DataPathName(path->kind())),
        direct_reads(options.direct || path->reads_directly()),
        rank(rank_in),
        staging(path.get(), options.staging_size) {}

  ~State() {
    for (auto& [size, block] : cache) path->FreeDevice(block, size);
  }

  // Device memory of `size` bytes, from the release cache when a block of
  // the same rounded size is there.
  Result<std::byte*> AllocateDevice(std::size_t size) {
    const std::size_t rounded = RoundUp(size, kBlockAlignment);
    std::byte* block = nullptr;
    {
      std::lock_guard<std::mutex> lock(cache_mu);
      auto it = cache.find(rounded);
      if (it != cache.end()) {
        block = it->second;
        cache.erase(it);
        cached_bytes -= rounded;
        counters.cache_hits.fetch_add(1, std::memory_order_relaxed);
      }
    }
    if (block == nullptr) {
      IOMIMIC_ASSIGN_OR_RETURN(void* fresh, path->AllocateDevice(rounded));
      block = static_cast<std::byte*>(fresh);
    }
    try {
      registry.Add(block, rounded);
    } catch (...) {
      path->FreeDevice(block, rounded);
      throw;  // std::bad_alloc, turned into ResourceExhausted by Allocate
    }
    counters.allocations.fetch_add(1, std::memory_order_relaxed);
    return block;
  }

  // Takes a block back: keeps it for reuse while the cache has room.
  void ReleaseDevice(std::byte* block, std::size_t size) {
    const std::size_t rounded = RoundUp(size, kBlockAlignment);
    registry.Remove(block);
    {
      std::lock_guard<std::mutex> lock(cache_mu);
      if (cached_bytes + rounded <= options.allocation_cache) {
        try {
          cache.emplace(rounded, block);
          cached_bytes += rounded;
          return;
        } catch (...) {
          // Fall through and free it.
        }
      }
    }
    path->FreeDevice(block, rounded);
  }

  // CopyIntoBuffer's copy of `host` to `device` (inside one device block).
  Status CopyIn(std::byte* device, std::span<const std::byte> host);
  // CopyOutOfBuffer's copy of `device` (inside one device block) to `host`.
  Status CopyOut(std::span<std::byte> host, const std::byte* device);

  // cufile, mode=auto: whether files on the device `dev` are staged because
  // cuFile refused one of them. Registering every file again would cost a
  // refusal (and a cuFile log entry) per file.
  bool Refused(dev_t dev) {
    std::lock_guard<std::mutex> lock(refused_mu);
    return std::find(refused_devices.begin(), refused_devices.end(), dev) != refused_devices.end();
  }

  // Records that cuFile refused a file on `dev`; says so once per device on
  // stderr, since the run then measures another path for those files.
  void Refuse(dev_t dev, const std::string& file, const Status& why) {
    std::lock_guard<std::mutex> lock(refused_mu);
    if (std::find(refused_devices.begin(), refused_devices.end(), dev) != refused_devices.end()) {
      return;
    }
    refused_devices.push_back(dev);
    std::fprintf(stderr,
                 "iomimic: gds: rank %d: %s: %s; mode=auto stages the files of this file system "
                 "through pinned host memory (as mode=cuda-bounce does) and counts them in "
                 "gds_cufile_refused_files\n",
                 rank, file.c_str(), why.message().c_str());
  }

  const GdsOptions options;
  const std::unique_ptr<DevicePath> path;
  const std::string reason;
  const std::string data_path;
  const bool direct_reads;  // read descriptors are O_DIRECT
  const int rank;
  DeviceRegistry registry;
  StagingPool staging;  // destroyed before `path`, which frees its buffers
  Counters counters;
  std::mutex cache_mu;
  std::multimap<std::size_t, std::byte*> cache;  // rounded size -> free block
  std::size_t cached_bytes = 0;
  std::mutex refused_mu;
  std::vector<dev_t> refused_devices;  // cufile: devices whose files cuFile refused
};

// Chunks of the staging size, two buffers alternating: a chunk is copied
// into staging memory while the previous one goes to the device.
Status State::CopyIn(std::byte* device, std::span<const std::byte> host) {
  IOMIMIC_ASSIGN_OR_RETURN(StagingPair pair, AcquirePair(staging, host.size()));
  bool pending[2] = {false, false};
  Status status;
  std::size_t done = 0;
  for (int k = 0; done < host.size(); k = (k + 1) % pair.count()) {
    StagingBuffer& b = pair.buffer(k);
    if (pending[k]) {
      pending[k] = false;
      status = path->WaitCopies(b);
      if (!status.ok()) break;
    }
    const std::size_t n = std::min(host.size() - done, b.capacity);
    std::memcpy(b.data, host.data() + done, n);
    status = path->StartHostToDevice(device + done, b.data, n, b);
    if (!status.ok()) break;
    pending[k] = true;
    done += n;
  }
  // Every path out waits: a staging buffer goes back only when no copy uses it.
  for (int k = 0; k < 2; ++k) {
    if (!pending[k]) continue;
    Status waited = path->WaitCopies(pair.buffer(k));
    if (status.ok()) status = waited;
  }
  return status;
}

// The mirror of CopyIn: a chunk is copied out of staging memory to `host`
// while the next one comes from the device.
Status State::CopyOut(std::span<std::byte> host, const std::byte* device) {
  IOMIMIC_ASSIGN_OR_RETURN(StagingPair pair, AcquirePair(staging, host.size()));
  struct InFlight {
    std::size_t at = 0, n = 0;
    bool pending = false;
  } flight[2];
  // Waits for the copy into buffer `k` and moves its bytes to `host`.
  auto land = [&](int k) -> Status {
    if (!flight[k].pending) return Status::OK();
    flight[k].pending = false;
    StagingBuffer& b = pair.buffer(k);
    IOMIMIC_RETURN_IF_ERROR(path->WaitCopies(b));
    std::memcpy(host.data() + flight[k].at, b.data, flight[k].n);
    return Status::OK();
  };
  Status status;
  std::size_t done = 0;
  for (int k = 0; done < host.size(); k = (k + 1) % pair.count()) {
    status = land(k);
    if (!status.ok()) break;
    StagingBuffer& b = pair.buffer(k);
    const std::size_t n = std::min(host.size() - done, b.capacity);
    status = path->StartDeviceToHost(b.data, device + done, n, b);
    if (!status.ok()) break;
    flight[k] = {done, n, true};
    done += n;
  }
  for (int k = 0; k < 2; ++k) {
    Status landed = land(k);
    if (status.ok()) status = landed;
  }
  return status;
}

namespace {

// Frees a device buffer; `context` is a heap-held reference to the State.
void ReleaseDeviceBuffer(void* context, void* data, std::size_t size) {
  auto* state = static_cast<std::shared_ptr<State>*>(context);
  (*state)->ReleaseDevice(static_cast<std::byte*>(data), size);
  delete state;
}

// pread until `size` bytes, end of file, or (O_DIRECT) a short read that
// ends off the block grid, which also means end of file.
Result<std::size_t> PreadFully(int fd, std::byte* data, std::size_t size, std::uint64_t offset,
                               bool direct, const std::string& path) {
  PreadEnd end;
  if (direct) end.block = kBlockAlignment;
  return PreadFull(fd, std::span<std::byte>(data, size), offset, path, end,
                   direct ? " (O_DIRECT)" : "");
}

// One chunk read into staging memory: `data` points at the bytes of the
// requested offset. `asked` is how many of them the chunk tried to read;
// `size` < `asked` means end of file.
struct Chunk {
  const std::byte* data = nullptr;
  std::size_t size = 0;
  std::size_t asked = 0;
};

// Reads up to `want` bytes at `offset` into `staging`. With O_DIRECT the
// read covers whole blocks around the range, so a chunk holds at most the
// staging capacity minus the offset's position in its block; callers loop.
Result<Chunk> ReadChunk(int fd, bool direct, std::uint64_t offset, std::size_t want,
                        StagingBuffer& staging, const std::string& path) {
  if (!direct) {
    const std::size_t asked = std::min(want, staging.capacity);
    IOMIMIC_ASSIGN_OR_RETURN(std::size_t got,
                             PreadFully(fd, staging.data, asked, offset, false, path));
    return Chunk{staging.data, got, asked};
  }
  const std::uint64_t aligned = offset / kBlockAlignment * kBlockAlignment;
  const std::size_t head = static_cast<std::size_t>(offset - aligned);
  const std::size_t asked = std::min(want, staging.capacity - head);
  const std::size_t length = RoundUp(head + asked, kBlockAlignment);
  IOMIMIC_ASSIGN_OR_RETURN(std::size_t got,
                           PreadFully(fd, staging.data, length, aligned, true, path));
  const std::size_t usable = got > head ? std::min(got - head, asked) : 0;
  return Chunk{staging.data + head, usable, asked};
}

class GdsFile final : public File {
 public:
  GdsFile(std::shared_ptr<State> state, std::string path, int read_fd, int write_fd)
      : state_(std::move(state)), path_(std::move(path)), read_fd_(read_fd), write_fd_(write_fd) {}
  ~GdsFile() override { (void)Close(); }

  Result<std::size_t> ReadAt(std::uint64_t offset, std::span<std::byte> destination) override {
    try {
      return ReadAtImpl(offset, destination);
    } catch (const std::bad_alloc&) {
      return Status::ResourceExhausted("out of memory reading " + PathAt(path_, offset));
    } catch (const std::exception& e) {
      return Status::Internal("reading " + PathAt(path_, offset) + ": " + e.what());
    } catch (...) {
      return Status::Internal("reading " + PathAt(path_, offset) + ": unknown exception");
    }
  }

  Status WriteAt(std::uint64_t offset, std::span<const std::byte> source) override {
    if (closed_) return Status::InvalidArgument(path_ + ": write on a closed file");
    if (write_fd_ < 0) {
      return Status::InvalidArgument(path_ + ": opened for reading only; cannot write at offset " +
                                     std::to_string(offset));
    }
    if (source.empty()) return Status::OK();
    if (state_->registry.Find(source.data(), source.size()).where != Where::kHost) {
      return Status::NotSupported(
          "pwrite " + PathAt(path_, offset) +
          ": the source is device memory; the gds back end writes from host memory only "
          "(GDS writes are out of scope)");
    }
    return PwriteFull(write_fd_, source, offset, path_);
  }

  Status Sync() override {
    if (closed_) return Status::InvalidArgument(path_ + ": sync on a closed file");
    if (::fsync(write_fd_ >= 0 ? write_fd_ : read_fd_) != 0) {
      return Status::FromErrno(errno, "fsync " + path_);
    }
    return Status::OK();
  }

  Result<std::uint64_t> Size() override {
    if (closed_) return Status::InvalidArgument(path_ + ": size of a closed file");
    struct stat st {};
    if (::fstat(read_fd_ >= 0 ? read_fd_ : write_fd_, &st) != 0) {
      return Status::FromErrno(errno, "fstat " + path_);
    }
    return static_cast<std::uint64_t>(st.st_size);
  }

  Status Close() override {
    if (closed_) return Status::OK();
    closed_ = true;
    if (handle_ != nullptr) state_->path->DeregisterFile(handle_);
    handle_ = nullptr;
    Status result;
    if (read_fd_ >= 0 && ::close(read_fd_) != 0) {
      result = Status::FromErrno(errno, "close " + path_);
    }
    if (write_fd_ >= 0 && write_fd_ != read_fd_ && ::close(write_fd_) != 0 && result.ok()) {
      result = Status::FromErrno(errno, "close " + path_);
    }
    read_fd_ = write_fd_ = -1;
    return result;
  }

  const std::string& path() const override { return path_; }

 private:
  Result<std::size_t> ReadAtImpl(std::uint64_t offset, std::span<std::byte> destination) {
    if (closed_) return Status::InvalidArgument(path_ + ": read on a closed file");
    if (read_fd_ < 0) {
      return Status::InvalidArgument(path_ + ": opened for writing only; cannot read at offset " +
                                     std::to_string(offset));
    }
    if (destination.empty()) return std::size_t{0};
    if (offset > kMaxFileOffset || destination.size() > kMaxFileOffset - offset) {
      return Status::InvalidArgument("read of " + std::to_string(destination.size()) +
                                     " bytes at " + PathAt(path_, offset) +
                                     " goes beyond the largest file offset");
    }
    Lookup where = state_->registry.Find(destination.data(), destination.size());
    switch (where.where) {
      case Where::kHost:
        return ReadToHost(offset, destination);
      case Where::kDevice:
        return ReadToDevice(offset, destination, where.base);
      case Where::kStraddles:
        break;
    }
    return Status::InvalidArgument("read of " + std::to_string(destination.size()) + " bytes at " +
                                   PathAt(path_, offset) +
                                   ": the destination crosses the edge of a device buffer "
                                   "allocated by this storage");
  }

  // The host destination rule: a plain pread into the caller's memory.
  Result<std::size_t> ReadToHost(std::uint64_t offset, std::span<std::byte> destination) {
    std::size_t done = 0;
    if (!state_->direct_reads) {
      IOMIMIC_ASSIGN_OR_RETURN(
          done, PreadFully(read_fd_, destination.data(), destination.size(), offset, false, path_));
    } else {
      // O_DIRECT needs block-aligned offsets, lengths and memory: bounce.
      IOMIMIC_ASSIGN_OR_RETURN(StagingPool::Lease lease, state_->staging.Acquire());
      while (done < destination.size()) {
        const std::size_t want = destination.size() - done;
        IOMIMIC_ASSIGN_OR_RETURN(
            Chunk chunk, ReadChunk(read_fd_, true, offset + done, want, lease.buffer(), path_));
        std::memcpy(destination.data() + done, chunk.data, chunk.size);
        done += chunk.size;
        if (chunk.size < chunk.asked) break;  // end of file
      }
    }
    state_->counters.host_reads.fetch_add(1, std::memory_order_relaxed);
    state_->counters.host_bytes.fetch_add(done, std::memory_order_relaxed);
    return done;
  }

  Result<std::size_t> ReadToDevice(std::uint64_t offset, std::span<std::byte> destination,
                                   std::byte* block) {
    DevicePath& device = *state_->path;
    Counters& counters = state_->counters;
    std::size_t done = 0;
    if (device.reads_directly() && !staged_) {
      const Clock::time_point start = Clock::now();
      if (handle_ == nullptr) {
        // Registered on the first device read: files read only into host
        // memory (headers) never pay for it.
        IOMIMIC_ASSIGN_OR_RETURN(bool registered, Register(device));
        if (!registered) return ReadToDevice(offset, destination, block);  // staged_ now
      }
      const std::size_t device_offset = static_cast<std::size_t>(destination.data() - block);
      while (done < destination.size()) {
        Result<std::size_t> n = device.ReadDirect(handle_, block, device_offset + done,
                                                  destination.size() - done, offset + done);
        if (!n.ok()) return n.status().WithContext(PathAt(path_, offset + done));
        if (*n == 0) break;
        done += *n;
      }
      counters.storage_nanos.fetch_add(Nanos(Clock::now() - start), std::memory_order_relaxed);
    } else {
      IOMIMIC_ASSIGN_OR_RETURN(done, ReadStaged(offset, destination));
    }
    counters.device_reads.fetch_add(1, std::memory_order_relaxed);
    counters.device_bytes.fetch_add(done, std::memory_order_relaxed);
    return done;
  }

  // A device read through host staging: chunks of the staging size are read
  // into pinned (emulated: page-aligned) host memory and copied to
  // `destination`. With two staging buffers the copy of one chunk runs while
  // the next is read, as a loader that pins memory and copies asynchronously
  // does; the storage's own requests are the same either way.
  Result<std::size_t> ReadStaged(std::uint64_t offset, std::span<std::byte> destination) {
    DevicePath& device = *state_->path;
    Counters& counters = state_->counters;
    IOMIMIC_ASSIGN_OR_RETURN(StagingPair pair, AcquirePair(state_->staging, destination.size()));
    StagingBuffer* buffers[2] = {&pair.buffer(0), &pair.buffer(1)};
    const bool second = pair.count() == 2;
    bool pending[2] = {false, false};
    Clock::duration storage{};
    Clock::duration h2d{};
    // Waits for the copies out of buffer `k`; the time counts as the
    // host-to-device step, the part of it the reads did not hide.
    auto wait = [&](int k) -> Status {
      if (!pending[k]) return Status::OK();
      pending[k] = false;
      const Clock::time_point t = Clock::now();
      Status s = device.WaitCopies(*buffers[k]);
      h2d += Clock::now() - t;
      return s;
    };
    // Every path out waits for the copies in flight: a staging buffer goes
    // back to the pool only when no copy reads from it.
    auto finish = [&](Status status) -> Status {
      for (int k = 0; k < 2; ++k) {
        Status s = wait(k);
        if (status.ok() && !s.ok()) status = s.WithContext("staging " + PathAt(path_, offset));
      }
      counters.storage_nanos.fetch_add(Nanos(storage), std::memory_order_relaxed);
      counters.h2d_nanos.fetch_add(Nanos(h2d), std::memory_order_relaxed);
      return status;
    };
    std::size_t done = 0;
    for (int k = 0; done < destination.size(); k = second ? 1 - k : 0) {
      Status waited = wait(k);
      if (!waited.ok())
        return finish(waited.WithContext("staging " + PathAt(path_, offset + done)));
      StagingBuffer& buffer = *buffers[k];
      const std::size_t want = std::min(destination.size() - done, buffer.capacity);
      const Clock::time_point t0 = Clock::now();
      Result<Chunk> chunk =
          ReadChunk(read_fd_, state_->direct_reads, offset + done, want, buffer, path_);
      const Clock::time_point t1 = Clock::now();
      storage += t1 - t0;
      if (!chunk.ok()) return finish(chunk.status());
      if (chunk->size > 0) {
        Status started =
            device.StartHostToDevice(destination.data() + done, chunk->data, chunk->size, buffer);
        h2d += Clock::now() - t1;
        if (!started.ok()) {
          return finish(started.WithContext("staging " + std::to_string(chunk->size) +
                                            " bytes read from " + PathAt(path_, offset + done)));
        }
        pending[k] = true;
      }
      done += chunk->size;
      if (chunk->size < chunk->asked) break;  // end of file
    }
    IOMIMIC_RETURN_IF_ERROR(finish(Status::OK()));
    return done;
  }

  // cufile: registers the descriptor with cuFile. Returns false when cuFile
  // refused it and mode=auto stages this file instead (staged_ is then set);
  // a forced mode=cufile reports the refusal as an error, since the figures
  // would otherwise describe another path.
  Result<bool> Register(DevicePath& device) {
    struct stat st {};
    const bool known = ::fstat(read_fd_, &st) == 0;
    const bool stage = state_->options.path.mode == "auto";
    if (!(stage && known && state_->Refused(st.st_dev))) {
      Result<CufileHandle> handle = device.RegisterFile(read_fd_);
      if (handle.ok()) {
        handle_ = *handle;
        return true;
      }
      if (handle.status().code() != StatusCode::kNotSupported) {
        return handle.status().WithContext(path_);
      }
      if (!stage) {
        return Status::NotSupported(path_ + ": " + handle.status().message() +
                                    " (mode=cufile; mode=auto stages such files through pinned "
                                    "memory, mode=cuda-bounce stages every file)");
      }
      if (known) state_->Refuse(st.st_dev, path_, handle.status());
    }
    staged_ = true;
    state_->counters.refused_files.fetch_add(1, std::memory_order_relaxed);
    return false;
  }

  std::shared_ptr<State> state_;
  std::string path_;
  int read_fd_;
  int write_fd_;
  CufileHandle handle_ = nullptr;
  bool staged_ = false;  // cufile, mode=auto: cuFile refused this file
  bool closed_ = false;
};

Result<GdsOptions> ParseOptions(const PluginOptions& given) {
  // Errors get "storage plugin 'gds': " from the loader; parse without an
  // owner so that it is not repeated.
  const PluginOptions opts("", given.values());
  GdsOptions out;
  IOMIMIC_ASSIGN_OR_RETURN(out.path.mode, opts.GetString("mode", "auto"));
  if (out.path.mode != "auto" && out.path.mode != "cufile" && out.path.mode != "cuda-bounce" &&
      out.path.mode != "emulated") {
    return Status::InvalidArgument("option 'mode' = '" + out.path.mode +
                                   "' is not one of auto, cufile, cuda-bounce, emulated");
  }
  // Bandwidth: a byte count per second, "/s" optional ("25G", "25G/s").
  IOMIMIC_ASSIGN_OR_RETURN(std::string bandwidth, opts.GetString("h2d_bandwidth", "25G"));
  if (bandwidth.size() > 2 && bandwidth.compare(bandwidth.size() - 2, 2, "/s") == 0) {
    bandwidth.resize(bandwidth.size() - 2);
  }
  IOMIMIC_ASSIGN_OR_RETURN(
      std::uint64_t bytes_per_second,
      PluginOptions("", {{"h2d_bandwidth", bandwidth}}).GetBytes("h2d_bandwidth", 0));
  out.path.h2d_bytes_per_second = static_cast<double>(bytes_per_second);
  IOMIMIC_ASSIGN_OR_RETURN(std::string latency, opts.GetString("h2d_latency", "10us"));
  Result<double> latency_seconds = ParseDurationSeconds(latency);
  if (!latency_seconds.ok()) {
    return Status::InvalidArgument("option 'h2d_latency': " + latency_seconds.status().message());
  }
  out.path.h2d_latency_seconds = *latency_seconds;
  IOMIMIC_ASSIGN_OR_RETURN(out.direct, opts.GetBool("direct", false));
  IOMIMIC_ASSIGN_OR_RETURN(std::uint64_t staging, opts.GetBytes("staging_size", 4u << 20));
  if (staging < kBlockAlignment || staging > (std::uint64_t{1} << 30)) {
    return Status::InvalidArgument("option 'staging_size' = " + std::to_string(staging) +
                                   " must be between 4K and 1G");
  }
  out.staging_size = RoundUp(static_cast<std::size_t>(staging), kBlockAlignment);
  IOMIMIC_ASSIGN_OR_RETURN(std::uint64_t cache, opts.GetBytes("allocation_cache", 256u << 20));
  out.allocation_cache = static_cast<std::size_t>(cache);
  IOMIMIC_ASSIGN_OR_RETURN(std::int64_t device, opts.GetInt("device", -1));
  if (device < -1 || device > std::numeric_limits<int>::max()) {
    return Status::InvalidArgument("option 'device' = " + std::to_string(device) +
                                   " must be -1 (rank modulo the device count) or a GPU index");
  }
  out.path.device = static_cast<int>(device);
  IOMIMIC_ASSIGN_OR_RETURN(out.report, opts.GetBool("report", false));
  IOMIMIC_ASSIGN_OR_RETURN(out.path.cuda_runtime, opts.GetString("cuda_runtime", ""));
  IOMIMIC_ASSIGN_OR_RETURN(out.path.cufile_library, opts.GetString("cufile_library", ""));
  IOMIMIC_RETURN_IF_ERROR(CheckLibraryName(out.path.cuda_runtime, "cuda_runtime"));
  IOMIMIC_RETURN_IF_ERROR(CheckLibraryName(out.path.cufile_library, "cufile_library"));
  IOMIMIC_ASSIGN_OR_RETURN(out.path.cufile_log, opts.GetString("cufile_log", ""));
  return out;
}

// Storage::CopyIntoBuffer (`out` false) or CopyOutOfBuffer (`out` true) of
// `bytes` at `offset` of `buffer`, a device buffer: the checks, `copy`
// (which moves the bytes of the device range it is given) and the counting.
template <typename Copy>
Status DeviceBufferCopy(State& state, const Buffer& buffer, std::size_t offset, std::size_t bytes,
                        bool out, Copy copy) {
  // Strings are built only for errors: the copies are a hot path.
  const char* what = out ? "gds: CopyOutOfBuffer" : "gds: CopyIntoBuffer";
  try {
    IOMIMIC_RETURN_IF_ERROR(CheckBufferRange(buffer, offset, bytes, what));
    if (bytes == 0) return Status::OK();
    std::byte* device = const_cast<std::byte*>(buffer.data()) + offset;
    if (state.registry.Find(device, bytes).where != Where::kDevice) {
      return Status::InvalidArgument(std::string(what) + ": the " + std::to_string(buffer.size()) +
                                     "-byte device buffer is not one of this storage's (Allocate)");
    }
    const Clock::time_point start = Clock::now();
    Status status = copy(device);
    if (!status.ok()) {
      return status.WithContext(std::string(what) + " of " + std::to_string(bytes) +
                                " bytes at offset " + std::to_string(offset) + " (data path " +
                                state.data_path + ")");
    }
    const int k = out ? 1 : 0;
    state.counters.copies[k].fetch_add(1, std::memory_order_relaxed);
    state.counters.copy_bytes[k].fetch_add(bytes, std::memory_order_relaxed);
    state.counters.copy_nanos[k].fetch_add(Nanos(Clock::now() - start), std::memory_order_relaxed);
    return Status::OK();
  } catch (const std::bad_alloc&) {
    return Status::ResourceExhausted("gds: out of memory copying " + std::to_string(bytes) +
                                     " bytes between host and device");
  } catch (...) {
    return Status::Internal("gds: unexpected exception copying between host and device");
  }
}

// Logs the data path choice once per process and choice (several storages
// with the same choice log it once).
void LogChoiceOnce(const State& state) {
  static std::mutex mu;
  static std::set<std::string>* logged = new std::set<std::string>;
  const std::string line = "iomimic: gds: rank " + std::to_string(state.rank) + ": data path " +
                           state.data_path + " (" + state.reason + ")";
  std::lock_guard<std::mutex> lock(mu);
  if (logged->insert(line).second) std::fprintf(stderr, "%s\n", line.c_str());
}

}  // namespace

Result<std::unique_ptr<GdsStorage>> GdsStorage::Create(const PluginContext& context) {
  IOMIMIC_ASSIGN_OR_RETURN(GdsOptions options, ParseOptions(context.options));
  IOMIMIC_ASSIGN_OR_RETURN(PathSelection selection, SelectDevicePath(options.path, context.rank));
  auto state = std::make_shared<State>(std::move(options), std::move(selection), context.rank);
  if (state->options.report) LogChoiceOnce(*state);
  return std::unique_ptr<GdsStorage>(new GdsStorage(std::move(state)));
}

GdsStorage::~GdsStorage() {
  if (state_->options.report) std::fprintf(stderr, "%s\n", ReportLine().c_str());
}

StorageCapabilities GdsStorage::capabilities() const {
  StorageCapabilities caps = CapabilitiesAllowedBy(kCapabilities);  // device memory
  caps.alignment = state_->direct_reads ? kBlockAlignment : 1;
  caps.data_path = state_->data_path;
  return caps;
}

Result<std::unique_ptr<File>> GdsStorage::Open(const std::string& path,
                                               const OpenOptions& options) {
  auto open_fd = [&](int flags, bool direct) -> Result<int> {
    const int fd = OpenRetrying(path, flags | (direct ? O_DIRECT : 0));
    if (fd >= 0) {
      IOMIMIC_RETURN_IF_ERROR(CheckRegularFile(fd, path));
      return fd;
    }
    const int err = errno;
    if (direct && err == EINVAL) {
      return Status::FromErrno(err, "open " + path + " with O_DIRECT")
          .WithContext(state_->path->reads_directly()
                           ? "cuFile needs a file system with direct I/O"
                           : "the file system refuses direct I/O (set direct=false)");
    }
    return Status::FromErrno(err, "open " + path);
  };
  int read_fd = -1;
  int write_fd = -1;
  const bool direct = state_->direct_reads;
  switch (options.mode) {
    case OpenMode::kRead: {
      IOMIMIC_ASSIGN_OR_RETURN(read_fd, open_fd(O_RDONLY, direct));
      break;
    }
    case OpenMode::kWrite: {
      IOMIMIC_ASSIGN_OR_RETURN(write_fd, open_fd(O_WRONLY | O_CREAT | O_TRUNC, false));
      if (options.expected_size > 0) {
        // Best effort, as in posix: file systems without fallocate skip it.
        (void)::posix_fallocate(write_fd, 0, static_cast<off_t>(options.expected_size));
      }
      break;
    }
    case OpenMode::kReadWrite: {
      IOMIMIC_ASSIGN_OR_RETURN(write_fd, open_fd(O_RDWR | O_CREAT, false));
      if (direct) {
        // Reads bypass the page cache; writes stay buffered from host memory.
        Result<int> r = open_fd(O_RDONLY, true);
        if (!r.ok()) {
          ::close(write_fd);
          return r.status();
        }
        read_fd = *r;
      } else {
        read_fd = write_fd;
      }
      break;
    }
  }
  if (read_fd >= 0 && !direct) {
    if (options.drop_cache) (void)::posix_fadvise(read_fd, 0, 0, POSIX_FADV_DONTNEED);
    switch (options.hint) {
      case AccessHint::kSequential:
      case AccessHint::kWholeFile:
        (void)::posix_fadvise(read_fd, 0, 0, POSIX_FADV_SEQUENTIAL);
        break;
      case AccessHint::kRandom:
        (void)::posix_fadvise(read_fd, 0, 0, POSIX_FADV_RANDOM);
        break;
      case AccessHint::kNormal:
        break;
    }
  }
  try {
    return std::unique_ptr<File>(new GdsFile(state_, path, read_fd, write_fd));
  } catch (...) {
    if (read_fd >= 0) ::close(read_fd);
    if (write_fd >= 0 && write_fd != read_fd) ::close(write_fd);
    return Status::ResourceExhausted("out of memory opening " + path);
  }
}

Result<Buffer> GdsStorage::Allocate(std::size_t size) {
  if (size == 0) return Buffer();
  try {
    IOMIMIC_ASSIGN_OR_RETURN(std::byte * block, state_->AllocateDevice(size));
    auto* context = new (std::nothrow) std::shared_ptr<State>(state_);
    if (context == nullptr) {
      state_->ReleaseDevice(block, size);
      return Status::ResourceExhausted("cannot allocate " + std::to_string(size) +
                                       " bytes of device memory: out of host memory");
    }
    return Buffer(block, size, &ReleaseDeviceBuffer, context, MemoryKind::kDevice);
  } catch (const std::bad_alloc&) {
    return Status::ResourceExhausted("cannot allocate " + std::to_string(size) +
                                     " bytes of device memory: out of host memory");
  }
}

Status GdsStorage::CopyIntoBuffer(Buffer& destination, std::size_t offset,
                                  std::span<const std::byte> source) {
  if (destination.host_accessible()) return Storage::CopyIntoBuffer(destination, offset, source);
  return DeviceBufferCopy(*state_, destination, offset, source.size(), false,
                          [&](std::byte* device) { return state_->CopyIn(device, source); });
}

Status GdsStorage::CopyOutOfBuffer(const Buffer& source, std::size_t offset,
                                   std::span<std::byte> destination) {
  if (source.host_accessible()) return Storage::CopyOutOfBuffer(source, offset, destination);
  return DeviceBufferCopy(*state_, source, offset, destination.size(), true,
                          [&](std::byte* device) { return state_->CopyOut(destination, device); });
}

const std::string& GdsStorage::data_path() const { return state_->data_path; }

const std::string& GdsStorage::path_reason() const { return state_->reason; }

GdsStats GdsStorage::stats() const {
  const Counters& c = state_->counters;
  GdsStats s;
  s.device_reads = c.device_reads.load(std::memory_order_relaxed);
  s.device_bytes = c.device_bytes.load(std::memory_order_relaxed);
  s.storage_seconds = static_cast<double>(c.storage_nanos.load(std::memory_order_relaxed)) * 1e-9;
  s.h2d_seconds = static_cast<double>(c.h2d_nanos.load(std::memory_order_relaxed)) * 1e-9;
  s.host_reads = c.host_reads.load(std::memory_order_relaxed);
  s.host_bytes = c.host_bytes.load(std::memory_order_relaxed);
  s.allocations = c.allocations.load(std::memory_order_relaxed);
  s.allocation_cache_hits = c.cache_hits.load(std::memory_order_relaxed);
  s.cufile_refused_files = c.refused_files.load(std::memory_order_relaxed);
  s.h2d_copies = c.copies[0].load(std::memory_order_relaxed);
  s.h2d_copy_bytes = c.copy_bytes[0].load(std::memory_order_relaxed);
  s.h2d_copy_seconds = static_cast<double>(c.copy_nanos[0].load(std::memory_order_relaxed)) * 1e-9;
  s.d2h_copies = c.copies[1].load(std::memory_order_relaxed);
  s.d2h_copy_bytes = c.copy_bytes[1].load(std::memory_order_relaxed);
  s.d2h_copy_seconds = static_cast<double>(c.copy_nanos[1].load(std::memory_order_relaxed)) * 1e-9;
  return s;
}

std::vector<StorageStatistic> GdsStorage::Statistics() const {
  const GdsStats s = stats();
  return {
      {"gds_staged_bytes", static_cast<double>(s.device_bytes)},
      {"gds_device_reads", static_cast<double>(s.device_reads)},
      {"gds_storage_seconds", s.storage_seconds},
      {"gds_h2d_seconds", s.h2d_seconds},
      {"gds_host_bytes", static_cast<double>(s.host_bytes)},
      {"gds_host_reads", static_cast<double>(s.host_reads)},
      {"gds_device_allocations", static_cast<double>(s.allocations)},
      {"gds_allocation_cache_hits", static_cast<double>(s.allocation_cache_hits)},
      {"gds_cufile_refused_files", static_cast<double>(s.cufile_refused_files)},
      {"gds_h2d_copies", static_cast<double>(s.h2d_copies)},
      {"gds_h2d_copy_bytes", static_cast<double>(s.h2d_copy_bytes)},
      {"gds_h2d_copy_seconds", s.h2d_copy_seconds},
      {"gds_d2h_copies", static_cast<double>(s.d2h_copies)},
      {"gds_d2h_copy_bytes", static_cast<double>(s.d2h_copy_bytes)},
      {"gds_d2h_copy_seconds", s.d2h_copy_seconds},
  };
}

std::string GdsStorage::ReportLine() const {
  const GdsStats s = stats();
  char text[1024];
  std::snprintf(text, sizeof(text),
                "iomimic: gds: rank %d: data path %s [%s]: staged %llu bytes into device memory "
                "in %llu reads (storage %.6f s, host-to-device %.6f s); %llu bytes in %llu reads "
                "went to host memory; %llu device allocations (%llu from the cache); "
                "%llu files staged because cuFile refused them; buffer copies: %llu bytes in %llu "
                "to the device (%.6f s), %llu bytes in %llu from it (%.6f s)",
                state_->rank, state_->data_path.c_str(), state_->path->Describe().c_str(),
                static_cast<unsigned long long>(s.device_bytes),
                static_cast<unsigned long long>(s.device_reads), s.storage_seconds, s.h2d_seconds,
                static_cast<unsigned long long>(s.host_bytes),
                static_cast<unsigned long long>(s.host_reads),
                static_cast<unsigned long long>(s.allocations),
                static_cast<unsigned long long>(s.allocation_cache_hits),
                static_cast<unsigned long long>(s.cufile_refused_files),
                static_cast<unsigned long long>(s.h2d_copy_bytes),
                static_cast<unsigned long long>(s.h2d_copies), s.h2d_copy_seconds,
                static_cast<unsigned long long>(s.d2h_copy_bytes),
                static_cast<unsigned long long>(s.d2h_copies), s.d2h_copy_seconds);
  return text;
}

Status GdsStorage::CopyToHost(const std::byte* device, std::span<std::byte> host) const {
  if (host.empty()) return Status::OK();
  if (state_->registry.Find(device, host.size()).where != Where::kDevice) {
    return Status::InvalidArgument("CopyToHost: the source range of " +
                                   std::to_string(host.size()) +
                                   " bytes is not inside one device buffer of this storage");
  }
  return state_->path->DeviceToHost(host.data(), device, host.size());
}

Result<std::unique_ptr<Storage>> CreateGdsStorage(const PluginContext& context) {
  IOMIMIC_ASSIGN_OR_RETURN(std::unique_ptr<GdsStorage> storage, GdsStorage::Create(context));
  return std::unique_ptr<Storage>(std::move(storage));
}

}  // namespace iomimic::gds

namespace {
const IomimicOptionSpec kGdsOptions[] = {
    {"mode", "string", "auto",
     "data path: auto (cufile, else cuda-bounce, else emulated), cufile, cuda-bounce, emulated"},
    {"h2d_bandwidth", "bytes", "25G",
     "emulated: modelled host-to-device bandwidth in bytes/s (binary suffixes; 0 = unlimited)"},
    {"h2d_latency", "string", "10us", "emulated: modelled latency of each host-to-device copy"},
    {"direct", "bool", "false",
     "emulated and cuda-bounce: read with O_DIRECT (cufile always does)"},
    {"staging_size", "bytes", "4M", "size of each host staging buffer (one per reading thread)"},
    {"allocation_cache", "bytes", "256M", "released device memory kept for reuse (0 = none)"},
    {"device", "int", "-1", "GPU index; -1 = MPI rank modulo the number of GPUs"},
    {"report", "bool", "false", "log the data path choice and one statistics line to stderr"},
    {"cuda_runtime", "string", "",
     "CUDA runtime to dlopen: absolute path or bare name (default libcudart.so.13, .12, .11.0)"},
    {"cufile_library", "string", "",
     "cuFile library to dlopen: absolute path or bare name (default libcufile.so.0, .so)"},
    {"cufile_log", "string", "",
     "cuFile log file (CUFILE_LOGFILE_PATH); default $TMPDIR/iomimic-cufile-<pid>.log"},
};
}  // namespace

IOMIMIC_DEFINE_STORAGE_PLUGIN("gds", "1.0.0",
                              "GPUDirect-style staging into device memory: cufile, cuda-bounce, "
                              "or emulated without a GPU",
                              iomimic::gds::kCapabilities, kGdsOptions,
                              &iomimic::gds::CreateGdsStorage);
