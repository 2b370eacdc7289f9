#include "plan/checkpoint_plan.h"

#include <algorithm>

namespace iomimic::plan {

std::uint64_t RankCheckpoint::bytes() const {
  std::uint64_t n = 0;
  for (const CheckpointFile& f : files) n += f.bytes;
  return n;
}

std::uint64_t CheckpointPlan::total_bytes() const {
  std::uint64_t n = 0;
  for (const RankCheckpoint& r : ranks) n += r.bytes();
  return n;
}

std::uint64_t DatatypeBytes(const std::string& name) {
  if (name == "int8" || name == "uint8") return 1;
  if (name == "fp16" || name == "bf16") return 2;
  if (name == "fp32") return 4;
  if (name == "fp64") return 8;
  return 2;
}

std::string CheckpointDirectory(std::uint64_t epoch, std::uint64_t step) {
  return "global_epoch" + std::to_string(epoch) + "_step" + std::to_string(step);
}

namespace {

struct Shape {
  std::uint64_t h, ffn, vocab, layers, d_kv;
};

Shape ShapeOf(const config::ModelConfig& m) {
  Shape s{m.hidden_size, m.ffn_hidden_size, m.vocab_size,
          static_cast<std::uint64_t>(std::max<std::int64_t>(0, m.num_layers)), 0};
  const std::uint64_t heads = std::max<std::uint64_t>(1, m.num_attention_heads);
  s.d_kv = s.h / heads * m.num_kv_heads;
  return s;
}

// Elements of layer `index` held by one rank: 0 = embedding, 1..L blocks,
// L+1 = lm_head, L+2 = final norm. `shard` divides everything (ZeRO-3).
std::uint64_t LayerElements(const Shape& s, std::uint64_t index, std::uint64_t tp,
                            std::uint64_t shard) {
  if (index == 0 || index == s.layers + 1) return s.vocab * s.h / tp / shard;
  if (index == s.layers + 2) return s.h / shard;
  const std::uint64_t norms = 2 * s.h / shard;
  const std::uint64_t qkv = s.h * (s.h + 2 * s.d_kv) / tp / shard;
  const std::uint64_t dense = s.h * s.h / tp / shard;
  const std::uint64_t mlp = 3 * s.h * s.ffn / tp / shard;
  return norms + qkv + dense + mlp;
}

// The layers of pipeline stage `stage`: transformer layers split as evenly as
// possible (earlier stages take the remainder), embedding on the first stage,
// lm_head and final norm on the last.
std::vector<std::uint64_t> StageLayers(std::uint64_t layers, std::uint64_t stages,
                                       std::uint64_t stage) {
  std::vector<std::uint64_t> out;
  const std::uint64_t per = layers / stages, rem = layers % stages;
  const std::uint64_t first = stage * per + std::min(stage, rem) + 1;
  const std::uint64_t count = per + (stage < rem ? 1 : 0);
  if (stage == 0) out.push_back(0);
  for (std::uint64_t i = 0; i < count; ++i) out.push_back(first + i);
  if (stage == stages - 1) {
    out.push_back(layers + 1);
    out.push_back(layers + 2);
  }
  return out;
}

// The part name of layer `index` (LayerElements' numbering).
std::string LayerPartName(std::uint64_t index, std::uint64_t layers) {
  if (index == 0) return "model.embed_tokens";
  if (index == layers + 1) return "model.lm_head";
  if (index == layers + 2) return "model.norm";
  return "model.layers." + std::to_string(index - 1);
}

}  // namespace

std::uint64_t TransformerParameters(const config::ModelConfig& model) {
  const Shape s = ShapeOf(model);
  const std::uint64_t per_layer =
      s.h + s.h * (s.h + 2 * s.d_kv) + s.h * s.h + s.h + 3 * s.h * s.ffn;
  return 2 * s.vocab * s.h + s.layers * per_layer + s.h;
}

namespace {

// The job's data parallelism on `world_size` ranks, whose model parallelism
// is `mp` (tensor x pipeline): the world size's share in checkpoint.mode
// default, model.parallelism.data in subset. Errors are placed at the
// manifest's line, as its other errors are (config::ErrorAt).
Result<int> DataParallelism(const config::Config& config, int world_size, int mp) {
  const config::ModelConfig& m = config.model;
  if (config.checkpoint.mode == "subset") {
    if (m.data_parallelism <= 0) {
      return Status::InvalidArgument("checkpoint.mode subset needs model.parallelism.data");
    }
    const int data = static_cast<int>(m.data_parallelism);
    if (world_size > data * mp) {
      return config::ErrorAt(
          config, {"model.parallelism.data", "checkpoint.mode"},
          "subset checkpointing: " + std::to_string(world_size) +
              " ranks exceed the job's DP x TP x PP = " + std::to_string(data * mp));
    }
    return data;
  }
  if (world_size % mp != 0) {
    return config::ErrorAt(
        config, {"model.parallelism.tensor", "model.parallelism.pipeline", "checkpoint.mode"},
        "checkpointing in checkpoint.mode default needs a world size that is a multiple of "
        "tensor x pipeline parallelism (" +
            std::to_string(std::max<std::int64_t>(1, m.tensor_parallelism)) + " x " +
            std::to_string(std::max<std::int64_t>(1, m.pipeline_parallelism)) + " = " +
            std::to_string(mp) + "), got " + std::to_string(world_size) +
            " rank(s); run with a multiple of " + std::to_string(mp) +
            " ranks or use checkpoint.mode: subset with model.parallelism.data");
  }
  return world_size / mp;
}

}  // namespace

Result<CheckpointPlan> PlanCheckpoint(const config::Config& config, int world_size) {
  const config::ModelConfig& m = config.model;
  CheckpointPlan plan;
  plan.tensor = static_cast<int>(std::max<std::int64_t>(1, m.tensor_parallelism));
  plan.pipeline = static_cast<int>(std::max<std::int64_t>(1, m.pipeline_parallelism));
  plan.zero_stage = static_cast<int>(m.zero_stage);
  const int mp = plan.tensor * plan.pipeline;
  IOMIMIC_ASSIGN_OR_RETURN(plan.data, DataParallelism(config, world_size, mp));
  const std::uint64_t job_ranks = static_cast<std::uint64_t>(plan.data) * mp;
  const std::uint64_t model_dt = DatatypeBytes(m.model_datatype);
  const std::uint64_t opt_dt = DatatypeBytes(m.optimizer_datatype);
  const bool legacy = !m.layer_parameters.empty() || !m.optimization_groups.empty();
  const bool transformer = !legacy && m.type == "transformer" && m.num_layers > 0;
  const Shape shape = ShapeOf(m);
  if (transformer) plan.parameters = TransformerParameters(m);

  for (int r = 0; r < world_size; ++r) {
    RankCheckpoint rc;
    rc.rank = r;
    rc.tp_rank = r % plan.tensor;
    rc.pp_rank = (r / plan.tensor) % plan.pipeline;
    rc.mp_rank = r % mp;
    rc.dp_rank = r / mp;
    const std::string zero_prefix =
        "zero_pp_rank_" + std::to_string(rc.dp_rank) + "_mp_rank_" + std::to_string(rc.mp_rank);
    if (!transformer && !legacy) {
      // A plain model: one tensor, written by the first model-parallel group.
      if (r < mp)
        rc.files.push_back({"model_states-" + std::to_string(r) + ".pt",
                            m.model_size_bytes,
                            false,
                            {{"model", m.model_size_bytes}}});
      plan.ranks.push_back(std::move(rc));
      continue;
    }
    // With ZeRO 0 only the first data-parallel replica writes anything.
    if (plan.zero_stage == 0 && rc.dp_rank != 0) {
      plan.ranks.push_back(std::move(rc));
      continue;
    }
    const std::uint64_t layers_total =
        transformer ? shape.layers
                    : static_cast<std::uint64_t>(std::max<std::int64_t>(0, m.num_layers));
    std::vector<std::uint64_t> stage_layers =
        StageLayers(layers_total, static_cast<std::uint64_t>(plan.pipeline),
                    static_cast<std::uint64_t>(rc.pp_rank));
    const std::uint64_t shard = plan.zero_stage >= 3 ? static_cast<std::uint64_t>(plan.data) : 1;
    auto layer_bytes = [&](std::uint64_t index) -> std::uint64_t {
      if (transformer) return LayerElements(shape, index, plan.tensor, shard) * model_dt;
      std::uint64_t elements = 0;
      for (std::uint64_t p : m.layer_parameters)
        elements += p / static_cast<std::uint64_t>(plan.tensor);
      return elements * model_dt;
    };
    // Model state.
    auto whole_stage = [&](std::string name) {
      CheckpointFile f{std::move(name), 0, false, {}};
      for (std::uint64_t l : stage_layers) {
        f.parts.push_back({LayerPartName(l, layers_total), layer_bytes(l)});
        f.bytes += f.parts.back().bytes;
      }
      rc.files.push_back(std::move(f));
    };
    if (transformer || !m.layer_parameters.empty()) {
      if (plan.zero_stage >= 3 || plan.zero_stage == 0) {
        whole_stage(zero_prefix + "_model_states.pt");
      } else if (rc.dp_rank == 0) {
        if (plan.pipeline > 1) {
          for (std::uint64_t l : stage_layers) {
            rc.files.push_back({"layer_" + std::to_string(l) + "-model_" +
                                    std::to_string(rc.mp_rank) + "_model_states.pt",
                                layer_bytes(l),
                                false,
                                {{LayerPartName(l, layers_total), layer_bytes(l)}}});
          }
        } else {
          whole_stage("model_" + std::to_string(rc.mp_rank) + "_model_states.pt");
        }
      }
    }
    // Optimizer state.
    std::uint64_t opt_elements = 0;
    if (!m.optimization_groups.empty()) {
      std::uint64_t sum = 0;
      for (std::uint64_t g : m.optimization_groups) sum += g;
      opt_elements = 3 * sum;  // a and b per group, plus the combined tensor
    } else if (transformer) {
      const std::uint64_t per_rank =
          plan.parameters / (plan.zero_stage > 0 ? job_ranks : static_cast<std::uint64_t>(mp));
      opt_elements = 3 * (per_rank + 5 * shape.h);
    }
    if (opt_elements > 0) {
      // Adam's fp32 master copy, exp_avg and exp_avg_sq: a third each.
      const std::uint64_t third = opt_elements / 3 * opt_dt;
      rc.files.push_back({zero_prefix + "_optim_states.pt",
                          opt_elements * opt_dt,
                          true,
                          {{"optim.fp32_master", third},
                           {"optim.exp_avg", third},
                           {"optim.exp_avg_sq", opt_elements * opt_dt - 2 * third}}});
    }
    plan.ranks.push_back(std::move(rc));
  }
  for (const RankCheckpoint& rc : plan.ranks) {
    for (const CheckpointFile& f : rc.files) {
      (f.optimizer ? plan.optimizer_bytes_total : plan.model_bytes_total) += f.bytes;
    }
  }
  return plan;
}

}  // namespace iomimic::plan
