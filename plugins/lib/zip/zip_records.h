// ZIP archive records (PKWARE APPNOTE.TXT 6.3), written the way CPython's
// zipfile writes them and parsed the way zipfile reads them. The one ZIP
// implementation of the in-tree plugins: npz members (np.savez) and the csv
// plugin's "zip" compression (pandas' to_csv) both use it.
//
// Writing follows zipfile.ZipInfo.FileHeader and ZipFile._write_end_record.
// A local header carries a 20-byte ZIP64 extra field holding both sizes when
// the writer asks for one (LocalZip64::kInclude): numpy always does
// (force_zip64=True); zipfile otherwise does when the member may outgrow the
// limit. Its 32-bit size fields hold 0xFFFFFFFF, and its version 4.5, only
// when a size exceeds the ZIP64 limit. Central directory entries get a ZIP64
// extra field only for the values over the limit, and the ZIP64 end records
// are written only when the entry count, the central directory's offset or
// its size exceeds what the classic end record holds. Like zipfile, the limit
// is 2^31 - 1 (zipfile.ZIP64_LIMIT), not 2^32 - 1, so files are
// byte-identical to zipfile's at every size.

#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "iomimic/status.h"

namespace iomimic::zip {

// Whether a local header carries the ZIP64 extra field (the `zip64` argument
// of zipfile's ZipInfo.FileHeader).
enum class LocalZip64 : std::uint8_t {
  kOmit = 0,     // sizes only in the 32-bit fields; they must not exceed the limit
  kInclude = 1,  // a ZIP64 extra field with both sizes follows the name
};

inline constexpr std::uint32_t kLocalHeaderSignature = 0x04034b50;
inline constexpr std::uint32_t kCentralHeaderSignature = 0x02014b50;
inline constexpr std::uint32_t kEndOfCentralDirSignature = 0x06054b50;
inline constexpr std::uint32_t kZip64EndOfCentralDirSignature = 0x06064b50;
inline constexpr std::uint32_t kZip64LocatorSignature = 0x07064b50;

inline constexpr std::size_t kLocalHeaderFixedSize = 30;
inline constexpr std::size_t kCentralHeaderFixedSize = 46;
inline constexpr std::size_t kEndOfCentralDirSize = 22;
inline constexpr std::size_t kZip64EndOfCentralDirSize = 56;
inline constexpr std::size_t kZip64LocatorSize = 20;
// Header id 0x0001, data size 16, original size, compressed size.
inline constexpr std::size_t kLocalZip64ExtraSize = 20;
// Largest comment an end record can carry.
inline constexpr std::size_t kMaxCommentSize = 0xFFFF;

// zipfile.ZIP64_LIMIT and zipfile.ZIP_FILECOUNT_LIMIT.
inline constexpr std::uint64_t kZip64Limit = (std::uint64_t{1} << 31) - 1;
inline constexpr std::uint64_t kFileCountLimit = 0xFFFF;

inline constexpr std::uint16_t kMethodStored = 0;
inline constexpr std::uint16_t kMethodDeflated = 8;

inline constexpr std::uint16_t kFlagEncrypted = 1u << 0;
inline constexpr std::uint16_t kFlagCompressedPatch = 1u << 5;
inline constexpr std::uint16_t kFlagStrongEncryption = 1u << 6;

// One member of an archive, as recorded in its central directory entry.
struct MemberRecord {
  std::string name;
  std::uint16_t method = kMethodStored;
  std::uint16_t flags = 0;
  std::uint32_t crc32 = 0;
  std::uint64_t compressed_size = 0;
  std::uint64_t uncompressed_size = 0;
  std::uint64_t local_header_offset = 0;
};

// Size of the local header EncodeLocalHeader writes for a member whose name
// is `name_size` bytes long.
constexpr std::size_t LocalHeaderSize(std::size_t name_size,
                                      LocalZip64 zip64 = LocalZip64::kInclude) {
  return kLocalHeaderFixedSize + name_size +
         (zip64 == LocalZip64::kInclude ? kLocalZip64ExtraSize : 0);
}

// The local file header of `member` (LocalHeaderSize bytes), as zipfile's
// ZipInfo.FileHeader writes it: with the ZIP64 extra field when `zip64` is
// kInclude. A size over `zip64_limit` needs kInclude (the caller checks; the
// header would not hold the size otherwise). `zip64_limit` is kZip64Limit
// except in tests that force the ZIP64 paths on small files.
std::vector<std::byte> EncodeLocalHeader(const MemberRecord& member, LocalZip64 zip64,
                                         std::uint64_t zip64_limit = kZip64Limit);

// The central directory for `members` followed by the end records (ZIP64 end
// record and locator when needed, then the classic end record), for a
// directory that starts at `directory_offset`. `zip64_limit` as for
// EncodeLocalHeader; pass the same value to both.
std::vector<std::byte> EncodeDirectoryAndEnd(std::span<const MemberRecord> members,
                                             std::uint64_t directory_offset,
                                             std::uint64_t zip64_limit = kZip64Limit);

// What the end records say about the central directory.
struct EndRecord {
  std::uint64_t end_record_offset = 0;  // where the classic end record starts
  bool zip64 = false;                   // values come from a ZIP64 end record
  std::uint64_t entries = 0;
  std::uint64_t directory_size = 0;
  std::uint64_t directory_offset = 0;  // as recorded (before zipfile's "concat" shift)
};

// Parses a classic end record at `data` (at least kEndOfCentralDirSize bytes)
// found at file offset `offset`. kCorruption with offset on a bad signature.
Result<EndRecord> ParseEndRecord(std::span<const std::byte> data, std::uint64_t offset);

// Finds the last end-record signature in `tail` (the file's final bytes,
// starting at `tail_offset`), like zipfile's rfind. Returns the offset in the
// file, or -1 when there is none with a complete record.
std::int64_t FindEndRecord(std::span<const std::byte> tail, std::uint64_t tail_offset);

// True when `data` (kZip64LocatorSize bytes) is a ZIP64 end locator.
bool IsZip64Locator(std::span<const std::byte> data);

// Checks a ZIP64 locator at `offset` for a single-disk archive.
Status CheckZip64Locator(std::span<const std::byte> data, std::uint64_t offset);

// Replaces the directory fields of `end` with those of the ZIP64 end record
// in `data` (kZip64EndOfCentralDirSize bytes at file offset `offset`).
Status ApplyZip64EndRecord(std::span<const std::byte> data, std::uint64_t offset, EndRecord* end);

// Parses the central directory entry at `data[pos]` (the directory starts at
// file offset `directory_offset`), resolving ZIP64 extra fields. On success
// advances `pos` past the entry.
Result<MemberRecord> ParseCentralEntry(std::span<const std::byte> data, std::size_t* pos,
                                       std::uint64_t directory_offset);

// The fixed part of a local header.
struct LocalHeader {
  std::uint16_t flags = 0;
  std::uint16_t method = 0;
  std::uint16_t name_size = 0;
  std::uint16_t extra_size = 0;
};

// Parses the first kLocalHeaderFixedSize bytes of a local header at `offset`.
Result<LocalHeader> ParseLocalHeader(std::span<const std::byte> data, std::uint64_t offset);

// Little-endian access used by the records above and by tests.
std::uint16_t LoadU16(const std::byte* p);
std::uint32_t LoadU32(const std::byte* p);
std::uint64_t LoadU64(const std::byte* p);
void StoreU32(std::byte* p, std::uint32_t v);

}  // namespace iomimic::zip
