// A stand-in for libcufile used only by the gds plugin's tests on machines
// without GPUDirect Storage. "Device" memory is the fake runtime's host
// memory, so cuFileRead is a pread through a buffered twin of the registered
// descriptor. It checks the documented call contract (driver open before use,
// O_DIRECT descriptors, reads into registered buffers within their bounds,
// everything released) and counts calls. It proves the plugin's cufile
// plumbing, not anything about GPUDirect.

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace {

struct Error {
  int err;
  int cu_err;
};

struct Descr {
  int type;
  union {
    int fd;
    void* handle;
  } handle;
  const void* fs_ops;
};

struct Handle {
  int twin_fd;  // a buffered descriptor of the same file
};

struct Fake {
  std::mutex mu;
  int driver_opens = 0;  // open sessions
  std::map<std::uintptr_t, std::size_t> registered;
  int live_handles = 0;
  long reads = 0;
  long bytes = 0;
  long violations = 0;
  int fail_next = 0;  // cuFile error code the next cuFileRead returns
  int refuse = 0;     // cuFile error code every cuFileHandleRegister returns
  long register_calls = 0;
};

Fake& F() {
  static Fake* f = new Fake;
  return *f;
}

constexpr Error kOk = {0, 0};
constexpr Error kInvalid = {5022, 0};  // a cuFile error code for "invalid value"

}  // namespace

extern "C" {

__attribute__((visibility("default"))) Error cuFileDriverOpen() {
  std::lock_guard<std::mutex> lock(F().mu);
  ++F().driver_opens;
  return kOk;
}

__attribute__((visibility("default"))) Error cuFileDriverClose_v2() {
  std::lock_guard<std::mutex> lock(F().mu);
  if (F().driver_opens == 0 || F().live_handles != 0 || !F().registered.empty()) {
    ++F().violations;  // closing with handles or buffers still registered
  }
  if (F().driver_opens > 0) --F().driver_opens;
  return kOk;
}

__attribute__((visibility("default"))) Error cuFileHandleRegister(void** handle, Descr* descr) {
  std::lock_guard<std::mutex> lock(F().mu);
  if (F().driver_opens == 0 || descr == nullptr || descr->type != 1 ||
      (::fcntl(descr->handle.fd, F_GETFL) & O_DIRECT) == 0) {
    ++F().violations;
    return kInvalid;
  }
  ++F().register_calls;
  // As cuFile on a block device without udev properties (VMs, containers).
  if (F().refuse != 0) return {F().refuse, 0};
  const std::string proc = "/proc/self/fd/" + std::to_string(descr->handle.fd);
  const int twin = ::open(proc.c_str(), O_RDONLY | O_CLOEXEC);
  if (twin < 0) return {5000 + 30, 0};
  *handle = new Handle{twin};
  ++F().live_handles;
  return kOk;
}

__attribute__((visibility("default"))) void cuFileHandleDeregister(void* handle) {
  std::lock_guard<std::mutex> lock(F().mu);
  if (handle == nullptr) {
    ++F().violations;
    return;
  }
  auto* h = static_cast<Handle*>(handle);
  ::close(h->twin_fd);
  delete h;
  --F().live_handles;
}

__attribute__((visibility("default"))) Error cuFileBufRegister(const void* base, std::size_t n,
                                                               int flags) {
  std::lock_guard<std::mutex> lock(F().mu);
  if (F().driver_opens == 0 || flags != 0 || n == 0) {
    ++F().violations;
    return kInvalid;
  }
  F().registered[reinterpret_cast<std::uintptr_t>(base)] = n;
  return kOk;
}

__attribute__((visibility("default"))) Error cuFileBufDeregister(const void* base) {
  std::lock_guard<std::mutex> lock(F().mu);
  if (F().registered.erase(reinterpret_cast<std::uintptr_t>(base)) == 0) {
    ++F().violations;
    return kInvalid;
  }
  return kOk;
}

__attribute__((visibility("default"))) ssize_t cuFileRead(void* handle, void* base,
                                                          std::size_t size, off_t file_offset,
                                                          off_t device_offset) {
  int fd = -1;
  {
    std::lock_guard<std::mutex> lock(F().mu);
    auto it = F().registered.find(reinterpret_cast<std::uintptr_t>(base));
    if (handle == nullptr || it == F().registered.end() || device_offset < 0 ||
        static_cast<std::size_t>(device_offset) + size > it->second) {
      ++F().violations;
      return -kInvalid.err;
    }
    if (F().fail_next != 0) {
      const int code = F().fail_next;
      F().fail_next = 0;
      return -code;
    }
    fd = static_cast<Handle*>(handle)->twin_fd;
  }
  std::size_t done = 0;
  while (done < size) {
    ssize_t n = ::pread(fd, static_cast<char*>(base) + device_offset + done, size - done,
                        file_offset + static_cast<off_t>(done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return -1;  // errno set
    }
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
  }
  std::lock_guard<std::mutex> lock(F().mu);
  ++F().reads;
  F().bytes += static_cast<long>(done);
  return static_cast<ssize_t>(done);
}

// --- test controls ----------------------------------------------------------

__attribute__((visibility("default"))) void fake_cufile_fail_next_read(int code) {
  std::lock_guard<std::mutex> lock(F().mu);
  F().fail_next = code;
}

// While `code` is not 0, every cuFileHandleRegister fails with it.
__attribute__((visibility("default"))) void fake_cufile_refuse_handles(int code) {
  std::lock_guard<std::mutex> lock(F().mu);
  F().refuse = code;
}

__attribute__((visibility("default"))) long fake_cufile_register_calls() {
  std::lock_guard<std::mutex> lock(F().mu);
  return F().register_calls;
}

// Returns {open driver sessions, registered buffers, live handles, reads,
// bytes, contract violations}.
__attribute__((visibility("default"))) void fake_cufile_counters(long out[6]) {
  std::lock_guard<std::mutex> lock(F().mu);
  out[0] = F().driver_opens;
  out[1] = static_cast<long>(F().registered.size());
  out[2] = F().live_handles;
  out[3] = F().reads;
  out[4] = F().bytes;
  out[5] = F().violations;
}

}  // extern "C"
