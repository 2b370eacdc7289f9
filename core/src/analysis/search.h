// `iomimic search WORKLOAD --min-au 90`: MLPerf Storage's headline question,
// the largest number of emulated accelerators whose training AU stays at or
// above the threshold on this storage. Doubling from 1 until AU falls below
// the threshold (or the bound is reached), then bisection between the last
// number that held and the first that did not; every point is a full run in
// its own folder.

#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "iomimic/status.h"

namespace iomimic::analysis {

struct SearchOptions {
  std::string iomimic;   // the binary to run
  std::string workload;  // shipped name or manifest path
  std::vector<std::string> overrides;
  double min_au_percent = 90;
  // What grows: "accelerators" (accelerators per process, one process) or
  // "ranks" (MPI processes through `launcher`).
  std::string by = "accelerators";
  std::vector<std::string> launcher;
  std::uint64_t max = 4096;  // the largest number tried
  std::string output;        // run folders and search.csv
};

struct SearchPoint {
  std::uint64_t accelerators = 0;
  double au_percent = 0;
  double samples_per_second = 0;
  double mib_per_second = 0;
  bool held = false;  // AU at or above the threshold
  std::string folder;
};

struct SearchResult {
  std::uint64_t answer = 0;         // 0: not even one accelerator holds
  bool bounded = false;             // the bound was reached while AU still held
  std::vector<SearchPoint> points;  // in the order tried
};

// Runs the search. A run that fails is an error naming its folder.
Result<SearchResult> RunSearch(const SearchOptions& options,
                               const std::function<void(const SearchPoint&)>& on_point);

// The points as a table (text) and as CSV.
std::string SearchTable(const SearchResult& result, double min_au_percent);
std::string SearchCsv(const SearchResult& result);

}  // namespace iomimic::analysis
