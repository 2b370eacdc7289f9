// The iomimic command line.
//
//   iomimic run      [MANIFEST | workload=NAME] [OVERRIDES...]   generate (if asked) and train
//   iomimic generate [MANIFEST | workload=NAME] [OVERRIDES...]   only generate the dataset
//   iomimic config   [MANIFEST | workload=NAME] [OVERRIDES...]   print the resolved manifest
//   iomimic plugins                                              list plugins
//
// Errors are one line on stderr ("iomimic: error: ...") and a non-zero exit:
// 1 for a failed run or bad input, 2 for a command-line usage error.

#include <boost/program_options.hpp>
#include <cstdarg>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "cluster/arg_vector.h"
#include "cluster/cluster.h"
#include "config/config.h"
#include "engine/generator.h"
#include "engine/interrupt.h"
#include "engine/session.h"
#include "engine/trainer.h"
#include "iomimic/version.h"
#include "metrics/records.h"
#include "output/results.h"
#include "plan/checkpoint_plan.h"
#include "plan/plan.h"
#include "plugin/registry.h"

namespace po = boost::program_options;
namespace fs = std::filesystem;
using namespace iomimic;

namespace {

constexpr const char* kDefaultWorkload = "quickstart";

// Progress lines of rank 0: to stdout (unless quiet) and to the run's log
// file (output.log_file in the run folder) once that exists.
class Console {
 public:
  Console(bool enabled, bool quiet) : enabled_(enabled), quiet_(quiet) {}
  void OpenLog(const std::string& path) {
    if (enabled_) log_.open(path, std::ios::out | std::ios::app);
  }
  void Line(const std::string& text, bool always = false) {
    if (!enabled_) return;
    if (!quiet_ || always) std::cout << text << std::endl;
    if (log_.is_open()) log_ << text << std::endl;
  }
  void LogOnly(const std::string& text) {
    if (log_.is_open()) log_ << text << std::endl;
  }

 private:
  bool enabled_;
  bool quiet_;
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
  Result<config::LoadedManifest> loaded = config::LoadManifest(source);
  if (loaded.ok()) {
    for (const config::Diagnostic& d : loaded->warnings) {
      std::cerr << "iomimic: " << d.ToString() << std::endl;
    }
  }
  return loaded;
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
        "world size for --plan (default: the smallest the parallelism allows)");
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
  if (registry.plugins().empty()) {
    std::cerr << "iomimic: warning: no plugins found in:";
    for (const std::string& d : registry.search_path()) std::cerr << " " << d;
    std::cerr << std::endl;
  }
  return 0;
}

