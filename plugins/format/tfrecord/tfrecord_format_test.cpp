// Tests of the tfrecord format plugin: CRC-32C, the hand-encoded Example
// wire format against protobuf, writing, the index file, the streaming read
// pattern, keep_in_memory, decode off and corruption handling.
// Cases every format shares (an index past the end, a missing file, a reader
// without a storage) run in the format conformance suite
// (tests/conformance/format_conformance_test.cpp).

#include "tfrecord_format.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "crc32c.h"
#include "example.pb.h"
#include "example_wire.h"
#include "iomimic/iomimic.h"
#include "iomimic/testing/damaged_copies.h"
#include "iomimic/testing/file_spec.h"
#include "iomimic/testing/format_test_support.h"
#include "iomimic/testing/memory_storage.h"
#include "iomimic/testing/posix_test_storage.h"
#include "tfrecord_reader.h"
#include "tfrecord_writer.h"

extern "C" const IomimicPluginDescriptor iomimic_plugin_descriptor;

namespace iomimic::tfrecord {
namespace {

namespace fs = std::filesystem;

// The SDK's in-memory test storage (iomimic/testing/memory_storage.h).
using MemStorage = testing::MemoryStorage;

FileSpec MakeSpec(const std::string& dtype, std::vector<std::uint64_t> shape, std::uint64_t samples,
                  std::uint64_t seed, const std::string& path = "/data/train/t.tfrecord") {
  return ::iomimic::testing::TestFileSpec(dtype, std::move(shape), samples, seed, path);
}

// The bytes of sample i, straight from the generator definition.
std::vector<std::byte> ReferenceSample(const FileSpec& spec, std::uint64_t i) {
  std::vector<std::byte> data(spec.sample_bytes());
  spec.PayloadContent(i * spec.sample_bytes()).Fill(data);
  return data;
}

// The Example of sample i built and serialized by protobuf (deterministic
// serialization orders map keys).
std::string ProtobufExample(const std::string& image, std::int64_t size) {
  proto::Example example;
  auto& features = *example.mutable_features()->mutable_feature();
  features["image"].mutable_bytes_list()->add_value(image);
  features["size"].mutable_int64_list()->add_value(size);
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    REQUIRE(example.SerializeToCodedStream(&coded));
  }
  return out;
}

std::string AsString(std::span<const std::byte> b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

std::vector<std::byte> AsBytes(const std::string& s) {
  std::vector<std::byte> out(s.size());
  std::memcpy(out.data(), s.data(), s.size());
  return out;
}

// A TFRecord file built independently of the writer: protobuf for the
// payloads, Crc32cExtendSoftware for the checksums.
std::vector<std::byte> ReferenceFile(const FileSpec& spec) {
  std::string file;
  for (std::uint64_t i = 0; i < spec.num_samples; ++i) {
    const std::string payload = ProtobufExample(AsString(ReferenceSample(spec, i)),
                                                static_cast<std::int64_t>(spec.sample_bytes()));
    char header[12];
    const std::uint64_t length = payload.size();
    std::memcpy(header, &length, 8);
    const std::uint32_t length_crc = MaskCrc(Crc32cExtendSoftware(0, header, 8));
    std::memcpy(header + 8, &length_crc, 4);
    const std::uint32_t payload_crc =
        MaskCrc(Crc32cExtendSoftware(0, payload.data(), payload.size()));
    file.append(header, 12);
    file += payload;
    file.append(reinterpret_cast<const char*>(&payload_crc), 4);
  }
  return AsBytes(file);
}

Result<std::unique_ptr<TfRecordReader>> OpenTf(Storage& storage, const std::string& path,
                                               const ReaderOptions& options) {
  Result<std::unique_ptr<FileReader>> r = TfRecordReader::Open(path, options);
  if (!r.ok()) return r.status();
  return std::unique_ptr<TfRecordReader>(static_cast<TfRecordReader*>(r->release()));
}

// Reads every sample in `order` and compares with the reference.
void CheckSamples(Format& format, Storage& storage, const FileSpec& spec, bool keep,
                  std::uint64_t transfer, const std::vector<std::uint64_t>& order) {
  Result<std::unique_ptr<FileReader>> reader =
      format.OpenReader(spec.path, testing::TestReaderOptions(&storage, true, keep, transfer));
  REQUIRE_MESSAGE(reader.ok(), reader.status().ToString());
  REQUIRE((*reader)->num_samples() == spec.num_samples);
  for (std::uint64_t i : order) {
    Result<SampleView> sample = (*reader)->ReadSample(i);
    REQUIRE_MESSAGE(sample.ok(), sample.status().ToString());
    CHECK(sample->bytes == spec.sample_bytes());
    CHECK(testing::SameBytes(sample->data, ReferenceSample(spec, i)));
  }
}

std::vector<std::uint64_t> InOrder(std::uint64_t n) {
  std::vector<std::uint64_t> v(n);
  for (std::uint64_t i = 0; i < n; ++i) v[i] = i;
  return v;
}

void CheckCorruption(const Status& s, const std::string& path, const std::string& fragment = "") {
  CHECK_MESSAGE(testing::IsCorruptionNaming(s, path, fragment), s.ToString());
}

// Reads every sample of `path` with a fresh reader; returns the first error.
Status ReadAll(Format& format, Storage& storage, const std::string& path, bool decode = true,
               bool keep = true) {
  Result<std::unique_ptr<FileReader>> reader =
      format.OpenReader(path, testing::TestReaderOptions(&storage, decode, keep));
  if (!reader.ok()) return reader.status();
  for (std::uint64_t i = 0; i < (*reader)->num_samples(); ++i) {
    Result<SampleView> s = (*reader)->ReadSample(i);
    if (!s.ok()) return s.status();
  }
  return Status::OK();
}

// ---------------------------------------------------------------------------
// CRC-32C.

TEST_CASE("crc32c check value on both implementations") {
  const char kCheck[] = "123456789";
  CHECK(Crc32cExtendSoftware(0, kCheck, 9) == 0xe3069283u);
  CHECK(Crc32cExtendIsal(0, kCheck, 9) == 0xe3069283u);
  CHECK(Crc32c(kCheck, 9) == 0xe3069283u);
  CHECK(std::string(Crc32cImplementation()) == "isa-l");
  // Every implementation, every length and alignment up to a few vectors,
  // and extension across a split.
  {
    std::vector<unsigned char> data(4096 + 64);
    std::uint64_t x = 88172645463325252ull;
    for (auto& b : data) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      b = static_cast<unsigned char>(x);
    }
    for (std::size_t offset : {0, 1, 3, 8}) {
      for (std::size_t len : {0, 1, 7, 15, 16, 63, 64, 255, 256, 1000, 4096}) {
        const unsigned char* p = data.data() + offset;
        const std::uint32_t want = Crc32cExtendSoftware(0, p, len);
        CHECK(Crc32cExtendIsal(0, p, len) == want);
        CHECK(Crc32cExtend(Crc32cExtend(0, p, len / 3), p + len / 3, len - len / 3) == want);
        if (Crc32cHardwareAvailable()) CHECK(Crc32cExtendHardware(0, p, len) == want);
      }
    }
  }
  if (Crc32cHardwareAvailable()) {
    CHECK(Crc32cExtendHardware(0, kCheck, 9) == 0xe3069283u);
  } else {
    MESSAGE("SSE4.2 not available: hardware path not tested");
  }
  // RFC 3720 (iSCSI) B.4 vectors.
  std::vector<unsigned char> zeros(32, 0), ones(32, 0xff), up(32), down(32);
  for (int i = 0; i < 32; ++i) {
    up[i] = static_cast<unsigned char>(i);
    down[i] = static_cast<unsigned char>(31 - i);
  }
  CHECK(Crc32c(zeros.data(), 32) == 0x8a9136aau);
  CHECK(Crc32c(ones.data(), 32) == 0x62a8ab43u);
  CHECK(Crc32c(up.data(), 32) == 0x46dd794eu);
  CHECK(Crc32c(down.data(), 32) == 0x113fdb5cu);
  CHECK(Crc32c(kCheck, 0) == 0u);
}

TEST_CASE("crc32c implementations agree on every length, alignment and split") {
  std::vector<unsigned char> data(3 * 4096 * 4 + 333);
  Xoshiro256 rng(42);
  rng.Fill(std::as_writable_bytes(std::span<unsigned char>(data)));
  const bool hw = Crc32cHardwareAvailable();
  for (std::size_t offset : {0, 1, 3, 7}) {
    for (std::size_t length :
         {0, 1, 7, 8, 9, 31, 32, 33, 255, 4096, 12287, 12288, 12289, 24576, 40000, 49152 + 100}) {
      if (offset + length > data.size()) continue;
      const std::uint32_t sw = Crc32cExtendSoftware(0, data.data() + offset, length);
      if (hw) CHECK(Crc32cExtendHardware(0, data.data() + offset, length) == sw);
      CHECK(Crc32c(data.data() + offset, length) == sw);
      // Extending piece by piece gives the same value.
      for (std::size_t split : {std::size_t{0}, length / 3, length / 2, length}) {
        const std::uint32_t a = Crc32cExtend(0, data.data() + offset, split);
        CHECK(Crc32cExtend(a, data.data() + offset + split, length - split) == sw);
        const std::uint32_t b = Crc32cExtendSoftware(0, data.data() + offset, split);
        CHECK(Crc32cExtendSoftware(b, data.data() + offset + split, length - split) == sw);
      }
    }
  }
}

TEST_CASE("masked crc") {
  for (std::uint32_t v : {0u, 1u, 0xe3069283u, 0xffffffffu, 0x12345678u}) {
    CHECK(UnmaskCrc(MaskCrc(v)) == v);
    CHECK(MaskCrc(v) == (((v >> 15) | (v << 17)) + 0xa282ead8u));
  }
  // The header of an empty record, as TensorFlow writes it.
  std::byte header[kHeaderSize];
  EncodeRecordHeader(0, header);
  CHECK(LoadLe64(header) == 0);
  CHECK(LoadLe32(header + 8) == MaskCrc(Crc32cExtendSoftware(0, header, 8)));
}

// ---------------------------------------------------------------------------
// The Example wire format.

TEST_CASE("hand-encoded Example equals protobuf's serialization") {
  for (std::uint64_t n :
       {0ull, 1ull, 5ull, 100ull, 104ull, 105ull, 127ull, 128ull, 129ull, 16250ull, 16370ull,
        16383ull, 16384ull, 114244ull, 2097151ull, 2097152ull, 2828486ull}) {
    for (std::int64_t size : {static_cast<std::int64_t>(n), std::int64_t{0}, std::int64_t{-1},
                              std::int64_t{338}, std::int64_t{1} << 40}) {
      std::string image(n, '\0');
      for (std::uint64_t i = 0; i < n; ++i) image[i] = static_cast<char>(i * 7 + 3);
      const ExampleLayout layout = MakeExampleLayout(n, size);
      const std::string mine = layout.prefix + image + layout.suffix;
      const std::string theirs = ProtobufExample(image, size);
      CHECK_MESSAGE(mine == theirs, "image size " << n << " size value " << size);
      CHECK(layout.payload_size() == theirs.size());
      CHECK(ExamplePayloadSize(n, size) == theirs.size());
      // And protobuf parses it back to the same message.
      proto::Example parsed;
      REQUIRE(parsed.ParseFromString(mine));
      CHECK(parsed.features().feature().at("image").bytes_list().value(0) == image);
      CHECK(parsed.features().feature().at("size").int64_list().value(0) == size);
      proto::Example built;
      REQUIRE(built.ParseFromString(theirs));
      CHECK(built.ByteSizeLong() == mine.size());
    }
  }
}

TEST_CASE("field numbers match tensorflow's example.proto") {
  CHECK(proto::Example::kFeaturesFieldNumber == 1);
  CHECK(proto::Features::kFeatureFieldNumber == 1);
  CHECK(proto::Feature::kBytesListFieldNumber == 1);
  CHECK(proto::Feature::kFloatListFieldNumber == 2);
  CHECK(proto::Feature::kInt64ListFieldNumber == 3);
  CHECK(proto::BytesList::kValueFieldNumber == 1);
  CHECK(proto::FloatList::kValueFieldNumber == 1);
  CHECK(proto::Int64List::kValueFieldNumber == 1);
  // FloatList is packed: two floats are one length-delimited field.
  proto::FloatList floats;
  floats.add_value(1.0f);
  floats.add_value(2.0f);
  CHECK(floats.SerializeAsString() == std::string("\x0a\x08\x00\x00\x80\x3f\x00\x00\x00\x40", 10));
}

// ---------------------------------------------------------------------------
// Plugin surface.

TEST_CASE("this format's traits and options") {
  CHECK(testing::DescribeFormatPlugin(iomimic_plugin_descriptor) ==
        "name=tfrecord capabilities=host_decode,multi_sample "
        "options=index:bool=true | format name=tfrecord extension=tfrecord "
        "multi_sample_files=1 partial_reads=0 needs_host_decode=1 "
        "predictable_size=1 streamed=1 element_type=");

  PluginContext ctx;
  Status error;
  auto format = testing::CreateThroughDescriptor<Format>(iomimic_plugin_descriptor, ctx, &error);
  REQUIRE_MESSAGE(format != nullptr, error.ToString());
  CHECK(static_cast<TfRecordFormat*>(format.get())->options().write_index);
  format.reset();

  ctx.options = PluginOptions("format plugin 'tfrecord'", {{"index", "false"}});
  void* object = iomimic_plugin_descriptor.create(&ctx, &error);
  REQUIRE(object != nullptr);
  CHECK_FALSE(static_cast<TfRecordFormat*>(object)->options().write_index);
  iomimic_plugin_descriptor.destroy(object);

  ctx.options = PluginOptions("format plugin 'tfrecord'", {{"index", "maybe"}});
  CHECK(iomimic_plugin_descriptor.create(&ctx, &error) == nullptr);
  CHECK(error.code() == StatusCode::kInvalidArgument);
  CHECK(error.message().find("index") != std::string::npos);
}

TEST_CASE("validate") {
  TfRecordFormat format;
  CHECK(format.Validate(MakeSpec("uint8", {338, 338}, 1251, 1)).ok());
  CHECK(format.Validate(MakeSpec("float64", {7}, 1, 1)).ok());
  CHECK(format.Validate(MakeSpec("uint8", {}, 1, 1)).code() == StatusCode::kInvalidArgument);
  CHECK(format.Validate(MakeSpec("uint8", {4, 0}, 1, 1)).code() == StatusCode::kInvalidArgument);
  CHECK(format.Validate(MakeSpec("uint8", {4}, 0, 1)).code() == StatusCode::kInvalidArgument);
  CHECK(format.Validate(MakeSpec("uint8", {1u << 16, 1u << 15}, 1, 1)).code() ==
        StatusCode::kInvalidArgument);  // a 2 GiB Example
  CHECK(format.Validate(MakeSpec("uint8", {1u << 30}, std::uint64_t{1} << 40, 1)).code() ==
        StatusCode::kInvalidArgument);  // 2^70 bytes
  FileSpec gz = MakeSpec("uint8", {4}, 1, 1);
  gz.compression = "gzip";
  Status s = format.Validate(gz);
  CHECK(s.code() == StatusCode::kNotSupported);
  CHECK(s.message().find("gzip") != std::string::npos);
  CHECK(format.ExpectedFileSize(gz).status().code() == StatusCode::kNotSupported);
}

// ---------------------------------------------------------------------------
// Writing.

TEST_CASE("written bytes equal protobuf examples framed with software CRCs") {
  TfRecordFormat format(WriterOptions{4096, false});
  MemStorage storage;
  for (const auto& spec : {MakeSpec("uint8", {10, 13}, 5, 3), MakeSpec("float32", {3, 3, 3}, 2, 4),
                           MakeSpec("bool", {100}, 3, 5), MakeSpec("int16", {1000, 7}, 3, 6),
                           MakeSpec("uint8", {1}, 1, 7)}) {
    REQUIRE(testing::WriteSpec(format, storage, spec).ok());
    const std::vector<std::byte> bytes = storage.Bytes(spec.path);
    CHECK(testing::SameBytes(bytes, ReferenceFile(spec)));
    Result<std::uint64_t> expected = format.ExpectedFileSize(spec);
    REQUIRE(expected.ok());
    CHECK(*expected == bytes.size());
  }
}

TEST_CASE("content options reach the image bytes") {
  TfRecordFormat format(WriterOptions{4096, false});
  MemStorage storage;
  FileSpec spec = MakeSpec("uint8", {100, 100}, 4, 3);
  const std::vector<std::byte> plain = ReferenceSample(spec, 1);
  spec.content.compress_percentage = 50;
  spec.content.dedupe_percentage = 30;
  REQUIRE(testing::WriteSpec(format, storage, spec).ok());
  CHECK(testing::SameBytes(storage.Bytes(spec.path), ReferenceFile(spec)));
  const std::vector<std::byte> controlled = ReferenceSample(spec, 1);
  CHECK(controlled != plain);
  // Sample 1 is stream bytes [10000, 20000): content block 3 (stream bytes
  // 12288..16383) is its bytes 2288..6383, and the block's second half zeros.
  CHECK(std::all_of(controlled.begin() + 2288 + 2048, controlled.begin() + 2288 + 4096,
                    [](std::byte v) { return v == std::byte{0}; }));
  CHECK_FALSE(std::all_of(controlled.begin() + 2288, controlled.begin() + 2288 + 2048,
                          [](std::byte v) { return v == std::byte{0}; }));
}

TEST_CASE("expected size is exact across varint boundaries") {
  TfRecordFormat format(WriterOptions{1 << 16, false});
  MemStorage storage;
  // Sample sizes around the 1/2/3-byte varint boundaries of every length.
  for (std::uint64_t n : {1ull, 100ull, 105ull, 106ull, 120ull, 127ull, 128ull, 16360ull, 16370ull,
                          16383ull, 16384ull, 70000ull}) {
    FileSpec spec = MakeSpec("uint8", {n}, 2, n);
    REQUIRE(testing::WriteSpec(format, storage, spec).ok());
    CHECK_MESSAGE(*format.ExpectedFileSize(spec) == storage.Bytes(spec.path).size(), "n=" << n);
  }
}

TEST_CASE("writes are chunk-aligned and sequential") {
  TfRecordFormat format(WriterOptions{8192, false});
  MemStorage storage;
  FileSpec spec = MakeSpec("uint8", {100, 100}, 7, 1);
  storage.SetLogging(true);
  REQUIRE(testing::WriteSpec(format, storage, spec).ok());
  std::vector<testing::StorageRequest> log = storage.TakeLog();
  const std::uint64_t size = *format.ExpectedFileSize(spec);
  REQUIRE(log.size() == (size + 8191) / 8192);
  for (std::size_t i = 0; i < log.size(); ++i) {
    CHECK(log[i].write);
    CHECK(log[i].offset == i * 8192);
    CHECK(log[i].length == std::min<std::uint64_t>(8192, size - i * 8192));
  }
}

TEST_CASE("same seed gives the same bytes, another seed other bytes") {
  TfRecordFormat format(WriterOptions{1 << 20, false});
  MemStorage storage;
  FileSpec a = MakeSpec("uint8", {64, 64}, 3, 11, "/d/train/a.tfrecord");
  FileSpec b = a;
  b.path = "/d/train/b.tfrecord";
  FileSpec c = a;
  c.path = "/d/train/c.tfrecord";
  c.seed = 12;
  REQUIRE(testing::WriteSpec(format, storage, a).ok());
  REQUIRE(testing::WriteSpec(format, storage, b).ok());
  REQUIRE(testing::WriteSpec(format, storage, c).ok());
  CHECK(storage.Bytes(a.path) == storage.Bytes(b.path));
  CHECK(storage.Bytes(a.path) != storage.Bytes(c.path));
  // Samples of one file differ from each other.
  CHECK(ReferenceSample(a, 0) != ReferenceSample(a, 1));
}

// ---------------------------------------------------------------------------
// The index file.

TEST_CASE("index location follows DLIO's layout") {
  CHECK(IndexLocationFor("/d/train/img_1_of_8.tfrecord").path ==
        "/d/index/train/img_1_of_8.tfrecord.idx");
  CHECK(IndexLocationFor("/d/train/img_1_of_8.tfrecord").directory == "/d/index/train");
  CHECK(IndexLocationFor("/d/valid/img_1_of_2.tfrecord").path ==
        "/d/index/valid/img_1_of_2.tfrecord.idx");
  // Subfolders: the index folder stays flat.
  CHECK(IndexLocationFor("/d/train/03/img_3_of_8.tfrecord").path ==
        "/d/index/train/img_3_of_8.tfrecord.idx");
  // A data folder that is itself called train.
  CHECK(IndexLocationFor("/x/train/train/p.tfrecord").path ==
        "/x/train/index/train/p.tfrecord.idx");
  CHECK(IndexLocationFor("data/bert/train/part_1_of_5.tfrecord").path ==
        "data/bert/index/train/part_1_of_5.tfrecord.idx");
  CHECK(IndexLocationFor("train/a.tfrecord").path == "index/train/a.tfrecord.idx");
  // Not DLIO's layout: beside the file.
  CHECK(IndexLocationFor("/tmp/x/a.tfrecord").path == "/tmp/x/index/a.tfrecord.idx");
  CHECK(IndexLocationFor("a.tfrecord").path == "index/a.tfrecord.idx");
}

TEST_CASE("index file lists offset and framed length of every record") {
  TfRecordFormat format;
  MemStorage storage;
  FileSpec spec = MakeSpec("uint8", {30, 30}, 4, 2, "/d/valid/02/img_2_of_4.tfrecord");
  REQUIRE(testing::WriteSpec(format, storage, spec).ok());
  const std::string index_path = "/d/index/valid/img_2_of_4.tfrecord.idx";
  REQUIRE(storage.Has(index_path));
  CHECK(storage.directories() == std::vector<std::string>{"/d/index/valid"});
  // As tfrecord2idx computes it: walk the framing of the data file.
  const std::vector<std::byte> data = storage.Bytes(spec.path);
  std::string expected;
  for (std::uint64_t offset = 0; offset < data.size();) {
    const std::uint64_t length = LoadLe64(data.data() + offset);
    const std::uint64_t framed = kFramingSize + length;
    expected += std::to_string(offset) + " " + std::to_string(framed) + "\n";
    offset += framed;
  }
  CHECK(storage.Text(index_path) == expected);
  // No temporary file is left behind.
  for (const std::string& p : storage.Paths())
    CHECK(p.find("iomimic-partial") == std::string::npos);
}

TEST_CASE("index can be turned off, and its failures fail the file") {
  MemStorage storage;
  TfRecordFormat off(WriterOptions{1 << 20, false});
  FileSpec spec = MakeSpec("uint8", {8}, 2, 1, "/d/train/a.tfrecord");
  REQUIRE(testing::WriteSpec(off, storage, spec).ok());
  CHECK_FALSE(storage.Has("/d/index/train/a.tfrecord.idx"));
  CHECK(storage.directories().empty());

  TfRecordFormat on;
  storage.set_fail_mkdir(true);
  Status s = testing::WriteSpec(on, storage, spec);
  CHECK(s.code() == StatusCode::kIOError);
  CHECK(s.message().find("/d/index/train") != std::string::npos);
}

// ---------------------------------------------------------------------------
// Reading.

TEST_CASE("round trip: dtypes, shapes, samples per file, transfer sizes") {
  TfRecordFormat format(WriterOptions{4096, false});
  MemStorage storage;
  const std::vector<FileSpec> specs = {
      MakeSpec("uint8", {17, 19}, 1, 1, "/d/train/a.tfrecord"),
      MakeSpec("uint8", {64, 64}, 9, 2, "/d/train/b.tfrecord"),
      MakeSpec("float32", {5, 7, 3}, 4, 3, "/d/train/c.tfrecord"),
      MakeSpec("int16", {1001}, 6, 4, "/d/train/d.tfrecord"),
      MakeSpec("bool", {33, 3}, 3, 5, "/d/train/e.tfrecord"),
      MakeSpec("float64", {1}, 17, 6, "/d/train/f.tfrecord"),
  };
  for (const FileSpec& spec : specs) {
    REQUIRE(testing::WriteSpec(format, storage, spec).ok());
    for (std::uint64_t transfer : {0ull, 7ull, 100ull, 4096ull, 1ull << 20}) {
      for (bool keep : {false, true}) {
        CAPTURE(spec.path);
        CAPTURE(transfer);
        CAPTURE(keep);
        CheckSamples(format, storage, spec, keep, transfer, InOrder(spec.num_samples));
        std::vector<std::uint64_t> reverse = InOrder(spec.num_samples);
        std::reverse(reverse.begin(), reverse.end());
        CheckSamples(format, storage, spec, keep, transfer, reverse);
      }
    }
  }
  CHECK(storage.open_files() == 0);
}

TEST_CASE("the stream reads transfer-size chunks from offset 0") {
  TfRecordFormat format(WriterOptions{1 << 20, false});
  MemStorage storage;
  FileSpec spec = MakeSpec("uint8", {100, 100}, 6, 1);  // 10,000-byte images
  REQUIRE(testing::WriteSpec(format, storage, spec).ok());
  const std::uint64_t size = storage.Bytes(spec.path).size();
  const std::uint64_t record = size / 6;
  const std::uint64_t t = 4096;
  for (bool decode : {true, false}) {
    for (std::uint64_t i : {0ull, 3ull, 5ull}) {
      storage.SetLogging(true);
      Result<std::unique_ptr<FileReader>> reader =
          format.OpenReader(spec.path, testing::TestReaderOptions(&storage, decode, false, t));
      REQUIRE(reader.ok());
      REQUIRE((*reader)->ReadSample(i).ok());
      std::vector<testing::StorageRequest> log = storage.TakeLog();
      // Records 0..i are streamed: chunks up to the one holding record i's end.
      const std::uint64_t end = (i + 1) * record;
      const std::uint64_t chunks = (end + t - 1) / t;
      REQUIRE(log.size() == chunks);
      for (std::size_t k = 0; k < log.size(); ++k) {
        CHECK_FALSE(log[k].write);
        CHECK(log[k].offset == k * t);
        CHECK(log[k].length == t);  // TensorFlow asks for whole buffers, even at the end
      }
    }
  }
  storage.SetLogging(false);
}

TEST_CASE("on_demand restarts per sample, keep_in_memory is one pass in any order") {
  TfRecordFormat format(WriterOptions{1 << 20, false});
  MemStorage storage;
  FileSpec spec = MakeSpec("uint8", {50, 50}, 8, 9);
  REQUIRE(testing::WriteSpec(format, storage, spec).ok());
  const std::uint64_t size = storage.Bytes(spec.path).size();
  const std::uint64_t t = 1000;
  const std::uint64_t chunks = (size + t - 1) / t;
  for (bool decode : {true, false}) {
    const int opens_before = storage.opens();
    Result<std::unique_ptr<TfRecordReader>> on_demand =
        OpenTf(storage, spec.path, testing::TestReaderOptions(&storage, decode, false, t));
    REQUIRE(on_demand.ok());
    for (std::uint64_t i = 0; i < 8; ++i) REQUIRE((*on_demand)->ReadSample(i).ok());
    CHECK((*on_demand)->passes() == 8);
    CHECK(storage.opens() - opens_before == 8);
    CHECK(storage.open_files() == 0);  // closed after each sample

    Result<std::unique_ptr<TfRecordReader>> memory =
        OpenTf(storage, spec.path, testing::TestReaderOptions(&storage, decode, true, t));
    REQUIRE(memory.ok());
    for (std::uint64_t i : {2ull, 0ull, 1ull, 7ull, 3ull, 6ull, 4ull, 5ull, 7ull, 0ull}) {
      Result<SampleView> s = (*memory)->ReadSample(i);
      REQUIRE(s.ok());
      if (decode) CHECK(testing::SameBytes(s->data, ReferenceSample(spec, i)));
    }
    CHECK((*memory)->passes() == 1);
    CHECK((*memory)->stream_requests() == chunks);
    CHECK((*memory)->stream_bytes() == size);
    CHECK((*memory)->header_requests() == 0);
    CHECK(storage.opens() - opens_before == 9);
    CHECK(storage.open_files() == 0);  // closed once the stream reached the end
  }
}

TEST_CASE("keep_in_memory reading in order costs one pass over the file") {
  TfRecordFormat format(WriterOptions{1 << 20, false});
  MemStorage storage;
  FileSpec spec = MakeSpec("uint8", {256, 256}, 16, 1);  // 64 KiB samples
  REQUIRE(testing::WriteSpec(format, storage, spec).ok());
  const std::uint64_t size = storage.Bytes(spec.path).size();
  Result<std::unique_ptr<TfRecordReader>> r =
      OpenTf(storage, spec.path, testing::TestReaderOptions(&storage, true, true));
  REQUIRE(r.ok());
  for (std::uint64_t i = 0; i < 16; ++i) REQUIRE((*r)->ReadSample(i).ok());
  CHECK((*r)->passes() == 1);
  CHECK((*r)->stream_bytes() == size);
  CHECK((*r)->stream_requests() == (size + kDefaultTransferSize - 1) / kDefaultTransferSize);
}

TEST_CASE("decode off makes the same requests and returns payload sizes") {
  TfRecordFormat format(WriterOptions{1 << 20, false});
  MemStorage storage;
  FileSpec spec = MakeSpec("int32", {6, 5}, 3, 1);
  REQUIRE(testing::WriteSpec(format, storage, spec).ok());
  std::vector<std::vector<testing::StorageRequest>> logs;
  for (bool decode : {true, false}) {
    storage.SetLogging(true);
    Result<std::unique_ptr<FileReader>> reader =
        format.OpenReader(spec.path, testing::TestReaderOptions(&storage, decode, false, 64));
    REQUIRE(reader.ok());
    CHECK((*reader)->num_samples() == 3);
    Result<SampleView> s = (*reader)->ReadSample(2);
    REQUIRE(s.ok());
    if (decode) {
      CHECK(s->bytes == 6 * 5 * 4);
    } else {
      CHECK(s->data.empty());
      CHECK(s->bytes == RecordPayloadSize(spec));
    }
    logs.push_back(storage.TakeLog());
  }
  storage.SetLogging(false);
  REQUIRE(logs[0].size() == logs[1].size());
  for (std::size_t i = 0; i < logs[0].size(); ++i) {
    CHECK(logs[0][i].offset == logs[1][i].offset);
    CHECK(logs[0][i].length == logs[1][i].length);
  }
}

TEST_CASE("empty file has no records") {
  TfRecordFormat format;
  MemStorage storage;
  storage.SetBytes("/empty.tfrecord", {});
  Result<std::unique_ptr<FileReader>> r =
      format.OpenReader("/empty.tfrecord", testing::TestReaderOptions(&storage));
  REQUIRE(r.ok());
  CHECK((*r)->num_samples() == 0);
  CHECK((*r)->ReadSample(0).status().code() == StatusCode::kOutOfRange);
}

// A TFRecord file with records of the given payloads (valid framing).
std::vector<std::byte> Frame(const std::vector<std::string>& payloads) {
  std::string file;
  for (const std::string& p : payloads) {
    std::byte header[kHeaderSize];
    EncodeRecordHeader(p.size(), header);
    file.append(reinterpret_cast<const char*>(header), kHeaderSize);
    file += p;
    std::byte footer[kFooterSize];
    StoreLe32(MaskCrc(Crc32c(p.data(), p.size())), footer);
    file.append(reinterpret_cast<const char*>(footer), kFooterSize);
  }
  return AsBytes(file);
}

TEST_CASE("records of different sizes are counted by walking the headers") {
  TfRecordFormat format;
  MemStorage storage;
  const std::vector<std::string> images = {std::string(10, 'a'), std::string(300, 'b'),
                                           std::string(1, 'c'), std::string(70000, 'd')};
  std::vector<std::string> payloads;
  for (const std::string& image : images) payloads.push_back(ProtobufExample(image, 338));
  storage.SetBytes("/mixed.tfrecord", Frame(payloads));
  for (bool keep : {false, true}) {
    Result<std::unique_ptr<TfRecordReader>> r =
        OpenTf(storage, "/mixed.tfrecord", testing::TestReaderOptions(&storage, true, keep, 128));
    REQUIRE_MESSAGE(r.ok(), r.status().ToString());
    CHECK((*r)->num_samples() == 4);
    CHECK((*r)->header_requests() == 4);
    for (std::uint64_t i : {3ull, 1ull, 0ull, 2ull}) {
      Result<SampleView> s = (*r)->ReadSample(i);
      REQUIRE_MESSAGE(s.ok(), s.status().ToString());
      CHECK(AsString(s->data) == images[i]);
    }
    CHECK((*r)->ReadSample(4).status().code() == StatusCode::kOutOfRange);
  }
  // Sizes that happen to divide the file: the count is corrected when the
  // stream meets a record of another size.
  const std::vector<std::string> tricky = {std::string(40, 'x'), std::string(0, 'y')};
  const std::vector<std::byte> two = Frame({tricky[0], tricky[1]});
  const std::uint64_t first = kFramingSize + 40;
  // Pad with records so that the file size is a multiple of the first record.
  std::vector<std::string> padded = {tricky[0], tricky[1]};
  std::uint64_t total = two.size();
  while (total % first != 0) {
    padded.push_back(std::string(0, 'z'));
    total += kFramingSize;
  }
  storage.SetBytes("/tricky.tfrecord", Frame(padded));
  Result<std::unique_ptr<TfRecordReader>> r =
      OpenTf(storage, "/tricky.tfrecord", testing::TestReaderOptions(&storage, false, true));
  REQUIRE(r.ok());
  const std::uint64_t guessed = (*r)->num_samples();
  CHECK(guessed == total / first);
  REQUIRE((*r)->ReadSample(1).ok());  // meets the short record
  CHECK((*r)->num_samples() == padded.size());
  CHECK((*r)->ReadSample(padded.size() - 1).ok());
}

TEST_CASE("payloads that are not images are refused when decoding") {
  TfRecordFormat format;
  MemStorage storage;
  proto::Example no_image;
  (*no_image.mutable_features()->mutable_feature())["label"].mutable_int64_list()->add_value(1);
  proto::Example two_values;
  auto* list = (*two_values.mutable_features()->mutable_feature())["image"].mutable_bytes_list();
  list->add_value("a");
  list->add_value("b");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"\xff\xff\xff", "does not parse as a tf.train.Example"},
      {no_image.SerializeAsString(), "no 'image' feature"},
      {two_values.SerializeAsString(), "no 'image' feature"},
  };
  for (const auto& [payload, fragment] : cases) {
    storage.SetBytes("/bad.tfrecord", Frame({payload}));
    Status s = ReadAll(format, storage, "/bad.tfrecord");
    CheckCorruption(s, "/bad.tfrecord", fragment);
    CHECK(s.message().find("record 0") != std::string::npos);
    // Without decoding the record is only framed.
    CHECK(ReadAll(format, storage, "/bad.tfrecord", false).ok());
  }
}

