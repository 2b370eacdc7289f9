#include "engine/trainer.h"

#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <thread>

#include "engine/compute.h"
#include "engine/loader.h"
#include "engine/team.h"
#include "iomimic/random.h"
#include "plan/plan.h"

namespace iomimic::engine {
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

// One training epoch of accelerator `id`. Returns its status; the caller
// agrees on it across accelerators. `any_failed` is set when another
// accelerator failed.
Status TrainEpoch(Session& session, Team& team, int id, Loader& loader, std::uint64_t epoch,
                  TimeSampler& compute, SampleLog& log, Checkpointer* checkpointer,
                  metrics::EpochRecord& record, bool& any_failed) {
  const config::Config& c = session.config();
  plan::EpochPlan plan(c, session.layout(), plan::Split::kTrain, id, team.size(), epoch,
                       session.shuffle_seeds(), session.format().traits().streamed);
  PhaseRecord block;
  IoSnapshot io_start;
  std::uint64_t block_index = 1;
  auto begin_block = [&] {
    block = PhaseRecord();
    block.index = block_index++;
    block.start = Stamp::Now();
    io_start = session.storage().Snapshot();
  };
  auto end_block = [&] {
    block.end = Stamp::Now();
    block.bytes_read = (session.storage().Snapshot() - io_start).read_bytes;
    record.blocks.push_back(std::move(block));
  };
  // The block starts before the loader does, as DLIO's does before iterating
  // the DataLoader: prefetching counts toward the first step.
  begin_block();
  loader.Start(plan, plan::Split::kTrain, epoch, log.enabled());
  Status status;
  auto load_start = std::chrono::steady_clock::now();
  for (std::uint64_t step = 0; step < plan.steps(); ++step) {
    Result<BatchInfo> batch = loader.Next();
    auto loaded = std::chrono::steady_clock::now();
    bool failed = !batch.ok();
    if (!failed) {
      status = log.Write(epoch, "train", *batch);
      failed = !status.ok();
    } else {
      status = batch.status();
    }
    if (!failed) {
      block.load.push_back(std::chrono::duration<double>(loaded - load_start).count());
      const double drawn = compute.Draw();
      block.compute_requested += drawn;
      auto compute_start = std::chrono::steady_clock::now();
      PreciseSleep(drawn);
      auto computed = std::chrono::steady_clock::now();
      block.compute.push_back(drawn);
      block.compute_measured += std::chrono::duration<double>(computed - compute_start).count();
      block.proc.push_back(std::chrono::duration<double>(computed - load_start).count());
      block.samples += batch->samples;
    }
    // The barrier that emulates the gradient allreduce; it also tells every
    // rank whether any rank failed, so nobody waits for a rank that stopped.
    auto barrier_start = std::chrono::steady_clock::now();
    any_failed = team.BarrierAnyFailed(failed);
    if (!failed) {
      block.barrier.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - barrier_start).count());
    }
    if (any_failed) break;
    if (checkpointer != nullptr && plan::CheckpointAfterStep(c, step + 1)) {
      // Step mode: the checkpoint sits between two blocks, outside AU (§4.2).
      end_block();
      metrics::CheckpointRecord save;
      save.index = record.saves.size() + 1;
      status = checkpointer->Save(epoch, step + 1, &save);
      record.saves.push_back(save);
      status = team.AgreeOnStatus(status);
      if (!status.ok()) {
        any_failed = true;
        break;
      }
      begin_block();
    }
    load_start = std::chrono::steady_clock::now();
  }
  loader.Finish();
  if (!block.compute.empty() || record.blocks.empty()) end_block();
  if (!any_failed) team.Barrier();
  if (!any_failed && checkpointer != nullptr && plan::CheckpointAfterEpoch(c, epoch)) {
    metrics::CheckpointRecord save;
    save.index = record.saves.size() + 1;
    status = checkpointer->Save(epoch, plan.steps(), &save);
    record.saves.push_back(save);
  }
  return status;
}

