// Typing and validation: the manifest tree (legacy spellings rewritten,
// overrides applied) becomes a Config.

#pragma once

#include <yaml-cpp/yaml.h>

#include <vector>

#include "config/config.h"
#include "config/tree_internal.h"
#include "iomimic/status.h"

namespace iomimic::config::internal {

// Reports every key of `root` that the schema does not know, with a
// suggestion when a known key is close. The sections of keys that `plugins`'
// format plugins declare are left to ReadDeclaredKeys
// (config/declared_internal.h), which refuses unknown ones.
void WarnUnknownKeys(const YAML::Node& root, const Locator& locator,
                     const PluginVocabulary& plugins, std::vector<Diagnostic>* warnings);

// Reads every known key of `root` into `config` (which holds the defaults),
// checking types and ranges, and selects the back ends (SelectDlioBackend,
// with the schemes `plugins` serve). Notes dubious but accepted values in
// `warnings`.
Status ConvertTree(const YAML::Node& root, const Locator& locator, const PluginVocabulary& plugins,
                   Config* config, std::vector<Diagnostic>* warnings);

// The cross-key checks of docs/dlio-compat.md §1.8 that need no knowledge of the MPI
// job. Errors point at the offending key in `root` when it is there; every
// problem found is in the one error, the first as usual and each other one
// after "; also " with its own position.
Status ValidateConfig(const Config& config, const YAML::Node& root, const Locator& locator);

// The KV-cache workflow (workflow.kv_cache, docs/kvcache.md): training's
// default (workflow.train: True) does not apply to it, so train becomes False
// unless `root` sets it; a manifest setting both True is an error at
// workflow.train. Checks the kv_cache section's ranges (each users.<type>
// minimum at most its maximum, num_gpus at least tensor_parallel).
Status ResolveKvCacheWorkflow(const YAML::Node& root, const Locator& locator, Config* config);

}  // namespace iomimic::config::internal
