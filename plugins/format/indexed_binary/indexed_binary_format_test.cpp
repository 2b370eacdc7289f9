// Tests of the indexed_binary format plugin: layout of the data and index
// files, chunked generation, the index cache, the access pattern, corruption
// handling and interoperability with numpy (when /usr/bin/python3 has numpy).
// Cases every format shares (an index past the end, a missing file, a reader
// without a storage) run in the format conformance suite
// (tests/conformance/format_conformance_test.cpp).

#include "indexed_binary/indexed_binary_format.h"

#include <doctest/doctest.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <numeric>
#include <thread>

#include "indexed_binary/indexed_binary_reader.h"
#include "indexed_binary/indexed_binary_test_storage.h"
#include "indexed_binary/indexed_binary_writer.h"
#include "iomimic/testing/file_spec.h"
#include "iomimic/testing/format_test_support.h"
#include "iomimic/testing/write_in_parts.h"

extern "C" const IomimicPluginDescriptor iomimic_plugin_descriptor;

namespace iomimic::indexed_binary {
namespace {

using testing::DeviceMemStorage;
using testing::MemStorage;
using testing::PosixStorage;
using testing::Request;
using testing::TempDir;
namespace fs = std::filesystem;

constexpr Flavor kFlavor = Flavor::kIndexedBinary;

FileSpec MakeSpec(const std::string& dtype, std::vector<std::uint64_t> shape, std::uint64_t samples,
                  std::uint64_t seed, const std::string& path = "/data/test.indexed_binary") {
  FileSpec spec = ::iomimic::testing::TestFileSpec(dtype, std::move(shape), samples, seed, path);
  spec.parameters["generation_buffer_size"] = std::to_string(std::uint64_t{2} << 30);
  return spec;
}

// The data file: the content stream of the seed (iomimic::ContentStream).
std::vector<std::byte> ReferenceData(const FileSpec& spec) {
  std::vector<std::byte> data(spec.sample_bytes() * spec.num_samples);
  ContentStream(spec.seed).Fill(data);
  if (spec.element_type.descr == "|b1") {
    for (std::byte& b : data) b &= std::byte{1};
  }
  return data;
}

std::vector<std::uint64_t> DecodeIndex(const std::vector<std::byte>& bytes) {
  REQUIRE(bytes.size() % 8 == 0);
  std::vector<std::uint64_t> out(bytes.size() / 8);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = LoadU64(bytes.data() + 8 * i);
  return out;
}

std::vector<std::byte> EncodeIndex(const std::vector<std::uint64_t>& values) {
  std::vector<std::byte> out(values.size() * 8);
  for (std::size_t i = 0; i < values.size(); ++i) StoreU64(out.data() + 8 * i, values[i]);
  return out;
}

// Checks the three files of `spec` byte for byte.
void CheckFiles(MemStorage& storage, const FileSpec& spec) {
  const std::vector<std::byte> data = storage.Bytes(spec.path);
  CHECK(data == ReferenceData(spec));
  const std::vector<std::uint64_t> offsets = DecodeIndex(storage.Bytes(OffsetIndexPath(spec.path)));
  const std::vector<std::uint64_t> sizes = DecodeIndex(storage.Bytes(SizeIndexPath(spec.path)));
  REQUIRE(offsets.size() == spec.num_samples);
  REQUIRE(sizes.size() == spec.num_samples);
  bool consistent = true;
  for (std::uint64_t i = 0; i < spec.num_samples; ++i) {
    consistent = consistent && offsets[i] == i * spec.sample_bytes() &&
                 sizes[i] == spec.sample_bytes() && offsets[i] + sizes[i] <= data.size();
  }
  CHECK(consistent);
  for (const std::string& p : storage.Paths()) {
    CHECK_MESSAGE(p.find(".iomimic-partial") == std::string::npos, p);
  }
}

// Reads every sample and compares with the reference.
void CheckRoundTrip(Format& format, Storage& storage, const FileSpec& spec, bool keep,
                    std::uint64_t transfer = 0) {
  const std::vector<std::byte> data = ReferenceData(spec);
  const std::size_t s = spec.sample_bytes();
  Result<std::unique_ptr<FileReader>> reader = format.OpenReader(
      spec.path, ::iomimic::testing::TestReaderOptions(&storage, true, keep, transfer));
  REQUIRE_MESSAGE(reader.ok(), reader.status().ToString());
  REQUIRE((*reader)->num_samples() == spec.num_samples);
  for (std::uint64_t i = 0; i < spec.num_samples; ++i) {
    Result<SampleView> sample = (*reader)->ReadSample(i);
    REQUIRE_MESSAGE(sample.ok(), sample.status().ToString());
    CHECK(sample->bytes == s);
    CHECK(::iomimic::testing::SameBytes(sample->data,
                                        std::span<const std::byte>(data).subspan(i * s, s)));
  }
}

void CheckCorruption(const Status& s, const std::string& path, const std::string& fragment = "") {
  CHECK_MESSAGE(::iomimic::testing::IsCorruptionNaming(s, path, fragment), s.ToString());
}

// ---------------------------------------------------------------------------
// Format basics.

TEST_CASE("this format's traits and options") {
  CHECK(::iomimic::testing::DescribeFormatPlugin(iomimic_plugin_descriptor) ==
        "name=indexed_binary capabilities=partial_reads,multi_sample "
        "options=index_cache_size:bytes=8G | format name=indexed_binary "
        "extension=indexed_binary multi_sample_files=1 partial_reads=1 "
        "needs_host_decode=0 predictable_size=1 streamed=0 element_type=");

  const IomimicPluginDescriptor& d = iomimic_plugin_descriptor;
  PluginContext context;
  Status error;
  auto format = ::iomimic::testing::CreateThroughDescriptor<Format>(d, context, &error);
  REQUIRE_MESSAGE(format != nullptr, error.ToString());
  auto* ib = static_cast<IndexedBinaryFormat*>(format.get());
  CHECK(ib->flavor() == Flavor::kIndexedBinary);
  CHECK(ib->index_cache().capacity() == kDefaultIndexCacheBytes);
  format.reset();

  context.options = PluginOptions("format plugin 'indexed_binary'", {{"index_cache_size", "1M"}});
  void* object = d.create(&context, &error);
  REQUIRE(object != nullptr);
  CHECK(static_cast<IndexedBinaryFormat*>(static_cast<Format*>(object))->index_cache().capacity() ==
        (1u << 20));
  d.destroy(object);
  context.options = PluginOptions("format plugin 'indexed_binary'", {{"index_cache_size", "lots"}});
  CHECK(d.create(&context, &error) == nullptr);
  CHECK(error.code() == StatusCode::kInvalidArgument);
  CHECK(error.message().find("index_cache_size") != std::string::npos);
}

TEST_CASE("validate and expected size") {
  IndexedBinaryFormat format(kFlavor);
  FileSpec ok = MakeSpec("uint8", {64, 64}, 1024, 1);
  CHECK(format.Validate(ok).ok());
  CHECK(*format.ExpectedFileSize(ok) == 64 * 64 * 1024);
  CHECK(*format.ExpectedFileSize(MakeSpec("float32", {3, 5}, 7, 1)) == 3 * 5 * 4 * 7);
  // Scalar samples (no dimensions) are one element each.
  CHECK(*format.ExpectedFileSize(MakeSpec("int64", {}, 9, 1)) == 72);
  CHECK(format.Validate(MakeSpec("uint8", {4, 0}, 2, 1)).code() == StatusCode::kInvalidArgument);
  CHECK(format.Validate(MakeSpec("uint8", {4}, 0, 1)).code() == StatusCode::kInvalidArgument);
  CHECK(format.Validate(MakeSpec("float64", {1ull << 40, 1ull << 40}, 1, 1)).code() ==
        StatusCode::kInvalidArgument);
  FileSpec zipped = MakeSpec("uint8", {4}, 1, 1);
  zipped.compression = "gzip";
  CHECK(format.Validate(zipped).code() == StatusCode::kNotSupported);
  CHECK(format.ExpectedFileSize(zipped).status().code() == StatusCode::kNotSupported);
  for (const char* bad : {"", "0", "-4096", "4k", "abc", "99999999999999999999999"}) {
    CAPTURE(bad);
    FileSpec spec = MakeSpec("uint8", {4}, 1, 1);
    spec.parameters["generation_buffer_size"] = bad;
    const Status s = format.Validate(spec);
    CHECK(s.code() == StatusCode::kInvalidArgument);
    CHECK(s.message().find("generation_buffer_size") != std::string::npos);
  }
  FileSpec no_parameter = MakeSpec("uint8", {4}, 1, 1);
  no_parameter.parameters.clear();
  CHECK(format.Validate(no_parameter).ok());
}

TEST_CASE("generation buffer size follows DLIO's key within bounds") {
  WriterOptions options;
  FileSpec spec = MakeSpec("uint8", {4}, 1, 1);
  spec.parameters.clear();
  CHECK(*GenerationBufferSize(spec, options) == (std::uint64_t{64} << 20));  // 2 GiB, capped
  spec.parameters["generation_buffer_size"] = "1";
  CHECK(*GenerationBufferSize(spec, options) == kMinGenerationBufferSize);
  spec.parameters["generation_buffer_size"] = "1048576";
  CHECK(*GenerationBufferSize(spec, options) == (1u << 20));
  options.max_buffer_size = 100000;
  spec.parameters["generation_buffer_size"] = "2147483648";
  CHECK(*GenerationBufferSize(spec, options) == 100000);
}

TEST_CASE("layout: data, offsets and sizes as DLIO writes them") {
  IndexedBinaryFormat format(kFlavor);
  MemStorage storage;
  // dlrm.yaml shrunk: 1024 samples of 64 x 64 bytes.
  FileSpec spec = MakeSpec("uint8", {64, 64}, 1024, 7, "/train/img_0_of_2.indexed_binary");
  REQUIRE(::iomimic::testing::WriteSpecAsCore(format, storage, spec).ok());
  CHECK(storage.Bytes(spec.path).size() == *format.ExpectedFileSize(spec));
  CHECK(storage.Exists("/train/img_0_of_2.indexed_binary.off.idx"));
  CHECK(storage.Exists("/train/img_0_of_2.indexed_binary.sz.idx"));
  CHECK(storage.Bytes(OffsetIndexPath(spec.path)).size() == 1024 * 8);
  CheckFiles(storage, spec);
  // Little-endian uint64: entry 1 of the offsets is 4096 = 00 10 00 .. 00.
  const std::vector<std::byte> off = storage.Bytes(OffsetIndexPath(spec.path));
  CHECK(off[8] == std::byte{0x00});
  CHECK(off[9] == std::byte{0x10});
  for (int k = 10; k < 16; ++k) CHECK(off[static_cast<std::size_t>(k)] == std::byte{0});

  // Bool samples hold only 0 and 1.
  FileSpec b = MakeSpec("bool", {33}, 5, 3, "/bool.indexed_binary");
  REQUIRE(::iomimic::testing::WriteSpecAsCore(format, storage, b).ok());
  const std::vector<std::byte> bytes = storage.Bytes(b.path);
  CHECK(std::all_of(bytes.begin(), bytes.end(),
                    [](std::byte v) { return v == std::byte{0} || v == std::byte{1}; }));
  CheckFiles(storage, b);
}

TEST_CASE("generation streams in bounded chunks that cross sample boundaries") {
  struct Case {
    std::vector<std::uint64_t> shape;
    std::uint64_t samples;
    std::uint64_t buffer;
    std::size_t alignment;
  };
  const Case cases[] = {
      {{1500}, 1000, 4096, 1},    // 3000-byte int16 samples, 4 KiB chunks
      {{8}, 100000, 4096, 1},     // many samples: 800 KB index files in 4 KiB chunks
      {{10000}, 7, 4096, 1},      // samples larger than the buffer (DLIO never ends)
      {{999}, 300, 5000, 4096},   // buffer rounded up to the alignment (8192)
      {{64, 64}, 64, 1 << 20, 1}  // buffer larger than needed: one data write
  };
  int k = 0;
  for (const Case& c : cases) {
    CAPTURE(k);
    MemStorage storage;
    storage.set_alignment(c.alignment);
    IndexedBinaryFormat format(kFlavor);
    FileSpec spec = MakeSpec(c.shape.size() == 1 && c.shape[0] == 1500 ? "int16" : "uint8", c.shape,
                             c.samples, 40 + static_cast<std::uint64_t>(k),
                             "/gen/" + std::to_string(k) + ".indexed_binary");
    ++k;
    spec.parameters["generation_buffer_size"] = std::to_string(c.buffer);
    storage.SetLogging(true);
    REQUIRE(::iomimic::testing::WriteSpecAsCore(format, storage, spec).ok());
    const std::vector<Request> log = storage.TakeLog();
    storage.SetLogging(false);
    const std::uint64_t unit = std::lcm<std::uint64_t>(c.alignment, 8);
    const std::uint64_t chunk = (std::max<std::uint64_t>(c.buffer, 4096) + unit - 1) / unit * unit;
    std::map<std::string, std::uint64_t> next;  // per file: expected next offset
    for (const Request& r : log) {
      REQUIRE(r.write);
      CHECK(r.length <= chunk);
      CHECK(r.offset == next[r.path]);
      CHECK(r.offset % chunk == 0);
      next[r.path] += r.length;
    }
    const std::uint64_t total = spec.sample_bytes() * spec.num_samples;
    CHECK(next[PartialPath(spec.path)] == total);
    CHECK(next[PartialPath(OffsetIndexPath(spec.path))] == spec.num_samples * 8);
    CHECK(next[PartialPath(SizeIndexPath(spec.path))] == spec.num_samples * 8);
    CHECK(log.front().path == PartialPath(spec.path));  // the data come first
    CheckFiles(storage, spec);
    CheckRoundTrip(format, storage, spec, true);
  }
}

TEST_CASE("content does not depend on the generation buffer size") {
  MemStorage storage;
  IndexedBinaryFormat format(kFlavor);
  FileSpec spec = MakeSpec("uint8", {777}, 333, 9, "/same.indexed_binary");
  REQUIRE(::iomimic::testing::WriteSpecAsCore(format, storage, spec).ok());
  const std::vector<std::byte> big = storage.Bytes(spec.path);
  const std::vector<std::byte> big_index = storage.Bytes(OffsetIndexPath(spec.path));
  spec.parameters["generation_buffer_size"] = "4100";
  REQUIRE(::iomimic::testing::WriteSpecAsCore(format, storage, spec).ok());
  CHECK(big == storage.Bytes(spec.path));
  CHECK(big_index == storage.Bytes(OffsetIndexPath(spec.path)));
}

TEST_CASE("the default buffer is capped") {
  WriterOptions small;
  small.max_buffer_size = 64 << 10;
  IndexedBinaryFormat format(kFlavor, kDefaultIndexCacheBytes, small);
  MemStorage storage;
  FileSpec spec = MakeSpec("uint8", {512, 512}, 4, 1, "/capped.indexed_binary");  // 2 GiB asked
  storage.SetLogging(true);
  REQUIRE(::iomimic::testing::WriteSpecAsCore(format, storage, spec).ok());
  const std::vector<Request> log = storage.TakeLog();
  storage.SetLogging(false);
  std::size_t data_writes = 0;
  for (const Request& r : log) {
    CHECK(r.length <= (64u << 10));
    if (r.path == PartialPath(spec.path)) ++data_writes;
  }
  CHECK(data_writes == 512 * 512 * 4 / (64 << 10));
  CheckFiles(storage, spec);
}

TEST_CASE("write failures leave no index file and no temporary file behind") {
  IndexedBinaryFormat format(kFlavor);
  const FileSpec spec = MakeSpec("uint8", {100}, 50, 1, "/fail/x.indexed_binary");
  auto check_clean = [&](MemStorage& storage) {
    for (const std::string& p : storage.Paths()) {
      CHECK_MESSAGE(p.find(".iomimic-partial") == std::string::npos, p);
      CHECK_MESSAGE(p.find(".idx") == std::string::npos, p);
      CHECK_MESSAGE(p != spec.path, p);
    }
  };
  for (const char* target : {".off.idx", ".sz.idx"}) {
    CAPTURE(target);
    {
      MemStorage storage;
      storage.FailWritesTo(target);
      const Status s = ::iomimic::testing::WriteSpecAsCore(format, storage, spec);
      CHECK(s.code() == StatusCode::kIOError);
      CHECK_MESSAGE(s.message().find(std::string("index file /fail/x.indexed_binary") + target) !=
                        std::string::npos,
                    s.ToString());
      check_clean(storage);
    }
    {
      MemStorage storage;
      storage.FailRenameTo(target);
      const Status s = ::iomimic::testing::WriteSpecAsCore(format, storage, spec);
      CHECK(s.code() == StatusCode::kIOError);
      check_clean(storage);
    }
  }
  MemStorage storage;
  storage.FailWritesTo("/fail/.x.indexed_binary.iomimic-partial");
  const Status s = ::iomimic::testing::WriteSpecAsCore(format, storage, spec);
  CHECK(s.code() == StatusCode::kIOError);
  CHECK(storage.Paths().empty());  // no index file was started
}

// ---------------------------------------------------------------------------
// Reading.

TEST_CASE("round trip: dtypes, shapes, samples per file, modes") {
  IndexedBinaryFormat format(kFlavor);
  MemStorage storage;
  struct Case {
    const char* dtype;
    std::vector<std::uint64_t> shape;
    std::uint64_t samples;
  };
  const Case cases[] = {{"uint8", {16, 16}, 1},  {"uint8", {5, 7}, 3},   {"float32", {5, 7}, 3},
                        {"int16", {2, 3, 4}, 2}, {"bool", {9}, 4},       {"float16", {33, 1}, 7},
                        {"int64", {}, 1000},     {"uint8", {45, 45}, 64}};
  std::uint64_t seed = 100;
  for (const Case& c : cases) {
    ++seed;
    FileSpec spec = MakeSpec(c.dtype, c.shape, c.samples, seed,
                             "/rt/" + std::to_string(seed) + ".indexed_binary");
    CAPTURE(spec.path);
    REQUIRE(::iomimic::testing::WriteSpecAsCore(format, storage, spec).ok());
    CheckFiles(storage, spec);
    CheckRoundTrip(format, storage, spec, false);
    CheckRoundTrip(format, storage, spec, true);
    CheckRoundTrip(format, storage, spec, false, 3);
  }
  CHECK(storage.open_files() == 0);
}

TEST_CASE("read pattern follows DLIO's IndexedBinaryReader") {
  IndexedBinaryFormat format(kFlavor);
  MemStorage storage;
  FileSpec spec = MakeSpec("uint8", {64, 64}, 16, 3, "/p/a.indexed_binary");
  REQUIRE(::iomimic::testing::WriteSpecAsCore(format, storage, spec).ok());
  const std::string off = OffsetIndexPath(spec.path);
  const std::string sz = SizeIndexPath(spec.path);

  // First reader: both index files whole, then the data file is opened.
  storage.SetLogging(true);
  int opens = storage.opens();
  Result<std::unique_ptr<FileReader>> first =
      format.OpenReader(spec.path, ::iomimic::testing::TestReaderOptions(&storage));
  REQUIRE(first.ok());
  std::vector<Request> log = storage.TakeLog();
  REQUIRE(log.size() == 2);
  CHECK((log[0].path == off && log[0].offset == 0 && log[0].length == 16 * 8));
  CHECK((log[1].path == sz && log[1].offset == 0 && log[1].length == 16 * 8));
  CHECK(storage.opens() - opens == 3);
  CHECK(static_cast<IndexedBinaryReader*>(first->get())->loaded_index());

  // Each sample: one ranged read of exactly the sample.
  REQUIRE((*first)->ReadSample(5).ok());
  log = storage.TakeLog();
  REQUIRE(log.size() == 1);
  CHECK((log[0].path == spec.path && log[0].offset == 5 * 4096 && log[0].length == 4096));
  CHECK(storage.open_files() == 0);  // on_demand: closed after the sample
  opens = storage.opens();
  REQUIRE((*first)->ReadSample(6).ok());
  CHECK(storage.opens() - opens == 1);  // and reopened for the next one
  log = storage.TakeLog();
  REQUIRE(log.size() == 1);
  CHECK((log[0].offset == 6 * 4096 && log[0].length == 4096));

  // on_demand as the core does it: a reader per sample; the index is cached.
  for (bool decode : {true, false}) {
    for (std::uint64_t i = 0; i < 16; i += 5) {
      opens = storage.opens();
      Result<std::unique_ptr<FileReader>> r =
          format.OpenReader(spec.path, ::iomimic::testing::TestReaderOptions(&storage, decode));
      REQUIRE(r.ok());
      CHECK_FALSE(static_cast<IndexedBinaryReader*>(r->get())->loaded_index());
      Result<SampleView> s = (*r)->ReadSample(i);
      REQUIRE(s.ok());
      CHECK(s->bytes == 4096);
      CHECK(s->data.empty() == !decode);
      CHECK(storage.opens() - opens == 1);
      log = storage.TakeLog();
      REQUIRE(log.size() == 1);
      CHECK((log[0].path == spec.path && log[0].offset == i * 4096 && log[0].length == 4096));
    }
  }

  // read_type memory: the data file stays open, still one read per sample.
  opens = storage.opens();
  Result<std::unique_ptr<FileReader>> kept =
      format.OpenReader(spec.path, ::iomimic::testing::TestReaderOptions(&storage, true, true));
  REQUIRE(kept.ok());
  for (std::uint64_t i : {3u, 1u, 3u, 15u}) {
    REQUIRE((*kept)->ReadSample(i).ok());
    log = storage.TakeLog();
    REQUIRE(log.size() == 1);
    CHECK(log[0].offset == i * 4096);
  }
  CHECK(storage.opens() - opens == 1);
  CHECK(storage.open_files() == 1);
  kept->reset();
  CHECK(storage.open_files() == 0);

  // A transfer size splits the sample read.
  Result<std::unique_ptr<FileReader>> chunked = format.OpenReader(
      spec.path, ::iomimic::testing::TestReaderOptions(&storage, true, false, 1000));
  REQUIRE(chunked.ok());
  REQUIRE((*chunked)->ReadSample(2).ok());
  log = storage.TakeLog();
  REQUIRE(log.size() == 5);
  for (std::size_t k = 0; k < 5; ++k) {
    CHECK(log[k].offset == 2 * 4096 + k * 1000);
    CHECK(log[k].length == (k < 4 ? 1000u : 96u));
  }
  storage.SetLogging(false);
  CHECK(format.index_cache().entries() == 1);
}

TEST_CASE("very large indexes are read in 64 MiB requests") {
  // 8.5 million 1-byte samples: 68 MB per index file.
  IndexedBinaryFormat format(kFlavor);
  MemStorage storage;
  FileSpec spec = MakeSpec("uint8", {1}, 8500000, 4, "/big/x.indexed_binary");
  spec.parameters["generation_buffer_size"] = std::to_string(64 << 20);
  REQUIRE(::iomimic::testing::WriteSpecAsCore(format, storage, spec).ok());
  storage.SetLogging(true);
  Result<std::unique_ptr<FileReader>> reader =
      format.OpenReader(spec.path, ::iomimic::testing::TestReaderOptions(&storage));
  REQUIRE_MESSAGE(reader.ok(), reader.status().ToString());
  const std::vector<Request> log = storage.TakeLog();
  storage.SetLogging(false);
  const std::uint64_t bytes = 8500000 * 8;
  const std::uint64_t request = 64 << 20;
  REQUIRE(log.size() == 4);
  for (std::size_t k = 0; k < 4; ++k) {
    CHECK(log[k].path == (k < 2 ? OffsetIndexPath(spec.path) : SizeIndexPath(spec.path)));
    CHECK(log[k].offset == (k % 2 == 0 ? 0 : request));
    CHECK(log[k].length == (k % 2 == 0 ? request : bytes - request));
  }
  const SampleIndex& index = static_cast<IndexedBinaryReader*>(reader->get())->index();
  REQUIRE(index.num_samples() == 8500000);
  bool consistent = true;
  for (std::size_t i = 0; i < 8500000; ++i) {
    consistent = consistent && index.offsets[i] == i && index.sizes[i] == 1;
  }
  CHECK(consistent);
  const std::vector<std::byte> data = ReferenceData(spec);
  for (std::uint64_t i :
       {std::uint64_t{0}, std::uint64_t{8388607}, std::uint64_t{8388608}, std::uint64_t{8499999}}) {
    Result<SampleView> s = (*reader)->ReadSample(i);
    REQUIRE(s.ok());
    REQUIRE(s->data.size() == 1);
    CHECK(s->data[0] == data[i]);
  }
}

TEST_CASE("sample ranges and the data file for collective back ends") {
  IndexedBinaryFormat format(kFlavor);
  MemStorage storage;
  FileSpec spec = MakeSpec("uint8", {300}, 40, 8, "/coll/a.indexed_binary");
  REQUIRE(::iomimic::testing::WriteSpecAsCore(format, storage, spec).ok());
  const std::vector<std::byte> data = ReferenceData(spec);

  // As the core's collective path does: keep_in_memory, ranges, one batch.
  Result<std::unique_ptr<FileReader>> reader =
      format.OpenReader(spec.path, ::iomimic::testing::TestReaderOptions(&storage, true, true));
  REQUIRE(reader.ok());
  File* file = (*reader)->data_file();
  REQUIRE(file != nullptr);
  CHECK(file->path() == spec.path);
  std::vector<std::byte> step(3 * 300);
  std::vector<ReadRequest> requests;
  std::size_t at = 0;
  for (std::uint64_t i : {std::uint64_t{4}, std::uint64_t{0}, std::uint64_t{39}}) {
    Result<std::vector<ByteRange>> ranges = (*reader)->SampleRanges(i);
    REQUIRE(ranges.ok());
    REQUIRE(ranges->size() == 1);
    CHECK((*ranges)[0].offset == i * 300);
    CHECK((*ranges)[0].length == 300);
    ReadRequest r;
    r.offset = (*ranges)[0].offset;
    r.destination = std::span<std::byte>(step).subspan(at, 300);
    requests.push_back(r);
    at += 300;
  }
  REQUIRE(file->ReadBatch(requests).ok());
  CHECK(::iomimic::testing::SameBytes(std::span<const std::byte>(step).first(300),
                                      std::span<const std::byte>(data).subspan(4 * 300, 300)));
  CHECK(::iomimic::testing::SameBytes(std::span<const std::byte>(step).subspan(600, 300),
                                      std::span<const std::byte>(data).subspan(39 * 300, 300)));
  CHECK((*reader)->SampleRanges(40).status().code() == StatusCode::kOutOfRange);
  CHECK((*reader)->data_file() == file);  // still open
  REQUIRE((*reader)->ReadSample(1).ok());
  CHECK((*reader)->data_file() == file);

  // on_demand: the file is closed after a sample.
  Result<std::unique_ptr<FileReader>> once =
      format.OpenReader(spec.path, ::iomimic::testing::TestReaderOptions(&storage));
  REQUIRE(once.ok());
  CHECK((*once)->data_file() != nullptr);
  REQUIRE((*once)->ReadSample(1).ok());
  CHECK((*once)->data_file() == nullptr);

  // An empty sample has no range.
  storage.SetBytes("/coll/z.bin", std::vector<std::byte>(10));
  storage.SetBytes("/coll/z.bin.off.idx", EncodeIndex({3, 0}));
  storage.SetBytes("/coll/z.bin.sz.idx", EncodeIndex({0, 10}));
  Result<std::unique_ptr<FileReader>> z =
      format.OpenReader("/coll/z.bin", ::iomimic::testing::TestReaderOptions(&storage));
  REQUIRE(z.ok());
  CHECK((*z)->SampleRanges(0)->empty());
  CHECK((*z)->SampleRanges(1)->size() == 1);
}

TEST_CASE("index cache: disabled, invalidated, bounded") {
  MemStorage storage;
  FileSpec a = MakeSpec("uint8", {100}, 100, 1, "/c/a.indexed_binary");
  FileSpec b = MakeSpec("uint8", {100}, 100, 2, "/c/b.indexed_binary");
  {
    IndexedBinaryFormat writer(kFlavor);
    REQUIRE(::iomimic::testing::WriteSpecAsCore(writer, storage, a).ok());
    REQUIRE(::iomimic::testing::WriteSpecAsCore(writer, storage, b).ok());
  }
  auto loads_index = [&](IndexedBinaryFormat& format, const std::string& path) {
    Result<std::unique_ptr<FileReader>> r =
        format.OpenReader(path, ::iomimic::testing::TestReaderOptions(&storage));
    REQUIRE_MESSAGE(r.ok(), r.status().ToString());
    REQUIRE((*r)->ReadSample(0).ok());
    return static_cast<IndexedBinaryReader*>(r->get())->loaded_index();
  };

  SUBCASE("disabled: every reader reads the index files") {
    IndexedBinaryFormat format(kFlavor, 0);
    CHECK(loads_index(format, a.path));
    CHECK(loads_index(format, a.path));
    CHECK(format.index_cache().entries() == 0);
  }
  SUBCASE("a data file that changes size has its index read again") {
    IndexedBinaryFormat format(kFlavor);
    CHECK(loads_index(format, a.path));
    CHECK_FALSE(loads_index(format, a.path));
    FileSpec a2 = a;
    a2.num_samples = 60;
    IndexedBinaryFormat writer(kFlavor);
    REQUIRE(::iomimic::testing::WriteSpecAsCore(writer, storage, a2).ok());
    Result<std::unique_ptr<FileReader>> r =
        format.OpenReader(a.path, ::iomimic::testing::TestReaderOptions(&storage));
    REQUIRE(r.ok());
    CHECK(static_cast<IndexedBinaryReader*>(r->get())->loaded_index());
    CHECK((*r)->num_samples() == 60);
    CHECK(format.index_cache().entries() == 1);
    CHECK_FALSE(loads_index(format, a.path));
  }
  SUBCASE("least recently used indexes are evicted") {
    // Each index takes 2 * 100 * 8 = 1600 bytes: room for one.
    IndexedBinaryFormat format(kFlavor, 2000);
    CHECK(loads_index(format, a.path));
    CHECK_FALSE(loads_index(format, a.path));
    CHECK(loads_index(format, b.path));
    CHECK(format.index_cache().entries() == 1);
    CHECK(format.index_cache().bytes() == 1600);
    CHECK(loads_index(format, a.path));
  }
  SUBCASE("an index larger than the cache is not kept") {
    IndexedBinaryFormat format(kFlavor, 1000);
    CHECK(loads_index(format, a.path));
    CHECK(loads_index(format, a.path));
    CHECK(format.index_cache().entries() == 0);
  }
  SUBCASE("IndexCache keeps the most recently used") {
    IndexCache cache(3 * 16);
    auto make = [](std::size_t n) {
      auto index = std::make_shared<SampleIndex>();
      index->offsets.assign(n, 0);
      index->sizes.assign(n, 0);
      return index;
    };
    cache.Insert("x", make(1));
    cache.Insert("y", make(1));
    cache.Insert("z", make(1));
    CHECK(cache.Find("x") != nullptr);  // x is now the most recent
    cache.Insert("w", make(1));         // evicts y
    CHECK(cache.Find("y") == nullptr);
    CHECK(cache.Find("x") != nullptr);
    CHECK(cache.Find("z") != nullptr);
    CHECK(cache.Find("w") != nullptr);
    cache.Insert("x", make(2));  // replaces x, evicts the oldest (z... then w)
    CHECK(cache.bytes() <= 48);
    CHECK(cache.Find("x")->num_samples() == 2);
    cache.Clear();
    CHECK(cache.entries() == 0);
    CHECK(cache.bytes() == 0);
  }
}

TEST_CASE("foreign indexes: variable sizes and arbitrary offsets") {
  IndexedBinaryFormat format(kFlavor);
  MemStorage storage;
  std::vector<std::byte> data(1000);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = std::byte(i * 13 + 5);
  storage.SetBytes("/f.bin", data);
  const std::vector<std::uint64_t> offsets = {900, 0, 10, 10, 999, 1000};
  const std::vector<std::uint64_t> sizes = {100, 10, 0, 500, 1, 0};
  storage.SetBytes("/f.bin.off.idx", EncodeIndex(offsets));
  storage.SetBytes("/f.bin.sz.idx", EncodeIndex(sizes));
  for (bool keep : {false, true}) {
    Result<std::unique_ptr<FileReader>> reader =
        format.OpenReader("/f.bin", ::iomimic::testing::TestReaderOptions(&storage, true, keep));
    REQUIRE_MESSAGE(reader.ok(), reader.status().ToString());
    CHECK(static_cast<IndexedBinaryReader*>(reader->get())->index().largest == 500);
    REQUIRE((*reader)->num_samples() == 6);
    for (std::size_t i = 0; i < 6; ++i) {
      Result<SampleView> s = (*reader)->ReadSample(i);
      REQUIRE(s.ok());
      CHECK(s->bytes == sizes[i]);
      CHECK(::iomimic::testing::SameBytes(
          s->data, std::span<const std::byte>(data).subspan(offsets[i], sizes[i])));
    }
  }
  // An empty index: no samples.
  storage.SetBytes("/e.bin", {});
  storage.SetBytes("/e.bin.off.idx", {});
  storage.SetBytes("/e.bin.sz.idx", {});
  Result<std::unique_ptr<FileReader>> empty =
      format.OpenReader("/e.bin", ::iomimic::testing::TestReaderOptions(&storage));
  REQUIRE(empty.ok());
  CHECK((*empty)->num_samples() == 0);
  CHECK((*empty)->ReadSample(0).status().code() == StatusCode::kOutOfRange);
}

TEST_CASE("samples land in the memory the storage allocates") {
  IndexedBinaryFormat format(kFlavor);
  MemStorage mem;
  FileSpec spec = MakeSpec("uint8", {64}, 8, 2, "/dev/x.indexed_binary");
  REQUIRE(::iomimic::testing::WriteSpecAsCore(format, mem, spec).ok());
  DeviceMemStorage device(&mem);
  for (bool decode : {true, false}) {
    Result<std::unique_ptr<FileReader>> reader =
        format.OpenReader(spec.path, ::iomimic::testing::TestReaderOptions(&device, decode));
    REQUIRE(reader.ok());
    const int before = device.device_allocations;
    Result<SampleView> s = (*reader)->ReadSample(5);
    REQUIRE(s.ok());
    CHECK(s->bytes == 64);
    CHECK(s->data.empty());  // device memory: no host view, even when decoding
    CHECK(device.device_allocations == before + 1);
  }
}

TEST_CASE("missing files") {
  IndexedBinaryFormat format(kFlavor);
  MemStorage storage;
  FileSpec spec = MakeSpec("uint8", {16}, 4, 1, "/m/x.indexed_binary");
  REQUIRE(::iomimic::testing::WriteSpecAsCore(format, storage, spec).ok());
  const std::vector<std::byte> off = storage.Bytes(OffsetIndexPath(spec.path));
  const std::vector<std::byte> sz = storage.Bytes(SizeIndexPath(spec.path));

  SUBCASE("offset index") {
    REQUIRE(storage.Remove(OffsetIndexPath(spec.path)).ok());
    const Status s = ::iomimic::testing::OpenAndRead(format, storage, spec.path);
    CHECK(s.code() == StatusCode::kNotFound);
    CHECK_MESSAGE(s.message().find("index file /m/x.indexed_binary.off.idx") != std::string::npos,
                  s.ToString());
  }
  SUBCASE("size index") {
    REQUIRE(storage.Remove(SizeIndexPath(spec.path)).ok());
    const Status s = ::iomimic::testing::OpenAndRead(format, storage, spec.path);
    CHECK(s.code() == StatusCode::kNotFound);
    CHECK_MESSAGE(s.message().find("index file /m/x.indexed_binary.sz.idx") != std::string::npos,
                  s.ToString());
  }
  SUBCASE("data") {
    REQUIRE(storage.Remove(spec.path).ok());
    const Status s = ::iomimic::testing::OpenAndRead(format, storage, spec.path);
    CHECK(s.code() == StatusCode::kNotFound);
    CHECK(s.message().find("/m/x.indexed_binary") != std::string::npos);
  }
  SUBCASE("no storage") {
    ReaderOptions none;
    CHECK(format.OpenReader(spec.path, none).status().code() == StatusCode::kInvalidArgument);
  }
  CHECK(storage.open_files() == 0);
}

TEST_CASE("corruption is reported with the file and offset") {
  IndexedBinaryFormat format(kFlavor, 0);  // no cache: every open checks the index
  MemStorage storage;
  FileSpec spec = MakeSpec("uint8", {100}, 10, 1, "/bad/x.indexed_binary");
  REQUIRE(::iomimic::testing::WriteSpecAsCore(format, storage, spec).ok());
  const std::string off = OffsetIndexPath(spec.path);
  const std::string sz = SizeIndexPath(spec.path);
  std::vector<std::uint64_t> offsets = DecodeIndex(storage.Bytes(off));
  std::vector<std::uint64_t> sizes = DecodeIndex(storage.Bytes(sz));

  SUBCASE("offset index not a whole number of entries") {
    std::vector<std::byte> b = storage.Bytes(off);
    b.resize(b.size() - 3);
    storage.SetBytes(off, b);
    CheckCorruption(::iomimic::testing::OpenAndRead(format, storage, spec.path), off,
                    "at offset 72");
  }
  SUBCASE("size index not a whole number of entries") {
    std::vector<std::byte> b = storage.Bytes(sz);
    b.push_back(std::byte{1});
    storage.SetBytes(sz, b);
    CheckCorruption(::iomimic::testing::OpenAndRead(format, storage, spec.path), sz,
                    "at offset 80");
  }
  SUBCASE("index files of different lengths") {
    sizes.pop_back();
    storage.SetBytes(sz, EncodeIndex(sizes));
    CheckCorruption(::iomimic::testing::OpenAndRead(format, storage, spec.path), sz,
                    "holds 9 entries");
  }
  SUBCASE("an entry past the end of the data file") {
    offsets[3] = 950;  // 950 + 100 > 1000
    storage.SetBytes(off, EncodeIndex(offsets));
    const Status s = ::iomimic::testing::OpenAndRead(format, storage, spec.path);
    CheckCorruption(s, off, "entry 3 (offset 950, size 100");
    CHECK(s.message().find("at offset 24") != std::string::npos);
    CHECK(s.message().find(sz) != std::string::npos);
  }
  SUBCASE("a size that overflows") {
    sizes[9] = std::numeric_limits<std::uint64_t>::max();
    storage.SetBytes(sz, EncodeIndex(sizes));
    CheckCorruption(::iomimic::testing::OpenAndRead(format, storage, spec.path), off, "entry 9");
  }
  SUBCASE("an offset that overflows") {
    offsets[0] = std::numeric_limits<std::uint64_t>::max() - 10;
    storage.SetBytes(off, EncodeIndex(offsets));
    CheckCorruption(::iomimic::testing::OpenAndRead(format, storage, spec.path), off, "entry 0");
  }
  SUBCASE("the data file shrinks after the reader opened it") {
    Result<std::unique_ptr<FileReader>> reader =
        format.OpenReader(spec.path, ::iomimic::testing::TestReaderOptions(&storage, true, true));
    REQUIRE(reader.ok());
    std::vector<std::byte> data = storage.Bytes(spec.path);
    data.resize(850);
    storage.SetBytes(spec.path, data);
    CHECK((*reader)->ReadSample(7).ok());  // bytes 700..800 are still there
    const Status s = (*reader)->ReadSample(8).status();
    CheckCorruption(s, spec.path, "sample 8 needs 100 bytes from offset 800");
    CHECK(s.message().find("the file ends at offset 850") != std::string::npos);
    CHECK(storage.open_files() == 0);
    // The next call reopens the file and fails the same way.
    CheckCorruption((*reader)->ReadSample(9).status(), spec.path, "truncated file");
  }
  SUBCASE("a truncated data file is caught against a cached index") {
    IndexedBinaryFormat cached(kFlavor);
    REQUIRE(::iomimic::testing::OpenAndRead(cached, storage, spec.path).ok());
    std::vector<std::byte> data = storage.Bytes(spec.path);
    data.resize(990);
    storage.SetBytes(spec.path, data);
    CheckCorruption(::iomimic::testing::OpenAndRead(cached, storage, spec.path), off, "entry 9");
  }
  CHECK(storage.open_files() == 0);
}

TEST_CASE("concurrent writers and readers share one format and its cache") {
  IndexedBinaryFormat format(kFlavor);
  MemStorage storage;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      FileSpec spec =
          MakeSpec("uint8", {32, 32}, 20, 1000 + static_cast<std::uint64_t>(t),
                   "/mt/" + std::to_string(t % 4) + "_" + std::to_string(t) + ".indexed_binary");
      spec.parameters["generation_buffer_size"] = "5000";
      if (!::iomimic::testing::WriteSpecAsCore(format, storage, spec).ok()) ++failures;
      const std::vector<std::byte> data = ReferenceData(spec);
      for (int round = 0; round < 20; ++round) {
        Result<std::unique_ptr<FileReader>> r = format.OpenReader(
            spec.path, ::iomimic::testing::TestReaderOptions(&storage, true, round % 2 == 1));
        if (!r.ok()) {
          ++failures;
          continue;
        }
        for (std::uint64_t i = 0; i < 20; i += 3) {
          Result<SampleView> s = (*r)->ReadSample(i);
          if (!s.ok() || !::iomimic::testing::SameBytes(
                             s->data, std::span<const std::byte>(data).subspan(i * 1024, 1024))) {
            ++failures;
          }
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  CHECK(failures == 0);
  CHECK(format.index_cache().entries() == 8);
  CHECK(storage.open_files() == 0);
}

TEST_CASE("posix files round trip") {
  TempDir dir;
  IndexedBinaryFormat format(kFlavor);
  PosixStorage storage;
  FileSpec spec = MakeSpec("float64", {9, 11}, 50, 77, (dir.path() / "p.indexed_binary").string());
  spec.parameters["generation_buffer_size"] = "10000";
  REQUIRE(::iomimic::testing::WriteSpecAsCore(format, storage, spec).ok());
  CHECK(fs::file_size(spec.path) == *format.ExpectedFileSize(spec));
  CHECK(fs::file_size(OffsetIndexPath(spec.path)) == 50 * 8);
  CHECK(fs::file_size(SizeIndexPath(spec.path)) == 50 * 8);
  for (const auto& entry : fs::directory_iterator(dir.path())) {
    CHECK_MESSAGE(entry.path().filename().string().find("partial") == std::string::npos,
                  entry.path().string());
  }
  CheckRoundTrip(format, storage, spec, false);
  CheckRoundTrip(format, storage, spec, true);
}

TEST_CASE("numpy reads the three files as DLIO's readers do") {
  if (!::iomimic::testing::HavePythonModules("numpy")) {
    MESSAGE("skipped: /usr/bin/python3 with numpy is not available");
    return;
  }
  TempDir dir;
  PosixStorage storage;
  IndexedBinaryFormat format(kFlavor);
  FileSpec spec = MakeSpec("uint8", {45, 45}, 333, 5, (dir.path() / "n.indexed_binary").string());
  spec.parameters["generation_buffer_size"] = "4096";
  REQUIRE(::iomimic::testing::WriteSpecAsCore(format, storage, spec).ok());
  {
    const std::vector<std::byte> data = ReferenceData(spec);
    std::ofstream r(spec.path + ".ref", std::ios::binary);
    r.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
  }
  const std::string script = R"(
import sys, numpy as np
path, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
off = np.fromfile(path + '.off.idx', dtype='<u8')
sz = np.fromfile(path + '.sz.idx', dtype='<u8')
assert off.shape == (n,) and sz.shape == (n,), (off.shape, sz.shape)
assert (off == np.arange(n, dtype=np.uint64) * size).all(), 'offsets'
assert (sz == size).all(), 'sizes'
data = np.memmap(path, mode='r', dtype=np.uint8)
assert data.size == int(sz.sum()), (data.size, int(sz.sum()))
ref = np.fromfile(path + '.ref', dtype=np.uint8)
for i in (0, 1, n // 2, n - 1):
    assert (data[off[i]:off[i] + sz[i]] == ref[i * size:(i + 1) * size]).all(), i
print('ok')
)";
  const fs::path py = dir.path() / "check.py";
  {
    std::ofstream s(py);
    s << script;
  }
  std::string out;
  const int rc =
      ::iomimic::testing::RunCommand(std::string(::iomimic::testing::kSystemPython) + " " +
                                         py.string() + " " + spec.path + " 333 2025",
                                     &out);
  CHECK_MESSAGE(rc == 0, out);
}

TEST_CASE("written in parts, the files are WriteFile's, byte for byte") {
  const FileSpec spec = MakeSpec("uint16", {777}, 41, 3, "/p/parts.indexed_binary");
  IndexedBinaryFormat format(kFlavor);
  MemStorage whole, parts;
  REQUIRE(::iomimic::testing::WriteSpecAsCore(format, whole, spec).ok());
  Result<PayloadLayout> layout = iomimic::testing::WriteInParts(format, parts, spec, 6);
  REQUIRE(layout.ok());
  CHECK(layout->payload_offset == 0);
  CHECK(layout->payload_bytes == 777 * 2 * 41);
  for (const std::string& p : {spec.path, OffsetIndexPath(spec.path), SizeIndexPath(spec.path)}) {
    CAPTURE(p);
    CHECK(parts.Bytes(p) == whole.Bytes(p));
  }
  FileSpec gzip = spec;
  gzip.compression = "gzip";
  CHECK(format.CanWriteInParts(gzip).code() == StatusCode::kNotSupported);
}

}  // namespace
}  // namespace iomimic::indexed_binary
