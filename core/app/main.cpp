// The iomimic command line.
//
//   iomimic run      [MANIFEST | workload=NAME] [OVERRIDES...]   generate (if asked) and train
//   iomimic generate [MANIFEST | workload=NAME] [OVERRIDES...]   only generate the dataset
//   iomimic config   [MANIFEST | workload=NAME] [OVERRIDES...]   print the resolved manifest
//   iomimic plugins                                              list plugins
//   iomimic conformance [--plugin-dir DIR] [--plugin NAME]       run the conformance suites
//
// Errors are one line on stderr ("iomimic: error: ...") and a non-zero exit:
// 1 for a failed run or bad input, 2 for a command-line usage error.

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <boost/dll/runtime_symbol_info.hpp>
#include <boost/program_options.hpp>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "analysis/compare.h"
#include "analysis/launch.h"
#include "analysis/report.h"
#include "analysis/run_folder.h"
#include "analysis/search.h"
#include "analysis/sweep.h"
#include "cluster/arg_vector.h"
#include "cluster/cluster.h"
#include "config/config.h"
#include "engine/interrupt.h"
#include "iomimic/version.h"
#include "metrics/records.h"
#include "output/writers.h"
#include "plan/checkpoint_plan.h"
#include "plan/plan.h"
#include "plugin/registry.h"
#include "run/run.h"

namespace po = boost::program_options;
namespace fs = std::filesystem;
using namespace iomimic;

namespace {

constexpr const char* kDefaultWorkload = "quickstart";

// Whether stdout is a terminal (then progress is one live line). Not under
// an MPI launcher: Open MPI gives every rank a pseudo-terminal as stdout
// even when mpirun's own output goes to a file or a pipe, so a rank cannot
// tell; it prints plain lines there. Called before MPI_Init, which sets the
// launcher's variables even in a process started alone.
bool StdoutIsTerminal() {
  if (cluster::LaunchedByMpi()) return false;
  return ::isatty(STDOUT_FILENO) == 1;
}

// Columns of the terminal on stdout, or 0 when unknown.
std::size_t TerminalColumns() {
  struct winsize ws {};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 0;
}

// Messages of rank 0: to stdout (unless quiet) and to the run's log file
// (output.log_file in the run folder) once that exists; and the live
// progress line. Thread-safe: progress comes from the engine's progress
// thread (run/run.h, RunObserver::OnProgress).
class Console {
 public:
  Console(bool enabled, bool quiet, bool terminal)
      : enabled_(enabled), quiet_(quiet), terminal_(terminal) {}
  void OpenLog(const std::string& path) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (enabled_) log_.open(path, std::ios::out | std::ios::app);
  }
  void Line(const std::string& text, bool always = false) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!enabled_) return;
    ClearLiveLocked();
    if (!quiet_ || always) std::cout << text << std::endl;
    if (log_.is_open()) log_ << text << std::endl;
  }
  void LogOnly(const std::string& text) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (log_.is_open()) log_ << text << std::endl;
  }
  // Progress: on a terminal, replaces the live line (carriage return, cut to
  // the terminal's width so it never wraps); else one plain line. Neither
  // goes to the log file.
  void Progress(const std::string& text) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!enabled_ || quiet_) return;
    if (!terminal_) {
      std::cout << text << std::endl;
      return;
    }
    std::string shown = text;
    if (const std::size_t columns = TerminalColumns(); columns > 1 && shown.size() >= columns) {
      shown.resize(columns - 1);
    }
    std::cout << '\r' << shown << "\x1b[K" << std::flush;  // erase the rest of the line
    live_ = true;
  }
  // Clears the live line, if any (before anything else is printed).
  void EndProgress() {
    std::lock_guard<std::mutex> lock(mutex_);
    ClearLiveLocked();
  }

 private:
  void ClearLiveLocked() {
    if (!live_) return;
    std::cout << "\r\x1b[K" << std::flush;
    live_ = false;
  }

  std::mutex mutex_;
  bool enabled_;
  bool quiet_;
  bool terminal_;
  bool live_ = false;  // a live line is on the terminal
  std::ofstream log_;
};

std::string Format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string Format(const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  return buf;
}

// One line, printable: a plugin may quote raw bytes from a damaged file.
std::string Printable(const std::string& text) {
  std::string out;
  for (unsigned char ch : text) {
    if (ch == '\n' || ch == '\t') {
      out += ' ';
    } else if (ch < 0x20 || ch >= 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "\\x%02x", ch);
      out += hex;
    } else {
      out += static_cast<char>(ch);
    }
  }
  return out;
}

// Prints the one error line. In a multi-rank run whose ranks agreed on the
// failure (every rank holds it), rank 0 alone prints it.
int Fail(const Status& status) {
  const cluster::Cluster* c = cluster::Cluster::Current();
  if (c == nullptr || c->size() == 1 || c->rank() == 0 || !c->failure_agreed()) {
    std::cerr << "iomimic: error: " << Printable(status.message()) << std::endl;
  }
  return 1;
}

int Usage(const std::string& message) {
  std::cerr << "iomimic: error: " << message << " (see 'iomimic --help')" << std::endl;
  return 2;
}

fs::path ExecutableDir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe.parent_path();
}

// Where `workload=NAME` is looked up when --config-dir is not given.
std::string DefaultConfigDir() {
  if (const char* env = std::getenv("IOMIMIC_CONFIG_DIR"); env != nullptr && *env != '\0')
    return env;
  std::error_code ec;
  fs::path installed = ExecutableDir().parent_path() / IOMIMIC_WORKLOADS_INSTALL_RELDIR;
  if (fs::is_directory(installed, ec)) return installed.string();
  return IOMIMIC_WORKLOADS_SOURCE_DIR;
}

struct CommonArgs {
  std::vector<std::string> positional;
  std::vector<std::string> plugin_dirs;
  std::string config_dir;
  unsigned generate_threads = 0;
  unsigned accelerators = 0;  // --accelerators: iomimic.accelerators_per_process
  bool quiet = false;
  bool plan = false;
  bool multirun = false;  // run -m: Hydra's multirun, a sweep of comma-separated values
  bool keys = false;      // config --keys
  int ranks = 0;
};

