// Raw timing records of a run, per rank. The engine fills them with
// steady_clock readings; the metrics functions turn them into DLIO's figures
// and the output layer writes them. Nothing here knows about formats or
// storage.

#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace iomimic::config {
struct Config;
}  // namespace iomimic::config

namespace iomimic::metrics {

// A moment, on the monotonic clock (for durations) and the wall clock (for
// timestamps in the results).
struct Stamp {
  std::chrono::steady_clock::time_point mono{};
  std::chrono::system_clock::time_point wall{};
  static Stamp Now() {
    return {std::chrono::steady_clock::now(), std::chrono::system_clock::now()};
  }
  bool valid() const { return mono.time_since_epoch().count() != 0; }
};

// Seconds between two stamps.
inline double Seconds(const Stamp& from, const Stamp& to) {
  return std::chrono::duration<double>(to.mono - from.mono).count();
}

// One block of training steps (a block ends at a step-mode checkpoint), or
// one evaluation pass. Per-step lists follow DLIO: `load` is the data wait,
// `proc` the wait plus compute, `compute` the emulated compute, in seconds.
// `compute` holds the compute each step asked for (the drawn duration), not
// what the emulation's sleep took: AU counts the accelerator's work, and the
// sleep's overshoot, an artefact of the client, is kept apart in
// `compute_measured` (docs/performance.md).
struct PhaseRecord {
  std::uint64_t index = 1;  // block number, 1-based
  Stamp start;
  Stamp end;
  std::vector<double> load;
  std::vector<double> proc;
  std::vector<double> compute;
  std::vector<double> barrier;  // iomimic: time in the per-step barrier
  // iomimic: the per-step barrier waits of at least kBarrierEventSeconds
  // (events.csv), with the step they followed (1-based).
  struct BarrierWait {
    std::uint64_t step = 0;
    std::chrono::steady_clock::time_point start;
    std::chrono::steady_clock::time_point end;
  };
  std::vector<BarrierWait> barrier_waits;
  double compute_requested = 0;  // iomimic: sum of the drawn compute times
  double compute_measured = 0;   // iomimic: sum of the time the emulated compute took
  std::uint64_t samples = 0;
  std::uint64_t bytes_read = 0;  // counted by the storage layer during the phase
  std::uint64_t steps() const { return compute.size(); }
};

// Barrier waits this long or longer become events (events.csv); shorter ones
// are only summed (timeline.csv's barrier_s, barrier_mean_ms), so a run of a
// million short steps does not write a million rows.
inline constexpr double kBarrierEventSeconds = 0.001;

// What of some files was in this host's page cache when it was measured
// (session/cache_honesty.h MeasureResidency).
struct PageResidency {
  bool measured = false;             // false: why_not says why
  std::uint64_t files = 0;           // files measured
  std::uint64_t bytes = 0;           // their bytes (sizes)
  std::uint64_t resident_bytes = 0;  // of `bytes`, in the page cache
  std::string why_not;               // empty when measured
};

struct CheckpointRecord {
  std::uint64_t index = 1;
  Stamp start;
  Stamp end;
  std::uint64_t bytes = 0;
  // Loads: this rank's files in the page cache right before the timed read
  // (not part of it); saves: not measured.
  PageResidency residency;
  double duration() const { return Seconds(start, end); }
};

struct EpochRecord {
  std::uint64_t epoch = 1;
  Stamp start;
  Stamp end;
  std::vector<PhaseRecord> blocks;
  std::optional<PhaseRecord> eval;
  std::vector<CheckpointRecord> saves;
  std::uint64_t minor_faults = 0;  // of the whole process during the epoch (getrusage)
  // A signal stopped training before the epoch's last step (session/interrupt.h):
  // its figures are not an epoch's and stay out of the means (docs/cluster.md,
  // "Faults").
  bool partial = false;
  // /proc/meminfo when the epoch started (DLIO's per-epoch host_meminfo).
  std::map<std::string, std::string> host_meminfo;
};

// AU and throughput of one block, epoch or eval pass of one rank.
struct PhaseMetrics {
  double au_percent = 0;
  double samples_per_second = 0;
  std::uint64_t steps = 0;
};

// DLIO's training block formula (docs/dlio-compat.md §4.1): window steps s..S-1-e, AU =
// 100 * sum(compute in window) / (block time - proc of excluded steps),
// throughput = (S - 2) / that time * batch size (the hard-coded 2 is DLIO's).
PhaseMetrics TrainBlockMetrics(const PhaseRecord& block, std::uint64_t exclude_start,
                               std::uint64_t exclude_end, std::uint64_t batch_size);
// Evaluation (docs/dlio-compat.md §4.1): AU like training over the whole pass, throughput =
// steps / (end - start) * batch size.
PhaseMetrics EvalMetrics(const PhaseRecord& eval, std::uint64_t exclude_start,
                         std::uint64_t exclude_end, std::uint64_t batch_size);
// Step-weighted average over blocks (DLIO's per-epoch value).
PhaseMetrics CombineBlocks(const std::vector<PhaseMetrics>& blocks);

// One epoch of one accelerator: each training block, the epoch's combined
// training figure (DLIO's step-weighted mean of its blocks) and evaluation.
struct EpochMetrics {
  std::vector<PhaseMetrics> blocks;
  PhaseMetrics train;
  std::optional<PhaseMetrics> eval;
};

// DLIO's per-epoch formulas with the manifest's step exclusions and batch
// sizes (output.metric.exclude_*_steps, reader.batch_size[_eval]). The one
// place AU and throughput are derived from records: the results, the
// per-accelerator files and the live console line all call it.
EpochMetrics ComputeEpochMetrics(const EpochRecord& epoch, const config::Config& config);

struct MeanStdev {
  double mean = 0;
  double stdev = 0;  // population standard deviation, as numpy.std
};
MeanStdev Summarize(const std::vector<double>& values);

}  // namespace iomimic::metrics
