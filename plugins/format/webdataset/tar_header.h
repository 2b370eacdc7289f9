// POSIX tar (ustar) member headers as Python's tarfile writes and reads them,
// and WebDataset's rule for grouping members into samples.
//
// A tar archive is a sequence of 512-byte blocks: each member is one header
// block followed by its data padded with zeros to a whole block; two zero
// blocks end the archive, and tarfile pads the archive with zeros to a
// multiple of its record size (20 blocks, 10240 bytes). The header fields
// written here are those of tarfile's USTAR/PAX header for a regular file of
// at most 8 GiB (an 11-digit octal size): name, mode, uid, gid, size and
// mtime as zero-padded octal followed by a NUL, the checksum as six octal
// digits, a NUL and a space, type '0', magic "ustar\0" version "00", owner
// and group names, and NULs elsewhere. docs/formats.md ("webdataset") lists
// what is copied from the library.
//
// Grouping (webdataset's tar iterators): a member name splits into a key
// (any folder part plus the base name up to its first dot) and a suffix (the
// rest after that dot, lower-cased); consecutive members with the same key
// form one sample whose fields the suffixes name (000123.cls, 000123.npy).
// Names without a dot in their base name, names of the form __x__ (metadata)
// and members that are not regular files are skipped.

#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "iomimic/status.h"

namespace iomimic::webdataset {

inline constexpr std::size_t kBlockSize = 512;
// tarfile.RECORDSIZE: archives are padded to a multiple of it.
inline constexpr std::uint64_t kRecordSize = 20 * kBlockSize;
// The two zero blocks that end an archive.
inline constexpr std::uint64_t kEndOfArchiveSize = 2 * kBlockSize;
// The largest member size an 11-digit octal size field holds.
inline constexpr std::uint64_t kMaxMemberSize = (std::uint64_t{1} << 33) - 1;
// The longest name the 100-byte name field holds (no prefix split).
inline constexpr std::size_t kMaxNameSize = 100;

using HeaderBlock = std::array<std::byte, kBlockSize>;

// `n` rounded up to a whole number of blocks.
constexpr std::uint64_t PaddedToBlock(std::uint64_t n) {
  return (n + kBlockSize - 1) / kBlockSize * kBlockSize;
}

// What a header says about its member.
struct MemberHeader {
  std::string name;  // prefix + "/" + name when the ustar prefix is set
  std::uint64_t size = 0;
  char type = '0';              // '0' regular file ('\0' is reported as '0'), '5' folder...
  bool end_of_archive = false;  // an all-zero block: no member
};

// Writes the header tarfile writes for a regular file `name` (at most
// kMaxNameSize bytes, no NUL) of `size` bytes (at most kMaxMemberSize) with
// modification time `mtime`, mode 0444, owner and group "bigdata" (the
// defaults of webdataset's TarWriter), into `out`. Pure.
void EncodeMemberHeader(std::string_view name, std::uint64_t size, std::uint64_t mtime,
                        HeaderBlock& out);

// Parses the header block at `offset` of `path` as tarfile does: an
// all-zero block is the end of the archive; otherwise the checksum must
// match (the unsigned or the signed sum of the block with the checksum
// field read as spaces) and the size field must be octal (or base-256).
// kCorruption naming `path` and `offset` otherwise.
Result<MemberHeader> ParseMemberHeader(std::span<const std::byte, kBlockSize> block,
                                       const std::string& path, std::uint64_t offset);

// WebDataset's split of a member name into key and suffix (see the file
// comment). False for a name that belongs to no sample (no dot in its base
// name, or a trailing folder part after the dot). The suffix is not
// lower-cased here.
bool SplitKey(std::string_view name, std::string_view* key, std::string_view* suffix);

// Whether webdataset skips `name` as metadata: __x__ at the top level, or a
// name starting with a __x__ component.
bool IsMetaName(std::string_view name);

}  // namespace iomimic::webdataset
