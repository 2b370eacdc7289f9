// Forwarding bases for storage decorators (RocksDB's FileSystemWrapper idea).
//
// A decorator plugin (descriptor flag IOMIMIC_CAP_DECORATOR) receives the back
// end it wraps in PluginContext::inner. It derives its Storage from
// ForwardingStorage and, when it acts on file operations, its File from
// ForwardingFile; every call it does not override goes unchanged to the inner
// object, so a decorator only writes the code for what it changes and new
// SDK methods need one line here instead of one per decorator.
//
// Header only: each decorator plugin compiles it into its own shared object
// (there is no library to link and no CMakeLists.txt in this folder).

#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <utility>

#include "iomimic/iomimic.h"

namespace iomimic::decorator {

// Runs `body` (returning a Status or a Result) and turns any exception into
// an error such as "<plugin>: <what> <object>: <exception>", so none leaves
// the plugin. The message is only built when something was thrown.
template <typename F>
auto Guard(const char* plugin, const char* what, const std::string& object, F&& body)
    -> decltype(body()) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return Status::ResourceExhausted(std::string(plugin) + ": out of memory " + what + " " +
                                     object);
  } catch (const std::exception& e) {
    return Status::Internal(std::string(plugin) + ": " + what + " " + object + ": " + e.what());
  } catch (...) {
    return Status::Internal(std::string(plugin) + ": " + what + " " + object +
                            ": unknown exception");
  }
}

// A File that forwards every call to the File it owns.
class ForwardingFile : public File {
 public:
  // `inner` must not be null; this object owns it and destroys it with
  // itself (an inner file still open is then closed implicitly).
  explicit ForwardingFile(std::unique_ptr<File> inner) : inner_(std::move(inner)) {}
  ~ForwardingFile() override = default;

  Result<std::size_t> ReadAt(std::uint64_t offset, std::span<std::byte> destination) override {
    return inner_->ReadAt(offset, destination);
  }
  Status WriteAt(std::uint64_t offset, std::span<const std::byte> source) override {
    return inner_->WriteAt(offset, source);
  }
  Status ReadBatch(std::span<ReadRequest> requests) override { return inner_->ReadBatch(requests); }
  // A decorator that overrides this must still call the inner WriteAtAll
  // (with an empty range if it fails the write): on a collective back end
  // the other ranks wait in the same call.
  Status WriteAtAll(std::uint64_t offset, std::span<const std::byte> source) override {
    return inner_->WriteAtAll(offset, source);
  }
  Status Sync() override { return inner_->Sync(); }
  Result<std::uint64_t> Size() override { return inner_->Size(); }
  Status Close() override { return inner_->Close(); }
  const std::string& path() const override { return inner_->path(); }

 protected:
  File& inner() { return *inner_; }
  const File& inner() const { return *inner_; }

 private:
  std::unique_ptr<File> inner_;
};

// A Storage that forwards every call to the Storage it wraps. Open() asks
// WrapFile() to decorate each File the inner back end returns.
class ForwardingStorage : public Storage {
 public:
  // `inner` must not be null and must outlive this object (the core owns it).
  explicit ForwardingStorage(Storage* inner) : inner_(inner) {}
  ~ForwardingStorage() override = default;

  StorageCapabilities capabilities() const override { return inner_->capabilities(); }

  Result<std::unique_ptr<File>> Open(const std::string& path, const OpenOptions& options) override {
    Result<std::unique_ptr<File>> opened = inner_->Open(path, options);
    if (!opened.ok()) return opened.status();
    return WrapFile(std::move(opened).value(), options);
  }
  Status CreateDirectories(const std::string& path) override {
    return inner_->CreateDirectories(path);
  }
  Status Remove(const std::string& path) override { return inner_->Remove(path); }
  Status Rename(const std::string& from, const std::string& to) override {
    return inner_->Rename(from, to);
  }
  Result<FileInfo> Stat(const std::string& path) override { return inner_->Stat(path); }
  std::vector<StorageStatistic> Statistics() const override { return inner_->Statistics(); }
  // Buffers come from the inner back end: it knows its alignment and memory.
  Result<Buffer> Allocate(std::size_t size) override { return inner_->Allocate(size); }

 protected:
  // Returns the File handed to the caller for `file` (never null), which the
  // inner back end opened with `options`. The default returns it unchanged.
  // Must not throw.
  virtual Result<std::unique_ptr<File>> WrapFile(std::unique_ptr<File> file,
                                                 const OpenOptions& options) {
    (void)options;
    return file;
  }

  Storage& inner() { return *inner_; }
  const Storage& inner() const { return *inner_; }

 private:
  Storage* inner_;
};

}  // namespace iomimic::decorator
