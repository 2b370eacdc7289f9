#include "npz_reader.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>
#include <exception>
#include <limits>
#include <new>
#include <utility>

#include "iomimic/format_helpers.h"
#include "npy_header/npy_array.h"
#include "npz_crc32.h"
#include "npz_writer.h"

namespace iomimic::npz {
namespace {

// Largest transfer size honoured (zlib's avail_in is 32 bits).
constexpr std::uint64_t kMaxTransferSize = std::uint64_t{1} << 30;
// Deflate cannot expand data by more than about 1032:1.
constexpr std::uint64_t kMaxDeflateRatio = 1032;

std::string Hex32(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%08x", v);
  return buf;
}

// A File over bytes already in memory (ReadPattern::kWhole parses the file
// it read in one request through the direct path's code).
class MemoryFile final : public File {
 public:
  MemoryFile(std::string path, std::span<const std::byte> bytes)
      : path_(std::move(path)), bytes_(bytes) {}
  Result<std::size_t> ReadAt(std::uint64_t offset, std::span<std::byte> destination) override {
    if (offset >= bytes_.size()) return std::size_t{0};
    const std::size_t n =
        std::min<std::size_t>(destination.size(), bytes_.size() - static_cast<std::size_t>(offset));
    std::memcpy(destination.data(), bytes_.data() + offset, n);
    return n;
  }
  Status WriteAt(std::uint64_t, std::span<const std::byte>) override {
    return Status::NotSupported("npz: " + path_ + " is read only");
  }
  Status Sync() override { return Status::OK(); }
  Result<std::uint64_t> Size() override { return std::uint64_t{bytes_.size()}; }
  Status Close() override { return Status::OK(); }
  const std::string& path() const override { return path_; }

 private:
  std::string path_;
  std::span<const std::byte> bytes_;
};

}  // namespace

Result<ReadPattern> ParseReadPattern(std::string_view text) {
  if (text == "dlio") return ReadPattern::kDlio;
  if (text == "direct") return ReadPattern::kDirect;
  if (text == "whole") return ReadPattern::kWhole;
  return Status::InvalidArgument("npz: read_pattern '" + std::string(text) +
                                 "' is not one of dlio, direct, whole");
}

// ---------------------------------------------------------------------------
// PyBufferedFile: CPython 3.11 Modules/_io/bufferedio.c, as far as np.load
// and zipfile use it.

void PyBufferedFile::Reset(File* file) {
  file_ = file;
  size_ = 0;
  back_ = 0;
  back_pending_ = false;
  raw_ = 0;
  valid_ = false;
  pos_ = 0;
  end_ = 0;
}

std::uint64_t PyBufferedFile::Tell() const { return valid_ ? raw_ - end_ + pos_ : raw_; }

void PyBufferedFile::Seek(std::uint64_t target, bool from_end) {
  // _io__Buffered_seek_impl: for whence 0 and 1, a target inside the buffer
  // (while unread bytes remain in it) only moves the buffer position.
  if (!from_end && valid_ && end_ > pos_) {
    const std::uint64_t start = raw_ - end_;
    if (target >= start && target <= raw_) {
      pos_ = static_cast<std::size_t>(target - start);
      return;
    }
  }
  raw_ = target;
  valid_ = false;
  pos_ = 0;
  end_ = 0;
}

void PyBufferedFile::SeekBackFromEnd(std::uint64_t back) {
  back_ = back;
  back_pending_ = true;
  valid_ = false;
  pos_ = 0;
  end_ = 0;
}

Result<std::size_t> PyBufferedFile::Raw(std::uint64_t offset, std::span<std::byte> out) {
  Result<std::size_t> n = file_->ReadAt(offset, out);
  if (!n.ok()) return n.status();
  raw_ = offset + *n;
  return *n;
}

Result<std::size_t> PyBufferedFile::Read(std::size_t n, std::byte* out) {
  if (n == 0) return std::size_t{0};  // `out` may be null
  const std::size_t avail = valid_ ? end_ - pos_ : 0;
  if (n <= avail) {  // _bufferedreader_read_fast
    std::memcpy(out, buffer_.data() + pos_, n);
    pos_ += n;
    return n;
  }
  // _bufferedreader_read_generic
  std::memcpy(out, buffer_.data() + pos_, avail);
  std::size_t written = avail;
  std::size_t remaining = n - avail;
  valid_ = false;
  const std::size_t block = buffer_.size();
  while (remaining > 0) {
    const std::size_t r = remaining - remaining % block;  // MINUS_LAST_BLOCK
    if (r == 0) break;
    IOMIMIC_ASSIGN_OR_RETURN(std::size_t got, Raw(raw_, std::span<std::byte>(out + written, r)));
    if (got == 0) return written;
    remaining -= got;
    written += got;
  }
  valid_ = true;
  pos_ = 0;
  end_ = 0;
  while (remaining > 0 && end_ < block) {
    IOMIMIC_ASSIGN_OR_RETURN(std::size_t got,
                             Raw(raw_, std::span<std::byte>(buffer_).subspan(end_)));
    if (got == 0) return written;
    end_ += got;
    const std::size_t c = std::min(remaining, got);
    std::memcpy(out + written, buffer_.data() + pos_, c);
    pos_ += c;
    written += c;
    remaining -= c;
  }
  return written;
}

Result<std::vector<std::byte>> PyBufferedFile::ReadAll() {
  std::vector<std::byte> data;
  if (valid_) data.assign(buffer_.begin() + pos_, buffer_.begin() + end_);
  valid_ = false;
  pos_ = 0;
  end_ = 0;
  // FileIO.readall: fstat, then reads of bufsize - bytes_read until EOF.
  IOMIMIC_ASSIGN_OR_RETURN(std::uint64_t end, file_->Size());
  size_ = end;
  if (back_pending_) {
    back_pending_ = false;
    if (back_ > end) {
      return Status::OutOfRange("seek " + std::to_string(back_) + " bytes before the end of a " +
                                std::to_string(end) + "-byte file");
    }
    raw_ = end - back_;
  }
  constexpr std::size_t kSmallChunk = 8192;
  std::size_t bufsize =
      end > 0 && end >= raw_ ? static_cast<std::size_t>(end - raw_ + 1) : kSmallChunk;
  std::size_t bytes_read = 0;
  std::vector<std::byte> got_bytes(bufsize);
  while (true) {
    if (bytes_read >= bufsize) {  // new_buffersize
      std::size_t addend =
          bytes_read > (std::size_t{65536} << 3) ? bytes_read >> 3 : 256 + bytes_read;
      bufsize = bytes_read + std::max(addend, kSmallChunk);
      got_bytes.resize(bufsize);
    }
    IOMIMIC_ASSIGN_OR_RETURN(std::size_t n, Raw(raw_, std::span<std::byte>(got_bytes).subspan(
                                                          bytes_read, bufsize - bytes_read)));
    if (n == 0) break;
    bytes_read += n;
  }
  data.insert(data.end(), got_bytes.begin(), got_bytes.begin() + bytes_read);
  return data;
}

// ---------------------------------------------------------------------------
// RawInflater

Status RawInflater::Start() {
  End();
  std::memset(&z_, 0, sizeof(z_));
  const int rc = inflateInit2(&z_, -15);
  if (rc == Z_MEM_ERROR) return Status::ResourceExhausted("npz: zlib inflateInit2: out of memory");
  if (rc != Z_OK) return Status::Internal("npz: zlib inflateInit2 failed: " + std::to_string(rc));
  active_ = true;
  return Status::OK();
}

void RawInflater::End() {
  if (active_) inflateEnd(&z_);
  active_ = false;
}

int RawInflater::Inflate(std::span<const std::byte> in, std::span<std::byte> out,
                         std::size_t* consumed, std::size_t* produced) {
  const std::size_t in_size = std::min<std::size_t>(in.size(), UINT_MAX);
  const std::size_t out_size = std::min<std::size_t>(out.size(), UINT_MAX);
  z_.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(in.data()));
  z_.avail_in = static_cast<uInt>(in_size);
  z_.next_out = reinterpret_cast<Bytef*>(out.data());
  z_.avail_out = static_cast<uInt>(out_size);
  const int rc = inflate(&z_, Z_NO_FLUSH);
  *consumed = in_size - z_.avail_in;
  *produced = out_size - z_.avail_out;
  return rc;
}

