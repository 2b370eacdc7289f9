#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <vector>

#include "metrics/histogram.h"
#include "metrics/records.h"

namespace iomimic::metrics {
namespace {

// A block whose start and end are `wall` seconds apart.
PhaseRecord Block(double wall, std::vector<double> load, std::vector<double> compute) {
  PhaseRecord b;
  b.start = Stamp::Now();
  b.end = b.start;
  b.end.mono += std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(wall));
  b.load = load;
  b.compute = compute;
  for (std::size_t i = 0; i < load.size(); ++i) b.proc.push_back(load[i] + compute[i]);
  return b;
}

}  // namespace

TEST_CASE("AU and throughput of a block, computed by hand") {
  // 5 steps: the first waits 0.5 s for data, the others 0.1 s; compute 1 s.
  // proc = load + compute; wall = sum(proc) + 0.05 s of barriers = 5.95 s.
  PhaseRecord b = Block(5.95, {0.5, 0.1, 0.1, 0.1, 0.1}, {1, 1, 1, 1, 1});
  PhaseMetrics m = TrainBlockMetrics(b, /*exclude_start=*/1, /*exclude_end=*/0, /*batch=*/4);
  // Window = steps 1..4: compute 4 s; time = 5.95 - proc[0] (1.5) = 4.45 s.
  CHECK(m.au_percent == doctest::Approx(100.0 * 4.0 / 4.45));
  // DLIO: (steps - 2) / time * batch = 3 / 4.45 * 4.
  CHECK(m.samples_per_second == doctest::Approx(3.0 / 4.45 * 4.0));
  CHECK(m.steps == 5);

  // Excluding the last step too: window 1..3, compute 3 s, time 5.95-1.5-1.1.
  PhaseMetrics e = TrainBlockMetrics(b, 1, 1, 4);
  CHECK(e.au_percent == doctest::Approx(100.0 * 3.0 / (5.95 - 1.5 - 1.1)));
}

TEST_CASE("AU is zero without compute and throughput is zero for tiny blocks") {
  PhaseRecord b = Block(1.0, {0.2, 0.2}, {0, 0});
  PhaseMetrics m = TrainBlockMetrics(b, 1, 0, 8);
  CHECK(m.au_percent == 0);
  CHECK(m.samples_per_second == 0);  // steps - 2 == 0
}

TEST_CASE("eval throughput is steps over wall time, no exclusions") {
  PhaseRecord e = Block(4.0, {0.5, 0.5, 0.5, 0.5}, {0.5, 0.5, 0.5, 0.5});
  PhaseMetrics m = EvalMetrics(e, 1, 0, 2);
  CHECK(m.samples_per_second == doctest::Approx(4.0 / 4.0 * 2));
  CHECK(m.au_percent == doctest::Approx(100.0 * 1.5 / 3.0));
}

TEST_CASE("epoch values are step-weighted over blocks, and summaries use population stdev") {
  PhaseMetrics a{90, 100, 3}, b{60, 40, 1};
  PhaseMetrics c = CombineBlocks({a, b});
  CHECK(c.au_percent == doctest::Approx((90 * 3 + 60) / 4.0));
  CHECK(c.samples_per_second == doctest::Approx((300 + 40) / 4.0));
  MeanStdev s = Summarize({1, 2, 3, 4});
  CHECK(s.mean == doctest::Approx(2.5));
  CHECK(s.stdev == doctest::Approx(1.118033988749895));
}

TEST_CASE("histogram percentiles are within one sub-bucket") {
  LatencyHistogram h;
  for (std::uint64_t v = 1; v <= 100000; ++v) h.Record(v * 1000);  // 1 us .. 100 ms
  CHECK(h.count() == 100000);
  const double p50 = static_cast<double>(h.Percentile(0.5));
  const double p99 = static_cast<double>(h.Percentile(0.99));
  CHECK(p50 == doctest::Approx(50000.0 * 1000).epsilon(LatencyHistogram::kMaxRelativeError));
  CHECK(p99 == doctest::Approx(99000.0 * 1000).epsilon(LatencyHistogram::kMaxRelativeError));
  CHECK(h.max_ns() == 100000ULL * 1000);
  CHECK(h.min_ns() == 1000);
  for (int b = 0; b < LatencyHistogram::kBuckets; ++b) {
    CHECK(LatencyHistogram::BucketOf(LatencyHistogram::BucketLow(b)) == b);
    CHECK(LatencyHistogram::BucketOf(LatencyHistogram::BucketHigh(b)) == b);
  }
  // Export / Import round trip (what the MPI merge does).
  LatencyHistogram back = LatencyHistogram::Import(h.Export(), h.max_ns(), h.min_ns());
  CHECK(back.Percentile(0.5) == h.Percentile(0.5));
  CHECK(back.count() == h.count());
}

TEST_CASE("every percentile is within 1% of the exact one, at every scale") {
  // Values spread over 12 decades (1 ns .. 1000 s), log-uniform.
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> decade(0.0, 12.0);
  std::vector<std::uint64_t> values;
  LatencyHistogram h;
  for (int i = 0; i < 200000; ++i) {
    const auto v = static_cast<std::uint64_t>(std::pow(10.0, decade(rng)));
    values.push_back(v);
    h.Record(v);
  }
  std::sort(values.begin(), values.end());
  CHECK(LatencyHistogram::kMaxRelativeError <= 0.01);
  for (double q : {0.001, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 0.9999}) {
    // The exact q-quantile: the ceil(q * n)-th smallest value.
    const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(values.size())));
    const double exact = static_cast<double>(values[rank - 1]);
    const double got = static_cast<double>(h.Percentile(q));
    const double bound = exact < LatencyHistogram::kSubBuckets
                             ? 0.0  // exact below the first power of two with sub-buckets
                             : LatencyHistogram::kMaxRelativeError * exact;
    INFO("q = " << q << ", exact " << exact << ", reported " << got);
    CHECK(std::abs(got - exact) <= bound + 0.5);
  }
}

TEST_CASE("histograms merge by adding buckets: two halves equal the whole") {
  LatencyHistogram whole, a, b;
  for (std::uint64_t v = 1; v < 50000; v += 7) {
    whole.Record(v * 13);
    (v % 2 == 0 ? a : b).Record(v * 13);
  }
  LatencyHistogram merged;
  merged.MergeFrom(a);
  merged.MergeFrom(b);
  CHECK(merged.count() == whole.count());
  CHECK(merged.sum_ns() == whole.sum_ns());
  CHECK(merged.max_ns() == whole.max_ns());
  CHECK(merged.min_ns() == whole.min_ns());
  for (double q : {0.1, 0.5, 0.9, 0.99}) CHECK(merged.Percentile(q) == whole.Percentile(q));
  CHECK(merged.Export() == whole.Export());
}

}  // namespace iomimic::metrics
