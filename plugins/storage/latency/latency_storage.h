// The `latency` storage decorator: makes the back end it wraps look slower or
// farther away, to emulate a remote or throttled storage system with a local
// one.
//
//   storage:
//     backend: latency
//     options: {inner: posix, delay: 2ms, distribution: normal,
//               delay_stdev: 500us, bandwidth: 200M}
//
// Per operation (ReadAt, ReadBatch, and WriteAt unless apply_to_writes is
// false) the decorator first lets the inner back end do the work, then
// waits until
//     max(now, when the bandwidth cap lets the bytes through) + delay
// with steady_clock sleep_until. A ReadBatch is one operation: its requests
// overlap, as on a device with queue depth, so it pays one delay and the cap
// on the sum of its bytes. Metadata calls (Open, Stat, Rename...) and Sync
// pass through undelayed. Failed operations wait too (a slow system is slow
// to fail), with 0 bytes charged.
//
// Delay (option `delay`: seconds, or a number with unit ns, us, ms, s, e.g.
// 500us; default 0) per `distribution`:
//   constant     every operation waits `delay`
//   uniform      mean `delay`: U[delay - sqrt(3)*delay_stdev, delay + sqrt(3)*delay_stdev]
//                (standard deviation delay_stdev), or U[0, 2*delay] without delay_stdev
//   normal       N(delay, delay_stdev)
//   exponential  exponential with mean `delay` (delay_stdev is not used)
// Draws below 0 become 0; `delay_max` (when not 0) caps every draw. Draw i
// of a storage instance depends only on `seed` and i.
//
// Bandwidth (option `bandwidth`: bytes per second with K/M/G suffixes,
// powers of 1024, "/s" allowed; 0 = no cap) is one token bucket shared by
// every thread and file of the storage instance, in its GCRA form: each
// transfer reserves bytes/bandwidth seconds of the link after the previous
// reservation, and `burst` bytes (default 0) may pass at once after idle time.

#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "iomimic/forwarding_storage.h"
#include "iomimic/guard.h"
#include "iomimic/iomimic.h"

namespace iomimic::latency {

using Clock = std::chrono::steady_clock;

enum class Distribution : std::uint8_t { kConstant, kUniform, kNormal, kExponential };

struct LatencyOptions {
  std::chrono::nanoseconds delay{0};
  Distribution distribution = Distribution::kConstant;
  std::chrono::nanoseconds delay_stdev{0};
  std::chrono::nanoseconds delay_max{0};  // 0: no cap
  std::uint64_t bandwidth = 0;            // bytes per second, 0: no cap
  std::uint64_t burst = 0;                // bytes
  bool apply_to_writes = true;
  std::uint64_t seed = 0;
};

// Parses "0.002", "2ms", "500us", "1.5s", "100ns" (a plain number is seconds).
Result<std::chrono::nanoseconds> ParseDuration(std::string_view text);

Result<LatencyOptions> ParseOptions(const PluginOptions& options);

// Per-operation delays. Thread-safe.
class DelayModel {
 public:
  explicit DelayModel(const LatencyOptions& options) : options_(options) {}

  // True when every draw is 0.
  bool zero() const {
    return options_.delay.count() == 0 &&
           !(options_.distribution == Distribution::kUniform && options_.delay_stdev.count() > 0) &&
           !(options_.distribution == Distribution::kNormal && options_.delay_stdev.count() > 0);
  }
  // Draw number `index`: a pure function of the seed and the index.
  std::chrono::nanoseconds Draw(std::uint64_t index) const;
  // The next draw of this instance.
  std::chrono::nanoseconds Next() { return Draw(next_.fetch_add(1, std::memory_order_relaxed)); }

 private:
  LatencyOptions options_;
  std::atomic<std::uint64_t> next_{0};
};

// A token bucket shared by all threads (generic cell rate algorithm: the
// bucket is the time at which the link is next free).
class TokenBucket {
 public:
  TokenBucket(std::uint64_t bytes_per_second, std::uint64_t burst_bytes);

  // Reserves the link for `bytes` at `now`; returns when they have passed.
  Clock::time_point Reserve(std::uint64_t bytes, Clock::time_point now);

 private:
  double ns_per_byte_;
  std::int64_t burst_ns_;
  std::atomic<std::int64_t> next_free_ns_;
};

class LatencyStorage final : public ForwardingStorage {
 public:
  LatencyStorage(Storage* inner, const LatencyOptions& options);

  std::string name() const override { return "latency"; }

  // Waits as one operation that moved `bytes` must (see the file comment).
  void Pace(std::uint64_t bytes);
  const LatencyOptions& options() const { return options_; }

 protected:
  Result<std::unique_ptr<File>> WrapFile(std::unique_ptr<File> file,
                                         const OpenOptions& options) override;

 private:
  LatencyOptions options_;
  DelayModel delays_;
  std::unique_ptr<TokenBucket> bucket_;  // null without a bandwidth cap
};

Result<std::unique_ptr<Storage>> CreateLatencyStorage(const PluginContext& context);

}  // namespace iomimic::latency
