#include "tar_header.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace iomimic::webdataset {
namespace {

// Field offsets and widths of a ustar header.
constexpr std::size_t kNameAt = 0;
constexpr std::size_t kModeAt = 100;
constexpr std::size_t kUidAt = 108;
constexpr std::size_t kGidAt = 116;
constexpr std::size_t kSizeAt = 124;
constexpr std::size_t kMtimeAt = 136;
constexpr std::size_t kChecksumAt = 148;
constexpr std::size_t kChecksumWidth = 8;
constexpr std::size_t kTypeAt = 156;
constexpr std::size_t kMagicAt = 257;
constexpr std::size_t kUnameAt = 265;
constexpr std::size_t kGnameAt = 297;
constexpr std::size_t kPrefixAt = 345;
constexpr std::size_t kPrefixWidth = 155;

constexpr std::string_view kOwner = "bigdata";

void Put(HeaderBlock& out, std::size_t at, std::string_view text) {
  std::memcpy(out.data() + at, text.data(), text.size());
}

// tarfile's itn(): `width - 1` zero-padded octal digits and a NUL.
void PutOctal(HeaderBlock& out, std::size_t at, std::size_t width, std::uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof(text), "%0*llo", static_cast<int>(width - 1),
                static_cast<unsigned long long>(value));
  Put(out, at, std::string_view(text, width - 1));
  out[at + width - 1] = std::byte{0};
}

// The unsigned and signed sums of the block, the checksum field counted as
// eight spaces (tarfile's calc_chksums).
void Checksums(std::span<const std::byte, kBlockSize> block, std::int64_t* unsigned_sum,
               std::int64_t* signed_sum) {
  std::int64_t u = 0;
  std::int64_t s = 0;
  for (std::size_t i = 0; i < kBlockSize; ++i) {
    const bool in_field = i >= kChecksumAt && i < kChecksumAt + kChecksumWidth;
    const unsigned char c = in_field ? ' ' : static_cast<unsigned char>(block[i]);
    u += c;
    s += static_cast<signed char>(c);
  }
  *unsigned_sum = u;
  *signed_sum = s;
}

// The text of a NUL-terminated field (tarfile's nts()).
std::string_view FieldText(std::span<const std::byte, kBlockSize> block, std::size_t at,
                           std::size_t width) {
  const char* begin = reinterpret_cast<const char*>(block.data()) + at;
  const char* end = std::find(begin, begin + width, '\0');
  return std::string_view(begin, static_cast<std::size_t>(end - begin));
}

// tarfile's nti(): base-256 when the first byte is 0x80 or 0xff, else octal
// digits between optional spaces. False when the field is neither.
bool ParseNumber(std::span<const std::byte, kBlockSize> block, std::size_t at, std::size_t width,
                 std::uint64_t* value) {
  const auto first = static_cast<unsigned char>(block[at]);
  if (first == 0x80 || first == 0xff) {
    if (first == 0xff) return false;  // negative: no size or checksum is
    std::uint64_t v = 0;
    for (std::size_t i = 1; i < width; ++i) {
      if (v >> 56 != 0) return false;
      v = (v << 8) | static_cast<unsigned char>(block[at + i]);
    }
    *value = v;
    return true;
  }
  std::string_view text = FieldText(block, at, width);
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  std::uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '7' || v >> 61 != 0) return false;
    v = v * 8 + static_cast<std::uint64_t>(c - '0');
  }
  *value = v;
  return true;
}

std::string Octal(std::uint64_t v) {
  char text[32];
  std::snprintf(text, sizeof(text), "0o%llo", static_cast<unsigned long long>(v));
  return text;
}

}  // namespace

