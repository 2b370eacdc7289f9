// Tests of the hdf5 format plugin: layout planning (h5py's rules), the
// virtual file driver, writing, reading with DLIO's access pattern,
// corruption and storage errors, concurrency, and interoperability with h5py
// (when /usr/bin/python3 has it).
// Cases every format shares (an index past the end, a missing file, a reader
// without a storage) run in the format conformance suite
// (tests/conformance/format_conformance_test.cpp).

#include "hdf5_format.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <hdf5.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "hdf5_layout.h"
#include "hdf5_reader.h"
#include "hdf5_support.h"
#include "hdf5_vfd.h"
#include "hdf5_writer.h"
#include "iomimic/iomimic.h"
#include "iomimic/testing/file_spec.h"
#include "iomimic/testing/foreign_files.h"
#include "iomimic/testing/format_test_support.h"
#include "iomimic/testing/posix_test_storage.h"
#include "iomimic/testing/write_in_parts.h"

extern "C" const IomimicPluginDescriptor iomimic_plugin_descriptor;

namespace iomimic::hdf5 {
namespace {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------
// An in-memory storage that records every request and can fail on demand.

struct Request {
  bool write = false;
  std::string path;
  std::uint64_t offset = 0;
  std::size_t length = 0;

  bool operator==(const Request& o) const {
    return write == o.write && path == o.path && offset == o.offset && length == o.length;
  }
};

std::ostream& operator<<(std::ostream& os, const Request& r) {
  return os << (r.write ? "write " : "read ") << r.length << " @ " << r.offset;
}

struct Blob {
  std::mutex mu;
  std::vector<std::byte> data;
};

class MemStorage;

class MemFile final : public File {
 public:
  MemFile(MemStorage* storage, std::string path, std::shared_ptr<Blob> blob)
      : storage_(storage), path_(std::move(path)), blob_(std::move(blob)) {}

  Result<std::size_t> ReadAt(std::uint64_t offset, std::span<std::byte> destination) override;
  Status WriteAt(std::uint64_t offset, std::span<const std::byte> source) override;
  Status Sync() override { return closed_ ? Closed() : Status::OK(); }
  Result<std::uint64_t> Size() override {
    if (closed_) return Closed();
    std::lock_guard<std::mutex> lock(blob_->mu);
    return static_cast<std::uint64_t>(blob_->data.size());
  }
  Status Close() override {
    if (closed_) return Closed();
    closed_ = true;
    return Status::OK();
  }
  const std::string& path() const override { return path_; }

 private:
  Status Closed() const { return Status::IOError(path_ + ": file is closed"); }

  MemStorage* storage_;
  std::string path_;
  std::shared_ptr<Blob> blob_;
  bool closed_ = false;
};

class MemStorage final : public Storage {
 public:
  std::string name() const override { return "mem"; }
  StorageCapabilities capabilities() const override {
    StorageCapabilities c;
    c.data_path = "memory";
    return c;
  }
  Result<std::unique_ptr<File>> Open(const std::string& path, const OpenOptions& options) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = files_.find(path);
    if (options.mode == OpenMode::kRead) {
      if (it == files_.end()) return Status::NotFound(path + ": no such file");
    } else if (it == files_.end()) {
      it = files_.emplace(path, std::make_shared<Blob>()).first;
    } else if (options.mode == OpenMode::kWrite) {
      std::lock_guard<std::mutex> blob_lock(it->second->mu);
      it->second->data.clear();
    }
    ++opens_;
    return std::unique_ptr<File>(std::make_unique<MemFile>(this, path, it->second));
  }
  Status CreateDirectories(const std::string&) override { return Status::OK(); }
  Status Remove(const std::string& path) override {
    std::lock_guard<std::mutex> lock(mu_);
    return files_.erase(path) ? Status::OK() : Status::NotFound(path);
  }
  Status Rename(const std::string& from, const std::string& to) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = files_.find(from);
    if (it == files_.end()) return Status::NotFound(from);
    files_[to] = it->second;
    files_.erase(from);
    return Status::OK();
  }
  Result<FileInfo> Stat(const std::string& path) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = files_.find(path);
    if (it == files_.end()) return Status::NotFound(path);
    std::lock_guard<std::mutex> blob_lock(it->second->mu);
    return FileInfo{it->second->data.size(), false};
  }

  // Test helpers.
  std::vector<std::byte> Bytes(const std::string& path) {
    std::lock_guard<std::mutex> lock(mu_);
    auto blob = files_.at(path);
    std::lock_guard<std::mutex> blob_lock(blob->mu);
    return blob->data;
  }
  void SetBytes(const std::string& path, std::vector<std::byte> data) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& blob = files_[path];
    if (!blob) blob = std::make_shared<Blob>();
    std::lock_guard<std::mutex> blob_lock(blob->mu);
    blob->data = std::move(data);
  }
  void SetLogging(bool on) {
    std::lock_guard<std::mutex> lock(log_mu_);
    logging_ = on;
    log_.clear();
  }
  std::vector<Request> TakeLog() {
    std::lock_guard<std::mutex> lock(log_mu_);
    return std::exchange(log_, {});
  }
  // Makes requests that touch [begin, end) of `path` fail (empty path: none).
  void FailRange(std::string path, std::uint64_t begin, std::uint64_t end, bool writes) {
    std::lock_guard<std::mutex> lock(log_mu_);
    fail_path_ = std::move(path);
    fail_begin_ = begin;
    fail_end_ = end;
    fail_writes_ = writes;
  }
  // Returns the failure for a request, or OK.
  Status Check(const Request& r) {
    std::lock_guard<std::mutex> lock(log_mu_);
    if (logging_) log_.push_back(r);
    if (!fail_path_.empty() && r.path == fail_path_ && r.write == fail_writes_ &&
        r.offset < fail_end_ && r.offset + r.length > fail_begin_) {
      return Status::IOError("injected " + std::string(r.write ? "write" : "read") +
                             " failure on " + r.path);
    }
    return Status::OK();
  }
  int opens() const { return opens_; }

 private:
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Blob>> files_;
  std::mutex log_mu_;
  bool logging_ = false;
  std::vector<Request> log_;
  std::string fail_path_;
  std::uint64_t fail_begin_ = 0;
  std::uint64_t fail_end_ = 0;
  bool fail_writes_ = false;
  std::atomic<int> opens_{0};
};

Result<std::size_t> MemFile::ReadAt(std::uint64_t offset, std::span<std::byte> destination) {
  if (closed_) return Closed();
  IOMIMIC_RETURN_IF_ERROR(storage_->Check({false, path_, offset, destination.size()}));
  std::lock_guard<std::mutex> lock(blob_->mu);
  if (offset >= blob_->data.size()) return std::size_t{0};
  const std::size_t n = std::min<std::size_t>(
      destination.size(), blob_->data.size() - static_cast<std::size_t>(offset));
  std::memcpy(destination.data(), blob_->data.data() + offset, n);
  return n;
}

Status MemFile::WriteAt(std::uint64_t offset, std::span<const std::byte> source) {
  if (closed_) return Closed();
  IOMIMIC_RETURN_IF_ERROR(storage_->Check({true, path_, offset, source.size()}));
  std::lock_guard<std::mutex> lock(blob_->mu);
  if (blob_->data.size() < offset + source.size()) blob_->data.resize(offset + source.size());
  std::memcpy(blob_->data.data() + offset, source.data(), source.size());
  return Status::OK();
}

// ---------------------------------------------------------------------------
// A minimal POSIX storage for real files (h5py interoperability).

// Real files: the SDK's test storage (iomimic/testing/posix_test_storage.h).
using ::iomimic::testing::PosixFile;
using ::iomimic::testing::PosixStorage;
using ::iomimic::testing::TempDir;

// ---------------------------------------------------------------------------
// Helpers.

