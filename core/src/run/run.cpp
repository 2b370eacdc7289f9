#include "run/run.h"

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "apptrace/workflow.h"
#include "kvcache/chunked.h"
#include "kvcache/replay.h"
#include "kvcache/results.h"
#include "metadata/stat_files.h"
#include "metrics/host_telemetry.h"
#include "modelload/model_load.h"
#include "output/results.h"
#include "plan/plan.h"
#include "session/cache_honesty.h"
#include "session/interrupt.h"
#include "session/session.h"
#include "train/checkpointer.h"
#include "train/generator.h"
#include "train/results.h"
#include "train/trainer.h"

namespace iomimic::run {
namespace {

// Forwards to an observer that may be null.
class Notify {
 public:
  explicit Notify(RunObserver* observer) : observer_(observer) {}
  RunObserver* operator->() { return observer_ != nullptr ? observer_ : &none_; }

 private:
  RunObserver* observer_;
  RunObserver none_;
};

// A thread of the run's own (the progress timer, the stuck watch): the mutex
// and condition variable it waits on and the flag that ends it.
class RunThread {
 public:
  RunThread() = default;
  RunThread(const RunThread&) = delete;
  RunThread& operator=(const RunThread&) = delete;

  // Ends the thread; idempotent. After it returns the thread does nothing.
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 protected:
  ~RunThread() = default;  // a derived class calls Stop() in its destructor

  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
};

// The progress timer: a plain thread that wakes every `interval` on a
// condition variable (docs/observability.md, "Timers and signals", says why
// not Boost.Asio), reads the session's progress board (session/progress.h)
// and hands a snapshot to RunObserver::OnProgress. The reference points of
// rates (phase start, bytes, samples, compute) are set by the run's thread
// under the mutex.
class ProgressTimer : public RunThread {
 public:
  using Clock = std::chrono::steady_clock;

  ProgressTimer(session::Session& session, RunObserver* observer, double interval_seconds)
      : session_(session), observer_(observer) {
    if (observer_ == nullptr || !(interval_seconds > 0)) return;
    interval_ = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(std::max(interval_seconds, 0.01)));
    MarkPhaseStart(0, 0);
    thread_ = std::thread([this] { Loop(); });
  }
  ~ProgressTimer() { Stop(); }

  // A phase (generation, training, the checkpoint-only workflow) starts now;
  // `epochs` and `steps_per_epoch` describe training (0 otherwise).
  void MarkPhaseStart(std::uint64_t epochs, std::uint64_t steps_per_epoch) {
    std::lock_guard<std::mutex> lock(mutex_);
    const Clock::time_point now = Clock::now();
    origin_.start = now;
    origin_.bytes_written = session_.storage().Snapshot().bytes_written;
    origin_.samples = session_.sample_latency().count();
    origin_.busy = session_.compute_busy().BusyUntil(now);
    origin_.epochs = epochs;
    origin_.steps_per_epoch = steps_per_epoch;
  }

 private:
  struct Origin {
    Clock::time_point start;
    std::uint64_t bytes_written = 0;
    std::uint64_t samples = 0;
    double busy = 0;
    std::uint64_t epochs = 0;
    std::uint64_t steps_per_epoch = 0;
  };

  void Loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      if (wake_.wait_for(lock, interval_, [this] { return stop_; })) return;
      const Origin origin = origin_;
      lock.unlock();
      observer_->OnProgress(Take(origin));
      lock.lock();
    }
  }

  Progress Take(const Origin& origin) {
    const session::ProgressBoard& b = session_.progress();
    const Clock::time_point now = Clock::now();
    Progress p;
    p.phase = static_cast<Progress::Phase>(static_cast<int>(b.Phase()));
    p.seconds = std::chrono::duration<double>(now - origin.start).count();
    p.rank = session_.cluster().rank();
    p.ranks = session_.cluster().size();
    p.files_done = b.files_done.load(std::memory_order_relaxed);
    p.files_total = b.files_total.load(std::memory_order_relaxed);
    const std::uint64_t written = session_.storage().Snapshot().bytes_written;
    p.bytes_written = written > origin.bytes_written ? written - origin.bytes_written : 0;
    p.epoch = b.epoch.load(std::memory_order_relaxed);
    p.epochs = origin.epochs;
    p.step = b.step.load(std::memory_order_relaxed);
    p.steps = b.steps.load(std::memory_order_relaxed);
    if (p.phase == Progress::Phase::kTrain) {
      last_train_steps_done_ = p.epoch > 0 ? (p.epoch - 1) * origin.steps_per_epoch + p.step : 0;
    }
    p.steps_per_epoch = origin.steps_per_epoch;
    p.train_steps_done = last_train_steps_done_;
    const std::uint64_t samples = session_.sample_latency().count();
    p.samples = samples > origin.samples ? samples - origin.samples : 0;
    const double accelerators = static_cast<double>(
        std::max<std::uint64_t>(1, session_.config().iomimic.accelerators_per_process));
    if (p.seconds > 0 && origin.epochs > 0) {
      const double busy = session_.compute_busy().BusyUntil(now) - origin.busy;
      p.au_percent = std::clamp(100.0 * busy / (accelerators * p.seconds), 0.0, 100.0);
    }
    p.checkpoint = b.checkpoint.load(std::memory_order_relaxed);
    p.checkpoints = b.checkpoints.load(std::memory_order_relaxed);
    p.requests = b.requests.load(std::memory_order_relaxed);
    if (p.phase == Progress::Phase::kKvCache) p.duration = session_.config().kv_cache.duration;
    return p;
  }

  session::Session& session_;
  RunObserver* observer_;
  Clock::duration interval_{};
  Origin origin_;
  std::uint64_t last_train_steps_done_ = 0;  // the timer thread's own
};

