// The three ways the gds plugin lands file data in accelerator memory.
//
//   cufile       storage -> GPU by cuFileRead into cudaMalloc'd memory
//                registered with cuFileBufRegister (needs libcufile and a
//                GPU; cuFile itself may fall back to its compatibility mode,
//                see README.md).
//   cuda-bounce  pread into a pinned host buffer (cudaHostAlloc), then
//                cudaMemcpyAsync to cudaMalloc'd memory on a stream of its own
//                and cudaStreamSynchronize (needs a GPU).
//   emulated     no GPU: pread into a page-aligned (mlock'ed where the limit
//                allows) host buffer, then a real memcpy into a host arena
//                that stands for device memory, stretched to the time a copy
//                over the modelled link would take (h2d_model.h). It measures
//                storage plus a modelled copy, nothing on a GPU.
//
// A DevicePath owns device memory management and the host-to-device step;
// the file-level read loops live in gds_storage.cpp. Every method is
// thread-safe and never throws.

#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "cuda_api.h"
#include "h2d_model.h"
#include "iomimic/status.h"

namespace iomimic::gds {

enum class DataPathKind : std::uint8_t { kCufile, kCudaBounce, kEmulated };

// "cufile", "cuda-bounce" or "emulated": the value of capabilities().data_path.
const char* DataPathName(DataPathKind kind);

// Alignment of O_DIRECT requests and of every staging and device block. 4096
// covers every logical block size in use (512 and 4096).
inline constexpr std::size_t kBlockAlignment = 4096;

// A host buffer that staged reads land in before the host-to-device step,
// and the CUDA stream its copies use (cuda-bounce only).
struct StagingBuffer {
  std::byte* data = nullptr;
  std::size_t capacity = 0;  // a multiple of kBlockAlignment
  CudaStream stream = nullptr;
  bool locked = false;  // emulated: mlock succeeded
  // emulated: when the modelled copy out of this buffer completes.
  std::chrono::steady_clock::time_point copy_done{};
};

class DevicePath {
 public:
  DevicePath() = default;
  DevicePath(const DevicePath&) = delete;
  DevicePath& operator=(const DevicePath&) = delete;
  virtual ~DevicePath() = default;

  virtual DataPathKind kind() const = 0;

  // One line for the report, e.g. "GPU 0 of 8" or "link 25.0 GiB/s + 10 us".
  virtual std::string Describe() const = 0;

  // Returns `bytes` (a multiple of kBlockAlignment, > 0) of device memory,
  // or ResourceExhausted naming the size.
  virtual Result<void*> AllocateDevice(std::size_t bytes) = 0;
  // Releases memory from AllocateDevice. Errors are ignored (the process may
  // be exiting and the CUDA runtime already torn down).
  virtual void FreeDevice(void* pointer, std::size_t bytes) = 0;

  // A host staging buffer of `capacity` bytes (a multiple of
  // kBlockAlignment), pinned where the path copies from it.
  virtual Result<StagingBuffer> NewStaging(std::size_t capacity) = 0;
  virtual void DeleteStaging(StagingBuffer& buffer) = 0;

  // Staged paths, and cufile for the files cuFile refused: starts copying
  // `bytes` from `host` (inside `via`) to `device` (cudaMemcpyAsync on the
  // buffer's stream; emulated: the memcpy, with the modelled link booked).
  // Until WaitCopies(via) returns, `via` must not be written, reused or
  // released, and `device` must not be read. Copies started from one buffer
  // complete in order.
  virtual Status StartHostToDevice(void* device, const std::byte* host, std::size_t bytes,
                                   StagingBuffer& via) = 0;
  // The other direction (Storage::CopyOutOfBuffer): starts copying `bytes`
  // from `device` to `host` (inside `via`): cudaMemcpyAsync device-to-host
  // on the buffer's stream; emulated: the memcpy, with the modelled link of
  // the other direction booked (a PCIe link carries both at once). Until
  // WaitCopies(via) returns, `host` must not be read and `via` not reused.
  virtual Status StartDeviceToHost(std::byte* host, const void* device, std::size_t bytes,
                                   StagingBuffer& via) = 0;
  // Returns when every copy started from `via`, either way, is complete
  // (emulated: when the modelled copy would be).
  virtual Status WaitCopies(StagingBuffer& via) = 0;

  // Copies device memory back to the host (verification and tests).
  virtual Status DeviceToHost(std::byte* host, const void* device, std::size_t bytes) = 0;

  // cufile only: reads straight from the file into device memory.
  virtual bool reads_directly() const { return false; }
  // Registers an O_DIRECT descriptor with cuFile; the handle is released
  // with DeregisterFile before the descriptor closes. NotSupported when
  // cuFile refuses the file (the message names cuFile's log, which says why).
  virtual Result<CufileHandle> RegisterFile(int fd);
  virtual void DeregisterFile(CufileHandle handle);
  // Reads up to `bytes` at `file_offset` into the device block starting at
  // `device_base` (an AllocateDevice result), `device_offset` bytes in.
  // Returns bytes read (fewer only at end of file).
  virtual Result<std::size_t> ReadDirect(CufileHandle handle, void* device_base,
                                         std::size_t device_offset, std::size_t bytes,
                                         std::uint64_t file_offset);
};

// What decides the path.
struct PathOptions {
  std::string mode = "auto";   // auto | cufile | cuda-bounce | emulated
  std::string cuda_runtime;    // library to dlopen instead of the default names
  std::string cufile_library;  // likewise for libcufile
  std::string cufile_log;      // cuFile's log file; empty = a per-process file in TMPDIR
  int device = -1;             // GPU index; -1 = rank modulo the device count
  double h2d_bytes_per_second = 0;
  double h2d_latency_seconds = 0;
};

struct PathSelection {
  std::unique_ptr<DevicePath> path;
  // Why this path: for auto, why no faster one was usable ("no CUDA driver:
  // cudaGetDeviceCount returned 35 (...)"); for a forced mode, what it uses.
  std::string reason;
};

// Picks the path. mode=auto takes the first of cufile, cuda-bounce, emulated
// that works here. A forced mode that cannot work returns NotSupported naming
// what is missing (library, driver, GPU). `rank` picks the GPU when
// options.device is -1.
Result<PathSelection> SelectDevicePath(const PathOptions& options, int rank);

}  // namespace iomimic::gds
