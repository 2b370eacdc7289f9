#include "parquet_meta.h"

#include <lz4.h>
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cstring>

#include "thrift_compact.h"

namespace iomimic::parquet {

using thrift::Type;

Result<Codec> CodecFromName(std::string_view name) {
  if (name == "none" || name.empty()) return Codec::kUncompressed;
  if (name == "snappy") return Codec::kSnappy;
  if (name == "gzip") return Codec::kGzip;
  // LZ4_RAW: the plain LZ4 block format (the older LZ4 codec id has a
  // Hadoop framing that the specification deprecates).
  if (name == "lz4") return Codec::kLz4Raw;
  if (name == "zstd") return Codec::kZstd;
  return Status::NotSupported("parquet: dataset.compression '" + std::string(name) +
                              "' is not a Parquet codec (expected none, snappy, gzip, lz4, zstd)");
}

std::string CodecName(Codec codec) {
  switch (codec) {
    case Codec::kUncompressed:
      return "UNCOMPRESSED";
    case Codec::kSnappy:
      return "SNAPPY";
    case Codec::kGzip:
      return "GZIP";
    case Codec::kLzo:
      return "LZO";
    case Codec::kBrotli:
      return "BROTLI";
    case Codec::kLz4:
      return "LZ4";
    case Codec::kZstd:
      return "ZSTD";
    case Codec::kLz4Raw:
      return "LZ4_RAW";
  }
  return "codec " + std::to_string(static_cast<int>(codec));
}

namespace {

std::vector<std::string_view> Split(std::string_view text, char sep) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  for (;;) {
    const std::size_t at = text.find(sep, start);
    out.push_back(text.substr(start, at == std::string_view::npos ? text.npos : at - start));
    if (at == std::string_view::npos) break;
    start = at + 1;
  }
  return out;
}

void SetInteger(Column* c, int bits, bool is_signed) {
  c->kind = Kind::kInteger;
  c->bit_width = bits;
  c->is_signed = is_signed;
  c->physical = bits == 64 ? Physical::kInt64 : Physical::kInt32;
  c->source_bytes = static_cast<std::uint32_t>(bits / 8);
  c->value_bytes = bits == 64 ? 8 : 4;
}

// Fills the derived fields of `c` from its dtype and size.
void Derive(Column* c, std::uint64_t size, std::vector<std::string>* warnings) {
  const std::string& d = c->dtype;
  if (d == "uint8" || d == "int8" || d == "uint16" || d == "int16" || d == "uint32" ||
      d == "int32" || d == "uint64" || d == "int64") {
    const bool is_signed = d[0] == 'i';
    SetInteger(c, std::stoi(d.substr(is_signed ? 3 : 4)), is_signed);
  } else if (d == "float16") {
    c->kind = Kind::kFloat16;
    c->physical = Physical::kFixedLenByteArray;
    c->source_bytes = c->value_bytes = 2;
  } else if (d == "float32" || d == "float64") {
    c->kind = Kind::kFloat;
    c->physical = d == "float32" ? Physical::kFloat : Physical::kDouble;
    c->source_bytes = c->value_bytes = d == "float32" ? 4 : 8;
  } else if (d == "bool") {
    c->kind = Kind::kBoolean;
    c->physical = Physical::kBoolean;
    c->source_bytes = 1;
    c->value_bytes = 0;  // bit-packed
  } else if (d == "string" || d == "binary") {
    c->kind = d == "string" ? Kind::kString : Kind::kBinary;
    c->physical = Physical::kByteArray;
    c->byte_length = static_cast<std::uint32_t>(size > 0 ? size : 16);
    c->source_bytes = c->byte_length;
    c->value_bytes = 4 + c->byte_length;
    c->elements = 1;
    c->list = false;
    return;
  } else {
    if (d != "list" && warnings != nullptr) {
      warnings->push_back("parquet: column '" + c->name + "' has dtype '" + d +
                          "', which the fork writes as a fixed-size float32 list; so does iomimic");
    }
    c->kind = Kind::kFloat;
    c->physical = Physical::kFloat;
    c->source_bytes = c->value_bytes = 4;
    c->list = true;
    c->elements = size > 0 ? size : 1;
    return;
  }
  c->list = size > 1;
  c->elements = size > 1 ? size : 1;
}

}  // namespace

