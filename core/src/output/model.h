// The results model: every figure of a run, computed once, as plain data.
//
// CollectResults (collective) reads the engine's records and counters, makes
// every cross-rank reduction and every metric (AU, throughput, checkpoint
// rates, latency percentiles' histograms) and returns the same RunResults on
// every rank. Writers (output/writers.h: summary.json, the console summary,
// and whatever front end or observability file comes next) are functions of
// this model and the manifest; none reads a live engine object or talks MPI.
// The formulas follow DLIO (docs/dlio-compat.md) and are written once, here
// and in metrics/records.h.

#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/config.h"
#include "session/cache_honesty.h"
#include "train/checkpointer.h"
#include "train/generator.h"
#include "session/session.h"
#include "train/trainer.h"
#include "kvcache/results.h"
#include "metrics/histogram.h"
#include "metrics/host_telemetry.h"
#include "metrics/records.h"
#include "metrics/timeline.h"
#include "output/hosts.h"

namespace iomimic::output {

// Binary units, as DLIO's MB/s figures use them.
inline constexpr double kMiB = 1024.0 * 1024.0;
inline constexpr double kGiB = 1024.0 * kMiB;

// What the engine produced on this rank; the input of CollectResults.
struct RunOutcome {
  metrics::Stamp start;
  metrics::Stamp end;
  std::optional<train::GenerateReport> generate;
  std::optional<train::TrainResult> train;
  std::optional<train::CheckpointOnlyResult> checkpoint_only;
  // The KV-cache workflow's figures of this rank (workflow.kv_cache).
  std::optional<kvcache::KvFigures> kv_cache;
  // Set when the run checkpoints (training with checkpoints or checkpoint-only).
  train::Checkpointer* checkpointer = nullptr;
  // The run-wide time origin (rank 0's wall clock) and this rank's timeline
  // rows (empty when iomimic.timeline_interval is 0).
  std::chrono::system_clock::time_point origin{};
  std::vector<metrics::TimelineRow> timeline;
  // Every rank's host name (index = rank), gathered at the start; the
  // lowest rank of each host samples the host's telemetry (empty rows
  // elsewhere, or when the timeline is off).
  std::vector<std::string> rank_hosts;
  bool telemetry_sampled = false;
  metrics::TelemetrySources telemetry_sources;
  std::vector<metrics::TelemetryRow> telemetry;
  // The training set against the hosts' memory (session/cache_honesty.h).
  session::CacheCheck cache_check;
};

// One host's telemetry (host_telemetry.csv), sampled by its lowest rank.
struct HostTelemetryResults {
  std::string host;
  int rank = 0;  // the rank that sampled it
  metrics::TelemetrySources sources;
  std::vector<metrics::TelemetryRow> rows;
};

// One row of timeline.csv: an interval of one rank.
struct TimelineEntry {
  int rank = 0;
  metrics::TimelineRow row;
};

// One row of events.csv: a span of one rank, seconds from the run's origin.
struct EventEntry {
  int rank = 0;
  // generate, epoch, train_block, eval, checkpoint_save, checkpoint_load,
  // barrier_wait (a per-step barrier wait of at least 1 ms; index = step)
  std::string event;
  std::uint64_t epoch = 0;
  std::uint64_t index = 0;  // block or checkpoint number; 0 when none
  double start_seconds = 0;
  double end_seconds = 0;
  std::uint64_t bytes = 0;  // read (epochs, blocks) or written (generation, saves)
};

// One epoch of one accelerator: each training block, the epoch's combined
// training figure (DLIO's step-weighted mean of its blocks) and evaluation.
struct EpochMetrics {
  std::vector<metrics::PhaseMetrics> blocks;
  metrics::PhaseMetrics train;
  std::optional<metrics::PhaseMetrics> eval;
};

// DLIO's per-epoch formulas (metrics/records.h) with the manifest's step
// exclusions and batch sizes. The one place AU and throughput are derived
// from records: the results, the per-accelerator files and the live console
// line all call it.
EpochMetrics ComputeEpochMetrics(const metrics::EpochRecord& epoch, const config::Config& config);

// A phase's per-epoch series over all accelerators: AU is the mean over the
// accelerators, throughput the sum, as DLIO aggregates over ranks.
struct PhaseSeries {
  std::vector<double> au_percent;  // one per epoch (eval: per evaluated epoch)
  std::vector<double> samples_per_second;
  metrics::MeanStdev au;
  metrics::MeanStdev throughput;
};

// Facts of the host rank 0 runs on, as DLIO reads them from /proc.
struct HostFacts {
  std::map<std::string, std::string> cpuinfo;  // the last CPU's lines, as DLIO
  std::map<std::string, std::string> meminfo;
  double memory_gib = 0;
  long cpus = 0;
  std::string processor;
};

// The epoch a signal cut short: run, but left out of every per-epoch series
// and mean (summary.json's iomimic.partial_epoch).
struct PartialEpoch {
  std::uint64_t epoch = 0;
  std::uint64_t steps = 0;  // done before the stop, of steps_per_epoch
};

struct TrainResults {
  std::uint64_t epochs = 0;  // run, a partial one included
  std::optional<PartialEpoch> partial_epoch;
  std::uint64_t steps_per_epoch = 0;
  std::uint64_t eval_steps_per_epoch = 0;
  PhaseSeries train;
  std::optional<PhaseSeries> eval;  // when any epoch evaluated
  // Bytes the storage layer read per epoch over all ranks / the slowest
  // rank's training time of the epoch.
  std::vector<double> actual_MiB_per_second;
  double seconds = 0;            // the epochs' training time, each epoch its slowest rank's
  std::uint64_t bytes_read = 0;  // all epochs, all ranks
  std::vector<std::uint64_t> minor_faults_per_epoch;  // summed over ranks
  double barrier_mean_ms = 0;                         // per-step barrier wait
  double compute_requested_seconds = 0;               // all accelerators
  double compute_measured_seconds = 0;
};

// One checkpoint save or load over all ranks.
struct CheckpointEvent {
  std::uint64_t index = 1;
  std::uint64_t epoch = 1;  // saves during training: the epoch; otherwise 1
  metrics::Stamp start;     // rank 0's
  metrics::Stamp end;
  std::uint64_t bytes = 0;  // all ranks
  double rank0_seconds = 0;
  double max_seconds = 0;
  double min_seconds = 0;
  int slowest_rank = 0;
  int fastest_rank = 0;
  double min_rank_GiB_per_second = 0;  // the slowest rank's own rate
  // Loads: the files' bytes in the page cache right before the read, summed
  // over ranks (ranks 0: a save, not measured).
  session::ResidencyTotals residency;
};

struct CheckpointResults {
  std::string storage;  // the back end's chain
  bool fsync = false;
  std::uint64_t fsync_calls = 0;  // all ranks
  std::uint64_t size_bytes = 0;   // one checkpoint, all ranks
  std::uint64_t parameters = 0;
  std::vector<CheckpointEvent> saves;
  std::vector<CheckpointEvent> loads;
  // What the loads found in the page cache, with what was meant to keep
  // them cold (session/cache_honesty.h CheckpointReadLabel); empty without
  // loads.
  std::string read_path;
  double size_gib() const { return static_cast<double>(size_bytes) / (1024.0 * 1024.0 * 1024.0); }
};

struct GenerateResults {
  std::uint64_t files_written = 0;
  std::uint64_t files_skipped = 0;
  // Of files_written: written again over files made with other generation
  // parameters, and the first change seen (train::GenerateReport).
  std::uint64_t files_rewritten = 0;
  std::string rewrite_reason;
  std::uint64_t files_written_by_all_ranks = 0;
  std::uint64_t bytes_written = 0;
  std::vector<std::uint64_t> bytes_written_per_rank;
  double seconds = 0;  // the slowest rank's
};

// Storage-layer counters summed over ranks.
struct IoTotals {
  std::uint64_t files_opened = 0;
  std::uint64_t read_requests = 0;
  std::uint64_t bytes_read = 0;
  std::uint64_t write_requests = 0;
  std::uint64_t bytes_written = 0;
  std::uint64_t fsync_calls = 0;
  std::uint64_t errors = 0;
};

// One row of io_counters.csv: Darshan's POSIX counters of one path summed
// over every rank that used it, or of the files past the top K ("others").
// Timestamps in `counters` are nanoseconds from the run's origin.
struct IoCounterRow {
  int rank = -1;  // the one rank that used the path; -1 when shared (Darshan's)
  std::string path;
  std::uint64_t files = 1;  // paths summed into this row
  session::FileCounters counters;
};

// Trace figures of the run (iomimic.trace), summed over ranks.
struct TraceTotals {
  std::uint64_t events = 0;   // written
  std::uint64_t dropped = 0;  // past iomimic.trace_max_events
};

struct PluginResults {
  plugin::PluginInfo info;
  std::map<std::string, std::string> options;
};

struct RunResults {
  metrics::Stamp start;
  metrics::Stamp end;
  int ranks = 1;
  int accelerators_per_process = 1;
  int accelerators = 1;  // ranks x accelerators_per_process
  int num_hosts = 1;
  std::string hostname;  // this rank's host
  // Each rank's host (index = rank) and each host's figures, in the order
  // of their lowest rank (output/hosts.h); hosts add up to the totals.
  std::vector<std::string> rank_hosts;
  std::vector<HostFigures> hosts;
  // Each host's telemetry, when the timeline is on (host_telemetry.csv).
  std::vector<HostTelemetryResults> host_telemetry;

