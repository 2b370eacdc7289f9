#include "kvcache/chunked.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <unordered_set>

#include "kvcache/models.h"
#include "kvcache/request_trace.h"
#include "kvcache/tier_store.h"
#include "metrics/figures_json.h"
#include "metrics/rank_merge.h"
#include "output/model.h"
#include "session/interrupt.h"

namespace iomimic::kvcache {

// --- ChunkLru ---------------------------------------------------------------

std::optional<Tier> ChunkLru::Touch(std::uint64_t key) {
  auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  std::list<std::uint64_t>& lru = lru_[Index(it->second.tier)];
  lru.splice(lru.begin(), lru, it->second.at);
  return it->second.tier;
}

void ChunkLru::MakeRoom(Tier tier, std::uint64_t bytes, std::vector<Move>* moves) {
  const int t = Index(tier);
  while (used_[t] + bytes > capacity_[t] && !lru_[t].empty()) {
    const std::uint64_t victim = lru_[t].back();
    const Entry e = entries_.at(victim);
    lru_[t].pop_back();
    used_[t] -= e.bytes;
    entries_.erase(victim);
    if (tier == Tier::kHost) {
      moves->push_back({Move::Kind::kDemote, victim, e.bytes});
      Place(victim, e.bytes, Tier::kStorage, moves);
    } else {
      moves->push_back({Move::Kind::kDelete, victim, e.bytes});
    }
  }
}

void ChunkLru::Place(std::uint64_t key, std::uint64_t bytes, Tier tier, std::vector<Move>* moves) {
  MakeRoom(tier, bytes, moves);
  const int t = Index(tier);
  lru_[t].push_front(key);
  used_[t] += bytes;
  entries_[key] = {tier, bytes, lru_[t].begin()};
}

Tier ChunkLru::Insert(std::uint64_t key, std::uint64_t bytes, std::vector<Move>* moves) {
  const Tier tier = has_host() && bytes <= capacity_[0] ? Tier::kHost : Tier::kStorage;
  Place(key, bytes, tier, moves);
  return tier;
}

bool ChunkLru::Promote(std::uint64_t key, std::vector<Move>* moves) {
  auto it = entries_.find(key);
  if (!has_host() || it == entries_.end() || it->second.tier != Tier::kStorage ||
      it->second.bytes > capacity_[0]) {
    return false;
  }
  const std::uint64_t bytes = it->second.bytes;
  lru_[1].erase(it->second.at);
  used_[1] -= bytes;
  entries_.erase(it);
  Place(key, bytes, Tier::kHost, moves);
  return true;
}

namespace {

using json = nlohmann::ordered_json;

std::string KeyName(std::uint64_t key) {
  char name[24];
  std::snprintf(name, sizeof name, "c%016llx", static_cast<unsigned long long>(key));
  return name;
}

int TierIndex(Tier tier) { return tier == Tier::kHost ? 0 : 1; }

// Transfers on io_threads threads, each transfer of a chunk ordered after
// the earlier ones on the same chunk (reserved in decision order), without
// blocking a thread on another: a transfer whose predecessor is not done
// waits in the chain, not in the queue.
class Transfers {
 public:
  using Body = std::function<void(TierStore::WorkerBuffer&)>;
  struct Op {
    std::uint64_t key = 0;
    Body body;
    bool submitted = false, ready = false, done = false;
    std::shared_ptr<Op> next;
  };

  explicit Transfers(unsigned threads) {
    for (unsigned t = 0; t < threads; ++t) pool_.emplace_back([this] { Work(); });
  }
  ~Transfers() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : pool_) t.join();
  }

  // A place for the next transfer of `key`, after those reserved before.
  std::shared_ptr<Op> Reserve(std::uint64_t key) {
    std::lock_guard<std::mutex> lock(mu_);
    auto op = std::make_shared<Op>();
    op->key = key;
    auto tail = tails_.find(key);
    if (tail == tails_.end()) {
      op->ready = true;
    } else {
      tail->second->next = op;
    }
    tails_[key] = op;
    ++outstanding_;
    return op;
  }