Result<std::vector<Column>> ParseColumns(std::string_view text, std::uint64_t default_elements,
                                         std::vector<std::string>* warnings) {
  std::vector<Column> columns;
  if (text.empty()) {
    Column c;
    c.name = "data";
    c.dtype = "uint8";
    c.read = true;
    Derive(&c, std::max<std::uint64_t>(2, default_elements), warnings);
    c.elements = std::max<std::uint64_t>(1, default_elements);
    c.list = true;
    columns.push_back(c);
    return columns;
  }
  for (std::string_view entry : Split(text, ';')) {
    const std::vector<std::string_view> f = Split(entry, ':');
    if (f.size() != 4 || f[0].empty()) {
      return Status::InvalidArgument("parquet: bad column entry '" + std::string(entry) +
                                     "' (expected name:dtype:size:read)");
    }
    Column c;
    c.name = std::string(f[0]);
    c.dtype = f[1].empty() ? "float32" : std::string(f[1]);
    std::uint64_t size = 0;
    for (char ch : f[2]) {
      if (ch < '0' || ch > '9') {
        return Status::InvalidArgument("parquet: column '" + c.name + "' has size '" +
                                       std::string(f[2]) + "', not a non-negative integer");
      }
      size = size * 10 + static_cast<std::uint64_t>(ch - '0');
    }
    c.read = f[3] == "1" || f[3] == "true" || f[3] == "True";
    for (const Column& other : columns) {
      if (other.name == c.name) {
        return Status::InvalidArgument("parquet: column '" + c.name + "' is listed twice");
      }
    }
    Derive(&c, size, warnings);
    columns.push_back(std::move(c));
  }
  return columns;
}

std::vector<SchemaNode> SchemaOf(const std::vector<Column>& columns) {
  std::vector<SchemaNode> nodes;
  SchemaNode root;
  root.name = "schema";
  root.num_children = static_cast<std::int32_t>(columns.size());
  nodes.push_back(root);
  for (const Column& c : columns) {
    SchemaNode leaf;
    leaf.physical = c.physical;
    leaf.repetition = 0;
    if (c.kind == Kind::kFloat16) {
      leaf.type_length = 2;
      leaf.logical = 15;
    } else if (c.kind == Kind::kString) {
      leaf.logical = 1;
      leaf.converted_type = 0;  // UTF8
    } else if (c.kind == Kind::kInteger && !(c.bit_width >= 32 && c.is_signed)) {
      leaf.logical = 10;
      leaf.int_bit_width = static_cast<std::int8_t>(c.bit_width);
      leaf.int_signed = c.is_signed;
      // UINT_8..UINT_64 are 11..14, INT_8..INT_64 15..18.
      const int step = c.bit_width == 8 ? 0 : c.bit_width == 16 ? 1 : c.bit_width == 32 ? 2 : 3;
      leaf.converted_type = (c.is_signed ? 15 : 11) + step;
    }
    if (c.list) {
      SchemaNode outer;
      outer.name = c.name;
      outer.num_children = 1;
      outer.converted_type = 3;  // LIST
      outer.logical = 3;
      SchemaNode middle;
      middle.name = "list";
      middle.repetition = 2;
      middle.num_children = 1;
      leaf.name = "element";
      nodes.push_back(outer);
      nodes.push_back(middle);
    } else {
      leaf.name = c.name;
    }
    nodes.push_back(leaf);
  }
  return nodes;
}

