// Tests of the npz format plugin: NPY header parsing, ZIP records, writing, reading,
// corruption handling and interoperability with numpy (when available).
// Cases every format shares (an index past the end, a missing file, a reader
// without a storage) run in the format conformance suite
// (tests/conformance/format_conformance_test.cpp).

#include "npz_format.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
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

#include "iomimic/iomimic.h"
#include "iomimic/testing/damaged_copies.h"
#include "iomimic/testing/file_spec.h"
#include "iomimic/testing/foreign_files.h"
#include "iomimic/testing/format_test_support.h"
#include "iomimic/testing/memory_storage.h"
#include "iomimic/testing/posix_test_storage.h"
#include "npy_header/npy_array_test_util.h"
#include "npy_header/npy_header.h"
#include "npz_reader.h"
#include "npz_writer.h"
#include "zip/zip_records.h"

extern "C" const IomimicPluginDescriptor iomimic_plugin_descriptor;

namespace iomimic::npz {
namespace {

namespace fs = std::filesystem;

// The SDK's in-memory test storage (iomimic/testing/memory_storage.h).
using MemStorage = testing::MemoryStorage;
// The npy and npz tests' helpers (npy_header/npy_array_test_util.h).
using namespace numpy::test;  // NOLINT: test helpers

FileSpec MakeSpec(const std::string& dtype, std::vector<std::uint64_t> shape, std::uint64_t samples,
                  std::uint64_t seed, const std::string& compression = "none",
                  const std::string& path = "/data/test.npz") {
  return ::iomimic::testing::TestFileSpec(dtype, std::move(shape), samples, seed, path,
                                          compression);
}

fs::path RepoRoot() {
  // plugins/format/npz/npz_format_test.cpp -> repository root.
  return fs::absolute(fs::path(__FILE__)).parent_path().parent_path().parent_path().parent_path();
}

// ---------------------------------------------------------------------------
// NPY headers: the encoder is the SDK's (iomimic/npy.h, tested in
// core/sdk_tests/npy_test.cpp); the parser is npy_header's.

TEST_CASE("npy dict parser") {
  SUBCASE("what numpy writes") {
    Result<numpy::NpyHeader> h = numpy::ParseNpyDict(
        "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4, 1), }          \n", 1);
    REQUIRE(h.ok());
    CHECK(h->descr == "<f4");
    CHECK(h->dtype.itemsize == 4);
    CHECK(h->dtype.kind == 'f');
    CHECK_FALSE(h->fortran_order);
    CHECK(h->shape == std::vector<std::uint64_t>{3, 4, 1});
  }
  SUBCASE("other spellings") {
    Result<numpy::NpyHeader> h =
        numpy::ParseNpyDict("{\"shape\":(7,),\"fortran_order\":True,\"descr\":\"|b1\"}", 1);
    REQUIRE(h.ok());
    CHECK(h->shape == std::vector<std::uint64_t>{7});
    CHECK(h->fortran_order);
    CHECK(h->dtype.itemsize == 1);
    CHECK(numpy::ParseNpyDict("{'descr': '<i8', 'fortran_order': False, 'shape': (2L, 3L), }", 1)
              .ok());
    CHECK(numpy::ParseNpyDict("{'descr': '<i8', 'fortran_order': False, 'shape': (), }", 1)
              ->shape.empty());
    CHECK(numpy::ParseNpyDict("{'descr': '<U3', 'fortran_order': False, 'shape': (2,), }", 3)
              ->dtype.itemsize == 12);
  }
  SUBCASE("rejected") {
    const char* bad[] = {
        "{'descr': '<f4', 'fortran_order': False, 'shape': (3), }",         // not a tuple
        "{'descr': '<f4', 'fortran_order': False}",                         // missing key
        "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'x': 1}",  // extra key
        "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (3,)}",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (-3,)}",
        "{'descr': '<g4', 'fortran_order': False, 'shape': (3,)}",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,)}",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (3,)} junk",
        "['descr', '<f4']",
        "",
    };
    for (const char* text : bad) {
      Result<numpy::NpyHeader> h = numpy::ParseNpyDict(text, 1);
      CHECK_MESSAGE(h.status().code() == StatusCode::kCorruption, text);
    }
    CHECK(numpy::ParseNpyDict("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (3,)}", 1)
              .status()
              .code() == StatusCode::kNotSupported);
    CHECK(numpy::ParseNpyDict("{'descr': '|O', 'fortran_order': False, 'shape': (3,)}", 1)
              .status()
              .code() == StatusCode::kNotSupported);
  }
}

