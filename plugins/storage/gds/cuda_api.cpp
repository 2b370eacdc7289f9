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

std::string CufileErrorText(CufileError error) {
  std::string out = "cuFile error " + std::to_string(error.err);
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
