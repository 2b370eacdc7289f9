// The KV-cache engine's request queue (docs/kvcache.md, "One rank, one
// inference server"): user threads push requests after their think times, worker
// threads take the first one by QoS class, then by arrival (the reference's
// PriorityQueue of (-priority, enqueue time)).
//
// Workers and sleepers wait on separate condition variables: a push wakes one
// idle worker and never a user sleeping through its think time, so a request
// never waits in the queue while a worker is idle (the lost wakeup of issue
// 33, where one condition variable served both and notify_one could go to a
// sleeping user).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <queue>
#include <utility>
#include <vector>

namespace iomimic::kvcache {

// T: the request; ClassOf(const T&) -> int: its class, lower classes first.
template <typename T, typename ClassOf>
class RequestQueue {
 public:
  explicit RequestQueue(ClassOf class_of = ClassOf()) : class_of_(std::move(class_of)) {}
  RequestQueue(const RequestQueue&) = delete;
  RequestQueue& operator=(const RequestQueue&) = delete;

  // Queues `item` after every queued item of its class and of lower classes,
  // and wakes one idle worker (Pop). False, and the item dropped, once
  // stopped.
  bool Push(T item) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopped_) return false;
      queue_.push(Entry{class_of_(item), next_seq_++, std::move(item)});
    }
    work_.notify_one();
    return true;
  }

  // Blocks until an item is queued, then moves the first into `*item`.
  // False once stopped (items still queued stay there).
  bool Pop(T* item) {
    std::unique_lock<std::mutex> lock(mutex_);
    work_.wait(lock, [this] { return stopped_ || !queue_.empty(); });
    if (stopped_) return false;
    // top() is const only to keep the heap's order, which pop() then drops.
    *item = std::move(const_cast<Entry&>(queue_.top()).item);
    queue_.pop();
    return true;
  }

  // Sleeps for `seconds` (a user's think time, a pacing delay) unless the
  // queue stops first; pushes do not wake it. True when the time passed,
  // false when stopped.
  bool Sleep(double seconds) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (seconds <= 0) return !stopped_;
    return !stop_.wait_for(lock, std::chrono::duration<double>(seconds),
                           [this] { return stopped_; });
  }

  // Stops the queue: Pop and Sleep return false from now on, at once for
  // those waiting in them, and Push drops its item. Idempotent.
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopped_ = true;
    }
    work_.notify_all();
    stop_.notify_all();
  }

  bool stopped() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return stopped_;
  }

  // Items queued and not yet taken.
  std::size_t size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return queue_.size();
  }

 private:
  struct Entry {
    int klass = 0;
    std::uint64_t seq = 0;  // arrival order
    T item;
  };
  // std::priority_queue keeps the largest on top: "less" is "comes later".
  struct Later {
    bool operator()(const Entry& a, const Entry& b) const {
      if (a.klass != b.klass) return a.klass > b.klass;
      return a.seq > b.seq;
    }
  };

  ClassOf class_of_;
  mutable std::mutex mutex_;
  std::condition_variable work_;  // workers: an item was queued, or stopped
  std::condition_variable stop_;  // sleepers: stopped
  std::priority_queue<Entry, std::vector<Entry>, Later> queue_;
  std::uint64_t next_seq_ = 0;
  bool stopped_ = false;
};

}  // namespace iomimic::kvcache
