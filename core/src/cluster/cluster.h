// The MPI world as the rest of the core sees it.
//
// One MPI rank emulates one accelerator. The same binary runs alone (a
// world of one, without initialising MPI) and under mpirun. Collective calls must be made by
// every rank in the same order; AgreeOnStatus is how ranks that failed tell
// the others, so an error on one rank never leaves the rest waiting in a
// barrier. A rank waiting in a collective sleeps between MPI_Test calls
// instead of busy-polling, leaving the CPU to ranks still at work
// (docs/cluster.md, "Faults").

#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "iomimic/status.h"

namespace iomimic::cluster {

// Whether an MPI launcher (mpirun, mpiexec, srun with PMI/PMIx) started this
// process: it set one of the launchers' environment variables.
bool LaunchedByMpi();

class Cluster {
 public:
  // Initialises MPI (once per process) when the process was started by an
  // MPI launcher (LaunchedByMpi) or MPI is already up; a process started
  // alone is a world of one (rank 0 of 1) whose collectives return their
  // own arguments, and MPI stays uninitialised.
  static Cluster& Init(int* argc, char*** argv);
  // The instance after Init; initialises without arguments if needed.
  static Cluster& Get();
  // The instance if Init ran, else null (never initialises MPI).
  static const Cluster* Current();
  // Finalises MPI. Call once at exit.
  static void Finalize();

  int rank() const { return rank_; }
  int size() const { return size_; }
  int num_hosts() const { return num_hosts_; }
  int host_index() const { return host_index_; }
  int ranks_on_host() const { return ranks_on_host_; }
  const std::string& hostname() const { return hostname_; }

  void Barrier() const;
  double SumDouble(double value) const;
  std::uint64_t SumU64(std::uint64_t value) const;
  double MaxDouble(double value) const;
  double MinDouble(double value) const;
  // Element-wise sums; every rank passes vectors of the same length.
  std::vector<double> SumDoubles(const std::vector<double>& values) const;
  std::vector<std::uint64_t> SumU64s(const std::vector<std::uint64_t>& values) const;
  // Element-wise maxima (a minimum is the maximum of the negated values):
  // one collective for many figures, where each collective costs a round of
  // every rank being scheduled (oversubscribed clients, thousands of ranks).
  std::vector<double> MaxDoubles(const std::vector<double>& values) const;
  // Gathers one string per rank on every rank (index = rank).
  std::vector<std::string> AllGatherStrings(const std::string& value) const;
  // Gathers one string per rank on rank 0 only (index = rank); the other
  // ranks get an empty vector. For what only rank 0 writes (timeline rows,
  // events, per-file counters): at 1,024 ranks an all-gather of those sends
  // every rank the whole run's tens of megabytes.
  std::vector<std::string> GatherStringsToRoot(const std::string& value) const;
  // Returns OK on every rank only if `local` is OK on every rank. Otherwise
  // every rank gets an error: its own, or "aborted: rank N failed: <msg>".
  // On more than one host the first failure agreed names its host: its
  // message starts "on host <name>: ".
  Status AgreeOnStatus(const Status& local) const;
  // True once AgreeOnStatus has returned an error here: every rank then
  // holds the failure, and rank 0 alone needs to report it.
  bool failure_agreed() const { return failure_agreed_; }
  // The per-step barrier: every rank enters with its own failure flag and
  // learns whether any rank failed (an allreduce, as cheap as a barrier).
  bool BarrierAnyFailed(bool local_failed) const;
  // The same barrier with a value: every rank learns the largest `local`
  // (failure and interrupt, session/interrupt.h, in one allreduce).
  int BarrierMax(int local) const;
  // Rank 0's string on every rank.
  std::string Broadcast(const std::string& value) const;

  // How long this process has been inside one of the collectives above, in
  // seconds (0 when it is in none), and the collective's name in `name` when
  // not null. Safe from any thread: a watchdog reads it to tell a rank stuck
  // waiting for a peer that is gone (docs/cluster.md, "Faults").
  static double SecondsInCollective(const char** name = nullptr);

  // Whether this process can still reach its launcher over the network: a
  // TCP connection to Open MPI's mpirun (OMPI_MCA_orte_hnp_uri), opened and
  // closed within `timeout_seconds`. False only when the connection cannot
  // be made (no route, timed out): this host is cut off from the job, as a
  // cut link leaves it, while the ranks on the other side still reach
  // mpirun. True when unknown (another launcher, no address). `where`
  // receives the address tried. Any thread; does not use MPI.
  static bool LauncherReachable(double timeout_seconds, std::string* where);

 private:
  Cluster() = default;
  int rank_ = 0;
  int size_ = 1;
  int num_hosts_ = 1;
  int host_index_ = 0;
  int ranks_on_host_ = 1;
  std::string hostname_;
  bool mpi_ = true;
  mutable bool failure_agreed_ = false;
};

}  // namespace iomimic::cluster