namespace {

void EncodeSchemaNode(const SchemaNode& n, bool root, thrift::Writer& w) {
  w.BeginStruct();
  if (n.physical) {
    w.I32(1, static_cast<std::int32_t>(*n.physical));
    if (*n.physical == Physical::kFixedLenByteArray) w.I32(2, n.type_length);
  }
  if (!root) w.I32(3, n.repetition);
  w.String(4, n.name);
  if (!n.physical) w.I32(5, n.num_children);
  if (n.converted_type) w.I32(6, *n.converted_type);
  if (n.logical != 0) {
    w.BeginStructField(10);
    w.BeginStructField(n.logical);
    if (n.logical == 10) {
      w.Byte(1, n.int_bit_width);
      w.Bool(2, n.int_signed);
    }
    w.EndStruct();
    w.EndStruct();
  }
  w.EndStruct();
}

void EncodeChunk(const ChunkMeta& c, thrift::Writer& w) {
  w.BeginStruct();
  w.I64(2, c.start());
  w.BeginStructField(3);
  w.I32(1, static_cast<std::int32_t>(c.physical));
  const bool levels = c.path.size() > 1;
  w.BeginList(2, Type::kI32, levels ? 2 : 1);
  w.ListI32(0);              // PLAIN
  if (levels) w.ListI32(3);  // RLE
  w.BeginList(3, Type::kBinary, c.path.size());
  for (const std::string& p : c.path) w.ListString(p);
  w.I32(4, static_cast<std::int32_t>(c.codec));
  w.I64(5, c.num_values);
  w.I64(6, c.total_uncompressed_size);
  w.I64(7, c.total_compressed_size);
  w.I64(9, c.data_page_offset);
  if (c.dictionary_page_offset) w.I64(11, *c.dictionary_page_offset);
  w.EndStruct();
  w.EndStruct();
}

}  // namespace

void EncodeFileMeta(const FileMeta& meta, std::vector<std::byte>* out) {
  thrift::Writer w(out);
  w.I32(1, meta.version);
  w.BeginList(2, Type::kStruct, meta.schema.size());
  for (std::size_t i = 0; i < meta.schema.size(); ++i) EncodeSchemaNode(meta.schema[i], i == 0, w);
  w.I64(3, meta.num_rows);
  w.BeginList(4, Type::kStruct, meta.row_groups.size());
  std::int16_t ordinal = 0;
  for (const RowGroupMeta& rg : meta.row_groups) {
    w.BeginStruct();
    w.BeginList(1, Type::kStruct, rg.columns.size());
    for (const ChunkMeta& c : rg.columns) EncodeChunk(c, w);
    w.I64(2, rg.total_byte_size);
    w.I64(3, rg.num_rows);
    w.I64(5, rg.file_offset);
    w.I64(6, rg.total_compressed_size);
    w.I16(7, ordinal);
    ordinal = static_cast<std::int16_t>(ordinal + 1);  // wraps past 32767 like other writers'
    w.EndStruct();
  }
  if (!meta.created_by.empty()) w.String(6, meta.created_by);
  w.Stop();
}

namespace {

// Decoding helpers: each returns false on malformed input.
class Decoder {
 public:
  explicit Decoder(thrift::Reader& r) : r_(r) {}

  // Calls fn(id, type) for every field of the struct being read; fn returns
  // false on error and must consume (or Skip) the value.
  template <typename Fn>
  bool Struct(Fn&& fn) {
    r_.EnterStruct();
    for (;;) {
      std::int16_t id = 0;
      Type t;
      if (!r_.Field(&id, &t)) return false;
      if (t == Type::kStop) break;
      if (!fn(id, t)) return false;
    }
    r_.LeaveStruct();
    return true;
  }

  template <typename Fn>
  bool List(Type t, Fn&& fn) {
    if (t != Type::kList) return r_.Skip(t);
    Type element;
    std::size_t n = 0;
    if (!r_.ListHeader(&element, &n)) return false;
    for (std::size_t i = 0; i < n; ++i) {
      if (!fn(element)) return false;
    }
    return true;
  }

