// The optional event trace (iomimic.trace): Chrome trace-event "complete"
// events (ph "X", ts/dur in microseconds) of one rank, written as
// trace/<rank>.pfw in DFTracer's JSON-lines layout (docs/run-folder.md).
//
// Off, recording costs one predictable branch (enabled()). On, each thread
// appends to its own buffer, registered once per thread under a lock; an
// event takes no lock, only one relaxed atomic add that bounds the rank's
// events to iomimic.trace_max_events (later events are counted as dropped).
// An event may name a file by the number InternFile gave its path (once
// per open, not per event), which Write prints as args.fname.

#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "iomimic/status.h"

namespace iomimic::metrics {

// One integer argument of a trace event; `key` is a string literal or null.
struct TraceArg {
  const char* key = nullptr;
  std::int64_t value = 0;
};

class Tracer {
 public:
  using Clock = std::chrono::steady_clock;

  using Arg = TraceArg;

  Tracer();
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  // Turns recording on, keeping at most `max_events` events. Call before the
  // threads that record start.
  void Enable(std::uint64_t max_events);
  bool enabled() const { return enabled_; }

  // Records a complete event of the calling thread from `start` to `end`.
  // `category` and `name` must be string literals (kept by pointer);
  // `file` is 0 or a number InternFile returned. Thread-safe; a no-op when
  // recording is off.
  void Complete(const char* category, const char* name, Clock::time_point start,
                Clock::time_point end, Arg a = {}, Arg b = {}, Arg c = {}, std::uint32_t file = 0);
  // The same, naming a second file (a rename's new name, args.new_fname).
  void Complete2(const char* category, const char* name, Clock::time_point start,
                 Clock::time_point end, std::uint32_t file, std::uint32_t file2);

  // The number (from 1) that names `path` in events, the same for the same
  // path; 0 when recording is off. Thread-safe (a lock and a lookup; the
  // path is copied the first time only): call it once per open, not per
  // operation.
  std::uint32_t InternFile(const std::string& path);
  // A new number (from 1) for one open file, unique in this tracer: the
  // "fd" of its events (not the descriptor the OS gave). Thread-safe.
  std::int64_t NewHandle() { return next_handle_.fetch_add(1, std::memory_order_relaxed); }

  std::uint64_t recorded() const;  // events kept
  std::uint64_t dropped() const;   // events past the bound

  // Writes `path`: "[" then one JSON object per line: a process_name and a
  // thread_name metadata event ("M"), then every event of every thread with
  // pid `pid`, tid the thread's number (1, 2, ... in order of first event),
  // ts in microseconds from `origin` and, for an event naming a file, its
  // path as args.fname. Call once every recording thread is done.
  Status Write(const std::string& path, int pid, Clock::time_point origin) const;

 private:
  struct Event {
    const char* category;
    const char* name;
    std::int64_t start_ns;
    std::int64_t end_ns;
    Arg a;
    Arg b;
    Arg c;
    std::uint32_t file;   // 0, or files_[file - 1]
    std::uint32_t file2;  // the same, printed as new_fname
  };
  struct Buffer {
    int tid = 0;
    std::vector<Event> events;
  };
  Buffer* ThreadBuffer();

  const std::uint64_t id_;  // tells tracers apart in each thread's slot
  bool enabled_ = false;
  std::uint64_t max_events_ = 0;
  std::atomic<std::uint64_t> reserved_{0};
  std::atomic<std::uint64_t> dropped_{0};
  std::atomic<std::int64_t> next_handle_{1};
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Buffer>> buffers_;
  mutable std::mutex files_mutex_;
  std::deque<std::string> files_;  // by InternFile's number - 1
  std::unordered_map<std::string, std::uint32_t> file_ids_;
};

}  // namespace iomimic::metrics
