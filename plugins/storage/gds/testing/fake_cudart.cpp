// A stand-in for libcudart used only by the gds plugin's tests on machines
// without a GPU. It implements the runtime calls the plugin resolves with
// host memory ("device" memory is malloc'd), checks that they are used the
// way the CUDA documentation requires (copies between the right kinds of
// memory, streams that exist, frees of live allocations) and counts them.
// It proves the plugin's cuda-bounce plumbing, not anything about a GPU.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

namespace {

constexpr int kSuccess = 0;
constexpr int kErrorInvalidValue = 1;
constexpr int kErrorMemoryAllocation = 2;
constexpr int kErrorInvalidDevice = 101;

// A copy queued on a stream: it happens at cudaStreamSynchronize, as late
// as a real asynchronous copy may, so a caller that writes the source or
// reads the destination before synchronising sees wrong bytes.
struct PendingCopy {
  void* dst;
  const void* src;
  std::size_t n;
};

struct Fake {
  std::mutex mu;
  std::map<std::uintptr_t, std::size_t> device;  // cudaMalloc'd blocks
  std::map<std::uintptr_t, std::size_t> pinned;  // cudaHostAlloc'd blocks
  std::set<void*> streams;
  std::map<void*, std::vector<PendingCopy>> queued;  // stream -> copies not yet done
  int device_count = 2;
  int count_error = kSuccess;  // what cudaGetDeviceCount returns
  long h2d_copies = 0;
  long h2d_bytes = 0;
  long d2h_copies = 0;  // cudaMemcpyAsync device to pinned (Storage::CopyOutOfBuffer)
  long d2h_bytes = 0;
  long syncs = 0;
  long violations = 0;     // calls that break the documented contract
  long max_in_flight = 0;  // most copies queued at a time, all streams together
};

Fake& F() {
  static Fake* f = new Fake;
  return *f;
}

// Whether [p, p+n) lies inside one block of `blocks`.
bool Inside(const std::map<std::uintptr_t, std::size_t>& blocks, const void* p, std::size_t n) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  auto it = blocks.upper_bound(a);
  if (it == blocks.begin()) return false;
  --it;
  return a + n <= it->first + it->second;
}

// Whether a queued copy reads from or writes to [p, p+n).
bool Queued(const void* p, std::size_t n) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  for (const auto& [stream, copies] : F().queued) {
    for (const PendingCopy& c : copies) {
      for (const void* q : {static_cast<const void*>(c.dst), c.src}) {
        const auto b = reinterpret_cast<std::uintptr_t>(q);
        if (a < b + c.n && b < a + n) return true;
      }
    }
  }
  return false;
}

}  // namespace

