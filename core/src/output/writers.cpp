#include "output/writers.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "iomimic/version.h"
#include "output/json_stream.h"

namespace iomimic::output {
namespace {

using json = nlohmann::ordered_json;
using metrics::PhaseMetrics;
using metrics::Seconds;

// Darshan's access-size bin names (session::FileCounters::SizeBin).
constexpr const char* kSizeBinNames[session::FileCounters::kSizeBins] = {
    "0_100", "100_1K", "1K_10K",   "10K_100K", "100K_1M",
    "1M_4M", "4M_10M", "10M_100M", "100M_1G",  "1G_PLUS"};

// Strict JSON: NaN and infinities become null.
json Num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

json NumList(const std::vector<double>& values) {
  json out = json::array();
  for (double v : values) out.push_back(Num(v));
  return out;
}

std::string Fixed2(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.2f", v);
  return buf;
}

json ToJson(const std::map<std::string, std::string>& m) {
  json out = json::object();
  for (const auto& [k, v] : m) out[k] = v;
  return out;
}

json Percentiles(const metrics::LatencyHistogram& h) {
  json o;
  o["count"] = h.count();
  o["mean"] = Num(h.mean_ns() / 1e6);
  o["p50"] = Num(h.Percentile(0.50) / 1e6);
  o["p90"] = Num(h.Percentile(0.90) / 1e6);
  o["p99"] = Num(h.Percentile(0.99) / 1e6);
  o["p999"] = Num(h.Percentile(0.999) / 1e6);
  o["max"] = Num(static_cast<double>(h.max_ns()) / 1e6);
  return o;
}

json PluginJson(const PluginResults& p) {
  json o;
  o["name"] = p.info.name;
  o["version"] = p.info.version;
  o["path"] = p.info.path;
  o["capabilities"] = plugin::CapabilityNames(p.info.capabilities);
  json opts = json::object();
  for (const auto& [k, v] : p.options) opts[k] = v;
  o["options"] = opts;
  return o;
}

std::string Dump(const json& value) {
  return value.dump(4, ' ', false, json::error_handler_t::replace);
}

bool MeetsAu(const config::Config& c, double au_percent) {
  return au_percent >= 100.0 * c.metric.au;
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
    d["duration_max_seconds"] = Num(e.max_seconds);
    d["duration_min_seconds"] = Num(e.min_seconds);
    d["throughput_GiB_per_second"] =
        Num(e.max_seconds > 0
                ? static_cast<double>(e.bytes) / (1024.0 * 1024.0 * 1024.0) / e.max_seconds
                : 0.0);
    d["min_rank_throughput_GiB_per_second"] = Num(e.min_rank_GiB_per_second);
    d["slowest_rank"] = e.slowest_rank;
    d["fastest_rank"] = e.fastest_rank;
    if (e.residency.ranks > 0) {  // a load (session/cache_honesty.h)
      const bool measured = e.residency.all_measured();
      d["resident_bytes"] = measured ? json(e.residency.resident_bytes) : json(nullptr);
      d["resident_fraction"] = measured ? json(Num(e.residency.fraction())) : json(nullptr);
      d["read_path"] = session::ResidencyVerdict(e.residency);
    }
    out.push_back(d);
  }
  return out;
}

// A checkpoint's entry in a per-epoch stats file: this rank's own times.
json CheckpointStats(const metrics::CheckpointRecord& r, double size_gib) {
  json o;
  o["start"] = Timestamp(r.start.wall);
  o["end"] = Timestamp(r.end.wall);
  o["duration"] = Num(r.duration());
  o["throughput"] = Num(r.duration() > 0 ? size_gib / r.duration() : 0.0);
  return o;
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
  JsonStream out;
  IOMIMIC_RETURN_IF_ERROR(out.Open(path));
  for (const auto& [key, value] : host.items()) {
    out.Key(key);
    out.Raw(Dump(value));
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
      k.push_back(StepsPerEntry(steps, c.iomimic.max_step_list));
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
    const EpochMetrics m = ComputeEpochMetrics(e, c);
    json aus = json::object(), tps = json::object();
    for (std::size_t i = 0; i < e.blocks.size(); ++i) {
      aus["block" + std::to_string(e.blocks[i].index)] = Num(m.blocks[i].au_percent);
      tps["block" + std::to_string(e.blocks[i].index)] = Num(m.blocks[i].samples_per_second);
    }
    if (m.eval) {
      aus["eval"] = Num(m.eval->au_percent);
      tps["eval"] = Num(m.eval->samples_per_second);
    }
    out.Key("au");
    out.Raw(Dump(aus));
    out.Key("throughput");
    out.Raw(Dump(tps));
    if (!e.host_meminfo.empty()) {
      out.Key("host_meminfo");
      out.Raw(Dump(ToJson(e.host_meminfo)));
    }
    out.Key("end");
    out.Raw(Dump(Timestamp(e.end.wall)));
    if (!steps_per_entry.empty()) {
      out.Key("steps_per_entry");
      out.Raw(Dump(steps_per_entry));
    }
    out.EndObject();
  }
  return out.Close();
}

json PerEpochStats(const std::vector<metrics::EpochRecord>& epochs, double checkpoint_gib) {
  json stats = json::object();
  for (const metrics::EpochRecord& e : epochs) {
    json es;
    es["start"] = Timestamp(e.start.wall);
    es["end"] = Timestamp(e.end.wall);
    es["duration"] = Fixed2(Seconds(e.start, e.end));
    for (const metrics::PhaseRecord& b : e.blocks) {
      json bs;
      bs["start"] = Timestamp(b.start.wall);
      bs["end"] = Timestamp(b.end.wall);
      bs["duration"] = Fixed2(Seconds(b.start, b.end));
      es["block" + std::to_string(b.index)] = bs;
    }
    if (e.eval) {
      json ev;
      ev["start"] = Timestamp(e.eval->start.wall);
      ev["end"] = Timestamp(e.eval->end.wall);
      ev["duration"] = Fixed2(Seconds(e.eval->start, e.eval->end));
      es["eval"] = ev;
    }
    for (const auto& r : e.saves) {
      es["save_ckpt" + std::to_string(r.index)] = CheckpointStats(r, checkpoint_gib);
    }
    // Only an interrupted run has one (its last): left out of the means.
    if (e.partial) es["partial"] = true;
    stats[std::to_string(e.epoch)] = es;
  }
  return stats;
}

}  // namespace