  // Gives `op` its work; it runs once its predecessor is done.
  void Submit(const std::shared_ptr<Op>& op, Body body) {
    std::lock_guard<std::mutex> lock(mu_);
    op->body = std::move(body);
    op->submitted = true;
    if (op->ready) Enqueue(op);
  }

  // Waits until every reserved transfer is done.
  void Drain() {
    std::unique_lock<std::mutex> lock(mu_);
    idle_.wait(lock, [this] { return outstanding_ == 0; });
  }

  std::uint64_t max_depth() const { return max_depth_; }

 private:
  void Enqueue(const std::shared_ptr<Op>& op) {
    queue_.push_back(op);
    max_depth_ = std::max<std::uint64_t>(max_depth_, queue_.size() + running_);
    wake_.notify_one();
  }

  void Work() {
    TierStore::WorkerBuffer wb;
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      std::shared_ptr<Op> op = std::move(queue_.front());
      queue_.pop_front();
      ++running_;
      lock.unlock();
      op->body(wb);
      op->body = nullptr;
      lock.lock();
      --running_;
      op->done = true;
      if (op->next != nullptr) {
        op->next->ready = true;
        if (op->next->submitted) Enqueue(op->next);
        op->next = nullptr;
      } else if (auto tail = tails_.find(op->key); tail != tails_.end() && tail->second == op) {
        tails_.erase(tail);
      }
      if (--outstanding_ == 0) idle_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable wake_, idle_;
  std::deque<std::shared_ptr<Op>> queue_;
  std::unordered_map<std::uint64_t, std::shared_ptr<Op>> tails_;
  std::uint64_t outstanding_ = 0, running_ = 0, max_depth_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> pool_;
};

// One request after its decision: the transfers it reserved.
struct Decided {
  std::size_t index = 0;
  double due = 0;  // seconds from the start it was due (its TTFT's origin)
  std::uint64_t input_tokens = 0, hit_tokens = 0, miss_tokens = 0;
  struct Transfer {
    std::shared_ptr<Transfers::Op> op;
    std::uint64_t key = 0, bytes = 0;
    Tier tier = Tier::kStorage;
  };
  std::vector<Transfer> reads;    // the hits, in prefix order
  std::vector<Transfer> promote;  // storage hits moved up: write host, delete storage
  std::vector<Transfer> moves;    // demotions and deletions making room
  std::vector<ChunkLru::Move> move_kinds;
  std::vector<Transfer> writes;  // the new chunks
};

class ChunkedRun {
 public:
  ChunkedRun(session::Session& session, const RequestTrace& trace, const ModelSpec& model,
             TierStore& store)
      : session_(session),
        c_(session.config().kv_cache),
        trace_(trace),
        model_(model),
        store_(store),
        lru_(static_cast<std::uint64_t>(c_.cpu_mem_gb * 1073741824.0),
             c_.storage_capacity_gb > 0
                 ? static_cast<std::uint64_t>(c_.storage_capacity_gb * 1073741824.0)
                 : kUnlimited),
        transfers_(static_cast<unsigned>(c_.io_threads)) {}

  Result<ChunkedFigures> Run();

 private:
  Decided Decide(std::size_t index, double due);
  // Whether the shared store holds chunk `key` whole (its object, of its
  // size), written by another rank or an earlier run.
  bool OnSharedStore(std::uint64_t key, std::uint64_t bytes) {
    store_.PathOf(KeyName(key), &path_);
    Result<FileInfo> info = session_.storage().Stat(path_);
    return info.ok() && info->size == store_.header_bytes(bytes) + bytes;
  }
  void Execute(Decided d);
  void Record(const Status& s) {
    if (s.ok()) return;
    std::lock_guard<std::mutex> lock(failed_mu_);
    if (failed_.ok()) failed_ = s.WithContext("kv_cache chunked");
  }
  void Timed(Tier tier, bool write, std::uint64_t bytes, const OpTiming& t) {
    const int i = TierIndex(tier);
    std::lock_guard<std::mutex> lock(figures_mu_);
    (write ? f_.write_bytes : f_.read_bytes)[i] += bytes;
    (write ? f_.write_seconds : f_.read_seconds)[i] += t.total;
    (write ? f_.chunk_write_ns : f_.chunk_read_ns)[i].Record(
        static_cast<std::uint64_t>(t.total * 1e9));
  }
  double Now() const { return metrics::Seconds(f_.start, metrics::Stamp::Now()); }

