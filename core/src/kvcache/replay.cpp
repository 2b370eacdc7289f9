#include "kvcache/replay.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "iomimic/npy.h"
#include "iomimic/random.h"
#include "metrics/figures_json.h"
#include "metrics/rank_merge.h"
#include "output/model.h"
#include "session/interrupt.h"

namespace iomimic::kvcache {

namespace {

using Clock = std::chrono::steady_clock;

std::string GroupName(const TraceRow& row) {
  std::string name = std::string(TraceOpName(row.op)) + " " + TraceTierName(row.tier) + " ";
  name += row.phase == TracePhase::kNone ? "(none)" : TracePhaseName(row.phase);
  return name;
}

Status RowError(const TraceRow& row, const Status& status) {
  return status.WithContext("trace line " + std::to_string(row.line) + " (" + TraceOpName(row.op) +
                            " " + TraceExcerpt(row.key) + ")");
}

// The plan of a replay: every Tier-2 row's object and the Tier-2 row before
// it on the same key.
struct Plan {
  std::vector<std::string> paths;     // per distinct key
  std::vector<std::int64_t> object;   // per row: index in paths, -1 for other tiers
  std::vector<std::int64_t> depends;  // per row: earlier Tier-2 row of the key, or -1
  std::vector<std::size_t> setup;     // rows: first Tier-2 op of a key is a Read
};

Result<Plan> MakePlan(const std::vector<TraceRow>& rows, const std::string& root) {
  Plan plan;
  plan.object.assign(rows.size(), -1);
  plan.depends.assign(rows.size(), -1);
  std::unordered_map<std::string, std::pair<std::size_t, std::int64_t>> keys;  // key->(obj, last)
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const TraceRow& row = rows[i];
    if (row.tier != kTierStorage) continue;
    auto [it, inserted] = keys.try_emplace(row.key, plan.paths.size(), -1);
    if (inserted) {
      Result<std::string> path = ReplayObjectPath(root, row.key);
      if (!path.ok()) return RowError(row, path.status());
      plan.paths.push_back(*path);
      if (row.op == TraceOp::kRead) plan.setup.push_back(i);
    }
    plan.object[i] = static_cast<std::int64_t>(it->second.first);
    plan.depends[i] = it->second.second;
    it->second.second = static_cast<std::int64_t>(i);
  }
  return plan;
}

// One thread's buffer: host memory of the back end's, filled once with
// random bytes so that written objects neither compress nor deduplicate.
Result<Buffer> MakeBuffer(Storage& storage, std::size_t bytes, std::uint64_t seed) {
  IOMIMIC_ASSIGN_OR_RETURN(Buffer buffer, AllocateHostBuffer(storage, bytes, "kvcache-replay"));
  Xoshiro256(seed).Fill(buffer.span());
  return buffer;
}

// Opens a whole object: written (of `total` bytes), or read past the page cache.
Result<std::unique_ptr<File>> OpenObject(Storage& storage, const std::string& path, bool write,
                                         std::uint64_t total) {
  OpenOptions open;
  open.mode = write ? OpenMode::kWrite : OpenMode::kRead;
  open.hint = AccessHint::kWholeFile;
  open.expected_size = write ? total : 0;
  open.drop_cache = !write;
  return storage.Open(path, open);
}

// Creates `path` with a .npy header and `size` bytes of data, synced.
Status WriteObject(Storage& storage, const std::string& path, std::uint64_t size, Buffer& buffer) {
  const std::uint64_t total = kNpyHeaderBytes + size;
  IOMIMIC_ASSIGN_OR_RETURN(std::unique_ptr<File> file, OpenObject(storage, path, true, total));
  FillNpyHeader(size, buffer.data());
  for (std::uint64_t offset = 0; offset < total;) {
    std::size_t n =
        static_cast<std::size_t>(std::min<std::uint64_t>(buffer.size(), total - offset));
    if (Status s = file->WriteAt(offset, std::span<const std::byte>(buffer.data(), n)); !s.ok()) {
      (void)file->Abort();
      return s;
    }
    offset += n;
  }
  if (Status s = file->Sync(); !s.ok()) {
    (void)file->Abort();
    return s;
  }
  return file->Close();
}

// Reads `path` whole, from the storage rather than a page cache; it must
// hold the header and `size` bytes.
Status ReadObject(Storage& storage, const std::string& path, std::uint64_t size, Buffer& buffer) {
  const std::uint64_t total = kNpyHeaderBytes + size;
  IOMIMIC_ASSIGN_OR_RETURN(std::unique_ptr<File> file, OpenObject(storage, path, false, total));
  std::uint64_t offset = 0;
  for (;;) {
    IOMIMIC_ASSIGN_OR_RETURN(std::size_t n, file->ReadAt(offset, buffer.span()));
    if (n == 0) break;
    offset += n;
  }
  IOMIMIC_RETURN_IF_ERROR(file->Close());
  if (offset != total) {
    return Status::Corruption(path + ": read " + std::to_string(offset) + " bytes, expected " +
                              std::to_string(total) + " (.npy header and " + std::to_string(size) +
                              " bytes)");
  }
  return Status::OK();
}

// What the replay threads share.
struct Shared {
  Storage* storage = nullptr;
  const std::vector<TraceRow>* rows = nullptr;
  const Plan* plan = nullptr;
  const ReplayOptions* options = nullptr;
  std::vector<std::atomic<std::uint8_t>> done;
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mu;  // guards the fields below
  Status error;
  ReplayResult* result = nullptr;
  Clock::time_point start;
  Clock::time_point last_end;
  bool any_op = false;

