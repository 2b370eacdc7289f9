#include "csv_writer.h"

#include <isa-l/crc.h>
#include <zlib.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <new>
#include <vector>

#include "csv_codec.h"
#include "csv_values.h"
#include "iomimic/format_helpers.h"
#include "iomimic/guard.h"

namespace iomimic::csv {
namespace {

constexpr std::size_t kMinChunkSize = 4096;
// Text is formatted into a buffer of this size before it is compressed or
// copied into the write chunk.
constexpr std::size_t kTextBufferSize = std::size_t{1} << 20;
// Room kept free in the text buffer: one value, a separator and a row index.
constexpr std::size_t kTextSlack = kMaxValueChars + 24;

std::string Basename(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Streams bytes to a File in chunk-aligned WriteAt requests. With
// `hold_first`, chunk 0 stays in memory until Finish() so bytes in it can be
// patched.
class ChunkWriter final : public ByteSink {
 public:
  ChunkWriter(File& file, const std::string& path, std::span<std::byte> first,
              std::span<std::byte> rest, bool hold_first)
      : file_(file),
        path_(path),
        first_(first),
        rest_(rest),
        hold_first_(hold_first),
        chunk_(first.size()) {}

  std::span<std::byte> Writable() override {
    return (hold_first_ && index_ == 0 ? first_ : rest_).subspan(fill_);
  }

  Status Commit(std::size_t n) override {
    fill_ += n;
    position_ += n;
    if (fill_ < chunk_) return Status::OK();
    if (!(hold_first_ && index_ == 0)) IOMIMIC_RETURN_IF_ERROR(Write(index_ * chunk_, rest_));
    ++index_;
    fill_ = 0;
    return Status::OK();
  }

  Status Append(std::span<const std::byte> bytes) { return AppendToSink(*this, bytes); }
  Status Append(const std::string& s) {
    return Append(std::as_bytes(std::span<const char>(s.data(), s.size())));
  }

  // Overwrites appended bytes that lie in the held first chunk.
  Status Patch(std::uint64_t offset, std::span<const std::byte> bytes) {
    if (!hold_first_ || offset + bytes.size() > chunk_ || offset + bytes.size() > position_) {
      return Status::Internal("csv: patch outside the first chunk of " + path_);
    }
    std::memcpy(first_.data() + offset, bytes.data(), bytes.size());
    return Status::OK();
  }

  // Writes what is still in memory: the partial last chunk, then chunk 0.
  Status Finish() {
    const bool last_is_first = hold_first_ && index_ == 0;
    if (fill_ > 0 && !last_is_first)
      IOMIMIC_RETURN_IF_ERROR(Write(index_ * chunk_, rest_.first(fill_)));
    if (hold_first_) return Write(0, first_.first(index_ > 0 ? chunk_ : fill_));
    return Status::OK();
  }

  std::uint64_t position() const { return position_; }

 private:
  Status Write(std::uint64_t offset, std::span<const std::byte> bytes) {
    if (bytes.empty()) return Status::OK();
    Status s = file_.WriteAt(offset, bytes);
    if (!s.ok()) return s.WithContext("csv: writing " + path_);
    return s;
  }

  File& file_;
  const std::string& path_;
  std::span<std::byte> first_;
  std::span<std::byte> rest_;
  bool hold_first_;
  std::size_t chunk_;
  std::uint64_t index_ = 0;  // chunk being filled
  std::size_t fill_ = 0;
  std::uint64_t position_ = 0;
};

// Where formatted text goes: the file, a compressor, or the zip member.
class TextOut {
 public:
  TextOut(ChunkWriter& file, Compressor* compressor, bool zip)
      : file_(file), compressor_(compressor), zip_(zip) {}

  Status Write(std::span<const char> text) {
    const auto bytes = std::as_bytes(text);
    uncompressed_ += text.size();
    if (zip_)
      crc_ =
          crc32_gzip_refl(crc_, reinterpret_cast<const unsigned char*>(text.data()), text.size());
    if (compressor_ == nullptr) return file_.Append(bytes);
    return compressor_->Write(bytes, file_);
  }
  Status Finish() { return compressor_ == nullptr ? Status::OK() : compressor_->Finish(file_); }

  std::uint64_t uncompressed() const { return uncompressed_; }
  std::uint32_t crc() const { return crc_; }

 private:
  ChunkWriter& file_;
  Compressor* compressor_;
  bool zip_;
  std::uint64_t uncompressed_ = 0;
  std::uint32_t crc_ = 0;
};

// Appends the decimal digits of v; returns the new end.
char* Decimal(std::uint64_t v, char* p) { return std::to_chars(p, p + 20, v).ptr; }

std::size_t ChunkSize(Storage& storage, std::size_t wanted, std::size_t at_least) {
  std::size_t align = storage.capabilities().alignment;
  if (align == 0) align = 1;
  const std::size_t chunk = std::max({wanted, kMinChunkSize, at_least});
  return (chunk + align - 1) / align * align;
}

// An upper bound of the text size, for the ZIP64 decision.
std::uint64_t TextBound(const FileSpec& spec, ValueType type, bool header) {
  const long double columns = static_cast<long double>(spec.sample_elements());
  const long double rows = static_cast<long double>(spec.num_samples);
  long double bound = rows * (columns * (MaxValueChars(type) + 1) + (header ? 21 : 0));
  if (header) bound += columns * 21 + 1;
  return bound >= 1e19L ? std::numeric_limits<std::uint64_t>::max()
                        : static_cast<std::uint64_t>(bound);
}

Status WriteCsvFileImpl(Storage& storage, File& file, const FileSpec& spec,
                        const WriterOptions& options) {
  IOMIMIC_RETURN_IF_ERROR(ValidateSpec(spec));
  IOMIMIC_ASSIGN_OR_RETURN(const ValueType type, ValueTypeOf(spec.element_type));
  IOMIMIC_ASSIGN_OR_RETURN(const Codec codec, CodecFromName(spec.compression));
  const bool zip = codec == Codec::kZip;
  const bool header = options.pandas_header;
  const std::uint64_t columns = spec.sample_elements();

  zip::MemberRecord member;
  member.name = Basename(spec.path);
  member.method = zip::kMethodDeflated;
  zip::LocalZip64 zip64_local = zip::LocalZip64::kOmit;
  if (zip) {
    const std::uint64_t text = TextBound(spec, type, header);
    // Deflate's worst case: stored blocks of 5 bytes per 16383.
    const std::uint64_t stored = text > std::numeric_limits<std::uint64_t>::max() / 2
                                     ? text
                                     : text + 5 * (text / 16383 + 1) + 64;
    // zipfile (writing without force_zip64, as pandas does) adds the ZIP64
    // extra when the member may outgrow the limit.
    if (std::max(text, stored) > options.zip64_limit) zip64_local = zip::LocalZip64::kInclude;
  }
  const std::vector<std::byte> local_header =
      zip ? zip::EncodeLocalHeader(member, zip64_local, options.zip64_limit)
          : std::vector<std::byte>();

  const std::size_t chunk = ChunkSize(storage, options.chunk_size, local_header.size());
  IOMIMIC_ASSIGN_OR_RETURN(Buffer rest, AllocateHostBuffer(storage, chunk, "csv"));
  Buffer first;
  if (zip) {
    IOMIMIC_ASSIGN_OR_RETURN(first, AllocateHostBuffer(storage, chunk, "csv"));
  }
  ChunkWriter out(file, spec.path, (zip ? first : rest).span().first(chunk),
                  rest.span().first(chunk), zip);

  std::unique_ptr<Compressor> compressor;
  if (codec != Codec::kNone) {
    IOMIMIC_ASSIGN_OR_RETURN(compressor, Compressor::Make(codec, spec.compression_level));
  }
  if (zip) IOMIMIC_RETURN_IF_ERROR(out.Append(local_header));
  const std::uint64_t data_begin = out.position();
  TextOut sink(out, compressor.get(), zip);

  std::vector<char> text(kTextBufferSize);
  char* const text_begin = text.data();
  char* const text_limit = text.data() + text.size() - kTextSlack;
  char* const text_end = text.data() + text.size();
  const std::size_t per_value = MaxValueChars(type) + 1;
  char* p = text_begin;
  auto flush = [&]() -> Status {
    Status s =
        sink.Write(std::span<const char>(text_begin, static_cast<std::size_t>(p - text_begin)));
    p = text_begin;
    return s;
  };

  if (header) {
    *p++ = ',';
    for (std::uint64_t c = 0; c < columns; ++c) {
      if (p >= text_limit) IOMIMIC_RETURN_IF_ERROR(flush());
      p = Decimal(c, p);
      *p++ = c + 1 < columns ? ',' : '\n';
    }
  }
  std::vector<std::byte> values(static_cast<std::size_t>(columns * type.size));
  const bool zeros = spec.content.kind == ContentOptions::Kind::kZeros;  // values stay 0
  for (std::uint64_t row = 0; row < spec.num_samples; ++row) {
    if (!zeros) GenerateRow(type, RowSeed(spec, row), values);
    if (header) {
      if (p >= text_limit) IOMIMIC_RETURN_IF_ERROR(flush());
      p = Decimal(row, p);
      *p++ = ',';
    }
    const std::byte* v = values.data();
    for (std::uint64_t left = columns; left > 0;) {
      std::size_t room = static_cast<std::size_t>(text_end - p) / per_value;
      if (room == 0) {
        IOMIMIC_RETURN_IF_ERROR(flush());
        room = static_cast<std::size_t>(text_end - p) / per_value;
      }
      const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(room, left));
      p += FormatValues(type, v, n, p);
      v += n * type.size;
      left -= n;
    }
    p[-1] = '\n';
  }
  IOMIMIC_RETURN_IF_ERROR(flush());
  IOMIMIC_RETURN_IF_ERROR(sink.Finish());

  if (zip) {
    member.crc32 = sink.crc();
    member.uncompressed_size = sink.uncompressed();
    member.compressed_size = out.position() - data_begin;
    if (zip64_local == zip::LocalZip64::kOmit && (member.uncompressed_size > options.zip64_limit ||
                                                  member.compressed_size > options.zip64_limit)) {
      return Status::Internal("csv: zip member of " + spec.path + " outgrew its size estimate");
    }
    const zip::MemberRecord members[] = {member};
    IOMIMIC_RETURN_IF_ERROR(
        out.Append(zip::EncodeDirectoryAndEnd(members, out.position(), options.zip64_limit)));
    IOMIMIC_RETURN_IF_ERROR(
        out.Patch(0, zip::EncodeLocalHeader(member, zip64_local, options.zip64_limit)));
  }
  return out.Finish();
}

}  // namespace

Status ValidateSpec(const FileSpec& spec) {
  if (spec.sample_shape.empty()) return Status::InvalidArgument("csv: sample_shape is empty");
  std::uint64_t columns = 1;
  for (std::uint64_t d : spec.sample_shape) {
    if (d == 0) return Status::InvalidArgument("csv: sample_shape has a zero dimension");
    if (columns > (std::uint64_t{1} << 40) / d) {
      return Status::InvalidArgument("csv: more than 2^40 values per row");
    }
    columns *= d;
  }
  if (spec.num_samples == 0) return Status::InvalidArgument("csv: num_samples must be at least 1");
  IOMIMIC_RETURN_IF_ERROR(ValueTypeOf(spec.element_type).status());
  IOMIMIC_RETURN_IF_ERROR(CodecFromName(spec.compression).status());
  return Status::OK();
}

Status WriteCsvFile(Storage& storage, File& file, const FileSpec& spec,
                    const WriterOptions& options) {
  return Guard("csv", "writing", spec.path,
               [&]() -> Status { return WriteCsvFileImpl(storage, file, spec, options); });
}

}  // namespace iomimic::csv