  session::Session& session_;
  const config::KvCacheConfig& c_;
  const RequestTrace& trace_;
  const ModelSpec& model_;
  TierStore& store_;
  ChunkLru lru_;
  ChunkedFigures f_;
  std::mutex figures_mu_, failed_mu_;
  Status failed_;
  Transfers transfers_;
  std::vector<ChunkRef> chunks_;  // the decision's scratch list
  std::string path_;              // the decision's scratch object path
  // Chunks found on the shared store that this rank did not write.
  std::unordered_set<std::uint64_t> foreign_;
};

Decided ChunkedRun::Decide(std::size_t index, double due) {
  const TraceRequest& r = trace_.requests[index];
  Decided d;
  d.index = index;
  d.due = due;
  d.input_tokens = r.input_tokens;
  ChunksOf(r, trace_.block_tokens, c_.chunk_tokens, &chunks_);
  // Each transfer is reserved on its chunk as soon as the LRU decides it,
  // so that a chunk moved down by one decision and read by the next is
  // read after the move.
  std::vector<ChunkLru::Move> moves;
  auto reserve_moves = [&] {
    for (const ChunkLru::Move& m : moves) {
      d.moves.push_back({transfers_.Reserve(m.key), m.key, m.bytes, Tier::kStorage});
      d.move_kinds.push_back(m);
    }
    moves.clear();
  };
  std::size_t c = 0;
  for (; c < chunks_.size(); ++c) {
    std::optional<Tier> tier = lru_.Touch(chunks_[c].key);
    const std::uint64_t bytes = EntryBytes(model_, chunks_[c].tokens, c_.tensor_parallel);
    if (!tier.has_value() && c_.shared_store && OnSharedStore(chunks_[c].key, bytes)) {
      lru_.Adopt(chunks_[c].key, bytes);
      foreign_.insert(chunks_[c].key);
      tier = Tier::kStorage;
    }
    if (!tier.has_value()) break;
    if (foreign_.count(chunks_[c].key) != 0) {
      std::lock_guard<std::mutex> lock(figures_mu_);
      ++f_.shared_hits;
    }
    d.reads.push_back({transfers_.Reserve(chunks_[c].key), chunks_[c].key, bytes, *tier});
    d.hit_tokens += chunks_[c].tokens;
    if (*tier == Tier::kStorage && c_.promotion == "on_hit" &&
        lru_.Promote(chunks_[c].key, &moves)) {
      // The host's demotions first, then this chunk's move up.
      reserve_moves();
      d.promote.push_back({transfers_.Reserve(chunks_[c].key), chunks_[c].key, bytes, Tier::kHost});
      d.promote.push_back(
          {transfers_.Reserve(chunks_[c].key), chunks_[c].key, bytes, Tier::kStorage});
    }
  }
  for (; c < chunks_.size(); ++c) {
    const std::uint64_t bytes = EntryBytes(model_, chunks_[c].tokens, c_.tensor_parallel);
    const Tier tier = lru_.Insert(chunks_[c].key, bytes, &moves);
    reserve_moves();
    d.writes.push_back({transfers_.Reserve(chunks_[c].key), chunks_[c].key, bytes, tier});
    d.miss_tokens += chunks_[c].tokens;
  }
  return d;
}

void ChunkedRun::Execute(Decided d) {
  // The moves start at once; the hits are read (the request waits).
  for (std::size_t i = 0; i < d.moves.size(); ++i) {
    const ChunkLru::Move m = d.move_kinds[i];
    transfers_.Submit(d.moves[i].op, [this, m](TierStore::WorkerBuffer& wb) {
      const std::string key = KeyName(m.key);
      if (m.kind == ChunkLru::Move::Kind::kDelete) {
        Record(store_.Delete(key, wb));
        std::lock_guard<std::mutex> lock(figures_mu_);
        ++f_.deletions;
        return;
      }
      OpTiming read, write;
      Record(store_.Demote(Tier::kHost, Tier::kStorage, key, m.bytes, wb, &read, &write));
      Timed(Tier::kHost, false, m.bytes, read);
      Timed(Tier::kStorage, true, m.bytes, write);
      std::lock_guard<std::mutex> lock(figures_mu_);
      ++f_.demotions;
    });
  }
  std::mutex mu;
  std::condition_variable cv;
  std::size_t pending = d.reads.size();
  for (const Decided::Transfer& t : d.reads) {
    transfers_.Submit(t.op, [&, t](TierStore::WorkerBuffer& wb) {
      OpTiming timing;
      Record(store_.Read(t.tier, KeyName(t.key), t.bytes, wb, &timing));
      Timed(t.tier, false, t.bytes, timing);
      {
        std::lock_guard<std::mutex> lock(figures_mu_);
        ++f_.hits[TierIndex(t.tier)];
      }
      std::lock_guard<std::mutex> lock(mu);
      if (--pending == 0) cv.notify_all();
    });
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return pending == 0; });
  }
  for (std::size_t i = 0; i < d.promote.size(); i += 2) {
    const Decided::Transfer up = d.promote[i];
    transfers_.Submit(up.op, [this, up](TierStore::WorkerBuffer& wb) {
      OpTiming timing;
      Record(store_.WriteNew(Tier::kHost, KeyName(up.key), up.bytes, wb, &timing));
      Timed(Tier::kHost, true, up.bytes, timing);
      std::lock_guard<std::mutex> lock(figures_mu_);
      ++f_.promotions;
    });
    transfers_.Submit(d.promote[i + 1].op, [this, key = up.key](TierStore::WorkerBuffer& wb) {
      // A shared store keeps its copy: other ranks may read it.
      if (!c_.shared_store) Record(store_.Delete(KeyName(key), wb));
    });
  }
  // Prefill of the rest (modelled compute), then the time to first token.
  const double prefill = static_cast<double>(d.miss_tokens) / c_.prefill_tokens_per_second;
  if (prefill > 0) std::this_thread::sleep_for(std::chrono::duration<double>(prefill));
  const double ttft = std::max(0.0, Now() - d.due);
  for (const Decided::Transfer& w : d.writes) {
    transfers_.Submit(w.op, [this, w](TierStore::WorkerBuffer& wb) {
      OpTiming timing;
      Record(store_.WriteNew(w.tier, KeyName(w.key), w.bytes, wb, &timing));
      Timed(w.tier, true, w.bytes, timing);
    });
  }
  std::lock_guard<std::mutex> lock(figures_mu_);
  ++f_.requests;
  f_.input_tokens += d.input_tokens;
  f_.hit_tokens += d.hit_tokens;
  f_.chunks += d.reads.size() + d.writes.size();
  f_.written += d.writes.size();
  f_.recompute_seconds += static_cast<double>(d.input_tokens) / c_.prefill_tokens_per_second;
  f_.ttft_ns.Record(static_cast<std::uint64_t>(ttft * 1e9));
}

