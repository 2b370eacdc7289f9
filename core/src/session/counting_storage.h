// A storage decorator that counts what really moves.
//
// The core wraps every storage plugin in a CountingStorage, so the results
// report bytes actually read and written (beside DLIO's nominal figures),
// operation counts, fsync calls and the latency of each read request,
// whatever the back end. Counters are atomic; the wrapper adds two clock
// reads per operation.
//
// It also keeps Darshan's POSIX-module counters per file (FileCounters,
// io_counters.csv; docs/run-folder.md): each open File carries its own record
// (allocated at open, updated without locks or allocation since a File is
// used by one thread at a time, iomimic/storage.h), merged into a per-path
// table under a lock when the File is closed.

#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "iomimic/forwarding_storage.h"
#include "iomimic/storage.h"
#include "metrics/histogram.h"
#include "metrics/trace.h"

namespace iomimic::session {

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

// A snapshot of the plain counters (for per-phase deltas; summed over the
// ranks, the results' totals: output::RunResults::io).
struct IoSnapshot {
  std::uint64_t files_opened = 0, read_requests = 0, bytes_read = 0, write_requests = 0,
                bytes_written = 0, fsync_calls = 0, errors = 0;
  IoSnapshot operator-(const IoSnapshot& o) const {
    return {files_opened - o.files_opened,
            read_requests - o.read_requests,
            bytes_read - o.bytes_read,
            write_requests - o.write_requests,
            bytes_written - o.bytes_written,
            fsync_calls - o.fsync_calls,
            errors - o.errors};
  }
};

// Darshan's POSIX-module counters of one file (POSIX_OPENS, POSIX_READS, ...)
// over the opens of one path on one rank, or merged over paths and ranks.
struct FileCounters {
  // Darshan's access-size bins: 0-100, 100-1K, 1K-10K, 10K-100K, 100K-1M,
  // 1M-4M, 4M-10M, 10M-100M, 100M-1G, 1G+ (bytes; each bin's upper bound is
  // exclusive).
  static constexpr int kSizeBins = 10;
  // Distinct access sizes tracked per record for the four most common ones.
  // A size that finds the table full takes the slot of the rarest size when
  // it comes with more requests (a merge of other records' tables); one
  // request at a time never displaces a size, so a record's counts are exact
  // for its first kSizeSlots distinct sizes.
  static constexpr int kSizeSlots = 16;
  static int SizeBin(std::uint64_t bytes);

  std::uint64_t opens = 0;
  std::uint64_t stats = 0;
  std::uint64_t reads = 0;   // successful read requests
  std::uint64_t writes = 0;  // successful write requests
  std::uint64_t bytes_read = 0;
  std::uint64_t bytes_written = 0;
  // Highest byte offset read / written (offset + size - 1); -1 when none.
  std::int64_t max_byte_read = -1;
  std::int64_t max_byte_written = -1;
  // Reads that start after the previous read of the same open ended
  // (sequential) or exactly where it ended (consecutive); as in Darshan a
  // consecutive read is also sequential and a file's first read is neither.
  std::uint64_t seq_reads = 0;
  std::uint64_t consec_reads = 0;
  std::array<std::uint64_t, kSizeBins> read_size_bins{};
  std::array<std::uint64_t, kSizeBins> write_size_bins{};
  // Access sizes (reads and writes) with their counts; count 0 = free slot.
  std::array<std::pair<std::uint64_t, std::uint64_t>, kSizeSlots> access_sizes{};
  std::uint64_t read_ns = 0;   // time in read requests
  std::uint64_t write_ns = 0;  // time in write requests and fsync (Darshan's write time)
  std::uint64_t meta_ns = 0;   // open, close, stat
  // steady_clock nanoseconds (time_since_epoch): first open's start, last
  // open's end, first close's start, last close's end; 0 = none.
  std::int64_t open_start_ns = 0;
  std::int64_t open_end_ns = 0;
  std::int64_t close_start_ns = 0;
  std::int64_t close_end_ns = 0;

  void AddAccessSize(std::uint64_t bytes, std::uint64_t count = 1);
  // Adds `o` (another open, path or rank) into this record.
  void Merge(const FileCounters& o);
  // The four most common access sizes, most common first (ties: larger size).
  std::vector<std::pair<std::uint64_t, std::uint64_t>> CommonSizes(std::size_t n = 4) const;
};

// The counts of a FileCounters that a merge sums, each with its name in
// summary.json's iomimic.io_counters and io_counters.csv (docs/run-folder.md),
// in that order.
struct FileCount {
  const char* name;
  std::uint64_t FileCounters::*member;
};
inline constexpr FileCount kFileCounts[] = {
    {"opens", &FileCounters::opens},           {"stats", &FileCounters::stats},
    {"reads", &FileCounters::reads},           {"writes", &FileCounters::writes},
    {"bytes_read", &FileCounters::bytes_read}, {"bytes_written", &FileCounters::bytes_written},
    {"seq_reads", &FileCounters::seq_reads},   {"consec_reads", &FileCounters::consec_reads},
};

// Counts every operation of the back end it wraps (its own name and
// capabilities are the inner one's); everything it does not count is
// forwarded as ForwardingStorage does.
class CountingStorage final : public ForwardingStorage {
 public:
  // `inner` must outlive this object.
  explicit CountingStorage(Storage* inner) : ForwardingStorage(inner) {}

  std::string name() const override { return inner().name(); }
  Result<std::unique_ptr<File>> Open(const std::string& path, const OpenOptions& options) override;
  Result<FileInfo> Stat(const std::string& path) override;
  // Forwarded uncounted; traced (unlink, rename) so that a replay of the
  // trace (docs/replay.md) removes and renames as the run did.
  Status Remove(const std::string& path) override;
  Status Rename(const std::string& from, const std::string& to) override;

  IoCounters& counters() { return counters_; }
  // The back end itself, for side measurements that are not the run's I/O
  // (session/cache_honesty.h: the dataset check's stat sample, a checkpoint's
  // cache drop before its residency is measured): nothing done through it
  // is counted or traced.
  Storage& uncounted() { return inner(); }
  IoSnapshot Snapshot() const;

  // Records every operation (open, read, write, fsync, close, stat,
  // unlink, rename) into
  // `tracer` when it is enabled; `tracer` must outlive this object.
  void set_tracer(metrics::Tracer* tracer) { tracer_ = tracer; }
  metrics::Tracer* tracer() const { return tracer_; }

  // Every path's counters so far (Files still open are not included).
  // Thread-safe.
  std::vector<std::pair<std::string, FileCounters>> FileCountersByPath() const;
  // Merges one closed File's record into its path's. Thread-safe.
  void AddFileCounters(const std::string& path, const FileCounters& counters);

 private:
  IoCounters counters_;
  metrics::Tracer* tracer_ = nullptr;
  mutable std::mutex files_mutex_;
  std::unordered_map<std::string, FileCounters> files_;
};

}  // namespace iomimic::session