// ---------------------------------------------------------------------------
// Format basics.

TEST_CASE("this format's traits and options") {
  CHECK(testing::DescribeFormatPlugin(iomimic_plugin_descriptor) ==
        "name=npz capabilities=host_decode,multi_sample "
        "options=read_pattern:string=dlio | format name=npz extension=npz "
        "multi_sample_files=1 partial_reads=0 needs_host_decode=1 "
        "predictable_size=1 streamed=0 element_type=");
}

TEST_CASE("validate") {
  NpzFormat format;
  CHECK(format.Validate(MakeSpec("uint8", {4, 4}, 2, 1)).ok());
  CHECK(format.Validate(MakeSpec("uint8", {4, 4}, 2, 1, "zip")).ok());
  CHECK(format.Validate(MakeSpec("uint8", {}, 2, 1)).code() == StatusCode::kInvalidArgument);
  CHECK(format.Validate(MakeSpec("uint8", {4, 0}, 2, 1)).code() == StatusCode::kInvalidArgument);
  CHECK(format.Validate(MakeSpec("uint8", {4}, 0, 1)).code() == StatusCode::kInvalidArgument);
  Status gzip = format.Validate(MakeSpec("uint8", {4}, 1, 1, "gzip"));
  CHECK(gzip.code() == StatusCode::kNotSupported);
  CHECK(gzip.message().find("'gzip'") != std::string::npos);
  FileSpec odd = MakeSpec("uint8", {4}, 1, 1);
  odd.element_type.size = 4;
  CHECK(format.Validate(odd).code() == StatusCode::kInvalidArgument);
  CHECK(format.Validate(MakeSpec("float64", {1ull << 40, 1ull << 40}, 1, 1)).code() ==
        StatusCode::kInvalidArgument);
  CHECK(format.ExpectedFileSize(MakeSpec("uint8", {4}, 1, 1, "zip")).status().code() ==
        StatusCode::kNotSupported);
  MemStorage storage;
  CHECK(testing::WriteSpec(format, storage, MakeSpec("uint8", {4}, 1, 1, "bz2")).code() ==
        StatusCode::kNotSupported);
}

TEST_CASE("layout matches np.savez for DLIO's unet3d files") {
  NpzFormat format;
  MemStorage storage;
  // img_04_of_64.npz of unet3d_small: uint8 (2048, 2048, 1), 4,194,802 bytes.
  FileSpec one = MakeSpec("uint8", {2048, 2048}, 1, 7, "none", "/one.npz");
  CHECK(*format.ExpectedFileSize(one) == 4194802);
  REQUIRE(testing::WriteSpec(format, storage, one).ok());
  std::vector<std::byte> bytes = storage.Bytes("/one.npz");
  CHECK(bytes.size() == 4194802);
  // Local header of x: 30 + 5 + 20 bytes, then the NPY header, data at 183.
  CHECK(zip::LoadU32(bytes.data()) == zip::kLocalHeaderSignature);
  CHECK(zip::LoadU16(bytes.data() + 28) == 20);
  CHECK(std::memcmp(bytes.data() + 55, "\x93NUMPY", 6) == 0);
  CHECK(zip::LoadU16(bytes.data() + 55 + 8) == 118);
  CHECK(zip::LoadU32(bytes.data() + 4194487) == zip::kLocalHeaderSignature);
  CHECK(zip::LoadU32(bytes.data() + 4194678) == zip::kCentralHeaderSignature);
  CHECK(zip::LoadU32(bytes.data() + 4194780) == zip::kEndOfCentralDirSignature);
  std::vector<std::byte> payload = ReferencePayload(one);
  CHECK(std::memcmp(bytes.data() + 183, payload.data(), payload.size()) == 0);

  // The 4-samples-per-file variant: uint8 (1024, 1024, 4), 4,194,826 bytes.
  FileSpec four = MakeSpec("uint8", {1024, 1024}, 4, 7, "none", "/four.npz");
  CHECK(*format.ExpectedFileSize(four) == 4194826);
  REQUIRE(testing::WriteSpec(format, storage, four).ok());
  bytes = storage.Bytes("/four.npz");
  CHECK(bytes.size() == 4194826);
  CHECK(zip::LoadU32(bytes.data() + 4194702) == zip::kCentralHeaderSignature);
}

