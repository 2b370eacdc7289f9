// iomimic plugin SDK: what back ends whose files live in a file system share
// (the in-tree file back ends and the tests' POSIX storage): the
// metadata calls as plain POSIX calls, and open(2) the same way everywhere,
// so each back end writes only its own data path. Header-only.

#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <string>
#include <system_error>

#include "iomimic/status.h"
#include "iomimic/storage.h"

namespace iomimic {

// open(2) access flags for `mode`: kRead read only, kWrite creates and
// truncates, kReadWrite creates without truncating. With `readable_writes`
// the writing modes open O_RDWR (back ends that read what they write: mmap's
// mappings, O_DIRECT's read-modify-write of partial blocks).
inline int OpenFlags(OpenMode mode, bool readable_writes = false) {
  switch (mode) {
    case OpenMode::kRead:
      return O_RDONLY;
    case OpenMode::kWrite:
      return (readable_writes ? O_RDWR : O_WRONLY) | O_CREAT | O_TRUNC;
    case OpenMode::kReadWrite:
      return O_RDWR | O_CREAT;
  }
  return O_RDONLY;
}

// open(2) of `path` with `flags` | O_CLOEXEC and mode 0644, retried on EINTR.
// The open itself is non-blocking (O_NONBLOCK, cleared again before return
// unless `flags` asked for it), so that a named pipe in place of a data file
// cannot block it forever; callers then refuse anything that is not a
// regular file with CheckRegularFile. Returns the descriptor, or -1 with
// errno set (callers word their errors).
inline int OpenRetrying(const std::string& path, int flags) {
  int fd;
  do {
    fd = ::open(path.c_str(), flags | O_CLOEXEC | O_NONBLOCK, 0644);
  } while (fd < 0 && errno == EINTR);
  if (fd >= 0 && (flags & O_NONBLOCK) == 0) {
    const int current = ::fcntl(fd, F_GETFL);
    if (current >= 0) (void)::fcntl(fd, F_SETFL, current & ~O_NONBLOCK);
  }
  return fd;
}

// What a file of mode `mode` is, for messages: "a named pipe (FIFO)", ...
inline const char* FileTypeName(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a named pipe (FIFO)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

// OK when `fd` (opened on `path`) is a regular file. Otherwise closes `fd`
// and returns kInvalidArgument naming the path and what it is: data, index
// and checkpoint files are only ever regular files, and a pipe would block
// reads forever, a device such as /dev/zero (also behind a symlink) would
// never end (issue 13, defect 5; docs/security.md).
// Why an existing `path` is not a regular file (stat(2), symlinks followed),
// or OK (also when it does not exist: opening it then says so). For back ends
// that cannot open it themselves first (MPI-IO; O_DIRECT refuses pipes with
// EINVAL, which would read as "no direct I/O here").
inline Status CheckRegularPath(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return Status::OK();
  return Status::InvalidArgument(path + " is " + FileTypeName(st.st_mode) +
                                 ", not a regular file; refusing to read or write it");
}

// On success `size` (when not null) receives the file's size from the same
// fstat.
inline Status CheckRegularFile(int fd, const std::string& path, std::uint64_t* size = nullptr) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return Status::FromErrno(err, "fstat " + path);
  }
  if (S_ISREG(st.st_mode)) {
    if (size != nullptr) *size = static_cast<std::uint64_t>(st.st_size);
    return Status::OK();
  }
  ::close(fd);
  return Status::InvalidArgument(path + " is " + FileTypeName(st.st_mode) +
                                 ", not a regular file; refusing to read or write it");
}

// A Storage whose directories, renames and sizes are the file system's:
// derive from it and implement the data path (Open, capabilities, name).
class FileSystemStorage : public Storage {
 public:
  // mkdir -p; existing directories are fine.
  Status CreateDirectories(const std::string& path) override {
    std::error_code ec;
    std::filesystem::create_directories(path, ec);
    if (ec) return Status::FromErrno(ec.value(), "mkdir -p " + path);
    return Status::OK();
  }

  // unlink(2); kNotFound for a missing file.
  Status Remove(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return Status::FromErrno(errno, "unlink " + path);
    return Status::OK();
  }

  // rename(2): atomically replaces `to`.
  Status Rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) {
      return Status::FromErrno(errno, "rename " + from + " -> " + to);
    }
    return Status::OK();
  }

  // stat(2); kNotFound for a missing path.
  Result<FileInfo> Stat(const std::string& path) override {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
      const int err = errno;
      // Not "missing": the path exists, but its symbolic links go round.
      if (err == ELOOP) return Status::FromErrno(err, "stat " + path + " (a symbolic link loop)");
      return Status::FromErrno(err, "stat " + path);
    }
    FileInfo info;
    info.size = static_cast<std::uint64_t>(st.st_size);
    info.is_directory = S_ISDIR(st.st_mode);
    return info;
  }
};

}  // namespace iomimic
