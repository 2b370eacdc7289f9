// Test helpers shared by the png, jpeg and tiff plugin tests (header-only,
// included by the *_format_test.cpp files only): the SDK's test storages and
// format test helpers (iomimic/testing/) under the names these tests use,
// and what only image tests need: specs, reference pixels, the write
// pattern, the facts and fixture base of image_format_cases.h.

#pragma once

#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
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
#include <utility>
#include <vector>

#include "iomimic/image_format.h"
#include "iomimic/iomimic.h"
#include "iomimic/testing/damaged_copies.h"
#include "iomimic/testing/file_spec.h"
#include "iomimic/testing/foreign_files.h"
#include "iomimic/testing/format_test_support.h"
#include "iomimic/testing/memory_storage.h"
#include "iomimic/testing/posix_test_storage.h"

namespace iomimic::image_test {

namespace fs = std::filesystem;

// The SDK's in-memory test storage (iomimic/testing/memory_storage.h).
using MemStorage = ::iomimic::testing::MemoryStorage;
using Request = ::iomimic::testing::StorageRequest;

// The SDK's format test helpers and storages on real files
// (iomimic/testing/): WriteSpec, OpenAndRead, SameBytes, TestReaderOptions,
// DamagedCopies, RunCommand, PosixStorage, TempDir, ...
using namespace ::iomimic::testing;  // NOLINT: test helpers

inline FileSpec MakeSpec(const std::string& dtype, std::vector<std::uint64_t> shape,
                         std::uint64_t seed, const std::string& path, std::uint64_t samples = 1) {
  return ::iomimic::testing::TestFileSpec(dtype, std::move(shape), samples, seed, path);
}

// The pixels the seed produces: the content stream of the seed over the image.
inline std::vector<std::byte> ReferencePixels(const FileSpec& spec) {
  std::vector<std::byte> data(spec.sample_bytes());
  ContentStream(spec.seed).Fill(data);
  return data;
}

// For encoders that only append: the requests follow one another
// and cover the file.
inline void CheckSequentialWrites(const std::vector<Request>& writes, std::uint64_t size) {
  REQUIRE(writes.size() > 1);
  std::uint64_t next = 0;
  for (const Request& w : writes) {
    CHECK(w.offset == next);
    next += w.length;
  }
  CHECK(next == size);
}

// What the shell's test cases (image_format_cases.h) need to know of a codec.
struct ShellFacts {
  const char* name = "";             // plugin name and extension
  std::uint64_t max_side = 0;        // largest rows or columns
  const char* element_type = "";     // FormatTraits::element_type
  const char* on_demand_type = "";   // element type of the read-type case
  std::vector<std::string> options;  // the descriptor's options, in order
  std::vector<std::pair<std::string, std::string>> bad_options;  // refused by the factory
  std::vector<const char*> rejected_types;                       // element types Validate refuses
  const char* unsupported_compression = "";  // a dataset.compression Validate refuses
};

// The usual base of a fixture of image_format_cases.h: the format of Codec
// with default options, lossless pixels, an encoder that only appends.
template <typename Codec>
struct CodecFixture {
  static std::unique_ptr<Format> Make() {
    return std::make_unique<image::ImageFormat>(std::make_unique<Codec>());
  }
  static void CheckPixels(std::span<const std::byte> decoded, const FileSpec& spec) {
    CHECK(SameBytes(decoded, ReferencePixels(spec)));
  }
  static void CheckWrites(const std::vector<Request>& writes, std::uint64_t size) {
    CheckSequentialWrites(writes, size);
  }
};

// Checks a file we write against Python (PIL, tifffile): writes `spec` with
// `format` on `storage` (a file of the script's folder), the seed's pixels
// beside it (<path>.ref) and the pixels our reader decodes (<path>.ours),
// then runs the Python file `script` with the arguments "<path> <path>.ref
// <path>.ours <args>"; CHECKs that it exits 0, its output as the message.
inline void CheckWithPython(Format& format, Storage& storage, const FileSpec& spec,
                            const fs::path& script, const std::string& args) {
  REQUIRE(WriteSpec(format, storage, spec).ok());
  WriteFileBytes(spec.path + ".ref", ReferencePixels(spec));
  Result<std::unique_ptr<FileReader>> reader =
      format.OpenReader(spec.path, TestReaderOptions(&storage));
  REQUIRE_MESSAGE(reader.ok(), reader.status().ToString());
  Result<SampleView> sample = (*reader)->ReadSample(0);
  REQUIRE_MESSAGE(sample.ok(), sample.status().ToString());
  WriteFileBytes(spec.path + ".ours", sample->data);
  std::string out;
  const int rc = RunCommand(std::string(kSystemPython) + " " + script.string() + " " + spec.path +
                                " " + spec.path + ".ref " + spec.path + ".ours " + args,
                            &out);
  CHECK_MESSAGE(rc == 0, out);
}

// `s` is the kCorruption of a damaged file: naming `path`, an offset and,
// when not empty, `fragment` (testing::IsCorruptionNaming).
inline void CheckCorruption(const Status& s, const std::string& path,
                            const std::string& fragment = "") {
  // IOMIMIC_TEST_VERBOSE=1 prints every message checked here.
  if (std::getenv("IOMIMIC_TEST_VERBOSE") != nullptr) MESSAGE(s.ToString());
  CHECK_MESSAGE(::iomimic::testing::IsCorruptionNaming(s, path, fragment), s.ToString());
}

}  // namespace iomimic::image_test
