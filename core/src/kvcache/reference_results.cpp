#include "kvcache/reference_results.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "metrics/figures_json.h"

namespace iomimic::kvcache {
namespace {

using json = nlohmann::ordered_json;
constexpr double kReferenceGiB = 1024.0 * 1024.0 * 1024.0;

double ReferenceRate(double amount, double seconds) { return seconds > 0 ? amount / seconds : 0; }
double Gb(std::uint64_t bytes) { return static_cast<double>(bytes) / kReferenceGiB; }
json Num(double v) { return metrics::JsonNumber<json>(v); }

// Of every cache lookup, the share that hit.
double HitRate(const KvFigures& f) {
  const std::uint64_t accesses = f.cache_hits + f.cache_misses;
  return accesses > 0 ? static_cast<double>(f.cache_hits) / static_cast<double>(accesses) : 0;
}

// A percentile of `h` in milliseconds (0 when empty).
double PercentileMs(const metrics::LatencyHistogram& h, double q) {
  return h.count() > 0 ? static_cast<double>(h.Percentile(q)) / 1e6 : 0;
}

// The reference's percentile suffixes and their quantiles.
constexpr struct {
  const char* suffix;
  double q;
} kPercentiles[] = {
    {"p50", 0.50}, {"p95", 0.95}, {"p99", 0.99}, {"p999", 0.999}, {"p9999", 0.9999}};

// {mean, p50, p95, p99, p999, p9999} in milliseconds: the reference's
// end_to_end_latency_ms and its siblings.
json Distribution(const metrics::LatencyHistogram& h) {
  json o;
  o["mean"] = Num(h.mean_ns() / 1e6);
  for (const auto& p : kPercentiles) o[p.suffix] = Num(PercentileMs(h, p.q));
  return o;
}

// <prefix>_p50_ms ... <prefix>_p9999_ms of `h` into `o`, when it holds any.
void PercentileKeys(const std::string& prefix, const metrics::LatencyHistogram& h, json& o) {
  if (h.count() == 0) return;
  for (const auto& p : kPercentiles) {
    o[prefix + "_" + p.suffix + "_ms"] = Num(PercentileMs(h, p.q));
  }
}

json Criterion(const std::string& name, json target, json actual, const char* unit, bool passed) {
  json c;
  c["name"] = name;
  c["target"] = std::move(target);
  c["actual"] = std::move(actual);
  c["unit"] = unit;
  c["passed"] = passed;
  return c;
}

// The reference's storage_health: its pass/fail criteria for the
// performance profile (docs/kvcache-reference.md, "The results JSON").
json StorageHealth(const KvFigures& f, const std::string& profile) {
  json criteria = json::array();
  const TierFigures& storage = f.tier[static_cast<int>(Tier::kStorage)];
  if (profile == "throughput") {
    const double read = ReferenceRate(Gb(storage.read_bytes), f.seconds);
    const double write = ReferenceRate(Gb(storage.write_bytes), f.seconds);
    char text[64];
    if (storage.read_bytes > 0 || storage.write_bytes == 0) {
      std::snprintf(text, sizeof text, "%.2f", read);
      criteria.push_back(Criterion("Storage KV Read Bandwidth", ">0", text, "GiB/s", read > 0));
    }
    if (storage.write_bytes > 0 || storage.read_bytes == 0) {
      std::snprintf(text, sizeof text, "%.2f", write);
      criteria.push_back(Criterion("Storage KV Write Bandwidth", ">0", text, "GiB/s", write > 0));
    }
  } else {
    // The device part of the storage latencies where there is one, as the reference.
    auto storage_p95 = [&](const metrics::LatencyHistogram& device,
                           const metrics::LatencyHistogram& total, const char* op, int limit_ms) {
      const bool by_device = device.count() > 0;
      const metrics::LatencyHistogram& basis = by_device ? device : total;
      if (basis.count() == 0) return;
      const double p95 = PercentileMs(basis, 0.95);
      criteria.push_back(Criterion(std::string("Storage Tier ") + op +
                                       (by_device ? " Device" : " Total") + " P95 < " +
                                       std::to_string(limit_ms) + "ms",
                                   limit_ms, Num(p95), "ms", p95 < limit_ms));
    };
    storage_p95(f.request_write_device, storage.request_write, "Write", 500);
    storage_p95(f.request_read_device, storage.request_read, "Read", 200);
    const TierFigures& cpu = f.tier[static_cast<int>(Tier::kHost)];
    if (cpu.request_read.count() + cpu.request_write.count() > 0) {
      metrics::LatencyHistogram both = cpu.request_read;
      both.MergeFrom(cpu.request_write);
      const double p95 = PercentileMs(both, 0.95);
      criteria.push_back(Criterion("CPU RAM P95 < 150ms", 150, Num(p95), "ms", p95 < 150));
    }
    if (f.cache_hits + f.cache_misses > 0) {
      const double rate = HitRate(f);
      criteria.push_back(Criterion("Cache Hit Rate > 30%", 0.3, Num(rate), "ratio", rate > 0.3));
    }
  }
  std::size_t passed = 0;
  for (const json& c : criteria) passed += c["passed"].get<bool>() ? 1 : 0;
  const std::size_t total = criteria.size();
  json o;
  o["overall_status"] = passed == total ? "PASS" : "FAIL";
  o["criteria"] = std::move(criteria);
  o["passed_count"] = passed;
  o["total_count"] = total;
  return o;
}

// The reference's cache_stats.
json CacheStats(const KvFigures& f, const std::string& profile) {
  const TierFigures& gpu = f.tier[static_cast<int>(Tier::kAccelerator)];
  const TierFigures& cpu = f.tier[static_cast<int>(Tier::kHost)];
  const TierFigures& storage = f.tier[static_cast<int>(Tier::kStorage)];
  json c;
  c["cache_hit_rate"] = Num(HitRate(f));
  c["cache_hits"] = f.cache_hits;
  c["cache_misses"] = f.cache_misses;
  c["gpu_entries"] = gpu.entries;
  c["cpu_entries"] = cpu.entries;
  c["storage_entries"] = storage.entries;
  c["gpu_memory_used_gb"] = Num(Gb(gpu.used_bytes));
  c["cpu_memory_used_gb"] = Num(Gb(cpu.used_bytes));
  // The reference counts an entry written into a lower tier, by a prefill or
  // a demotion, as an offload.
  c["offloads_cpu"] = f.offloads_cpu + cpu.writes;
  c["offloads_storage"] = f.offloads_storage + storage.writes;
  c["storage_health"] = StorageHealth(f, profile);
  c["prefill_writes"] = f.prefill_writes;
  c["decode_reads"] = f.decode_reads;
  // The requests' own bytes (prefill writes, reads), not the demotions'.
  auto name = [](int t) { return std::string(TierName(static_cast<Tier>(t))); };
  for (int t = 0; t < kTierCount; ++t) {
    c["tier_" + name(t) + "_kv_bytes_written_gb"] = Num(Gb(f.tier[t].write_bytes));
  }
  for (int t = 0; t < kTierCount; ++t) {
    c["tier_" + name(t) + "_kv_bytes_read_gb"] = Num(Gb(f.tier[t].read_bytes));
  }
  for (int t = 0; t < kTierCount; ++t) {
    c["tier_" + name(t) + "_read_bandwidth_gbps"] =
        Num(ReferenceRate(Gb(f.tier[t].read_bytes), f.seconds));
    c["tier_" + name(t) + "_write_bandwidth_gbps"] =
        Num(ReferenceRate(Gb(f.tier[t].write_bytes), f.seconds));
  }
  c["system_prompt_hits"] = f.system_prompt_hits;
  c["common_phrase_hits"] = 0;  // the reference never draws a common phrase
  c["user_cache_hits"] = f.user_cache_hits;
  c["multi_turn_hits"] = f.multi_turn_hits;
  c["total_read_bytes"] = f.total_read_bytes;
  c["total_write_bytes"] = f.total_write_bytes;
  c["total_read_gb"] = Num(Gb(f.total_read_bytes));
  c["total_write_gb"] = Num(Gb(f.total_write_bytes));
  c["read_write_ratio"] = Num(static_cast<double>(f.total_read_bytes) /
                              static_cast<double>(std::max<std::uint64_t>(f.total_write_bytes, 1)));
  c["read_iops"] = f.read_operations;
  c["write_iops"] = f.write_operations;
  c["storage_tokens_processed"] = Num(f.storage_tokens_processed);
  for (int t = 0; t < kTierCount; ++t) {
    PercentileKeys(name(t) + "_read", f.tier[t].request_read, c);
    PercentileKeys(name(t) + "_write", f.tier[t].request_write, c);
  }
  PercentileKeys("storage_read_device", f.request_read_device, c);
  PercentileKeys("storage_read_host", f.request_read_host, c);
  PercentileKeys("storage_write_device", f.request_write_device, c);
  PercentileKeys("storage_write_host", f.request_write_host, c);
  return c;
}

// The reference's qos_metrics: per class its completed requests' latencies
// and the share within the class's P95 target.
json QosMetrics(const KvFigures& f) {
  json o;
  for (int q = 0; q < kQosCount; ++q) {
    const QosLevel level = static_cast<QosLevel>(q);
    const metrics::LatencyHistogram& h = f.qos_end_to_end[q];
    json c;
    if (f.qos_requests[q] == 0) {
      c["no_data"] = true;
    } else {
      c["total_requests"] = f.qos_requests[q];
      json lat;
      lat["mean"] = Num(h.mean_ns() / 1e6);
      lat["p50"] = Num(PercentileMs(h, 0.50));
      lat["p95"] = Num(PercentileMs(h, 0.95));
      lat["p99"] = Num(PercentileMs(h, 0.99));
      lat["max"] = Num(static_cast<double>(h.max_ns()) / 1e6);
      c["latency_ms"] = std::move(lat);
      const double compliance =
          1.0 - static_cast<double>(f.qos_violations[q]) / static_cast<double>(f.qos_requests[q]);
      json sla;
      sla["target_p95_ms"] = std::llround(QosTargetP95Ms(level));
      sla["actual_p95_ms"] = Num(PercentileMs(h, 0.95));
      sla["compliance"] = Num(compliance);
      sla["met"] = compliance >= 0.95;
      c["sla"] = std::move(sla);
    }
    o[QosLevelName(level)] = std::move(c);
  }
  return o;
}

}  // namespace

json ReferenceSummaryJson(const KvFigures& f, const ReferenceResultsOptions& options) {
  const double s = f.seconds;
  json o;
  o["total_requests"] = f.requests;
  o["total_tokens"] = f.tokens_generated;
  o["elapsed_time"] = Num(s);
  o["avg_throughput_tokens_per_sec"] =
      Num(ReferenceRate(static_cast<double>(f.tokens_generated), s));
  o["total_storage_io_time"] = Num(f.storage_io_seconds);
  o["storage_throughput_tokens_per_sec"] = Num(options.storage_tokens_per_second);
  o["requests_per_second"] = Num(ReferenceRate(static_cast<double>(f.requests), s));
  o["end_to_end_latency_ms"] = Distribution(f.end_to_end);
  o["storage_io_latency_ms"] = Distribution(f.storage);
  o["generation_latency_ms"] = Distribution(f.generation);
  o["cache_stats"] = CacheStats(f, options.performance_profile);
  o["qos_metrics"] = QosMetrics(f);
  json prefix = json::object();
  if (options.prefix_caching) {
    prefix["prefix_hits"] = f.prefix_lookups;
    prefix["prefix_misses"] = f.prefix_misses;
    prefix["system_prompt_reuse"] = f.prefix_lookups;
    prefix["common_phrase_reuse"] = 0;
    prefix["bytes_saved"] = f.prefix_bytes_saved;
  }
  o["prefix_cache_stats"] = std::move(prefix);
  o["autoscaling_stats"] = json::array();
  o["autoscaling_summary"] = nullptr;
  json m;
  m["cache_hits"] = f.multi_turn_hits;
  m["cache_misses"] = f.multi_turn_misses;
  m["hit_rate"] =
      Num(static_cast<double>(f.multi_turn_hits) /
          static_cast<double>(std::max<std::uint64_t>(f.multi_turn_hits + f.multi_turn_misses, 1)));
  o["multi_turn_stats"] = std::move(m);
  return o;
}

json ReferenceResultsJson(const KvFigures& f, const ReferenceResultsOptions& options) {
  json o;
  o["requests_completed"] = f.requests;
  o["total_tokens_generated"] = f.tokens_generated;
  o["total_storage_io_latency"] = Num(f.storage_io_seconds);
  o["total_generation_latency"] = Num(f.generation_seconds);
  o["end_to_end_latencies"] = metrics::JsonNumbers<json>(f.samples.end_to_end);
  o["storage_latencies"] = metrics::JsonNumbers<json>(f.samples.storage);
  o["generation_latencies"] = metrics::JsonNumbers<json>(f.samples.generation);
  o["throughput_timeline"] = json::array();  // the reference fills it only when autoscaling
  o["prefill_latencies"] = metrics::JsonNumbers<json>(f.samples.prefill);
  o["decode_latencies"] = metrics::JsonNumbers<json>(f.samples.decode);
  o["multi_turn_cache_hits"] = f.multi_turn_hits;
  o["multi_turn_cache_misses"] = f.multi_turn_misses;
  o["seed"] = options.seed;
  o["summary"] = ReferenceSummaryJson(f, options);
  // What mlpstorage's benchmarks/kvcache.py reads at the top level (copies:
  // adding keys to `o` moves its members).
  const json rate = o["summary"]["requests_per_second"];
  const json e2e = o["summary"]["end_to_end_latency_ms"];
  o["total_requests"] = f.requests;
  o["throughput_req_per_sec"] = rate;
  o["avg_latency_ms"] = e2e["mean"];
  o["p99_latency_ms"] = e2e["p99"];
  o["storage_throughput_mbps"] =
      Num(ReferenceRate(Gb(f.total_read_bytes + f.total_write_bytes) * 1024, f.seconds));
  o["cache_hit_rate"] = Num(HitRate(f));
  return o;
}

}  // namespace iomimic::kvcache
