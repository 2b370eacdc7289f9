#include <initializer_list>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

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

// Why `name` cannot be one path component inside a folder (a file name, a
// folder name), or "" when it can: no '/', not "." or "..", no NUL.
std::string NotAName(const std::string& name) {
  if (name.find('/') != std::string::npos) {
    return name.front() == '/' ? "is an absolute path" : "contains '/'";
  }
  if (name == "." || name == "..") return "is '" + name + "'";
  if (name.find('\0') != std::string::npos) return "contains a NUL character";
  return "";
}

// Why relative path `path` may leave the folder it is relative to, or "".
std::string LeavesFolder(const std::string& path) {
  if (!path.empty() && path.front() == '/') return "is an absolute path";
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t slash = std::min(path.find('/', start), path.size());
    if (path.compare(start, slash - start, "..") == 0 && slash - start == 2) {
      return "contains a '..' component";
    }
    start = slash + 1;
  }
  return "";
}

std::string Str(std::int64_t value) { return std::to_string(value); }

// One users.<type> range of kv_cache: minimum at most maximum.
template <typename T>
Status CheckRange(const Validator& check, const std::string& type, const char* what, T min, T max) {
  if (min <= max) return Status::OK();
  const std::string base = "kv_cache.users." + type + "." + what;
  const std::string lo = base + "_min", hi = base + "_max";
  std::ostringstream text;
  text << min << " exceeds " << hi << " (" << max << ")";
  return check.Fail({lo, hi}, text.str());
}

}  // namespace

Status ResolveKvCacheWorkflow(const YAML::Node& root, const Locator& locator, Config* config) {
  const Validator check(root, locator);
  if (!config->workflow.kv_cache) return Status::OK();
  if (!FindPath(root, "workflow.train").has_value()) config->workflow.train = false;
  if (config->workflow.train) {
    return check.Fail({"workflow.train", "workflow.kv_cache"},
                      "True with workflow.kv_cache: True; the KV-cache workflow replaces training "
                      "(set one of them to False)");
  }
  const KvCacheConfig& k = config->kv_cache;
  const struct {
    const char* type;
    std::uint64_t c0, c1, g0, g1;
    double t0, t1;
  } users[] = {
      {"chatbot", k.chatbot_context_min, k.chatbot_context_max, k.chatbot_generation_min,
       k.chatbot_generation_max, k.chatbot_think_time_min, k.chatbot_think_time_max},
      {"coding", k.coding_context_min, k.coding_context_max, k.coding_generation_min,
       k.coding_generation_max, k.coding_think_time_min, k.coding_think_time_max},
      {"document", k.document_context_min, k.document_context_max, k.document_generation_min,
       k.document_generation_max, k.document_think_time_min, k.document_think_time_max}};
  for (const auto& u : users) {
    IOMIMIC_RETURN_IF_ERROR(CheckRange(check, u.type, "context", u.c0, u.c1));
    IOMIMIC_RETURN_IF_ERROR(CheckRange(check, u.type, "generation", u.g0, u.g1));
    IOMIMIC_RETURN_IF_ERROR(CheckRange(check, u.type, "think_time", u.t0, u.t1));
  }
  if (k.trace_only && k.io_trace_log.empty()) {
    return check.Fail({"kv_cache.trace_only"},
                      "True without kv_cache.io_trace_log; a trace-only run performs no I/O and "
                      "its product is the trace (set kv_cache.io_trace_log: trace.csv)");
  }
  if (k.num_gpus < k.tensor_parallel) {
    return check.Fail({"kv_cache.num_gpus", "kv_cache.tensor_parallel"},
                      Str(static_cast<std::int64_t>(k.num_gpus)) +
                          " is less than kv_cache.tensor_parallel (" +
                          Str(static_cast<std::int64_t>(k.tensor_parallel)) +
                          "); each tensor-parallel rank holds its share on its own GPU");
  }
  return Status::OK();
}

namespace {

// The problems of one manifest, gathered so that one error line names them
// all: a user fixing a file learns of every problem at once.
class Problems {
 public:
  void Add(Status problem) {
    if (!problem.ok()) found_.push_back(std::move(problem));
  }
  // OK, the one problem, or the first followed by "; also <where>: <path>:
  // <what>" for each other one (its "error: " left out).
  Status Joined() const {
    if (found_.empty()) return Status::OK();
    std::string text = found_.front().message();
    for (std::size_t i = 1; i < found_.size(); ++i) {
      std::string more = found_[i].message();
      if (const std::size_t at = more.find(": error: "); at != std::string::npos) {
        more.erase(at, std::string_view(": error").size());
      }
      text += "; also " + more;
    }
    return Status(found_.front().code(), std::move(text));
  }

