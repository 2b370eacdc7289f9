#include "engine/team.h"

#include <algorithm>
#include <thread>

namespace iomimic::engine {
namespace {

void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

Team::Team(cluster::Cluster& cluster, int per_process)
    : cluster_(cluster),
      per_process_(std::max(1, per_process)),
      // Spinning only pays while every waiter has a CPU of its own; beyond
      // that it steals the time the last arrivals need.
      spins_(per_process_ < static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))
                 ? 20000
                 : 0) {}

bool Team::BarrierAnyFailed(bool local_failed) {
  if (per_process_ == 1) return cluster_.BarrierAnyFailed(local_failed);
  bool any = false;
  Rendezvous(Kind::kBarrierAnyFailed, local_failed, Status::OK(), &any, nullptr);
  return any;
}

Status Team::AgreeOnStatus(const Status& local) {
  if (per_process_ == 1) return cluster_.AgreeOnStatus(local);
  Status agreed;
  Rendezvous(Kind::kAgree, !local.ok(), local, nullptr, &agreed);
  // An accelerator that failed keeps its own error.
  return local.ok() ? agreed : local;
}

void Team::Barrier() {
  if (per_process_ == 1) {
    cluster_.Barrier();
    return;
  }
  Rendezvous(Kind::kBarrier, false, Status::OK(), nullptr, nullptr);
}

void Team::Rendezvous(Kind kind, bool failed, const Status& status, bool* any_failed,
                      Status* agreed) {
  std::unique_lock<std::mutex> lock(mutex_);
  const std::uint32_t generation = generation_.load(std::memory_order_relaxed);
  merged_failed_ = merged_failed_ || failed;
  if (!status.ok() && merged_status_.ok()) merged_status_ = status;
  if (++arrived_ < per_process_) {
    lock.unlock();
    for (int i = 0; i < spins_ && generation_.load(std::memory_order_acquire) == generation; ++i) {
      CpuRelax();
    }
    while (generation_.load(std::memory_order_acquire) == generation) {
      generation_.wait(generation, std::memory_order_acquire);
    }
    // The outcome cannot change before this thread arrives at the next round.
    if (any_failed != nullptr) *any_failed = result_failed_;
    if (agreed != nullptr) *agreed = result_status_;
    return;
  }
  // The last local accelerator: one collective call for the whole process.
  switch (kind) {
    case Kind::kBarrierAnyFailed:
      result_failed_ = cluster_.BarrierAnyFailed(merged_failed_);
      break;
    case Kind::kAgree:
      result_status_ = cluster_.AgreeOnStatus(merged_status_);
      result_failed_ = !result_status_.ok();
      break;
    case Kind::kBarrier:
      cluster_.Barrier();
      break;
  }
  if (any_failed != nullptr) *any_failed = result_failed_;
  if (agreed != nullptr) *agreed = result_status_;
  arrived_ = 0;
  merged_failed_ = false;
  merged_status_ = Status::OK();
  generation_.fetch_add(1, std::memory_order_release);
  lock.unlock();
  generation_.notify_all();
}

}  // namespace iomimic::engine