Result<ChunkedFigures> ChunkedRun::Run() {
  const int rank = session_.cluster().rank(), ranks = session_.cluster().size();
  std::vector<std::size_t> mine;
  for (std::size_t i = static_cast<std::size_t>(rank); i < trace_.requests.size();
       i += static_cast<std::size_t>(ranks)) {
    mine.push_back(i);
  }
  if (c_.max_requests > 0 && mine.size() > c_.max_requests) mine.resize(c_.max_requests);
  // Request threads take decided requests in order; a slot is free when
  // one of them is idle.
  std::mutex mu;
  std::condition_variable changed;
  std::deque<Decided> ready;
  std::size_t idle = 0;
  bool finished = false;
  const auto workers =
      static_cast<std::size_t>(std::max<std::uint64_t>(1, c_.max_inflight_requests));
  std::vector<std::thread> threads;
  f_.start = metrics::Stamp::Now();
  for (std::size_t w = 0; w < workers; ++w) {
    threads.emplace_back([&] {
      std::unique_lock<std::mutex> lock(mu);
      for (;;) {
        ++idle;
        changed.notify_all();
        changed.wait(lock, [&] { return finished || !ready.empty(); });
        --idle;
        if (ready.empty()) return;
        Decided d = std::move(ready.front());
        ready.pop_front();
        lock.unlock();
        Execute(std::move(d));
        lock.lock();
      }
    });
  }
  for (std::size_t index : mine) {
    if (session::InterruptSignal() != 0 || (c_.duration > 0 && Now() >= c_.duration)) break;
    // At its trace time, its TTFT counts from then (a wait for a free
    // slot included); as fast as possible, from when a slot is free.
    const bool timed = c_.trace_speedup > 0;
    double due = timed ? trace_.requests[index].arrival_seconds / c_.trace_speedup : 0;
    if (timed && due > Now())
      std::this_thread::sleep_for(std::chrono::duration<double>(due - Now()));
    std::unique_lock<std::mutex> lock(mu);
    changed.wait(lock, [&] { return idle > ready.size(); });
    if (!timed) due = Now();
    {
      std::lock_guard<std::mutex> failed(failed_mu_);
      if (!failed_.ok()) break;
    }
    ready.push_back(Decide(index, std::min(due, Now())));
    changed.notify_all();
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    finished = true;
  }
  changed.notify_all();
  for (std::thread& t : threads) t.join();
  transfers_.Drain();
  f_.end = metrics::Stamp::Now();
  f_.elapsed_seconds = metrics::Seconds(f_.start, f_.end);
  f_.max_queue_depth = transfers_.max_depth();
  f_.interrupted_by = session::InterruptSignal();
  IOMIMIC_RETURN_IF_ERROR(failed_);
  return f_;
}