// Watches for a signal (session/interrupt.h) from a thread of its own, so
// that what the rank knows is on disk before the launcher's SIGKILL (Open
// MPI allows odls_base_sigkill_timeout, 1 s by default, after its SIGTERM;
// docs/cluster.md, "Faults"):
// - at once, the rank's record (output/rank_ledger.h) says "interrupted" and
//   rank 0's status.json says so, with the merge still to come;
// - when the rank then sits in a collective (a rank or host that is gone
//   never arrives; mpirun sends the survivors SIGTERM), it says so on
//   stderr, and the lowest rank that answered the signal writes status.json
//   naming the ranks, and their hosts, whose records never answered: the
//   lost ones. rank 0 need not be alive for that.
class FaultWatch : public RunThread {
 public:
  static constexpr double kStuckSeconds = 0.25;  // in a collective after the signal

  FaultWatch(cluster::Cluster& cluster, std::string folder, output::RankLedger* ledger,
             std::vector<std::string> rank_hosts)
      : cluster_(cluster),
        folder_(std::move(folder)),
        ledger_(ledger),
        rank_hosts_(std::move(rank_hosts)) {
    if (!folder_.empty()) thread_ = std::thread([this] { Loop(); });
  }
  ~FaultWatch() { Stop(); }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    bool noted = false, said = false, probed = false;
    std::chrono::steady_clock::time_point next_look{};
    std::vector<int> reported;  // the lost ranks status.json names
    bool wrote_lost = false;
    while (!wake_.wait_for(lock, std::chrono::milliseconds(50), [this] { return stop_; })) {
      const int signal = session::InterruptSignal();
      if (signal == 0) continue;
      if (!noted) {
        noted = true;
        NoteSignal(signal);
      }
      const char* where = "";
      const double waited = cluster::Cluster::SecondsInCollective(&where);
      if (cluster_.size() == 1 || waited < kStuckSeconds) continue;
      const std::string what = std::string(session::SignalName(signal)) + " while waiting " +
                               std::to_string(static_cast<int>(waited * 1000)) +
                               " ms for the other ranks (" + where + ")";
      if (!said) {
        said = true;
        std::fprintf(stderr,
                     "iomimic: rank %d on %s: %s: if a rank or host is gone the launcher ends "
                     "this run (its message names which)\n",
                     cluster_.rank(), cluster_.hostname().c_str(), what.c_str());
      }
      if (!probed) {
        // A cut link leaves this host's ranks alive, signalled by their own
        // daemon, and waiting like the others: only the network tells the
        // two sides apart.
        probed = true;
        std::string launcher;
        if (!cluster::Cluster::LauncherReachable(0.3, &launcher) && ledger_ != nullptr) {
          (void)ledger_->Stopped("cut_off", session::SignalName(signal),
                                 "host " + cluster_.hostname() + " cannot reach mpirun at " +
                                     launcher + ": cut off from the job");
        }
      }
      // Who is lost, written by the lowest rank that answered; looked at
      // again every 250 ms while the wait lasts, as late answers arrive.
      const auto now = std::chrono::steady_clock::now();
      if (now < next_look) continue;
      next_look = now + std::chrono::milliseconds(250);
      std::vector<int> silent;
      if (!LowestAnswering(&silent)) continue;
      if (wrote_lost && silent == reported) continue;
      wrote_lost = true;
      reported = silent;
      WriteLost(signal, what, silent);
    }
  }

  // The rank's record and, on rank 0, status.json: interrupted, results to come.
  void NoteSignal(int signal) {
    if (ledger_ != nullptr) {
      (void)ledger_->Stopped("interrupted", session::SignalName(signal), "");
    }
    if (cluster_.rank() == 0) {
      output::StatusDetails details;
      details.results =
          "per-rank only so far: ranks/<rank>.json and <id>_per_epoch_stats.json; "
          "summary.json follows when the merge finishes";
      (void)output::WriteStatus(folder_, Status::OK(), session::SignalName(signal), details);
    }
  }

  // True when no lower rank answered the signal from the job's side (its
  // record is neither "running" nor "cut_off"): this rank then speaks for
  // the survivors. `silent` receives every rank lost (read only then: one
  // file per lower rank otherwise, not the whole world's).
  bool LowestAnswering(std::vector<int>* silent) const {
    if (ledger_ != nullptr && ledger_->state() == "cut_off") return false;
    for (int r = 0; r < cluster_.rank(); ++r) {
      Result<output::RankRecord> record = output::ReadRankRecord(folder_, r);
      if (record.ok() && record->state != "running" && record->state != "cut_off") return false;
    }
    *silent = output::SilentRanks(folder_, cluster_.size());
    return true;
  }

  // status.json from the ranks that have not answered (`silent`), told
  // apart: a host none of whose ranks answered is lost (killed, or cut off:
  // a cut_off record is silent); a silent rank on this host whose process
  // is gone is lost; the other silent ranks had not answered yet, which on
  // an oversubscribed client that the launcher kills a second after its
  // SIGTERM is no sign of a fault (bench/results/results_scale.md).
  void WriteLost(int signal, const std::string& what, const std::vector<int>& silent) {
    output::StatusDetails details;
    details.written_by_rank = cluster_.rank();
    std::vector<int> dead;
    for (int r : silent) {
      if (HostSilent(HostOf(r), silent)) {
        details.lost_ranks.push_back(r);
        if (std::find(details.lost_hosts.begin(), details.lost_hosts.end(), HostOf(r)) ==
            details.lost_hosts.end()) {
          details.lost_hosts.push_back(HostOf(r));
        }
      } else if (ProcessGone(r)) {
        details.lost_ranks.push_back(r);
        dead.push_back(r);
      } else {
        details.unanswered_ranks.push_back(r);
      }
    }
    std::string error = what;
    if (!details.lost_hosts.empty()) {
      std::vector<int> on_lost_hosts;
      for (int r : details.lost_ranks) {
        if (std::find(dead.begin(), dead.end(), r) == dead.end()) on_lost_hosts.push_back(r);
      }
      error += ": no answer from " + ListRanks(on_lost_hosts) + " on host" +
               (details.lost_hosts.size() > 1 ? "s " : " ") + Join(details.lost_hosts) +
               ": lost (killed, or cut off from the others)";
    }
    if (!dead.empty()) {
      error += std::string(details.lost_hosts.empty() ? ": " : "; ") + ListRanks(dead) + " on " +
               cluster_.hostname() + ": process gone";
    }
    if (details.lost_ranks.empty()) {
      error += ": no rank or host found lost";
    }
    if (!details.unanswered_ranks.empty()) {
      error += "; " + std::to_string(details.unanswered_ranks.size()) +
               " other rank(s) had not answered yet (busy, or killed by the launcher first)";
    }
    details.results =
        "partial: ranks/<rank>.json and <id>_per_epoch_stats.json of the ranks that answered; "
        "no merge (summary.json) after a lost rank";
    (void)output::WriteStatus(folder_, Status::Aborted(error), session::SignalName(signal),
                              details);
  }

  const std::string& HostOf(int rank) const {
    static const std::string unknown = "?";
    return rank >= 0 && rank < static_cast<int>(rank_hosts_.size()) ? rank_hosts_[rank] : unknown;
  }

  // Whether every rank of `host` is in `silent`.
  bool HostSilent(const std::string& host, const std::vector<int>& silent) const {
    for (int r = 0; r < static_cast<int>(rank_hosts_.size()); ++r) {
      if (rank_hosts_[r] == host && std::find(silent.begin(), silent.end(), r) == silent.end()) {
        return false;
      }
    }
    return true;
  }

  // A rank on this host whose record names a process that no longer exists.
  bool ProcessGone(int rank) const {
    if (HostOf(rank) != cluster_.hostname()) return false;
    Result<output::RankRecord> record = output::ReadRankRecord(folder_, rank);
    if (!record.ok() || record->pid <= 0) return false;
    return ::kill(static_cast<pid_t>(record->pid), 0) != 0 && errno == ESRCH;
  }

  static std::string Join(const std::vector<std::string>& items) {
    std::string out;
    for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
    return out;
  }

  // "rank 3" or "ranks 2, 3" (the first 16, then how many more).
  static std::string ListRanks(const std::vector<int>& ranks) {
    std::string out = ranks.size() == 1 ? "rank " : "ranks ";
    for (std::size_t i = 0; i < ranks.size() && i < 16; ++i) {
      out += (i > 0 ? ", " : "") + std::to_string(ranks[i]);
    }
    if (ranks.size() > 16) out += " and " + std::to_string(ranks.size() - 16) + " more";
    return out;
  }

  cluster::Cluster& cluster_;
  const std::string folder_;
  output::RankLedger* ledger_;
  const std::vector<std::string> rank_hosts_;
};

