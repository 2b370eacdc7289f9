#include "output/results.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "iomimic/version.h"
#include "output/json_stream.h"
#include "plan/plan.h"

namespace iomimic::output {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;
using metrics::PhaseMetrics;
using metrics::Seconds;

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Strict JSON: NaN and infinities become null.
json Num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

json NumList(const std::vector<double>& values) {
  json out = json::array();
  for (double v : values) out.push_back(Num(v));
  return out;
}

// DLIO's timestamp: local time, "%Y-%m-%dT%H:%M:%S.%f", no zone.
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

std::string Fixed2(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.2f", v);
  return buf;
}

std::map<std::string, std::string> ReadKeyValues(const std::string& path, bool skip_processor) {
  std::map<std::string, std::string> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    while (!key.empty() && (key.back() == ' ' || key.back() == '\t')) key.pop_back();
    std::string value = line.substr(colon + 1);
    std::size_t first = value.find_first_not_of(" \t");
    value = first == std::string::npos ? "" : value.substr(first);
    if (key.empty() || (skip_processor && key == "processor")) continue;
    out[key] = value;  // later CPUs overwrite earlier ones, as DLIO does
  }
  return out;
}

double MemTotalGiB(const std::map<std::string, std::string>& meminfo) {
  auto it = meminfo.find("MemTotal");
  if (it == meminfo.end()) return 0;
  return std::strtod(it->second.c_str(), nullptr) * 1024.0 / kGiB;  // kB
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

// Merges a histogram over all ranks.
metrics::LatencyHistogram MergeHistogram(const metrics::LatencyHistogram& local,
                                         cluster::Cluster& cluster) {
  std::vector<std::uint64_t> summed = cluster.SumU64s(local.Export());
  double max = cluster.MaxDouble(static_cast<double>(local.max_ns()));
  double min = cluster.MinDouble(local.count() == 0 ? 1e300 : static_cast<double>(local.min_ns()));
  return metrics::LatencyHistogram::Import(summed, static_cast<std::uint64_t>(max),
                                           min >= 1e300 ? 0 : static_cast<std::uint64_t>(min));
}

Status WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::out | std::ios::trunc);
  if (!out) return Status::IOError("cannot create " + path);
  out << text;
  out.close();
  if (!out) return Status::IOError("cannot write " + path);
  return Status::OK();
}

std::string YamlQuote(const std::string& s) {
  std::string out = "'";
  for (char ch : s) {
    if (ch == '\'')
      out += "''";
    else
      out += ch;
  }
  return out + "'";
}

// A back end's statistics summed over the ranks, in rank 0's order. Gathered
// as text so that a rank with other names (a bug) cannot derail the
// collective: names missing on rank 0 are ignored.
std::vector<std::pair<std::string, double>> SumStatistics(const std::vector<StorageStatistic>& mine,
                                                          const cluster::Cluster& cluster) {
  std::string encoded;
  for (const StorageStatistic& s : mine) {
    char value[64];
    std::snprintf(value, sizeof(value), "%.17g", s.value);
    encoded += s.name + "=" + value + "\n";
  }
  std::vector<std::pair<std::string, double>> out;
  std::map<std::string, std::size_t> index;
  std::vector<std::string> all = cluster.AllGatherStrings(encoded);
  for (std::size_t r = 0; r < all.size(); ++r) {
    std::size_t at = 0;
    while (at < all[r].size()) {
      const std::size_t end = all[r].find('\n', at);
      const std::string line = all[r].substr(at, end - at);
      at = end == std::string::npos ? all[r].size() : end + 1;
      const std::size_t eq = line.rfind('=');
      if (eq == std::string::npos) continue;
      const std::string name = line.substr(0, eq);
      const double value = std::strtod(line.c_str() + eq + 1, nullptr);
      auto it = index.find(name);
      if (it != index.end()) {
        out[it->second].second += value;
      } else if (r == 0) {
        index[name] = out.size();
        out.emplace_back(name, value);
      }
    }
  }
  return out;
}

json PluginJson(const plugin::PluginInfo& info, const std::map<std::string, std::string>& options) {
  json o;
  o["name"] = info.name;
  o["version"] = info.version;
  o["path"] = info.path;
  o["capabilities"] = plugin::CapabilityNames(info.capabilities);
  json opts = json::object();
  for (const auto& [k, v] : options) opts[k] = v;
  o["options"] = opts;
  return o;
}

double PeakRssMiB() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;  // kB on Linux
}

// The per-step lists of <rank>_output.json, in DLIO's order.
struct StepListField {
  const char* name;
  std::vector<double> metrics::PhaseRecord::*values;
};
constexpr StepListField kStepLists[] = {{"load", &metrics::PhaseRecord::load},
                                        {"proc", &metrics::PhaseRecord::proc},
                                        {"compute", &metrics::PhaseRecord::compute}};

std::string Dump(const json& value) {
  return value.dump(4, ' ', false, json::error_handler_t::replace);
}