std::string Timestamp(std::chrono::system_clock::time_point t) {
  auto secs = std::chrono::time_point_cast<std::chrono::seconds>(t);
  auto micros = std::chrono::duration_cast<std::chrono::microseconds>(t - secs).count();
  std::time_t tt = std::chrono::system_clock::to_time_t(secs);
  std::tm tm{};
  localtime_r(&tt, &tm);
  char buf[64];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  char out[80];
  std::snprintf(out, sizeof(out), "%s.%06lld", buf, static_cast<long long>(micros));
  return out;
}

std::string PerEpochStatsText(const std::vector<metrics::EpochRecord>& epochs,
                              double checkpoint_gib) {
  return Dump(PerEpochStats(epochs, checkpoint_gib)) + "\n";
}

Status WriteTextFile(const std::string& path, const std::string& text) {
  const std::size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  // Hidden and unique per process; each path has one writer at a time.
  const std::string aside = dir + "." + name + ".tmp-" + std::to_string(::getpid());
  {
    std::ofstream out(aside, std::ios::out | std::ios::trunc);
    if (!out) return Status::IOError("cannot create " + path);
    out << text;
    out.close();
    if (!out) {
      std::remove(aside.c_str());
      return Status::IOError("cannot write " + path);
    }
  }
  if (std::rename(aside.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(aside.c_str());
    return Status::FromErrno(err, "cannot replace " + path);
  }
  return Status::OK();
}

Status WriteAcceleratorFiles(const std::string& folder, int rank, const RunResults& results,
                             const RunOutcome& outcome, const config::Config& c,
                             std::uint64_t* max_steps_per_entry) {
  *max_steps_per_entry = 1;
  const double checkpoint_gib = results.checkpoint ? results.checkpoint->size_gib() : 0.0;
  if (outcome.checkpoint_only) {
    json epoch1 = json::object();
    for (const auto& r : outcome.checkpoint_only->saves) {
      epoch1["save_ckpt" + std::to_string(r.index)] = CheckpointStats(r, checkpoint_gib);
    }
    for (const auto& r : outcome.checkpoint_only->loads) {
      epoch1["load_ckpt" + std::to_string(r.index)] = CheckpointStats(r, checkpoint_gib);
    }
    json stats = json::object();
    stats["1"] = epoch1;
    IOMIMIC_RETURN_IF_ERROR(WriteTextFile(
        folder + "/" + std::to_string(rank) + "_per_epoch_stats.json", Dump(stats) + "\n"));
  }
  if (!outcome.train) return Status::OK();
  const HostFacts& h = results.host;
  // Each rank's own share of the dataset against its host's memory, as DLIO.
  json host;
  host["host_memory_GB"] = Num(h.memory_gib);
  host["host_cpu_count"] = h.cpus;
  host["host_processor_name"] = h.processor;
  host["potential_caching"] = h.memory_gib > results.data_size_per_host_gib ? 1 : 0;
  host["host_cpuinfo"] = ToJson(h.cpuinfo);
  host["host_meminfo"] = ToJson(h.meminfo);
  host["hostname"] = results.hostname;
  for (const train::AcceleratorRecords& acc : outcome.train->accelerators) {
    const std::string id = std::to_string(acc.id);
    IOMIMIC_RETURN_IF_ERROR(WriteTextFile(folder + "/" + id + "_per_epoch_stats.json",
                                          PerEpochStatsText(acc.epochs, checkpoint_gib)));
    std::uint64_t k = 1;
    IOMIMIC_RETURN_IF_ERROR(
        WriteAcceleratorOutput(folder + "/" + id + "_output.json", host, acc.epochs, c, &k));
    *max_steps_per_entry = std::max(*max_steps_per_entry, k);
  }
  return Status::OK();
}

namespace {

// DLIO's nine keys of a phase ("train" or "eval"), in DLIO's order.
void AddPhaseMetric(const std::string& p, const PhaseSeries& s, const config::Config& c,
                    json* metric) {
  const double record = static_cast<double>(c.dataset.record_length_bytes);
  json& m = *metric;
  m[p + "_au_percentage"] = NumList(s.au_percent);
  m[p + "_au_mean_percentage"] = Num(s.au.mean);
  m[p + "_au_meet_expectation"] = MeetsAu(c, s.au.mean) ? "success" : "fail";
  m[p + "_au_stdev_percentage"] = Num(s.au.stdev);
  m[p + "_throughput_samples_per_second"] = NumList(s.samples_per_second);
  m[p + "_throughput_mean_samples_per_second"] = Num(s.throughput.mean);
  m[p + "_throughput_stdev_samples_per_second"] = Num(s.throughput.stdev);
  m[p + "_io_mean_MB_per_second"] = Num(s.throughput.mean * record / kMiB);
  m[p + "_io_stdev_MB_per_second"] = Num(s.throughput.stdev * record / kMiB);
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
  m["save_checkpoint_io_mean_GB_per_second"] = any_save ? Num(st.mean) : json(nullptr);
  m["save_checkpoint_io_stdev_GB_per_second"] = any_save ? Num(st.stdev) : json(nullptr);
  m["save_checkpoint_duration_mean_seconds"] = any_save ? Num(sd.mean) : json(nullptr);
  m["save_checkpoint_duration_stdev_seconds"] = any_save ? Num(sd.stdev) : json(nullptr);
  if (!loads.empty()) {
    const metrics::MeanStdev lt = metrics::Summarize(Rates(gib, loads));
    const metrics::MeanStdev ld = metrics::Summarize(loads);
    m["load_checkpoint_io_mean_GB_per_second"] = Num(lt.mean);
    m["load_checkpoint_io_stdev_GB_per_second"] = Num(lt.stdev);
    m["load_checkpoint_duration_mean_seconds"] = Num(ld.mean);
    m["load_checkpoint_duration_stdev_seconds"] = Num(ld.stdev);
  }
  m["checkpoint_size_GB"] = Num(gib);
}

// summary.json's "metric": DLIO's figures of training, evaluation and
// checkpoints.
json DlioMetric(const RunResults& r, const config::Config& c) {
  json metric = json::object();
  if (r.train && r.train->epochs > 0) AddPhaseMetric("train", r.train->train, c, &metric);
  if (r.train && r.train->eval) AddPhaseMetric("eval", *r.train->eval, c, &metric);
  if (c.workflow.checkpoint && r.checkpoint) AddCheckpointMetric(*r.checkpoint, &metric);
  return metric;
}

// DLIO's host keys of summary.json: per-host lists, then rank 0's host.
void AddHostLists(const RunResults& r, json* summary) {
  json cpu_list = json::array(), caching = json::array(), mem_list = json::array();
  for (int h = 0; h < r.num_hosts; ++h) {
    cpu_list.push_back(static_cast<long>(std::lround(r.host_cpus[h])));
    caching.push_back(r.host_memory_gib[h] > r.data_size_per_host_gib ? 1 : 0);
    mem_list.push_back(Num(r.host_memory_gib[h]));
  }
  json& s = *summary;
  s["host_cpu_count"] = cpu_list;
  s["host_processor_name"] = r.host.processor;
  s["potential_caching"] = caching;
  s["host_cpuinfo"] = ToJson(r.host.cpuinfo);
  s["host_meminfo"] = ToJson(r.host.meminfo);
  s["host_memory_GB"] = mem_list;
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
  o["train_io_actual_MiB_per_second"] = NumList(t.actual_MiB_per_second);
  o["train_io_actual_mean_MiB_per_second"] = Num(metrics::Summarize(t.actual_MiB_per_second).mean);
  // Bytes over time: what the hosts' train_io_MiB_per_second add up to
  // (the mean above is a mean of per-epoch rates, as DLIO's figures are).
  o["train_io_actual_overall_MiB_per_second"] =
      Num(t.seconds > 0 ? static_cast<double>(t.bytes_read) / kMiB / t.seconds : 0.0);
  o["train_io_nominal_mean_MiB_per_second"] = Num(t.train.throughput.mean * record / kMiB);
  o["train_bytes_read"] = t.bytes_read;
  o["barrier_mean_ms"] = Num(t.barrier_mean_ms);
  o["compute_requested_seconds"] = Num(t.compute_requested_seconds);
  o["compute_measured_seconds"] = Num(t.compute_measured_seconds);
  o["compute_error_percent"] =
      Num(t.compute_requested_seconds > 0
              ? 100.0 * (t.compute_measured_seconds - t.compute_requested_seconds) /
                    t.compute_requested_seconds
              : 0.0);
  // Time the emulated compute took beyond what was asked: not counted in AU.
  o["compute_overshoot_seconds"] = Num(t.compute_measured_seconds - t.compute_requested_seconds);
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
  o["saves"] = CheckpointDetails(ck.saves);
  o["loads"] = CheckpointDetails(ck.loads);
  if (!ck.read_path.empty()) o["read_path"] = ck.read_path;
  return o;
}

// The training set against the hosts' memory (session/cache_honesty.h).
json CacheCheckJson(const session::CacheCheck& check) {
  json o;
  o["dataset_GB"] = Num(static_cast<double>(check.dataset_bytes) / kGiB);
  o["nominal_GB"] = Num(static_cast<double>(check.nominal_bytes) / kGiB);
  o["files"] = check.files;
  o["files_measured"] = check.files_measured;
  o["resident_fraction"] =
      check.residency_measured ? json(Num(check.resident_fraction())) : json(nullptr);
  o["resident_GB"] = check.residency_measured
                         ? json(Num(static_cast<double>(check.resident_bytes) / kGiB))
                         : json(nullptr);
  if (!check.residency_measured) o["residency_not_measured"] = check.residency_why_not;
  o["hosts_memory_GB"] = Num(static_cast<double>(check.memory_bytes) / kGiB);
  o["hosts"] = check.hosts;
  o["fits_in_memory"] = check.fits;
  o["client_page_cache"] = check.client_cache;
  o["warning"] = check.warning.empty() ? json(nullptr) : json(check.warning);
  return o;
}

// Darshan's POSIX counters over every path and rank (io_counters.csv).
json IoCountersJson(const RunResults& r) {
  const session::FileCounters& c = r.io_counters_total;
  json o;
  o["paths"] = r.io_counters_paths;
  o["opens"] = c.opens;
  o["stats"] = c.stats;
  o["reads"] = c.reads;
  o["writes"] = c.writes;
  o["bytes_read"] = c.bytes_read;
  o["bytes_written"] = c.bytes_written;
  o["seq_reads"] = c.seq_reads;
  o["consec_reads"] = c.consec_reads;
  json bins_read = json::object(), bins_write = json::object();
  for (int i = 0; i < session::FileCounters::kSizeBins; ++i) {
    bins_read[kSizeBinNames[i]] = c.read_size_bins[i];
    bins_write[kSizeBinNames[i]] = c.write_size_bins[i];
  }
  o["size_read"] = bins_read;
  o["size_write"] = bins_write;
  json common = json::array();
  for (const auto& [size, n] : c.CommonSizes(4)) common.push_back({{"size", size}, {"count", n}});
  o["common_access_sizes"] = common;
  o["read_time_s"] = Num(c.read_ns / 1e9);
  o["write_time_s"] = Num(c.write_ns / 1e9);
  o["meta_time_s"] = Num(c.meta_ns / 1e9);
  return o;
}

// The read checksum, the read pattern and the latency percentiles: sample
// reads, every histogram (histograms.json), storage read requests.
void AddReadFigures(const RunResults& r, json* io) {
  json& o = *io;
  if (r.checksum) {
    // A string: JSON numbers lose precision above 2^53.
    char hex[32];
    std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(r.checksum->first));
    o["read_checksum"] = hex;
    o["checksummed_samples"] = r.checksum->second;
  }
  o["shared_samples"] = r.shared_samples;
  if (!r.read_pattern.empty()) {
    o["read_pattern"] = r.read_pattern;
    o["read_pattern_factor"] = Num(r.read_pattern_factor);
  }
  o["sample_read_latency_ms"] = Percentiles(r.sample_latency);
  json latency = json::object();
  for (const auto& [name, h] : r.histograms) {
    if (h.count() > 0) latency[name] = Percentiles(h);
  }
  o["latency_ms"] = latency;
  o["read_request_latency_ms"] = Percentiles(r.read_latency);
}

// Generation's figures (files written, skipped, shared; bytes; rate).
json GenerateJson(const RunResults& r) {
  const GenerateResults& g = *r.generate;
  json o;
  o["files_written"] = g.files_written;
  o["files_skipped"] = g.files_skipped;
  // Files every rank wrote its part of (shared-file generation), and how.
  o["files_written_by_all_ranks"] = g.files_written_by_all_ranks;
  if (g.files_written_by_all_ranks > 0) {
    o["shared_write_path"] = r.data_path + " (File::WriteAtAll)";
  }
  o["bytes_written"] = g.bytes_written;
  o["bytes_written_per_rank"] = g.bytes_written_per_rank;
  o["seconds"] = Num(g.seconds);
  o["MiB_per_second"] =
      Num(g.seconds > 0 ? static_cast<double>(g.bytes_written) / kMiB / g.seconds : 0);
  return o;
}

// The storage plugin, its place and chain, and the back end's own figures
// (summed over ranks); the format plugin.
json PluginsJson(const RunResults& r, const config::Config& c) {
  json storage = PluginJson(r.storage);
  storage["data_path"] = r.data_path;
  storage["chain"] = r.storage_chain;
  storage["alignment"] = r.alignment;
  if (!r.storage_statistics.empty()) {
    json stats = json::object();
    for (const auto& [name, value] : r.storage_statistics) {
      // Counts stay integers; times and the like are numbers.
      const bool seconds = name.size() >= 8 && name.compare(name.size() - 8, 8, "_seconds") == 0;
      if (!seconds && value >= 0 && value < 9007199254740992.0 && std::floor(value) == value) {
        stats[name] = static_cast<std::uint64_t>(value);
      } else {
        stats[name] = Num(value);
      }
    }
    storage["statistics"] = stats;
  }
  json plugins;
  plugins["storage"] = storage;
  plugins["format"] = r.format ? PluginJson(*r.format) : PluginJson({{}, c.dataset.options});
  return plugins;
}

// The shuffle (DLIO's keys and seeds), then the manifest: its path,
// workload, overrides and resolved YAML.
void AddShuffleAndManifest(const RunResults& r, const config::LoadedManifest& manifest, json* io) {
  const config::Config& c = manifest.config;
  json shuffle;
  shuffle["file_shuffle"] = config::ShuffleModeName(c.reader.file_shuffle);
  shuffle["sample_shuffle"] = config::ShuffleModeName(c.reader.sample_shuffle);
  shuffle["seed"] = c.train.seed;
  shuffle["seed_change_epoch"] = c.train.seed_change_epoch;
  shuffle["random_seed"] = r.shuffle_random_seed;
  shuffle["dlio_order"] = c.iomimic.dlio_order;
  (*io)["shuffle"] = shuffle;
  json m;
  m["path"] = manifest.manifest_path;
  m["workload"] = manifest.workload_name;
  m["overrides"] = manifest.raw_overrides;
  m["resolved"] = config::ToYaml(c, false);
  (*io)["manifest"] = m;
}

// Each host's figures (output/hosts.h) and, when it sampled, its
// telemetry's sources and totals over the run.
json HostsJson(const RunResults& r) {
  std::map<std::string, const HostTelemetryResults*> telemetry;
  for (const HostTelemetryResults& t : r.host_telemetry) telemetry[t.host] = &t;
  json hosts = json::array();
  for (const HostFigures& h : r.hosts) {
    json o;
    o["host"] = h.host;
    o["ranks"] = h.ranks;
    o["accelerators"] = h.accelerators;
    o["bytes_read"] = h.bytes_read;
    o["bytes_written"] = h.bytes_written;
    o["train_bytes_read"] = h.train_bytes_read;
    o["train_io_MiB_per_second"] = Num(h.train_read_MiB_per_second);
    o["samples"] = h.samples;
    o["train_au_mean_percentage"] = Num(h.au_percent);
    o["train_throughput_samples_per_second"] = Num(h.samples_per_second);
    o["data_wait_seconds"] = Num(h.data_wait_seconds);
    o["io_seconds"] = Num(h.io_seconds);
    auto it = telemetry.find(h.host);
    if (it != telemetry.end()) {
      const HostTelemetryResults& t = *it->second;
      std::uint64_t sums[4] = {};
      for (const metrics::TelemetryRow& row : t.rows) {
        sums[0] += row.disk_read_bytes;
        sums[1] += row.disk_write_bytes;
        sums[2] += row.net_rx_bytes;
        sums[3] += row.net_tx_bytes;
      }
      o["telemetry"] = {{"sampled_by_rank", t.rank},
                        {"intervals", t.rows.size()},
                        {"disk", t.sources.disk},
                        {"disk_note", t.sources.disk_note},
                        {"interfaces", t.sources.interfaces},
                        {"disk_read_bytes", sums[0]},
                        {"disk_write_bytes", sums[1]},
                        {"net_rx_bytes", sums[2]},
                        {"net_tx_bytes", sums[3]}};
    }
    hosts.push_back(o);
  }
  return hosts;
}

// summary.json's "iomimic": what DLIO's keys do not say.
json IomimicJson(const RunResults& r, const config::LoadedManifest& manifest) {
  const config::Config& c = manifest.config;
  json io;
  io["units"] = {{"MB", "MiB (2^20 bytes); DLIO's key names are kept"},
                 {"GB", "GiB (2^30 bytes); DLIO's key names are kept"},
                 {"latency", "milliseconds"}};
  io["version"] = IOMIMIC_VERSION_STRING;
  io["status"] = r.interrupted_by != 0 ? "interrupted" : "completed";
  io["wall_seconds"] = Num(Seconds(r.start, r.end));
  io["bytes_read"] = r.io.bytes_read;
  io["bytes_written"] = r.io.bytes_written;
  io["read_requests"] = r.io.read_requests;
  io["write_requests"] = r.io.write_requests;
  io["files_opened"] = r.io.files_opened;
  io["fsync_calls"] = r.io.fsync_calls;
  io["io_errors"] = r.io.errors;
  io["rank_hosts"] = r.rank_hosts;
  io["hosts"] = HostsJson(r);
  if (r.train) AddTrainFigures(*r.train, static_cast<double>(c.dataset.record_length_bytes), &io);
  if (r.checkpoint) io["checkpoint"] = CheckpointJson(*r.checkpoint);
  if (r.cache_check.checked) io["cache_check"] = CacheCheckJson(r.cache_check);
  AddReadFigures(r, &io);
  io["io_counters"] = IoCountersJson(r);
  if (r.trace) {
    json o;
    o["events"] = r.trace->events;
    o["dropped_events"] = r.trace->dropped;
    io["trace"] = o;
  }
  io["peak_rss_MiB_max_rank"] = Num(r.peak_rss_mib);
  io["output_seconds"] = Num(r.output_seconds);
  if (r.generate) io["generate"] = GenerateJson(r);
  io["plugins"] = PluginsJson(r, c);
  AddShuffleAndManifest(r, manifest, &io);
  return io;
}

}  // namespace

