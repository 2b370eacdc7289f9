// The KV-cache workflow's chunked mode (kv_cache.layout: chunked,
// docs/kvcache-chunked.md): KV offload as production systems do it
// (LMCache's chunks of 256 tokens, llm-d's blocks, Dynamo KVBM's tiers),
// driven by a request trace (kvcache/request_trace.h).
//
// A request's input is cut into chunks of kv_cache.chunk_tokens tokens,
// each keyed by its prefix (equal keys for equal prompts up to the chunk's
// end, so requests share chunks). Its lookup walks the chunks in order and
// stops at the first one no tier holds: the chunks before it are hits,
// read from their tier (the host tier's memory, or one storage object per
// chunk through the session's storage plugin); the rest are prefilled
// (kv_cache.prefill_tokens_per_second, modelled compute) and then written
// as new chunks in the background (the offload) into the first tier large
// enough. The tiers, top first, each where configured: gpu (device memory,
// kv_cache.gpu_mem_gb), cpu (host memory, cpu_mem_gb), storage (the
// session's storage plugin, storage_capacity_gb) and object (a second
// storage plugin, kv_cache.object_tier). Each is an LRU of its capacity; a
// chunk evicted from one moves to the next tier down, one evicted from the
// last is deleted. kv_cache.promotion on_hit moves a lower-tier hit up to
// the top tier after it is read (LMCache, Dynamo KVBM); none leaves it
// (MLPerf's waterfall). kv_cache.chunk_objects layer stores a chunk as one
// object per model layer. Hits are counted by who wrote the chunk: this
// rank's own lists say so for its chunks, and a shared store's objects
// carry their writer's stamp (kvcache/tier_store.h).
//
// Decisions are made for one request at a time in arrival order, so the
// hits are those of an LRU fed the requests in order (tests compare them
// with an independent computation); a decision that must evict a chunk
// still being written or read waits for it. Transfers run on
// kv_cache.io_threads threads; kv_cache.max_inflight_requests requests
// run at once, each arriving at its trace time divided by
// kv_cache.trace_speedup (0: as soon as a slot is free).
//
// kv_cache.shared_store: every rank's storage tier is one folder (or
// prefix), as llm-d's file-system backend shares blocks among replicas: a
// chunk another rank (another host) wrote is a hit here, found by its
// object's name and size when this rank's own lists do not hold it; objects
// are published whole (written under a temporary name and renamed, one PUT
// on object storage), so no reader sees a torn chunk; the shared tier is
// unlimited (its eviction is the store's own business) and a promotion
// copies a chunk up instead of moving it.

#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "iomimic/status.h"
#include "kvcache/tier_cache.h"
#include "metrics/histogram.h"
#include "metrics/records.h"
#include "output/figures.h"
#include "output/workflow_results.h"
#include "plugin/registry.h"
#include "session/session.h"

namespace iomimic::kvcache {

// The tiers' LRU lists of the chunked mode: which tier (level 0 the top)
// holds each chunk, and what a decision moves. A tier full makes room by
// moving its least recently used chunks to the next tier down; the last
// tier deletes them. No I/O; one caller at a time.
class ChunkLru {
 public:
  // The tiers' capacities in bytes, top first (kUnlimited: no limit); at
  // least one, at most kMaxChunkTiers.
  explicit ChunkLru(std::vector<std::uint64_t> capacities);

  struct Move {
    enum class Kind : std::uint8_t { kDemote, kDelete } kind = Kind::kDelete;
    std::uint64_t key = 0;
    std::uint64_t bytes = 0;
    int from = 0;  // the tier it leaves; a demotion lands on from + 1
  };

  // The tier holding `key`, made its tier's most recently used; nullopt on
  // a miss.
  std::optional<int> Touch(std::uint64_t key);
  // Records `key`, found on a shared tier `level` (unlimited, so nothing
  // moves), as held there, the most recently used.
  void Adopt(std::uint64_t key, std::uint64_t bytes, int level) {
    std::vector<Move> none;
    Place(key, bytes, level, &none);
  }
  // Places the new chunk `key` in the first tier large enough for it,
  // after the moves that make room (appended to `moves`, to be done before
  // the chunk is written). Returns that tier.
  int Insert(std::uint64_t key, std::uint64_t bytes, std::vector<Move>* moves);
  // Moves `key` from a lower tier to the top one (most recently used
  // there), after the top tier's own demotions (appended to `moves`).
  // False when it is on the top tier already, absent, or larger than it.
  bool Promote(std::uint64_t key, std::vector<Move>* moves);
  std::uint64_t used(int level) const { return levels_[static_cast<std::size_t>(level)].used; }
  int levels() const { return static_cast<int>(levels_.size()); }

