#include "run/run.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "engine/checkpointer.h"
#include "engine/generator.h"
#include "engine/interrupt.h"
#include "engine/session.h"
#include "engine/trainer.h"
#include "output/results.h"
#include "plan/plan.h"

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

// The progress timer: a plain thread that wakes every `interval` on a
// condition variable (docs/observability.md, "Timers and signals", says why
// not Boost.Asio), reads the session's progress board (engine/progress.h)
// and hands a snapshot to RunObserver::OnProgress. The reference points of
// rates (phase start, bytes, samples, compute) are set by the run's thread
// under the mutex.
class ProgressTimer {
 public:
  using Clock = std::chrono::steady_clock;

  ProgressTimer(engine::Session& session, RunObserver* observer, double interval_seconds)
      : session_(session), observer_(observer) {
    if (observer_ == nullptr || !(interval_seconds > 0)) return;
    interval_ = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(std::max(interval_seconds, 0.01)));
    MarkPhaseStart(0, 0);
    thread_ = std::thread([this] { Loop(); });
  }
  ~ProgressTimer() { Stop(); }
  ProgressTimer(const ProgressTimer&) = delete;
  ProgressTimer& operator=(const ProgressTimer&) = delete;

  // A phase (generation, training, the checkpoint-only workflow) starts now;
  // `epochs` and `steps_per_epoch` describe training (0 otherwise).
  void MarkPhaseStart(std::uint64_t epochs, std::uint64_t steps_per_epoch) {
    std::lock_guard<std::mutex> lock(mutex_);
    const Clock::time_point now = Clock::now();
    origin_.start = now;
    origin_.bytes_written = session_.storage().Snapshot().write_bytes;
    origin_.samples = session_.sample_latency().count();
    origin_.busy = session_.compute_busy().BusyUntil(now);
    origin_.epochs = epochs;
    origin_.steps_per_epoch = steps_per_epoch;
  }

  // Ends the thread (no OnProgress call after it returns). Idempotent.
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
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
    const engine::ProgressBoard& b = session_.progress();
    const Clock::time_point now = Clock::now();
    Progress p;
    p.phase = static_cast<Progress::Phase>(static_cast<int>(b.Phase()));
    p.seconds = std::chrono::duration<double>(now - origin.start).count();
    p.rank = session_.cluster().rank();
    p.ranks = session_.cluster().size();
    p.files_done = b.files_done.load(std::memory_order_relaxed);
    p.files_total = b.files_total.load(std::memory_order_relaxed);
    const std::uint64_t written = session_.storage().Snapshot().write_bytes;
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
    return p;
  }

  engine::Session& session_;
  RunObserver* observer_;
  Clock::duration interval_{};
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  Origin origin_;
  std::uint64_t last_train_steps_done_ = 0;  // the timer thread's own
};

}  // namespace

