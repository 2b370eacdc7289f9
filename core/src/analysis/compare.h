// `iomimic compare RUN_A RUN_B...`: the headline figures of several runs side
// by side with their ratio to the first run, and the configuration keys
// whose values differ (back end, options, format, host...), so a storage
// vendor sees on one page which system keeps more accelerators busy.

#pragma once

#include <string>
#include <vector>

#include "analysis/run_folder.h"

namespace iomimic::analysis {

// The side-by-side table as text (fixed-width columns), one row per figure
// of the runs (all read with the same figure list). Runs are labelled
// A, B, C... in the order given; ratios are to run A. Figures no run has are
// left out; "-" marks a figure one run lacks. Keys that name the run itself
// (output.folder) are not compared.
std::string CompareText(const std::vector<RunFolder>& runs);

// The label of the i-th run of a comparison or report: A, B, ... Z, AA, AB...
std::string RunLabel(std::size_t i);

}  // namespace iomimic::analysis
