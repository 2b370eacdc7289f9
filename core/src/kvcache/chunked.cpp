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

#include "config/content.h"
#include "kvcache/accelerator_tier.h"
#include "kvcache/models.h"
#include "kvcache/request_trace.h"
#include "kvcache/tier_store.h"
#include "metrics/figures_json.h"
#include "metrics/rank_merge.h"
#include "output/model.h"
#include "session/interrupt.h"

namespace iomimic::kvcache {

// --- ChunkLru ---------------------------------------------------------------

ChunkLru::ChunkLru(std::vector<std::uint64_t> capacities) {
  levels_.resize(capacities.size());
  for (std::size_t i = 0; i < capacities.size(); ++i) levels_[i].capacity = capacities[i];
}

std::optional<int> ChunkLru::Touch(std::uint64_t key) {
  auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  std::list<std::uint64_t>& lru = levels_[static_cast<std::size_t>(it->second.level)].lru;
  lru.splice(lru.begin(), lru, it->second.at);
  return it->second.level;
}

void ChunkLru::MakeRoom(int level, std::uint64_t bytes, std::vector<Move>* moves) {
  Level& l = levels_[static_cast<std::size_t>(level)];
  while (l.used + bytes > l.capacity && !l.lru.empty()) {
    const std::uint64_t victim = l.lru.back();
    const Entry e = entries_.at(victim);
    l.lru.pop_back();
    l.used -= e.bytes;
    entries_.erase(victim);
    if (level + 1 < levels()) {
      moves->push_back({Move::Kind::kDemote, victim, e.bytes, level});
      Place(victim, e.bytes, level + 1, moves);
    } else {
      moves->push_back({Move::Kind::kDelete, victim, e.bytes, level});
    }
  }
}

void ChunkLru::Place(std::uint64_t key, std::uint64_t bytes, int level, std::vector<Move>* moves) {
  MakeRoom(level, bytes, moves);
  Level& l = levels_[static_cast<std::size_t>(level)];
  l.lru.push_front(key);
  l.used += bytes;
  entries_[key] = {level, bytes, l.lru.begin()};
}

int ChunkLru::Insert(std::uint64_t key, std::uint64_t bytes, std::vector<Move>* moves) {
  int level = 0;
  while (level + 1 < levels() && bytes > levels_[static_cast<std::size_t>(level)].capacity) {
    ++level;
  }
  Place(key, bytes, level, moves);
  return level;
}

bool ChunkLru::Promote(std::uint64_t key, std::vector<Move>* moves) {
  auto it = entries_.find(key);
  if (it == entries_.end() || it->second.level == 0 || it->second.bytes > levels_[0].capacity) {
    return false;
  }
  const std::uint64_t bytes = it->second.bytes;
  Level& from = levels_[static_cast<std::size_t>(it->second.level)];
  from.lru.erase(it->second.at);
  from.used -= bytes;
  entries_.erase(it);
  Place(key, bytes, 0, moves);
  return true;
}

const char* ChunkTierName(int slot) {
  static constexpr const char* kNames[kMaxChunkTiers] = {"gpu", "cpu", "storage", "object"};
  return slot >= 0 && slot < kMaxChunkTiers ? kNames[slot] : "storage";
}

const char* HitSourceName(int source) {
  static constexpr const char* kNames[kHitSources] = {"own",        "other_user",  "other_rank",
                                                      "other_host", "earlier_run", "unknown"};
  return source >= 0 && source < kHitSources ? kNames[source] : "unknown";
}

namespace {

using json = nlohmann::ordered_json;

std::string KeyName(std::uint64_t key) {
  char name[24];
  std::snprintf(name, sizeof name, "c%016llx", static_cast<unsigned long long>(key));
  return name;
}

// Transfers on io_threads threads, each transfer of a chunk ordered after
// the earlier ones on the same chunk (reserved in decision order), without
// blocking a thread on another: a transfer whose predecessor is not done
// waits in the chain, not in the queue.
//
// At most `threads` transfers run at once, each with one of `threads`
// worker buffers made before the run's clock starts (Prepare): the pool's
// threads, and a request thread that runs its own queued reads while it
// waits for them (RunOwn) when a slot is free, as a loader thread that
// reads its own blocks; a read then costs no hand-off between threads.
class Transfers {
 public:
  using Body = std::function<void(TierStore::WorkerBuffer&)>;
  struct Op {
    std::uint64_t key = 0;
    Body body;
    const void* owner = nullptr;  // who may run it itself (RunOwn), or none
    bool submitted = false, ready = false, done = false;
    std::shared_ptr<Op> next;
  };