  HostFacts host;                       // this rank's host
  std::vector<double> host_memory_gib;  // per host
  std::vector<double> host_cpus;        // per host
  double data_size_per_host_gib = 0;    // DLIO's estimate, for potential_caching
  session::CacheCheck cache_check;       // the training set against the hosts' memory

  std::optional<GenerateResults> generate;
  std::optional<TrainResults> train;
  std::optional<CheckpointResults> checkpoint;
  std::optional<kvcache::KvResults> kv_cache;  // workflow.kv_cache, all ranks

  IoTotals io;
  // On rank 0 only (the other ranks' results hold none of io_counters,
  // io_counters_total, io_counters_paths, timeline and events: only rank 0
  // writes them).
  // io_counters.csv: the top iomimic.io_counters_top paths by bytes read and
  // written over all ranks, then one "others" row when paths were left out;
  // io_counters_total: the same counters over every path (summary.json).
  std::vector<IoCounterRow> io_counters;
  session::FileCounters io_counters_total;
  std::uint64_t io_counters_paths = 0;       // distinct paths over all ranks
  std::optional<TraceTotals> trace;          // when iomimic.trace is on
  metrics::LatencyHistogram sample_latency;  // open + read + close of a sample, all ranks
  metrics::LatencyHistogram read_latency;    // each read request, all ranks
  // Every latency distribution of the run, merged over threads and ranks,
  // nanoseconds, by name (histograms.json): sample_read, storage_open,
  // storage_read, storage_write, storage_fsync, storage_close, storage_stat,
  // step_data_wait (training steps: the time the accelerator waited for its
  // batch), eval_step_data_wait, checkpoint_save, checkpoint_load.
  std::vector<std::pair<std::string, metrics::LatencyHistogram>> histograms;
  std::vector<std::pair<std::string, double>> storage_statistics;  // the back end's own

