// Tests of the mds format plugin: the shard and index.json bytes, the
// per-sample access pattern, size_limit, zstd shards, an index that
// disagrees with its shard, and (when /usr/bin/python3 has numpy) a reader
// written from mosaicml/streaming's format reading every sample. Cases every
// format shares run in the format conformance suite
// (tests/conformance/format_conformance_test.cpp).

#include "mds_format.h"

#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "iomimic/iomimic.h"
#include "iomimic/testing/file_spec.h"
#include "iomimic/testing/format_test_support.h"
#include "iomimic/testing/memory_storage.h"
#include "iomimic/testing/posix_test_storage.h"
#include "mds_json.h"
#include "mds_layout.h"

extern "C" const IomimicPluginDescriptor iomimic_plugin_descriptor;

namespace iomimic::mds {
namespace {

using testing::MemoryStorage;
using testing::TestFileSpec;
using testing::TestReaderOptions;

FileSpec Spec(std::uint64_t samples = 6, std::vector<std::uint64_t> shape = {16, 8},
              const std::string& dtype = "int32", const std::string& path = "d/train/s.mds",
              const std::string& compression = "none") {
  return TestFileSpec(dtype, std::move(shape), samples, 11, path, compression);
}

void Write(Format& format, Storage& storage, const FileSpec& spec) {
  Status s = testing::WriteSpec(format, storage, spec);
  REQUIRE_MESSAGE(s.ok(), s.ToString());
}

std::uint32_t Le32(const std::vector<std::byte>& b, std::size_t at) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= std::to_integer<std::uint32_t>(b[at + i]) << (8 * i);
  return v;
}

void PutLe32(std::vector<std::byte>& b, std::size_t at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + i] = static_cast<std::byte>((v >> (8 * i)) & 0xFF);
}

void SetText(MemoryStorage& storage, const std::string& path, const std::string& text) {
  const auto* bytes = reinterpret_cast<const std::byte*>(text.data());
  storage.SetBytes(path, std::vector<std::byte>(bytes, bytes + text.size()));
}

Status ReadAll(Format& format, Storage& storage, const std::string& path, std::uint64_t n) {
  for (std::uint64_t i = 0; i < n; ++i) {
    Result<std::unique_ptr<FileReader>> r =
        format.OpenReader(path, TestReaderOptions(&storage, true, false));
    if (!r.ok()) return r.status();
    IOMIMIC_RETURN_IF_ERROR((*r)->ReadSample(i).status());
  }
  return Status::OK();
}

TEST_CASE("mds: JSON as json.dumps writes it and as the parser reads it") {
  CHECK(JsonString("a\"b\\c\n") == "\"a\\\"b\\\\c\\n\"");
  CHECK(JsonString("\xc3\xa9") == "\"\\u00e9\"");
  CHECK(JsonString("\xf0\x9f\x98\x80") == "\"\\ud83d\\ude00\"");
  Result<JsonValue> v = ParseJson(R"({"a": [1, 2.5, null, true], "b": {"c": "\u00e9"}})", "t");
  REQUIRE(v.ok());
  CHECK(v->Find("a")->items.size() == 4);
  CHECK(v->Find("a")->items[0].uint == 1);
  CHECK_FALSE(v->Find("a")->items[1].is_uint);
  CHECK(v->Find("b")->Find("c")->text == "\xc3\xa9");
  Result<JsonValue> bad = ParseJson("{\"a\": [1, }", "idx.json");
  CHECK(bad.status().code() == StatusCode::kCorruption);
  CHECK(bad.status().message().find("idx.json at offset 10") != std::string::npos);
}

