// The test cases of the image format shell (iomimic/image_format.h), written
// once and run for each codec: the jpeg, png and tiff tests define a fixture
// and include this header, which defines the cases "shell: ..." against it.
// What the shell does (traits, the plugin descriptor and its options,
// Validate's shape rules, bounded write requests, PIL's read pattern,
// on_demand and keep_in_memory, storage errors, recovery after a failed
// load) is checked here; each codec's test keeps only its own bytes.
//
// The including file declares `iomimic_plugin_descriptor` and, before the
// #include, `using ShellFixture = <fixture>;` at global scope, where the
// fixture (usually derived from CodecFixture<Codec>, image_test_util.h)
// provides:
//   static const ShellFacts kFacts;             what the codec accepts
//   static std::unique_ptr<Format> Make();      the format, default options
//   static void CheckPixels(std::span<const std::byte> decoded,
//                           const FileSpec& spec);  decoded vs generated
//   static void CheckWrites(const std::vector<Request>& writes,
//                           std::uint64_t size);    the order of requests
//   static const char* Damage(std::vector<std::byte>& file);  damages a
//       good {120, 100} file, returns a fragment of the error

#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "image_test_support/image_test_util.h"
#include "iomimic/image_format.h"

namespace iomimic::image_test {

// Reads `spec` twice with `keep`: the sample has the spec's size, passes
// the fixture's pixel check and is the same both times.
template <typename Fixture>
void CheckRoundTrip(Format& format, Storage& storage, const FileSpec& spec, bool keep) {
  Result<std::unique_ptr<FileReader>> reader =
      format.OpenReader(spec.path, TestReaderOptions(&storage, true, keep));
  REQUIRE_MESSAGE(reader.ok(), reader.status().ToString());
  REQUIRE((*reader)->num_samples() == 1);
  std::vector<std::byte> first;
  for (int round = 0; round < 2; ++round) {
    Result<SampleView> sample = (*reader)->ReadSample(0);
    REQUIRE_MESSAGE(sample.ok(), sample.status().ToString());
    CHECK(sample->bytes == spec.sample_bytes());
    REQUIRE(sample->data.size() == spec.sample_bytes());
    Fixture::CheckPixels(sample->data, spec);
    if (round == 0) {
      first.assign(sample->data.begin(), sample->data.end());
    } else {
      CHECK(SameBytes(sample->data, first));
    }
  }
}

inline std::string Path(const char* stem, const char* extension = ShellFixture::kFacts.name) {
  return std::string("/") + stem + "." + extension;
}

// Each case starts with the fixture's format over an in-memory storage.
class ShellTest {
 protected:
  // Writes an image of `dtype` and `shape` at Path(stem); returns its spec.
  FileSpec Written(const char* stem, std::vector<std::uint64_t> shape, std::uint64_t seed = 5,
                   const char* dtype = "uint8") {
    FileSpec spec = MakeSpec(dtype, std::move(shape), seed, Path(stem));
    REQUIRE(WriteSpec(*format_, storage_, spec).ok());
    return spec;
  }

