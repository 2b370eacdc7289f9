// Writing Parquet files (see parquet_format.h and docs/parquet.md).

#include <algorithm>
#include <cstring>
#include <exception>
#include <new>

#include "parquet_format.h"

namespace iomimic::parquet {
namespace {

// Values per data page: at most this many bytes, at least one row.
constexpr std::uint64_t kPageBytes = std::uint64_t{1} << 20;
// Write requests are this large (a multiple of any back end's alignment).
constexpr std::size_t kChunkBytes = std::size_t{4} << 20;

std::size_t VarintSize(std::uint64_t v) {
  std::size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

void PutVarint(std::vector<std::byte>* out, std::uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<std::byte>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<std::byte>(v));
}

void PutLe32(std::vector<std::byte>* out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<std::byte>(v >> (8 * i)));
}

void StoreLe32(std::byte* at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) at[i] = static_cast<std::byte>(v >> (8 * i));
}

// Bytes of the repetition and definition levels of `rows` rows of a
// fixed-size list column (each with its 4-byte length prefix), as
// AppendLevels writes them: per row an RLE run of one 0 and a run of
// elements - 1 ones (repetition), and one run of rows * elements ones
// (definition), all with bit width 1.
std::uint64_t LevelBytes(const Column& c, std::uint64_t rows) {
  if (!c.list) return 0;
  std::uint64_t rep = VarintSize(1 << 1) + 1;
  if (c.elements > 1) rep += VarintSize((c.elements - 1) << 1) + 1;
  return 4 + rows * rep + 4 + VarintSize((rows * c.elements) << 1) + 1;
}

void AppendLevels(const Column& c, std::uint64_t rows, std::vector<std::byte>* out) {
  if (!c.list) return;
  const std::size_t rep_at = out->size();
  PutLe32(out, 0);
  for (std::uint64_t r = 0; r < rows; ++r) {
    PutVarint(out, 1 << 1);
    out->push_back(std::byte{0});
    if (c.elements > 1) {
      PutVarint(out, (c.elements - 1) << 1);
      out->push_back(std::byte{1});
    }
  }
  StoreLe32(out->data() + rep_at, static_cast<std::uint32_t>(out->size() - rep_at - 4));
  const std::size_t def_at = out->size();
  PutLe32(out, 0);
  PutVarint(out, (rows * c.elements) << 1);
  out->push_back(std::byte{1});
  StoreLe32(out->data() + def_at, static_cast<std::uint32_t>(out->size() - def_at - 4));
}

std::uint64_t ValueBytes(const Column& c, std::uint64_t rows) {
  const std::uint64_t n = rows * c.elements;
  return c.kind == Kind::kBoolean ? (n + 7) / 8 : n * c.value_bytes;
}

// Appends PLAIN values of `rows` rows drawn from `content`.
void AppendValues(const Column& c, std::uint64_t rows, ContentStream& content,
                  std::vector<std::byte>* out, std::vector<std::byte>* scratch) {
  const std::uint64_t n = rows * c.elements;
  const std::size_t at = out->size();
  out->resize(at + static_cast<std::size_t>(ValueBytes(c, rows)));
  std::byte* dst = out->data() + at;
  switch (c.kind) {
    case Kind::kFloat:
    case Kind::kFloat16:
      content.Fill(std::span<std::byte>(dst, static_cast<std::size_t>(n * c.value_bytes)));
      return;
    case Kind::kBoolean: {
      const std::size_t bytes = static_cast<std::size_t>((n + 7) / 8);
      content.Fill(std::span<std::byte>(dst, bytes));
      if (n % 8 != 0) dst[bytes - 1] &= static_cast<std::byte>((1u << (n % 8)) - 1);
      return;
    }
    case Kind::kInteger: {
      if (c.source_bytes == c.value_bytes) {
        content.Fill(std::span<std::byte>(dst, static_cast<std::size_t>(n * c.value_bytes)));
        return;
      }
      // 8- and 16-bit integers are stored as INT32: extend each value.
      scratch->resize(static_cast<std::size_t>(n * c.source_bytes));
      content.Fill(*scratch);
      const auto* src = reinterpret_cast<const std::uint8_t*>(scratch->data());
      for (std::uint64_t i = 0; i < n; ++i) {
        std::int32_t v = 0;
        if (c.bit_width == 8) {
          v = c.is_signed ? static_cast<std::int8_t>(src[i]) : src[i];
        } else {
          const std::uint16_t u = static_cast<std::uint16_t>(src[2 * i] | (src[2 * i + 1] << 8));
          v = c.is_signed ? static_cast<std::int16_t>(u) : u;
        }
        StoreLe32(dst + 4 * i, static_cast<std::uint32_t>(v));
      }
      return;
    }
    case Kind::kString:
    case Kind::kBinary: {
      for (std::uint64_t i = 0; i < n; ++i) {
        StoreLe32(dst, c.byte_length);
        std::span<std::byte> value(dst + 4, c.byte_length);
        content.Fill(value);
        if (c.kind == Kind::kString) {
          for (std::byte& b : value) {
            b = static_cast<std::byte>('a' + static_cast<std::uint8_t>(b) % 26);
          }
        }
        dst += 4 + c.byte_length;
      }
      return;
    }
  }
}

