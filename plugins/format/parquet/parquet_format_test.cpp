// Tests of the parquet format plugin: the Thrift compact round trip, the
// writer's layout (sizes, row groups, codecs), the reader's access pattern
// (footer once per file and pass, one request per row group over the
// selected columns' span), decoding and corruption handling. DuckDB reads
// and writes the same files in tests/formats/parquet_interop.py.

#include "parquet_format.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "iomimic/iomimic.h"
#include "iomimic/testing/format_test_support.h"
#include "iomimic/testing/posix_test_storage.h"
#include "parquet_meta.h"
#include "parquet_reader.h"
#include "thrift_compact.h"

extern "C" const IomimicPluginDescriptor iomimic_plugin_descriptor;

namespace iomimic::parquet {
namespace {

namespace fs = std::filesystem;
using testing::PosixStorage;
using testing::TempDir;

// Records the reads made through the files it opens.
class RecordingStorage final : public ForwardingStorage {
 public:
  struct Read {
    std::string path;
    std::uint64_t offset = 0;
    std::uint64_t length = 0;
  };
  explicit RecordingStorage(Storage& inner) : ForwardingStorage(&inner) {}
  std::string name() const override { return "recording"; }

  std::vector<Read> reads() {
    std::lock_guard<std::mutex> l(mu_);
    return reads_;
  }
  void Clear() {
    std::lock_guard<std::mutex> l(mu_);
    reads_.clear();
  }

 protected:
  Result<std::unique_ptr<File>> WrapFile(std::unique_ptr<File> file, const OpenOptions&) override {
    return std::unique_ptr<File>(std::make_unique<RecFile>(std::move(file), this));
  }

 private:
  class RecFile final : public DecoratorFile<RecordingStorage> {
   public:
    using DecoratorFile::DecoratorFile;
    Result<std::size_t> ReadAt(std::uint64_t offset, std::span<std::byte> d) override {
      {
        std::lock_guard<std::mutex> l(storage().mu_);
        storage().reads_.push_back({path(), offset, d.size()});
      }
      return inner().ReadAt(offset, d);
    }
    // Batched reads go through ReadAt one by one (File's way), so that each
    // is recorded.
    Status ReadBatch(std::span<ReadRequest> requests) override { return File::ReadBatch(requests); }
  };

  std::mutex mu_;
  std::vector<Read> reads_;
};

FileSpec MakeSpec(const fs::path& dir, std::uint64_t rows, const std::string& columns,
                  std::uint64_t group_rows, const std::string& codec = "none") {
  FileSpec spec;
  spec.path = (dir / "img_1_of_1.parquet").string();
  spec.sample_shape = {8, 8};
  spec.num_samples = rows;
  spec.seed = 7;
  spec.compression = codec;
  spec.parameters["parquet.columns"] = columns;
  spec.parameters["parquet.row_group_size"] = std::to_string(group_rows);
  return spec;
}

const char* kMixed =
    "a:float16:0:0;b:float32:0:1;c:int8:0:0;d:float64:0:1;e:uint16:0:0;f:bool:0:0;"
    "g:string:12:0;h:binary:5:0;i:list:3:0;j:int64:4:0";

TEST_CASE("thrift compact: fields, lists and nested structs round trip") {
  std::vector<std::byte> out;
  thrift::Writer w(&out);
  w.I32(1, -5);
  w.I64(20, std::int64_t{1} << 40);
  w.BeginList(21, thrift::kBinary, 16);
  for (int i = 0; i < 16; ++i) w.ListString("x" + std::to_string(i));
  w.BeginStructField(22);
  w.Bool(1, true);
  w.EndStruct();
  w.I16(23, 7);
  w.Stop();
  thrift::Reader r(out.data(), out.size());
  std::int16_t id = 0;
  thrift::Type t;
  std::int32_t v32 = 0;
  std::int64_t v64 = 0;
  REQUIRE(r.Field(&id, &t));
  CHECK(id == 1);
  REQUIRE(r.I32(&v32));
  CHECK(v32 == -5);
  REQUIRE(r.Field(&id, &t));
  CHECK(id == 20);
  REQUIRE(r.I64(&v64));
  CHECK(v64 == (std::int64_t{1} << 40));
  REQUIRE(r.Field(&id, &t));
  CHECK(id == 21);
  REQUIRE(r.Skip(t));
  REQUIRE(r.Field(&id, &t));
  CHECK(id == 22);
  REQUIRE(r.Skip(t));
  REQUIRE(r.Field(&id, &t));
  CHECK(id == 23);
  CHECK(t == thrift::kI16);
  REQUIRE(r.Skip(t));
  REQUIRE(r.Field(&id, &t));
  CHECK(t == thrift::kStop);
  CHECK(r.position() == out.size());
}

TEST_CASE("thrift compact: a map's booleans take a byte each, and its count is bounded") {
  // Found by tests/fuzz (docs/fuzzing.md; tests/fuzz/corpus/parquet/timeout-5f865d59...):
  // a footer map claiming 2^60 boolean pairs was skipped as zero bytes per
  // pair and never ended.
  const std::vector<std::byte> huge = {
      std::byte{0x80}, std::byte{0x80}, std::byte{0x80}, std::byte{0x80}, std::byte{0x80},
      std::byte{0x80}, std::byte{0x80}, std::byte{0x80}, std::byte{0x10}, std::byte{0x11}};
  thrift::Reader bad(huge.data(), huge.size());
  CHECK_FALSE(bad.Skip(thrift::kMap));
  // Two (true, false) pairs: a count, the key and value types, four bytes.
  const std::vector<std::byte> two = {std::byte{0x02}, std::byte{0x12}, std::byte{0x01},
                                      std::byte{0x02}, std::byte{0x01}, std::byte{0x02}};
  thrift::Reader good(two.data(), two.size());
  CHECK(good.Skip(thrift::kMap));
  CHECK(good.position() == two.size());
}

TEST_CASE("columns: dtypes map to Parquet types, unknown dtypes become float32 lists") {
  std::vector<std::string> warnings;
  Result<std::vector<Column>> cols =
      ParseColumns(std::string(kMixed) + ";z:complex:2:1", 1, &warnings);
  REQUIRE(cols.ok());
  REQUIRE(cols->size() == 11);
  CHECK((*cols)[0].physical == Physical::kFixedLenByteArray);
  CHECK((*cols)[2].physical == Physical::kInt32);
  CHECK((*cols)[2].value_bytes == 4);
  CHECK((*cols)[9].list);
  CHECK((*cols)[9].elements == 4);
  CHECK((*cols)[10].list);
  CHECK((*cols)[10].physical == Physical::kFloat);
  CHECK(warnings.size() == 1);
  Result<std::vector<Column>> def = ParseColumns("", 64, nullptr);
  REQUIRE(def.ok());
  CHECK((*def)[0].name == "data");
  CHECK((*def)[0].elements == 64);
  CHECK(!ParseColumns("a:float32", 1, nullptr).ok());
  CHECK(!ParseColumns("a:float32:0:1;a:int8:0:0", 1, nullptr).ok());
}

// Each case writes its files into a fresh temporary folder on real files.
class WrittenFiles {
 protected:
  // Writes with `format` the file MakeSpec describes; its spec.
  FileSpec Write(Format& format, std::uint64_t rows, const std::string& columns,
                 std::uint64_t group_rows) {
    FileSpec spec = MakeSpec(dir.path(), rows, columns, group_rows);
    REQUIRE(::iomimic::testing::WriteSpec(format, posix, spec).ok());
    return spec;
  }

