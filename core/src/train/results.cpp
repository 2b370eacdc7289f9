#include "train/results.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "metrics/figures_json.h"
#include "output/json_stream.h"
#include "output/model.h"
#include "output/writers.h"
#include "session/session.h"

namespace iomimic::train {
namespace {

using json = nlohmann::ordered_json;
using metrics::JsonNumber;
using metrics::Seconds;
using output::kGiB;
using output::kMiB;

bool MeetsAu(const config::Config& c, double au_percent) {
  return au_percent >= 100.0 * c.metric.au;
}

// Per-epoch AU and throughput over all accelerators of all ranks.
// The epochs that count in the per-epoch series and means: all but a last
// one a signal cut short (metrics::EpochRecord::partial; the ranks agree on
// where they stopped, so every rank leaves the same one out).
std::size_t WholeEpochs(const std::vector<metrics::EpochRecord>& epochs) {
  return !epochs.empty() && epochs.back().partial ? epochs.size() - 1 : epochs.size();
}

void CollectPhaseSeries(const TrainResult& train, const config::Config& c, int accelerators,
                        cluster::Cluster& cluster, TrainResults* out) {
  const std::size_t n = WholeEpochs(train.epochs);
  std::vector<double> local(4 * n);
  for (const AcceleratorRecords& a : train.accelerators) {
    for (std::size_t i = 0; i < n && i < a.epochs.size(); ++i) {
      const metrics::EpochMetrics m = metrics::ComputeEpochMetrics(a.epochs[i], c);
      local[i] += m.train.au_percent;
      local[n + i] += m.train.samples_per_second;
      if (m.eval) {
        local[2 * n + i] += m.eval->au_percent;
        local[3 * n + i] += m.eval->samples_per_second;
      }
    }
  }
  const std::vector<double> summed = cluster.SumDoubles(local);
  PhaseSeries eval;
  for (std::size_t i = 0; i < n; ++i) {
    out->train.au_percent.push_back(summed[i] / accelerators);
    out->train.samples_per_second.push_back(summed[n + i]);
    if (train.epochs[i].eval) {
      eval.au_percent.push_back(summed[2 * n + i] / accelerators);
      eval.samples_per_second.push_back(summed[3 * n + i]);
    }
  }
  out->train.au = metrics::Summarize(out->train.au_percent);
  out->train.throughput = metrics::Summarize(out->train.samples_per_second);
  if (!eval.au_percent.empty()) {
    eval.au = metrics::Summarize(eval.au_percent);
    eval.throughput = metrics::Summarize(eval.samples_per_second);
    out->eval = std::move(eval);
  }
}

TrainResults CollectTrain(const TrainResult& train, const config::Config& c, int accelerators,
                          cluster::Cluster& cluster) {
  TrainResults t;
  t.epochs = train.epochs.size();
  t.steps_per_epoch = train.train_steps_per_epoch;
  t.eval_steps_per_epoch = train.eval_steps_per_epoch;
  CollectPhaseSeries(train, c, accelerators, cluster, &t);
  if (WholeEpochs(train.epochs) < train.epochs.size()) {
    const metrics::EpochRecord& cut = train.epochs.back();
    std::uint64_t steps = 0;
    for (const metrics::PhaseRecord& b : cut.blocks) steps += b.steps();
    t.partial_epoch = PartialEpoch{cut.epoch, steps};
  }

  // Bytes and wall time are the process's: its accelerators share one
  // storage counter and step in lockstep, so the first one's epochs stand
  // for the process.
  std::vector<std::uint64_t> bytes;
  std::vector<double> wall;
  for (std::size_t i = 0; i < WholeEpochs(train.epochs); ++i) {
    const metrics::EpochRecord& e = train.epochs[i];
    std::uint64_t b = 0;
    double w = 0;
    for (const metrics::PhaseRecord& block : e.blocks) {
      b += block.bytes_read;
      w += Seconds(block.start, block.end);
    }
    bytes.push_back(b);
    wall.push_back(w);
    t.minor_faults_per_epoch.push_back(e.minor_faults);
  }
  bytes = cluster.SumU64s(bytes);
  const std::vector<double> slowest_wall = cluster.MaxDoubles(wall);  // one collective
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const double slowest = slowest_wall[i];
    t.actual_MiB_per_second.push_back(slowest > 0 ? static_cast<double>(bytes[i]) / kMiB / slowest
                                                  : 0);
    t.seconds += slowest;
    t.bytes_read += bytes[i];
  }
  // Minor page faults: near zero after the first epoch when the hot path
  // reuses its memory.
  t.minor_faults_per_epoch = cluster.SumU64s(t.minor_faults_per_epoch);