const char* const kCommandHelp =
    "usage: iomimic <command> [options] [MANIFEST.yaml | workload=NAME] [OVERRIDES...]\n"
    "\n"
    "commands:\n"
    "  run        generate the dataset if the manifest asks, then replay training\n"
    "             (no arguments: the shipped 'quickstart' workload)\n"
    "  generate   only generate the dataset\n"
    "  config     print the resolved manifest (--plan: steps, files and sizes)\n"
    "  plugins    list the storage and format plugins found\n"
    "  conformance  run the storage and format conformance suites against plugins\n"
    "             (--plugin-dir DIR, --plugin NAME; see docs/plugins.md)\n"
    "  report     RUN_DIR... | SWEEP_DIR [-o out.html]: one self-contained HTML page\n"
    "  compare    RUN_A RUN_B... [--html out.html]: figures side by side, ratios to A,\n"
    "             differing config\n"
    "  sweep      DESIGN.csv: run a factorial design (resumable), results.csv\n"
    "  search     WORKLOAD --min-au 90: the most accelerators that keep AU\n"
    "\n"
    "overrides (Hydra syntax, as DLIO): ++workload.a.b=v (set), workload.a.b=v (change),\n"
    "  +workload.a.b=v (add), ~workload.a.b (delete), ++hydra.run.dir=DIR\n"
    "\n"
    "'iomimic <command> --help' lists the options of a command.\n";

Result<config::LoadedManifest> LoadFromArgs(const CommonArgs& args) {
  config::ManifestSource source;
  source.config_dir = args.config_dir.empty() ? DefaultConfigDir() : args.config_dir;
  for (const std::string& p : args.positional) {
    bool is_override = p.find('=') != std::string::npos || p.rfind("~", 0) == 0;
    if (is_override) {
      source.overrides.push_back(p);
    } else if (source.path.empty()) {
      source.path = p;
    } else {
      return Status::InvalidArgument("more than one manifest given: '" + source.path + "' and '" +
                                     p + "'");
    }
  }
  bool has_workload = false;
  for (const std::string& o : source.overrides) has_workload |= o.rfind("workload=", 0) == 0;
  if (source.path.empty() && !has_workload) source.workload = kDefaultWorkload;
  return config::LoadManifest(source);
}

// The manifest's warnings (unknown keys, ...), one line each on stderr.
// Every rank finds the same ones, so under MPI only rank 0 calls this.
void PrintManifestWarnings(const config::LoadedManifest& manifest) {
  for (const config::Diagnostic& d : manifest.warnings) {
    std::cerr << "iomimic: " << Printable(d.ToString()) << std::endl;
  }
}

void DiscoverPlugins(const CommonArgs& args, plugin::Registry* registry) {
  registry->Discover(plugin::Registry::SearchPath(args.plugin_dirs, {}));
}

// Parses the options shared by run/generate/config. Returns false and sets
// `exit_code` when the command should stop (help or usage error).
bool ParseCommon(const std::string& command, int argc, char** argv, CommonArgs* args,
                 int* exit_code) {
  po::options_description opts("options of 'iomimic " + command + "'");
  opts.add_options()("help,h", "show this help")(
      "config-dir", po::value<std::string>(&args->config_dir),
      "folder that holds <name>.yaml for workload=<name> (default: the shipped workloads)")(
      "plugin-dir", po::value<std::vector<std::string>>(&args->plugin_dirs),
      "extra plugin folder, searched first (repeatable)");
  if (command == "run" || command == "generate") {
    opts.add_options()("generate-threads", po::value<unsigned>(&args->generate_threads),
                       "writer threads per rank when generating (default: CPU count)")(
        "quiet,q", po::bool_switch(&args->quiet), "print only the final summary");
  }
  if (command == "run") {
    opts.add_options()("multirun,m", po::bool_switch(&args->multirun),
                       "Hydra's multirun: every override with comma-separated values "
                       "(++workload.reader.read_threads=1,2,4) is a factor; runs every "
                       "combination as 'iomimic sweep' does, in ++hydra.sweep.dir (default "
                       "multirun/<date>/<time>)");
  }
  if (command == "run" || command == "config") {
    opts.add_options()("accelerators,a", po::value<unsigned>(&args->accelerators),
                       "emulated accelerators per process (iomimic.accelerators_per_process; "
                       "with mpirun -np P: P x N in all)");
  }
  if (command == "config") {
    opts.add_options()("plan", po::bool_switch(&args->plan),
                       "print the plan (steps, files, checkpoint files and sizes) instead of the "
                       "manifest; writes nothing")(
        "ranks", po::value<int>(&args->ranks),
        "world size for --plan (default: the smallest the parallelism allows)")(
        "keys", po::bool_switch(&args->keys),
        "print every manifest key (type, default, origin, meaning) as Markdown, as in "
        "docs/manifest.md, and exit");
  }
  po::options_description hidden;
  hidden.add_options()("args", po::value<std::vector<std::string>>(&args->positional));
  po::positional_options_description pos;
  pos.add("args", -1);
  po::options_description all;
  all.add(opts).add(hidden);
  try {
    po::variables_map vm;
    po::store(po::command_line_parser(argc, argv).options(all).positional(pos).run(), vm);
    po::notify(vm);
    if (vm.count("help")) {
      std::cout << "usage: iomimic " << command
                << " [options] [MANIFEST.yaml | workload=NAME] [OVERRIDES...]\n\n"
                << opts << std::endl;
      *exit_code = 0;
      return false;
    }
  } catch (const po::error& e) {
    *exit_code = Usage(e.what());
    return false;
  }
  if (args->accelerators > 0) {
    // An override like any other: validated with the manifest, last one wins.
    args->positional.push_back("++workload.iomimic.accelerators_per_process=" +
                               std::to_string(args->accelerators));
  }
  return true;
}