extern "C" {

// --- the runtime API subset -------------------------------------------------

__attribute__((visibility("default"))) int cudaGetDeviceCount(int* count) {
  std::lock_guard<std::mutex> lock(F().mu);
  if (F().count_error != kSuccess) return F().count_error;  // leaves *count untouched
  *count = F().device_count;
  return kSuccess;
}

__attribute__((visibility("default"))) int cudaSetDevice(int device) {
  std::lock_guard<std::mutex> lock(F().mu);
  return device >= 0 && device < F().device_count ? kSuccess : kErrorInvalidDevice;
}

__attribute__((visibility("default"))) const char* cudaGetErrorString(int error) {
  switch (error) {
    case kSuccess:
      return "no error";
    case 35:
      return "CUDA driver version is insufficient for CUDA runtime version";
    case 100:
      return "no CUDA-capable device is detected";
    default:
      return "fake CUDA error";
  }
}

__attribute__((visibility("default"))) int cudaRuntimeGetVersion(int* version) {
  *version = 13000;
  return kSuccess;
}

__attribute__((visibility("default"))) int cudaMalloc(void** p, std::size_t n) {
  void* block = std::malloc(n);
  if (block == nullptr) return kErrorMemoryAllocation;
  std::lock_guard<std::mutex> lock(F().mu);
  F().device[reinterpret_cast<std::uintptr_t>(block)] = n;
  *p = block;
  return kSuccess;
}

__attribute__((visibility("default"))) int cudaFree(void* p) {
  std::lock_guard<std::mutex> lock(F().mu);
  auto it = F().device.find(reinterpret_cast<std::uintptr_t>(p));
  if (it != F().device.end() && Queued(p, it->second)) ++F().violations;  // copy in flight
  if (F().device.erase(reinterpret_cast<std::uintptr_t>(p)) == 0) {
    ++F().violations;
    return kErrorInvalidValue;
  }
  std::free(p);
  return kSuccess;
}

__attribute__((visibility("default"))) int cudaHostAlloc(void** p, std::size_t n, unsigned) {
  void* block = std::aligned_alloc(4096, (n + 4095) / 4096 * 4096);
  if (block == nullptr) return kErrorMemoryAllocation;
  std::lock_guard<std::mutex> lock(F().mu);
  F().pinned[reinterpret_cast<std::uintptr_t>(block)] = n;
  *p = block;
  return kSuccess;
}

__attribute__((visibility("default"))) int cudaFreeHost(void* p) {
  std::lock_guard<std::mutex> lock(F().mu);
  auto it = F().pinned.find(reinterpret_cast<std::uintptr_t>(p));
  if (it != F().pinned.end() && Queued(p, it->second)) ++F().violations;  // copy in flight
  if (F().pinned.erase(reinterpret_cast<std::uintptr_t>(p)) == 0) {
    ++F().violations;
    return kErrorInvalidValue;
  }
  std::free(p);
  return kSuccess;
}

__attribute__((visibility("default"))) int cudaStreamCreateWithFlags(void** stream, unsigned) {
  void* s = std::malloc(1);
  std::lock_guard<std::mutex> lock(F().mu);
  F().streams.insert(s);
  *stream = s;
  return kSuccess;
}

__attribute__((visibility("default"))) int cudaStreamDestroy(void* stream) {
  std::lock_guard<std::mutex> lock(F().mu);
  if (!F().queued[stream].empty()) ++F().violations;  // destroyed before synchronising
  F().queued.erase(stream);
  if (F().streams.erase(stream) == 0) {
    ++F().violations;
    return kErrorInvalidValue;
  }
  std::free(stream);
  return kSuccess;
}

__attribute__((visibility("default"))) int cudaMemcpyAsync(void* dst, const void* src,
                                                           std::size_t n, int kind, void* stream) {
  std::lock_guard<std::mutex> lock(F().mu);
  // The bounce path must copy pinned -> device (kind 1), or device ->
  // pinned (kind 2, CopyOutOfBuffer), on a live stream.
  const bool h2d = kind == 1 && Inside(F().device, dst, n) && Inside(F().pinned, src, n);
  const bool d2h = kind == 2 && Inside(F().pinned, dst, n) && Inside(F().device, src, n);
  if (!(h2d || d2h) || F().streams.count(stream) == 0) {
    ++F().violations;
    return kErrorInvalidValue;
  }
  std::vector<PendingCopy>& queue = F().queued[stream];
  queue.push_back({dst, src, n});
  long in_flight = 0;
  for (const auto& [other, copies] : F().queued) in_flight += static_cast<long>(copies.size());
  F().max_in_flight = std::max(F().max_in_flight, in_flight);
  if (h2d) {
    ++F().h2d_copies;
    F().h2d_bytes += static_cast<long>(n);
  } else {
    ++F().d2h_copies;
    F().d2h_bytes += static_cast<long>(n);
  }
  return kSuccess;
}

__attribute__((visibility("default"))) int cudaStreamSynchronize(void* stream) {
  std::lock_guard<std::mutex> lock(F().mu);
  if (F().streams.count(stream) == 0) {
    ++F().violations;
    return kErrorInvalidValue;
  }
  for (const PendingCopy& c : F().queued[stream]) std::memcpy(c.dst, c.src, c.n);
  F().queued[stream].clear();
  ++F().syncs;
  return kSuccess;
}

__attribute__((visibility("default"))) int cudaMemcpy(void* dst, const void* src, std::size_t n,
                                                      int kind) {
  std::lock_guard<std::mutex> lock(F().mu);
  // Device to host only, and not from memory a queued copy still writes:
  // the streams are non-blocking, so this copy does not wait for them.
  if (kind != 2 || !Inside(F().device, src, n) || Queued(src, n)) {
    ++F().violations;
    return kErrorInvalidValue;
  }
  std::memcpy(dst, src, n);
  return kSuccess;
}

// --- test controls ----------------------------------------------------------

__attribute__((visibility("default"))) void fake_cuda_set_count_error(int error) {
  std::lock_guard<std::mutex> lock(F().mu);
  F().count_error = error;
}

// The most copies that were in flight at once; resets it.
__attribute__((visibility("default"))) long fake_cuda_max_in_flight() {
  std::lock_guard<std::mutex> lock(F().mu);
  return std::exchange(F().max_in_flight, 0);
}

// Returns {live device blocks, live pinned blocks, live streams, H2D copies,
// H2D bytes, stream syncs, contract violations}.
__attribute__((visibility("default"))) void fake_cuda_counters(long out[7]) {
  std::lock_guard<std::mutex> lock(F().mu);
  out[0] = static_cast<long>(F().device.size());
  out[1] = static_cast<long>(F().pinned.size());
  out[2] = static_cast<long>(F().streams.size());
  out[3] = F().h2d_copies;
  out[4] = F().h2d_bytes;
  out[5] = F().syncs;
  out[6] = F().violations;
}

// Returns {D2H copies, D2H bytes} (cudaMemcpyAsync device to pinned).
__attribute__((visibility("default"))) void fake_cuda_d2h_counters(long out[2]) {
  std::lock_guard<std::mutex> lock(F().mu);
  out[0] = F().d2h_copies;
  out[1] = F().d2h_bytes;
}

}  // extern "C"
