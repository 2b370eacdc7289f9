// The modelled host-to-device link of the emulated data path.
//
// Without a GPU the gds plugin still copies each staged chunk (a real memcpy
// from the staging buffer into the host arena that stands for device memory)
// and then waits until the copy would have finished on a link of the
// configured bandwidth and latency. One link is shared by every thread of the
// Storage, like the PCIe link of one GPU: concurrent copies queue behind each
// other instead of each getting the full bandwidth.

#pragma once

#include <chrono>
#include <cstddef>
#include <mutex>
#include <string_view>

#include "iomimic/status.h"

namespace iomimic::gds {

using Clock = std::chrono::steady_clock;

// Parses a duration: a non-negative number with a unit ns, us, ms or s
// ("10us", "0.5ms", "1e-5s"); a bare number is seconds. Returns seconds, or
// InvalidArgument naming the text.
Result<double> ParseDurationSeconds(std::string_view text);

class H2dLinkModel {
 public:
  // `bytes_per_second` 0 means unlimited bandwidth (only the latency and the
  // real memcpy remain).
  H2dLinkModel(double bytes_per_second, double latency_seconds)
      : bytes_per_second_(bytes_per_second), latency_seconds_(latency_seconds) {}

  // The modelled duration of one copy of `bytes`: latency + bytes/bandwidth.
  double CopySeconds(std::size_t bytes) const;

  // Books the link for one copy of `bytes` that starts now, or when the
  // copies booked before it are done, and returns when it completes.
  // Thread-safe.
  Clock::time_point Reserve(std::size_t bytes);

  double bytes_per_second() const { return bytes_per_second_; }
  double latency_seconds() const { return latency_seconds_; }

 private:
  const double bytes_per_second_;
  const double latency_seconds_;
  std::mutex mu_;
  Clock::time_point free_at_{};  // when the last booked copy completes
};

// Returns at `deadline` (never earlier): sleeps while the remaining time is
// long, then spins (yielding) for the last 80 us, because a plain sleep
// overshoots by ~50-100 us, more than a whole modelled 1 MiB copy at 25 GiB/s.
// On a loaded machine the thread may still be scheduled late: the model
// never ends early, but it can end late.
void WaitUntil(Clock::time_point deadline);

}  // namespace iomimic::gds