  explicit Transfers(unsigned threads) : buffers_(threads) {
    for (unsigned t = 0; t < threads; ++t) free_.push_back(t);
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

  // Makes every worker buffer with `make` (before any transfer runs), so
  // that no transfer pays for the first touch of its buffer's pages.
  Status Prepare(const std::function<Status(TierStore::WorkerBuffer&)>& make) {
    for (TierStore::WorkerBuffer& wb : buffers_) IOMIMIC_RETURN_IF_ERROR(make(wb));
    return Status::OK();
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

  // Gives `op` its work; it runs once its predecessor is done. With an
  // `owner`, that caller runs it itself (RunOwn) if it is still queued then
  // and no pool thread is woken for it unless `wake`.
  void Submit(const std::shared_ptr<Op>& op, Body body, const void* owner = nullptr,
              bool wake = true) {
    std::lock_guard<std::mutex> lock(mu_);
    op->body = std::move(body);
    op->owner = owner;
    op->submitted = true;
    if (op->ready) Enqueue(op, wake || owner == nullptr);
  }

  // Runs, one after the other on the calling thread, the queued transfers
  // submitted by `owner`, while a slot is free; returns when none is left
  // that it may run (the pool runs the rest).
  void RunOwn(const void* owner) {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      if (running_ >= buffers_.size()) return;
      auto mine =
          std::find_if(queue_.begin(), queue_.end(),
                       [owner](const std::shared_ptr<Op>& op) { return op->owner == owner; });
      if (mine == queue_.end()) return;
      std::shared_ptr<Op> op = std::move(*mine);
      queue_.erase(mine);
      Run(op, lock);
      // A pool thread may have waited for the slot this one held.
      if (!queue_.empty()) wake_.notify_one();
    }
  }

  // Waits until every reserved transfer is done.
  void Drain() {
    std::unique_lock<std::mutex> lock(mu_);
    idle_.wait(lock, [this] { return outstanding_ == 0; });
  }

  std::uint64_t max_depth() const { return max_depth_; }

 private:
  void Enqueue(const std::shared_ptr<Op>& op, bool wake) {
    queue_.push_back(op);
    max_depth_ = std::max<std::uint64_t>(max_depth_, queue_.size() + running_);
    if (wake) wake_.notify_one();
  }

  // Runs `op` with a free buffer (`lock` held on entry and on return).
  void Run(const std::shared_ptr<Op>& op, std::unique_lock<std::mutex>& lock) {
    ++running_;
    const std::size_t buffer = free_.back();
    free_.pop_back();
    lock.unlock();
    op->body(buffers_[buffer]);
    op->body = nullptr;
    lock.lock();
    free_.push_back(buffer);
    --running_;
    op->done = true;
    if (op->next != nullptr) {
      op->next->ready = true;
      if (op->next->submitted) Enqueue(op->next, true);
      op->next = nullptr;
    } else if (auto tail = tails_.find(op->key); tail != tails_.end() && tail->second == op) {
      tails_.erase(tail);
    }
    if (--outstanding_ == 0) idle_.notify_all();
  }

  void Work() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      // A slot is free when a request thread runs none of its own reads
      // there; at the end, the queue is drained first.
      wake_.wait(lock, [this] {
        return (!queue_.empty() && running_ < buffers_.size()) || (stopping_ && queue_.empty());
      });
      if (queue_.empty()) return;
      std::shared_ptr<Op> op = std::move(queue_.front());
      queue_.pop_front();
      Run(op, lock);
    }
  }

  std::mutex mu_;
  std::condition_variable wake_, idle_;
  std::deque<std::shared_ptr<Op>> queue_;
  std::unordered_map<std::uint64_t, std::shared_ptr<Op>> tails_;
  std::vector<TierStore::WorkerBuffer> buffers_;  // one per slot
  std::vector<std::size_t> free_;                 // the buffers no transfer holds
  std::uint64_t outstanding_ = 0, running_ = 0, max_depth_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> pool_;
};

// One tier of a run: where its chunks live.
struct Level {
  int slot = 2;                // ChunkTier: figures' index and name
  Tier kind = Tier::kStorage;  // what `store` keeps it as
  TierStore* store = nullptr;
  bool shared = false;  // the shared store (kv_cache.shared_store)
};

// Where a chunk this rank knows came from (ChunkedRun::origin_).
struct Origin {
  bool mine = false;                       // written by this rank in this run
  std::uint64_t conversation = 0;          // the writing request's, when mine
  HitSource source = HitSource::kUnknown;  // who wrote it, when not mine
};

// One request after its decision: the transfers it reserved.
struct Decided {
  std::size_t index = 0;
  double due = 0;  // seconds from the start it was due (its TTFT's origin)
  std::uint64_t input_tokens = 0, hit_tokens = 0, miss_tokens = 0;
  std::uint64_t conversation = 0;
  struct Transfer {
    std::shared_ptr<Transfers::Op> op;
    std::uint64_t key = 0, bytes = 0;
    int level = 0;
  };
  std::vector<Transfer> reads;    // the hits, in prefix order
  std::vector<Transfer> promote;  // pairs: write on the top tier, drop from the hit's tier
  std::vector<Transfer> moves;    // demotions and deletions making room
  std::vector<ChunkLru::Move> move_kinds;
  std::vector<Transfer> writes;  // the new chunks
};

std::vector<std::uint64_t> Capacities(const std::vector<Level>& levels,
                                      const config::KvCacheConfig& c) {
  std::vector<std::uint64_t> out;
  for (const Level& l : levels) {
    const double gib = l.slot == 0   ? c.gpu_mem_gb * static_cast<double>(c.num_gpus)
                       : l.slot == 1 ? c.cpu_mem_gb
                       : l.slot == 2 ? c.storage_capacity_gb
                                     : c.object_capacity_gb;
    const bool memory = l.slot < 2;
    out.push_back(gib > 0 || memory ? static_cast<std::uint64_t>(gib * 1073741824.0) : kUnlimited);
  }
  return out;
}

class ChunkedRun {
 public:
  ChunkedRun(session::Session& session, const RequestTrace& trace, const ModelSpec& model,
             std::vector<Level> levels, ChunkStamp me)
      : session_(session),
        c_(session.config().kv_cache),
        trace_(trace),
        model_(model),
        levels_(std::move(levels)),
        me_(me),
        lru_(Capacities(levels_, c_)),
        transfers_(static_cast<unsigned>(c_.io_threads)) {
    for (const Level& l : levels_) f_.present[l.slot] = true;
  }

