// libFuzzer harness: the manifest parser with Hydra-style overrides
// (config::LoadManifestFromString, docs/manifest.md). The input is a YAML
// manifest, then optionally the part separator (fuzz_common.h) and override
// lines, one per line. Errors are expected; crashes, hangs and leaks are not
// (docs/fuzzing.md). An accepted manifest's iomimic.read_script and
// iomimic.data_files go through their parsers too (train/read_script.h,
// plan/plan.h), whose errors must be one line naming the key.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "fuzz_common.h"
#include "plan/plan.h"
#include "train/read_script.h"

namespace {

// An error of a list key's parser: one line naming the key.
void CheckError(const iomimic::Status& status, const char* key) {
  if (status.ok()) return;
  const std::string& message = status.message();
  if (message.rfind(key, 0) != 0 || message.find('\n') != std::string::npos) {
    std::fprintf(stderr, "error not naming %s on one line: %s\n", key, message.c_str());
    std::abort();
  }
}

}  // namespace

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
    const auto& iomimic = loaded->config.iomimic;
    auto script = iomimic::train::ReadScript::Parse(iomimic.read_script);
    CheckError(script.status(), "iomimic.read_script entry ");
    if (script.ok()) {
      // Each class resolved for a few file sizes: the terms' arithmetic.
      for (int c = 0; c < static_cast<int>(script->ClassNames().size()); ++c) {
        for (const std::uint64_t size :
             {std::uint64_t{0}, std::uint64_t{4096}, ~std::uint64_t{0}}) {
          const iomimic::train::ResolvedScript r = script->Resolve(c, size);
          (void)r.Reads(7);
          (void)r.Reopens(7);
          (void)r.StartOffset(7);
        }
      }
    }
    CheckError(iomimic::plan::ParseDataFiles(iomimic.data_files).status(),
               "iomimic.data_files entry ");
  }
  return 0;
}
