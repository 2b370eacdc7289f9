// iomimic plugin SDK: the storage seam.
//
// Every byte iomimic reads or writes moves through a Storage back end: format
// plugins never call open/read/write themselves, they ask the Storage for a
// File and transfer byte ranges through it. One Storage instance exists per
// run and rank. Unless a capability says otherwise, a Storage and the Files
// it returns are safe for concurrent use by several threads (each File may be
// used by one thread at a time, several Files may be used concurrently).
//
// Methods never throw. Paths are strings in the back end's namespace; for
// file-system back ends they are ordinary paths.

#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "iomimic/buffer.h"
#include "iomimic/status.h"

namespace iomimic {

enum class OpenMode : std::uint8_t {
  kRead = 0,       // existing file, read only
  kWrite = 1,      // create or truncate, write only
  kReadWrite = 2,  // create if missing, read and write, no truncation
};

// What the caller intends to do with a file, so a back end can pick hints
// (readahead, madvise, queue depth). Hints never change results.
enum class AccessHint : std::uint8_t { kNormal = 0, kSequential = 1, kRandom = 2, kWholeFile = 3 };

struct OpenOptions {
  OpenMode mode = OpenMode::kRead;
  AccessHint hint = AccessHint::kNormal;
  // For kWrite: the final size when known (lets a back end preallocate).
  std::uint64_t expected_size = 0;
  // For reads: the bytes must come from the storage, not from a page cache
  // this host already holds (a checkpoint read back by its writer, a KV-cache
  // entry read after it was written). A back end that reads through the
  // page cache drops the file's cached pages when it opens (posix_fadvise
  // POSIX_FADV_DONTNEED, which writes nothing back and drops clean pages
  // only); one that bypasses it (direct I/O, an object store) ignores it.
  // Dropping is best effort and never an error. Results report it.
  bool drop_cache = false;
};

// One request of a batched read. The back end fills `bytes_read` and `status`.
struct ReadRequest {
  std::uint64_t offset = 0;
  std::span<std::byte> destination;
  std::size_t bytes_read = 0;
  Status status;
};

// A figure a back end measured, for the results (summary.json:
// iomimic.plugins.storage.statistics, each summed over the ranks).
struct StorageStatistic {
  std::string name;  // snake_case ending in its unit: "staged_bytes", "h2d_seconds"
  double value = 0;
};

struct FileInfo {
  std::uint64_t size = 0;
  bool is_directory = false;
};

// What a back end can do and what it actually did. `data_path` says which
// mechanism really ran (e.g. "pread", "io_uring", "cufile", "cuda-bounce",
// "emulated"), so results never claim a path that was not taken.
struct StorageCapabilities {
  // Offsets, lengths and buffer addresses of reads must be multiples of this
  // (1 = no requirement). Back ends with alignment > 1 handle unaligned
  // requests themselves by bouncing through aligned buffers.
  std::size_t alignment = 1;
  bool async = false;       // ReadBatch overlaps requests
  bool collective = false;  // ranks cooperate (MPI-IO)
  // Several ranks may write disjoint parts of one file and read it back
  // consistently (MPI-IO on a shared file system). The core then generates
  // every file with all ranks together, through File::WriteAtAll.
  bool shared_files = false;
  bool device_memory = false;  // Allocate returns kDevice buffers
  bool thread_safe = true;     // see the header comment
  // Objects, not files (object stores such as S3): a file opened kWrite
  // appears, whole and under its own name, only when its Close succeeds,
  // never when the write is abandoned (File::Abort, or destruction without
  // Close). The core then writes under the final name instead of a
  // temporary name and Rename, and checks a resumed file by its size.
  // Directories are name prefixes: CreateDirectories creates nothing, a
  // directory exists while something is under it, and the local file
  // system's free space says nothing about room for the data.
  bool objects = false;
  std::uint32_t queue_depth = 1;  // requests in flight per ReadBatch
  std::string data_path;          // mechanism actually used
};

// An open file. Obtained from Storage::Open; closed on destruction if Close
// was not called (errors of that implicit close are lost, so writers call
// Close and check it). A File is destroyed before the Storage that opened it.
class File {
 public:
  File() = default;
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  virtual ~File() = default;