std::string SummaryJson(const RunResults& r, const config::LoadedManifest& given) {
  const config::LoadedManifest manifest = config::Redacted(given);  // no credentials
  const config::Config& c = manifest.config;
  json summary;
  summary["start"] = Timestamp(r.start.wall);
  summary["num_accelerators"] = r.accelerators;
  summary["num_hosts"] = r.num_hosts;
  summary["hostname"] = r.hostname;
  summary["metric"] = DlioMetric(r, c);
  summary["num_files_train"] = c.dataset.num_files_train;
  summary["num_files_eval"] = c.dataset.num_files_eval;
  summary["num_samples_per_file"] = c.dataset.num_samples_per_file;
  AddHostLists(r, &summary);
  summary["data_size_per_host_GB"] = Num(r.data_size_per_host_gib);
  summary["epochs"] = r.train ? r.train->epochs : 0;
  summary["end"] = Timestamp(r.end.wall);
  if (r.kv_cache) summary["kv_cache"] = json::parse(kvcache::KvCacheJson(*r.kv_cache, c.kv_cache));
  summary["iomimic"] = IomimicJson(r, manifest);
  return Dump(summary) + "\n";
}

namespace {

// A number with six decimals (printf's %.6f; to_chars is faster and rounds
// the same, exactly).
void AppendCsv(std::string* out, double v) {
  char buf[400];  // the widest double in fixed notation
  const std::to_chars_result r = std::to_chars(buf, buf + sizeof(buf), std::isfinite(v) ? v : 0.0,
                                               std::chars_format::fixed, 6);
  out->append(buf, r.ptr);
}

void AppendCsv(std::string* out, std::uint64_t v) {
  char buf[24];
  const std::to_chars_result r = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, r.ptr);
}