  double barrier_sum = 0, measured = 0, requested = 0;
  std::uint64_t barrier_n = 0;
  for (const AcceleratorRecords& a : train.accelerators) {
    for (const metrics::EpochRecord& e : a.epochs) {
      for (const metrics::PhaseRecord& b : e.blocks) {
        for (double v : b.barrier) barrier_sum += v;
        barrier_n += b.barrier.size();
        measured += b.compute_measured;
        requested += b.compute_requested;
      }
    }
  }
  // One collective for the four sums (counts below 2^53 are exact as doubles).
  const std::vector<double> sums =
      cluster.SumDoubles({measured, requested, barrier_sum, static_cast<double>(barrier_n)});
  t.compute_measured_seconds = sums[0];
  t.compute_requested_seconds = sums[1];
  const double all_barrier = sums[2];
  const double all_n = sums[3];
  t.barrier_mean_ms = all_n > 0 ? all_barrier / all_n * 1e3 : 0;
  return t;
}

// Every rank's duration and bytes of each checkpoint (every rank has the same
// number), so the slowest and fastest rank can be named (MLPerf reports the
// slowest).
std::vector<CheckpointEvent> CollectCheckpoints(const std::vector<metrics::CheckpointRecord>& list,
                                                const std::vector<std::uint64_t>& epochs,
                                                cluster::Cluster& cluster) {
  const std::size_t world = static_cast<std::size_t>(cluster.size());
  const std::size_t rank = static_cast<std::size_t>(cluster.rank());
  std::vector<CheckpointEvent> out;
  for (std::size_t k = 0; k < list.size(); ++k) {
    const metrics::CheckpointRecord& r = list[k];
    std::vector<double> durations(world, 0.0);
    durations[rank] = r.duration();
    durations = cluster.SumDoubles(durations);
    std::vector<std::uint64_t> bytes(world, 0);
    bytes[rank] = r.bytes;
    bytes = cluster.SumU64s(bytes);
    CheckpointEvent ev;
    ev.index = r.index;
    ev.epoch = k < epochs.size() ? epochs[k] : 1;
    ev.start = r.start;
    ev.end = r.end;
    ev.rank0_seconds = durations[0];
    std::size_t slow = 0, fast = 0;
    double min_tp = -1;
    for (std::size_t i = 0; i < world; ++i) {
      if (durations[i] > durations[slow]) slow = i;
      if (durations[i] < durations[fast]) fast = i;
      ev.bytes += bytes[i];
      if (bytes[i] > 0 && durations[i] > 0) {
        const double tp = static_cast<double>(bytes[i]) / kGiB / durations[i];
        if (min_tp < 0 || tp < min_tp) min_tp = tp;
      }
    }
    ev.max_seconds = durations[slow];
    ev.min_seconds = durations[fast];
    ev.slowest_rank = static_cast<int>(slow);
    ev.fastest_rank = static_cast<int>(fast);
    ev.min_rank_GiB_per_second = min_tp < 0 ? 0.0 : min_tp;
    out.push_back(ev);
  }
  return out;
}

// Checkpoint throughput per event from rank 0's durations, as DLIO's
// summary computes it (the checkpoint's size over rank 0's time).
std::vector<double> Rank0Durations(const std::vector<CheckpointEvent>& events) {
  std::vector<double> out;
  for (const CheckpointEvent& e : events) out.push_back(e.rank0_seconds);
  return out;
}

std::vector<double> Rates(double gib, const std::vector<double>& durations) {
  std::vector<double> out;
  for (double d : durations) out.push_back(d > 0 ? gib / d : 0.0);
  return out;
}

json CheckpointDetails(const std::vector<CheckpointEvent>& events) {
  json out = json::array();
  for (const CheckpointEvent& e : events) {
    json d;
    d["index"] = e.index;
    d["bytes"] = e.bytes;
    d["duration_max_seconds"] = JsonNumber<json>(e.max_seconds);
    d["duration_min_seconds"] = JsonNumber<json>(e.min_seconds);
    d["throughput_GiB_per_second"] =
        JsonNumber<json>(e.max_seconds > 0 ? static_cast<double>(e.bytes) /
                                                 (1024.0 * 1024.0 * 1024.0) / e.max_seconds
                                           : 0.0);
    d["min_rank_throughput_GiB_per_second"] = JsonNumber<json>(e.min_rank_GiB_per_second);
    d["slowest_rank"] = e.slowest_rank;
    d["fastest_rank"] = e.fastest_rank;
    if (e.residency.ranks > 0) {  // a load (session/cache_honesty.h)
      const bool measured = e.residency.all_measured();
      d["resident_bytes"] = measured ? json(e.residency.resident_bytes) : json(nullptr);
      d["resident_fraction"] =
          measured ? json(JsonNumber<json>(e.residency.fraction())) : json(nullptr);
      d["read_path"] = session::ResidencyVerdict(e.residency);
    }
    out.push_back(d);
  }
  return out;
}

// The per-step lists of <id>_output.json, in DLIO's order.
struct StepListField {
  const char* name;
  std::vector<double> metrics::PhaseRecord::*values;
};

constexpr StepListField kStepLists[] = {{"load", &metrics::PhaseRecord::load},
                                        {"proc", &metrics::PhaseRecord::proc},
                                        {"compute", &metrics::PhaseRecord::compute}};

// <id>_output.json: `host` (small, given as a tree), then per epoch the
// per-step lists load, proc and compute of every block (and of "eval"),
// streamed from the records, then au, throughput and end, as DLIO's file
// has them. A list longer than iomimic.max_step_list is written as means of
// k steps (output/json_stream.h); the epoch's "steps_per_entry" names k of
// each such list. `max_k` receives the largest k.
Status WriteAcceleratorOutput(const std::string& path, const json& host,
                              const std::vector<metrics::EpochRecord>& epochs,
                              const config::Config& c, std::uint64_t* max_k) {
  output::JsonStream out;
  IOMIMIC_RETURN_IF_ERROR(out.Open(path));
  for (const auto& [key, value] : host.items()) {
    out.Key(key);
    out.Raw(output::DumpJson(value));
  }
  *max_k = 1;
  for (const metrics::EpochRecord& e : epochs) {
    // The epoch's phases: its blocks, then its evaluation.
    std::vector<std::pair<std::string, const metrics::PhaseRecord*>> phases;
    for (const metrics::PhaseRecord& b : e.blocks) {
      phases.emplace_back("block" + std::to_string(b.index), &b);
    }
    if (e.eval) phases.emplace_back("eval", &*e.eval);
    std::vector<std::uint64_t> k;
    json steps_per_entry = json::object();
    for (const auto& [key, r] : phases) {
      const std::size_t steps = std::max({r->load.size(), r->proc.size(), r->compute.size()});
      k.push_back(output::StepsPerEntry(steps, c.iomimic.max_step_list));
      if (k.back() > 1) steps_per_entry[key] = k.back();
      *max_k = std::max(*max_k, k.back());
    }
    out.Key(std::to_string(e.epoch));
    out.BeginObject();
    for (const auto& [name, values] : kStepLists) {
      out.Key(name);
      out.BeginObject();
      for (std::size_t p = 0; p < phases.size(); ++p) {
        out.Key(phases[p].first);
        out.StepList(phases[p].second->*values, k[p]);
      }
      out.EndObject();
    }
    const metrics::EpochMetrics m = metrics::ComputeEpochMetrics(e, c);
    json aus = json::object(), tps = json::object();
    for (std::size_t i = 0; i < e.blocks.size(); ++i) {
      aus["block" + std::to_string(e.blocks[i].index)] = JsonNumber<json>(m.blocks[i].au_percent);
      tps["block" + std::to_string(e.blocks[i].index)] =
          JsonNumber<json>(m.blocks[i].samples_per_second);
    }
    if (m.eval) {
      aus["eval"] = JsonNumber<json>(m.eval->au_percent);
      tps["eval"] = JsonNumber<json>(m.eval->samples_per_second);
    }
    out.Key("au");
    out.Raw(output::DumpJson(aus));
    out.Key("throughput");
    out.Raw(output::DumpJson(tps));
    if (!e.host_meminfo.empty()) {
      out.Key("host_meminfo");
      out.Raw(output::DumpJson(output::StringMapJson(e.host_meminfo)));
    }
    out.Key("end");
    out.Raw(output::DumpJson(output::Timestamp(e.end.wall)));
    if (!steps_per_entry.empty()) {
      out.Key("steps_per_entry");
      out.Raw(output::DumpJson(steps_per_entry));
    }
    out.EndObject();
  }
  return out.Close();
}

// DLIO's nine keys of a phase ("train" or "eval"), in DLIO's order.
void AddPhaseMetric(const std::string& p, const PhaseSeries& s, const config::Config& c,
                    json* metric) {
  const double record = static_cast<double>(c.dataset.record_length_bytes);
  json& m = *metric;
  m[p + "_au_percentage"] = metrics::JsonNumbers<json>(s.au_percent);
  m[p + "_au_mean_percentage"] = JsonNumber<json>(s.au.mean);
  m[p + "_au_meet_expectation"] = MeetsAu(c, s.au.mean) ? "success" : "fail";
  m[p + "_au_stdev_percentage"] = JsonNumber<json>(s.au.stdev);
  m[p + "_throughput_samples_per_second"] = metrics::JsonNumbers<json>(s.samples_per_second);
  m[p + "_throughput_mean_samples_per_second"] = JsonNumber<json>(s.throughput.mean);
  m[p + "_throughput_stdev_samples_per_second"] = JsonNumber<json>(s.throughput.stdev);
  m[p + "_io_mean_MB_per_second"] = JsonNumber<json>(s.throughput.mean * record / kMiB);
  m[p + "_io_stdev_MB_per_second"] = JsonNumber<json>(s.throughput.stdev * record / kMiB);
}

// DLIO's checkpoint keys: rank 0's save (and load) rates and durations.
void AddCheckpointMetric(const CheckpointResults& ck, json* metric) {
  json& m = *metric;
  const double gib = ck.size_gib();
  const std::vector<double> saves = Rank0Durations(ck.saves);
  const std::vector<double> loads = Rank0Durations(ck.loads);
  const metrics::MeanStdev st = metrics::Summarize(Rates(gib, saves));
  const metrics::MeanStdev sd = metrics::Summarize(saves);
  // DLIO writes NaN for an empty list; strict JSON gets null.
  const bool any_save = !saves.empty();
  m["save_checkpoint_io_mean_GB_per_second"] = any_save ? JsonNumber<json>(st.mean) : json(nullptr);
  m["save_checkpoint_io_stdev_GB_per_second"] =
      any_save ? JsonNumber<json>(st.stdev) : json(nullptr);
  m["save_checkpoint_duration_mean_seconds"] = any_save ? JsonNumber<json>(sd.mean) : json(nullptr);
  m["save_checkpoint_duration_stdev_seconds"] =
      any_save ? JsonNumber<json>(sd.stdev) : json(nullptr);
  if (!loads.empty()) {
    const metrics::MeanStdev lt = metrics::Summarize(Rates(gib, loads));
    const metrics::MeanStdev ld = metrics::Summarize(loads);
    m["load_checkpoint_io_mean_GB_per_second"] = JsonNumber<json>(lt.mean);
    m["load_checkpoint_io_stdev_GB_per_second"] = JsonNumber<json>(lt.stdev);
    m["load_checkpoint_duration_mean_seconds"] = JsonNumber<json>(ld.mean);
    m["load_checkpoint_duration_stdev_seconds"] = JsonNumber<json>(ld.stdev);
  }
  m["checkpoint_size_GB"] = JsonNumber<json>(gib);
}

// summary.json's "metric": DLIO's figures of training, evaluation and
// checkpoints.
json DlioMetric(const TrainingResults& r, const config::Config& c) {
  json metric = json::object();
  if (r.train && r.train->epochs > 0) AddPhaseMetric("train", r.train->train, c, &metric);
  if (r.train && r.train->eval) AddPhaseMetric("eval", *r.train->eval, c, &metric);
  if (c.workflow.checkpoint && r.checkpoint) AddCheckpointMetric(*r.checkpoint, &metric);
  return metric;
}

// iomimic's training figures: steps, measured throughput, barriers, the
// emulated compute's accuracy and page faults.
void AddTrainFigures(const TrainResults& t, double record, json* io) {
  json& o = *io;
  o["train_steps_per_epoch"] = t.steps_per_epoch;
  o["eval_steps_per_epoch"] = t.eval_steps_per_epoch;
  // A signal's partial epoch: in the per-rank files, out of every mean.
  o["partial_epoch"] = t.partial_epoch ? json{{"epoch", t.partial_epoch->epoch},
                                              {"steps", t.partial_epoch->steps},
                                              {"in_means", false}}
                                       : json(nullptr);
  o["train_io_actual_MiB_per_second"] = metrics::JsonNumbers<json>(t.actual_MiB_per_second);
  o["train_io_actual_mean_MiB_per_second"] =
      JsonNumber<json>(metrics::Summarize(t.actual_MiB_per_second).mean);
  // Bytes over time: what the hosts' train_io_MiB_per_second add up to
  // (the mean above is a mean of per-epoch rates, as DLIO's figures are).
  o["train_io_actual_overall_MiB_per_second"] =
      JsonNumber<json>(t.seconds > 0 ? static_cast<double>(t.bytes_read) / kMiB / t.seconds : 0.0);
  o["train_io_nominal_mean_MiB_per_second"] =
      JsonNumber<json>(t.train.throughput.mean * record / kMiB);
  o["train_bytes_read"] = t.bytes_read;
  o["barrier_mean_ms"] = JsonNumber<json>(t.barrier_mean_ms);
  o["compute_requested_seconds"] = JsonNumber<json>(t.compute_requested_seconds);
  o["compute_measured_seconds"] = JsonNumber<json>(t.compute_measured_seconds);
  o["compute_error_percent"] =
      JsonNumber<json>(t.compute_requested_seconds > 0
                           ? 100.0 * (t.compute_measured_seconds - t.compute_requested_seconds) /
                                 t.compute_requested_seconds
                           : 0.0);
  // Time the emulated compute took beyond what was asked: not counted in AU.
  o["compute_overshoot_seconds"] =
      JsonNumber<json>(t.compute_measured_seconds - t.compute_requested_seconds);
  o["minor_page_faults_per_epoch"] = t.minor_faults_per_epoch;
}

// The checkpoints' storage, plan and every save and load.
json CheckpointJson(const CheckpointResults& ck) {
  json o;
  o["storage"] = ck.storage;
  o["fsync"] = ck.fsync;
  o["fsync_calls"] = ck.fsync_calls;
  o["size_bytes"] = ck.size_bytes;
  o["parameters"] = ck.parameters;
  o["layout"] = ck.layout;
  if (ck.layout == "dcp") {
    o["thread_count"] = ck.thread_count;
    o["restore_world_size"] = ck.restore_world_size;
  }
  if (!ck.async_saves.empty()) {
    // Training waits for the stall only; the write goes on behind it.
    json list = json::array();
    for (const AsyncSaveEvent& e : ck.async_saves) {
      json a;
      a["index"] = e.index;
      a["stall_seconds"] = JsonNumber<json>(e.stall_seconds);
      a["wait_seconds"] = JsonNumber<json>(e.wait_seconds);
      a["staging_seconds"] = JsonNumber<json>(e.staging_seconds);
      a["background_write_seconds"] = JsonNumber<json>(e.write_seconds);
      a["bytes"] = e.bytes;
      a["background_write_GiB_per_second"] = JsonNumber<json>(
          e.write_seconds > 0 ? static_cast<double>(e.bytes) / kGiB / e.write_seconds : 0.0);
      list.push_back(std::move(a));
    }
    o["async_saves"] = std::move(list);
  }
  o["saves"] = CheckpointDetails(ck.saves);
  o["loads"] = CheckpointDetails(ck.loads);
  if (!ck.read_path.empty()) o["read_path"] = ck.read_path;
  return o;
}

// The training set against the hosts' memory (session/cache_honesty.h).
json CacheCheckJson(const session::CacheCheck& check) {
  json o;
  o["dataset_GB"] = JsonNumber<json>(static_cast<double>(check.dataset_bytes) / kGiB);
  o["nominal_GB"] = JsonNumber<json>(static_cast<double>(check.nominal_bytes) / kGiB);
  o["files"] = check.files;
  o["files_measured"] = check.files_measured;
  o["resident_fraction"] =
      check.residency_measured ? json(JsonNumber<json>(check.resident_fraction())) : json(nullptr);
  o["resident_GB"] = check.residency_measured
                         ? json(JsonNumber<json>(static_cast<double>(check.resident_bytes) / kGiB))
                         : json(nullptr);
  if (!check.residency_measured) o["residency_not_measured"] = check.residency_why_not;
  o["hosts_memory_GB"] = JsonNumber<json>(static_cast<double>(check.memory_bytes) / kGiB);
  o["hosts"] = check.hosts;
  o["fits_in_memory"] = check.fits;
  o["client_page_cache"] = check.client_cache;
  o["warning"] = check.warning.empty() ? json(nullptr) : json(check.warning);
  return o;
}

// Generation's figures (files written, skipped, shared; bytes; rate).
json GenerateJson(const GenerateResults& g, const std::string& data_path) {
  json o;
  o["files_written"] = g.files_written;
  o["files_skipped"] = g.files_skipped;
  // Files every rank wrote its part of (shared-file generation), and how.
  o["files_written_by_all_ranks"] = g.files_written_by_all_ranks;
  if (g.files_written_by_all_ranks > 0) {
    o["shared_write_path"] = data_path + " (File::WriteAtAll)";
  }
  o["bytes_written"] = g.bytes_written;
  o["bytes_written_per_rank"] = g.bytes_written_per_rank;
  o["seconds"] = JsonNumber<json>(g.seconds);
  o["MiB_per_second"] =
      JsonNumber<json>(g.seconds > 0 ? static_cast<double>(g.bytes_written) / kMiB / g.seconds : 0);
  return o;
}

// Generation's figures over ranks (every rank takes part, generating or not).
GenerateResults CollectGenerate(const TrainingResults::Local& outcome, cluster::Cluster& cluster,
                                int ranks) {
  const GenerateReport none;
  const GenerateReport& g = outcome.generate ? *outcome.generate : none;
  GenerateResults gen;
  // One sum: the four totals, then each rank's bytes in its own slot.
  std::vector<std::uint64_t> sums(4 + static_cast<std::size_t>(ranks), 0);
  sums[0] = g.files_written;
  sums[1] = g.files_written_by_all_ranks;
  sums[2] = g.files_skipped;
  sums[3] = g.bytes_written;
  sums[4 + static_cast<std::size_t>(cluster.rank())] = g.bytes_written;
  sums = cluster.SumU64s(sums);
  gen.files_written = sums[0];
  gen.files_written_by_all_ranks = sums[1];
  gen.files_skipped = sums[2];
  gen.bytes_written = sums[3];
  gen.bytes_written_per_rank.assign(sums.begin() + 4, sums.end());
  gen.seconds = cluster.MaxDouble(g.seconds);
  return gen;
}

// checkpoint.async saves over ranks: every rank makes the same saves, so
// the k-th of each rank is the same save; the slowest rank's times.
std::vector<AsyncSaveEvent> CollectAsyncSaves(const std::vector<AsyncSave>& mine,
                                              cluster::Cluster& cluster) {
  const std::size_t count =
      static_cast<std::size_t>(cluster.MaxDouble(static_cast<double>(mine.size())));
  std::vector<double> times(4 * count, 0.0);
  std::vector<std::uint64_t> bytes(count, 0);
  for (std::size_t k = 0; k < mine.size() && k < count; ++k) {
    times[4 * k] = mine[k].stall_seconds();
    times[4 * k + 1] = mine[k].wait_seconds;
    times[4 * k + 2] = mine[k].staging_seconds;
    times[4 * k + 3] = mine[k].write_seconds;
    bytes[k] = mine[k].bytes;
  }
  times = cluster.MaxDoubles(times);
  bytes = cluster.SumU64s(bytes);
  std::vector<AsyncSaveEvent> out;
  for (std::size_t k = 0; k < count; ++k) {
    AsyncSaveEvent e;
    e.index = k < mine.size() ? mine[k].index : k + 1;
    e.stall_seconds = times[4 * k];
    e.wait_seconds = times[4 * k + 1];
    e.staging_seconds = times[4 * k + 2];
    e.write_seconds = times[4 * k + 3];
    e.bytes = bytes[k];
    out.push_back(e);
  }
  return out;
}

// The checkpoints' storage, plan and every save and load over ranks (the
// checkpoint-only workflow's saves count as epoch 1's).
CheckpointResults CollectCheckpoint(const TrainingResults::Local& outcome, const config::Config& c,
                                    cluster::Cluster& cluster) {
  CheckpointResults ck;
  ck.storage = outcome.checkpointer->storage_name();
  ck.fsync = c.checkpoint.fsync;
  ck.fsync_calls = cluster.SumU64(outcome.checkpointer->fsync_calls());
  ck.size_bytes = outcome.checkpointer->checkpoint_bytes();
  ck.layout = outcome.checkpointer->layout();
  if (ck.layout == "dcp") {
    ck.thread_count = static_cast<int>(c.checkpoint.thread_count);
    ck.restore_world_size = c.checkpoint.restore_world_size > 0
                                ? static_cast<int>(c.checkpoint.restore_world_size)
                                : cluster.size();
  }
  ck.async_saves = CollectAsyncSaves(outcome.checkpointer->async_saves(), cluster);
  ck.parameters = outcome.checkpointer->plan().parameters;
  std::vector<metrics::CheckpointRecord> saves, loads;
  std::vector<std::uint64_t> save_epochs;
  if (outcome.train) {
    for (const metrics::EpochRecord& e : outcome.train->epochs) {
      for (const metrics::CheckpointRecord& s : e.saves) {
        saves.push_back(s);
        save_epochs.push_back(e.epoch);
      }
    }
  }
  if (outcome.checkpoint_only) {
    saves = outcome.checkpoint_only->saves;
    loads = outcome.checkpoint_only->loads;
    save_epochs.assign(saves.size(), 1);
  }
  ck.saves = CollectCheckpoints(saves, save_epochs, cluster);
  ck.loads = CollectCheckpoints(loads, {}, cluster);
  // What each load found in the page cache, summed over ranks, labels it
  // (session/cache_honesty.h).
  session::ResidencyTotals all_loads;
  for (std::size_t k = 0; k < ck.loads.size() && k < loads.size(); ++k) {
    ck.loads[k].residency = session::SumResidency(loads[k].residency, cluster);
    all_loads = session::AddResidency(all_loads, ck.loads[k].residency);
  }
  if (!ck.loads.empty()) {
    ck.read_path = session::CheckpointReadLabel(all_loads, outcome.checkpointer->read_conditions());
  }
  return ck;
}

// results.read_pattern: what one epoch reads of the format's files, so that a
// reader of the results can tell a deliberate reread from a fault.
void DescribeReadPattern(const config::Config& c, session::Session& session, TrainingResults* r) {
  const FormatTraits& t = session.format().traits();
  const std::uint64_t spf = std::max<std::uint64_t>(1, c.dataset.num_samples_per_file);
  if (!c.iomimic.read_script.empty()) {
    r->read_pattern = "the reads of iomimic.read_script per sample (not the format's)";
  } else if (c.iomimic.random_read_bytes > 0) {
    r->read_pattern = "random reads of iomimic.random_read_bytes per sample (not the format's)";
  } else if (t.streamed) {
    r->read_pattern =
        "each file streamed once per epoch in reader.transfer_size requests, by one reader thread "
        "(tf.data's interleave)";
  } else if (!t.multi_sample_files || spf == 1) {
    r->read_pattern = "each file read once per epoch";
  } else if (t.partial_reads) {
    r->read_pattern =
        "each sample's bytes read once per epoch, plus the format's metadata per open";
  } else if (c.reader.read_type == config::ReadType::kMemory) {
    r->read_pattern = "each file read whole once per reader that needs it (read_type memory)";
  } else {
    r->read_pattern = "the whole file read for each of its samples (DLIO's read_type on_demand): " +
                      std::to_string(spf) + "x the dataset per epoch, on purpose";
    r->read_pattern_factor = static_cast<double>(spf);
  }
}

// This rank's events, from its records.
void RankEvents(const TrainingResults::Local& outcome, std::chrono::system_clock::time_point origin,
                int rank, std::vector<output::EventEntry>* events) {
  std::vector<output::EventEntry>& out = *events;
  auto add = [&](const char* name, std::uint64_t epoch, std::uint64_t index,
                 const metrics::Stamp& start, const metrics::Stamp& end, std::uint64_t bytes) {
    if (!start.valid() || !end.valid()) return;
    out.push_back({rank, name, epoch, index, output::SinceOrigin(origin, start),
                   output::SinceOrigin(origin, end), bytes});
  };
  if (outcome.generate) {
    add("generate", 0, 0, outcome.generate->start, outcome.generate->end,
        outcome.generate->bytes_written);
  }
  if (outcome.train) {
    for (const metrics::EpochRecord& e : outcome.train->epochs) {
      std::uint64_t bytes = 0;
      for (const metrics::PhaseRecord& b : e.blocks) bytes += b.bytes_read;
      add("epoch", e.epoch, 0, e.start, e.end, bytes);
      for (const metrics::PhaseRecord& b : e.blocks) {
        add("train_block", e.epoch, b.index, b.start, b.end, b.bytes_read);
        // Barrier waits, on the wall clock through the block's start.
        for (const metrics::PhaseRecord::BarrierWait& w : b.barrier_waits) {
          metrics::Stamp from, to;
          from.mono = w.start;
          from.wall =
              b.start.wall + std::chrono::duration_cast<std::chrono::system_clock::duration>(
                                 w.start - b.start.mono);
          to.mono = w.end;
          to.wall = b.start.wall + std::chrono::duration_cast<std::chrono::system_clock::duration>(
                                       w.end - b.start.mono);
          add("barrier_wait", e.epoch, w.step, from, to, 0);
        }
      }
      if (e.eval) add("eval", e.epoch, 0, e.eval->start, e.eval->end, e.eval->bytes_read);
      for (const metrics::CheckpointRecord& s : e.saves) {
        add("checkpoint_save", e.epoch, s.index, s.start, s.end, s.bytes);
      }
    }
  }
  if (outcome.checkpoint_only) {
    for (const auto& s : outcome.checkpoint_only->saves) {
      add("checkpoint_save", 1, s.index, s.start, s.end, s.bytes);
    }
    for (const auto& l : outcome.checkpoint_only->loads) {
      add("checkpoint_load", 1, l.index, l.start, l.end, l.bytes);
    }
  }
}

// This rank's histograms of what the outcome recorded: the steps' waits for
// data (training, evaluation) and the checkpoints' saves and loads.
struct OutcomeHistograms {
  metrics::LatencyHistogram data_wait, eval_data_wait, saves, loads;
};

OutcomeHistograms RecordOutcome(const TrainingResults::Local& outcome) {
  OutcomeHistograms h;
  auto seconds = [](double s) { return static_cast<std::uint64_t>(std::max(0.0, s) * 1e9); };
  if (outcome.train) {
    for (const AcceleratorRecords& a : outcome.train->accelerators) {
      for (const metrics::EpochRecord& e : a.epochs) {
        for (const metrics::PhaseRecord& b : e.blocks) {
          for (double v : b.load) h.data_wait.Record(seconds(v));
        }
        if (e.eval) {
          for (double v : e.eval->load) h.eval_data_wait.Record(seconds(v));
        }
      }
    }
    for (const metrics::EpochRecord& e : outcome.train->epochs) {
      for (const metrics::CheckpointRecord& s : e.saves) h.saves.Record(seconds(s.duration()));
    }
  }
  if (outcome.checkpoint_only) {
    for (const auto& s : outcome.checkpoint_only->saves) h.saves.Record(seconds(s.duration()));
    for (const auto& l : outcome.checkpoint_only->loads) h.loads.Record(seconds(l.duration()));
  }
  return h;
}

// This rank's training figures for its host row: the whole epochs' bytes
// (as the run's train_bytes_read), waits for data and each accelerator's
// mean AU and throughput.
void AddHostFigures(const TrainingResults::Local& outcome, const config::Config& c,
                    output::RankFigures& f) {
  if (!outcome.train) return;
  // The whole epochs', as the run's train_bytes_read and training seconds.
  for (std::size_t i = 0; i < WholeEpochs(outcome.train->epochs); ++i) {
    for (const metrics::PhaseRecord& b : outcome.train->epochs[i].blocks) {
      f.train_bytes_read += b.bytes_read;
    }
  }
  for (const AcceleratorRecords& a : outcome.train->accelerators) {
    double au = 0, throughput = 0;
    const std::size_t whole = WholeEpochs(a.epochs);
    for (std::size_t i = 0; i < a.epochs.size(); ++i) {
      const metrics::EpochRecord& e = a.epochs[i];
      for (const metrics::PhaseRecord& b : e.blocks) {
        for (double v : b.load) f.data_wait_seconds += v;
      }
      if (i >= whole) continue;  // a partial epoch stays out of the means
      const metrics::EpochMetrics m = metrics::ComputeEpochMetrics(e, c);
      au += m.train.au_percent;
      throughput += m.train.samples_per_second;
    }
    if (whole > 0) {
      f.au_percent_sum += au / static_cast<double>(whole);
      f.samples_per_second_sum += throughput / static_cast<double>(whole);
    }
  }
}

Status WriteAcceleratorFiles(const std::string& folder, int rank, const output::RunResults& results,
                             const TrainingResults::Local& outcome, double checkpoint_gib,
                             const config::Config& c, std::uint64_t* max_steps_per_entry) {
  *max_steps_per_entry = 1;
  if (outcome.checkpoint_only) {
    json epoch1 = json::object();
    for (const auto& r : outcome.checkpoint_only->saves) {
      epoch1["save_ckpt" + std::to_string(r.index)] =
          output::CheckpointStatsJson(r, checkpoint_gib);
    }
    for (const auto& r : outcome.checkpoint_only->loads) {
      epoch1["load_ckpt" + std::to_string(r.index)] =
          output::CheckpointStatsJson(r, checkpoint_gib);
    }
    json stats = json::object();
    stats["1"] = epoch1;
    IOMIMIC_RETURN_IF_ERROR(
        output::WriteTextFile(folder + "/" + std::to_string(rank) + "_per_epoch_stats.json",
                              output::DumpJson(stats) + "\n"));
  }
  if (!outcome.train) return Status::OK();
  const output::HostFacts& h = results.host;
  // Each rank's own share of the dataset against its host's memory, as DLIO.
  json host;
  host["host_memory_GB"] = JsonNumber<json>(h.memory_gib);
  host["host_cpu_count"] = h.cpus;
  host["host_processor_name"] = h.processor;
  host["potential_caching"] = h.memory_gib > results.data_size_per_host_gib ? 1 : 0;
  host["host_cpuinfo"] = output::StringMapJson(h.cpuinfo);
  host["host_meminfo"] = output::StringMapJson(h.meminfo);
  host["hostname"] = results.hostname;
  for (const AcceleratorRecords& acc : outcome.train->accelerators) {
    const std::string id = std::to_string(acc.id);
    IOMIMIC_RETURN_IF_ERROR(
        output::WriteTextFile(folder + "/" + id + "_per_epoch_stats.json",
                              output::PerEpochStatsText(acc.epochs, checkpoint_gib)));
    std::uint64_t k = 1;
    IOMIMIC_RETURN_IF_ERROR(
        WriteAcceleratorOutput(folder + "/" + id + "_output.json", host, acc.epochs, c, &k));
    *max_steps_per_entry = std::max(*max_steps_per_entry, k);
  }
  return Status::OK();
}

// "[METRIC] <what>: <mean> (<stdev>)", `digits` decimals: a line of DLIO's
// [METRIC] block.
std::string MetricLine(const std::string& what, double mean, double stdev, int digits = 4) {
  char line[256];
  std::snprintf(line, sizeof(line), "[METRIC] %s: %.*f (%.*f)\n", what.c_str(), digits, mean,
                digits, stdev);
  return line;
}

// DLIO's wording of a phase's [METRIC] lines, which differs between training
// and evaluation, as do the decimals of the throughputs.
struct PhaseMetricWords {
  const char* au;         // AU (percent)
  const char* samples;    // throughput, samples per second
  const char* megabytes;  // throughput, MB per second
  const char* meets;      // AU at least metric.au
  int throughput_digits;
};
constexpr PhaseMetricWords kTrainMetricWords{
    "Training Accelerator Utilization [AU] (%)", "Training Throughput (samples/second)",
    "Training I/O Throughput (MB/second)", "train_au_meet_expectation", 4};
constexpr PhaseMetricWords kEvalMetricWords{
    "Eval Accelerator Utilization [AU] (%)", "Eval Throughput (samples/second)",
    "Eval Throughput (MB/second)", "eval_au_meet_expectation", 6};

// A phase's [METRIC] lines: AU, throughput in samples and MB per second, and
// whether the AU meets metric.au.
std::string PhaseMetricLines(const PhaseMetricWords& words, const PhaseSeries& s,
                             const config::Config& c) {
  const double record = static_cast<double>(c.dataset.record_length_bytes);
  const int digits = words.throughput_digits;
  return MetricLine(words.au, s.au.mean, s.au.stdev) +
         MetricLine(words.samples, s.throughput.mean, s.throughput.stdev, digits) +
         MetricLine(words.megabytes, s.throughput.mean * record / kMiB,
                    s.throughput.stdev * record / kMiB, digits) +
         "[METRIC] " + words.meets + ": " + (MeetsAu(c, s.au.mean) ? "success" : "fail") + "\n";
}

}  // namespace