// Streams bytes to a File in kChunkBytes requests at chunk-aligned offsets.
class Output {
 public:
  Output(File* file, std::span<std::byte> buffer) : file_(file), buffer_(buffer) {}

  Status Append(std::span<const std::byte> bytes) {
    if (file_ == nullptr) {
      position_ += bytes.size();
      return Status::OK();
    }
    while (!bytes.empty()) {
      const std::size_t n = std::min(buffer_.size() - fill_, bytes.size());
      std::memcpy(buffer_.data() + fill_, bytes.data(), n);
      fill_ += n;
      position_ += n;
      bytes = bytes.subspan(n);
      if (fill_ == buffer_.size()) IOMIMIC_RETURN_IF_ERROR(Flush());
    }
    return Status::OK();
  }

  Status Flush() {
    if (file_ == nullptr || fill_ == 0) return Status::OK();
    Status s = file_->WriteAt(position_ - fill_, buffer_.first(fill_));
    fill_ = 0;
    if (!s.ok()) return s.WithContext("parquet: writing " + file_->path());
    return s;
  }

  // Size-only mode: counts `n` bytes that are not written.
  void Advance(std::uint64_t n) { position_ += n; }

  std::uint64_t position() const { return position_; }

 private:
  File* file_;
  std::span<std::byte> buffer_;
  std::size_t fill_ = 0;
  std::uint64_t position_ = 0;
};

std::uint64_t Param(const FileSpec& spec, const std::string& key, std::uint64_t fallback) {
  auto it = spec.parameters.find(key);
  if (it == spec.parameters.end() || it->second.empty()) return fallback;
  return std::strtoull(it->second.c_str(), nullptr, 10);
}

}  // namespace