// ---------------------------------------------------------------------------
// PyZipExtFile: CPython 3.11 Lib/zipfile.py's ZipExtFile.read/_read1/_read2.

namespace {
constexpr std::size_t kZipMinReadSize = 4096;  // ZipExtFile.MIN_READ_SIZE
}  // namespace

Status PyZipExtFile::Start(PyBufferedFile* file, const std::string* path,
                           const zip::MemberRecord* member, std::uint64_t data_offset,
                           bool check_crc) {
  inflater_.End();
  begin_ = data_offset;
  check_crc_ = check_crc;
  file_ = file;
  path_ = path;
  member_ = member;
  shared_pos_ = data_offset;
  compress_left_ = member->compressed_size;
  left_ = member->uncompressed_size;
  eof_ = false;
  crc_ = 0;
  crc_bad_ = false;
  readbuffer_.clear();
  offset_ = 0;
  tail_.clear();
  deflated_ = member->method == zip::kMethodDeflated;
  if (deflated_) return inflater_.Start();
  return Status::OK();
}

Status PyZipExtFile::Read2(std::size_t n, std::vector<std::byte>* out) {
  out->clear();
  if (compress_left_ == 0) return Status::OK();
  n = std::max(n, kZipMinReadSize);
  n = static_cast<std::size_t>(std::min<std::uint64_t>(n, compress_left_));
  out->resize(n);
  // _SharedFile.read: seek to its own position, read, remember tell().
  file_->Seek(shared_pos_);
  IOMIMIC_ASSIGN_OR_RETURN(std::size_t got, file_->Read(n, out->data()));
  shared_pos_ = file_->Tell();
  out->resize(got);
  compress_left_ -= got;
  if (got == 0) {
    return Status::Corruption(*path_ + ": truncated file: member '" + member_->name +
                              "' ends before its stored bytes (zipfile's EOFError) at offset " +
                              std::to_string(shared_pos_));
  }
  return Status::OK();
}

Result<std::size_t> PyZipExtFile::Read1(std::size_t n) {
  chunk_.clear();
  if (eof_ || n == 0) return std::size_t{0};
  if (deflated_) {
    std::vector<std::byte> data = std::move(tail_);
    tail_.clear();
    if (n > data.size()) {
      IOMIMIC_RETURN_IF_ERROR(Read2(n - data.size(), &raw_));
      data.insert(data.end(), raw_.begin(), raw_.end());
    }
    n = std::max(n, kZipMinReadSize);
    chunk_.resize(n);
    std::size_t consumed = 0;
    std::size_t produced = 0;
    const int rc = inflater_.Inflate(data, chunk_, &consumed, &produced);
    if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) {
      return Status::Corruption(*path_ + ": invalid deflate data in member '" + member_->name +
                                "' at offset " + std::to_string(shared_pos_));
    }
    chunk_.resize(produced);
    tail_.assign(data.begin() + static_cast<std::ptrdiff_t>(consumed), data.end());
    eof_ = rc == Z_STREAM_END || (compress_left_ == 0 && tail_.empty());
  } else {
    IOMIMIC_RETURN_IF_ERROR(Read2(n, &chunk_));
    eof_ = compress_left_ == 0;
  }
  if (chunk_.size() > left_) chunk_.resize(static_cast<std::size_t>(left_));
  left_ -= chunk_.size();
  if (left_ == 0) eof_ = true;
  if (check_crc_) crc_ = Crc32(crc_, chunk_);
  if (eof_ && check_crc_ && crc_ != member_->crc32) crc_bad_ = true;
  return chunk_.size();
}

Status PyZipExtFile::CheckCrc() const {
  if (!crc_bad_) return Status::OK();
  return Status::Corruption(*path_ + ": bad CRC-32 for member '" + member_->name + "' (directory " +
                            Hex32(member_->crc32) + ", data " + Hex32(crc_) + ") at offset " +
                            std::to_string(begin_));
}

Result<std::size_t> PyZipExtFile::Read(std::size_t n, std::byte* out) {
  if (n == 0) return std::size_t{0};  // `out` may be null
  const std::size_t buffered = readbuffer_.size() - offset_;
  if (n < buffered) {
    std::memcpy(out, readbuffer_.data() + offset_, n);
    offset_ += n;
    return n;
  }
  if (buffered > 0) std::memcpy(out, readbuffer_.data() + offset_, buffered);  // data() may be null
  std::size_t written = buffered;
  std::size_t need = n - buffered;
  readbuffer_.clear();
  offset_ = 0;
  while (need > 0 && !eof_) {
    IOMIMIC_ASSIGN_OR_RETURN(std::size_t got, Read1(need));
    if (need < got) {
      std::memcpy(out + written, chunk_.data(), need);
      readbuffer_.swap(chunk_);
      offset_ = need;
      written += need;
      need = 0;
      break;
    }
    if (got == 0) break;  // the member's data ended early
    std::memcpy(out + written, chunk_.data(), got);
    written += got;
    need -= got;
  }
  return written;
}

namespace {}  // namespace

// ---------------------------------------------------------------------------
// MemberStream

MemberStream::~MemberStream() { Reset(); }

void MemberStream::Reset() {
  inflater_.End();
  pending_ = {};
  stream_end_ = false;
}

