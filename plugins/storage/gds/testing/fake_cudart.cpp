// A stand-in for libcudart used only by the gds plugin's tests on machines
// without a GPU. It implements the runtime calls the plugin resolves with
// host memory ("device" memory is malloc'd), checks that they are used the
// way the CUDA documentation requires (copies between the right kinds of
// memory, streams that exist, frees of live allocations) and counts them.
// It proves the plugin's cuda-bounce plumbing, not anything about a GPU.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>

namespace {

constexpr int kSuccess = 0;
constexpr int kErrorInvalidValue = 1;
constexpr int kErrorMemoryAllocation = 2;
constexpr int kErrorInvalidDevice = 101;

struct Fake {
  std::mutex mu;
  std::map<std::uintptr_t, std::size_t> device;  // cudaMalloc'd blocks
  std::map<std::uintptr_t, std::size_t> pinned;  // cudaHostAlloc'd blocks
  std::set<void*> streams;
  int device_count = 2;
  int count_error = kSuccess;  // what cudaGetDeviceCount returns
  long h2d_copies = 0;
  long h2d_bytes = 0;
  long syncs = 0;
  long violations = 0;  // calls that break the documented contract
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
  // The bounce path must copy pinned -> device (kind 1) on a live stream.
  if (kind != 1 || !Inside(F().device, dst, n) || !Inside(F().pinned, src, n) ||
      F().streams.count(stream) == 0) {
    ++F().violations;
    return kErrorInvalidValue;
  }
  std::memcpy(dst, src, n);
  ++F().h2d_copies;
  F().h2d_bytes += static_cast<long>(n);
  return kSuccess;
}

__attribute__((visibility("default"))) int cudaStreamSynchronize(void* stream) {
  std::lock_guard<std::mutex> lock(F().mu);
  if (F().streams.count(stream) == 0) {
    ++F().violations;
    return kErrorInvalidValue;
  }
  ++F().syncs;
  return kSuccess;
}

__attribute__((visibility("default"))) int cudaMemcpy(void* dst, const void* src, std::size_t n,
                                                      int kind) {
  std::lock_guard<std::mutex> lock(F().mu);
  if (kind != 2 || !Inside(F().device, src, n)) {  // device to host only
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

}  // extern "C"
