#include "kvcache/reference_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>

#include "kvcache/models.h"

namespace iomimic::kvcache {
namespace {

enum class Type { kInt, kNumber, kText, kRange };

// The reference's configuration schema (its ConfigLoader's): every leaf and
// its type. model_configs holds any structure.
constexpr std::pair<std::string_view, Type> kSchema[] = {
    {"user_templates.chatbot.context_range", Type::kRange},
    {"user_templates.chatbot.generation_range", Type::kRange},
    {"user_templates.chatbot.think_time_range", Type::kRange},
    {"user_templates.coding.context_range", Type::kRange},
    {"user_templates.coding.generation_range", Type::kRange},
    {"user_templates.coding.think_time_range", Type::kRange},
    {"user_templates.document.context_range", Type::kRange},
    {"user_templates.document.generation_range", Type::kRange},
    {"user_templates.document.think_time_range", Type::kRange},
    {"generation_timing.none", Type::kNumber},
    {"generation_timing.fast", Type::kNumber},
    {"generation_timing.realistic", Type::kNumber},
    {"qos_profiles.interactive.target_latency_p95_ms", Type::kNumber},
    {"qos_profiles.interactive.target_latency_p99_ms", Type::kNumber},
    {"qos_profiles.interactive.target_latency_p999_ms", Type::kNumber},
    {"qos_profiles.interactive.target_latency_p9999_ms", Type::kNumber},
    {"qos_profiles.interactive.priority", Type::kInt},
    {"qos_profiles.responsive.target_latency_p95_ms", Type::kNumber},
    {"qos_profiles.responsive.target_latency_p99_ms", Type::kNumber},
    {"qos_profiles.responsive.target_latency_p999_ms", Type::kNumber},
    {"qos_profiles.responsive.target_latency_p9999_ms", Type::kNumber},
    {"qos_profiles.responsive.priority", Type::kInt},
    {"qos_profiles.batch.target_latency_p95_ms", Type::kNumber},
    {"qos_profiles.batch.target_latency_p99_ms", Type::kNumber},
    {"qos_profiles.batch.target_latency_p999_ms", Type::kNumber},
    {"qos_profiles.batch.target_latency_p9999_ms", Type::kNumber},
    {"qos_profiles.batch.priority", Type::kInt},
    {"qos_distribution.interactive_probability", Type::kNumber},
    {"qos_distribution.responsive_threshold", Type::kNumber},
    {"eviction.max_recursion_depth", Type::kInt},
    {"eviction.target_usage_ratio", Type::kNumber},
    {"eviction.large_entry_limit_ratio", Type::kNumber},
    {"eviction.max_evictions_hard_cap", Type::kInt},
    {"eviction.max_evictions_min", Type::kInt},
    {"gpu_backend.memory_fraction", Type::kNumber},
    {"gpu_backend.max_eviction_attempts", Type::kInt},
    {"gpu_backend.free_memory_threshold", Type::kNumber},
    {"prefix_cache.min_prefix_length", Type::kInt},
    {"prefix_cache.max_prefix_entries", Type::kInt},
    {"prefix_cache.system_prompt_hit_probability", Type::kNumber},
    {"rag.chunk_size_tokens", Type::kInt},
    {"rag.top_k_chunks", Type::kInt},
    {"rag.max_chunk_bytes", Type::kInt},
    {"rag.request_probability", Type::kNumber},
    {"rag.retrieval_distribution", Type::kText},
    {"rag.max_documents", Type::kInt},
    {"rag.large_model_doc_tokens_min", Type::kInt},
    {"rag.large_model_doc_tokens_max", Type::kInt},
    {"rag.small_model_doc_tokens_min", Type::kInt},
    {"rag.small_model_doc_tokens_max", Type::kInt},
    {"conversation.max_conversations", Type::kInt},
    {"conversation.max_turns_per_conv", Type::kInt},
    {"conversation.end_conversation_probability", Type::kNumber},
    {"autoscaler.min_users", Type::kInt},
    {"autoscaler.max_users", Type::kInt},
    {"autoscaler.scale_up_factor", Type::kNumber},
    {"autoscaler.scale_down_factor", Type::kNumber},
    {"autoscaler.consecutive_samples_required", Type::kInt},
    {"decode.batch_size", Type::kInt},
    {"sharegpt.max_context_tokens", Type::kInt},
    {"sharegpt.max_generation_tokens", Type::kInt},
    {"sharegpt.chars_per_token_estimate", Type::kInt},
    {"saturation_detection.read_latency_p95_threshold_ms", Type::kNumber},
    {"saturation_detection.write_latency_p95_threshold_ms", Type::kNumber},
    {"saturation_detection.queue_depth_threshold", Type::kInt},
    {"saturation_detection.history_window_size", Type::kInt},
    {"validation_limits.max_users", Type::kInt},
    {"validation_limits.max_duration_seconds", Type::kInt},
    {"validation_limits.max_gpu_memory_gb", Type::kInt},
    {"validation_limits.max_cpu_memory_gb", Type::kInt},
};

// The entries that change the reference's run and the kv_cache key of each
// (a range: the key's prefix, completed by _min and _max).
constexpr std::pair<std::string_view, std::string_view> kApplied[] = {
    {"user_templates.chatbot.context_range", "users.chatbot.context"},
    {"user_templates.chatbot.generation_range", "users.chatbot.generation"},
    {"user_templates.chatbot.think_time_range", "users.chatbot.think_time"},
    {"user_templates.coding.context_range", "users.coding.context"},
    {"user_templates.coding.generation_range", "users.coding.generation"},
    {"user_templates.coding.think_time_range", "users.coding.think_time"},
    {"user_templates.document.context_range", "users.document.context"},
    {"user_templates.document.generation_range", "users.document.generation"},
    {"user_templates.document.think_time_range", "users.document.think_time"},
    {"qos_distribution.interactive_probability", "qos_interactive_probability"},
    {"qos_distribution.responsive_threshold", "qos_responsive_threshold"},
    {"eviction.max_recursion_depth", "eviction_max_depth"},
    {"eviction.target_usage_ratio", "eviction_target_ratio"},
    {"eviction.large_entry_limit_ratio", "eviction_large_entry_ratio"},
    {"eviction.max_evictions_hard_cap", "eviction_max_per_call"},
    {"eviction.max_evictions_min", "eviction_min_per_call"},
    {"prefix_cache.system_prompt_hit_probability", "system_prompt_probability"},
    {"conversation.max_turns_per_conv", "max_turns"},
    {"decode.batch_size", "decode_batch_size"},
};

// Entries the reference reads and then never uses (or reads before the file
// is loaded): they change nothing there either.
constexpr std::string_view kUnusedByReference[] = {"generation_timing",
                                                   "qos_profiles",
                                                   "prefix_cache.min_prefix_length",
                                                   "prefix_cache.max_prefix_entries",
                                                   "conversation.end_conversation_probability",
                                                   "validation_limits"};

bool Under(std::string_view path, std::string_view group) {
  return path == group ||
         (path.starts_with(group) && path.size() > group.size() && path[group.size()] == '.');
}

bool IsInt(const std::string& s) {
  std::int64_t v = 0;
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data() + (s.starts_with('+') ? 1 : 0), end, v);
  return ec == std::errc() && p == end;
}

bool IsNumber(const std::string& s) {
  if (IsInt(s)) return true;
  double v = 0;
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data() + (s.starts_with('+') ? 1 : 0), end, v);
  return ec == std::errc() && p == end && std::isfinite(v);
}

