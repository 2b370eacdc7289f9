// Tests of the webdataset format plugin: the tar layout, the grouping rule,
// the stream access pattern, bad input, and (when /usr/bin/python3 has numpy)
// Python's tarfile and numpy reading the shards. Cases every format shares
// run in the format conformance suite
// (tests/conformance/format_conformance_test.cpp).

#include "webdataset_format.h"

#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "iomimic/iomimic.h"
#include "iomimic/npy.h"
#include "iomimic/testing/file_spec.h"
#include "iomimic/testing/format_test_support.h"
#include "iomimic/testing/memory_storage.h"
#include "iomimic/testing/posix_test_storage.h"
#include "tar_header.h"
#include "webdataset_reader.h"
#include "webdataset_writer.h"

extern "C" const IomimicPluginDescriptor iomimic_plugin_descriptor;

namespace iomimic::webdataset {
namespace {

using testing::MemoryStorage;
using testing::TestFileSpec;
using testing::TestReaderOptions;

FileSpec Spec(std::uint64_t samples = 5, std::vector<std::uint64_t> shape = {24, 20},
              const std::string& dtype = "uint8", const std::string& path = "d/s.tar") {
  FileSpec spec = TestFileSpec(dtype, std::move(shape), samples, 7, path);
  spec.file_index = 3;
  return spec;
}

void Write(Format& format, Storage& storage, const FileSpec& spec) {
  Status s = testing::WriteSpec(format, storage, spec);
  REQUIRE_MESSAGE(s.ok(), s.ToString());
}

std::unique_ptr<FileReader> Open(Format& format, Storage& storage, const std::string& path,
                                 bool decode = true, bool keep = true, std::uint64_t transfer = 0) {
  Result<std::unique_ptr<FileReader>> r =
      format.OpenReader(path, TestReaderOptions(&storage, decode, keep, transfer));
  REQUIRE_MESSAGE(r.ok(), r.status().ToString());
  return std::move(r).value();
}

// The error of reading every sample of `path` in order, or OK.
Status ReadEvery(Format& format, Storage& storage, const std::string& path, std::uint64_t n,
                 bool decode = true) {
  Result<std::unique_ptr<FileReader>> r =
      format.OpenReader(path, TestReaderOptions(&storage, decode, true));
  if (!r.ok()) return r.status();
  for (std::uint64_t i = 0; i < n; ++i) IOMIMIC_RETURN_IF_ERROR((*r)->ReadSample(i).status());
  return Status::OK();
}

void PutHeader(std::vector<std::byte>& bytes, std::uint64_t at, const std::string& name,
               std::uint64_t size) {
  HeaderBlock h;
  EncodeMemberHeader(name, size, kMemberMtime, h);
  std::memcpy(bytes.data() + at, h.data(), h.size());
}

TEST_CASE("webdataset: grouping keys follow webdataset's rule") {
  struct Case {
    const char* name;
    bool grouped;
    const char* key;
    const char* suffix;
  };
  const Case cases[] = {
      {"000123.npy", true, "000123", "npy"},
      {"000123.seg.png", true, "000123", "seg.png"},
      {"a/b/000123.JPG", true, "a/b/000123", "JPG"},
      {"a.b/c.d", true, "a.b/c", "d"},
      {"x/.hidden", true, "x/", "hidden"},
      {"noext", false, "", ""},
      {"dir.d/noext", false, "", ""},
      {".npy", false, "", ""},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    std::string_view key;
    std::string_view suffix;
    CHECK(SplitKey(c.name, &key, &suffix) == c.grouped);
    if (c.grouped) {
      CHECK(key == c.key);
      CHECK(suffix == c.suffix);
    }
  }
  CHECK(IsMetaName("__index__"));
  CHECK(IsMetaName("__meta__/x.json"));
  CHECK_FALSE(IsMetaName("a/__meta__"));
  CHECK_FALSE(IsMetaName("__x.npy"));
}

TEST_CASE("webdataset: the shard is the tar file tarfile writes, padded to its record size") {
  WebDatasetFormat format;
  MemoryStorage storage;
  const FileSpec spec = Spec();
  Write(format, storage, spec);
  const std::vector<std::byte> bytes = storage.Bytes(spec.path);
  Result<std::uint64_t> expected = format.ExpectedFileSize(spec);
  REQUIRE(expected.ok());
  CHECK(bytes.size() == *expected);
  CHECK(bytes.size() % kRecordSize == 0);
  // Sample 0: 000000015.cls then 000000015.npy (file_index 3, 5 samples).
  Result<MemberHeader> first = ParseMemberHeader(
      std::span<const std::byte, kBlockSize>(bytes.data(), kBlockSize), spec.path, 0);
  REQUIRE(first.ok());
  CHECK(first->name == "000000015.cls");
  CHECK(first->type == '0');
  Result<MemberHeader> second = ParseMemberHeader(
      std::span<const std::byte, kBlockSize>(bytes.data() + 2 * kBlockSize, kBlockSize), spec.path,
      2 * kBlockSize);
  REQUIRE(second.ok());
  CHECK(second->name == "000000015.npy");
  CHECK(second->size == 128 + 24 * 20);
  // The same spec gives the same bytes.
  MemoryStorage again;
  Write(format, again, spec);
  CHECK(again.Bytes(spec.path) == bytes);
}

TEST_CASE("webdataset: samples read back as the arrays written, decode on and off") {
  WebDatasetFormat format;
  MemoryStorage storage;
  const FileSpec spec = Spec(4, {16, 12}, "float32");
  Write(format, storage, spec);
  std::unique_ptr<FileReader> reader = Open(format, storage, spec.path);
  CHECK(reader->num_samples() == kUnknownCount);
  ContentStream content = spec.PayloadContent();
  for (std::uint64_t i = 0; i < spec.num_samples; ++i) {
    Result<SampleView> s = reader->ReadSample(i);
    REQUIRE_MESSAGE(s.ok(), s.status().ToString());
    std::vector<std::byte> want(spec.sample_bytes());
    content.Fill(want);
    CHECK(s->bytes == spec.sample_bytes());
    CHECK(testing::SameBytes(s->data, want));
  }
  // The pass reached the end of the archive: the count is known.
  CHECK(reader->num_samples() == spec.num_samples);
  Result<SampleView> past = reader->ReadSample(spec.num_samples);
  CHECK(past.status().code() == StatusCode::kOutOfRange);
  CHECK(past.status().message().find(spec.path) != std::string::npos);
  std::unique_ptr<FileReader> raw = Open(format, storage, spec.path, /*decode=*/false);
  Result<SampleView> r = raw->ReadSample(2);
  REQUIRE(r.ok());
  CHECK(r->bytes == 128 + spec.sample_bytes());  // the .npy member
  CHECK(r->data.empty());
}

TEST_CASE("webdataset: a pass streams the shard once, in transfer-size requests") {
  WebDatasetFormat format;
  MemoryStorage storage;
  const FileSpec spec = Spec(9, {100, 70});
  Write(format, storage, spec);
  const std::uint64_t size = storage.Bytes(spec.path).size();
  for (std::uint64_t transfer :
       {std::uint64_t{4096}, std::uint64_t{10240}, std::uint64_t{65536}, std::uint64_t{1} << 20}) {
    CAPTURE(transfer);
    storage.SetLogging(true);
    const int opens = storage.opens();
    {
      std::unique_ptr<FileReader> reader =
          Open(format, storage, spec.path, true, /*keep=*/true, transfer);
      for (std::uint64_t i = 0; i < spec.num_samples; ++i) REQUIRE(reader->ReadSample(i).ok());
      auto* wds = dynamic_cast<WebDatasetReader*>(reader.get());
      REQUIRE(wds != nullptr);
      CHECK(wds->passes() == 1);
      CHECK(wds->stream_bytes() == size);
    }
    CHECK(storage.opens() == opens + 1);
    const std::vector<testing::StorageRequest> log = storage.TakeLog();
    REQUIRE(log.size() == (size + transfer - 1) / transfer);
    std::uint64_t total = 0;
    for (std::size_t k = 0; k < log.size(); ++k) {
      CHECK_FALSE(log[k].write);
      CHECK(log[k].offset == k * transfer);
      CHECK(log[k].length == transfer);
      total += log[k].returned;
    }
    CHECK(total == size);
  }
}

TEST_CASE("webdataset: on_demand and backwards reads start a new pass from offset 0") {
  WebDatasetFormat format;
  MemoryStorage storage;
  const FileSpec spec = Spec(6);
  Write(format, storage, spec);
  std::unique_ptr<FileReader> keep = Open(format, storage, spec.path, true, true);
  REQUIRE(keep->ReadSample(4).ok());
  REQUIRE(keep->ReadSample(1).ok());  // behind the stream: a new pass
  CHECK(dynamic_cast<WebDatasetReader&>(*keep).passes() == 2);
  keep.reset();
  std::unique_ptr<FileReader> on_demand = Open(format, storage, spec.path, true, false);
  for (std::uint64_t i = 0; i < 3; ++i) REQUIRE(on_demand->ReadSample(i).ok());
  CHECK(dynamic_cast<WebDatasetReader&>(*on_demand).passes() == 3);
  CHECK(storage.open_files() == 0);
}

TEST_CASE("webdataset: bad input is one error naming the file and the offset") {
  WebDatasetFormat format;
  MemoryStorage storage;
  const FileSpec spec = Spec(4, {40, 40});
  Write(format, storage, spec);
  const std::vector<std::byte> good = storage.Bytes(spec.path);
  Result<ShardLayout> layout = ComputeLayout(spec);
  REQUIRE(layout.ok());
  const std::uint64_t stride = layout->stride;

  SUBCASE("a bad header checksum") {
    std::vector<std::byte> bad = good;
    bad[2 * stride + 3] ^= std::byte{0x01};  // sample 2's .cls name
    storage.SetBytes(spec.path, bad);
    Status s = ReadEvery(format, storage, spec.path, spec.num_samples);
    CHECK_MESSAGE(testing::IsCorruptionNaming(s, spec.path, "bad checksum"), s.ToString());
    CHECK(s.message().find("offset " + std::to_string(2 * stride)) != std::string::npos);
  }
  SUBCASE("a truncated member") {
    std::vector<std::byte> bad = good;
    bad.resize(3 * stride + 3 * kBlockSize + 100);  // inside sample 3's .npy data
    storage.SetBytes(spec.path, bad);
    Status s = ReadEvery(format, storage, spec.path, spec.num_samples, /*decode=*/false);
    CHECK_MESSAGE(testing::IsCorruptionNaming(s, spec.path, "truncated tar member"), s.ToString());
    CHECK(s.message().find("000000015.npy") != std::string::npos);
    CHECK(s.message().find("offset " + std::to_string(3 * stride + 2 * kBlockSize)) !=
          std::string::npos);
  }
  SUBCASE("an archive cut at a sample boundary, without its end blocks") {
    std::vector<std::byte> bad = good;
    bad.resize(2 * stride);
    storage.SetBytes(spec.path, bad);
    Status s = ReadEvery(format, storage, spec.path, spec.num_samples);
    CHECK_MESSAGE(testing::IsCorruptionNaming(s, spec.path, "truncated archive"), s.ToString());
    CHECK(s.message().find("offset " + std::to_string(2 * stride)) != std::string::npos);
    // What is there reads (tarfile stops there without an error).
    CHECK(ReadEvery(format, storage, spec.path, 2).ok());
  }
  SUBCASE("a header cut by the end of the file") {
    std::vector<std::byte> bad = good;
    bad.resize(stride + 100);
    storage.SetBytes(spec.path, bad);
    Status s = ReadEvery(format, storage, spec.path, spec.num_samples);
    CHECK_MESSAGE(testing::IsCorruptionNaming(s, spec.path, "truncated tar header"), s.ToString());
  }
  SUBCASE("an empty file or one that is not tar") {
    storage.SetBytes(spec.path, {});
    Status s = testing::OpenAndRead(format, storage, spec.path);
    CHECK_MESSAGE(testing::IsCorruptionNaming(s, spec.path, "empty"), s.ToString());
    std::vector<std::byte> text(2048, std::byte{'x'});
    storage.SetBytes(spec.path, text);
    s = testing::OpenAndRead(format, storage, spec.path);
    CHECK_MESSAGE(testing::IsCorruptionNaming(s, spec.path, "checksum"), s.ToString());
  }
  SUBCASE("two members of a sample with one extension") {
    std::vector<std::byte> bad = good;
    PutHeader(bad, 0, "000000012.npy", 3);  // the .cls member renamed
    storage.SetBytes(spec.path, bad);
    Status s = testing::OpenAndRead(format, storage, spec.path);
    CHECK_MESSAGE(testing::IsCorruptionNaming(s, spec.path, "duplicate"), s.ToString());
  }
  SUBCASE("a sample without its array or label") {
    std::vector<std::byte> bad = good;
    PutHeader(bad, 2 * kBlockSize, "000000012.txt", layout->npy_member);
    storage.SetBytes(spec.path, bad);
    Status s = testing::OpenAndRead(format, storage, spec.path, /*decode=*/false);
    CHECK_MESSAGE(testing::IsCorruptionNaming(s, spec.path, "no .npy"), s.ToString());
    bad = good;
    PutHeader(bad, 0, "000000012.txt", 3);
    storage.SetBytes(spec.path, bad);
    s = testing::OpenAndRead(format, storage, spec.path);
    CHECK_MESSAGE(testing::IsCorruptionNaming(s, spec.path, "no .cls"), s.ToString());
  }
  SUBCASE("a .npy member numpy would not load") {
    std::vector<std::byte> bad = good;
    bad[3 * kBlockSize] = std::byte{'X'};  // the NPY magic
    storage.SetBytes(spec.path, bad);
    Status s = testing::OpenAndRead(format, storage, spec.path);
    CHECK_MESSAGE(testing::IsCorruptionNaming(s, spec.path, ".npy member"), s.ToString());
    // Without decoding the array is not parsed.
    CHECK(testing::OpenAndRead(format, storage, spec.path, false).ok());
  }
  // The reader recovers once the file is good again.
  storage.SetBytes(spec.path, good);
  CHECK(ReadEvery(format, storage, spec.path, spec.num_samples).ok());
}

TEST_CASE("webdataset: members webdataset skips do not break a sample") {
  // A hand-made archive: a folder, a metadata member, then a sample whose
  // fields are split by a member without a key.
  std::vector<std::byte> bytes(12 * kBlockSize);
  PutHeader(bytes, 0, "__meta__", 1);
  PutHeader(bytes, 2 * kBlockSize, "000001.cls", 1);
  bytes[3 * kBlockSize] = std::byte{'7'};
  PutHeader(bytes, 4 * kBlockSize, "README", 1);
  const std::string npy = *numpy::EncodeNpyHeader("|u1", std::vector<std::uint64_t>{3});
  PutHeader(bytes, 6 * kBlockSize, "000001.npy", npy.size() + 3);
  std::memcpy(bytes.data() + 7 * kBlockSize, npy.data(), npy.size());
  bytes[7 * kBlockSize + npy.size()] = std::byte{9};
  MemoryStorage storage;
  storage.SetBytes("x.tar", bytes);
  WebDatasetFormat format;
  std::unique_ptr<FileReader> reader = Open(format, storage, "x.tar");
  Result<SampleView> s = reader->ReadSample(0);
  REQUIRE_MESSAGE(s.ok(), s.status().ToString());
  CHECK(s->bytes == 3);
  CHECK(s->data[0] == std::byte{9});
  CHECK(reader->ReadSample(1).status().code() == StatusCode::kOutOfRange);
  CHECK(reader->num_samples() == 1);
}

TEST_CASE("webdataset: spec checks and the label_classes key") {
  WebDatasetFormat format;
  FileSpec spec = Spec();
  spec.compression = "gzip";
  CHECK(format.Validate(spec).code() == StatusCode::kNotSupported);
  spec = Spec(0);
  CHECK(format.Validate(spec).code() == StatusCode::kInvalidArgument);
  spec = Spec(1, {1u << 20, 1u << 14});  // 16 GiB
  CHECK(format.Validate(spec).code() == StatusCode::kInvalidArgument);
  CHECK(format.traits().streamed);
  CHECK(format.traits().extension == "tar");
  const IomimicPluginDescriptor& d = iomimic_plugin_descriptor;
  REQUIRE(d.num_dataset_keys == 1);
  CHECK(std::string(d.dataset_keys[0].name) == "label_classes");
}

TEST_CASE("webdataset: Python's tarfile groups the members by key and numpy loads each .npy") {
  if (!testing::HavePythonModules("numpy")) {
    MESSAGE("skipped: /usr/bin/python3 without numpy");
    return;
  }
  testing::TempDir dir("wds");
  testing::PosixStorage storage;
  WebDatasetFormat format;
  const FileSpec spec = Spec(5, {6, 4}, "int16", (dir.path() / "s.tar").string());
  Write(format, storage, spec);
  const std::string script =
      "import io, sys, tarfile, numpy\n"
      "t = tarfile.open(sys.argv[1], mode='r|*')\n"
      "samples = []\n"
      "for m in t:\n"
      "    key, _, ext = m.name.partition('.')\n"
      "    if not samples or samples[-1][0] != key: samples.append((key, {}))\n"
      "    samples[-1][1][ext] = t.extractfile(m).read()\n"
      "for key, fields in samples:\n"
      "    a = numpy.load(io.BytesIO(fields['npy']))\n"
      "    assert sorted(fields) == ['cls', 'npy'], fields.keys()\n"
      "    print(key, a.shape, a.dtype, int(fields['cls']))\n";
  std::string out;
  const int rc = testing::RunPythonScript(dir.path(), script, spec.path, &out);
  CHECK_MESSAGE(rc == 0, out);
  CHECK(out.find("000000015 (6, 4) int16") != std::string::npos);
  CHECK(out.find("000000019 (6, 4) int16") != std::string::npos);
}

}  // namespace
}  // namespace iomimic::webdataset