// The run-wide origin of timeline.csv and events.csv: rank 0's clock.
std::chrono::system_clock::time_point SharedOrigin(cluster::Cluster& cluster,
                                                   const metrics::Stamp& start) {
  const auto ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(start.wall.time_since_epoch()).count();
  const std::string shared = cluster.Broadcast(std::to_string(ns));
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::nanoseconds(std::stoll(shared))));
}

// One row of timeline.csv: the session's counters now.
metrics::ActivitySample SampleActivity(session::Session& session) {
  metrics::ActivitySample a;
  const session::IoSnapshot io = session.storage().Snapshot();
  a.bytes_read = io.bytes_read;
  a.bytes_written = io.bytes_written;
  a.read_requests = io.read_requests;
  a.write_requests = io.write_requests;
  a.samples = session.sample_latency().count();
  a.steps = session.steps();
  a.compute_seconds = session.compute_busy().BusyUntil(std::chrono::steady_clock::now());
  const session::IoCounters& counters = session.storage().counters();
  a.io_seconds =
      static_cast<double>(counters.read_latency.sum_ns() + counters.write_latency.sum_ns()) / 1e9;
  a.barrier_seconds = session.barrier_seconds();
  return a;
}

// storage.post_generation_settle_seconds (MLPerf's fork): storage that makes
// new files visible late gets time before training reads them. In slices, so
// that a signal is seen at once (training then stops at its first step
// boundary, session/interrupt.h).
void SettleAfterGeneration(double seconds) {
  using SteadyClock = std::chrono::steady_clock;
  const SteadyClock::time_point until =
      SteadyClock::now() +
      std::chrono::duration_cast<SteadyClock::duration>(std::chrono::duration<double>(seconds));
  while (SteadyClock::now() < until && session::InterruptSignal() == 0) {
    std::this_thread::sleep_until(
        std::min(until, SteadyClock::now() + std::chrono::milliseconds(50)));
  }
}