std::string Csv(double v) {
  std::string out;
  AppendCsv(&out, v);
  return out;
}

void TimelineLine(std::string* out, std::uint64_t index, const std::string& rank, double start,
                  double end, const metrics::ActivitySample& d, int accelerators,
                  const std::string& host) {
  const double seconds = end - start;
  const double au =
      seconds > 0 && accelerators > 0 ? 100.0 * d.compute_seconds / (seconds * accelerators) : 0.0;
  const auto rate = [seconds](double v) { return seconds > 0 ? v / seconds : 0.0; };
  AppendCsv(out, index);
  *out += ',';
  *out += rank;
  for (double v : {start, end}) {
    *out += ',';
    AppendCsv(out, v);
  }
  for (std::uint64_t v :
       {d.bytes_read, d.bytes_written, d.read_requests, d.write_requests, d.samples, d.steps}) {
    *out += ',';
    AppendCsv(out, v);
  }
  for (double v :
       {d.compute_seconds, au, rate(static_cast<double>(d.bytes_read) / kMiB),
        rate(static_cast<double>(d.bytes_written) / kMiB), rate(d.io_seconds), d.barrier_seconds}) {
    *out += ',';
    AppendCsv(out, v);
  }
  *out += ',';
  *out += host;
  *out += '\n';
}

