#include "zip/zip_records.h"

#include <algorithm>
#include <cstring>
#include <string_view>

namespace iomimic::zip {
namespace {

// zipfile.DEFAULT_VERSION and ZIP64_VERSION ("version needed to extract").
constexpr std::uint8_t kVersionDefault = 20;
constexpr std::uint8_t kVersionZip64 = 45;
// ZipInfo.create_system on POSIX hosts.
constexpr std::uint8_t kCreateSystemUnix = 3;
// ZipInfo's default date_time (1980, 1, 1, 0, 0, 0) in MS-DOS format.
constexpr std::uint16_t kDosTime = 0;
constexpr std::uint16_t kDosDate = (0 << 9) | (1 << 5) | 1;
// zipfile's default external_attr for members opened for writing: ?rw-------.
constexpr std::uint32_t kExternalAttributes = 0600u << 16;
constexpr std::uint16_t kZip64ExtraId = 0x0001;
constexpr std::uint32_t kMax32 = 0xFFFFFFFFu;

class Encoder {
 public:
  explicit Encoder(std::vector<std::byte>* out) : out_(out) {}
  void U8(std::uint8_t v) { out_->push_back(static_cast<std::byte>(v)); }
  void U16(std::uint16_t v) {
    for (int i = 0; i < 2; ++i) U8(static_cast<std::uint8_t>(v >> (8 * i)));
  }
  void U32(std::uint32_t v) {
    for (int i = 0; i < 4; ++i) U8(static_cast<std::uint8_t>(v >> (8 * i)));
  }
  void U64(std::uint64_t v) {
    for (int i = 0; i < 8; ++i) U8(static_cast<std::uint8_t>(v >> (8 * i)));
  }
  void Text(std::string_view s) {
    for (char c : s) U8(static_cast<std::uint8_t>(c));
  }

