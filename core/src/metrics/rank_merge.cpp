#include "metrics/rank_merge.h"

#include <cstddef>
#include <cstdint>

namespace iomimic::metrics {

std::vector<LatencyHistogram> MergeOverRanks(const std::vector<const LatencyHistogram*>& local,
                                             cluster::Cluster& cluster) {
  std::vector<std::uint64_t> buckets;
  std::vector<std::size_t> sizes;
  std::vector<double> extremes;
  for (const LatencyHistogram* h : local) {
    const std::vector<std::uint64_t> exported = h->Export();
    sizes.push_back(exported.size());
    buckets.insert(buckets.end(), exported.begin(), exported.end());
    extremes.push_back(static_cast<double>(h->max_ns()));
    extremes.push_back(-(h->count() == 0 ? 1e300 : static_cast<double>(h->min_ns())));
  }
  buckets = cluster.SumU64s(buckets);
  extremes = cluster.MaxDoubles(extremes);
  std::vector<LatencyHistogram> out;
  std::size_t at = 0;
  for (std::size_t i = 0; i < local.size(); ++i) {
    const std::vector<std::uint64_t> summed(
        buckets.begin() + static_cast<std::ptrdiff_t>(at),
        buckets.begin() + static_cast<std::ptrdiff_t>(at + sizes[i]));
    at += sizes[i];
    const double min = -extremes[2 * i + 1];
    out.push_back(LatencyHistogram::Import(summed, static_cast<std::uint64_t>(extremes[2 * i]),
                                           min >= 1e300 ? 0 : static_cast<std::uint64_t>(min)));
  }
  return out;
}

}  // namespace iomimic::metrics