// Rows of one interval summed over ranks: the interval's widest span, the
// counters' sums and the accelerators they cover.
struct IntervalSum {
  double start = 0, end = 0;
  metrics::ActivitySample sum;
  int accelerators = 0;
  bool fresh = true;
  void Add(const metrics::TimelineRow& row, int accelerators_per_process) {
    start = fresh ? row.start_seconds : std::min(start, row.start_seconds);
    end = fresh ? row.end_seconds : std::max(end, row.end_seconds);
    fresh = false;
    const metrics::ActivitySample& d = row.delta;
    sum.bytes_read += d.bytes_read;
    sum.bytes_written += d.bytes_written;
    sum.read_requests += d.read_requests;
    sum.write_requests += d.write_requests;
    sum.samples += d.samples;
    sum.steps += d.steps;
    sum.compute_seconds += d.compute_seconds;
    sum.io_seconds += d.io_seconds;
    sum.barrier_seconds += d.barrier_seconds;
    accelerators += accelerators_per_process;
  }
};

}  // namespace

std::string TimelineCsv(const RunResults& r) {
  if (r.timeline.empty()) return {};
  std::string out =
      "interval,rank,start_s,end_s,bytes_read,bytes_written,read_requests,write_requests,"
      "samples,steps,compute_s,au_percent,read_MiB_per_s,write_MiB_per_s,requests_in_flight,"
      "barrier_s,host\n";
  out.reserve(r.timeline.size() * 160);
  // Hosts numbered in the order of r.hosts (a rank's host looked up once);
  // sums per host and interval, then over all.
  std::map<std::string, std::size_t> host_order;
  for (const HostFigures& h : r.hosts) host_order.try_emplace(h.host, host_order.size());
  std::vector<std::size_t> rank_host(r.rank_hosts.size());
  for (std::size_t i = 0; i < r.rank_hosts.size(); ++i) {
    rank_host[i] = host_order.try_emplace(r.rank_hosts[i], host_order.size()).first->second;
  }
  const std::size_t no_host = host_order.try_emplace("", host_order.size()).first->second;
  std::map<std::pair<std::size_t, std::uint64_t>, IntervalSum> by_host;
  std::map<std::uint64_t, IntervalSum> all;
  std::vector<std::string> host_names(host_order.size());
  for (const auto& [name, order] : host_order) host_names[order] = name;
  for (const TimelineEntry& e : r.timeline) {
    const std::size_t rank = static_cast<std::size_t>(e.rank);
    const std::size_t host = rank < rank_host.size() ? rank_host[rank] : no_host;
    TimelineLine(&out, e.row.index, std::to_string(e.rank), e.row.start_seconds, e.row.end_seconds,
                 e.row.delta, r.accelerators_per_process, host_names[host]);
    by_host[{host, e.row.index}].Add(e.row, r.accelerators_per_process);
    all[e.row.index].Add(e.row, r.accelerators_per_process);
  }
  for (const auto& [key, s] : by_host) {
    TimelineLine(&out, key.second, "host", s.start, s.end, s.sum, s.accelerators,
                 host_names[key.first]);
  }
  for (const auto& [index, s] : all) {
    TimelineLine(&out, index, "all", s.start, s.end, s.sum, s.accelerators, "all");
  }
  return out;
}

