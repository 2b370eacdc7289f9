// libFuzzer harness: the KV-cache chunked mode's request-trace readers
// (kvcache::ParseRequestTrace, docs/kvcache-chunked.md) and the chunk keys
// of what they accept. The first byte picks the format (mooncake, burstgpt,
// sharegpt), the rest is the trace's text. Errors are expected; crashes,
// hangs and leaks are not (docs/fuzzing.md).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kvcache/request_trace.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  static const char* const kFormats[] = {"mooncake", "burstgpt", "sharegpt"};
  const std::string format = kFormats[data[0] % 3];
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  auto trace = iomimic::kvcache::ParseRequestTrace(text, "fuzz", format);
  if (trace.ok()) {
    std::vector<iomimic::kvcache::ChunkRef> chunks;
    for (const auto& r : trace->requests) {
      iomimic::kvcache::ChunksOf(r, trace->block_tokens, 256, &chunks);
    }
  }
  return 0;
}
