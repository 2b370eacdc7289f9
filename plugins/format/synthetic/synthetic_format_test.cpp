// Tests of the synthetic format plugin: the tiny index files it generates and
// a reader that performs no I/O.

#include "synthetic_format.h"

#include <doctest/doctest.h>

#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "iomimic/iomimic.h"
#include "iomimic/testing/format_test_support.h"

extern "C" const IomimicPluginDescriptor iomimic_plugin_descriptor;

namespace iomimic::synthetic {
namespace {

// An in-memory storage that counts every call.
class CountingMemStorage;

class MemFile final : public File {
 public:
  MemFile(CountingMemStorage* storage, std::string path)
      : storage_(storage), path_(std::move(path)) {}
  Result<std::size_t> ReadAt(std::uint64_t offset, std::span<std::byte> destination) override;
  Status WriteAt(std::uint64_t offset, std::span<const std::byte> source) override;
  Status Sync() override { return Status::OK(); }
  Result<std::uint64_t> Size() override;
  Status Close() override { return Status::OK(); }
  const std::string& path() const override { return path_; }

 private:
  CountingMemStorage* storage_;
  std::string path_;
};

class CountingMemStorage final : public Storage {
 public:
  std::string name() const override { return "mem"; }
  StorageCapabilities capabilities() const override {
    StorageCapabilities c;
    c.alignment = alignment;
    c.data_path = "memory";
    return c;
  }
  Result<std::unique_ptr<File>> Open(const std::string& path, const OpenOptions& options) override {
    ++calls;
    std::lock_guard<std::mutex> lock(mu);
    if (options.mode == OpenMode::kRead && files.count(path) == 0) {
      return Status::NotFound(path + ": no such file");
    }
    if (options.mode == OpenMode::kWrite) files[path].clear();
    return std::unique_ptr<File>(std::make_unique<MemFile>(this, path));
  }
  Status CreateDirectories(const std::string&) override {
    ++calls;
    return Status::OK();
  }
  Status Remove(const std::string&) override {
    ++calls;
    return Status::OK();
  }
  Status Rename(const std::string&, const std::string&) override {
    ++calls;
    return Status::OK();
  }
  Result<FileInfo> Stat(const std::string&) override {
    ++calls;
    return Status::NotFound("no");
  }
  Result<Buffer> Allocate(std::size_t size) override {
    ++allocations;
    return Storage::Allocate(size);
  }

  std::mutex mu;
  std::map<std::string, std::string> files;
  std::atomic<int> calls{0};
  std::atomic<int> reads{0};
  std::atomic<int> allocations{0};
  std::size_t alignment = 1;
  bool fail_writes = false;
};

Result<std::size_t> MemFile::ReadAt(std::uint64_t offset, std::span<std::byte> destination) {
  ++storage_->reads;
  std::lock_guard<std::mutex> lock(storage_->mu);
  const std::string& data = storage_->files[path_];
  if (offset >= data.size()) return std::size_t{0};
  const std::size_t n = std::min<std::size_t>(destination.size(), data.size() - offset);
  std::memcpy(destination.data(), data.data() + offset, n);
  return n;
}

Status MemFile::WriteAt(std::uint64_t offset, std::span<const std::byte> source) {
  if (storage_->fail_writes) return Status::ResourceExhausted(path_ + ": disk full at offset 0");
  std::lock_guard<std::mutex> lock(storage_->mu);
  std::string& data = storage_->files[path_];
  if (data.size() < offset + source.size()) data.resize(offset + source.size());
  std::memcpy(data.data() + offset, source.data(), source.size());
  return Status::OK();
}

Result<std::uint64_t> MemFile::Size() {
  std::lock_guard<std::mutex> lock(storage_->mu);
  return static_cast<std::uint64_t>(storage_->files[path_].size());
}

FileSpec MakeSpec(std::uint64_t file_index, const std::string& path) {
  FileSpec spec;
  spec.path = path;
  spec.file_index = file_index;
  spec.sample_shape = {224, 224};
  spec.num_samples = 4;
  spec.seed = 1;
  return spec;
}

TEST_CASE("this format's traits and options") {
  CHECK(::iomimic::testing::DescribeFormatPlugin(iomimic_plugin_descriptor) ==
        "name=synthetic capabilities=partial_reads,multi_sample options= | format "
        "name=synthetic extension=synthetic multi_sample_files=1 partial_reads=1 "
        "needs_host_decode=0 predictable_size=1 streamed=0 element_type=");
}

TEST_CASE("validate accepts any data description") {
  SyntheticFormat format;
  FileSpec spec = MakeSpec(0, "/x.synthetic");
  CHECK(format.Validate(spec).ok());
  spec.compression = "gzip";
  spec.sample_shape = {};
  spec.element_type = *ElementType::FromName("float64");
  CHECK(format.Validate(spec).ok());
  spec.num_samples = 0;
  CHECK(format.Validate(spec).code() == StatusCode::kInvalidArgument);
  CHECK(format.ExpectedFileSize(spec).status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("generated files hold the file index as text") {
  SyntheticFormat format;
  CountingMemStorage storage;
  storage.alignment = 4096;
  for (std::uint64_t index :
       {std::uint64_t{0}, std::uint64_t{7}, std::uint64_t{10}, std::uint64_t{99},
        std::uint64_t{12345}, std::uint64_t{18446744073709551615ull}}) {
    CAPTURE(index);
    const FileSpec spec =
        MakeSpec(index, "/data/train/img_" + std::to_string(index) + ".synthetic");
    REQUIRE(::iomimic::testing::WriteSpec(format, storage, spec).ok());
    const std::string text = storage.files.at(spec.path);
    CHECK(text == std::to_string(index));
    CHECK(*format.ExpectedFileSize(spec) == text.size());
  }
  CHECK(storage.allocations > 0);  // buffers come from the storage
}

TEST_CASE("write errors carry the path") {
  SyntheticFormat format;
  CountingMemStorage storage;
  storage.fail_writes = true;
  const Status s = ::iomimic::testing::WriteSpec(format, storage, MakeSpec(3, "/full/a.synthetic"));
  CHECK(s.code() == StatusCode::kResourceExhausted);
  CHECK(s.message().find("/full/a.synthetic") != std::string::npos);
}

TEST_CASE("reading performs no I/O") {
  SyntheticFormat format;
  CountingMemStorage storage;
  const int calls_before = storage.calls;
  for (bool keep : {false, true}) {
    for (bool decode : {false, true}) {
      ReaderOptions options;
      options.storage = &storage;
      options.decode = decode;
      options.keep_in_memory = keep;
      // The file does not even have to exist.
      Result<std::unique_ptr<FileReader>> reader = format.OpenReader("/nowhere.synthetic", options);
      REQUIRE(reader.ok());
      CHECK((*reader)->num_samples() == kUnknownSampleCount);
      for (std::uint64_t i : {std::uint64_t{0}, std::uint64_t{5}, ~std::uint64_t{0}}) {
        Result<SampleView> s = (*reader)->ReadSample(i);
        REQUIRE(s.ok());
        CHECK(s->bytes == 0);
        CHECK(s->data.empty());
      }
    }
  }
  CHECK(storage.calls == calls_before);
  CHECK(storage.reads == 0);
  CHECK(storage.allocations == 0);
  // No storage at all is fine too.
  Result<std::unique_ptr<FileReader>> bare = format.OpenReader("/x.synthetic", ReaderOptions{});
  REQUIRE(bare.ok());
  CHECK((*bare)->ReadSample(1).ok());
}

}  // namespace
}  // namespace iomimic::synthetic
