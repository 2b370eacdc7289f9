// The strace reader (docs/replay.md, "strace"): the text `strace -f -ttt -T
// [-yy] -e trace=%file,%desc` prints (to a file with -o, or stderr), into
// the model of apptrace/model.h.

#pragma once

#include <string>
#include <string_view>

#include "apptrace/model.h"
#include "iomimic/status.h"

namespace iomimic::apptrace {

// Parses `text`, the content of the trace file `source`. Lines are "[PID]
// SECONDS.MICROS NAME(ARGS) = RESULT <DURATION>", the PID bare or as
// "[pid N]", calls split by "<unfinished ...>" and "<... NAME resumed>"
// joined again. A line that is none of these (nor a signal, an exit or
// strace's own message) is InvalidArgument "SOURCE:LINE: ..." naming what
// was expected.
Result<AppTrace> ReadStrace(std::string_view text, const std::string& source);

}  // namespace iomimic::apptrace
