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

#include "iomimic/iomimic.h"
#include "iomimic/testing/posix_test_storage.h"

namespace iomimic::image_test {

namespace fs = std::filesystem;

inline constexpr char kPython[] = "/usr/bin/python3";

struct Request {
  bool write = false;
  std::string path;
  std::uint64_t offset = 0;
  std::size_t length = 0;    // requested
  std::size_t returned = 0;  // bytes a read returned
};

class MemStorage;

struct Blob {
  std::mutex mu;
  std::vector<std::byte> data;
};

class MemFile final : public File {
 public:
  MemFile(MemStorage* storage, std::string path, std::shared_ptr<Blob> blob)
      : storage_(storage), path_(std::move(path)), blob_(std::move(blob)) {}
  ~MemFile() override;

  Result<std::size_t> ReadAt(std::uint64_t offset, std::span<std::byte> destination) override;
  Status WriteAt(std::uint64_t offset, std::span<const std::byte> source) override;
  Status Sync() override { return closed_ ? Closed() : Status::OK(); }
  Result<std::uint64_t> Size() override;
  Status Close() override;
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
    ++open_files_;
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
  // Makes the next `count` reads of any file fail with an I/O error.
  void FailReads(int count) { fail_reads_ = count; }
  bool TakeReadFailure() {
    int left = fail_reads_.load();
    while (left > 0) {
      if (fail_reads_.compare_exchange_weak(left, left - 1)) return true;
    }
    return false;
  }
  // Makes writes fail once this many bytes have been written (-1: never).
  void FailWritesAfter(std::int64_t bytes) { write_budget_ = bytes; }
  bool TakeWriteBudget(std::size_t n) {
    std::int64_t budget = write_budget_.load();
    if (budget < 0) return true;
    if (static_cast<std::int64_t>(n) > budget) return false;
    write_budget_ -= static_cast<std::int64_t>(n);
    return true;
  }
  void Log(Request r) {
    std::lock_guard<std::mutex> lock(log_mu_);
    if (logging_) log_.push_back(std::move(r));
  }
  std::vector<Request> TakeLog() {
    std::lock_guard<std::mutex> lock(log_mu_);
    return std::exchange(log_, {});
  }
  void SetLogging(bool on) {
    std::lock_guard<std::mutex> lock(log_mu_);
    logging_ = on;
    log_.clear();
  }
  void FileClosed() { --open_files_; }
  int open_files() const { return open_files_; }
  int opens() const { return opens_; }

 private:
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Blob>> files_;
  std::mutex log_mu_;
  bool logging_ = false;
  std::vector<Request> log_;
  std::atomic<int> open_files_{0};
  std::atomic<int> opens_{0};
  std::atomic<int> fail_reads_{0};
  std::atomic<std::int64_t> write_budget_{-1};
};

inline MemFile::~MemFile() {
  if (!closed_) storage_->FileClosed();
}

inline Result<std::size_t> MemFile::ReadAt(std::uint64_t offset, std::span<std::byte> destination) {
  if (closed_) return Closed();
  if (storage_->TakeReadFailure()) {
    return Status::IOError("pread " + path_ + " at offset " + std::to_string(offset) +
                           ": injected failure");
  }
  std::size_t n = 0;
  {
    std::lock_guard<std::mutex> lock(blob_->mu);
    if (offset < blob_->data.size()) {
      n = std::min<std::size_t>(destination.size(),
                                blob_->data.size() - static_cast<std::size_t>(offset));
      std::memcpy(destination.data(), blob_->data.data() + offset, n);
    }
  }
  storage_->Log({false, path_, offset, destination.size(), n});
  return n;
}

inline Status MemFile::WriteAt(std::uint64_t offset, std::span<const std::byte> source) {
  if (closed_) return Closed();
  if (!storage_->TakeWriteBudget(source.size())) {
    return Status::ResourceExhausted("pwrite " + path_ + " at offset " + std::to_string(offset) +
                                     ": no space left on device (injected)");
  }
  storage_->Log({true, path_, offset, source.size(), source.size()});
  std::lock_guard<std::mutex> lock(blob_->mu);
  if (blob_->data.size() < offset + source.size()) blob_->data.resize(offset + source.size());
  std::memcpy(blob_->data.data() + offset, source.data(), source.size());
  return Status::OK();
}

inline Result<std::uint64_t> MemFile::Size() {
  if (closed_) return Closed();
  std::lock_guard<std::mutex> lock(blob_->mu);
  return static_cast<std::uint64_t>(blob_->data.size());
}

inline Status MemFile::Close() {
  if (closed_) return Closed();
  closed_ = true;
  storage_->FileClosed();
  return Status::OK();
}

// Real files: the SDK's test storage (iomimic/testing/posix_test_storage.h).
using ::iomimic::testing::PosixFile;
using ::iomimic::testing::PosixStorage;
using ::iomimic::testing::TempDir;

inline FileSpec MakeSpec(const std::string& dtype, std::vector<std::uint64_t> shape,
                         std::uint64_t seed, const std::string& path, std::uint64_t samples = 1) {
  FileSpec spec;
  spec.path = path;
  Result<ElementType> type = ElementType::FromName(dtype);
  REQUIRE(type.ok());
  spec.element_type = *type;
  spec.sample_shape = std::move(shape);
  spec.num_samples = samples;
  spec.seed = seed;
  return spec;
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
