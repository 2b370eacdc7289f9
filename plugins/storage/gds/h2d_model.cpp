#include "h2d_model.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>
#include <thread>

namespace iomimic::gds {
namespace {

// Below this much remaining time WaitUntil spins instead of sleeping.
constexpr auto kSpinWindow = std::chrono::microseconds(80);

Clock::duration ToDuration(double seconds) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

}  // namespace

Result<double> ParseDurationSeconds(std::string_view text) {
  const std::string s(text);
  auto bad = [&] {
    return Status::InvalidArgument("'" + s +
                                   "' is not a duration such as 10us, 0.5ms or 1s (units ns, us, "
                                   "ms, s)");
  };
  if (s.empty()) return bad();
  char* end = nullptr;
  errno = 0;
  const double number = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || errno != 0 || !std::isfinite(number) || number < 0) return bad();
  std::string_view unit(end);
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  double scale = 0;
  if (unit.empty() || unit == "s") {
    scale = 1;
  } else if (unit == "ms") {
    scale = 1e-3;
  } else if (unit == "us") {
    scale = 1e-6;
  } else if (unit == "ns") {
    scale = 1e-9;
  } else {
    return bad();
  }
  return number * scale;
}

double H2dLinkModel::CopySeconds(std::size_t bytes) const {
  double seconds = latency_seconds_;
  if (bytes_per_second_ > 0) seconds += static_cast<double>(bytes) / bytes_per_second_;
  return seconds;
}

Clock::time_point H2dLinkModel::Reserve(std::size_t bytes) {
  const Clock::duration length = ToDuration(CopySeconds(bytes));
  const Clock::time_point now = Clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  const Clock::time_point start = free_at_ > now ? free_at_ : now;
  free_at_ = start + length;
  return free_at_;
}

void WaitUntil(Clock::time_point deadline) {
  for (;;) {
    const Clock::time_point now = Clock::now();
    if (now >= deadline) return;
    const Clock::duration left = deadline - now;
    if (left > 2 * kSpinWindow) {
      std::this_thread::sleep_for(left - kSpinWindow);
    } else {
      std::this_thread::yield();
    }
  }
}

}  // namespace iomimic::gds
