#include "train/trainer.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "iomimic/random.h"
#include "metrics/host_info.h"
#include "plan/plan.h"
#include "session/interrupt.h"
#include "train/compute.h"
#include "train/loader.h"

namespace iomimic::train {
namespace {

using metrics::PhaseRecord;
using metrics::Seconds;
using metrics::Stamp;

// Minor page faults of this process so far.
std::uint64_t MinorFaults() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<std::uint64_t>(ru.ru_minflt);
}

class SampleLog {
 public:
  explicit SampleLog(const std::string& path) {
    if (path.empty()) return;
    out_.open(path, std::ios::out | std::ios::trunc);
    if (out_) out_ << "epoch,phase,step,file,sample\n";
  }
  bool enabled() const { return out_.is_open(); }
  Status Write(std::uint64_t epoch, const char* phase, const BatchInfo& batch) {
    if (!enabled()) return Status::OK();
    for (const plan::SampleRef& r : batch.refs) {
      out_ << epoch << ',' << phase << ',' << batch.step << ',' << r.file << ',' << r.sample
           << '\n';
    }
    if (!out_) return Status::IOError("cannot write the sample log");
    return Status::OK();
  }

 private:
  std::ofstream out_;
};

using Clock = std::chrono::steady_clock;

double SecondsBetween(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// One emulated accelerator of this process: its own loader (prefetch queue
// and reader threads), compute samplers, sample log and records, exactly as
// if it were rank `id`.
struct Accelerator {
  Accelerator(session::Session& session, int id, ReadySignal* signal, const TrainOptions& options)
      : id(id),
        loader(session, static_cast<std::uint64_t>(id), signal),
        compute(session.config().train.computation_time,
                MixSeed(session.config().train.seed, 1000 + static_cast<std::uint64_t>(id))),
        eval_time(session.config().evaluation.eval_time,
                  MixSeed(session.config().train.seed, 2000 + static_cast<std::uint64_t>(id))),
        log(options.sample_log_path ? options.sample_log_path(id) : std::string()) {}

  const int id;
  Loader loader;
  TimeSampler compute;
  TimeSampler eval_time;
  SampleLog log;
  std::vector<metrics::EpochRecord> epochs;

  // The current pass.
  std::unique_ptr<plan::EpochPlan> plan;
  PhaseRecord phase;  // the open training block or evaluation pass
  // The current step.
  bool taken = false;
  Clock::time_point loaded{};    // when the consumer had the batch
  Clock::time_point deadline{};  // when its compute ends
  double drawn = 0;
  std::uint64_t samples = 0;
};

// Waits for the next batch of every accelerator, taking each as soon as it
// is ready (those that became ready while it scanned, in one pass). Returns the first error (after
// which the others are not waited for). With one accelerator this is a blocking Next().
Status GatherStep(std::vector<std::unique_ptr<Accelerator>>& accs, ReadySignal& signal,
                  Clock::time_point load_start, std::uint64_t epoch, const char* phase) {
  for (auto& a : accs) a->taken = false;
  std::size_t pending = accs.size();
  // One accelerator has its batch when its consumer (this thread) takes it.
  // Several have theirs when their readers completed them: this thread may
  // notice a batch later than the accelerator's own consumer would have,
  // and that is the emulation's delay, not the storage's.
  const bool when_ready = accs.size() > 1;
  auto take = [&](Accelerator& a, BatchInfo& batch) -> Status {
    a.taken = true;
    a.loaded = when_ready ? std::max(batch.ready, load_start) : batch.taken;
    a.samples = batch.samples;
    --pending;
    return a.log.Write(epoch, phase, batch);
  };
  if (accs.size() == 1) {
    Accelerator& a = *accs[0];
    IOMIMIC_ASSIGN_OR_RETURN(BatchInfo batch, a.loader.Next());
    return take(a, batch);
  }
  while (pending > 0) {
    const std::uint32_t seen = signal.current();
    for (auto& a : accs) {
      if (a->taken) continue;
      BatchInfo batch;
      IOMIMIC_ASSIGN_OR_RETURN(bool ready, a->loader.TryNext(&batch));
      if (ready) IOMIMIC_RETURN_IF_ERROR(take(*a, batch));
    }
    if (pending > 0) signal.WaitChange(seen);
  }
  return Status::OK();
}

// Emulates the compute of every accelerator's step: accelerator a computes
// from the moment it had its batch for the duration it drew. The thread
// sleeps until the last of those deadlines; an accelerator whose deadline
// passed earlier ended exactly then (it is not a thread and cannot be late),
// the last one ended when the sleep returned. Records load, compute and proc
// of the step and returns when each accelerator's compute ended.
void ComputeStep(session::Session& session, std::vector<std::unique_ptr<Accelerator>>& accs,
                 bool eval, Clock::time_point load_start, bool spin,
                 std::vector<Clock::time_point>* ends) {
  Clock::time_point last{};
  for (auto& a : accs) {
    a->drawn = eval ? a->eval_time.Draw() : a->compute.Draw();
    a->deadline = a->loaded + std::chrono::duration_cast<Clock::duration>(
                                  std::chrono::duration<double>(a->drawn));
    if (a->deadline > last) last = a->deadline;
    session.compute_busy().Add(a->loaded, a->drawn);
  }
  session.AddSteps(accs.size());
  const Clock::time_point now = Clock::now();
  if (last > now) PreciseSleep(SecondsBetween(now, last), spin);
  const Clock::time_point woke = std::max(Clock::now(), last);
  if (session.tracer().enabled()) {
    Clock::time_point first = accs[0]->loaded;
    for (auto& a : accs) first = std::min(first, a->loaded);
    session.tracer().Complete("step", "compute", first, woke,
                              {"accelerators", static_cast<std::int64_t>(accs.size())});
  }
  ends->resize(accs.size());
  for (std::size_t i = 0; i < accs.size(); ++i) {
    Accelerator& a = *accs[i];
    const Clock::time_point end = a.deadline == last ? woke : a.deadline;
    (*ends)[i] = end;
    a.phase.load.push_back(SecondsBetween(load_start, a.loaded));
    a.phase.compute_requested += a.drawn;
    a.phase.compute.push_back(a.drawn);
    a.phase.compute_measured += SecondsBetween(a.loaded, end);
    a.phase.proc.push_back(SecondsBetween(load_start, end));
    a.phase.samples += a.samples;
  }
}

// BarrierMax's value for a failed step: above every signal number.
constexpr int kStepFailed = 1 << 20;

// Plans pass `split` of `epoch` for every accelerator (each as rank `id` of
// ranks x accelerators per process) and returns its steps, the same on every
// accelerator.
std::uint64_t PlanPass(session::Session& session, std::vector<std::unique_ptr<Accelerator>>& accs,
                       plan::Split split, std::uint64_t epoch) {
  const int world = session.cluster().size() * static_cast<int>(accs.size());
  for (auto& a : accs) {
    a->plan = std::make_unique<plan::EpochPlan>(session.config(), session.layout(), split, a->id,
                                                world, epoch, session.shuffle_seeds(),
                                                session.format().traits().streamed);
  }
  return accs[0]->plan->steps();
}

// iomimic.startup_load: before training, the files of each accelerator's
// first training pass (and first evaluation, when one runs), each read whole
// and in order through the storage back end, in reader.transfer_size
// requests (one request per file, at most kStartupChunk, when 0).
constexpr std::uint64_t kStartupChunk = std::uint64_t{256} << 20;

Status StartupLoad(session::Session& session, std::vector<std::unique_ptr<Accelerator>>& accs) {
  const config::Config& c = session.config();
  std::vector<plan::Split> splits = {plan::Split::kTrain};
  if (c.workflow.evaluation && c.dataset.num_files_eval > 0) splits.push_back(plan::Split::kEval);
  std::set<std::string> seen;
  std::vector<std::string> paths;
  for (plan::Split split : splits) {
    PlanPass(session, accs, split, 1);
    for (auto& a : accs) {
      for (std::uint64_t pos = 0; pos < a->plan->samples(); ++pos) {
        const std::string path = session.layout().FilePath(split, a->plan->Sample(pos).file);
        if (seen.insert(path).second) paths.push_back(path);
      }
    }
  }
  const std::uint64_t chunk =
      c.reader.transfer_size > 0 ? std::min(c.reader.transfer_size, kStartupChunk) : kStartupChunk;
  Storage& storage = session.storage();
  Buffer buffer;
  for (const std::string& path : paths) {
    OpenOptions options;
    options.hint = AccessHint::kWholeFile;
    Result<std::unique_ptr<File>> opened = storage.Open(path, options);
    if (!opened.ok()) return opened.status().WithContext("iomimic.startup_load: opening " + path);
    std::unique_ptr<File> file = std::move(opened).value();
    Result<std::uint64_t> size = file->Size();
    if (!size.ok()) return size.status().WithContext("iomimic.startup_load: size of " + path);
    for (std::uint64_t offset = 0; offset < *size;) {
      const std::size_t n = static_cast<std::size_t>(std::min(chunk, *size - offset));
      if (buffer.size() < n) {
        buffer.Reset();
        Result<Buffer> made = storage.Allocate(n);
        if (!made.ok()) return made.status().WithContext("iomimic.startup_load");
        buffer = std::move(made).value();
      }
      Result<std::size_t> got = file->ReadAt(offset, buffer.span().first(n));
      if (!got.ok()) return got.status().WithContext("iomimic.startup_load: reading " + path);
      if (*got == 0) break;
      offset += *got;
    }
    Status closed = file->Close();
    if (!closed.ok()) return closed.WithContext("iomimic.startup_load: closing " + path);
  }
  return Status::OK();
}

// Whether each emulated accelerator can have a CPU of its own (so waiting
// may spin, see PreciseSleep).
// Checkpointer::Save with the board saying so (session/progress.h); the
// number of checkpoints of a training run is not counted ahead.
Status SaveWithProgress(session::Session& session, Checkpointer& checkpointer, std::uint64_t epoch,
                        std::uint64_t step, metrics::CheckpointRecord* record) {
  session::ProgressBoard& board = session.progress();
  session::PhaseScope phase(board, session::RunPhase::kCheckpointWrite);
  board.checkpoint.store(static_cast<std::int64_t>(record->index), std::memory_order_relaxed);
  board.checkpoints.store(0, std::memory_order_relaxed);
  return checkpointer.Save(epoch, step, record);
}

bool CanSpin(std::size_t accelerators) {
  return accelerators < std::max(1u, std::thread::hardware_concurrency());
}

// One training epoch of every accelerator of this process. Returns this
// process's status; the caller agrees on it across ranks. `any_failed` is
// set when another rank failed; `interrupted` to the signal (interrupt.h)
// when any rank received one: every rank then stops after the same step.
Status TrainEpoch(session::Session& session, std::vector<std::unique_ptr<Accelerator>>& accs,
                  ReadySignal& signal, std::uint64_t epoch, Checkpointer* checkpointer,
                  std::vector<metrics::EpochRecord>& records, bool& any_failed, int& interrupted) {
  const config::Config& c = session.config();
  cluster::Cluster& cluster = session.cluster();
  const bool spin = CanSpin(accs.size());
  session::IoSnapshot io_start;
  std::uint64_t block_index = 1;
  // Blocks and their byte counts are the process's: every accelerator's
  // block spans the same steps.
  auto begin_block = [&] {
    const Stamp now = Stamp::Now();
    for (auto& a : accs) {
      a->phase = PhaseRecord();
      a->phase.index = block_index;
      a->phase.start = now;
    }
    ++block_index;
    io_start = session.storage().Snapshot();
  };
  auto end_block = [&] {
    const Stamp now = Stamp::Now();
    const std::uint64_t bytes = (session.storage().Snapshot() - io_start).bytes_read;
    for (std::size_t i = 0; i < accs.size(); ++i) {
      accs[i]->phase.end = now;
      accs[i]->phase.bytes_read = bytes;
      records[i].blocks.push_back(std::move(accs[i]->phase));
    }
  };
  const std::uint64_t steps = PlanPass(session, accs, plan::Split::kTrain, epoch);
  // Live progress (session/progress.h): one relaxed store per step.
  session::ProgressBoard& board = session.progress();
  session::PhaseScope phase(board, session::RunPhase::kTrain);
  board.epoch.store(epoch, std::memory_order_relaxed);
  board.steps.store(steps, std::memory_order_relaxed);
  board.step.store(0, std::memory_order_relaxed);
  // The block starts before the loaders do, as DLIO's does before iterating
  // the DataLoader: prefetching counts toward the first step.
  begin_block();
  for (auto& a : accs) {
    a->loader.Start(*a->plan, plan::Split::kTrain, epoch, a->log.enabled());
  }
  Status status;
  std::vector<Clock::time_point> ends;
  Clock::time_point load_start = Clock::now();
  for (std::uint64_t step = 0; step < steps; ++step) {
    status = GatherStep(accs, signal, load_start, epoch, "train");
    const bool failed = !status.ok();
    if (!failed) ComputeStep(session, accs, /*eval=*/false, load_start, spin, &ends);
    // The barrier that emulates the gradient allreduce; it also tells every
    // rank whether any rank failed, so nobody waits for a rank that stopped,
    // or received a signal (the largest signal number, interrupt.h).
    const int agreed = cluster.BarrierMax(failed ? kStepFailed : session::InterruptSignal());
    any_failed = agreed == kStepFailed;
    if (!failed) {
      const Clock::time_point released = Clock::now();
      for (std::size_t i = 0; i < accs.size(); ++i) {
        accs[i]->phase.barrier.push_back(SecondsBetween(ends[i], released));
      }
      session.AddBarrierSeconds(SecondsBetween(ends[0], released));
      if (SecondsBetween(ends[0], released) >= metrics::kBarrierEventSeconds) {
        accs[0]->phase.barrier_waits.push_back({step + 1, ends[0], released});
      }
      if (session.tracer().enabled()) {
        const Clock::time_point computed = *std::max_element(ends.begin(), ends.end());
        session.tracer().Complete("step", "barrier", computed, released);
        session.tracer().Complete("step", "train_step", load_start, released,
                                  {"epoch", static_cast<std::int64_t>(epoch)},
                                  {"step", static_cast<std::int64_t>(step + 1)});
      }
    }
    if (any_failed) break;
    if (agreed != 0) {
      interrupted = agreed;
      // Stopped after the epoch's last step, the epoch is whole.
      for (metrics::EpochRecord& r : records) r.partial = step + 1 < steps;
      break;
    }
    board.step.store(step + 1, std::memory_order_relaxed);
    if (checkpointer != nullptr && plan::CheckpointAfterStep(c, step + 1)) {
      // Step mode: the checkpoint sits between two blocks, outside AU
      // (docs/dlio-compat.md §3.2).
      // Checkpoints are written with one accelerator per process.
      end_block();
      metrics::CheckpointRecord save;
      save.index = records[0].saves.size() + 1;
      status = SaveWithProgress(session, *checkpointer, epoch, step + 1, &save);
      records[0].saves.push_back(save);
      status = cluster.AgreeOnStatus(status);
      if (!status.ok()) {
        any_failed = true;
        break;
      }
      begin_block();
    }
    load_start = Clock::now();
  }
  for (auto& a : accs) a->loader.Finish();
  if (!accs[0]->phase.compute.empty() || records[0].blocks.empty()) end_block();
  if (!any_failed) cluster.Barrier();
  if (!any_failed && interrupted == 0 && checkpointer != nullptr &&
      plan::CheckpointAfterEpoch(c, epoch)) {
    metrics::CheckpointRecord save;
    save.index = records[0].saves.size() + 1;
    status = SaveWithProgress(session, *checkpointer, epoch, steps, &save);
    records[0].saves.push_back(save);
  }
  return status;
}

// One evaluation pass of every accelerator of this process (no barriers).
Status EvalEpoch(session::Session& session, std::vector<std::unique_ptr<Accelerator>>& accs,
                 ReadySignal& signal, std::uint64_t epoch,
                 std::vector<metrics::EpochRecord>& records) {
  const bool spin = CanSpin(accs.size());
  const Stamp start = Stamp::Now();
  const session::IoSnapshot io_start = session.storage().Snapshot();
  const std::uint64_t steps = PlanPass(session, accs, plan::Split::kEval, epoch);
  session::ProgressBoard& board = session.progress();
  session::PhaseScope phase(board, session::RunPhase::kEval);
  board.steps.store(steps, std::memory_order_relaxed);
  board.step.store(0, std::memory_order_relaxed);
  for (auto& a : accs) {
    a->phase = PhaseRecord();
    a->phase.start = start;
    a->loader.Start(*a->plan, plan::Split::kEval, epoch, a->log.enabled());
  }
  Status status;
  std::vector<Clock::time_point> ends;
  Clock::time_point load_start = Clock::now();
  for (std::uint64_t step = 0; step < steps; ++step) {
    // Evaluation has no per-step barrier: a signal stops this rank's pass
    // here, and the ranks agree on it after the epoch (TrainLoop).
    if (session::InterruptSignal() != 0) break;
    status = GatherStep(accs, signal, load_start, epoch, "eval");
    if (!status.ok()) break;
    ComputeStep(session, accs, /*eval=*/true, load_start, spin, &ends);
    if (session.tracer().enabled()) {
      session.tracer().Complete("step", "eval_step", load_start,
                                *std::max_element(ends.begin(), ends.end()),
                                {"epoch", static_cast<std::int64_t>(epoch)},
                                {"step", static_cast<std::int64_t>(step + 1)});
    }
    board.step.store(step + 1, std::memory_order_relaxed);
    load_start = Clock::now();
  }
  for (auto& a : accs) a->loader.Finish();
  const Stamp end = Stamp::Now();
  const std::uint64_t bytes = (session.storage().Snapshot() - io_start).bytes_read;
  for (std::size_t i = 0; i < accs.size(); ++i) {
    accs[i]->phase.end = end;
    accs[i]->phase.bytes_read = bytes;
    records[i].eval = std::move(accs[i]->phase);
  }
  return status;
}

}  // namespace

namespace {

// The split folders and the first and last file of each split (more with
// dataset.skip_listing) as this rank sees them.
Status CheckDatasetFiles(session::Session& session) {
  const plan::DatasetLayout& layout = session.layout();
  const config::Config& c = session.config();
  Status status;
  std::vector<std::pair<plan::Split, std::uint64_t>> splits = {
      {plan::Split::kTrain, c.workflow.train ? layout.num_files(plan::Split::kTrain) : 0},
      {plan::Split::kEval, c.workflow.evaluation ? layout.num_files(plan::Split::kEval) : 0}};
  for (auto [split, files] : splits) {
    if (files == 0 || !status.ok()) continue;
    const std::string dir = layout.SplitDirectory(split);
    Result<FileInfo> d = session.storage().Stat(dir);
    if (!d.ok() && !d.status().IsNotFound()) {
      status = d.status().WithContext("checking the data folder");
      break;
    }
    if (!d.ok() || !d->is_directory) {
      status = Status::NotFound("data folder " + dir +
                                " does not exist; generate the dataset first with "
                                "'iomimic generate' or ++workload.workflow.generate_data=True");
      break;
    }
    // iomimic never lists a folder: the plan names the files. It checks
    // the first and the last; with MLPerf's fork's dataset.skip_listing,
    // the first, the last and every listing_validation_interval-th as the
    // fork does, or none when that interval is 0.
    std::vector<std::uint64_t> checked;
    const std::uint64_t interval = c.dataset.listing_validation_interval;
    if (!c.dataset.skip_listing) {
      checked = {0, files - 1};
    } else if (interval > 0) {
      for (std::uint64_t i = 0; i < files; i += interval) checked.push_back(i);
      if (checked.back() != files - 1) checked.push_back(files - 1);
    }
    for (std::uint64_t i : checked) {
      const std::string path = layout.FilePath(split, i);
      Result<FileInfo> f = session.storage().Stat(path);
      if (!f.ok() && !f.status().IsNotFound()) {  // a link loop, EACCES: not "missing"
        status = f.status().WithContext("checking the dataset");
        break;
      }
      if (!f.ok()) {
        status = Status::NotFound("dataset incomplete: " + path + " is missing (expected " +
                                  std::to_string(files) + " " + plan::SplitName(split) +
                                  " files); generate it with 'iomimic generate' or "
                                  "++workload.workflow.generate_data=True");
        break;
      }
    }
  }
  return status;
}

// Collective: when the dataset check failed on several hosts, each failure
// names them all ("...; 3 hosts lack it: h2, h3, h4"), so a user fixes every
// mount at once rather than one per run (AgreeOnStatus reports the lowest
// failing rank's message and its host).
Status NameEveryHostWithout(cluster::Cluster& cluster, const std::vector<std::string>& hosts,
                            const Status& status) {
  const std::vector<std::string> failed =
      cluster.AllGatherStrings(status.ok() ? std::string() : std::string("x"));
  std::vector<std::string> failed_hosts;
  for (std::size_t r = 0; r < failed.size() && r < hosts.size(); ++r) {
    if (failed[r].empty()) continue;
    if (std::find(failed_hosts.begin(), failed_hosts.end(), hosts[r]) == failed_hosts.end()) {
      failed_hosts.push_back(hosts[r]);
    }
  }
  if (status.ok() || failed_hosts.size() < 2) return status;
  std::string list;
  for (const std::string& h : failed_hosts) list += (list.empty() ? "" : ", ") + h;
  return Status(status.code(), status.message() + "; " + std::to_string(failed_hosts.size()) +
                                   " hosts fail this check: " + list);
}

}  // namespace

Status CheckDataset(session::Session& session) {
  const plan::DatasetLayout& layout = session.layout();
  const config::Config& c = session.config();
  cluster::Cluster& cluster = session.cluster();
  // The first rank of each host looks: a host whose view of the data folder
  // differs (node-local storage, a mount missing on one client) is named
  // before training starts, not found by a read mid-epoch.
  const std::vector<std::string> hosts = cluster.AllGatherStrings(cluster.hostname());
  const auto first = std::find(hosts.begin(), hosts.end(), cluster.hostname());
  Status status;
  if (first - hosts.begin() == cluster.rank()) {
    status = CheckDatasetFiles(session);  // AgreeOnStatus names the host
  }
  if (cluster.rank() == 0) {
    // Collective back ends read each step as byte ranges of one shared file:
    // ask the format for the first sample's ranges now, so a format (or a
    // file layout, such as chunked HDF5) that cannot give them is refused
    // before training rather than at the first step.
    const std::uint64_t train_files = c.workflow.train ? layout.num_files(plan::Split::kTrain) : 0;
    if (status.ok() && train_files > 0 && session.storage().capabilities().collective) {
      const std::string path = layout.FilePath(plan::Split::kTrain, 0);
      ReaderOptions options;
      options.storage = &session.storage();
      options.decode = false;
      Result<std::unique_ptr<FileReader>> reader = session.format().OpenReader(path, options);
      Status ranges = reader.ok() ? (*reader)->SampleRanges(0).status() : reader.status();
      if (!ranges.ok()) {
        status = ranges.WithContext("storage '" + session.storage().name() + "' (" +
                                    session.storage().capabilities().data_path +
                                    ") reads every step as byte ranges of one file, but format '" +
                                    session.format().name() + "' cannot describe a sample of " +
                                    path + " that way (an independent mode reads it)");
      }
    }
  }
  return cluster.AgreeOnStatus(NameEveryHostWithout(cluster, hosts, status));
}

Result<CheckpointOnlyResult> RunCheckpointOnly(session::Session& session,
                                               Checkpointer& checkpointer) {
  const config::Config& c = session.config();
  cluster::Cluster& cluster = session.cluster();
  CheckpointOnlyResult result;
  // DLIO sleeps |time_between_checkpoints| (the -1 default sleeps 1 s).
  const double pause = std::fabs(c.checkpoint.time_between_checkpoints);
  const std::int64_t writes = std::max<std::int64_t>(0, c.checkpoint.num_checkpoints_write);
  const std::int64_t reads = std::max<std::int64_t>(0, c.checkpoint.num_checkpoints_read);
  // Saves use epoch 1 and steps 1..N, loads read the same checkpoints back.
  auto repeat = [&](std::int64_t count, bool save,
                    std::vector<metrics::CheckpointRecord>* records) -> Status {
    for (std::int64_t i = 1; i <= count; ++i) {
      PreciseSleep(pause);
      // The barrier before each checkpoint also tells whether a rank
      // received a signal (interrupt.h): then every rank stops here.
      if (const int agreed = cluster.BarrierMax(session::InterruptSignal()); agreed != 0) {
        result.interrupted_by = agreed;
        return Status::OK();
      }
      metrics::CheckpointRecord record;
      record.index = static_cast<std::uint64_t>(i);
      const std::uint64_t step = static_cast<std::uint64_t>(i);
      session::ProgressBoard& board = session.progress();
      session::PhaseScope phase(
          board, save ? session::RunPhase::kCheckpointWrite : session::RunPhase::kCheckpointRead);
      board.checkpoint.store(i, std::memory_order_relaxed);
      board.checkpoints.store(count, std::memory_order_relaxed);
      Status status =
          save ? checkpointer.Save(1, step, &record) : checkpointer.Load(1, step, &record);
      // Agreeing on the outcome synchronises the ranks; with rank_sync the
      // timed interval ends there, so it covers the slowest rank.
      IOMIMIC_RETURN_IF_ERROR(cluster.AgreeOnStatus(status));
      if (c.checkpoint.rank_sync) record.end = Stamp::Now();
      records->push_back(record);
    }
    return Status::OK();
  };
  IOMIMIC_RETURN_IF_ERROR(repeat(writes, /*save=*/true, &result.saves));
  // checkpoint.async: the last save's background write ends before reads.
  IOMIMIC_RETURN_IF_ERROR(cluster.AgreeOnStatus(checkpointer.Finish()));
  if (result.interrupted_by == 0) {
    IOMIMIC_RETURN_IF_ERROR(repeat(reads, /*save=*/false, &result.loads));
  }
  return result;
}

Result<TrainResult> Train(session::Session& session, const TrainOptions& options) {
  const config::Config& c = session.config();
  cluster::Cluster& cluster = session.cluster();
  const std::size_t per_process =
      static_cast<std::size_t>(std::max<std::uint64_t>(1, options.accelerators_per_process));
  if (per_process > 1) {
    if (options.checkpointer != nullptr) {
      return Status::NotSupported(
          "checkpointing with several accelerators per process "
          "(iomimic.accelerators_per_process > 1) is not supported; use one per process");
    }
    if (session.storage().capabilities().collective) {
      return Status::NotSupported("storage '" + session.storage().name() +
                                  "' reads collectively, one caller per rank; it cannot serve "
                                  "several accelerators per process");
    }
    if (c.reader.read_threads == 0) {
      return Status::InvalidArgument(
          "several accelerators per process (iomimic.accelerators_per_process > 1) need reader "
          "threads of their own: set reader.read_threads to 1 or more");
    }
  }
  const int world = cluster.size() * static_cast<int>(per_process);
  TrainResult result;
  result.accelerators_per_process = static_cast<int>(per_process);
  result.train_steps_per_epoch = plan::TrainStepsPerEpoch(c, world);
  result.eval_steps_per_epoch = plan::EvalStepsPerEpoch(c, world);

  ReadySignal signal;
  std::vector<std::unique_ptr<Accelerator>> accs;
  for (std::size_t local = 0; local < per_process; ++local) {
    const int id = cluster.rank() * static_cast<int>(per_process) + static_cast<int>(local);
    accs.push_back(std::make_unique<Accelerator>(session, id, &signal, options));
  }

  if (c.iomimic.startup_load) {
    IOMIMIC_RETURN_IF_ERROR(cluster.AgreeOnStatus(StartupLoad(session, accs)));
  }
  cluster.Barrier();
  result.start = Stamp::Now();
  for (std::uint64_t epoch = 1; epoch <= c.train.epochs; ++epoch) {
    std::vector<metrics::EpochRecord> records(per_process);
    const Stamp start = Stamp::Now();
    for (metrics::EpochRecord& r : records) {
      r.epoch = epoch;
      r.start = start;
    }
    const std::uint64_t faults_before = MinorFaults();
    // DLIO records the host's memory when an epoch starts.
    const std::map<std::string, std::string> meminfo =
        metrics::ReadKeyValues("/proc/meminfo", false);
    bool any_failed = false;
    int interrupted = 0;
    Status status = TrainEpoch(session, accs, signal, epoch, options.checkpointer, records,
                               any_failed, interrupted);
    IOMIMIC_RETURN_IF_ERROR(cluster.AgreeOnStatus(status));
    if (interrupted == 0 && plan::EvaluateAfterEpoch(c, epoch) && result.eval_steps_per_epoch > 0) {
      status = EvalEpoch(session, accs, signal, epoch, records);
      IOMIMIC_RETURN_IF_ERROR(cluster.AgreeOnStatus(status));
    }
    // A signal during evaluation or the epoch's checkpoint (no step barrier
    // sees it there): the ranks agree on it before the next epoch, or
    // before the run ends after the last one.
    if (interrupted == 0) interrupted = cluster.BarrierMax(session::InterruptSignal());
    const Stamp end = Stamp::Now();
    session.tracer().Complete("epoch", "epoch", start.mono, end.mono,
                              {"epoch", static_cast<std::int64_t>(epoch)});
    for (metrics::EpochRecord& r : records) {
      r.end = end;
      r.host_meminfo = meminfo;
    }
    // Page faults are the process's: counted once, on its first accelerator.
    records[0].minor_faults = MinorFaults() - faults_before;
    if (options.on_epoch) options.on_epoch(records[0]);
    for (std::size_t i = 0; i < per_process; ++i) {
      accs[i]->epochs.push_back(std::move(records[i]));
      if (options.on_epochs_so_far) options.on_epochs_so_far(accs[i]->id, accs[i]->epochs);
    }
    if (interrupted != 0) {  // the epochs so far are the result
      result.interrupted_by = interrupted;
      break;
    }
  }
  // checkpoint.async: the last save's background write belongs to the run.
  if (options.checkpointer != nullptr) {
    IOMIMIC_RETURN_IF_ERROR(cluster.AgreeOnStatus(options.checkpointer->Finish()));
  }
  result.end = Stamp::Now();
  for (auto& a : accs) {
    result.accelerators.push_back(AcceleratorRecords{a->id, std::move(a->epochs)});
  }
  result.epochs = result.accelerators[0].epochs;
  return result;
}

}  // namespace iomimic::train
