#include "kvcache/results.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

#include "kvcache/reference_results.h"
#include "metrics/figures_json.h"
#include "metrics/rank_merge.h"
#include "output/model.h"
#include "output/writers.h"
#include "session/session.h"

namespace iomimic::kvcache {
namespace {

using json = nlohmann::ordered_json;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

double Ms(std::uint64_t ns) { return static_cast<double>(ns) / 1e6; }
double Rate(double amount, double seconds) { return seconds > 0 ? amount / seconds : 0; }

// P50 to P99.99 of `h` in milliseconds (the reference's percentiles, and P90).
json Latency(const metrics::LatencyHistogram& h) {
  return metrics::PercentilesJson<json>(h, metrics::kReferenceQuantiles);
}

// Every counter of KvFigures, in one fixed order, through `visit`.
template <typename F, typename Figures>
void Counters(Figures& f, F visit) {
  for (auto* v : {&f.requests,
                  &f.tokens_generated,
                  &f.context_tokens,
                  &f.cache_hits,
                  &f.cache_misses,
                  &f.multi_turn_hits,
                  &f.multi_turn_misses,
                  &f.prefix_lookups,
                  &f.prefix_misses,
                  &f.prefix_bytes_saved,
                  &f.user_cache_hits,
                  &f.system_prompt_hits,
                  &f.prefill_writes,
                  &f.decode_reads,
                  &f.read_operations,
                  &f.write_operations,
                  &f.total_read_bytes,
                  &f.total_write_bytes,
                  &f.storage_header_bytes_written,
                  &f.storage_header_bytes_read,
                  &f.storage_cut_short_bytes_written,
                  &f.storage_cut_short_bytes_read,
                  &f.evictions,
                  &f.offloads_cpu,
                  &f.offloads_storage,
                  &f.forced}) {
    visit(*v);
  }
  for (int q = 0; q < kQosCount; ++q) visit(f.qos_requests[q]), visit(f.qos_violations[q]);
  for (auto& t : f.tier) {
    for (auto* v : {&t.reads, &t.writes, &t.read_bytes, &t.write_bytes, &t.evict_reads,
                    &t.evict_writes, &t.evict_read_bytes, &t.evict_write_bytes, &t.deletes,
                    &t.delete_bytes, &t.entries, &t.used_bytes, &t.capacity_bytes}) {
      visit(*v);
    }
  }
}

template <typename F, typename Figures>
void Histograms(Figures& f, F visit) {
  visit(f.end_to_end), visit(f.storage), visit(f.generation);
  for (auto& h : f.qos_end_to_end) visit(h);
  for (auto& t : f.tier) {
    for (auto* h : {&t.read, &t.write, &t.read_device, &t.read_host, &t.write_device, &t.write_host,
                    &t.request_read, &t.request_write}) {
      visit(*h);
    }
  }
  for (auto* h : {&f.request_read_device, &f.request_read_host, &f.request_write_device,
                  &f.request_write_host}) {
    visit(*h);
  }
}

// The accelerator tier's path, reason and plugin figures over the ranks
// (collective): rank 0's path and reason when every rank took the same path,
// else "mixed" and each rank's in the reason; the figures summed by name.
void MergeAccelerator(const KvFigures& local, cluster::Cluster& cluster, KvFigures* all) {
  const std::vector<std::string> paths = cluster.AllGatherStrings(local.accelerator_path);
  const std::vector<std::string> reasons = cluster.AllGatherStrings(local.accelerator_reason);
  std::string mine;
  for (const StorageStatistic& s : local.accelerator_statistics) {
    char value[40];
    std::snprintf(value, sizeof value, " %.17g\n", s.value);
    mine += s.name + value;
  }
  const std::vector<std::string> stats = cluster.AllGatherStrings(mine);
  if (paths.empty()) return;
  if (std::adjacent_find(paths.begin(), paths.end(), std::not_equal_to<>()) == paths.end()) {
    all->accelerator_path = paths[0];
    all->accelerator_reason = reasons[0];
  } else {
    all->accelerator_path = "mixed";
    for (std::size_t r = 0; r < paths.size(); ++r) {
      all->accelerator_reason += (r == 0 ? "rank " : "; rank ") + std::to_string(r) + ": " +
                                 paths[r] + " (" + reasons[r] + ")";
    }
  }
  std::vector<StorageStatistic>& sums = all->accelerator_statistics;
  for (const std::string& text : stats) {
    std::istringstream in(text);
    StorageStatistic s;
    while (in >> s.name >> s.value) {
      auto it = std::find_if(sums.begin(), sums.end(),
                             [&](const StorageStatistic& x) { return x.name == s.name; });
      if (it == sums.end()) {
        sums.push_back(s);
      } else {
        it->value += s.value;
      }
    }
  }
}

// The lists of KvRequestSamples in one order, through `visit`.
template <typename F, typename Samples>
void SampleLists(Samples& s, F visit) {
  for (auto* list : {&s.end_to_end, &s.storage, &s.generation, &s.prefill, &s.decode}) visit(*list);
}

// A rank's request samples as bytes for a gather: per list its length, then
// its values.
std::string PackSamples(const KvRequestSamples& s) {
  std::string out;
  SampleLists(s, [&](const std::vector<double>& list) {
    const std::uint64_t n = list.size();
    out.append(reinterpret_cast<const char*>(&n), sizeof n);
    out.append(reinterpret_cast<const char*>(list.data()), n * sizeof(double));
  });
  return out;
}

// Appends the lists PackSamples wrote in `bytes` to `into`'s.
void AppendSamples(const std::string& bytes, KvRequestSamples* into) {
  std::size_t at = 0;
  SampleLists(*into, [&](std::vector<double>& list) {
    std::uint64_t n = 0;
    if (at + sizeof n > bytes.size()) return;
    std::memcpy(&n, bytes.data() + at, sizeof n);
    at += sizeof n;
    n = std::min<std::uint64_t>(n, (bytes.size() - at) / sizeof(double));
    const std::size_t old = list.size();
    list.resize(old + n);
    std::memcpy(list.data() + old, bytes.data() + at, n * sizeof(double));
    at += n * sizeof(double);
  });
}

double Share(std::uint64_t part, std::uint64_t whole) {
  return whole == 0 ? 0 : static_cast<double>(part) / static_cast<double>(whole);
}

json TierJson(const TierFigures& t, double seconds, std::uint64_t hits) {
  json o;
  o["hit_share"] =
      metrics::JsonNumber<json>(Share(t.reads, hits));  // of the cache hits, those served here
  o["reads"] = t.reads;
  o["writes"] = t.writes;
  o["read_bytes"] = t.read_bytes;
  o["write_bytes"] = t.write_bytes;
  o["eviction_reads"] = t.evict_reads;
  o["eviction_writes"] = t.evict_writes;
  o["eviction_read_bytes"] = t.evict_read_bytes;
  o["eviction_write_bytes"] = t.evict_write_bytes;
  o["deletes"] = t.deletes;
  o["delete_bytes"] = t.delete_bytes;
  const double read = static_cast<double>(t.read_bytes + t.evict_read_bytes);
  const double write = static_cast<double>(t.write_bytes + t.evict_write_bytes);
  o["read_GiB_per_second"] = metrics::JsonNumber<json>(Rate(read / kGiB, seconds));
  o["write_GiB_per_second"] = metrics::JsonNumber<json>(Rate(write / kGiB, seconds));
  o["entries_at_end"] = t.entries;
  o["used_bytes_at_end"] = t.used_bytes;
  o["capacity_bytes"] = t.capacity_bytes;
  json lat;
  lat["read"] = Latency(t.read);
  lat["write"] = Latency(t.write);
  if (t.read_device.count() + t.write_device.count() > 0) {
    lat["read_device"] = Latency(t.read_device);
    lat["read_host"] = Latency(t.read_host);
    lat["write_device"] = Latency(t.write_device);
    lat["write_host"] = Latency(t.write_host);
  }
  o["latency_ms"] = std::move(lat);
  return o;
}

json QosJson(const KvFigures& f) {
  json o;
  for (int q = 0; q < kQosCount; ++q) {
    const QosLevel qos = static_cast<QosLevel>(q);
    json c;
    const metrics::LatencyHistogram& h = f.qos_end_to_end[q];
    c["requests"] = f.qos_requests[q];
    c["target_p95_ms"] = QosTargetP95Ms(qos);
    c["latency_ms"] = Latency(h);
    const double p95 = h.count() ? Ms(h.Percentile(0.95)) : 0;
    c["meets_target"] = h.count() == 0 || p95 <= QosTargetP95Ms(qos);
    c["violations"] = f.qos_violations[q];
    c["sla_compliance"] = metrics::JsonNumber<json>(
        f.qos_requests[q] ? 1.0 - static_cast<double>(f.qos_violations[q]) /
                                      static_cast<double>(f.qos_requests[q])
                          : 1.0);
    o[QosLevelName(qos)] = std::move(c);
  }
  return o;
}

ReferenceResultsOptions ReferenceOptions(const config::KvCacheConfig& c,
                                         double storage_tokens_per_second) {
  ReferenceResultsOptions o;
  o.seed = c.seed;
  o.prefix_caching = c.prefix_caching;
  o.performance_profile = c.performance_profile;
  o.storage_tokens_per_second = storage_tokens_per_second;
  return o;
}

json FiguresJson(const KvFigures& f, const config::KvCacheConfig& c, int ranks,
                 double storage_tokens_per_second) {
  json o;
  o["model"] = c.model;
  o["ranks"] = ranks;
  o["num_users_per_rank"] = c.num_users;
  o["trace_only"] = c.trace_only;
  o["duration_seconds"] = metrics::JsonNumber<json>(f.seconds);
  o["requests"] = f.requests;
  o["tokens_generated"] = f.tokens_generated;
  o["context_tokens"] = f.context_tokens;
  o["wall_tokens_per_second"] =
      metrics::JsonNumber<json>(Rate(static_cast<double>(f.tokens_generated), f.seconds));
  o["storage_tokens_per_second"] = metrics::JsonNumber<json>(storage_tokens_per_second);
  o["requests_per_second"] =
      metrics::JsonNumber<json>(Rate(static_cast<double>(f.requests), f.seconds));
  json lat;
  lat["end_to_end"] = Latency(f.end_to_end);
  lat["storage"] = Latency(f.storage);
  lat["generation"] = Latency(f.generation);
  o["latency_ms"] = std::move(lat);
  json tiers;
  for (int t = 0; t < kTierCount; ++t) {
    tiers[std::string(TierName(static_cast<Tier>(t)))] =
        TierJson(f.tier[t], f.seconds, f.cache_hits);
  }
  o["tiers"] = std::move(tiers);
  if (!f.accelerator_path.empty()) {
    o["accelerator_path"] = f.accelerator_path;
    o["accelerator_reason"] = f.accelerator_reason;
    json stats = json::object();
    for (const StorageStatistic& s : f.accelerator_statistics)
      stats[s.name] = metrics::JsonNumber<json>(s.value);
    o["accelerator_statistics"] = std::move(stats);
  }
  o["storage_header_bytes_written"] = f.storage_header_bytes_written;
  o["storage_header_bytes_read"] = f.storage_header_bytes_read;
  o["storage_cut_short_bytes_written"] = f.storage_cut_short_bytes_written;
  o["storage_cut_short_bytes_read"] = f.storage_cut_short_bytes_read;
  json cache;
  cache["hits"] = f.cache_hits;
  cache["misses"] = f.cache_misses;
  cache["hit_rate"] = metrics::JsonNumber<json>(Share(f.cache_hits, f.cache_hits + f.cache_misses));
  cache["multi_turn_hits"] = f.multi_turn_hits;
  cache["multi_turn_misses"] = f.multi_turn_misses;
  cache["multi_turn_hit_rate"] =
      metrics::JsonNumber<json>(Share(f.multi_turn_hits, f.multi_turn_hits + f.multi_turn_misses));
  cache["prefix_lookups"] = f.prefix_lookups;
  cache["evictions"] = f.evictions;
  cache["demotions_to_cpu"] = f.offloads_cpu;
  cache["demotions_to_storage"] = f.offloads_storage;
  cache["forced_placements"] = f.forced;
  o["cache"] = std::move(cache);
  o["qos"] = QosJson(f);
  o["reference"] = ReferenceSummaryJson(f, ReferenceOptions(c, storage_tokens_per_second));
  return o;
}

}  // namespace

KvRankFigures RankFigures(const KvFigures& f, int rank) {
  KvRankFigures r;
  r.rank = rank;
  r.requests = f.requests;
  r.seconds = f.seconds;
  r.storage_tokens_per_second = Rate(static_cast<double>(f.tokens_generated), f.storage_io_seconds);
  r.wall_tokens_per_second = Rate(static_cast<double>(f.tokens_generated), f.seconds);
  const TierFigures& s = f.tier[static_cast<int>(Tier::kStorage)];
  r.storage_read_GiB_per_second =
      Rate(static_cast<double>(s.read_bytes + s.evict_read_bytes) / kGiB, f.seconds);
  r.storage_write_GiB_per_second =
      Rate(static_cast<double>(s.write_bytes + s.evict_write_bytes) / kGiB, f.seconds);
  r.end_to_end_p95_ms = f.end_to_end.count() ? Ms(f.end_to_end.Percentile(0.95)) : 0;
  r.storage_p95_ms = f.storage.count() ? Ms(f.storage.Percentile(0.95)) : 0;
  return r;
}

KvResults CollectKvResults(const KvFigures& local, cluster::Cluster& cluster) {
  KvResults out;
  std::vector<std::uint64_t> counters;
  Counters(local, [&](const std::uint64_t& v) { counters.push_back(v); });
  counters = cluster.SumU64s(counters);
  std::size_t i = 0;
  Counters(out.all, [&](std::uint64_t& v) { v = counters[i++]; });
  const std::vector<double> sums = cluster.SumDoubles(
      {local.storage_tokens_processed, local.storage_io_seconds, local.generation_seconds});
  out.all.storage_tokens_processed = sums[0];
  out.all.storage_io_seconds = sums[1];
  out.all.generation_seconds = sums[2];
  out.all.seconds = cluster.MaxDouble(local.seconds);
  out.all.interrupted_by =
      static_cast<int>(cluster.MaxDouble(static_cast<double>(local.interrupted_by)));
  std::vector<const metrics::LatencyHistogram*> mine;
  Histograms(local, [&](const metrics::LatencyHistogram& h) { mine.push_back(&h); });
  std::vector<metrics::LatencyHistogram> merged = metrics::MergeOverRanks(mine, cluster);
  i = 0;
  Histograms(out.all, [&](metrics::LatencyHistogram& h) { h = std::move(merged[i++]); });
  MergeAccelerator(local, cluster, &out.all);
  // The per-request lists, every rank's on rank 0 in rank order (every rank
  // records them or none: the same manifest).
  out.all.samples.recorded = local.samples.recorded;
  if (local.samples.recorded) {
    for (const std::string& rank : cluster.GatherStringsToRoot(PackSamples(local.samples))) {
      AppendSamples(rank, &out.all.samples);
    }
  }
  const KvRankFigures me = RankFigures(local, cluster.rank());
  char text[512];
  std::snprintf(text, sizeof text, "%d %llu %.17g %.17g %.17g %.17g %.17g %.17g %.17g", me.rank,
                static_cast<unsigned long long>(me.requests), me.seconds,
                me.storage_tokens_per_second, me.wall_tokens_per_second,
                me.storage_read_GiB_per_second, me.storage_write_GiB_per_second,
                me.end_to_end_p95_ms, me.storage_p95_ms);
  for (const std::string& row : cluster.AllGatherStrings(text)) {
    KvRankFigures r;
    std::istringstream in(row);
    in >> r.rank >> r.requests >> r.seconds >> r.storage_tokens_per_second >>
        r.wall_tokens_per_second >> r.storage_read_GiB_per_second >>
        r.storage_write_GiB_per_second >> r.end_to_end_p95_ms >> r.storage_p95_ms;
    out.ranks.push_back(r);
  }
  return out;
}

namespace {

// The ranks' figures together (summary.json's kv_cache.aggregate): rates
// summed, p95 latencies the largest rank's.
KvRankFigures Aggregate(const std::vector<KvRankFigures>& ranks) {
  KvRankFigures all;
  for (const KvRankFigures& r : ranks) {
    all.storage_tokens_per_second += r.storage_tokens_per_second;
    all.wall_tokens_per_second += r.wall_tokens_per_second;
    all.storage_read_GiB_per_second += r.storage_read_GiB_per_second;
    all.storage_write_GiB_per_second += r.storage_write_GiB_per_second;
    all.end_to_end_p95_ms = std::max(all.end_to_end_p95_ms, r.end_to_end_p95_ms);
    all.storage_p95_ms = std::max(all.storage_p95_ms, r.storage_p95_ms);
  }
  return all;
}

// The rates both kv_cache.per_rank and kv_cache.aggregate list, in order.
void AddRates(const KvRankFigures& r, json& o) {
  o["storage_tokens_per_second"] = metrics::JsonNumber<json>(r.storage_tokens_per_second);
  o["wall_tokens_per_second"] = metrics::JsonNumber<json>(r.wall_tokens_per_second);
  o["storage_read_GiB_per_second"] = metrics::JsonNumber<json>(r.storage_read_GiB_per_second);
  o["storage_write_GiB_per_second"] = metrics::JsonNumber<json>(r.storage_write_GiB_per_second);
}

// summary.json's "kv_cache" object.
json KvCacheJson(const KvResults& results, const config::KvCacheConfig& config) {
  json per_rank = json::array();
  for (const KvRankFigures& r : results.ranks) {
    json o;
    o["rank"] = r.rank;
    o["requests"] = r.requests;
    o["seconds"] = metrics::JsonNumber<json>(r.seconds);
    AddRates(r, o);
    o["end_to_end_p95_ms"] = metrics::JsonNumber<json>(r.end_to_end_p95_ms);
    o["storage_p95_ms"] = metrics::JsonNumber<json>(r.storage_p95_ms);
    per_rank.push_back(std::move(o));
  }
  const KvRankFigures total = Aggregate(results.ranks);
  json o = FiguresJson(results.all, config, static_cast<int>(results.ranks.size()),
                       total.storage_tokens_per_second);
  json agg;
  AddRates(total, agg);
  agg["max_rank_end_to_end_p95_ms"] = metrics::JsonNumber<json>(total.end_to_end_p95_ms);
  agg["max_rank_storage_p95_ms"] = metrics::JsonNumber<json>(total.storage_p95_ms);
  o["aggregate"] = std::move(agg);
  o["per_rank"] = std::move(per_rank);
  return o;
}

// <rank>_kv_cache.json's text: the same object for one rank's figures.
std::string KvRankJson(const KvFigures& local, int rank, const config::KvCacheConfig& config) {
  const KvRankFigures me = RankFigures(local, rank);
  json o = FiguresJson(local, config, 1, me.storage_tokens_per_second);
  o["rank"] = rank;
  return o.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

// A few console lines (each ending in a newline).
std::string KvConsoleLines(const KvResults& results) {
  const KvFigures& f = results.all;
  const KvRankFigures total = Aggregate(results.ranks);
  std::ostringstream out;
  char line[512];
  std::snprintf(line, sizeof line,
                "  kv-cache: %llu requests, %llu tokens in %.1f s: %.1f tokens/s wall, %.1f "
                "tokens/s storage\n",
                static_cast<unsigned long long>(f.requests),
                static_cast<unsigned long long>(f.tokens_generated), f.seconds,
                Rate(static_cast<double>(f.tokens_generated), f.seconds),
                total.storage_tokens_per_second);
  out << line;
  if (!f.accelerator_path.empty()) {
    out << "  kv-cache accelerator tier: " << f.accelerator_path << " (" << f.accelerator_reason
        << ")\n";
  }
  for (int t = 0; t < kTierCount; ++t) {
    const TierFigures& x = f.tier[t];
    if (x.reads + x.writes + x.evict_reads + x.evict_writes == 0) continue;
    std::snprintf(line, sizeof line,
                  "  kv-cache %s: %.1f MiB read (%.3f GiB/s), %.1f MiB written (%.3f GiB/s), "
                  "read p95 %.2f ms, write p95 %.2f ms\n",
                  std::string(TierName(static_cast<Tier>(t))).c_str(),
                  static_cast<double>(x.read_bytes + x.evict_read_bytes) / 1048576.0,
                  Rate(static_cast<double>(x.read_bytes + x.evict_read_bytes) / kGiB, f.seconds),
                  static_cast<double>(x.write_bytes + x.evict_write_bytes) / 1048576.0,
                  Rate(static_cast<double>(x.write_bytes + x.evict_write_bytes) / kGiB, f.seconds),
                  Ms(x.read.Percentile(0.95)), Ms(x.write.Percentile(0.95)));
    out << line;
  }
  std::snprintf(line, sizeof line,
                "  kv-cache latency: end-to-end p95 %.2f ms (largest rank's %.2f ms), storage p95 "
                "%.2f ms; storage read %.3f GiB/s summed over ranks\n",
                Ms(f.end_to_end.Percentile(0.95)), total.end_to_end_p95_ms,
                Ms(f.storage.Percentile(0.95)), total.storage_read_GiB_per_second);
  out << line;
  return out.str();
}

}  // namespace

Status KvCacheResults::Collect(session::Session& session, output::RunResults& run) {
  merged_ = CollectKvResults(local_, session.cluster());
  if (merged_.all.interrupted_by != 0) run.interrupted_by = merged_.all.interrupted_by;
  return Status::OK();
}

void KvCacheResults::AddToSummary(const output::RunResults& run,
                                  const config::LoadedManifest& manifest, json& summary,
                                  json& iomimic) const {
  (void)run, (void)iomimic;
  summary["kv_cache"] = KvCacheJson(merged_, manifest.config.kv_cache);
}

Status KvCacheResults::WriteRankFiles(const std::string& folder, const output::RunResults& run,
                                      const config::Config& config) {
  // <rank>_kv_cache.json: each rank's own figures, as training's per-rank files.
  IOMIMIC_RETURN_IF_ERROR(
      output::WriteTextFile(folder + "/" + std::to_string(run.rank) + "_kv_cache.json",
                            KvRankJson(local_, run.rank, config.kv_cache)));
  const std::string& name = config.kv_cache.reference_results;
  if (run.rank != 0 || name.empty()) return Status::OK();
  // The reference's results file of the run (kv_cache.reference_results).
  const KvRankFigures total = Aggregate(merged_.ranks);
  json file = ReferenceResultsJson(
      merged_.all, ReferenceOptions(config.kv_cache, total.storage_tokens_per_second));
  file["iomimic_kv_cache"] = KvCacheJson(merged_, config.kv_cache);
  return output::WriteTextFile(name.front() == '/' ? name : folder + "/" + name,
                               file.dump(4, ' ', false, json::error_handler_t::replace) + "\n");
}

std::string KvCacheResults::ConsoleLines(const output::RunResults& run,
                                         const config::Config& config) const {
  (void)run, (void)config;
  return KvConsoleLines(merged_);
}

Result<std::shared_ptr<output::WorkflowResults>> RunKvCacheWorkflow(
    session::Session& session, const output::WorkflowContext& context) {
  KvRunOptions options;
  options.registry = context.registry;
  const std::string& name = session.config().kv_cache.io_trace_log;
  if (!name.empty()) {
    const int rank = session.cluster().rank();
    options.trace_path = (name.front() == '/' ? name : context.folder + "/" + name) +
                         (rank > 0 ? ".rank" + std::to_string(rank) : "");
  }
  return output::ResultsOf<KvCacheResults>(RunKvCache(session, options));
}

const output::FigureList& Figures() {
  static const output::FigureList figures = [] {
    output::FigureList out = {
        {"kv requests", {"kv_cache", "requests"}, true},
        {"kv requests/s", {"kv_cache", "requests_per_second"}, true},
        {"kv storage tokens/s", {"kv_cache", "aggregate", "storage_tokens_per_second"}, true},
        {"kv wall tokens/s", {"kv_cache", "wall_tokens_per_second"}, true},
        {"kv hit rate", {"kv_cache", "cache", "hit_rate"}, true},
    };
    // A memory tier counts where the run had one (capacity above 0); the
    // storage tier always exists.
    for (const char* tier : {"gpu", "cpu", "storage"}) {
      for (const char* way : {"read", "write"}) {
        out.push_back(
            {std::string("kv ") + tier + " " + way + " GiB/s",
             {"kv_cache", "tiers", tier, std::string(way) + "_GiB_per_second"},
             true,
             std::string(tier) == "storage"
                 ? std::vector<std::string>{}
                 : std::vector<std::string>{"kv_cache", "tiers", tier, "capacity_bytes"}});
      }
    }
    for (const auto& [what, label] : {std::pair{"end_to_end", "e2e"}, {"storage", "storage"}}) {
      for (const char* p : {"p50", "p95", "p99"}) {
        out.push_back({std::string("kv ") + label + " " + p + " ms",
                       {"kv_cache", "latency_ms", what, p},
                       false});
      }
    }
    // A QoS class counts where it had requests.
    for (const char* name : {"interactive", "responsive", "batch"}) {
      const std::vector<std::string> had = {"kv_cache", "qos", name, "requests"};
      out.push_back({std::string("kv ") + name + " p95 ms",
                     {"kv_cache", "qos", name, "latency_ms", "p95"},
                     false,
                     had});
      out.push_back({std::string("kv ") + name + " SLA",
                     {"kv_cache", "qos", name, "sla_compliance"},
                     true,
                     had});
    }
    return out;
  }();
  return figures;
}

}  // namespace iomimic::kvcache
