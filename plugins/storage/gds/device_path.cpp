#include "device_path.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <new>
#include <system_error>

namespace iomimic::gds {
namespace {

std::string Bytes(std::size_t n) { return std::to_string(n) + " bytes"; }

// Page-aligned, zero-filled host memory; null when out of memory.
std::byte* AlignedZeroed(std::size_t bytes) {
  void* p = std::aligned_alloc(kBlockAlignment, bytes);
  if (p == nullptr) return nullptr;
  std::memset(p, 0, bytes);  // fault the pages in now, not inside a timed copy
  return static_cast<std::byte*>(p);
}

// --- emulated -----------------------------------------------------------------

class EmulatedPath final : public DevicePath {
 public:
  EmulatedPath(double bytes_per_second, double latency_seconds)
      : link_(bytes_per_second, latency_seconds), back_link_(bytes_per_second, latency_seconds) {}

  DataPathKind kind() const override { return DataPathKind::kEmulated; }

  std::string Describe() const override {
    char text[160];
    if (link_.bytes_per_second() > 0) {
      std::snprintf(text, sizeof(text), "host arena, modelled link %.2f GiB/s + %.1f us",
                    link_.bytes_per_second() / (1024.0 * 1024 * 1024),
                    link_.latency_seconds() * 1e6);
    } else {
      std::snprintf(text, sizeof(text), "host arena, modelled link unlimited + %.1f us",
                    link_.latency_seconds() * 1e6);
    }
    return text;
  }

  Result<void*> AllocateDevice(std::size_t bytes) override {
    std::byte* p = AlignedZeroed(bytes);
    if (p == nullptr) {
      return Status::ResourceExhausted("cannot allocate " + Bytes(bytes) +
                                       " of emulated device memory (host arena)");
    }
    return static_cast<void*>(p);
  }

  void FreeDevice(void* pointer, std::size_t) override { std::free(pointer); }

  Result<StagingBuffer> NewStaging(std::size_t capacity) override {
    StagingBuffer b;
    b.data = AlignedZeroed(capacity);
    if (b.data == nullptr) {
      return Status::ResourceExhausted("cannot allocate a staging buffer of " + Bytes(capacity));
    }
    b.capacity = capacity;
    // Pinned-like: page-locked when RLIMIT_MEMLOCK allows, pageable otherwise.
    b.locked = ::mlock(b.data, capacity) == 0;
    return b;
  }

  void DeleteStaging(StagingBuffer& buffer) override {
    if (buffer.data == nullptr) return;
    if (buffer.locked) (void)::munlock(buffer.data, buffer.capacity);
    std::free(buffer.data);
    buffer = StagingBuffer();
  }

  // The memcpy stands for the DMA and happens at once; the wait is for the
  // modelled link, which the next read of the caller overlaps.
  Status StartHostToDevice(void* device, const std::byte* host, std::size_t bytes,
                           StagingBuffer& via) override {
    const Clock::time_point done = link_.Reserve(bytes);
    std::memcpy(device, host, bytes);
    via.copy_done = std::max(via.copy_done, done);
    return Status::OK();
  }

  Status StartDeviceToHost(std::byte* host, const void* device, std::size_t bytes,
                           StagingBuffer& via) override {
    const Clock::time_point done = back_link_.Reserve(bytes);
    std::memcpy(host, device, bytes);
    via.copy_done = std::max(via.copy_done, done);
    return Status::OK();
  }

  Status WaitCopies(StagingBuffer& via) override {
    WaitUntil(via.copy_done);
    return Status::OK();
  }

  Status DeviceToHost(std::byte* host, const void* device, std::size_t bytes) override {
    std::memcpy(host, device, bytes);
    return Status::OK();
  }

 private:
  H2dLinkModel link_;       // host to device
  H2dLinkModel back_link_;  // device to host
};

// --- CUDA memory shared by cuda-bounce and cufile ---------------------------------

// Device and pinned memory of one GPU through the CUDA runtime. The runtime's
// current device is per thread, so each call selects it first.
class CudaMemory {
 public:
  CudaMemory(const CudaRuntime* cuda, int device, int device_count)
      : cuda_(cuda), device_(device), device_count_(device_count) {}

  const CudaRuntime& cuda() const { return *cuda_; }
  int device() const { return device_; }

  std::string Describe() const {
    return "GPU " + std::to_string(device_) + " of " + std::to_string(device_count_) + " (" +
           cuda_->library + ", runtime " + std::to_string(cuda_->runtime_version) + ")";
  }

  Status Select() const {
    CudaError e = cuda_->SetDevice(device_);
    if (e != kCudaSuccess) {
      return Status::IOError("cudaSetDevice(" + std::to_string(device_) +
                             "): " + cuda_->ErrorText(e));
    }
    return Status::OK();
  }

