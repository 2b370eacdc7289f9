// Shared parts of the libFuzzer harnesses (docs/fuzzing.md).
//
// A harness input that must become several pieces (a manifest and its
// override lines, a data file and its companion index files) is split at the
// separator kPartSeparator: piece 0 before the first separator, piece 1
// after it, and so on. The dictionaries (tests/fuzz/dict/*.dict) carry the
// separator so the fuzzer finds it.

#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace iomimic::fuzz {

inline constexpr std::string_view kPartSeparator = "\n@@iomimic-part@@\n";

inline std::vector<std::string_view> SplitParts(std::string_view input, std::size_t max_parts) {
  std::vector<std::string_view> parts;
  while (parts.size() + 1 < max_parts) {
    const std::size_t at = input.find(kPartSeparator);
    if (at == std::string_view::npos) break;
    parts.push_back(input.substr(0, at));
    input.remove_prefix(at + kPartSeparator.size());
  }
  parts.push_back(input);
  return parts;
}

inline std::string JoinParts(const std::vector<std::string>& parts) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i != 0) out += kPartSeparator;
    out += parts[i];
  }
  return out;
}

}  // namespace iomimic::fuzz