TEST_CASE("round trip: dtypes, shapes, samples per file") {
  NpzFormat format;
  MemStorage storage;
  std::uint64_t seed = 100;
  for (const ArrayCase& c : RoundTripCases()) {
    for (const char* compression : {"none", "zip"}) {
      FileSpec spec = MakeSpec(c.dtype, c.shape, c.samples, ++seed, compression,
                               std::string("/rt/") + c.dtype + "_" + compression + ".npz");
      CAPTURE(spec.path);
      REQUIRE(testing::WriteSpec(format, storage, spec).ok());
      if (spec.compression == "none") {
        CHECK(*format.ExpectedFileSize(spec) == storage.Bytes(spec.path).size());
      }
      CheckRoundTrip(format, storage, spec, false);
      CheckRoundTrip(format, storage, spec, true);
    }
  }
  CHECK(storage.open_files() == 0);
}

TEST_CASE("large sample streams through several chunks and transfer sizes") {
  WriterOptions small_chunks;
  small_chunks.chunk_size = 64 << 10;
  NpzFormat format(small_chunks);
  MemStorage storage;
  for (const char* compression : {"none", "zip"}) {
    FileSpec spec = MakeSpec("uint16", {300, 301}, 3, 5, compression, "/big.npz");
    REQUIRE(testing::WriteSpec(format, storage, spec).ok());
    const std::vector<std::byte> payload = ReferencePayload(spec);
    for (std::uint64_t transfer :
         {std::uint64_t{0}, std::uint64_t{4096}, std::uint64_t{100000}, std::uint64_t{1} << 24}) {
      Result<std::unique_ptr<FileReader>> reader =
          format.OpenReader(spec.path, testing::TestReaderOptions(&storage, true, false, transfer));
      REQUIRE(reader.ok());
      for (std::uint64_t i = 0; i < 3; ++i) {
        Result<SampleView> s = (*reader)->ReadSample(i);
        REQUIRE_MESSAGE(s.ok(), s.status().ToString());
        CHECK(testing::SameBytes(s->data, ReferenceSample(spec, payload, i)));
      }
    }
  }
}

TEST_CASE("read pattern dlio: np.load's calls through Python's buffered file") {
  // DLIO's unet3d file under strace (docs/dlio-compat.md §2.4): per load 41
  // reads, by offset and bytes returned.
  NpzFormat format;
  MemStorage storage;
  FileSpec spec = MakeSpec("uint8", {2048, 2048}, 1, 3, "none", "/dlio.npz");
  REQUIRE(testing::WriteSpec(format, storage, spec).ok());
  const std::uint64_t size = 4194802;
  REQUIRE(storage.Bytes(spec.path).size() == size);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> expected = {
      {0, 4096}, {size - 22, 23}, {size, 1}, {size - 42, 4096}, {4194678, 4096},
      {0, 4096}, {4096, 4096},    {0, 4096}, {4096, 4096},      {8192, 253952},
  };
  for (std::uint64_t k = 1; k <= 15; ++k) {
    expected.push_back({k * 262144, 4096});
    expected.push_back({k * 262144 + 4096, 258048});
  }
  expected.push_back({4194304, 4096});
  REQUIRE(expected.size() == 41);
  for (bool decode : {true, false}) {
    CAPTURE(decode);
    storage.SetLogging(true);
    Result<std::unique_ptr<FileReader>> reader =
        format.OpenReader(spec.path, testing::TestReaderOptions(&storage, decode));
    REQUIRE(reader.ok());
    for (int round = 0; round < 2; ++round) {
      Result<SampleView> s = (*reader)->ReadSample(0);
      REQUIRE_MESSAGE(s.ok(), s.status().ToString());
      CHECK(s->bytes == 2048 * 2048);
      std::vector<testing::StorageRequest> log = storage.TakeLog();
      REQUIRE(log.size() == expected.size());
      std::uint64_t returned = 0;
      for (std::size_t i = 0; i < log.size(); ++i) {
        CAPTURE(i);
        CHECK(log[i].offset == expected[i].first);
        CHECK(log[i].length == expected[i].second);
        returned += log[i].returned;
      }
      // The reference's bytes per sample.
      CHECK(returned == 4207278);
    }
    storage.SetLogging(false);
  }
  CHECK(storage.open_files() == 0);
}