  // Reads up to destination.size() bytes at `offset` into `destination`.
  // Returns the number of bytes read, which is smaller than requested only at
  // the end of the file (0 at or past the end). Errors name path and offset.
  virtual Result<std::size_t> ReadAt(std::uint64_t offset, std::span<std::byte> destination) = 0;

  // Writes all of `source` at `offset`, extending the file as needed. A
  // short write is retried internally; any failure is an error naming the
  // path and offset (ENOSPC becomes kResourceExhausted).
  virtual Status WriteAt(std::uint64_t offset, std::span<const std::byte> source) = 0;

  // Performs every request; returns the first error, and fills each
  // request's own status. The default runs them one after another with
  // ReadAt; asynchronous back ends override it to keep several in flight.
  virtual Status ReadBatch(std::span<ReadRequest> requests) {
    Status first;
    for (ReadRequest& r : requests) {
      Result<std::size_t> n = ReadAt(r.offset, r.destination);
      if (n.ok()) {
        r.bytes_read = *n;
        r.status = Status::OK();
      } else {
        r.bytes_read = 0;
        r.status = n.status();
        if (first.ok()) first = r.status;
      }
    }
    return first;
  }

  // One rank's part of a write that all ranks make to the same file together
  // (shared-file generation): every rank opens the file, then calls this the
  // same number of times in the same order, each with its own range (disjoint
  // from the others', possibly empty), then closes the file; a rank must keep
  // making the calls even when it has nothing left to write. Errors are as
  // WriteAt's. The default writes independently with WriteAt; collective back
  // ends make each call one collective write (MPI_File_write_at_all).
  virtual Status WriteAtAll(std::uint64_t offset, std::span<const std::byte> source) {
    return source.empty() ? Status::OK() : WriteAt(offset, source);
  }

  // Makes written data durable (fsync or the back end's equivalent).
  virtual Status Sync() = 0;

  // Current size in bytes.
  virtual Result<std::uint64_t> Size() = 0;

  // Releases the file. Further calls fail. Returns errors a deferred write
  // may report at close.
  virtual Status Close() = 0;

  // Abandons a file being written, after a failure: on back ends with
  // `objects` nothing of it becomes visible (an upload in progress is
  // cancelled); others close it, and the caller removes what was written.
  // Further calls fail. The default is Close().
  virtual Status Abort() { return Close(); }

  // The path this file was opened with.
  virtual const std::string& path() const = 0;
};

// OK when `size` bytes at `offset` lie inside `buffer`; otherwise
// InvalidArgument "<who>: <size> bytes at offset <offset> end past the
// <buffer size>-byte buffer". For Storage::CopyIntoBuffer and CopyOutOfBuffer
// and their overrides. Only building an error message can throw.
inline Status CheckBufferRange(const Buffer& buffer, std::size_t offset, std::size_t size,
                               std::string_view who) {
  if (offset <= buffer.size() && size <= buffer.size() - offset) return Status::OK();
  return Status::InvalidArgument(std::string(who) + ": " + std::to_string(size) +
                                 " bytes at offset " + std::to_string(offset) + " end past the " +
                                 std::to_string(buffer.size()) + "-byte buffer");
}

class Storage {
 public:
  Storage() = default;
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  virtual ~Storage() = default;

  // The plugin name, e.g. "posix".
  virtual std::string name() const = 0;

  // Capabilities and the data path in use. Stable for the Storage's life.
  virtual StorageCapabilities capabilities() const = 0;

  // Opens `path`. kRead on a missing file returns kNotFound. The caller owns
  // the returned File and must destroy it before the Storage.
  virtual Result<std::unique_ptr<File>> Open(const std::string& path,
                                             const OpenOptions& options) = 0;

  // Creates `path` and any missing parents. Existing directories are fine.
  virtual Status CreateDirectories(const std::string& path) = 0;

  // Removes one file. kNotFound if it does not exist.
  virtual Status Remove(const std::string& path) = 0;

  // Atomically replaces `to` with `from` (rename(2) semantics).
  virtual Status Rename(const std::string& from, const std::string& to) = 0;

  // Size and type of `path`; kNotFound if it does not exist.
  virtual Result<FileInfo> Stat(const std::string& path) = 0;