std::string HostTelemetryCsv(const RunResults& r) {
  if (r.host_telemetry.empty()) return {};
  std::ostringstream out;
  out << "host,rank,interval,start_s,end_s,cpu_user_percent,cpu_system_percent,"
         "cpu_iowait_percent,cpu_idle_percent,mem_total_MiB,mem_available_MiB,page_cache_MiB,"
         "dirty_MiB,disk,disk_read_bytes,disk_write_bytes,disk_reads,disk_writes,"
         "disk_read_MiB_per_s,disk_write_MiB_per_s,disk_busy_percent,net_rx_bytes,net_tx_bytes,"
         "net_rx_packets,net_tx_packets,net_rx_MiB_per_s,net_tx_MiB_per_s\n";
  for (const HostTelemetryResults& h : r.host_telemetry) {
    for (const metrics::TelemetryRow& t : h.rows) {
      const double seconds = t.end_seconds - t.start_seconds;
      auto rate = [seconds](std::uint64_t bytes) {
        return Csv(seconds > 0 ? static_cast<double>(bytes) / kMiB / seconds : 0.0);
      };
      out << h.host << ',' << h.rank << ',' << t.index << ',' << Csv(t.start_seconds) << ','
          << Csv(t.end_seconds) << ',' << Csv(t.cpu_user_percent) << ','
          << Csv(t.cpu_system_percent) << ',' << Csv(t.cpu_iowait_percent) << ','
          << Csv(t.cpu_idle_percent) << ',' << Csv(t.mem_total_MiB) << ','
          << Csv(t.mem_available_MiB) << ',' << Csv(t.page_cache_MiB) << ',' << Csv(t.dirty_MiB)
          << ',' << h.sources.disk << ',' << t.disk_read_bytes << ',' << t.disk_write_bytes << ','
          << t.disk_reads << ',' << t.disk_writes << ',' << rate(t.disk_read_bytes) << ','
          << rate(t.disk_write_bytes) << ',' << Csv(t.disk_busy_percent) << ',' << t.net_rx_bytes
          << ',' << t.net_tx_bytes << ',' << t.net_rx_packets << ',' << t.net_tx_packets << ','
          << rate(t.net_rx_bytes) << ',' << rate(t.net_tx_bytes) << '\n';
    }
  }
  return out.str();
}

