// Test helpers shared by the png, jpeg and tiff plugin tests (header-only,
// included by the *_format_test.cpp files only): an in-memory Storage that
// logs every request, a POSIX Storage for files that Python reads, a
// temporary directory, and helpers to write specs and read samples.

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
#include "iomimic/testing/file_spec.h"
#include "iomimic/testing/memory_storage.h"
#include "iomimic/testing/posix_test_storage.h"

namespace iomimic::image_test {

namespace fs = std::filesystem;

inline constexpr char kPython[] = "/usr/bin/python3";

// The SDK's in-memory test storage (iomimic/testing/memory_storage.h).
using MemStorage = ::iomimic::testing::MemoryStorage;
using Request = ::iomimic::testing::StorageRequest;

// Real files: the SDK's test storage (iomimic/testing/posix_test_storage.h).
using ::iomimic::testing::PosixFile;
using ::iomimic::testing::PosixStorage;
using ::iomimic::testing::TempDir;

inline FileSpec MakeSpec(const std::string& dtype, std::vector<std::uint64_t> shape,
                         std::uint64_t seed, const std::string& path, std::uint64_t samples = 1) {
  return ::iomimic::testing::TestFileSpec(dtype, std::move(shape), samples, seed, path);
}

inline Status WriteSpec(Format& format, Storage& storage, const FileSpec& spec) {
  OpenOptions options;
  options.mode = OpenMode::kWrite;
  IOMIMIC_ASSIGN_OR_RETURN(std::unique_ptr<File> file, storage.Open(spec.path, options));
  IOMIMIC_RETURN_IF_ERROR(format.WriteFile(storage, *file, spec));
  return file->Close();
}

// The pixels the seed produces: the content stream of the seed over the image.
inline std::vector<std::byte> ReferencePixels(const FileSpec& spec) {
  std::vector<std::byte> data(spec.sample_bytes());
  ContentStream(spec.seed).Fill(data);
  return data;
}

inline bool SameBytes(std::span<const std::byte> a, std::span<const std::byte> b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size()) == 0);
}

inline ReaderOptions Options(Storage* storage, bool decode = true, bool keep = false,
                             std::uint64_t transfer = 0) {
  ReaderOptions o;
  o.storage = storage;
  o.decode = decode;
  o.keep_in_memory = keep;
  o.transfer_size = transfer;
  return o;
}

// Opens `path` and reads sample 0; returns the first error.
inline Status OpenAndRead(Format& format, Storage& storage, const std::string& path,
                          bool decode = true) {
  Result<std::unique_ptr<FileReader>> reader = format.OpenReader(path, Options(&storage, decode));
  if (!reader.ok()) return reader.status();
  return (*reader)->ReadSample(0).status();
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

inline void CheckCorruption(const Status& s, const std::string& path,
                            const std::string& fragment = "") {
  // IOMIMIC_TEST_VERBOSE=1 prints every message checked here.
  if (std::getenv("IOMIMIC_TEST_VERBOSE") != nullptr) MESSAGE(s.ToString());
  CHECK_MESSAGE(s.code() == StatusCode::kCorruption, s.ToString());
  CHECK_MESSAGE(s.message().find(path) != std::string::npos, s.ToString());
  CHECK_MESSAGE(s.message().find(" at offset ") != std::string::npos, s.ToString());
  if (!fragment.empty()) {
    CHECK_MESSAGE(s.message().find(fragment) != std::string::npos, s.ToString());
  }
}

inline std::string ReadText(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::vector<std::byte> ReadBinary(const fs::path& p) {
  const std::string text = ReadText(p);
  std::vector<std::byte> out(text.size());
  if (!text.empty()) std::memcpy(out.data(), text.data(), text.size());
  return out;
}

inline void WriteBinary(const fs::path& p, std::span<const std::byte> data) {
  std::ofstream out(p, std::ios::binary);
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
}

// Runs a shell command; returns its exit status and its combined output.
inline int Run(const std::string& command, std::string* output) {
  output->clear();
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return -1;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0) output->append(buf, n);
  const int status = ::pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// True when Debian's python3 can import every module in `modules` (space
// separated, e.g. "numpy PIL").
inline bool HavePython(const std::string& modules) {
  std::string import;
  std::stringstream ss(modules);
  std::string m;
  while (ss >> m) import += (import.empty() ? "import " : ", ") + m;
  std::string out;
  return Run(std::string(kPython) + " -c '" + import + "'", &out) == 0;
}

}  // namespace iomimic::image_test