TEST_CASE("corruption is reported with path, record and offset") {
  TfRecordFormat format(WriterOptions{1 << 20, false});
  MemStorage storage;
  FileSpec spec = MakeSpec("uint8", {40, 40}, 5, 3, "/c/train/c.tfrecord");
  REQUIRE(testing::WriteSpec(format, storage, spec).ok());
  const std::vector<std::byte> good = storage.Bytes(spec.path);
  const std::uint64_t record = good.size() / 5;
  const std::string path = "/c/train/bad.tfrecord";
  testing::DamagedCopies damaged(storage, path, good);

  SUBCASE("flipped payload byte") {
    damaged.Put([&](std::vector<std::byte>& b) { b[2 * record + 500] ^= std::byte{0x10}; });
    for (bool keep : {false, true}) {
      for (std::uint64_t transfer : {0ull, 333ull}) {
        Result<std::unique_ptr<FileReader>> r =
            format.OpenReader(path, testing::TestReaderOptions(&storage, true, keep, transfer));
        REQUIRE(r.ok());
        CHECK((*r)->ReadSample(1).ok());
        Status s = (*r)->ReadSample(3).status();  // streams through record 2
        CheckCorruption(
            s, path, "payload CRC32C mismatch in record 2 at offset " + std::to_string(2 * record));
        CHECK(storage.open_files() == 0);
      }
    }
    // Decoding off: no CRC check, the bytes are only framed.
    CHECK(ReadAll(format, storage, path, false).ok());
  }
  SUBCASE("flipped payload CRC") {
    damaged.Put([&](std::vector<std::byte>& b) { b[4 * record + record - 2] ^= std::byte{1}; });
    CheckCorruption(ReadAll(format, storage, path), path,
                    "payload CRC32C mismatch in record 4 at offset " + std::to_string(4 * record));
  }
  SUBCASE("flipped length byte: length CRC") {
    damaged.Put([&](std::vector<std::byte>& b) { b[3 * record] ^= std::byte{0x01}; });
    CheckCorruption(ReadAll(format, storage, path), path,
                    "length CRC32C mismatch in record 3 at offset " + std::to_string(3 * record));
  }
  SUBCASE("flipped length CRC") {
    damaged.Put([&](std::vector<std::byte>& b) { b[record + 9] ^= std::byte{0x80}; });
    CheckCorruption(ReadAll(format, storage, path), path,
                    "length CRC32C mismatch in record 1 at offset " + std::to_string(record));
  }
  SUBCASE("first header: detected at open") {
    damaged.Put([&](std::vector<std::byte>& b) { b[8] ^= std::byte{0x01}; });
    Result<std::unique_ptr<FileReader>> r =
        format.OpenReader(path, testing::TestReaderOptions(&storage));
    CheckCorruption(r.status(), path, "length CRC32C mismatch in record 0 at offset 0");
    CHECK(storage.open_files() == 0);
  }
  SUBCASE("truncated inside a payload") {
    damaged.Put([&](std::vector<std::byte>& b) { b.resize(3 * record + 100); });
    for (bool decode : {true, false}) {
      Result<std::unique_ptr<FileReader>> r =
          format.OpenReader(path, testing::TestReaderOptions(&storage, decode));
      CheckCorruption(r.status(), path,
                      "truncated file: record 3 at offset " + std::to_string(3 * record));
      CHECK(storage.open_files() == 0);
    }
  }
  SUBCASE("truncated inside a header") {
    damaged.Put([&](std::vector<std::byte>& b) { b.resize(2 * record + 5); });
    Result<std::unique_ptr<FileReader>> r =
        format.OpenReader(path, testing::TestReaderOptions(&storage));
    CheckCorruption(
        r.status(), path,
        "header of record 2 is cut after 5 bytes at offset " + std::to_string(2 * record));
  }
  SUBCASE("truncated at a record boundary: fewer records") {
    damaged.Put([&](std::vector<std::byte>& b) { b.resize(2 * record); });
    Result<std::unique_ptr<FileReader>> r =
        format.OpenReader(path, testing::TestReaderOptions(&storage));
    REQUIRE(r.ok());
    CHECK((*r)->num_samples() == 2);
    CHECK((*r)->ReadSample(2).status().code() == StatusCode::kOutOfRange);
  }
  SUBCASE("length field larger than the file") {
    damaged.Put([&](std::vector<std::byte>& b) {
      std::byte header[kHeaderSize];
      EncodeRecordHeader(std::uint64_t{1} << 40, header);  // consistent CRC, absurd length
      std::memcpy(b.data() + record, header, kHeaderSize);
    });
    for (bool decode : {true, false}) {
      Status s = ReadAll(format, storage, path, decode);
      CheckCorruption(s, path, "record 1 at offset " + std::to_string(record));
    }
  }
  SUBCASE("a file that shrinks while it is read") {
    damaged.Put([](std::vector<std::byte>&) {});
    Result<std::unique_ptr<FileReader>> r =
        format.OpenReader(path, testing::TestReaderOptions(&storage, true, true, 512));
    REQUIRE(r.ok());
    std::vector<std::byte> cut = good;
    cut.resize(record + 10);
    storage.SetBytes(path, cut);
    Status s = (*r)->ReadSample(4).status();
    CheckCorruption(s, path, "truncated file");
  }
}

TEST_CASE("posix files round trip, with the index on disk") {
  testing::TempDir dir;
  testing::PosixStorage storage;
  TfRecordFormat format;
  const fs::path data = dir.path() / "train" / "img_1_of_2.tfrecord";
  fs::create_directories(data.parent_path());
  FileSpec spec = MakeSpec("uint8", {120, 130}, 7, 77, data.string());
  REQUIRE(testing::WriteSpec(format, storage, spec).ok());
  CHECK(fs::file_size(data) == *format.ExpectedFileSize(spec));
  CHECK(fs::exists(dir.path() / "index" / "train" / "img_1_of_2.tfrecord.idx"));
  CheckSamples(format, storage, spec, true, 0, InOrder(7));
  CheckSamples(format, storage, spec, false, 0, {6, 0, 3});
}

}  // namespace
}  // namespace iomimic::tfrecord
