// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of the
// TFRecord framing, and TensorFlow's masked form of it.
//
// Three implementations compute the same function: ISA-L's crc32_iscsi (the
// default: it picks the widest carry-less-multiply folding the CPU has at run
// time, tens of GB/s), the SSE4.2 crc32 instruction and a table-driven
// slicing-by-8 fallback. All are exposed so tests can check each one.

#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace iomimic::tfrecord {

// Continues a CRC-32C: Extend(Extend(0, a), b) == Value(a + b).
std::uint32_t Crc32cExtend(std::uint32_t crc, const void* data, std::size_t size);

inline std::uint32_t Crc32c(const void* data, std::size_t size) {
  return Crc32cExtend(0, data, size);
}
inline std::uint32_t Crc32c(std::span<const std::byte> data) {
  return Crc32cExtend(0, data.data(), data.size());
}

// The table-driven implementation (any CPU).
std::uint32_t Crc32cExtendSoftware(std::uint32_t crc, const void* data, std::size_t size);

// True when the CPU executes the SSE4.2 crc32 instruction.
bool Crc32cHardwareAvailable();

// The SSE4.2 implementation. Precondition: Crc32cHardwareAvailable().
std::uint32_t Crc32cExtendHardware(std::uint32_t crc, const void* data, std::size_t size);

// ISA-L's implementation (any CPU; ISA-L dispatches itself).
std::uint32_t Crc32cExtendIsal(std::uint32_t crc, const void* data, std::size_t size);

// "isa-l": the implementation Crc32cExtend uses.
const char* Crc32cImplementation();

inline constexpr std::uint32_t kCrcMaskDelta = 0xa282ead8u;

// TensorFlow's masked CRC (crc32c::Mask): rotate right by 15, add a constant.
constexpr std::uint32_t MaskCrc(std::uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + kCrcMaskDelta;
}

constexpr std::uint32_t UnmaskCrc(std::uint32_t masked) {
  const std::uint32_t rot = masked - kCrcMaskDelta;
  return (rot >> 17) | (rot << 15);
}

}  // namespace iomimic::tfrecord