int CmdPlugins(int argc, char** argv) {
  CommonArgs args;
  po::options_description opts("options of 'iomimic plugins'");
  bool verbose = false;
  opts.add_options()("help,h", "show this help")(
      "plugin-dir", po::value<std::vector<std::string>>(&args.plugin_dirs),
      "extra plugin folder, searched first (repeatable)")("verbose,v", po::bool_switch(&verbose),
                                                          "also list each plugin's options");
  try {
    po::variables_map vm;
    po::store(po::command_line_parser(argc, argv).options(opts).run(), vm);
    po::notify(vm);
    if (vm.count("help")) {
      std::cout << "usage: iomimic plugins [options]\n\n" << opts << std::endl;
      return 0;
    }
  } catch (const po::error& e) {
    return Usage(e.what());
  }
  plugin::Registry registry;
  DiscoverPlugins(args, &registry);
  std::printf("%-8s %-20s %-9s %-38s %s\n", "KIND", "NAME", "VERSION", "CAPABILITIES", "PATH");
  for (const plugin::PluginInfo& p : registry.plugins()) {
    std::printf("%-8s %-20s %-9s %-38s %s\n", plugin::KindName(p.kind).c_str(), p.name.c_str(),
                p.version.c_str(), plugin::CapabilityNames(p.capabilities).c_str(), p.path.c_str());
    if (verbose) {
      std::printf("         %s\n", p.description.c_str());
      for (const plugin::OptionInfo& o : p.options) {
        std::printf("         option %s (%s, default '%s'): %s\n", o.name.c_str(), o.type.c_str(),
                    o.default_value.c_str(), o.help.c_str());
      }
    }
  }
  for (const plugin::RejectedPlugin& r : registry.rejected()) {
    std::printf("refused  %s: %s\n", r.path.c_str(), r.reason.c_str());
  }
  for (const plugin::ShadowedPlugin& s : registry.shadowed()) {
    std::printf("shadowed %s: %s comes first in the search path\n", s.path.c_str(), s.by.c_str());
  }
  if (registry.plugins().empty()) {
    std::cerr << "iomimic: warning: no plugins found in:";
    for (const std::string& d : registry.search_path()) std::cerr << " " << d;
    std::cerr << std::endl;
  }
  return 0;
}

// Runs iomimic-conformance, installed beside this binary (the suites in
// tests/conformance), with the same arguments; its exit status is ours.
// Writes `html` to `path` (through a temporary file and a rename, so that a
// reader never sees half a page).
Status WriteHtml(const std::string& path, const std::string& html) {
  const std::string temp = path + ".iomimic-tmp";
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out << html;
    if (!out) return Status::IOError("cannot write " + temp);
  }
  std::error_code ec;
  fs::rename(temp, path, ec);
  if (ec) return Status::FromErrno(ec.value(), "cannot write " + path);
  return Status::OK();
}

// Takes "--opt VALUE" or "--opt=VALUE" at argv[*i]; false when argv[*i] is
// another argument. A missing value is a usage error (*code set).
bool TakeValue(int argc, char** argv, int* i, const std::string& name, std::string* value,
               int* code) {
  const std::string a = argv[*i];
  if (a == name) {
    if (*i + 1 >= argc) {
      *code = Usage(name + " needs a value");
      return true;
    }
    *value = argv[++*i];
    return true;
  }
  if (a.rfind(name + "=", 0) == 0) {
    *value = a.substr(name.size() + 1);
    return true;
  }
  return false;
}

int CmdCompare(int argc, char** argv) {
  std::vector<std::string> folders;
  std::string html, chart_js;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::cout << "usage: iomimic compare RUN_A RUN_B [RUN_C...] [--html out.html]\n\n"
                   "Prints the runs' figures side by side (AU, throughput, latency, checkpoint\n"
                   "rates...) with each run's ratio to RUN_A, and the configuration keys whose\n"
                   "values differ (back end, options, format, host). Reads the run folders'\n"
                   "summary.json. --html also writes the comparison as one self-contained page\n"
                   "with overlaid timelines and histograms (docs/analysis.md); --chart-js FILE\n"
                   "inlines that Chart.js file instead of the one built in.\n";
      return 0;
    }
    int code = 0;
    if (TakeValue(argc, argv, &i, "--html", &html, &code) ||
        TakeValue(argc, argv, &i, "--chart-js", &chart_js, &code)) {
      if (code != 0) return code;
      continue;
    }
    if (a.rfind("-", 0) == 0) return Usage("compare: unknown option " + a);
    folders.push_back(a);
  }
  if (folders.size() < 2) return Usage("compare needs at least two run folders");
  std::vector<analysis::RunFolder> runs;
  for (const std::string& f : folders) {
    Result<analysis::RunFolder> run = analysis::ReadRunFolder(f);
    if (!run.ok()) return Fail(run.status().WithContext("compare"));
    runs.push_back(std::move(run).value());
  }
  std::cout << analysis::CompareText(runs);
  if (!html.empty()) {
    Result<std::string> page = analysis::CompareHtml(folders, {chart_js});
    if (!page.ok()) return Fail(page.status());
    if (Status s = WriteHtml(html, *page); !s.ok()) return Fail(s.WithContext("compare"));
    std::cout << "\ncompare: wrote " << html << std::endl;
  }
  return 0;
}

// `iomimic report RUN_DIR... | SWEEP_DIR [-o out.html]`.
int CmdReport(int argc, char** argv) {
  std::vector<std::string> folders;
  std::string output, chart_js;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::cout << "usage: iomimic report RUN_DIR... [-o out.html] [--chart-js FILE]\n"
                   "       iomimic report SWEEP_DIR [-o out.html]\n\n"
                   "Writes one self-contained HTML page (opens offline): the resolved\n"
                   "configuration, AU and throughput per epoch, throughput and AU timelines with\n"
                   "epoch/eval/checkpoint markers, latency and access-size histograms, per-rank\n"
                   "spread, hottest files, checkpoints and the back end's own figures of each run\n"
                   "(docs/analysis.md). A sweep folder (results.csv) gives the sweep's page: AU\n"
                   "and MiB/s against each factor. Default output: DIR/report.html for one\n"
                   "folder, ./report.html for several. --chart-js FILE inlines that Chart.js\n"
                   "file instead of the one built in.\n";
      return 0;
    }
    int code = 0;
    if (TakeValue(argc, argv, &i, "-o", &output, &code) ||
        TakeValue(argc, argv, &i, "--output", &output, &code) ||
        TakeValue(argc, argv, &i, "--chart-js", &chart_js, &code)) {
      if (code != 0) return code;
      continue;
    }
    if (a.rfind("-", 0) == 0) return Usage("report: unknown option " + a);
    folders.push_back(a);
  }
  if (folders.empty()) return Usage("report needs a run folder (or a sweep folder)");
  std::size_t sweeps = 0;
  for (const std::string& f : folders) sweeps += analysis::IsSweepFolder(f) ? 1 : 0;
  if (sweeps > 0 && folders.size() > 1) {
    return Usage("report: a sweep folder is reported alone (" + std::to_string(sweeps) + " of " +
                 std::to_string(folders.size()) + " folders are sweeps)");
  }
  if (output.empty()) output = folders.size() == 1 ? folders[0] + "/report.html" : "report.html";
  const analysis::ReportOptions options{chart_js};
  Result<std::string> page = sweeps > 0 ? analysis::SweepHtml(folders[0], options)
                                        : analysis::RunReportHtml(folders, options);
  if (!page.ok()) return Fail(page.status());
  if (Status s = WriteHtml(output, *page); !s.ok()) return Fail(s.WithContext("report"));
  std::cout << "report: wrote " << output << std::endl;
  return 0;
}

