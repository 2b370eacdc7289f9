// The emulated accelerators of a run and the collectives they make together.
//
// The accelerator, not the process, is the unit of the plan: a process hosts
// `per_process` accelerators, each on its own thread with its own shard,
// prefetch queue, consumer and figures, exactly as if it were its own MPI
// rank. Accelerator `local` of rank r has the id r * per_process + local
// among size() = ranks x per_process accelerators, so the plan of N threads
// in one process is the plan of N ranks (docs/performance.md).
//
// The accelerators' collectives (the per-step barrier that emulates the
// gradient allreduce, agreeing on failures) meet first at a shared-memory
// rendezvous inside the process; the last local accelerator to arrive makes
// the one MPI call for the process and its result releases the others, who
// wait by spinning briefly and then on a futex, so the skew a barrier adds
// stays in microseconds.

#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

#include "cluster/cluster.h"
#include "iomimic/status.h"

namespace iomimic::engine {

class Team {
 public:
  // `cluster` must outlive the team. `per_process` >= 1.
  Team(cluster::Cluster& cluster, int per_process);
  Team(const Team&) = delete;
  Team& operator=(const Team&) = delete;

  int per_process() const { return per_process_; }
  // Accelerators in the run: ranks x per_process.
  int size() const { return cluster_.size() * per_process_; }
  // The run-wide id of this process's accelerator `local` (0 <= local <
  // per_process): rank * per_process + local.
  int id(int local) const { return cluster_.rank() * per_process_ + local; }
  cluster::Cluster& cluster() { return cluster_; }

  // Collectives: every accelerator of every rank calls each of them, in the
  // same order, from its own thread (with one accelerator per process they
  // are the cluster's own).
  //
  // The per-step barrier: true when any accelerator entered it failed.
  bool BarrierAnyFailed(bool local_failed);
  // OK on every accelerator only if every accelerator passed OK; otherwise
  // an accelerator gets its own error, or the first error of its process, or
  // the cluster's "aborted: rank N failed" error.
  Status AgreeOnStatus(const Status& local);
  void Barrier();

 private:
  enum class Kind { kBarrierAnyFailed, kAgree, kBarrier };
  // Contributes this accelerator's part; the last local accelerator makes
  // the MPI call. Returns the call's outcome to every caller.
  void Rendezvous(Kind kind, bool failed, const Status& status, bool* any_failed,
                  Status* agreed);

  cluster::Cluster& cluster_;
  const int per_process_;
  const int spins_;  // pause iterations before sleeping on the futex

  std::mutex mutex_;
  int arrived_ = 0;
  bool merged_failed_ = false;  // this round's contributions
  Status merged_status_;
  bool result_failed_ = false;  // the last completed round's outcome
  Status result_status_;
  std::atomic<std::uint32_t> generation_{0};
};

}  // namespace iomimic::engine
