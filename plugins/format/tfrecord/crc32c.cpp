#include "crc32c.h"

#include <isa-l/crc.h>

#include <array>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <nmmintrin.h>
#define IOMIMIC_CRC32C_X86 1
#endif

namespace iomimic::tfrecord {
namespace {

constexpr std::uint32_t kPolynomial = 0x82F63B78u;  // reflected 0x1EDC6F41

// kTables[k][b]: the CRC of byte b followed by k zero bytes (slicing-by-8).
constexpr std::array<std::array<std::uint32_t, 256>, 8> MakeTables() {
  std::array<std::array<std::uint32_t, 256>, 8> t{};
  for (std::uint32_t b = 0; b < 256; ++b) {
    std::uint32_t c = b;
    for (int i = 0; i < 8; ++i) c = (c >> 1) ^ ((c & 1u) ? kPolynomial : 0u);
    t[0][b] = c;
  }
  for (std::size_t k = 1; k < 8; ++k) {
    for (std::uint32_t b = 0; b < 256; ++b) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xFF];
  }
  return t;
}

constexpr auto kTables = MakeTables();

std::uint64_t LoadLe64(const unsigned char* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap64(v);
#endif
  return v;
}

#if defined(IOMIMIC_CRC32C_X86)

bool CpuHasSse42() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return false;
  return (ecx & bit_SSE4_2) != 0;
}

#endif

}  // namespace

std::uint32_t Crc32cExtendSoftware(std::uint32_t crc, const void* data, std::size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint32_t c = ~crc;
  while (size > 0 && (reinterpret_cast<std::uintptr_t>(p) & 7u) != 0) {
    c = (c >> 8) ^ kTables[0][(c ^ *p++) & 0xFF];
    --size;
  }
  while (size >= 8) {
    const std::uint64_t v = LoadLe64(p) ^ c;
    c = kTables[7][v & 0xFF] ^ kTables[6][(v >> 8) & 0xFF] ^ kTables[5][(v >> 16) & 0xFF] ^
        kTables[4][(v >> 24) & 0xFF] ^ kTables[3][(v >> 32) & 0xFF] ^ kTables[2][(v >> 40) & 0xFF] ^
        kTables[1][(v >> 48) & 0xFF] ^ kTables[0][v >> 56];
    p += 8;
    size -= 8;
  }
  while (size > 0) {
    c = (c >> 8) ^ kTables[0][(c ^ *p++) & 0xFF];
    --size;
  }
  return ~c;
}

#if defined(IOMIMIC_CRC32C_X86)

bool Crc32cHardwareAvailable() {
  static const bool available = CpuHasSse42();
  return available;
}

namespace {

// Bytes per lane of the three-way interleaved loop. The crc32 instruction has
// a latency of three cycles and a throughput of one per cycle, so three
// independent lanes run about three times faster than one chain.
constexpr std::size_t kLane = 4096;

// Tables that advance a raw CRC register over kLane zero bytes:
// Shift(c) = t[0][c & 0xff] ^ t[1][(c >> 8) & 0xff] ^ ... (linear in c).
struct ShiftTables {
  std::uint32_t t[4][256];
};

ShiftTables MakeShiftTables() {
  std::uint32_t basis[32];
  for (int bit = 0; bit < 32; ++bit) {
    std::uint32_t v = 1u << bit;
    for (std::size_t i = 0; i < kLane; ++i) v = (v >> 8) ^ kTables[0][v & 0xFF];
    basis[bit] = v;
  }
  ShiftTables s{};
  for (int k = 0; k < 4; ++k) {
    for (std::uint32_t b = 0; b < 256; ++b) {
      std::uint32_t v = 0;
      for (int bit = 0; bit < 8; ++bit) {
        if (b & (1u << bit)) v ^= basis[8 * k + bit];
      }
      s.t[k][b] = v;
    }
  }
  return s;
}

std::uint32_t ShiftLane(const ShiftTables& s, std::uint32_t c) {
  return s.t[0][c & 0xFF] ^ s.t[1][(c >> 8) & 0xFF] ^ s.t[2][(c >> 16) & 0xFF] ^ s.t[3][c >> 24];
}

}  // namespace

__attribute__((target("sse4.2"))) std::uint32_t Crc32cExtendHardware(std::uint32_t crc,
                                                                     const void* data,
                                                                     std::size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint32_t c32 = ~crc;
  while (size > 0 && (reinterpret_cast<std::uintptr_t>(p) & 7u) != 0) {
    c32 = _mm_crc32_u8(c32, *p++);
    --size;
  }
#if defined(__x86_64__)
  std::uint64_t c = c32;
  if (size >= 3 * kLane) {
    static const ShiftTables shift = MakeShiftTables();
    while (size >= 3 * kLane) {
      std::uint64_t c1 = 0, c2 = 0;
      const unsigned char* p1 = p + kLane;
      const unsigned char* p2 = p + 2 * kLane;
      for (std::size_t i = 0; i < kLane; i += 8) {
        c = _mm_crc32_u64(c, LoadLe64(p + i));
        c1 = _mm_crc32_u64(c1, LoadLe64(p1 + i));
        c2 = _mm_crc32_u64(c2, LoadLe64(p2 + i));
      }
      // The register is linear: reg(A || B) = shift(reg(A), |B|) ^ reg0(B).
      std::uint32_t r =
          ShiftLane(shift, static_cast<std::uint32_t>(c)) ^ static_cast<std::uint32_t>(c1);
      r = ShiftLane(shift, r) ^ static_cast<std::uint32_t>(c2);
      c = r;
      p += 3 * kLane;
      size -= 3 * kLane;
    }
  }
  while (size >= 8) {
    c = _mm_crc32_u64(c, LoadLe64(p));
    p += 8;
    size -= 8;
  }
  c32 = static_cast<std::uint32_t>(c);
#endif
  while (size >= 4) {
    std::uint32_t v;
    std::memcpy(&v, p, 4);
    c32 = _mm_crc32_u32(c32, v);
    p += 4;
    size -= 4;
  }
  while (size > 0) {
    c32 = _mm_crc32_u8(c32, *p++);
    --size;
  }
  return ~c32;
}

#else

bool Crc32cHardwareAvailable() { return false; }

std::uint32_t Crc32cExtendHardware(std::uint32_t crc, const void* data, std::size_t size) {
  return Crc32cExtendSoftware(crc, data, size);
}

#endif

std::uint32_t Crc32cExtendIsal(std::uint32_t crc, const void* data, std::size_t size) {
  // ISA-L works on the raw register: pre- and post-inverted here.
  return ~crc32_iscsi(static_cast<unsigned char*>(const_cast<void*>(data)), static_cast<int>(size),
                      ~crc);
}

std::uint32_t Crc32cExtend(std::uint32_t crc, const void* data, std::size_t size) {
  // crc32_iscsi takes an int length: feed it in pieces below 2 GiB.
  constexpr std::size_t kPiece = std::size_t{1} << 30;
  const auto* p = static_cast<const unsigned char*>(data);
  while (size > kPiece) {
    crc = Crc32cExtendIsal(crc, p, kPiece);
    p += kPiece;
    size -= kPiece;
  }
  return Crc32cExtendIsal(crc, p, size);
}

const char* Crc32cImplementation() { return "isa-l"; }

}  // namespace iomimic::tfrecord