// The workflows beside training, in the order they run: the one list of
// them (docs/architecture.md, "A workflow"). Training (generation, the
// trainer, checkpoints) is the run's own sequence in WorkloadRun::Run. A new
// workflow is a folder and a row here.
struct WorkflowRow {
  const char* name;
  bool (*wanted)(const config::Config& c);
  output::WorkflowRunner run;
  const output::FigureList& (*figures)();  // its headline figures (output/figures.h)
};
const WorkflowRow kWorkflows[] = {
    {"metadata", [](const config::Config& c) { return c.workflow.metadata; },
     metadata::RunStatFiles, metadata::Figures},
    {"kv_cache replay",
     [](const config::Config& c) {
       return c.workflow.kv_cache && !c.kv_cache.replay_trace.empty();
     },
     kvcache::RunReplayWorkflow, kvcache::ReplayFigures},
    {"kv_cache chunked",
     [](const config::Config& c) {
       return c.workflow.kv_cache && c.kv_cache.replay_trace.empty() &&
              c.kv_cache.layout == "chunked";
     },
     kvcache::RunChunkedWorkflow, kvcache::ChunkedFigureList},
    {"kv_cache",
     [](const config::Config& c) {
       return c.workflow.kv_cache && c.kv_cache.replay_trace.empty() &&
              c.kv_cache.layout == "whole";
     },
     kvcache::RunKvCacheWorkflow, kvcache::Figures},
    {"model_load", [](const config::Config& c) { return c.workflow.model_load; },
     modelload::RunModelLoad, modelload::Figures},
    {"app_replay", [](const config::Config& c) { return c.workflow.app_replay; },
     apptrace::RunAppReplay, apptrace::Figures},
};

