// `iomimic run -m`: Hydra's multirun as sugar for a sweep (docs/analysis.md).
// Overrides with comma-separated values (outside brackets) are the factors;
// their combinations become a design file in the sweep folder, which
// RunSweep (core/src/analysis/sweep.h) runs as `iomimic sweep` would. Before
// MPI: every run is a child.

#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <utility>

#include "analysis/launch.h"
#include "analysis/sweep.h"
#include "cli.h"
#include "run/run.h"

namespace iomimic::app {

namespace fs = std::filesystem;

namespace {

// The command line of `run -m`, sorted out.
struct Multirun {
  std::string workload = kDefaultWorkload;  // workload=NAME or a manifest path
  std::string folder;                       // ++hydra.sweep.dir
  std::vector<std::string> common;          // overrides of every run
  // Workload keys (without "workload.") and their values, in the given order.
  std::vector<std::pair<std::string, std::vector<std::string>>> factors;
};

// "1,2,4" -> {"1", "2", "4"}.
std::vector<std::string> SplitCommas(const std::string& value) {
  std::vector<std::string> values;
  for (std::size_t at = 0;;) {
    const std::size_t comma = value.find(',', at);
    values.push_back(value.substr(at, comma - at));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return values;
}

// Sorts the positional arguments into `m`. Returns 0, or the exit status of
// a usage error.
int ParseMultirun(const std::vector<std::string>& positional, Multirun* m) {
  for (const std::string& p : positional) {
    const std::size_t eq = p.find('=');
    if (eq == std::string::npos) {
      if (p.rfind("~", 0) == 0) {
        m->common.push_back(p);
      } else {
        m->workload = p;  // a manifest path
      }
      continue;
    }
    std::string key = p.substr(0, eq);
    const std::string value = p.substr(eq + 1);
    if (key == "workload") {
      m->workload = value;
      continue;
    }
    if (key == "++hydra.sweep.dir" || key == "hydra.sweep.dir") {
      m->folder = value;
      continue;
    }
    const bool list = value.find(',') != std::string::npos && value.find('[') == std::string::npos;
    if (!list) {
      m->common.push_back(p);
      continue;
    }
    while (!key.empty() && key.front() == '+') key.erase(key.begin());
    if (key.rfind("workload.", 0) != 0) {
      return Usage("multirun: only workload keys can be swept, not '" + key + "'");
    }
    m->factors.emplace_back(key.substr(9), SplitCommas(value));
  }
  if (m->factors.empty()) {
    return Usage(
        "multirun (-m) needs an override with comma-separated values, e.g. "
        "++workload.reader.read_threads=1,2,4");
  }
  return 0;
}

// Hydra's default sweep folder: multirun/<date>/<time>.
std::string DefaultSweepFolder() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char stamp[64];
  std::strftime(stamp, sizeof(stamp), "multirun/%Y-%m-%d/%H-%M-%S", &tm);
  return stamp;
}

// Writes <folder>/design.csv, one row per combination of the factors' values
// (the last factor varies fastest); returns its path. An existing design is
// an error: it is resumed with `iomimic sweep`.
Result<std::string> WriteMultirunDesign(const Multirun& m) {
  std::error_code ec;
  fs::create_directories(m.folder, ec);
  if (ec) return Status::FromErrno(ec.value(), "cannot create " + m.folder);
  const std::string design = m.folder + "/design.csv";
  if (fs::exists(design, ec)) {
    return Status::AlreadyExists(design + " exists: resume it with 'iomimic sweep " + design +
                                 "' or choose ++hydra.sweep.dir");
  }
  std::ofstream out(design);
  out << "# iomimic run -m: one row per combination; resume with iomimic sweep " << design
      << "\nmodel";
  for (const auto& [key, values] : m.factors) out << "," << key;
  out << ",run\n";
  std::vector<std::size_t> at(m.factors.size(), 0);
  for (;;) {
    out << m.workload;
    for (std::size_t f = 0; f < m.factors.size(); ++f) out << "," << m.factors[f].second[at[f]];
    out << ",N\n";
    std::size_t f = m.factors.size();
    while (f > 0 && ++at[f - 1] == m.factors[f - 1].second.size()) at[--f] = 0;
    if (f == 0) break;
  }
  out.close();
  if (!out) return Status::IOError("cannot write " + design);
  return design;
}

}  // namespace

int CmdMultirun(const CommonArgs& args) {
  Multirun m;
  if (const int code = ParseMultirun(args.positional, &m); code != 0) return code;
  if (m.folder.empty()) m.folder = DefaultSweepFolder();
  Result<std::string> design = WriteMultirunDesign(m);
  if (!design.ok()) return Fail(design.status());
  analysis::SweepOptions options;
  options.design = *design;
  options.output = m.folder;
  options.iomimic = analysis::SelfPath();
  options.launcher = analysis::DefaultLauncher();
  options.overrides = m.common;
  options.figures = run::Figures();
  PassConfigDir(args.config_dir, &options.overrides);
  Result<analysis::SweepReport> report = analysis::RunSweep(
      options, [](const std::string& line) { std::cout << "multirun: " << line << std::endl; });
  if (!report.ok()) return Fail(report.status());
  std::cout << "multirun: " << report->completed << " completed, " << report->failed
            << " failed of " << report->rows << "; results in " << report->results_csv << std::endl;
  if (!report->report_html.empty()) {
    std::cout << "multirun: report page " << report->report_html << std::endl;
  }
  if (report->interrupted) return 130;
  return report->failed > 0 ? 1 : 0;
}

}  // namespace iomimic::app
