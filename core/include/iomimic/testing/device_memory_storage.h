// iomimic plugin SDK, testing helpers: a storage whose buffers a format must
// treat as device memory.
//
// DeviceMemoryStorage forwards every call to another Storage but hands out
// buffers marked MemoryKind::kDevice (host memory underneath, so a test can
// still look at them) and says device_memory in its capabilities, as a GPU
// staging back end does. A format tested on it must read into such buffers
// without touching their bytes from the CPU (iomimic/storage.h, Buffer).

#pragma once

#include <cstdlib>
#include <cstring>
#include <string>

#include "iomimic/forwarding_storage.h"

namespace iomimic::testing {

class DeviceMemoryStorage final : public ForwardingStorage {
 public:
  // Wraps `inner`, which must outlive this object.
  explicit DeviceMemoryStorage(Storage* inner) : ForwardingStorage(inner) {}

  // "device-mem".
  std::string name() const override { return "device-mem"; }
  // The inner back end's, with device_memory set.
  StorageCapabilities capabilities() const override {
    StorageCapabilities c = ForwardingStorage::capabilities();
    c.device_memory = true;
    return c;
  }
  // 64-byte aligned host memory marked MemoryKind::kDevice; counts the calls.
  Result<Buffer> Allocate(std::size_t size) override {
    ++device_allocations;
    void* p = std::aligned_alloc(64, (size + 63) / 64 * 64);
    if (p == nullptr) return Status::ResourceExhausted("device-mem: cannot allocate");
    return Buffer(
        p, size, [](void*, void* data, std::size_t) { std::free(data); }, nullptr,
        MemoryKind::kDevice);
  }

  // A memcpy: the "device" memory is host memory underneath.
  Status CopyIntoBuffer(Buffer& destination, std::size_t offset,
                        std::span<const std::byte> source) override {
    IOMIMIC_RETURN_IF_ERROR(
        CheckBufferRange(destination, offset, source.size(), "device-mem: CopyIntoBuffer"));
    if (!source.empty()) std::memcpy(destination.data() + offset, source.data(), source.size());
    return Status::OK();
  }
  // A memcpy, as CopyIntoBuffer.
  Status CopyOutOfBuffer(const Buffer& source, std::size_t offset,
                         std::span<std::byte> destination) override {
    IOMIMIC_RETURN_IF_ERROR(
        CheckBufferRange(source, offset, destination.size(), "device-mem: CopyOutOfBuffer"));
    if (!destination.empty()) {
      std::memcpy(destination.data(), source.data() + offset, destination.size());
    }
    return Status::OK();
  }

  // How many buffers Allocate handed out (not thread-safe: tests only).
  int device_allocations = 0;
};

}  // namespace iomimic::testing
