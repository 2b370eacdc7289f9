// The `faulty` storage decorator: injects failures into the back end it
// wraps, to test that formats and the engine handle storage errors (RocksDB's
// FaultInjectionTestFS idea).
//
//   storage:
//     backend: faulty
//     options: {inner: posix, mode: eio, fail_at_offset: 1M, fail_path: train/}
//
// Which operations can fail (option `operations`, default auto = by mode):
//   mode eio         reads (operations=write or all: writes too) return
//                    Status::IOError "injected EIO: read of N bytes at offset
//                    X in <path> (...)"; the inner back end is not called
//   mode short_read  reads return fewer bytes than the inner back end read
//                    (the bytes up to fail_at_offset when that triggered, half
//                    otherwise), with no error: a truncation the format must
//                    detect; a read that already returned 0 stays 0
//   mode enospc      writes return Status::ResourceExhausted "injected ENOSPC:
//                    write of N bytes at offset X in <path>: No space left on
//                    device (...)"; nothing is written
//   mode short_write writes pass their first part (the bytes up to
//                    fail_at_offset when that triggered, half otherwise) to
//                    the inner back end, then return Status::IOError
//                    "injected short write: write of N bytes at offset X in
//                    <path> stopped after K bytes (...)": a file cut short
// An eligible operation (its kind matches, and its path contains fail_path
// when that is set) is numbered in the order the storage instance sees it.
// The first `after_ops` eligible operations always pass. Later ones fail
// when they cover byte `fail_at_offset` (offset <= it < offset + length), or
// when the draw for their number falls below `error_rate` (0..1; 1 = every
// one). With neither set, nothing fails. Draws depend only on `seed` and the
// operation's number. In a ReadBatch every request is one operation; failing
// requests get their own status and the others are read.
//
// Every injected error names the operation, its byte count and offset, the
// file, and says it was injected and by which trigger.

#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "iomimic/forwarding_storage.h"
#include "iomimic/guard.h"
#include "iomimic/iomimic.h"

namespace iomimic::faulty {

enum class Mode : std::uint8_t { kEio, kShortRead, kEnospc, kShortWrite };

struct FaultyOptions {
  Mode mode = Mode::kEio;
  double error_rate = 0;
  std::optional<std::uint64_t> fail_at_offset;
  std::string fail_path;
  std::uint64_t after_ops = 0;
  std::uint64_t seed = 0;
  bool reads = true;    // reads are eligible
  bool writes = false;  // writes are eligible
};

Result<FaultyOptions> ParseOptions(const PluginOptions& options);

enum class OpKind : std::uint8_t { kRead, kWrite };

// Why an operation was chosen to fail; empty when it passes.
struct Fault {
  bool fail = false;
  bool at_offset = false;  // it covers fail_at_offset
  std::string trigger;     // e.g. "fail_at_offset 4096" or "error_rate 0.5, operation #12"
};

class FaultyStorage;

class FaultyFile final : public DecoratorFile<FaultyStorage> {
 public:
  using DecoratorFile::DecoratorFile;

  // An eligible read that is chosen fails (eio: the inner file is not
  // called) or comes back short (short_read); others are the inner ReadAt.
  Result<std::size_t> ReadAt(std::uint64_t offset, std::span<std::byte> destination) override;
  // An eligible write that is chosen fails (enospc: nothing written;
  // short_write: its first part written); others are the inner WriteAt.
  Status WriteAt(std::uint64_t offset, std::span<const std::byte> source) override;
  // Faults apply as to WriteAt; a failed rank still joins the collective call.
  Status WriteAtAll(std::uint64_t offset, std::span<const std::byte> source) override;
  // Each request is one operation: chosen ones fail (or come back short)
  // alone, the others are read in one inner ReadBatch.
  Status ReadBatch(std::span<ReadRequest> requests) override;

 private:
  // The bytes a short read returns instead of `n`.
  std::size_t Shortened(const Fault& fault, std::uint64_t offset, std::size_t n) const;
};

class FaultyStorage final : public ForwardingStorage {
 public:
  FaultyStorage(Storage* inner, const FaultyOptions& options)
      : ForwardingStorage(inner), options_(options) {}

  std::string name() const override { return "faulty"; }

  // Numbers the operation and decides whether it fails. Thread-safe.
  Fault Decide(OpKind kind, const std::string& path, std::uint64_t offset, std::uint64_t length);
  // The error an injected failure returns; `written`: the bytes a
  // short_write let through.
  Status InjectedError(OpKind kind, const std::string& path, std::uint64_t offset,
                       std::uint64_t length, const Fault& fault, std::size_t written = 0) const;

  const FaultyOptions& options() const { return options_; }
  // The inner back end's figures plus eligible_operations and
  // injected_faults.
  std::vector<StorageStatistic> Statistics() const override;
  // Operations numbered and failures injected so far.
  std::uint64_t eligible_operations() const { return counter_.load(); }
  std::uint64_t injected() const { return injected_.load(); }

 protected:
  Result<std::unique_ptr<File>> WrapFile(std::unique_ptr<File> file,
                                         const OpenOptions& options) override;

 private:
  FaultyOptions options_;
  std::atomic<std::uint64_t> counter_{0};
  std::atomic<std::uint64_t> injected_{0};
};

Result<std::unique_ptr<Storage>> CreateFaultyStorage(const PluginContext& context);

}  // namespace iomimic::faulty