// <rank>_output.json: `host` (small, given as a tree), then per epoch the
// per-step lists load, proc and compute of every block (and of "eval"),
// streamed from the records, then au, throughput and end, as DLIO's file
// has them. A list longer than iomimic.max_step_list is written as means of
// k steps (output/json_stream.h); the epoch's "steps_per_entry" names k of
// each such list. `max_k` receives the largest k.
Status WriteRankOutput(const std::string& path, const json& host,
                       const std::vector<metrics::EpochRecord>& epochs, const config::Config& c,
                       std::uint64_t* max_k) {
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
    json aus = json::object(), tps = json::object();
    for (const metrics::PhaseRecord& b : e.blocks) {
      const PhaseMetrics m = metrics::TrainBlockMetrics(
          b, c.output.exclude_start_steps, c.output.exclude_end_steps, c.reader.batch_size);
      aus["block" + std::to_string(b.index)] = Num(m.au_percent);
      tps["block" + std::to_string(b.index)] = Num(m.samples_per_second);
    }
    if (e.eval) {
      const PhaseMetrics m =
          metrics::EvalMetrics(*e.eval, c.output.exclude_start_steps, c.output.exclude_end_steps,
                               c.reader.batch_size_eval);
      aus["eval"] = Num(m.au_percent);
      tps["eval"] = Num(m.samples_per_second);
    }
    out.Key("au");
    out.Raw(Dump(aus));
    out.Key("throughput");
    out.Raw(Dump(tps));
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

}  // namespace

std::string DefaultOutputFolder(const config::Config& config) {
  if (!config.output.folder.empty()) return config.output.folder;
  if (!config.hydra.run_dir.empty()) return config.hydra.run_dir;
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char stamp[64];
  std::strftime(stamp, sizeof(stamp), "%Y-%m-%d-%H-%M-%S", &tm);
  return "hydra_log/" + config.model.name + "/" + stamp;
}

namespace {

// A file of `folder` that a run with `config` writes and that exists already,
// or "" (issue 13, defect 9: nothing a user wrote is overwritten unasked).
std::string FileThisRunWouldOverwrite(const std::string& folder, const config::Config& config) {
  std::error_code ec;
  for (const std::string& name :
       {config.hydra.output_subdir + "/config.yaml", config.hydra.output_subdir + "/overrides.yaml",
        config.output.log_file}) {
    if (!name.empty() && fs::exists(folder + "/" + name, ec)) return folder + "/" + name;
  }
  // Per-accelerator files: <n>_output.json, <n>_per_epoch_stats.json, <n>_samples.csv.
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const std::size_t underscore = name.find('_');
    if (underscore == 0 || underscore == std::string::npos) continue;
    if (!std::all_of(name.begin(), name.begin() + static_cast<std::ptrdiff_t>(underscore),
                     [](char c) { return c >= '0' && c <= '9'; })) {
      continue;
    }
    const std::string rest = name.substr(underscore + 1);
    if (rest == "output.json" || rest == "per_epoch_stats.json" || rest == "samples.csv") {
      return it->path().string();
    }
  }
  return "";
}

}  // namespace

Result<std::string> PrepareOutputFolder(const config::Config& config, cluster::Cluster& cluster) {
  std::string folder;
  Status status;
  if (cluster.rank() == 0) {
    folder = DefaultOutputFolder(config);
    const bool derived = config.output.folder.empty() && config.hydra.run_dir.empty();
    std::error_code ec;
    if (derived) {
      // Two runs in the same second: add a suffix rather than share a folder.
      std::string base = folder;
      for (int i = 1; fs::exists(folder, ec); ++i) folder = base + "-" + std::to_string(i);
    } else if (fs::exists(folder + "/summary.json", ec) ||
               fs::exists(folder + "/status.json", ec)) {
      status = Status::AlreadyExists("output folder " + folder +
                                     " already holds the results of another run; choose another "
                                     "with ++workload.output.folder=<dir> or remove it");
    } else if (const std::string existing = FileThisRunWouldOverwrite(folder, config);
               !existing.empty()) {
      status = Status::AlreadyExists("output folder " + folder + " already holds " + existing +
                                     ", which this run would overwrite; choose another with "
                                     "++workload.output.folder=<dir> or remove it");
    }
    if (status.ok()) {
      fs::create_directories(folder + "/" + config.hydra.output_subdir, ec);
      if (ec) status = Status::FromErrno(ec.value(), "cannot create output folder " + folder);
    }
  }
  IOMIMIC_RETURN_IF_ERROR(cluster.AgreeOnStatus(status));
  return cluster.Broadcast(folder);
}

