#include "output/model.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "metrics/host_info.h"
#include "metrics/rank_merge.h"
#include "output/merge.h"
#include "output/text_cursor.h"
#include "session/session.h"

namespace iomimic::output {
namespace {

using metrics::PhaseMetrics;
using metrics::Seconds;

using metrics::ReadKeyValues;

HostFacts ReadHostFacts() {
  HostFacts h;
  h.cpuinfo = ReadKeyValues("/proc/cpuinfo", true);
  h.meminfo = ReadKeyValues("/proc/meminfo", false);
  auto mem = h.meminfo.find("MemTotal");
  if (mem != h.meminfo.end())
    h.memory_gib = std::strtod(mem->second.c_str(), nullptr) * 1024.0 / kGiB;
  h.cpus = sysconf(_SC_NPROCESSORS_ONLN);
  auto name = h.cpuinfo.find("model name");
  if (name != h.cpuinfo.end()) h.processor = name->second;
  return h;
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

}  // namespace

// Text for an all-gather: one line per row, numbers exact.
std::string EncodeTimeline(const std::vector<metrics::TimelineRow>& rows) {
  std::string text;
  char line[512];
  for (const metrics::TimelineRow& r : rows) {
    const metrics::ActivitySample& d = r.delta;
    std::snprintf(
        line, sizeof(line), "%llu %.17g %.17g %llu %llu %llu %llu %llu %llu %.17g %.17g %.17g\n",
        static_cast<unsigned long long>(r.index), r.start_seconds, r.end_seconds,
        static_cast<unsigned long long>(d.bytes_read),
        static_cast<unsigned long long>(d.bytes_written),
        static_cast<unsigned long long>(d.read_requests),
        static_cast<unsigned long long>(d.write_requests),
        static_cast<unsigned long long>(d.samples), static_cast<unsigned long long>(d.steps),
        d.compute_seconds, d.io_seconds, d.barrier_seconds);
    text += line;
  }
  return text;
}

std::vector<metrics::TimelineRow> DecodeTimeline(const std::string& text) {
  std::vector<metrics::TimelineRow> rows;
  TextCursor in(text);
  metrics::TimelineRow r;
  metrics::ActivitySample& d = r.delta;
  while (!in.AtEnd() && in.Next(&r.index) && in.Next(&r.start_seconds) && in.Next(&r.end_seconds) &&
         in.Next(&d.bytes_read) && in.Next(&d.bytes_written) && in.Next(&d.read_requests) &&
         in.Next(&d.write_requests) && in.Next(&d.samples) && in.Next(&d.steps) &&
         in.Next(&d.compute_seconds) && in.Next(&d.io_seconds) && in.Next(&d.barrier_seconds)) {
    rows.push_back(r);
  }
  return rows;
}

std::string EncodeEvents(const std::vector<EventEntry>& events) {
  std::string text;
  char line[512];
  for (const EventEntry& e : events) {
    std::snprintf(line, sizeof(line), "%s %llu %llu %.17g %.17g %llu\n", e.event.c_str(),
                  static_cast<unsigned long long>(e.epoch),
                  static_cast<unsigned long long>(e.index), e.start_seconds, e.end_seconds,
                  static_cast<unsigned long long>(e.bytes));
    text += line;
  }
  return text;
}

std::vector<EventEntry> DecodeEvents(const std::string& text, int rank) {
  std::vector<EventEntry> events;
  TextCursor in(text);
  EventEntry e;
  e.rank = rank;
  while (!in.AtEnd() && in.Word(&e.event) && in.Next(&e.epoch) && in.Next(&e.index) &&
         in.Next(&e.start_seconds) && in.Next(&e.end_seconds) && in.Next(&e.bytes)) {
    events.push_back(e);
  }
  return events;
}

// One rank's per-path counters as text for AllGatherStrings: per path its
// length, the path, then every counter; timestamps from the run's origin.
std::string EncodeFileCounters(
    const std::vector<std::pair<std::string, session::FileCounters>>& all,
    std::int64_t steady_to_origin_ns) {
  std::ostringstream out;
  auto since = [&](std::int64_t t) { return t == 0 ? 0 : t - steady_to_origin_ns; };
  for (const auto& [path, c] : all) {
    out << path.size() << ' ' << path;
    for (const session::FileCount& count : session::kFileCounts) out << ' ' << c.*count.member;
    out << ' ' << c.max_byte_read << ' ' << c.max_byte_written;
    for (std::uint64_t v : c.read_size_bins) out << ' ' << v;
    for (std::uint64_t v : c.write_size_bins) out << ' ' << v;
    for (const auto& [size, n] : c.access_sizes) out << ' ' << size << ' ' << n;
    out << ' ' << c.read_ns << ' ' << c.write_ns << ' ' << c.meta_ns << ' '
        << since(c.open_start_ns) << ' ' << since(c.open_end_ns) << ' ' << since(c.close_start_ns)
        << ' ' << since(c.close_end_ns) << '\n';
  }
  return out.str();
}

std::vector<std::pair<std::string, session::FileCounters>> DecodeFileCounters(
    const std::string& text) {
  std::vector<std::pair<std::string, session::FileCounters>> all;
  TextCursor in(text);
  std::size_t length = 0;
  while (!in.AtEnd() && in.Next(&length)) {
    std::string path;
    session::FileCounters c;
    in.Bytes(length, &path);
    for (const session::FileCount& count : session::kFileCounts) in.Next(&(c.*count.member));
    in.Next(&c.max_byte_read) && in.Next(&c.max_byte_written);
    for (std::uint64_t& v : c.read_size_bins) in.Next(&v);
    for (std::uint64_t& v : c.write_size_bins) in.Next(&v);
    for (auto& [size, n] : c.access_sizes) in.Next(&size) && in.Next(&n);
    in.Next(&c.read_ns) && in.Next(&c.write_ns) && in.Next(&c.meta_ns) &&
        in.Next(&c.open_start_ns) && in.Next(&c.open_end_ns) && in.Next(&c.close_start_ns) &&
        in.Next(&c.close_end_ns);
    if (!in.ok()) break;
    all.emplace_back(std::move(path), c);
  }
  return all;
}

void MergeIoCounters(const std::vector<std::string>& ranks, std::uint64_t top, RunResults* r) {
  std::map<std::string, IoCounterRow> by_path;
  for (std::size_t rank = 0; rank < ranks.size(); ++rank) {
    for (auto& [path, c] : DecodeFileCounters(ranks[rank])) {
      auto [it, inserted] = by_path.try_emplace(path);
      IoCounterRow& row = it->second;
      if (inserted) {
        row.rank = static_cast<int>(rank);
        row.path = path;
      } else if (row.rank != static_cast<int>(rank)) {
        row.rank = -1;
      }
      row.counters.Merge(c);
    }
  }
  std::vector<IoCounterRow> rows;
  rows.reserve(by_path.size());
  for (auto& [path, row] : by_path) {
    r->io_counters_total.Merge(row.counters);
    rows.push_back(std::move(row));
  }
  r->io_counters_paths = rows.size();
  auto bytes = [](const IoCounterRow& x) {
    return x.counters.bytes_read + x.counters.bytes_written;
  };
  std::stable_sort(rows.begin(), rows.end(), [&](const IoCounterRow& a, const IoCounterRow& b) {
    return bytes(a) > bytes(b);
  });
  if (top != 0 && rows.size() > top) {
    IoCounterRow others;
    others.path = "others";
    others.files = 0;
    for (std::size_t i = top; i < rows.size(); ++i) {
      others.counters.Merge(rows[i].counters);
      ++others.files;
    }
    rows.resize(top);
    rows.push_back(std::move(others));
  }
  r->io_counters = std::move(rows);
}

namespace {

// Every rank's per-path counters gathered and merged (MergeIoCounters).
void CollectIoCounters(session::Session& session, const RunOutcome& outcome, RunResults& r) {
  cluster::Cluster& cluster = session.cluster();
  // steady_clock ticks of the origin: this rank's start stamp pairs the two clocks.
  const std::int64_t origin_steady =
      std::chrono::duration_cast<std::chrono::nanoseconds>(outcome.start.mono.time_since_epoch())
          .count() -
      std::chrono::duration_cast<std::chrono::nanoseconds>(outcome.start.wall - outcome.origin)
          .count();
  // The checkpointer's own storage, when it has one, counts its files apart.
  std::vector<std::pair<std::string, session::FileCounters>> mine =
      session.storage().FileCountersByPath();
  for (const std::shared_ptr<WorkflowResults>& w : outcome.workflows) {
    for (const session::CountingStorage* other : w->other_storage()) {
      if (other == &session.storage()) continue;
      for (auto& file : other->FileCountersByPath()) mine.push_back(std::move(file));
    }
  }
  // Only rank 0 writes them (io_counters.csv, summary.json).
  MergeIoCounters(cluster.GatherStringsToRoot(EncodeFileCounters(mine, origin_steady)),
                  session.config().iomimic.io_counters_top, &r);
}

// Host facts: DLIO reads them on every rank; the per-host lists take one
// share from each rank of a host. Needs r->ranks.
void CollectHosts(cluster::Cluster& cluster, const config::Config& c, RunResults* r) {
  r->host = ReadHostFacts();
  const std::size_t hosts = static_cast<std::size_t>(cluster.num_hosts());
  std::vector<double> mem(hosts, 0.0), cpus(hosts, 0.0);
  mem[cluster.host_index()] = r->host.memory_gib / cluster.ranks_on_host();
  cpus[cluster.host_index()] = static_cast<double>(r->host.cpus) / cluster.ranks_on_host();
  r->host_memory_gib = cluster.SumDoubles(mem);
  r->host_cpus = cluster.SumDoubles(cpus);
  r->data_size_per_host_gib =
      static_cast<double>(cluster.ranks_on_host()) *
      static_cast<double>(c.dataset.num_samples_per_file * c.dataset.num_files_train /
                          static_cast<std::uint64_t>(r->ranks)) *
      static_cast<double>(c.dataset.record_length_bytes) / kGiB;
}

// This rank's figures for the per-host rows, from the same counters and
// records the run's totals sum (so that the hosts add up to them): the
// storage's, then each workflow's.
RankFigures OwnFigures(session::Session& session, const RunOutcome& outcome,
                       const session::IoSnapshot& io, int accelerators_per_process) {
  RankFigures f;
  f.host = session.cluster().hostname();
  f.accelerators = accelerators_per_process;
  f.bytes_read = io.bytes_read;
  f.bytes_written = io.bytes_written;
  f.samples = session.sample_latency().count();
  const session::IoCounters& counters = session.storage().counters();
  f.io_seconds =
      static_cast<double>(counters.read_latency.sum_ns() + counters.write_latency.sum_ns()) / 1e9;
  for (const std::shared_ptr<WorkflowResults>& w : outcome.workflows) {
    w->AddRankFigures(session.config(), &f);
  }
  return f;
}

// The rank-to-host map and the per-host rows: every rank's figures gathered
// as one line of text each and grouped by host (O(ranks), output/hosts.h).
void CollectHostFigures(session::Session& session, const RunOutcome& outcome,
                        const session::IoSnapshot& io, RunResults* r) {
  const std::vector<std::string> lines = session.cluster().AllGatherStrings(
      EncodeRankFigures(OwnFigures(session, outcome, io, r->accelerators_per_process)));
  std::vector<RankFigures> ranks(lines.size());
  r->rank_hosts.resize(lines.size());
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (!DecodeRankFigures(lines[i], &ranks[i])) ranks[i].host = "(rank " + std::to_string(i) + ")";
    r->rank_hosts[i] = ranks[i].host;
  }
  r->hosts = GroupByHost(ranks, r->host_rate_seconds);
}

// Each sampling host's telemetry rows, gathered (ranks that sampled nothing
// send nothing).
void CollectTelemetry(const RunOutcome& outcome, cluster::Cluster& cluster, RunResults* r) {
  const std::vector<std::string> all = cluster.AllGatherStrings(
      outcome.telemetry_sampled
          ? metrics::EncodeTelemetry(outcome.telemetry_sources, outcome.telemetry)
          : std::string());
  for (std::size_t rank = 0; rank < all.size(); ++rank) {
    if (all[rank].empty()) continue;
    HostTelemetryResults h;
    h.rank = static_cast<int>(rank);
    h.host = rank < r->rank_hosts.size() ? r->rank_hosts[rank] : std::string();
    if (metrics::DecodeTelemetry(all[rank], &h.sources, &h.rows)) {
      r->host_telemetry.push_back(std::move(h));
    }
  }
}

// The storage's totals over ranks, its per-path counters and the trace's.
void CollectIo(session::Session& session, const RunOutcome& outcome, RunResults* r) {
  cluster::Cluster& cluster = session.cluster();
  const session::IoSnapshot io = session.storage().Snapshot();
  CollectHostFigures(session, outcome, io, r);
  const std::vector<std::uint64_t> io_total =
      cluster.SumU64s({io.files_opened, io.read_requests, io.bytes_read, io.write_requests,
                       io.bytes_written, io.fsync_calls, io.errors});
  r->io = {io_total[0], io_total[1], io_total[2], io_total[3],
           io_total[4], io_total[5], io_total[6]};
  CollectIoCounters(session, outcome, *r);
  if (session.config().iomimic.trace) {
    const std::vector<std::uint64_t> trace =
        cluster.SumU64s({session.tracer().recorded(), session.tracer().dropped()});
    r->trace = TraceTotals{trace[0], trace[1]};
  }
}

// Every histogram (histograms.json) merged over ranks, sample and storage
// read latency among them, then the workflows' own.
void CollectHistograms(session::Session& session, const RunOutcome& outcome, RunResults* r) {
  cluster::Cluster& cluster = session.cluster();
  const session::IoCounters& io_counters = session.storage().counters();
  std::vector<std::pair<std::string, metrics::LatencyHistogram>> workflows;
  for (const std::shared_ptr<WorkflowResults>& w : outcome.workflows) {
    for (auto& named : w->Histograms()) workflows.push_back(std::move(named));
  }
  std::vector<std::pair<std::string, const metrics::LatencyHistogram*>> all = {
      {"sample_read", &session.sample_latency()},    {"storage_open", &io_counters.open_latency},
      {"storage_read", &io_counters.read_latency},   {"storage_write", &io_counters.write_latency},
      {"storage_fsync", &io_counters.fsync_latency}, {"storage_close", &io_counters.close_latency},
      {"storage_stat", &io_counters.stat_latency}};
  for (const auto& [name, h] : workflows) all.emplace_back(name, &h);
  std::vector<const metrics::LatencyHistogram*> local;
  for (const auto& [name, h] : all) local.push_back(h);
  std::vector<metrics::LatencyHistogram> merged = metrics::MergeOverRanks(local, cluster);
  for (std::size_t i = 0; i < merged.size(); ++i) {
    r->histograms.emplace_back(all[i].first, std::move(merged[i]));
  }
  r->sample_latency = r->histograms[0].second;  // sample_read
  r->read_latency = r->histograms[2].second;    // storage_read
}

// The plugins (options redacted), the storage's chain, place and alignment,
// and the shuffle's seed.
void CollectPlugins(session::Session& session, const config::Config& c, RunResults* r) {
  r->storage = {session.storage_info(), config::Redacted(c.storage.options)};
  if (session.has_format()) {
    r->format = PluginResults{session.format_info(), config::Redacted(c.dataset.options)};
  }
  const StorageCapabilities caps = session.storage().capabilities();
  r->storage_chain = session.storage_chain();
  r->data_path = caps.data_path;
  r->alignment = caps.alignment;
  r->shuffle_random_seed = session.shuffle_seeds().random_seed;
}

// Timeline rows and events of every rank, the events in time order, on rank 0.
void CollectTimeline(const RunOutcome& outcome, cluster::Cluster& cluster, RunResults* r) {
  // Only rank 0 writes them (timeline.csv, events.csv): the other ranks'
  // results keep none.
  const std::vector<std::string> rows =
      cluster.GatherStringsToRoot(EncodeTimeline(outcome.timeline));
  for (std::size_t rank = 0; rank < rows.size(); ++rank) {
    for (const metrics::TimelineRow& row : DecodeTimeline(rows[rank])) {
      r->timeline.push_back({static_cast<int>(rank), row});
    }
  }
  std::vector<EventEntry> mine;
  for (const std::shared_ptr<WorkflowResults>& w : outcome.workflows) {
    w->AddEvents(outcome.origin, cluster.rank(), &mine);
  }
  const std::vector<std::string> events = cluster.GatherStringsToRoot(EncodeEvents(mine));
  for (std::size_t rank = 0; rank < events.size(); ++rank) {
    for (EventEntry& e : DecodeEvents(events[rank], static_cast<int>(rank))) {
      r->events.push_back(std::move(e));
    }
  }
  std::stable_sort(
      r->events.begin(), r->events.end(),
      [](const EventEntry& a, const EventEntry& b) { return a.start_seconds < b.start_seconds; });
}

}  // namespace

double SinceOrigin(std::chrono::system_clock::time_point origin, const metrics::Stamp& t) {
  return std::chrono::duration<double>(t.wall - origin).count();
}

Result<RunResults> CollectResults(session::Session& session, const RunOutcome& outcome) {
  cluster::Cluster& cluster = session.cluster();
  const config::Config& c = session.config();
  RunResults r;
  r.start = outcome.start;
  r.end = outcome.end;
  r.ranks = cluster.size();
  r.rank = cluster.rank();
  for (const std::shared_ptr<WorkflowResults>& w : outcome.workflows) {
    r.accelerators_per_process =
        std::max(r.accelerators_per_process, w->accelerators_per_process());
    if (r.interrupted_by == 0) r.interrupted_by = w->interrupted_by();
  }
  r.accelerators = r.ranks * r.accelerators_per_process;
  r.num_hosts = cluster.num_hosts();
  r.hostname = cluster.hostname();
  CollectHosts(cluster, c, &r);
  // Each workflow merges its own figures (output/workflow_results.h); an
  // error is agreed on, so every rank leaves the collectives together.
  r.workflows = outcome.workflows;
  for (const std::shared_ptr<WorkflowResults>& w : r.workflows) {
    IOMIMIC_RETURN_IF_ERROR(cluster.AgreeOnStatus(w->Collect(session, r)));
  }
  CollectIo(session, outcome, &r);
  CollectHistograms(session, outcome, &r);
  r.storage_statistics = SumStatistics(session.storage().Statistics(), cluster);
  CollectPlugins(session, c, &r);
  r.timeline_interval = c.iomimic.timeline_interval;
  CollectTimeline(outcome, cluster, &r);
  CollectTelemetry(outcome, cluster, &r);
  const std::uint64_t checksum = cluster.SumU64(session.checksum());
  const std::uint64_t checksummed = cluster.SumU64(session.checksummed());
  if (c.iomimic.checksum) r.checksum = std::make_pair(checksum, checksummed);
  r.shared_samples = cluster.SumU64(session.shared_samples());
  return r;
}

}  // namespace iomimic::output