std::string DlioProgressLog(const std::vector<metrics::EpochRecord>& epochs,
                            const config::Config& c, std::uint64_t steps_per_epoch,
                            std::uint64_t eval_steps_per_epoch, int accelerators,
                            const std::string& folder) {
  struct Entry {
    std::chrono::system_clock::time_point at;
    int order;  // keeps lines of the same instant in DLIO's order
    std::string text;
  };
  std::vector<Entry> lines;
  int order = 0;
  char buf[512];
  auto add = [&](std::chrono::system_clock::time_point at, const std::string& text) {
    lines.push_back({at, order++, "[OUTPUT] " + output::Timestamp(at) + " " + text});
  };
  const std::uint64_t first = c.output.exclude_start_steps;
  const std::uint64_t end_excluded = c.output.exclude_end_steps;
  std::uint64_t overall_steps = 0;
  for (const metrics::EpochRecord& e : epochs) {
    const metrics::EpochMetrics m = metrics::ComputeEpochMetrics(e, c);
    const unsigned long long epoch = e.epoch;
    std::snprintf(buf, sizeof(buf), "Starting epoch %llu: %llu steps expected", epoch,
                  static_cast<unsigned long long>(steps_per_epoch));
    add(e.start.wall, buf);
    std::uint64_t epoch_steps = 0;
    for (std::size_t i = 0; i < e.blocks.size(); ++i) {
      const metrics::PhaseRecord& b = e.blocks[i];
      const unsigned long long block = b.index;
      add(b.start.wall, "Starting block " + std::to_string(block));
      std::snprintf(buf, sizeof(buf), "Ending block %llu - %llu steps completed in %.2f s", block,
                    static_cast<unsigned long long>(b.steps()), metrics::Seconds(b.start, b.end));
      add(b.end.wall, buf);
      const metrics::PhaseMetrics& pm = i < m.blocks.size() ? m.blocks[i] : metrics::PhaseMetrics{};
      std::snprintf(buf, sizeof(buf),
                    "Epoch %llu - Block %llu [Training] Accelerator Utilization [AU] (%%): %.4f",
                    epoch, block, pm.au_percent);
      add(b.end.wall, buf);
      std::snprintf(buf, sizeof(buf),
                    "Epoch %llu - Block %llu [Training] Throughput (samples/second): %.4f", epoch,
                    block, pm.samples_per_second * accelerators);
      add(b.end.wall, buf);
      // DLIO: mean and stdev of the compute of the metric window's steps.
      std::vector<double> window;
      const std::uint64_t n = b.compute.size();
      const std::uint64_t last = n > end_excluded ? n - end_excluded : 0;
      for (std::uint64_t s = first; s < last; ++s) window.push_back(b.compute[s]);
      const metrics::MeanStdev w = metrics::Summarize(window);
      std::snprintf(buf, sizeof(buf),
                    "Epoch %llu - Block %llu [Training] Computation time per step (second): "
                    "%.4f+/-%.4f (set value: %g)",
                    epoch, block, w.mean, w.stdev, c.train.computation_time.Expected());
      add(b.end.wall, buf);
      epoch_steps += b.steps();
    }
    // Checkpoints: the run's step count when each started (DLIO's
    // "after total step").
    for (const metrics::CheckpointRecord& k : e.saves) {
      std::uint64_t steps_before = overall_steps;
      for (const metrics::PhaseRecord& b : e.blocks) {
        if (b.end.mono <= k.start.mono) steps_before += b.steps();
      }
      std::snprintf(buf, sizeof(buf),
                    "Starting checkpoint %llu after total step %llu for epoch %llu",
                    static_cast<unsigned long long>(k.index),
                    static_cast<unsigned long long>(steps_before), epoch);
      add(k.start.wall, buf);
      std::snprintf(buf, sizeof(buf), "Ending checkpoint %llu for epoch %llu",
                    static_cast<unsigned long long>(k.index), epoch);
      add(k.end.wall, buf);
    }
    overall_steps += epoch_steps;
    // DLIO ends the epoch when training ends, before it evaluates.
    const metrics::Stamp& trained = e.blocks.empty() ? e.end : e.blocks.back().end;
    std::snprintf(buf, sizeof(buf), "Ending epoch %llu - %llu steps completed in %.2f s", epoch,
                  static_cast<unsigned long long>(epoch_steps), metrics::Seconds(e.start, trained));
    add(trained.wall, buf);
    if (e.eval && m.eval) {
      std::snprintf(buf, sizeof(buf), "Starting eval - %llu steps expected",
                    static_cast<unsigned long long>(eval_steps_per_epoch));
      add(e.eval->start.wall, buf);
      std::snprintf(buf, sizeof(buf), "Ending eval - %llu steps completed in %.2f s",
                    static_cast<unsigned long long>(eval_steps_per_epoch),
                    metrics::Seconds(e.eval->start, e.eval->end));
      add(e.eval->end.wall, buf);
      std::snprintf(buf, sizeof(buf), "Epoch %llu [Eval] Accelerator Utilization [AU] (%%): %.4f",
                    epoch, m.eval->au_percent);
      add(e.eval->end.wall, buf);
      std::snprintf(buf, sizeof(buf), "Epoch %llu [Eval] Throughput (samples/second): %.4f", epoch,
                    m.eval->samples_per_second * accelerators);
      add(e.eval->end.wall, buf);
    }
  }
  std::stable_sort(lines.begin(), lines.end(), [](const Entry& a, const Entry& b) {
    return a.at != b.at ? a.at < b.at : a.order < b.order;
  });
  std::string out;
  for (const Entry& l : lines) out += l.text + "\n";
  out += "[OUTPUT] " + output::Timestamp(std::chrono::system_clock::now()) + " Saved outputs in " +
         folder + "\n";
  return out;
}

