// What the run does over time: a sampler thread reads the run's live
// counters at fixed wall-clock intervals and keeps one row per interval
// (timeline.csv), so throughput, request counts, samples, steps, AU and
// requests in flight can be plotted through epochs, evaluations and
// checkpoints.
//
// Intervals are aligned on a run-wide origin (rank 0's wall clock, shared),
// so interval k of every rank covers the same wall-clock span and rows of
// all ranks can be summed per interval. The sampler costs one wake-up per
// interval; the engine's hot path only bumps counters it already keeps.

#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace iomimic::metrics {

// Cumulative counters of one rank at one moment.
struct ActivitySample {
  std::uint64_t bytes_read = 0;
  std::uint64_t bytes_written = 0;
  std::uint64_t read_requests = 0;
  std::uint64_t write_requests = 0;
  std::uint64_t samples = 0;   // samples read (every accelerator of the process)
  std::uint64_t steps = 0;     // training and evaluation steps, per accelerator, summed
  double compute_seconds = 0;  // emulated accelerator compute (requested), summed
  double io_seconds = 0;       // time storage requests were outstanding, summed
  double barrier_seconds = 0;  // time in the per-step barrier (first accelerator)
};

// One interval of one rank: the counters' growth during [start, end).
struct TimelineRow {
  std::uint64_t index = 0;
  double start_seconds = 0;  // from the origin
  double end_seconds = 0;
  ActivitySample delta;
};

// Time the emulated accelerators of a process spent computing, up to any
// moment, including steps still in progress (so an interval gets the part
// of a long step that fell into it). Thread-safe.
class BusyClock {
 public:
  using Clock = std::chrono::steady_clock;

  // Accelerator work from `start` for `seconds` (a step's compute).
  void Add(Clock::time_point start, double seconds);
  // Busy seconds up to `now`, summed over the work added.
  double BusyUntil(Clock::time_point now);

 private:
  struct Window {
    Clock::time_point start;
    Clock::time_point end;
  };
  // Moves the windows that ended by `t` into closed_seconds_ (lock held).
  void CloseBefore(Clock::time_point t);
  std::mutex mutex_;
  std::vector<Window> open_;  // windows not yet over at the last query
  double closed_seconds_ = 0;
};

// Samples `read()` every `interval` on a thread of its own.
class TimelineSampler {
 public:
  TimelineSampler() = default;
  TimelineSampler(const TimelineSampler&) = delete;
  TimelineSampler& operator=(const TimelineSampler&) = delete;
  ~TimelineSampler() { Stop(); }

  // Starts sampling. Interval k covers [origin + k * interval, origin +
  // (k + 1) * interval) of the wall clock; the first row starts at the
  // current interval. `read` must be thread-safe with the engine.
  // `on_row`, when set, is called on the sampler's thread after each row is
  // taken (the last one in Stop), so another reading (host telemetry,
  // metrics/host_telemetry.h) shares the timeline's intervals.
  void Start(std::chrono::system_clock::time_point origin, double interval_seconds,
             std::function<ActivitySample()> read,
             std::function<void(const TimelineRow&)> on_row = nullptr);
  // Stops the thread, closes the current interval at the present moment and
  // returns every row, in order. Idempotent; empty when never started.
  std::vector<TimelineRow> Stop();

 private:
  void Loop();
  void Take(std::chrono::system_clock::time_point at);
  std::uint64_t IndexOf(std::chrono::system_clock::time_point t) const;

  std::function<ActivitySample()> read_;
  std::function<void(const TimelineRow&)> on_row_;
  std::chrono::system_clock::time_point origin_{};
  std::chrono::nanoseconds interval_{0};
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  bool running_ = false;
  std::chrono::system_clock::time_point row_start_{};
  ActivitySample last_;
  std::vector<TimelineRow> rows_;
};

}  // namespace iomimic::metrics
