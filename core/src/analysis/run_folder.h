// What a finished run folder says, read back for the analysis commands
// (compare, sweep, search): the headline figures of summary.json and the
// resolved configuration as flat "section.key" -> value pairs.
//
// The analysis commands read run folders, not live engine objects, so they
// work on any folder iomimic wrote, on this machine or another.

#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "iomimic/status.h"
#include "output/figures.h"

namespace iomimic::analysis {

// One figure of a run, in the order the commands print them.
struct Figure {
  std::string name;  // e.g. "train AU %"
  double value = 0;
  bool present = false;
  bool higher_is_better = true;
};

// One host's figures (summary.json's iomimic.hosts), for compare.
struct HostFigure {
  std::string host;
  int ranks = 0;
  double train_MiB_per_second = 0;
  double au_percent = 0;
  double samples = 0;
  double data_wait_seconds = 0;
};

// One QoS class of a KV-cache run (summary.json's kv_cache.qos.<name>,
// docs/kvcache.md): its requests, P95 target, whether the P95 met it, and
// its end-to-end latency percentiles ("p50", "p95", ... -> ms).
struct KvQosClass {
  std::string name;  // interactive, responsive or batch
  double requests = 0;
  double target_p95_ms = 0;
  bool meets_target = false;
  std::map<std::string, double> latency_ms;
};

struct RunFolder {
  std::string path;
  std::string status;  // status.json: completed, failed, interrupted ("" when missing)
  std::vector<Figure> figures;
  // The resolved manifest flattened ("reader.read_threads" -> "4"), plus
  // "plugins.storage" (the chain), "plugins.format", "host",
  // "num_accelerators" and "num_hosts".
  std::map<std::string, std::string> config;
  // Per-host figures, in the run's host order (empty for an older iomimic).
  std::vector<HostFigure> hosts;
  // A KV-cache run (summary.json has kv_cache): its QoS classes in the
  // order interactive, responsive, batch (those summary.json holds).
  bool kv_cache = false;
  std::vector<KvQosClass> qos;

  // A run whose merge never happened (killed, a host lost: docs/cluster.md,
  // "Faults"): no summary.json, its figures added up from the ranks'
  // records (ranks/<rank>.json) of the ranks that wrote one. `partial_note`
  // says so, with the ranks and hosts that are missing.
  bool partial = false;
  std::string partial_note;

  // The figure `name`, or null.
  const Figure* Find(const std::string& name) const;
};

// Reads `path`/summary.json (and status.json), or, when the folder has no
// summary.json but the ranks' records, the partial figures they add up to.
// `figures` says which figures to read (run::Figures(): every workflow's);
// RunFolder::figures holds one per spec, in order, present or not.
// kNotFound when the folder holds neither; kCorruption with the file's name
// when one does not parse.
Result<RunFolder> ReadRunFolder(const std::string& path, const output::FigureList& figures);

// summary.json's text, or for a folder without one a summary of the same
// shape from the ranks' records: DLIO's per-epoch AU and throughput lists
// and means over the whole epochs every reporting rank finished,
// num_accelerators (those that reported), hostname, the resolved manifest
// from <output_subdir>/config.yaml and iomimic.partial (the note, the
// ranks reported, the ranks and hosts missing). kNotFound when neither.
Result<std::string> SummaryText(const std::string& path);

}  // namespace iomimic::analysis
