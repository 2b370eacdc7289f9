#include <initializer_list>
#include <string>
#include <string_view>

#include "config/convert_internal.h"  // declares ValidateConfig
#include "config/dlio_compat.h"

namespace iomimic::config::internal {
namespace {

class Validator {
 public:
  Validator(const YAML::Node& root, const Locator& locator) : root_(root), locator_(locator) {}

  // An error reported at the first of `paths` that the manifest (or an
  // override) sets, or at the first path without a position.
  Status Fail(std::initializer_list<std::string_view> paths, const std::string& what) const {
    for (std::string_view path : paths) {
      if (const std::optional<YAML::Node> node = FindPath(root_, path)) {
        return locator_.Error(node->Mark(), path, what);
      }
    }
    return locator_.Error(YAML::Mark::null_mark(), *paths.begin(), what);
  }

 private:
  const YAML::Node& root_;
  const Locator& locator_;
};

std::string Str(std::int64_t value) { return std::to_string(value); }
std::string Str(std::uint64_t value) { return std::to_string(value); }

}  // namespace

Status ValidateConfig(const Config& config, const YAML::Node& root, const Locator& locator) {
  const Validator check(root, locator);
  const DatasetConfig& dataset = config.dataset;
  const ModelConfig& model = config.model;
  const ReaderConfig& reader = config.reader;
  const CheckpointConfig& checkpoint = config.checkpoint;

  if (!dataset.record_dims.empty() && dataset.record_length_bytes_stdev > 0) {
    return check.Fail({"dataset.record_length_bytes_stdev", "dataset.record_dims"},
                      "must be 0 when dataset.record_dims is set (give record_length_bytes "
                      "with a stdev instead of record_dims)");
  }
  if (checkpoint.num_checkpoints_write > 0 &&
      checkpoint.num_checkpoints_read > checkpoint.num_checkpoints_write) {
    return check.Fail({"checkpoint.num_checkpoints_read", "checkpoint.num_checkpoints_write"},
                      Str(checkpoint.num_checkpoints_read) +
                          " exceeds checkpoint.num_checkpoints_write (" +
                          Str(checkpoint.num_checkpoints_write) + ")");
  }
  if (model.pipeline_parallelism > 1 && model.zero_stage == 3) {
    return check.Fail({"model.parallelism.zero_stage", "model.parallelism.pipeline"},
                      "ZeRO stage 3 does not work with pipeline parallelism "
                      "(model.parallelism.pipeline is " +
                          Str(model.pipeline_parallelism) + ")");
  }
  if (model.num_layers > 0 && model.num_layers < model.pipeline_parallelism) {
    return check.Fail({"model.num_layers", "model.parallelism.pipeline"},
                      "model.num_layers (" + Str(model.num_layers) +
                          ") must be at least model.parallelism.pipeline (" +
                          Str(model.pipeline_parallelism) + ")");
  }
  if (model.data_parallelism > 0 && checkpoint.mode == "default") {
    return check.Fail({"model.parallelism.data", "checkpoint.mode"},
                      "may be set only with checkpoint.mode: subset (the default mode derives "
                      "it from the world size)");
  }
  if (checkpoint.mode == "subset" && model.data_parallelism <= 0) {
    return check.Fail({"checkpoint.mode"},
                      "subset needs model.parallelism.data (the data parallelism of the full "
                      "job)");
  }
  if (reader.data_loader_given) {
    const std::string_view refusal = LoaderCannotRead(reader.data_loader, dataset.format);
    if (!refusal.empty()) {
      return check.Fail({"reader.data_loader", "dataset.format"}, std::string(refusal));
    }
    const bool mismatch = (config.framework == "tensorflow" && reader.data_loader == "pytorch") ||
                          (config.framework == "pytorch" && reader.data_loader == "tensorflow");
    if (mismatch) {
      return check.Fail(
          {"reader.data_loader", "framework"},
          "'" + reader.data_loader + "' does not match framework '" + config.framework + "'");
    }
  }
  if (checkpoint.ksm_present && checkpoint.randomize_tensor) {
    return check.Fail({"checkpoint.ksm", "checkpoint.randomize_tensor"},
                      "needs checkpoint.randomize_tensor: False (KSM merges identical pages)");
  }
  if (!reader.data_loader_classname.empty() && reader.data_loader_sampler.empty()) {
    return check.Fail({"reader.data_loader_classname"},
                      "needs reader.data_loader_sampler (iterative or index)");
  }
  return Status::OK();
}

}  // namespace iomimic::config::internal
