// The `gds` storage back end: GPUDirect-style staging of file data into
// accelerator memory.
//
// Storage::Allocate returns MemoryKind::kDevice buffers on every machine, and
// ReadAt lands reads into them through the data path picked at creation
// (device_path.h): cufile, cuda-bounce, or emulated where there is no GPU.
// Behaviour is identical with and without a GPU, so a format never touches
// the bytes of a device buffer, and host-decoding formats run only with
// reader.decode off (the core refuses the rest before the run starts).
//
// Host destination rule: ReadAt into memory that is not a buffer from this
// storage's Allocate (a format's own header or staging buffer) is a plain
// pread into that memory (through an aligned bounce buffer when descriptors
// are O_DIRECT), counted apart from staged reads. Writes are pwrite from host
// memory; GDS writes (cuFileWrite) are out of scope, and writing from a device
// buffer is refused.
//
// Options: see kGdsOptions at the end of gds_storage.cpp and README.md.

#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "iomimic/file_system.h"
#include "iomimic/iomimic.h"

namespace iomimic::gds {

// What the back end did, for the report line and for tests.
struct GdsStats {
  // Reads whose destination was device memory, and the bytes they landed.
  std::uint64_t device_reads = 0;
  std::uint64_t device_bytes = 0;
  // Seconds in the storage step of those reads (pread, or cuFileRead).
  double storage_seconds = 0;
  // Seconds the readers spent in the host-to-device step: starting copies
  // and waiting for them (cuda-bounce: cudaMemcpyAsync and
  // cudaStreamSynchronize; emulated: the memcpy and the modelled link). A copy
  // that completes while the next chunk is read costs only its start, so this
  // is the copy time the reads did not hide. 0 for cufile, whose storage step
  // already ends in device memory. Summed over threads.
  double h2d_seconds = 0;
  // Reads into host memory (the host destination rule).
  std::uint64_t host_reads = 0;
  std::uint64_t host_bytes = 0;
  // Device allocations made, and those served from the release cache.
  std::uint64_t allocations = 0;
  std::uint64_t allocation_cache_hits = 0;
  // cufile, mode=auto: files that cuFile refused to register
  // (cuFileHandleRegister), read through pinned staging memory instead. Their
  // reads count as staged: storage_seconds and h2d_seconds.
  std::uint64_t cufile_refused_files = 0;
  // CopyIntoBuffer (host to device) and CopyOutOfBuffer (device to host):
  // calls, bytes and the seconds they took (each call ends with its copies
  // complete). Summed over threads.
  std::uint64_t h2d_copies = 0, h2d_copy_bytes = 0;
  double h2d_copy_seconds = 0;
  std::uint64_t d2h_copies = 0, d2h_copy_bytes = 0;
  double d2h_copy_seconds = 0;
};

struct State;  // shared by the storage, its files and its buffers

class GdsStorage final : public FileSystemStorage {
 public:
  // Parses the options, picks the data path and prepares it. A forced mode
  // that cannot work here fails with NotSupported naming what is missing.
  static Result<std::unique_ptr<GdsStorage>> Create(const PluginContext& context);

  // Logs the statistics line when report=true.
  ~GdsStorage() override;

  std::string name() const override { return "gds"; }
  StorageCapabilities capabilities() const override;
  Result<std::unique_ptr<File>> Open(const std::string& path, const OpenOptions& options) override;
  // Device memory (MemoryKind::kDevice), whatever the data path.
  Result<Buffer> Allocate(std::size_t size) override;
  // Host to device into a buffer from Allocate, through the pinned staging
  // buffers in staging_size chunks, two alternating (a chunk is copied to
  // the device while the next one is staged): cudaMemcpyAsync and
  // cudaStreamSynchronize on cufile and cuda-bounce; emulated, a memcpy into
  // the host arena held to the modelled link (h2d_bandwidth, h2d_latency).
  // Errors name gds and the offset. Host-accessible buffers: a memcpy.
  Status CopyIntoBuffer(Buffer& destination, std::size_t offset,
                        std::span<const std::byte> source) override;
  // Device to host, the same way (emulated: a link of its own, the same
  // bandwidth and latency).
  Status CopyOutOfBuffer(const Buffer& source, std::size_t offset,
                         std::span<std::byte> destination) override;

  // "cufile", "cuda-bounce" or "emulated".
  const std::string& data_path() const;
  // Why that path was chosen, e.g. "no CUDA driver: cudaGetDeviceCount
  // returned 35 (CUDA driver version is insufficient for CUDA runtime
  // version)".
  const std::string& path_reason() const;
  // A snapshot of the counters. Thread-safe.
  GdsStats stats() const;
  // stats() for the results: gds_staged_bytes, gds_device_reads,
  // gds_storage_seconds, gds_h2d_seconds, gds_host_bytes, gds_host_reads,
  // gds_device_allocations, gds_allocation_cache_hits,
  // gds_cufile_refused_files, then the buffer copies: gds_h2d_copies,
  // gds_h2d_copy_bytes, gds_h2d_copy_seconds, gds_d2h_copies,
  // gds_d2h_copy_bytes, gds_d2h_copy_seconds.
  std::vector<StorageStatistic> Statistics() const override;
  // The report line (what report=true logs at destruction).
  std::string ReportLine() const;

  // Copies host.size() bytes of device memory starting at `device` (inside
  // a buffer from Allocate) into `host`. For verification: formats never
  // read device memory.
  Status CopyToHost(const std::byte* device, std::span<std::byte> host) const;

 private:
  explicit GdsStorage(std::shared_ptr<State> state) : state_(std::move(state)) {}

  std::shared_ptr<State> state_;
};

// The plugin factory (GdsStorage::Create as a Storage).
Result<std::unique_ptr<Storage>> CreateGdsStorage(const PluginContext& context);

}  // namespace iomimic::gds
