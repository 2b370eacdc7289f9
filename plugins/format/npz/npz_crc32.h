// CRC-32 of ZIP members, shared by the npz writer and reader.

#pragma once

#include <isa-l/crc.h>

#include <cstdint>
#include <span>

namespace iomimic::npz {

// CRC-32 of ZIP members (zlib's polynomial and conventions) with ISA-L, which
// folds with carry-less multiplication on the widest vectors the CPU has:
// 4-8x zlib's crc32_z (bench/results/hot_path.md). `crc` is the CRC of the
// bytes before `data` (0 to start).
inline std::uint32_t Crc32(std::uint32_t crc, std::span<const std::byte> data) {
  return crc32_gzip_refl(crc, reinterpret_cast<const unsigned char*>(data.data()), data.size());
}

}  // namespace iomimic::npz