TEST_CASE("read pattern whole: one request per load") {
  NpzFormat format(WriterOptions{}, ReadPattern::kWhole);
  MemStorage storage;
  FileSpec spec = MakeSpec("uint16", {40, 30}, 3, 5, "none", "/whole.npz");
  REQUIRE(testing::WriteSpec(format, storage, spec).ok());
  const std::vector<std::byte> payload = ReferencePayload(spec);
  storage.SetLogging(true);
  Result<std::unique_ptr<FileReader>> reader =
      format.OpenReader(spec.path, testing::TestReaderOptions(&storage));
  REQUIRE(reader.ok());
  for (std::uint64_t i = 0; i < 3; ++i) {
    Result<SampleView> s = (*reader)->ReadSample(i);
    REQUIRE(s.ok());
    CHECK(testing::SameBytes(s->data, ReferenceSample(spec, payload, i)));
  }
  std::vector<testing::StorageRequest> log = storage.TakeLog();
  REQUIRE(log.size() == 3);
  for (const testing::StorageRequest& r : log)
    CHECK((r.offset == 0 && r.length == storage.Bytes(spec.path).size()));
  CHECK(ParseReadPattern("direct").ok());
  CHECK(ParseReadPattern("mmap").status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("read pattern direct follows np.load without Python's buffer") {
  NpzFormat format(WriterOptions{}, ReadPattern::kDirect);
  MemStorage storage;
  FileSpec spec = MakeSpec("uint8", {2048, 2048}, 1, 3, "none", "/pattern.npz");
  REQUIRE(testing::WriteSpec(format, storage, spec).ok());
  const std::uint64_t size = 4194802;
  Extents data = {{4096, 258048}};
  for (std::uint64_t k = 1; k <= 15; ++k) data.emplace_back(k * 262144, 262144);
  data.emplace_back(4194304, 183);
  // A later on-demand read repeats the metadata requests.
  CheckReadPattern(format, storage, spec, {0, 0},
                   {{0, 4096}, {size - 22, 22}, {size - 42, 20}, {4194678, 102}, {0, 4096}}, data);
}

TEST_CASE("on_demand reloads per sample, keep_in_memory loads once") {
  NpzFormat format;
  CheckOnDemandAndKeep<NpzReader>(format, MakeSpec("float32", {10, 10}, 4, 9, "none", "/od.npz"));
}

TEST_CASE("decode off returns sizes only") {
  NpzFormat format;
  CheckDecodeOffSizesOnly(format, MakeSpec("int32", {6, 5}, 3, 1, "zip", "/nodecode.npz"));
}

// A back end whose Allocate() hands out "device" buffers (host memory marked
// kDevice, so the test can run anywhere) and which records, per read, whether
// the destination was one of them.
class DeviceLikeStorage final : public ForwardingStorage {
 public:
  explicit DeviceLikeStorage(Storage* inner) : ForwardingStorage(inner) {}
  std::string name() const override { return "device-like"; }
  StorageCapabilities capabilities() const override {
    StorageCapabilities c = inner().capabilities();
    c.device_memory = true;
    return c;
  }
  Result<Buffer> Allocate(std::size_t size) override {
    auto* block = new std::byte[size];
    std::lock_guard<std::mutex> lock(mu_);
    blocks_.push_back({block, size});
    return Buffer(
        block, size, [](void*, void* data, std::size_t) { delete[] static_cast<std::byte*>(data); },
        nullptr, MemoryKind::kDevice);
  }
  std::uint64_t device_bytes() const { return device_bytes_; }
  std::uint64_t host_bytes() const { return host_bytes_; }

 protected:
  Result<std::unique_ptr<File>> WrapFile(std::unique_ptr<File> file, const OpenOptions&) override {
    return std::unique_ptr<File>(new Recording(std::move(file), this));
  }

 private:
  class Recording final : public DecoratorFile<DeviceLikeStorage> {
   public:
    using DecoratorFile::DecoratorFile;
    Result<std::size_t> ReadAt(std::uint64_t offset, std::span<std::byte> dst) override {
      IOMIMIC_ASSIGN_OR_RETURN(std::size_t n, inner().ReadAt(offset, dst));
      DeviceLikeStorage& owner = storage();
      (owner.IsDevice(dst.data()) ? owner.device_bytes_ : owner.host_bytes_) += n;
      return n;
    }
    // Batched reads go through ReadAt one by one (File's way), so that each
    // is recorded.
    Status ReadBatch(std::span<ReadRequest> requests) override { return File::ReadBatch(requests); }
  };
  bool IsDevice(const std::byte* p) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [block, size] : blocks_) {
      if (p >= block && p < block + size) return true;
    }
    return false;
  }
  std::mutex mu_;
  std::vector<std::pair<std::byte*, std::size_t>> blocks_;
  std::uint64_t device_bytes_ = 0;
  std::uint64_t host_bytes_ = 0;
};