  bool I32(Type t, std::int32_t* v) {
    if (t != Type::kI32 && t != Type::kI16 && t != Type::kByte) return r_.Skip(t);
    if (t == Type::kByte) {
      std::int8_t b = 0;
      if (!r_.Byte(&b)) return false;
      *v = b;
      return true;
    }
    return r_.I32(v);
  }
  bool I64(Type t, std::int64_t* v) {
    if (t != Type::kI64 && t != Type::kI32 && t != Type::kI16) return r_.Skip(t);
    return r_.I64(v);
  }
  bool String(Type t, std::string* v) {
    if (t != Type::kBinary) return r_.Skip(t);
    return r_.String(v);
  }

  thrift::Reader& r_;
};

bool DecodeSchemaNode(Decoder& d, SchemaNode* n) {
  return d.Struct([&](std::int16_t id, Type t) {
    std::int32_t v = 0;
    switch (id) {
      case 1:
        if (!d.I32(t, &v)) return false;
        n->physical = static_cast<Physical>(v);
        return true;
      case 2:
        return d.I32(t, &n->type_length);
      case 3:
        return d.I32(t, &n->repetition);
      case 4:
        return d.String(t, &n->name);
      case 5:
        return d.I32(t, &n->num_children);
      case 6:
        if (!d.I32(t, &v)) return false;
        n->converted_type = v;
        return true;
      case 10:
        if (t != Type::kStruct) return d.r_.Skip(t);
        return d.Struct([&](std::int16_t logical, Type lt) {
          n->logical = logical;
          if (logical != 10 || lt != Type::kStruct) return d.r_.Skip(lt);
          return d.Struct([&](std::int16_t f, Type it) {
            if (f == 1 && it == Type::kByte) return d.r_.Byte(&n->int_bit_width);
            if (f == 2) return d.r_.BoolValue(it, &n->int_signed);
            return d.r_.Skip(it);
          });
        });
      default:
        return d.r_.Skip(t);
    }
  });
}

bool DecodeColumnMeta(Decoder& d, ChunkMeta* c) {
  return d.Struct([&](std::int16_t id, Type t) {
    std::int32_t v = 0;
    std::int64_t w = 0;
    switch (id) {
      case 1:
        if (!d.I32(t, &v)) return false;
        c->physical = static_cast<Physical>(v);
        return true;
      case 3:
        return d.List(t, [&](Type e) {
          std::string s;
          if (!d.String(e, &s)) return false;
          c->path.push_back(std::move(s));
          return true;
        });
      case 4:
        if (!d.I32(t, &v)) return false;
        c->codec = static_cast<Codec>(v);
        return true;
      case 5:
        return d.I64(t, &c->num_values);
      case 6:
        return d.I64(t, &c->total_uncompressed_size);
      case 7:
        return d.I64(t, &c->total_compressed_size);
      case 9:
        return d.I64(t, &c->data_page_offset);
      case 11:
        if (!d.I64(t, &w)) return false;
        c->dictionary_page_offset = w;
        return true;
      default:
        return d.r_.Skip(t);
    }
  });
}

bool DecodeRowGroup(Decoder& d, RowGroupMeta* rg) {
  return d.Struct([&](std::int16_t id, Type t) {
    switch (id) {
      case 1:
        return d.List(t, [&](Type e) {
          if (e != Type::kStruct) return d.r_.Skip(e);
          ChunkMeta c;
          bool ok = d.Struct([&](std::int16_t cid, Type ct) {
            if (cid == 3 && ct == Type::kStruct) return DecodeColumnMeta(d, &c);
            return d.r_.Skip(ct);
          });
          rg->columns.push_back(std::move(c));
          return ok;
        });
      case 2:
        return d.I64(t, &rg->total_byte_size);
      case 3:
        return d.I64(t, &rg->num_rows);
      case 5:
        return d.I64(t, &rg->file_offset);
      case 6:
        return d.I64(t, &rg->total_compressed_size);
      default:
        return d.r_.Skip(t);
    }
  });
}

}  // namespace