// Options shared by sweep and search: --iomimic, --launcher, --output and
// overrides added to every run.
// The runs an experiment starts look up workload names where this command
// would: `--config-dir=DIR` first among their arguments, when given.
void PassConfigDir(const std::string& config_dir, std::vector<std::string>* run_args) {
  if (!config_dir.empty()) run_args->insert(run_args->begin(), "--config-dir=" + config_dir);
}

struct ExperimentArgs {
  std::vector<std::string> positional;
  std::string output;
  std::string launcher;
  std::string iomimic;
  std::string config_dir;  // where the runs look up workload names
  double min_au = 90;
  std::string by = "accelerators";
  std::uint64_t max = 4096;
};

bool ParseExperiment(const std::string& command, int argc, char** argv, ExperimentArgs* args,
                     int* exit_code) {
  po::options_description opts("options");
  opts.add_options()("help,h", "this help")(
      "output,o", po::value<std::string>(&args->output),
      command == "sweep" ? "folder of the runs and results.csv (default: DESIGN.runs)"
                         : "folder of the runs and search.csv (default: search-<workload>)")(
      "launcher", po::value<std::string>(&args->launcher),
      "MPI launcher for more than one process, {processes} replaced (default: mpirun "
      "[--allow-run-as-root] --oversubscribe -np {processes})")(
      "iomimic", po::value<std::string>(&args->iomimic),
      "the iomimic binary to run (default: this one)")(
      "config-dir", po::value<std::string>(&args->config_dir),
      "folder of workload files (<dir>/<name>.yaml or <dir>/workload/<name>.yaml), as for run");
  if (command == "search") {
    opts.add_options()("min-au", po::value<double>(&args->min_au)->default_value(90),
                       "AU threshold in percent")(
        "by", po::value<std::string>(&args->by)->default_value("accelerators"),
        "what grows: accelerators (per process, one process) or ranks (MPI processes)")(
        "max", po::value<std::uint64_t>(&args->max)->default_value(4096),
        "the largest number tried");
  }
  po::options_description hidden;
  hidden.add_options()("args", po::value<std::vector<std::string>>(&args->positional));
  po::positional_options_description pos;
  pos.add("args", -1);
  po::options_description all;
  all.add(opts).add(hidden);
  po::variables_map vm;
  try {
    po::store(
        po::command_line_parser(argc, argv)
            .options(all)
            .positional(pos)
            .style(po::command_line_style::default_style & ~po::command_line_style::allow_guessing)
            .run(),
        vm);
    po::notify(vm);
  } catch (const po::error& e) {
    *exit_code = Usage(e.what());
    return false;
  }
  if (vm.count("help")) {
    if (command == "sweep") {
      std::cout << "usage: iomimic sweep DESIGN.csv [options] [OVERRIDES...]\n\n"
                   "Runs every row of DESIGN.csv not yet marked run=Y, each in its own folder,\n"
                   "and writes results.csv (docs/analysis.md). Columns: model (or workload),\n"
                   "processes, overrides, run, and manifest keys (reader.read_threads...).\n"
                   "OVERRIDES are added to every experiment.\n\n";
    } else {
      std::cout << "usage: iomimic search [MANIFEST.yaml | WORKLOAD] [options] [OVERRIDES...]\n\n"
                   "Finds the largest number of emulated accelerators whose training AU stays\n"
                   "at or above --min-au: doubling, then bisection (docs/analysis.md).\n\n";
    }
    std::cout << opts;
    *exit_code = 0;
    return false;
  }
  if (args->iomimic.empty()) args->iomimic = analysis::SelfPath();
  return true;
}

int CmdSweep(int argc, char** argv) {
  ExperimentArgs args;
  int code = 0;
  if (!ParseExperiment("sweep", argc, argv, &args, &code)) return code;
  if (args.positional.empty()) return Usage("sweep needs a design file");
  analysis::SweepOptions options;
  options.design = args.positional[0];
  options.overrides.assign(args.positional.begin() + 1, args.positional.end());
  PassConfigDir(args.config_dir, &options.overrides);
  options.output = args.output;
  options.iomimic = args.iomimic;
  options.launcher =
      args.launcher.empty() ? analysis::DefaultLauncher() : analysis::SplitWords(args.launcher);
  Result<analysis::SweepReport> report = analysis::RunSweep(
      options, [](const std::string& line) { std::cout << "sweep: " << line << std::endl; });
  if (!report.ok()) return Fail(report.status());
  std::cout << "sweep: " << report->completed << " completed, " << report->failed << " failed, "
            << report->already_done << " done before, of " << report->rows
            << " experiments; results in " << report->results_csv << std::endl;
  if (!report->report_html.empty()) {
    std::cout << "sweep: report page " << report->report_html << std::endl;
  }
  if (report->interrupted) return 130;
  return report->failed > 0 ? 1 : 0;
}