Status EvalEpoch(Session& session, Team& team, int id, Loader& loader, std::uint64_t epoch,
                 TimeSampler& eval_time, SampleLog& log, metrics::EpochRecord& record) {
  const config::Config& c = session.config();
  plan::EpochPlan plan(c, session.layout(), plan::Split::kEval, id, team.size(), epoch,
                       session.shuffle_seeds(), session.format().traits().streamed);
  PhaseRecord eval;
  eval.start = Stamp::Now();
  IoSnapshot io_start = session.storage().Snapshot();
  loader.Start(plan, plan::Split::kEval, epoch, log.enabled());
  Status status;
  auto load_start = std::chrono::steady_clock::now();
  for (std::uint64_t step = 0; step < plan.steps(); ++step) {
    Result<BatchInfo> batch = loader.Next();
    if (!batch.ok()) {
      status = batch.status();
      break;
    }
    auto loaded = std::chrono::steady_clock::now();
    status = log.Write(epoch, "eval", *batch);
    if (!status.ok()) break;
    eval.load.push_back(std::chrono::duration<double>(loaded - load_start).count());
    const double drawn = eval_time.Draw();
    eval.compute_requested += drawn;
    auto compute_start = std::chrono::steady_clock::now();
    PreciseSleep(drawn);
    auto computed = std::chrono::steady_clock::now();
    eval.compute.push_back(drawn);
    eval.compute_measured += std::chrono::duration<double>(computed - compute_start).count();
    eval.proc.push_back(std::chrono::duration<double>(computed - load_start).count());
    eval.samples += batch->samples;
    load_start = std::chrono::steady_clock::now();
  }
  loader.Finish();
  eval.end = Stamp::Now();
  eval.bytes_read = (session.storage().Snapshot() - io_start).read_bytes;
  record.eval = std::move(eval);
  return status;
}

}  // namespace

