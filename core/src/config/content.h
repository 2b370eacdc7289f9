// What generated payloads hold, from the manifest: iomimic.content,
// iomimic.compress_percentage and iomimic.dedupe_percentage as the SDK's
// ContentOptions (README.md, "Content of generated files"). Training data,
// checkpoints and KV-cache entries all take their content from here.

#pragma once

#include "iomimic/random.h"

namespace iomimic::config {

struct IomimicConfig;

// The content options `iomimic` asks for (the manifest has been validated:
// content is one of kContentKinds).
ContentOptions ContentOf(const IomimicConfig& iomimic);

}  // namespace iomimic::config