int CmdSearch(int argc, char** argv) {
  ExperimentArgs args;
  int code = 0;
  if (!ParseExperiment("search", argc, argv, &args, &code)) return code;
  analysis::SearchOptions options;
  options.workload = kDefaultWorkload;
  for (const std::string& p : args.positional) {
    const bool is_override = p.find('=') != std::string::npos || p.rfind("~", 0) == 0;
    if (is_override) {
      options.overrides.push_back(p);
    } else {
      options.workload = p;
    }
  }
  PassConfigDir(args.config_dir, &options.overrides);
  options.iomimic = args.iomimic;
  options.min_au_percent = args.min_au;
  options.by = args.by;
  options.max = args.max;
  options.launcher =
      args.launcher.empty() ? analysis::DefaultLauncher() : analysis::SplitWords(args.launcher);
  options.output =
      args.output.empty() ? "search-" + fs::path(options.workload).stem().string() : args.output;
  Result<analysis::SearchResult> result =
      analysis::RunSearch(options, [](const analysis::SearchPoint& p) {
        std::cout << "search: " << p.accelerators << " accelerator(s): AU "
                  << Format("%.2f", p.au_percent) << "%" << (p.held ? "" : " (below)") << std::endl;
      });
  if (!result.ok()) return Fail(result.status());
  const std::string table = analysis::SearchTable(*result, options.min_au_percent);
  std::cout << table;
  std::ofstream csv(options.output + "/search.csv", std::ios::trunc);
  csv << analysis::SearchCsv(*result);
  if (!csv) return Fail(Status::IOError("cannot write " + options.output + "/search.csv"));
  return 0;
}

int CmdConformance(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::cout
          << "usage: iomimic conformance [--plugin-dir DIR]... [--plugin NAME]...\n"
             "                           [--storage NAME]... [doctest options]\n\n"
             "Runs the storage and format conformance suites (docs/plugins.md) against\n"
             "the plugins in each --plugin-dir (default: the plugins beside this binary),\n"
             "only the --plugin names when given. --storage names the back ends formats\n"
             "are written through (default: every in-tree back end and memory). Other options go\n"
             "to doctest (-tc=PATTERN, -s, --dt-help). Exit status 0 when all passed.\n";
      return 0;
    }
  }
  std::error_code ec;
  const fs::path exe = boost::dll::program_location(ec);
  if (ec) return Fail(Status::Internal("cannot locate the iomimic binary: " + ec.message()));
  const fs::path suite = exe.parent_path() / "iomimic-conformance";
  if (!fs::exists(suite)) {
    return Fail(Status::NotFound(suite.string() +
                                 " is missing (built with -DIOMIMIC_BUILD_TESTS=ON and doctest)"));
  }
  std::vector<std::string> args{suite.string()};
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  std::vector<char*> cargs;
  for (std::string& a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  std::cout.flush();
  ::execv(suite.c_str(), cargs.data());
  return Fail(Status::FromErrno(errno, "exec " + suite.string()));
}

// config --plan: the dataset's size (sample payloads; formats add headers),
// its shapes and folders, and whether it fits where it will be written.
void PrintDatasetSize(const config::Config& c, const plan::DatasetLayout& layout, int world) {
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  Result<ElementType> type = ElementType::FromName(c.dataset.record_element_type);
  const std::uint64_t element = type.ok() ? type->size : 1;
  double bytes[2] = {0, 0};
  std::uint64_t smallest = UINT64_MAX, largest = 0;
  for (std::uint64_t g = 0; g < layout.num_generated_files(); ++g) {
    std::uint64_t sample = element;
    for (std::uint64_t d : layout.SampleShape(g)) sample *= d;
    smallest = std::min(smallest, sample);
    largest = std::max(largest, sample);
    bytes[layout.FromGlobal(g).first == plan::Split::kTrain ? 0 : 1] +=
        static_cast<double>(sample) * static_cast<double>(layout.samples_per_file());
  }
  std::string shape;
  if (layout.num_generated_files() > 0) {
    for (std::uint64_t d : layout.SampleShape(0))
      shape += (shape.empty() ? "" : " x ") + std::to_string(d);
  }
  std::cout << "samples: " << (shape.empty() ? "-" : shape) << " " << c.dataset.record_element_type
            << " in the first file"
            << (layout.num_generated_files() > 0
                    ? Format(", %llu to %llu bytes each", static_cast<unsigned long long>(smallest),
                             static_cast<unsigned long long>(largest))
                    : std::string())
            << "\n";
  const double total = bytes[0] + bytes[1];
  std::cout << Format(
      "data: train %.3f GiB + eval %.3f GiB = %.3f GiB of sample payload (formats add their "
      "headers), %.3f GiB read per rank and epoch\n",
      bytes[0] / kGiB, bytes[1] / kGiB, total / kGiB, bytes[0] / kGiB / std::max(1, world));
  for (plan::Split split : {plan::Split::kTrain, plan::Split::kEval}) {
    const std::uint64_t files = layout.num_files(split);
    const std::uint64_t folders = split == plan::Split::kTrain ? c.dataset.num_subfolders_train
                                                               : c.dataset.num_subfolders_eval;
    if (files == 0) continue;
    std::cout << "  " << layout.SplitDirectory(split) << ": " << files << " files"
              << (folders > 1
                      ? Format(" in %llu subfolders, about %llu each",
                               static_cast<unsigned long long>(folders),
                               static_cast<unsigned long long>((files + folders - 1) / folders))
                      : std::string())
              << "\n";
  }
  // Free space where the data will go (its nearest existing folder).
  std::error_code ec;
  fs::path where = fs::absolute(layout.data_folder(), ec);
  while (!where.empty() && !fs::exists(where, ec) && where != where.root_path()) {
    where = where.parent_path();
  }
  const fs::space_info space = fs::space(where, ec);
  if (!ec) {
    std::cout << Format("free space at %s: %.3f GiB\n", where.c_str(),
                        static_cast<double>(space.available) / kGiB);
    if (c.workflow.generate_data && total > static_cast<double>(space.available)) {
      std::cerr << Format(
                       "iomimic: warning: the dataset (%.3f GiB) does not fit in the %.3f GiB free "
                       "at %s",
                       total / kGiB, static_cast<double>(space.available) / kGiB, where.c_str())
                << std::endl;
    }
  }
}