  std::unique_ptr<Format> format_ = ShellFixture::Make();
  MemStorage storage_;
};

TEST_CASE_FIXTURE(ShellTest, "shell: traits, plugin descriptor and options") {
  const std::string name = ShellFixture::kFacts.name;
  CHECK(std::string(iomimic_plugin_descriptor.name) == name);
  CHECK(iomimic_plugin_descriptor.capabilities == IOMIMIC_CAP_HOST_DECODE);
  const std::vector<std::string> options = ShellFixture::kFacts.options;
  REQUIRE(iomimic_plugin_descriptor.num_options == options.size());
  for (std::size_t i = 0; i < options.size(); ++i) {
    CHECK(std::string(iomimic_plugin_descriptor.options[i].name) == options[i]);
  }

  CHECK(format_->name() == name);
  const FormatTraits t = format_->traits();
  CHECK(t.extension == name);
  CHECK(t.element_type == ShellFixture::kFacts.element_type);
  CHECK_FALSE(t.multi_sample_files);
  CHECK_FALSE(t.partial_reads);
  CHECK(t.needs_host_decode);
  CHECK_FALSE(t.predictable_size);
  CHECK_FALSE(t.streamed);
  CHECK(format_->ExpectedFileSize(MakeSpec("uint8", {8, 8}, 1, Path("a"))).status().code() ==
        StatusCode::kNotSupported);

  // The factory parses the options.
  PluginContext ctx;
  Status error;
  void* made = iomimic_plugin_descriptor.create(&ctx, &error);
  REQUIRE_MESSAGE(made != nullptr, error.ToString());
  iomimic_plugin_descriptor.destroy(made);
  const std::string owner = "format plugin '" + name + "'";
  for (const auto& option : ShellFixture::kFacts.bad_options) {
    const std::string& key = option.first;
    const std::string& value = option.second;
    CAPTURE(key);
    CAPTURE(value);
    ctx.options = PluginOptions(owner, {{key, value}});
    CHECK(iomimic_plugin_descriptor.create(&ctx, &error) == nullptr);
    CHECK(error.code() == StatusCode::kInvalidArgument);
    CHECK(error.message().find(owner) != std::string::npos);
    CHECK(error.message().find(key) != std::string::npos);
  }
}

TEST_CASE_FIXTURE(ShellTest, "shell: validation of shapes and sample counts") {
  const std::string path = Path("a");
  for (const std::vector<std::uint64_t>& shape : std::vector<std::vector<std::uint64_t>>{
           {64, 48}, {64, 48, 1}, {64, 48, 3}, {1, 1}, {ShellFixture::kFacts.max_side, 1}}) {
    CAPTURE(shape[0]);
    CHECK(format_->Validate(MakeSpec("uint8", shape, 1, path)).ok());
  }
  auto code = [&](const FileSpec& spec) { return format_->Validate(spec).code(); };
  for (const std::vector<std::uint64_t>& shape :
       std::vector<std::vector<std::uint64_t>>{{64},
                                               {4, 4, 4},
                                               {4, 4, 2},
                                               {4, 4, 4, 1},
                                               {0, 4},
                                               {4, 0},
                                               {ShellFixture::kFacts.max_side + 1, 1},
                                               {1, ShellFixture::kFacts.max_side + 1}}) {
    CAPTURE(shape.size());
    CAPTURE(shape[0]);
    CHECK(code(MakeSpec("uint8", shape, 1, path)) == StatusCode::kInvalidArgument);
  }
  const Status many = format_->Validate(MakeSpec("uint8", {4, 4}, 1, path, 2));
  CHECK(many.code() == StatusCode::kInvalidArgument);
  CHECK(many.message().find("num_samples_per_file") != std::string::npos);
  CHECK(many.message().find("one sample") != std::string::npos);
  for (const char* dtype : ShellFixture::kFacts.rejected_types) {
    CAPTURE(dtype);
    CHECK(code(MakeSpec(dtype, {4, 4}, 1, path)) == StatusCode::kInvalidArgument);
  }
  FileSpec compressed = MakeSpec("uint8", {4, 4}, 1, path);
  compressed.compression = ShellFixture::kFacts.unsupported_compression;
  CHECK(code(compressed) == StatusCode::kNotSupported);

  // WriteFile validates too and writes nothing.
  MemStorage storage;
  const std::string bad = Path("bad");
  CHECK(WriteSpec(*format_, storage_, MakeSpec("uint8", {4}, 1, bad)).code() ==
        StatusCode::kInvalidArgument);
  CHECK(storage_.Bytes(bad).empty());
}

TEST_CASE_FIXTURE(ShellTest, "shell: round trip of several shapes") {
  const std::vector<std::vector<std::uint64_t>> shapes = {
      {64, 64}, {1, 1}, {3, 1000}, {1000, 3}, {31, 29, 1}, {17, 5, 3}, {256, 256, 3}, {7, 9}};
  std::uint64_t seed = 100;
  for (const auto& shape : shapes) {
    CAPTURE(shape.size());
    CAPTURE(shape[0]);
    CAPTURE(shape[1]);
    const std::string path = "/rt/" + std::to_string(seed) + "." + ShellFixture::kFacts.name;
    FileSpec spec = MakeSpec("uint8", shape, seed++, path);
    REQUIRE(WriteSpec(*format_, storage_, spec).ok());
    CheckRoundTrip<ShellFixture>(*format_, storage_, spec, false);
    CheckRoundTrip<ShellFixture>(*format_, storage_, spec, true);
  }
  CHECK(storage_.open_files() == 0);
}

TEST_CASE_FIXTURE(ShellTest, "shell: large images stream through bounded write requests") {
  FileSpec spec = MakeSpec("uint8", {3000, 3000}, 9, Path("big"));
  storage_.SetLogging(true);
  REQUIRE(WriteSpec(*format_, storage_, spec).ok());
  const std::vector<Request> writes = storage_.TakeLog();
  REQUIRE(writes.size() > 1);
  std::uint64_t covered = 0;
  for (const Request& w : writes) {
    CHECK(w.write);
    CHECK(w.length <= image::kMaxWriteChunk);
    covered += w.length;
  }
  const std::uint64_t size = storage_.Bytes(spec.path).size();
  CHECK(covered >= size);
  ShellFixture::CheckWrites(writes, size);
  CheckRoundTrip<ShellFixture>(*format_, storage_, spec, false);
}

TEST_CASE_FIXTURE(ShellTest,
                  "shell: reads follow PIL's pattern: 4 KiB, 64 KiB blocks, a read at EOF") {
  const FileSpec spec = Written("pattern", {400, 400});
  const std::uint64_t size = storage_.Bytes(spec.path).size();
  REQUIRE(size > 65536);
  for (bool decode : {true, false}) {
    CAPTURE(decode);
    storage_.SetLogging(true);
    Result<std::unique_ptr<FileReader>> reader =
        format_->OpenReader(spec.path, TestReaderOptions(&storage_, decode));
    REQUIRE(reader.ok());
    std::vector<Request> log = storage_.TakeLog();
    REQUIRE(log.size() == 1);  // Image.open: the header read only
    CHECK(log[0].offset == 0);
    CHECK(log[0].length == 4096);
    Result<SampleView> s = (*reader)->ReadSample(0);
    REQUIRE_MESSAGE(s.ok(), s.status().ToString());
    CHECK(s->bytes == 400 * 400);
    CHECK(s->data.size() == (decode ? 400u * 400 : 0u));
    log = storage_.TakeLog();
    REQUIRE(log.size() >= 2);
    CHECK(log[0].offset == 4096);
    CHECK(log[0].length == 61440);  // as in the strace of DLIO's reader
    std::uint64_t next = 4096;
    for (std::size_t i = 0; i + 1 < log.size(); ++i) {
      CHECK(!log[i].write);
      CHECK(log[i].offset == next);
      const std::uint64_t boundary = (next / 65536 + 1) * 65536;
      CHECK(log[i].length == std::min(boundary, size) - next);
      CHECK(log[i].returned == log[i].length);
      next += log[i].returned;
    }
    CHECK(next == size);
    CHECK(log.back().offset == size);  // the read that finds the end
    CHECK(log.back().returned == 0);
    CHECK(storage_.open_files() == 0);
    storage_.SetLogging(false);
  }
  // transfer_size changes the block size.
  storage_.SetLogging(true);
  Result<std::unique_ptr<FileReader>> reader =
      format_->OpenReader(spec.path, TestReaderOptions(&storage_, true, false, 16384));
  REQUIRE(reader.ok());
  REQUIRE((*reader)->ReadSample(0).ok());
  const std::vector<Request> small = storage_.TakeLog();
  REQUIRE(small.size() > 3);
  CHECK(small[1].offset == 4096);
  CHECK(small[1].length == 12288);
  CHECK(small[2].length == 16384);
  storage_.SetLogging(false);
}

TEST_CASE_FIXTURE(ShellTest, "shell: tiny files: the header read is short, then one read at EOF") {
  const FileSpec spec = Written("tiny", {2, 3});
  const std::uint64_t size = storage_.Bytes(spec.path).size();
  REQUIRE(size < 4096);
  storage_.SetLogging(true);
  CheckRoundTrip<ShellFixture>(*format_, storage_, spec, false);
  const std::vector<Request> log = storage_.TakeLog();
  // Per load: 4 KiB at 0 (short), then 4 KiB at the end (0 bytes).
  REQUIRE(log.size() == 4);
  CHECK(log[0].returned == size);
  CHECK(log[1].offset == size);
  CHECK(log[1].returned == 0);
}

TEST_CASE_FIXTURE(ShellTest, "shell: on_demand reloads every time, keep_in_memory reads once") {
  const FileSpec spec = Written("mem", {40, 40}, 5, ShellFixture::kFacts.on_demand_type);
  for (bool decode : {true, false}) {
    for (bool keep : {false, true}) {
      CAPTURE(decode);
      CAPTURE(keep);
      const int opens_before = storage_.opens();
      Result<std::unique_ptr<FileReader>> reader =
          format_->OpenReader(spec.path, TestReaderOptions(&storage_, decode, keep));
      REQUIRE(reader.ok());
      auto* image_reader = dynamic_cast<image::ImageReader*>(reader->get());
      REQUIRE(image_reader != nullptr);
      for (int i = 0; i < 3; ++i) {
        Result<SampleView> s = (*reader)->ReadSample(0);
        REQUIRE(s.ok());
        CHECK(s->bytes == spec.sample_bytes());
      }
      CHECK(image_reader->loads() == (keep ? 1u : 3u));
      CHECK(storage_.opens() - opens_before == (keep ? 1 : 3));
      CHECK(image_reader->info().width == 40);
      CHECK(image_reader->info().bytes_per_sample == spec.element_type.size);
      CHECK(storage_.open_files() == 0);
    }
  }
}

TEST_CASE_FIXTURE(ShellTest, "shell: out-of-range sample index") {
  const FileSpec spec = Written("range", {8, 8});
  Result<std::unique_ptr<FileReader>> reader =
      format_->OpenReader(spec.path, TestReaderOptions(&storage_));
  REQUIRE(reader.ok());
  Result<SampleView> s = (*reader)->ReadSample(1);
  CHECK(s.status().code() == StatusCode::kOutOfRange);
  CHECK(s.status().message().find(spec.path) != std::string::npos);
  CHECK((*reader)->ReadSample(0).ok());
  CHECK((*reader)->ReadSample(~std::uint64_t{0}).status().code() == StatusCode::kOutOfRange);
}

TEST_CASE_FIXTURE(ShellTest, "shell: storage errors are reported, not hidden") {
  const FileSpec spec = Written("io", {100, 100});
  CHECK(format_->OpenReader(Path("missing"), TestReaderOptions(&storage_)).status().code() ==
        StatusCode::kNotFound);
  ReaderOptions no_storage;
  CHECK(format_->OpenReader(spec.path, no_storage).status().code() == StatusCode::kInvalidArgument);
  storage_.FailReads(1);
  CHECK(format_->OpenReader(spec.path, TestReaderOptions(&storage_)).status().code() ==
        StatusCode::kIOError);
  Result<std::unique_ptr<FileReader>> reader =
      format_->OpenReader(spec.path, TestReaderOptions(&storage_));
  REQUIRE(reader.ok());
  storage_.FailReads(1);
  Status failed = (*reader)->ReadSample(0).status();
  CHECK(failed.code() == StatusCode::kIOError);
  CHECK(failed.message().find(spec.path) != std::string::npos);
  CHECK(storage_.open_files() == 0);
  CHECK((*reader)->ReadSample(0).ok());  // a fresh load succeeds

  storage_.FailWritesAfter(1000);
  const std::string full = Path("full");
  Status w = WriteSpec(*format_, storage_, MakeSpec("uint8", {400, 400}, 5, full));
  CHECK(w.code() == StatusCode::kResourceExhausted);
  CHECK(w.message().find(full) != std::string::npos);
  storage_.FailWritesAfter(-1);
}

TEST_CASE_FIXTURE(ShellTest,
                  "shell: an empty file, a wrong format, and recovery after a failed load") {
  const std::string path = Written("bad", {120, 100}, 3).path;
  const std::vector<std::byte> good = storage_.Bytes(path);

  storage_.SetBytes(path, {});
  CheckCorruption(OpenAndRead(*format_, storage_, path), path, "file: it is empty at offset 0");
  std::vector<std::byte> zeros(good.size(), std::byte{0});
  storage_.SetBytes(path, zeros);
  CheckCorruption(OpenAndRead(*format_, storage_, path), path,
                  std::string("not a ") + ShellFixture::kFacts.name + " file");
  CHECK(storage_.open_files() == 0);

  std::vector<std::byte> damaged = good;
  const std::string fragment = ShellFixture::Damage(damaged);
  storage_.SetBytes(path, damaged);
  Result<std::unique_ptr<FileReader>> reader =
      format_->OpenReader(path, TestReaderOptions(&storage_));
  REQUIRE(reader.ok());
  CheckCorruption((*reader)->ReadSample(0).status(), path, fragment);
  CHECK(storage_.open_files() == 0);
  storage_.SetBytes(path, good);
  CHECK((*reader)->ReadSample(0).ok());
}

}  // namespace iomimic::image_test