Status WriteParquetFile(Storage* storage, File* file, const FileSpec& spec,
                        const Settings& settings, std::uint64_t* size) {
  auto columns_it = spec.parameters.find("parquet.columns");
  const std::string& text =
      columns_it != spec.parameters.end() ? columns_it->second : settings.columns;
  IOMIMIC_ASSIGN_OR_RETURN(std::vector<Column> columns,
                           ParseColumns(text, spec.sample_bytes(), nullptr));
  const std::uint64_t group_rows =
      std::max<std::uint64_t>(1, Param(spec, "parquet.row_group_size", settings.row_group_size));
  IOMIMIC_ASSIGN_OR_RETURN(Codec codec, CodecFromName(spec.compression));
  const bool dry = file == nullptr;
  if (dry && codec != Codec::kUncompressed) {
    return Status::NotSupported("parquet: the size of a " + spec.compression +
                                "-compressed file depends on its content");
  }

  Buffer chunk;
  if (!dry) {
    Result<Buffer> made = storage->Allocate(kChunkBytes);
    if (!made.ok() || !made->host_accessible()) {
      chunk = Buffer::AllocateHost(kChunkBytes, 4096);
      if (chunk.empty())
        return Status::ResourceExhausted("parquet: cannot allocate a write buffer");
    } else {
      chunk = std::move(made).value();
    }
  }
  Output out(file, dry ? std::span<std::byte>() : chunk.span().first(kChunkBytes));
  IOMIMIC_RETURN_IF_ERROR(out.Append(std::as_bytes(std::span<const char>(kMagic, 4))));

  FileMeta meta;
  meta.schema = SchemaOf(columns);
  meta.num_rows = static_cast<std::int64_t>(spec.num_samples);
  meta.created_by = "iomimic parquet plugin";
  ContentStream content = spec.PayloadContent();
  std::vector<std::byte> body, compressed, header, scratch;
  for (std::uint64_t first = 0; first < spec.num_samples; first += group_rows) {
    const std::uint64_t rows = std::min(group_rows, spec.num_samples - first);
    RowGroupMeta rg;
    rg.num_rows = static_cast<std::int64_t>(rows);
    rg.file_offset = static_cast<std::int64_t>(out.position());
    for (const Column& c : columns) {
      ChunkMeta cm;
      cm.physical = c.physical;
      cm.path = c.list ? std::vector<std::string>{c.name, "list", "element"}
                       : std::vector<std::string>{c.name};
      cm.codec = codec;
      cm.data_page_offset = static_cast<std::int64_t>(out.position());
      const std::uint64_t per_row = std::max<std::uint64_t>(1, c.row_value_bytes());
      const std::uint64_t page_rows = std::max<std::uint64_t>(1, kPageBytes / per_row);
      for (std::uint64_t done = 0; done < rows; done += page_rows) {
        const std::uint64_t n = std::min(page_rows, rows - done);
        PageHeader h;
        h.type = 0;
        h.num_values = static_cast<std::int32_t>(n * c.elements);
        h.encoding = 0;
        std::uint64_t body_size = LevelBytes(c, n) + ValueBytes(c, n);
        std::span<const std::byte> payload;
        if (!dry) {
          body.clear();
          AppendLevels(c, n, &body);
          AppendValues(c, n, content, &body, &scratch);
          body_size = body.size();
          if (codec == Codec::kUncompressed) {
            payload = body;
          } else {
            IOMIMIC_RETURN_IF_ERROR(Compress(codec, spec.compression_level, body, &compressed));
            payload = compressed;
          }
        }
        const std::uint64_t payload_size = dry ? body_size : payload.size();
        if (body_size > INT32_MAX || payload_size > INT32_MAX) {
          return Status::InvalidArgument("parquet: a page of column '" + c.name +
                                         "' would exceed 2 GiB (one row is too large)");
        }
        h.uncompressed_page_size = static_cast<std::int32_t>(body_size);
        h.compressed_page_size = static_cast<std::int32_t>(payload_size);
        header.clear();
        EncodePageHeader(h, &header);
        IOMIMIC_RETURN_IF_ERROR(out.Append(header));
        if (dry) {
          out.Advance(payload_size);
        } else {
          IOMIMIC_RETURN_IF_ERROR(out.Append(payload));
        }
        cm.num_values += h.num_values;
        cm.total_uncompressed_size += static_cast<std::int64_t>(header.size() + body_size);
        cm.total_compressed_size += static_cast<std::int64_t>(header.size() + payload_size);
      }
      rg.total_byte_size += cm.total_uncompressed_size;
      rg.total_compressed_size += cm.total_compressed_size;
      rg.columns.push_back(std::move(cm));
    }
    meta.row_groups.push_back(std::move(rg));
  }
  std::vector<std::byte> footer;
  EncodeFileMeta(meta, &footer);
  PutLe32(&footer, static_cast<std::uint32_t>(footer.size()));
  footer.insert(footer.end(), reinterpret_cast<const std::byte*>(kMagic),
                reinterpret_cast<const std::byte*>(kMagic) + 4);
  IOMIMIC_RETURN_IF_ERROR(out.Append(footer));
  IOMIMIC_RETURN_IF_ERROR(out.Flush());
  if (size != nullptr) *size = out.position();
  return Status::OK();
}

}  // namespace iomimic::parquet
