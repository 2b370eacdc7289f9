#include "kvcache/engine.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <semaphore>
#include <thread>
#include <vector>

#include "config/content.h"
#include "config/dlio_compat.h"
#include "kvcache/accelerator_tier.h"
#include "kvcache/models.h"
#include "kvcache/request_queue.h"
#include "kvcache/tier_store.h"
#include "session/interrupt.h"

namespace iomimic::kvcache {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr std::size_t kMaxWorkers = 500;  // the reference's min(num_users, 500)
constexpr std::uint64_t kPrefillOnlyTokens = 10000;

std::uint64_t Ns(double seconds) {
  return seconds <= 0 ? 0 : static_cast<std::uint64_t>(seconds * 1e9);
}

double WallNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

double SecondsPerToken(const std::string& mode) {
  if (mode == "fast") return 0.002;
  if (mode == "realistic") return 0.030;
  return 0;
}

// The user templates of the manifest (kv_cache.users.*).
UserTemplates Templates(const config::KvCacheConfig& c) {
  auto one = [](std::uint64_t c0, std::uint64_t c1, std::uint64_t g0, std::uint64_t g1, double t0,
                double t1) {
    return UserTemplate{static_cast<std::int64_t>(c0),
                        static_cast<std::int64_t>(c1),
                        static_cast<std::int64_t>(g0),
                        static_cast<std::int64_t>(g1),
                        t0,
                        t1};
  };
  UserTemplates t;
  t[static_cast<int>(UserType::kChatbot)] =
      one(c.chatbot_context_min, c.chatbot_context_max, c.chatbot_generation_min,
          c.chatbot_generation_max, c.chatbot_think_time_min, c.chatbot_think_time_max);
  t[static_cast<int>(UserType::kCoding)] =
      one(c.coding_context_min, c.coding_context_max, c.coding_generation_min,
          c.coding_generation_max, c.coding_think_time_min, c.coding_think_time_max);
  t[static_cast<int>(UserType::kDocument)] =
      one(c.document_context_min, c.document_context_max, c.document_generation_min,
          c.document_generation_max, c.document_think_time_min, c.document_think_time_max);
  return t;
}

// The smallest and largest context a request can have, for the tier
// capacity checks: a request draws from [max(1, context / 4), context] and
// a system prompt takes up to 9 tokens off.
std::pair<std::uint64_t, std::uint64_t> ContextBounds(const config::KvCacheConfig& c) {
  const std::uint64_t least =
      std::min({c.chatbot_context_min, c.coding_context_min, c.document_context_min}) / 4;
  return {least > 9 ? least - 9 : 1,
          std::max({c.chatbot_context_max, c.coding_context_max, c.document_context_max})};
}

struct Request {
  std::size_t user = 0;
  QosLevel qos = QosLevel::kBatch;
  int system_prompt = -1;  // the prefix check's hit, drawn with the request
  std::string key;
  std::uint64_t context = 0;
  std::uint64_t generate = 0;
  bool decode = true;              // PREFILL_DECODE (else PREFILL only)
  std::uint64_t conversation = 0;  // multi-turn: the conversation's id (0 = none)
  std::uint64_t turn = 0;          // and this request's turn (earlier: 1 .. turn - 1)
  double submitted = 0;
};

// The reference's kinds of cache hit (docs/kvcache-reference.md, "The results
// JSON"): a request's decode reads count as system-prompt hits when it drew
// a system prompt, else as user hits; its earlier turns' reads as multi-turn.
enum class HitKind { kUser, kSystemPrompt, kMultiTurn };

// The queue's order: interactive first (QosLevel's lowest value), then by
// arrival.
struct QosClass {
  int operator()(const Request& r) const { return static_cast<int>(r.qos); }
};

class Engine {
 public:
  Engine(session::Session& session, const KvRunOptions& options)
      : session_(session), c_(session.config().kv_cache), options_(options) {}

  Result<KvFigures> Run();

