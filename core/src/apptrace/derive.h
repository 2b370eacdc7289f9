// `iomimic derive` (docs/derive.md): a training workload manifest inferred
// from a recorded application's profile (apptrace/profile.h), which
// iomimic runs at any scale (more files, more ranks), with a comment on
// each value saying what it was inferred from, and the list of what the
// trace could not tell.

#pragma once

#include <string>
#include <vector>

#include "apptrace/profile.h"

namespace iomimic::apptrace {

struct DerivedManifest {
  std::string yaml;                       // the manifest, commented
  std::vector<std::string> not_inferred;  // one line each, for stderr
};

// The manifest of `profile`; `name` is the model's name (and the data
// folder's, data/<name>).
DerivedManifest DeriveManifest(const TraceProfile& profile, const std::string& name);

// The read script's entries (iomimic.read_script): consecutive samples
// with the same opens and reads merged into one "N: [open] SIZE SIZE*K"
// entry.
std::vector<std::string> ScriptEntries(const std::vector<TraceProfile::ScriptSample>& script);

}  // namespace iomimic::apptrace