Status MemberStream::Start(File* file, const std::string* path, const zip::MemberRecord* member,
                           std::uint64_t begin, std::span<const std::byte> prefetched,
                           std::span<std::byte> staging, std::uint64_t transfer_size,
                           bool check_crc) {
  Reset();
  file_ = file;
  path_ = path;
  member_ = member;
  begin_ = begin;
  end_ = begin + member->compressed_size;
  transfer_ = transfer_size;
  staging_ = staging;
  check_crc_ = check_crc;
  crc_ = 0;
  produced_ = 0;
  deflated_ = member->method == zip::kMethodDeflated;
  const std::size_t have =
      static_cast<std::size_t>(std::min<std::uint64_t>(prefetched.size(), member->compressed_size));
  pending_ = prefetched.first(have);
  raw_pos_ = begin + have;
  if (deflated_) return inflater_.Start();
  return Status::OK();
}

void MemberStream::Checksum(std::span<const std::byte> bytes) {
  if (check_crc_) crc_ = Crc32(crc_, bytes);
}

Status MemberStream::Corrupt(const std::string& what, std::uint64_t offset) const {
  return Status::Corruption(*path_ + ": " + what + " at offset " + std::to_string(offset));
}

std::uint64_t MemberStream::ChunkEnd(std::uint64_t offset) const {
  return std::min(end_, (offset / transfer_ + 1) * transfer_);
}

Status MemberStream::ReadRaw(std::uint64_t offset, std::span<std::byte> out) {
  Result<std::size_t> n = file_->ReadAt(offset, out);
  if (!n.ok()) {
    return n.status().WithContext("npz: reading member '" + member_->name + "' of " + *path_);
  }
  if (*n < out.size()) {
    return Corrupt("truncated file: member '" + member_->name + "' needs " +
                       std::to_string(out.size()) + " bytes but only " + std::to_string(*n) +
                       " could be read",
                   offset);
  }
  return Status::OK();
}

Status MemberStream::Refill() {
  if (raw_pos_ >= end_) {
    return Corrupt("member '" + member_->name + "' ends (after " +
                       std::to_string(member_->compressed_size) +
                       " stored bytes) before its content is complete",
                   end_);
  }
  const std::uint64_t chunk_end = ChunkEnd(raw_pos_);
  std::span<std::byte> chunk = staging_.first(static_cast<std::size_t>(chunk_end - raw_pos_));
  IOMIMIC_RETURN_IF_ERROR(ReadRaw(raw_pos_, chunk));
  pending_ = chunk;
  raw_pos_ = chunk_end;
  return Status::OK();
}

Status MemberStream::Inflate(std::span<std::byte> out, std::size_t* produced, bool* stream_end) {
  std::size_t consumed = 0;
  const int rc = inflater_.Inflate(pending_, out, &consumed, produced);
  pending_ = pending_.subspan(consumed);
  const std::uint64_t at = raw_pos_ - pending_.size();
  switch (rc) {
    case Z_STREAM_END:
      *stream_end = true;
      return Status::OK();
    case Z_OK:
    case Z_BUF_ERROR:
      if (consumed == 0 && *produced == 0) {
        if (pending_.empty() && raw_pos_ >= end_) {
          return Corrupt("deflate data of member '" + member_->name + "' end prematurely (" +
                             std::to_string(member_->compressed_size) + " stored bytes)",
                         end_);
        }
        return Corrupt("deflate data of member '" + member_->name + "' make no progress", at);
      }
      return Status::OK();
    case Z_MEM_ERROR:
      return Status::ResourceExhausted("npz: zlib inflate: out of memory");
    default: {
      std::string what = "invalid deflate data in member '" + member_->name + "'";
      if (inflater_.message() != nullptr) what += std::string(" (") + inflater_.message() + ")";
      return Corrupt(what, at);
    }
  }
}

Status MemberStream::Read(std::span<std::byte> out) {
  // The CRC-32 is folded in piece by piece, right after each piece lands,
  // while it is still in the CPU cache: one pass over memory, not two.
  const std::size_t wanted = out.size();
  if (!deflated_) {
    while (!out.empty()) {
      if (!pending_.empty()) {
        const std::size_t n = std::min(out.size(), pending_.size());
        std::memcpy(out.data(), pending_.data(), n);
        Checksum(out.first(n));
        pending_ = pending_.subspan(n);
        out = out.subspan(n);
        continue;
      }
      if (raw_pos_ >= end_) return Refill();  // reports the premature end
      const std::uint64_t chunk_end = ChunkEnd(raw_pos_);
      const std::size_t len = static_cast<std::size_t>(chunk_end - raw_pos_);
      if (out.size() >= len) {
        IOMIMIC_RETURN_IF_ERROR(ReadRaw(raw_pos_, out.first(len)));
        Checksum(out.first(len));
        raw_pos_ = chunk_end;
        out = out.subspan(len);
      } else {
        IOMIMIC_RETURN_IF_ERROR(Refill());
      }
    }
  } else {
    while (!out.empty()) {
      if (stream_end_) {
        return Corrupt("deflate data of member '" + member_->name + "' end after " +
                           std::to_string(produced_ + (wanted - out.size())) + " bytes, but " +
                           std::to_string(member_->uncompressed_size) + " are declared",
                       begin_);
      }
      if (pending_.empty() && raw_pos_ < end_) IOMIMIC_RETURN_IF_ERROR(Refill());
      std::size_t n = 0;
      IOMIMIC_RETURN_IF_ERROR(Inflate(out, &n, &stream_end_));
      Checksum(out.first(n));
      out = out.subspan(n);
    }
  }
  produced_ += wanted;
  return Status::OK();
}

Status MemberStream::SkipRest(std::span<std::byte> sink) {
  pending_ = {};
  if (sink.empty()) sink = staging_;
  while (raw_pos_ < end_) {
    const std::uint64_t chunk_end = ChunkEnd(raw_pos_);
    IOMIMIC_RETURN_IF_ERROR(
        ReadRaw(raw_pos_, sink.first(static_cast<std::size_t>(chunk_end - raw_pos_))));
    raw_pos_ = chunk_end;
  }
  return Status::OK();
}

Status MemberStream::Finish() {
  if (deflated_) {
    std::byte extra[64];
    while (!stream_end_) {
      if (pending_.empty() && raw_pos_ < end_) IOMIMIC_RETURN_IF_ERROR(Refill());
      std::size_t n = 0;
      IOMIMIC_RETURN_IF_ERROR(Inflate(extra, &n, &stream_end_));
      if (n > 0) {
        return Corrupt("deflate data of member '" + member_->name + "' hold more than the " +
                           std::to_string(member_->uncompressed_size) + " bytes declared",
                       begin_);
      }
    }
  } else if (raw_pos_ != end_ || !pending_.empty()) {
    return Corrupt("member '" + member_->name + "' has bytes after its array data", begin_);
  }
  if (produced_ != member_->uncompressed_size) {
    return Corrupt("member '" + member_->name + "' holds " + std::to_string(produced_) +
                       " bytes, but " + std::to_string(member_->uncompressed_size) +
                       " are declared",
                   begin_);
  }
  if (check_crc_ && crc_ != member_->crc32) {
    return Corrupt("bad CRC-32 for member '" + member_->name + "' (directory " +
                       Hex32(member_->crc32) + ", data " + Hex32(crc_) + ")",
                   begin_);
  }
  return Status::OK();
}

