// libFuzzer harness: one trace reader of core/src/apptrace (docs/replay.md),
// built once per reader with IOMIMIC_FUZZ_TRACE naming it (strace,
// dftracer or darshan_dxt). The input is the trace's text. Errors are expected, and each
// must be one line naming the trace (FILE:LINE, or FILE: when the trace
// holds no operation); crashes, hangs, leaks and other errors are not
// (docs/fuzzing.md).

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "apptrace/darshan_dxt_reader.h"
#include "apptrace/dftracer_reader.h"
#include "apptrace/strace_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::string source = "fuzz.trace";
  const std::string_view reader = IOMIMIC_FUZZ_TRACE;
  auto read = reader == "strace"        ? iomimic::apptrace::ReadStrace(text, source)
              : reader == "darshan_dxt" ? iomimic::apptrace::ReadDarshanDxt(text, source)
                                        : iomimic::apptrace::ReadDftracer(text, source);
  if (read.ok()) {
    // Every operation names a file of the model.
    for (const auto& thread : read->threads) {
      for (const auto& op : thread.ops) {
        if (op.file >= read->files.size()) std::abort();
      }
    }
    (void)read->Counts();
    (void)read->span_ns();
    return 0;
  }
  const std::string message = read.status().message();
  if (message.rfind(source + ":", 0) != 0 || message.find('\n') != std::string::npos) {
    std::fprintf(stderr, "error not naming the trace on one line: %s\n", message.c_str());
    std::abort();
  }
  return 0;
}
