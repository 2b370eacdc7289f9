#include "kvcache/accelerator_tier.h"

#include <cmath>
#include <cstdint>
#include <map>

#include "config/dlio_compat.h"

namespace iomimic::kvcache {

Result<AcceleratorTier> OpenAcceleratorTier(const config::KvCacheConfig& c,
                                            const plugin::Registry* registry, int rank,
                                            int world_size) {
  AcceleratorTier tier;
  const std::string& want = c.accelerator;
  const std::string plugin(config::kAcceleratorStorageBackend);
  tier.path = "emulated (host memory, gpu_copy_gbps)";
  if (want == "emulated") {
    tier.reason = "kv_cache.accelerator=emulated";
    return tier;
  }
  // The plugin's options; its emulated link runs at gpu_copy_gbps unless
  // they say otherwise.
  std::map<std::string, std::string> options = c.accelerator_options;
  options.emplace("h2d_bandwidth",
                  std::to_string(static_cast<std::uint64_t>(std::llround(c.gpu_copy_gbps * 1e9))));
  Result<plugin::StorageStack> made =
      registry == nullptr
          ? Result<plugin::StorageStack>(Status::NotFound("no plugin registry"))
          : plugin::StorageStack::Open(*registry, plugin, options, rank, world_size);
  if (!made.ok()) {
    if (want == plugin) return made.status().WithContext("kv_cache.accelerator=" + plugin);
    tier.reason =
        "auto: the " + plugin + " storage plugin did not open (" + made.status().message() + ")";
    return tier;
  }
  // A real GPU's data paths (the plugin's capabilities().data_path).
  const std::string path = made->top()->capabilities().data_path;
  if (want == "auto" && path != "cufile" && path != "cuda-bounce") {
    tier.reason = "auto: the " + plugin + " storage plugin found no GPU (its data path is " + path +
                  "; its option report=true logs why)";
    return tier;
  }
  tier.stack = std::move(made).value();
  tier.path = plugin + ":" + path;
  tier.reason = want == plugin ? "kv_cache.accelerator=" + plugin
                               : "auto: the " + plugin + " storage plugin found a GPU (data path " +
                                     path + ")";
  return tier;
}

}  // namespace iomimic::kvcache