Status WriteConfigFiles(const std::string& folder, const config::LoadedManifest& manifest,
                        const cluster::Cluster& cluster) {
  if (cluster.rank() != 0) return Status::OK();
  const std::string sub = folder + "/" + manifest.config.hydra.output_subdir;
  std::error_code ec;
  fs::create_directories(sub, ec);
  IOMIMIC_RETURN_IF_ERROR(WriteFile(sub + "/config.yaml", config::ToYaml(manifest.config, true)));
  std::string overrides;
  bool has_workload = false;
  for (const std::string& o : manifest.raw_overrides) has_workload |= o.rfind("workload=", 0) == 0;
  if (!has_workload) overrides += "- " + YamlQuote("workload=" + manifest.workload_name) + "\n";
  for (const std::string& o : manifest.raw_overrides) overrides += "- " + YamlQuote(o) + "\n";
  if (overrides.empty()) overrides = "[]\n";
  return WriteFile(sub + "/overrides.yaml", overrides);
}

Status WriteStatus(const std::string& folder, const Status& run_status, const char* signal) {
  json o;
  o["status"] = signal != nullptr ? "interrupted" : run_status.ok() ? "completed" : "failed";
  if (signal != nullptr) o["signal"] = signal;
  if (!run_status.ok()) o["error"] = run_status.message();
  o["end"] = Timestamp(std::chrono::system_clock::now());
  return WriteFile(folder + "/status.json",
                   o.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
}

Status WriteResults(const std::string& folder, engine::Session& session, const RunOutcome& outcome,
                    std::string* human) {
  const auto output_start = std::chrono::steady_clock::now();
  cluster::Cluster& cluster = session.cluster();
  const config::Config& c = session.config();
  const int rank = cluster.rank();
  const int world = cluster.size();
  // Emulated accelerators: ranks x accelerators per process. AU is averaged
  // and throughput summed over accelerators, as DLIO does over ranks.
  const int per_process = outcome.train ? outcome.train->accelerators_per_process : 1;
  const int accelerators = world * per_process;

  // Host facts (DLIO reads them on every rank; one value per host).
  auto cpuinfo = ReadKeyValues("/proc/cpuinfo", true);
  auto meminfo = ReadKeyValues("/proc/meminfo", false);
  const double mem_gib = MemTotalGiB(meminfo);
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  std::string processor = cpuinfo.count("model name") ? cpuinfo["model name"] : "";
  // Per-host lists, indexed by host: only host leaders contribute.
  std::vector<double> host_mem(cluster.num_hosts(), 0.0), host_cpus(cluster.num_hosts(), 0.0);
  {
    std::vector<double> mine_mem(cluster.num_hosts(), 0.0), mine_cpu(cluster.num_hosts(), 0.0);
    mine_mem[cluster.host_index()] = mem_gib / cluster.ranks_on_host();
    mine_cpu[cluster.host_index()] = static_cast<double>(cpus) / cluster.ranks_on_host();
    host_mem = cluster.SumDoubles(mine_mem);
    host_cpus = cluster.SumDoubles(mine_cpu);
  }
  const double record = c.dataset.record_length_bytes;
  const double data_per_host_gib =
      static_cast<double>(cluster.ranks_on_host()) *
      static_cast<double>(c.dataset.num_samples_per_file * c.dataset.num_files_train /
                          static_cast<std::uint64_t>(world)) *
      record / kGiB;

  // Per-epoch metrics of each accelerator, then aggregated (AU: mean over
  // accelerators, throughput: sum over accelerators, as DLIO over ranks).
  // Bytes and wall time are the process's: its accelerators share one
  // storage counter and step in lockstep, so the first one's epochs stand
  // for the process.
  std::vector<std::uint64_t> epoch_train_bytes;
  std::vector<double> epoch_train_wall;
  bool have_eval = false;
  auto epoch_metrics = [&](const metrics::EpochRecord& e, PhaseMetrics* train, PhaseMetrics* eval) {
    std::vector<PhaseMetrics> blocks;
    for (const metrics::PhaseRecord& b : e.blocks) {
      blocks.push_back(metrics::TrainBlockMetrics(b, c.output.exclude_start_steps,
                                                  c.output.exclude_end_steps, c.reader.batch_size));
    }
    *train = metrics::CombineBlocks(blocks);
    *eval = e.eval ? metrics::EvalMetrics(*e.eval, c.output.exclude_start_steps,
                                          c.output.exclude_end_steps, c.reader.batch_size_eval)
                   : PhaseMetrics{};
  };
  if (outcome.train) {
    for (const metrics::EpochRecord& e : outcome.train->epochs) {
      std::uint64_t bytes = 0;
      double wall = 0;
      for (const metrics::PhaseRecord& b : e.blocks) {
        bytes += b.bytes_read;
        wall += Seconds(b.start, b.end);
      }
      epoch_train_bytes.push_back(bytes);
      epoch_train_wall.push_back(wall);
      if (e.eval) have_eval = true;
    }
  }
  const std::size_t n_epochs = epoch_train_bytes.size();
  std::vector<double> local(4 * n_epochs);
  if (outcome.train) {
    for (const engine::AcceleratorRecords& a : outcome.train->accelerators) {
      for (std::size_t i = 0; i < n_epochs && i < a.epochs.size(); ++i) {
        PhaseMetrics train, eval;
        epoch_metrics(a.epochs[i], &train, &eval);
        local[i] += train.au_percent;
        local[n_epochs + i] += train.samples_per_second;
        local[2 * n_epochs + i] += eval.au_percent;
        local[3 * n_epochs + i] += eval.samples_per_second;
      }
    }
  }
  std::vector<double> summed = cluster.SumDoubles(local);
  std::vector<double> au(n_epochs), tp(n_epochs), eau, etp;
  for (std::size_t i = 0; i < n_epochs; ++i) {
    au[i] = summed[i] / accelerators;
    tp[i] = summed[n_epochs + i];
  }
  std::vector<std::size_t> eval_epoch_numbers;
  if (outcome.train) {
    for (std::size_t i = 0; i < n_epochs; ++i) {
      if (outcome.train->epochs[i].eval) {
        eau.push_back(summed[2 * n_epochs + i] / accelerators);
        etp.push_back(summed[3 * n_epochs + i]);
      }
    }
  }
  // Actual bytes: summed over ranks; time: the slowest rank's train time.
  std::vector<std::uint64_t> total_epoch_bytes = cluster.SumU64s(
      std::vector<std::uint64_t>(epoch_train_bytes.begin(), epoch_train_bytes.end()));
  std::vector<double> actual_mibps;
  for (std::size_t i = 0; i < n_epochs; ++i) {
    double slowest = cluster.MaxDouble(epoch_train_wall[i]);
    actual_mibps.push_back(slowest > 0 ? static_cast<double>(total_epoch_bytes[i]) / kMiB / slowest
                                       : 0);
  }
  // Minor page faults of each epoch, summed over ranks: near zero after the
  // first epoch when the hot path reuses its memory.
  std::vector<std::uint64_t> epoch_faults;
  if (outcome.train) {
    for (const metrics::EpochRecord& e : outcome.train->epochs)
      epoch_faults.push_back(e.minor_faults);
  }
  epoch_faults = cluster.SumU64s(epoch_faults);
  double barrier_sum = 0, compute_measured = 0, compute_requested = 0;
  std::uint64_t barrier_n = 0;
  if (outcome.train) {
    for (const engine::AcceleratorRecords& a : outcome.train->accelerators) {
      for (const auto& e : a.epochs) {
        for (const auto& b : e.blocks) {
          for (double v : b.barrier) barrier_sum += v;
          compute_measured += b.compute_measured;
          compute_requested += b.compute_requested;
          barrier_n += b.barrier.size();
        }
      }
    }
  }
  // How far the emulated compute strayed from what was drawn, all ranks.
  const double all_measured = cluster.SumDouble(compute_measured);
  const double all_requested = cluster.SumDouble(compute_requested);
  double barrier_mean_ms = 0;
  {
    double s = cluster.SumDouble(barrier_sum);
    std::uint64_t n = cluster.SumU64(barrier_n);
    barrier_mean_ms = n > 0 ? s / static_cast<double>(n) * 1e3 : 0;
  }

  engine::IoSnapshot io = session.storage().Snapshot();
  std::vector<std::uint64_t> io_total = cluster.SumU64s(
      {io.opens, io.read_ops, io.read_bytes, io.write_ops, io.write_bytes, io.syncs, io.errors});
  metrics::LatencyHistogram sample_lat = MergeHistogram(session.sample_latency(), cluster);
  metrics::LatencyHistogram read_lat =
      MergeHistogram(session.storage().counters().read_latency, cluster);
  const std::vector<std::pair<std::string, double>> storage_stats =
      SumStatistics(session.storage().Statistics(), cluster);
  const std::uint64_t gen_written =
      cluster.SumU64(outcome.generate ? outcome.generate->files_written : 0);
  std::vector<std::uint64_t> gen_bytes_by_rank(static_cast<std::size_t>(cluster.size()), 0);
  gen_bytes_by_rank[static_cast<std::size_t>(cluster.rank())] =
      outcome.generate ? outcome.generate->bytes_written : 0;
  gen_bytes_by_rank = cluster.SumU64s(gen_bytes_by_rank);
  const std::uint64_t gen_shared =
      cluster.SumU64(outcome.generate ? outcome.generate->files_written_by_all_ranks : 0);
  const std::uint64_t gen_skipped =
      cluster.SumU64(outcome.generate ? outcome.generate->files_skipped : 0);
  const std::uint64_t gen_bytes =
      cluster.SumU64(outcome.generate ? outcome.generate->bytes_written : 0);
  const double gen_seconds = cluster.MaxDouble(outcome.generate ? outcome.generate->seconds : 0);

  // ---- checkpoints: every rank has the same number of saves and loads ----
  std::vector<metrics::CheckpointRecord> saves, loads;
  std::vector<std::uint64_t> save_epochs;
  if (outcome.train) {
    for (const auto& e : outcome.train->epochs) {
      for (const auto& r : e.saves) {
        saves.push_back(r);
        save_epochs.push_back(e.epoch);
      }
    }
  }
  if (outcome.checkpoint_only) {
    saves = outcome.checkpoint_only->saves;
    loads = outcome.checkpoint_only->loads;
    save_epochs.assign(saves.size(), 1);
  }
  const double ckpt_gib =
      outcome.checkpointer != nullptr
          ? static_cast<double>(outcome.checkpointer->plan().total_bytes()) / kGiB
          : 0.0;
  // Per checkpoint: every rank's duration and bytes, so the slowest and
  // fastest rank can be named (MLPerf reports the slowest).
  auto describe = [&](const std::vector<metrics::CheckpointRecord>& list,
                      std::vector<double>* rank0, json* details) {
    for (const metrics::CheckpointRecord& r : list) {
      std::vector<double> durations(static_cast<std::size_t>(world), 0.0);
      durations[static_cast<std::size_t>(rank)] = r.duration();
      durations = cluster.SumDoubles(durations);
      std::vector<std::uint64_t> bytes(static_cast<std::size_t>(world), 0);
      bytes[static_cast<std::size_t>(rank)] = r.bytes;
      bytes = cluster.SumU64s(bytes);
      rank0->push_back(durations[0]);
      std::size_t slow = 0, fast = 0;
      std::uint64_t total = 0;
      double min_tp = -1;
      for (std::size_t i = 0; i < durations.size(); ++i) {
        if (durations[i] > durations[slow]) slow = i;
        if (durations[i] < durations[fast]) fast = i;
        total += bytes[i];
        if (bytes[i] > 0 && durations[i] > 0) {
          double t = static_cast<double>(bytes[i]) / kGiB / durations[i];
          if (min_tp < 0 || t < min_tp) min_tp = t;
        }
      }
      json d;
      d["index"] = r.index;
      d["bytes"] = total;
      d["duration_max_seconds"] = Num(durations[slow]);
      d["duration_min_seconds"] = Num(durations[fast]);
      d["throughput_GiB_per_second"] =
          Num(durations[slow] > 0 ? static_cast<double>(total) / kGiB / durations[slow] : 0.0);
      d["min_rank_throughput_GiB_per_second"] = Num(min_tp < 0 ? 0.0 : min_tp);
      d["slowest_rank"] = slow;
      d["fastest_rank"] = fast;
      details->push_back(d);
    }
  };
  const std::uint64_t read_checksum = cluster.SumU64(session.checksum());
  const std::uint64_t checksummed = cluster.SumU64(session.checksummed());
  const std::uint64_t ckpt_fsyncs =
      outcome.checkpointer != nullptr ? cluster.SumU64(outcome.checkpointer->fsync_calls()) : 0;
  std::vector<double> save_durations, load_durations;
  json save_details = json::array(), load_details = json::array();
  describe(saves, &save_durations, &save_details);
  describe(loads, &load_durations, &load_details);
  auto ckpt_stats = [&](const metrics::CheckpointRecord& r) {
    json o;
    o["start"] = Timestamp(r.start.wall);
    o["end"] = Timestamp(r.end.wall);
    o["duration"] = Num(r.duration());
    o["throughput"] = Num(r.duration() > 0 ? ckpt_gib / r.duration() : 0.0);
    return o;
  };

  // ---- per-rank files ----
  if (outcome.checkpoint_only) {
    json stats = json::object();
    json epoch1 = json::object();
    for (const auto& r : saves) epoch1["save_ckpt" + std::to_string(r.index)] = ckpt_stats(r);
    for (const auto& r : loads) epoch1["load_ckpt" + std::to_string(r.index)] = ckpt_stats(r);
    stats["1"] = epoch1;
    IOMIMIC_RETURN_IF_ERROR(cluster.AgreeOnStatus(
        WriteFile(folder + "/" + std::to_string(rank) + "_per_epoch_stats.json",
                  stats.dump(4, ' ', false, json::error_handler_t::replace) + "\n")));
  }
  // One pair of files per accelerator, named by its run-wide id (the rank
  // when each process emulates one accelerator, as DLIO names them).
  std::uint64_t max_k = 1;  // the most steps an entry of a per-step list stands for
  if (outcome.train) {
    json host;
    host["host_memory_GB"] = Num(mem_gib);
    host["host_cpu_count"] = cpus;
    host["host_processor_name"] = processor;
    host["potential_caching"] = mem_gib > data_per_host_gib ? 1 : 0;
    host["host_cpuinfo"] = ToJson(cpuinfo);
    host["host_meminfo"] = ToJson(meminfo);
    host["hostname"] = cluster.hostname();
    Status s;
    for (const engine::AcceleratorRecords& acc : outcome.train->accelerators) {
      if (!s.ok()) break;
      json stats = json::object();
      for (const metrics::EpochRecord& e : acc.epochs) {
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
        for (const auto& r : e.saves) es["save_ckpt" + std::to_string(r.index)] = ckpt_stats(r);
        stats[std::to_string(e.epoch)] = es;
      }
      const std::string id = std::to_string(acc.id);
      s = WriteFile(folder + "/" + id + "_per_epoch_stats.json", Dump(stats) + "\n");
      std::uint64_t k = 1;
      if (s.ok()) s = WriteRankOutput(folder + "/" + id + "_output.json", host, acc.epochs, c, &k);
      max_k = std::max(max_k, k);
    }
    IOMIMIC_RETURN_IF_ERROR(cluster.AgreeOnStatus(s));
  }

  // Collective, after the per-rank files so that their cost is counted.
  const double output_seconds = cluster.MaxDouble(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - output_start).count());
  const double peak_rss = cluster.MaxDouble(PeakRssMiB());

  if (rank != 0) return Status::OK();

  // ---- summary.json (rank 0) ----
  json summary;
  summary["start"] = Timestamp(outcome.start.wall);
  summary["num_accelerators"] = accelerators;
  summary["num_hosts"] = cluster.num_hosts();
  summary["hostname"] = cluster.hostname();
  json metric = json::object();
  metrics::MeanStdev au_s = metrics::Summarize(au), tp_s = metrics::Summarize(tp);
  metrics::MeanStdev eau_s = metrics::Summarize(eau), etp_s = metrics::Summarize(etp);
  // DLIO's nine keys of a phase ("train" or "eval"), in DLIO's order.
  auto add_phase = [&](const std::string& p, const std::vector<double>& aus,
                       const metrics::MeanStdev& a, const std::vector<double>& tps,
                       const metrics::MeanStdev& t) {
    metric[p + "_au_percentage"] = NumList(aus);
    metric[p + "_au_mean_percentage"] = Num(a.mean);
    metric[p + "_au_meet_expectation"] = a.mean >= 100.0 * c.metric.au ? "success" : "fail";
    metric[p + "_au_stdev_percentage"] = Num(a.stdev);
    metric[p + "_throughput_samples_per_second"] = NumList(tps);
    metric[p + "_throughput_mean_samples_per_second"] = Num(t.mean);
    metric[p + "_throughput_stdev_samples_per_second"] = Num(t.stdev);
    metric[p + "_io_mean_MB_per_second"] = Num(t.mean * record / kMiB);
    metric[p + "_io_stdev_MB_per_second"] = Num(t.stdev * record / kMiB);
  };
  if (outcome.train && n_epochs > 0) add_phase("train", au, au_s, tp, tp_s);
  if (have_eval) add_phase("eval", eau, eau_s, etp, etp_s);
  if (c.workflow.checkpoint && outcome.checkpointer != nullptr) {
    auto throughputs = [&](const std::vector<double>& durations) {
      std::vector<double> out;
      for (double d : durations) out.push_back(d > 0 ? ckpt_gib / d : 0.0);
      return out;
    };
    metrics::MeanStdev st = metrics::Summarize(throughputs(save_durations));
    metrics::MeanStdev sd = metrics::Summarize(save_durations);
    // DLIO writes NaN for an empty list; strict JSON gets null.
    const bool any_save = !save_durations.empty();
    metric["save_checkpoint_io_mean_GB_per_second"] = any_save ? Num(st.mean) : json(nullptr);
    metric["save_checkpoint_io_stdev_GB_per_second"] = any_save ? Num(st.stdev) : json(nullptr);
    metric["save_checkpoint_duration_mean_seconds"] = any_save ? Num(sd.mean) : json(nullptr);
    metric["save_checkpoint_duration_stdev_seconds"] = any_save ? Num(sd.stdev) : json(nullptr);
    if (!load_durations.empty()) {
      metrics::MeanStdev lt = metrics::Summarize(throughputs(load_durations));
      metrics::MeanStdev ld = metrics::Summarize(load_durations);
      metric["load_checkpoint_io_mean_GB_per_second"] = Num(lt.mean);
      metric["load_checkpoint_io_stdev_GB_per_second"] = Num(lt.stdev);
      metric["load_checkpoint_duration_mean_seconds"] = Num(ld.mean);
      metric["load_checkpoint_duration_stdev_seconds"] = Num(ld.stdev);
    }
    metric["checkpoint_size_GB"] = Num(ckpt_gib);
  }
  summary["metric"] = metric;
  summary["num_files_train"] = c.dataset.num_files_train;
  summary["num_files_eval"] = c.dataset.num_files_eval;
  summary["num_samples_per_file"] = c.dataset.num_samples_per_file;
  json cpu_list = json::array(), caching = json::array(), mem_list = json::array();
  for (int h = 0; h < cluster.num_hosts(); ++h) {
    cpu_list.push_back(static_cast<long>(std::lround(host_cpus[h])));
    caching.push_back(host_mem[h] > data_per_host_gib ? 1 : 0);
    mem_list.push_back(Num(host_mem[h]));
  }
  summary["host_cpu_count"] = cpu_list;
  summary["host_processor_name"] = processor;
  summary["potential_caching"] = caching;
  summary["host_cpuinfo"] = ToJson(cpuinfo);
  summary["host_meminfo"] = ToJson(meminfo);
  summary["host_memory_GB"] = mem_list;
  summary["data_size_per_host_GB"] = Num(data_per_host_gib);
  summary["epochs"] = n_epochs;
  summary["end"] = Timestamp(outcome.end.wall);

  json io_json;
  io_json["units"] = {{"MB", "MiB (2^20 bytes); DLIO's key names are kept"},
                      {"GB", "GiB (2^30 bytes); DLIO's key names are kept"},
                      {"latency", "milliseconds"}};
  io_json["version"] = IOMIMIC_VERSION_STRING;
  io_json["status"] = "completed";
  io_json["wall_seconds"] = Num(Seconds(outcome.start, outcome.end));
  io_json["bytes_read"] = io_total[2];
  io_json["bytes_written"] = io_total[4];
  io_json["read_requests"] = io_total[1];
  io_json["write_requests"] = io_total[3];
  io_json["files_opened"] = io_total[0];
  io_json["fsync_calls"] = io_total[5];
  io_json["io_errors"] = io_total[6];
  if (outcome.train) {
    io_json["train_steps_per_epoch"] = outcome.train->train_steps_per_epoch;
    io_json["eval_steps_per_epoch"] = outcome.train->eval_steps_per_epoch;
    io_json["train_io_actual_MiB_per_second"] = NumList(actual_mibps);
    io_json["train_io_actual_mean_MiB_per_second"] = Num(metrics::Summarize(actual_mibps).mean);
    io_json["train_io_nominal_mean_MiB_per_second"] = Num(tp_s.mean * record / kMiB);
    std::uint64_t total_bytes = 0;
    for (std::uint64_t b : total_epoch_bytes) total_bytes += b;
    io_json["train_bytes_read"] = total_bytes;
    io_json["barrier_mean_ms"] = Num(barrier_mean_ms);
    io_json["compute_requested_seconds"] = Num(all_requested);
    io_json["compute_measured_seconds"] = Num(all_measured);
    io_json["compute_error_percent"] =
        Num(all_requested > 0 ? 100.0 * (all_measured - all_requested) / all_requested : 0.0);
    // Time the emulated compute took beyond what was asked: not counted in AU.
    io_json["compute_overshoot_seconds"] = Num(all_measured - all_requested);
    io_json["minor_page_faults_per_epoch"] = epoch_faults;
  }
  if (outcome.checkpointer != nullptr) {
    json ck;
    ck["storage"] = outcome.checkpointer->storage_name();
    ck["fsync"] = c.checkpoint.fsync;
    ck["fsync_calls"] = ckpt_fsyncs;
    ck["size_bytes"] = outcome.checkpointer->plan().total_bytes();
    ck["parameters"] = outcome.checkpointer->plan().parameters;
    ck["saves"] = save_details;
    ck["loads"] = load_details;
    io_json["checkpoint"] = ck;
  }
  if (c.iomimic.checksum) {
    // A string: JSON numbers lose precision above 2^53.
    char hex[32];
    std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(read_checksum));
    io_json["read_checksum"] = hex;
    io_json["checksummed_samples"] = checksummed;
  }
  io_json["sample_read_latency_ms"] = Percentiles(sample_lat);
  io_json["read_request_latency_ms"] = Percentiles(read_lat);
  io_json["peak_rss_MiB_max_rank"] = Num(peak_rss);
  io_json["output_seconds"] = Num(output_seconds);
  if (outcome.generate) {
    json g;
    g["files_written"] = gen_written;
    g["files_skipped"] = gen_skipped;
    // Files every rank wrote its part of (shared-file generation), and how.
    g["files_written_by_all_ranks"] = gen_shared;
    if (gen_shared > 0) {
      g["shared_write_path"] = session.storage().capabilities().data_path + " (File::WriteAtAll)";
    }
    g["bytes_written"] = gen_bytes;
    g["bytes_written_per_rank"] = gen_bytes_by_rank;
    g["seconds"] = Num(gen_seconds);
    g["MiB_per_second"] =
        Num(gen_seconds > 0 ? static_cast<double>(gen_bytes) / kMiB / gen_seconds : 0);
    io_json["generate"] = g;
  }
  json plugins;
  json storage = PluginJson(session.storage_info(), c.storage.options);
  StorageCapabilities caps = session.storage().capabilities();
  storage["data_path"] = caps.data_path;
  storage["chain"] = session.storage_chain();
  storage["alignment"] = caps.alignment;
  if (!storage_stats.empty()) {
    json stats = json::object();
    for (const auto& [name, value] : storage_stats) {
      // Counts stay integers; times and the like are numbers.
      const bool seconds = name.size() >= 8 && name.compare(name.size() - 8, 8, "_seconds") == 0;
      if (!seconds && value >= 0 && value < 9007199254740992.0 && std::floor(value) == value) {
        stats[name] = static_cast<std::uint64_t>(value);
      } else {
        stats[name] = Num(value);
      }
    }
    storage["statistics"] = stats;  // the back end's own figures, summed over ranks
  }
  plugins["storage"] = storage;
  plugins["format"] = PluginJson(session.format_info(), c.dataset.options);
  io_json["plugins"] = plugins;
  json shuffle;
  shuffle["file_shuffle"] = config::ShuffleModeName(c.reader.file_shuffle);
  shuffle["sample_shuffle"] = config::ShuffleModeName(c.reader.sample_shuffle);
  shuffle["seed"] = c.train.seed;
  shuffle["seed_change_epoch"] = c.train.seed_change_epoch;
  shuffle["random_seed"] = session.shuffle_seeds().random_seed;
  shuffle["dlio_order"] = c.iomimic.dlio_order;
  io_json["shuffle"] = shuffle;
  json manifest;
  manifest["path"] = session.manifest().manifest_path;
  manifest["workload"] = session.manifest().workload_name;
  manifest["overrides"] = session.manifest().raw_overrides;
  manifest["resolved"] = config::ToYaml(c, false);
  io_json["manifest"] = manifest;
  summary["iomimic"] = io_json;

  IOMIMIC_RETURN_IF_ERROR(
      WriteFile(folder + "/summary.json",
                summary.dump(4, ' ', false, json::error_handler_t::replace) + "\n"));

  if (human != nullptr) {
    std::ostringstream h;
    char line[512];
    h << "iomimic " << IOMIMIC_VERSION_STRING << ": workload '" << session.manifest().workload_name
      << "', " << world << (world == 1 ? " rank" : " ranks")
      << (per_process > 1 ? " x " + std::to_string(per_process) + " accelerators" : std::string())
      << ", storage " << session.storage_chain() << " (" << caps.data_path << ")"
      << (session.has_format() ? ", format " + session.format_info().name : std::string()) << "\n";
    if (outcome.generate) {
      std::snprintf(line, sizeof(line),
                    "  generate: %llu files written, %llu already complete, %.1f MiB in %.2f s\n",
                    static_cast<unsigned long long>(gen_written),
                    static_cast<unsigned long long>(gen_skipped), gen_bytes / kMiB, gen_seconds);
      h << line;
    }
    if (outcome.train && n_epochs > 0) {
      std::snprintf(line, sizeof(line),
                    "  train: %zu epochs x %llu steps, AU %.2f%% (threshold %.0f%%: %s), "
                    "%.1f samples/s, %.2f MiB/s nominal, %.2f MiB/s read\n",
                    n_epochs, static_cast<unsigned long long>(outcome.train->train_steps_per_epoch),
                    au_s.mean, 100.0 * c.metric.au,
                    au_s.mean >= 100.0 * c.metric.au ? "success" : "fail", tp_s.mean,
                    tp_s.mean * record / kMiB, metrics::Summarize(actual_mibps).mean);
      h << line;
    }
    if (have_eval) {
      std::snprintf(line, sizeof(line), "  eval: AU %.2f%%, %.1f samples/s\n", eau_s.mean,
                    etp_s.mean);
      h << line;
    }
    auto ckpt_line = [&](const char* what, const std::vector<double>& durations) {
      if (durations.empty()) return;
      metrics::MeanStdev d = metrics::Summarize(durations);
      std::vector<double> rates;
      for (double x : durations) rates.push_back(x > 0 ? ckpt_gib / x : 0.0);
      std::snprintf(line, sizeof(line),
                    "  checkpoint %s: %zu x %.3f GiB, %.3f s mean, %.3f GiB/s mean (rank 0)%s\n",
                    what, durations.size(), ckpt_gib, d.mean, metrics::Summarize(rates).mean,
                    c.checkpoint.fsync ? ", fsync" : "");
      h << line;
    };
    ckpt_line("save", save_durations);
    ckpt_line("load", load_durations);
    if (sample_lat.count() > 0) {
      std::snprintf(line, sizeof(line),
                    "  sample read latency: p50 %.3f ms, p99 %.3f ms, max %.3f ms (%llu samples)\n",
                    sample_lat.Percentile(0.5) / 1e6, sample_lat.Percentile(0.99) / 1e6,
                    sample_lat.max_ns() / 1e6, static_cast<unsigned long long>(sample_lat.count()));
      h << line;
    }
    std::snprintf(line, sizeof(line),
                  "  bytes read %.1f MiB, written %.1f MiB, peak RSS %.1f MiB\n",
                  io_total[2] / kMiB, io_total[4] / kMiB, peak_rss);
    h << line;
    if (max_k > 1) {
      std::snprintf(line, sizeof(line),
                    "  per-step lists in <rank>_output.json hold means of up to %llu steps "
                    "(iomimic.max_step_list=%llu; steps_per_entry in each epoch)\n",
                    static_cast<unsigned long long>(max_k),
                    static_cast<unsigned long long>(c.iomimic.max_step_list));
      h << line;
    }
    h << "  results: " << folder << "\n";
    *human = h.str();
  }
  return Status::OK();
}

}  // namespace iomimic::output