 private:
  std::vector<std::byte>* out_;
};

std::uint32_t Clamp32(std::uint64_t v) {
  return v > kMax32 ? kMax32 : static_cast<std::uint32_t>(v);
}

Status CorruptAt(std::string what, std::uint64_t offset) {
  return Status::Corruption(std::move(what) + " at offset " + std::to_string(offset));
}

}  // namespace

std::uint16_t LoadU16(const std::byte* p) {
  return static_cast<std::uint16_t>(std::to_integer<unsigned>(p[0]) |
                                    (std::to_integer<unsigned>(p[1]) << 8));
}

std::uint32_t LoadU32(const std::byte* p) {
  return static_cast<std::uint32_t>(LoadU16(p)) |
         (static_cast<std::uint32_t>(LoadU16(p + 2)) << 16);
}

std::uint64_t LoadU64(const std::byte* p) {
  return static_cast<std::uint64_t>(LoadU32(p)) |
         (static_cast<std::uint64_t>(LoadU32(p + 4)) << 32);
}

void StoreU32(std::byte* p, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<std::byte>((v >> (8 * i)) & 0xFF);
}

std::vector<std::byte> EncodeLocalHeader(const MemberRecord& member, LocalZip64 zip64,
                                         std::uint64_t zip64_limit) {
  const bool over = member.uncompressed_size > zip64_limit || member.compressed_size > zip64_limit;
  const bool extra = zip64 == LocalZip64::kInclude;
  std::vector<std::byte> out;
  out.reserve(LocalHeaderSize(member.name.size(), zip64));
  Encoder e(&out);
  e.U32(kLocalHeaderSignature);
  e.U8(over ? kVersionZip64 : kVersionDefault);
  e.U8(0);
  e.U16(member.flags);
  e.U16(member.method);
  e.U16(kDosTime);
  e.U16(kDosDate);
  e.U32(member.crc32);
  e.U32(over ? kMax32 : static_cast<std::uint32_t>(member.compressed_size));
  e.U32(over ? kMax32 : static_cast<std::uint32_t>(member.uncompressed_size));
  e.U16(static_cast<std::uint16_t>(member.name.size()));
  e.U16(static_cast<std::uint16_t>(extra ? kLocalZip64ExtraSize : 0));
  e.Text(member.name);
  if (extra) {
    e.U16(kZip64ExtraId);
    e.U16(16);
    e.U64(member.uncompressed_size);
    e.U64(member.compressed_size);
  }
  return out;
}

std::vector<std::byte> EncodeDirectoryAndEnd(std::span<const MemberRecord> members,
                                             std::uint64_t directory_offset,
                                             std::uint64_t zip64_limit) {
  std::vector<std::byte> out;
  Encoder e(&out);
  for (const MemberRecord& m : members) {
    std::vector<std::uint64_t> extra;
    std::uint32_t compressed32 = 0;
    std::uint32_t uncompressed32 = 0;
    std::uint32_t offset32 = 0;
    if (m.uncompressed_size > zip64_limit || m.compressed_size > zip64_limit) {
      extra.push_back(m.uncompressed_size);
      extra.push_back(m.compressed_size);
      compressed32 = kMax32;
      uncompressed32 = kMax32;
    } else {
      compressed32 = static_cast<std::uint32_t>(m.compressed_size);
      uncompressed32 = static_cast<std::uint32_t>(m.uncompressed_size);
    }
    if (m.local_header_offset > zip64_limit) {
      extra.push_back(m.local_header_offset);
      offset32 = kMax32;
    } else {
      offset32 = static_cast<std::uint32_t>(m.local_header_offset);
    }
    const std::uint8_t version = extra.empty() ? kVersionDefault : kVersionZip64;
    const std::size_t extra_size = extra.empty() ? 0 : 4 + 8 * extra.size();
    e.U32(kCentralHeaderSignature);
    e.U8(version);
    e.U8(kCreateSystemUnix);
    e.U8(version);
    e.U8(0);
    e.U16(m.flags);
    e.U16(m.method);
    e.U16(kDosTime);
    e.U16(kDosDate);
    e.U32(m.crc32);
    e.U32(compressed32);
    e.U32(uncompressed32);
    e.U16(static_cast<std::uint16_t>(m.name.size()));
    e.U16(static_cast<std::uint16_t>(extra_size));
    e.U16(0);  // comment length
    e.U16(0);  // disk number start
    e.U16(0);  // internal attributes
    e.U32(kExternalAttributes);
    e.U32(offset32);
    e.Text(m.name);
    if (!extra.empty()) {
      e.U16(kZip64ExtraId);
      e.U16(static_cast<std::uint16_t>(8 * extra.size()));
      for (std::uint64_t v : extra) e.U64(v);
    }
  }
  const std::uint64_t directory_size = out.size();
  const std::uint64_t count = members.size();
  if (count > kFileCountLimit || directory_offset > zip64_limit || directory_size > zip64_limit) {
    e.U32(kZip64EndOfCentralDirSignature);
    e.U64(kZip64EndOfCentralDirSize - 12);
    e.U16(kVersionZip64);
    e.U16(kVersionZip64);
    e.U32(0);
    e.U32(0);
    e.U64(count);
    e.U64(count);
    e.U64(directory_size);
    e.U64(directory_offset);
    e.U32(kZip64LocatorSignature);
    e.U32(0);
    e.U64(directory_offset + directory_size);
    e.U32(1);
  }
  const auto count16 = static_cast<std::uint16_t>(std::min<std::uint64_t>(count, kFileCountLimit));
  e.U32(kEndOfCentralDirSignature);
  e.U16(0);
  e.U16(0);
  e.U16(count16);
  e.U16(count16);
  e.U32(Clamp32(directory_size));
  e.U32(Clamp32(directory_offset));
  e.U16(0);
  return out;
}

Result<EndRecord> ParseEndRecord(std::span<const std::byte> data, std::uint64_t offset) {
  if (data.size() < kEndOfCentralDirSize || LoadU32(data.data()) != kEndOfCentralDirSignature) {
    return CorruptAt("bad end-of-central-directory signature", offset);
  }
  EndRecord end;
  end.end_record_offset = offset;
  end.entries = LoadU16(data.data() + 10);
  end.directory_size = LoadU32(data.data() + 12);
  end.directory_offset = LoadU32(data.data() + 16);
  return end;
}

std::int64_t FindEndRecord(std::span<const std::byte> tail, std::uint64_t tail_offset) {
  if (tail.size() < 4) return -1;
  for (std::size_t i = tail.size() - 4 + 1; i-- > 0;) {
    if (LoadU32(tail.data() + i) == kEndOfCentralDirSignature) {
      if (i + kEndOfCentralDirSize > tail.size()) return -1;
      return static_cast<std::int64_t>(tail_offset + i);
    }
  }
  return -1;
}

bool IsZip64Locator(std::span<const std::byte> data) {
  return data.size() >= kZip64LocatorSize && LoadU32(data.data()) == kZip64LocatorSignature;
}

Status CheckZip64Locator(std::span<const std::byte> data, std::uint64_t offset) {
  if (!IsZip64Locator(data)) return CorruptAt("bad ZIP64 end locator signature", offset);
  const std::uint32_t disk = LoadU32(data.data() + 4);
  const std::uint32_t disks = LoadU32(data.data() + 16);
  if (disk != 0 || disks > 1) {
    return CorruptAt("ZIP64 end locator describes a multi-disk archive (not supported)", offset);
  }
  return Status::OK();
}

Status ApplyZip64EndRecord(std::span<const std::byte> data, std::uint64_t offset, EndRecord* end) {
  if (data.size() < kZip64EndOfCentralDirSize ||
      LoadU32(data.data()) != kZip64EndOfCentralDirSignature) {
    return CorruptAt("bad ZIP64 end-of-central-directory signature", offset);
  }
  end->zip64 = true;
  end->entries = LoadU64(data.data() + 32);
  end->directory_size = LoadU64(data.data() + 40);
  end->directory_offset = LoadU64(data.data() + 48);
  return Status::OK();
}

Result<MemberRecord> ParseCentralEntry(std::span<const std::byte> data, std::size_t* pos,
                                       std::uint64_t directory_offset) {
  const std::size_t start = *pos;
  const std::uint64_t at = directory_offset + start;
  if (data.size() - start < kCentralHeaderFixedSize) {
    return CorruptAt("truncated central directory entry", at);
  }
  const std::byte* p = data.data() + start;
  if (LoadU32(p) != kCentralHeaderSignature) {
    return CorruptAt("bad central directory signature", at);
  }
  MemberRecord m;
  m.flags = LoadU16(p + 8);
  m.method = LoadU16(p + 10);
  m.crc32 = LoadU32(p + 16);
  m.compressed_size = LoadU32(p + 20);
  m.uncompressed_size = LoadU32(p + 24);
  const std::size_t name_size = LoadU16(p + 28);
  const std::size_t extra_size = LoadU16(p + 30);
  const std::size_t comment_size = LoadU16(p + 32);
  m.local_header_offset = LoadU32(p + 42);
  const std::size_t total = kCentralHeaderFixedSize + name_size + extra_size + comment_size;
  if (data.size() - start < total) return CorruptAt("truncated central directory entry", at);
  m.name.assign(reinterpret_cast<const char*>(p + kCentralHeaderFixedSize), name_size);

  std::span<const std::byte> extra(p + kCentralHeaderFixedSize + name_size, extra_size);
  while (extra.size() >= 4) {
    const std::uint16_t id = LoadU16(extra.data());
    const std::size_t size = LoadU16(extra.data() + 2);
    if (size + 4 > extra.size()) {
      return CorruptAt("corrupt extra field of member '" + m.name + "'", at);
    }
    if (id == kZip64ExtraId) {
      std::span<const std::byte> field = extra.subspan(4, size);
      auto take = [&](std::uint64_t* value, const char* what) -> Status {
        if (field.size() < 8) {
          return CorruptAt(
              "corrupt ZIP64 extra field of member '" + m.name + "' (" + what + " not found)", at);
        }
        *value = LoadU64(field.data());
        field = field.subspan(8);
        return Status::OK();
      };
      if (m.uncompressed_size == kMax32) {
        IOMIMIC_RETURN_IF_ERROR(take(&m.uncompressed_size, "file size"));
      }
      if (m.compressed_size == kMax32) {
        IOMIMIC_RETURN_IF_ERROR(take(&m.compressed_size, "compressed size"));
      }
      if (m.local_header_offset == kMax32) {
        IOMIMIC_RETURN_IF_ERROR(take(&m.local_header_offset, "header offset"));
      }
    }
    extra = extra.subspan(size + 4);
  }
  *pos = start + total;
  return m;
}

Result<LocalHeader> ParseLocalHeader(std::span<const std::byte> data, std::uint64_t offset) {
  if (data.size() < kLocalHeaderFixedSize) return CorruptAt("truncated local file header", offset);
  if (LoadU32(data.data()) != kLocalHeaderSignature) {
    return CorruptAt("bad local file header signature", offset);
  }
  LocalHeader h;
  h.flags = LoadU16(data.data() + 6);
  h.method = LoadU16(data.data() + 8);
  h.name_size = LoadU16(data.data() + 26);
  h.extra_size = LoadU16(data.data() + 28);
  return h;
}

}  // namespace iomimic::zip
