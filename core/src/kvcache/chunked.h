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
// as new chunks in the background (the offload), into the host tier when
// there is one, else the storage tier. Each tier is an LRU of its capacity
// (kv_cache.cpu_mem_gb, kv_cache.storage_capacity_gb): a chunk evicted from
// the host tier moves to storage, one evicted from storage is deleted.
// kv_cache.promotion on_hit moves a storage hit up to the host tier after
// it is read (LMCache, Dynamo KVBM); none leaves it (MLPerf's waterfall).
//
// Decisions are made for one request at a time in arrival order, so the
// hits are those of an LRU fed the requests in order (tests compare them
// with an independent computation); a decision that must evict a chunk
// still being written or read waits for it. Transfers run on
// kv_cache.io_threads threads; kv_cache.max_inflight_requests requests
// run at once, each arriving at its trace time divided by
// kv_cache.trace_speedup (0: as soon as a slot is free).

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
#include "session/session.h"

namespace iomimic::kvcache {

// The tiers' LRU lists of the chunked mode: which tier holds each chunk,
// and what a decision moves. No I/O; one caller at a time.
class ChunkLru {
 public:
  // `host` 0: no host tier; `storage` kUnlimited: no limit.
  ChunkLru(std::uint64_t host, std::uint64_t storage) : capacity_{host, storage} {}

  struct Move {
    enum class Kind : std::uint8_t { kDemote, kDelete } kind = Kind::kDelete;
    std::uint64_t key = 0;
    std::uint64_t bytes = 0;
  };

  // The tier holding `key`, made its tier's most recently used; nullopt on
  // a miss.
  std::optional<Tier> Touch(std::uint64_t key);
  // Places the new chunk `key` in the first tier, after the moves that make
  // room (appended to `moves`, to be done before the chunk is written).
  Tier Insert(std::uint64_t key, std::uint64_t bytes, std::vector<Move>* moves);
  // Moves `key` from storage to the host tier (most recently used there),
  // after the host tier's own demotions (appended to `moves`). False when
  // there is no host tier or the chunk is not on storage.
  bool Promote(std::uint64_t key, std::vector<Move>* moves);
  std::uint64_t used(Tier tier) const { return used_[Index(tier)]; }
  bool has_host() const { return capacity_[0] > 0; }

 private:
  struct Entry {
    Tier tier;
    std::uint64_t bytes;
    std::list<std::uint64_t>::iterator at;
  };
  static int Index(Tier tier) { return tier == Tier::kHost ? 0 : 1; }
  void Place(std::uint64_t key, std::uint64_t bytes, Tier tier, std::vector<Move>* moves);
  void MakeRoom(Tier tier, std::uint64_t bytes, std::vector<Move>* moves);

  std::uint64_t capacity_[2];
  std::uint64_t used_[2] = {0, 0};
  std::list<std::uint64_t> lru_[2];  // most recent first
  std::unordered_map<std::uint64_t, Entry> entries_;
};

// One rank's figures of a chunked run.
struct ChunkedFigures {
  std::uint64_t requests = 0;
  std::uint64_t input_tokens = 0;
  std::uint64_t hit_tokens = 0;    // tokens whose chunks were hits
  std::uint64_t chunks = 0;        // chunks looked up (the requests' inputs)
  std::uint64_t hits[2] = {0, 0};  // chunk hits on the host tier, on storage
  std::uint64_t written = 0;       // new chunks written
  std::uint64_t promotions = 0, demotions = 0, deletions = 0;
  std::uint64_t read_bytes[2] = {0, 0}, write_bytes[2] = {0, 0};
  double read_seconds[2] = {0, 0}, write_seconds[2] = {0, 0};  // summed over transfers
  std::uint64_t max_queue_depth = 0;  // transfers queued or running at once, at most
  double elapsed_seconds = 0;
  double recompute_seconds = 0;  // the requests' TTFT had every token been prefilled
  metrics::Stamp start, end;
  metrics::LatencyHistogram ttft_ns;
  metrics::LatencyHistogram chunk_read_ns[2], chunk_write_ns[2];
  int interrupted_by = 0;
};

// Runs the chunked mode on this rank (rank r replays requests r, r + ranks,
// ... of the trace into its own cache folder).
Result<ChunkedFigures> RunChunked(session::Session& session);

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