  Result<ChunkedFigures> Run();
  ChunkedFigures& figures() { return f_; }

 private:
  Decided Decide(std::size_t index, double due);
  // The level of the shared store, or -1.
  int SharedLevel() const {
    for (std::size_t i = 0; i < levels_.size(); ++i) {
      if (levels_[i].shared) return static_cast<int>(i);
    }
    return -1;
  }
  void Execute(Decided d);
  void Move(const ChunkLru::Move& m, TierStore::WorkerBuffer& wb);
  // Counts a hit on `key` by `conversation`'s request, its writer from the
  // object's stamp where it was read from storage.
  void CountSource(std::uint64_t key, std::uint64_t conversation, const ChunkStamp* writer);
  void Record(const Status& s) {
    if (s.ok()) return;
    std::lock_guard<std::mutex> lock(failed_mu_);
    if (failed_.ok()) failed_ = s.WithContext("kv_cache chunked");
  }
  void Timed(int level, bool write, std::uint64_t bytes, const OpTiming& t) {
    const int i = levels_[static_cast<std::size_t>(level)].slot;
    std::lock_guard<std::mutex> lock(figures_mu_);
    (write ? f_.write_bytes : f_.read_bytes)[i] += bytes;
    (write ? f_.write_device_seconds : f_.read_device_seconds)[i] += t.device;
    (write ? f_.write_host_seconds : f_.read_host_seconds)[i] += t.host;
    (write ? f_.chunk_write_ns : f_.chunk_read_ns)[i].Record(
        static_cast<std::uint64_t>(t.total * 1e9));
  }
  const Level& L(int level) const { return levels_[static_cast<std::size_t>(level)]; }
  double Now() const { return metrics::Seconds(f_.start, metrics::Stamp::Now()); }

