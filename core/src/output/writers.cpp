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
#include "metrics/figures_json.h"
#include "output/json_stream.h"

namespace iomimic::output {
namespace {

using json = nlohmann::ordered_json;
using metrics::JsonNumber;
using metrics::PhaseMetrics;
using metrics::Seconds;

// Darshan's access-size bin names (session::FileCounters::SizeBin).
constexpr const char* kSizeBinNames[session::FileCounters::kSizeBins] = {
    "0_100", "100_1K", "1K_10K",   "10K_100K", "100K_1M",
    "1M_4M", "4M_10M", "10M_100M", "100M_1G",  "1G_PLUS"};

}  // namespace

std::string FixedTwo(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.2f", v);
  return buf;
}

nlohmann::ordered_json StringMapJson(const std::map<std::string, std::string>& m) {
  json out = json::object();
  for (const auto& [k, v] : m) out[k] = v;
  return out;
}

std::string DumpJson(const nlohmann::ordered_json& value) {
  return value.dump(4, ' ', false, json::error_handler_t::replace);
}

nlohmann::ordered_json CheckpointStatsJson(const metrics::CheckpointRecord& r, double size_gib) {
  json o;
  o["start"] = Timestamp(r.start.wall);
  o["end"] = Timestamp(r.end.wall);
  o["duration"] = JsonNumber<json>(r.duration());
  o["throughput"] = JsonNumber<json>(r.duration() > 0 ? size_gib / r.duration() : 0.0);
  return o;
}

namespace {

json Percentiles(const metrics::LatencyHistogram& h) {
  return metrics::PercentilesJson<json>(h, metrics::kResultQuantiles);
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

// A span of per_epoch_stats.json: its start, end and duration (DLIO's two
// decimals).
json SpanStats(const metrics::Stamp& start, const metrics::Stamp& end) {
  json o;
  o["start"] = Timestamp(start.wall);
  o["end"] = Timestamp(end.wall);
  o["duration"] = FixedTwo(Seconds(start, end));
  return o;
}

json PerEpochStats(const std::vector<metrics::EpochRecord>& epochs, double checkpoint_gib) {
  json stats = json::object();
  for (const metrics::EpochRecord& e : epochs) {
    json es = SpanStats(e.start, e.end);
    for (const metrics::PhaseRecord& b : e.blocks) {
      es["block" + std::to_string(b.index)] = SpanStats(b.start, b.end);
    }
    if (e.eval) es["eval"] = SpanStats(e.eval->start, e.eval->end);
    for (const auto& r : e.saves) {
      es["save_ckpt" + std::to_string(r.index)] = CheckpointStatsJson(r, checkpoint_gib);
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
  return DumpJson(PerEpochStats(epochs, checkpoint_gib)) + "\n";
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

namespace {

// DLIO's host keys of summary.json: per-host lists, then rank 0's host.
void AddHostLists(const RunResults& r, json* summary) {
  json cpu_list = json::array(), caching = json::array(), mem_list = json::array();
  for (int h = 0; h < r.num_hosts; ++h) {
    cpu_list.push_back(static_cast<long>(std::lround(r.host_cpus[h])));
    caching.push_back(r.host_memory_gib[h] > r.data_size_per_host_gib ? 1 : 0);
    mem_list.push_back(JsonNumber<json>(r.host_memory_gib[h]));
  }
  json& s = *summary;
  s["host_cpu_count"] = cpu_list;
  s["host_processor_name"] = r.host.processor;
  s["potential_caching"] = caching;
  s["host_cpuinfo"] = StringMapJson(r.host.cpuinfo);
  s["host_meminfo"] = StringMapJson(r.host.meminfo);
  s["host_memory_GB"] = mem_list;
}

// Darshan's POSIX counters over every path and rank (io_counters.csv).
json IoCountersJson(const RunResults& r) {
  const session::FileCounters& c = r.io_counters_total;
  json o;
  o["paths"] = r.io_counters_paths;
  for (const session::FileCount& count : session::kFileCounts) o[count.name] = c.*count.member;
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
  o["read_time_s"] = JsonNumber<json>(c.read_ns / 1e9);
  o["write_time_s"] = JsonNumber<json>(c.write_ns / 1e9);
  o["meta_time_s"] = JsonNumber<json>(c.meta_ns / 1e9);
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
  o["sample_read_latency_ms"] = Percentiles(r.sample_latency);
  json latency = json::object();
  for (const auto& [name, h] : r.histograms) {
    if (h.count() > 0) latency[name] = Percentiles(h);
  }
  o["latency_ms"] = latency;
  o["read_request_latency_ms"] = Percentiles(r.read_latency);
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
        stats[name] = JsonNumber<json>(value);
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
    o["train_io_MiB_per_second"] = JsonNumber<json>(h.train_read_MiB_per_second);
    o["samples"] = h.samples;
    o["train_au_mean_percentage"] = JsonNumber<json>(h.au_percent);
    o["train_throughput_samples_per_second"] = JsonNumber<json>(h.samples_per_second);
    o["data_wait_seconds"] = JsonNumber<json>(h.data_wait_seconds);
    o["io_seconds"] = JsonNumber<json>(h.io_seconds);
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

// summary.json's "iomimic": what DLIO's keys do not say (the workflows add
// theirs).
json IomimicJson(const RunResults& r, const config::LoadedManifest& manifest) {
  const config::Config& c = manifest.config;
  json io;
  io["units"] = {{"MB", "MiB (2^20 bytes); DLIO's key names are kept"},
                 {"GB", "GiB (2^30 bytes); DLIO's key names are kept"},
                 {"latency", "milliseconds"}};
  io["version"] = IOMIMIC_VERSION_STRING;
  io["status"] = r.interrupted_by != 0 ? "interrupted" : "completed";
  io["wall_seconds"] = JsonNumber<json>(Seconds(r.start, r.end));
  io["bytes_read"] = r.io.bytes_read;
  io["bytes_written"] = r.io.bytes_written;
  io["read_requests"] = r.io.read_requests;
  io["write_requests"] = r.io.write_requests;
  io["files_opened"] = r.io.files_opened;
  io["fsync_calls"] = r.io.fsync_calls;
  io["io_errors"] = r.io.errors;
  io["rank_hosts"] = r.rank_hosts;
  io["hosts"] = HostsJson(r);
  AddReadFigures(r, &io);
  io["io_counters"] = IoCountersJson(r);
  if (r.trace) {
    json o;
    o["events"] = r.trace->events;
    o["dropped_events"] = r.trace->dropped;
    io["trace"] = o;
  }
  io["peak_rss_MiB_max_rank"] = JsonNumber<json>(r.peak_rss_mib);
  io["output_seconds"] = JsonNumber<json>(r.output_seconds);
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
  summary["metric"] = json::object();  // DLIO's figures: the workflows'
  summary["num_files_train"] = c.dataset.num_files_train;
  summary["num_files_eval"] = c.dataset.num_files_eval;
  summary["num_samples_per_file"] = c.dataset.num_samples_per_file;
  AddHostLists(r, &summary);
  summary["data_size_per_host_GB"] = JsonNumber<json>(r.data_size_per_host_gib);
  summary["epochs"] = 0;
  summary["end"] = Timestamp(r.end.wall);
  json iomimic = IomimicJson(r, manifest);
  for (const auto& w : r.workflows) w->AddToSummary(r, manifest, summary, iomimic);
  summary["iomimic"] = std::move(iomimic);
  return DumpJson(summary) + "\n";
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
      FixedTwo(100.0 * metrics::LatencyHistogram::kMaxRelativeError) + "% of the exact value";
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

std::string MetricBlock(const RunResults& r, const config::Config& c) {
  const char* const kRule = "[METRIC] ==========================================================\n";
  char line[256];
  std::string out = "[OUTPUT] Averaged metric over all steps/epochs\n";
  out += kRule;
  std::snprintf(line, sizeof(line), "[METRIC] Number of Simulated Accelerators: %d \n",
                r.accelerators);
  out += line;
  for (const auto& w : r.workflows) out += w->MetricLines(r, c);
  out += kRule;
  return out;
}

std::string ConsoleSummary(const RunResults& r, const config::LoadedManifest& manifest,
                           const std::string& folder) {
  const config::Config& c = manifest.config;
  std::ostringstream h;
  char line[512];
  h << "iomimic " << IOMIMIC_VERSION_STRING << ": workload '" << manifest.workload_name << "', "
    << r.ranks << (r.ranks == 1 ? " rank" : " ranks")
    << (r.accelerators_per_process > 1
            ? " x " + std::to_string(r.accelerators_per_process) + " accelerators"
            : std::string())
    << ", storage " << r.storage_chain << " (" << r.data_path << ")"
    << (r.format ? ", format " + r.format->info.name : std::string()) << "\n";
  for (const auto& w : r.workflows) h << w->ConsoleLines(r, c);
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
  for (const auto& w : r.workflows) h << w->ConsoleNotes(r, c);
  h << "  results: " << folder;
  return h.str();
}

}  // namespace iomimic::output
