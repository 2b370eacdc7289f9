// Internal to the iomimic command line (core/app): what the dispatcher
// (core/app/main.cpp, the table of commands) and the commands' own files
// (core/app/commands/*.cpp) share. Not installed, not seen by plugins.
//
// Every command handler takes argv without the command word (argv[0] is the
// program's name, null-terminated), as Boost.Program_options and MPI_Init
// expect, and returns the process's exit status: 0, 1 for a failed run or bad
// input, 2 for a command-line usage error (Usage), 128 + N for a run stopped
// by signal N.

#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "config/config.h"
#include "iomimic/status.h"
#include "plugin/registry.h"
#include "run/run.h"

namespace boost::program_options {
class options_description;
class variables_map;
}  // namespace boost::program_options

namespace iomimic::app {

// The workload `iomimic run` (and search, run -m) takes when given none.
inline constexpr const char* kDefaultWorkload = "quickstart";

// --- The commands (core/app/commands/<name>.cpp) --------------------------

int CmdRun(int argc, char** argv);               // run.cpp
int CmdGenerate(int argc, char** argv);          // run.cpp
int CmdConfig(int argc, char** argv);            // config.cpp
int CmdPlugins(int argc, char** argv);           // plugins.cpp
int CmdConformance(int argc, char** argv);       // conformance.cpp
int CmdReport(int argc, char** argv);            // report.cpp
int CmdCompare(int argc, char** argv);           // compare.cpp
int CmdSweep(int argc, char** argv);             // sweep.cpp
int CmdSearch(int argc, char** argv);            // search.cpp
int CmdKvcacheReplay(int argc, char** argv);     // kvcache_replay.cpp
int CmdReplay(int argc, char** argv);            // replay.cpp: an application's I/O trace
int CmdKvCacheReference(int argc, char** argv);  // kvcache_reference.cpp: as kv-cache.py
int CmdDerive(int argc, char** argv);            // derive.cpp: a workload from a trace
int CmdFidelity(int argc, char** argv);          // derive.cpp: traces side by side

// An error of a run in another command's words (the kv-cache.py drop-in's).
using StatusRewrite = std::function<Status(const Status&)>;
// `iomimic run` whose errors (the manifest's and the run's) pass through
// `rewrite` before the one error line is printed.
int CmdRunRewritingErrors(int argc, char** argv, const StatusRewrite& rewrite);

// --- Options of run, generate and config (core/app/main.cpp) --------------

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

// Parses the options shared by run/generate/config. Returns false and sets
// `exit_code` when the command should stop (help or usage error).
bool ParseCommon(const std::string& command, int argc, char** argv, CommonArgs* args,
                 int* exit_code);

// The manifest named by the positional arguments (a path, workload=NAME, or
// the default workload) with their overrides applied; its URL schemes and
// the dataset keys of format plugins are those of `registry`'s plugins
// (plugin::Registry::vocabulary; docs/plugins.md, "URL schemes").
Result<config::LoadedManifest> LoadFromArgs(const CommonArgs& args,
                                            const plugin::Registry& registry);

// The manifest's warnings (unknown keys, ...), one line each on stderr.
// Every rank finds the same ones, so under MPI only rank 0 calls this.
void PrintManifestWarnings(const config::LoadedManifest& manifest);

// Finds the plugins: the --plugin-dir folders first, then the default path.
void DiscoverPlugins(const CommonArgs& args, plugin::Registry* registry);

// The runs an experiment starts look up workload names where this command
// would: `--config-dir=DIR` first among their arguments, when given.
void PassConfigDir(const std::string& config_dir, std::vector<std::string>* run_args);

// `iomimic run -m` (commands/multirun.cpp): Hydra's multirun as a sweep.
int CmdMultirun(const CommonArgs& args);

// --- Options of sweep and search (commands/experiment.cpp) ----------------

// --iomimic, --launcher, --output, --config-dir; search adds --min-au, --by,
// --max and the KV-cache QoS target (--qos-class, --percentile, --max-ms). The positional arguments
// are the design file or the workload, and overrides added to every run.
struct ExperimentArgs {
  std::vector<std::string> positional;
  std::string output;
  std::string launcher;
  std::string iomimic;
  std::string config_dir;  // where the runs look up workload names
  double min_au = 90;
  std::string by;  // "" = users for a KV-cache workload, else accelerators
  std::uint64_t max = 4096;
  std::string qos_class = "all";
  std::string percentile = "p95";
  double max_ms = 0;
};

// Parses the options of `command` ("sweep" or "search"). Returns false and
// sets `exit_code` when the command should stop (help or usage error).
bool ParseExperiment(const std::string& command, int argc, char** argv, ExperimentArgs* args,
                     int* exit_code);

// The launcher words of --launcher, or analysis::DefaultLauncher().
std::vector<std::string> LauncherOf(const ExperimentArgs& args);

// --- Parsing (common.cpp) -------------------------------------------------

// Parses argv (without the command word) against `opts`, in Boost's
// command-line `style`; the other arguments go to *positional, in order.
// Returns false and sets `exit_code` on a usage error.
bool ParseArgs(int argc, char** argv, const boost::program_options::options_description& opts,
               int style, std::vector<std::string>* positional,
               boost::program_options::variables_map* vm, int* exit_code);

// --- Options of report and compare (common.cpp) ---------------------------

// An option of report or compare that takes a value.
struct ValueOption {
  const char* name;    // "--html", "-o"
  std::string* value;  // where its value goes
};

// Parses `iomimic <command> FOLDER... [--opt VALUE | --opt=VALUE]...`: the
// folders in order, each option's value. --help (-h) prints `help`. Returns
// false and sets `exit_code` when the command should stop (help: 0, a usage
// error: 2).
bool ParseFolderArgs(const std::string& command, int argc, char** argv, const char* help,
                     const std::vector<ValueOption>& options, std::vector<std::string>* folders,
                     int* exit_code);

// --- Messages and files (common.cpp) ---------------------------------------

// printf into a std::string (at most 1023 characters).
std::string Format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// One line, printable: a plugin may quote raw bytes from a damaged file.
std::string Printable(const std::string& text);

// Prints the one error line ("iomimic: error: ...") and returns 1. In a
// multi-rank run whose ranks agreed on the failure, rank 0 alone prints it.
int Fail(const Status& status);

// Prints a usage error (pointing at 'iomimic --help') and returns 2.
int Usage(const std::string& message);

// The tail of a command that becomes `iomimic run` with overrides (replay,
// kvcache-replay): appends the storage plugin, its --storage-option
// KEY=VALUE pairs and the output folder ("" = none) to `run`;
// InvalidArgument naming an option that is not KEY=VALUE.
Status AppendStorageAndOutput(const std::string& storage,
                              const std::vector<std::string>& storage_options,
                              const std::string& output, std::vector<std::string>* run);

// Runs `iomimic run` with the arguments `run` (its first one the program's name).
int RunWithArgs(std::vector<std::string> run);

// Writes `html` to `path` (through a temporary file and a rename, so that a
// reader never sees half a page).
Status WriteHtml(const std::string& path, const std::string& html);

// The progress line (run/run.h, Progress; commands/progress.cpp); empty when
// there is nothing to say (between phases).
std::string ProgressText(const run::Progress& p);

}  // namespace iomimic::app
