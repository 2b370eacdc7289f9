// Emulated accelerator time.
//
// PreciseSleep waits for a duration with sub-percent accuracy at millisecond
// scale: it sleeps in the kernel until shortly before the deadline, then
// spins on steady_clock for the rest (a plain sleep overshoots by tens of
// microseconds, which is several percent of a DLRM-sized step).
//
// TimeSampler draws durations from a manifest distribution (docs/dlio-compat.md §1.7) with a
// seeded generator; like DLIO it returns the absolute value of a draw.

#pragma once

#include <cstdint>
#include <random>

#include "config/config.h"

namespace iomimic::train {

// Waits `seconds` (<= 0 returns at once). Returns the seconds actually waited.
// `spin`: spin through the last 200 us instead of trusting the kernel's
// wake-up. Right when the waiting thread has a CPU to itself; when a process
// emulates more accelerators than it has CPUs, every spinning accelerator
// would steal the CPU the others need, so they sleep to the deadline.
double PreciseSleep(double seconds, bool spin = true);

class TimeSampler {
 public:
  TimeSampler(const config::Distribution& distribution, std::uint64_t seed);
  // A duration in seconds, >= 0.
  double Draw();
  bool is_zero() const { return distribution_.is_zero(); }

 private:
  config::Distribution distribution_;
  std::mt19937_64 rng_;
};

}  // namespace iomimic::train