  TempDir dir{"parquet"};
  PosixStorage posix;
};

TEST_CASE_FIXTURE(WrittenFiles,
                  "writer: exact size without compression, footer decodes, every codec writes") {
  ParquetFormat format(Settings{});
  for (const char* codec : {"none", "snappy", "gzip", "lz4", "zstd"}) {
    CAPTURE(codec);
    FileSpec spec = MakeSpec(dir.path(), 1000, kMixed, 300, codec);
    REQUIRE(format.Validate(spec).ok());
    REQUIRE(::iomimic::testing::WriteSpec(format, posix, spec).ok());
    const std::uint64_t size = fs::file_size(spec.path);
    Result<std::uint64_t> expected = format.ExpectedFileSize(spec);
    if (std::string(codec) == "none") {
      REQUIRE(expected.ok());
      CHECK(*expected == size);
    } else {
      CHECK(!expected.ok());
    }
    // Read and decode everything.
    ParquetFormat reader_format(Settings{.decode = true});
    Result<std::unique_ptr<FileReader>> r =
        reader_format.OpenReader(spec.path, ::iomimic::testing::TestReaderOptions(&posix));
    REQUIRE(r.ok());
    CHECK((*r)->num_samples() == 1000);
    std::uint64_t bytes = 0;
    for (std::uint64_t i = 0; i < 1000; ++i) {
      Result<SampleView> v = (*r)->ReadSample(i);
      REQUIRE(v.ok());
      bytes += v->bytes;
    }
    CHECK(bytes > 0);
    CHECK(static_cast<ParquetReader&>(**r).decoded_checksum() != 0);
    CHECK(!(*r)->ReadSample(1000).ok());
  }
  CHECK(!format.Validate(MakeSpec(dir.path(), 10, kMixed, 3, "bz2")).ok());
}

TEST_CASE_FIXTURE(
    WrittenFiles,
    "reader: footer once per file, one request per row group over the selected span") {
  ParquetFormat writer(Settings{});
  const FileSpec spec = Write(writer, 1000, kMixed, 300);

  for (int threads : {1, 3}) {
    CAPTURE(threads);
    Settings settings;
    settings.columns = kMixed;  // b and d are flagged read: true
    settings.prefetch_window = 2;
    ParquetFormat format(settings);
    RecordingStorage rec(posix);
    const ReaderOptions ro = ::iomimic::testing::TestReaderOptions(&rec);
    // Rows are shared out in batches of 128 to `threads` readers.
    std::vector<std::thread> pool;
    std::atomic<bool> ok{true};
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        Result<std::unique_ptr<FileReader>> r = format.OpenReader(spec.path, ro);
        if (!r.ok()) {
          ok = false;
          return;
        }
        for (std::uint64_t b = static_cast<std::uint64_t>(t); b * 128 < 1000;
             b += static_cast<std::uint64_t>(threads)) {
          for (std::uint64_t i = b * 128; i < std::min<std::uint64_t>(1000, (b + 1) * 128); ++i) {
            if (!(*r)->ReadSample(i).ok()) ok = false;
          }
        }
      });
    }
    for (std::thread& th : pool) th.join();
    REQUIRE(ok);
    CHECK(format.footer_reads() == 1);
    // The expected spans from the footer: columns b (index 1) and d (3).
    const std::uint64_t size = fs::file_size(spec.path);
    std::vector<RecordingStorage::Read> reads = rec.reads();
    REQUIRE(reads.size() == 1 + 4);
    CHECK(reads[0].offset + reads[0].length == size);
    std::vector<std::byte> file_bytes(size);
    std::ifstream(spec.path, std::ios::binary)
        .read(reinterpret_cast<char*>(file_bytes.data()), static_cast<std::streamsize>(size));
    std::uint32_t footer_len = 0;
    std::memcpy(&footer_len, file_bytes.data() + size - 8, 4);
    Result<FileMeta> meta = DecodeFileMeta(
        std::span<const std::byte>(file_bytes.data() + size - 8 - footer_len, footer_len),
        spec.path, size - 8 - footer_len);
    REQUIRE(meta.ok());
    REQUIRE(meta->row_groups.size() == 4);
    std::vector<std::pair<std::uint64_t, std::uint64_t>> expected, seen;
    for (const RowGroupMeta& rg : meta->row_groups) {
      const std::uint64_t begin = static_cast<std::uint64_t>(rg.columns[1].start());
      const std::uint64_t end =
          static_cast<std::uint64_t>(rg.columns[3].start() + rg.columns[3].total_compressed_size);
      expected.emplace_back(begin, end - begin);
    }
    for (std::size_t i = 1; i < reads.size(); ++i)
      seen.emplace_back(reads[i].offset, reads[i].length);
    std::sort(seen.begin(), seen.end());
    CHECK(seen == expected);