// One RunWorkload, step by step: open the session, prepare the run folder,
// generate, train (or the checkpoint-only workflow), write the results. The
// members are destroyed in reverse order: the timeline sampler and the
// progress timer stop before the session they read closes.
class WorkloadRun {
 public:
  WorkloadRun(const config::LoadedManifest& loaded, const plugin::Registry& registry,
              cluster::Cluster& cluster, const RunOptions& options, RunObserver* observer)
      : manifest_(loaded),
        c_(manifest_.config),
        registry_(registry),
        cluster_(cluster),
        options_(options),
        observer_(observer),
        notify_(observer) {
    if (options.generate_only) {
      manifest_.config.workflow.generate_data = true;
      manifest_.config.workflow.train = false;
      manifest_.config.workflow.evaluation = false;
      manifest_.config.workflow.checkpoint = false;
    }
  }

  Result<output::RunResults> Run() {
    IOMIMIC_RETURN_IF_ERROR(Open());
    StartRecording();
    IOMIMIC_RETURN_IF_ERROR(PrepareFolder());
    IOMIMIC_RETURN_IF_ERROR(StartLedger());
    watch_ = std::make_unique<FaultWatch>(cluster_, folder_, ledger_.get(), outcome_.rank_hosts);
    // From here on a failure is also recorded in the run folder.
    if (c_.workflow.generate_data) IOMIMIC_RETURN_IF_ERROR(GenerateData());
    IOMIMIC_RETURN_IF_ERROR(RunWorkflows());
    // The KV-cache workflow replaces training and the checkpoint-only
    // workflow (config/validate.cpp refuses workflow.train with it).
    if (training() && !c_.workflow.kv_cache) {
      IOMIMIC_RETURN_IF_ERROR(TrainModel());
    } else if (checkpoint_only() && !c_.workflow.kv_cache) {
      IOMIMIC_RETURN_IF_ERROR(CheckpointOnly());
    }
    return Finish();
  }

 private:
  bool training() const { return c_.workflow.train; }
  bool checkpoint_only() const { return !training() && checkpointer_ != nullptr; }

  Status Fail(const Status& status) {
    notify_->OnError(status);
    return status;
  }

  // `agreed_signal`: the signal the ranks agreed on, when they did (-1: rank
  // 0's own).
  Status FinishFailed(const Status& st, int agreed_signal = -1) {
    // A failure while a signal stops the run says so (session/interrupt.h).
    const int signal = agreed_signal >= 0 ? agreed_signal : session::InterruptSignal();
    if (watch_ != nullptr) watch_->Stop();  // this status.json is the last word
    if (ledger_ != nullptr) {
      (void)ledger_->Stopped(signal != 0 ? "interrupted" : "failed",
                             signal != 0 ? session::SignalName(signal) : nullptr, st.message());
    }
    if (cluster_.rank() == 0 && !folder_.empty()) {
      (void)output::WriteStatus(folder_, st, signal != 0 ? session::SignalName(signal) : nullptr);
    }
    return Fail(st);
  }

  // The session, its warnings, the progress timer and the checkpointer.
  Status Open() {
    Result<std::unique_ptr<session::Session>> opened =
        session::Session::Open(manifest_, registry_, cluster_);
    Status status = cluster_.AgreeOnStatus(opened.status());
    if (!status.ok()) return Fail(status);
    session_ = std::move(opened).value();
    for (const std::string& warning : session_->warnings()) notify_->OnWarning(warning);
    // Made after the session and stopped before any return (its destructor),
    // so OnProgress never outlives RunWorkload.
    progress_ = std::make_unique<ProgressTimer>(*session_, observer_, options_.progress_interval);
    if (c_.workflow.checkpoint) {
      Result<std::unique_ptr<train::Checkpointer>> made =
          train::Checkpointer::Create(*session_, registry_);
      if (!made.ok()) return Fail(made.status());
      checkpointer_ = std::move(made).value();
    }
    return Status::OK();
  }