  explicit Shared(std::size_t n) : done(n) {}
  bool stopping() const { return failed.load() || (options->stop != nullptr && options->stop()); }
  void Finish(std::size_t i) {
    done[i].store(1);
    done[i].notify_all();
  }
};

// Waits for the row's trace time (kRecorded); counts a late start.
void WaitForTime(Shared& s, const TraceRow& row) {
  if (s.options->timing != ReplayTiming::kRecorded) return;
  const double offset = row.timestamp - s.rows->front().timestamp;
  const Clock::time_point due =
      s.start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(offset));
  std::this_thread::sleep_until(due);
  const double late = std::chrono::duration<double>(Clock::now() - due).count();
  if (late > 1e-3) {
    std::lock_guard<std::mutex> lock(s.mu);
    ++s.result->late_ops;
    s.result->max_late_s = std::max(s.result->max_late_s, late);
  }
}

void RunRow(Shared& s, std::size_t i, Buffer& buffer) {
  const TraceRow& row = (*s.rows)[i];
  const std::int64_t dep = s.plan->depends[i];
  if (dep >= 0) s.done[static_cast<std::size_t>(dep)].wait(0);
  if (s.stopping()) return;
  WaitForTime(s, row);
  const std::string& path = s.plan->paths[static_cast<std::size_t>(s.plan->object[i])];
  const Clock::time_point begin = Clock::now();
  Status status = row.op == TraceOp::kWrite ? WriteObject(*s.storage, path, row.size, buffer)
                                            : ReadObject(*s.storage, path, row.size, buffer);
  const Clock::time_point end = Clock::now();
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(end - begin).count();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!status.ok()) {
    if (s.error.ok()) s.error = RowError(row, status);
    s.failed.store(true);
    return;
  }
  ReplayGroup& g = row.op == TraceOp::kWrite ? s.result->writes : s.result->reads;
  ++g.ops;
  g.bytes += row.size;
  s.result->header_bytes += kNpyHeaderBytes;
  (row.op == TraceOp::kWrite ? s.result->write_ns : s.result->read_ns)
      .Record(static_cast<std::uint64_t>(ns));
  s.last_end = std::max(s.last_end, end);
  s.any_op = true;
}

void Worker(Shared& s, unsigned index) {
  Result<Buffer> buffer =
      MakeBuffer(*s.storage, std::max<std::size_t>(s.options->transfer_bytes, 4096), index + 1);
  for (;;) {
    const std::size_t i = s.next.fetch_add(1);
    if (i >= s.rows->size()) return;
    if (!buffer.ok()) {
      std::lock_guard<std::mutex> lock(s.mu);
      if (s.error.ok()) s.error = buffer.status();
      s.failed.store(true);
    }
    if ((*s.rows)[i].tier == kTierStorage && !s.stopping()) RunRow(s, i, *buffer);
    s.Finish(i);
  }
}

// Refuses objects that exist: every object of the plan is then the replay's own.
Status CheckNoneExists(Storage& storage, const Plan& plan) {
  for (const std::string& path : plan.paths) {
    if (storage.Stat(path).ok()) {
      return Status::AlreadyExists(path +
                                   " exists before the replay; remove it or choose "
                                   "another root");
    }
  }
  return Status::OK();
}