  PluginResults storage;
  std::optional<PluginResults> format;
  std::string storage_chain;  // "<decorator> > <back end>", or the back end
  std::string data_path;      // the back end's data path ("pread", "io_uring", ...)
  std::uint64_t alignment = 0;

  std::uint64_t shuffle_random_seed = 0;
  std::optional<std::pair<std::uint64_t, std::uint64_t>> checksum;  // (sum, samples)
  // Samples read by a reader thread that helped another's step, all ranks
  // (iomimic.reader_work_sharing).
  std::uint64_t shared_samples = 0;
  // How training reads the format's files, in words, and how many times the
  // dataset's bytes one epoch reads on purpose (1 unless the access pattern
  // rereads, e.g. DLIO's whole-file read per sample); empty without training.
  std::string read_pattern;
  double read_pattern_factor = 1;

  // Every rank's timeline rows and events, by rank, then time (rank 0 only).
  double timeline_interval = 0;  // seconds; 0 = no timeline
  std::vector<TimelineEntry> timeline;
  std::vector<EventEntry> events;

  // The signal (SIGINT, SIGTERM, SIGHUP) that stopped the run at a step
  // boundary, or 0 when it ran to its end (session/interrupt.h).
  int interrupted_by = 0;

  // Filled after the per-accelerator files are written (their cost counts).
  double peak_rss_mib = 0;  // the largest rank's, whole run
  double output_seconds = 0;
  std::uint64_t max_steps_per_entry = 1;  // rank 0's largest per-step list folding
};

// Collective: every rank calls it and gets the same run-wide figures; the
// host facts, hostname and checkpoint timestamps are the calling rank's
// (summary.json, written by rank 0, shows rank 0's, as DLIO's does). Reads
// the session's counters and the outcome's records; writes nothing.
Result<RunResults> CollectResults(session::Session& session, const RunOutcome& outcome);

}  // namespace iomimic::output
