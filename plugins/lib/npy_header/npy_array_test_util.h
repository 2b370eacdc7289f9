// Test helpers shared by the npy and npz plugin tests (header-only, doctest;
// included by their *_format_test.cpp files only, never by the plugins): the
// array both formats write (samples on the last axis, npy_array.h), read back
// and compared, and the reader behaviours both formats share.

#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "iomimic/iomimic.h"
#include "iomimic/testing/foreign_files.h"
#include "iomimic/testing/format_test_support.h"
#include "iomimic/testing/memory_storage.h"

namespace iomimic::numpy::test {

// The whole array's data: the content stream of the seed
// (iomimic::ContentStream), bools as 0 or 1.
inline std::vector<std::byte> ReferencePayload(const FileSpec& spec) {
  std::vector<std::byte> data(spec.sample_bytes() * spec.num_samples);
  ContentStream(spec.seed).Fill(data);
  if (spec.element_type.descr == "|b1") {
    for (std::byte& b : data) b &= std::byte{1};
  }
  return data;
}

// x[..., i] of the C-order array with samples on the last axis.
inline std::vector<std::byte> ReferenceSample(const FileSpec& spec,
                                              const std::vector<std::byte>& payload,
                                              std::uint64_t i) {
  const std::size_t k = spec.element_type.size;
  const std::size_t n = spec.num_samples;
  std::vector<std::byte> out(spec.sample_bytes());
  for (std::size_t j = 0; j < spec.sample_elements(); ++j) {
    std::memcpy(out.data() + j * k, payload.data() + (j * n + i) * k, k);
  }
  return out;
}

// Reads every sample of `spec`'s file (keep_in_memory `keep`, transfer size
// `transfer`) and compares it with the reference.
inline void CheckRoundTrip(Format& format, Storage& storage, const FileSpec& spec, bool keep,
                           std::uint64_t transfer = 0) {
  const std::vector<std::byte> payload = ReferencePayload(spec);
  Result<std::unique_ptr<FileReader>> reader =
      format.OpenReader(spec.path, testing::TestReaderOptions(&storage, true, keep, transfer));
  REQUIRE_MESSAGE(reader.ok(), reader.status().ToString());
  REQUIRE((*reader)->num_samples() == spec.num_samples);
  for (std::uint64_t i = 0; i < spec.num_samples; ++i) {
    Result<SampleView> sample = (*reader)->ReadSample(i);
    REQUIRE_MESSAGE(sample.ok(), sample.status().ToString());
    CHECK(sample->bytes == spec.sample_bytes());
    CHECK(testing::SameBytes(sample->data, ReferenceSample(spec, payload, i)));
  }
}

// `s` is the kCorruption of a damaged file: naming `path`, an offset and,
// when not empty, `fragment`.
inline void CheckCorruption(const Status& s, const std::string& path,
                            const std::string& fragment = "") {
  CHECK_MESSAGE(testing::IsCorruptionNaming(s, path, fragment), s.ToString());
}

// `spec`'s file of 4 samples, written by `format` to memory, read by Reader
// (the plugin's reader class, with Open and loads()), decoding and not: on
// demand every sample is a load (a file open, closed again), with
// keep_in_memory the first read loads the file once for all.
template <typename Reader>
void CheckOnDemandAndKeep(Format& format, const FileSpec& spec) {
  REQUIRE(spec.num_samples == 4);
  testing::MemoryStorage storage;
  REQUIRE(testing::WriteSpec(format, storage, spec).ok());
  for (bool decode : {true, false}) {
    CAPTURE(decode);
    const int opens_before = storage.opens();
    Result<std::unique_ptr<FileReader>> on_demand =
        Reader::Open(spec.path, testing::TestReaderOptions(&storage, decode, false));
    REQUIRE(on_demand.ok());
    auto* r = static_cast<Reader*>(on_demand->get());
    for (std::uint64_t i = 0; i < 4; ++i) REQUIRE(r->ReadSample(i).ok());
    CHECK(r->loads() == 4);
    CHECK(storage.opens() - opens_before == 4);
    CHECK(storage.open_files() == 0);

    Result<std::unique_ptr<FileReader>> memory =
        Reader::Open(spec.path, testing::TestReaderOptions(&storage, decode, true));
    REQUIRE(memory.ok());
    auto* m = static_cast<Reader*>(memory->get());
    for (std::uint64_t i = 0; i < 4; ++i) REQUIRE(m->ReadSample(3 - i).ok());
    for (std::uint64_t i = 0; i < 4; ++i) REQUIRE(m->ReadSample(i).ok());
    CHECK(m->loads() == 1);
    CHECK(storage.opens() - opens_before == 5);
  }
  CHECK(storage.open_files() == 0);
}

// `spec`'s file, written by `format` to memory and read without decoding:
// the last sample has its size and no data.
inline void CheckDecodeOffSizesOnly(Format& format, const FileSpec& spec) {
  testing::MemoryStorage storage;
  REQUIRE(testing::WriteSpec(format, storage, spec).ok());
  Result<std::unique_ptr<FileReader>> reader =
      format.OpenReader(spec.path, testing::TestReaderOptions(&storage, false));
  REQUIRE(reader.ok());
  CHECK((*reader)->num_samples() == spec.num_samples);
  Result<SampleView> s = (*reader)->ReadSample(spec.num_samples - 1);
  REQUIRE(s.ok());
  CHECK(s->data.empty());
  CHECK(s->bytes == spec.sample_bytes());
}

// One array of the round-trip tests: dtype, sample shape, samples.
struct ArrayCase {
  const char* dtype;
  std::vector<std::uint64_t> shape;
  std::uint64_t samples;
};

// The arrays both formats round-trip: every width and kind, 1-D to 3-D
// samples, one to a thousand samples, a 300,000-element sample.
inline const std::vector<ArrayCase>& RoundTripCases() {
  static const std::vector<ArrayCase> cases = {
      {"uint8", {16, 16}, 1},  {"uint8", {5, 7}, 3},  {"float32", {5, 7}, 3},  {"float64", {3}, 5},
      {"int16", {2, 3, 4}, 2}, {"bool", {9}, 4},      {"float16", {33, 1}, 7}, {"int64", {1}, 1000},
      {"uint32", {17, 5}, 2},  {"int8", {300000}, 2},
  };
  return cases;
}

// (offset, length) of each request, for comparing access patterns.
using Extents = std::vector<std::pair<std::uint64_t, std::uint64_t>>;

inline Extents ExtentsOf(const std::vector<testing::StorageRequest>& log) {
  Extents out;
  for (const testing::StorageRequest& r : log) out.emplace_back(r.offset, r.length);
  return out;
}

// The requests of reading `spec`'s file from `storage` on demand, decoding
// and not: opening makes the requests `open`; then each read of sample
// `samples[k]` makes the requests `data` and returns the sample's size (its
// data only when decoding), a later read repeating `open` first.
inline void CheckReadPattern(Format& format, testing::MemoryStorage& storage, const FileSpec& spec,
                             const std::vector<std::uint64_t>& samples, const Extents& open,
                             const Extents& data) {
  Extents again = open;
  again.insert(again.end(), data.begin(), data.end());
  for (bool decode : {true, false}) {
    CAPTURE(decode);
    storage.SetLogging(true);
    Result<std::unique_ptr<FileReader>> reader =
        format.OpenReader(spec.path, testing::TestReaderOptions(&storage, decode));
    REQUIRE_MESSAGE(reader.ok(), reader.status().ToString());
    CHECK(ExtentsOf(storage.TakeLog()) == open);
    for (std::size_t k = 0; k < samples.size(); ++k) {
      CAPTURE(k);
      Result<SampleView> s = (*reader)->ReadSample(samples[k]);
      REQUIRE_MESSAGE(s.ok(), s.status().ToString());
      CHECK(s->bytes == spec.sample_bytes());
      CHECK(s->data.empty() == !decode);
      CHECK(ExtentsOf(storage.TakeLog()) == (k == 0 ? data : again));
    }
    storage.SetLogging(false);
  }
  CHECK(storage.open_files() == 0);
}

// Where the text `shape` (the array's shape tuple, "(8, 8, 2)") stands in
// the file `bytes`, for damaging the header.
inline std::size_t ShapeTextAt(const std::vector<std::byte>& bytes, const std::string& shape) {
  const std::string text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  const std::size_t at = text.find(shape);
  REQUIRE(at != std::string::npos);
  return at;
}

// Whether /usr/bin/python3 has numpy; when not, says that the test is
// skipped.
inline bool HaveNumpy() {
  if (testing::HavePythonModules("numpy")) return true;
  MESSAGE("skipped: /usr/bin/python3 with numpy is not available");
  return false;
}

// Runs a Python script that writes, into a folder below `dir`, numpy arrays
// in every layout the readers must handle (C and Fortran order,
// big-endian, 1-D; samples on the last axis) and one more, `extra_name`,
// with the Python `extra`: it defines arrays[extra_name] and save(name, x),
// which writes array x as the file name + extension with numpy. Then reads
// every file with `format` and compares each sample with numpy's
// (testing::MismatchWithForeignFiles); empty when all match.
inline std::string MismatchWithNumpyArrays(Format& format, Storage& storage,
                                           const std::filesystem::path& dir,
                                           const std::string& extra_name,
                                           const std::string& extra) {
  const std::string script =
      "import sys, numpy as np\n"
      "d = sys.argv[1]\n"
      "rng = np.random.default_rng(5)\n"
      "arrays = {\n"
      "  'c_u16': rng.integers(0, 60000, (3, 4, 5)).astype('<u2'),\n"
      "  'f_f8': np.asfortranarray(rng.random((3, 4, 2))),\n"
      "  'f_i2': np.asfortranarray(rng.integers(-9, 9, (2, 3, 4, 3)).astype('<i2')),\n"
      "  'be_i4': rng.integers(-5, 5, (4, 3)).astype('>i4'),\n"
      "  'one_d': np.arange(5, dtype='<i8'),\n"
      "}\n" +
      extra +
      "for name, x in arrays.items():\n"
      "    save(name, x)\n"
      "    for i in range(x.shape[-1]):\n"
      "        open(d + '/' + name + '.' + str(i), 'wb').write(x[..., i].tobytes())\n";
  return testing::MismatchWithForeignFiles(format, storage, dir, script,
                                           {"c_u16", "f_f8", "f_i2", "be_i4", "one_d", extra_name},
                                           "." + format.traits().extension);
}

}  // namespace iomimic::numpy::test
