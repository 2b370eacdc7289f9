// The KV-cache reference's --config file (its config.yaml) for iomimic's
// kv-cache.py (docs/kvcache-reference.md, "mlpstorage and kv-cache.py"):
// checked against the reference's schema as the reference checks it (an
// unknown key or a value of the wrong type is an error), and turned into the
// kv_cache keys of what it changes in the reference's run:
//   user_templates.*             kv_cache.users.<type>.{context,generation,think_time}_{min,max}
//   qos_distribution.*           kv_cache.qos_interactive_probability, qos_responsive_threshold
//   eviction.*                   kv_cache.eviction_target_ratio, eviction_large_entry_ratio,
//                                eviction_max_depth, eviction_max_per_call, eviction_min_per_call
//   prefix_cache.system_prompt_hit_probability   kv_cache.system_prompt_probability
//   conversation.max_turns_per_conv              kv_cache.max_turns
//   decode.batch_size                            kv_cache.decode_batch_size
//   model_configs.<model>        checked against iomimic's model of that name (the
//                                workflow's models are fixed: a different one is refused)
// The rest changes nothing, each in a note: what the reference reads and then
// does not use (generation_timing, qos_profiles, prefix_cache's
// min_prefix_length and max_prefix_entries,
// conversation.end_conversation_probability, validation_limits), and what
// belongs to features iomimic's workflow does not have (gpu_backend, rag,
// autoscaler, sharegpt, saturation_detection, conversation.max_conversations).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "iomimic/status.h"

namespace iomimic::kvcache {

struct ReferenceConfigKeys {
  // kv_cache keys (without "kv_cache.") and their values, in file order.
  std::vector<std::pair<std::string, std::string>> keys;
  // For each key: the entry of the file that set it ("--config F:
  // eviction.target_usage_ratio"), for errors.
  std::vector<std::pair<std::string, std::string>> origins;
  std::vector<std::string> notes;  // one line per group of entries that change nothing
};

// Reads `file` for a run of `model`. Errors, each "kv-cache.py: --config
// <file>: ...": NotFound for a missing file, InvalidArgument for YAML that
// does not parse, an unknown key or a value of the wrong type (naming its
// path), NotSupported for a model_configs entry of `model` that differs
// from iomimic's (naming both sizes per token).
Result<ReferenceConfigKeys> ReadReferenceConfig(const std::string& file, std::string_view model);

}  // namespace iomimic::kvcache
