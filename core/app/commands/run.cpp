// `iomimic run` and `iomimic generate` (and `dlio_benchmark`): load the
// manifest, start MPI, run the workload (core/src/run/run.h) and print what
// the engine reports on rank 0: the live progress line, the epochs, DLIO's
// [METRIC] block and iomimic's summary.

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <mutex>

#include "cli.h"
#include "cluster/cluster.h"
#include "output/writers.h"
#include "session/interrupt.h"

namespace iomimic::app {

namespace {

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
    if (g.files_rewritten > 0) {
      // Never silent: the files the run trains on are not those it found.
      console_->Line(
          Format("  %llu of them written again: made with other generation "
                 "parameters (%s)",
                 static_cast<unsigned long long>(g.files_rewritten), g.rewrite_reason.c_str()),
          /*always=*/true);
    }
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
  void OnEpochEnd(const metrics::EpochRecord& e, const metrics::EpochMetrics& m) override {
    if (e.partial) {  // a signal stopped it: not an epoch's figures
      console_->Line(
          Format("  epoch %llu: stopped after %llu step(s), %.2f s (partial: left out "
                 "of the means)",
                 static_cast<unsigned long long>(e.epoch),
                 static_cast<unsigned long long>(m.train.steps), metrics::Seconds(e.start, e.end)));
      return;
    }
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

// The engine's options: generation only or not, writer threads, and the
// progress interval. Progress on rank 0 only, never when quiet: a live line
// refreshed four times a second on a terminal, else a line every
// iomimic.progress_interval seconds (0 = none at all).
run::RunOptions MakeRunOptions(const std::string& command, const CommonArgs& args,
                               const config::LoadedManifest& manifest, bool leader,
                               bool live_line) {
  run::RunOptions options;
  options.generate_only = command == "generate";
  options.generate_threads = args.generate_threads;
  const double interval = manifest.config.iomimic.progress_interval;
  if (leader && !args.quiet && interval > 0) {
    options.progress_interval = live_line ? std::min(interval, 0.25) : interval;
  }
  return options;
}

// Rank 0's closing lines of a run that finished: the folder of a
// generation; else DLIO's [METRIC] block (in dlio.log always, on the console
// unless -q), then iomimic's summary.
void PrintClosing(Console* console, const output::RunResults& results,
                  const config::LoadedManifest& manifest, const std::string& folder,
                  bool generate_only) {
  if (generate_only) {
    console->Line("results in " + folder);
  } else if (!folder.empty()) {
    // DLIO's [METRIC] block describes training and checkpoints (train/
    // results.h); other workflows' figures are in the summary lines below.
    if (results.Find<train::TrainingResults>() != nullptr) {
      std::string metric = output::MetricBlock(results, manifest.config);
      if (!metric.empty() && metric.back() == '\n') metric.pop_back();
      console->Line(metric);
    }
    console->Line(output::ConsoleSummary(results, manifest, folder), /*always=*/true);
  }
}

// Stopped by a signal at a step boundary (session/interrupt.h): the
// statistics of the steps done are written, status.json says "interrupted",
// and the exit status is 128 + the signal, as for a process the signal
// killed.
int ExitInterrupted(cluster::Cluster& cluster, Console* console, int signal,
                    const std::string& folder) {
  // Rank 0 has written status.json: only now may ranks exit non-zero
  // (mpirun kills the rest of the job when one rank does).
  cluster.Barrier();
  const std::string line =
      std::string("iomimic: interrupted by ") + session::SignalName(signal) +
      (folder.empty() ? std::string() : "; statistics of the steps done are in " + folder);
  if (cluster.rank() == 0) std::cerr << line << std::endl;
  console->LogOnly(line);
  return 128 + signal;
}

// Runs (or only generates, `command` "generate") the manifest of `args` on
// every rank of the job.
int RunManifest(const std::string& command, const CommonArgs& args,
                const plugin::Registry& registry, const config::LoadedManifest& manifest, int argc,
                char** argv, const StatusRewrite& rewrite) {
  const bool terminal = StdoutIsTerminal();
  cluster::Cluster& cluster = cluster::Cluster::Init(&argc, &argv);
  // After MPI_Init, so that these handlers are the ones in place.
  session::InstallInterruptHandlers();
  const bool leader = cluster.rank() == 0;
  // Every rank read the same manifest: its warnings are printed once.
  if (leader) PrintManifestWarnings(manifest);
  const bool live_line = terminal && cluster.size() == 1;
  Console console(leader, args.quiet, live_line);

  const run::RunOptions options = MakeRunOptions(command, args, manifest, leader, live_line);
  ConsoleObserver observer(&console, manifest.config,
                           !options.generate_only && manifest.config.workflow.train, leader);
  Result<output::RunResults> results =
      run::RunWorkload(manifest, registry, cluster, options, &observer);
  console.EndProgress();
  if (!results.ok()) {
    // A failure while a signal stops the run exits as the signal would.
    const int code = Fail(rewrite ? rewrite(results.status()) : results.status());
    const int signal = session::InterruptSignal();
    return signal != 0 ? 128 + signal : code;
  }
  if (leader) {
    PrintClosing(&console, *results, manifest, observer.folder(), options.generate_only);
  }
  if (results->interrupted_by != 0) {
    return ExitInterrupted(cluster, &console, results->interrupted_by, observer.folder());
  }
  return 0;
}

int RunOrGenerate(const std::string& command, int argc, char** argv,
                  const StatusRewrite& rewrite = nullptr) {
  CommonArgs args;
  int code = 0;
  if (!ParseCommon(command, argc, argv, &args, &code)) return code;
  if (args.multirun) return CmdMultirun(args);
  // The plugins first: the manifest's URL schemes and format keys are theirs.
  plugin::Registry registry;
  DiscoverPlugins(args, &registry);
  Result<config::LoadedManifest> loaded = LoadFromArgs(args, registry);
  if (!loaded.ok()) return Fail(rewrite ? rewrite(loaded.status()) : loaded.status());
  return RunManifest(command, args, registry, std::move(loaded).value(), argc, argv, rewrite);
}

}  // namespace

int CmdRun(int argc, char** argv) { return RunOrGenerate("run", argc, argv); }

int CmdRunRewritingErrors(int argc, char** argv, const StatusRewrite& rewrite) {
  return RunOrGenerate("run", argc, argv, rewrite);
}

int CmdGenerate(int argc, char** argv) { return RunOrGenerate("generate", argc, argv); }

}  // namespace iomimic::app