  // The run's start and origin, the trace and the timeline sampler.
  void StartRecording() {
    outcome_.start = metrics::Stamp::Now();
    outcome_.origin = SharedOrigin(cluster_, outcome_.start);
    if (c_.iomimic.trace) session_->tracer().Enable(c_.iomimic.trace_max_events);
    // The rank-to-host map; the lowest rank of each host samples its
    // telemetry (metrics/host_telemetry.h) on the timeline's intervals.
    outcome_.rank_hosts = cluster_.AllGatherStrings(cluster_.hostname());
    const bool host_sampler =
        std::find(outcome_.rank_hosts.begin(), outcome_.rank_hosts.end(), cluster_.hostname()) -
            outcome_.rank_hosts.begin() ==
        cluster_.rank();
    if (c_.iomimic.timeline_interval > 0) {
      session::Session* session = session_.get();
      std::function<void(const metrics::TimelineRow&)> on_row;
      if (host_sampler) {
        StartTelemetry();
        on_row = [this](const metrics::TimelineRow& row) {
          telemetry_.Sample(row.index, row.start_seconds, row.end_seconds);
        };
      }
      sampler_.Start(
          outcome_.origin, c_.iomimic.timeline_interval,
          [session] { return SampleActivity(*session); }, std::move(on_row));
    }
    train_.checkpointer = checkpointer_.get();
  }

  // This host's telemetry: the disk under the data folder (none for an
  // object store), the network, CPU and memory.
  void StartTelemetry() {
    const bool objects = session_->storage().capabilities().objects;
    telemetry_.Start(
        session::ResolveDataPath(c_, c_.dataset.data_folder),
        objects ? "object storage (" + session_->storage_chain() + "): no block device" : "");
  }

  // A run that only generates (`iomimic generate`, or a workflow that
  // neither trains nor checkpoints) leaves a result folder too, as DLIO's
  // does; in a folder the user named it takes the subfolder generate[-N], so
  // that the training run that usually follows with the same folder finds it
  // free (output/results.h).
  Status PrepareFolder() {
    const bool generates_only = !training() && !checkpoint_only() &&
                                std::none_of(std::begin(kWorkflows), std::end(kWorkflows),
                                             [this](const WorkflowRow& w) { return w.wanted(c_); });
    Result<std::string> prepared =
        output::PrepareOutputFolder(c_, cluster_, generates_only ? "generate" : "");
    if (!prepared.ok()) return Fail(prepared.status());
    folder_ = *prepared;
    Status status = cluster_.AgreeOnStatus(output::WriteConfigFiles(folder_, manifest_, cluster_));
    if (!status.ok()) return Fail(status);
    notify_->OnRunFolder(folder_);
    return Status::OK();
  }

  // This rank's record in the run folder (output/rank_ledger.h), written
  // from now on as the rank learns something: its epochs, a signal, its end.
  Status StartLedger() {
    const double checkpoint_gib =
        checkpointer_ != nullptr
            ? static_cast<double>(checkpointer_->checkpoint_bytes()) / output::kGiB
            : 0.0;
    ledger_ = std::make_unique<output::RankLedger>(folder_, c_, cluster_.rank(), cluster_.size(),
                                                   cluster_.hostname(), checkpoint_gib);
    Status status = cluster_.AgreeOnStatus(ledger_->Start());
    if (!status.ok()) return Fail(status);
    return Status::OK();
  }

  Status GenerateData() {
    // The command line's thread count, else reader.write_threads (MLPerf's
    // fork), where 1 means sized to the machine, as the fork auto-sizes it.
    const unsigned threads = options_.generate_threads > 0 ? options_.generate_threads
                             : c_.reader.write_threads > 1
                                 ? static_cast<unsigned>(c_.reader.write_threads)
                                 : std::max(1u, std::thread::hardware_concurrency());
    GenerateStart start;
    start.files = session_->layout().num_generated_files();
    start.train_folder = session_->layout().SplitDirectory(plan::Split::kTrain);
    start.threads = threads;
    notify_->OnGenerateStart(start);
    progress_->MarkPhaseStart(0, 0);
    std::optional<train::GenerateReport> so_far;
    Result<train::GenerateReport> report = train::Generate(*session_, threads, &so_far);
    if (!report.ok()) return GenerateFailed(report.status(), so_far);
    train_.generate = *report;
    GenerateTotals totals;
    totals.files_written = cluster_.SumU64(report->files_written);
    totals.files_skipped = cluster_.SumU64(report->files_skipped);
    totals.files_rewritten = cluster_.SumU64(report->files_rewritten);
    if (totals.files_rewritten > 0) {  // the first rank's reason that has one
      for (const std::string& why : cluster_.GatherStringsToRoot(report->rewrite_reason)) {
        if (!why.empty()) {
          totals.rewrite_reason = why;
          break;
        }
      }
    }
    totals.bytes_written = cluster_.SumU64(report->bytes_written);
    totals.seconds = cluster_.MaxDouble(report->seconds);
    notify_->OnGenerateEnd(totals);
    if (c_.storage.post_generation_settle_seconds > 0 && training()) {
      SettleAfterGeneration(c_.storage.post_generation_settle_seconds);
    }
    return Status::OK();
  }

