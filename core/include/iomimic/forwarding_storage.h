// iomimic plugin SDK: forwarding bases for storage decorators.
//
// A decorator plugin (descriptor flag IOMIMIC_CAP_DECORATOR) receives the back
// end it wraps in PluginContext::inner and changes some of its behaviour:
// injects faults, adds latency, counts. It derives its Storage from
// ForwardingStorage and, when it acts on file operations, its File from
// ForwardingFile; every call it does not override goes unchanged to the inner
// object, so a decorator only holds the code for what it changes, and a
// method added to the SDK later needs one line here rather than one per
// decorator (the idea of LevelDB's EnvWrapper and RocksDB's
// FileSystemWrapper).
//
// Header only: the classes are compiled into the decorator's own shared
// object. The contracts are those of storage.h; what the forwarding adds is
// stated method by method. Forwarding never throws; overrides must not throw
// either (wrap throwing code in Guard, iomimic/guard.h).

#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "iomimic/buffer.h"
#include "iomimic/guard.h"
#include "iomimic/plugin.h"
#include "iomimic/status.h"
#include "iomimic/storage.h"

namespace iomimic {

// A File that forwards every call to the File it owns.
class ForwardingFile : public File {
 public:
  // Takes ownership of `inner`, which must not be null. `inner` is destroyed
  // with this object (an inner file still open is then closed implicitly,
  // as any File is).
  explicit ForwardingFile(std::unique_ptr<File> inner) : inner_(std::move(inner)) {}
  ~ForwardingFile() override = default;

  // The inner file's ReadAt: same bytes, same count, same errors.
  Result<std::size_t> ReadAt(std::uint64_t offset, std::span<std::byte> destination) override {
    return inner_->ReadAt(offset, destination);
  }
  // The inner file's WriteAt.
  Status WriteAt(std::uint64_t offset, std::span<const std::byte> source) override {
    return inner_->WriteAt(offset, source);
  }
  // The inner file's ReadBatch, so an asynchronous inner back end keeps its
  // requests in flight together. A decorator that overrides ReadAt only
  // should also override this (or forward it to File::ReadBatch, which calls
  // ReadAt per request); otherwise batched reads bypass its ReadAt.
  Status ReadBatch(std::span<ReadRequest> requests) override { return inner_->ReadBatch(requests); }
  // The inner file's WriteAtAll. A decorator that overrides this must still
  // call the inner WriteAtAll exactly once per call (with an empty range if it
  // fails the write itself): on a collective back end the other ranks wait in
  // the same call.
  Status WriteAtAll(std::uint64_t offset, std::span<const std::byte> source) override {
    return inner_->WriteAtAll(offset, source);
  }
  // The inner file's Sync.
  Status Sync() override { return inner_->Sync(); }
  // The inner file's Size.
  Result<std::uint64_t> Size() override { return inner_->Size(); }
  // The inner file's Close; further calls on the inner file fail as they do
  // after any Close.
  Status Close() override { return inner_->Close(); }
  // The inner file's Abort (an abandoned upload stays invisible through
  // decorators).
  Status Abort() override { return inner_->Abort(); }
  // The inner file's path (the path the caller opened).
  const std::string& path() const override { return inner_->path(); }

 protected:
  // The wrapped file, for overrides that add to the inner behaviour. Valid for
  // this object's whole life.
  File& inner() { return *inner_; }
  // As above, read-only.
  const File& inner() const { return *inner_; }

 private:
  std::unique_ptr<File> inner_;
};

// A ForwardingFile opened by the decorator storage `StorageT`, which it asks
// for its options, decisions and counters (storage()). The decorator's
// WrapFile makes one with ForwardingStorage::WrapIn.
template <typename StorageT>
class DecoratorFile : public ForwardingFile {
 public:
  // Takes ownership of `inner` (not null); `storage` (not null) opened it
  // and outlives this file (storage.h: a File is destroyed before its
  // Storage).
  DecoratorFile(std::unique_ptr<File> inner, StorageT* storage)
      : ForwardingFile(std::move(inner)), storage_(storage) {}

 protected:
  // The decorator storage that opened this file.
  StorageT& storage() const { return *storage_; }

 private:
  StorageT* storage_;
};

// A Storage that forwards every call to the Storage it wraps. Open() asks
// WrapFile() to decorate each File the inner back end returns. name() is
// left to the decorator: it names itself, not the back end it wraps.
class ForwardingStorage : public Storage {
 public:
  // Wraps `inner`, which must not be null and must outlive this object (the
  // core owns it and destroys it after the decorator).
  explicit ForwardingStorage(Storage* inner) : inner_(inner) {}
  ~ForwardingStorage() override = default;

