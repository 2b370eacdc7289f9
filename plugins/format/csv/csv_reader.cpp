#include "csv_reader.h"

#include <isa-l/crc.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <utility>

#include "csv_writer.h"
#include "iomimic/format_helpers.h"
#include "iomimic/guard.h"
#include "zip/zip_records.h"

namespace iomimic::csv {
namespace {

std::string Hex32(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%08x", v);
  return buf;
}

std::span<const char> AsChars(std::span<const std::byte> b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

// The largest central directory accepted (one entry with a 64 KiB name,
// extra field and comment fits easily).
constexpr std::uint64_t kMaxDirectorySize = std::uint64_t{1} << 20;

}  // namespace

CsvReader::CsvReader(std::string path, const ReaderOptions& options)
    : path_(std::move(path)),
      storage_(options.storage),
      decode_(options.decode),
      keep_in_memory_(options.keep_in_memory) {
  if (options.transfer_size != 0) {
    transfer_ =
        std::clamp<std::uint64_t>(options.transfer_size, kMinTransferSize, kMaxTransferSize);
  }
}

Result<std::unique_ptr<FileReader>> CsvReader::Open(const std::string& path,
                                                    const ReaderOptions& options) {
  return OpenReaderGuarded("csv", path, options, [&]() -> Result<std::unique_ptr<FileReader>> {
    std::unique_ptr<CsvReader> reader(new CsvReader(path, options));
    IOMIMIC_ASSIGN_OR_RETURN(
        reader->chunk_,
        AllocateHostBuffer(*options.storage, static_cast<std::size_t>(reader->transfer_), "csv"));
    IOMIMIC_RETURN_IF_ERROR(reader->Load());
    return std::unique_ptr<FileReader>(std::move(reader));
  });
}

Status CsvReader::ReadExact(File& file, std::uint64_t offset, std::span<std::byte> out,
                            const char* what) {
  Result<std::size_t> n = file.ReadAt(offset, out);
  if (!n.ok()) return n.status().WithContext("csv: reading " + path_);
  if (*n < out.size()) {
    return Status::Corruption(path_ + ": truncated file: the " + std::string(what) + " needs " +
                              std::to_string(out.size()) + " bytes at offset " +
                              std::to_string(offset) + " but only " + std::to_string(*n) +
                              " are there");
  }
  return Status::OK();
}

template <typename Fn>
Status CsvReader::Stream(File& file, std::uint64_t offset, std::uint64_t end,
                         std::span<const std::byte> head, Fn&& consume) {
  if (!head.empty()) {
    const std::size_t n =
        static_cast<std::size_t>(std::min<std::uint64_t>(head.size(), end - offset));
    IOMIMIC_RETURN_IF_ERROR(consume(head.first(n), offset));
    offset += n;
  }
  while (offset < end) {
    const std::size_t want =
        static_cast<std::size_t>(std::min<std::uint64_t>(transfer_, end - offset));
    std::span<std::byte> buffer = chunk_.span().first(want);
    IOMIMIC_RETURN_IF_ERROR(ReadExact(file, offset, buffer, "member data"));
    IOMIMIC_RETURN_IF_ERROR(consume(std::span<const std::byte>(buffer), offset));
    offset += want;
  }
  return Status::OK();
}

Status CsvReader::Load() {
  loaded_ = false;
  served_ = false;
  Result<std::unique_ptr<File>> file =
      OpenForReading(*storage_, path_, AccessHint::kSequential, "csv");
  if (!file.ok()) return file.status();
  Status s = LoadImpl(**file);
  Status closed = (*file)->Close();  // read-only: only reported when the load succeeded
  if (s.ok()) s = closed;
  if (!s.ok()) {
    table_.Clear();
    return s;
  }
  ++loads_;
  loaded_ = true;
  return Status::OK();
}

Status CsvReader::LoadImpl(File& file) {
  IOMIMIC_ASSIGN_OR_RETURN(const std::uint64_t size, file.Size());
  std::span<std::byte> head_buffer = chunk_.span().first(static_cast<std::size_t>(transfer_));
  Result<std::size_t> first = file.ReadAt(0, head_buffer);
  if (!first.ok()) return first.status().WithContext("csv: reading " + path_);
  // Zip reuses these bytes for its member data before it reads into the
  // chunk again; the other formats consume them first.
  const std::span<const std::byte> head = head_buffer.first(*first);
  codec_ = SniffCodec(head);
  CsvParser parser(path_, codec_ == Codec::kNone ? "file" : "decompressed text", !decode_, &table_);
  if (codec_ == Codec::kNone) parser.set_expected_bytes(size);
  const TextSink text = [&](std::span<const char> piece) { return parser.Feed(piece); };

  if (codec_ == Codec::kZip) {
    IOMIMIC_RETURN_IF_ERROR(LoadZip(file, size, head, parser));
  } else {
    std::unique_ptr<Decompressor> decompressor;
    if (codec_ != Codec::kNone) {
      IOMIMIC_ASSIGN_OR_RETURN(decompressor, Decompressor::Make(codec_, path_));
    }
    auto consume = [&](std::span<const std::byte> piece, std::uint64_t at) -> Status {
      if (decompressor == nullptr) return parser.Feed(AsChars(piece));
      return decompressor->Feed(piece, at, text);
    };
    // pandas reads until a read comes back short.
    IOMIMIC_RETURN_IF_ERROR(consume(head, 0));
    std::uint64_t offset = head.size();
    bool more = head.size() == head_buffer.size();
    while (more) {
      Result<std::size_t> n = file.ReadAt(offset, head_buffer);
      if (!n.ok()) return n.status().WithContext("csv: reading " + path_);
      IOMIMIC_RETURN_IF_ERROR(consume(head_buffer.first(*n), offset));
      offset += *n;
      more = *n == head_buffer.size();
    }
    if (decompressor != nullptr) IOMIMIC_RETURN_IF_ERROR(decompressor->Finish(offset, text));
  }
  IOMIMIC_RETURN_IF_ERROR(parser.Finish());
  has_header_ = parser.has_header();
  return Status::OK();
}

Result<zip::EndRecord> CsvReader::ReadZipEnd(File& file, std::uint64_t size) {
  // The end record: zipfile first tries the last 22 bytes, then searches
  // the last 64 KiB + 22 for one followed by an archive comment.
  constexpr std::size_t kEnd = zip::kEndOfCentralDirSize;
  if (size < kEnd) {
    return Status::Corruption(path_ + ": truncated ZIP archive of " + std::to_string(size) +
                              " bytes (at offset " + std::to_string(size) + ")");
  }
  std::vector<std::byte> tail(kEnd);
  IOMIMIC_RETURN_IF_ERROR(ReadExact(file, size - tail.size(), tail, "ZIP end record"));
  std::uint64_t end_offset = size - kEnd;
  if (zip::LoadU32(tail.data()) != zip::kEndOfCentralDirSignature ||
      zip::LoadU16(tail.data() + 20) != 0) {
    tail.resize(
        static_cast<std::size_t>(std::min<std::uint64_t>(size, kEnd + zip::kMaxCommentSize)));
    const std::uint64_t start = size - tail.size();
    IOMIMIC_RETURN_IF_ERROR(ReadExact(file, start, tail, "ZIP end record"));
    const std::int64_t found = zip::FindEndRecord(tail, start);
    if (found < 0) {
      return Status::Corruption(
          path_ +
          ": not a ZIP archive or truncated: no end of central directory record in the last " +
          std::to_string(tail.size()) + " bytes at offset " + std::to_string(size));
    }
    end_offset = static_cast<std::uint64_t>(found);
    tail.erase(tail.begin(), tail.begin() + static_cast<std::ptrdiff_t>(end_offset - start));
  }
  Result<zip::EndRecord> dir = zip::ParseEndRecord(tail, end_offset);
  if (!dir.ok()) return dir.status().WithContext(path_);
  // Fields the classic record could not hold say a ZIP64 record must exist.
  const bool zip64_fields = dir->entries == 0xFFFF || dir->directory_size == 0xFFFFFFFFu ||
                            dir->directory_offset == 0xFFFFFFFFu;
  if (dir->end_record_offset >= zip::kZip64LocatorSize) {
    std::byte locator[zip::kZip64LocatorSize];
    IOMIMIC_RETURN_IF_ERROR(
        ReadExact(file, dir->end_record_offset - zip::kZip64LocatorSize, locator, "ZIP64 locator"));
    if (zip::IsZip64Locator(locator)) {
      const std::uint64_t end64 = zip::LoadU64(locator + 8);
      std::byte record[zip::kZip64EndOfCentralDirSize];
      if (end64 > size || size - end64 < zip::kZip64EndOfCentralDirSize) {
        return Status::Corruption(path_ + ": ZIP64 end record offset " + std::to_string(end64) +
                                  " is past the end (at offset " +
                                  std::to_string(dir->end_record_offset) + ")");
      }
      IOMIMIC_RETURN_IF_ERROR(ReadExact(file, end64, record, "ZIP64 end record"));
      Status s = zip::ApplyZip64EndRecord(record, end64, &*dir);
      if (!s.ok()) return s.WithContext(path_);
    } else if (zip64_fields) {
      return Status::Corruption(path_ +
                                ": ZIP end record needs a ZIP64 record that is missing "
                                "(at offset " +
                                std::to_string(dir->end_record_offset) + ")");
    }
  }
  return *dir;
}

Result<zip::MemberRecord> CsvReader::ReadZipMember(File& file, std::uint64_t size,
                                                   const zip::EndRecord& dir,
                                                   std::uint64_t* data_begin) {
  if (dir.entries != 1) {
    return Status::Corruption(path_ + ": the ZIP archive holds " + std::to_string(dir.entries) +
                              " members; pandas reads archives of exactly one (at offset " +
                              std::to_string(dir.end_record_offset) + ")");
  }
  if (dir.directory_offset > size || dir.directory_size > size - dir.directory_offset ||
      dir.directory_size > kMaxDirectorySize) {
    return Status::Corruption(
        path_ + ": central directory [" + std::to_string(dir.directory_offset) + ", +" +
        std::to_string(dir.directory_size) + ") does not fit the " + std::to_string(size) +
        "-byte file (at offset " + std::to_string(dir.end_record_offset) + ")");
  }
  const std::uint64_t directory_offset = dir.directory_offset;
  std::vector<std::byte> directory(static_cast<std::size_t>(dir.directory_size));
  IOMIMIC_RETURN_IF_ERROR(ReadExact(file, directory_offset, directory, "central directory"));
  std::size_t entry = 0;
  Result<zip::MemberRecord> parsed = zip::ParseCentralEntry(directory, &entry, directory_offset);
  if (!parsed.ok()) return parsed.status().WithContext(path_);
  const zip::MemberRecord member = std::move(parsed).value();
  if (member.method != zip::kMethodStored && member.method != zip::kMethodDeflated) {
    return Status::NotSupported(path_ + ": ZIP member '" + member.name + "' uses method " +
                                std::to_string(member.method) +
                                " (only stored and deflated are supported)");
  }
  std::byte local[zip::kLocalHeaderFixedSize];
  if (member.local_header_offset > size) {
    return Status::Corruption(
        path_ + ": local header offset " + std::to_string(member.local_header_offset) +
        " is past the end (at offset " + std::to_string(directory_offset) + ")");
  }
  IOMIMIC_RETURN_IF_ERROR(ReadExact(file, member.local_header_offset, local, "ZIP local header"));
  Result<zip::LocalHeader> header = zip::ParseLocalHeader(local, member.local_header_offset);
  if (!header.ok()) return header.status().WithContext(path_);
  const std::uint64_t begin = member.local_header_offset + zip::kLocalHeaderFixedSize +
                              header->name_size + header->extra_size;
  if (begin > directory_offset || member.compressed_size > directory_offset - begin) {
    return Status::Corruption(
        path_ + ": the data of ZIP member '" + member.name + "' (" +
        std::to_string(member.compressed_size) + " bytes from offset " + std::to_string(begin) +
        ") runs into the central directory at offset " + std::to_string(directory_offset));
  }
  *data_begin = begin;
  return member;
}

Status CsvReader::LoadZip(File& file, std::uint64_t size, std::span<const std::byte> head,
                          CsvParser& parser) {
  IOMIMIC_ASSIGN_OR_RETURN(const zip::EndRecord dir, ReadZipEnd(file, size));
  std::uint64_t begin = 0;
  IOMIMIC_ASSIGN_OR_RETURN(const zip::MemberRecord member, ReadZipMember(file, size, dir, &begin));
  const std::uint64_t end = begin + member.compressed_size;

  std::unique_ptr<Decompressor> inflater;
  if (member.method == zip::kMethodDeflated) {
    IOMIMIC_ASSIGN_OR_RETURN(inflater, Decompressor::Make(Codec::kZip, path_));
  }
  std::uint32_t crc = 0;
  std::uint64_t produced = 0;
  const TextSink text = [&](std::span<const char> piece) -> Status {
    if (decode_) {
      crc =
          crc32_gzip_refl(crc, reinterpret_cast<const unsigned char*>(piece.data()), piece.size());
    }
    produced += piece.size();
    return parser.Feed(piece);
  };
  std::span<const std::byte> reuse;
  if (begin < head.size()) reuse = head.subspan(static_cast<std::size_t>(begin));
  IOMIMIC_RETURN_IF_ERROR(
      Stream(file, begin, end, reuse, [&](std::span<const std::byte> piece, std::uint64_t at) {
        if (inflater == nullptr) return text(AsChars(piece));
        return inflater->Feed(piece, at, text);
      }));
  if (inflater != nullptr) IOMIMIC_RETURN_IF_ERROR(inflater->Finish(end, text));
  if (produced != member.uncompressed_size) {
    return Status::Corruption(path_ + ": ZIP member '" + member.name + "' holds " +
                              std::to_string(produced) + " bytes but its directory entry says " +
                              std::to_string(member.uncompressed_size) + " (data at offset " +
                              std::to_string(begin) + ")");
  }
  if (decode_ && crc != member.crc32) {
    return Status::Corruption(path_ + ": CRC-32 mismatch of ZIP member '" + member.name +
                              "' (stored " + Hex32(member.crc32) + ", computed " + Hex32(crc) +
                              ", data at offset " + std::to_string(begin) + ")");
  }
  return Status::OK();
}

Result<SampleView> CsvReader::ReadSample(std::uint64_t index) {
  return Guard(
      "csv", "reading", path_,
      [&]() -> Result<SampleView> {
        if (!loaded_ || (!keep_in_memory_ && served_)) IOMIMIC_RETURN_IF_ERROR(Load());
        served_ = true;
        if (index >= table_.rows) {
          return SampleIndexOutOfRange(path_, index, table_.rows, "the file", "rows");
        }
        if (!decode_) return SampleView{{}, table_.columns * 8};
        const std::size_t columns = static_cast<std::size_t>(table_.columns);
        const std::uint64_t* row = table_.slots.data() + index * table_.columns;
        if (table_.kind == TableKind::kBool) {
          row_.resize(columns);
          for (std::size_t c = 0; c < columns; ++c) row_[c] = static_cast<std::byte>(row[c] != 0);
          return SampleView{std::span<const std::byte>(row_), columns};
        }
        return SampleView{std::as_bytes(std::span<const std::uint64_t>(row, columns)), columns * 8};
      },
      [&] { loaded_ = false; });
}

}  // namespace iomimic::csv