TEST_CASE("mds: the shard and its index.json are MDSWriter's bytes") {
  MdsFormat format;
  MemoryStorage storage;
  const FileSpec spec = Spec();
  Write(format, storage, spec);
  const std::vector<std::byte> shard = storage.Bytes(spec.path);
  Result<std::uint64_t> expected = format.ExpectedFileSize(spec);
  REQUIRE(expected.ok());
  CHECK(shard.size() == *expected);
  CHECK(Le32(shard, 0) == 6);
  const std::string config =
      "{\"column_encodings\": [\"ndarray:int32:16,8\"], \"column_names\": [\"x\"], "
      "\"column_sizes\": [512], \"compression\": null, \"format\": \"mds\", \"hashes\": [], "
      "\"size_limit\": 67108864, \"version\": 2}";
  const std::size_t header = 4 + 4 * 7 + config.size();
  for (std::size_t i = 0; i <= 6; ++i) CHECK(Le32(shard, 4 + 4 * i) == header + 512 * i);
  CHECK(std::memcmp(shard.data() + 32, config.data(), config.size()) == 0);
  CHECK(format.CompanionPaths(spec) == std::vector<std::string>{"d/train/s/index.json"});
  CHECK(storage.Text("d/train/s/index.json") ==
        "{\"shards\": [{\"column_encodings\": [\"ndarray:int32:16,8\"], \"column_names\": "
        "[\"x\"], \"column_sizes\": [512], \"compression\": null, \"format\": \"mds\", "
        "\"hashes\": [], \"raw_data\": {\"basename\": \"../s.mds\", \"bytes\": " +
            std::to_string(shard.size()) +
            ", \"hashes\": {}}, \"samples\": 6, \"size_limit\": 67108864, \"version\": 2, "
            "\"zip_data\": null}], \"version\": 2}");
  // Samples are the content stream's bytes back to back.
  ContentStream content = spec.PayloadContent();
  std::vector<std::byte> want(6 * 512);
  content.Fill(want);
  CHECK(std::memcmp(shard.data() + header, want.data(), want.size()) == 0);
}

TEST_CASE("mds: a sample is an 8-byte offsets read and the sample's bytes, as MDSReader reads") {
  MdsFormat format;
  MemoryStorage storage;
  const FileSpec spec = Spec();
  Write(format, storage, spec);
  const std::vector<std::byte> shard = storage.Bytes(spec.path);
  storage.SetLogging(true);
  for (std::uint64_t i : {4u, 0u, 5u}) {
    CAPTURE(i);
    Result<std::unique_ptr<FileReader>> reader =
        format.OpenReader(spec.path, TestReaderOptions(&storage, true, false));
    REQUIRE_MESSAGE(reader.ok(), reader.status().ToString());
    CHECK((*reader)->num_samples() == 6);
    Result<SampleView> s = (*reader)->ReadSample(i);
    REQUIRE_MESSAGE(s.ok(), s.status().ToString());
    CHECK(s->bytes == 512);
    const std::uint32_t begin = Le32(shard, 4 + 4 * i);
    CHECK(std::memcmp(s->data.data(), shard.data() + begin, 512) == 0);
    const std::vector<testing::StorageRequest> log = storage.TakeLog();
    // The index is read once per shard (the first open), then kept.
    std::vector<testing::StorageRequest> shard_reads;
    for (const auto& r : log) {
      if (r.path == spec.path) shard_reads.push_back(r);
    }
    // The first reader of the shard also reads its count (once per shard).
    const std::size_t first = i == 4 ? 1 : 0;
    REQUIRE(shard_reads.size() == 2 + first);
    if (first == 1) {
      CHECK(shard_reads[0].offset == 0);
      CHECK(shard_reads[0].length == 4);
    }
    CHECK(shard_reads[first].offset == 4 + 4 * i);
    CHECK(shard_reads[first].length == 8);
    CHECK(shard_reads[first + 1].offset == begin);
    CHECK(shard_reads[first + 1].length == 512);
    CHECK(log.size() == (i == 4 ? 4u : 2u));
  }
  CHECK(storage.open_files() == 0);
  // Collective back ends: the sample as one byte range.
  Result<std::unique_ptr<FileReader>> reader =
      format.OpenReader(spec.path, TestReaderOptions(&storage));
  REQUIRE(reader.ok());
  Result<std::vector<ByteRange>> ranges = (*reader)->SampleRanges(2);
  REQUIRE(ranges.ok());
  CHECK(ranges->size() == 1);
  CHECK((*ranges)[0].offset == Le32(shard, 12));
  CHECK((*ranges)[0].length == 512);
  CHECK((*reader)->data_file() != nullptr);
}

TEST_CASE("mds: size_limit refuses a shard MDSWriter would have split") {
  FileSpec spec = Spec(100, {1024});  // 4 KiB samples
  MdsOptions small;
  small.size_limit = 64 * 1024;
  Status s = MdsFormat(small).Validate(spec);
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK(s.message().find("new shard after 15") != std::string::npos);
  spec.num_samples = 15;
  CHECK(MdsFormat(small).Validate(spec).ok());
  spec.num_samples = 1;
  spec.sample_shape = {1u << 20};  // one sample over the limit is MDSWriter's too
  CHECK(MdsFormat(small).Validate(spec).ok());
  MdsOptions none;
  none.size_limit = 0;
  spec = Spec(100000, {1024});
  CHECK(MdsFormat(none).Validate(spec).ok());
  spec.element_type = *ElementType::FromName("bool");
  CHECK(MdsFormat(none).Validate(spec).code() == StatusCode::kNotSupported);
  spec = Spec();
  spec.compression = "gzip";
  CHECK(MdsFormat().Validate(spec).code() == StatusCode::kNotSupported);
}

