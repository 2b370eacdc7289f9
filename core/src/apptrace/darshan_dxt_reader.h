// The Darshan DXT reader (docs/replay.md, "Darshan DXT"): the text
// darshan-dxt-parser prints for a Darshan log recorded with DXT tracing on
// (DXT_ENABLE_IO_TRACE=1), into the model of apptrace/model.h.

#pragma once

#include <string>
#include <string_view>

#include "apptrace/model.h"
#include "iomimic/status.h"

namespace iomimic::apptrace {

// Parses `text`, the content of `source`. A record is the header lines
// "# DXT, file_id: ID, file_name: PATH", "# DXT, rank: N, hostname: HOST"
// and "# DXT, write_count: W, read_count: R", then its rows "X_POSIX RANK
// write|read SEGMENT OFFSET LENGTH START END [OST...]" (X_MPIIO rows have
// the same columns); other "#" lines are comments. Each rank becomes one
// thread; DXT records no opens nor closes, so each rank gets one open of a
// file just before its first access and one close just after its last
// (docs/replay.md says what else is inferred). X_MPIIO rows of a file and
// rank that also has X_POSIX rows are counted as not modelled (the POSIX
// rows are the same bytes, lower down). A line that is none of these, a row
// before any file header, or a record whose rows disagree with its counts
// is InvalidArgument "SOURCE:LINE: ...".
Result<AppTrace> ReadDarshanDxt(std::string_view text, const std::string& source);

// Whether `text` looks like darshan-dxt-parser's output: a line starting
// "# DXT, file_id:".
bool LooksLikeDarshanDxt(std::string_view text);

}  // namespace iomimic::apptrace