std::string EventsCsv(const RunResults& r) {
  std::ostringstream out;
  out << "rank,event,epoch,index,start_s,end_s,duration_s,bytes\n";
  for (const EventEntry& e : r.events) {
    out << e.rank << ',' << e.event << ',' << e.epoch << ',' << e.index << ','
        << Csv(e.start_seconds) << ',' << Csv(e.end_seconds) << ','
        << Csv(e.end_seconds - e.start_seconds) << ',' << e.bytes << '\n';
  }
  return out.str();
}

namespace {

// A CSV field: quoted when it holds a comma, a quote or a line break.
std::string CsvField(const std::string& v) {
  if (v.find_first_of(",\"\r\n") == std::string::npos) return v;
  std::string out = "\"";
  for (char ch : v) {
    if (ch == '"') out += '"';
    out += ch;
  }
  return out + "\"";
}

// Seconds from the run's origin of a FileCounters timestamp; empty when none.
std::string CsvTime(std::int64_t ns) { return ns == 0 ? std::string() : Csv(ns / 1e9); }

}  // namespace

std::string IoCountersCsv(const RunResults& r) {
  std::ostringstream out;
  out << "rank,path,files,opens,stats,reads,writes,bytes_read,bytes_written,max_byte_read,"
         "max_byte_written,seq_reads,consec_reads";
  for (const char* b : kSizeBinNames) out << ",size_read_" << b;
  for (const char* b : kSizeBinNames) out << ",size_write_" << b;
  for (int i = 1; i <= 4; ++i) out << ",access" << i << "_access,access" << i << "_count";
  out << ",read_time_s,write_time_s,meta_time_s,open_start_s,open_end_s,close_start_s,"
         "close_end_s\n";
  for (const IoCounterRow& row : r.io_counters) {
    const session::FileCounters& c = row.counters;
    out << row.rank << ',' << CsvField(row.path) << ',' << row.files << ',' << c.opens << ','
        << c.stats << ',' << c.reads << ',' << c.writes << ',' << c.bytes_read << ','
        << c.bytes_written << ',' << c.max_byte_read << ',' << c.max_byte_written << ','
        << c.seq_reads << ',' << c.consec_reads;
    for (std::uint64_t v : c.read_size_bins) out << ',' << v;
    for (std::uint64_t v : c.write_size_bins) out << ',' << v;
    const auto common = c.CommonSizes(4);
    for (std::size_t i = 0; i < 4; ++i) {
      if (i < common.size()) {
        out << ',' << common[i].first << ',' << common[i].second;
      } else {
        out << ",,0";
      }
    }
    out << ',' << Csv(c.read_ns / 1e9) << ',' << Csv(c.write_ns / 1e9) << ','
        << Csv(c.meta_ns / 1e9) << ',' << CsvTime(c.open_start_ns) << ',' << CsvTime(c.open_end_ns)
        << ',' << CsvTime(c.close_start_ns) << ',' << CsvTime(c.close_end_ns) << '\n';
  }
  return out.str();
}

std::string HistogramsJson(const RunResults& r) {
  json out;
  out["unit"] = "ns";
  out["layout"] =
      "log-linear: values below " + std::to_string(metrics::LatencyHistogram::kSubBuckets) +
      " exact, above " + std::to_string(metrics::LatencyHistogram::kSubBuckets) +
      " linear buckets per power of two; percentiles are bucket midpoints, within " +
      Fixed2(100.0 * metrics::LatencyHistogram::kMaxRelativeError) + "% of the exact value";
  json all = json::object();
  for (const auto& [name, h] : r.histograms) {
    json o;
    o["count"] = h.count();
    o["sum"] = h.sum_ns();
    o["min"] = h.min_ns();
    o["max"] = h.max_ns();
    o["p50"] = h.Percentile(0.50);
    o["p90"] = h.Percentile(0.90);
    o["p99"] = h.Percentile(0.99);
    o["p999"] = h.Percentile(0.999);
    json buckets = json::array();
    for (int b = 0; b < metrics::LatencyHistogram::kBuckets; ++b) {
      const std::uint64_t n = h.bucket_count(b);
      if (n == 0) continue;
      buckets.push_back(
          {metrics::LatencyHistogram::BucketLow(b), metrics::LatencyHistogram::BucketHigh(b), n});
    }
    o["buckets"] = buckets;
    all[name] = o;
  }
  out["histograms"] = all;
  return out.dump(1, ' ', false, json::error_handler_t::replace) + "\n";
}

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
    lines.push_back({at, order++, "[OUTPUT] " + Timestamp(at) + " " + text});
  };
  const std::uint64_t first = c.output.exclude_start_steps;
  const std::uint64_t end_excluded = c.output.exclude_end_steps;
  std::uint64_t overall_steps = 0;
  for (const metrics::EpochRecord& e : epochs) {
    const EpochMetrics m = ComputeEpochMetrics(e, c);
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
  out += "[OUTPUT] " + Timestamp(std::chrono::system_clock::now()) + " Saved outputs in " + folder +
         "\n";
  return out;
}

