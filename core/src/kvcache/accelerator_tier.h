// The accelerator tier's device memory (kv_cache.accelerator, docs/kvcache.md
// "Tiers and eviction"), shared by the KV-cache workflow's layouts: the
// device memory of the storage plugin config::kAcceleratorStorageBackend,
// or host memory with an emulated copy rate.
#pragma once

#include <string>

#include "config/config.h"
#include "iomimic/status.h"
#include "plugin/registry.h"

namespace iomimic::kvcache {

struct AcceleratorTier {
  plugin::StorageStack stack;  // its top() holds the entries; empty: emulated
  std::string path;            // "emulated (...)" or "<plugin>:<data path>"
  std::string reason;          // why this one, for the results
};

// Opens the tier kv_cache.accelerator asks for: emulated; the plugin (an
// error where it cannot open); auto: the plugin where it found a real GPU
// (data path cufile or cuda-bounce), else emulated with the reason.
// `registry` may be null (emulated, or an error when the plugin is asked).
Result<AcceleratorTier> OpenAcceleratorTier(const config::KvCacheConfig& c,
                                            const plugin::Registry* registry, int rank,
                                            int world_size);

}  // namespace iomimic::kvcache
