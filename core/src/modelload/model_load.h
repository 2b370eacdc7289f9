// The model-loading workflow (workflow.model_load, docs/model-loading.md):
// load a model's safetensors files as an inference server does at
// start-up, and measure how long until the model is loaded.
//
// The files are the model's (sized from model.transformer.* as
// plan/safetensors.h lays them out, written first where missing or not
// the model's) or the user's own (model_load.files). Each load reads every
// file's header, parses it, and reads every tensor's bytes into buffers of
// the session's storage (device memory where the back end's Allocate hands
// it out):
//  - method tensors: workers threads each take the next file, open it and
//    read its tensors in file order, in read_size requests (safetensors'
//    load_file; with the mmap back end this is mmap and touch);
//  - method chunks: every header first, then every file's data cut into
//    read_size chunks that workers threads read concurrently (Run:ai Model
//    Streamer; concurrent range reads of objects on object storage).
// model_load.cache chooses a load with the files' pages dropped from the
// page cache first (cold), one as they are (warm), or both in that order;
// each load starts on every rank at once (a barrier) and ends with the
// slowest rank's last byte. model_load.split replicate: every rank loads
// every byte; shard: rank r loads every ranks-th file or chunk. A signal
// stops the load at the next request (session/interrupt.h).

#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "iomimic/status.h"
#include "metrics/histogram.h"
#include "metrics/records.h"
#include "output/figures.h"
#include "output/workflow_results.h"
#include "session/session.h"

namespace iomimic::modelload {

// One load of the model on one rank (or, merged, over every rank).
struct LoadPass {
  std::string cache;                     // "cold" or "warm"
  std::uint64_t files = 0;               // files this rank read (headers included)
  std::uint64_t tensors = 0;             // tensors whose bytes it read
  std::uint64_t bytes = 0;               // bytes read: headers and tensors
  std::uint64_t requests = 0;            // read requests
  metrics::Stamp start, end;             // the common start; this rank's last byte
  double seconds = 0;                    // merged: the slowest rank's
  metrics::LatencyHistogram file_ns;     // a file's first request to its last byte
  metrics::LatencyHistogram request_ns;  // one read request
  metrics::PageResidency residency;      // before the load (cold: after the drop)
  // Merged: over the ranks (session::SumResidency).
  std::uint64_t resident_bytes = 0, residency_bytes = 0;
  int ranks_measured = 0;
  std::string residency_verdict;
};

// What one rank did.
struct LoadFigures {
  std::uint64_t model_files = 0;  // the model's files (every rank's view)
  std::uint64_t model_bytes = 0;  // their sizes
  std::uint64_t model_tensors = 0;
  std::uint64_t written_files = 0;  // files this rank (re)wrote first
  std::uint64_t written_bytes = 0;
  double write_seconds = 0;
  bool own_files = false;  // model_load.files: the user's files, none written
  std::vector<LoadPass> passes;
  int interrupted_by = 0;
};

// Writes what is missing, then loads, on this rank; collective (barriers).
// Errors name the file and offset (a header past the file's end, offsets
// that do not add up) or the keys (a model that is not a transformer).
Result<LoadFigures> LoadModel(session::Session& session);

// The workflow's figures and, after Collect, the run's: summary.json's
// model_load (the model, the method, each load's seconds, GB/s, file and
// request latency, page-cache residency), the histograms
// model_load_<cache>_file and model_load_<cache>_request, a span per load
// in events.csv and the console lines.
class LoadResults final : public output::WorkflowResults {
 public:
  explicit LoadResults(LoadFigures local) : local_(std::move(local)), merged_(local_) {}

  int interrupted_by() const override { return local_.interrupted_by; }
  void AddEvents(std::chrono::system_clock::time_point origin, int rank,
                 std::vector<output::EventEntry>* events) const override;
  std::vector<std::pair<std::string, metrics::LatencyHistogram>> Histograms() const override;
  Status Collect(session::Session& session, output::RunResults& run) override;
  void AddToSummary(const output::RunResults& run, const config::LoadedManifest& manifest,
                    nlohmann::ordered_json& summary,
                    nlohmann::ordered_json& iomimic) const override;
  std::string ConsoleLines(const output::RunResults& run,
                           const config::Config& config) const override;

  const LoadFigures& merged() const { return merged_; }

 private:
  LoadFigures local_;
  LoadFigures merged_;
};

// The entry point of run/'s table.
Result<std::shared_ptr<output::WorkflowResults>> RunModelLoad(
    session::Session& session, const output::WorkflowContext& context);

// The workflow's headline figures (output/figures.h): each load's seconds
// and GB/s.
const output::FigureList& Figures();

}  // namespace iomimic::modelload