  // Stopped by a signal (session/interrupt.h): summary.json gets the figures
  // of the files done, as an interrupted training run gets its epochs. Every
  // rank agreed on the failure and holds `so_far` alike; the signal may have
  // reached some ranks only, so they agree on it.
  Status GenerateFailed(const Status& status, const std::optional<train::GenerateReport>& so_far) {
    const int signal =
        so_far.has_value()
            ? static_cast<int>(cluster_.MaxDouble(static_cast<double>(session::InterruptSignal())))
            : -1;
    if (signal > 0) {
      // Every rank exits as the signalled one does (128 + the signal).
      session::NoteAgreedInterrupt(signal);
      train_.generate = *so_far;
      StopRecording();
      HandOverResults();
      (void)output::WriteResults(folder_, *session_, outcome_);
    }
    return FinishFailed(status, signal);
  }

  Status TrainModel() {
    Status status = train::CheckDataset(*session_);
    if (!status.ok()) return FinishFailed(status);
    // The files as they are on storage and in the page cache right before
    // training reads them (session/cache_honesty.h).
    train_.cache_check = session::CheckDatasetAgainstMemory(*session_);
    if (!train_.cache_check.warning.empty()) notify_->OnWarning(train_.cache_check.warning);
    train::TrainOptions train;
    train.accelerators_per_process = c_.iomimic.accelerators_per_process;
    if (c_.iomimic.sample_log) {
      train.sample_log_path = [this](int id) {
        return folder_ + "/" + std::to_string(id) + "_samples.csv";
      };
    }
    TrainStart start;
    start.ranks = cluster_.size();
    start.accelerators_per_process = static_cast<int>(c_.iomimic.accelerators_per_process);
    start.epochs = c_.train.epochs;
    start.steps_per_epoch =
        plan::TrainStepsPerEpoch(c_, start.ranks * start.accelerators_per_process);
    start.batch_size = c_.reader.batch_size;
    start.read_threads = c_.reader.read_threads;
    notify_->OnTrainStart(start);
    progress_->MarkPhaseStart(start.epochs, start.steps_per_epoch);
    train.on_epoch = [this](const metrics::EpochRecord& e) {
      notify_->OnEpochEnd(e, metrics::ComputeEpochMetrics(e, c_));
    };
    // Each epoch's figures in the run folder at once, with no collective:
    // a run killed later keeps them (output/rank_ledger.h).
    train.on_epochs_so_far = [this](int id, const std::vector<metrics::EpochRecord>& epochs) {
      Status written = ledger_->EpochsSoFar(id, epochs);
      if (!written.ok() && ledger_status_.ok()) ledger_status_ = written;
    };
    train.checkpointer = checkpointer_.get();
    Result<train::TrainResult> trained = train::Train(*session_, train);
    if (!trained.ok()) return FinishFailed(trained.status());
    train_.train = std::move(trained).value();
    return Status::OK();
  }

  Status CheckpointOnly() {
    const plan::CheckpointPlan& plan = checkpointer_->plan();
    CheckpointStart start;
    start.writes = std::max<std::int64_t>(0, c_.checkpoint.num_checkpoints_write);
    start.reads = std::max<std::int64_t>(0, c_.checkpoint.num_checkpoints_read);
    start.size_gib = static_cast<double>(plan.total_bytes()) / (1024.0 * 1024.0 * 1024.0);
    start.ranks = cluster_.size();
    start.tensor = plan.tensor;
    start.pipeline = plan.pipeline;
    start.data = plan.data;
    start.zero_stage = plan.zero_stage;
    start.storage = checkpointer_->storage_name();
    start.fsync = c_.checkpoint.fsync;
    notify_->OnCheckpointOnlyStart(start);
    progress_->MarkPhaseStart(0, 0);
    Result<train::CheckpointOnlyResult> done = train::RunCheckpointOnly(*session_, *checkpointer_);
    if (!done.ok()) return FinishFailed(done.status());
    train_.checkpoint_only = std::move(done).value();
    return Status::OK();
  }

