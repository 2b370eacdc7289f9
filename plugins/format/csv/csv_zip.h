// The ZIP container of compression "zip": one deflated member, as pandas
// writes it with zipfile (PKWARE APPNOTE 6.3). Records are encoded and
// parsed here; the reader and writer do the I/O.
//
// Writing: the local header comes first with zero CRC and sizes and is
// patched once the member is written; it carries a ZIP64 extra field when
// the sizes may reach 4 GiB (decided up front from an upper bound, so the
// header keeps its size), and the central directory and end records use
// ZIP64 forms only for values that need them. Times are fixed at 1980-01-01
// so the same seed gives the same bytes.

#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "iomimic/status.h"

namespace iomimic::csv::zip {

// Values at or above this are stored in ZIP64 extra fields.
inline constexpr std::uint64_t kZip64Limit = 0xFFFFFFFFu;
inline constexpr std::size_t kLocalHeaderFixed = 30;
inline constexpr std::size_t kCentralHeaderFixed = 46;
inline constexpr std::size_t kEndRecordSize = 22;
inline constexpr std::size_t kZip64LocatorSize = 20;
inline constexpr std::size_t kZip64EndSize = 56;
inline constexpr std::size_t kMaxCommentSize = 0xFFFF;

inline constexpr std::uint16_t kMethodStored = 0;
inline constexpr std::uint16_t kMethodDeflated = 8;

struct Member {
  std::string name;
  std::uint16_t method = kMethodDeflated;
  std::uint32_t crc32 = 0;
  std::uint64_t compressed_size = 0;
  std::uint64_t uncompressed_size = 0;
  std::uint64_t local_header_offset = 0;
};

// The local header; with `zip64` the sizes are in a ZIP64 extra field.
std::string EncodeLocalHeader(const Member& member, bool zip64);

// The central directory entry of `member` (at `directory_offset`), then the
// ZIP64 end record and locator when any value needs them, then the end
// record.
std::string EncodeDirectoryAndEnd(const Member& member, std::uint64_t directory_offset);

// What the end records say.
struct Directory {
  std::uint64_t entries = 0;
  std::uint64_t size = 0;
  std::uint64_t offset = 0;
  std::uint64_t end_record_offset = 0;  // where the 22-byte end record starts
  bool zip64_fields = false;            // some field is 0xFFFF/0xFFFFFFFF
};

// Finds the end record in `tail` (the last bytes of a file, starting at
// file offset `tail_offset`): the last signature whose comment ends the file.
Result<Directory> ParseEndRecord(std::span<const std::byte> tail, std::uint64_t tail_offset,
                                 const std::string& path);

// When `locator` (the 20 bytes before the end record) is a ZIP64 locator,
// sets *zip64_end_offset and returns true.
bool ParseZip64Locator(std::span<const std::byte> locator, std::uint64_t* zip64_end_offset);

// Reads the ZIP64 end record (56 bytes at `offset`) into `dir`.
Status ParseZip64End(std::span<const std::byte> record, std::uint64_t offset,
                     const std::string& path, Directory* dir);

// Parses the first central directory entry of `directory` (at `offset`).
Result<Member> ParseCentralEntry(std::span<const std::byte> directory, std::uint64_t offset,
                                 const std::string& path);

// Checks the 30 fixed bytes of a local header at `offset` and returns the
// length of its name and extra field.
Result<std::uint64_t> ParseLocalHeader(std::span<const std::byte> fixed, std::uint64_t offset,
                                       const std::string& path);

}  // namespace iomimic::csv::zip
