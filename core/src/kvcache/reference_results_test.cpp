#include "kvcache/reference_results.h"

#include <doctest/doctest.h>

#include <string>

namespace iomimic::kvcache {
namespace {

constexpr std::uint64_t kMs = 1000000;  // nanoseconds

// A run's figures with every tier, QoS class but one, and kind of hit used.
KvFigures Figures() {
  KvFigures f;
  f.seconds = 2;
  f.requests = 4;
  f.tokens_generated = 400;
  f.cache_hits = 20;
  f.cache_misses = 5;
  f.user_cache_hits = 12;
  f.system_prompt_hits = 3;
  f.multi_turn_hits = 5;
  f.multi_turn_misses = 1;
  f.prefix_lookups = 1;
  f.prefix_misses = 3;
  f.prefix_bytes_saved = 9 * 131072;
  f.prefill_writes = 4;
  f.decode_reads = 20;
  f.offloads_cpu = 2;      // demotions to the host tier
  f.offloads_storage = 1;  // and to storage
  f.tier[static_cast<int>(Tier::kAccelerator)].writes = 1;
  f.tier[static_cast<int>(Tier::kHost)].writes = 1;  // prefill writes into the host tier
  f.tier[static_cast<int>(Tier::kStorage)].writes = 2;
  f.tier[static_cast<int>(Tier::kStorage)].write_bytes = 1ULL << 30;
  f.tier[static_cast<int>(Tier::kStorage)].read_bytes = 3ULL << 30;
  for (std::uint64_t ms : {10, 20, 30, 40}) f.end_to_end.Record(ms * kMs);
  f.qos_requests[static_cast<int>(QosLevel::kInteractive)] = 3;
  f.qos_violations[static_cast<int>(QosLevel::kInteractive)] = 1;
  for (std::uint64_t ms : {10, 20, 60}) f.qos_end_to_end[0].Record(ms * kMs);
  f.qos_requests[static_cast<int>(QosLevel::kBatch)] = 1;
  f.qos_end_to_end[2].Record(40 * kMs);
  // Storage: the requests' own operations (a demotion's would not count).
  TierFigures& s = f.tier[static_cast<int>(Tier::kStorage)];
  s.request_write.Record(300 * kMs);
  s.request_read.Record(250 * kMs);
  f.request_write_device.Record(300 * kMs);
  f.request_read_device.Record(250 * kMs);
  f.request_write_host.Record(1 * kMs);
  f.request_read_host.Record(1 * kMs);
  f.tier[static_cast<int>(Tier::kHost)].request_write.Record(2 * kMs);
  f.samples.recorded = true;
  f.samples.end_to_end = {0.01, 0.02, 0.03, 0.04};
  f.samples.prefill = {0.3, 0, 0, 0};
  f.samples.decode = {0.25};
  return f;
}

TEST_CASE("reference results: the reference's keys with its meaning") {
  ReferenceResultsOptions options;
  options.seed = 7;
  const nlohmann::ordered_json r = ReferenceResultsJson(Figures(), options);
  CHECK(r["requests_completed"] == 4);
  CHECK(r["seed"] == 7);
  CHECK(r["end_to_end_latencies"].size() == 4);
  CHECK(r["decode_latencies"] == nlohmann::ordered_json::array({0.25}));
  CHECK(r["throughput_timeline"].empty());
  const auto& s = r["summary"];
  const auto& c = s["cache_stats"];
  // Offloads: an entry written into a lower tier, by a prefill or a demotion.
  CHECK(c["offloads_cpu"] == 3);
  CHECK(c["offloads_storage"] == 3);
  // Hits by kind: the system prompt's requests' reads are not user hits.
  CHECK(c["system_prompt_hits"] == 3);
  CHECK(c["user_cache_hits"] == 12);
  CHECK(c["common_phrase_hits"] == 0);
  CHECK(c["tier_storage_read_bandwidth_gbps"].get<double>() == doctest::Approx(1.5));
  // Percentile keys of the tiers with operations only, from the requests' own.
  CHECK(c["storage_write_p50_ms"].get<double>() == doctest::Approx(300).epsilon(0.01));
  CHECK(c["storage_read_device_p95_ms"].get<double>() == doctest::Approx(250).epsilon(0.01));
  CHECK(c.contains("cpu_write_p99_ms"));
  CHECK_FALSE(c.contains("cpu_read_p99_ms"));
  CHECK_FALSE(c.contains("gpu_read_p50_ms"));
  // storage_health, latency profile: write 300 < 500, read 250 >= 200, CPU, hit rate.
  const auto& h = c["storage_health"];
  CHECK(h["overall_status"] == "FAIL");
  CHECK(h["total_count"] == 4);
  CHECK(h["passed_count"] == 3);
  CHECK(h["criteria"][0]["name"] == "Storage Tier Write Device P95 < 500ms");
  CHECK(h["criteria"][1]["name"] == "Storage Tier Read Device P95 < 200ms");
  CHECK(h["criteria"][1]["passed"] == false);
  CHECK(h["criteria"][2]["name"] == "CPU RAM P95 < 150ms");
  CHECK(h["criteria"][3]["actual"].get<double>() == doctest::Approx(0.8));
  // qos_metrics: per class, no_data for a class without requests.
  const auto& q = s["qos_metrics"];
  CHECK(q["interactive"]["total_requests"] == 3);
  CHECK(q["interactive"]["sla"]["target_p95_ms"] == 50);
  CHECK(q["interactive"]["sla"]["compliance"].get<double>() == doctest::Approx(2.0 / 3));
  CHECK(q["interactive"]["sla"]["met"] == false);
  CHECK(q["interactive"]["latency_ms"]["max"].get<double>() == doctest::Approx(60));
  CHECK(q["responsive"] == nlohmann::ordered_json({{"no_data", true}}));
  CHECK(q["batch"]["sla"]["met"] == true);
  // prefix_cache_stats: the system-prompt draws.
  const auto& p = s["prefix_cache_stats"];
  CHECK(p["prefix_hits"] == 1);
  CHECK(p["prefix_misses"] == 3);
  CHECK(p["system_prompt_reuse"] == 1);
  CHECK(p["bytes_saved"] == 9 * 131072);
  CHECK(s["autoscaling_summary"].is_null());
  // Without prefix caching the reference's object is empty; the throughput
  // profile's criteria are the storage bandwidths.
  options.prefix_caching = false;
  options.performance_profile = "throughput";
  const nlohmann::ordered_json t = ReferenceSummaryJson(Figures(), options);
  CHECK(t["prefix_cache_stats"].empty());
  const auto& th = t["cache_stats"]["storage_health"];
  CHECK(th["criteria"].size() == 2);
  CHECK(th["criteria"][0]["name"] == "Storage KV Read Bandwidth");
  CHECK(th["criteria"][0]["actual"] == "1.50");
  CHECK(th["criteria"][1]["actual"] == "0.50");
  CHECK(th["overall_status"] == "PASS");
}

}  // namespace
}  // namespace iomimic::kvcache
