// A log-linear latency histogram (nanoseconds), mergeable across threads and
// ranks by summing bucket counts.
//
// Values are bucketed by their power of two, each power split into 64 linear
// sub-buckets, and a percentile is reported as the midpoint of its bucket, so
// it is within 1/128 (0.78 %) of the true value at every scale from
// nanoseconds to centuries (tested in metrics_test.cpp). Recording is
// lock-free; merging is adding bucket counts (Export/Import, MergeFrom).

#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <vector>

namespace iomimic::metrics {

class LatencyHistogram {
 public:
  static constexpr int kSubBits = 6;
  static constexpr int kSubBuckets = 1 << kSubBits;
  // Values below kSubBuckets are exact; above, 64 buckets per power of two.
  static constexpr int kBuckets = (64 - kSubBits + 1) * kSubBuckets;

  LatencyHistogram() { Reset(); }
  LatencyHistogram(const LatencyHistogram& other) { *this = other; }
  LatencyHistogram& operator=(const LatencyHistogram& other);

  // Thread-safe.
  void Record(std::uint64_t nanoseconds);
  // Adds every value of `other` (same bucket layout). Thread-safe for
  // concurrent Record calls on this histogram.
  void MergeFrom(const LatencyHistogram& other);
  // The largest relative error of Percentile for values above the exact
  // range: half a bucket's width over its lower bound.
  static constexpr double kMaxRelativeError = 1.0 / (2 * kSubBuckets);
  void Reset();

  std::uint64_t count() const { return count_.load(std::memory_order_relaxed); }
  std::uint64_t sum_ns() const { return sum_.load(std::memory_order_relaxed); }
  std::uint64_t max_ns() const { return max_.load(std::memory_order_relaxed); }
  std::uint64_t min_ns() const;
  double mean_ns() const;
  // The value below which `q` (0..1) of the recorded values fall, reported as
  // the midpoint of the bucket that holds it (clamped to the recorded max).
  std::uint64_t Percentile(double q) const;

  // Bucket counts followed by count, sum, max and min, for MPI reductions.
  std::vector<std::uint64_t> Export() const;
  // Rebuilds from a vector made by Export (after summing). max/min must be
  // reduced separately by the caller and are passed here.
  static LatencyHistogram Import(const std::vector<std::uint64_t>& data, std::uint64_t max_ns,
                                 std::uint64_t min_ns);

  // The count of bucket `bucket` (0..kBuckets-1).
  std::uint64_t bucket_count(int bucket) const {
    return buckets_[bucket].load(std::memory_order_relaxed);
  }

  static int BucketOf(std::uint64_t v);
  static std::uint64_t BucketLow(int bucket);
  static std::uint64_t BucketHigh(int bucket);

 private:
  std::array<std::atomic<std::uint64_t>, kBuckets> buckets_;
  std::atomic<std::uint64_t> count_{0};
  std::atomic<std::uint64_t> sum_{0};
  std::atomic<std::uint64_t> max_{0};
  std::atomic<std::uint64_t> min_{UINT64_MAX};
};

}  // namespace iomimic::metrics