// ---------------------------------------------------------------------------
// NpzReader

NpzReader::NpzReader(std::string path, const ReaderOptions& options, ReadPattern pattern)
    : path_(std::move(path)),
      storage_(options.storage),
      decode_(options.decode),
      keep_in_memory_(options.keep_in_memory),
      pattern_(pattern) {
  // Python's buffered calls land in host memory; a back end that reads into
  // device memory gets numpy's direct requests, which it can place there.
  if (pattern_ == ReadPattern::kDlio && storage_ != nullptr &&
      storage_->capabilities().device_memory) {
    pattern_ = ReadPattern::kDirect;
  }
  std::uint64_t t = options.transfer_size == 0 ? kDefaultTransferSize : options.transfer_size;
  transfer_ = std::min(t, kMaxTransferSize);
}

NpzReader::~NpzReader() {
  stream_.Reset();
  if (file_) (void)file_->Close();
}

Result<std::unique_ptr<FileReader>> NpzReader::Open(const std::string& path,
                                                    const ReaderOptions& options,
                                                    ReadPattern pattern) {
  return OpenReaderGuarded("npz", path, options, [&]() -> Result<std::unique_ptr<FileReader>> {
    std::unique_ptr<NpzReader> reader(new NpzReader(path, options, pattern));
    IOMIMIC_RETURN_IF_ERROR(reader->Init());
    return std::unique_ptr<FileReader>(std::move(reader));
  });
}

Status NpzReader::Init() {
  IOMIMIC_ASSIGN_OR_RETURN(probe_, AllocateHostBuffer(*storage_, kProbeSize, "npz"));
  IOMIMIC_RETURN_IF_ERROR(BeginLoad());
  header_ = load_header_;
  Result<numpy::SampleLayout> layout = numpy::SampleLayoutOf(header_);
  if (!layout.ok()) return Corrupt("x.npy " + layout.status().message(), stream_.begin());
  layout_ = *layout;
  return Status::OK();
}

Status NpzReader::Corrupt(const std::string& what, std::uint64_t offset) const {
  return Status::Corruption(path_ + ": " + what + " at offset " + std::to_string(offset));
}

Status NpzReader::ReadExact(std::uint64_t offset, std::span<std::byte> out, const char* what) {
  Result<std::size_t> n = file_->ReadAt(offset, out);
  if (!n.ok()) return n.status().WithContext(std::string("npz: reading ") + what + " of " + path_);
  if (*n < out.size()) {
    return Corrupt(std::string("truncated file: ") + what + " needs " + std::to_string(out.size()) +
                       " bytes but only " + std::to_string(*n) + " could be read",
                   offset);
  }
  return Status::OK();
}

void NpzReader::AbortLoad() {
  stream_.Reset();
  if (file_) (void)file_->Close();
  file_.reset();
  metadata_ready_ = false;
  loaded_ = false;
}

Status NpzReader::BeginLoad() {
  IOMIMIC_ASSIGN_OR_RETURN(file_, OpenForReading(*storage_, path_, AccessHint::kWholeFile, "npz"));
  Status s;
  if (pattern_ == ReadPattern::kWhole) {
    // One request for the whole file, then the direct path parses it from memory.
    Result<std::uint64_t> size = file_->Size();
    if (!size.ok()) {
      s = size.status().WithContext("npz: size of " + path_);
    } else if (*size > std::numeric_limits<std::size_t>::max()) {
      s = Status::ResourceExhausted(path_ + ": too large for this address space");
    } else {
      const std::size_t bytes = static_cast<std::size_t>(*size);
      if (whole_.size() < bytes) {
        whole_.Reset();
        Result<Buffer> made = AllocateHostBuffer(*storage_, bytes, "npz");
        if (made.ok())
          whole_ = std::move(made).value();
        else
          s = made.status();
      }
      if (s.ok() && bytes > 0) s = ReadExact(0, whole_.span().first(bytes), "file");
      if (s.ok()) s = file_->Close();
      if (s.ok()) {
        file_ = std::make_unique<MemoryFile>(path_, whole_.span().first(bytes));
      }
    }
    if (s.ok()) s = LoadMetadata(&load_header_);
  } else if (pattern_ == ReadPattern::kDlio) {
    s = LoadMetadataPython(&load_header_);
  } else {
    s = LoadMetadata(&load_header_);
  }
  if (!s.ok()) {
    AbortLoad();
    return s;
  }
  metadata_ready_ = true;
  return Status::OK();
}

Result<std::uint64_t> NpzReader::DirectoryStart(const zip::EndRecord& end) const {
  const std::uint64_t end_records_start =
      end.end_record_offset -
      (end.zip64 ? zip::kZip64EndOfCentralDirSize + zip::kZip64LocatorSize : 0);
  if (end.directory_size > end_records_start) {
    return Corrupt("central directory size " + std::to_string(end.directory_size) +
                       " exceeds the space before the end record",
                   end.end_record_offset);
  }
  const std::uint64_t directory_start = end_records_start - end.directory_size;
  if (directory_start < end.directory_offset) {
    return Corrupt("bad central directory offset " + std::to_string(end.directory_offset),
                   end.end_record_offset);
  }
  return directory_start;
}