  Result<void*> Allocate(std::size_t bytes) const {
    IOMIMIC_RETURN_IF_ERROR(Select());
    void* p = nullptr;
    CudaError e = cuda_->Malloc(&p, bytes);
    if (e != kCudaSuccess || p == nullptr) {
      return Status::ResourceExhausted("cudaMalloc of " + Bytes(bytes) + " on GPU " +
                                       std::to_string(device_) + ": " + cuda_->ErrorText(e));
    }
    return p;
  }

  void Free(void* pointer) const {
    if (Select().ok()) (void)cuda_->Free(pointer);
  }

  Result<StagingBuffer> NewPinned(std::size_t capacity, bool with_stream) const {
    IOMIMIC_RETURN_IF_ERROR(Select());
    StagingBuffer b;
    void* p = nullptr;
    CudaError e = cuda_->HostAlloc(&p, capacity, kCudaHostAllocDefault);
    if (e != kCudaSuccess || p == nullptr) {
      return Status::ResourceExhausted("cudaHostAlloc of " + Bytes(capacity) +
                                       " of pinned memory: " + cuda_->ErrorText(e));
    }
    b.data = static_cast<std::byte*>(p);
    b.capacity = capacity;
    if (with_stream) {
      e = cuda_->StreamCreateWithFlags(&b.stream, kCudaStreamNonBlocking);
      if (e != kCudaSuccess) {
        (void)cuda_->FreeHost(p);
        return Status::ResourceExhausted("cudaStreamCreateWithFlags: " + cuda_->ErrorText(e));
      }
    }
    return b;
  }

  void DeletePinned(StagingBuffer& buffer) const {
    if (buffer.data == nullptr) return;
    if (Select().ok()) {
      if (buffer.stream != nullptr) (void)cuda_->StreamDestroy(buffer.stream);
      (void)cuda_->FreeHost(buffer.data);
    }
    buffer = StagingBuffer();
  }

  // Starts copying between pinned host memory and the device on `stream`:
  // `kind` kCudaMemcpyHostToDevice or kCudaMemcpyDeviceToHost.
  Status StartCopy(void* to, const void* from, std::size_t bytes, int kind,
                   CudaStream stream) const {
    IOMIMIC_RETURN_IF_ERROR(Select());
    CudaError e = cuda_->MemcpyAsync(to, from, bytes, kind, stream);
    if (e != kCudaSuccess) {
      return Status::IOError(
          "cudaMemcpyAsync of " + Bytes(bytes) +
          (kind == kCudaMemcpyHostToDevice ? " host to device: " : " device to host: ") +
          cuda_->ErrorText(e));
    }
    return Status::OK();
  }

  // Waits for the copies on `stream`.
  Status WaitCopies(CudaStream stream) const {
    IOMIMIC_RETURN_IF_ERROR(Select());
    CudaError e = cuda_->StreamSynchronize(stream);
    if (e != kCudaSuccess) {
      return Status::IOError("cudaStreamSynchronize after copies between host and device: " +
                             cuda_->ErrorText(e));
    }
    return Status::OK();
  }

  Status ToHost(std::byte* host, const void* device, std::size_t bytes) const {
    IOMIMIC_RETURN_IF_ERROR(Select());
    CudaError e = cuda_->Memcpy(host, device, bytes, kCudaMemcpyDeviceToHost);
    if (e != kCudaSuccess) {
      return Status::IOError("cudaMemcpy of " + Bytes(bytes) +
                             " device to host: " + cuda_->ErrorText(e));
    }
    return Status::OK();
  }

 private:
  const CudaRuntime* cuda_;
  int device_;
  int device_count_;
};

// --- cuda-bounce ------------------------------------------------------------------

// Also the base of cufile, which stages the files cuFile refuses this way.
class CudaBouncePath : public DevicePath {
 public:
  explicit CudaBouncePath(CudaMemory memory) : memory_(memory) {}

  DataPathKind kind() const override { return DataPathKind::kCudaBounce; }
  std::string Describe() const override { return memory_.Describe(); }

  Result<void*> AllocateDevice(std::size_t bytes) override { return memory_.Allocate(bytes); }
  void FreeDevice(void* pointer, std::size_t) override { memory_.Free(pointer); }

  Result<StagingBuffer> NewStaging(std::size_t capacity) override {
    return memory_.NewPinned(capacity, /*with_stream=*/true);
  }
  void DeleteStaging(StagingBuffer& buffer) override { memory_.DeletePinned(buffer); }

