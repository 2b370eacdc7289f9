// The results model: every figure of a run, computed once, as plain data.
//
// CollectResults (collective) reads the session's counters and the run's
// records, asks each workflow's results (output/workflow_results.h) to merge
// its own figures over the ranks, makes every common cross-rank reduction
// (hosts, storage counters, histograms, timeline, events) and returns the
// same RunResults on every rank. Writers (output/writers.h: summary.json, the console summary,
// and whatever front end or observability file comes next) are functions of
// this model and the manifest; none reads a live engine object or talks MPI.
// output/ knows no workflow: training's figures (DLIO's formulas,
// docs/dlio-compat.md) live in train/results.h, the KV-cache workflow's in
// kvcache/results.h.

#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/config.h"
#include "metrics/histogram.h"
#include "metrics/host_telemetry.h"
#include "metrics/records.h"
#include "metrics/timeline.h"
#include "output/hosts.h"
#include "output/workflow_results.h"
#include "plugin/registry.h"
#include "session/counting_storage.h"

namespace iomimic::output {

// Binary units, as DLIO's MB/s figures use them.
inline constexpr double kMiB = 1024.0 * 1024.0;
inline constexpr double kGiB = 1024.0 * kMiB;

// What the run produced on this rank; the input of CollectResults.
struct RunOutcome {
  metrics::Stamp start;
  metrics::Stamp end;
  // Each workflow's results of this rank, in the order they ran (the same on
  // every rank); none for a run that failed before any.
  std::vector<std::shared_ptr<WorkflowResults>> workflows;
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

// Facts of the host rank 0 runs on, as DLIO reads them from /proc.
struct HostFacts {
  std::map<std::string, std::string> cpuinfo;  // the last CPU's lines, as DLIO
  std::map<std::string, std::string> meminfo;
  double memory_gib = 0;
  long cpus = 0;
  std::string processor;
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
  int rank = 0;  // the calling rank
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

  // Each workflow's results, merged over the ranks (Collect), in the order
  // they ran; Find gives one by its type.
  std::vector<std::shared_ptr<WorkflowResults>> workflows;
  // The denominator of each host's read rate (HostFigures::
  // train_read_MiB_per_second): the workflow's busy time, set by its
  // Collect (training: the sum of each epoch's slowest rank); 0 = none.
  double host_rate_seconds = 0;

  session::IoSnapshot io;  // storage-layer counters summed over ranks
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

  // Every rank's timeline rows and events, by rank, then time (rank 0 only).
  double timeline_interval = 0;  // seconds; 0 = no timeline
  std::vector<TimelineEntry> timeline;
  std::vector<EventEntry> events;

  // The signal (SIGINT, SIGTERM, SIGHUP) that stopped the run at a step
  // boundary, or 0 when it ran to its end (session/interrupt.h).
  int interrupted_by = 0;

  // Filled after the per-rank files are written (their cost counts).
  double peak_rss_mib = 0;  // the largest rank's, whole run
  double output_seconds = 0;

  // The workflow results of type T, or null when the run had none.
  template <typename T>
  T* Find() const {
    for (const std::shared_ptr<WorkflowResults>& w : workflows) {
      if (T* found = dynamic_cast<T*>(w.get())) return found;
    }
    return nullptr;
  }
};

// Collective: every rank calls it and gets the same run-wide figures; the
// host facts, hostname and checkpoint timestamps are the calling rank's
// (summary.json, written by rank 0, shows rank 0's, as DLIO's does). Reads
// the session's counters and the outcome's records; writes nothing.
Result<RunResults> CollectResults(session::Session& session, const RunOutcome& outcome);

// Seconds from the run's origin to `t` (events.csv's times).
double SinceOrigin(std::chrono::system_clock::time_point origin, const metrics::Stamp& t);

}  // namespace iomimic::output
