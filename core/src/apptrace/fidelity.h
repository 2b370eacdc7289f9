// `iomimic fidelity` (docs/derive.md, "The fidelity report"): the profiles
// (apptrace/profile.h) of an original program's trace and of the runs that
// imitate it (its replay, the derived workload), side by side: ops, bytes,
// the request size histogram, opens per file, throughput and the time of a
// step, and whether each run reproduces the original's bytes per epoch,
// read sizes and opens per file.

#pragma once

#include <string>
#include <vector>

#include "apptrace/profile.h"

namespace iomimic::apptrace {

struct FidelityTolerance {
  double bytes = 0.01;  // bytes per epoch: relative
  double bin = 0.05;    // reads per epoch in each size bin: relative
  double opens = 0.05;  // opens per file per epoch: relative
};

// How one run compares with the original.
struct FidelityVerdict {
  bool bytes_per_epoch = false, read_sizes = false, opens_per_file = false;
  // Bytes written to created files (checkpoints) within tolerance.bytes.
  bool bytes_written = false;
  std::vector<std::string> misses;  // one line per measure outside its tolerance
  bool ok() const { return bytes_per_epoch && read_sizes && opens_per_file && bytes_written; }
};

// `other` against `original`: each measure within its tolerance. Bins hold
// reads per epoch; a bin the original has and the other lacks (or the
// reverse) is a miss.
FidelityVerdict CompareProfiles(const TraceProfile& original, const TraceProfile& other,
                                const FidelityTolerance& tolerance);

// The side-by-side table (the first profile is the original; each other
// column ends with its verdict).
std::string FidelityText(const std::vector<TraceProfile>& profiles,
                         const FidelityTolerance& tolerance);

// The same as JSON: {"tolerance": {...}, "profiles": [{...measures...,
// "verdict": {...}}]}.
std::string FidelityJson(const std::vector<TraceProfile>& profiles,
                         const FidelityTolerance& tolerance);

}  // namespace iomimic::apptrace