int CmdConfig(int argc, char** argv) {
  CommonArgs args;
  int code = 0;
  if (!ParseCommon("config", argc, argv, &args, &code)) return code;
  if (args.keys) {
    std::cout << config::ManifestKeysMarkdown();
    return 0;
  }
  Result<config::LoadedManifest> manifest = LoadFromArgs(args);
  if (!manifest.ok()) return Fail(manifest.status());
  PrintManifestWarnings(*manifest);
  if (!args.plan) {
    // Credentials never printed (docs/security.md).
    std::cout << config::ToYaml(config::Redacted(*manifest).config, false);
    return 0;
  }
  const config::Config& c = manifest->config;
  plan::DatasetLayout layout(c, c.dataset.format);
  std::cout << "workload: " << manifest->workload_name << "\n";
  std::cout << "dataset: " << layout.num_files(plan::Split::kTrain) << " train + "
            << layout.num_files(plan::Split::kEval) << " eval files of "
            << layout.samples_per_file() << " samples, first file "
            << layout.FilePath(plan::Split::kTrain, 0) << "\n";
  const int world = args.ranks > 0
                        ? args.ranks
                        : static_cast<int>(std::max<std::int64_t>(1, c.model.tensor_parallelism) *
                                           std::max<std::int64_t>(1, c.model.pipeline_parallelism));
  std::cout << "ranks: " << world << "\n";
  PrintDatasetSize(c, layout, world);
  std::cout << "train: " << c.train.epochs << " epochs x " << plan::TrainStepsPerEpoch(c, world)
            << " steps of batch " << c.reader.batch_size
            << " per rank; eval: " << plan::EvalStepsPerEpoch(c, world) << " steps of batch "
            << c.reader.batch_size_eval << "\n";
  if (!c.workflow.checkpoint) return 0;
  Result<plan::CheckpointPlan> cp = plan::PlanCheckpoint(c, world);
  if (!cp.ok()) return Fail(cp.status());
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  std::cout << Format(
      "checkpoint: %s/global_epoch<E>_step<S>/, TP %d x PP %d x DP %d, ZeRO %d, "
      "%llu parameters\n",
      c.checkpoint.checkpoint_folder.c_str(), cp->tensor, cp->pipeline, cp->data, cp->zero_stage,
      static_cast<unsigned long long>(cp->parameters));
  for (const plan::RankCheckpoint& r : cp->ranks) {
    for (const plan::CheckpointFile& f : r.files) {
      std::cout << Format("  rank %d  %-52s %16llu bytes  %10.3f GiB\n", r.rank, f.name.c_str(),
                          static_cast<unsigned long long>(f.bytes), f.bytes / kGiB);
    }
  }
  std::cout << Format("model state %.3f GiB + optimizer state %.3f GiB = %.3f GiB per checkpoint\n",
                      cp->model_bytes_total / kGiB, cp->optimizer_bytes_total / kGiB,
                      cp->total_bytes() / kGiB);
  return 0;
}

// "1:05", "1:02:03", or "--" when unknown.
std::string Duration(double seconds) {
  if (!(seconds >= 0) || seconds > 1e8) return "--";
  const auto s = static_cast<unsigned long long>(seconds + 0.5);
  if (s >= 3600) return Format("%llu:%02llu:%02llu", s / 3600, s / 60 % 60, s % 60);
  return Format("%llu:%02llu", s / 60, s % 60);
}

// Time left when `done` of `total` took `seconds`.
std::string Eta(double seconds, double done, double total) {
  if (done <= 0 || total < done) return "--";
  return Duration(seconds * (total - done) / done);
}

std::string ProgressBody(const run::Progress& p);

// The progress line (run/run.h, Progress); empty when there is nothing to
// say (between phases). With several ranks its counts are the reporting
// rank's (generation: its share of the files), and the line says which.
std::string ProgressText(const run::Progress& p) {
  std::string body = ProgressBody(p);
  if (body.empty() || p.ranks <= 1) return body;
  return Format("[rank %d of %d] ", p.rank, p.ranks) + body;
}

std::string ProgressBody(const run::Progress& p) {
  using Phase = run::Progress::Phase;
  constexpr double kMiB = 1024.0 * 1024.0;
  switch (p.phase) {
    case Phase::kIdle:
      return "";
    case Phase::kGenerate: {
      const double mib = static_cast<double>(p.bytes_written) / kMiB;
      return Format(
          "generating: %llu/%llu files, %.1f MiB, %.1f MiB/s, ETA %s",
          static_cast<unsigned long long>(p.files_done),
          static_cast<unsigned long long>(p.files_total), mib,
          p.seconds > 0 ? mib / p.seconds : 0.0,
          Eta(p.seconds, static_cast<double>(p.files_done), static_cast<double>(p.files_total))
              .c_str());
    }
    case Phase::kTrain:
    case Phase::kEval:
    case Phase::kCheckpointWrite:
    case Phase::kCheckpointRead:
      break;
  }
  std::string where;
  if (p.phase == Phase::kCheckpointWrite || p.phase == Phase::kCheckpointRead) {
    const char* verb = p.phase == Phase::kCheckpointWrite ? "writing" : "reading";
    where = p.checkpoints > 0
                ? Format("checkpoint: %s %lld/%lld", verb, static_cast<long long>(p.checkpoint),
                         static_cast<long long>(p.checkpoints))
                : Format("checkpoint: %s #%lld", verb, static_cast<long long>(p.checkpoint));
    if (p.epochs == 0) {  // the checkpoint-only workflow
      return where + Format(", %s elapsed", Duration(p.seconds).c_str());
    }
    where += Format(" (epoch %llu/%llu)", static_cast<unsigned long long>(p.epoch),
                    static_cast<unsigned long long>(p.epochs));
  } else {
    where =
        Format("epoch %llu/%llu, %sstep %llu/%llu", static_cast<unsigned long long>(p.epoch),
               static_cast<unsigned long long>(p.epochs), p.phase == Phase::kEval ? "eval " : "",
               static_cast<unsigned long long>(p.step), static_cast<unsigned long long>(p.steps));
  }
  const double total = static_cast<double>(p.epochs * p.steps_per_epoch);
  return where + Format(", %.1f samples/s, AU %.1f%% so far, ETA %s",
                        p.seconds > 0 ? static_cast<double>(p.samples) / p.seconds : 0.0,
                        p.au_percent,
                        Eta(p.seconds, static_cast<double>(p.train_steps_done), total).c_str());
}

// The terminal and the run's log file: rank 0 prints what the engine reports.
class ConsoleObserver : public run::RunObserver {
 public:
  // `trains`: whether this run trains (the summary line of generation is
  // printed even when quiet if it does not).
  ConsoleObserver(Console* console, const config::Config& config, bool trains, bool leader)
      : console_(console), config_(config), trains_(trains), leader_(leader) {}