int TrainingResults::accelerators_per_process() const {
  return local_.train ? local_.train->accelerators_per_process : 1;
}

int TrainingResults::interrupted_by() const {
  return local_.train             ? local_.train->interrupted_by
         : local_.checkpoint_only ? local_.checkpoint_only->interrupted_by
                                  : 0;
}

void TrainingResults::AddEvents(std::chrono::system_clock::time_point origin, int rank,
                                std::vector<output::EventEntry>* events) const {
  RankEvents(local_, origin, rank, events);
}

std::vector<std::pair<std::string, metrics::LatencyHistogram>> TrainingResults::Histograms() const {
  OutcomeHistograms h = RecordOutcome(local_);
  return {{"step_data_wait", std::move(h.data_wait)},
          {"eval_step_data_wait", std::move(h.eval_data_wait)},
          {"checkpoint_save", std::move(h.saves)},
          {"checkpoint_load", std::move(h.loads)}};
}

void TrainingResults::AddRankFigures(const config::Config& config,
                                     output::RankFigures* figures) const {
  AddHostFigures(local_, config, *figures);
}

std::vector<const session::CountingStorage*> TrainingResults::other_storage() const {
  if (local_.checkpointer == nullptr) return {};
  return {&local_.checkpointer->storage()};
}

Status TrainingResults::Collect(session::Session& session, output::RunResults& run) {
  cluster::Cluster& cluster = session.cluster();
  const config::Config& c = session.config();
  cache_check = local_.cache_check;
  if (local_.train) {
    train = CollectTrain(*local_.train, c, run.accelerators, cluster);
    run.host_rate_seconds = train->seconds;
  }
  // Every rank takes part, generating or not.
  GenerateResults gen = CollectGenerate(local_, cluster, run.ranks);
  if (local_.generate) generate = std::move(gen);
  if (local_.checkpointer != nullptr) checkpoint = CollectCheckpoint(local_, c, cluster);
  if (c.workflow.train && session.has_format()) DescribeReadPattern(c, session, this);
  local_.checkpointer = nullptr;  // the run owns it; these results may outlive it
  return Status::OK();
}

