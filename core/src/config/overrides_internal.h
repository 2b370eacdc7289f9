// Hydra-style command-line overrides (docs/dlio-compat.md §1.1):
//   ++workload.a.b=v   set, creating the key when absent
//   workload.a.b=v     replace a key the manifest has (or a known key)
//   +workload.a.b=v    add a key the manifest lacks
//   ~workload.a.b[=v]  delete
//   workload=<name>    select the workload
//   [++|+]hydra.run.dir=DIR, [++|+]hydra.output_subdir=NAME
// Errors read "override '<text>': <what>".

#pragma once

#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/tree_internal.h"
#include "iomimic/status.h"

namespace iomimic::config::internal {

struct Override {
  enum class Op { kSet, kReplace, kAdd, kDelete };  // ++, (none), +, ~
  Op op = Op::kReplace;
  std::string text;                  // as given
  std::string key;                   // e.g. "workload.dataset.num_files_train"
  std::optional<std::string> value;  // text after the first '='
};

// Splits one override string. Fails on an empty key or a missing value.
Result<Override> ParseOverride(const std::string& text);

// The workload named by `workload=<name>` overrides, or "" when none does.
// Fails when two of them name different workloads.
Result<std::string> FindWorkloadSelection(const std::vector<std::string>& overrides);

// Applies the workload.* overrides to the manifest tree `root` (a map) in
// order, recording their origin in `locator`, and the hydra.* ones to
// `hydra`. `workload=` selections are skipped (see FindWorkloadSelection).
Status ApplyOverrides(const std::vector<std::string>& overrides, YAML::Node root, Locator* locator,
                      HydraConfig* hydra);

}  // namespace iomimic::config::internal