 private:
  Status Prepare();
  Status OpenAccelerator(StoreOptions* so);
  std::array<std::uint64_t, kTierCount> Capacities() const;
  void UserLoop(std::size_t index);
  bool NextConversationTurn(std::size_t index, bool end, Request* r);
  // The entry name of a conversation's turn: conv_<user>_<conversation>_turn_<turn>.
  void TurnKey(std::size_t user, std::uint64_t conversation, std::uint64_t turn,
               std::string* key) const;
  void Enqueue(Request r);
  void WorkerLoop(std::size_t index);
  Status Serve(Request& r, TierStore::WorkerBuffer& wb);
  Result<double> Allocate(const std::string& key, std::uint64_t tokens,
                          TierStore::WorkerBuffer& wb);
  Status Perform(const TierOp& op, TierStore::WorkerBuffer& wb, double* write_seconds);
  Result<std::optional<double>> Access(const std::string& key, HitKind kind,
                                       TierStore::WorkerBuffer& wb);
  void RecordOp(OpEvent::Kind kind, Tier tier, const std::string& key, std::uint64_t bytes,
                const char* phase, const OpTiming& t, bool evict);
  void Fail(const Status& status);
  void Stop();
  void Finish(double seconds);

  session::Session& session_;
  const config::KvCacheConfig& c_;
  const KvRunOptions& options_;
  const ModelSpec* model_ = nullptr;
  std::unique_ptr<TierCache> cache_;
  // The device-memory storage plugin holding the accelerator tier's entries
  // (kv_cache.accelerator); outlives store_, whose entries are its buffers.
  plugin::StorageStack accelerator_;
  std::unique_ptr<TierStore> store_;
  std::unique_ptr<OpSink> own_sink_;
  OpSink* sink_ = nullptr;
  std::optional<std::counting_semaphore<>> allocs_;
  std::optional<Population> population_;
  std::unique_ptr<ReferencePlan> plan_;
  std::vector<UserProfile> users_;
  std::uint64_t seed_ = 0;

  struct Conversation {
    std::uint64_t id = 0;  // 0 = none
    std::uint64_t turn = 0;
  };
  std::vector<Conversation> conversations_;  // one per user, its thread's own
  std::atomic<std::uint64_t> conversation_ids_{0};

  // Stopped by Stop; the users' think times and the run's wait for its end
  // sleep on it too.
  RequestQueue<Request, QosClass> queue_;
  std::mutex admission_mutex_;
  double next_admission_ = 0;  // request_rate pacing