void TrainingResults::AddToSummary(const output::RunResults& run,
                                   const config::LoadedManifest& manifest, json& summary,
                                   json& iomimic) const {
  const config::Config& c = manifest.config;
  summary["metric"] = DlioMetric(*this, c);
  summary["epochs"] = train ? train->epochs : 0;
  if (train) AddTrainFigures(*train, static_cast<double>(c.dataset.record_length_bytes), &iomimic);
  if (checkpoint) iomimic["checkpoint"] = CheckpointJson(*checkpoint);
  if (cache_check.checked) iomimic["cache_check"] = CacheCheckJson(cache_check);
  if (!read_pattern.empty()) {
    iomimic["read_pattern"] = read_pattern;
    iomimic["read_pattern_factor"] = JsonNumber<json>(read_pattern_factor);
  }
  if (generate) iomimic["generate"] = GenerateJson(*generate, run.data_path);
}

Status TrainingResults::WriteRankFiles(const std::string& folder, const output::RunResults& run,
                                       const config::Config& config) {
  return WriteAcceleratorFiles(folder, run.rank, run, local_,
                               checkpoint ? checkpoint->size_gib() : 0.0, config,
                               &max_steps_per_entry);
}

std::string TrainingResults::LogText(const output::RunResults& run, const config::Config& config,
                                     const std::string& folder) const {
  if (!local_.train || local_.train->accelerators.empty()) return {};
  return DlioProgressLog(local_.train->accelerators.front().epochs, config,
                         local_.train->train_steps_per_epoch, local_.train->eval_steps_per_epoch,
                         run.accelerators, folder);
}

