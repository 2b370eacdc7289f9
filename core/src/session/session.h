// A session: one rank's view of a run, with its plugins instantiated.
//
// The session owns the storage and format objects made by the plugin
// registry (the storage wrapped in a CountingStorage) and the dataset layout.
// Everything the generator and trainer need hangs off it.

#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "config/config.h"
#include "iomimic/format.h"
#include "metrics/histogram.h"
#include "metrics/timeline.h"
#include "metrics/trace.h"
#include "plan/plan.h"
#include "plugin/registry.h"
#include "session/counting_storage.h"
#include "session/progress.h"

namespace iomimic::session {

// The training steps per epoch of each of `ranks` x
// iomimic.accelerators_per_process accelerators (0 when the run does not
// train), or InvalidArgument, naming the key, its value and what one step
// needs, when a training run would run no step at all (issue 13, defect 9):
// train.epochs 0, train.total_training_steps 0, or fewer samples than one
// batch per accelerator.
Result<std::uint64_t> CheckTrainingSteps(const config::Config& c, int ranks);

class Session {
 public:
  // Creates the storage and format plugins named by the manifest. Errors name
  // the plugin (unknown name, bad option, refused library).
  static Result<std::unique_ptr<Session>> Open(const config::LoadedManifest& manifest,
                                               const plugin::Registry& registry,
                                               cluster::Cluster& cluster);
  ~Session();

  const config::LoadedManifest& manifest() const { return manifest_; }
  const config::Config& config() const { return manifest_.config; }
  cluster::Cluster& cluster() { return cluster_; }
  CountingStorage& storage() { return *storage_; }
  // Precondition: the workflow generates or trains (else there is no format).
  Format& format() { return *format_; }
  bool has_format() const { return format_ != nullptr; }
  const plugin::PluginInfo& storage_info() const { return storage_info_; }
  // "<decorator> > <back end>" for decorated back ends, else the plugin name.
  std::string storage_chain() const { return storage_stack_.Describe(); }
  const plugin::PluginInfo& format_info() const { return format_info_; }
  const plan::DatasetLayout& layout() const { return *layout_; }
  const ElementType& element_type() const { return element_type_; }
  const plan::ShuffleSeeds& shuffle_seeds() const { return seeds_; }

  // Remarks about the manifest that only the plugins could make (for
  // example an element type a format replaces), for the front end to show.
  const std::vector<std::string>& warnings() const { return warnings_; }

  // Live activity for the timeline (metrics/timeline.h): steps taken (per
  // accelerator, summed), the emulated compute (windows of each step, so an
  // interval gets the part of a step inside it) and the time spent in the
  // per-step barrier (the process's first accelerator).
  void AddSteps(std::uint64_t n) { steps_.fetch_add(n, std::memory_order_relaxed); }
  std::uint64_t steps() const { return steps_.load(std::memory_order_relaxed); }
  metrics::BusyClock& compute_busy() { return compute_busy_; }
  void AddBarrierSeconds(double s) {
    barrier_ns_.fetch_add(static_cast<std::uint64_t>(s * 1e9), std::memory_order_relaxed);
  }
  double barrier_seconds() const { return barrier_ns_.load(std::memory_order_relaxed) / 1e9; }

  // The optional event trace (iomimic.trace; metrics/trace.h): off until
  // the run enables it; the storage records its operations into it.
  metrics::Tracer& tracer() { return tracer_; }
  // Where the run is, for live progress (session/progress.h).
  ProgressBoard& progress() { return progress_; }

  // Time to open, read and close one sample, over the whole run.
  metrics::LatencyHistogram& sample_latency() { return sample_latency_; }

  // Order-independent sum of the hashes of every sample's bytes (when
  // iomimic.checksum is on) and the number of samples hashed.
  void AddChecksum(std::uint64_t hash) {
    checksum_.fetch_add(hash, std::memory_order_relaxed);
    checksummed_.fetch_add(1, std::memory_order_relaxed);
  }
  std::uint64_t checksum() const { return checksum_.load(); }
  std::uint64_t checksummed() const { return checksummed_.load(); }

  // Samples read by a reader thread other than the one that owns their
  // step (iomimic.reader_work_sharing), over the whole run.
  void AddSharedSample() { shared_samples_.fetch_add(1, std::memory_order_relaxed); }
  std::uint64_t shared_samples() const { return shared_samples_.load(); }

 private:
  Session(const config::LoadedManifest& manifest, cluster::Cluster& cluster)
      : manifest_(manifest), cluster_(cluster) {}

  const config::LoadedManifest& manifest_;
  cluster::Cluster& cluster_;
  plugin::StorageStack storage_stack_;
  std::unique_ptr<CountingStorage> storage_;
  plugin::FormatPtr format_;
  plugin::PluginInfo storage_info_;
  plugin::PluginInfo format_info_;
  std::unique_ptr<plan::DatasetLayout> layout_;
  ElementType element_type_;
  plan::ShuffleSeeds seeds_;
  std::vector<std::string> warnings_;
  std::atomic<std::uint64_t> steps_{0};
  std::atomic<std::uint64_t> barrier_ns_{0};
  metrics::BusyClock compute_busy_;
  ProgressBoard progress_;
  metrics::LatencyHistogram sample_latency_;
  metrics::Tracer tracer_;
  std::atomic<std::uint64_t> checksum_{0};
  std::atomic<std::uint64_t> checksummed_{0};
  std::atomic<std::uint64_t> shared_samples_{0};
};

// Resolves a dataset-relative path against storage.storage_root (DLIO joins
// the root and the path; an absolute data_folder, or a URL
// (scheme://bucket/folder), ignores the root).
std::string ResolveDataPath(const config::Config& config, const std::string& path);

}  // namespace iomimic::session