Result<FileMeta> DecodeFileMeta(std::span<const std::byte> bytes, const std::string& path,
                                std::uint64_t footer_offset) {
  thrift::Reader r(bytes.data(), bytes.size());
  Decoder d(r);
  FileMeta meta;
  meta.version = 0;
  // The top level is a struct without an enclosing field header.
  bool ok = true;
  for (;;) {
    std::int16_t id = 0;
    Type t;
    if (!r.Field(&id, &t)) {
      ok = false;
      break;
    }
    if (t == Type::kStop) break;
    switch (id) {
      case 1:
        ok = d.I32(t, &meta.version);
        break;
      case 2:
        ok = d.List(t, [&](Type e) {
          if (e != Type::kStruct) return r.Skip(e);
          SchemaNode n;
          if (!DecodeSchemaNode(d, &n)) return false;
          meta.schema.push_back(std::move(n));
          return true;
        });
        break;
      case 3:
        ok = d.I64(t, &meta.num_rows);
        break;
      case 4:
        ok = d.List(t, [&](Type e) {
          if (e != Type::kStruct) return r.Skip(e);
          RowGroupMeta rg;
          if (!DecodeRowGroup(d, &rg)) return false;
          meta.row_groups.push_back(std::move(rg));
          return true;
        });
        break;
      case 6:
        ok = d.String(t, &meta.created_by);
        break;
      default:
        ok = r.Skip(t);
    }
    if (!ok) break;
  }
  if (!ok) {
    return Status::Corruption(path + ": the Parquet footer does not decode at offset " +
                              std::to_string(footer_offset + r.position()));
  }
  return meta;
}

void EncodePageHeader(const PageHeader& h, std::vector<std::byte>* out) {
  thrift::Writer w(out);
  w.I32(1, h.type);
  w.I32(2, h.uncompressed_page_size);
  w.I32(3, h.compressed_page_size);
  w.BeginStructField(5);
  w.I32(1, h.num_values);
  w.I32(2, h.encoding);
  w.I32(3, 3);  // definition levels: RLE
  w.I32(4, 3);  // repetition levels: RLE
  w.EndStruct();
  w.Stop();
}

bool DecodePageHeader(std::span<const std::byte> bytes, PageHeader* h, std::size_t* header_size) {
  thrift::Reader r(bytes.data(), bytes.size());
  Decoder d(r);
  bool ok = true;
  for (;;) {
    std::int16_t id = 0;
    Type t;
    if (!r.Field(&id, &t)) return false;
    if (t == Type::kStop) break;
    switch (id) {
      case 1:
        ok = d.I32(t, &h->type);
        break;
      case 2:
        ok = d.I32(t, &h->uncompressed_page_size);
        break;
      case 3:
        ok = d.I32(t, &h->compressed_page_size);
        break;
      case 5:  // DataPageHeader
      case 7:  // DictionaryPageHeader
      case 8:  // DataPageHeaderV2
        if (t != Type::kStruct) {
          ok = r.Skip(t);
          break;
        }
        ok = d.Struct([&](std::int16_t f, Type ft) {
          if (f == 1) return d.I32(ft, &h->num_values);
          if (id == 8 && (f == 5 || f == 6)) {
            std::int32_t n = 0;
            if (!d.I32(ft, &n)) return false;
            h->v2_levels_bytes += n;
            return true;
          }
          if (id == 8 && f == 7) return r.BoolValue(ft, &h->v2_compressed);
          if ((id == 5 && f == 2) || (id == 7 && f == 2) || (id == 8 && f == 4)) {
            return d.I32(ft, &h->encoding);
          }
          return r.Skip(ft);
        });
        break;
      default:
        ok = r.Skip(t);
    }
    if (!ok) return false;
  }
  *header_size = r.position();
  return true;
}

