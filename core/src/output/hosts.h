// Per-host figures of a run (summary.json's iomimic.hosts, timeline.csv's
// host rows, the report's per-host chart): each rank's own figures, gathered
// as text and grouped by host name in one pass.
//
// Per-host sums are sums of the same per-rank integers the run's totals sum
// (bytes, samples), so the hosts add up to the totals exactly. Grouping is
// O(ranks) (a hash map by host name); docs/cluster.md gives its time for
// 1,024 ranks.

#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace iomimic::output {

// One rank's figures, as that rank measured them.
struct RankFigures {
  std::string host;  // the rank's host name (gethostname)
  int accelerators = 1;
  std::uint64_t bytes_read = 0;  // storage layer, whole run (iomimic.bytes_read)
  std::uint64_t bytes_written = 0;
  std::uint64_t train_bytes_read = 0;  // training blocks (iomimic.train_bytes_read)
  std::uint64_t samples = 0;           // samples read (sample_read_latency_ms.count)
  double au_percent_sum = 0;           // per accelerator: its epochs' mean train AU, summed
  double samples_per_second_sum = 0;   // per accelerator: its epochs' mean throughput, summed
  double data_wait_seconds = 0;        // training steps' waits for their batch, summed
  double io_seconds = 0;               // storage reads and writes outstanding, summed
};

// One host: its ranks' figures summed; AU is the mean over its accelerators.
struct HostFigures {
  std::string host;
  std::vector<int> ranks;  // ascending
  int accelerators = 0;
  std::uint64_t bytes_read = 0;
  std::uint64_t bytes_written = 0;
  std::uint64_t train_bytes_read = 0;
  std::uint64_t samples = 0;
  double au_percent = 0;
  double samples_per_second = 0;
  double train_read_MiB_per_second = 0;  // train_bytes_read / the run's training seconds
  double data_wait_seconds = 0;
  double io_seconds = 0;
};

// One line of text for a gather; DecodeRankFigures reads it back exactly
// (numbers at full precision, the host name last).
std::string EncodeRankFigures(const RankFigures& f);
// The figures of EncodeRankFigures' text; false when the text is malformed.
bool DecodeRankFigures(const std::string& text, RankFigures* out);

// Groups ranks (index = rank) by host name, hosts in the order of their
// lowest rank. `train_seconds` is the run's training time (the sum of each
// epoch's slowest rank), the denominator of each host's MiB/s; 0 = none.
std::vector<HostFigures> GroupByHost(const std::vector<RankFigures>& ranks, double train_seconds);

}  // namespace iomimic::output