Status NpzReader::ReadEndRecords(std::uint64_t size, zip::EndRecord* end) {
  constexpr std::size_t kEnd = zip::kEndOfCentralDirSize;
  if (size < kEnd) {
    return Corrupt("truncated file: " + std::to_string(size) +
                       " bytes cannot hold a ZIP end-of-central-directory record",
                   0);
  }
  // zipfile first expects an end record without a comment at the very end.
  tail_.resize(kEnd);
  IOMIMIC_RETURN_IF_ERROR(ReadExact(size - kEnd, tail_, "end-of-central-directory record"));
  std::uint64_t end_offset = size - kEnd;
  if (zip::LoadU32(tail_.data()) != zip::kEndOfCentralDirSignature ||
      zip::LoadU16(tail_.data() + 20) != 0) {
    // Then searches the last 64 KiB (+ record) for one followed by a comment.
    const std::uint64_t start =
        size > zip::kMaxCommentSize + 1 + kEnd ? size - (zip::kMaxCommentSize + 1 + kEnd) : 0;
    tail_.resize(static_cast<std::size_t>(size - start));
    IOMIMIC_RETURN_IF_ERROR(ReadExact(start, tail_, "archive tail"));
    const std::int64_t found = zip::FindEndRecord(tail_, start);
    if (found < 0) {
      return Corrupt("no ZIP end-of-central-directory record (file truncated or not a ZIP archive)",
                     size - kEnd);
    }
    end_offset = static_cast<std::uint64_t>(found);
    std::memmove(tail_.data(), tail_.data() + (end_offset - start), kEnd);
    tail_.resize(kEnd);
  }
  Result<zip::EndRecord> parsed = zip::ParseEndRecord(tail_, end_offset);
  if (!parsed.ok()) return parsed.status().WithContext(path_);
  *end = *parsed;

  // Probe for a ZIP64 end locator just before the end record.
  if (end_offset >= zip::kZip64LocatorSize) {
    const std::uint64_t locator_offset = end_offset - zip::kZip64LocatorSize;
    tail_.resize(zip::kZip64LocatorSize);
    IOMIMIC_RETURN_IF_ERROR(ReadExact(locator_offset, tail_, "ZIP64 end locator"));
    if (zip::IsZip64Locator(tail_)) {
      Status s = zip::CheckZip64Locator(tail_, locator_offset);
      if (!s.ok()) return s.WithContext(path_);
      if (locator_offset < zip::kZip64EndOfCentralDirSize) {
        return Corrupt("ZIP64 end locator without room for a ZIP64 end record", locator_offset);
      }
      const std::uint64_t record_offset = locator_offset - zip::kZip64EndOfCentralDirSize;
      tail_.resize(zip::kZip64EndOfCentralDirSize);
      IOMIMIC_RETURN_IF_ERROR(ReadExact(record_offset, tail_, "ZIP64 end record"));
      s = zip::ApplyZip64EndRecord(tail_, record_offset, end);
      if (!s.ok()) return s.WithContext(path_);
    }
  }
  return Status::OK();
}

Status NpzReader::ParseDirectory(std::uint64_t directory_start, std::uint64_t concat) {
  bool found = false;
  std::uint64_t members = 0;
  for (std::size_t pos = 0; pos < directory_.size();) {
    Result<zip::MemberRecord> entry = zip::ParseCentralEntry(directory_, &pos, directory_start);
    if (!entry.ok()) return entry.status().WithContext(path_);
    ++members;
    // zipfile keeps the last entry of a name.
    if (entry->name == kSamplesMember) {
      member_ = std::move(entry).value();
      found = true;
    }
  }
  if (!found) {
    return Corrupt("no member 'x.npy' in the archive (" + std::to_string(members) +
                       " members in the central directory)",
                   directory_start);
  }
  if (member_.local_header_offset > std::numeric_limits<std::uint64_t>::max() - concat) {
    return Corrupt("bad local header offset of member 'x.npy'", directory_start);
  }
  member_.local_header_offset += concat;
  const std::uint64_t lh = member_.local_header_offset;
  if (member_.flags & (zip::kFlagEncrypted | zip::kFlagStrongEncryption)) {
    return Status::NotSupported(path_ + ": member 'x.npy' is encrypted");
  }
  if (member_.flags & zip::kFlagCompressedPatch) {
    return Status::NotSupported(path_ + ": member 'x.npy' is compressed patched data");
  }
  if (member_.method != zip::kMethodStored && member_.method != zip::kMethodDeflated) {
    return Status::NotSupported(path_ + ": member 'x.npy' uses compression method " +
                                std::to_string(member_.method) +
                                " (only stored and deflated are supported)");
  }
  if (member_.method == zip::kMethodStored &&
      member_.compressed_size != member_.uncompressed_size) {
    return Corrupt("stored member 'x.npy' has compressed size " +
                       std::to_string(member_.compressed_size) + " but size " +
                       std::to_string(member_.uncompressed_size),
                   lh);
  }
  if (member_.method == zip::kMethodDeflated &&
      member_.uncompressed_size / kMaxDeflateRatio > member_.compressed_size + 1024) {
    return Corrupt("member 'x.npy' declares " + std::to_string(member_.uncompressed_size) +
                       " bytes, more than " + std::to_string(member_.compressed_size) +
                       " deflated bytes can hold",
                   lh);
  }

  return Status::OK();
}

Status NpzReader::CheckNpyHeader(numpy::NpyHeader* header, std::uint64_t data_offset) {
  if (header->shape.empty()) {
    return Status::NotSupported(path_ + ": x.npy is 0-dimensional (samples are on the last axis)");
  }
  Result<std::uint64_t> data_bytes = header->DataBytes();
  if (!data_bytes.ok()) {
    return Corrupt("bad NPY header in member 'x.npy': " + data_bytes.status().message(),
                   data_offset);
  }
  if (member_.uncompressed_size < header->header_size ||
      member_.uncompressed_size - header->header_size != *data_bytes) {
    return Corrupt("member 'x.npy' holds " + std::to_string(member_.uncompressed_size) +
                       " bytes but its NPY header describes " +
                       std::to_string(header->header_size) + " + " + std::to_string(*data_bytes) +
                       " (shape " + numpy::ShapeText(header->shape) + ", descr '" + header->descr +
                       "')",
                   data_offset);
  }
  data_bytes_ = *data_bytes;
  return Status::OK();
}

template <typename Read>
Status NpzReader::ReadNpyHeader(Read&& read, std::uint64_t data_offset, numpy::NpyHeader* header) {
  std::byte preamble[numpy::kNpyPreambleSize];
  IOMIMIC_RETURN_IF_ERROR(read(preamble));
  int major = 0;
  int minor = 0;
  Result<std::size_t> width = numpy::ParseNpyPreamble(preamble, &major, &minor);
  if (!width.ok()) {
    return Corrupt("bad NPY header in member 'x.npy': " + width.status().message(), data_offset);
  }
  std::byte length_field[4] = {};
  IOMIMIC_RETURN_IF_ERROR(read(std::span<std::byte>(length_field, *width)));
  const std::uint64_t dict_size =
      *width == 2 ? zip::LoadU16(length_field) : zip::LoadU32(length_field);
  if (dict_size > numpy::kNpyMaxHeaderSize) {
    return Corrupt("NPY header of member 'x.npy' is " + std::to_string(dict_size) +
                       " bytes, more than numpy's limit of " +
                       std::to_string(numpy::kNpyMaxHeaderSize),
                   data_offset + numpy::kNpyPreambleSize);
  }
  std::string text(static_cast<std::size_t>(dict_size), '\0');
  IOMIMIC_RETURN_IF_ERROR(
      read(std::span<std::byte>(reinterpret_cast<std::byte*>(text.data()), text.size())));
  Result<numpy::NpyHeader> parsed = numpy::ParseNpyDict(text, major);
  if (!parsed.ok()) {
    if (parsed.status().code() == StatusCode::kCorruption) {
      return Corrupt("bad NPY header in member 'x.npy': " + parsed.status().message(),
                     data_offset + numpy::kNpyPreambleSize + *width);
    }
    return parsed.status().WithContext(path_ + ": member 'x.npy'");
  }
  *header = std::move(parsed).value();
  header->header_size = numpy::kNpyPreambleSize + *width + dict_size;
  return CheckNpyHeader(header, data_offset);
}