Status Compress(Codec codec, int level, std::span<const std::byte> in,
                std::vector<std::byte>* out) {
  switch (codec) {
    case Codec::kUncompressed:
      out->assign(in.begin(), in.end());
      return Status::OK();
    case Codec::kSnappy: {
      std::size_t n = snappy_max_compressed_length(in.size());
      out->resize(n);
      if (snappy_compress(reinterpret_cast<const char*>(in.data()), in.size(),
                          reinterpret_cast<char*>(out->data()), &n) != SNAPPY_OK) {
        return Status::Internal("parquet: snappy compression failed");
      }
      out->resize(n);
      return Status::OK();
    }
    case Codec::kGzip: {
      z_stream z{};
      if (deflateInit2(&z, std::clamp(level, 1, 9), Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
          Z_OK) {
        return Status::Internal("parquet: deflateInit2 failed");
      }
      out->resize(deflateBound(&z, static_cast<uLong>(in.size())) + 32);
      z.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(in.data()));
      z.avail_in = static_cast<uInt>(in.size());
      z.next_out = reinterpret_cast<Bytef*>(out->data());
      z.avail_out = static_cast<uInt>(out->size());
      const int rc = deflate(&z, Z_FINISH);
      const std::size_t n = z.total_out;
      deflateEnd(&z);
      if (rc != Z_STREAM_END) return Status::Internal("parquet: gzip compression failed");
      out->resize(n);
      return Status::OK();
    }
    case Codec::kLz4Raw: {
      const int bound = LZ4_compressBound(static_cast<int>(in.size()));
      out->resize(static_cast<std::size_t>(bound));
      const int n = LZ4_compress_default(reinterpret_cast<const char*>(in.data()),
                                         reinterpret_cast<char*>(out->data()),
                                         static_cast<int>(in.size()), bound);
      if (n <= 0) return Status::Internal("parquet: lz4 compression failed");
      out->resize(static_cast<std::size_t>(n));
      return Status::OK();
    }
    case Codec::kZstd: {
      out->resize(ZSTD_compressBound(in.size()));
      const std::size_t n =
          ZSTD_compress(out->data(), out->size(), in.data(), in.size(), std::clamp(level, 1, 19));
      if (ZSTD_isError(n)) return Status::Internal("parquet: zstd compression failed");
      out->resize(n);
      return Status::OK();
    }
    default:
      return Status::NotSupported("parquet: cannot write codec " + CodecName(codec));
  }
}

Status Decompress(Codec codec, std::span<const std::byte> in, std::span<std::byte> out) {
  bool ok = false;
  switch (codec) {
    case Codec::kUncompressed:
      ok = in.size() == out.size();
      if (ok && !in.empty()) std::memcpy(out.data(), in.data(), in.size());
      break;
    case Codec::kSnappy: {
      std::size_t n = out.size();
      ok = snappy_uncompress(reinterpret_cast<const char*>(in.data()), in.size(),
                             reinterpret_cast<char*>(out.data()), &n) == SNAPPY_OK &&
           n == out.size();
      break;
    }
    case Codec::kGzip: {
      z_stream z{};
      if (inflateInit2(&z, 15 + 32) != Z_OK) break;
      z.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(in.data()));
      z.avail_in = static_cast<uInt>(in.size());
      z.next_out = reinterpret_cast<Bytef*>(out.data());
      z.avail_out = static_cast<uInt>(out.size());
      const int rc = inflate(&z, Z_FINISH);
      ok = (rc == Z_STREAM_END || (rc == Z_BUF_ERROR && z.avail_out == 0)) &&
           z.total_out == out.size();
      inflateEnd(&z);
      break;
    }
    case Codec::kLz4Raw: {
      const int n = LZ4_decompress_safe(reinterpret_cast<const char*>(in.data()),
                                        reinterpret_cast<char*>(out.data()),
                                        static_cast<int>(in.size()), static_cast<int>(out.size()));
      ok = n >= 0 && static_cast<std::size_t>(n) == out.size();
      break;
    }
    case Codec::kZstd: {
      const std::size_t n = ZSTD_decompress(out.data(), out.size(), in.data(), in.size());
      ok = !ZSTD_isError(n) && n == out.size();
      break;
    }
    default:
      return Status::NotSupported("parquet: cannot decode codec " + CodecName(codec));
  }
  return ok ? Status::OK()
            : Status::Corruption("parquet: " + CodecName(codec) + " data does not decompress");
}

}  // namespace iomimic::parquet