TEST_CASE("decode off on a device-memory back end: stored data land in its buffers") {
  NpzFormat format(WriterOptions{}, ReadPattern::kDirect);
  MemStorage mem;
  FileSpec spec = MakeSpec("uint8", {512, 512}, 3, 4, "none", "/dev.npz");
  REQUIRE(testing::WriteSpec(format, mem, spec).ok());
  DeviceLikeStorage device(&mem);
  Result<std::unique_ptr<FileReader>> reader =
      format.OpenReader(spec.path, testing::TestReaderOptions(&device, false, false, 64 << 10));
  REQUIRE(reader.ok());
  REQUIRE((*reader)->ReadSample(1).ok());
  // The headers (probe, ZIP records, NPY header) are read on the host; the
  // array's bytes after the first probe go to the device buffers.
  CHECK(device.device_bytes() >= 3 * 512 * 512 - 4096);
  CHECK(device.host_bytes() <= 3 * 4096);
  // Compressed members must be inflated on the host: host reads only.
  FileSpec zipped = MakeSpec("uint8", {64, 64}, 2, 4, "zip", "/dev-zip.npz");
  REQUIRE(testing::WriteSpec(format, mem, zipped).ok());
  DeviceLikeStorage device2(&mem);
  reader = format.OpenReader(zipped.path, testing::TestReaderOptions(&device2, false));
  REQUIRE(reader.ok());
  REQUIRE((*reader)->ReadSample(0).ok());
  CHECK(device2.device_bytes() == 0);
}

TEST_CASE("forced ZIP64 records") {
  WriterOptions forced;
  forced.zip64_limit = 0;
  NpzFormat format(forced);
  MemStorage storage;
  for (const char* compression : {"none", "zip"}) {
    FileSpec spec = MakeSpec("float32", {5, 7}, 3, 11, compression, "/z64.npz");
    REQUIRE(testing::WriteSpec(format, storage, spec).ok());
    std::vector<std::byte> bytes = storage.Bytes(spec.path);
    if (spec.compression == "none") CHECK(*format.ExpectedFileSize(spec) == bytes.size());
    // Local header: version 45, 32-bit sizes 0xFFFFFFFF, real sizes in the extra.
    CHECK(std::to_integer<int>(bytes[4]) == 45);
    CHECK(zip::LoadU32(bytes.data() + 18) == 0xFFFFFFFFu);
    CHECK(zip::LoadU32(bytes.data() + 22) == 0xFFFFFFFFu);
    CHECK(zip::LoadU16(bytes.data() + 30 + 5) == 1);
    CHECK(zip::LoadU64(bytes.data() + 30 + 5 + 4) == 128 + 5 * 7 * 3 * 4);
    // ZIP64 end record and locator before the end record.
    const std::size_t end = bytes.size() - zip::kEndOfCentralDirSize;
    const std::size_t locator = end - zip::kZip64LocatorSize;
    const std::size_t record = locator - zip::kZip64EndOfCentralDirSize;
    CHECK(zip::LoadU32(bytes.data() + locator) == zip::kZip64LocatorSignature);
    CHECK(zip::LoadU64(bytes.data() + locator + 8) == record);
    CHECK(zip::LoadU32(bytes.data() + record) == zip::kZip64EndOfCentralDirSignature);
    CHECK(zip::LoadU64(bytes.data() + record + 32) == 2);
    CheckRoundTrip(format, storage, spec, false);

    // The reader takes the directory from the ZIP64 record: spoil the
    // classic fields and it still works.
    zip::StoreU32(bytes.data() + end + 12, 0xFFFFFFFFu);
    zip::StoreU32(bytes.data() + end + 16, 0xFFFFFFFFu);
    storage.SetBytes(spec.path, bytes);
    CheckRoundTrip(format, storage, spec, false);

    // A broken ZIP64 record is reported.
    bytes[record] = std::byte{0};
    storage.SetBytes(spec.path, bytes);
    CheckCorruption(testing::OpenAndRead(format, storage, spec.path), spec.path, "ZIP64");
  }
}