  // The run folder, once the engine made it (empty before).
  const std::string& folder() const { return folder_; }

  void OnWarning(const std::string& message) override {
    if (leader_) std::cerr << "iomimic: warning: " << Printable(message) << std::endl;
  }
  void OnRunFolder(const std::string& folder) override {
    folder_ = folder;
    console_->OpenLog(folder + "/" + config_.output.log_file);
  }
  void OnGenerateStart(const run::GenerateStart& g) override {
    console_->Line("generating " + std::to_string(g.files) + " " + config_.dataset.format +
                   " files in " + g.train_folder + " (and valid/), " + std::to_string(g.threads) +
                   " thread(s) per rank ...");
  }
  void OnGenerateEnd(const run::GenerateTotals& g) override {
    const double mib = static_cast<double>(g.bytes_written) / 1048576.0;
    console_->Line(
        Format("generated %llu files (%llu already complete), %.1f MiB in %.2f s (%.1f MiB/s)",
               static_cast<unsigned long long>(g.files_written),
               static_cast<unsigned long long>(g.files_skipped), mib, g.seconds,
               g.seconds > 0 ? mib / g.seconds : 0.0),
        /*always=*/!trains_);
  }
  void OnTrainStart(const run::TrainStart& t) override {
    const int accelerators = t.ranks * t.accelerators_per_process;
    console_->Line(Format(
        "training: %llu epochs x %llu steps of batch %llu per accelerator, %d accelerator(s) "
        "(%d rank(s) x %d), %llu reader thread(s) each",
        static_cast<unsigned long long>(t.epochs),
        static_cast<unsigned long long>(t.steps_per_epoch),
        static_cast<unsigned long long>(t.batch_size), accelerators, t.ranks,
        t.accelerators_per_process, static_cast<unsigned long long>(t.read_threads)));
  }
  void OnEpochEnd(const metrics::EpochRecord& e, const output::EpochMetrics& m) override {
    console_->Line(Format("  epoch %llu: %.2f s, AU %.2f%%, %.1f samples/s (accelerator 0)%s",
                          static_cast<unsigned long long>(e.epoch),
                          metrics::Seconds(e.start, e.end), m.train.au_percent,
                          m.train.samples_per_second, e.eval ? ", evaluated" : ""));
  }
  void OnCheckpointOnlyStart(const run::CheckpointStart& k) override {
    console_->Line(Format(
        "checkpointing: %lld writes and %lld reads of %.3f GiB over %d rank(s) "
        "(TP %d x PP %d x DP %d, ZeRO %d), storage %s%s",
        static_cast<long long>(k.writes), static_cast<long long>(k.reads), k.size_gib, k.ranks,
        k.tensor, k.pipeline, k.data, k.zero_stage, k.storage.c_str(), k.fsync ? ", fsync" : ""));
  }
  void OnProgress(const run::Progress& progress) override {
    if (!leader_) return;
    const std::string text = ProgressText(progress);
    if (!text.empty()) console_->Progress(text);
  }
  void OnError(const Status& status) override {
    console_->EndProgress();
    console_->LogOnly("error: " + Printable(status.message()));
  }

 private:
  Console* console_;
  const config::Config& config_;
  bool trains_;
  bool leader_;
  std::string folder_;
};

// `iomimic run -m`: Hydra's multirun as sugar for a sweep (docs/analysis.md).
// Overrides with comma-separated values (outside brackets) are the factors;
// their combinations become a design file in the sweep folder, which
// RunSweep runs as `iomimic sweep` would. Before MPI: every run is a child.
int CmdMultirun(const CommonArgs& args) {
  std::string workload = kDefaultWorkload;
  std::string folder;
  std::vector<std::string> common;
  std::vector<std::pair<std::string, std::vector<std::string>>> factors;
  for (const std::string& p : args.positional) {
    const std::size_t eq = p.find('=');
    if (eq == std::string::npos) {
      if (p.rfind("~", 0) == 0) {
        common.push_back(p);
      } else {
        workload = p;  // a manifest path
      }
      continue;
    }
    std::string key = p.substr(0, eq);
    const std::string value = p.substr(eq + 1);
    if (key == "workload") {
      workload = value;
      continue;
    }
    if (key == "++hydra.sweep.dir" || key == "hydra.sweep.dir") {
      folder = value;
      continue;
    }
    const bool list = value.find(',') != std::string::npos && value.find('[') == std::string::npos;
    if (!list) {
      common.push_back(p);
      continue;
    }
    while (!key.empty() && key.front() == '+') key.erase(key.begin());
    if (key.rfind("workload.", 0) != 0) {
      return Usage("multirun: only workload keys can be swept, not '" + key + "'");
    }
    std::vector<std::string> values;
    for (std::size_t at = 0;;) {
      const std::size_t comma = value.find(',', at);
      values.push_back(value.substr(at, comma - at));
      if (comma == std::string::npos) break;
      at = comma + 1;
    }
    factors.emplace_back(key.substr(9), std::move(values));
  }
  if (factors.empty()) {
    return Usage(
        "multirun (-m) needs an override with comma-separated values, e.g. "
        "++workload.reader.read_threads=1,2,4");
  }
  if (folder.empty()) {
    std::time_t now = std::time(nullptr);
    std::tm tm{};
    localtime_r(&now, &tm);
    char stamp[64];
    std::strftime(stamp, sizeof(stamp), "multirun/%Y-%m-%d/%H-%M-%S", &tm);
    folder = stamp;
  }
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec) return Fail(Status::FromErrno(ec.value(), "cannot create " + folder));
  const std::string design = folder + "/design.csv";
  if (fs::exists(design, ec)) {
    return Fail(Status::AlreadyExists(design + " exists: resume it with 'iomimic sweep " + design +
                                      "' or choose ++hydra.sweep.dir"));
  }
  std::ofstream out(design);
  out << "# iomimic run -m: one row per combination; resume with iomimic sweep " << design
      << "\nmodel";
  for (const auto& [key, values] : factors) out << "," << key;
  out << ",run\n";
  std::vector<std::size_t> at(factors.size(), 0);
  for (;;) {
    out << workload;
    for (std::size_t f = 0; f < factors.size(); ++f) out << "," << factors[f].second[at[f]];
    out << ",N\n";
    std::size_t f = factors.size();
    while (f > 0 && ++at[f - 1] == factors[f - 1].second.size()) at[--f] = 0;
    if (f == 0) break;
  }
  out.close();
  if (!out) return Fail(Status::IOError("cannot write " + design));
  analysis::SweepOptions options;
  options.design = design;
  options.output = folder;
  options.iomimic = analysis::SelfPath();
  options.launcher = analysis::DefaultLauncher();
  options.overrides = common;
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

