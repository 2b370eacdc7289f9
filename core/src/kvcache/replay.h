// Replays a KV-cache reference trace (kvcache/trace.h) against any storage
// back end (docs/kvcache-reference.md, "Replaying a trace"):
//
//   Write on Tier-2: create <root>/<key>.npy holding a .npy header and
//                    Object_Size_Bytes of data, Sync, Close (what the
//                    reference's storage tier does with np.save and fsync)
//   Read on Tier-2:  open <root>/<key>.npy with OpenOptions::drop_cache and
//                    read it whole (the reference drops the page cache with
//                    POSIX_FADV_DONTNEED, then np.load)
//   Tier-0, Tier-1:  not replayed (GPU and CPU memory are no storage); they
//                    are counted as skipped, operations and bytes
//
// Operations on one key run in trace order, one after the other; operations
// on different keys run on `threads` threads at once. Timing kFast issues
// each operation as soon as a thread and its key are free; kRecorded also
// waits until the operation's trace time (from the first row) has passed
// and counts the operations that started late. A Tier-2 Read whose key has
// no earlier Tier-2 Write in the trace reads an object the replay creates
// before it starts (untimed). Objects that exist before the replay are an
// error: nothing is overwritten. The replay removes its objects at the end
// unless asked to keep them.

#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "iomimic/storage.h"
#include "kvcache/models.h"
#include "kvcache/trace.h"
#include "metrics/histogram.h"
#include "metrics/records.h"
#include "output/figures.h"
#include "output/workflow_results.h"
#include "session/session.h"

namespace iomimic::kvcache {

enum class ReplayTiming { kFast, kRecorded };

struct ReplayOptions {
  std::string root = "kvcache_replay";  // folder of the objects in the storage's namespace
  ReplayTiming timing = ReplayTiming::kFast;
  unsigned threads = 1;
  std::size_t transfer_bytes = 16u << 20;  // bytes per ReadAt/WriteAt call
  bool keep_objects = false;
  // Polled before each operation: true finishes the operations running and
  // starts no more (e.g. after SIGINT). Null: never.
  bool (*stop)() = nullptr;
};

// Operations and bytes of one (Operation, Tier, Phase) group.
struct ReplayGroup {
  std::uint64_t ops = 0;
  std::uint64_t bytes = 0;  // Object_Size_Bytes, headers not counted
};

struct ReplayResult {
  // "Write Tier-2 Prefill" -> counts, every row of the trace (replayed or not).
  std::map<std::string, ReplayGroup> groups;
  ReplayGroup reads, writes;        // replayed (Tier-2) operations
  ReplayGroup skipped;              // Tier-0 and Tier-1 rows
  std::uint64_t header_bytes = 0;   // .npy header bytes written and read on top
  std::uint64_t setup_objects = 0;  // objects created first for reads without a write
  metrics::LatencyHistogram read_ns, write_ns;
  double elapsed_s = 0;        // from the first replayed operation to the last one's end
  double trace_span_s = 0;     // last minus first timestamp of the trace
  std::uint64_t late_ops = 0;  // kRecorded: started more than 1 ms after their time
  double max_late_s = 0;
  bool stopped = false;  // options.stop said so
};

// The object path of `key`: <root>/<key>.npy. InvalidArgument for a key that
// is empty, absolute, has a "." or ".." component or a control character.
Result<std::string> ReplayObjectPath(const std::string& root, const std::string& key);

// The .npy header (version 1.0) of a flat array holding `bytes` bytes:
// float16 ('<f2') when bytes is even, else uint8 ('|u1'). It is always
// kNpyHeaderBytes long (kvcache/models.h: 64-byte aligned; the shape has at
// most 20 digits).
// Writes that header to out[0, kNpyHeaderBytes). Allocates nothing.
void FillNpyHeader(std::uint64_t bytes, std::byte* out);
// The same header as a string.
std::string NpyHeaderForBytes(std::uint64_t bytes);

// Replays `rows` on `storage`. The first failed operation stops the replay
// and is the error, with the trace line in its context.
Result<ReplayResult> Replay(Storage& storage, const std::vector<TraceRow>& rows,
                            const ReplayOptions& options);

// The result as a few lines of text for a terminal.
std::string ReplayResultText(const ReplayResult& result);

// The replay as the KV-cache workflow of a run (kv_cache.replay_trace): this
// rank replays the trace on the session's storage under kv_cache.cache_folder
// (resolved against storage.storage_root; with several ranks, rank r under
// <cache_folder>/rank_<r>), with kv_cache.replay_threads threads,
// kv_cache.replay_timing, kv_cache.transfer_size bytes per call, keeping the
// objects when kv_cache.keep_entries says so; a signal stops it after the
// operations in flight (session/interrupt.h).
struct RankReplay {
  ReplayResult result;
  metrics::Stamp start, end;
};
Result<RankReplay> ReplayTrace(session::Session& session);

// The KV trace replay's headline figures (output/figures.h): read and
// write MiB/s and P99 latency, late operations.
const output::FigureList& ReplayFigures();

// This rank's replay and, after Collect, the run's (counts summed over the
// ranks, histograms merged, elapsed the slowest rank's): summary.json's
// kv_cache_replay (groups, reads and writes with latency percentiles in
// seconds, skipped memory tiers, elapsed, late starts), the histograms
// kv_replay_read and kv_replay_write, a kv_replay span per rank in
// events.csv and the console lines.
class ReplayResults final : public output::WorkflowResults {
 public:
  explicit ReplayResults(RankReplay local) : local_(std::move(local)) {}

  const ReplayResult& merged() const { return merged_; }

  // output::WorkflowResults (output/workflow_results.h).
  int interrupted_by() const override;
  void AddEvents(std::chrono::system_clock::time_point origin, int rank,
                 std::vector<output::EventEntry>* events) const override;
  std::vector<std::pair<std::string, metrics::LatencyHistogram>> Histograms() const override;
  Status Collect(session::Session& session, output::RunResults& run) override;
  void AddToSummary(const output::RunResults& run, const config::LoadedManifest& manifest,
                    nlohmann::ordered_json& summary,
                    nlohmann::ordered_json& iomimic) const override;
  std::string ConsoleLines(const output::RunResults& run,
                           const config::Config& config) const override;

 private:
  RankReplay local_;
  ReplayResult merged_;
};

// The replay's entry point (output::WorkflowRunner, kv_cache.replay_trace
// set): ReplayTrace, its results as ReplayResults.
Result<std::shared_ptr<output::WorkflowResults>> RunReplayWorkflow(
    session::Session& session, const output::WorkflowContext& context);

}  // namespace iomimic::kvcache
