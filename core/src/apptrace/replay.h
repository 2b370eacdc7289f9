// The replay of a recorded application (docs/replay.md, "Replay"): every
// thread of an AppTrace (apptrace/model.h) runs its operations in order
// against a storage back end, on the files the trace touched, mapped to
// the target by a prefix map.
//
// First the files that existed before the application touched them are
// made at their traced sizes (random content; a file already of that size
// is kept), the parents of every file created, and the files the
// application created itself removed, so that each replay starts as the
// application did. Then each copy runs one thread per traced thread:
// opens, reads, writes, syncs, closes, stats, renames and removals become
// the storage's calls on the mapped paths; a seek and an fadvise are no
// call (offsets are in the reads and writes already), nor is an mmap (the
// page faults that read a mapping happened between the application's
// calls, which the replay keeps as compute); a failed call is replayed as
// a stat of its path. At
// recorded timing each thread waits, before each operation, the gap the
// application left since its previous one (the compute between calls),
// and spends on each call at least the trace's call floor (what the tracer
// added to every call, AppTrace::call_floor_ns); at fast timing it does
// neither.

#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "apptrace/model.h"
#include "iomimic/status.h"
#include "iomimic/storage.h"
#include "metrics/histogram.h"
#include "metrics/records.h"

namespace iomimic::apptrace {

struct ReplayOptions {
  // FROM -> TO prefixes of absolute paths; the longest FROM that is the
  // path or a folder above it wins.
  std::vector<std::pair<std::string, std::string>> map;
  // Where absolute paths no prefix covers go (root + path), and relative
  // paths (root/path); empty: such an absolute path is an error naming it,
  // a relative path stays as it is.
  std::string root;
  bool recorded_timing = true;
  unsigned copies = 1;         // run at once, each on its own files
  unsigned first_copy = 0;     // this caller's first copy (rank * copies)
  unsigned total_copies = 1;   // over every caller; > 1 adds copy-<k>/ to paths
  std::function<bool()> stop;  // true: stop at the next operation (a signal)
};

// What a replay did.
struct ReplayFigures {
  KindCounts traced;    // the trace's, times the copies replayed
  KindCounts replayed;  // the replay's: calls made (or, seek and fadvise, stepped over)
  std::uint64_t outcome_mismatches = 0;  // a call that failed here and not there, or back
  std::uint64_t implicit_opens = 0;      // descriptors the trace did not show opened
  std::uint64_t setup_files = 0, setup_bytes = 0, setup_dirs = 0;
  double setup_seconds = 0;
  std::uint64_t threads = 0;  // per copy
  std::uint64_t copies = 0;
  double original_seconds = 0;    // the trace's span
  double replay_seconds = 0;      // the slowest copy's, start to last operation's end
  double compute_seconds = 0;     // gaps waited, summed over threads and copies
  double call_floor_seconds = 0;  // the trace's (AppTrace::call_floor_ns)
  metrics::Stamp start, end;
  std::array<metrics::LatencyHistogram, kOpKinds> latency;
  bool stopped = false;
};

// The target path of `path` for copy `copy`, or InvalidArgument naming the
// path when it is absolute, no prefix of `options.map` covers it and no
// root is given.
Result<std::string> MapPath(const std::string& path, const ReplayOptions& options, unsigned copy);

// Makes the files of `trace` for copies first_copy .. first_copy + copies - 1
// (see the header comment), through `storage` (the caller's uncounted one).
Status SetUpFiles(Storage& storage, const AppTrace& trace, const ReplayOptions& options,
                  ReplayFigures* figures);

// Runs the copies on files SetUpFiles made, filling *figures (all but the
// setup's). Errors name the copy, thread, operation and path.
Status Replay(Storage& storage, const AppTrace& trace, const ReplayOptions& options,
              ReplayFigures* figures);

}  // namespace iomimic::apptrace