Status NpzReader::LoadMetadata(numpy::NpyHeader* header) {
  Result<std::uint64_t> file_size = file_->Size();
  if (!file_size.ok()) return file_size.status().WithContext("npz: size of " + path_);
  const std::uint64_t size = *file_size;

  // 1. np.load's magic check.
  const std::size_t probe_size =
      static_cast<std::size_t>(std::min<std::uint64_t>(kProbeSize, size));
  if (probe_size > 0) {
    IOMIMIC_RETURN_IF_ERROR(ReadExact(0, probe_.span().first(probe_size), "archive start"));
  }
  if (probe_size < 4 || (zip::LoadU32(probe_.data()) != zip::kLocalHeaderSignature &&
                         zip::LoadU32(probe_.data()) != zip::kEndOfCentralDirSignature)) {
    return Corrupt("not a ZIP archive (no PK\\3\\4 or PK\\5\\6 signature)", 0);
  }

  // 2. End records.
  zip::EndRecord end;
  IOMIMIC_RETURN_IF_ERROR(ReadEndRecords(size, &end));

  // 3. Central directory. Like zipfile, locate it just before the end records
  // and treat any difference from the recorded offset as prepended data.
  IOMIMIC_ASSIGN_OR_RETURN(const std::uint64_t directory_start, DirectoryStart(end));
  const std::uint64_t concat = directory_start - end.directory_offset;
  if (end.directory_size > kMaxDirectorySize) {
    return Status::NotSupported(path_ + ": central directory of " +
                                std::to_string(end.directory_size) + " bytes is too large");
  }
  directory_.resize(static_cast<std::size_t>(end.directory_size));
  if (!directory_.empty()) {
    IOMIMIC_RETURN_IF_ERROR(ReadExact(directory_start, directory_, "central directory"));
  }
  IOMIMIC_RETURN_IF_ERROR(ParseDirectory(directory_start, concat));
  const std::uint64_t lh = member_.local_header_offset;

  // 4. Local header, NPY header and the first array bytes in one 4 KiB read.
  if (lh >= size) {
    return Corrupt("truncated file: local header of member 'x.npy' lies past the end (" +
                       std::to_string(size) + " bytes)",
                   lh);
  }
  const std::size_t head_size =
      static_cast<std::size_t>(std::min<std::uint64_t>(kProbeSize, size - lh));
  std::span<std::byte> head = probe_.span().first(head_size);
  IOMIMIC_RETURN_IF_ERROR(ReadExact(lh, head, "local file header"));
  Result<zip::LocalHeader> local = zip::ParseLocalHeader(head, lh);
  if (!local.ok()) return local.status().WithContext(path_);
  std::string name;
  if (zip::kLocalHeaderFixedSize + local->name_size <= head.size()) {
    name.assign(reinterpret_cast<const char*>(head.data() + zip::kLocalHeaderFixedSize),
                local->name_size);
  } else {
    std::vector<std::byte> name_bytes(local->name_size);
    IOMIMIC_RETURN_IF_ERROR(
        ReadExact(lh + zip::kLocalHeaderFixedSize, name_bytes, "local file header name"));
    name.assign(reinterpret_cast<const char*>(name_bytes.data()), name_bytes.size());
  }
  if (name != member_.name) {
    return Corrupt(
        "file name in directory '" + member_.name + "' and in local header '" + name + "' differ",
        lh);
  }
  const std::uint64_t data_offset =
      lh + zip::kLocalHeaderFixedSize + local->name_size + local->extra_size;
  if (data_offset > size || member_.compressed_size > size - data_offset) {
    return Corrupt("truncated file: member 'x.npy' needs " +
                       std::to_string(member_.compressed_size) + " bytes from here, the file has " +
                       std::to_string(size) + " bytes",
                   data_offset);
  }
  std::span<const std::byte> prefetched;
  if (data_offset < lh + head.size()) {
    prefetched = head.subspan(static_cast<std::size_t>(data_offset - lh));
  }
  // No request is longer than the transfer size or the member.
  const std::size_t staging_size = static_cast<std::size_t>(
      std::max<std::uint64_t>(1, std::min(transfer_, member_.compressed_size)));
  if (staging_.size() < staging_size) {
    staging_.Reset();
    IOMIMIC_ASSIGN_OR_RETURN(staging_, AllocateHostBuffer(*storage_, staging_size, "npz"));
  }
  IOMIMIC_RETURN_IF_ERROR(stream_.Start(file_.get(), &path_, &member_, data_offset, prefetched,
                                        staging_.span().first(staging_size), transfer_, decode_));

  // NPY header at the start of the member.
  return ReadNpyHeader([&](std::span<std::byte> out) { return stream_.Read(out); }, data_offset,
                       header);
}

Result<std::size_t> NpzReader::PyRead(std::size_t n, std::byte* out, const char* what) {
  Result<std::size_t> got = py_.Read(n, out);
  if (!got.ok())
    return got.status().WithContext(std::string("npz: reading ") + what + " of " + path_);
  return got;
}

Status NpzReader::PyCheckMagic() {
  // np.load: magic = fid.read(6); fid.seek(-6, 1).
  std::byte magic[6] = {};
  IOMIMIC_ASSIGN_OR_RETURN(std::size_t got, PyRead(sizeof(magic), magic, "archive start"));
  py_.Seek(py_.Tell() - got);
  if (got < 4 || (zip::LoadU32(magic) != zip::kLocalHeaderSignature &&
                  zip::LoadU32(magic) != zip::kEndOfCentralDirSignature)) {
    return Corrupt("not a ZIP archive (no PK\\3\\4 or PK\\5\\6 signature)", 0);
  }
  return Status::OK();
}