double Gbps(std::uint64_t bytes, double seconds) {
  return seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0.0;
}

}  // namespace

Result<ChunkedFigures> RunChunked(session::Session& session) {
  const config::KvCacheConfig& c = session.config().kv_cache;
  if (c.request_trace.empty()) {
    return Status::InvalidArgument(
        "kv_cache.layout chunked needs kv_cache.request_trace (a Mooncake, BurstGPT or ShareGPT "
        "trace; docs/kvcache-chunked.md)");
  }
  IOMIMIC_ASSIGN_OR_RETURN(const RequestTrace trace,
                           ReadRequestTrace(c.request_trace, c.request_trace_format));
  IOMIMIC_ASSIGN_OR_RETURN(const ModelSpec* model, FindModel(c.model));
  if (c.shared_store && c.storage_capacity_gb > 0) {
    return Status::InvalidArgument(
        "kv_cache.shared_store needs kv_cache.storage_capacity_gb 0: a shared store is unlimited "
        "here (its eviction is the store's own; docs/kvcache-chunked.md)");
  }
  const int rank = session.cluster().rank();
  StoreOptions so;
  so.folder = session::ResolveDataPath(session.config(), c.cache_folder) +
              (c.shared_store ? std::string("/shared") : "/rank_" + std::to_string(rank));
  if (c.shared_store) {
    so.publish_tag = "r" + std::to_string(rank) + "-" + std::to_string(getpid());
  }
  so.transfer_size = c.transfer_size;
  so.content_seed = c.seed + static_cast<std::uint64_t>(rank);
  // What chunks hold: iomimic.content, compress_percentage, dedupe_percentage
  // (as the whole layout's entries, docs/kvcache.md).
  const config::IomimicConfig& io = session.config().iomimic;
  so.content.kind =
      io.content == "zeros" ? ContentOptions::Kind::kZeros : ContentOptions::Kind::kRandom;
  so.content.compress_percentage = static_cast<std::uint32_t>(io.compress_percentage);
  so.content.dedupe_percentage = static_cast<std::uint32_t>(io.dedupe_percentage);
  so.model = model;
  so.tensor_parallel = c.tensor_parallel;
  TierStore store(session.storage(), so);
  IOMIMIC_RETURN_IF_ERROR(session.storage().CreateDirectories(so.folder));
  Result<ChunkedFigures> figures = ChunkedRun(session, trace, *model, store).Run();
  if (c.shared_store) {
    // Every rank done reading before any deletes what it wrote.
    IOMIMIC_RETURN_IF_ERROR(session.cluster().AgreeOnStatus(figures.status()));
  }
  Status removed = store.RemoveAll(c.keep_entries);
  if (figures.ok() && !removed.ok()) return removed;
  return figures;
}