int CmdRunOrGenerate(const std::string& command, int argc, char** argv) {
  CommonArgs args;
  int code = 0;
  if (!ParseCommon(command, argc, argv, &args, &code)) return code;
  if (args.multirun) return CmdMultirun(args);
  Result<config::LoadedManifest> loaded = LoadFromArgs(args);
  if (!loaded.ok()) return Fail(loaded.status());
  const config::LoadedManifest manifest = std::move(loaded).value();

  const bool terminal = StdoutIsTerminal();
  cluster::Cluster& cluster = cluster::Cluster::Init(&argc, &argv);
  // After MPI_Init, so that these handlers are the ones in place.
  engine::InstallInterruptHandlers();
  const bool leader = cluster.rank() == 0;
  // Every rank read the same manifest: its warnings are printed once.
  if (leader) PrintManifestWarnings(manifest);
  Console console(leader, args.quiet, terminal && cluster.size() == 1);
  plugin::Registry registry;
  DiscoverPlugins(args, &registry);

  run::RunOptions options;
  options.generate_only = command == "generate";
  options.generate_threads = args.generate_threads;
  // Progress on rank 0 only, never when quiet: a live line refreshed four
  // times a second on a terminal, else a line every iomimic.progress_interval
  // seconds (0 = none at all).
  const double interval = manifest.config.iomimic.progress_interval;
  if (leader && !args.quiet && interval > 0) {
    options.progress_interval =
        terminal && cluster.size() == 1 ? std::min(interval, 0.25) : interval;
  }
  ConsoleObserver observer(&console, manifest.config,
                           !options.generate_only && manifest.config.workflow.train, leader);
  Result<output::RunResults> results =
      run::RunWorkload(manifest, registry, cluster, options, &observer);
  console.EndProgress();
  if (!results.ok()) {
    // A failure while a signal stops the run exits as the signal would.
    const int code = Fail(results.status());
    const int signal = engine::InterruptSignal();
    return signal != 0 ? 128 + signal : code;
  }
  if (leader && options.generate_only) {
    console.Line("results in " + observer.folder());
  } else if (leader && !observer.folder().empty()) {
    // DLIO's [METRIC] block (in dlio.log always, on the console unless -q),
    // then iomimic's summary.
    std::string metric = output::MetricBlock(*results, manifest.config);
    if (!metric.empty() && metric.back() == '\n') metric.pop_back();
    console.Line(metric);
    console.Line(output::ConsoleSummary(*results, manifest, observer.folder()), /*always=*/true);
  }
  // Stopped by a signal at a step boundary (engine/interrupt.h): the
  // statistics of the steps done are written, status.json says
  // "interrupted", and the exit status is 128 + the signal, as for a process
  // the signal killed.
  if (results->interrupted_by != 0) {
    // Rank 0 has written status.json: only now may ranks exit non-zero
    // (mpirun kills the rest of the job when one rank does).
    cluster.Barrier();
    const std::string line =
        std::string("iomimic: interrupted by ") + engine::SignalName(results->interrupted_by) +
        (observer.folder().empty() ? std::string()
                                   : "; statistics of the steps done are in " + observer.folder());
    if (leader) std::cerr << line << std::endl;
    console.LogOnly(line);
    return 128 + results->interrupted_by;
  }
  return 0;
}

int Main(int argc, char** argv) {
  std::string command = "run";
  int shift = 0;
  // Started as dlio_benchmark (the link installed beside iomimic), it takes
  // DLIO's command line as it is: mlpstorage and DLIO's scripts run
  // `mpirun ... dlio_benchmark workload=NAME ++hydra.run.dir=... --config-dir=...`.
  if (argc > 0 && fs::path(argv[0]).filename() == "dlio_benchmark") {
    cluster::ArgVector rest(argc, argv, 0);
    return CmdRunOrGenerate("run", rest.argc(), rest.argv());
  }
  if (argc > 1) {
    std::string first = argv[1];
    if (first == "--help" || first == "-h" || first == "help") {
      std::cout << kCommandHelp;
      return 0;
    }
    if (first == "--version" || first == "version") {
      std::cout << "iomimic " << IOMIMIC_VERSION_STRING << " (plugin ABI "
                << IOMIMIC_PLUGIN_ABI_VERSION << ")\n";
      return 0;
    }
    if (first == "compare" || first == "report" || first == "sweep" || first == "search" ||
        first == "run" || first == "generate" || first == "config" || first == "plugins" ||
        first == "conformance") {
      command = first;
      shift = 1;
    } else if (first.rfind("-", 0) != 0 && first.find('=') == std::string::npos &&
               first.rfind("~", 0) != 0 && !first.ends_with(".yaml") && !first.ends_with(".yml")) {
      return Usage("unknown command '" + first + "'");
    }
  }
  // Boost.Program_options (and MPI_Init) see argv without the command word,
  // null-terminated as both expect.
  cluster::ArgVector rest(argc, argv, shift);
  if (command == "plugins") return CmdPlugins(rest.argc(), rest.argv());
  if (command == "config") return CmdConfig(rest.argc(), rest.argv());
  if (command == "conformance") return CmdConformance(rest.argc(), rest.argv());
  if (command == "compare") return CmdCompare(rest.argc(), rest.argv());
  if (command == "report") return CmdReport(rest.argc(), rest.argv());
  if (command == "sweep") return CmdSweep(rest.argc(), rest.argv());
  if (command == "search") return CmdSearch(rest.argc(), rest.argv());
  return CmdRunOrGenerate(command, rest.argc(), rest.argv());
}

}  // namespace

int main(int argc, char** argv) {
  int code = Main(argc, argv);
  cluster::Cluster::Finalize();
  return code;
}