Status NpzReader::PyReadEndRecord(zip::EndRecord* end) {
  // zipfile._EndRecData: seek(-22, 2); read() (readall), else the last 64 KiB.
  constexpr std::size_t kEnd = zip::kEndOfCentralDirSize;
  py_.SeekBackFromEnd(kEnd);
  Result<std::vector<std::byte>> tail = py_.ReadAll();
  if (!tail.ok()) {
    if (tail.status().code() == StatusCode::kOutOfRange) {
      return Corrupt("truncated file: " + std::to_string(py_.size()) +
                         " bytes cannot hold a ZIP end-of-central-directory record",
                     0);
    }
    return tail.status().WithContext("npz: reading the archive tail of " + path_);
  }
  const std::uint64_t size = py_.size();
  std::uint64_t end_offset = size - kEnd;
  std::vector<std::byte> record;
  if (tail->size() == kEnd && zip::LoadU32(tail->data()) == zip::kEndOfCentralDirSignature &&
      zip::LoadU16(tail->data() + 20) == 0) {
    record = std::move(tail).value();
  } else {
    const std::uint64_t start =
        size > zip::kMaxCommentSize + 1 + kEnd ? size - (zip::kMaxCommentSize + 1 + kEnd) : 0;
    py_.Seek(start);
    tail = py_.ReadAll();
    if (!tail.ok()) return tail.status().WithContext("npz: reading the archive tail of " + path_);
    const std::int64_t found = zip::FindEndRecord(*tail, start);
    if (found < 0) {
      return Corrupt("no ZIP end-of-central-directory record (file truncated or not a ZIP archive)",
                     size - kEnd);
    }
    end_offset = static_cast<std::uint64_t>(found);
    const std::size_t at = static_cast<std::size_t>(end_offset - start);
    record.assign(tail->begin() + at, tail->begin() + at + kEnd);
  }
  Result<zip::EndRecord> parsed_end = zip::ParseEndRecord(record, end_offset);
  if (!parsed_end.ok()) return parsed_end.status().WithContext(path_);
  *end = *parsed_end;
  return Status::OK();
}

Status NpzReader::PyReadZip64End(zip::EndRecord* end) {
  // zipfile._EndRecData64: the 20 bytes before the end record.
  const std::uint64_t end_offset = end->end_record_offset;
  if (end_offset < zip::kZip64LocatorSize) return Status::OK();
  const std::uint64_t locator_offset = end_offset - zip::kZip64LocatorSize;
  std::byte locator[zip::kZip64LocatorSize];
  py_.Seek(locator_offset, /*from_end=*/true);
  IOMIMIC_ASSIGN_OR_RETURN(std::size_t got, PyRead(sizeof(locator), locator, "ZIP64 end locator"));
  if (got != sizeof(locator) || !zip::IsZip64Locator(locator)) return Status::OK();
  Status st = zip::CheckZip64Locator(locator, locator_offset);
  if (!st.ok()) return st.WithContext(path_);
  if (locator_offset < zip::kZip64EndOfCentralDirSize) {
    return Corrupt("ZIP64 end locator without room for a ZIP64 end record", locator_offset);
  }
  const std::uint64_t record_offset = locator_offset - zip::kZip64EndOfCentralDirSize;
  std::vector<std::byte> zip64(zip::kZip64EndOfCentralDirSize);
  py_.Seek(record_offset, /*from_end=*/true);
  IOMIMIC_ASSIGN_OR_RETURN(got, PyRead(zip64.size(), zip64.data(), "ZIP64 end record"));
  if (got != zip64.size()) {
    return Corrupt("truncated file: ZIP64 end record", record_offset);
  }
  st = zip::ApplyZip64EndRecord(zip64, record_offset, end);
  if (!st.ok()) return st.WithContext(path_);
  return Status::OK();
}

Status NpzReader::PyReadDirectory(const zip::EndRecord& end) {
  // zipfile._RealGetContents: seek(start_dir); read(size_cd).
  IOMIMIC_ASSIGN_OR_RETURN(const std::uint64_t directory_start, DirectoryStart(end));
  if (end.directory_size > kMaxDirectorySize) {
    return Status::NotSupported(path_ + ": central directory of " +
                                std::to_string(end.directory_size) + " bytes is too large");
  }
  directory_.resize(static_cast<std::size_t>(end.directory_size));
  py_.Seek(directory_start);
  IOMIMIC_ASSIGN_OR_RETURN(std::size_t got,
                           PyRead(directory_.size(), directory_.data(), "central directory"));
  if (got != directory_.size()) {
    return Corrupt("truncated file: central directory needs " + std::to_string(directory_.size()) +
                       " bytes but only " + std::to_string(got) + " could be read",
                   directory_start);
  }
  return ParseDirectory(directory_start, directory_start - end.directory_offset);
}

Result<std::uint64_t> NpzReader::PyOpenMember() {
  // ZipFile.open('x.npy'): the local header through the _SharedFile, whose
  // position starts at the header.
  const std::uint64_t lh = member_.local_header_offset;
  const std::uint64_t size = py_.size();
  std::uint64_t shared = lh;  // _SharedFile position
  auto shared_read = [&](std::size_t n, std::byte* out, const char* what) -> Status {
    py_.Seek(shared);
    IOMIMIC_ASSIGN_OR_RETURN(std::size_t n_got, PyRead(n, out, what));
    shared = py_.Tell();
    if (n_got != n) {
      return Corrupt(std::string("truncated file: ") + what + " of member 'x.npy'", lh);
    }
    return Status::OK();
  };
  std::byte fixed[zip::kLocalHeaderFixedSize];
  IOMIMIC_RETURN_IF_ERROR(shared_read(sizeof(fixed), fixed, "local file header"));
  Result<zip::LocalHeader> local = zip::ParseLocalHeader(fixed, lh);
  if (!local.ok()) return local.status().WithContext(path_);
  std::string name(local->name_size, '\0');
  IOMIMIC_RETURN_IF_ERROR(shared_read(name.size(), reinterpret_cast<std::byte*>(name.data()),
                                      "local file header name"));
  if (name != member_.name) {
    return Corrupt(
        "file name in directory '" + member_.name + "' and in local header '" + name + "' differ",
        lh);
  }
  if (local->extra_size > 0) {
    std::vector<std::byte> extra(local->extra_size);
    IOMIMIC_RETURN_IF_ERROR(shared_read(extra.size(), extra.data(), "local file header extra"));
  }
  const std::uint64_t data_offset = shared;
  if (data_offset > size || member_.compressed_size > size - data_offset) {
    return Corrupt("truncated file: member 'x.npy' needs " +
                       std::to_string(member_.compressed_size) + " bytes from here, the file has " +
                       std::to_string(size) + " bytes",
                   data_offset);
  }
  IOMIMIC_RETURN_IF_ERROR(member_file_.Start(&py_, &path_, &member_, data_offset, decode_));
  return data_offset;
}

Status NpzReader::PyMemberRead(std::span<std::byte> out, std::uint64_t data_offset) {
  IOMIMIC_ASSIGN_OR_RETURN(std::size_t n_got, member_file_.Read(out.size(), out.data()));
  if (n_got != out.size()) {
    return Corrupt("member 'x.npy' ends after " + std::to_string(n_got) + " bytes of a read of " +
                       std::to_string(out.size()),
                   data_offset);
  }
  return Status::OK();
}

