#include <algorithm>
#include <utility>

#include "config/schema_internal.h"

namespace iomimic::config::internal {
namespace {

struct KnownKey {
  std::string_view path;
  KeyKind kind;
};

constexpr KeyKind kS = KeyKind::kSection;
constexpr KeyKind kV = KeyKind::kValue;
constexpr KeyKind kD = KeyKind::kDistribution;
constexpr KeyKind kF = KeyKind::kFreeMap;

// Every key the converter reads, in the order of reference §1.2/§1.3.
constexpr KnownKey kKnownKeys[] = {
    {"model", kS},
    {"model.name", kV},
    {"model.type", kV},
    {"model.model_size_bytes", kV},
    {"model.model_datatype", kV},
    {"model.optimizer_datatype", kV},
    {"model.optimization_groups", kV},
    {"model.num_layers", kV},
    {"model.layer_parameters", kV},
    {"model.parallelism", kS},
    {"model.parallelism.tensor", kV},
    {"model.parallelism.pipeline", kV},
    {"model.parallelism.data", kV},
    {"model.parallelism.zero_stage", kV},
    {"model.transformer", kS},
    {"model.transformer.vocab_size", kV},
    {"model.transformer.hidden_size", kV},
    {"model.transformer.ffn_hidden_size", kV},
    {"model.transformer.num_attention_heads", kV},
    {"model.transformer.num_kv_heads", kV},
    {"framework", kV},
    {"workflow", kS},
    {"workflow.generate_data", kV},
    {"workflow.train", kV},
    {"workflow.evaluation", kV},
    {"workflow.checkpoint", kV},
    {"workflow.profiling", kV},
    {"workflow.query", kV},
    {"storage", kS},
    {"storage.storage_type", kV},
    {"storage.storage_root", kV},
    {"storage.storage_options", kF},
    {"storage.storage_library", kV},
    {"storage.backend", kV},
    {"storage.options", kF},
    {"dataset", kS},
    {"dataset.format", kV},
    {"dataset.data_folder", kV},
    {"dataset.num_files_train", kV},
    {"dataset.num_files_eval", kV},
    {"dataset.num_samples_per_file", kV},
    {"dataset.record_length_bytes", kV},
    {"dataset.record_length_bytes_stdev", kV},
    {"dataset.record_length_bytes_resize", kV},
    {"dataset.record_dims", kV},
    {"dataset.record_element_type", kV},
    {"dataset.record_element_bytes", kV},
    {"dataset.num_subfolders_train", kV},
    {"dataset.num_subfolders_eval", kV},
    {"dataset.file_prefix", kV},
    {"dataset.compression", kV},
    {"dataset.compression_level", kV},
    {"dataset.enable_chunking", kV},
    {"dataset.chunk_size", kV},
    {"dataset.keep_files", kV},
    {"dataset.generation_buffer_size", kV},
    {"dataset.hdf5", kS},
    {"dataset.hdf5.chunk_dims", kV},
    {"dataset.hdf5.num_dset_per_record", kV},
    {"dataset.hdf5.max_shape", kV},
    {"dataset.parquet", kS},
    {"dataset.parquet.columns", kV},
    {"dataset.parquet.row_group_size", kV},
    {"dataset.parquet.read_mode", kV},
    {"dataset.parquet.partition_by", kV},
    {"dataset.parquet.generation_batch_size", kV},
    {"dataset.parquet.use_s3dlio_gen", kV},
    {"dataset.options", kF},
    {"reader", kS},
    {"reader.data_loader", kV},
    {"reader.batch_size", kV},
    {"reader.batch_size_eval", kV},
    {"reader.read_threads", kV},
    {"reader.computation_threads", kV},
    {"reader.prefetch_size", kV},
    {"reader.file_shuffle", kV},
    {"reader.sample_shuffle", kV},
    {"reader.shuffle_size", kV},
    {"reader.transfer_size", kV},
    {"reader.read_type", kV},
    {"reader.file_access", kV},
    {"reader.dont_use_mmap", kV},
    {"reader.odirect", kV},
    {"reader.pin_memory", kV},
    {"reader.multiprocessing_context", kV},
    {"reader.preprocess_time", kD},
    {"reader.preprocess_time_stdev", kV},
    {"reader.transformed_record_dims", kV},
    {"reader.transformed_record_element_type", kV},
    {"reader.reader_classname", kV},
    {"reader.data_loader_classname", kV},
    {"reader.data_loader_sampler", kV},
    {"reader.decode", kV},
    {"train", kS},
    {"train.epochs", kV},
    {"train.computation_time", kD},
    {"train.computation_time_stdev", kV},
    {"train.total_training_steps", kV},
    {"train.seed_change_epoch", kV},
    {"train.seed", kV},
    {"evaluation", kS},
    {"evaluation.eval_time", kD},
    {"evaluation.eval_time_stdev", kV},
    {"evaluation.eval_after_epoch", kV},
    {"evaluation.epochs_between_evals", kV},
    {"checkpoint", kS},
    {"checkpoint.checkpoint_folder", kV},
    {"checkpoint.checkpoint_after_epoch", kV},
    {"checkpoint.epochs_between_checkpoints", kV},
    {"checkpoint.steps_between_checkpoints", kV},
    {"checkpoint.type", kV},
    {"checkpoint.mode", kV},
    {"checkpoint.fsync", kV},
    {"checkpoint.time_between_checkpoints", kV},
    {"checkpoint.num_checkpoints_write", kV},
    {"checkpoint.num_checkpoints_read", kV},
    {"checkpoint.recovery_rank_shift", kV},
    {"checkpoint.rank_sync", kV},
    {"checkpoint.randomize_tensor", kV},
    {"checkpoint.checkpoint_mechanism_classname", kV},
    {"checkpoint.ksm", kS},
    {"checkpoint.ksm.madv_mergeable_id", kV},
    {"checkpoint.ksm.high_ram_trigger", kV},
    {"checkpoint.ksm.low_ram_exit", kV},
    {"checkpoint.ksm.await_time", kV},
    {"checkpoint.backend", kV},
    {"checkpoint.options", kF},
    {"output", kS},
    {"output.folder", kV},
    {"output.log_file", kV},
    {"output.metric", kS},
    {"output.metric.exclude_start_steps", kV},
    {"output.metric.exclude_end_steps", kV},
    {"profiling", kS},
    {"profiling.profiler", kV},
    {"profiling.iostat_devices", kV},
    {"metric", kS},
    {"metric.au", kV},
    {"iomimic", kS},
    {"iomimic.sample_log", kV},
    {"iomimic.dlio_order", kV},
    {"iomimic.checksum", kV},
    {"iomimic.accelerators_per_process", kV},
    {"iomimic.max_step_list", kV},
    {"iomimic.huge_pages", kV},
    {"iomimic.content", kV},
    {"iomimic.compress_percentage", kV},
    {"iomimic.dedupe_percentage", kV},
};

// Legacy leaf keys (§1.4) and their current spelling.
constexpr std::pair<std::string_view, std::string_view> kLegacyKeys[] = {
    {"dataset.record_length", "dataset.record_length_bytes"},
    {"dataset.record_length_stdev", "dataset.record_length_bytes_stdev"},
    {"dataset.record_length_resize", "dataset.record_length_bytes_resize"},
    {"checkpoint.model_size", "model.model_size_bytes"},
};

std::string_view ParentOf(std::string_view path) {
  const std::size_t dot = path.rfind('.');
  return dot == std::string_view::npos ? std::string_view() : path.substr(0, dot);
}

std::string_view LeafOf(std::string_view path) {
  const std::size_t dot = path.rfind('.');
  return dot == std::string_view::npos ? path : path.substr(dot + 1);
}

const KnownKey* FindKnown(std::string_view path) {
  for (const KnownKey& key : kKnownKeys) {
    if (key.path == path) return &key;
  }
  return nullptr;
}

// How many edits still count as a likely typo of a word of this length.
std::size_t TypoBudget(std::size_t length) {
  if (length <= 4) return 1;
  if (length <= 9) return 2;
  return 3;
}

}  // namespace

std::optional<KeyKind> LookupKey(std::string_view path) {
  if (const KnownKey* key = FindKnown(path)) return key->kind;
  // Below a free map or a distribution map?
  for (std::string_view parent = ParentOf(path); !parent.empty(); parent = ParentOf(parent)) {
    const KnownKey* key = FindKnown(parent);
    if (key == nullptr) continue;
    if (key->kind == KeyKind::kFreeMap) return KeyKind::kValue;
    if (key->kind == KeyKind::kDistribution && ParentOf(path) == parent) {
      const auto& params = DistributionKeys();
      if (std::find(params.begin(), params.end(), LeafOf(path)) != params.end()) {
        return KeyKind::kValue;
      }
    }
    return std::nullopt;
  }
  return std::nullopt;
}

const std::vector<std::string_view>& DistributionKeys() {
  static const std::vector<std::string_view> kKeys = {"type", "mean",  "stdev", "min",
                                                      "max",  "shape", "scale", "lam"};
  return kKeys;
}

std::string CanonicalKeyPath(std::string_view path) {
  std::string result(path);
  constexpr std::string_view kOldReader = "data_reader";
  if (result == kOldReader || result.starts_with(std::string(kOldReader) + ".")) {
    result.replace(0, kOldReader.size(), "reader");
  }
  for (const auto& [old_path, new_path] : kLegacyKeys) {
    if (result == old_path) return std::string(new_path);
    // A legacy key never has children, but keep "x.y.z" below it consistent.
    if (result.starts_with(std::string(old_path) + ".")) {
      return std::string(new_path) + result.substr(old_path.size());
    }
  }
  return result;
}

std::optional<std::string> SuggestKey(std::string_view path) {
  const std::string_view parent = ParentOf(path);
  const std::string_view leaf = LeafOf(path);
  const KnownKey* parent_key = parent.empty() ? nullptr : FindKnown(parent);
  if (parent_key != nullptr && parent_key->kind == KeyKind::kDistribution) {
    if (auto word = ClosestWord(leaf, DistributionKeys())) return JoinPath(parent, *word);
    return std::nullopt;
  }

  // 1. A close spelling among the siblings.
  std::vector<std::string_view> siblings;
  for (const KnownKey& key : kKnownKeys) {
    if (ParentOf(key.path) == parent) siblings.push_back(LeafOf(key.path));
  }
  if (auto word = ClosestWord(leaf, siblings)) return JoinPath(parent, *word);

  // 2. The same name in another section (dataset.batch_size -> reader.batch_size).
  for (const KnownKey& key : kKnownKeys) {
    if (LeafOf(key.path) == leaf && ParentOf(key.path) != parent) return std::string(key.path);
  }

  // 3. A sibling that extends the name (model.model_size -> model.model_size_bytes).
  if (leaf.size() >= 4) {
    for (std::string_view sibling : siblings) {
      if (sibling.size() > leaf.size() && sibling.starts_with(leaf)) {
        return JoinPath(parent, sibling);
      }
    }
  }
  return std::nullopt;
}

std::optional<std::string> ClosestWord(std::string_view word,
                                       const std::vector<std::string_view>& candidates) {
  std::optional<std::string> best;
  std::size_t best_distance = TypoBudget(word.size()) + 1;
  for (std::string_view candidate : candidates) {
    const std::size_t distance = EditDistance(word, candidate);
    if (distance < best_distance && distance < std::max(word.size(), candidate.size())) {
      best_distance = distance;
      best = std::string(candidate);
    }
  }
  return best;
}

std::size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      const std::size_t substitution = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      row[j] = std::min({above + 1, row[j - 1] + 1, substitution});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string JoinPath(std::string_view parent, std::string_view key) {
  if (parent.empty()) return std::string(key);
  std::string path;
  path.reserve(parent.size() + 1 + key.size());
  path.append(parent).append(".").append(key);
  return path;
}

}  // namespace iomimic::config::internal
