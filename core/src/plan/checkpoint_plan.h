// The checkpoint plan: which rank writes which files of which size, as DLIO
// computes it (docs/dlio-compat.md §3.5), as a pure function of the
// manifest and the world size.
//
// Three sizing models, chosen from the manifest:
//  - transformer (model.type: transformer, num_layers > 0): the parameter
//    count from layers, hidden and FFN sizes, heads, KV heads and vocabulary;
//    layers spread over pipeline stages (embedding on the first stage, lm_head
//    and the final norm on the last), tensors split by TP (norms are not),
//    and by DP under ZeRO-3; optimizer state 3 x (n/ranks + 5h) elements;
//  - legacy explicit sizes (model.layer_parameters, model.optimization_groups);
//  - a plain model: one tensor of model_size_bytes (model_states-<rank>.pt).
// Ranks map to (tp, pp, dp) as DLIO's do: tp = r mod TP, pp = (r / TP) mod PP,
// mp = r mod (TP*PP), dp = r / (TP*PP).

#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/config.h"
#include "iomimic/status.h"

namespace iomimic::plan {

// A named piece of a file's state (a layer's parameters, one of Adam's
// three optimizer tensors): what a state-dict-based layout (DCP,
// plan/dcp_plan.h) stores as one item. The same name on several ranks is
// one global tensor split between them (TP, ZeRO), in rank order.
struct CheckpointPart {
  std::string name;  // e.g. "model.layers.3", "optim.exp_avg"
  std::uint64_t bytes = 0;
};

struct CheckpointFile {
  std::string name;  // relative to the checkpoint folder's step directory
  std::uint64_t bytes = 0;
  bool optimizer = false;
  std::vector<CheckpointPart> parts;  // add up to `bytes`
};

struct RankCheckpoint {
  int rank = 0;
  int tp_rank = 0, pp_rank = 0, dp_rank = 0, mp_rank = 0;
  std::vector<CheckpointFile> files;
  std::uint64_t bytes() const;
};

struct CheckpointPlan {
  // The job whose checkpoint is sized: DP x TP x PP ranks (subset mode sizes
  // a larger job than the one that runs).
  int tensor = 1, pipeline = 1, data = 1;
  int zero_stage = 0;
  std::uint64_t parameters = 0;         // 0 for plain models
  std::uint64_t model_bytes_total = 0;  // one copy of the model state
  std::uint64_t optimizer_bytes_total = 0;
  // The ranks of this run (world_size of them) and what each writes.
  std::vector<RankCheckpoint> ranks;
  std::uint64_t total_bytes() const;  // all files of one checkpoint
};

// Bytes of a DLIO datatype name (fp16 -> 2...).
std::uint64_t DatatypeBytes(const std::string& name);

// DLIO's transformer parameter count.
std::uint64_t TransformerParameters(const config::ModelConfig& model);

// The plan for `world_size` ranks. kInvalidArgument when the world size does
// not fit the parallelism (not a multiple of TP*PP, or larger than the job
// in subset mode).
Result<CheckpointPlan> PlanCheckpoint(const config::Config& config, int world_size);

// "global_epoch<E>_step<S>", DLIO's step directory name.
std::string CheckpointDirectory(std::uint64_t epoch, std::uint64_t step);

}  // namespace iomimic::plan