// Creates the folders and the objects read before the trace writes them.
Status Prepare(Storage& storage, const std::vector<TraceRow>& rows, const Plan& plan,
               const ReplayOptions& options, ReplayResult* result) {
  IOMIMIC_RETURN_IF_ERROR(storage.CreateDirectories(options.root));
  for (const std::string& path : plan.paths) {
    std::size_t slash = path.rfind('/');
    if (slash != std::string::npos && slash > options.root.size()) {
      IOMIMIC_RETURN_IF_ERROR(storage.CreateDirectories(path.substr(0, slash)));
    }
  }
  IOMIMIC_ASSIGN_OR_RETURN(
      Buffer buffer, MakeBuffer(storage, std::max<std::size_t>(options.transfer_bytes, 4096), 0));
  for (std::size_t i : plan.setup) {
    const std::string& path = plan.paths[static_cast<std::size_t>(plan.object[i])];
    if (Status s = WriteObject(storage, path, rows[i].size, buffer); !s.ok()) {
      return RowError(rows[i], s.WithContext("creating the object it reads"));
    }
    ++result->setup_objects;
  }
  return Status::OK();
}

Status RemoveObjects(Storage& storage, const Plan& plan) {
  Status first;
  for (const std::string& path : plan.paths) {
    Status s = storage.Remove(path);
    if (!s.ok() && s.code() != StatusCode::kNotFound && first.ok()) first = s;
  }
  return first;
}

void CountGroups(const std::vector<TraceRow>& rows, ReplayResult* result) {
  for (const TraceRow& row : rows) {
    ReplayGroup& g = result->groups[GroupName(row)];
    ++g.ops;
    g.bytes += row.size;
    if (row.tier != kTierStorage) {
      ++result->skipped.ops;
      result->skipped.bytes += row.size;
    }
  }
  if (!rows.empty()) result->trace_span_s = rows.back().timestamp - rows.front().timestamp;
}

}  // namespace

Result<std::string> ReplayObjectPath(const std::string& root, const std::string& key) {
  if (key.empty()) return Status::InvalidArgument("an empty Key cannot name an object");
  if (key.front() == '/')
    return Status::InvalidArgument("Key '" + TraceExcerpt(key) + "' is an absolute path");
  for (char c : key) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return Status::InvalidArgument("Key '" + TraceExcerpt(key) + "' holds a control character");
    }
  }
  std::size_t begin = 0;
  while (begin <= key.size()) {
    std::size_t end = std::min(key.find('/', begin), key.size());
    std::string_view part(key.data() + begin, end - begin);
    if (part.empty() || part == "." || part == "..") {
      return Status::InvalidArgument("Key '" + TraceExcerpt(key) +
                                     "' has an empty, '.' or '..' component");
    }
    begin = end + 1;
  }
  std::string base = root;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  return (base.empty() ? std::string() : base + "/") + key + ".npy";
}

void FillNpyHeader(std::uint64_t bytes, std::byte* out) {
  const bool half = bytes % 2 == 0;
  const std::uint64_t shape[] = {half ? bytes / 2 : bytes};
  // numpy's own header (iomimic/npy.h): a 1-D shape's always takes
  // kNpyHeaderBytes (its length is padded to 21 digits), so it fits.
  (void)numpy::WriteNpyHeader(half ? "<f2" : "|u1", shape, /*fortran_order=*/false,
                              std::span<char>(reinterpret_cast<char*>(out), kNpyHeaderBytes));
}

std::string NpyHeaderForBytes(std::uint64_t bytes) {
  std::string header(kNpyHeaderBytes, '\0');
  FillNpyHeader(bytes, reinterpret_cast<std::byte*>(header.data()));
  return header;
}

Result<ReplayResult> Replay(Storage& storage, const std::vector<TraceRow>& rows,
                            const ReplayOptions& options) {
  ReplayResult result;
  CountGroups(rows, &result);
  IOMIMIC_ASSIGN_OR_RETURN(Plan plan, MakePlan(rows, options.root));
  IOMIMIC_RETURN_IF_ERROR(CheckNoneExists(storage, plan));
  if (Status s = Prepare(storage, rows, plan, options, &result); !s.ok()) {
    if (!options.keep_objects) (void)RemoveObjects(storage, plan);
    return s;
  }

  Shared shared(rows.size());
  shared.storage = &storage;
  shared.rows = &rows;
  shared.plan = &plan;
  shared.options = &options;
  shared.result = &result;
  shared.start = Clock::now();
  shared.last_end = shared.start;
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < std::max(1u, options.threads); ++t) {
    threads.emplace_back(Worker, std::ref(shared), t);
  }
  for (std::thread& t : threads) t.join();
  result.elapsed_s = std::chrono::duration<double>(shared.last_end - shared.start).count();
  result.stopped = options.stop != nullptr && options.stop();

  Status removed = options.keep_objects ? Status::OK() : RemoveObjects(storage, plan);
  if (!shared.error.ok()) return shared.error;
  if (!removed.ok()) return removed.WithContext("removing the replay's objects");
  return result;
}