TEST_CASE("archive comment: the end record is searched for") {
  NpzFormat format;
  MemStorage storage;
  FileSpec spec = MakeSpec("uint8", {8, 8}, 2, 3, "none", "/comment.npz");
  REQUIRE(testing::WriteSpec(format, storage, spec).ok());
  std::vector<std::byte> bytes = storage.Bytes(spec.path);
  const std::string comment = "written by a test";
  bytes[bytes.size() - 2] = static_cast<std::byte>(comment.size());
  for (char c : comment) bytes.push_back(static_cast<std::byte>(c));
  storage.SetBytes(spec.path, bytes);
  CheckRoundTrip(format, storage, spec, false);
}

TEST_CASE("corruption is reported with path and offset") {
  NpzFormat format;
  MemStorage storage;
  const std::string path = "/bad.npz";
  FileSpec spec = MakeSpec("uint8", {8, 8}, 2, 3, "none", path);
  REQUIRE(testing::WriteSpec(format, storage, spec).ok());
  const std::vector<std::byte> good = storage.Bytes(path);
  testing::DamagedCopies damaged(storage, path, good);

  SUBCASE("truncated") {
    for (std::size_t keep : {std::size_t{0}, std::size_t{3}, std::size_t{10}, std::size_t{100},
                             good.size() / 2, good.size() - 23, good.size() - 1}) {
      CAPTURE(keep);
      CheckCorruption(damaged.ReadTruncated(format, keep), path);
    }
  }
  SUBCASE("zip signature") {
    damaged.Put([](std::vector<std::byte>& b) { b[0] = std::byte{'Q'}; });
    CheckCorruption(testing::OpenAndRead(format, storage, path), path, "not a ZIP archive");
  }
  SUBCASE("npy magic") {
    damaged.Put([](std::vector<std::byte>& b) { b[55 + 1] ^= std::byte{0x20}; });
    CheckCorruption(testing::OpenAndRead(format, storage, path), path, "NPY magic");
    CheckCorruption(testing::OpenAndRead(format, storage, path, false), path, "at offset 55");
  }
  SUBCASE("npy dictionary") {
    damaged.Put([](std::vector<std::byte>& b) { b[55 + 10 + 2] = std::byte{'x'}; });
    CheckCorruption(testing::OpenAndRead(format, storage, path), path, "NPY header");
  }
  SUBCASE("npy shape disagrees with the member size") {
    const std::size_t at = ShapeTextAt(good, "(8, 8, 2)");
    damaged.Put([&](std::vector<std::byte>& b) { b[at + 1] = std::byte{'9'}; });
    CheckCorruption(testing::OpenAndRead(format, storage, path), path, "NPY header describes");
  }
  SUBCASE("npy header length") {
    damaged.Put([](std::vector<std::byte>& b) { b[55 + 9] = std::byte{0x7f}; });
    CheckCorruption(testing::OpenAndRead(format, storage, path), path);
  }
  SUBCASE("data byte: CRC") {
    damaged.Put([](std::vector<std::byte>& b) { b[55 + 128 + 5] ^= std::byte{1}; });
    Result<std::unique_ptr<FileReader>> reader =
        format.OpenReader(path, testing::TestReaderOptions(&storage));
    REQUIRE(reader.ok());
    Result<SampleView> s = (*reader)->ReadSample(0);
    CheckCorruption(s.status(), path, "CRC-32");
    CHECK(s.status().message().find("at offset 55") != std::string::npos);
    // The next call starts a fresh load and fails the same way.
    CheckCorruption((*reader)->ReadSample(1).status(), path, "CRC-32");
    // Without decoding nothing is checked.
    CHECK(testing::OpenAndRead(format, storage, path, false).ok());
    CHECK(storage.open_files() == 0);
  }
  SUBCASE("central directory signature") {
    const std::size_t cd = good.size() - 22 - 2 * 51;
    REQUIRE(zip::LoadU32(good.data() + cd) == zip::kCentralHeaderSignature);
    damaged.Put([&](std::vector<std::byte>& b) { b[cd + 1] = std::byte{0}; });
    CheckCorruption(testing::OpenAndRead(format, storage, path), path, "central directory");
  }
  SUBCASE("local header signature") {
    damaged.Put([](std::vector<std::byte>& b) {
      b[2] = std::byte{5};
      b[3] = std::byte{6};
    });
    CheckCorruption(testing::OpenAndRead(format, storage, path), path);
  }
  SUBCASE("missing x member") {
    damaged.Put([](std::vector<std::byte>& b) {
      for (std::size_t i = 0; i + 5 <= b.size(); ++i) {
        if (std::memcmp(b.data() + i, "x.npy", 5) == 0) b[i] = std::byte{'z'};
      }
    });
    Status s = testing::OpenAndRead(format, storage, path);
    CheckCorruption(s, path, "no member 'x.npy'");
  }
  SUBCASE("local and central names differ") {
    damaged.Put([](std::vector<std::byte>& b) { b[30] = std::byte{'w'}; });
    CheckCorruption(testing::OpenAndRead(format, storage, path), path, "differ");
  }
  SUBCASE("directory points past the end") {
    const std::size_t cd = good.size() - 22 - 2 * 51;
    damaged.Put([&](std::vector<std::byte>& b) { zip::StoreU32(b.data() + cd + 42, 0x7fffff00u); });
    CheckCorruption(testing::OpenAndRead(format, storage, path), path);
  }
  SUBCASE("unsupported method") {
    const std::size_t cd = good.size() - 22 - 2 * 51;
    damaged.Put([&](std::vector<std::byte>& b) { b[cd + 10] = std::byte{12}; });
    CHECK(testing::OpenAndRead(format, storage, path).code() == StatusCode::kNotSupported);
  }
}

