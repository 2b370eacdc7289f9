#include "train/compute.h"

#include <sys/prctl.h>

#include <chrono>
#include <cmath>
#include <thread>

namespace iomimic::train {
namespace {
// Kernel sleeps end up to ~100 us late on a loaded machine; spin that long.
constexpr auto kSpinWindow = std::chrono::microseconds(200);
}  // namespace

double PreciseSleep(double seconds, bool spin) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  if (!(seconds > 0)) return 0.0;
  // The kernel may end a thread's sleep up to its timer slack late (50 us by
  // default): ask for none, once per thread.
  static thread_local const bool kSlackSet = prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL) == 0;
  (void)kSlackSet;
  const auto deadline =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  if (!spin) {
    std::this_thread::sleep_until(deadline);
    return std::chrono::duration<double>(Clock::now() - start).count();
  }
  if (deadline - start > kSpinWindow) std::this_thread::sleep_until(deadline - kSpinWindow);
  while (Clock::now() < deadline) {
    // Spin. The pause hint keeps the sibling hyperthread fed.
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
  return std::chrono::duration<double>(Clock::now() - start).count();
}

TimeSampler::TimeSampler(const config::Distribution& distribution, std::uint64_t seed)
    : distribution_(distribution), rng_(seed) {}

double TimeSampler::Draw() {
  using Kind = config::Distribution::Kind;
  const config::Distribution& d = distribution_;
  double v = 0;
  switch (d.kind) {
    case Kind::kConstant:
      v = d.mean;
      break;
    case Kind::kNormal:
      v = d.stdev > 0 ? std::normal_distribution<double>(d.mean, d.stdev)(rng_) : d.mean;
      break;
    case Kind::kUniform:
      v = d.max > d.min ? std::uniform_real_distribution<double>(d.min, d.max)(rng_) : d.min;
      break;
    case Kind::kGamma:
      v = (d.shape > 0 && d.scale > 0) ? std::gamma_distribution<double>(d.shape, d.scale)(rng_)
                                       : 0;
      break;
    case Kind::kExponential:
      v = d.scale > 0 ? std::exponential_distribution<double>(1.0 / d.scale)(rng_) : 0;
      break;
    case Kind::kPoisson:
      v = d.lam > 0 ? static_cast<double>(std::poisson_distribution<long>(d.lam)(rng_)) : 0;
      break;
  }
  return std::fabs(v);
}

}  // namespace iomimic::train