std::string TrainingResults::MetricLines(const output::RunResults& run,
                                         const config::Config& c) const {
  (void)run;
  const TrainingResults& r = *this;
  std::string out;
  if (r.train && r.train->epochs > 0) out += PhaseMetricLines(kTrainMetricWords, r.train->train, c);
  if (r.checkpoint) {
    const double gib = r.checkpoint->size_gib();
    auto figures = [&](const char* what, const std::vector<CheckpointEvent>& events) {
      if (events.empty()) return;
      const std::vector<double> durations = Rank0Durations(events);
      const metrics::MeanStdev d = metrics::Summarize(durations);
      const metrics::MeanStdev t = metrics::Summarize(Rates(gib, durations));
      out += MetricLine("Checkpoint " + std::string(what) + " duration (seconds)", d.mean, d.stdev);
      out += MetricLine("Checkpoint " + std::string(what) + " I/O Throughput (GB/second)", t.mean,
                        t.stdev);
    };
    figures("save", r.checkpoint->saves);
    figures("load", r.checkpoint->loads);
  }
  if (r.train && r.train->eval) out += PhaseMetricLines(kEvalMetricWords, *r.train->eval, c);
  return out;
}

std::string TrainingResults::ConsoleLines(const output::RunResults& run,
                                          const config::Config& c) const {
  (void)run;
  const TrainingResults& r = *this;
  const double record = static_cast<double>(c.dataset.record_length_bytes);
  std::ostringstream h;
  char line[512];
  if (r.generate) {
    std::snprintf(line, sizeof(line),
                  "  generate: %llu files written, %llu already complete, %.1f MiB in %.2f s\n",
                  static_cast<unsigned long long>(r.generate->files_written),
                  static_cast<unsigned long long>(r.generate->files_skipped),
                  r.generate->bytes_written / kMiB, r.generate->seconds);
    h << line;
  }
  if (r.train && r.train->epochs > 0) {
    const TrainResults& t = *r.train;
    std::snprintf(line, sizeof(line),
                  "  train: %llu epochs x %llu steps, AU %.2f%% (threshold %.0f%%: %s), "
                  "%.1f samples/s, %.2f MiB/s nominal, %.2f MiB/s read\n",
                  static_cast<unsigned long long>(t.epochs),
                  static_cast<unsigned long long>(t.steps_per_epoch), t.train.au.mean,
                  100.0 * c.metric.au, MeetsAu(c, t.train.au.mean) ? "success" : "fail",
                  t.train.throughput.mean, t.train.throughput.mean * record / kMiB,
                  metrics::Summarize(t.actual_MiB_per_second).mean);
    h << line;
    if (t.partial_epoch) {
      std::snprintf(line, sizeof(line),
                    "  epoch %llu stopped after %llu step(s): partial, left out of the means "
                    "above\n",
                    static_cast<unsigned long long>(t.partial_epoch->epoch),
                    static_cast<unsigned long long>(t.partial_epoch->steps));
      h << line;
    }
    // AU counts the steps after metric.exclude_start_steps and before
    // exclude_end_steps of each epoch: with no step left, AU is 0 by design.
    const std::uint64_t excluded = c.output.exclude_start_steps + c.output.exclude_end_steps;
    if (t.steps_per_epoch <= excluded) {
      std::snprintf(
          line, sizeof(line),
          "  AU: %llu step(s) per epoch, all excluded from AU (output.metric.exclude_start_steps "
          "%llu, exclude_end_steps %llu, as DLIO), so AU is 0 by design: give more "
          "steps per epoch or fewer excluded ones to measure it\n",
          static_cast<unsigned long long>(t.steps_per_epoch),
          static_cast<unsigned long long>(c.output.exclude_start_steps),
          static_cast<unsigned long long>(c.output.exclude_end_steps));
      h << line;
    }
  }
  if (r.train && r.train->eval) {
    std::snprintf(line, sizeof(line), "  eval: AU %.2f%%, %.1f samples/s\n", r.train->eval->au.mean,
                  r.train->eval->throughput.mean);
    h << line;
  }
  if (r.checkpoint) {
    const double gib = r.checkpoint->size_gib();
    auto checkpoint_line = [&](const char* what, const std::vector<CheckpointEvent>& events) {
      if (events.empty()) return;
      const std::vector<double> durations = Rank0Durations(events);
      std::snprintf(line, sizeof(line),
                    "  checkpoint %s: %zu x %.3f GiB, %.3f s mean, %.3f GiB/s mean (rank 0)%s\n",
                    what, durations.size(), gib, metrics::Summarize(durations).mean,
                    metrics::Summarize(Rates(gib, durations)).mean,
                    c.checkpoint.fsync ? ", fsync" : "");
      h << line;
    };
    checkpoint_line("save", r.checkpoint->saves);
    if (!r.checkpoint->async_saves.empty()) {
      std::vector<double> stalls, writes;
      for (const AsyncSaveEvent& e : r.checkpoint->async_saves) {
        stalls.push_back(e.stall_seconds);
        writes.push_back(e.write_seconds);
      }
      std::snprintf(line, sizeof(line),
                    "  checkpoint async: training stalled %.3f s mean (staging to host memory), "
                    "background write %.3f s mean, %.3f GiB/s (slowest rank)\n",
                    metrics::Summarize(stalls).mean, metrics::Summarize(writes).mean,
                    metrics::Summarize(Rates(gib, writes)).mean);
      h << line;
    }
    checkpoint_line("load", r.checkpoint->loads);
    if (!r.checkpoint->loads.empty()) {
      h << "  checkpoint reads: " << r.checkpoint->read_path << "\n";
    }
  }
  return h.str();
}