Status CheckDataset(Session& session) {
  const plan::DatasetLayout& layout = session.layout();
  const config::Config& c = session.config();
  Status status;
  if (session.cluster().rank() == 0) {
    std::vector<std::pair<plan::Split, std::uint64_t>> splits = {
        {plan::Split::kTrain, c.workflow.train ? layout.num_files(plan::Split::kTrain) : 0},
        {plan::Split::kEval, c.workflow.evaluation ? layout.num_files(plan::Split::kEval) : 0}};
    for (auto [split, files] : splits) {
      if (files == 0 || !status.ok()) continue;
      const std::string dir = layout.SplitDirectory(split);
      Result<FileInfo> d = session.storage().Stat(dir);
      if (!d.ok() || !d->is_directory) {
        status = Status::NotFound("data folder " + dir +
                                  " does not exist; generate the dataset first with "
                                  "'iomimic generate' or ++workload.workflow.generate_data=True");
        break;
      }
      for (std::uint64_t i : {std::uint64_t{0}, files - 1}) {
        const std::string path = layout.FilePath(split, i);
        Result<FileInfo> f = session.storage().Stat(path);
        if (!f.ok()) {
          status = Status::NotFound("dataset incomplete: " + path + " is missing (expected " +
                                    std::to_string(files) + " " + plan::SplitName(split) +
                                    " files); generate it with 'iomimic generate' or "
                                    "++workload.workflow.generate_data=True");
          break;
        }
      }
    }
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
  return session.cluster().AgreeOnStatus(status);
}

Result<CheckpointOnlyResult> RunCheckpointOnly(Session& session, Checkpointer& checkpointer) {
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
      cluster.Barrier();
      metrics::CheckpointRecord record;
      record.index = static_cast<std::uint64_t>(i);
      const std::uint64_t step = static_cast<std::uint64_t>(i);
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
  IOMIMIC_RETURN_IF_ERROR(repeat(reads, /*save=*/false, &result.loads));
  return result;
}

namespace {

// The whole run of the process's accelerator `local`: its own loader, compute
// sampler, sample log and records, exactly as if it were rank `id`.
Result<std::vector<metrics::EpochRecord>> RunAccelerator(Session& session, Team& team, int local,
                                                         const TrainOptions& options,
                                                         std::uint64_t eval_steps) {
  const config::Config& c = session.config();
  const int id = team.id(local);
  const bool leader = local == 0;  // reports progress and process-wide figures
  SampleLog log(options.sample_log_path ? options.sample_log_path(id) : std::string());
  const std::uint64_t seed_id = static_cast<std::uint64_t>(id);
  TimeSampler compute(c.train.computation_time, MixSeed(c.train.seed, 1000 + seed_id));
  TimeSampler eval_time(c.evaluation.eval_time, MixSeed(c.train.seed, 2000 + seed_id));
  std::vector<metrics::EpochRecord> epochs;
  // One loader for the whole run: reader threads and their buffers persist
  // across epochs and evaluations.
  Loader loader(session, seed_id);
  team.Barrier();
  for (std::uint64_t epoch = 1; epoch <= c.train.epochs; ++epoch) {
    metrics::EpochRecord record;
    record.epoch = epoch;
    record.start = Stamp::Now();
    const std::uint64_t faults_before = leader ? MinorFaults() : 0;
    bool any_failed = false;
    Status status = TrainEpoch(session, team, id, loader, epoch, compute, log,
                               options.checkpointer, record, any_failed);
    IOMIMIC_RETURN_IF_ERROR(team.AgreeOnStatus(status));
    if (plan::EvaluateAfterEpoch(c, epoch) && eval_steps > 0) {
      status = EvalEpoch(session, team, id, loader, epoch, eval_time, log, record);
      IOMIMIC_RETURN_IF_ERROR(team.AgreeOnStatus(status));
    }
    record.end = Stamp::Now();
    if (leader) {
      record.minor_faults = MinorFaults() - faults_before;
      if (options.on_epoch) options.on_epoch(record);
    }
    epochs.push_back(std::move(record));
  }
  return epochs;
}

}  // namespace

Result<TrainResult> Train(Session& session, const TrainOptions& options) {
  const config::Config& c = session.config();
  cluster::Cluster& cluster = session.cluster();
  const int per_process = static_cast<int>(std::max<std::uint64_t>(1, options.accelerators_per_process));
  if (per_process > 1 && options.checkpointer != nullptr) {
    return Status::NotSupported(
        "checkpointing with several accelerators per process "
        "(iomimic.accelerators_per_process > 1) is not supported; use one per process");
  }
  if (per_process > 1 && session.storage().capabilities().collective) {
    return Status::NotSupported("storage '" + session.storage().name() +
                                "' reads collectively, one caller per rank; it cannot serve "
                                "several accelerators per process");
  }
  Team team(cluster, per_process);
  TrainResult result;
  result.accelerators_per_process = per_process;
  result.train_steps_per_epoch = plan::TrainStepsPerEpoch(c, team.size());
  result.eval_steps_per_epoch = plan::EvalStepsPerEpoch(c, team.size());
  result.accelerators.resize(static_cast<std::size_t>(per_process));

  cluster.Barrier();
  result.start = Stamp::Now();
  if (per_process == 1) {
    IOMIMIC_ASSIGN_OR_RETURN(result.accelerators[0].epochs,
                             RunAccelerator(session, team, 0, options, result.eval_steps_per_epoch));
    result.accelerators[0].id = team.id(0);
  } else {
    std::vector<Status> statuses(static_cast<std::size_t>(per_process));
    std::vector<std::thread> threads;
    threads.reserve(static_cast<std::size_t>(per_process));
    for (int local = 0; local < per_process; ++local) {
      threads.emplace_back([&, local] {
        const std::size_t i = static_cast<std::size_t>(local);
        Result<std::vector<metrics::EpochRecord>> epochs =
            RunAccelerator(session, team, local, options, result.eval_steps_per_epoch);
        if (epochs.ok()) {
          result.accelerators[i].epochs = std::move(epochs).value();
        } else {
          statuses[i] = epochs.status();
        }
        result.accelerators[i].id = team.id(local);
      });
    }
    for (std::thread& t : threads) t.join();
    // Every accelerator agreed on failures, so all failed or none did.
    for (const Status& s : statuses) IOMIMIC_RETURN_IF_ERROR(s);
  }
  result.end = Stamp::Now();
  result.epochs = result.accelerators[0].epochs;
  return result;
}

}  // namespace iomimic::engine