int CmdConfig(int argc, char** argv) {
  CommonArgs args;
  int code = 0;
  if (!ParseCommon("config", argc, argv, &args, &code)) return code;
  Result<config::LoadedManifest> manifest = LoadFromArgs(args);
  if (!manifest.ok()) return Fail(manifest.status());
  if (!args.plan) {
    std::cout << config::ToYaml(manifest->config, false);
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

int CmdRunOrGenerate(const std::string& command, int argc, char** argv) {
  CommonArgs args;
  int code = 0;
  if (!ParseCommon(command, argc, argv, &args, &code)) return code;
  Result<config::LoadedManifest> loaded = LoadFromArgs(args);
  if (!loaded.ok()) return Fail(loaded.status());
  config::LoadedManifest manifest = std::move(loaded).value();
  if (command == "generate") {
    manifest.config.workflow.generate_data = true;
    manifest.config.workflow.train = false;
    manifest.config.workflow.evaluation = false;
    manifest.config.workflow.checkpoint = false;
  }
  const config::Config& c = manifest.config;

  cluster::Cluster& cluster = cluster::Cluster::Init(&argc, &argv);
  // After MPI_Init, so that these handlers are the ones in place.
  engine::InstallInterruptHandlers();
  const bool leader = cluster.rank() == 0;
  Console console(leader, args.quiet);
  plugin::Registry registry;
  DiscoverPlugins(args, &registry);

  Result<std::unique_ptr<engine::Session>> session =
      engine::Session::Open(manifest, registry, cluster);
  Status status = cluster.AgreeOnStatus(session.status());
  if (!status.ok()) return Fail(status);
  engine::Session& s = **session;

  std::unique_ptr<engine::Checkpointer> checkpointer;
  if (c.workflow.checkpoint) {
    Result<std::unique_ptr<engine::Checkpointer>> made = engine::Checkpointer::Create(s, registry);
    if (!made.ok()) return Fail(made.status());
    checkpointer = std::move(made).value();
  }

  output::RunOutcome outcome;
  outcome.start = metrics::Stamp::Now();
  const bool training = c.workflow.train;
  const bool checkpoint_only = !training && checkpointer != nullptr;
  const bool with_results = training || checkpoint_only;
  outcome.checkpointer = checkpointer.get();
  std::string folder;
  if (with_results) {
    Result<std::string> prepared = output::PrepareOutputFolder(c, cluster);
    if (!prepared.ok()) return Fail(prepared.status());
    folder = *prepared;
    status = cluster.AgreeOnStatus(output::WriteConfigFiles(folder, manifest, cluster));
    if (!status.ok()) return Fail(status);
    console.OpenLog(folder + "/" + c.output.log_file);
  }
  auto finish_failed = [&](const Status& st) {
    // A failure while a signal stops the run (generation says so itself).
    const int signal = engine::InterruptSignal();
    if (leader && !folder.empty()) {
      (void)output::WriteStatus(folder, st, signal != 0 ? engine::SignalName(signal) : nullptr);
    }
    console.LogOnly("error: " + Printable(st.message()));
    const int code = Fail(st);
    return signal != 0 ? 128 + signal : code;
  };

  if (c.workflow.generate_data) {
    unsigned threads = args.generate_threads > 0
                           ? args.generate_threads
                           : std::max(1u, std::thread::hardware_concurrency());
    console.Line("generating " + std::to_string(s.layout().num_generated_files()) + " " +
                 c.dataset.format + " files in " + s.layout().SplitDirectory(plan::Split::kTrain) +
                 " (and valid/) ...");
    Result<engine::GenerateReport> report = engine::Generate(s, threads);
    if (!report.ok()) return finish_failed(report.status());
    outcome.generate = *report;
    const std::uint64_t written = cluster.SumU64(report->files_written);
    const std::uint64_t skipped = cluster.SumU64(report->files_skipped);
    const std::uint64_t bytes = cluster.SumU64(report->bytes_written);
    const double seconds = cluster.MaxDouble(report->seconds);
    console.Line(
        Format("generated %llu files (%llu already complete), %.1f MiB in %.2f s (%.1f MiB/s)",
               static_cast<unsigned long long>(written), static_cast<unsigned long long>(skipped),
               bytes / 1048576.0, seconds, seconds > 0 ? bytes / 1048576.0 / seconds : 0.0),
        /*always=*/!training);
  }

  if (training) {
    status = engine::CheckDataset(s);
    if (!status.ok()) return finish_failed(status);
    engine::TrainOptions options;
    options.accelerators_per_process = c.iomimic.accelerators_per_process;
    if (c.iomimic.sample_log) {
      options.sample_log_path = [&folder](int id) {
        return folder + "/" + std::to_string(id) + "_samples.csv";
      };
    }
    if (leader) {
      const int per_process = static_cast<int>(c.iomimic.accelerators_per_process);
      const int accelerators = cluster.size() * per_process;
      console.Line(Format(
          "training: %llu epochs x %llu steps of batch %llu per accelerator, %d accelerator(s) "
          "(%d rank(s) x %d), %llu reader thread(s) each",
          static_cast<unsigned long long>(c.train.epochs),
          static_cast<unsigned long long>(plan::TrainStepsPerEpoch(c, accelerators)),
          static_cast<unsigned long long>(c.reader.batch_size), accelerators, cluster.size(),
          per_process, static_cast<unsigned long long>(c.reader.read_threads)));
      options.on_epoch = [&](const metrics::EpochRecord& e) {
        std::vector<metrics::PhaseMetrics> blocks;
        for (const auto& b : e.blocks) {
          blocks.push_back(metrics::TrainBlockMetrics(
              b, c.output.exclude_start_steps, c.output.exclude_end_steps, c.reader.batch_size));
        }
        metrics::PhaseMetrics m = metrics::CombineBlocks(blocks);
        console.Line(Format("  epoch %llu: %.2f s, AU %.2f%%, %.1f samples/s (accelerator 0)%s",
                            static_cast<unsigned long long>(e.epoch),
                            metrics::Seconds(e.start, e.end), m.au_percent, m.samples_per_second,
                            e.eval ? ", evaluated" : ""));
      };
    }
    options.checkpointer = checkpointer.get();
    Result<engine::TrainResult> trained = engine::Train(s, options);
    if (!trained.ok()) return finish_failed(trained.status());
    outcome.train = std::move(trained).value();
  } else if (checkpoint_only) {
    const plan::CheckpointPlan& cp = checkpointer->plan();
    console.Line(Format(
        "checkpointing: %lld writes and %lld reads of %.3f GiB over %d rank(s) "
        "(TP %d x PP %d x DP %d, ZeRO %d), storage %s%s",
        static_cast<long long>(std::max<std::int64_t>(0, c.checkpoint.num_checkpoints_write)),
        static_cast<long long>(std::max<std::int64_t>(0, c.checkpoint.num_checkpoints_read)),
        cp.total_bytes() / 1073741824.0, cluster.size(), cp.tensor, cp.pipeline, cp.data,
        cp.zero_stage, checkpointer->storage_name().c_str(), c.checkpoint.fsync ? ", fsync" : ""));
    Result<engine::CheckpointOnlyResult> done = engine::RunCheckpointOnly(s, *checkpointer);
    if (!done.ok()) return finish_failed(done.status());
    outcome.checkpoint_only = std::move(done).value();
  }
  outcome.end = metrics::Stamp::Now();

  // Stopped by a signal at a step boundary (engine/interrupt.h): the
  // statistics of the steps done are written all the same, status.json says
  // "interrupted", and the exit status is 128 + the signal, as for a process
  // the signal killed.
  const int interrupted = outcome.train             ? outcome.train->interrupted_by
                          : outcome.checkpoint_only ? outcome.checkpoint_only->interrupted_by
                                                    : 0;
  if (with_results) {
    std::string human;
    status = output::WriteResults(folder, s, outcome, &human);
    status = cluster.AgreeOnStatus(status);
    if (!status.ok()) return finish_failed(status);
    if (leader) {
      status = output::WriteStatus(folder, Status::OK(),
                                   interrupted != 0 ? engine::SignalName(interrupted) : nullptr);
      if (!status.ok()) return Fail(status);
      if (!human.empty() && human.back() == '\n') human.pop_back();
      console.Line(human, /*always=*/true);
    }
  }
  if (interrupted != 0) {
    // Rank 0 has written status.json: only now may ranks exit non-zero
    // (mpirun kills the rest of the job when one rank does).
    cluster.Barrier();
    const std::string line =
        std::string("iomimic: interrupted by ") + engine::SignalName(interrupted) +
        (folder.empty() ? std::string() : "; statistics of the steps done are in " + folder);
    if (leader) std::cerr << line << std::endl;
    console.LogOnly(line);
    return 128 + interrupted;
  }
  return 0;
}

int Main(int argc, char** argv) {
  std::string command = "run";
  int shift = 0;
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
    if (first == "run" || first == "generate" || first == "config" || first == "plugins") {
      command = first;
      shift = 1;
    } else if (first.rfind("-", 0) != 0 && first.find('=') == std::string::npos &&
               first.rfind("~", 0) != 0 && !first.ends_with(".yaml") && !first.ends_with(".yml")) {
      return Usage("unknown command '" + first + "'");
    }
  }
  // Boost.Program_options sees argv without the command word; MPI_Init_thread
  // sees the same vector, which must end in a null pointer (arg_vector.h).
  cluster::ArgVector rest(argc, argv, shift);
  if (command == "plugins") return CmdPlugins(rest.argc(), rest.argv());
  if (command == "config") return CmdConfig(rest.argc(), rest.argv());
  return CmdRunOrGenerate(command, rest.argc(), rest.argv());
}

}  // namespace

int main(int argc, char** argv) {
  int code = Main(argc, argv);
  cluster::Cluster::Finalize();
  return code;
}
