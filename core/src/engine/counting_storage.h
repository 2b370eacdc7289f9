// A storage decorator that counts what really moves.
//
// The core wraps every storage plugin in a CountingStorage, so the results
// report bytes actually read and written (beside DLIO's nominal figures),
// operation counts, fsync calls and the latency of each read request,
// whatever the back end. Counters are atomic; the wrapper adds two clock
// reads per operation.

#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "iomimic/storage.h"
#include "metrics/histogram.h"

namespace iomimic::engine {

struct IoCounters {
  std::atomic<std::uint64_t> opens{0};
  std::atomic<std::uint64_t> read_ops{0};
  std::atomic<std::uint64_t> read_bytes{0};
  std::atomic<std::uint64_t> write_ops{0};
  std::atomic<std::uint64_t> write_bytes{0};
  std::atomic<std::uint64_t> syncs{0};
  std::atomic<std::uint64_t> errors{0};
  // Latency of each storage operation, nanoseconds (histograms.json).
  metrics::LatencyHistogram open_latency;   // Storage::Open
  metrics::LatencyHistogram read_latency;   // per read request
  metrics::LatencyHistogram write_latency;  // per write request
  metrics::LatencyHistogram fsync_latency;  // File::Sync
  metrics::LatencyHistogram close_latency;  // File::Close
  metrics::LatencyHistogram stat_latency;   // Storage::Stat
};

// A snapshot of the plain counters (for per-phase deltas).
struct IoSnapshot {
  std::uint64_t opens = 0, read_ops = 0, read_bytes = 0, write_ops = 0, write_bytes = 0, syncs = 0,
                errors = 0;
  IoSnapshot operator-(const IoSnapshot& o) const {
    return {opens - o.opens,         read_ops - o.read_ops,       read_bytes - o.read_bytes,
            write_ops - o.write_ops, write_bytes - o.write_bytes, syncs - o.syncs,
            errors - o.errors};
  }
};

class CountingStorage final : public Storage {
 public:
  // `inner` must outlive this object.
  explicit CountingStorage(Storage* inner) : inner_(inner) {}

  std::string name() const override { return inner_->name(); }
  StorageCapabilities capabilities() const override { return inner_->capabilities(); }
  Result<std::unique_ptr<File>> Open(const std::string& path, const OpenOptions& options) override;
  Status CreateDirectories(const std::string& path) override {
    return inner_->CreateDirectories(path);
  }
  Status Remove(const std::string& path) override { return inner_->Remove(path); }
  Status Rename(const std::string& from, const std::string& to) override {
    return inner_->Rename(from, to);
  }
  Result<FileInfo> Stat(const std::string& path) override;
  Result<Buffer> Allocate(std::size_t size) override { return inner_->Allocate(size); }
  std::vector<StorageStatistic> Statistics() const override { return inner_->Statistics(); }

  IoCounters& counters() { return counters_; }
  IoSnapshot Snapshot() const;

 private:
  Storage* inner_;
  IoCounters counters_;
};

}  // namespace iomimic::engine
