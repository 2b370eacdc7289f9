#include "output/hosts.h"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

namespace iomimic::output {

std::string EncodeRankFigures(const RankFigures& f) {
  char line[512];
  std::snprintf(line, sizeof(line),
                "%d %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %.17g %.17g %.17g %.17g ",
                f.accelerators, f.bytes_read, f.bytes_written, f.train_bytes_read, f.samples,
                f.au_percent_sum, f.samples_per_second_sum, f.data_wait_seconds, f.io_seconds);
  return line + f.host;
}

bool DecodeRankFigures(const std::string& text, RankFigures* out) {
  RankFigures f;
  int consumed = 0;
  const int n = std::sscanf(
      text.c_str(), "%d %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %lf %lf %lf %lf %n",
      &f.accelerators, &f.bytes_read, &f.bytes_written, &f.train_bytes_read, &f.samples,
      &f.au_percent_sum, &f.samples_per_second_sum, &f.data_wait_seconds, &f.io_seconds, &consumed);
  if (n != 9 || consumed <= 0) return false;
  f.host = text.substr(static_cast<std::size_t>(consumed));
  *out = std::move(f);
  return true;
}

std::vector<HostFigures> GroupByHost(const std::vector<RankFigures>& ranks, double train_seconds) {
  std::vector<HostFigures> hosts;
  std::vector<double> au_sums;
  std::unordered_map<std::string, std::size_t> index;
  index.reserve(ranks.size());
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    const RankFigures& f = ranks[r];
    auto [it, fresh] = index.try_emplace(f.host, hosts.size());
    if (fresh) {
      hosts.emplace_back();
      hosts.back().host = f.host;
      au_sums.push_back(0);
    }
    HostFigures& h = hosts[it->second];
    h.ranks.push_back(static_cast<int>(r));
    h.accelerators += f.accelerators;
    h.bytes_read += f.bytes_read;
    h.bytes_written += f.bytes_written;
    h.train_bytes_read += f.train_bytes_read;
    h.samples += f.samples;
    au_sums[it->second] += f.au_percent_sum;
    h.samples_per_second += f.samples_per_second_sum;
    h.data_wait_seconds += f.data_wait_seconds;
    h.io_seconds += f.io_seconds;
  }
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    HostFigures& h = hosts[i];
    h.au_percent = h.accelerators > 0 ? au_sums[i] / h.accelerators : 0;
    h.train_read_MiB_per_second = train_seconds > 0 ? static_cast<double>(h.train_bytes_read) /
                                                          (1024.0 * 1024.0) / train_seconds
                                                    : 0;
  }
  return hosts;
}

}  // namespace iomimic::output