std::string MetricBlock(const RunResults& r, const config::Config& c) {
  const double record = static_cast<double>(c.dataset.record_length_bytes);
  const char* const kRule = "[METRIC] ==========================================================\n";
  char line[256];
  std::string out = "[OUTPUT] Averaged metric over all steps/epochs\n";
  out += kRule;
  std::snprintf(line, sizeof(line), "[METRIC] Number of Simulated Accelerators: %d \n",
                r.accelerators);
  out += line;
  if (r.train && r.train->epochs > 0) {
    const PhaseSeries& t = r.train->train;
    std::snprintf(line, sizeof(line),
                  "[METRIC] Training Accelerator Utilization [AU] (%%): %.4f (%.4f)\n", t.au.mean,
                  t.au.stdev);
    out += line;
    std::snprintf(line, sizeof(line),
                  "[METRIC] Training Throughput (samples/second): %.4f (%.4f)\n", t.throughput.mean,
                  t.throughput.stdev);
    out += line;
    std::snprintf(line, sizeof(line), "[METRIC] Training I/O Throughput (MB/second): %.4f (%.4f)\n",
                  t.throughput.mean * record / kMiB, t.throughput.stdev * record / kMiB);
    out += line;
    out += std::string("[METRIC] train_au_meet_expectation: ") +
           (MeetsAu(c, t.au.mean) ? "success" : "fail") + "\n";
  }
  if (r.checkpoint) {
    const double gib = r.checkpoint->size_gib();
    auto figures = [&](const char* what, const std::vector<CheckpointEvent>& events) {
      if (events.empty()) return;
      const std::vector<double> durations = Rank0Durations(events);
      const metrics::MeanStdev d = metrics::Summarize(durations);
      const metrics::MeanStdev t = metrics::Summarize(Rates(gib, durations));
      std::snprintf(line, sizeof(line), "[METRIC] Checkpoint %s duration (seconds): %.4f (%.4f)\n",
                    what, d.mean, d.stdev);
      out += line;
      std::snprintf(line, sizeof(line),
                    "[METRIC] Checkpoint %s I/O Throughput (GB/second): %.4f (%.4f)\n", what,
                    t.mean, t.stdev);
      out += line;
    };
    figures("save", r.checkpoint->saves);
    figures("load", r.checkpoint->loads);
  }
  if (r.train && r.train->eval) {
    const PhaseSeries& e = *r.train->eval;
    std::snprintf(line, sizeof(line),
                  "[METRIC] Eval Accelerator Utilization [AU] (%%): %.4f (%.4f)\n", e.au.mean,
                  e.au.stdev);
    out += line;
    std::snprintf(line, sizeof(line), "[METRIC] Eval Throughput (samples/second): %.6f (%.6f)\n",
                  e.throughput.mean, e.throughput.stdev);
    out += line;
    std::snprintf(line, sizeof(line), "[METRIC] Eval Throughput (MB/second): %.6f (%.6f)\n",
                  e.throughput.mean * record / kMiB, e.throughput.stdev * record / kMiB);
    out += line;
    out += std::string("[METRIC] eval_au_meet_expectation: ") +
           (MeetsAu(c, e.au.mean) ? "success" : "fail") + "\n";
  }
  out += kRule;
  return out;
}

std::string ConsoleSummary(const RunResults& r, const config::LoadedManifest& manifest,
                           const std::string& folder) {
  const config::Config& c = manifest.config;
  const double record = static_cast<double>(c.dataset.record_length_bytes);
  std::ostringstream h;
  char line[512];
  h << "iomimic " << IOMIMIC_VERSION_STRING << ": workload '" << manifest.workload_name << "', "
    << r.ranks << (r.ranks == 1 ? " rank" : " ranks")
    << (r.accelerators_per_process > 1
            ? " x " + std::to_string(r.accelerators_per_process) + " accelerators"
            : std::string())
    << ", storage " << r.storage_chain << " (" << r.data_path << ")"
    << (r.format ? ", format " + r.format->info.name : std::string()) << "\n";
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
    checkpoint_line("load", r.checkpoint->loads);
    if (!r.checkpoint->loads.empty()) {
      h << "  checkpoint reads: " << r.checkpoint->read_path << "\n";
    }
  }
  if (r.kv_cache) h << kvcache::KvConsoleLines(*r.kv_cache);
  if (r.sample_latency.count() > 0) {
    std::snprintf(line, sizeof(line),
                  "  sample read latency: p50 %.3f ms, p99 %.3f ms, max %.3f ms (%llu samples)\n",
                  r.sample_latency.Percentile(0.5) / 1e6, r.sample_latency.Percentile(0.99) / 1e6,
                  r.sample_latency.max_ns() / 1e6,
                  static_cast<unsigned long long>(r.sample_latency.count()));
    h << line;
  }
  std::snprintf(line, sizeof(line), "  bytes read %.1f MiB, written %.1f MiB, peak RSS %.1f MiB\n",
                r.io.bytes_read / kMiB, r.io.bytes_written / kMiB, r.peak_rss_mib);
  h << line;
  if (r.read_pattern_factor > 1) h << "  reads: " << r.read_pattern << "\n";
  if (r.max_steps_per_entry > 1) {
    std::snprintf(line, sizeof(line),
                  "  per-step lists in <rank>_output.json hold means of up to %llu steps "
                  "(iomimic.max_step_list=%llu; steps_per_entry in each epoch)\n",
                  static_cast<unsigned long long>(r.max_steps_per_entry),
                  static_cast<unsigned long long>(c.iomimic.max_step_list));
    h << line;
  }
  h << "  results: " << folder;
  return h.str();
}

}  // namespace iomimic::output