  Status StartHostToDevice(void* device, const std::byte* host, std::size_t bytes,
                           StagingBuffer& via) override {
    return memory_.StartCopy(device, host, bytes, kCudaMemcpyHostToDevice, via.stream);
  }
  Status StartDeviceToHost(std::byte* host, const void* device, std::size_t bytes,
                           StagingBuffer& via) override {
    return memory_.StartCopy(host, device, bytes, kCudaMemcpyDeviceToHost, via.stream);
  }
  Status WaitCopies(StagingBuffer& via) override { return memory_.WaitCopies(via.stream); }

  Status DeviceToHost(std::byte* host, const void* device, std::size_t bytes) override {
    return memory_.ToHost(host, device, bytes);
  }

 protected:
  CudaMemory memory_;
};

// --- cufile -------------------------------------------------------------------------

// Reads straight into registered device memory. Its pinned staging serves
// host-destination reads on O_DIRECT descriptors and, with mode=auto, the
// files cuFile refused to register (gds_storage.cpp), copied as cuda-bounce
// copies them.
class CufilePath final : public CudaBouncePath {
 public:
  CufilePath(CudaMemory memory, std::shared_ptr<CufileDriver> driver, std::string log)
      : CudaBouncePath(memory), driver_(std::move(driver)), log_(std::move(log)) {}

  DataPathKind kind() const override { return DataPathKind::kCufile; }
  std::string Describe() const override {
    return memory_.Describe() + ", " + driver_->api().library;
  }

  Result<void*> AllocateDevice(std::size_t bytes) override {
    IOMIMIC_ASSIGN_OR_RETURN(void* p, memory_.Allocate(bytes));
    // Registered buffers are the direct path; cuFile can read into an
    // unregistered one too (through its own bounce buffers), so a failed
    // registration (e.g. BAR1 space exhausted) is an error: the numbers
    // would otherwise silently describe another path.
    CufileError e = driver_->api().BufRegister(p, bytes, 0);
    if (e.err != 0) {
      memory_.Free(p);
      return Status::ResourceExhausted("cuFileBufRegister of " + Bytes(bytes) + " on GPU " +
                                       std::to_string(memory_.device()) + ": " +
                                       CufileErrorText(e));
    }
    return p;
  }

  void FreeDevice(void* pointer, std::size_t) override {
    if (memory_.Select().ok()) (void)driver_->api().BufDeregister(pointer);
    memory_.Free(pointer);
  }

  bool reads_directly() const override { return true; }

  Result<CufileHandle> RegisterFile(int fd) override {
    CufileDescr descr;
    descr.type = kCufileHandleTypeOpaqueFd;
    descr.handle.fd = fd;
    CufileHandle handle = nullptr;
    CufileError e = driver_->api().HandleRegister(&handle, &descr);
    if (e.err != 0) {
      // cuFile says why only in its log. The common cause where the driver
      // opened in compatibility mode: no udev properties for the block
      // device (ID_FS_USAGE), as in VMs and containers without udevd.
      return Status::NotSupported("cuFileHandleRegister: " + CufileErrorText(e) +
                                  ": cuFile refused the file; its log " + log_ + " says why");
    }
    return handle;
  }

  void DeregisterFile(CufileHandle handle) override {
    if (handle != nullptr) driver_->api().HandleDeregister(handle);
  }

  Result<std::size_t> ReadDirect(CufileHandle handle, void* device_base, std::size_t device_offset,
                                 std::size_t bytes, std::uint64_t file_offset) override {
    IOMIMIC_RETURN_IF_ERROR(memory_.Select());
    errno = 0;
    ssize_t n = driver_->api().Read(handle, device_base, bytes, static_cast<off_t>(file_offset),
                                    static_cast<off_t>(device_offset));
    if (n >= 0) return static_cast<std::size_t>(n);
    if (n == -1) return Status::FromErrno(errno != 0 ? errno : EIO, "cuFileRead");
    CufileError e;
    e.err = static_cast<int>(-n);
    return Status::IOError("cuFileRead: " + CufileErrorText(e));
  }

