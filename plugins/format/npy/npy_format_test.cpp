// Tests of the npy format plugin: layout, writing, reading, the access
// pattern, corruption handling and interoperability with numpy (when
// /usr/bin/python3 has numpy).
// Cases every format shares (an index past the end, a missing file, a reader
// without a storage) run in the format conformance suite
// (tests/conformance/format_conformance_test.cpp).

#include "npy_format.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
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
#include <utility>
#include <vector>

#include "iomimic/iomimic.h"
#include "iomimic/testing/damaged_copies.h"
#include "iomimic/testing/device_memory_storage.h"
#include "iomimic/testing/file_spec.h"
#include "iomimic/testing/foreign_files.h"
#include "iomimic/testing/format_test_support.h"
#include "iomimic/testing/memory_storage.h"
#include "iomimic/testing/posix_test_storage.h"
#include "iomimic/testing/write_in_parts.h"
#include "npy_header/npy_array_test_util.h"
#include "npy_header/npy_header.h"
#include "npy_reader.h"
#include "npy_writer.h"

extern "C" const IomimicPluginDescriptor iomimic_plugin_descriptor;

namespace iomimic::npy {
namespace {

// The SDK's test storages in memory (iomimic/testing/).
using MemStorage = testing::MemoryStorage;
using DeviceMemStorage = testing::DeviceMemoryStorage;
// The npy and npz tests' helpers (npy_header/npy_array_test_util.h).
using namespace numpy::test;  // NOLINT: test helpers

FileSpec MakeSpec(const std::string& dtype, std::vector<std::uint64_t> shape, std::uint64_t samples,
                  std::uint64_t seed, const std::string& path = "/data/test.npy") {
  return ::iomimic::testing::TestFileSpec(dtype, std::move(shape), samples, seed, path);
}

std::span<const std::byte> AsBytes(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

// ---------------------------------------------------------------------------
// Format basics.

TEST_CASE("this format's traits and options") {
  CHECK(testing::DescribeFormatPlugin(iomimic_plugin_descriptor) ==
        "name=npy capabilities=host_decode,multi_sample options= | format "
        "name=npy extension=npy multi_sample_files=1 partial_reads=0 "
        "needs_host_decode=1 predictable_size=1 streamed=0 element_type=");
}

TEST_CASE("validate") {
  NpyFormat format;
  CHECK(format.Validate(MakeSpec("uint8", {4, 4}, 2, 1)).ok());
  CHECK(format.Validate(MakeSpec("float64", {7}, 1, 1)).ok());
  CHECK(format.Validate(MakeSpec("uint8", {}, 2, 1)).code() == StatusCode::kInvalidArgument);
  CHECK(format.Validate(MakeSpec("uint8", {4, 0}, 2, 1)).code() == StatusCode::kInvalidArgument);
  CHECK(format.Validate(MakeSpec("uint8", {4}, 0, 1)).code() == StatusCode::kInvalidArgument);
  FileSpec zipped = MakeSpec("uint8", {4}, 1, 1);
  zipped.compression = "gzip";
  Status s = format.Validate(zipped);
  CHECK(s.code() == StatusCode::kNotSupported);
  CHECK(s.message().find("'gzip'") != std::string::npos);
  CHECK(format.ExpectedFileSize(zipped).status().code() == StatusCode::kNotSupported);
  MemStorage storage;
  zipped.path = "/zipped.npy";
  CHECK(testing::WriteSpec(format, storage, zipped).code() == StatusCode::kNotSupported);
  FileSpec odd = MakeSpec("uint8", {4}, 1, 1);
  odd.element_type.size = 4;
  CHECK(format.Validate(odd).code() == StatusCode::kInvalidArgument);
  FileSpec bad_descr = MakeSpec("uint8", {4}, 1, 1);
  bad_descr.element_type.descr = "<q9";
  CHECK(format.Validate(bad_descr).code() == StatusCode::kInvalidArgument);
  CHECK(format.Validate(MakeSpec("float64", {1ull << 40, 1ull << 40}, 1, 1)).code() ==
        StatusCode::kInvalidArgument);
}

TEST_CASE("layout matches np.save") {
  NpyFormat format;
  MemStorage storage;
  // uint8 (2048, 2048, 1): a 128-byte header (length field 118), then data.
  FileSpec one = MakeSpec("uint8", {2048, 2048}, 1, 7, "/one.npy");
  CHECK(*format.ExpectedFileSize(one) == 128 + 2048 * 2048);
  REQUIRE(testing::WriteSpec(format, storage, one).ok());
  std::vector<std::byte> bytes = storage.Bytes(one.path);
  REQUIRE(bytes.size() == 128 + 2048 * 2048);
  const std::string dict = "{'descr': '|u1', 'fortran_order': False, 'shape': (2048, 2048, 1), }";
  const std::string head(reinterpret_cast<const char*>(bytes.data()), 128);
  CHECK(head.substr(0, 10) == std::string("\x93NUMPY\x01\x00\x76\x00", 10));
  CHECK(head.substr(10, dict.size()) == dict);
  CHECK(head.back() == '\n');
  CHECK(head.find_first_not_of(' ', 10 + dict.size()) == 127);
  const std::vector<std::byte> payload = ReferencePayload(one);
  CHECK(std::memcmp(bytes.data() + 128, payload.data(), payload.size()) == 0);

  // float32 (5, 7, 3): the header of np.save for that array.
  FileSpec f32 = MakeSpec("float32", {5, 7}, 3, 8, "/f32.npy");
  REQUIRE(testing::WriteSpec(format, storage, f32).ok());
  bytes = storage.Bytes(f32.path);
  const std::uint64_t shape[] = {5, 7, 3};
  const std::string expected_header = *numpy::EncodeNpyHeader("<f4", shape);
  CHECK(expected_header.size() % 64 == 0);
  CHECK(testing::SameBytes(std::span<const std::byte>(bytes).first(expected_header.size()),
                           AsBytes(expected_header)));
  CHECK(bytes.size() == *format.ExpectedFileSize(f32));
  CHECK(bytes.size() == expected_header.size() + 5 * 7 * 3 * 4);
}

TEST_CASE("writes are chunk-aligned and bounded") {
  WriterOptions options;
  options.chunk_size = 64 << 10;
  NpyFormat format(options);
  MemStorage storage;
  storage.set_alignment(4096);
  FileSpec spec = MakeSpec("uint16", {300, 301}, 3, 5, "/chunks.npy");
  storage.SetLogging(true);
  REQUIRE(testing::WriteSpec(format, storage, spec).ok());
  const std::vector<testing::StorageRequest> log = storage.TakeLog();
  storage.SetLogging(false);
  const std::uint64_t size = *format.ExpectedFileSize(spec);
  std::uint64_t expected_offset = 0;
  for (const testing::StorageRequest& r : log) {
    CHECK(r.write);
    CHECK(r.offset == expected_offset);
    CHECK(r.offset % (64 << 10) == 0);
    CHECK(r.length <= (64 << 10));
    expected_offset += r.length;
  }
  CHECK(expected_offset == size);
  CHECK(log.size() == (size + (64 << 10) - 1) / (64 << 10));
  CheckRoundTrip(format, storage, spec, false);
}

TEST_CASE("round trip: dtypes, shapes, samples per file") {
  NpyFormat format;
  MemStorage storage;
  std::vector<ArrayCase> cases = RoundTripCases();
  cases.push_back({"uint64", {3, 3}, 16});
  std::uint64_t seed = 100;
  for (const ArrayCase& c : cases) {
    ++seed;
    FileSpec spec = MakeSpec(c.dtype, c.shape, c.samples, seed,
                             std::string("/rt/") + c.dtype + "_" + std::to_string(seed) + ".npy");
    CAPTURE(spec.path);
    REQUIRE(testing::WriteSpec(format, storage, spec).ok());
    CHECK(*format.ExpectedFileSize(spec) == storage.Bytes(spec.path).size());
    CheckRoundTrip(format, storage, spec, false);
    CheckRoundTrip(format, storage, spec, true);
    CheckRoundTrip(format, storage, spec, false, 1000);
  }
  // Bool arrays hold only 0 and 1.
  FileSpec b = MakeSpec("bool", {64}, 4, 3, "/bool.npy");
  REQUIRE(testing::WriteSpec(format, storage, b).ok());
  const std::vector<std::byte> bytes = storage.Bytes(b.path);
  CHECK(std::all_of(bytes.begin() + 128, bytes.end(),
                    [](std::byte v) { return v == std::byte{0} || v == std::byte{1}; }));
  CHECK(storage.open_files() == 0);
}

TEST_CASE("content does not depend on the chunk size") {
  MemStorage storage;
  FileSpec spec = MakeSpec("uint8", {1000, 77}, 3, 42, "/a.npy");
  NpyFormat big;
  REQUIRE(testing::WriteSpec(big, storage, spec).ok());
  const std::vector<std::byte> a = storage.Bytes(spec.path);
  WriterOptions small;
  small.chunk_size = 1;  // raised to the 64 KiB minimum
  NpyFormat chunked(small);
  storage.set_alignment(512);
  REQUIRE(testing::WriteSpec(chunked, storage, spec).ok());
  CHECK(a == storage.Bytes(spec.path));
}

TEST_CASE("read pattern follows np.load") {
  NpyFormat format;
  MemStorage storage;
  FileSpec spec = MakeSpec("float32", {256, 64}, 4, 3, "/pattern.npy");
  REQUIRE(testing::WriteSpec(format, storage, spec).ok());
  const std::uint64_t header = 128;
  const std::uint64_t data = 256 * 64 * 4 * 4;
  // A later on-demand read repeats the header request.
  CheckReadPattern(format, storage, spec, {0, 1, 2}, {{0, kProbeSize}}, {{header, data}});

  // A transfer size splits the data read into requests that end on its
  // multiples in the file (the first one short by the header), decoding or
  // not.
  for (bool decode : {true, false}) {
    storage.SetLogging(true);
    Result<std::unique_ptr<FileReader>> chunked =
        format.OpenReader(spec.path, testing::TestReaderOptions(&storage, decode, false, 100000));
    REQUIRE(chunked.ok());
    REQUIRE((*chunked)->ReadSample(1).ok());
    std::vector<testing::StorageRequest> log = storage.TakeLog();
    storage.SetLogging(false);
    const std::uint64_t end = header + data;
    REQUIRE(log.size() == 1 + (end + 99999) / 100000);
    std::uint64_t at = header;
    for (std::size_t k = 1; k < log.size(); ++k) {
      CHECK(log[k].offset == at);
      CHECK(log[k].length == std::min<std::uint64_t>(k * 100000, end) - at);
      at += log[k].length;
    }
    CHECK(at == end);
  }
  CHECK(storage.open_files() == 0);
}

TEST_CASE("on_demand reloads per sample, keep_in_memory loads once") {
  NpyFormat format;
  CheckOnDemandAndKeep<NpyReader>(format, MakeSpec("float32", {10, 10}, 4, 9, "/od.npy"));
}

TEST_CASE("decode off returns sizes only") {
  NpyFormat format;
  CheckDecodeOffSizesOnly(format, MakeSpec("int32", {6, 5}, 3, 1, "/nodecode.npy"));
}

TEST_CASE("decode off reads into whatever memory the storage allocates") {
  NpyFormat format;
  MemStorage mem;
  FileSpec spec = MakeSpec("uint8", {64, 64}, 4, 2, "/dev.npy");
  REQUIRE(testing::WriteSpec(format, mem, spec).ok());
  DeviceMemStorage device(&mem);
  // Without decoding the array goes to device memory and nothing looks at it.
  Result<std::unique_ptr<FileReader>> raw =
      format.OpenReader(spec.path, testing::TestReaderOptions(&device, false));
  REQUIRE(raw.ok());
  const int before = device.device_allocations;
  Result<SampleView> s = (*raw)->ReadSample(3);
  REQUIRE(s.ok());
  CHECK(s->bytes == 64 * 64);
  CHECK(s->data.empty());
  CHECK(device.device_allocations == before + 1);
  // Decoding needs host memory: the reader falls back to it.
  CheckRoundTrip(format, device, spec, false);
  CheckRoundTrip(format, device, spec, true);
}

TEST_CASE("a header longer than the first 4 KiB takes one more request") {
  NpyFormat format;
  MemStorage storage;
  // 2000 axes of length 1 and 3 samples: the dict is about 6 KB.
  std::vector<std::uint64_t> shape(2000, 1);
  shape.push_back(3);
  Result<std::string> header = numpy::EncodeNpyHeader("<i2", shape);
  REQUIRE(header.ok());
  REQUIRE(header->size() > kProbeSize);
  std::vector<std::byte> bytes(header->size() + 6);
  std::memcpy(bytes.data(), header->data(), header->size());
  for (std::size_t i = 0; i < 6; ++i) bytes[header->size() + i] = std::byte(i + 1);
  storage.SetBytes("/long.npy", bytes);
  storage.SetLogging(true);
  Result<std::unique_ptr<FileReader>> reader =
      format.OpenReader("/long.npy", testing::TestReaderOptions(&storage, true));
  REQUIRE_MESSAGE(reader.ok(), reader.status().ToString());
  std::vector<testing::StorageRequest> log = storage.TakeLog();
  storage.SetLogging(false);
  REQUIRE(log.size() == 2);
  CHECK((log[0].offset == 0 && log[0].length == kProbeSize));
  CHECK((log[1].offset == kProbeSize && log[1].length == header->size() - kProbeSize));
  CHECK((*reader)->num_samples() == 3);
  Result<SampleView> s = (*reader)->ReadSample(1);
  REQUIRE(s.ok());
  REQUIRE(s->data.size() == 2);
  CHECK(s->data[0] == std::byte{3});
  CHECK(s->data[1] == std::byte{4});
}

TEST_CASE("foreign layouts: Fortran order, 1-D arrays, version 2.0") {
  NpyFormat format;
  MemStorage storage;
  auto make = [&](const std::string& path, const std::string& descr,
                  std::vector<std::uint64_t> shape, bool fortran, int major) {
    Result<std::string> h = numpy::EncodeNpyHeader(descr, shape, fortran);
    REQUIRE(h.ok());
    std::string header = *h;
    if (major == 2) {
      // Re-wrap the same dict with a 4-byte length field, padded to 64.
      std::string dict = header.substr(10);
      while ((12 + dict.size()) % 64 != 0) dict.insert(dict.size() - 1, " ");
      header = std::string("\x93NUMPY\x02\x00", 8);
      for (int i = 0; i < 4; ++i) header += static_cast<char>((dict.size() >> (8 * i)) & 0xFF);
      header += dict;
    }
    Result<numpy::NpyDtype> dtype = numpy::ParseNpyDescr(descr);
    const std::size_t itemsize = dtype.ok() ? dtype->itemsize : 8;  // 8 for object pointers
    std::uint64_t count = 1;
    for (std::uint64_t d : shape) count *= d;
    std::vector<std::byte> bytes(header.size() + count * itemsize);
    std::memcpy(bytes.data(), header.data(), header.size());
    for (std::size_t i = header.size(); i < bytes.size(); ++i) bytes[i] = std::byte(i * 7 + 1);
    storage.SetBytes(path, bytes);
    return header.size();
  };

  SUBCASE("Fortran order (2, 3, 4) of int16") {
    const std::size_t h = make("/f.npy", "<i2", {2, 3, 4}, true, 1);
    const std::vector<std::byte> bytes = storage.Bytes("/f.npy");
    Result<std::unique_ptr<FileReader>> reader =
        format.OpenReader("/f.npy", testing::TestReaderOptions(&storage));
    REQUIRE(reader.ok());
    REQUIRE((*reader)->num_samples() == 4);
    for (std::uint64_t i = 0; i < 4; ++i) {
      Result<SampleView> s = (*reader)->ReadSample(i);
      REQUIRE(s.ok());
      REQUIRE(s->data.size() == 2 * 3 * 2);
      // Element (a, b) of sample i sits at a + 2 * b + 6 * i in Fortran order.
      for (std::size_t a = 0; a < 2; ++a) {
        for (std::size_t b = 0; b < 3; ++b) {
          const std::size_t src = h + (a + 2 * b + 6 * i) * 2;
          const std::size_t dst = (a * 3 + b) * 2;
          CHECK(std::memcmp(s->data.data() + dst, bytes.data() + src, 2) == 0);
        }
      }
    }
  }
  SUBCASE("1-D array: each sample is one element") {
    const std::size_t h = make("/one_d.npy", "<i8", {5}, false, 1);
    const std::vector<std::byte> bytes = storage.Bytes("/one_d.npy");
    Result<std::unique_ptr<FileReader>> reader =
        format.OpenReader("/one_d.npy", testing::TestReaderOptions(&storage, true, true));
    REQUIRE(reader.ok());
    REQUIRE((*reader)->num_samples() == 5);
    for (std::uint64_t i = 0; i < 5; ++i) {
      Result<SampleView> s = (*reader)->ReadSample(i);
      REQUIRE(s.ok());
      CHECK(testing::SameBytes(s->data, std::span<const std::byte>(bytes).subspan(h + i * 8, 8)));
    }
  }
  SUBCASE("version 2.0 header") {
    const std::size_t h = make("/v2.npy", "|u1", {3, 2}, false, 2);
    CHECK(h % 64 == 0);
    const std::vector<std::byte> bytes = storage.Bytes("/v2.npy");
    Result<std::unique_ptr<FileReader>> reader =
        format.OpenReader("/v2.npy", testing::TestReaderOptions(&storage));
    REQUIRE_MESSAGE(reader.ok(), reader.status().ToString());
    auto* r = static_cast<NpyReader*>(reader->get());
    CHECK(r->header().major_version == 2);
    CHECK(r->header().header_size == h);
    Result<SampleView> s = r->ReadSample(1);
    REQUIRE(s.ok());
    REQUIRE(s->data.size() == 3);
    for (std::size_t j = 0; j < 3; ++j) CHECK(s->data[j] == bytes[h + j * 2 + 1]);
  }
  SUBCASE("unsupported and 0-d arrays") {
    make("/obj.npy", "|O", {3}, false, 1);
    CHECK(testing::OpenAndRead(format, storage, "/obj.npy").code() == StatusCode::kNotSupported);
    make("/scalar.npy", "<f8", {}, false, 1);
    Status s = testing::OpenAndRead(format, storage, "/scalar.npy");
    CHECK(s.code() == StatusCode::kNotSupported);
    CHECK(s.message().find("/scalar.npy") != std::string::npos);
  }
  SUBCASE("empty array: a zero-length sample axis") {
    make("/empty.npy", "<f4", {4, 0}, false, 1);
    Result<std::unique_ptr<FileReader>> reader =
        format.OpenReader("/empty.npy", testing::TestReaderOptions(&storage));
    REQUIRE(reader.ok());
    CHECK((*reader)->num_samples() == 0);
    CHECK((*reader)->ReadSample(0).status().code() == StatusCode::kOutOfRange);
  }
}

TEST_CASE("corruption is reported with path and offset") {
  NpyFormat format;
  MemStorage storage;
  const std::string path = "/bad.npy";
  FileSpec spec = MakeSpec("uint8", {8, 8}, 2, 3, path);
  REQUIRE(testing::WriteSpec(format, storage, spec).ok());
  const std::vector<std::byte> good = storage.Bytes(path);
  REQUIRE(good.size() == 128 + 128);
  testing::DamagedCopies damaged(storage, path, good);

  SUBCASE("truncated") {
    for (std::size_t keep :
         {std::size_t{0}, std::size_t{3}, std::size_t{7}, std::size_t{9}, std::size_t{60},
          std::size_t{127}, std::size_t{128}, std::size_t{200}, good.size() - 1}) {
      CAPTURE(keep);
      for (bool decode : {true, false})
        CheckCorruption(damaged.ReadTruncated(format, keep, decode), path);
    }
    damaged.Put([&](std::vector<std::byte>& b) { b.resize(good.size() - 1); });
    CheckCorruption(testing::OpenAndRead(format, storage, path), path, "at offset 255");
  }
  SUBCASE("magic") {
    damaged.Put([](std::vector<std::byte>& b) { b[1] = std::byte{'X'}; });
    CheckCorruption(testing::OpenAndRead(format, storage, path), path, "NPY magic");
    CheckCorruption(testing::OpenAndRead(format, storage, path, false), path, "at offset 0");
  }
  SUBCASE("not an npy file at all") {
    storage.SetBytes(path, std::vector<std::byte>(300, std::byte{'P'}));
    CheckCorruption(testing::OpenAndRead(format, storage, path), path, "not an NPY file");
  }
  SUBCASE("version") {
    damaged.Put([](std::vector<std::byte>& b) { b[6] = std::byte{9}; });
    CheckCorruption(testing::OpenAndRead(format, storage, path), path,
                    "unsupported NPY version 9.0");
  }
  SUBCASE("dictionary") {
    damaged.Put([](std::vector<std::byte>& b) { b[10 + 2] = std::byte{'x'}; });
    CheckCorruption(testing::OpenAndRead(format, storage, path), path, "bad NPY header");
    damaged.Put([](std::vector<std::byte>& b) { b[10] = std::byte{'['}; });
    CheckCorruption(testing::OpenAndRead(format, storage, path), path, "at offset 10");
  }
  SUBCASE("header length beyond numpy's limit") {
    damaged.Put([](std::vector<std::byte>& b) {
      b[8] = std::byte{0xff};
      b[9] = std::byte{0x7f};
    });
    CheckCorruption(testing::OpenAndRead(format, storage, path), path, "numpy's limit");
  }
  SUBCASE("header length pointing past the end of the file") {
    damaged.Put([](std::vector<std::byte>& b) {
      b[8] = std::byte{0x10};
      b[9] = std::byte{0x27};  // 10000: allowed, but the file has 256 bytes
    });
    CheckCorruption(testing::OpenAndRead(format, storage, path), path, "truncated file");
  }
  SUBCASE("shape larger than the file") {
    const std::size_t at = ShapeTextAt(good, "(8, 8, 2)");
    damaged.Put([&](std::vector<std::byte>& b) { b[at + 1] = std::byte{'9'}; });
    CheckCorruption(testing::OpenAndRead(format, storage, path), path, "needs 144 bytes");
  }
  SUBCASE("the file shrinks between open and read") {
    Result<std::unique_ptr<FileReader>> reader =
        format.OpenReader(path, testing::TestReaderOptions(&storage));
    REQUIRE(reader.ok());
    damaged.Put([&](std::vector<std::byte>& b) { b.resize(200); });
    Result<SampleView> s = (*reader)->ReadSample(0);
    CheckCorruption(s.status(), path, "at offset 200");
    CHECK(storage.open_files() == 0);
    // The next call starts a fresh load and fails the same way.
    CheckCorruption((*reader)->ReadSample(1).status(), path, "truncated file");
  }
  SUBCASE("the header changes between loads") {
    Result<std::unique_ptr<FileReader>> reader =
        format.OpenReader(path, testing::TestReaderOptions(&storage));
    REQUIRE(reader.ok());
    REQUIRE((*reader)->ReadSample(0).ok());
    const std::size_t at = ShapeTextAt(good, "(8, 8, 2)");
    damaged.Put([&](std::vector<std::byte>& b) {
      b[at + 4] = std::byte{'4'};  // (8, 4, 2): still fits in the file
    });
    CheckCorruption((*reader)->ReadSample(1).status(), path, "changed since the reader opened");
  }
  CHECK(storage.open_files() == 0);
}

TEST_CASE("posix files round trip") {
  testing::TempDir dir;
  NpyFormat format;
  testing::PosixStorage storage;
  FileSpec spec = MakeSpec("float64", {9, 11}, 5, 77, (dir.path() / "p.npy").string());
  REQUIRE(testing::WriteSpec(format, storage, spec).ok());
  CHECK(std::filesystem::file_size(spec.path) == *format.ExpectedFileSize(spec));
  CheckRoundTrip(format, storage, spec, false);
  CheckRoundTrip(format, storage, spec, true);
}

// ---------------------------------------------------------------------------
// Interoperability with numpy.

TEST_CASE("numpy reads what we write and we read what numpy writes") {
  if (!HaveNumpy()) return;
  testing::TempDir dir;
  testing::PosixStorage storage;
  NpyFormat format;
  // numpy's files, read back sample by sample.
  CHECK(MismatchWithNumpyArrays(format, storage, dir.path(), "b1_4d",
                                "arrays['b1_4d'] = rng.integers(0, 2, (2, 3, 4, 5)).astype('|b1')\n"
                                "def save(name, x):\n"
                                "    np.save(d + '/' + name + '.npy', x)\n") == "");
  const std::string py = testing::kSystemPython;
  std::string out;

  // Ours, checked by numpy: values, dtype, shape, and np.save of the loaded
  // array reproduces the file byte for byte.
  const std::filesystem::path check = dir.path() / "check.py";
  testing::WriteTextFile(
      check,
      "import io, sys, numpy as np\n"
      "path, ref, dtype, shape = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]\n"
      "x = np.load(path)\n"
      "assert x.dtype == np.dtype(dtype), (x.dtype, dtype)\n"
      "assert x.shape == tuple(int(v) for v in shape.split(',')), x.shape\n"
      "assert x.tobytes() == open(ref, 'rb').read(), 'data differ from the reference'\n"
      "buf = io.BytesIO()\n"
      "np.save(buf, x)\n"
      "assert buf.getvalue() == open(path, 'rb').read(), 'np.save writes different bytes'\n"
      "print('ok', path, x.dtype, x.shape)\n");
  const ArrayCase cases[] = {{"uint8", {16, 16}, 2},
                             {"float32", {5, 7}, 3},
                             {"bool", {9}, 4},
                             {"int64", {3, 2, 2}, 5},
                             {"float16", {100}, 1}};
  int k = 0;
  for (const ArrayCase& c : cases) {
    FileSpec spec = MakeSpec(c.dtype, c.shape, c.samples, 50 + k,
                             (dir.path() / ("ours_" + std::to_string(k) + ".npy")).string());
    ++k;
    REQUIRE(testing::WriteSpec(format, storage, spec).ok());
    const std::string ref = spec.path + ".ref";
    testing::WriteFileBytes(ref, ReferencePayload(spec));
    std::string shape;
    for (std::uint64_t d : spec.sample_shape) shape += std::to_string(d) + ",";
    shape += std::to_string(spec.num_samples);
    const int rc = testing::RunCommand(
        py + " " + check.string() + " " + spec.path + " " + ref + " " + c.dtype + " " + shape,
        &out);
    CHECK_MESSAGE(rc == 0, (spec.path + ": " + out));
  }
}

TEST_CASE("written in parts, the file is WriteFile's, byte for byte") {
  for (const char* dtype : {"uint8", "float32", "bool"}) {
    CAPTURE(dtype);
    const FileSpec spec = MakeSpec(dtype, {333, 7}, 29, 5, "/p/parts.npy");
    NpyFormat format;
    MemStorage whole, parts;
    REQUIRE(testing::WriteSpec(format, whole, spec).ok());
    Result<PayloadLayout> layout = testing::WriteInParts(format, parts, spec, 7);
    REQUIRE(layout.ok());
    CHECK(layout->payload_offset == 128);
    CHECK(layout->file_size == whole.Bytes(spec.path).size());
    CHECK(parts.Bytes(spec.path) == whole.Bytes(spec.path));
  }
}

TEST_CASE("content options reach the payload, whole and in parts") {
  FileSpec spec = MakeSpec("uint8", {1024, 64}, 6, 5, "/p/content.npy");
  spec.content.compress_percentage = 50;
  spec.content.dedupe_percentage = 30;
  NpyFormat format;
  MemStorage whole, parts;
  REQUIRE(testing::WriteSpec(format, whole, spec).ok());
  const std::vector<std::byte> file = whole.Bytes(spec.path);
  std::vector<std::byte> payload(spec.sample_bytes() * spec.num_samples);
  spec.PayloadContent().Fill(payload);
  REQUIRE(file.size() == 128 + payload.size());
  CHECK(std::equal(payload.begin(), payload.end(), file.begin() + 128));
  CHECK(payload != ReferencePayload(spec));  // not the default content
  REQUIRE(testing::WriteInParts(format, parts, spec, 7).ok());
  CHECK(parts.Bytes(spec.path) == file);

  spec.content.kind = ContentOptions::Kind::kZeros;
  REQUIRE(testing::WriteSpec(format, whole, spec).ok());
  const std::vector<std::byte> zeros = whole.Bytes(spec.path);
  CHECK(
      std::all_of(zeros.begin() + 128, zeros.end(), [](std::byte v) { return v == std::byte{0}; }));
}

}  // namespace
}  // namespace iomimic::npy
