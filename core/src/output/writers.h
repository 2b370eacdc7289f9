// Writers of the results model (output/model.h): each is a function of the
// model and the manifest, with no MPI and no engine object, so a front end
// (the CLI, a sweep, a test) can render a run it did not make.
//
//   summary.json                 SummaryJson (rank 0); DLIO's keys + "iomimic"
//   the workflows' own files     WorkflowResults::WriteRankFiles
//                                (output/workflow_results.h)
//   io_counters.csv              IoCountersCsv (rank 0)
//   console                      ConsoleSummary
//
// Key names and layouts: docs/dlio-compat.md and the README's "Results keys".
// JSON is strict: non-finite numbers are written as null, never NaN.

#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "config/config.h"
#include "iomimic/status.h"
#include "output/model.h"

namespace iomimic::output {

// DLIO's timestamp: local time, "%Y-%m-%dT%H:%M:%S.%f", no zone.
std::string Timestamp(std::chrono::system_clock::time_point t);

// Writes `text` to `path` atomically: into a hidden file beside it, then
// renamed over it, so that a reader, or a process killed mid-write (a
// launcher's SIGKILL), finds the old file or the new one, never a torn one
// (docs/cluster.md, "Faults"). The error names the path.
Status WriteTextFile(const std::string& path, const std::string& text);

// <id>_per_epoch_stats.json's text (docs/dlio-compat.md §5.3): per epoch its
// start, end, duration, blocks, evaluation and checkpoint saves; an epoch a
// signal cut short carries "partial": true.
std::string PerEpochStatsText(const std::vector<metrics::EpochRecord>& epochs,
                              double checkpoint_gib);

// summary.json's text: DLIO's keys (metric, hosts, epochs, ...) in DLIO's
// order, then iomimic's own object.
std::string SummaryJson(const RunResults& results, const config::LoadedManifest& manifest);

// timeline.csv's text (tidy, for pandas): one row per interval and rank,
// then one row per host and interval with rank "host" (its ranks' sums; AU
// over its accelerators), then one row per interval with rank "all" (sums;
// AU over every accelerator). Columns: interval, rank, start_s, end_s,
// bytes_read, bytes_written, read_requests, write_requests, samples, steps,
// compute_s, au_percent, read_MiB_per_s, write_MiB_per_s,
// requests_in_flight (mean), barrier_s, host (the rank's or row's host;
// "all" on the "all" rows). Empty when the run kept no timeline.
std::string TimelineCsv(const RunResults& results);

// host_telemetry.csv's text: one row per host and interval of the timeline
// (metrics/host_telemetry.h; docs/run-folder.md lists the columns). Empty
// when no host sampled (the timeline is off).
std::string HostTelemetryCsv(const RunResults& results);

// events.csv's text: rank, event, epoch, index, start_s, end_s, duration_s,
// bytes; times in seconds from the run's origin, rows by start time.
std::string EventsCsv(const RunResults& results);

// io_counters.csv's text: Darshan's POSIX-module counters per path, merged
// over ranks (rank -1 for a path several ranks used), most bytes first, the
// top iomimic.io_counters_top then one "others" row (files > 1). Columns and
// meanings: docs/run-folder.md.
std::string IoCountersCsv(const RunResults& results);

// histograms.json's text: every histogram of the model with its count, sum,
// min, max, percentiles and non-empty buckets ([low, high, count], ns).
std::string HistogramsJson(const RunResults& results);

// DLIO's closing "[METRIC]" block, line for line as DLIO writes it to the
// console and dlio.log (MLPerf Storage's rules take their figures of merit
// from these lines): the accelerators, then each workflow's lines
// (WorkflowResults::MetricLines; training: AU, samples/s and MB/s, mean and
// stdev over epochs, train_au_meet_expectation, checkpoint save/load
// duration and GB/s, the evaluation's figures).
std::string MetricBlock(const RunResults& results, const config::Config& config);

// A few lines for the terminal: workload, plugins, each workflow's lines
// (WorkflowResults::ConsoleLines), latency, bytes, the workflows' notes and
// where the results are.
std::string ConsoleSummary(const RunResults& results, const config::LoadedManifest& manifest,
                           const std::string& folder);

// JSON text as every results file writes it: 4-space indent, invalid UTF-8
// replaced.
std::string DumpJson(const nlohmann::ordered_json& value);

// A map of strings as a JSON object.
nlohmann::ordered_json StringMapJson(const std::map<std::string, std::string>& m);

// A checkpoint's entry in a per-epoch stats file: this rank's own start,
// end, duration and throughput (docs/dlio-compat.md §5.3).
nlohmann::ordered_json CheckpointStatsJson(const metrics::CheckpointRecord& r, double size_gib);

// `v` with two decimals ("%.2f"), as DLIO's per-epoch durations.
std::string FixedTwo(double v);

}  // namespace iomimic::output
