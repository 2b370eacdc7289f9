// The CUDA runtime and cuFile entry points the gds storage plugin uses,
// resolved at run time with dlopen/dlsym.
//
// Nothing here includes or links a CUDA header or library: the few types and
// signatures below are declared from NVIDIA's public API documentation (CUDA
// Runtime API, cuFile API reference), so the plugin builds and loads on
// machines without CUDA and discovers at run time what is usable. Libraries
// are loaded once per process and never unloaded (the CUDA runtime registers
// process-exit handlers, so unloading it while the process lives is unsafe).

#pragma once

#include <sys/types.h>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "iomimic/status.h"

namespace iomimic::gds {

// --- CUDA runtime (libcudart) ------------------------------------------------

using CudaError = int;     // cudaError_t (an int-sized C enum)
using CudaStream = void*;  // cudaStream_t (an opaque pointer)

inline constexpr CudaError kCudaSuccess = 0;
inline constexpr CudaError kCudaErrorInsufficientDriver = 35;
inline constexpr CudaError kCudaErrorNoDevice = 100;
inline constexpr int kCudaMemcpyHostToDevice = 1;  // cudaMemcpyKind
inline constexpr int kCudaMemcpyDeviceToHost = 2;
inline constexpr unsigned kCudaHostAllocDefault = 0;   // cudaHostAlloc flags
inline constexpr unsigned kCudaStreamNonBlocking = 1;  // cudaStreamCreateWithFlags flags

// The resolved runtime entry points. Immutable once loaded.
struct CudaRuntime {
  std::string library;  // the name or path that dlopen accepted
  int runtime_version = 0;

  CudaError (*GetDeviceCount)(int* count) = nullptr;
  CudaError (*SetDevice)(int device) = nullptr;
  const char* (*GetErrorString)(CudaError error) = nullptr;
  CudaError (*Malloc)(void** pointer, std::size_t size) = nullptr;
  CudaError (*Free)(void* pointer) = nullptr;
  CudaError (*HostAlloc)(void** pointer, std::size_t size, unsigned flags) = nullptr;
  CudaError (*FreeHost)(void* pointer) = nullptr;
  CudaError (*StreamCreateWithFlags)(CudaStream* stream, unsigned flags) = nullptr;
  CudaError (*StreamDestroy)(CudaStream stream) = nullptr;
  CudaError (*MemcpyAsync)(void* dst, const void* src, std::size_t count, int kind,
                           CudaStream stream) = nullptr;
  CudaError (*Memcpy)(void* dst, const void* src, std::size_t count, int kind) = nullptr;
  CudaError (*StreamSynchronize)(CudaStream stream) = nullptr;
  CudaError (*RuntimeGetVersion)(int* version) = nullptr;

  // "CUDA driver version is insufficient for CUDA runtime version (error 35)".
  std::string ErrorText(CudaError error) const;
};

// Checks a library named by the manifest (option `option`, for the error)
// before it is given to dlopen: empty (the defaults), an absolute path
// without "..", or a bare library name that the dynamic loader finds on its
// search path (LD_LIBRARY_PATH, the ld.so cache). A relative path such as
// "./x.so" or "lib/x.so" is refused with InvalidArgument, since dlopen would
// resolve it against the current directory and run its constructors
// (issue 13, defect 2; docs/security.md).
Status CheckLibraryName(const std::string& name, std::string_view option);

// Loads the CUDA runtime: `library` when not empty (a name or a path), else
// the first of libcudart.so.13, .so.12, .so.11.0, .so that dlopen accepts.
// Returns NotFound "libcudart not found (tried ...): <dlerror>" when none
// loads, NotSupported when a needed symbol is missing. Cached per name;
// thread-safe; the returned object lives until the process exits.
Result<const CudaRuntime*> LoadCudaRuntime(const std::string& library);

// Whether the runtime can reach a GPU. `reason` explains a refusal in the
// words users search for, e.g. "no CUDA driver: cudaGetDeviceCount returned
// 35 (CUDA driver version is insufficient for CUDA runtime version)".
struct GpuProbe {
  bool usable = false;
  int device_count = 0;
  std::string reason;
};
GpuProbe ProbeGpu(const CudaRuntime& runtime);

// --- cuFile (libcufile) ---------------------------------------------------------

// CUfileError_t: a cuFile status (CUfileOpError, 0 = success, 5000 + n for
// cuFile errors) and the CUDA driver status (CUresult) behind it.
struct CufileError {
  int err = 0;
  int cu_err = 0;
};

inline constexpr int kCufileHandleTypeOpaqueFd = 1;  // CU_FILE_HANDLE_TYPE_OPAQUE_FD

// CUfileDescr_t.
struct CufileDescr {
  int type = kCufileHandleTypeOpaqueFd;
  union {
    int fd;
    void* handle;
  } handle = {};
  const void* fs_ops = nullptr;
};

using CufileHandle = void*;  // CUfileHandle_t

// The resolved cuFile entry points. Immutable once loaded.
struct CufileApi {
  std::string library;

  CufileError (*DriverOpen)() = nullptr;
  CufileError (*DriverClose)() = nullptr;  // cuFileDriverClose_v2 where exported
  CufileError (*HandleRegister)(CufileHandle* handle, CufileDescr* descr) = nullptr;
  void (*HandleDeregister)(CufileHandle handle) = nullptr;
  CufileError (*BufRegister)(const void* device_base, std::size_t length, int flags) = nullptr;
  CufileError (*BufDeregister)(const void* device_base) = nullptr;
  // Returns bytes read (fewer only at end of file), -1 with errno set for a
  // system error, or minus a cuFile error code.
  ssize_t (*Read)(CufileHandle handle, void* device_base, std::size_t size, off_t file_offset,
                  off_t device_offset) = nullptr;
};

// "cuFile error 5027 (CU_FILE_HANDLE_NOT_REGISTERED: file descriptor is not
// registered)", with " (CUDA driver error N)" when the driver status is set.
std::string CufileErrorText(CufileError error);

// Loads libcufile: `library` when not empty, else libcufile.so.0 or
// libcufile.so. Same error conventions and caching as LoadCudaRuntime.
Result<const CufileApi*> LoadCufile(const std::string& library);

// An open cuFile driver session (cuFileDriverOpen), shared by every user in
// the process and closed (cuFileDriverClose) when the last user releases it.
class CufileDriver {
 public:
  explicit CufileDriver(const CufileApi* api) : api_(api) {}
  CufileDriver(const CufileDriver&) = delete;
  CufileDriver& operator=(const CufileDriver&) = delete;
  ~CufileDriver();

  const CufileApi& api() const { return *api_; }

 private:
  const CufileApi* api_;
};

// Opens (or shares) the driver session. Thread-safe.
Result<std::shared_ptr<CufileDriver>> OpenCufileDriver(const CufileApi* api);

}  // namespace iomimic::gds