  // The workflows of kWorkflows the manifest switches on, in the table's
  // order; their results wait in others_ for HandOverResults.
  Status RunWorkflows() {
    const output::WorkflowContext context{&registry_, folder_};
    for (const WorkflowRow& w : kWorkflows) {
      if (!w.wanted(c_)) continue;
      progress_->MarkPhaseStart(0, 0);
      Result<std::shared_ptr<output::WorkflowResults>> done = w.run(*session_, context);
      Status status = cluster_.AgreeOnStatus(done.status());
      if (!status.ok()) return FinishFailed(status);
      others_.push_back(std::move(done).value());
    }
    return Status::OK();
  }

  // The run's end: the timeline and the progress timer stop.
  void StopRecording() {
    outcome_.end = metrics::Stamp::Now();
    outcome_.timeline = sampler_.Stop();
    if (telemetry_.started()) {
      outcome_.telemetry_sources = telemetry_.sources();
      outcome_.telemetry = telemetry_.rows();
      outcome_.telemetry_sampled = true;
    }
    progress_->Stop();
  }

  // Each workflow's results of this rank, handed to output/ (output/
  // workflow_results.h); the one place that names the workflows' results.
  // Every rank hands over the same workflows (their merges are collective).
  void HandOverResults() {
    if (train_.generate || train_.train || train_.checkpoint_only || train_.checkpointer) {
      outcome_.workflows.push_back(std::make_shared<train::TrainingResults>(std::move(train_)));
    }
    for (std::shared_ptr<output::WorkflowResults>& w : others_) {
      outcome_.workflows.push_back(std::move(w));
    }
    others_.clear();
  }

  // The results files and, on rank 0, status.json.
  Result<output::RunResults> Finish() {
    StopRecording();
    HandOverResults();
    DelayResultsForTesting();
    Result<output::RunResults> results = output::WriteResults(folder_, *session_, outcome_);
    Status status = results.status();
    if (status.ok()) status = ledger_status_;
    status = cluster_.AgreeOnStatus(status);
    if (!status.ok()) return FinishFailed(status);
    watch_->Stop();  // the merge is done: this status.json is the last word
    const int signal = results->interrupted_by;
    const char* name = signal != 0 ? session::SignalName(signal) : nullptr;
    (void)ledger_->Stopped(signal != 0 ? "interrupted" : "completed", name, "");
    if (cluster_.rank() == 0) {
      status = output::WriteStatus(folder_, Status::OK(), name);
      if (!status.ok()) return Fail(status);
    }
    return results;
  }

  // IOMIMIC_TEST_RESULTS_DELAY_SECONDS: waits that long before the merge, as
  // a merge over a thousand ranks takes seconds; the fault tests use it to
  // show that a launcher's SIGKILL during the merge loses nothing the ranks
  // knew (docs/cluster.md, "Faults").
  static void DelayResultsForTesting() {
    const char* value = std::getenv("IOMIMIC_TEST_RESULTS_DELAY_SECONDS");
    if (value == nullptr || *value == '\0') return;
    const double seconds = std::strtod(value, nullptr);
    if (seconds > 0 && seconds < 3600) {
      std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    }
  }

  config::LoadedManifest manifest_;  // with generate_only's workflow
  const config::Config& c_;
  const plugin::Registry& registry_;
  cluster::Cluster& cluster_;
  const RunOptions& options_;
  RunObserver* observer_;
  Notify notify_;
  std::unique_ptr<session::Session> session_;
  std::unique_ptr<ProgressTimer> progress_;
  std::unique_ptr<output::RankLedger> ledger_;
  Status ledger_status_;               // the first failure to write the rank's record
  std::unique_ptr<FaultWatch> watch_;  // after ledger_, which it writes
  std::unique_ptr<train::Checkpointer> checkpointer_;
  // This rank's records of each workflow, until HandOverResults.
  train::TrainingResults::Local train_;
  std::vector<std::shared_ptr<output::WorkflowResults>> others_;  // kWorkflows'
  output::RunOutcome outcome_;
  metrics::HostTelemetry telemetry_;  // before sampler_, whose thread calls it
  metrics::TimelineSampler sampler_;
  std::string folder_;
};

}  // namespace

Result<output::RunResults> RunWorkload(const config::LoadedManifest& loaded,
                                       const plugin::Registry& registry, cluster::Cluster& cluster,
                                       const RunOptions& options, RunObserver* observer) {
  WorkloadRun run(loaded, registry, cluster, options, observer);
  return run.Run();
}

const output::FigureList& Figures() {
  static const output::FigureList figures = [] {
    std::vector<const output::FigureList*> lists = {&train::Figures(), &output::SessionFigures()};
    for (const WorkflowRow& w : kWorkflows) lists.push_back(&w.figures());
    return output::JoinFigures(lists);
  }();
  return figures;
}

}  // namespace iomimic::run