TEST_CASE("corrupt deflate data") {
  NpzFormat format;
  MemStorage storage;
  FileSpec spec = MakeSpec("uint8", {64, 64}, 2, 3, "zip", "/badzip.npz");
  REQUIRE(testing::WriteSpec(format, storage, spec).ok());
  testing::DamagedCopies damaged(storage, spec.path, storage.Bytes(spec.path));
  for (std::size_t at :
       {std::size_t{60}, std::size_t{2000}, std::size_t{5000}, std::size_t{8200}}) {
    CAPTURE(at);
    damaged.Put([at](std::vector<std::byte>& b) { b[at] ^= std::byte{0x5a}; });
    CheckCorruption(testing::OpenAndRead(format, storage, spec.path), spec.path);
  }
  // Cut the x member short by shrinking its compressed size.
  damaged.Put([](std::vector<std::byte>& b) {
    const std::size_t cd = b.size() - 22 - 2 * 51;
    zip::StoreU32(b.data() + cd + 20, zip::LoadU32(b.data() + cd + 20) - 100);
  });
  CheckCorruption(testing::OpenAndRead(format, storage, spec.path), spec.path);
}

TEST_CASE("posix files round trip") {
  testing::TempDir dir;
  NpzFormat format;
  testing::PosixStorage storage;
  FileSpec spec = MakeSpec("float64", {9, 11}, 5, 77, "none", (dir.path() / "p.npz").string());
  REQUIRE(testing::WriteSpec(format, storage, spec).ok());
  CHECK(fs::file_size(spec.path) == *format.ExpectedFileSize(spec));
  CheckRoundTrip(format, storage, spec, false);
}

// ---------------------------------------------------------------------------
// Interoperability with numpy.

