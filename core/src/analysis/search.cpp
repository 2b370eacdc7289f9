#include "analysis/search.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "analysis/launch.h"
#include "analysis/run_folder.h"

namespace iomimic::analysis {

Result<SearchResult> RunSearch(const SearchOptions& options,
                               const std::function<void(const SearchPoint&)>& on_point) {
  if (options.by != "accelerators" && options.by != "ranks") {
    return Status::InvalidArgument("search --by must be accelerators or ranks, not '" + options.by +
                                   "'");
  }
  if (options.max == 0) return Status::InvalidArgument("search --max must be at least 1");
  std::error_code ec;
  std::filesystem::create_directories(options.output, ec);
  if (ec) return Status::FromErrno(ec.value(), "cannot create " + options.output);
  SearchResult result;
  std::map<std::uint64_t, bool> tried;
  auto trial = [&](std::uint64_t n) -> Result<bool> {
    if (auto it = tried.find(n); it != tried.end()) return it->second;
    SearchPoint p;
    p.accelerators = n;
    p.folder = options.output + "/" + options.by + "-" + std::to_string(n);
    if (std::filesystem::exists(p.folder, ec)) {
      std::string aside;
      for (int k = 1;; ++k) {
        aside = p.folder + ".earlier-" + std::to_string(k);
        if (!std::filesystem::exists(aside, ec)) break;
      }
      std::filesystem::rename(p.folder, aside, ec);
      if (ec) return Status::FromErrno(ec.value(), "cannot move " + p.folder + " aside");
    }
    std::vector<std::string> overrides = options.overrides;
    overrides.push_back("++workload.output.folder=" + p.folder);
    const bool ranks = options.by == "ranks";
    if (!ranks) {
      overrides.push_back("++workload.iomimic.accelerators_per_process=" + std::to_string(n));
    }
    const std::vector<std::string> argv = RunCommandLine(
        options.iomimic, options.launcher, ranks ? n : 1, options.workload, overrides);
    IOMIMIC_ASSIGN_OR_RETURN(const int code, RunCommand(argv));
    if (code != 0) {
      return Status::Aborted("the run with " + std::to_string(n) + " accelerator(s) failed (exit " +
                             std::to_string(code) + "); see " + p.folder);
    }
    IOMIMIC_ASSIGN_OR_RETURN(const RunFolder run, ReadRunFolder(p.folder));
    const Figure* au = run.Find("train AU %");
    if (au == nullptr) return Status::Corruption(p.folder + "/summary.json has no train AU");
    p.au_percent = au->value;
    if (const Figure* f = run.Find("train samples/s")) p.samples_per_second = f->value;
    if (const Figure* f = run.Find("train MiB/s (read)")) p.mib_per_second = f->value;
    p.held = p.au_percent >= options.min_au_percent;
    result.points.push_back(p);
    tried[n] = p.held;
    if (on_point) on_point(p);
    return p.held;
  };

  // Doubling, then bisection between the last that held and the first that
  // did not.
  std::uint64_t good = 0, bad = 0;
  for (std::uint64_t n = 1;; n = std::min(options.max, n * 2)) {
    IOMIMIC_ASSIGN_OR_RETURN(const bool held, trial(n));
    if (!held) {
      bad = n;
      break;
    }
    good = n;
    if (n == options.max) {
      result.bounded = true;
      break;
    }
  }
  while (bad != 0 && bad - good > 1) {
    const std::uint64_t mid = good + (bad - good) / 2;
    IOMIMIC_ASSIGN_OR_RETURN(const bool held, trial(mid));
    (held ? good : bad) = mid;
  }
  result.answer = good;
  return result;
}

std::string SearchTable(const SearchResult& result, double min_au_percent) {
  std::ostringstream out;
  char line[256];
  std::snprintf(line, sizeof(line), "%14s %10s %14s %12s  %s\n", "accelerators", "AU %",
                "samples/s", "MiB/s", "AU >= threshold");
  out << line;
  for (const SearchPoint& p : result.points) {
    std::snprintf(line, sizeof(line), "%14llu %10.2f %14.1f %12.1f  %s\n",
                  static_cast<unsigned long long>(p.accelerators), p.au_percent,
                  p.samples_per_second, p.mib_per_second, p.held ? "yes" : "no");
    out << line;
  }
  std::snprintf(line, sizeof(line), "answer: %llu accelerator(s) keep AU >= %.1f%%%s\n",
                static_cast<unsigned long long>(result.answer), min_au_percent,
                result.bounded ? " (the bound of the search; more may)" : "");
  out << line;
  return out.str();
}

std::string SearchCsv(const SearchResult& result) {
  std::ostringstream out;
  out << "accelerators,au_percent,samples_per_second,MiB_per_second,held,folder\n";
  for (const SearchPoint& p : result.points) {
    out << p.accelerators << ',' << p.au_percent << ',' << p.samples_per_second << ','
        << p.mib_per_second << ',' << (p.held ? 1 : 0) << ',' << p.folder << '\n';
  }
  return out.str();
}

}  // namespace iomimic::analysis
