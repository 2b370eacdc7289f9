// The iomimic command line: a table of commands (kCommands below, one file
// each in core/app/commands/) and the options run, generate and config share.
//
//   iomimic run      [MANIFEST | workload=NAME] [OVERRIDES...]   generate (if asked) and train
//   iomimic generate [MANIFEST | workload=NAME] [OVERRIDES...]   only generate the dataset
//   iomimic config   [MANIFEST | workload=NAME] [OVERRIDES...]   print the resolved manifest
//   iomimic plugins                                              list plugins
//   iomimic conformance [--plugin-dir DIR] [--plugin NAME]       run the conformance suites
//   iomimic report | compare | sweep | search ...                 analysis (docs/analysis.md)
//   iomimic kvcache-replay TRACE.csv [options]                   replay a KV-cache reference trace
//   iomimic replay TRACE [options]                               replay an application's I/O trace
//   iomimic derive TRACE -o workload.yaml                        a workload from an application's
//   trace iomimic fidelity ORIGINAL_TRACE RUN_TRACE...                 traces side by side, per
//   epoch
//
// Errors are one line on stderr ("iomimic: error: ...") and a non-zero exit:
// 1 for a failed run or bad input, 2 for a command-line usage error.

#include <algorithm>
#include <boost/program_options.hpp>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "cli.h"
#include "cluster/arg_vector.h"
#include "cluster/cluster.h"
#include "iomimic/version.h"

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace iomimic::app {

namespace {

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

// The options of `command` (run, generate or config), bound to `args`.
po::options_description CommonOptions(const std::string& command, CommonArgs* args) {
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
  return opts;
}

}  // namespace

Result<config::LoadedManifest> LoadFromArgs(const CommonArgs& args,
                                            const plugin::Registry& registry) {
  config::ManifestSource source;
  source.plugins = registry.vocabulary();
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

void PrintManifestWarnings(const config::LoadedManifest& manifest) {
  for (const config::Diagnostic& d : manifest.warnings) {
    std::cerr << "iomimic: " << Printable(d.ToString()) << std::endl;
  }
}

void DiscoverPlugins(const CommonArgs& args, plugin::Registry* registry) {
  registry->Discover(plugin::Registry::SearchPath(args.plugin_dirs, {}));
}

void PassConfigDir(const std::string& config_dir, std::vector<std::string>* run_args) {
  if (!config_dir.empty()) run_args->insert(run_args->begin(), "--config-dir=" + config_dir);
}

bool ParseCommon(const std::string& command, int argc, char** argv, CommonArgs* args,
                 int* exit_code) {
  const po::options_description opts = CommonOptions(command, args);
  po::variables_map vm;
  if (!ParseArgs(argc, argv, opts, po::command_line_style::default_style, &args->positional, &vm,
                 exit_code)) {
    return false;
  }
  if (vm.count("help")) {
    std::cout << "usage: iomimic " << command
              << " [options] [MANIFEST.yaml | workload=NAME] [OVERRIDES...]\n\n"
              << opts << std::endl;
    *exit_code = 0;
    return false;
  }
  if (args->accelerators > 0) {
    // An override like any other: validated with the manifest, last one wins.
    args->positional.push_back("++workload.iomimic.accelerators_per_process=" +
                               std::to_string(args->accelerators));
  }
  return true;
}

namespace {

// One command of the table: its word, its line in 'iomimic --help' (and a
// second, indented line when it says more) and its handler (core/app/cli.h).
struct Command {
  const char* name;
  const char* help;
  const char* more;  // or null
  int (*handler)(int argc, char** argv);
};

constexpr Command kCommands[] = {
    {"run", "generate the dataset if the manifest asks, then replay training",
     "(no arguments: the shipped 'quickstart' workload)", CmdRun},
    {"generate", "only generate the dataset", nullptr, CmdGenerate},
    {"config", "print the resolved manifest (--plan: steps, files and sizes)", nullptr, CmdConfig},
    {"plugins", "list the storage and format plugins found", nullptr, CmdPlugins},
    {"conformance", "run the storage and format conformance suites against plugins",
     "(--plugin-dir DIR, --plugin NAME; see docs/plugins.md)", CmdConformance},
    {"report", "RUN_DIR... | SWEEP_DIR [-o out.html]: one self-contained HTML page", nullptr,
     CmdReport},
    {"compare", "RUN_A RUN_B... [--html out.html]: figures side by side, ratios to A,",
     "differing config", CmdCompare},
    {"sweep", "DESIGN.csv: run a factorial design (resumable), results.csv", nullptr, CmdSweep},
    {"search", "WORKLOAD --min-au 90: the most accelerators that keep AU", nullptr, CmdSearch},
    {"kvcache-replay", "TRACE.csv: replay a KV-cache reference I/O trace on a storage plugin",
     "(--storage NAME, --timing recorded|fast, --threads N; docs/kvcache-reference.md)",
     CmdKvcacheReplay},
    {"replay", "TRACE: replay an application's recorded I/O (strace, DFTracer) on a storage plugin",
     "(--storage NAME, --map FROM=TO, --root DIR, --timing recorded|fast, --copies N; "
     "docs/replay.md)",
     CmdReplay},
    {"derive", "TRACE -o workload.yaml: infer a training workload from an application's trace",
     "(--force, --data DIR; docs/derive.md)", CmdDerive},
    {"fidelity", "ORIGINAL_TRACE RUN_TRACE...: the traces' I/O side by side, per epoch",
     "(--json FILE, --check; docs/derive.md)", CmdFidelity},
};

// The command named `name`, or null.
const Command* FindCommand(const std::string& name) {
  for (const Command& c : kCommands) {
    if (name == c.name) return &c;
  }
  return nullptr;
}

// 'iomimic --help': the usage line, the table (help in a column from the
// 14th character, at least two spaces after the name) and the overrides.
void PrintCommandHelp() {
  constexpr std::size_t kColumn = 11;
  std::cout << "usage: iomimic <command> [options] [MANIFEST.yaml | workload=NAME] "
               "[OVERRIDES...]\n\ncommands:\n";
  for (const Command& c : kCommands) {
    const std::size_t length = std::char_traits<char>::length(c.name);
    std::cout << "  " << c.name << std::string(length + 2 < kColumn ? kColumn - length : 2, ' ')
              << c.help << "\n";
    if (c.more != nullptr) std::cout << std::string(2 + kColumn, ' ') << c.more << "\n";
  }
  std::cout << "\n"
               "overrides (Hydra syntax, as DLIO): ++workload.a.b=v (set), workload.a.b=v "
               "(change),\n"
               "  +workload.a.b=v (add), ~workload.a.b (delete), ++hydra.run.dir=DIR\n"
               "\n"
               "'iomimic <command> --help' lists the options of a command.\n";
}

// Whether `first` (not a command word) starts run's arguments: an option, an
// override or a manifest file.
bool StartsRunArguments(const std::string& first) {
  return first.rfind("-", 0) == 0 || first.find('=') != std::string::npos ||
         first.rfind("~", 0) == 0 || first.ends_with(".yaml") || first.ends_with(".yml");
}

int Main(int argc, char** argv) {
  // Started as dlio_benchmark (the link installed beside iomimic), it takes
  // DLIO's command line as it is: mlpstorage and DLIO's scripts run
  // `mpirun ... dlio_benchmark workload=NAME ++hydra.run.dir=... --config-dir=...`.
  if (argc > 0 && fs::path(argv[0]).filename() == "dlio_benchmark") {
    cluster::ArgVector rest(argc, argv, 0);
    return CmdRun(rest.argc(), rest.argv());
  }
  // Started as kv-cache.py (the script installed beside iomimic execs it under
  // that name), it takes the KV-cache reference's command line, as mlpstorage
  // builds it: `python3 kv-cache.py --model ... --num-users ... --output F`.
  if (argc > 0 && fs::path(argv[0]).filename() == "kv-cache.py") {
    return CmdKvCacheReference(argc, argv);
  }
  const Command* command = FindCommand("run");
  int shift = 0;
  if (argc > 1) {
    const std::string first = argv[1];
    if (first == "--help" || first == "-h" || first == "help") {
      PrintCommandHelp();
      return 0;
    }
    if (first == "--version" || first == "version") {
      std::cout << "iomimic " << IOMIMIC_VERSION_STRING << " (plugin ABI "
                << IOMIMIC_PLUGIN_ABI_VERSION << ")\n";
      return 0;
    }
    if (const Command* named = FindCommand(first); named != nullptr) {
      command = named;
      shift = 1;
    } else if (!StartsRunArguments(first)) {
      return Usage("unknown command '" + first + "'");
    }
  }
  // Boost.Program_options (and MPI_Init) see argv without the command word,
  // null-terminated as both expect.
  cluster::ArgVector rest(argc, argv, shift);
  return command->handler(rest.argc(), rest.argv());
}

}  // namespace
}  // namespace iomimic::app

int main(int argc, char** argv) {
  int code = iomimic::app::Main(argc, argv);
  iomimic::cluster::Cluster::Finalize();
  return code;
}