void EncodeMemberHeader(std::string_view name, std::uint64_t size, std::uint64_t mtime,
                        HeaderBlock& out) {
  out.fill(std::byte{0});
  Put(out, kNameAt, name.substr(0, kMaxNameSize));
  PutOctal(out, kModeAt, 8, 0444);
  PutOctal(out, kUidAt, 8, 0);
  PutOctal(out, kGidAt, 8, 0);
  PutOctal(out, kSizeAt, 12, size);
  PutOctal(out, kMtimeAt, 12, mtime);
  out[kTypeAt] = std::byte{'0'};
  Put(out, kMagicAt,
      std::string_view("ustar\0"
                       "00",
                       8));
  Put(out, kUnameAt, kOwner);
  Put(out, kGnameAt, kOwner);
  std::int64_t sum = 0;
  std::int64_t signed_sum = 0;
  Checksums(out, &sum, &signed_sum);
  // tarfile: "%06o\0" over the first seven bytes of the field, its last
  // byte left a space.
  char text[24];
  std::snprintf(text, sizeof(text), "%06llo", static_cast<unsigned long long>(sum));
  Put(out, kChecksumAt, std::string_view(text, 6));
  out[kChecksumAt + 6] = std::byte{0};
  out[kChecksumAt + 7] = std::byte{' '};
}

Result<MemberHeader> ParseMemberHeader(std::span<const std::byte, kBlockSize> block,
                                       const std::string& path, std::uint64_t offset) {
  MemberHeader header;
  if (std::all_of(block.begin(), block.end(), [](std::byte b) { return b == std::byte{0}; })) {
    header.end_of_archive = true;
    return header;
  }
  const std::string where = path + ": tar header at offset " + std::to_string(offset);
  std::uint64_t stored = 0;
  std::int64_t sum = 0;
  std::int64_t signed_sum = 0;
  Checksums(block, &sum, &signed_sum);
  if (!ParseNumber(block, kChecksumAt, kChecksumWidth, &stored)) {
    return Status::Corruption(where + " has a bad checksum field (not octal): not a tar member");
  }
  if (static_cast<std::int64_t>(stored) != sum && static_cast<std::int64_t>(stored) != signed_sum) {
    return Status::Corruption(where + " has a bad checksum (stored " + Octal(stored) +
                              ", computed " + Octal(static_cast<std::uint64_t>(sum)) + ")");
  }
  if (!ParseNumber(block, kSizeAt, 12, &header.size)) {
    return Status::Corruption(where + " has a size field that is not a number");
  }
  const char type = static_cast<char>(block[kTypeAt]);
  header.type = type == '\0' ? '0' : type;
  header.name = std::string(FieldText(block, kNameAt, kMaxNameSize));
  const std::string_view magic = FieldText(block, kMagicAt, 6);
  const std::string_view prefix = FieldText(block, kPrefixAt, kPrefixWidth);
  if (magic == "ustar" && !prefix.empty()) header.name = std::string(prefix) + "/" + header.name;
  return header;
}

bool SplitKey(std::string_view name, std::string_view* key, std::string_view* suffix) {
  // The pattern ^((?:.*/|)[^.]+)[.]([^/]*)$ tried as a regular expression
  // engine tries it: the key's folder part ends at the last '/', then at
  // each earlier one, then is empty; its base part runs to the next dot and
  // must not be empty; the suffix after that dot holds no '/'.
  std::size_t start = name.rfind('/');
  start = start == std::string_view::npos ? 0 : start + 1;
  for (;;) {
    if (start < name.size() && name[start] != '.') {
      const std::size_t dot = name.find('.', start);
      if (dot != std::string_view::npos && name.find('/', dot + 1) == std::string_view::npos) {
        *key = name.substr(0, dot);
        *suffix = name.substr(dot + 1);
        return true;
      }
    }
    if (start == 0) return false;
    const std::size_t slash = start >= 2 ? name.rfind('/', start - 2) : std::string_view::npos;
    start = slash == std::string_view::npos ? 0 : slash + 1;
  }
}

bool IsMetaName(std::string_view name) {
  auto meta = [](std::string_view part, std::size_t min) {
    return part.size() >= min && part.substr(0, 2) == "__" && part.substr(part.size() - 2) == "__";
  };
  const std::size_t slash = name.find('/');
  if (slash == std::string_view::npos && meta(name, 3)) return true;
  return meta(name.substr(0, slash), 4);
}

}  // namespace iomimic::webdataset