void ChunkedResults::AddEvents(std::chrono::system_clock::time_point origin, int rank,
                               std::vector<output::EventEntry>* events) const {
  events->push_back({rank, "kv_chunked", 0, 0, output::SinceOrigin(origin, local_.start),
                     output::SinceOrigin(origin, local_.end),
                     local_.read_bytes[1] + local_.write_bytes[1]});
}

std::vector<std::pair<std::string, metrics::LatencyHistogram>> ChunkedResults::Histograms() const {
  return {{"kv_chunk_ttft", local_.ttft_ns},
          {"kv_chunk_read_cpu", local_.chunk_read_ns[0]},
          {"kv_chunk_read_storage", local_.chunk_read_ns[1]},
          {"kv_chunk_write_cpu", local_.chunk_write_ns[0]},
          {"kv_chunk_write_storage", local_.chunk_write_ns[1]}};
}

Status ChunkedResults::Collect(session::Session& session, output::RunResults& run) {
  (void)run;
  cluster::Cluster& cluster = session.cluster();
  const ChunkedFigures& l = local_;
  const std::vector<std::uint64_t> s =
      cluster.SumU64s({l.requests, l.input_tokens, l.hit_tokens, l.chunks, l.hits[0], l.hits[1],
                       l.written, l.promotions, l.demotions, l.deletions, l.read_bytes[0],
                       l.read_bytes[1], l.write_bytes[0], l.write_bytes[1], l.shared_hits});
  merged_.requests = s[0], merged_.input_tokens = s[1], merged_.hit_tokens = s[2];
  merged_.chunks = s[3], merged_.hits[0] = s[4], merged_.hits[1] = s[5], merged_.written = s[6];
  merged_.promotions = s[7], merged_.demotions = s[8], merged_.deletions = s[9];
  merged_.read_bytes[0] = s[10], merged_.read_bytes[1] = s[11];
  merged_.write_bytes[0] = s[12], merged_.write_bytes[1] = s[13];
  merged_.shared_hits = s[14];
  const std::vector<double> maxima =
      cluster.MaxDoubles({l.elapsed_seconds, static_cast<double>(l.max_queue_depth)});
  merged_.elapsed_seconds = maxima[0];
  merged_.max_queue_depth = static_cast<std::uint64_t>(maxima[1]);
  merged_.recompute_seconds =
      cluster.SumU64s({static_cast<std::uint64_t>(l.recompute_seconds * 1e9)})[0] / 1e9;
  std::vector<metrics::LatencyHistogram> h =
      metrics::MergeOverRanks({&l.ttft_ns, &l.chunk_read_ns[0], &l.chunk_read_ns[1],
                               &l.chunk_write_ns[0], &l.chunk_write_ns[1]},
                              cluster);
  merged_.ttft_ns = h[0];
  merged_.chunk_read_ns[0] = h[1], merged_.chunk_read_ns[1] = h[2];
  merged_.chunk_write_ns[0] = h[3], merged_.chunk_write_ns[1] = h[4];
  return Status::OK();
}

