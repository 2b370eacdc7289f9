#include "metrics/timeline.h"

#include <algorithm>

namespace iomimic::metrics {
namespace {

ActivitySample Minus(const ActivitySample& a, const ActivitySample& b) {
  ActivitySample d;
  d.bytes_read = a.bytes_read - b.bytes_read;
  d.bytes_written = a.bytes_written - b.bytes_written;
  d.read_requests = a.read_requests - b.read_requests;
  d.write_requests = a.write_requests - b.write_requests;
  d.samples = a.samples - b.samples;
  d.steps = a.steps - b.steps;
  d.compute_seconds = std::max(0.0, a.compute_seconds - b.compute_seconds);
  d.io_seconds = std::max(0.0, a.io_seconds - b.io_seconds);
  d.barrier_seconds = std::max(0.0, a.barrier_seconds - b.barrier_seconds);
  return d;
}

double SecondsFrom(std::chrono::system_clock::time_point origin,
                   std::chrono::system_clock::time_point t) {
  return std::chrono::duration<double>(t - origin).count();
}

}  // namespace

void BusyClock::Add(Clock::time_point start, double seconds) {
  if (seconds <= 0) return;
  const Clock::time_point end =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  std::lock_guard<std::mutex> lock(mutex_);
  // Nobody may be asking (timeline off): keep the open list short by closing
  // the windows that ended before this one started.
  if (open_.size() >= 1024) CloseBefore(start);
  open_.push_back({start, end});
}

void BusyClock::CloseBefore(Clock::time_point t) {
  std::size_t kept = 0;
  for (const Window& w : open_) {
    if (w.end <= t) {
      closed_seconds_ += std::chrono::duration<double>(w.end - w.start).count();
    } else {
      open_[kept++] = w;
    }
  }
  open_.resize(kept);
}

double BusyClock::BusyUntil(Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mutex_);
  CloseBefore(now);
  double partial = 0;
  for (const Window& w : open_) {
    if (now > w.start) partial += std::chrono::duration<double>(now - w.start).count();
  }
  return closed_seconds_ + partial;
}

void TimelineSampler::Start(std::chrono::system_clock::time_point origin, double interval_seconds,
                            std::function<ActivitySample()> read,
                            std::function<void(const TimelineRow&)> on_row) {
  Stop();
  read_ = std::move(read);
  on_row_ = std::move(on_row);
  origin_ = origin;
  interval_ = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double>(std::max(interval_seconds, 0.001)));
  row_start_ = std::chrono::system_clock::now();
  last_ = read_();
  rows_.clear();
  stop_ = false;
  running_ = true;
  thread_ = std::thread([this] { Loop(); });
}

void TimelineSampler::Take(std::chrono::system_clock::time_point at) {
  const ActivitySample now = read_();
  TimelineRow row;
  // The interval the row started in (a late wake-up does not shift later
  // rows: each starts where the previous one ended).
  row.index = IndexOf(row_start_);
  row.start_seconds = SecondsFrom(origin_, row_start_);
  row.end_seconds = SecondsFrom(origin_, at);
  row.delta = Minus(now, last_);
  rows_.push_back(row);
  if (on_row_) on_row_(row);
  last_ = now;
  row_start_ = at;
}

std::uint64_t TimelineSampler::IndexOf(std::chrono::system_clock::time_point t) const {
  if (t <= origin_) return 0;
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(t - origin_) / interval_);
}

void TimelineSampler::Loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    const auto boundary =
        origin_ + std::chrono::duration_cast<std::chrono::system_clock::duration>(
                      interval_ * static_cast<std::int64_t>(IndexOf(row_start_) + 1));
    if (wake_.wait_until(lock, boundary, [this] { return stop_; })) break;
    Take(std::chrono::system_clock::now());
  }
}

std::vector<TimelineRow> TimelineSampler::Stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!running_) return rows_;
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(mutex_);
  Take(std::chrono::system_clock::now());  // the last, partial interval
  running_ = false;
  return rows_;
}

}  // namespace iomimic::metrics