  std::mutex stats_mutex_;
  KvFigures figures_;
  Status failure_;
  // Set when the benchmark ends: transfers in flight stop (TierStore) and
  // requests that finish later are not counted, as the reference computes
  // its figures when its duration ends.
  std::atomic<bool> ended_{false};
};

void Engine::Fail(const Status& status) {
  {
    std::lock_guard<std::mutex> lock(stats_mutex_);
    if (failure_.ok()) failure_ = status;
  }
  Stop();
}

void Engine::Stop() {
  ended_.store(true);
  queue_.Stop();
}

std::array<std::uint64_t, kTierCount> Engine::Capacities() const {
  auto bytes = [](double gib) { return static_cast<std::uint64_t>(gib * kGiB); };
  std::array<std::uint64_t, kTierCount> capacity = {
      bytes(c_.gpu_mem_gb * static_cast<double>(c_.num_gpus)), bytes(c_.cpu_mem_gb),
      bytes(c_.storage_capacity_gb)};
  if (capacity[2] == 0) {
    capacity[2] = kUnlimited;
    // Trace-only: unlimited, as the reference's trace mode, whose no-I/O
    // back end has no folder to measure (docs/kvcache.md, "Trace-only runs").
    if (c_.trace_only) return capacity;
    // 95 % of the free space where the folder is (or will be), as the
    // reference's statvfs of its cache folder.
    std::string folder = store_->folder();
    struct statvfs fs {};
    bool found = false;
    while (!session_.storage().capabilities().objects && folder.find("://") == std::string::npos &&
           !found) {
      found = ::statvfs(folder.empty() ? "." : folder.c_str(), &fs) == 0;
      if (found || folder.empty()) break;
      const std::size_t slash = folder.rfind('/');
      folder = slash == std::string::npos ? "" : slash == 0 ? "/" : folder.substr(0, slash);
    }
    if (found) {
      capacity[2] = static_cast<std::uint64_t>(static_cast<double>(fs.f_bavail) *
                                               static_cast<double>(fs.f_frsize) * 0.95);
    }
  }
  return capacity;
}

Status Engine::Prepare() {
  IOMIMIC_ASSIGN_OR_RETURN(model_, FindModel(c_.model));
  const int rank = session_.cluster().rank();
  seed_ = c_.seed + static_cast<std::uint64_t>(rank);
  StoreOptions so;
  so.folder = session::ResolveDataPath(session_.config(), c_.cache_folder) + "/rank_" +
              std::to_string(rank);
  so.transfer_size = c_.transfer_size;
  so.gpu_copy_bytes_per_second = c_.gpu_copy_gbps * 1e9;
  so.content_seed = seed_;
  so.content = config::ContentOf(session_.config().iomimic);
  so.model = model_;
  so.tensor_parallel = c_.tensor_parallel;
  so.cancel = &ended_;
  so.trace_only = c_.trace_only;
  if (c_.gpu_mem_gb > 0) IOMIMIC_RETURN_IF_ERROR(OpenAccelerator(&so));
  store_ = std::make_unique<TierStore>(session_.storage(), so);
  CachePolicy policy;
  policy.target_ratio = c_.eviction_target_ratio;
  policy.large_entry_ratio = c_.eviction_large_entry_ratio;
  policy.max_depth = static_cast<int>(c_.eviction_max_depth);
  policy.max_evictions = c_.eviction_max_per_call;
  policy.min_evictions = c_.eviction_min_per_call;
  cache_ = std::make_unique<TierCache>(Capacities(), policy);
  const auto [smallest, largest] = ContextBounds(c_);
  IOMIMIC_RETURN_IF_ERROR(
      cache_->CheckEntrySizes(EntryBytes(*model_, smallest, c_.tensor_parallel),
                              EntryBytes(*model_, largest, c_.tensor_parallel)));
  if (!c_.trace_only) IOMIMIC_RETURN_IF_ERROR(session_.storage().CreateDirectories(so.folder));
  if (c_.max_concurrent_allocs > 0) {
    allocs_.emplace(static_cast<std::ptrdiff_t>(c_.max_concurrent_allocs));
  }
  sink_ = options_.sink;
  if (sink_ == nullptr && !options_.trace_path.empty()) {
    IOMIMIC_ASSIGN_OR_RETURN(own_sink_, OpenCsvTrace(options_.trace_path));
    sink_ = own_sink_.get();
  }
  QosDistribution qos;
  qos.interactive_probability = c_.qos_interactive_probability;
  qos.responsive_threshold = c_.qos_responsive_threshold;
  population_.emplace(
      MakeUsers(static_cast<std::int64_t>(seed_), c_.num_users, Templates(c_), qos));
  users_ = population_->users;
  figures_.samples.recorded = !c_.reference_results.empty();
  {
    RequestDrawOptions draw;
    draw.multi_turn = c_.multi_turn;
    draw.prefix_caching = c_.prefix_caching;
    draw.system_prompt_probability = c_.system_prompt_probability;
    plan_ = std::make_unique<ReferencePlan>(*population_, draw);
  }
  conversations_.resize(users_.size());
  return Status::OK();
}

Status Engine::OpenAccelerator(StoreOptions* so) {
  IOMIMIC_ASSIGN_OR_RETURN(AcceleratorTier tier,
                           OpenAcceleratorTier(c_, options_.registry, session_.cluster().rank(),
                                               session_.cluster().size()));
  figures_.accelerator_path = std::move(tier.path);
  figures_.accelerator_reason = std::move(tier.reason);
  accelerator_ = std::move(tier.stack);
  so->accelerator = accelerator_.top();
  return Status::OK();
}

// The reference's multi-turn bookkeeping: a conversation goes on with
// probability 0.8 for at most kv_cache.max_turns turns; each turn's entry is
// its own key.
bool Engine::NextConversationTurn(std::size_t index, bool end, Request* r) {
  Conversation& conv = conversations_[index];
  if (!c_.multi_turn) return false;
  if (conv.id != 0 && (end || conv.turn >= c_.max_turns)) {
    conv = Conversation{};
  }
  if (conv.id == 0) conv.id = ++conversation_ids_;
  ++conv.turn;
  r->conversation = conv.id;
  r->turn = conv.turn;
  TurnKey(index, conv.id, conv.turn, &r->key);
  return true;
}

void Engine::TurnKey(std::size_t user, std::uint64_t conversation, std::uint64_t turn,
                     std::string* key) const {
  char text[96];
  std::snprintf(text, sizeof text, "conv_%s_%llu_turn_%llu", users_[user].user_id.c_str(),
                static_cast<unsigned long long>(conversation),
                static_cast<unsigned long long>(turn));
  key->assign(text);  // reuses the string's storage when it fits
}

void Engine::Enqueue(Request r) {
  if (c_.request_rate > 0) {
    // This request's admission slot, 1 / request_rate after the previous one's.
    double wait = 0;
    {
      std::lock_guard<std::mutex> lock(admission_mutex_);
      const double now = Now();
      next_admission_ = std::max(next_admission_, now) + 1.0 / c_.request_rate;
      wait = next_admission_ - 1.0 / c_.request_rate - now;
    }
    if (!queue_.Sleep(wait)) return;
  }
  r.submitted = Now();
  queue_.Push(std::move(r));
}

void Engine::UserLoop(std::size_t index) {
  const UserProfile& user = users_[index];
  std::uint64_t drawn = 0;  // this user's requests so far
  for (;;) {
    // The reference's requests of this user (kvcache/users.h, ReferencePlan).
    const RequestDraw d = plan_->Next(index);
    ++drawn;
    if (!queue_.Sleep(d.think_seconds)) return;
    Request r;
    r.user = index;
    r.qos = user.qos;
    r.system_prompt = d.system_prompt;
    r.context = static_cast<std::uint64_t>(d.context_tokens);
    r.generate = static_cast<std::uint64_t>(d.generation_tokens);
    if (!NextConversationTurn(index, d.end_conversation, &r)) {
      char key[64];
      std::snprintf(key, sizeof key, "%s_req_%06llu", user.user_id.c_str(),
                    static_cast<unsigned long long>(drawn - 1));
      r.key = key;
    }
    r.decode = r.context < kPrefillOnlyTokens;
    Enqueue(std::move(r));
  }
}

void Engine::RecordOp(OpEvent::Kind kind, Tier tier, const std::string& key, std::uint64_t bytes,
                      const char* phase, const OpTiming& t, bool evict) {
  TierFigures& f = figures_.tier[static_cast<int>(tier)];
  if (kind == OpEvent::Kind::kRead) {
    f.read.Record(Ns(t.total));
    if (!evict) f.request_read.Record(Ns(t.total));
    if (tier == Tier::kStorage) {
      f.read_device.Record(Ns(t.device));
      f.read_host.Record(Ns(t.host));
      if (!evict) {
        figures_.request_read_device.Record(Ns(t.device));
        figures_.request_read_host.Record(Ns(t.host));
      }
    }
  } else if (kind == OpEvent::Kind::kWrite) {
    f.write.Record(Ns(t.total));
    if (!evict) f.request_write.Record(Ns(t.total));
    if (tier == Tier::kStorage) {
      f.write_device.Record(Ns(t.device));
      f.write_host.Record(Ns(t.host));
      if (!evict) {
        figures_.request_write_device.Record(Ns(t.device));
        figures_.request_write_host.Record(Ns(t.host));
      }
    }
  }
  const std::uint64_t header = tier == Tier::kStorage ? store_->header_bytes(bytes) : 0;
  {
    std::lock_guard<std::mutex> lock(stats_mutex_);
    switch (kind) {
      case OpEvent::Kind::kRead:
        (evict ? f.evict_reads : f.reads) += 1;
        (evict ? f.evict_read_bytes : f.read_bytes) += bytes;
        figures_.storage_header_bytes_read += header;
        break;
      case OpEvent::Kind::kWrite:
        (evict ? f.evict_writes : f.writes) += 1;
        (evict ? f.evict_write_bytes : f.write_bytes) += bytes;
        figures_.storage_header_bytes_written += header;
        break;
      case OpEvent::Kind::kDelete:
        f.deletes += 1;
        f.delete_bytes += bytes;
        break;
    }
  }
  if (sink_ != nullptr) {
    OpEvent e;
    e.kind = kind;
    e.bytes = bytes;
    e.tier = tier;
    e.key = key;
    e.phase = phase;
    e.unix_seconds = WallNow();  // when it completed, as the reference logs it
    sink_->Record(e);
  }
}

Status Engine::Perform(const TierOp& op, TierStore::WorkerBuffer& wb, double* write_seconds) {
  OpTiming read, write;
  switch (op.kind) {
    case TierOp::Kind::kDelete:
      IOMIMIC_RETURN_IF_ERROR(store_->Delete(op.key, wb));
      RecordOp(OpEvent::Kind::kDelete, op.from, op.key, op.bytes, "Evict", read, true);
      {
        std::lock_guard<std::mutex> lock(stats_mutex_);
        ++figures_.evictions;  // the reference counts deletions as evictions too
      }
      return Status::OK();
    case TierOp::Kind::kDemote: {
      IOMIMIC_RETURN_IF_ERROR(store_->Demote(op.from, op.to, op.key, op.bytes, wb, &read, &write));
      RecordOp(OpEvent::Kind::kRead, op.from, op.key, op.bytes, "Evict", read, true);
      RecordOp(OpEvent::Kind::kWrite, op.to, op.key, op.bytes, "Evict", write, true);
      std::lock_guard<std::mutex> lock(stats_mutex_);
      ++figures_.evictions;
      if (op.to == Tier::kHost) ++figures_.offloads_cpu;
      if (op.to == Tier::kStorage) {
        ++figures_.offloads_storage;
        const std::uint64_t per_token = model_->bytes_per_token() / c_.tensor_parallel;
        if (per_token > 0) figures_.storage_tokens_processed += op.bytes / per_token;
      }
      return Status::OK();
    }
    case TierOp::Kind::kWrite:
      IOMIMIC_RETURN_IF_ERROR(store_->WriteNew(op.to, op.key, op.bytes, wb, &write));
      RecordOp(OpEvent::Kind::kWrite, op.to, op.key, op.bytes, "Prefill", write, false);
      *write_seconds = write.total;
      return Status::OK();
  }
  return Status::OK();
}

// The reference's allocate_cache: the write's own time is the request's
// storage time (the evictions before it count in the end-to-end time).
Result<double> Engine::Allocate(const std::string& key, std::uint64_t tokens,
                                TierStore::WorkerBuffer& wb) {
  if (cache_->Where(key).has_value()) return 0.0;
  if (allocs_) allocs_->acquire();
  const std::uint64_t bytes = EntryBytes(*model_, tokens, c_.tensor_parallel);
  std::vector<TierOp>& ops = wb.ops;  // the worker's, reused
  ops.clear();
  double seconds = 0;
  Status st;
  if (cache_->Insert(key, bytes, &ops)) {
    std::size_t done = 0;
    for (; done < ops.size(); ++done) {
      st = Perform(ops[done], wb, &seconds);
      if (!st.ok()) break;
    }
    // The entries of the operations not done (the failed one included) are
    // not where the cache says: they leave it.
    for (std::size_t k = done; k < ops.size(); ++k) cache_->Forget(ops[k].key);
    cache_->Complete(ops);
    if (st.ok()) {
      std::lock_guard<std::mutex> lock(stats_mutex_);
      ++figures_.prefill_writes;
      ++figures_.write_operations;
      figures_.total_write_bytes += bytes;
      if (ops.back().to == Tier::kStorage) figures_.storage_tokens_processed += tokens;
    }
  }
  if (allocs_) allocs_->release();
  if (!st.ok()) return st;
  return seconds;
}

Result<std::optional<double>> Engine::Access(const std::string& key, HitKind kind,
                                             TierStore::WorkerBuffer& wb) {
  std::optional<TierCache::Hit> hit = cache_->Acquire(key);
  if (!hit) {
    std::lock_guard<std::mutex> lock(stats_mutex_);
    ++figures_.cache_misses;
    return std::optional<double>();
  }
  OpTiming t;
  Status st = store_->Read(hit->tier, key, hit->bytes, wb, &t);
  cache_->Release(key);
  IOMIMIC_RETURN_IF_ERROR(st);
  RecordOp(OpEvent::Kind::kRead, hit->tier, key, hit->bytes, "Decode", t, false);
  std::lock_guard<std::mutex> lock(stats_mutex_);
  ++figures_.cache_hits;
  ++(kind == HitKind::kMultiTurn      ? figures_.multi_turn_hits
     : kind == HitKind::kSystemPrompt ? figures_.system_prompt_hits
                                      : figures_.user_cache_hits);
  ++figures_.decode_reads;
  ++figures_.read_operations;
  figures_.total_read_bytes += hit->bytes;
  if (hit->tier == Tier::kStorage && model_->bytes_per_token() > 0) {
    figures_.storage_tokens_processed +=
        static_cast<double>(hit->bytes) / static_cast<double>(model_->bytes_per_token());
  }
  return std::optional<double>(t.total);
}

Status Engine::Serve(Request& r, TierStore::WorkerBuffer& wb) {
  double storage = 0;
  if (r.system_prompt >= 0) {
    // The reference looks the shared prompt's entry up but never writes one:
    // a miss, and the prompt's tokens leave the context.
    const std::uint64_t words = static_cast<std::uint64_t>(
        ReferenceSystemPrompts()[static_cast<std::size_t>(r.system_prompt)].token_count);
    r.context = r.context > words ? r.context - words : 0;
    std::lock_guard<std::mutex> lock(stats_mutex_);
    ++figures_.prefix_lookups;
    ++figures_.cache_misses;
    figures_.prefix_bytes_saved += words * model_->bytes_per_token();
  } else if (c_.prefix_caching) {
    std::lock_guard<std::mutex> lock(stats_mutex_);
    ++figures_.prefix_misses;
  }
  for (std::uint64_t turn = 1; turn < r.turn; ++turn) {
    std::string& prev = wb.key;
    TurnKey(r.user, r.conversation, turn, &prev);
    IOMIMIC_ASSIGN_OR_RETURN(std::optional<double> t, Access(prev, HitKind::kMultiTurn, wb));
    if (!t) {
      std::lock_guard<std::mutex> lock(stats_mutex_);
      ++figures_.multi_turn_misses;  // Access counted the hits
    }
    storage += t.value_or(0);
  }
  IOMIMIC_ASSIGN_OR_RETURN(double written, Allocate(r.key, r.context, wb));
  storage += written;
  double decoded = 0;  // the decode reads' time
  if (r.decode) {
    const HitKind kind = r.system_prompt >= 0 ? HitKind::kSystemPrompt : HitKind::kUser;
    IOMIMIC_ASSIGN_OR_RETURN(std::optional<double> first, Access(r.key, kind, wb));
    if (!first) {
      IOMIMIC_ASSIGN_OR_RETURN(double again, Allocate(r.key, r.context, wb));
      storage += again;
    } else {
      decoded += *first;
      const std::uint64_t batches = std::max<std::uint64_t>(
          1, (r.generate + c_.decode_batch_size - 1) / c_.decode_batch_size);
      for (std::uint64_t b = 0; b < batches; ++b) {
        IOMIMIC_ASSIGN_OR_RETURN(std::optional<double> t, Access(r.key, kind, wb));
        decoded += t.value_or(0);
      }
      storage += decoded;
    }
  }
  const double generation = static_cast<double>(r.generate) * SecondsPerToken(c_.generation_mode);
  if (generation > 0) std::this_thread::sleep_for(std::chrono::duration<double>(generation));
  const double e2e = Now() - r.submitted;
  const int q = static_cast<int>(r.qos);
  bool last = false;
  {
    std::lock_guard<std::mutex> lock(stats_mutex_);
    // Finished after the end, or past max_requests: not counted.
    if (ended_.load() || (c_.max_requests > 0 && figures_.requests >= c_.max_requests)) {
      return Status::OK();
    }
    ++figures_.requests;
    last = c_.max_requests > 0 && figures_.requests == c_.max_requests;
    figures_.tokens_generated += r.generate;
    figures_.context_tokens += r.context;
    figures_.storage_io_seconds += storage;
    figures_.generation_seconds += generation;
    ++figures_.qos_requests[q];
    if (e2e * 1000 > QosTargetP95Ms(r.qos)) ++figures_.qos_violations[q];
    if (KvRequestSamples& s = figures_.samples; s.recorded) {
      s.end_to_end.push_back(e2e);
      s.storage.push_back(storage);
      s.generation.push_back(generation);
      s.prefill.push_back(written);
      if (r.decode) s.decode.push_back(decoded);
    }
  }
  figures_.end_to_end.Record(Ns(e2e));
  figures_.storage.Record(Ns(storage));
  figures_.generation.Record(Ns(generation));
  figures_.qos_end_to_end[q].Record(Ns(e2e));
  session_.progress().requests.fetch_add(1, std::memory_order_relaxed);
  if (last) Stop();
  return Status::OK();
}

void Engine::WorkerLoop(std::size_t index) {
  TierStore::WorkerBuffer wb;
  (void)index;
  Request r;
  while (queue_.Pop(&r)) {
    Status st = Serve(r, wb);
    // After the end, transfers are cut short (kAborted) and what depended on
    // them may fail: not an error of the run.
    const bool cut_short = ended_.load();
    if (!st.ok() && !cut_short) {
      Fail(st);
      return;
    }
    if (ended_.load()) return;
  }
}

void Engine::Finish(double seconds) {
  figures_.seconds = seconds;
  figures_.storage_cut_short_bytes_written = store_->cut_short_written();
  figures_.storage_cut_short_bytes_read = store_->cut_short_read();
  if (accelerator_.top() != nullptr) {
    figures_.accelerator_statistics = accelerator_.top()->Statistics();
  }
  const CacheCounters n = cache_->counters();
  figures_.forced = n.forced;
  for (int t = 0; t < kTierCount; ++t) {
    TierFigures& f = figures_.tier[t];
    f.entries = cache_->entries(static_cast<Tier>(t));
    f.used_bytes = cache_->used(static_cast<Tier>(t));
    const std::uint64_t cap = cache_->capacity(static_cast<Tier>(t));
    f.capacity_bytes = cap == kUnlimited ? 0 : cap;
  }
}

Result<KvFigures> Engine::Run() {
  IOMIMIC_RETURN_IF_ERROR(Prepare());
  session::PhaseScope phase(session_.progress(), session::RunPhase::kKvCache);
  const std::size_t workers = std::min<std::size_t>(users_.size(), kMaxWorkers);
  const double start = Now();
  std::vector<std::thread> threads;
  threads.reserve(workers + users_.size());
  for (std::size_t w = 0; w < workers; ++w) threads.emplace_back([this, w] { WorkerLoop(w); });
  for (std::size_t u = 0; u < users_.size(); ++u) threads.emplace_back([this, u] { UserLoop(u); });
  const double until = start + c_.duration;
  for (double now = Now(); now < until && session::InterruptSignal() == 0; now = Now()) {
    if (!queue_.Sleep(std::min(0.05, until - now))) break;
  }
  Stop();
  const double seconds = Now() - start;
  for (std::thread& t : threads) t.join();
  if (!failure_.ok()) return failure_;
  Finish(seconds);
  figures_.interrupted_by = session::InterruptSignal();
  IOMIMIC_RETURN_IF_ERROR(store_->RemoveAll(c_.keep_entries));
  if (own_sink_ != nullptr) IOMIMIC_RETURN_IF_ERROR(own_sink_->Close());
  return std::move(figures_);
}

}  // namespace

double QosTargetP95Ms(QosLevel qos) {
  switch (qos) {
    case QosLevel::kInteractive:
      return 50;
    case QosLevel::kResponsive:
      return 100;
    case QosLevel::kBatch:
      break;
  }
  return 1000;
}

Result<KvFigures> RunKvCache(session::Session& session, const KvRunOptions& options) {
  Engine engine(session, options);
  return engine.Run();
}

}  // namespace iomimic::kvcache
