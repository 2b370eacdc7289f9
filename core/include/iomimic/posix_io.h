// iomimic plugin SDK: whole transfers with pread(2) and pwrite(2), for back
// ends whose files are file descriptors (buffered and O_DIRECT reads and
// writes, a mapping's fallback, a staging path's host reads), and the
// descriptor chores of their Open. Header-only.
//
// Each call issues exactly the system calls the plain loop would: one
// pread/pwrite at `offset + done` for the rest of the range, again after a
// short transfer or EINTR, so the access pattern strace shows is that of the
// loop each back end used to write out itself (docs/dlio-compat.md §2.4).

#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>

#include "iomimic/status.h"
#include "iomimic/storage.h"

namespace iomimic {

// "<path> at offset <offset>", the way storage errors name their place.
inline std::string PathAt(const std::string& path, std::uint64_t offset) {
  return path + " at offset " + std::to_string(offset);
}

// Where a transfer loop stopped. `done` bytes were transferred before it
// stopped; `error` is the errno of the call that failed, 0 when none did.
struct PosixTransfer {
  std::size_t done = 0;
  int error = 0;
};

// When a read loop may stop before the range is full without a further
// pread that would return 0 (end of file is always a pread returning 0).
struct PreadEnd {
  // Stop once `offset + done` reaches this: the end of a file known not to
  // grow (posix's read-only files, their size at open), so a reader's calls
  // stay what read(2) would make. The default never stops early.
  std::uint64_t known_size = std::numeric_limits<std::uint64_t>::max();
  // Stop after a pread whose count is not a multiple of this (O_DIRECT: a
  // count off the block grid ends at end of file, and the next offset would
  // be unaligned). 0: never.
  std::size_t block = 0;
};

namespace posix_io_internal {

// The loop both directions share: `call(done)` transfers from byte `done` of
// `size` on and returns what the system call returned; EINTR calls it again
// with the same `done`, another failure stops with its errno, 0 stops, and
// `stop(n, done)` may stop after a transfer of `n` bytes.
template <typename Call, typename Stop>
PosixTransfer Loop(std::size_t size, Call&& call, Stop&& stop) {
  PosixTransfer t;
  while (t.done < size) {
    const ssize_t n = call(t.done);
    if (n < 0) {
      if (errno == EINTR) continue;
      t.error = errno;
      return t;
    }
    if (n == 0) break;
    t.done += static_cast<std::size_t>(n);
    if (stop(static_cast<std::size_t>(n), t.done)) break;
  }
  return t;
}

}  // namespace posix_io_internal

// pread(2) of `destination` at `offset` from `fd` until it is full, until a
// pread returns 0 (end of file), or until `end` says the file ends. EINTR is
// retried with the same arguments; a short read continues at the next byte.
// Returns how far it got and the errno of a failed pread (then `done` is
// what the earlier preads read). Never throws.
inline PosixTransfer PreadLoop(int fd, std::span<std::byte> destination, std::uint64_t offset,
                               const PreadEnd& end = {}) {
  return posix_io_internal::Loop(
      destination.size(),
      [&](std::size_t done) {
        return ::pread(fd, destination.data() + done, destination.size() - done,
                       static_cast<off_t>(offset + done));
      },
      [&](std::size_t n, std::size_t done) {
        return offset + done >= end.known_size || (end.block != 0 && n % end.block != 0);
      });
}

// pwrite(2) of all of `source` at `offset` to `fd`. EINTR is retried with the
// same arguments; a short write continues with the rest. Stops at a failed
// pwrite (`error` its errno) or at one that writes 0 bytes (`error` 0 and
// `done` < source.size()). Never throws.
inline PosixTransfer PwriteLoop(int fd, std::span<const std::byte> source, std::uint64_t offset) {
  return posix_io_internal::Loop(
      source.size(),
      [&](std::size_t done) {
        return ::pwrite(fd, source.data() + done, source.size() - done,
                        static_cast<off_t>(offset + done));
      },
      [](std::size_t, std::size_t) { return false; });
}

// PreadLoop with the usual error: returns the bytes read, fewer than
// destination.size() only at end of file (0 at or past it); a failed pread
// becomes Status::FromErrno(errno, "pread <path> at offset <where>" + note),
// `where` the offset of the failed call (e.g. ENOENT kNotFound, EIO kIOError).
inline Result<std::size_t> PreadFull(int fd, std::span<std::byte> destination, std::uint64_t offset,
                                     const std::string& path, const PreadEnd& end = {},
                                     const char* note = "") {
  const PosixTransfer t = PreadLoop(fd, destination, offset, end);
  if (t.error != 0)
    return Status::FromErrno(t.error, "pread " + PathAt(path, offset + t.done) + note);
  return t.done;
}

// PwriteLoop with the usual errors: OK when all of `source` was written; a
// failed pwrite becomes Status::FromErrno(errno, "pwrite <path> at offset
// <where>") (ENOSPC kResourceExhausted), a pwrite that wrote nothing
// kIOError "pwrite <path> at offset <where>: wrote 0 bytes"; `where` is the
// offset of the call that stopped. What was written before stays written.
inline Status PwriteFull(int fd, std::span<const std::byte> source, std::uint64_t offset,
                         const std::string& path) {
  const PosixTransfer t = PwriteLoop(fd, source, offset);
  if (t.error != 0) return Status::FromErrno(t.error, "pwrite " + PathAt(path, offset + t.done));
  if (t.done < source.size()) {
    return Status::IOError("pwrite " + PathAt(path, offset + t.done) + ": wrote 0 bytes");
  }
  return Status::OK();
}

// The size fstat(2) gives for `fd` (opened on `path`). On failure closes
// `fd` and returns Status::FromErrno(errno, "fstat <path>"): for an Open that
// then gives up on the descriptor.
inline Result<std::uint64_t> FstatSizeOrClose(int fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    Status error = Status::FromErrno(errno, "fstat " + path);
    ::close(fd);
    return error;
  }
  return static_cast<std::uint64_t>(st.st_size);
}

// For a file opened kWrite with an expected size: reserves its blocks with
// fallocate(FALLOC_FL_KEEP_SIZE) without changing its length. Best effort:
// a file system without fallocate simply skips it. Otherwise does nothing.
inline void ReserveExpectedSize(int fd, const OpenOptions& options) {
  if (options.mode == OpenMode::kWrite && options.expected_size > 0) {
    (void)::fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, static_cast<off_t>(options.expected_size));
  }
}

}  // namespace iomimic
