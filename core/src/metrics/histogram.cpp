#include "metrics/histogram.h"

#include <bit>

namespace iomimic::metrics {

LatencyHistogram& LatencyHistogram::operator=(const LatencyHistogram& other) {
  if (this == &other) return *this;
  for (int i = 0; i < kBuckets; ++i) {
    buckets_[i].store(other.buckets_[i].load(std::memory_order_relaxed), std::memory_order_relaxed);
  }
  count_.store(other.count(), std::memory_order_relaxed);
  sum_.store(other.sum_ns(), std::memory_order_relaxed);
  max_.store(other.max_ns(), std::memory_order_relaxed);
  min_.store(other.min_.load(std::memory_order_relaxed), std::memory_order_relaxed);
  return *this;
}

void LatencyHistogram::Reset() {
  for (auto& b : buckets_) b.store(0, std::memory_order_relaxed);
  count_.store(0);
  sum_.store(0);
  max_.store(0);
  min_.store(UINT64_MAX);
}

int LatencyHistogram::BucketOf(std::uint64_t v) {
  if (v < kSubBuckets) return static_cast<int>(v);
  int msb = 63 - std::countl_zero(v);  // >= kSubBits
  int shift = msb - kSubBits;          // low bits dropped
  int sub = static_cast<int>((v >> shift) & (kSubBuckets - 1));
  return (shift + 1) * kSubBuckets + sub;
}

std::uint64_t LatencyHistogram::BucketLow(int bucket) {
  if (bucket < kSubBuckets) return static_cast<std::uint64_t>(bucket);
  int shift = bucket / kSubBuckets - 1;
  std::uint64_t sub = static_cast<std::uint64_t>(bucket % kSubBuckets);
  return (std::uint64_t{kSubBuckets} | sub) << shift;
}

std::uint64_t LatencyHistogram::BucketHigh(int bucket) {
  if (bucket < kSubBuckets) return static_cast<std::uint64_t>(bucket);
  int shift = bucket / kSubBuckets - 1;
  return BucketLow(bucket) + ((std::uint64_t{1} << shift) - 1);
}

void LatencyHistogram::Record(std::uint64_t v) {
  buckets_[BucketOf(v)].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(v, std::memory_order_relaxed);
  std::uint64_t cur = max_.load(std::memory_order_relaxed);
  while (v > cur && !max_.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
  cur = min_.load(std::memory_order_relaxed);
  while (v < cur && !min_.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}

void LatencyHistogram::MergeFrom(const LatencyHistogram& other) {
  if (other.count() == 0) return;
  for (int i = 0; i < kBuckets; ++i) {
    const std::uint64_t n = other.buckets_[i].load(std::memory_order_relaxed);
    if (n != 0) buckets_[i].fetch_add(n, std::memory_order_relaxed);
  }
  count_.fetch_add(other.count(), std::memory_order_relaxed);
  sum_.fetch_add(other.sum_ns(), std::memory_order_relaxed);
  const std::uint64_t omax = other.max_ns();
  std::uint64_t cur = max_.load(std::memory_order_relaxed);
  while (omax > cur && !max_.compare_exchange_weak(cur, omax, std::memory_order_relaxed)) {
  }
  const std::uint64_t omin = other.min_.load(std::memory_order_relaxed);
  cur = min_.load(std::memory_order_relaxed);
  while (omin < cur && !min_.compare_exchange_weak(cur, omin, std::memory_order_relaxed)) {
  }
}

std::uint64_t LatencyHistogram::min_ns() const {
  std::uint64_t m = min_.load(std::memory_order_relaxed);
  return m == UINT64_MAX ? 0 : m;
}

double LatencyHistogram::mean_ns() const {
  std::uint64_t n = count();
  return n == 0 ? 0.0 : static_cast<double>(sum_ns()) / static_cast<double>(n);
}

std::uint64_t LatencyHistogram::Percentile(double q) const {
  std::uint64_t n = count();
  if (n == 0) return 0;
  if (q <= 0) return min_ns();
  if (q >= 1) return max_ns();
  // Rank of the wanted value, 1-based: ceil(q * n).
  std::uint64_t want = static_cast<std::uint64_t>(q * static_cast<double>(n));
  if (static_cast<double>(want) < q * static_cast<double>(n)) ++want;
  if (want == 0) want = 1;
  std::uint64_t seen = 0;
  for (int i = 0; i < kBuckets; ++i) {
    seen += buckets_[i].load(std::memory_order_relaxed);
    if (seen >= want) {
      std::uint64_t mid = BucketLow(i) + (BucketHigh(i) - BucketLow(i)) / 2;
      if (mid > max_ns()) mid = max_ns();
      if (mid < min_ns()) mid = min_ns();
      return mid;
    }
  }
  return max_ns();
}

std::vector<std::uint64_t> LatencyHistogram::Export() const {
  std::vector<std::uint64_t> out(kBuckets + 2);
  for (int i = 0; i < kBuckets; ++i) out[i] = buckets_[i].load(std::memory_order_relaxed);
  out[kBuckets] = count();
  out[kBuckets + 1] = sum_ns();
  return out;
}

LatencyHistogram LatencyHistogram::Import(const std::vector<std::uint64_t>& data,
                                          std::uint64_t max_ns, std::uint64_t min_ns) {
  LatencyHistogram h;
  if (data.size() != static_cast<std::size_t>(kBuckets + 2)) return h;
  for (int i = 0; i < kBuckets; ++i) h.buckets_[i].store(data[i], std::memory_order_relaxed);
  h.count_.store(data[kBuckets]);
  h.sum_.store(data[kBuckets + 1]);
  h.max_.store(max_ns);
  h.min_.store(h.count_.load() == 0 ? UINT64_MAX : min_ns);
  return h;
}

}  // namespace iomimic::metrics
