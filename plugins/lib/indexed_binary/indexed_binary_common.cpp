#include "indexed_binary_common.h"

#include <algorithm>
#include <cstring>

namespace iomimic::indexed_binary {

std::string_view FlavorName(Flavor flavor) {
  return flavor == Flavor::kMmapIndexedBinary ? "mmap_indexed_binary" : "indexed_binary";
}

std::string OffsetIndexPath(const std::string& data_path) {
  return data_path + std::string(kOffsetIndexSuffix);
}

std::string SizeIndexPath(const std::string& data_path) {
  return data_path + std::string(kSizeIndexSuffix);
}

std::string PartialPath(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  return dir + "." + base + ".iomimic-partial";
}

void StoreU64(std::byte* out, std::uint64_t value) {
  for (std::size_t i = 0; i < kIndexEntrySize; ++i) {
    out[i] = static_cast<std::byte>((value >> (8 * i)) & 0xFF);
  }
}

std::uint64_t LoadU64(const std::byte* in) {
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < kIndexEntrySize; ++i) {
    value |= std::to_integer<std::uint64_t>(in[i]) << (8 * i);
  }
  return value;
}

}  // namespace iomimic::indexed_binary