    // A second pass reads the footer again.
    Result<std::unique_ptr<FileReader>> again = format.OpenReader(spec.path, ro);
    REQUIRE(again.ok());
    CHECK(format.footer_reads() == 2);
  }
}

TEST_CASE_FIXTURE(WrittenFiles, "reader: a truncated file is an error naming the file and offset") {
  ParquetFormat format(Settings{});
  const FileSpec spec = Write(format, 100, kMixed, 30);
  const std::uint64_t size = fs::file_size(spec.path);
  fs::resize_file(spec.path, size - 3);
  Result<std::unique_ptr<FileReader>> r =
      format.OpenReader(spec.path, ::iomimic::testing::TestReaderOptions(&posix));
  REQUIRE(!r.ok());
  CHECK(r.status().message().find(spec.path) != std::string::npos);
  CHECK(r.status().message().find("offset") != std::string::npos);
}

TEST_CASE_FIXTURE(WrittenFiles,
                  "reader: a damaged column chunk start is an error naming the file and offset") {
  ParquetFormat format(Settings{});
  const FileSpec spec = Write(format, 100, "x:float32:0:1", 30);
  {
    std::fstream f(spec.path, std::ios::in | std::ios::out | std::ios::binary);
    const std::string junk(60, '\xff');
    f.seekp(4);
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  Result<std::unique_ptr<FileReader>> r =
      format.OpenReader(spec.path, ::iomimic::testing::TestReaderOptions(&posix, false));
  REQUIRE(r.ok());
  Result<SampleView> v = (*r)->ReadSample(0);
  REQUIRE(!v.ok());
  CHECK(v.status().code() == StatusCode::kCorruption);
  CHECK(v.status().message().find(spec.path) != std::string::npos);
  CHECK(v.status().message().find("at offset 4") != std::string::npos);
}

TEST_CASE("plugin: descriptor and options") {
  PluginContext ctx;
  ctx.options = PluginOptions("", {{"parquet.row_group_size", "0"}});
  Status error;
  void* made = iomimic_plugin_descriptor.create(&ctx, &error);
  CHECK(made == nullptr);
  CHECK(!error.ok());
  ctx.options = PluginOptions("", {{"decode", "true"}});
  made = iomimic_plugin_descriptor.create(&ctx, &error);
  REQUIRE(made != nullptr);
  auto* f = static_cast<Format*>(made);
  CHECK(f->name() == "parquet");
  CHECK(f->traits().extension == "parquet");
  CHECK(f->traits().needs_host_decode);
  iomimic_plugin_descriptor.destroy(made);
}

}  // namespace
}  // namespace iomimic::parquet