void ChunkedResults::AddToSummary(const output::RunResults& run,
                                  const config::LoadedManifest& manifest, json& summary,
                                  json& iomimic) const {
  (void)run, (void)iomimic;
  const config::KvCacheConfig& c = manifest.config.kv_cache;
  const ChunkedFigures& f = merged_;
  json o;
  o["request_trace"] = c.request_trace;
  o["chunk_tokens"] = c.chunk_tokens;
  o["promotion"] = c.promotion;
  o["requests"] = f.requests;
  o["input_tokens"] = f.input_tokens;
  o["hit_tokens"] = f.hit_tokens;
  o["token_hit_rate"] = metrics::JsonNumber<json>(
      f.input_tokens > 0 ? static_cast<double>(f.hit_tokens) / f.input_tokens : 0.0);
  o["chunks"] = f.chunks;
  o["chunk_hits"] = {{"cpu", f.hits[0]}, {"storage", f.hits[1]}};
  o["shared_store"] = c.shared_store;
  o["chunk_hits_shared"] = f.shared_hits;
  o["chunks_written"] = f.written;
  o["promotions"] = f.promotions;
  o["demotions"] = f.demotions;
  o["deletions"] = f.deletions;
  json tiers;
  const char* names[2] = {"cpu", "storage"};
  for (int t = 0; t < 2; ++t) {
    tiers[names[t]] = {
        {"read_bytes", f.read_bytes[t]},
        {"write_bytes", f.write_bytes[t]},
        {"read_GB_per_second", metrics::JsonNumber<json>(Gbps(f.read_bytes[t], f.elapsed_seconds))},
        {"write_GB_per_second",
         metrics::JsonNumber<json>(Gbps(f.write_bytes[t], f.elapsed_seconds))},
        {"chunk_read_ms",
         metrics::PercentilesJson<json>(f.chunk_read_ns[t], metrics::kReferenceQuantiles)},
        {"chunk_write_ms",
         metrics::PercentilesJson<json>(f.chunk_write_ns[t], metrics::kReferenceQuantiles)}};
  }
  o["tiers"] = std::move(tiers);
  o["ttft_ms"] = metrics::PercentilesJson<json>(f.ttft_ns, metrics::kReferenceQuantiles);
  const double mean_ttft = f.ttft_ns.mean_ns() / 1e9;
  const double mean_recompute = f.requests > 0 ? f.recompute_seconds / f.requests : 0.0;
  o["recompute_ttft_mean_ms"] = metrics::JsonNumber<json>(mean_recompute * 1e3);
  o["ttft_saved"] =
      metrics::JsonNumber<json>(mean_recompute > 0 ? 1.0 - mean_ttft / mean_recompute : 0.0);
  o["max_queue_depth"] = f.max_queue_depth;
  o["elapsed_seconds"] = metrics::JsonNumber<json>(f.elapsed_seconds);
  summary["kv_cache_chunked"] = std::move(o);
}

std::string ChunkedResults::ConsoleLines(const output::RunResults& run,
                                         const config::Config& config) const {
  (void)run;
  const ChunkedFigures& f = merged_;
  char line[512];
  std::string out;
  std::snprintf(
      line, sizeof line,
      "  kv chunked: %llu requests, %llu chunks of %llu tokens: token hit rate %.3f "
      "(cpu %llu, storage %llu chunk hits), %llu written\n",
      static_cast<unsigned long long>(f.requests), static_cast<unsigned long long>(f.chunks),
      static_cast<unsigned long long>(config.kv_cache.chunk_tokens),
      f.input_tokens > 0 ? static_cast<double>(f.hit_tokens) / f.input_tokens : 0.0,
      static_cast<unsigned long long>(f.hits[0]), static_cast<unsigned long long>(f.hits[1]),
      static_cast<unsigned long long>(f.written));
  out += line;
  std::snprintf(line, sizeof line,
                "  kv chunked: TTFT p50 %.1f ms, p99 %.1f ms; storage read %.2f GB/s, write "
                "%.2f GB/s; queue depth up to %llu\n",
                f.ttft_ns.Percentile(0.5) / 1e6, f.ttft_ns.Percentile(0.99) / 1e6,
                Gbps(f.read_bytes[1], f.elapsed_seconds), Gbps(f.write_bytes[1], f.elapsed_seconds),
                static_cast<unsigned long long>(f.max_queue_depth));
  out += line;
  return out;
}

Result<std::shared_ptr<output::WorkflowResults>> RunChunkedWorkflow(
    session::Session& session, const output::WorkflowContext& context) {
  (void)context;
  return output::ResultsOf<ChunkedResults>(RunChunked(session));
}

const output::FigureList& ChunkedFigureList() {
  static const output::FigureList figures = {
      {"kv chunk token hit rate", {"kv_cache_chunked", "token_hit_rate"}, true},
      {"kv chunk TTFT p50 ms", {"kv_cache_chunked", "ttft_ms", "p50"}, false},
      {"kv chunk TTFT p99 ms", {"kv_cache_chunked", "ttft_ms", "p99"}, false},
      {"kv chunk TTFT saved", {"kv_cache_chunked", "ttft_saved"}, true},
      {"kv chunk storage read GB/s",
       {"kv_cache_chunked", "tiers", "storage", "read_GB_per_second"},
       true},
  };
  return figures;
}

}  // namespace iomimic::kvcache