namespace {

using json = nlohmann::ordered_json;

// Latency percentiles in seconds, as kvcache_replay.json had them.
json OpsJson(const ReplayGroup& g, const metrics::LatencyHistogram& h, double elapsed) {
  json j;
  j["ops"] = g.ops;
  j["bytes"] = g.bytes;
  j["latency_seconds"] = metrics::PercentilesJson<json>(h, metrics::kReferenceQuantiles, 1e9);
  j["bytes_per_second"] = elapsed > 0 ? static_cast<double>(g.bytes) / elapsed : 0.0;
  return j;
}

json ReplayJson(const ReplayResult& r) {
  json j;
  json groups = json::object();
  for (const auto& [name, g] : r.groups) groups[name] = {{"ops", g.ops}, {"bytes", g.bytes}};
  j["groups"] = std::move(groups);
  j["reads"] = OpsJson(r.reads, r.read_ns, r.elapsed_s);
  j["writes"] = OpsJson(r.writes, r.write_ns, r.elapsed_s);
  j["skipped_memory_tiers"] = {{"ops", r.skipped.ops}, {"bytes", r.skipped.bytes}};
  j["npy_header_bytes"] = r.header_bytes;
  j["setup_objects"] = r.setup_objects;
  j["elapsed_seconds"] = r.elapsed_s;
  j["trace_span_seconds"] = r.trace_span_s;
  j["late_ops"] = r.late_ops;
  j["max_late_seconds"] = r.max_late_s;
  j["stopped"] = r.stopped;
  return j;
}

}  // namespace

std::string ReplayResultText(const ReplayResult& r) {
  char line[256];
  std::string out;
  for (const auto& [name, g] : r.groups) {
    std::snprintf(line, sizeof line, "  %-26s %10llu ops %16llu bytes\n", name.c_str(),
                  static_cast<unsigned long long>(g.ops), static_cast<unsigned long long>(g.bytes));
    out += line;
  }
  auto ops = [&](const char* what, const ReplayGroup& g, const metrics::LatencyHistogram& h) {
    const double mib_s = r.elapsed_s > 0 ? g.bytes / r.elapsed_s / 1048576.0 : 0.0;
    std::snprintf(line, sizeof line,
                  "%s: %llu ops, %.1f MiB, %.1f MiB/s; latency ms p50 %.3f p95 %.3f p99 %.3f "
                  "max %.3f\n",
                  what, static_cast<unsigned long long>(g.ops), g.bytes / 1048576.0, mib_s,
                  h.Percentile(0.5) / 1e6, h.Percentile(0.95) / 1e6, h.Percentile(0.99) / 1e6,
                  h.max_ns() / 1e6);
    out += line;
  };
  ops("writes", r.writes, r.write_ns);
  ops("reads", r.reads, r.read_ns);
  std::snprintf(line, sizeof line,
                "skipped (Tier-0/Tier-1): %llu ops, %.1f MiB; elapsed %.3f s (trace spans "
                "%.3f s); late starts %llu (max %.3f s)%s\n",
                static_cast<unsigned long long>(r.skipped.ops), r.skipped.bytes / 1048576.0,
                r.elapsed_s, r.trace_span_s, static_cast<unsigned long long>(r.late_ops),
                r.max_late_s, r.stopped ? "; stopped early" : "");
  return out + line;
}

Result<RankReplay> ReplayTrace(session::Session& session) {
  const config::KvCacheConfig& c = session.config().kv_cache;
  IOMIMIC_ASSIGN_OR_RETURN(std::vector<TraceRow> rows, ReadTrace(c.replay_trace));
  ReplayOptions options;
  options.root = session::ResolveDataPath(session.config(), c.cache_folder);
  if (session.cluster().size() > 1) {
    options.root += "/rank_" + std::to_string(session.cluster().rank());
  }
  options.timing = c.replay_timing == "recorded" ? ReplayTiming::kRecorded : ReplayTiming::kFast;
  options.threads = static_cast<unsigned>(c.replay_threads);
  options.transfer_bytes = static_cast<std::size_t>(c.transfer_size);
  options.keep_objects = c.keep_entries;
  options.stop = [] { return session::InterruptSignal() != 0; };
  RankReplay replay;
  replay.start = metrics::Stamp::Now();
  IOMIMIC_ASSIGN_OR_RETURN(replay.result, Replay(session.storage(), rows, options));
  replay.end = metrics::Stamp::Now();
  return replay;
}

int ReplayResults::interrupted_by() const {
  return local_.result.stopped ? session::InterruptSignal() : 0;
}

