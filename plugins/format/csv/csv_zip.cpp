#include "csv_zip.h"

#include <algorithm>

namespace iomimic::csv::zip {
namespace {

constexpr std::uint32_t kLocalSignature = 0x04034b50;
constexpr std::uint32_t kCentralSignature = 0x02014b50;
constexpr std::uint32_t kEndSignature = 0x06054b50;
constexpr std::uint32_t kZip64EndSignature = 0x06064b50;
constexpr std::uint32_t kZip64LocatorSignature = 0x07064b50;
constexpr std::uint16_t kZip64ExtraId = 0x0001;
constexpr std::uint16_t kVersionDefault = 20;  // deflate
constexpr std::uint16_t kVersionZip64 = 45;
constexpr std::uint16_t kMadeByUnix = 3 << 8;
constexpr std::uint16_t kDosTime = 0;                        // 00:00:00
constexpr std::uint16_t kDosDate = (0 << 9) | (1 << 5) | 1;  // 1980-01-01
constexpr std::uint32_t kExternalAttributes = 0600u << 16;   // -rw------- as zipfile.writestr

void Put16(std::string* out, std::uint64_t v) {
  out->push_back(static_cast<char>(v & 0xFF));
  out->push_back(static_cast<char>((v >> 8) & 0xFF));
}
void Put32(std::string* out, std::uint64_t v) {
  Put16(out, v & 0xFFFF);
  Put16(out, (v >> 16) & 0xFFFF);
}
void Put64(std::string* out, std::uint64_t v) {
  Put32(out, v & 0xFFFFFFFFu);
  Put32(out, v >> 32);
}
std::uint64_t Get(std::span<const std::byte> b, std::size_t at, std::size_t n) {
  std::uint64_t v = 0;
  for (std::size_t i = n; i-- > 0;) v = (v << 8) | std::to_integer<std::uint64_t>(b[at + i]);
  return v;
}
std::uint32_t Clamp32(std::uint64_t v) {
  return v >= kZip64Limit ? 0xFFFFFFFFu : static_cast<std::uint32_t>(v);
}

Status Corrupt(const std::string& path, const std::string& what, std::uint64_t offset) {
  return Status::Corruption(path + ": " + what + " at offset " + std::to_string(offset));
}

}  // namespace

std::string EncodeLocalHeader(const Member& member, bool zip64) {
  std::string out;
  Put32(&out, kLocalSignature);
  Put16(&out, zip64 ? kVersionZip64 : kVersionDefault);
  Put16(&out, 0);  // flags: sizes in this header, ASCII name
  Put16(&out, member.method);
  Put16(&out, kDosTime);
  Put16(&out, kDosDate);
  Put32(&out, member.crc32);
  Put32(&out, zip64 ? 0xFFFFFFFFu : member.compressed_size);
  Put32(&out, zip64 ? 0xFFFFFFFFu : member.uncompressed_size);
  Put16(&out, member.name.size());
  Put16(&out, zip64 ? 20 : 0);
  out += member.name;
  if (zip64) {
    Put16(&out, kZip64ExtraId);
    Put16(&out, 16);
    Put64(&out, member.uncompressed_size);
    Put64(&out, member.compressed_size);
  }
  return out;
}

std::string EncodeDirectoryAndEnd(const Member& member, std::uint64_t directory_offset) {
  std::string extra;
  if (member.uncompressed_size >= kZip64Limit) Put64(&extra, member.uncompressed_size);
  if (member.compressed_size >= kZip64Limit) Put64(&extra, member.compressed_size);
  if (member.local_header_offset >= kZip64Limit) Put64(&extra, member.local_header_offset);
  const bool zip64_entry = !extra.empty();
  const std::uint16_t version = zip64_entry ? kVersionZip64 : kVersionDefault;

  std::string out;
  Put32(&out, kCentralSignature);
  Put16(&out, kMadeByUnix | version);
  Put16(&out, version);
  Put16(&out, 0);
  Put16(&out, member.method);
  Put16(&out, kDosTime);
  Put16(&out, kDosDate);
  Put32(&out, member.crc32);
  Put32(&out, Clamp32(member.compressed_size));
  Put32(&out, Clamp32(member.uncompressed_size));
  Put16(&out, member.name.size());
  Put16(&out, zip64_entry ? extra.size() + 4 : 0);
  Put16(&out, 0);  // comment
  Put16(&out, 0);  // disk
  Put16(&out, 0);  // internal attributes
  Put32(&out, kExternalAttributes);
  Put32(&out, Clamp32(member.local_header_offset));
  out += member.name;
  if (zip64_entry) {
    Put16(&out, kZip64ExtraId);
    Put16(&out, extra.size());
    out += extra;
  }
  const std::uint64_t directory_size = out.size();
  const std::uint64_t end64_offset = directory_offset + directory_size;
  if (directory_offset >= kZip64Limit || directory_size >= kZip64Limit) {
    Put32(&out, kZip64EndSignature);
    Put64(&out, kZip64EndSize - 12);
    Put16(&out, kMadeByUnix | kVersionZip64);
    Put16(&out, kVersionZip64);
    Put32(&out, 0);
    Put32(&out, 0);
    Put64(&out, 1);
    Put64(&out, 1);
    Put64(&out, directory_size);
    Put64(&out, directory_offset);
    Put32(&out, kZip64LocatorSignature);
    Put32(&out, 0);
    Put64(&out, end64_offset);
    Put32(&out, 1);
  }
  Put32(&out, kEndSignature);
  Put16(&out, 0);
  Put16(&out, 0);
  Put16(&out, 1);
  Put16(&out, 1);
  Put32(&out, Clamp32(directory_size));
  Put32(&out, Clamp32(directory_offset));
  Put16(&out, 0);  // comment
  return out;
}

Result<Directory> ParseEndRecord(std::span<const std::byte> tail, std::uint64_t tail_offset,
                                 const std::string& path) {
  if (tail.size() >= kEndRecordSize) {
    for (std::size_t at = tail.size() - kEndRecordSize + 1; at-- > 0;) {
      if (Get(tail, at, 4) != kEndSignature) continue;
      const std::uint64_t comment = Get(tail, at + 20, 2);
      if (at + kEndRecordSize + comment != tail.size()) continue;
      Directory dir;
      dir.end_record_offset = tail_offset + at;
      const std::uint64_t entries = Get(tail, at + 10, 2);
      const std::uint64_t size = Get(tail, at + 12, 4);
      const std::uint64_t offset = Get(tail, at + 16, 4);
      dir.entries = entries;
      dir.size = size;
      dir.offset = offset;
      dir.zip64_fields = entries == 0xFFFF || size == 0xFFFFFFFFu || offset == 0xFFFFFFFFu;
      return dir;
    }
  }
  return Corrupt(path,
                 "not a ZIP archive or truncated: no end of central directory record in the last " +
                     std::to_string(tail.size()) + " bytes",
                 tail_offset + tail.size());
}

bool ParseZip64Locator(std::span<const std::byte> locator, std::uint64_t* zip64_end_offset) {
  if (locator.size() < kZip64LocatorSize || Get(locator, 0, 4) != kZip64LocatorSignature) {
    return false;
  }
  *zip64_end_offset = Get(locator, 8, 8);
  return true;
}

Status ParseZip64End(std::span<const std::byte> record, std::uint64_t offset,
                     const std::string& path, Directory* dir) {
  if (record.size() < kZip64EndSize || Get(record, 0, 4) != kZip64EndSignature) {
    return Corrupt(path, "bad ZIP64 end of central directory record", offset);
  }
  dir->entries = Get(record, 32, 8);
  dir->size = Get(record, 40, 8);
  dir->offset = Get(record, 48, 8);
  return Status::OK();
}

Result<Member> ParseCentralEntry(std::span<const std::byte> directory, std::uint64_t offset,
                                 const std::string& path) {
  if (directory.size() < kCentralHeaderFixed || Get(directory, 0, 4) != kCentralSignature) {
    return Corrupt(path, "bad central directory signature", offset);
  }
  const std::size_t name_size = Get(directory, 28, 2);
  const std::size_t extra_size = Get(directory, 30, 2);
  if (kCentralHeaderFixed + name_size + extra_size > directory.size()) {
    return Corrupt(path, "central directory entry runs past the directory", offset);
  }
  Member m;
  m.method = static_cast<std::uint16_t>(Get(directory, 10, 2));
  m.crc32 = static_cast<std::uint32_t>(Get(directory, 16, 4));
  m.compressed_size = Get(directory, 20, 4);
  m.uncompressed_size = Get(directory, 24, 4);
  m.local_header_offset = Get(directory, 42, 4);
  m.name.assign(reinterpret_cast<const char*>(directory.data() + kCentralHeaderFixed), name_size);
  // ZIP64 extra: the fields that are 0xFFFFFFFF, in this order.
  std::size_t at = kCentralHeaderFixed + name_size;
  const std::size_t extra_end = at + extra_size;
  while (at + 4 <= extra_end) {
    const std::uint64_t id = Get(directory, at, 2);
    const std::size_t size = Get(directory, at + 2, 2);
    if (at + 4 + size > extra_end) break;
    if (id == kZip64ExtraId) {
      std::size_t field = at + 4;
      for (std::uint64_t* v : {&m.uncompressed_size, &m.compressed_size, &m.local_header_offset}) {
        if (*v != 0xFFFFFFFFu) continue;
        if (field + 8 > at + 4 + size) {
          return Corrupt(path, "ZIP64 extra field too short", offset + field);
        }
        *v = Get(directory, field, 8);
        field += 8;
      }
    }
    at += 4 + size;
  }
  return m;
}

Result<std::uint64_t> ParseLocalHeader(std::span<const std::byte> fixed, std::uint64_t offset,
                                       const std::string& path) {
  if (fixed.size() < kLocalHeaderFixed || Get(fixed, 0, 4) != kLocalSignature) {
    return Corrupt(path, "bad local file header signature", offset);
  }
  return Get(fixed, 26, 2) + Get(fixed, 28, 2);
}

}  // namespace iomimic::csv::zip