class Reader {
 public:
  Reader(std::string file, std::string_view model) : file_(std::move(file)), model_(model) {}

  Result<ReferenceConfigKeys> Read();

 private:
  Status Error(const std::string& what) const {
    return Status::InvalidArgument("kv-cache.py: --config " + file_ + ": " + what);
  }
  Status Walk(const YAML::Node& node, const std::string& path);
  Status Leaf(const YAML::Node& node, const std::string& path, Type type);
  Status CheckModel(const YAML::Node& models);
  void Set(const std::string& key, const std::string& value, const std::string& path) {
    out_.keys.emplace_back(key, value);
    out_.origins.emplace_back("kv_cache." + key, "--config " + file_ + ": " + path);
  }

  std::string file_;
  std::string_view model_;
  ReferenceConfigKeys out_;
  std::vector<std::string> unused_, absent_;  // paths of entries that change nothing
};

Status Reader::Leaf(const YAML::Node& node, const std::string& path, Type type) {
  std::vector<std::string> values;
  if (type == Type::kRange) {
    if (!node.IsSequence() || node.size() != 2 || !node[0].IsScalar() || !node[1].IsScalar()) {
      return Error(path + " must be a list of two numbers");
    }
    values = {node[0].Scalar(), node[1].Scalar()};
  } else if (!node.IsScalar()) {
    return Error(path + " must be " + (type == Type::kText ? "text" : "a number"));
  } else {
    values = {node.Scalar()};
  }
  const bool whole =
      type == Type::kInt || (type == Type::kRange && !path.ends_with("think_time_range"));
  for (const std::string& v : values) {
    if (type == Type::kText) break;
    if (whole ? !IsInt(v) : !IsNumber(v)) {
      return Error(path + " must be " + (type == Type::kRange ? "a list of two " : "") +
                   (whole ? (type == Type::kRange ? "whole numbers" : "a whole number")
                          : (type == Type::kRange ? "numbers" : "a number")) +
                   ", got '" + v + "'");
    }
  }
  for (const auto& [entry, key] : kApplied) {
    if (entry != path) continue;
    if (type == Type::kRange) {
      Set(std::string(key) + "_min", values[0], path);
      Set(std::string(key) + "_max", values[1], path);
    } else {
      Set(std::string(key), values[0], path);
    }
    return Status::OK();
  }
  for (std::string_view group : kUnusedByReference) {
    if (Under(path, group)) {
      if (std::find(unused_.begin(), unused_.end(), group) == unused_.end()) {
        unused_.emplace_back(group);
      }
      return Status::OK();
    }
  }
  // A feature iomimic's workflow does not have: its section's name.
  const std::string group =
      path.starts_with("conversation.") ? path : path.substr(0, path.find('.'));
  if (std::find(absent_.begin(), absent_.end(), group) == absent_.end()) absent_.push_back(group);
  return Status::OK();
}