void ReplayResults::AddEvents(std::chrono::system_clock::time_point origin, int rank,
                              std::vector<output::EventEntry>* events) const {
  events->push_back({rank, "kv_replay", 0, 0, output::SinceOrigin(origin, local_.start),
                     output::SinceOrigin(origin, local_.end),
                     local_.result.reads.bytes + local_.result.writes.bytes});
}

std::vector<std::pair<std::string, metrics::LatencyHistogram>> ReplayResults::Histograms() const {
  return {{"kv_replay_read", local_.result.read_ns}, {"kv_replay_write", local_.result.write_ns}};
}

Status ReplayResults::Collect(session::Session& session, output::RunResults& run) {
  (void)run;
  cluster::Cluster& cluster = session.cluster();
  const ReplayResult& mine = local_.result;
  // The groups by name, as text (every rank replays the same trace, so the
  // names agree; a sum by name keeps it right if they did not).
  std::string groups;
  for (const auto& [name, g] : mine.groups) {
    groups += std::to_string(g.ops) + " " + std::to_string(g.bytes) + " " + name + "\n";
  }
  merged_ = ReplayResult{};
  for (const std::string& text : cluster.AllGatherStrings(groups)) {
    std::istringstream in(text);
    std::uint64_t ops = 0, bytes = 0;
    std::string name;
    while (in >> ops >> bytes && std::getline(in >> std::ws, name)) {
      merged_.groups[name].ops += ops;
      merged_.groups[name].bytes += bytes;
    }
  }
  const std::vector<std::uint64_t> sums =
      cluster.SumU64s({mine.reads.ops, mine.reads.bytes, mine.writes.ops, mine.writes.bytes,
                       mine.skipped.ops, mine.skipped.bytes, mine.header_bytes, mine.setup_objects,
                       mine.late_ops, mine.stopped ? 1u : 0u});
  merged_.reads = {sums[0], sums[1]};
  merged_.writes = {sums[2], sums[3]};
  merged_.skipped = {sums[4], sums[5]};
  merged_.header_bytes = sums[6];
  merged_.setup_objects = sums[7];
  merged_.late_ops = sums[8];
  merged_.stopped = sums[9] > 0;
  const std::vector<double> maxima =
      cluster.MaxDoubles({mine.elapsed_s, mine.trace_span_s, mine.max_late_s});
  merged_.elapsed_s = maxima[0];
  merged_.trace_span_s = maxima[1];
  merged_.max_late_s = maxima[2];
  std::vector<metrics::LatencyHistogram> merged =
      metrics::MergeOverRanks({&mine.read_ns, &mine.write_ns}, cluster);
  merged_.read_ns = merged[0];
  merged_.write_ns = merged[1];
  return Status::OK();
}

void ReplayResults::AddToSummary(const output::RunResults& run,
                                 const config::LoadedManifest& manifest, json& summary,
                                 json& iomimic) const {
  (void)run, (void)iomimic;
  json o = ReplayJson(merged_);
  o["trace"] = manifest.config.kv_cache.replay_trace;
  o["timing"] = manifest.config.kv_cache.replay_timing;
  o["threads"] = manifest.config.kv_cache.replay_threads;
  summary["kv_cache_replay"] = std::move(o);
}

std::string ReplayResults::ConsoleLines(const output::RunResults& run,
                                        const config::Config& config) const {
  (void)run, (void)config;
  std::string out;
  std::istringstream lines(ReplayResultText(merged_));
  for (std::string line; std::getline(lines, line);) out += "  kv-replay " + line + "\n";
  return out;
}

Result<std::shared_ptr<output::WorkflowResults>> RunReplayWorkflow(
    session::Session& session, const output::WorkflowContext& context) {
  (void)context;
  return output::ResultsOf<ReplayResults>(ReplayTrace(session));
}

const output::FigureList& ReplayFigures() {
  static const output::FigureList figures = [] {
    output::FigureList out;
    for (const char* way : {"read", "write"}) {
      const std::string group = std::string(way) + "s";
      out.push_back({std::string("kv replay ") + way + " MiB/s",
                     {"kv_cache_replay", group, "bytes_per_second"},
                     true,
                     {},
                     1.0 / 1048576});
      out.push_back({std::string("kv replay ") + way + " p99 ms",
                     {"kv_cache_replay", group, "latency_seconds", "p99"},
                     false,
                     {},
                     1e3});
    }
    out.push_back({"kv replay late ops", {"kv_cache_replay", "late_ops"}, false});
    return out;
  }();
  return figures;
}

}  // namespace iomimic::kvcache