  // The inner back end's capabilities, data_path included: a decorator that
  // changes what the back end can do (e.g. makes it single-threaded)
  // overrides this and adjusts the inner value.
  StorageCapabilities capabilities() const override { return inner_->capabilities(); }

  // Opens `path` on the inner back end and returns WrapFile(file, options);
  // an error of the inner Open is returned unchanged and WrapFile is not
  // called.
  Result<std::unique_ptr<File>> Open(const std::string& path, const OpenOptions& options) override {
    Result<std::unique_ptr<File>> opened = inner_->Open(path, options);
    if (!opened.ok()) return opened.status();
    return WrapFile(std::move(opened).value(), options);
  }
  // The inner back end's CreateDirectories.
  Status CreateDirectories(const std::string& path) override {
    return inner_->CreateDirectories(path);
  }
  // The inner back end's Remove.
  Status Remove(const std::string& path) override { return inner_->Remove(path); }
  // The inner back end's Rename.
  Status Rename(const std::string& from, const std::string& to) override {
    return inner_->Rename(from, to);
  }
  // The inner back end's Stat.
  Result<FileInfo> Stat(const std::string& path) override { return inner_->Stat(path); }
  // The inner back end's figures. A decorator that measures something
  // overrides this, calls ForwardingStorage::Statistics() and appends its own
  // (storage.h: decorators report their inner back end's and add their own).
  std::vector<StorageStatistic> Statistics() const override { return inner_->Statistics(); }
  // Buffers come from the inner back end: it knows its alignment and memory
  // kind, and reads through a decorated File land in them directly.
  Result<Buffer> Allocate(std::size_t size) override { return inner_->Allocate(size); }
  // The inner back end's: the buffers are its own.
  Status CopyIntoBuffer(Buffer& destination, std::size_t offset,
                        std::span<const std::byte> source) override {
    return inner_->CopyIntoBuffer(destination, offset, source);
  }
  // The inner back end's: the buffers are its own.
  Status CopyOutOfBuffer(const Buffer& source, std::size_t offset,
                         std::span<std::byte> destination) override {
    return inner_->CopyOutOfBuffer(source, offset, destination);
  }

 protected:
  // Returns the File handed to the caller for `file` (never null), which the
  // inner back end opened with `options`. The default returns `file`
  // unchanged; decorators return a ForwardingFile subclass owning it. An
  // error is returned to the caller of Open (`file` is then closed by its
  // destructor). Must not throw.
  virtual Result<std::unique_ptr<File>> WrapFile(std::unique_ptr<File> file,
                                                 const OpenOptions& options) {
    (void)options;
    return file;
  }

  // The usual WrapFile body: a new FileT(std::move(file), self) (FileT a
  // DecoratorFile<Self> or another ForwardingFile taking those arguments).
  // Allocation failing (or FileT's constructor throwing) becomes the error
  // Guard words (iomimic/guard.h), e.g. kResourceExhausted "<plugin>: out of
  // memory opening <path>"; `file` is then closed by its destructor.
  template <typename FileT, typename Self>
  static Result<std::unique_ptr<File>> WrapIn(std::string_view plugin, std::unique_ptr<File> file,
                                              Self* self) {
    // The path stays where it is while `file` moves: the File object does not.
    return Guard(plugin, "opening", file->path(), [&]() -> Result<std::unique_ptr<File>> {
      return std::unique_ptr<File>(new FileT(std::move(file), self));
    });
  }

  // The wrapped back end, for overrides that add to the inner behaviour.
  Storage& inner() { return *inner_; }
  // As above, read-only.
  const Storage& inner() const { return *inner_; }

 private:
  Storage* inner_;
};

// The factory of a decorator plugin `name`: refuses a context without a back
// end to wrap (kInvalidArgument "storage plugin '<name>' is a decorator and
// needs a back end to wrap (storage.options inner: <backend>)"), then parses
// the options with `parse` (a callable (const PluginOptions&) ->
// Result<Options>, its error returned unchanged) and returns
// DecoratorT(context.inner, options).
template <typename DecoratorT, typename Parse>
Result<std::unique_ptr<Storage>> CreateDecorator(std::string_view name,
                                                 const PluginContext& context, Parse&& parse) {
  if (context.inner == nullptr) {
    return Status::InvalidArgument("storage plugin '" + std::string(name) +
                                   "' is a decorator and needs a back end to wrap "
                                   "(storage.options inner: <backend>)");
  }
  auto options = parse(context.options);
  if (!options.ok()) return options.status();
  return std::unique_ptr<Storage>(new DecoratorT(context.inner, *options));
}

}  // namespace iomimic