Status Reader::Walk(const YAML::Node& node, const std::string& path) {
  if (!path.empty()) {
    for (const auto& [leaf, type] : kSchema) {
      if (leaf == path) return Leaf(node, path, type);
    }
  }
  if (!node.IsMap()) {
    return Error((path.empty() ? std::string("the file") : "'" + path + "'") +
                 " must be a mapping");
  }
  for (const auto& item : node) {
    const std::string key = item.first.Scalar();
    const std::string full = path.empty() ? key : path + "." + key;
    if (full == "model_configs") {
      IOMIMIC_RETURN_IF_ERROR(CheckModel(item.second));
      continue;
    }
    bool known = false;
    for (const auto& [leaf, type] : kSchema) known |= Under(leaf, full);
    if (!known) return Error("unknown configuration key '" + full + "'");
    IOMIMIC_RETURN_IF_ERROR(Walk(item.second, full));
  }
  return Status::OK();
}

// The reference sizes a model from model_configs.<name> (its other fields
// from the built-in table): that size must be iomimic's.
Status Reader::CheckModel(const YAML::Node& models) {
  if (!models.IsMap() || !models[std::string(model_)]) return Status::OK();
  const YAML::Node m = models[std::string(model_)];
  Result<const ModelSpec*> found = FindModel(model_);
  if (!found.ok()) {
    return Status::NotSupported("kv-cache.py: --config " + file_ + ": model_configs." +
                                std::string(model_) +
                                " is not one of iomimic's models (docs/kvcache.md)");
  }
  const ModelSpec& spec = **found;
  auto field = [&](const char* name, std::uint64_t fallback) -> Result<std::uint64_t> {
    if (!m.IsMap() || !m[name]) return fallback;
    const std::string v = m[name].IsScalar() ? m[name].Scalar() : "";
    if (!IsInt(v) || v.starts_with('-')) {
      return Error("model_configs." + std::string(model_) + "." + name +
                   " must be a whole number, got '" + v + "'");
    }
    return std::stoull(v);
  };
  IOMIMIC_ASSIGN_OR_RETURN(const std::uint64_t layers, field("num_layers", spec.num_layers));
  IOMIMIC_ASSIGN_OR_RETURN(const std::uint64_t hidden, field("hidden_dim", spec.hidden_dim));
  IOMIMIC_ASSIGN_OR_RETURN(const std::uint64_t heads, field("num_heads", spec.num_heads));
  IOMIMIC_ASSIGN_OR_RETURN(const std::uint64_t kv_heads, field("kv_heads", spec.kv_heads));
  IOMIMIC_ASSIGN_OR_RETURN(const std::uint64_t head_dim,
                           field("kv_dim_per_head", spec.head_dim_override));
  IOMIMIC_ASSIGN_OR_RETURN(const std::uint64_t lora, field("kv_lora_rank", spec.kv_lora_rank));
  IOMIMIC_ASSIGN_OR_RETURN(const std::uint64_t rope,
                           field("qk_rope_head_dim", spec.qk_rope_head_dim));
  auto text = [&](const char* name, const char* fallback) {
    return m.IsMap() && m[name] && m[name].IsScalar() ? m[name].Scalar() : std::string(fallback);
  };
  const bool mla = text("attention_type", spec.mla ? "mla" : "mha") == "mla";
  const std::string dtype = text("dtype", "float16");
  const std::uint64_t element = dtype == "float32" ? 4 : dtype == "int8" ? 1 : 2;
  const std::uint64_t dim = head_dim > 0 ? head_dim : (heads > 0 ? hidden / heads : 0);
  const std::uint64_t theirs =
      mla ? layers * (lora + rope) * element : layers * kv_heads * dim * 2 * element;
  const bool same_shape = mla == spec.mla && layers == spec.num_layers && element == 2 &&
                          (mla ? lora == spec.kv_lora_rank && rope == spec.qk_rope_head_dim
                               : kv_heads == spec.kv_heads && dim == spec.head_dim());
  if (!same_shape) {
    return Status::NotSupported("kv-cache.py: --config " + file_ + ": model_configs." +
                                std::string(model_) + " (" + std::to_string(theirs) +
                                " bytes per token) is not iomimic's " + std::string(model_) + " (" +
                                std::to_string(spec.bytes_per_token()) +
                                " bytes per token); iomimic's models are fixed (docs/kvcache.md)");
  }
  return Status::OK();
}