Status NpzReader::PyReadNpyHeader(std::uint64_t data_offset, numpy::NpyHeader* header) {
  // numpy.lib.format.read_array: magic and version, header length, header.
  return ReadNpyHeader([&](std::span<std::byte> out) { return PyMemberRead(out, data_offset); },
                       data_offset, header);
}

Status NpzReader::LoadMetadataPython(numpy::NpyHeader* header) {
  // open(path, 'rb'): FileIO's fstat is the storage's own at open.
  py_.Reset(file_.get());
  IOMIMIC_RETURN_IF_ERROR(PyCheckMagic());
  zip::EndRecord end;
  IOMIMIC_RETURN_IF_ERROR(PyReadEndRecord(&end));
  IOMIMIC_RETURN_IF_ERROR(PyReadZip64End(&end));
  IOMIMIC_RETURN_IF_ERROR(PyReadDirectory(end));
  // NpzFile['x']: ZipFile.open('x.npy') reads 6 bytes (the magic check) and
  // is closed; a second ZipFile.open('x.npy') is handed to read_array.
  IOMIMIC_ASSIGN_OR_RETURN(std::uint64_t data_offset, PyOpenMember());
  std::byte check[6];
  IOMIMIC_RETURN_IF_ERROR(PyMemberRead(check, data_offset));
  IOMIMIC_ASSIGN_OR_RETURN(data_offset, PyOpenMember());
  return PyReadNpyHeader(data_offset, header);
}

Status NpzReader::FinishLoadPython() {
  // numpy.lib.format.read_array: count elements in pieces of BUFFER_SIZE
  // (the transfer size) bytes, each one ZipExtFile.read.
  const std::uint64_t itemsize = load_header_.dtype.itemsize;
  if (itemsize == 0 || data_bytes_ == 0) return member_file_.CheckCrc();
  const std::uint64_t count = data_bytes_ / itemsize;
  const std::uint64_t max_read_count = transfer_ / std::min(transfer_, itemsize);
  const std::uint64_t piece = max_read_count * itemsize;
  std::byte* out = nullptr;
  if (decode_) {
    if (data_bytes_ > std::numeric_limits<std::size_t>::max()) {
      return Status::ResourceExhausted(path_ + ": x.npy is too large for this address space");
    }
    if (payload_.size() < data_bytes_) {
      payload_.Reset();
      IOMIMIC_ASSIGN_OR_RETURN(
          payload_, AllocateHostBuffer(*storage_, static_cast<std::size_t>(data_bytes_), "npz"));
    }
    out = payload_.data();
  } else {
    const std::size_t want = static_cast<std::size_t>(std::min(piece, data_bytes_));
    if (staging_.size() < want) {
      staging_.Reset();
      IOMIMIC_ASSIGN_OR_RETURN(staging_, AllocateHostBuffer(*storage_, want, "npz"));
    }
  }
  std::uint64_t done = 0;
  for (std::uint64_t i = 0; i < count; i += max_read_count) {
    const std::uint64_t read_count = std::min(max_read_count, count - i);
    const std::size_t read_size = static_cast<std::size_t>(read_count * itemsize);
    std::byte* dest = decode_ ? out + done : staging_.data();
    IOMIMIC_ASSIGN_OR_RETURN(std::size_t got, member_file_.Read(read_size, dest));
    if (got != read_size) {
      return Corrupt("EOF: reading array data, expected " + std::to_string(read_size) +
                         " bytes got " + std::to_string(got),
                     member_.local_header_offset);
    }
    done += read_size;
  }
  return member_file_.CheckCrc();
}

Status NpzReader::FinishLoad() {
  if (pattern_ == ReadPattern::kDlio) {
    IOMIMIC_RETURN_IF_ERROR(FinishLoadPython());
  } else if (decode_) {
    if (data_bytes_ > std::numeric_limits<std::size_t>::max()) {
      return Status::ResourceExhausted(path_ + ": x.npy is too large for this address space");
    }
    const std::size_t bytes = static_cast<std::size_t>(data_bytes_);
    if (payload_.size() < bytes) {
      payload_.Reset();
      IOMIMIC_ASSIGN_OR_RETURN(payload_, AllocateHostBuffer(*storage_, bytes, "npz"));
    }
    if (bytes > 0) IOMIMIC_RETURN_IF_ERROR(stream_.Read(payload_.span().first(bytes)));
    IOMIMIC_RETURN_IF_ERROR(stream_.Finish());
  } else if (member_.method == zip::kMethodStored && storage_->capabilities().device_memory) {
    // Stored bytes need no host: read them where the back end wants them.
    if (sink_.size() < staging_.size()) {
      sink_.Reset();
      Result<Buffer> made = storage_->Allocate(staging_.size());
      if (made.ok()) sink_ = std::move(made).value();  // else: host staging below
    }
    IOMIMIC_RETURN_IF_ERROR(sink_.size() >= staging_.size()
                                ? stream_.SkipRest(sink_.span().first(staging_.size()))
                                : stream_.SkipRest());
  } else {
    IOMIMIC_RETURN_IF_ERROR(stream_.SkipRest());
  }
  stream_.Reset();
  Status closed = file_->Close();
  file_.reset();
  metadata_ready_ = false;
  if (!closed.ok()) return closed.WithContext("npz: closing " + path_);
  loaded_ = true;
  ++loads_;
  return Status::OK();
}

Result<SampleView> NpzReader::ReadSample(std::uint64_t index) {
  // A failed load leaves nothing half-open; the next call starts afresh.
  return ReadSampleGuarded(
      "npz", path_, [&] { return ReadSampleImpl(index); }, [&] { AbortLoad(); });
}

Result<SampleView> NpzReader::ReadSampleImpl(std::uint64_t index) {
  if (index >= layout_.num_samples) {
    return SampleIndexOutOfRange(path_, index, layout_.num_samples);
  }
  if (!(keep_in_memory_ && loaded_)) {
    if (!metadata_ready_) {
      IOMIMIC_RETURN_IF_ERROR(BeginLoad());
      if (!numpy::SameArray(load_header_, header_)) {
        return Corrupt("x.npy changed since the reader opened the file " +
                           numpy::ArrayChangeText(header_, load_header_),
                       stream_.begin());
      }
    }
    IOMIMIC_RETURN_IF_ERROR(FinishLoad());
  }
  return Gather(index);
}

Result<SampleView> NpzReader::Gather(std::uint64_t index) {
  SampleView view;
  view.bytes = layout_.sample_bytes;
  if (!decode_ || layout_.sample_bytes == 0) return view;
  IOMIMIC_ASSIGN_OR_RETURN(view.data,
                           numpy::GatherSample(header_, layout_, payload_.data(), index,
                                               /*sample_major=*/false, *storage_, "npz", &sample_));
  return view;
}

}  // namespace iomimic::npz