 private:
  std::shared_ptr<CufileDriver> driver_;
  std::string log_;  // cuFile's log file
};

// cuFile writes cufile.log into the current directory unless told
// otherwise. Points CUFILE_LOGFILE_PATH at `requested`, or, when the user set
// neither the option nor the variable, at a per-process file in TMPDIR.
// Returns the log path in effect. Called before libcufile is loaded.
std::string SetCufileLog(const std::string& requested) {
  if (!requested.empty()) {
    ::setenv("CUFILE_LOGFILE_PATH", requested.c_str(), 1);
    return requested;
  }
  if (const char* set = std::getenv("CUFILE_LOGFILE_PATH"); set != nullptr && *set != '\0') {
    return set;
  }
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::temp_directory_path(ec);
  if (ec) dir = "/tmp";
  std::string path = (dir / ("iomimic-cufile-" + std::to_string(::getpid()) + ".log")).string();
  ::setenv("CUFILE_LOGFILE_PATH", path.c_str(), 0);
  return path;
}

}  // namespace

const char* DataPathName(DataPathKind kind) {
  switch (kind) {
    case DataPathKind::kCufile:
      return "cufile";
    case DataPathKind::kCudaBounce:
      return "cuda-bounce";
    case DataPathKind::kEmulated:
      return "emulated";
  }
  return "unknown";
}

Result<CufileHandle> DevicePath::RegisterFile(int) {
  return Status::Internal("only the cufile path registers files");
}

void DevicePath::DeregisterFile(CufileHandle) {}

Result<std::size_t> DevicePath::ReadDirect(CufileHandle, void*, std::size_t, std::size_t,
                                           std::uint64_t) {
  return Status::Internal("only the cufile path reads into device memory directly");
}

Result<PathSelection> SelectDevicePath(const PathOptions& options, int rank) {
  const std::string& mode = options.mode;
  const bool automatic = mode == "auto";
  auto emulated = [&](std::string reason) -> Result<PathSelection> {
    PathSelection s;
    s.path =
        std::make_unique<EmulatedPath>(options.h2d_bytes_per_second, options.h2d_latency_seconds);
    s.reason = std::move(reason);
    return s;
  };
  if (mode == "emulated") return emulated("mode=emulated requested");
  if (!automatic && mode != "cufile" && mode != "cuda-bounce") {
    return Status::InvalidArgument("option 'mode' = '" + mode +
                                   "' is not one of auto, cufile, cuda-bounce, emulated");
  }

  // What a forced mode needs, for the refusal message.
  const std::string needs = mode == "cufile" ? "mode=cufile needs libcufile and a CUDA GPU"
                                             : "mode=cuda-bounce needs a CUDA GPU";
  // For mode=cufile refusals: whether libcufile would load (never opened
  // further without a GPU).
  auto cufile_presence = [&]() -> std::string {
    if (mode != "cufile") return "";
    Result<const CufileApi*> api = LoadCufile(options.cufile_library);
    return api.ok() ? "; " + (*api)->library + " loads" : "; " + api.status().message();
  };

  Result<const CudaRuntime*> cuda = LoadCudaRuntime(options.cuda_runtime);
  if (!cuda.ok()) {
    if (automatic) return emulated(cuda.status().message());
    return Status::NotSupported(needs + ": " + cuda.status().message() + cufile_presence());
  }
  GpuProbe probe = ProbeGpu(**cuda);
  if (!probe.usable) {
    if (automatic) return emulated(probe.reason);
    return Status::NotSupported(needs + ": " + probe.reason + cufile_presence());
  }
  const int device = options.device >= 0 ? options.device : rank % probe.device_count;
  if (device >= probe.device_count) {
    return Status::InvalidArgument("option 'device' = " + std::to_string(options.device) +
                                   " but only " + std::to_string(probe.device_count) +
                                   " CUDA device(s) are visible");
  }
  CudaMemory memory(*cuda, device, probe.device_count);
  // Fail now rather than at the first read if the device cannot be selected.
  Status selected = memory.Select();
  if (!selected.ok()) {
    if (automatic) return emulated(selected.message());
    return Status::NotSupported(needs + ": " + selected.message());
  }

  auto bounce = [&](std::string reason) -> Result<PathSelection> {
    PathSelection s;
    s.path = std::make_unique<CudaBouncePath>(memory);
    s.reason = std::move(reason);
    return s;
  };
  if (mode == "cuda-bounce") return bounce("mode=cuda-bounce requested; " + memory.Describe());

  const std::string log = SetCufileLog(options.cufile_log);
  Result<const CufileApi*> api = LoadCufile(options.cufile_library);
  if (!api.ok()) {
    if (automatic) return bounce(api.status().message());
    return Status::NotSupported(needs + ": " + api.status().message());
  }
  Result<std::shared_ptr<CufileDriver>> driver = OpenCufileDriver(*api);
  if (!driver.ok()) {
    if (automatic) return bounce(driver.status().message() + " (cuFile log: " + log + ")");
    return Status::NotSupported(needs + ": " + driver.status().message() + " (cuFile log: " + log +
                                ")");
  }
  PathSelection s;
  s.path = std::make_unique<CufilePath>(memory, std::move(driver).value(), log);
  s.reason = std::string(automatic ? "" : "mode=cufile requested; ") + (*api)->library +
             " driver open, " + memory.Describe() + ", cuFile log: " + log;
  return s;
}

}  // namespace iomimic::gds
