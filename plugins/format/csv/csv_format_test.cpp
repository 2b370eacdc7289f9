// Tests of the csv format plugin: value text, the parser, compression,
// writing, reading (access pattern, keep_in_memory, decode off) and
// corruption handling.
// Cases every format shares (an index past the end, a missing file, a reader
// without a storage) run in the format conformance suite
// (tests/conformance/format_conformance_test.cpp).

#include "csv_format.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "csv_codec.h"
#include "csv_parse.h"
#include "csv_reader.h"
#include "csv_values.h"
#include "csv_writer.h"
#include "iomimic/iomimic.h"
#include "iomimic/testing/file_spec.h"
#include "iomimic/testing/format_test_support.h"
#include "iomimic/testing/memory_storage.h"
#include "iomimic/testing/posix_test_storage.h"
#include "zip/zip_records.h"

extern "C" const IomimicPluginDescriptor iomimic_plugin_descriptor;

namespace iomimic::csv {
namespace {

// The SDK's in-memory test storage (iomimic/testing/memory_storage.h).
using MemStorage = testing::MemoryStorage;
using Request = testing::StorageRequest;

FileSpec MakeSpec(const std::string& dtype, std::vector<std::uint64_t> shape, std::uint64_t samples,
                  std::uint64_t seed, const std::string& compression = "none",
                  const std::string& path = "/data/train/t.csv") {
  return ::iomimic::testing::TestFileSpec(dtype, std::move(shape), samples, seed, path,
                                          compression);
}

Result<std::unique_ptr<CsvReader>> OpenCsv(const std::string& path, const ReaderOptions& options) {
  Result<std::unique_ptr<FileReader>> r = CsvReader::Open(path, options);
  if (!r.ok()) return r.status();
  return std::unique_ptr<CsvReader>(static_cast<CsvReader*>(r->release()));
}

template <typename T>
T LoadAs(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// Checks that `view` is row `row` of `spec` as pandas would return it.
void CheckRow(const FileSpec& spec, std::uint64_t row, const SampleView& view, TableKind kind) {
  const ValueType type = *ValueTypeOf(spec.element_type);
  const std::size_t columns = static_cast<std::size_t>(spec.sample_elements());
  std::vector<std::byte> ref(columns * type.size);
  GenerateRow(type, RowSeed(spec, row), ref);
  if (type.kind == ValueKind::kBool) {
    REQUIRE(kind == TableKind::kBool);
    REQUIRE(view.bytes == columns);
    CHECK(std::memcmp(view.data.data(), ref.data(), columns) == 0);
    return;
  }
  REQUIRE(view.bytes == columns * 8);
  REQUIRE(view.data.size() == columns * 8);
  std::size_t bad = 0;
  for (std::size_t c = 0; c < columns; ++c) {
    const std::byte* r = ref.data() + c * type.size;
    const std::uint64_t slot = LoadAs<std::uint64_t>(view.data.data() + c * 8);
    bool same = false;
    switch (type.kind) {
      case ValueKind::kUnsigned: {
        std::uint64_t v = 0;
        std::memcpy(&v, r, type.size);
        same = (kind == TableKind::kInt64 || kind == TableKind::kUInt64) && slot == v;
        break;
      }
      case ValueKind::kSigned: {
        std::int64_t v = 0;
        switch (type.size) {
          case 1:
            v = LoadAs<std::int8_t>(r);
            break;
          case 2:
            v = LoadAs<std::int16_t>(r);
            break;
          case 4:
            v = LoadAs<std::int32_t>(r);
            break;
          default:
            v = LoadAs<std::int64_t>(r);
            break;
        }
        same = kind == TableKind::kInt64 && static_cast<std::int64_t>(slot) == v;
        break;
      }
      case ValueKind::kFloat: {
        double d;
        std::memcpy(&d, &slot, 8);
        if (type.size == 8) same = d == LoadAs<double>(r);
        if (type.size == 4) same = static_cast<float>(d) == LoadAs<float>(r);
        if (type.size == 2) same = DoubleToHalf(d) == LoadAs<std::uint16_t>(r);
        same = same && kind == TableKind::kFloat64;
        break;
      }
      case ValueKind::kBool:
        break;
    }
    if (!same) ++bad;
  }
  CHECK_MESSAGE(bad == 0, bad << " values of row " << row << " differ");
}

// Reads every sample in `order` and checks it.
void CheckSamples(Format& format, Storage& storage, const FileSpec& spec, bool keep,
                  std::uint64_t transfer, const std::vector<std::uint64_t>& order) {
  Result<std::unique_ptr<CsvReader>> reader =
      OpenCsv(spec.path, testing::TestReaderOptions(&storage, true, keep, transfer));
  REQUIRE_MESSAGE(reader.ok(), reader.status().ToString());
  REQUIRE((*reader)->num_samples() == spec.num_samples);
  REQUIRE((*reader)->table().columns == spec.sample_elements());
  for (std::uint64_t i : order) {
    Result<SampleView> sample = (*reader)->ReadSample(i);
    REQUIRE_MESSAGE(sample.ok(), sample.status().ToString());
    CheckRow(spec, i, *sample, (*reader)->table().kind);
  }
}

std::string Text(std::span<const std::byte> b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

std::vector<std::byte> Bytes(const std::string& s) {
  std::vector<std::byte> out(s.size());
  std::memcpy(out.data(), s.data(), s.size());
  return out;
}

void CheckCorruption(const Status& s, const std::string& path, const std::string& fragment = "") {
  CHECK_MESSAGE(testing::IsCorruptionNaming(s, path, fragment, "offset "), s.ToString());
}

std::string Format1(ValueType type, const void* value) {
  char out[kMaxValueChars];
  return std::string(out, FormatValue(type, static_cast<const std::byte*>(value), out));
}

std::string FormatD(double v) {
  char out[kMaxValueChars];
  return std::string(out, FormatDouble(v, out));
}
std::string FormatF(float v) {
  char out[kMaxValueChars];
  return std::string(out, FormatFloat(v, out));
}
std::string FormatH(std::uint16_t v) {
  char out[kMaxValueChars];
  return std::string(out, FormatHalf(v, out));
}

double Parse(const std::string& s) {
  double d = 0;
  REQUIRE(std::from_chars(s.data(), s.data() + s.size(), d).ec == std::errc());
  return d;
}

// Parses `text` fed in pieces of `piece` bytes.
Status ParseText(const std::string& text, Table* table, std::size_t piece = 0,
                 bool count_only = false, bool* header = nullptr) {
  static const std::string kPath = "/p.csv";
  CsvParser parser(kPath, "file", count_only, table);
  if (piece == 0) piece = text.size() + 1;
  for (std::size_t at = 0; at < text.size(); at += piece) {
    IOMIMIC_RETURN_IF_ERROR(
        parser.Feed(std::span<const char>(text).subspan(at, std::min(piece, text.size() - at))));
  }
  IOMIMIC_RETURN_IF_ERROR(parser.Finish());
  if (header != nullptr) *header = parser.has_header();
  return Status::OK();
}

double SlotDouble(const Table& t, std::size_t i) {
  double d;
  std::memcpy(&d, &t.slots[i], 8);
  return d;
}

const std::vector<std::string> kCodecs = {"none", "gzip", "bz2", "xz", "zip"};

// ---------------------------------------------------------------------------
// Values.

TEST_CASE("float text follows Python's repr") {
  CHECK(FormatD(0.0) == "0.0");
  CHECK(FormatD(0.5) == "0.5");
  CHECK(FormatD(1.0) == "1.0");
  CHECK(FormatD(0.1) == "0.1");
  CHECK(FormatD(123.456) == "123.456");
  CHECK(FormatD(0.0001) == "0.0001");
  CHECK(FormatD(0.00012345) == "0.00012345");
  CHECK(FormatD(1e-05) == "1e-05");
  CHECK(FormatD(1.5e-07) == "1.5e-07");
  CHECK(FormatD(1e15) == "1000000000000000.0");
  CHECK(FormatD(1e16) == "1e+16");
  CHECK(FormatD(1.2345e100) == "1.2345e+100");
  CHECK(FormatD(-2.5) == "-2.5");
  CHECK(FormatD(0.30000000000000004) == "0.30000000000000004");
  CHECK(FormatD(std::numeric_limits<double>::denorm_min()) == "5e-324");
  CHECK(FormatD(-std::numeric_limits<double>::max()) == "-1.7976931348623157e+308");
  CHECK(FormatD(std::nan("")) == "nan");
  CHECK(FormatD(-INFINITY) == "-inf");
  // float32: numpy's shortest repr of the float.
  CHECK(FormatF(0.1f) == "0.1");
  CHECK(FormatF(16777216.0f) == "16777216.0");
  CHECK(FormatF(1e-10f) == "1e-10");
  CHECK(FormatF(0.33333334f) == "0.33333334");
  // float16: numpy prints np.float16(0.1) as 0.1 and np.float16(65504) as 65500.0.
  CHECK(FormatH(DoubleToHalf(0.1)) == "0.1");
  CHECK(FormatH(0x3c00) == "1.0");
  CHECK(FormatH(0x7bff) == "65500.0");
  CHECK(FormatH(0x0001) == "6e-08");
  CHECK(FormatH(0x0000) == "0.0");
  // At a power of two the shortest text is not the rounded one: numpy prints
  // np.float16(2**-6) as 0.01563 (0.01562 would read back as its neighbour).
  CHECK(FormatH(0x2400) == "0.01563");
  CHECK(FormatH(0x3555) == "0.3333");
  CHECK(FormatH(0x7c00) == "inf");
}

TEST_CASE("binary16 conversions") {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const std::uint16_t bits = static_cast<std::uint16_t>(h);
    const float f = HalfToFloat(bits);
    if (std::isnan(f)) continue;
    CHECK(DoubleToHalf(f) == bits);
    // Every finite half has text that reads back to it.
    CHECK_MESSAGE(DoubleToHalf(Parse(FormatH(bits))) == bits, FormatH(bits));
  }
  CHECK(DoubleToHalf(1.0 + 0x1p-11) == 0x3c00);      // tie: to even
  CHECK(DoubleToHalf(1.0 + 3 * 0x1p-11) == 0x3c02);  // tie: to even (up)
  CHECK(DoubleToHalf(65520.0) == 0x7c00);            // rounds to infinity
  CHECK(DoubleToHalf(0x1p-25) == 0x0000);            // half of the smallest subnormal: to even
  CHECK(DoubleToHalf(0x1.8p-25) == 0x0001);
  CHECK(DoubleToHalf(-2.0) == 0xc000);
}

TEST_CASE("random floats read back exactly through float64") {
  Xoshiro256 rng(7);
  for (int i = 0; i < 200000; ++i) {
    const std::uint64_t u = rng.Next();
    double d;
    std::memcpy(&d, &u, 8);
    if (std::isfinite(d)) CHECK(Parse(FormatD(d)) == d);
    const std::uint32_t u32 = static_cast<std::uint32_t>(u >> 32);
    float f;
    std::memcpy(&f, &u32, 4);
    if (std::isfinite(f)) CHECK(static_cast<float>(Parse(FormatF(f))) == f);
  }
}

TEST_CASE("integer and bool text") {
  const ValueType u8{ValueKind::kUnsigned, 1}, i8{ValueKind::kSigned, 1};
  const ValueType u64{ValueKind::kUnsigned, 8}, i64{ValueKind::kSigned, 8};
  const ValueType i16{ValueKind::kSigned, 2}, u32{ValueKind::kUnsigned, 4};
  const ValueType b{ValueKind::kBool, 1};
  for (int v = 0; v < 256; ++v) {
    const std::uint8_t x = static_cast<std::uint8_t>(v);
    CHECK(Format1(u8, &x) == std::to_string(v));
    CHECK(Format1(i8, &x) == std::to_string(static_cast<std::int8_t>(x)));
  }
  const std::uint64_t big = std::numeric_limits<std::uint64_t>::max();
  const std::int64_t small = std::numeric_limits<std::int64_t>::min();
  const std::int16_t minus = -32768;
  const std::uint32_t u32max = 4294967295u;
  CHECK(Format1(u64, &big) == "18446744073709551615");
  CHECK(Format1(i64, &small) == "-9223372036854775808");
  CHECK(Format1(i16, &minus) == "-32768");
  CHECK(Format1(u32, &u32max) == "4294967295");
  const std::uint8_t t = 1, f = 0;
  CHECK(Format1(b, &t) == "True");
  CHECK(Format1(b, &f) == "False");
  for (const ValueType& type : {u8, i8, u64, i64, i16, u32, b}) {
    CHECK(MaxValueChars(type) <= kMaxValueChars);
  }
}

TEST_CASE("value types and generated rows") {
  CHECK(ValueTypeOf(*ElementType::FromName("uint8"))->kind == ValueKind::kUnsigned);
  CHECK(ValueTypeOf(*ElementType::FromName("int32"))->size == 4);
  CHECK(ValueTypeOf(*ElementType::FromName("float16"))->kind == ValueKind::kFloat);
  CHECK(ValueTypeOf(*ElementType::FromName("bool"))->kind == ValueKind::kBool);
  CHECK(ValueTypeOf(ElementType{"complex64", "<c8", 8}).status().code() ==
        StatusCode::kInvalidArgument);
  // Floats are uniform in [0, 1) on the type's grid.
  std::vector<std::byte> row(1000 * 8);
  GenerateRow({ValueKind::kFloat, 8}, 3, row);
  for (std::size_t i = 0; i < 1000; ++i) {
    const double d = LoadAs<double>(row.data() + 8 * i);
    CHECK(d >= 0.0);
    CHECK(d < 1.0);
  }
  GenerateRow({ValueKind::kFloat, 2}, 3, std::span<std::byte>(row).first(2000));
  for (std::size_t i = 0; i < 1000; ++i) {
    const float h = HalfToFloat(LoadAs<std::uint16_t>(row.data() + 2 * i));
    CHECK(h >= 0.0f);
    CHECK(h < 1.0f);
    CHECK(std::ldexp(h, 11) == std::floor(std::ldexp(h, 11)));
  }
  // Same seed, same row.
  std::vector<std::byte> a(64), b2(64);
  GenerateRow({ValueKind::kUnsigned, 8}, 9, a);
  GenerateRow({ValueKind::kUnsigned, 8}, 9, b2);
  CHECK(a == b2);
}

// ---------------------------------------------------------------------------
// Parser.

TEST_CASE("parser: rows, pieces, line ends, blank lines") {
  const std::string text = "1,2,3\r\n\n4,5,6\n\n7,8,9";
  for (std::size_t piece : {0, 1, 2, 3, 5, 7}) {
    Table t;
    REQUIRE(ParseText(text, &t, piece).ok());
    CHECK(t.rows == 3);
    CHECK(t.columns == 3);
    CHECK(t.kind == TableKind::kInt64);
    CHECK(t.slots == std::vector<std::uint64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9});
  }
  Table counted;
  REQUIRE(ParseText(text, &counted, 4, true).ok());
  CHECK(counted.rows == 3);
  CHECK(counted.columns == 3);
  CHECK(counted.slots.empty());
}

TEST_CASE("parser: pandas header and index column") {
  Table t;
  bool header = false;
  REQUIRE(ParseText(",0,1\n0,10,-11\n1,12,13\n", &t, 3, false, &header).ok());
  CHECK(header);
  CHECK(t.rows == 2);
  CHECK(t.columns == 2);
  CHECK(static_cast<std::int64_t>(t.slots[1]) == -11);
  CHECK(t.slots[3] == 13);
}

TEST_CASE("parser: dtype inference like pandas") {
  Table t;
  REQUIRE(ParseText("True,False\nFalse,True\n", &t).ok());
  CHECK(t.kind == TableKind::kBool);
  CHECK(t.slots == std::vector<std::uint64_t>{1, 0, 0, 1});

  REQUIRE(ParseText("1,2\n3,4.5\n", &t).ok());
  CHECK(t.kind == TableKind::kFloat64);
  CHECK(SlotDouble(t, 0) == 1.0);
  CHECK(SlotDouble(t, 3) == 4.5);

  REQUIRE(ParseText("1,2\n18446744073709551615,0\n", &t).ok());
  CHECK(t.kind == TableKind::kUInt64);
  CHECK(t.slots[2] == std::numeric_limits<std::uint64_t>::max());

  REQUIRE(ParseText("1,-2\n18446744073709551615,0\n", &t).ok());
  CHECK(t.kind == TableKind::kFloat64);
  CHECK(SlotDouble(t, 1) == -2.0);

  REQUIRE(ParseText("18446744073709551615\n-1\n", &t).ok());
  CHECK(t.kind == TableKind::kFloat64);

  REQUIRE(ParseText("-9223372036854775808,+7\n", &t).ok());
  CHECK(t.kind == TableKind::kInt64);
  CHECK(static_cast<std::int64_t>(t.slots[0]) == std::numeric_limits<std::int64_t>::min());
  CHECK(t.slots[1] == 7);

  REQUIRE(ParseText("1e-05,nan,inf,-0.5,99999999999999999999999\n", &t).ok());
  CHECK(t.kind == TableKind::kFloat64);
  CHECK(SlotDouble(t, 0) == 1e-05);
  CHECK(std::isnan(SlotDouble(t, 1)));
  CHECK(std::isinf(SlotDouble(t, 2)));
  CHECK(SlotDouble(t, 4) == 1e23);
}

TEST_CASE("parser: errors name the line and the offset") {
  struct Case {
    std::string text;
    std::string fragment;
  };
  const std::vector<Case> cases = {
      {"1,2\n3,x4\n", "line 2 at offset 6 of the file: malformed number 'x4' in column 1"},
      {"1,2\n3,,\n", "line 2 at offset 6 of the file: empty field in column 1"},
      {"1,2,3\n4,5\n",
       "line 2 at offset 6 of the file: the row has 2 fields but the first row has 3"},
      {"1,2\n4,5,6\n", "line 2 at offset 8 of the file: more than the 2 fields"},
      {"1,2\nTrue,3\n", "line 2 at offset 4 of the file: value 'True' mixes booleans and numbers"},
      {"True\n1\n", "line 2 at offset 5 of the file: value '1' mixes booleans and numbers"},
      {"1.5.5\n", "line 1 at offset 0 of the file: malformed number '1.5.5'"},
      {"1,2\n3,4e\n", "malformed number '4e'"},
      {"\n\n", "no data rows"},
      {"", "no data rows"},
      {",\n", "no data rows"},
  };
  for (const Case& c : cases) {
    Table t;
    Status s = ParseText(c.text, &t, 2);
    CheckCorruption(s, "/p.csv", c.fragment);
  }
}

// ---------------------------------------------------------------------------
// Plugin surface.

TEST_CASE("this format's traits and options") {
  CHECK(testing::DescribeFormatPlugin(iomimic_plugin_descriptor) ==
        "name=csv capabilities=host_decode,multi_sample "
        "options=pandas_header:bool=false | format name=csv extension=csv "
        "multi_sample_files=1 partial_reads=0 needs_host_decode=1 "
        "predictable_size=0 streamed=0 element_type=");

  PluginContext ctx;
  Status error;
  auto format = testing::CreateThroughDescriptor<CsvFormat>(iomimic_plugin_descriptor, ctx, &error);
  REQUIRE_MESSAGE(format != nullptr, error.ToString());
  CHECK_FALSE(format->options().pandas_header);
  CHECK(format->ExpectedFileSize(MakeSpec("uint8", {4}, 2, 1)).status().code() ==
        StatusCode::kNotSupported);
  format.reset();

  ctx.options = PluginOptions("format plugin 'csv'", {{"pandas_header", "true"}});
  void* object = iomimic_plugin_descriptor.create(&ctx, &error);
  REQUIRE(object != nullptr);
  CHECK(static_cast<CsvFormat*>(object)->options().pandas_header);
  iomimic_plugin_descriptor.destroy(object);
}

TEST_CASE("validate") {
  CsvFormat format;
  for (const std::string& codec : kCodecs)
    CHECK(format.Validate(MakeSpec("uint8", {3, 3}, 2, 1, codec)).ok());
  CHECK(format.Validate(MakeSpec("float16", {3}, 2, 1)).ok());
  CHECK(format.Validate(MakeSpec("uint8", {3}, 2, 1, "lzf")).code() == StatusCode::kNotSupported);
  CHECK(format.Validate(MakeSpec("uint8", {}, 2, 1)).code() == StatusCode::kInvalidArgument);
  CHECK(format.Validate(MakeSpec("uint8", {3, 0}, 2, 1)).code() == StatusCode::kInvalidArgument);
  CHECK(format.Validate(MakeSpec("uint8", {3}, 0, 1)).code() == StatusCode::kInvalidArgument);
  CHECK(format.Validate(MakeSpec("uint8", {1u << 21, 1u << 21}, 1, 1)).code() ==
        StatusCode::kInvalidArgument);
}

// ---------------------------------------------------------------------------
// Writing.

TEST_CASE("uncompressed text is exactly the formatted rows") {
  for (bool header : {false, true}) {
    WriterOptions options;
    options.pandas_header = header;
    CsvFormat format(options);
    MemStorage storage;
    FileSpec spec = MakeSpec("int16", {2, 3}, 4, 5);
    REQUIRE(testing::WriteSpec(format, storage, spec).ok());
    const ValueType type{ValueKind::kSigned, 2};
    std::string expected = header ? ",0,1,2,3,4,5\n" : "";
    for (std::uint64_t r = 0; r < 4; ++r) {
      std::vector<std::byte> values(12);
      GenerateRow(type, RowSeed(spec, r), values);
      if (header) expected += std::to_string(r) + ",";
      for (int c = 0; c < 6; ++c) {
        expected += std::to_string(LoadAs<std::int16_t>(values.data() + 2 * c));
        expected += c < 5 ? "," : "\n";
      }
    }
    CHECK(storage.Text(spec.path) == expected);
  }
}

TEST_CASE("content zeros writes zero values of the element type") {
  CsvFormat format;
  MemStorage storage;
  for (const auto& [dtype, line] : {std::pair<const char*, const char*>{"int16", "0,0,0\n"},
                                    {"float32", "0.0,0.0,0.0\n"},
                                    {"bool", "False,False,False\n"}}) {
    FileSpec spec = MakeSpec(dtype, {3}, 2, 5);
    spec.content.kind = ContentOptions::Kind::kZeros;
    REQUIRE(testing::WriteSpec(format, storage, spec).ok());
    CHECK(storage.Text(spec.path) == std::string(line) + line);
  }
}

TEST_CASE("compressed files carry each codec's magic and decompress to the plain text") {
  MemStorage storage;
  CsvFormat format;
  FileSpec plain = MakeSpec("uint8", {20, 20}, 6, 3, "none", "/w/plain.csv");
  REQUIRE(testing::WriteSpec(format, storage, plain).ok());
  const std::string text = storage.Text(plain.path);
  for (const std::string& codec : kCodecs) {
    FileSpec spec = plain;
    spec.compression = codec;
    spec.path = "/w/" + codec + ".csv";
    REQUIRE(testing::WriteSpec(format, storage, spec).ok());
    const std::vector<std::byte> bytes = storage.Bytes(spec.path);
    CHECK(std::string(CodecName(SniffCodec(bytes))) == codec);
    if (codec == "gzip") {
      // zlib's own gzip reader agrees.
      std::string out(text.size() + 16, '\0');
      z_stream z{};
      REQUIRE(inflateInit2(&z, 16 + MAX_WBITS) == Z_OK);
      z.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(bytes.data()));
      z.avail_in = static_cast<uInt>(bytes.size());
      z.next_out = reinterpret_cast<Bytef*>(out.data());
      z.avail_out = static_cast<uInt>(out.size());
      CHECK(inflate(&z, Z_FINISH) == Z_STREAM_END);
      out.resize(z.total_out);
      inflateEnd(&z);
      CHECK(out == text);
    }
    if (codec != "none") CHECK(bytes.size() < text.size());
  }
}

TEST_CASE("zip container: one member named like the file, sizes and CRC") {
  MemStorage storage;
  CsvFormat format;
  FileSpec plain = MakeSpec("float32", {7, 9}, 5, 2, "none", "/z/a.csv");
  REQUIRE(testing::WriteSpec(format, storage, plain).ok());
  const std::string text = storage.Text(plain.path);
  for (std::uint64_t limit : {zip::kZip64Limit, std::uint64_t{0}}) {
    WriterOptions options;
    options.zip64_limit = limit;
    options.chunk_size = 4096;
    CsvFormat zformat(options);
    FileSpec spec = plain;
    spec.compression = "zip";
    spec.path = "/z/img_1_of_2.csv";
    REQUIRE(testing::WriteSpec(zformat, storage, spec).ok());
    const std::vector<std::byte> bytes = storage.Bytes(spec.path);
    const std::span<const std::byte> all(bytes);
    const std::uint64_t end_offset = bytes.size() - zip::kEndOfCentralDirSize;
    Result<zip::EndRecord> dir =
        zip::ParseEndRecord(all.last(zip::kEndOfCentralDirSize), end_offset);
    REQUIRE(dir.ok());
    // With the limit at 0 the directory's place is in the ZIP64 end record.
    const std::uint64_t locator_offset = end_offset - zip::kZip64LocatorSize;
    const bool zip64_end = zip::IsZip64Locator(all.subspan(locator_offset));
    CHECK(zip64_end == (limit == 0));
    if (zip64_end) {
      const std::uint64_t record_offset = locator_offset - zip::kZip64EndOfCentralDirSize;
      REQUIRE(zip::ApplyZip64EndRecord(all.subspan(record_offset), record_offset, &*dir).ok());
    }
    CHECK(dir->entries == 1);
    std::size_t pos = 0;
    Result<zip::MemberRecord> m = zip::ParseCentralEntry(
        all.subspan(dir->directory_offset, dir->directory_size), &pos, dir->directory_offset);
    REQUIRE(m.ok());
    CHECK(m->name == "img_1_of_2.csv");
    CHECK(m->method == zip::kMethodDeflated);
    CHECK(m->uncompressed_size == text.size());
    CHECK(m->crc32 == crc32_z(0, reinterpret_cast<const Bytef*>(text.data()), text.size()));
    // The patched local header agrees with the directory.
    const std::vector<std::byte> local = zip::EncodeLocalHeader(
        *m, limit == 0 ? zip::LocalZip64::kInclude : zip::LocalZip64::kOmit, limit);
    CHECK(Text(all.first(local.size())) == Text(local));
    CHECK((limit == 0) == (LoadAs<std::uint16_t>(bytes.data() + 28) == 20));  // ZIP64 extra
    CheckSamples(zformat, storage, spec, true, 0, {0, 1, 2, 3, 4});
  }
}

TEST_CASE("writes are chunk-aligned") {
  WriterOptions options;
  options.chunk_size = 4096;
  CsvFormat format(options);
  MemStorage storage;
  for (const std::string& codec : {std::string("none"), std::string("zip")}) {
    FileSpec spec = MakeSpec("uint16", {50, 50}, 8, 1, codec, "/a/" + codec + ".csv");
    storage.SetLogging(true);
    REQUIRE(testing::WriteSpec(format, storage, spec).ok());
    std::vector<Request> log = storage.TakeLog();
    storage.SetLogging(false);
    const std::uint64_t size = storage.Bytes(spec.path).size();
    REQUIRE(log.size() == (size + 4095) / 4096);
    std::vector<std::uint64_t> offsets;
    for (const Request& r : log) {
      CHECK(r.write);
      CHECK(r.offset % 4096 == 0);
      CHECK(r.length == std::min<std::uint64_t>(4096, size - r.offset));
      offsets.push_back(r.offset);
    }
    if (codec == "zip") CHECK(offsets.back() == 0);  // the patched first chunk goes last
  }
}

TEST_CASE("same seed, same bytes, for every codec") {
  CsvFormat format;
  MemStorage storage;
  for (const std::string& codec : kCodecs) {
    FileSpec a = MakeSpec("uint8", {16, 16}, 3, 11, codec, "/s/a.csv");
    FileSpec b = a;
    b.path = "/s/b.csv";
    FileSpec c = a;
    c.path = "/s/c.csv";
    c.seed = 12;
    REQUIRE(testing::WriteSpec(format, storage, a).ok());
    REQUIRE(testing::WriteSpec(format, storage, b).ok());
    REQUIRE(testing::WriteSpec(format, storage, c).ok());
    if (codec != "zip")
      CHECK(storage.Bytes(a.path) == storage.Bytes(b.path));  // zip names the member
    CHECK(storage.Bytes(a.path) != storage.Bytes(c.path));
  }
}

// ---------------------------------------------------------------------------
// Reading.

TEST_CASE("round trip: dtypes, codecs, layouts, transfer sizes, keep_in_memory") {
  const std::vector<std::pair<std::string, std::vector<std::uint64_t>>> types = {
      {"uint8", {9, 11}}, {"int8", {5}},       {"uint16", {3, 4}}, {"int16", {7}},
      {"uint32", {6}},    {"int32", {2, 2}},   {"uint64", {13}},   {"int64", {4}},
      {"float16", {33}},  {"float32", {5, 5}}, {"float64", {17}},  {"bool", {10}},
  };
  for (bool header : {false, true}) {
    WriterOptions options;
    options.pandas_header = header;
    options.chunk_size = 4096;
    CsvFormat format(options);
    MemStorage storage;
    std::uint64_t seed = 1;
    for (const auto& [dtype, shape] : types) {
      for (const std::string& codec : kCodecs) {
        FileSpec spec =
            MakeSpec(dtype, shape, 1 + seed % 7, seed, codec, "/r/" + dtype + "_" + codec + ".csv");
        ++seed;
        REQUIRE(testing::WriteSpec(format, storage, spec).ok());
        for (std::uint64_t transfer : {0ull, 16ull, 64ull, 1000ull}) {
          for (bool keep : {false, true}) {
            CAPTURE(spec.path);
            CAPTURE(header);
            CAPTURE(transfer);
            CAPTURE(keep);
            std::vector<std::uint64_t> order;
            for (std::uint64_t i = spec.num_samples; i-- > 0;) order.push_back(i);
            CheckSamples(format, storage, spec, keep, transfer, order);
          }
        }
        Result<std::unique_ptr<CsvReader>> r =
            OpenCsv(spec.path, testing::TestReaderOptions(&storage));
        REQUIRE(r.ok());
        CHECK(std::string(CodecName((*r)->codec())) == codec);
        CHECK((*r)->has_header() == header);
      }
    }
    CHECK(storage.open_files() == 0);
  }
}

TEST_CASE("large rows straddle chunks and text buffers") {
  WriterOptions options;
  options.chunk_size = 8192;
  CsvFormat format(options);
  MemStorage storage;
  for (const std::string& codec : kCodecs) {
    // Rows of ~380 KB of float64 text: longer than a read chunk, and the
    // file is longer than the writer's 1 MiB text buffer.
    FileSpec spec = MakeSpec("float64", {100, 200}, 3, 4, codec, "/big/" + codec + ".csv");
    spec.compression_level = 1;
    REQUIRE(testing::WriteSpec(format, storage, spec).ok());
    CheckSamples(format, storage, spec, true, 0, {2, 0, 1});
    CheckSamples(format, storage, spec, false, 100000, {1});
  }
}

TEST_CASE("the file is read whole in transfer-size requests, per sample unless kept") {
  CsvFormat format;
  MemStorage storage;
  FileSpec spec = MakeSpec("uint8", {40, 40}, 5, 1);
  REQUIRE(testing::WriteSpec(format, storage, spec).ok());
  const std::uint64_t size = storage.Bytes(spec.path).size();
  const std::uint64_t t = 1000;
  for (bool decode : {true, false}) {
    storage.SetLogging(true);
    const int opens_before = storage.opens();
    Result<std::unique_ptr<CsvReader>> r =
        OpenCsv(spec.path, testing::TestReaderOptions(&storage, decode, false, t));
    REQUIRE(r.ok());
    for (std::uint64_t i = 0; i < 5; ++i) REQUIRE((*r)->ReadSample(i).ok());
    CHECK((*r)->loads() == 5);
    CHECK(storage.opens() - opens_before == 5);
    std::vector<Request> log = storage.TakeLog();
    const std::uint64_t per_load = size / t + 1;  // until a short read
    REQUIRE(log.size() == 5 * per_load);
    for (std::size_t i = 0; i < log.size(); ++i) {
      CHECK(log[i].offset == (i % per_load) * t);
      CHECK(log[i].length == t);
    }
    Result<std::unique_ptr<CsvReader>> m =
        OpenCsv(spec.path, testing::TestReaderOptions(&storage, decode, true, t));
    REQUIRE(m.ok());
    for (std::uint64_t i : {4ull, 0ull, 2ull, 2ull}) REQUIRE((*m)->ReadSample(i).ok());
    CHECK((*m)->loads() == 1);
    CHECK(storage.TakeLog().size() == per_load);
  }
  storage.SetLogging(false);
  CHECK(storage.open_files() == 0);
}

TEST_CASE("zip is read like zipfile: end record, directory, local header, data") {
  WriterOptions options;
  options.chunk_size = 4096;
  CsvFormat format(options);
  MemStorage storage;
  FileSpec spec = MakeSpec("uint8", {64, 64}, 4, 1, "zip", "/z/x.csv");
  REQUIRE(testing::WriteSpec(format, storage, spec).ok());
  const std::uint64_t size = storage.Bytes(spec.path).size();
  storage.SetLogging(true);
  Result<std::unique_ptr<CsvReader>> r =
      OpenCsv(spec.path, testing::TestReaderOptions(&storage, true, false, 1024));
  REQUIRE(r.ok());
  std::vector<Request> log = storage.TakeLog();
  storage.SetLogging(false);
  REQUIRE(log.size() >= 6);
  CHECK(log[0].offset == 0);  // recognising the format
  CHECK(log[1].offset == size - 22);
  CHECK(log[1].length == 22);
  CHECK(log[2].length == 20);                         // ZIP64 locator probe
  CHECK(log[3].offset + log[3].length == size - 22);  // the central directory
  CHECK(log[4].offset == 0);
  CHECK(log[4].length == 30);  // local header
  for (std::size_t i = 5; i < log.size(); ++i)
    CHECK(log[i].offset == log[i - 1].offset + (i == 5 ? 1024 : log[i - 1].length));
}

TEST_CASE("decode off: same requests, sizes only") {
  CsvFormat format;
  MemStorage storage;
  for (const std::string& codec : kCodecs) {
    FileSpec spec = MakeSpec("int32", {6, 5}, 3, 1, codec, "/d/" + codec + ".csv");
    REQUIRE(testing::WriteSpec(format, storage, spec).ok());
    std::vector<std::vector<Request>> logs;
    for (bool decode : {true, false}) {
      storage.SetLogging(true);
      Result<std::unique_ptr<FileReader>> reader =
          format.OpenReader(spec.path, testing::TestReaderOptions(&storage, decode, false, 64));
      REQUIRE(reader.ok());
      CHECK((*reader)->num_samples() == 3);
      Result<SampleView> s = (*reader)->ReadSample(2);
      REQUIRE(s.ok());
      CHECK(s->bytes == 30 * 8);
      if (!decode) CHECK(s->data.empty());
      logs.push_back(storage.TakeLog());
    }
    storage.SetLogging(false);
    REQUIRE(logs[0].size() == logs[1].size());
    for (std::size_t i = 0; i < logs[0].size(); ++i) {
      CHECK(logs[0][i].offset == logs[1][i].offset);
      CHECK(logs[0][i].length == logs[1][i].length);
    }
  }
}

TEST_CASE("corruption is reported with path and offset") {
  WriterOptions options;
  options.chunk_size = 4096;
  CsvFormat format(options);
  MemStorage storage;
  const std::string path = "/c/bad.csv";

  SUBCASE("malformed number") {
    storage.SetBytes(path, Bytes("1,2,3\n4,5x,6\n7,8,9\n"));
    CheckCorruption(format.OpenReader(path, testing::TestReaderOptions(&storage)).status(), path,
                    "line 2 at offset 8 of the file: malformed number '5x' in column 1");
    // Without decoding values are not parsed.
    CHECK(format.OpenReader(path, testing::TestReaderOptions(&storage, false)).ok());
  }
  SUBCASE("wrong column count") {
    storage.SetBytes(path, Bytes("1,2,3\n4,5,6\n7,89\n"));
    CheckCorruption(
        format.OpenReader(path, testing::TestReaderOptions(&storage)).status(), path,
        "line 3 at offset 12 of the file: the row has 2 fields but the first row has 3");
  }
  SUBCASE("wrong column count in a compressed file") {
    storage.SetBytes("/c/plain.csv", Bytes("1,2,3\n4,5,6\n7,89\n"));
    // Compress the bad text with the writer's codec.
    struct VecSink : ByteSink {
      std::vector<std::byte> data = std::vector<std::byte>(1 << 16);
      std::size_t used = 0;
      std::span<std::byte> Writable() override { return std::span<std::byte>(data).subspan(used); }
      Status Commit(std::size_t n) override {
        used += n;
        return Status::OK();
      }
    } sink;
    Result<std::unique_ptr<Compressor>> c = Compressor::Make(Codec::kXz, 1);
    REQUIRE(c.ok());
    const std::string text = "1,2,3\n4,5,6\n7,89\n";
    REQUIRE((*c)->Write(std::as_bytes(std::span<const char>(text)), sink).ok());
    REQUIRE((*c)->Finish(sink).ok());
    sink.data.resize(sink.used);
    storage.SetBytes(path, sink.data);
    CheckCorruption(format.OpenReader(path, testing::TestReaderOptions(&storage)).status(), path,
                    "line 3 at offset 12 of the decompressed text");
  }
  for (const std::string& codec : {"gzip", "bz2", "xz", "zip"}) {
    SUBCASE(("truncated " + codec).c_str()) {
      FileSpec spec = MakeSpec("uint8", {30, 30}, 8, 5, codec, "/c/good.csv");
      REQUIRE(testing::WriteSpec(format, storage, spec).ok());
      std::vector<std::byte> bytes = storage.Bytes(spec.path);
      bytes.resize(bytes.size() * 2 / 3);
      storage.SetBytes(path, bytes);
      for (bool decode : {true, false}) {
        Status s = format.OpenReader(path, testing::TestReaderOptions(&storage, decode, false, 512))
                       .status();
        CheckCorruption(s, path,
                        codec == "zip" ? "no end of central directory record" : "truncated");
      }
      CHECK(storage.open_files() == 0);
    }
    SUBCASE(("flipped byte in " + codec).c_str()) {
      FileSpec spec = MakeSpec("uint8", {30, 30}, 8, 5, codec, "/c/good.csv");
      REQUIRE(testing::WriteSpec(format, storage, spec).ok());
      std::vector<std::byte> bytes = storage.Bytes(spec.path);
      bytes[bytes.size() / 2] ^= std::byte{0x04};
      storage.SetBytes(path, bytes);
      Status s = format.OpenReader(path, testing::TestReaderOptions(&storage)).status();
      CHECK_MESSAGE(s.code() == StatusCode::kCorruption, s.ToString());
      CHECK_MESSAGE(s.message().find(path) != std::string::npos, s.ToString());
      CHECK_MESSAGE(s.message().find("offset") != std::string::npos, s.ToString());
    }
  }
  SUBCASE("gzip member CRC") {
    FileSpec spec = MakeSpec("uint8", {30, 30}, 8, 5, "gzip", "/c/good.csv");
    REQUIRE(testing::WriteSpec(format, storage, spec).ok());
    std::vector<std::byte> bytes = storage.Bytes(spec.path);
    bytes[bytes.size() - 6] ^= std::byte{0x01};  // the CRC-32 in the trailer
    storage.SetBytes(path, bytes);
    CheckCorruption(format.OpenReader(path, testing::TestReaderOptions(&storage)).status(), path,
                    "invalid gzip data");
  }
  SUBCASE("zip member CRC and size") {
    FileSpec spec = MakeSpec("uint8", {30, 30}, 8, 5, "zip", "/c/good.csv");
    REQUIRE(testing::WriteSpec(format, storage, spec).ok());
    std::vector<std::byte> bytes = storage.Bytes(spec.path);
    const std::uint64_t dir = LoadAs<std::uint32_t>(bytes.data() + bytes.size() - 6);
    std::vector<std::byte> crc = bytes;
    crc[dir + 16] ^= std::byte{0x01};
    storage.SetBytes(path, crc);
    CheckCorruption(format.OpenReader(path, testing::TestReaderOptions(&storage)).status(), path,
                    "CRC-32 mismatch");
    CHECK(format.OpenReader(path, testing::TestReaderOptions(&storage, false))
              .ok());  // not checked without decoding
    std::vector<std::byte> size = bytes;
    size[dir + 24] ^= std::byte{0x01};
    storage.SetBytes(path, size);
    CheckCorruption(format.OpenReader(path, testing::TestReaderOptions(&storage)).status(), path,
                    "directory entry says");
  }
  SUBCASE("zip with two members") {
    // Two stored members, hand-made.
    zip::MemberRecord a{"a.csv", zip::kMethodStored, 0, 0, 4, 4, 0};
    a.crc32 = static_cast<std::uint32_t>(crc32_z(0, reinterpret_cast<const Bytef*>("1,2\n"), 4));
    std::string file = Text(zip::EncodeLocalHeader(a, zip::LocalZip64::kOmit)) + "1,2\n";
    std::string dir = Text(zip::EncodeDirectoryAndEnd(std::span(&a, 1), file.size()));
    // Patch the entry counts of the end record to 2.
    dir[dir.size() - 12] = 2;
    dir[dir.size() - 14] = 2;
    storage.SetBytes(path, Bytes(file + dir));
    CheckCorruption(format.OpenReader(path, testing::TestReaderOptions(&storage)).status(), path,
                    "holds 2 members");
  }
  SUBCASE("zip: stored member and archive comment are accepted") {
    zip::MemberRecord a{"a.csv", zip::kMethodStored, 0, 0, 8, 8, 0};
    a.crc32 =
        static_cast<std::uint32_t>(crc32_z(0, reinterpret_cast<const Bytef*>("1,2\n3,4\n"), 8));
    std::string file = Text(zip::EncodeLocalHeader(a, zip::LocalZip64::kOmit)) + "1,2\n3,4\n";
    std::string dir = Text(zip::EncodeDirectoryAndEnd(std::span(&a, 1), file.size()));
    dir[dir.size() - 2] = 5;  // comment length
    storage.SetBytes(path, Bytes(file + dir + "hello"));
    Result<std::unique_ptr<CsvReader>> r = OpenCsv(path, testing::TestReaderOptions(&storage));
    REQUIRE_MESSAGE(r.ok(), r.status().ToString());
    CHECK((*r)->num_samples() == 2);
    CHECK((*r)->table().slots == std::vector<std::uint64_t>{1, 2, 3, 4});
  }
  SUBCASE("a file that changes between loads") {
    storage.SetBytes(path, Bytes("1,2\n3,4\n"));
    Result<std::unique_ptr<FileReader>> r =
        format.OpenReader(path, testing::TestReaderOptions(&storage));
    REQUIRE(r.ok());
    REQUIRE((*r)->ReadSample(0).ok());
    storage.SetBytes(path, Bytes("1,2\n3,"));
    CheckCorruption((*r)->ReadSample(1).status(), path, "empty field");
    storage.SetBytes(path, Bytes("1,2\n3,4\n"));
    CHECK((*r)->ReadSample(1).ok());  // recovers on the next load
  }
}

TEST_CASE("posix files round trip") {
  testing::TempDir dir;
  testing::PosixStorage storage;
  CsvFormat format;
  for (const std::string& codec : kCodecs) {
    FileSpec spec =
        MakeSpec("uint8", {100, 30}, 6, 77, codec, (dir.path() / (codec + ".csv")).string());
    REQUIRE(testing::WriteSpec(format, storage, spec).ok());
    CheckSamples(format, storage, spec, true, 0, {5, 0, 3});
  }
}

}  // namespace
}  // namespace iomimic::csv