  session::Session& session_;
  const config::KvCacheConfig& c_;
  const RequestTrace& trace_;
  const ModelSpec& model_;
  std::vector<Level> levels_;
  ChunkStamp me_;
  ChunkLru lru_;
  ChunkedFigures f_;
  std::mutex figures_mu_, failed_mu_;
  Status failed_;
  Transfers transfers_;
  std::vector<ChunkRef> chunks_;  // the decision's scratch list
  std::string path_;              // the decision's scratch object path
  // Chunks found on the shared store that this rank did not write.
  std::unordered_set<std::uint64_t> foreign_;
  // Who wrote each chunk this rank has held (under figures_mu_).
  std::unordered_map<std::uint64_t, Origin> origin_;
};

void ChunkedRun::CountSource(std::uint64_t key, std::uint64_t conversation,
                             const ChunkStamp* writer) {
  std::lock_guard<std::mutex> lock(figures_mu_);
  Origin& o = origin_[key];
  if (writer != nullptr && !(writer->run == me_.run && writer->rank == me_.rank)) {
    o.mine = false;
    o.source = writer->run != me_.run     ? HitSource::kEarlierRun
               : writer->host == me_.host ? HitSource::kOtherRank
                                          : HitSource::kOtherHost;
  }
  HitSource source = o.source;
  if (o.mine) {
    source = conversation != 0 && o.conversation == conversation ? HitSource::kOwn
                                                                 : HitSource::kOtherUser;
  }
  ++f_.hits_by_source[static_cast<int>(source)];
}

Decided ChunkedRun::Decide(std::size_t index, double due) {
  const TraceRequest& r = trace_.requests[index];
  Decided d;
  d.index = index;
  d.due = due;
  d.input_tokens = r.input_tokens;
  d.conversation = r.conversation;
  ChunksOf(r, trace_.block_tokens, c_.chunk_tokens, &chunks_);
  const int shared = SharedLevel();
  // Each transfer is reserved on its chunk as soon as the LRU decides it,
  // so that a chunk moved down by one decision and read by the next is
  // read after the move.
  std::vector<ChunkLru::Move> moves;
  auto reserve_moves = [&] {
    for (const ChunkLru::Move& m : moves) {
      d.moves.push_back({transfers_.Reserve(m.key), m.key, m.bytes, m.from});
      d.move_kinds.push_back(m);
    }
    moves.clear();
  };
  std::size_t c = 0;
  for (; c < chunks_.size(); ++c) {
    const std::uint64_t key = chunks_[c].key;
    std::optional<int> level = lru_.Touch(key);
    const std::uint64_t bytes = EntryBytes(model_, chunks_[c].tokens, c_.tensor_parallel);
    if (!level.has_value() && shared >= 0 && L(shared).store->Holds(KeyName(key), bytes, &path_)) {
      lru_.Adopt(key, bytes, shared);
      foreign_.insert(key);
      level = shared;
    }
    if (!level.has_value()) break;
    if (foreign_.count(key) != 0) {
      std::lock_guard<std::mutex> lock(figures_mu_);
      ++f_.shared_hits;
    }
    d.reads.push_back({transfers_.Reserve(key), key, bytes, *level});
    d.hit_tokens += chunks_[c].tokens;
    if (*level > 0 && c_.promotion == "on_hit" && lru_.Promote(key, &moves)) {
      // The top tier's demotions first, then this chunk's move up.
      reserve_moves();
      d.promote.push_back({transfers_.Reserve(key), key, bytes, 0});
      d.promote.push_back({transfers_.Reserve(key), key, bytes, *level});
    }
  }
  for (; c < chunks_.size(); ++c) {
    const std::uint64_t key = chunks_[c].key;
    const std::uint64_t bytes = EntryBytes(model_, chunks_[c].tokens, c_.tensor_parallel);
    const int level = lru_.Insert(key, bytes, &moves);
    reserve_moves();
    d.writes.push_back({transfers_.Reserve(key), key, bytes, level});
    d.miss_tokens += chunks_[c].tokens;
    std::lock_guard<std::mutex> lock(figures_mu_);
    origin_[key] = Origin{true, r.conversation, HitSource::kUnknown};
  }
  return d;
}

void ChunkedRun::Move(const ChunkLru::Move& m, TierStore::WorkerBuffer& wb) {
  const std::string key = KeyName(m.key);
  const Level& from = L(m.from);
  if (m.kind == ChunkLru::Move::Kind::kDelete) {
    Record(from.store->Drop(from.kind, key, wb));
    std::lock_guard<std::mutex> lock(figures_mu_);
    ++f_.deletions;
    return;
  }
  const Level& to = L(m.from + 1);
  OpTiming read, write;
  if (from.kind == Tier::kStorage) {  // storage to the object tier: a copy, then a delete
    Status st = from.store->CopyTo(*to.store, key, wb, &read, &write);
    if (st.ok()) st = from.store->Delete(key, wb);
    Record(st);
  } else {
    Record(from.store->Demote(from.kind, to.kind, key, m.bytes, wb, &read, &write,
                              to.store == from.store ? nullptr : to.store));
  }
  Timed(m.from, false, m.bytes, read);
  Timed(m.from + 1, true, m.bytes, write);
  std::lock_guard<std::mutex> lock(figures_mu_);
  ++f_.demotions;
}

void ChunkedRun::Execute(Decided d) {
  // The moves start at once; the hits are read (the request waits).
  for (std::size_t i = 0; i < d.moves.size(); ++i) {
    const ChunkLru::Move m = d.move_kinds[i];
    transfers_.Submit(d.moves[i].op, [this, m](TierStore::WorkerBuffer& wb) { Move(m, wb); });
  }
  std::mutex mu;
  std::condition_variable cv;
  std::size_t pending = d.reads.size();
  const std::uint64_t conversation = d.conversation;
  // The pool is woken for every read but the first, which this thread
  // runs itself while a slot is free (and any other still queued then).
  for (const Decided::Transfer& t : d.reads) {
    const bool wake = &t != &d.reads.front();
    transfers_.Submit(
        t.op,
        [&, t](TierStore::WorkerBuffer& wb) {
          OpTiming timing;
          ChunkStamp writer;
          const Level& l = L(t.level);
          const bool stamped = l.kind == Tier::kStorage && l.shared && !c_.trace_only;
          Record(l.store->Read(l.kind, KeyName(t.key), t.bytes, wb, &timing,
                               stamped ? &writer : nullptr));
          Timed(t.level, false, t.bytes, timing);
          CountSource(t.key, conversation, stamped ? &writer : nullptr);
          {
            std::lock_guard<std::mutex> lock(figures_mu_);
            ++f_.hits[l.slot];
          }
          std::lock_guard<std::mutex> lock(mu);
          if (--pending == 0) cv.notify_all();
        },
        &pending, wake);
  }
  if (!d.reads.empty()) transfers_.RunOwn(&pending);
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return pending == 0; });
  }
  for (std::size_t i = 0; i < d.promote.size(); i += 2) {
    const Decided::Transfer up = d.promote[i];
    transfers_.Submit(up.op, [this, up](TierStore::WorkerBuffer& wb) {
      OpTiming timing;
      const Level& top = L(0);
      Record(top.store->WriteNew(top.kind, KeyName(up.key), up.bytes, wb, &timing));
      Timed(0, true, up.bytes, timing);
      std::lock_guard<std::mutex> lock(figures_mu_);
      ++f_.promotions;
    });
    const Decided::Transfer from = d.promote[i + 1];
    transfers_.Submit(from.op, [this, from](TierStore::WorkerBuffer& wb) {
      // A shared store keeps its copy: other ranks may read it.
      const Level& l = L(from.level);
      if (!l.shared) Record(l.store->Drop(l.kind, KeyName(from.key), wb));
    });
  }
  // Prefill of the rest (modelled compute), then the time to first token.
  const double prefill = static_cast<double>(d.miss_tokens) / c_.prefill_tokens_per_second;
  if (prefill > 0) std::this_thread::sleep_for(std::chrono::duration<double>(prefill));
  const double ttft = std::max(0.0, Now() - d.due);
  for (const Decided::Transfer& w : d.writes) {
    transfers_.Submit(w.op, [this, w](TierStore::WorkerBuffer& wb) {
      OpTiming timing;
      const Level& l = L(w.level);
      Record(l.store->WriteNew(l.kind, KeyName(w.key), w.bytes, wb, &timing));
      Timed(w.level, true, w.bytes, timing);
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
  // Every worker buffer made before the clock starts, as fio makes its
  // jobs' buffers: no transfer pays for the first touch of its pages.
  IOMIMIC_RETURN_IF_ERROR(transfers_.Prepare([this](TierStore::WorkerBuffer& wb) {
    for (const Level& l : levels_) {
      if (l.slot == 2) {
        return l.store->PrepareBuffer(wb, EntryBytes(model_, c_.chunk_tokens, c_.tensor_parallel));
      }
    }
    return Status::OK();
  }));
  // max_inflight_requests request threads; an idle one decides the next
  // request (one decision at a time, in trace order, at its trace time),
  // then serves it. A request due when every thread is busy waits for one
  // (its TTFT counts the wait).
  std::mutex decide;
  std::size_t next = 0;
  const auto workers =
      static_cast<std::size_t>(std::max<std::uint64_t>(1, c_.max_inflight_requests));
  std::vector<std::thread> threads;
  f_.start = metrics::Stamp::Now();
  for (std::size_t w = 0; w < workers; ++w) {
    threads.emplace_back([&] {
      for (;;) {
        Decided d;
        {
          std::lock_guard<std::mutex> lock(decide);
          if (next >= mine.size() || session::InterruptSignal() != 0 ||
              (c_.duration > 0 && Now() >= c_.duration)) {
            next = mine.size();
            return;
          }
          {
            std::lock_guard<std::mutex> failed(failed_mu_);
            if (!failed_.ok()) {
              next = mine.size();
              return;
            }
          }
          const std::size_t index = mine[next++];
          // At its trace time, its TTFT counts from then (a wait for a free
          // thread included); as fast as possible, from when one is free.
          double due = Now();
          if (c_.trace_speedup > 0) {
            due = trace_.requests[index].arrival_seconds / c_.trace_speedup;
            // In slices, so that an interrupt or the run's end is not
            // held up by a long gap in the trace.
            while (due > Now() && session::InterruptSignal() == 0 &&
                   !(c_.duration > 0 && Now() >= c_.duration)) {
              std::this_thread::sleep_for(
                  std::chrono::duration<double>(std::min(0.05, due - Now())));
            }
            if (due > Now()) {  // interrupted, or past the run's end
              next = mine.size();
              return;
            }
          }
          d = Decide(index, std::min(due, Now()));
        }
        Execute(std::move(d));
      }
    });
  }
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

// Milliseconds per transfer: `seconds` summed over the transfers `ops` holds.
double MeanMs(double seconds, const metrics::LatencyHistogram& ops) {
  return ops.count() > 0 ? seconds * 1e3 / static_cast<double>(ops.count()) : 0.0;
}

}  // namespace

Result<ChunkedFigures> RunChunked(session::Session& session, const plugin::Registry* registry) {
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
  cluster::Cluster& cluster = session.cluster();
  const int rank = cluster.rank();
  // The run's id, the same on every rank: rank 0's clock.
  const auto clock =
      static_cast<std::uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
  ChunkStamp me;
  me.run = cluster.SumU64s({rank == 0 ? clock | 1 : 0})[0];
  me.rank = static_cast<std::uint32_t>(rank);
  me.host = static_cast<std::uint32_t>(cluster.host_index());

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
  so.content = config::ContentOf(session.config().iomimic);
  so.model = model;
  so.tensor_parallel = c.tensor_parallel;
  so.trace_only = c.trace_only;
  so.parts = c.chunk_objects == "layer" ? std::max<std::uint64_t>(1, model->num_layers) : 1;
  // A shared store's objects say who wrote them (hits by source, torn
  // objects refused); a rank's own store knows that from its own lists.
  so.stamp = c.shared_store;
  // LMCache's and llm-d's file back ends: open, write, close; open, read,
  // close (a shared store's lookup stats the object when it decides).
  so.preallocate = false;
  so.stat_before_read = false;
  so.writer = me;
  so.gpu_copy_bytes_per_second = c.gpu_copy_gbps * 1e9;
  std::string device_path;
  AcceleratorTier accelerator;
  if (c.gpu_mem_gb > 0) {
    IOMIMIC_ASSIGN_OR_RETURN(accelerator, OpenAcceleratorTier(c, registry, rank, cluster.size()));
    so.accelerator = accelerator.stack.top();
    device_path = accelerator.path;
  }
  TierStore store(session.storage(), so);
  IOMIMIC_RETURN_IF_ERROR(session.storage().CreateDirectories(so.folder));

  // The object tier: another storage plugin below storage.
  plugin::StorageStack object_stack;
  std::unique_ptr<TierStore> object_store;
  if (!c.object_tier.empty()) {
    if (registry == nullptr) return Status::Internal("kv_cache.object_tier: no plugin registry");
    IOMIMIC_ASSIGN_OR_RETURN(
        object_stack, plugin::StorageStack::Open(*registry, c.object_tier, c.object_tier_options,
                                                 rank, cluster.size()));
    StoreOptions oo = so;
    oo.accelerator = nullptr;
    oo.publish_tag.clear();
    oo.folder = (c.object_tier_folder.empty()
                     ? session::ResolveDataPath(session.config(), c.cache_folder) + "/object_tier"
                     : c.object_tier_folder) +
                "/rank_" + std::to_string(rank);
    object_store = std::make_unique<TierStore>(*object_stack.top(), oo);
    Status made = object_stack.top()->CreateDirectories(oo.folder);
    if (!made.ok()) return made.WithContext("kv_cache.object_tier " + c.object_tier);
  }

  std::vector<Level> levels;
  if (c.gpu_mem_gb > 0) levels.push_back({0, Tier::kAccelerator, &store, false});
  if (c.cpu_mem_gb > 0) levels.push_back({1, Tier::kHost, &store, false});
  levels.push_back({2, Tier::kStorage, &store, c.shared_store});
  if (object_store != nullptr) levels.push_back({3, Tier::kStorage, object_store.get(), false});

  ChunkedRun run(session, trace, *model, std::move(levels), me);
  run.figures().device_path = device_path;
  Result<ChunkedFigures> figures = run.Run();
  if (c.shared_store) {
    // Every rank done reading before any deletes what it wrote.
    IOMIMIC_RETURN_IF_ERROR(cluster.AgreeOnStatus(figures.status()));
  }
  Status removed = store.RemoveAll(c.keep_entries);
  if (object_store != nullptr && removed.ok()) removed = object_store->RemoveAll(c.keep_entries);
  if (figures.ok() && !removed.ok()) return removed;
  return figures;
}

void ChunkedResults::AddEvents(std::chrono::system_clock::time_point origin, int rank,
                               std::vector<output::EventEntry>* events) const {
  std::uint64_t bytes = 0;
  for (int t = 2; t < kMaxChunkTiers; ++t) bytes += local_.read_bytes[t] + local_.write_bytes[t];
  events->push_back({rank, "kv_chunked", 0, 0, output::SinceOrigin(origin, local_.start),
                     output::SinceOrigin(origin, local_.end), bytes});
}

std::vector<std::pair<std::string, metrics::LatencyHistogram>> ChunkedResults::Histograms() const {
  std::vector<std::pair<std::string, metrics::LatencyHistogram>> out = {
      {"kv_chunk_ttft", local_.ttft_ns}};
  for (const char* op : {"read", "write"}) {
    for (int t = 0; t < kMaxChunkTiers; ++t) {
      // The cpu and storage tiers always (the names the first runs had).
      if (!local_.present[t] && t != 1 && t != 2) continue;
      const bool read = op[0] == 'r';
      out.emplace_back(std::string("kv_chunk_") + op + "_" + ChunkTierName(t),
                       read ? local_.chunk_read_ns[t] : local_.chunk_write_ns[t]);
    }
  }
  return out;
}

Status ChunkedResults::Collect(session::Session& session, output::RunResults& run) {
  (void)run;
  cluster::Cluster& cluster = session.cluster();
  const ChunkedFigures& l = local_;
  std::vector<std::uint64_t> values = {l.requests,  l.input_tokens, l.hit_tokens,
                                       l.chunks,    l.written,      l.promotions,
                                       l.demotions, l.deletions,    l.shared_hits};
  for (int t = 0; t < kMaxChunkTiers; ++t) {
    values.insert(values.end(), {l.hits[t], l.read_bytes[t], l.write_bytes[t]});
  }
  for (int i = 0; i < kHitSources; ++i) values.push_back(l.hits_by_source[i]);
  auto ns = [](double seconds) { return static_cast<std::uint64_t>(seconds * 1e9); };
  for (int t = 0; t < kMaxChunkTiers; ++t) {
    values.insert(values.end(), {ns(l.read_device_seconds[t]), ns(l.read_host_seconds[t]),
                                 ns(l.write_device_seconds[t]), ns(l.write_host_seconds[t])});
  }
  const std::vector<std::uint64_t> s = cluster.SumU64s(values);
  std::size_t i = 0;
  for (std::uint64_t* out : {&merged_.requests, &merged_.input_tokens, &merged_.hit_tokens,
                             &merged_.chunks, &merged_.written, &merged_.promotions,
                             &merged_.demotions, &merged_.deletions, &merged_.shared_hits}) {
    *out = s[i++];
  }
  for (int t = 0; t < kMaxChunkTiers; ++t) {
    merged_.hits[t] = s[i++], merged_.read_bytes[t] = s[i++], merged_.write_bytes[t] = s[i++];
  }
  for (int k = 0; k < kHitSources; ++k) merged_.hits_by_source[k] = s[i++];
  for (int t = 0; t < kMaxChunkTiers; ++t) {
    for (double* out : {&merged_.read_device_seconds[t], &merged_.read_host_seconds[t],
                        &merged_.write_device_seconds[t], &merged_.write_host_seconds[t]}) {
      *out = static_cast<double>(s[i++]) / 1e9;
    }
  }
  const std::vector<double> maxima =
      cluster.MaxDoubles({l.elapsed_seconds, static_cast<double>(l.max_queue_depth)});
  merged_.elapsed_seconds = maxima[0];
  merged_.max_queue_depth = static_cast<std::uint64_t>(maxima[1]);
  merged_.recompute_seconds =
      cluster.SumU64s({static_cast<std::uint64_t>(l.recompute_seconds * 1e9)})[0] / 1e9;
  std::vector<const metrics::LatencyHistogram*> mine = {&l.ttft_ns};
  for (int t = 0; t < kMaxChunkTiers; ++t) {
    mine.push_back(&l.chunk_read_ns[t]);
    mine.push_back(&l.chunk_write_ns[t]);
  }
  std::vector<metrics::LatencyHistogram> h = metrics::MergeOverRanks(mine, cluster);
  merged_.ttft_ns = h[0];
  for (int t = 0; t < kMaxChunkTiers; ++t) {
    merged_.chunk_read_ns[t] = h[1 + 2 * t];
    merged_.chunk_write_ns[t] = h[2 + 2 * t];
  }
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
  o["chunk_objects"] = c.chunk_objects;
  o["promotion"] = c.promotion;
  o["requests"] = f.requests;
  o["input_tokens"] = f.input_tokens;
  o["hit_tokens"] = f.hit_tokens;
  o["token_hit_rate"] = metrics::JsonNumber<json>(
      f.input_tokens > 0 ? static_cast<double>(f.hit_tokens) / f.input_tokens : 0.0);
  o["chunks"] = f.chunks;
  // The cpu and storage tiers always (the names the first runs had), the
  // gpu and object tiers where the run had them.
  auto shown = [&](int t) { return f.present[t] || t == 1 || t == 2; };
  json hits;
  for (int t = 0; t < kMaxChunkTiers; ++t) {
    if (shown(t)) hits[ChunkTierName(t)] = f.hits[t];
  }
  o["chunk_hits"] = std::move(hits);
  json sources;
  for (int k = 0; k < kHitSources; ++k) sources[HitSourceName(k)] = f.hits_by_source[k];
  o["hits_by_source"] = std::move(sources);
  o["shared_store"] = c.shared_store;
  o["chunk_hits_shared"] = f.shared_hits;
  o["chunks_written"] = f.written;
  o["promotions"] = f.promotions;
  o["demotions"] = f.demotions;
  o["deletions"] = f.deletions;
  if (f.present[0]) o["gpu_tier"] = local_.device_path;
  json tiers;
  for (int t = 0; t < kMaxChunkTiers; ++t) {
    if (!shown(t)) continue;
    tiers[ChunkTierName(t)] = {
        {"read_bytes", f.read_bytes[t]},
        {"write_bytes", f.write_bytes[t]},
        {"read_GB_per_second", metrics::JsonNumber<json>(Gbps(f.read_bytes[t], f.elapsed_seconds))},
        {"write_GB_per_second",
         metrics::JsonNumber<json>(Gbps(f.write_bytes[t], f.elapsed_seconds))},
        {"chunk_read_ms",
         metrics::PercentilesJson<json>(f.chunk_read_ns[t], metrics::kReferenceQuantiles)},
        {"chunk_write_ms",
         metrics::PercentilesJson<json>(f.chunk_write_ns[t], metrics::kReferenceQuantiles)},
        {"chunk_read_device_ms_mean",
         metrics::JsonNumber<json>(MeanMs(f.read_device_seconds[t], f.chunk_read_ns[t]))},
        {"chunk_read_host_ms_mean",
         metrics::JsonNumber<json>(MeanMs(f.read_host_seconds[t], f.chunk_read_ns[t]))},
        {"chunk_write_device_ms_mean",
         metrics::JsonNumber<json>(MeanMs(f.write_device_seconds[t], f.chunk_write_ns[t]))},
        {"chunk_write_host_ms_mean",
         metrics::JsonNumber<json>(MeanMs(f.write_host_seconds[t], f.chunk_write_ns[t]))}};
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
      static_cast<unsigned long long>(f.hits[1]), static_cast<unsigned long long>(f.hits[2]),
      static_cast<unsigned long long>(f.written));
  out += line;
  if (f.present[0] || f.present[3]) {
    std::snprintf(line, sizeof line, "  kv chunked: gpu %llu, object %llu chunk hits\n",
                  static_cast<unsigned long long>(f.hits[0]),
                  static_cast<unsigned long long>(f.hits[3]));
    out += line;
  }
  std::snprintf(line, sizeof line,
                "  kv chunked: hits by source: own %llu, other user %llu, other rank %llu, other "
                "host %llu, earlier run %llu\n",
                static_cast<unsigned long long>(f.hits_by_source[0]),
                static_cast<unsigned long long>(f.hits_by_source[1]),
                static_cast<unsigned long long>(f.hits_by_source[2]),
                static_cast<unsigned long long>(f.hits_by_source[3]),
                static_cast<unsigned long long>(f.hits_by_source[4]));
  out += line;
  std::snprintf(line, sizeof line,
                "  kv chunked: TTFT p50 %.1f ms, p99 %.1f ms; storage read %.2f GB/s, write "
                "%.2f GB/s; queue depth up to %llu\n",
                f.ttft_ns.Percentile(0.5) / 1e6, f.ttft_ns.Percentile(0.99) / 1e6,
                Gbps(f.read_bytes[2], f.elapsed_seconds), Gbps(f.write_bytes[2], f.elapsed_seconds),
                static_cast<unsigned long long>(f.max_queue_depth));
  out += line;
  return out;
}

Result<std::shared_ptr<output::WorkflowResults>> RunChunkedWorkflow(
    session::Session& session, const output::WorkflowContext& context) {
  return output::ResultsOf<ChunkedResults>(RunChunked(session, context.registry));
}

const output::FigureList& ChunkedFigureList() {
  static const output::FigureList figures = {
      {"kv chunk token hit rate", {"kv_cache_chunked", "token_hit_rate"}, true},
      {"kv chunk TTFT p50 ms", {"kv_cache_chunked", "ttft_ms", "p50"}, false},
      {"kv chunk TTFT p99 ms", {"kv_cache_chunked", "ttft_ms", "p99"}, false},
      {"kv chunk TTFT saved", {"kv_cache_chunked", "ttft_saved"}, true},
      {"kv chunk TTFT p99.9 ms", {"kv_cache_chunked", "ttft_ms", "p999"}, false},
      {"kv chunk storage read GB/s",
       {"kv_cache_chunked", "tiers", "storage", "read_GB_per_second"},
       true},
      {"kv chunk storage write GB/s",
       {"kv_cache_chunked", "tiers", "storage", "write_GB_per_second"},
       true},
      {"kv chunk object read GB/s",
       {"kv_cache_chunked", "tiers", "object", "read_GB_per_second"},
       true,
       {"kv_cache_chunked", "tiers", "object", "read_bytes"}},
      {"kv chunk hits from other hosts",
       {"kv_cache_chunked", "hits_by_source", "other_host"},
       true,
       {"kv_cache_chunked", "hits_by_source", "other_host"}},
      {"kv chunk queue depth", {"kv_cache_chunked", "max_queue_depth"}, true},
  };
  return figures;
}

}  // namespace iomimic::kvcache