Result<ReferenceConfigKeys> Reader::Read() {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file_, ec)) {
    return Status::NotFound("kv-cache.py: --config " + file_ + ": config file not found");
  }
  try {
    const YAML::Node root = YAML::LoadFile(file_);
    if (!root.IsNull()) IOMIMIC_RETURN_IF_ERROR(Walk(root, ""));
  } catch (const std::exception& e) {  // yaml-cpp's: a file that does not parse
    return Error(e.what());
  }
  auto join = [](const std::vector<std::string>& paths) {
    std::string text;
    for (const std::string& p : paths) text += (text.empty() ? "" : ", ") + p;
    return text;
  };
  if (!unused_.empty()) {
    out_.notes.push_back("--config " + file_ + ": " + join(unused_) +
                         ": accepted, changes nothing, as in the reference "
                         "(docs/kvcache-reference.md)");
  }
  if (!absent_.empty()) {
    out_.notes.push_back("--config " + file_ + ": " + join(absent_) +
                         ": accepted, changes nothing in iomimic (features its workflow does "
                         "not have: docs/kvcache.md)");
  }
  return std::move(out_);
}

}  // namespace

Result<ReferenceConfigKeys> ReadReferenceConfig(const std::string& file, std::string_view model) {
  return Reader(file, model).Read();
}

}  // namespace iomimic::kvcache