std::string TrainingResults::ConsoleNotes(const output::RunResults& run,
                                          const config::Config& c) const {
  (void)run;
  const TrainingResults& r = *this;
  std::ostringstream h;
  char line[512];
  if (r.read_pattern_factor > 1) h << "  reads: " << r.read_pattern << "\n";
  if (r.max_steps_per_entry > 1) {
    std::snprintf(line, sizeof(line),
                  "  per-step lists in <rank>_output.json hold means of up to %llu steps "
                  "(iomimic.max_step_list=%llu; steps_per_entry in each epoch)\n",
                  static_cast<unsigned long long>(r.max_steps_per_entry),
                  static_cast<unsigned long long>(c.iomimic.max_step_list));
    h << line;
  }
  return h.str();
}

const output::FigureList& Figures() {
  static const output::FigureList figures = {
      {"train AU %", {"metric", "train_au_mean_percentage"}, true},
      {"train samples/s", {"metric", "train_throughput_mean_samples_per_second"}, true},
      {"train MiB/s (nominal)", {"metric", "train_io_mean_MB_per_second"}, true},
      {"train MiB/s (read)", {"iomimic", "train_io_actual_mean_MiB_per_second"}, true},
      {"eval AU %", {"metric", "eval_au_mean_percentage"}, true},
      // Percentiles of no read are no figure (a run that did not train).
      {"sample read p50 ms",
       {"iomimic", "sample_read_latency_ms", "p50"},
       false,
       {"iomimic", "sample_read_latency_ms", "count"}},
      {"sample read p99 ms",
       {"iomimic", "sample_read_latency_ms", "p99"},
       false,
       {"iomimic", "sample_read_latency_ms", "count"}},
      {"read request p99 ms",
       {"iomimic", "read_request_latency_ms", "p99"},
       false,
       {"iomimic", "read_request_latency_ms", "count"}},
      {"step data wait p99 ms", {"iomimic", "latency_ms", "step_data_wait", "p99"}, false},
      {"checkpoint save GiB/s", {"metric", "save_checkpoint_io_mean_GB_per_second"}, true},
      {"checkpoint load GiB/s", {"metric", "load_checkpoint_io_mean_GB_per_second"}, true},
  };
  return figures;
}

}  // namespace iomimic::train