TEST_CASE("numpy reads what we write and we read what numpy writes") {
  if (!HaveNumpy()) return;
  const fs::path checker = RepoRoot() / "tests" / "interop" / "check_npz.py";
  REQUIRE_MESSAGE(fs::exists(checker), checker.string());
  testing::TempDir dir;
  testing::PosixStorage storage;
  NpzFormat format;
  WriterOptions forced;
  forced.zip64_limit = 0;
  NpzFormat zip64_format(forced);
  fs::create_directories(dir.path() / "u8");
  fs::create_directories(dir.path() / "f32" / "nested");
  fs::create_directories(dir.path() / "ref");
  fs::create_directories(dir.path() / "foreign");
  // numpy-written files (C and Fortran order, big-endian, compressed) read
  // back sample by sample.
  CHECK(MismatchWithNumpyArrays(
            format, storage, dir.path(), "z_i4",
            "arrays['z_i4'] = rng.integers(0, 9, (6, 3)).astype('<i4')\n"
            "def save(name, x):\n"
            "    savez = np.savez_compressed if name == 'z_i4' else np.savez\n"
            "    savez(d + '/' + name + '.npz', y=np.zeros(x.shape[-1], dtype=np.int64), x=x)\n") ==
        "");

  struct Written {
    FileSpec spec;
    bool identical;  // np.savez(_compressed) of the loaded arrays gives the same bytes
  };
  std::vector<Written> written;
  auto write = [&](Format& f, FileSpec spec, bool identical) {
    REQUIRE(testing::WriteSpec(f, storage, spec).ok());
    testing::WriteFileBytes(dir.path() / "ref" / (fs::path(spec.path).filename().string() + ".bin"),
                            ReferencePayload(spec));
    written.push_back({spec, identical});
  };
  const std::string u8 = (dir.path() / "u8").string();
  const std::string f32 = (dir.path() / "f32").string();
  write(format, MakeSpec("uint8", {16, 16}, 2, 1, "none", u8 + "/a_stored.npz"), true);
  write(format, MakeSpec("uint8", {16, 16}, 2, 2, "zip", u8 + "/b_deflated.npz"), true);
  write(zip64_format, MakeSpec("uint8", {16, 16}, 2, 3, "none", u8 + "/c_zip64.npz"), false);
  write(zip64_format, MakeSpec("uint8", {16, 16}, 2, 4, "zip", u8 + "/d_zip64_deflated.npz"),
        false);
  write(format, MakeSpec("float32", {5, 7}, 3, 5, "none", f32 + "/e_stored.npz"), true);
  write(format, MakeSpec("float32", {5, 7}, 3, 6, "zip", f32 + "/nested/f_deflated.npz"), true);

  std::string out;
  const std::string py = testing::kSystemPython;
  int rc = testing::RunCommand(
      py + " " + checker.string() + " " + u8 + " --dtype uint8 --samples 2 --shape 16,16", &out);
  CHECK_MESSAGE(rc == 0, out);
  CHECK_MESSAGE(out.find("checked 4 files") != std::string::npos, out);
  rc = testing::RunCommand(
      py + " " + checker.string() + " " + f32 + " --dtype float32 --samples 3 --shape 5,7", &out);
  CHECK_MESSAGE(rc == 0, out);
  CHECK_MESSAGE(out.find("checked 2 files") != std::string::npos, out);
  // The checker notices mismatches and empty folders.
  CHECK(testing::RunCommand(py + " " + checker.string() + " " + u8 + " --samples 3", &out) != 0);
  CHECK(testing::RunCommand(py + " " + checker.string() + " " + f32 + " --dtype uint8", &out) != 0);
  CHECK(testing::RunCommand(py + " " + checker.string() + " " + (dir.path() / "ref").string(),
                            &out) != 0);

  // Values and bytes: x equals the reference stream, y is zeros, and for
  // non-forced files np.savez of the same arrays reproduces the file exactly.
  const fs::path compare = dir.path() / "compare.py";
  testing::WriteTextFile(
      compare,
      "import io, sys, numpy as np\n"
      "path, ref, identical, compressed = sys.argv[1], sys.argv[2], sys.argv[3] == '1', "
      "sys.argv[4] == '1'\n"
      "with np.load(path) as f:\n"
      "    x, y = f['x'], f['y']\n"
      "assert x.tobytes() == open(ref, 'rb').read(), 'x differs from the reference'\n"
      "assert y.dtype == np.int64 and not y.any(), 'y is not int64 zeros'\n"
      "if identical:\n"
      "    buf = io.BytesIO()\n"
      "    (np.savez_compressed if compressed else np.savez)(buf, x=x, y=y)\n"
      "    assert buf.getvalue() == open(path, 'rb').read(), 'np.savez writes different bytes'\n"
      "print('ok', path, x.dtype, x.shape)\n");
  for (const Written& w : written) {
    const std::string ref =
        (dir.path() / "ref" / (fs::path(w.spec.path).filename().string() + ".bin")).string();
    rc = testing::RunCommand(py + " " + compare.string() + " " + w.spec.path + " " + ref + " " +
                                 (w.identical ? "1" : "0") + " " +
                                 (w.spec.compression == "zip" ? "1" : "0"),
                             &out);
    CHECK_MESSAGE(rc == 0, (w.spec.path + ": " + out));
  }
}

}  // namespace
}  // namespace iomimic::npz
