// The DFTracer reader (docs/replay.md, "DFTracer"): trace files in
// DFTracer's JSON-lines layout (.pfw, or .pfw.gz decompressed by the
// caller), the layout iomimic's own trace/<rank>.pfw follows too, into the
// model of apptrace/model.h.

#pragma once

#include <string>
#include <string_view>

#include "apptrace/model.h"
#include "iomimic/status.h"

namespace iomimic::apptrace {

// Parses `text`, the content of `source`: an optional "[" line, then one
// JSON object per line (a trailing comma allowed). Complete events ("ph"
// "X") of category POSIX or STDIO (or storage: iomimic's own trace) become
// operations of thread (pid, tid) at
// "ts" for "dur" microseconds, naming their file by args.fname, or by
// args.fhash through the "FH" metadata events; other categories are
// counted as not modelled. A line that is not a JSON object, or an event
// without a numeric ts, is InvalidArgument "SOURCE:LINE: ...".
Result<AppTrace> ReadDftracer(std::string_view text, const std::string& source);

}  // namespace iomimic::apptrace