Result<output::RunResults> RunWorkload(const config::LoadedManifest& loaded,
                                       const plugin::Registry& registry, cluster::Cluster& cluster,
                                       const RunOptions& options, RunObserver* observer) {
  Notify notify(observer);
  config::LoadedManifest manifest = loaded;
  if (options.generate_only) {
    manifest.config.workflow.generate_data = true;
    manifest.config.workflow.train = false;
    manifest.config.workflow.evaluation = false;
    manifest.config.workflow.checkpoint = false;
  }
  const config::Config& c = manifest.config;
  auto fail = [&](const Status& status) -> Status {
    notify->OnError(status);
    return status;
  };

  Result<std::unique_ptr<engine::Session>> opened =
      engine::Session::Open(manifest, registry, cluster);
  Status status = cluster.AgreeOnStatus(opened.status());
  if (!status.ok()) return fail(status);
  engine::Session& session = **opened;
  for (const std::string& warning : session.warnings()) notify->OnWarning(warning);
  // Declared after the session and stopped before any return (its
  // destructor), so OnProgress never outlives RunWorkload.
  ProgressTimer progress(session, observer, options.progress_interval);

  std::unique_ptr<engine::Checkpointer> checkpointer;
  if (c.workflow.checkpoint) {
    Result<std::unique_ptr<engine::Checkpointer>> made =
        engine::Checkpointer::Create(session, registry);
    if (!made.ok()) return fail(made.status());
    checkpointer = std::move(made).value();
  }

  output::RunOutcome outcome;
  outcome.start = metrics::Stamp::Now();
  // The run-wide origin of timeline.csv and events.csv: rank 0's clock.
  {
    const auto ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(outcome.start.wall.time_since_epoch())
            .count();
    const std::string shared = cluster.Broadcast(std::to_string(ns));
    outcome.origin = std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(
            std::chrono::nanoseconds(std::stoll(shared))));
  }
  if (c.iomimic.trace) session.tracer().Enable(c.iomimic.trace_max_events);
  metrics::TimelineSampler sampler;
  if (c.iomimic.timeline_interval > 0) {
    sampler.Start(outcome.origin, c.iomimic.timeline_interval, [&session] {
      metrics::ActivitySample a;
      const engine::IoSnapshot io = session.storage().Snapshot();
      a.bytes_read = io.read_bytes;
      a.bytes_written = io.write_bytes;
      a.read_requests = io.read_ops;
      a.write_requests = io.write_ops;
      a.samples = session.sample_latency().count();
      a.steps = session.steps();
      a.compute_seconds = session.compute_busy().BusyUntil(std::chrono::steady_clock::now());
      const engine::IoCounters& counters = session.storage().counters();
      a.io_seconds =
          static_cast<double>(counters.read_latency.sum_ns() + counters.write_latency.sum_ns()) /
          1e9;
      a.barrier_seconds = session.barrier_seconds();
      return a;
    });
  }
  outcome.checkpointer = checkpointer.get();
  const bool training = c.workflow.train;
  const bool checkpoint_only = !training && checkpointer != nullptr;
  std::string folder;
  {
    // A run that only generates (`iomimic generate`, or a workflow that
    // neither trains nor checkpoints) leaves a result folder too, as DLIO's
    // does; in a folder the user named it takes the subfolder
    // generate[-N], so that the training run that usually follows with the
    // same folder finds it free (output/results.h).
    const bool generates_only = !training && !checkpoint_only;
    Result<std::string> prepared =
        output::PrepareOutputFolder(c, cluster, generates_only ? "generate" : "");
    if (!prepared.ok()) return fail(prepared.status());
    folder = *prepared;
    status = cluster.AgreeOnStatus(output::WriteConfigFiles(folder, manifest, cluster));
    if (!status.ok()) return fail(status);
    notify->OnRunFolder(folder);
  }
  // From here on a failure is also recorded in the run folder.
  // `agreed_signal`: the signal the ranks agreed on, when they did (-1:
  // rank 0's own).
  auto finish_failed = [&](const Status& st, int agreed_signal = -1) -> Status {
    // A failure while a signal stops the run says so (engine/interrupt.h).
    const int signal = agreed_signal >= 0 ? agreed_signal : engine::InterruptSignal();
    if (cluster.rank() == 0 && !folder.empty()) {
      (void)output::WriteStatus(folder, st, signal != 0 ? engine::SignalName(signal) : nullptr);
    }
    return fail(st);
  };

  if (c.workflow.generate_data) {
    // The command line's thread count, else reader.write_threads (MLPerf's
    // fork), where 1 means sized to the machine, as the fork auto-sizes it.
    const unsigned threads = options.generate_threads > 0 ? options.generate_threads
                             : c.reader.write_threads > 1
                                 ? static_cast<unsigned>(c.reader.write_threads)
                                 : std::max(1u, std::thread::hardware_concurrency());
    GenerateStart start;
    start.files = session.layout().num_generated_files();
    start.train_folder = session.layout().SplitDirectory(plan::Split::kTrain);
    start.threads = threads;
    notify->OnGenerateStart(start);
    progress.MarkPhaseStart(0, 0);
    std::optional<engine::GenerateReport> so_far;
    Result<engine::GenerateReport> report = engine::Generate(session, threads, &so_far);
    if (!report.ok()) {
      // Stopped by a signal (engine/interrupt.h): summary.json gets the
      // figures of the files done, as an interrupted training run gets its
      // epochs. Every rank agreed on the failure and holds `so_far` alike;
      // the signal may have reached some ranks only, so they agree on it.
      const int signal =
          so_far.has_value()
              ? static_cast<int>(cluster.MaxDouble(static_cast<double>(engine::InterruptSignal())))
              : -1;
      if (signal > 0) {
        // Every rank exits as the signalled one does (128 + the signal).
        engine::NoteAgreedInterrupt(signal);
        outcome.generate = *so_far;
        outcome.end = metrics::Stamp::Now();
        outcome.timeline = sampler.Stop();
        progress.Stop();
        (void)output::WriteResults(folder, session, outcome);
      }
      return finish_failed(report.status(), signal);
    }
    outcome.generate = *report;
    GenerateTotals totals;
    totals.files_written = cluster.SumU64(report->files_written);
    totals.files_skipped = cluster.SumU64(report->files_skipped);
    totals.bytes_written = cluster.SumU64(report->bytes_written);
    totals.seconds = cluster.MaxDouble(report->seconds);
    notify->OnGenerateEnd(totals);
    // storage.post_generation_settle_seconds (MLPerf's fork): storage that
    // makes new files visible late gets time before training reads them.
    if (c.storage.post_generation_settle_seconds > 0 && training) {
      // In slices, so that a signal is seen at once (training then stops
      // at its first step boundary, engine/interrupt.h).
      using SteadyClock = std::chrono::steady_clock;
      const SteadyClock::time_point until =
          SteadyClock::now() +
          std::chrono::duration_cast<SteadyClock::duration>(
              std::chrono::duration<double>(c.storage.post_generation_settle_seconds));
      while (SteadyClock::now() < until && engine::InterruptSignal() == 0) {
        std::this_thread::sleep_until(
            std::min(until, SteadyClock::now() + std::chrono::milliseconds(50)));
      }
    }
  }

  if (training) {
    status = engine::CheckDataset(session);
    if (!status.ok()) return finish_failed(status);
    engine::TrainOptions train;
    train.accelerators_per_process = c.iomimic.accelerators_per_process;
    if (c.iomimic.sample_log) {
      train.sample_log_path = [&folder](int id) {
        return folder + "/" + std::to_string(id) + "_samples.csv";
      };
    }
    TrainStart start;
    start.ranks = cluster.size();
    start.accelerators_per_process = static_cast<int>(c.iomimic.accelerators_per_process);
    start.epochs = c.train.epochs;
    start.steps_per_epoch =
        plan::TrainStepsPerEpoch(c, start.ranks * start.accelerators_per_process);
    start.batch_size = c.reader.batch_size;
    start.read_threads = c.reader.read_threads;
    notify->OnTrainStart(start);
    progress.MarkPhaseStart(start.epochs, start.steps_per_epoch);
    train.on_epoch = [&](const metrics::EpochRecord& e) {
      notify->OnEpochEnd(e, output::ComputeEpochMetrics(e, c));
    };
    train.checkpointer = checkpointer.get();
    Result<engine::TrainResult> trained = engine::Train(session, train);
    if (!trained.ok()) return finish_failed(trained.status());
    outcome.train = std::move(trained).value();
  } else if (checkpoint_only) {
    const plan::CheckpointPlan& plan = checkpointer->plan();
    CheckpointStart start;
    start.writes = std::max<std::int64_t>(0, c.checkpoint.num_checkpoints_write);
    start.reads = std::max<std::int64_t>(0, c.checkpoint.num_checkpoints_read);
    start.size_gib = static_cast<double>(plan.total_bytes()) / (1024.0 * 1024.0 * 1024.0);
    start.ranks = cluster.size();
    start.tensor = plan.tensor;
    start.pipeline = plan.pipeline;
    start.data = plan.data;
    start.zero_stage = plan.zero_stage;
    start.storage = checkpointer->storage_name();
    start.fsync = c.checkpoint.fsync;
    notify->OnCheckpointOnlyStart(start);
    progress.MarkPhaseStart(0, 0);
    Result<engine::CheckpointOnlyResult> done = engine::RunCheckpointOnly(session, *checkpointer);
    if (!done.ok()) return finish_failed(done.status());
    outcome.checkpoint_only = std::move(done).value();
  }
  outcome.end = metrics::Stamp::Now();
  outcome.timeline = sampler.Stop();
  progress.Stop();

  Result<output::RunResults> results = output::WriteResults(folder, session, outcome);
  status = cluster.AgreeOnStatus(results.status());
  if (!status.ok()) return finish_failed(status);
  if (cluster.rank() == 0) {
    const int signal = results->interrupted_by;
    status = output::WriteStatus(folder, Status::OK(),
                                 signal != 0 ? engine::SignalName(signal) : nullptr);
    if (!status.ok()) return fail(status);
  }
  return results;
}

}  // namespace iomimic::run