FileSpec MakeSpec(const std::string& dtype, std::vector<std::uint64_t> shape, std::uint64_t samples,
                  std::uint64_t seed, const std::string& path = "/data/test.hdf5",
                  const std::string& compression = "none",
                  std::map<std::string, std::string> parameters = {}) {
  FileSpec spec =
      ::iomimic::testing::TestFileSpec(dtype, std::move(shape), samples, seed, path, compression);
  spec.parameters = std::move(parameters);
  if (!spec.parameters.count(kNumDatasetsKey)) spec.parameters[kNumDatasetsKey] = "1";
  return spec;
}

// One records dataset's bytes: the content stream of the seed and content
// options (iomimic::ContentStream).
std::vector<std::byte> ReferenceData(const FileSpec& spec, std::uint64_t row_bytes) {
  std::vector<std::byte> data(row_bytes * spec.num_samples);
  ContentStream(spec.seed, spec.content).Fill(data);
  if (spec.element_type.name == "bool") {
    for (std::byte& b : data) b &= std::byte{1};
  }
  return data;
}

FileSpec WithContent(FileSpec spec, std::uint32_t compress, std::uint32_t dedupe) {
  spec.content.compress_percentage = compress;
  spec.content.dedupe_percentage = dedupe;
  return spec;
}

// Sample i as the reader returns it: row i of each of the K datasets.
std::vector<std::byte> ReferenceSample(const std::vector<std::byte>& data, std::uint64_t row_bytes,
                                       std::uint64_t k, std::uint64_t i) {
  std::vector<std::byte> out;
  for (std::uint64_t d = 0; d < k; ++d) {
    out.insert(out.end(), data.begin() + static_cast<std::ptrdiff_t>(i * row_bytes),
               data.begin() + static_cast<std::ptrdiff_t>((i + 1) * row_bytes));
  }
  return out;
}

// Reads every sample (in order) and compares with the reference.
void CheckRoundTrip(Format& format, Storage& storage, const FileSpec& spec, bool keep) {
  Result<FileLayout> layout = PlanLayout(spec);
  REQUIRE_MESSAGE(layout.ok(), layout.status().ToString());
  const std::vector<std::byte> data = ReferenceData(spec, layout->row_bytes);
  Result<std::unique_ptr<FileReader>> reader =
      format.OpenReader(spec.path, testing::TestReaderOptions(&storage, true, keep));
  REQUIRE_MESSAGE(reader.ok(), reader.status().ToString());
  REQUIRE((*reader)->num_samples() == spec.num_samples);
  for (std::uint64_t i = 0; i < spec.num_samples; ++i) {
    Result<SampleView> sample = (*reader)->ReadSample(i);
    REQUIRE_MESSAGE(sample.ok(), sample.status().ToString());
    CHECK(sample->bytes == layout->row_bytes * layout->num_datasets);
    CHECK(testing::SameBytes(sample->data,
                             ReferenceSample(data, layout->row_bytes, layout->num_datasets, i)));
  }
}

void CheckCorruption(const Status& s, const std::string& path, const std::string& fragment = "") {
  CHECK_MESSAGE(testing::IsCorruptionNaming(s, path, fragment), s.ToString());
}

// The HDF5 file `path` of `storage`, opened through the plugin's driver, for
// inspecting or building files with the HDF5 API directly.
class DirectFile {
 public:
  DirectFile(Storage& storage, const std::string& path, OpenMode mode) {
    QuietErrors();
    OpenOptions o;
    o.mode = mode;
    Result<std::unique_ptr<File>> f = storage.Open(path, o);
    REQUIRE_MESSAGE(f.ok(), f.status().ToString());
    file_ = std::move(f).value();
    channel_ = std::make_shared<StorageChannel>(file_.get(), path);
    Result<Handle> fapl = MakeFileAccess(channel_, FileAccessOptions{.latest_format = true});
    REQUIRE_MESSAGE(fapl.ok(), fapl.status().ToString());
    if (mode == OpenMode::kRead) {
      id_ = Handle(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl->get()));
    } else {
      id_ = Handle(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl->get()));
    }
    REQUIRE_MESSAGE(id_.valid(), TakeErrorStack().Summary());
  }
  ~DirectFile() {
    id_.Reset();
    channel_->Detach();
  }
  hid_t id() const { return id_.get(); }
  bool Close() { return id_.Close(); }

 private:
  std::unique_ptr<File> file_;
  std::shared_ptr<StorageChannel> channel_;
  Handle id_;
};

// The creation properties of one dataset.
struct DatasetInfo {
  std::vector<hsize_t> dims;
  std::vector<hsize_t> max_dims;
  H5D_layout_t layout = H5D_CONTIGUOUS;
  std::vector<hsize_t> chunks;
  std::vector<H5Z_filter_t> filters;
  unsigned deflate_level = 0;
  H5T_class_t type_class = H5T_NO_CLASS;
  std::size_t type_size = 0;
  haddr_t offset = HADDR_UNDEF;
  H5D_fill_time_t fill_time = H5D_FILL_TIME_ERROR;
};

DatasetInfo Inspect(hid_t file, const char* name) {
  DatasetInfo info;
  Handle d(H5Dopen2(file, name, H5P_DEFAULT));
  REQUIRE_MESSAGE(d.valid(), name);
  Handle space(H5Dget_space(d.get()));
  const int rank = H5Sget_simple_extent_ndims(space.get());
  info.dims.resize(static_cast<std::size_t>(rank));
  info.max_dims.resize(static_cast<std::size_t>(rank));
  H5Sget_simple_extent_dims(space.get(), info.dims.data(), info.max_dims.data());
  Handle dcpl(H5Dget_create_plist(d.get()));
  info.layout = H5Pget_layout(dcpl.get());
  if (info.layout == H5D_CHUNKED) {
    info.chunks.resize(static_cast<std::size_t>(rank));
    H5Pget_chunk(dcpl.get(), rank, info.chunks.data());
  }
  const int n = H5Pget_nfilters(dcpl.get());
  for (int i = 0; i < n; ++i) {
    unsigned flags = 0;
    std::size_t nvalues = 4;
    unsigned values[4] = {};
    unsigned config = 0;
    const H5Z_filter_t f = H5Pget_filter2(dcpl.get(), static_cast<unsigned>(i), &flags, &nvalues,
                                          values, 0, nullptr, &config);
    info.filters.push_back(f);
    if (f == H5Z_FILTER_DEFLATE && nvalues > 0) info.deflate_level = values[0];
  }
  H5Pget_fill_time(dcpl.get(), &info.fill_time);
  Handle type(H5Dget_type(d.get()));
  info.type_class = H5Tget_class(type.get());
  info.type_size = H5Tget_size(type.get());
  info.offset = H5Dget_offset(d.get());
  (void)TakeErrorStack();  // H5Dget_offset fails for chunked datasets
  return info;
}

// Objects (files, datasets, ...) HDF5 still has open anywhere in the process.
// A file left half-closed in HDF5's tables would crash HDF5 at exit.
ssize_t OpenHdf5Objects() { return H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL); }

