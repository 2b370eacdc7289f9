// libFuzzer harness: the manifest parser with Hydra-style overrides
// (config::LoadManifestFromString, docs/manifest.md). The input is a YAML
// manifest, then optionally the part separator (fuzz_common.h) and override
// lines, one per line. Errors are expected; crashes, hangs and leaks are not
// (docs/fuzzing.md).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::vector<std::string_view> parts = iomimic::fuzz::SplitParts(input, 2);
  std::vector<std::string> overrides;
  if (parts.size() > 1) {
    std::string_view rest = parts[1];
    while (!rest.empty()) {
      const std::size_t nl = rest.find('\n');
      std::string_view line = rest.substr(0, nl);
      if (!line.empty()) overrides.emplace_back(line);
      if (nl == std::string_view::npos) break;
      rest.remove_prefix(nl + 1);
    }
  }
  auto loaded =
      iomimic::config::LoadManifestFromString(std::string(parts[0]), "fuzz.yaml", overrides);
  if (loaded.ok()) {
    // Emitting the resolved manifest exercises every value that was accepted.
    (void)iomimic::config::ToYaml(loaded->config, false);
  }
  return 0;
}
