// iomimic plugin SDK: owned memory regions.
//
// A Buffer is a move-only, owned region of memory. Storage back ends decide
// where buffers live (Storage::Allocate): page-aligned host memory for
// O_DIRECT, pinned host memory or device memory for GPU staging. The release
// callback belongs to whoever allocated the memory, so a Buffer made by a
// plugin must be destroyed before that plugin is unloaded (the core's plugin
// registry guarantees this for the buffers it holds).

#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <span>
#include <utility>

namespace iomimic {

// Where a buffer's bytes live. Host code may only dereference kHost and
// kPinnedHost buffers.
enum class MemoryKind : std::uint8_t { kHost = 0, kPinnedHost = 1, kDevice = 2 };

class Buffer {
 public:
  // Frees `data` that was allocated by the same party that set the callback.
  // `context` is passed back unchanged.
  using ReleaseFn = void (*)(void* context, void* data, std::size_t size);

  Buffer() = default;
  Buffer(void* data, std::size_t size, ReleaseFn release, void* context,
         MemoryKind kind = MemoryKind::kHost)
      : data_(static_cast<std::byte*>(data)),
        size_(size),
        release_(release),
        context_(context),
        kind_(kind) {}

  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& other) noexcept { *this = std::move(other); }
  Buffer& operator=(Buffer&& other) noexcept {
    if (this != &other) {
      Reset();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
      release_ = std::exchange(other.release_, nullptr);
      context_ = std::exchange(other.context_, nullptr);
      kind_ = other.kind_;
    }
    return *this;
  }
  ~Buffer() { Reset(); }

  // Allocates `size` bytes of host memory aligned to `alignment` (a power of
  // two, at least sizeof(void*)). Returns an empty buffer when out of memory.
  static Buffer AllocateHost(std::size_t size, std::size_t alignment = 4096) {
    if (size == 0) return Buffer();
    std::size_t rounded = (size + alignment - 1) / alignment * alignment;
    void* p = std::aligned_alloc(alignment, rounded);
    if (p == nullptr) return Buffer();
    return Buffer(p, size, &FreeHost, nullptr, MemoryKind::kHost);
  }

  std::byte* data() { return data_; }
  const std::byte* data() const { return data_; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  MemoryKind kind() const { return kind_; }
  bool host_accessible() const { return kind_ != MemoryKind::kDevice; }
  std::span<std::byte> span() { return {data_, size_}; }
  std::span<const std::byte> span() const { return {data_, size_}; }

  // Releases the memory now; the buffer becomes empty.
  void Reset() {
    if (data_ != nullptr && release_ != nullptr) release_(context_, data_, size_);
    data_ = nullptr;
    size_ = 0;
    release_ = nullptr;
    context_ = nullptr;
  }

 private:
  static void FreeHost(void*, void* data, std::size_t) { std::free(data); }

  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  ReleaseFn release_ = nullptr;
  void* context_ = nullptr;
  MemoryKind kind_ = MemoryKind::kHost;
};

}  // namespace iomimic
