#include "cuda_api.h"

#include <dlfcn.h>

#include <initializer_list>
#include <map>
#include <mutex>
#include <string_view>
#include <vector>

namespace iomimic::gds {
namespace {

// Resolves `name` into `*fn`; records the first missing symbol in `missing`.
template <typename Fn>
void Resolve(void* library, const char* name, Fn* fn, std::string* missing) {
  void* symbol = ::dlsym(library, name);
  if (symbol == nullptr && missing->empty()) missing->assign(name);
  *fn = reinterpret_cast<Fn>(symbol);
}

// Tries `explicit_name` (checked by CheckLibraryName, named `option` in
// errors), or each default, with dlopen. On success stores the
// accepted name in `*accepted`; on failure returns a NotFound naming what was
// tried, prefixed with `what` ("libcudart not found").
Result<void*> OpenLibrary(const std::string& explicit_name, std::string_view option,
                          std::initializer_list<const char*> defaults, std::string_view what,
                          std::string* accepted) {
  std::vector<std::string> names;
  if (!explicit_name.empty()) {
    IOMIMIC_RETURN_IF_ERROR(CheckLibraryName(explicit_name, option));
    names.push_back(explicit_name);
  } else {
    for (const char* n : defaults) names.emplace_back(n);
  }
  std::string tried;
  std::string last_error;
  for (const std::string& n : names) {
    void* handle = ::dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (handle != nullptr) {
      *accepted = n;
      return handle;
    }
    const char* e = ::dlerror();
    last_error = e != nullptr ? e : "unknown dlopen error";
    tried += (tried.empty() ? "" : ", ") + n;
  }
  return Status::NotFound(std::string(what) + " (tried " + tried + "): " + last_error);
}

std::mutex& LoadMutex() {
  static std::mutex* m = new std::mutex;  // never destroyed: used until exit
  return *m;
}

}  // namespace

Status CheckLibraryName(const std::string& name, std::string_view option) {
  if (name.empty()) return Status::OK();
  if (name.front() == '/') {
    if (name.find("/../") != std::string::npos || name.ends_with("/..")) {
      return Status::InvalidArgument("option '" + std::string(option) + "' = '" + name +
                                     "': an absolute path must not contain '..'");
    }
    return Status::OK();
  }
  if (name.find('/') != std::string::npos) {
    return Status::InvalidArgument(
        "option '" + std::string(option) + "' = '" + name +
        "' is a relative path: name a library by absolute path or by bare name (found on the "
        "loader's search path), never relative to the current directory (docs/security.md)");
  }
  if (name == "." || name == "..") {
    return Status::InvalidArgument("option '" + std::string(option) + "' = '" + name +
                                   "' is not a library name");
  }
  return Status::OK();
}

std::string CudaRuntime::ErrorText(CudaError error) const {
  const char* text = GetErrorString != nullptr ? GetErrorString(error) : nullptr;
  std::string out = text != nullptr ? text : "unknown CUDA error";
  return out + " (error " + std::to_string(error) + ")";
}

Result<const CudaRuntime*> LoadCudaRuntime(const std::string& library) {
  std::lock_guard<std::mutex> lock(LoadMutex());
  // Loaded runtimes are kept for the life of the process, keyed by request.
  static auto* cache = new std::map<std::string, std::unique_ptr<CudaRuntime>>;
  auto it = cache->find(library);
  if (it != cache->end()) return static_cast<const CudaRuntime*>(it->second.get());

  auto runtime = std::make_unique<CudaRuntime>();
  IOMIMIC_ASSIGN_OR_RETURN(void* handle, OpenLibrary(library, "cuda_runtime",
                                                     {"libcudart.so.13", "libcudart.so.12",
                                                      "libcudart.so.11.0", "libcudart.so"},
                                                     "libcudart not found", &runtime->library));
  std::string missing;
  Resolve(handle, "cudaGetDeviceCount", &runtime->GetDeviceCount, &missing);
  Resolve(handle, "cudaSetDevice", &runtime->SetDevice, &missing);
  Resolve(handle, "cudaGetErrorString", &runtime->GetErrorString, &missing);
  Resolve(handle, "cudaMalloc", &runtime->Malloc, &missing);
  Resolve(handle, "cudaFree", &runtime->Free, &missing);
  Resolve(handle, "cudaHostAlloc", &runtime->HostAlloc, &missing);
  Resolve(handle, "cudaFreeHost", &runtime->FreeHost, &missing);
  Resolve(handle, "cudaStreamCreateWithFlags", &runtime->StreamCreateWithFlags, &missing);
  Resolve(handle, "cudaStreamDestroy", &runtime->StreamDestroy, &missing);
  Resolve(handle, "cudaMemcpyAsync", &runtime->MemcpyAsync, &missing);
  Resolve(handle, "cudaMemcpy", &runtime->Memcpy, &missing);
  Resolve(handle, "cudaStreamSynchronize", &runtime->StreamSynchronize, &missing);
  Resolve(handle, "cudaRuntimeGetVersion", &runtime->RuntimeGetVersion, &missing);
  if (!missing.empty()) {
    return Status::NotSupported(runtime->library + " does not export " + missing +
                                " (not a CUDA runtime library?)");
  }
  if (runtime->RuntimeGetVersion(&runtime->runtime_version) != kCudaSuccess) {
    runtime->runtime_version = 0;
  }
  const CudaRuntime* out = runtime.get();
  cache->emplace(library, std::move(runtime));
  return out;
}

GpuProbe ProbeGpu(const CudaRuntime& runtime) {
  GpuProbe probe;
  int count = 0;  // the runtime leaves it untouched on error
  CudaError e = runtime.GetDeviceCount(&count);
  if (e != kCudaSuccess) {
    std::string what = e == kCudaErrorInsufficientDriver ? "no CUDA driver"
                       : e == kCudaErrorNoDevice         ? "no CUDA device"
                                                         : "CUDA unusable";
    probe.reason =
        what + ": cudaGetDeviceCount returned " + std::to_string(e) + " (" +
        (runtime.GetErrorString(e) != nullptr ? runtime.GetErrorString(e) : "unknown CUDA error") +
        ")";
    return probe;
  }
  if (count <= 0) {
    probe.reason = "no CUDA device: cudaGetDeviceCount reported 0 devices";
    return probe;
  }
  probe.usable = true;
  probe.device_count = count;
  probe.reason = std::to_string(count) + " CUDA device" + (count == 1 ? "" : "s") + " through " +
                 runtime.library;
  return probe;
}

namespace {

struct CufileStatusName {
  int code;
  const char* name;
  const char* text;
};

// CUfileOpError values and their meanings, as cufile.h (CUDA 13.0) lists
// them (CUFILEOP_STATUS_ENTRIES).
constexpr CufileStatusName kCufileStatusNames[] = {
    {5001, "CU_FILE_DRIVER_NOT_INITIALIZED", "nvidia-fs driver is not loaded"},
    {5002, "CU_FILE_DRIVER_INVALID_PROPS", "invalid property"},
    {5003, "CU_FILE_DRIVER_UNSUPPORTED_LIMIT", "property range error"},
    {5004, "CU_FILE_DRIVER_VERSION_MISMATCH", "nvidia-fs driver version mismatch"},
    {5005, "CU_FILE_DRIVER_VERSION_READ_ERROR", "nvidia-fs driver version read error"},
    {5006, "CU_FILE_DRIVER_CLOSING", "driver shutdown in progress"},
    {5007, "CU_FILE_PLATFORM_NOT_SUPPORTED", "GPUDirect Storage not supported on current platform"},
    {5008, "CU_FILE_IO_NOT_SUPPORTED", "GPUDirect Storage not supported on current file"},
    {5009, "CU_FILE_DEVICE_NOT_SUPPORTED", "GPUDirect Storage not supported on current GPU"},
    {5010, "CU_FILE_NVFS_DRIVER_ERROR", "nvidia-fs driver ioctl error"},
    {5011, "CU_FILE_CUDA_DRIVER_ERROR", "CUDA Driver API error"},
    {5012, "CU_FILE_CUDA_POINTER_INVALID", "invalid device pointer"},
    {5013, "CU_FILE_CUDA_MEMORY_TYPE_INVALID", "invalid pointer memory type"},
    {5014, "CU_FILE_CUDA_POINTER_RANGE_ERROR", "pointer range exceeds allocated address range"},
    {5015, "CU_FILE_CUDA_CONTEXT_MISMATCH", "cuda context mismatch"},
    {5016, "CU_FILE_INVALID_MAPPING_SIZE", "access beyond maximum pinned size"},
    {5017, "CU_FILE_INVALID_MAPPING_RANGE", "access beyond mapped size"},
    {5018, "CU_FILE_INVALID_FILE_TYPE", "unsupported file type"},
    {5019, "CU_FILE_INVALID_FILE_OPEN_FLAG", "unsupported file open flags"},
    {5020, "CU_FILE_DIO_NOT_SET", "fd direct IO not set"},
    {5022, "CU_FILE_INVALID_VALUE", "invalid arguments"},
    {5023, "CU_FILE_MEMORY_ALREADY_REGISTERED", "device pointer already registered"},
    {5024, "CU_FILE_MEMORY_NOT_REGISTERED", "device pointer lookup failure"},
    {5025, "CU_FILE_PERMISSION_DENIED", "driver or file access error"},
    {5026, "CU_FILE_DRIVER_ALREADY_OPEN", "driver is already open"},
    {5027, "CU_FILE_HANDLE_NOT_REGISTERED", "file descriptor is not registered"},
    {5028, "CU_FILE_HANDLE_ALREADY_REGISTERED", "file descriptor is already registered"},
    {5029, "CU_FILE_DEVICE_NOT_FOUND", "GPU device not found"},
    {5030, "CU_FILE_INTERNAL_ERROR", "internal error"},
    {5031, "CU_FILE_GETNEWFD_FAILED", "failed to obtain new file descriptor"},
    {5033, "CU_FILE_NVFS_SETUP_ERROR", "NVFS driver initialization error"},
    {5034, "CU_FILE_IO_DISABLED", "GPUDirect Storage disabled by config on current file"},
    {5035, "CU_FILE_BATCH_SUBMIT_FAILED", "failed to submit batch operation"},
    {5036, "CU_FILE_GPU_MEMORY_PINNING_FAILED", "failed to allocate pinned GPU Memory"},
    {5037, "CU_FILE_BATCH_FULL", "queue full for batch operation"},
    {5038, "CU_FILE_ASYNC_NOT_SUPPORTED", "cuFile stream operation not supported"},
    {5039, "CU_FILE_INTERNAL_BATCH_SETUP_ERROR", "batch setup internal error - retry later"},
    {5040, "CU_FILE_INTERNAL_BATCH_SUBMIT_ERROR", "batch submit internal error - retry later"},
    {5041, "CU_FILE_INTERNAL_BATCH_GETSTATUS_ERROR",
     "batch get status internal error - retry later"},
    {5042, "CU_FILE_INTERNAL_BATCH_CANCEL_ERROR", "batch cancel internal error - retry later"},
    {5043, "CU_FILE_NOMEM_ERROR", "cufile no memory error - retry later"},
    {5044, "CU_FILE_IO_ERROR", "cufile io error"},
    {5045, "CU_FILE_INTERNAL_BUF_REGISTER_ERROR", "cufile buf registration error"},
    {5046, "CU_FILE_HASH_OPR_ERROR", "cufile hash operation error"},
    {5047, "CU_FILE_INVALID_CONTEXT_ERROR", "cufile invalid context error"},
    {5048, "CU_FILE_NVFS_INTERNAL_DRIVER_ERROR", "nvfs internal driver error"},
    {5049, "CU_FILE_BATCH_NOCOMPAT_ERROR", "compat mode off error"},
    {5050, "CU_FILE_IO_MAX_ERROR", "GPUDirect Storage Max Error"},
};

}  // namespace

std::string CufileErrorText(CufileError error) {
  std::string out = "cuFile error " + std::to_string(error.err);
  for (const CufileStatusName& s : kCufileStatusNames) {
    if (s.code == error.err) {
      out += std::string(" (") + s.name + ": " + s.text + ")";
      break;
    }
  }
  if (error.cu_err != 0) out += " (CUDA driver error " + std::to_string(error.cu_err) + ")";
  return out;
}

Result<const CufileApi*> LoadCufile(const std::string& library) {
  std::lock_guard<std::mutex> lock(LoadMutex());
  static auto* cache = new std::map<std::string, std::unique_ptr<CufileApi>>;
  auto it = cache->find(library);
  if (it != cache->end()) return static_cast<const CufileApi*>(it->second.get());

  auto api = std::make_unique<CufileApi>();
  IOMIMIC_ASSIGN_OR_RETURN(
      void* handle, OpenLibrary(library, "cufile_library", {"libcufile.so.0", "libcufile.so"},
                                "libcufile not found", &api->library));
  std::string missing;
  Resolve(handle, "cuFileDriverOpen", &api->DriverOpen, &missing);
  // Newer headers map cuFileDriverClose to cuFileDriverClose_v2; older
  // libraries export only the original name.
  if (::dlsym(handle, "cuFileDriverClose_v2") != nullptr) {
    Resolve(handle, "cuFileDriverClose_v2", &api->DriverClose, &missing);
  } else {
    Resolve(handle, "cuFileDriverClose", &api->DriverClose, &missing);
  }
  Resolve(handle, "cuFileHandleRegister", &api->HandleRegister, &missing);
  Resolve(handle, "cuFileHandleDeregister", &api->HandleDeregister, &missing);
  Resolve(handle, "cuFileBufRegister", &api->BufRegister, &missing);
  Resolve(handle, "cuFileBufDeregister", &api->BufDeregister, &missing);
  Resolve(handle, "cuFileRead", &api->Read, &missing);
  if (!missing.empty()) {
    return Status::NotSupported(api->library + " does not export " + missing +
                                " (not a cuFile library?)");
  }
  const CufileApi* out = api.get();
  cache->emplace(library, std::move(api));
  return out;
}

CufileDriver::~CufileDriver() {
  // Under the load lock, so that a new session cannot open while this closes.
  std::lock_guard<std::mutex> lock(LoadMutex());
  (void)api_->DriverClose();
}

Result<std::shared_ptr<CufileDriver>> OpenCufileDriver(const CufileApi* api) {
  std::lock_guard<std::mutex> lock(LoadMutex());
  static auto* sessions = new std::map<const CufileApi*, std::weak_ptr<CufileDriver>>;
  std::shared_ptr<CufileDriver> live = (*sessions)[api].lock();
  if (live) return live;
  CufileError e = api->DriverOpen();
  if (e.err != 0) {
    return Status::IOError("cuFileDriverOpen failed: " + CufileErrorText(e) +
                           " (is nvidia-fs loaded, or compatibility mode allowed in cufile.json?)");
  }
  live = std::make_shared<CufileDriver>(api);
  (*sessions)[api] = live;
  return live;
}

}  // namespace iomimic::gds