 private:
  struct Entry {
    int level;
    std::uint64_t bytes;
    std::list<std::uint64_t>::iterator at;
  };
  struct Level {
    std::uint64_t capacity = 0, used = 0;
    std::list<std::uint64_t> lru;  // most recent first
  };
  void Place(std::uint64_t key, std::uint64_t bytes, int level, std::vector<Move>* moves);
  void MakeRoom(int level, std::uint64_t bytes, std::vector<Move>* moves);

  std::vector<Level> levels_;
  std::unordered_map<std::uint64_t, Entry> entries_;
};

// The chunked mode's tiers, top first, each present only where configured
// (kv_cache.gpu_mem_gb, cpu_mem_gb, the session's storage, object_tier);
// figures are kept per slot.
enum class ChunkTier : std::uint8_t { kGpu = 0, kCpu = 1, kStorage = 2, kObject = 3 };
inline constexpr int kMaxChunkTiers = 4;
// "gpu", "cpu", "storage", "object".
const char* ChunkTierName(int slot);

// Where a chunk hit came from: who wrote the chunk it read.
enum class HitSource : std::uint8_t {
  kOwn = 0,         // an earlier turn of the same conversation, on this rank
  kOtherUser = 1,   // another request on this rank
  kOtherRank = 2,   // another rank on this host (a shared store)
  kOtherHost = 3,   // a rank on another host (a shared store)
  kEarlierRun = 4,  // an earlier run (a shared store kept between runs)
  kUnknown = 5,     // found on a shared store, never read (kv_cache.trace_only)
};
inline constexpr int kHitSources = 6;
// "own", "other_user", "other_rank", "other_host", "earlier_run", "unknown".
const char* HitSourceName(int source);

// One rank's figures of a chunked run; per-tier arrays are by ChunkTier.
struct ChunkedFigures {
  std::uint64_t requests = 0;
  std::uint64_t input_tokens = 0;
  std::uint64_t hit_tokens = 0;  // tokens whose chunks were hits
  std::uint64_t chunks = 0;      // chunks looked up (the requests' inputs)
  std::uint64_t hits[kMaxChunkTiers] = {};
  // Of the hits, those on chunks found on a shared store that this rank had
  // not written (another rank's or an earlier run's; kv_cache.shared_store).
  std::uint64_t shared_hits = 0;
  std::uint64_t hits_by_source[kHitSources] = {};
  std::uint64_t written = 0;  // new chunks written
  std::uint64_t promotions = 0, demotions = 0, deletions = 0;
  std::uint64_t read_bytes[kMaxChunkTiers] = {}, write_bytes[kMaxChunkTiers] = {};
  // The transfers' time split as the reference splits it (kvcache/
  // tier_store.h OpTiming): device (storage reads; a write's sync and
  // close) and host (the rest), summed per tier.
  double read_device_seconds[kMaxChunkTiers] = {}, read_host_seconds[kMaxChunkTiers] = {};
  double write_device_seconds[kMaxChunkTiers] = {}, write_host_seconds[kMaxChunkTiers] = {};
  std::uint64_t max_queue_depth = 0;  // transfers queued or running at once, at most
  double elapsed_seconds = 0;
  double recompute_seconds = 0;  // the requests' TTFT had every token been prefilled
  metrics::Stamp start, end;
  metrics::LatencyHistogram ttft_ns;
  metrics::LatencyHistogram chunk_read_ns[kMaxChunkTiers], chunk_write_ns[kMaxChunkTiers];
  bool present[kMaxChunkTiers] = {false, false, true, false};  // the tiers the run had
  std::string device_path;  // the gpu tier's memory: emulated or the plugin's data path
  int interrupted_by = 0;
};

// Runs the chunked mode on this rank (rank r replays requests r, r + ranks,
// ... of the trace into its own cache folder).
// `registry` opens the plugins of the accelerator and object tiers.
Result<ChunkedFigures> RunChunked(session::Session& session, const plugin::Registry* registry);

// summary.json's kv_cache_chunked: tokens and hit rate, hits per tier,
// chunks written, moves, GB/s per tier, TTFT percentiles and what it saved
// against prefilling everything, the queue depth reached; histograms
// kv_chunk_ttft, kv_chunk_read_<tier>, kv_chunk_write_<tier>; a span per
// rank; console lines.
class ChunkedResults final : public output::WorkflowResults {
 public:
  explicit ChunkedResults(ChunkedFigures local) : local_(std::move(local)), merged_(local_) {}
  int interrupted_by() const override { return local_.interrupted_by; }
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
  ChunkedFigures local_;
  ChunkedFigures merged_;
};

Result<std::shared_ptr<output::WorkflowResults>> RunChunkedWorkflow(
    session::Session& session, const output::WorkflowContext& context);

// The chunked mode's headline figures (output/figures.h).
const output::FigureList& ChunkedFigureList();

}  // namespace iomimic::kvcache