  // What the back end measured so far on this rank (bytes staged, time spent
  // in a copy, faults injected...): figures the core cannot count itself.
  // Names are the same on every rank. Decorators report their inner back
  // end's and add their own. Thread-safe. Empty by default.
  virtual std::vector<StorageStatistic> Statistics() const { return {}; }

  // Returns a buffer of `size` bytes that this back end reads into directly
  // (aligned, pinned or device memory as it needs). Host buffers
  // (host_accessible()) may also be written from; device buffers are for
  // reads only.
  virtual Result<Buffer> Allocate(std::size_t size) {
    std::size_t align = capabilities().alignment;
    Buffer b = Buffer::AllocateHost(size, align < 64 ? 64 : align);
    if (size != 0 && b.empty()) {
      return Status::ResourceExhausted("cannot allocate " + std::to_string(size) + " bytes");
    }
    return b;
  }

  // Copies `source` (host memory) into `destination`, a buffer from this
  // storage's Allocate, starting `offset` bytes in; the copy is complete when
  // it returns. Into device memory this is a host-to-device copy (what a
  // KV-cache accelerator tier does to place an entry, docs/kvcache.md).
  // InvalidArgument (CheckBufferRange) when the range ends past the buffer.
  // The default copies into host-accessible buffers with memcpy and returns
  // NotSupported for device buffers: a back end whose Allocate hands out
  // device memory overrides it. Decorators forward it to their inner back
  // end. Thread-safe for distinct ranges.
  virtual Status CopyIntoBuffer(Buffer& destination, std::size_t offset,
                                std::span<const std::byte> source) {
    if (offset > destination.size() || source.size() > destination.size() - offset) {
      return CheckBufferRange(destination, offset, source.size(), name() + ": CopyIntoBuffer");
    }
    if (!destination.host_accessible()) {
      return Status::NotSupported(name() + ": CopyIntoBuffer: cannot copy into device memory");
    }
    if (!source.empty()) std::memcpy(destination.data() + offset, source.data(), source.size());
    return Status::OK();
  }

  // Copies destination.size() bytes of `source`, a buffer from this
  // storage's Allocate, starting `offset` bytes in, into `destination` (host
  // memory); complete when it returns. Out of device memory this is a
  // device-to-host copy. Errors and the default as CopyIntoBuffer's.
  virtual Status CopyOutOfBuffer(const Buffer& source, std::size_t offset,
                                 std::span<std::byte> destination) {
    if (offset > source.size() || destination.size() > source.size() - offset) {
      return CheckBufferRange(source, offset, destination.size(), name() + ": CopyOutOfBuffer");
    }
    if (!source.host_accessible()) {
      return Status::NotSupported(name() + ": CopyOutOfBuffer: cannot copy out of device memory");
    }
    if (!destination.empty()) {
      std::memcpy(destination.data(), source.data() + offset, destination.size());
    }
    return Status::OK();
  }
};

// Returns a buffer of at least `size` bytes that the caller may read and
// write from the CPU (formats fill and parse such buffers). It is the back
// end's own (Storage::Allocate), so transfers through it need no bounce, when
// that one is host-accessible; otherwise (a back end handing out device
// memory) it is host memory aligned to the back end's alignment, at least 64.
// Errors name `who` (the plugin, e.g. "myformat"): the back end's error with the
// context "<who>: allocating <size> bytes", or kResourceExhausted
// "<who>: cannot allocate <size> bytes of host memory". Only building an error
// message can throw (std::bad_alloc).
inline Result<Buffer> AllocateHostBuffer(Storage& storage, std::size_t size, std::string_view who) {
  Result<Buffer> made = storage.Allocate(size);
  if (!made.ok()) {
    return made.status().WithContext(std::string(who) + ": allocating " + std::to_string(size) +
                                     " bytes");
  }
  if (made->host_accessible() && made->size() >= size) return made;
  const std::size_t align = storage.capabilities().alignment;
  Buffer host = Buffer::AllocateHost(size, align < 64 ? 64 : align);
  if (size != 0 && host.empty()) {
    return Status::ResourceExhausted(std::string(who) + ": cannot allocate " +
                                     std::to_string(size) + " bytes of host memory");
  }
  return host;
}

}  // namespace iomimic