std::span<const std::byte> AsBytes(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

// ---------------------------------------------------------------------------
// Layout planning.

TEST_CASE("dimension lists") {
  CHECK(*ParseDimList("k", "64,64") == std::vector<std::uint64_t>{64, 64});
  CHECK(*ParseDimList("k", " [1, 2 ,3] ") == std::vector<std::uint64_t>{1, 2, 3});
  CHECK(*ParseDimList("k", "(7)") == std::vector<std::uint64_t>{7});
  CHECK(*ParseDimList("k", "5,") == std::vector<std::uint64_t>{5});
  CHECK(ParseDimList("k", "").value().empty());
  for (const char* bad : {"a", "1,,2", ",1", "-3", "1.5", "99999999999999999999999"}) {
    CAPTURE(bad);
    Result<std::vector<std::uint64_t>> r = ParseDimList("hdf5.chunk_dims", bad);
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
    CHECK(r.status().message().find("hdf5.chunk_dims") != std::string::npos);
  }
}

TEST_CASE("guessed chunks equal h5py's guess_chunk") {
  struct Case {
    std::vector<hsize_t> shape;
    std::size_t type_size;
    std::vector<hsize_t> chunks;
  };
  // Values printed by h5py 3.7's h5py._hl.filters.guess_chunk(shape, None, size).
  const Case cases[] = {
      {{64, 256, 256}, 1, {8, 64, 64}},
      {{128, 338, 338}, 1, {16, 43, 43}},
      {{8, 32, 32}, 4, {4, 16, 32}},
      {{1000}, 8, {1000}},
      {{16, 4096}, 2, {4, 1024}},
      {{3, 5, 7}, 8, {3, 5, 7}},
      {{4, 1024, 1024, 3}, 4, {1, 128, 128, 1}},
      {{100, 0, 5}, 1, {25, 256, 3}},
      {{1, 1}, 1, {1, 1}},
      {{2, 3000000}, 8, {1, 5860}},
  };
  for (const Case& c : cases) {
    CAPTURE(c.shape.size());
    CAPTURE(c.shape[0]);
    CHECK(GuessChunk(c.shape, c.type_size) == c.chunks);
  }
  CHECK(GuessChunk({}, 1).empty());
}

TEST_CASE("layout: shapes, datasets per record, chunks, max shape") {
  SUBCASE("plain 2-D samples are contiguous") {
    Result<FileLayout> l = PlanLayout(MakeSpec("uint8", {338, 338}, 128, 1));
    REQUIRE(l.ok());
    CHECK(l->dims == std::vector<hsize_t>{128, 338, 338});
    CHECK(!l->chunked());
    CHECK(l->max_dims.empty());
    CHECK(l->num_datasets == 1);
    CHECK(l->row_bytes == 338 * 338);
  }
  SUBCASE("the first dimension is split across K datasets and a leading 1 dropped") {
    Result<FileLayout> l = PlanLayout(
        MakeSpec("float32", {6, 10, 4}, 8, 1, "/x.hdf5", "none", {{kNumDatasetsKey, "3"}}));
    REQUIRE(l.ok());
    CHECK(l->num_datasets == 3);
    CHECK(l->dims == std::vector<hsize_t>{8, 2, 10, 4});
    CHECK(l->row_bytes == 2 * 10 * 4 * 4);
    l = PlanLayout(
        MakeSpec("uint8", {2, 16, 16}, 4, 1, "/x.hdf5", "none", {{kNumDatasetsKey, "2"}}));
    REQUIRE(l.ok());
    CHECK(l->dims == std::vector<hsize_t>{4, 16, 16});
    l = PlanLayout(MakeSpec("uint8", {1, 64}, 4, 1));
    REQUIRE(l.ok());
    CHECK(l->dims == std::vector<hsize_t>{4, 64});
    l = PlanLayout(MakeSpec("uint8", {1}, 4, 1));
    REQUIRE(l.ok());
    CHECK(l->dims == std::vector<hsize_t>{4});
    CHECK(l->row_bytes == 1);
  }
  SUBCASE("chunk dims with or without the sample axis") {
    Result<FileLayout> l = PlanLayout(
        MakeSpec("uint8", {64, 64}, 16, 1, "/x.hdf5", "none", {{kChunkDimsKey, "4,32,32"}}));
    REQUIRE(l.ok());
    CHECK(l->chunk_dims == std::vector<hsize_t>{4, 32, 32});
    CHECK(!l->chunks_guessed);
    l = PlanLayout(
        MakeSpec("uint8", {64, 64}, 16, 1, "/x.hdf5", "none", {{kChunkDimsKey, "32,32"}}));
    REQUIRE(l.ok());
    CHECK(l->chunk_dims == std::vector<hsize_t>{1, 32, 32});
  }
  SUBCASE("compression and max shape need chunks; h5py's guess is used") {
    Result<FileLayout> l = PlanLayout(MakeSpec("uint8", {256, 256}, 64, 1, "/x.hdf5", "gzip"));
    REQUIRE(l.ok());
    CHECK(l->compression == Compression::kGzip);
    CHECK(l->gzip_level == 4);
    CHECK(l->chunk_dims == std::vector<hsize_t>{8, 64, 64});
    CHECK(l->chunks_guessed);
    l = PlanLayout(
        MakeSpec("uint8", {256, 256}, 64, 1, "/x.hdf5", "none", {{kMaxShapeKey, "0,512"}}));
    REQUIRE(l.ok());
    CHECK(l->max_dims == std::vector<hsize_t>{64, H5S_UNLIMITED, 512});
    CHECK(l->chunk_dims == std::vector<hsize_t>{8, 64, 64});
  }
  SUBCASE("refusals") {
    auto code = [](const FileSpec& s) { return PlanLayout(s).status().code(); };
    auto message = [](const FileSpec& s) { return PlanLayout(s).status().message(); };
    const StatusCode kInvalid = StatusCode::kInvalidArgument;
    CHECK(code(MakeSpec("uint8", {64, 64}, 0, 1)) == kInvalid);
    CHECK(code(MakeSpec("uint8", {64, 0}, 2, 1)) == kInvalid);
    FileSpec odd = MakeSpec("uint8", {5, 4}, 2, 1, "/x.hdf5", "none", {{kNumDatasetsKey, "2"}});
    CHECK(code(odd) == kInvalid);
    CHECK(message(odd).find("does not divide") != std::string::npos);
    CHECK(code(MakeSpec("uint8", {4, 4}, 2, 1, "/x.hdf5", "none", {{kNumDatasetsKey, "0"}})) ==
          kInvalid);
    CHECK(code(MakeSpec("uint8", {4, 4}, 2, 1, "/x.hdf5", "none", {{kNumDatasetsKey, "x"}})) ==
          kInvalid);
    CHECK(code(MakeSpec("uint8", {}, 2, 1, "/x.hdf5", "none", {{kNumDatasetsKey, "2"}})) ==
          kInvalid);
    CHECK(code(MakeSpec("uint8", {8, 8}, 4, 1, "/x.hdf5", "none", {{kChunkDimsKey, "1,2,3,4"}})) ==
          kInvalid);
    FileSpec big = MakeSpec("uint8", {8, 8}, 4, 1, "/x.hdf5", "none", {{kChunkDimsKey, "16,8"}});
    CHECK(code(big) == kInvalid);
    CHECK(message(big).find("must not be greater") != std::string::npos);
    CHECK(code(MakeSpec("uint8", {8, 8}, 4, 1, "/x.hdf5", "none", {{kChunkDimsKey, "0,8"}})) ==
          kInvalid);
    // Chunks may exceed the shape where maxshape allows it.
    CHECK(PlanLayout(MakeSpec("uint8", {8, 8}, 4, 1, "/x.hdf5", "none",
                              {{kChunkDimsKey, "16,8"}, {kMaxShapeKey, "0,8"}}))
              .ok());
    CHECK(code(MakeSpec("uint8", {8, 8}, 4, 1, "/x.hdf5", "none", {{kMaxShapeKey, "8"}})) ==
          kInvalid);
    CHECK(code(MakeSpec("uint8", {8, 8}, 4, 1, "/x.hdf5", "none", {{kMaxShapeKey, "4,8"}})) ==
          kInvalid);
    CHECK(code(MakeSpec("uint8", {65536, 65536}, 2, 1, "/x.hdf5", "none",
                        {{kChunkDimsKey, "65536,65536"}})) == kInvalid);  // 4 GiB chunks
    FileSpec level = MakeSpec("uint8", {8, 8}, 4, 1, "/x.hdf5", "gzip");
    level.compression_level = 10;
    CHECK(code(level) == kInvalid);
    FileSpec bz2 = MakeSpec("uint8", {8, 8}, 4, 1, "/x.hdf5", "bz2");
    CHECK(code(bz2) == StatusCode::kNotSupported);
    CHECK(message(bz2).find("bz2") != std::string::npos);
    FileSpec lzf = MakeSpec("uint8", {8, 8}, 4, 1, "/x.hdf5", "lzf");
    if (LzfAvailable()) {
      CHECK(PlanLayout(lzf).ok());
    } else {
      CHECK(code(lzf) == StatusCode::kNotSupported);
      CHECK(message(lzf).find("LZF") != std::string::npos);
    }
    FileSpec mismatched = MakeSpec("uint8", {8, 8}, 4, 1);
    mismatched.element_type.size = 4;
    CHECK(code(mismatched) == kInvalid);
    for (const char* m : {"hdf5: ", "does not divide"})
      CHECK(message(odd).find(m) != std::string::npos);
  }
}

TEST_CASE("block walker covers every element once in C order") {
  struct Case {
    std::vector<hsize_t> dims;
    std::uint64_t element;
    std::uint64_t budget;
    hsize_t rows;
  };
  const Case cases[] = {
      {{10, 4, 4}, 1, 1000, 0}, {{10, 4, 4}, 1, 16, 0},   {{10, 4, 4}, 1, 5, 0},
      {{10, 4, 4}, 4, 1, 0},    {{3, 7, 5, 2}, 2, 30, 0}, {{1}, 8, 1, 0},
      {{10, 4, 4}, 1, 16, 3},   {{10, 4, 4}, 1, 1, 4},    {{10, 4, 4}, 1, 1 << 20, 3},
  };
  for (const Case& c : cases) {
    CAPTURE(c.budget);
    CAPTURE(c.rows);
    BlockWalker w(c.dims, c.element, c.budget, c.rows);
    std::vector<hsize_t> start, count;
    std::uint64_t next_flat = 0;
    std::uint64_t total = 1;
    for (hsize_t d : c.dims) total *= d;
    int blocks = 0;
    while (w.Next(&start, &count)) {
      ++blocks;
      // Flat index of the start, and the block must be consecutive elements.
      std::uint64_t flat = 0;
      std::uint64_t elements = 1;
      for (std::size_t j = 0; j < c.dims.size(); ++j) flat = flat * c.dims[j] + start[j];
      for (hsize_t n : count) elements *= n;
      CHECK(flat == next_flat);
      CHECK(elements * c.element <= std::max<std::uint64_t>(w.max_block_bytes(), c.element));
      for (std::size_t j = w.split_axis() + 1; j < c.dims.size(); ++j) CHECK(count[j] == c.dims[j]);
      for (std::size_t j = 0; j < w.split_axis(); ++j) CHECK(count[j] == 1);
      if (c.rows > 0 && start[0] + count[0] < c.dims[0]) CHECK(count[0] % c.rows == 0);
      next_flat += elements;
    }
    CHECK(next_flat == total);
    CHECK(blocks >= 1);
  }
  // An empty dataset has no blocks.
  BlockWalker empty(std::vector<hsize_t>{0, 4}, 1, 16);
  std::vector<hsize_t> s, n;
  CHECK(!empty.Next(&s, &n));
}

// ---------------------------------------------------------------------------
// Plugin surface.

TEST_CASE("this format's traits and options") {
  CHECK(testing::DescribeFormatPlugin(iomimic_plugin_descriptor) ==
        "name=hdf5 capabilities=partial_reads,host_decode,multi_sample options= | "
        "format name=hdf5 extension=hdf5 multi_sample_files=1 partial_reads=1 "
        "needs_host_decode=1 predictable_size=0 streamed=0 element_type=");
  PluginContext ctx;
  Status error;
  auto format = testing::CreateThroughDescriptor<Format>(iomimic_plugin_descriptor, ctx, &error);
  REQUIRE_MESSAGE(format != nullptr, error.ToString());
  CHECK(format->ExpectedFileSize(MakeSpec("uint8", {8, 8}, 2, 1)).status().code() ==
        StatusCode::kNotSupported);
  CHECK(format->Validate(MakeSpec("uint8", {8, 8}, 2, 1)).ok());
  CHECK(format->Validate(MakeSpec("uint8", {8, 8}, 2, 1, "/x", "xz")).code() ==
        StatusCode::kNotSupported);
  format.reset();
  CHECK(LibraryIsThreadSafe());  // Debian's serial libhdf5
}

// ---------------------------------------------------------------------------
// Writing and reading.

TEST_CASE("round trip: dtypes, shapes, samples per file, datasets per record") {
  MemStorage storage;
  Hdf5Format format;
  std::vector<FileSpec> specs = {
      MakeSpec("uint8", {32, 32}, 8, 1, "/d/a.hdf5"),
      MakeSpec("float32", {4, 5, 6}, 3, 2, "/d/b.hdf5"),
      MakeSpec("int16", {100}, 1, 3, "/d/c.hdf5"),
      MakeSpec("bool", {16, 16}, 5, 4, "/d/d.hdf5"),
      MakeSpec("float16", {8, 8}, 4, 5, "/d/e.hdf5"),
      MakeSpec("uint64", {3}, 7, 6, "/d/f.hdf5"),
      MakeSpec("int8", {1, 10}, 2, 7, "/d/g.hdf5"),
      MakeSpec("float64", {7, 3}, 6, 8, "/d/h.hdf5"),
      MakeSpec("uint32", {4, 6}, 5, 9, "/d/k2.hdf5", "none", {{kNumDatasetsKey, "2"}}),
      MakeSpec("uint8", {64, 64}, 9, 10, "/d/gzip.hdf5", "gzip", {{kChunkDimsKey, "2,16,64"}}),
      MakeSpec("int32", {20, 20}, 6, 11, "/d/gzip_guess.hdf5", "gzip"),
      MakeSpec("uint8", {10, 12}, 7, 12, "/d/maxshape.hdf5", "none", {{kMaxShapeKey, "0,24"}}),
      MakeSpec("uint8", {6, 24, 24}, 5, 13, "/d/k3_chunks.hdf5", "gzip",
               {{kNumDatasetsKey, "3"}, {kChunkDimsKey, "2,8,8"}}),
      WithContent(MakeSpec("uint8", {64, 64}, 9, 14, "/d/content.hdf5"), 50, 30),
      WithContent(MakeSpec("bool", {64, 64}, 3, 15, "/d/content_gzip.hdf5", "gzip"), 25, 60),
  };
  for (const FileSpec& spec : specs) {
    CAPTURE(spec.path);
    REQUIRE(format.Validate(spec).ok());
    Status s = testing::WriteSpec(format, storage, spec);
    REQUIRE_MESSAGE(s.ok(), s.ToString());
    CheckRoundTrip(format, storage, spec, false);
    CheckRoundTrip(format, storage, spec, true);
  }
  CHECK(OpenHdf5Objects() == 0);
}

TEST_CASE("the file has the datasets, types and filters h5py would create") {
  MemStorage storage;
  Hdf5Format format;
  FileSpec spec = MakeSpec("uint8", {64, 64}, 9, 10, "/d/gzip.hdf5", "gzip",
                           {{kChunkDimsKey, "2,16,64"}, {kNumDatasetsKey, "2"}});
  spec.sample_shape = {128, 64};
  spec.compression_level = 7;
  REQUIRE(testing::WriteSpec(format, storage, spec).ok());
  {
    DirectFile f(storage, spec.path, OpenMode::kRead);
    for (const char* name : {"records_0", "records_1"}) {
      DatasetInfo info = Inspect(f.id(), name);
      CHECK(info.dims == std::vector<hsize_t>{9, 64, 64});
      CHECK(info.max_dims == info.dims);
      CHECK(info.layout == H5D_CHUNKED);
      CHECK(info.chunks == std::vector<hsize_t>{2, 16, 64});
      CHECK(info.filters == std::vector<H5Z_filter_t>{H5Z_FILTER_DEFLATE});
      CHECK(info.deflate_level == 7);
      CHECK(info.fill_time == H5D_FILL_TIME_ALLOC);
      CHECK(info.type_class == H5T_INTEGER);
      CHECK(info.type_size == 1);
    }
    CHECK(H5Lexists(f.id(), "records_2", H5P_DEFAULT) == 0);
    DatasetInfo labels = Inspect(f.id(), "labels");
    CHECK(labels.dims == std::vector<hsize_t>{9});
    CHECK(labels.layout == H5D_CONTIGUOUS);
    CHECK(labels.type_class == H5T_INTEGER);
    CHECK(labels.type_size == 8);
    std::vector<std::int64_t> values(9, -1);
    Handle d(H5Dopen2(f.id(), "labels", H5P_DEFAULT));
    REQUIRE(H5Dread(d.get(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) >= 0);
    CHECK(values == std::vector<std::int64_t>(9, 0));
  }

  FileSpec plain =
      MakeSpec("float16", {5, 5}, 4, 3, "/d/plain.hdf5", "none", {{kMaxShapeKey, "0,9"}});
  REQUIRE(testing::WriteSpec(format, storage, plain).ok());
  FileSpec flags = MakeSpec("bool", {5}, 4, 3, "/d/bool.hdf5");
  REQUIRE(testing::WriteSpec(format, storage, flags).ok());
  {
    DirectFile f(storage, plain.path, OpenMode::kRead);
    DatasetInfo info = Inspect(f.id(), "records_0");
    CHECK(info.max_dims == std::vector<hsize_t>{4, H5S_UNLIMITED, 9});
    CHECK(info.layout == H5D_CHUNKED);
    CHECK(info.filters.empty());
    CHECK(info.type_class == H5T_FLOAT);
    CHECK(info.type_size == 2);
    DirectFile g(storage, flags.path, OpenMode::kRead);
    DatasetInfo b = Inspect(g.id(), "records_0");
    CHECK(b.type_class == H5T_ENUM);
    CHECK(b.type_size == 1);
    CHECK(b.layout == H5D_CONTIGUOUS);
  }
}

TEST_CASE("layout and read pattern match DLIO's h5py file (resnet-like, 128 x 338 x 338)") {
  MemStorage storage;
  Hdf5Format format;
  FileSpec spec = MakeSpec("uint8", {338, 338}, 128, 99, "/data/train/img_00_of_16.hdf5");
  storage.SetLogging(true);
  REQUIRE(testing::WriteSpec(format, storage, spec).ok());
  const std::vector<Request> writes = storage.TakeLog();
  // Bounded memory: no write is larger than a block.
  for (const Request& r : writes) CHECK(r.length <= (std::size_t{4} << 20));
  // h5py's file for the same arrays has exactly this size and layout.
  const std::vector<std::byte> bytes = storage.Bytes(spec.path);
  CHECK(bytes.size() == 14626304);
  {
    DirectFile f(storage, spec.path, OpenMode::kRead);
    CHECK(Inspect(f.id(), "records_0").offset == 2048);
    CHECK(Inspect(f.id(), "labels").offset == 14625280);
  }
  // Superblock version 3 (libver latest).
  CHECK(std::memcmp(bytes.data(), "\x89HDF\r\n\x1a\n", 8) == 0);
  CHECK(bytes[8] == std::byte{3});

  // Per sample (on_demand): 8 B at 0, 16 B at 0, 32 B at 16, 512 B at 48,
  // 512 B at 195, then exactly one sample at 2048 + i * 114244 (strace of
  // DLIO with h5py 3.7 / HDF5 1.10.8).
  for (std::uint64_t i : {0u, 1u, 77u, 127u}) {
    CAPTURE(i);
    storage.SetLogging(true);
    Result<std::unique_ptr<FileReader>> reader =
        format.OpenReader(spec.path, testing::TestReaderOptions(&storage));
    REQUIRE(reader.ok());
    REQUIRE((*reader)->ReadSample(i).ok());
    const std::vector<Request> log = storage.TakeLog();
    const std::string& p = spec.path;
    const std::vector<Request> expected = {
        {false, p, 0, 8},    {false, p, 0, 16},    {false, p, 16, 32},
        {false, p, 48, 512}, {false, p, 195, 512}, {false, p, 2048 + i * 114244, 114244}};
    CHECK(log == expected);
  }
  storage.SetLogging(false);
}

TEST_CASE("on_demand reopens per sample, keep_in_memory opens once and still reads rows") {
  MemStorage storage;
  Hdf5Format format;
  // Rows larger than HDF5's 64 KiB sieve buffer are read exactly.
  FileSpec spec = MakeSpec("uint16", {200, 200}, 6, 5, "/d/m.hdf5");
  REQUIRE(testing::WriteSpec(format, storage, spec).ok());
  const std::uint64_t row = 200 * 200 * 2;
  haddr_t data = HADDR_UNDEF;
  {
    DirectFile f(storage, spec.path, OpenMode::kRead);
    data = Inspect(f.id(), "records_0").offset;
  }
  CHECK(data == 2048);
  {
    Result<std::unique_ptr<FileReader>> f =
        Hdf5Reader::Open(spec.path, testing::TestReaderOptions(&storage));
    REQUIRE(f.ok());
    auto& reader = static_cast<Hdf5Reader&>(**f);
    CHECK(reader.opens() == 1);
    CHECK(reader.is_open());
    CHECK(reader.num_datasets() == 1);
    CHECK(reader.sample_bytes() == row);
    CHECK(reader.dims(0) == std::vector<hsize_t>{6, 200, 200});
    for (std::uint64_t i = 0; i < 6; ++i) REQUIRE(reader.ReadSample(i).ok());
    CHECK(reader.opens() == 6);
    CHECK(!reader.is_open());
  }
  {
    Result<std::unique_ptr<FileReader>> f =
        Hdf5Reader::Open(spec.path, testing::TestReaderOptions(&storage, true, true));
    REQUIRE(f.ok());
    auto& reader = static_cast<Hdf5Reader&>(**f);
    storage.SetLogging(true);
    std::vector<Request> expected;
    for (std::uint64_t i = 0; i < 6; ++i) {
      REQUIRE(reader.ReadSample(i).ok());
      expected.push_back({false, spec.path, data + i * row, row});
    }
    for (std::uint64_t i = 6; i-- > 0;) {
      REQUIRE(reader.ReadSample(i).ok());
      expected.push_back({false, spec.path, data + i * row, row});
    }
    CHECK(reader.opens() == 1);
    CHECK(reader.is_open());
    // No metadata requests after the open; every row is one partial read.
    CHECK(storage.TakeLog() == expected);
    storage.SetLogging(false);
  }
  // Small rows go through HDF5's sieve buffer: 64 KiB (or the rest of the
  // dataset) from the row's start, as h5py reads them; kept-open files do
  // not serve later rows from it, because h5py reopens the dataset.
  FileSpec small = MakeSpec("uint8", {64, 64}, 24, 6, "/d/s.hdf5");
  REQUIRE(testing::WriteSpec(format, storage, small).ok());
  for (bool keep : {false, true}) {
    Result<std::unique_ptr<FileReader>> f =
        format.OpenReader(small.path, testing::TestReaderOptions(&storage, true, keep));
    REQUIRE(f.ok());
    for (std::uint64_t i : {0u, 1u, 20u}) {
      storage.SetLogging(true);
      REQUIRE((*f)->ReadSample(i).ok());
      const std::vector<Request> log = storage.TakeLog();
      storage.SetLogging(false);
      REQUIRE(!log.empty());
      CHECK(log.back() == Request{false, small.path, 2048 + i * 4096,
                                  std::min<std::size_t>(65536, (24 - i) * 4096)});
    }
  }
}

TEST_CASE("decode off performs the same reads and returns sizes only") {
  MemStorage storage;
  Hdf5Format format;
  FileSpec spec = MakeSpec("float32", {16, 8}, 4, 21, "/d/n.hdf5", "gzip");
  REQUIRE(testing::WriteSpec(format, storage, spec).ok());
  std::vector<std::vector<Request>> logs;
  for (bool decode : {true, false}) {
    Result<std::unique_ptr<FileReader>> reader =
        format.OpenReader(spec.path, testing::TestReaderOptions(&storage, decode));
    REQUIRE(reader.ok());
    storage.SetLogging(true);
    Result<SampleView> s = (*reader)->ReadSample(2);
    logs.push_back(storage.TakeLog());
    storage.SetLogging(false);
    REQUIRE(s.ok());
    CHECK(s->bytes == 16 * 8 * 4);
    CHECK(s->data.size() == (decode ? 16 * 8 * 4 : 0));
  }
  CHECK(logs[0] == logs[1]);
  CHECK(!logs[0].empty());
}

TEST_CASE("large samples are written in pieces") {
  MemStorage storage;
  WriterOptions small;
  small.block_size = 1000;
  Hdf5Format format(small);
  FileSpec spec = MakeSpec("int32", {50, 40}, 3, 8, "/d/big.hdf5");
  storage.SetLogging(true);
  REQUIRE(testing::WriteSpec(format, storage, spec).ok());
  std::size_t data_writes = 0;
  for (const Request& r : storage.TakeLog()) {
    CHECK(r.write);  // no read-modify-write through HDF5's sieve buffer
    if (r.offset >= 2048 && r.offset < 2048 + 3 * 50 * 40 * 4) {
      CHECK(r.length <= 1000);
      ++data_writes;
    }
  }
  storage.SetLogging(false);
  CHECK(data_writes == 27);  // blocks of 6 x 40 elements: 9 per sample
  CheckRoundTrip(format, storage, spec, false);
  // Chunked: blocks of whole chunk rows even over budget.
  FileSpec chunked =
      MakeSpec("int32", {50, 40}, 9, 8, "/d/bigc.hdf5", "gzip", {{kChunkDimsKey, "2,25,40"}});
  REQUIRE(testing::WriteSpec(format, storage, chunked).ok());
  CheckRoundTrip(format, storage, chunked, true);
}

TEST_CASE("out of range index") {
  MemStorage storage;
  Hdf5Format format;
  FileSpec spec = MakeSpec("uint8", {8, 8}, 3, 1, "/d/r.hdf5");
  REQUIRE(testing::WriteSpec(format, storage, spec).ok());
  for (bool keep : {false, true}) {
    Result<std::unique_ptr<FileReader>> reader =
        format.OpenReader(spec.path, testing::TestReaderOptions(&storage, true, keep));
    REQUIRE(reader.ok());
    Result<SampleView> s = (*reader)->ReadSample(3);
    CHECK(s.status().code() == StatusCode::kOutOfRange);
    CHECK(s.status().message().find(spec.path) != std::string::npos);
    CHECK((*reader)->ReadSample(2).ok());
  }
  CHECK(OpenHdf5Objects() == 0);
}

// ---------------------------------------------------------------------------
// Corruption and storage failures.

TEST_CASE("corruption is reported with path and offset") {
  MemStorage storage;
  Hdf5Format format;
  FileSpec spec = MakeSpec("uint8", {64, 64}, 8, 3, "/d/good.hdf5");
  REQUIRE(testing::WriteSpec(format, storage, spec).ok());
  const std::vector<std::byte> good = storage.Bytes(spec.path);
  REQUIRE(good.size() > 4096);

  SUBCASE("truncated files") {
    for (std::size_t size :
         {std::size_t{0}, std::size_t{4}, std::size_t{47}, std::size_t{300}, std::size_t{1000},
          std::size_t{2048 + 100}, good.size() / 2, good.size() - 1}) {
      CAPTURE(size);
      const std::string path = "/d/cut_" + std::to_string(size) + ".hdf5";
      storage.SetBytes(path, std::vector<std::byte>(good.begin(), good.begin() + size));
      Status s = testing::OpenAndRead(format, storage, path);
      CheckCorruption(s, path);
      if (size >= 48) {
        CHECK_MESSAGE(s.message().find("truncated") != std::string::npos, s.ToString());
        CHECK_MESSAGE(s.message().find("at offset " + std::to_string(size)) != std::string::npos,
                      s.ToString());
      }
    }
  }
  SUBCASE("a flipped byte in the superblock signature") {
    for (std::size_t at : {0u, 1u, 7u}) {
      std::vector<std::byte> bad = good;
      bad[at] ^= std::byte{0x20};
      storage.SetBytes("/d/sig.hdf5", bad);
      Status s = testing::OpenAndRead(format, storage, "/d/sig.hdf5");
      CheckCorruption(s, "/d/sig.hdf5", "signature");
      CHECK_MESSAGE(s.message().find("at offset 0") != std::string::npos, s.ToString());
    }
  }
  SUBCASE("flipped bytes in checksummed metadata") {
    // 20: superblock, 100: root group header, 250: records_0 object header.
    for (std::size_t at : {20u, 100u, 250u}) {
      CAPTURE(at);
      std::vector<std::byte> bad = good;
      bad[at] ^= std::byte{0xFF};
      storage.SetBytes("/d/meta.hdf5", bad);
      CheckCorruption(testing::OpenAndRead(format, storage, "/d/meta.hdf5"), "/d/meta.hdf5");
    }
  }
  SUBCASE("a missing records dataset") {
    {
      DirectFile f(storage, "/d/nodata.hdf5", OpenMode::kWrite);
      const hsize_t dims[1] = {4};
      Handle space(H5Screate_simple(1, dims, nullptr));
      Handle d(H5Dcreate2(f.id(), "labels", H5T_STD_I64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT,
                          H5P_DEFAULT));
      REQUIRE(d.valid());
      Handle e(H5Dcreate2(f.id(), "records_1", H5T_STD_U8LE, space.get(), H5P_DEFAULT, H5P_DEFAULT,
                          H5P_DEFAULT));
      REQUIRE(e.valid());
      d.Reset();
      e.Reset();
      REQUIRE(f.Close());
    }
    Status s = testing::OpenAndRead(format, storage, "/d/nodata.hdf5");
    CheckCorruption(s, "/d/nodata.hdf5", "records_0");
    CHECK_MESSAGE(s.message().find("at offset 0") == std::string::npos, s.ToString());
  }
  SUBCASE("records datasets that disagree, and a scalar records dataset") {
    {
      DirectFile f(storage, "/d/mixed.hdf5", OpenMode::kWrite);
      const hsize_t a[2] = {4, 3};
      const hsize_t b[2] = {5, 3};
      Handle sa(H5Screate_simple(2, a, nullptr));
      Handle sb(H5Screate_simple(2, b, nullptr));
      Handle d0(H5Dcreate2(f.id(), "records_0", H5T_STD_U8LE, sa.get(), H5P_DEFAULT, H5P_DEFAULT,
                           H5P_DEFAULT));
      Handle d1(H5Dcreate2(f.id(), "records_1", H5T_STD_U8LE, sb.get(), H5P_DEFAULT, H5P_DEFAULT,
                           H5P_DEFAULT));
      REQUIRE((d0.valid() && d1.valid()));
    }
    CheckCorruption(testing::OpenAndRead(format, storage, "/d/mixed.hdf5"), "/d/mixed.hdf5",
                    "records_1");
    {
      DirectFile f(storage, "/d/scalar.hdf5", OpenMode::kWrite);
      Handle s(H5Screate(H5S_SCALAR));
      Handle d(H5Dcreate2(f.id(), "records_0", H5T_STD_U8LE, s.get(), H5P_DEFAULT, H5P_DEFAULT,
                          H5P_DEFAULT));
      REQUIRE(d.valid());
    }
    CheckCorruption(testing::OpenAndRead(format, storage, "/d/scalar.hdf5"), "/d/scalar.hdf5",
                    "records_0");
  }
  SUBCASE("damaged compressed chunk") {
    FileSpec z =
        MakeSpec("uint8", {64, 64}, 8, 3, "/d/z.hdf5", "gzip", {{kChunkDimsKey, "1,64,64"}});
    REQUIRE(testing::WriteSpec(format, storage, z).ok());
    haddr_t chunk_addr = HADDR_UNDEF;
    hsize_t chunk_size = 0;
    {
      DirectFile f(storage, z.path, OpenMode::kRead);
      Handle d(H5Dopen2(f.id(), "records_0", H5P_DEFAULT));
      const hsize_t offset[3] = {3, 0, 0};
      unsigned mask = 0;
      REQUIRE(H5Dget_chunk_info_by_coord(d.get(), offset, &mask, &chunk_addr, &chunk_size) >= 0);
    }
    std::vector<std::byte> bad = storage.Bytes(z.path);
    for (hsize_t i = 10; i < chunk_size; i += 7) bad[chunk_addr + i] ^= std::byte{0x5A};
    storage.SetBytes(z.path, bad);
    Result<std::unique_ptr<FileReader>> reader =
        format.OpenReader(z.path, testing::TestReaderOptions(&storage));
    REQUIRE(reader.ok());
    Result<SampleView> s = (*reader)->ReadSample(3);
    CheckCorruption(s.status(), z.path, "records_0");
    CHECK_MESSAGE(
        s.status().message().find("at offset " + std::to_string(chunk_addr)) != std::string::npos,
        s.status().ToString());
    // Other chunks are fine; the reader recovers.
    CHECK((*reader)->ReadSample(2).ok());
  }
  CHECK(OpenHdf5Objects() == 0);
}

TEST_CASE("storage failures keep their code and name the request") {
  MemStorage storage;
  Hdf5Format format;
  FileSpec spec = MakeSpec("uint8", {64, 64}, 8, 3, "/d/io.hdf5");
  REQUIRE(testing::WriteSpec(format, storage, spec).ok());

  // Metadata read at open.
  storage.FailRange(spec.path, 48, 49, false);
  Result<std::unique_ptr<FileReader>> r =
      format.OpenReader(spec.path, testing::TestReaderOptions(&storage));
  CHECK(r.status().code() == StatusCode::kIOError);
  CHECK_MESSAGE(
      r.status().message().rfind(spec.path + ": read of 512 bytes at offset 48 failed: ", 0) == 0,
      r.status().ToString());
  CHECK(r.status().message().find("injected read failure") != std::string::npos);

  // Data read of sample 5 (rows of 4096 bytes from offset 2048).
  storage.FailRange("", 0, 0, false);
  r = format.OpenReader(spec.path, testing::TestReaderOptions(&storage, true, true));
  REQUIRE(r.ok());
  storage.FailRange(spec.path, 2048 + 5 * 4096, 2048 + 5 * 4096 + 1, false);
  Result<SampleView> s = (*r)->ReadSample(5);
  CHECK(s.status().code() == StatusCode::kIOError);
  // Rows of 4 KiB are read through HDF5's sieve buffer: the rest of the data.
  CHECK_MESSAGE(
      s.status().message().find("read of 12288 bytes at offset " + std::to_string(2048 + 5 * 4096) +
                                " failed") != std::string::npos,
      s.status().ToString());
  CHECK(!(*r)->ReadSample(4).ok());  // its sieve read covers the failing byte too
  storage.FailRange("", 0, 0, false);
  CHECK((*r)->ReadSample(5).ok());  // reopens after the failures
  CHECK((*r)->ReadSample(4).ok());
  r = Status::Aborted("done");  // closes the reader

  // Writes.
  for (std::uint64_t at : {std::uint64_t{0}, std::uint64_t{2048 + 4096}}) {
    CAPTURE(at);
    storage.FailRange("/d/w.hdf5", at, at + 1, true);
    Status w = testing::WriteSpec(format, storage, MakeSpec("uint8", {64, 64}, 8, 3, "/d/w.hdf5"));
    CHECK(w.code() == StatusCode::kIOError);
    CHECK_MESSAGE(w.message().rfind("/d/w.hdf5: write of ", 0) == 0, w.ToString());
    CHECK(w.message().find("injected write failure") != std::string::npos);
  }
  storage.FailRange("", 0, 0, false);
  CHECK(OpenHdf5Objects() == 0);
}

TEST_CASE("the driver refuses to create over a non-empty file") {
  MemStorage storage;
  Hdf5Format format;
  storage.SetBytes("/d/old.hdf5", std::vector<std::byte>(100, std::byte{1}));
  OpenOptions o;
  o.mode = OpenMode::kReadWrite;  // no truncation
  Result<std::unique_ptr<File>> file = storage.Open("/d/old.hdf5", o);
  REQUIRE(file.ok());
  Status s = format.WriteFile(storage, **file, MakeSpec("uint8", {8, 8}, 2, 1, "/d/old.hdf5"));
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK(s.message().find("must be empty") != std::string::npos);
  CHECK(storage.Bytes("/d/old.hdf5") == std::vector<std::byte>(100, std::byte{1}));
  CHECK(OpenHdf5Objects() == 0);
}

TEST_CASE("a storage channel fails cleanly once detached") {
  MemStorage storage;
  OpenOptions o;
  o.mode = OpenMode::kWrite;
  Result<std::unique_ptr<File>> file = storage.Open("/d/c.hdf5", o);
  REQUIRE(file.ok());
  StorageChannel channel(file->get(), "/d/c.hdf5");
  std::byte b[4] = {};
  REQUIRE(channel.Write(0, b).ok());
  CHECK(channel.Read(0, b).ok());
  CHECK(channel.Read(2, b).ok());  // past the end: zeros
  CHECK(channel.counters().reads == 2);
  CHECK(channel.counters().writes == 1);
  channel.Detach();
  CHECK(channel.Read(0, b).code() == StatusCode::kAborted);
  CHECK(channel.TakeStorageError().code() == StatusCode::kAborted);
  CHECK(channel.TakeStorageError().ok());
}

// ---------------------------------------------------------------------------
// Concurrency.

// ---------------------------------------------------------------------------
// Interoperability with h5py.

TEST_CASE("h5py reads what we write and we read what h5py writes") {
  if (!testing::HavePythonModules("h5py, numpy")) {
    MESSAGE("skipped: /usr/bin/python3 with h5py is not available");
    return;
  }
  TempDir dir;
  PosixStorage storage;
  Hdf5Format format;
  struct Written {
    FileSpec spec;
    std::string dtype;
    std::string chunks;  // Python literal
    std::string compression;
    int level;
    std::uint64_t k;
  };
  std::vector<Written> written;
  auto write = [&](FileSpec spec, std::string dtype, std::string chunks, std::string compression,
                   int level, std::uint64_t k) {
    Status s = testing::WriteSpec(format, storage, spec);
    REQUIRE_MESSAGE(s.ok(), s.ToString());
    Result<FileLayout> layout = PlanLayout(spec);
    REQUIRE(layout.ok());
    testing::WriteFileBytes(spec.path + ".bin", ReferenceData(spec, layout->row_bytes));
    written.push_back({spec, dtype, chunks, compression, level, k});
  };
  const std::string d = dir.path().string();
  write(MakeSpec("uint8", {32, 32}, 4, 1, d + "/a.hdf5"), "uint8", "None", "None", 0, 1);
  write(MakeSpec("float32", {6, 5}, 3, 2, d + "/b.hdf5", "gzip", {{kChunkDimsKey, "1,3,5"}}),
        "float32", "(1, 3, 5)", "'gzip'", 4, 1);
  FileSpec k2 = MakeSpec("int16", {4, 8}, 5, 3, d + "/c.hdf5", "gzip", {{kNumDatasetsKey, "2"}});
  k2.compression_level = 9;
  write(k2, "int16", "guess", "'gzip'", 9, 2);
  write(MakeSpec("bool", {7}, 3, 4, d + "/e.hdf5"), "bool", "None", "None", 0, 1);
  write(MakeSpec("float16", {3, 3}, 2, 5, d + "/f.hdf5"), "float16", "None", "None", 0, 1);

  const fs::path check = dir.path() / "check.py";
  {
    std::ofstream s(check);
    s << "import sys, h5py, numpy as np\n"
         "from h5py._hl.filters import guess_chunk\n"
         "path, dtype, chunks, comp, level, k = sys.argv[1:7]\n"
         "k = int(k)\n"
         "ref = open(path + '.bin', 'rb').read()\n"
         "with h5py.File(path, 'r') as f:\n"
         "    names = sorted(f.keys())\n"
         "    assert names == sorted(['labels'] + ['records_%d' % i for i in range(k)]), names\n"
         "    for i in range(k):\n"
         "        r = f['records_%d' % i]\n"
         "        assert r.dtype == np.dtype(dtype), r.dtype\n"
         "        if chunks == 'guess':\n"
         "            want = guess_chunk(r.shape, None, r.dtype.itemsize)\n"
         "        else:\n"
         "            want = eval(chunks)\n"
         "        assert r.chunks == want, (r.chunks, want)\n"
         "        assert r.compression == eval(comp), r.compression\n"
         "        if r.compression == 'gzip':\n"
         "            assert r.compression_opts == int(level), r.compression_opts\n"
         "        data = r[()]\n"
         "        assert data.tobytes() == ref, 'records_%d differs from the reference' % i\n"
         "        assert r[1].tobytes() == ref[len(ref) // r.shape[0]:2 * len(ref) // r.shape[0]]\n"
         "    l = f['labels']\n"
         "    assert l.dtype == np.int64 and l.shape == (f['records_0'].shape[0],)\n"
         "    assert not l[()].any()\n"
         "print('ok', path)\n";
  }
  std::string out;
  for (const Written& w : written) {
    const int rc = testing::RunCommand(std::string(testing::kSystemPython) + " " + check.string() +
                                           " " + w.spec.path + " " + w.dtype + " \"" + w.chunks +
                                           "\" \"" + w.compression + "\" " +
                                           std::to_string(w.level) + " " + std::to_string(w.k),
                                       &out);
    CHECK_MESSAGE(rc == 0, (w.spec.path + ": " + out));
  }

  // DLIO-style files written by h5py: read back row by row.
  CHECK(testing::MismatchWithForeignFiles(
            format, storage, dir.path(),
            "import sys, h5py, numpy as np\n"
            "d = sys.argv[1]\n"
            "rng = np.random.default_rng(3)\n"
            "cases = {\n"
            "  'plain': (rng.integers(0, 255, (5, 9, 7)).astype(np.uint8), 1, {}),\n"
            "  'k2_gzip': (rng.random((4, 3, 6)).astype(np.float32), 2,\n"
            "              dict(compression='gzip', compression_opts=4, chunks=(1, 3, 6))),\n"
            "  'maxshape': (rng.integers(-9, 9, (6, 4)).astype('<i8'), 1, dict(maxshape=(6, "
            "None))),\n"
            "  'bigendian': (rng.integers(0, 9, (3, 5)).astype('>u4'), 1, {}),\n"
            "}\n"
            "with h5py.File(d + '/lzf.hdf5', 'w', libver='latest') as f:\n"
            "    f.create_dataset('records_0', data=np.zeros((4, 8, 8), np.uint8), "
            "compression='lzf')\n"
            "    f.create_dataset('labels', data=[0] * 4)\n"
            "for name, (x, k, kw) in cases.items():\n"
            "    with h5py.File(d + '/' + name + '.hdf5', 'w', libver='latest') as f:\n"
            "        for i in range(k):\n"
            "            f.create_dataset('records_%d' % i, x.shape, dtype=x.dtype, data=x, **kw)\n"
            "        f.create_dataset('labels', data=[0] * x.shape[0])\n"
            "    for i in range(x.shape[0]):\n"
            "        open(d + '/' + name + '.' + str(i), 'wb').write(x[i].tobytes() * k)\n",
            {"plain", "k2_gzip", "maxshape", "bigendian"}, ".hdf5") == "");
  const fs::path foreign = dir.path() / "foreign";
  // h5py carries its own LZF filter; Debian's libhdf5 has none.
  if (!LzfAvailable()) {
    const std::string path = (foreign / "lzf.hdf5").string();
    Status s = testing::OpenAndRead(format, storage, path);
    CHECK_MESSAGE(s.code() == StatusCode::kNotSupported, s.ToString());
    CHECK_MESSAGE(s.message().find(path) != std::string::npos, s.ToString());
    CHECK_MESSAGE(s.message().find("filter 'lzf'") != std::string::npos, s.ToString());
  }
  CHECK(OpenHdf5Objects() == 0);
}

TEST_CASE("written in parts, the file is WriteFile's but for the root group's times") {
  Hdf5Format format;
  const FileSpec plain = MakeSpec("float32", {45, 31}, 19, 8, "/p/parts.hdf5");
  for (const FileSpec& spec : {plain, WithContent(plain, 37, 30)}) {
    CAPTURE(spec.content.compress_percentage);
    MemStorage whole, parts;
    REQUIRE(testing::WriteSpec(format, whole, spec).ok());
    Result<PayloadLayout> layout = testing::WriteInParts(format, parts, spec, 4);
    REQUIRE(layout.ok());
    CHECK(layout->payload_offset == 2048);
    CHECK(layout->payload_bytes == 45 * 31 * 4 * 19);
    const std::vector<std::byte> a = whole.Bytes(spec.path), b = parts.Bytes(spec.path);
    REQUIRE(a.size() == b.size());
    CHECK(layout->file_size == a.size());
    // The root group's object header (times, checksum) lies in the first 256
    // bytes; everything after it is the same.
    CHECK(std::equal(a.begin() + 256, a.end(), b.begin() + 256));
    // And it reads back as the seed's content.
    Result<std::unique_ptr<FileReader>> reader =
        format.OpenReader(spec.path, testing::TestReaderOptions(&parts));
    REQUIRE(reader.ok());
    const std::vector<std::byte> data = ReferenceData(spec, 45 * 31 * 4);
    for (std::uint64_t i : {0u, 7u, 18u}) {
      Result<SampleView> v = (*reader)->ReadSample(i);
      REQUIRE(v.ok());
      CHECK(std::equal(v->data.begin(), v->data.end(), data.begin() + i * 45 * 31 * 4));
      Result<std::vector<ByteRange>> ranges = (*reader)->SampleRanges(i);
      REQUIRE(ranges.ok());
      REQUIRE(ranges->size() == 1);
      CHECK((*ranges)[0].offset == 2048 + i * 45 * 31 * 4);
    }
  }
  // Several datasets per record, chunks or compression: not in parts.
  CHECK(!format.CanWriteInParts(MakeSpec("uint8", {8, 8}, 4, 1, "/p/c.hdf5", "gzip")).ok());
  CHECK(!format
             .CanWriteInParts(MakeSpec("uint8", {8, 8}, 4, 1, "/p/k.hdf5", "none",
                                       {{"hdf5.num_dset_per_record", "2"}}))
             .ok());
}

}  // namespace
}  // namespace iomimic::hdf5