 private:
  std::vector<Status> found_;
};

// Names that become path components, and sizes that contradict each other.
void CheckNamesAndSizes(const Config& config, const Validator& check, Problems* problems) {
  const DatasetConfig& dataset = config.dataset;
  // Names that become path components must stay inside their folders
  // (issue 13, defect 6; docs/security.md).
  if (std::string why = NotAName(dataset.file_prefix); !why.empty()) {
    problems->Add(check.Fail({"dataset.file_prefix"},
                             "'" + dataset.file_prefix + "' " + why +
                                 "; it must be a file name prefix (files are named "
                                 "<prefix>_<i>_of_<n>.<ext> inside the data folder)"));
  }
  if (std::string why = NotAName(config.model.name); !why.empty() && !config.model.name.empty()) {
    problems->Add(check.Fail({"model.name"}, "'" + config.model.name + "' " + why +
                                                 "; it must be a plain name (results go to "
                                                 "hydra_log/<model.name>/<time> unless "
                                                 "output.folder is set)"));
  }
  if (std::string why = LeavesFolder(config.hydra.output_subdir); !why.empty()) {
    // Set only by an override (hydra.output_subdir=...), never in the tree.
    problems->Add(Status::InvalidArgument("hydra.output_subdir: '" + config.hydra.output_subdir +
                                          "' " + why +
                                          "; it must be a folder inside the output folder"));
  }
  if (!dataset.record_dims.empty() && dataset.record_length_bytes_stdev > 0) {
    problems->Add(check.Fail({"dataset.record_length_bytes_stdev", "dataset.record_dims"},
                             "must be 0 when dataset.record_dims is set (give record_length_bytes "
                             "with a stdev instead of record_dims)"));
  }
}

// The model's parallelism and the checkpoint mode.
void CheckModelAndCheckpoint(const Config& config, const Validator& check, Problems* problems) {
  const ModelConfig& model = config.model;
  const CheckpointConfig& checkpoint = config.checkpoint;
  if (checkpoint.num_checkpoints_write > 0 &&
      checkpoint.num_checkpoints_read > checkpoint.num_checkpoints_write) {
    problems->Add(check.Fail(
        {"checkpoint.num_checkpoints_read", "checkpoint.num_checkpoints_write"},
        Str(checkpoint.num_checkpoints_read) + " exceeds checkpoint.num_checkpoints_write (" +
            Str(checkpoint.num_checkpoints_write) + ")"));
  }
  if (model.pipeline_parallelism > 1 && model.zero_stage == 3) {
    problems->Add(check.Fail({"model.parallelism.zero_stage", "model.parallelism.pipeline"},
                             "ZeRO stage 3 does not work with pipeline parallelism "
                             "(model.parallelism.pipeline is " +
                                 Str(model.pipeline_parallelism) + ")"));
  }
  if (model.num_layers > 0 && model.num_layers < model.pipeline_parallelism) {
    problems->Add(check.Fail({"model.num_layers", "model.parallelism.pipeline"},
                             "model.num_layers (" + Str(model.num_layers) +
                                 ") must be at least model.parallelism.pipeline (" +
                                 Str(model.pipeline_parallelism) + ")"));
  }
  if (model.data_parallelism > 0 && checkpoint.mode == "default") {
    problems->Add(check.Fail(
        {"model.parallelism.data", "checkpoint.mode"},
        "may be set only with checkpoint.mode: subset (the default mode derives it from the "
        "world size); MLPerf Storage's mlpstorage runs these files with "
        "++workload.checkpoint.mode=subset when fewer processes than model.parallelism.data x "
        "tensor x pipeline write the checkpoint, and the DLIO fork refuses them in default mode "
        "too"));
  }
  if (checkpoint.mode == "subset" && model.data_parallelism <= 0) {
    problems->Add(check.Fail({"checkpoint.mode"},
                             "subset needs model.parallelism.data (the data parallelism of the "
                             "full job)"));
  }
  if (checkpoint.ksm_present && checkpoint.randomize_tensor) {
    problems->Add(check.Fail({"checkpoint.ksm", "checkpoint.randomize_tensor"},
                             "needs checkpoint.randomize_tensor: False (KSM merges identical "
                             "pages)"));
  }
}

// " (<key> is not set: DLIO's default is <value>)" when the manifest leaves
// `key` out, so a refusal of a default says where the value came from.
std::string DefaultNote(const YAML::Node& root, std::string_view key, const std::string& value) {
  if (FindPath(root, key).has_value()) return "";
  return " (" + std::string(key) + " is not set: DLIO's default is " + value + ")";
}

// The data loader against the format and the framework, as DLIO's
// ConfigArguments.validate checks them.
void CheckReader(const Config& config, const YAML::Node& root, const Validator& check,
                 Problems* problems) {
  const ReaderConfig& reader = config.reader;
  if (reader.data_loader_given) {
    const auto library = config.storage.storage_options.find("storage_library");
    const std::optional<LoaderCannotReadWhy> refusal =
        LoaderCannotRead(reader.data_loader, config.dataset.format,
                         library == config.storage.storage_options.end() ? "" : library->second);
    // Only training and evaluation read (ConfigArguments.validate).
    const bool reads = config.workflow.train || config.workflow.evaluation;
    if (refusal && reads) {
      problems->Add(check.Fail({"reader.data_loader", "dataset.format"},
                               std::string(refusal->reason) +
                                   DefaultNote(root, "dataset.format", config.dataset.format) +
                                   "; " + std::string(refusal->remedy)));
    }
    const bool mismatch = (config.framework == "tensorflow" && reader.data_loader == "pytorch") ||
                          (config.framework == "pytorch" && reader.data_loader == "tensorflow");
    if (mismatch) {
      problems->Add(check.Fail({"reader.data_loader", "framework"},
                               "'" + reader.data_loader + "' does not match framework '" +
                                   config.framework + "'" +
                                   DefaultNote(root, "framework", config.framework)));
    }
  }
  if (!reader.data_loader_classname.empty() && reader.data_loader_sampler.empty()) {
    problems->Add(check.Fail({"reader.data_loader_classname"},
                             "needs reader.data_loader_sampler (iterative or index)"));
  }
}

}  // namespace

Status ValidateConfig(const Config& config, const YAML::Node& root, const Locator& locator) {
  const Validator check(root, locator);
  Problems problems;
  CheckNamesAndSizes(config, check, &problems);
  CheckModelAndCheckpoint(config, check, &problems);
  CheckReader(config, root, check, &problems);
  return problems.Joined();
}

}  // namespace iomimic::config::internal
