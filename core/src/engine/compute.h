// Emulated accelerator time.
//
// PreciseSleep waits for a duration with sub-percent accuracy at millisecond
// scale: it sleeps in the kernel until shortly before the deadline, then
// spins on steady_clock for the rest (a plain sleep overshoots by tens of
// microseconds, which is several percent of a DLRM-sized step).
//
// TimeSampler draws durations from a manifest distribution (§1.7) with a
// seeded generator; like DLIO it returns the absolute value of a draw.

#pragma once

#include <cstdint>
#include <random>

#include "config/config.h"

namespace iomimic::engine {

// Waits `seconds` (<= 0 returns at once). Returns the seconds actually waited.
double PreciseSleep(double seconds);

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

}  // namespace iomimic::engine