TEST_CASE("mds: an index that disagrees with its shard is one error naming file and offset") {
  MdsFormat format;
  MemoryStorage storage;
  const FileSpec spec = Spec();
  Write(format, storage, spec);
  const std::vector<std::byte> good = storage.Bytes(spec.path);
  const std::string index = storage.Text("d/train/s/index.json");

  SUBCASE("the shard is shorter than its index says") {
    std::vector<std::byte> bad = good;
    bad.resize(bad.size() - 100);
    storage.SetBytes(spec.path, bad);
    Status s = ReadAll(format, storage, spec.path, 1);
    CHECK_MESSAGE(testing::IsCorruptionNaming(s, spec.path, "raw_data holds"), s.ToString());
    CHECK(s.message().find("offset " + std::to_string(bad.size())) != std::string::npos);
  }
  SUBCASE("the index counts another number of samples") {
    std::string other = index;
    other.replace(other.find("\"samples\": 6"), 12, "\"samples\": 7");
    MdsFormat fresh;
    SetText(storage, "d/train/s/index.json", other);
    Status s = ReadAll(fresh, storage, spec.path, 1);
    CHECK_MESSAGE(testing::IsCorruptionNaming(s, spec.path, "counts 6 samples"), s.ToString());
    CHECK(s.message().find("says 7; at offset 0") != std::string::npos);
  }
  SUBCASE("an offset past the shard") {
    std::vector<std::byte> bad = good;
    PutLe32(bad, 4 + 4 * 3, 1u << 30);
    storage.SetBytes(spec.path, bad);
    Status s = ReadAll(format, storage, spec.path, 6);
    CHECK_MESSAGE(testing::IsCorruptionNaming(s, spec.path, "sample 2 ["), s.ToString());
    CHECK(s.message().find("at offset 16") != std::string::npos);
  }
  SUBCASE("an index that does not parse or does not list the shard") {
    storage.SetBytes("d/train/s/index.json", std::vector<std::byte>(3, std::byte{'{'}));
    Status s = ReadAll(format, storage, spec.path, 1);
    CHECK_MESSAGE(testing::IsCorruptionNaming(s, "d/train/s/index.json"), s.ToString());
    CHECK(s.message().find(spec.path) != std::string::npos);
    std::string other = index;
    other.replace(other.find("../s.mds"), 8, "../t.mds");
    SetText(storage, "d/train/s/index.json", other);
    MdsFormat fresh;
    s = ReadAll(fresh, storage, spec.path, 1);
    CHECK_MESSAGE(testing::IsCorruptionNaming(s, "d/train/s/index.json", "no shard named"),
                  s.ToString());
  }
  SUBCASE("a missing index") {
    (void)storage.Remove("d/train/s/index.json");
    MdsFormat fresh;
    Status s = ReadAll(fresh, storage, spec.path, 1);
    CHECK(s.code() == StatusCode::kNotFound);
    CHECK(s.message().find(spec.path) != std::string::npos);
  }
}

