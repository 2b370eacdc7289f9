// Names, constants and helpers shared by the indexed_binary and
// mmap_indexed_binary plugins (one set of sources compiled into both).
//
// A dataset file of these formats is three files (DLIO's
// indexed_binary_generator):
//   <name>           the data: num_samples samples of sample_bytes each,
//                    concatenated (sample i at byte i * sample_bytes);
//   <name>.off.idx   one little-endian uint64 per sample: its byte offset;
//   <name>.sz.idx    one little-endian uint64 per sample: its size in bytes.
// <name> itself is the core's data file (DLIO names it
// <prefix>_<i>_of_<N>.<format>); the two index files are written by the
// format beside it.

#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "iomimic/buffer.h"
#include "iomimic/random.h"
#include "iomimic/status.h"
#include "iomimic/storage.h"

namespace iomimic::indexed_binary {

// Which DLIO format a plugin instance stands for. Both write and read the same
// files; the flavour sets the plugin name, the file extension and the names in
// messages.
enum class Flavor {
  kIndexedBinary,      // DLIO's IndexedBinaryReader: seek + readinto per sample
  kMmapIndexedBinary,  // DLIO's IndexedBinaryMMapReader: np.memmap slices
};

// "indexed_binary" or "mmap_indexed_binary" (also the file extension).
std::string_view FlavorName(Flavor flavor);

inline constexpr std::string_view kOffsetIndexSuffix = ".off.idx";
inline constexpr std::string_view kSizeIndexSuffix = ".sz.idx";
// Bytes per index entry (uint64).
inline constexpr std::size_t kIndexEntrySize = 8;

// "<data_path>.off.idx" and "<data_path>.sz.idx".
std::string OffsetIndexPath(const std::string& data_path);
std::string SizeIndexPath(const std::string& data_path);

// The temporary name a file is written under before it is renamed into
// place, following the core's convention: "<dir>/.<name>.iomimic-partial".
std::string PartialPath(const std::string& path);

// Little-endian uint64 encoding of index entries.
void StoreU64(std::byte* out, std::uint64_t value);
std::uint64_t LoadU64(const std::byte* in);

}  // namespace iomimic::indexed_binary
