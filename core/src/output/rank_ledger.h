// What each rank alone knows, in the run folder as soon as it knows it
// (docs/cluster.md, "Faults"; issue 31).
//
// The merged results (summary.json, timeline.csv, ...) need every rank
// alive and a collective that can take seconds at scale; a launcher that
// kills a job (Ctrl-C to mpirun, a lost host) allows about one second
// between SIGTERM and SIGKILL. So each rank writes, with no collective and
// each file replaced atomically (written aside, then renamed):
//
//   ranks/<rank>.json            its host, pid, state (running, interrupted,
//                                failed, completed), the signal or error that
//                                stopped it and each epoch's figures so far
//                                (AU, samples/s, steps, bytes, partial)
//   <id>_per_epoch_stats.json    after every epoch, as DLIO names the file
//
// A rank that receives a signal rewrites its ranks/<rank>.json at once from
// a thread of its own (RankLedger::Stopped). A rank whose file still says
// "running" after the others answered a signal is taken for lost
// (SilentRanks). rank 0's merge then only adds up to files that exist, and
// `iomimic report`/`compare` read a folder whose merge never happened
// (analysis/run_folder.h).

#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "config/config.h"
#include "iomimic/status.h"
#include "metrics/records.h"

namespace iomimic::output {

// The folder of the per-rank records, relative to the run folder.
inline constexpr const char* kRankFolder = "ranks";

// One epoch of one accelerator as its rank recorded it.
struct RankEpoch {
  std::uint64_t epoch = 0;
  bool partial = false;  // stopped by a signal before its last step
  double seconds = 0;    // the epoch's wall time
  std::uint64_t steps = 0;
  double au_percent = 0;
  double samples_per_second = 0;
  std::uint64_t bytes_read = 0;  // the process's, in the epoch's training blocks
};

// One rank's record (ranks/<rank>.json) as written and as read back.
struct RankRecord {
  int rank = 0;
  int ranks = 1;
  std::string host;
  long pid = 0;
  // running, interrupted, failed, completed, or cut_off (after a signal,
  // the rank found it cannot reach the launcher: its host is cut off)
  std::string state;
  std::string signal;  // SIGINT, SIGTERM, SIGHUP; empty when none
  std::string error;   // empty when none
  std::string updated;
  struct Accelerator {
    int id = 0;
    std::vector<RankEpoch> epochs;
  };
  std::vector<Accelerator> accelerators;
};

// Reads ranks/<rank>.json of `folder`. kNotFound when missing, kCorruption
// naming the file when it does not parse.
Result<RankRecord> ReadRankRecord(const std::string& folder, int rank);

// Every record under `folder`/ranks, by rank (ranks without a readable file
// left out).
std::vector<RankRecord> ReadRankRecords(const std::string& folder);

// The ranks of 0..ranks-1 whose record is missing, still "running" or
// "cut_off": after a signal every live rank rewrites its record within
// ~50 ms, so these are the ranks (or hosts) that are gone or cut off.
std::vector<int> SilentRanks(const std::string& folder, int ranks);

// One rank's ledger. Thread-safe: the run's thread records epochs, a
// watcher thread records a signal; each call rewrites ranks/<rank>.json.
class RankLedger {
 public:
  // `checkpoint_gib`: one checkpoint's size over all ranks (0 without
  // checkpoints), for the per-epoch stats' checkpoint rates.
  RankLedger(std::string folder, const config::Config& config, int rank, int ranks,
             std::string host, double checkpoint_gib);

  // Creates ranks/ (not its parents: a run folder this host cannot see is
  // an error here, not a folder of its own) and writes the record as
  // "running". Call once, before training.
  Status Start();

  // After an epoch: accelerator `id`'s epochs so far. Writes
  // <id>_per_epoch_stats.json and the record.
  Status EpochsSoFar(int id, const std::vector<metrics::EpochRecord>& epochs);

  // The rank stops: `state` interrupted, failed or completed, with the
  // signal's name (may be null) and the error (may be empty). A later call
  // replaces an earlier one's state, except that nothing replaces
  // "interrupted" but "completed"/"failed" from the run's own end.
  Status Stopped(const std::string& state, const char* signal, const std::string& error);

  // The state last recorded.
  std::string state();

 private:
  Status WriteRecordLocked();

  const std::string folder_;
  const config::Config& config_;
  const double checkpoint_gib_;
  std::mutex mutex_;
  RankRecord record_;
  bool started_ = false;
};

}  // namespace iomimic::output
