// iomimic plugin SDK, for tests: what storage plugins' unit tests share:
// making a storage from its plugin factory with manifest-like options,
// reproducible byte patterns, and whole-file writes and reads (through the
// storage, or with plain system calls as the reference a back end is
// compared with). Header-only and free of any test framework: helpers return
// Status or Result for the test to REQUIRE. The cases every back end must
// pass are the conformance suite's (tests/conformance); these helpers serve
// the cases particular to one plugin.

#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "iomimic/plugin.h"
#include "iomimic/posix_io.h"
#include "iomimic/random.h"
#include "iomimic/status.h"
#include "iomimic/storage.h"

namespace iomimic::testing {

// Calls the storage plugin factory `factory` ((const PluginContext&) ->
// Result<std::unique_ptr<Storage>>) as the core would: the options owned by
// "storage plugin '<name>'" (so errors read as in a run), `inner` the back
// end a decorator wraps (null for others). Returns what the factory returns.
template <typename Factory>
Result<std::unique_ptr<Storage>> MakeStorage(Factory&& factory, std::string_view name,
                                             std::map<std::string, std::string> options,
                                             Storage* inner = nullptr) {
  PluginContext context;
  context.options = PluginOptions("storage plugin '" + std::string(name) + "'", std::move(options));
  context.inner = inner;
  return factory(context);
}

// `n` pseudo-random bytes, the same for the same `seed` (Xoshiro256): data
// whose every block differs, so a misplaced block cannot read back right.
inline std::vector<std::byte> Pattern(std::size_t n, std::uint64_t seed) {
  std::vector<std::byte> out(n);
  Xoshiro256(seed).Fill(out);
  return out;
}

// Writes `data` to `path` through `storage`: Open kWrite (creating or
// truncating), one WriteAt at 0, Close. Returns the first error.
inline Status WriteThrough(Storage& storage, const std::string& path,
                           std::span<const std::byte> data) {
  OpenOptions options;
  options.mode = OpenMode::kWrite;
  Result<std::unique_ptr<File>> file = storage.Open(path, options);
  if (!file.ok()) return file.status();
  IOMIMIC_RETURN_IF_ERROR((*file)->WriteAt(0, data));
  return (*file)->Close();
}

// The whole file at `path` read through `storage` in one ReadAt of its
// Size(); kCorruption when the read returns fewer bytes than that.
inline Result<std::vector<std::byte>> ReadThrough(Storage& storage, const std::string& path) {
  Result<std::unique_ptr<File>> file = storage.Open(path, OpenOptions{});
  if (!file.ok()) return file.status();
  Result<std::uint64_t> size = (*file)->Size();
  if (!size.ok()) return size.status();
  std::vector<std::byte> out(static_cast<std::size_t>(*size));
  Result<std::size_t> n = (*file)->ReadAt(0, out);
  if (!n.ok()) return n.status();
  if (*n != out.size()) {
    return Status::Corruption("read " + std::to_string(*n) + " of the " +
                              std::to_string(out.size()) + " bytes of " + path);
  }
  return out;
}

// Writes `data` to `path` with plain open(2)/pwrite(2)/fsync(2), bypassing
// every back end: the reference a back end's reads are compared with.
inline Status WritePlain(const std::string& path, std::span<const std::byte> data) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::FromErrno(errno, "open " + path);
  Status written = PwriteFull(fd, data, 0, path);
  if (written.ok() && ::fsync(fd) != 0) written = Status::FromErrno(errno, "fsync " + path);
  ::close(fd);
  return written;
}

// The whole file at `path` read with plain open(2)/pread(2).
inline Result<std::vector<std::byte>> ReadPlain(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, "open " + path);
  const off_t size = ::lseek(fd, 0, SEEK_END);
  if (size < 0) {
    const int err = errno;
    ::close(fd);
    return Status::FromErrno(err, "lseek " + path);
  }
  std::vector<std::byte> out(static_cast<std::size_t>(size));
  Result<std::size_t> n = PreadFull(fd, out, 0, path);
  ::close(fd);
  if (!n.ok()) return n.status();
  out.resize(*n);
  return out;
}

}  // namespace iomimic::testing
