// The parts of the Parquet file format the parquet plugin writes and reads:
// the column schema built from the manifest (dataset.parquet.columns), the
// footer's FileMetaData and the data page headers, encoded and decoded in
// Thrift's compact protocol (thrift_compact.h), and the page codecs. The
// layout and the field ids are those of the Parquet format specification;
// docs/parquet.md describes what iomimic writes.

#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "iomimic/status.h"

namespace iomimic::parquet {

// "PAR1", at the start and at the end of every file.
inline constexpr char kMagic[4] = {'P', 'A', 'R', '1'};

// Parquet physical types (Type in the specification).
enum class Physical : std::int32_t {
  kBoolean = 0,
  kInt32 = 1,
  kInt64 = 2,
  kInt96 = 3,
  kFloat = 4,
  kDouble = 5,
  kByteArray = 6,
  kFixedLenByteArray = 7,
};

// CompressionCodec values.
enum class Codec : std::int32_t {
  kUncompressed = 0,
  kSnappy = 1,
  kGzip = 2,
  kLzo = 3,
  kBrotli = 4,
  kLz4 = 5,
  kZstd = 6,
  kLz4Raw = 7,
};

// The codec for a manifest's dataset.compression (none, snappy, gzip, lz4,
// zstd); kNotSupported naming the value otherwise.
Result<Codec> CodecFromName(std::string_view name);
std::string CodecName(Codec codec);

// What a column's values are, derived from a dataset.parquet.columns entry.
enum class Kind {
  kInteger,  // INT32/INT64 with an INTEGER logical type
  kFloat16,  // FIXED_LEN_BYTE_ARRAY(2) with the FLOAT16 logical type
  kFloat,    // FLOAT or DOUBLE
  kBoolean,
  kString,  // BYTE_ARRAY, STRING logical type
  kBinary,  // BYTE_ARRAY
};

struct Column {
  std::string name;
  std::string dtype;  // as configured
  bool read = false;  // the manifest's read: flag
  Kind kind = Kind::kFloat;
  Physical physical = Physical::kFloat;
  int bit_width = 32;              // integers: 8, 16, 32 or 64
  bool is_signed = true;           // integers
  std::uint32_t source_bytes = 4;  // random bytes drawn per element
  std::uint32_t value_bytes = 4;   // PLAIN bytes per element (byte arrays: 4 + length)
  std::uint32_t byte_length = 0;   // string/binary: bytes of each value
  bool list = false;               // a fixed-size list of `elements` per row
  std::uint64_t elements = 1;      // elements per row

  // PLAIN bytes of one row's values (booleans: bits, rounded per page).
  std::uint64_t row_value_bytes() const { return value_bytes * elements; }
};

// Parses the text form of dataset.parquet.columns the core hands over
// ("name:dtype:size:read" entries separated by ';', size 0 = absent) into
// columns. An empty text yields the fork's default schema: one column
// "data", a fixed-size list of `default_elements` uint8 values. Unknown
// dtypes become fixed-size float32 lists as in the fork (`warnings` gets a
// line for each).
Result<std::vector<Column>> ParseColumns(std::string_view text, std::uint64_t default_elements,
                                         std::vector<std::string>* warnings);

// One column chunk as the footer describes it.
struct ChunkMeta {
  Physical physical = Physical::kInt32;
  std::vector<std::string> path;  // path_in_schema
  Codec codec = Codec::kUncompressed;
  std::int64_t num_values = 0;
  std::int64_t total_uncompressed_size = 0;
  std::int64_t total_compressed_size = 0;
  std::int64_t data_page_offset = 0;
  std::optional<std::int64_t> dictionary_page_offset;

  // Where the chunk's bytes start: its dictionary page when it has one.
  std::int64_t start() const {
    return dictionary_page_offset && *dictionary_page_offset > 0 &&
                   *dictionary_page_offset < data_page_offset
               ? *dictionary_page_offset
               : data_page_offset;
  }
};

struct RowGroupMeta {
  std::vector<ChunkMeta> columns;
  std::int64_t total_byte_size = 0;
  std::int64_t num_rows = 0;
  std::int64_t file_offset = 0;
  std::int64_t total_compressed_size = 0;
};

// A schema node, in the depth-first order of FileMetaData.schema.
struct SchemaNode {
  std::string name;
  std::optional<Physical> physical;
  std::int32_t type_length = 0;
  std::int32_t repetition = 0;  // 0 required, 1 optional, 2 repeated
  std::int32_t num_children = 0;
  std::optional<std::int32_t> converted_type;
  // Logical type: the union's field id (1 STRING, 3 LIST, 10 INTEGER, 15
  // FLOAT16...), 0 = none; integers also carry their width and sign.
  std::int16_t logical = 0;
  std::int8_t int_bit_width = 0;
  bool int_signed = true;
};

struct FileMeta {
  std::int32_t version = 1;
  std::vector<SchemaNode> schema;
  std::int64_t num_rows = 0;
  std::vector<RowGroupMeta> row_groups;
  std::string created_by;
};

// Appends the compact encoding of `meta` to `out`.
void EncodeFileMeta(const FileMeta& meta, std::vector<std::byte>* out);
// Decodes a footer; kCorruption naming `path` and the footer offset plus the
// position of the first bad byte.
Result<FileMeta> DecodeFileMeta(std::span<const std::byte> bytes, const std::string& path,
                                std::uint64_t footer_offset);

// The schema nodes of `columns` (root first).
std::vector<SchemaNode> SchemaOf(const std::vector<Column>& columns);

// A data page header (DATA_PAGE v1: PLAIN values, RLE levels), or any page
// header on reading.
struct PageHeader {
  std::int32_t type = 0;  // 0 DATA_PAGE, 2 DICTIONARY_PAGE, 3 DATA_PAGE_V2
  std::int32_t uncompressed_page_size = 0;
  std::int32_t compressed_page_size = 0;
  std::int32_t num_values = 0;
  std::int32_t encoding = 0;
  // DATA_PAGE_V2 only: level bytes that precede the (compressed) values.
  std::int32_t v2_levels_bytes = 0;
  bool v2_compressed = true;
};

void EncodePageHeader(const PageHeader& header, std::vector<std::byte>* out);
// Decodes the page header at the start of `bytes`; sets `*header_size`.
// Returns false when the bytes do not hold a complete header.
bool DecodePageHeader(std::span<const std::byte> bytes, PageHeader* header,
                      std::size_t* header_size);

// Compresses `in` with `codec` into `*out` (resized to the compressed size).
Status Compress(Codec codec, int level, std::span<const std::byte> in, std::vector<std::byte>* out);
// Decompresses `in` into `out`, which has the exact uncompressed size.
Status Decompress(Codec codec, std::span<const std::byte> in, std::span<std::byte> out);

}  // namespace iomimic::parquet