TEST_CASE("mds: zstd shards hold the raw shard in one frame, read whole and decompressed") {
  if (!HaveZstd()) {
    MESSAGE("skipped: built without libzstd");
    return;
  }
  MdsFormat format;
  MemoryStorage storage;
  FileSpec raw = Spec(6, {64, 64}, "uint8", "d/r.mds");
  raw.content.compress_percentage = 80;
  FileSpec zipped = raw;
  zipped.path = "d/z.mds";
  zipped.compression = "zstd";
  zipped.compression_level = 3;
  Write(format, storage, raw);
  Write(format, storage, zipped);
  CHECK(format.ExpectedFileSize(zipped).status().code() == StatusCode::kNotSupported);
  const std::size_t zsize = storage.Bytes("d/z.mds").size();
  CHECK(zsize < storage.Bytes("d/r.mds").size());
  const std::string index = storage.Text("d/z/index.json");
  CHECK(index.find("\"compression\": \"zstd:3\"") != std::string::npos);
  CHECK(index.find("\"raw_data\": {\"basename\": \"../z.raw.mds\"") != std::string::npos);
  CHECK(index.find("\"zip_data\": {\"basename\": \"../z.mds\", \"bytes\": " +
                   std::to_string(zsize)) != std::string::npos);
  storage.SetLogging(true);
  Result<std::unique_ptr<FileReader>> a = format.OpenReader("d/z.mds", TestReaderOptions(&storage));
  REQUIRE_MESSAGE(a.ok(), a.status().ToString());
  const std::vector<testing::StorageRequest> log = storage.TakeLog();
  REQUIRE(log.size() == 2);  // the index, then the whole shard
  CHECK(log[1].offset == 0);
  CHECK(log[1].length == zsize);
  Result<std::unique_ptr<FileReader>> b = format.OpenReader("d/r.mds", TestReaderOptions(&storage));
  REQUIRE(b.ok());
  for (std::uint64_t i = 0; i < 6; ++i) {
    Result<SampleView> x = (*a)->ReadSample(i);
    REQUIRE_MESSAGE(x.ok(), x.status().ToString());
    std::vector<std::byte> first(x->data.begin(), x->data.end());
    Result<SampleView> y = (*b)->ReadSample(i);
    REQUIRE(y.ok());
    CHECK(testing::SameBytes(first, y->data));
  }
  storage.SetLogging(false);
  // A damaged frame header, or a frame cut short, is one error naming the
  // file (zstd frames carry no checksum unless asked, as streaming's do).
  std::vector<std::byte> bad = storage.Bytes("d/z.mds");
  bad[0] ^= std::byte{0xFF};
  storage.SetBytes("d/z.mds", bad);
  Status s = testing::OpenAndRead(format, storage, "d/z.mds");
  CHECK_MESSAGE(testing::IsCorruptionNaming(s, "d/z.mds", "zstd frame"), s.ToString());
  bad = storage.Bytes("d/r.mds");
  bad.resize(bad.size() / 2);
  storage.SetBytes("d/z.mds", bad);
  s = testing::OpenAndRead(format, storage, "d/z.mds");
  CHECK_MESSAGE(testing::IsCorruptionNaming(s, "d/z.mds", "zip_data holds"), s.ToString());
}

TEST_CASE("mds: the declared keys") {
  const IomimicPluginDescriptor& d = iomimic_plugin_descriptor;
  REQUIRE(d.num_dataset_keys == 2);
  CHECK(std::string(d.dataset_keys[0].name) == "column");
  CHECK(std::string(d.dataset_keys[1].name) == "size_limit");
  MdsOptions tokens;
  tokens.column = "tokens";
  MdsFormat format(tokens);
  MemoryStorage storage;
  Write(format, storage, Spec());
  CHECK(storage.Text("d/train/s/index.json").find("\"column_names\": [\"tokens\"]") !=
        std::string::npos);
}

TEST_CASE("mds: a reader written from streaming's format reads every sample") {
  if (!testing::HavePythonModules("numpy")) {
    MESSAGE("skipped: /usr/bin/python3 without numpy");
    return;
  }
  testing::TempDir dir("mds");
  testing::PosixStorage storage;
  MdsFormat format;
  const FileSpec spec = Spec(5, {6, 4}, "float32", (dir.path() / "s.mds").string());
  Write(format, storage, spec);
  // What MDSReader.get_sample_data and decode_sample do, with the
  // static-shape ndarray decoder.
  const std::string script =
      "import json, os, struct, sys, numpy\n"
      "index = sys.argv[1]\n"
      "obj = json.load(open(index))\n"
      "assert obj['version'] == 2\n"
      "for shard in obj['shards']:\n"
      "    name = os.path.join(os.path.dirname(index), shard['raw_data']['basename'])\n"
      "    assert os.path.getsize(name) == shard['raw_data']['bytes']\n"
      "    for i in range(shard['samples']):\n"
      "        with open(name, 'rb', 0) as fp:\n"
      "            fp.seek((1 + i) * 4)\n"
      "            begin, end = numpy.frombuffer(fp.read(8), numpy.uint32)\n"
      "            fp.seek(begin)\n"
      "            data = fp.read(end - begin)\n"
      "        kind, dtype, shape = shard['column_encodings'][0].split(':')\n"
      "        a = numpy.frombuffer(data, dtype).reshape(tuple(map(int, shape.split(','))))\n"
      "        print(i, a.shape, a.dtype)\n";
  std::string out;
  const int rc = testing::RunPythonScript(dir.path(), script, IndexPathFor(spec.path), &out);
  CHECK_MESSAGE(rc == 0, out);
  CHECK(out.find("4 (6, 4) float32") != std::string::npos);
}

}  // namespace
}  // namespace iomimic::mds
