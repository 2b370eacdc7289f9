#include "output/model.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "metrics/host_info.h"
#include "output/merge.h"
#include "output/text_cursor.h"

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

// Merges histograms over all ranks, in two collectives however many there
// are: one sum of every bucket, one maximum of every extreme (a minimum is
// the maximum of its negation). Each collective costs a round of every rank
// being scheduled, tens of milliseconds on an oversubscribed client at 128
// ranks (docs/cluster.md, "Scale").
std::vector<metrics::LatencyHistogram> MergeHistograms(
    const std::vector<const metrics::LatencyHistogram*>& local, cluster::Cluster& cluster) {
  std::vector<std::uint64_t> buckets;
  std::vector<std::size_t> sizes;
  std::vector<double> extremes;
  for (const metrics::LatencyHistogram* h : local) {
    const std::vector<std::uint64_t> exported = h->Export();
    sizes.push_back(exported.size());
    buckets.insert(buckets.end(), exported.begin(), exported.end());
    extremes.push_back(static_cast<double>(h->max_ns()));
    extremes.push_back(-(h->count() == 0 ? 1e300 : static_cast<double>(h->min_ns())));
  }
  buckets = cluster.SumU64s(buckets);
  extremes = cluster.MaxDoubles(extremes);
  std::vector<metrics::LatencyHistogram> out;
  std::size_t at = 0;
  for (std::size_t i = 0; i < local.size(); ++i) {
    const std::vector<std::uint64_t> summed(
        buckets.begin() + static_cast<std::ptrdiff_t>(at),
        buckets.begin() + static_cast<std::ptrdiff_t>(at + sizes[i]));
    at += sizes[i];
    const double min = -extremes[2 * i + 1];
    out.push_back(
        metrics::LatencyHistogram::Import(summed, static_cast<std::uint64_t>(extremes[2 * i]),
                                          min >= 1e300 ? 0 : static_cast<std::uint64_t>(min)));
  }
  return out;
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

// Per-epoch AU and throughput over all accelerators of all ranks.
// The epochs that count in the per-epoch series and means: all but a last
// one a signal cut short (metrics::EpochRecord::partial; the ranks agree on
// where they stopped, so every rank leaves the same one out).
std::size_t WholeEpochs(const std::vector<metrics::EpochRecord>& epochs) {
  return !epochs.empty() && epochs.back().partial ? epochs.size() - 1 : epochs.size();
}

void CollectPhaseSeries(const train::TrainResult& train, const config::Config& c, int accelerators,
                        cluster::Cluster& cluster, TrainResults* out) {
  const std::size_t n = WholeEpochs(train.epochs);
  std::vector<double> local(4 * n);
  for (const train::AcceleratorRecords& a : train.accelerators) {
    for (std::size_t i = 0; i < n && i < a.epochs.size(); ++i) {
      const EpochMetrics m = ComputeEpochMetrics(a.epochs[i], c);
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

TrainResults CollectTrain(const train::TrainResult& train, const config::Config& c,
                          int accelerators, cluster::Cluster& cluster) {
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
  for (const train::AcceleratorRecords& a : train.accelerators) {
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

double SinceOrigin(std::chrono::system_clock::time_point origin, const metrics::Stamp& t) {
  return std::chrono::duration<double>(t.wall - origin).count();
}

// This rank's events, from its records.
std::vector<EventEntry> RankEvents(const RunOutcome& outcome, int rank) {
  std::vector<EventEntry> out;
  auto add = [&](const char* name, std::uint64_t epoch, std::uint64_t index,
                 const metrics::Stamp& start, const metrics::Stamp& end, std::uint64_t bytes) {
    if (!start.valid() || !end.valid()) return;
    out.push_back({rank, name, epoch, index, SinceOrigin(outcome.origin, start),
                   SinceOrigin(outcome.origin, end), bytes});
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
std::string EncodeFileCounters(const std::vector<std::pair<std::string, session::FileCounters>>& all,
                               std::int64_t steady_to_origin_ns) {
  std::ostringstream out;
  auto since = [&](std::int64_t t) { return t == 0 ? 0 : t - steady_to_origin_ns; };
  for (const auto& [path, c] : all) {
    out << path.size() << ' ' << path << ' ' << c.opens << ' ' << c.stats << ' ' << c.reads << ' '
        << c.writes << ' ' << c.bytes_read << ' ' << c.bytes_written << ' ' << c.max_byte_read
        << ' ' << c.max_byte_written << ' ' << c.seq_reads << ' ' << c.consec_reads;
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
    in.Next(&c.opens) && in.Next(&c.stats) && in.Next(&c.reads) && in.Next(&c.writes) &&
        in.Next(&c.bytes_read) && in.Next(&c.bytes_written) && in.Next(&c.max_byte_read) &&
        in.Next(&c.max_byte_written) && in.Next(&c.seq_reads) && in.Next(&c.consec_reads);
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
  if (outcome.checkpointer != nullptr && &outcome.checkpointer->storage() != &session.storage()) {
    for (auto& file : outcome.checkpointer->storage().FileCountersByPath()) {
      mine.push_back(std::move(file));
    }
  }
  // Only rank 0 writes them (io_counters.csv, summary.json).
  MergeIoCounters(cluster.GatherStringsToRoot(EncodeFileCounters(mine, origin_steady)),
                  session.config().iomimic.io_counters_top, &r);
}

// results.read_pattern: what one epoch reads of the format's files, so that a
// reader of the results can tell a deliberate reread from a fault.
void DescribeReadPattern(const config::Config& c, session::Session& session, RunResults* r) {
  const FormatTraits& t = session.format().traits();
  const std::uint64_t spf = std::max<std::uint64_t>(1, c.dataset.num_samples_per_file);
  if (c.iomimic.random_read_bytes > 0) {
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
// records the run's totals sum (so that the hosts add up to them).
RankFigures OwnFigures(session::Session& session, const RunOutcome& outcome,
                       const session::IoSnapshot& io, int accelerators_per_process) {
  RankFigures f;
  f.host = session.cluster().hostname();
  f.accelerators = accelerators_per_process;
  f.bytes_read = io.read_bytes;
  f.bytes_written = io.write_bytes;
  f.samples = session.sample_latency().count();
  const session::IoCounters& counters = session.storage().counters();
  f.io_seconds =
      static_cast<double>(counters.read_latency.sum_ns() + counters.write_latency.sum_ns()) / 1e9;
  if (!outcome.train) return f;
  // The whole epochs', as the run's train_bytes_read and training seconds.
  for (std::size_t i = 0; i < WholeEpochs(outcome.train->epochs); ++i) {
    for (const metrics::PhaseRecord& b : outcome.train->epochs[i].blocks) {
      f.train_bytes_read += b.bytes_read;
    }
  }
  for (const train::AcceleratorRecords& a : outcome.train->accelerators) {
    double au = 0, throughput = 0;
    const std::size_t whole = WholeEpochs(a.epochs);
    for (std::size_t i = 0; i < a.epochs.size(); ++i) {
      const metrics::EpochRecord& e = a.epochs[i];
      for (const metrics::PhaseRecord& b : e.blocks) {
        for (double v : b.load) f.data_wait_seconds += v;
      }
      if (i >= whole) continue;  // a partial epoch stays out of the means
      const EpochMetrics m = ComputeEpochMetrics(e, session.config());
      au += m.train.au_percent;
      throughput += m.train.samples_per_second;
    }
    if (whole > 0) {
      f.au_percent_sum += au / static_cast<double>(whole);
      f.samples_per_second_sum += throughput / static_cast<double>(whole);
    }
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
  r->hosts = GroupByHost(ranks, r->train ? r->train->seconds : 0.0);
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
  const std::vector<std::uint64_t> io_total = cluster.SumU64s(
      {io.opens, io.read_ops, io.read_bytes, io.write_ops, io.write_bytes, io.syncs, io.errors});
  r->io = {io_total[0], io_total[1], io_total[2], io_total[3],
           io_total[4], io_total[5], io_total[6]};
  CollectIoCounters(session, outcome, *r);
  if (session.config().iomimic.trace) {
    const std::vector<std::uint64_t> trace =
        cluster.SumU64s({session.tracer().recorded(), session.tracer().dropped()});
    r->trace = TraceTotals{trace[0], trace[1]};
  }
}

// This rank's histograms of what the outcome recorded: the steps' waits for
// data (training, evaluation) and the checkpoints' saves and loads.
struct OutcomeHistograms {
  metrics::LatencyHistogram data_wait, eval_data_wait, saves, loads;
};

OutcomeHistograms RecordOutcome(const RunOutcome& outcome) {
  OutcomeHistograms h;
  auto seconds = [](double s) { return static_cast<std::uint64_t>(std::max(0.0, s) * 1e9); };
  if (outcome.train) {
    for (const train::AcceleratorRecords& a : outcome.train->accelerators) {
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

// Every histogram (histograms.json) merged over ranks, sample and storage
// read latency among them.
void CollectHistograms(session::Session& session, const RunOutcome& outcome, RunResults* r) {
  cluster::Cluster& cluster = session.cluster();
  const session::IoCounters& io_counters = session.storage().counters();
  const OutcomeHistograms mine = RecordOutcome(outcome);
  const std::pair<const char*, const metrics::LatencyHistogram*> all[] = {
      {"sample_read", &session.sample_latency()},
      {"storage_open", &io_counters.open_latency},
      {"storage_read", &io_counters.read_latency},
      {"storage_write", &io_counters.write_latency},
      {"storage_fsync", &io_counters.fsync_latency},
      {"storage_close", &io_counters.close_latency},
      {"storage_stat", &io_counters.stat_latency},
      {"step_data_wait", &mine.data_wait},
      {"eval_step_data_wait", &mine.eval_data_wait},
      {"checkpoint_save", &mine.saves},
      {"checkpoint_load", &mine.loads}};
  std::vector<const metrics::LatencyHistogram*> local;
  for (const auto& [name, h] : all) local.push_back(h);
  std::vector<metrics::LatencyHistogram> merged = MergeHistograms(local, cluster);
  for (std::size_t i = 0; i < merged.size(); ++i) {
    r->histograms.emplace_back(all[i].first, std::move(merged[i]));
  }
  r->sample_latency = r->histograms[0].second;  // sample_read
  r->read_latency = r->histograms[2].second;    // storage_read
}

// Generation's figures over ranks (every rank takes part, generating or not).
GenerateResults CollectGenerate(const RunOutcome& outcome, cluster::Cluster& cluster, int ranks) {
  const train::GenerateReport none;
  const train::GenerateReport& g = outcome.generate ? *outcome.generate : none;
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

// The checkpoints' storage, plan and every save and load over ranks (the
// checkpoint-only workflow's saves count as epoch 1's).
CheckpointResults CollectCheckpoint(const RunOutcome& outcome, const config::Config& c,
                                    cluster::Cluster& cluster) {
  CheckpointResults ck;
  ck.storage = outcome.checkpointer->storage_name();
  ck.fsync = c.checkpoint.fsync;
  ck.fsync_calls = cluster.SumU64(outcome.checkpointer->fsync_calls());
  ck.size_bytes = outcome.checkpointer->plan().total_bytes();
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
  const std::vector<std::string> events =
      cluster.GatherStringsToRoot(EncodeEvents(RankEvents(outcome, cluster.rank())));
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

EpochMetrics ComputeEpochMetrics(const metrics::EpochRecord& epoch, const config::Config& c) {
  EpochMetrics m;
  for (const metrics::PhaseRecord& b : epoch.blocks) {
    m.blocks.push_back(metrics::TrainBlockMetrics(b, c.output.exclude_start_steps,
                                                  c.output.exclude_end_steps, c.reader.batch_size));
  }
  m.train = metrics::CombineBlocks(m.blocks);
  if (epoch.eval) {
    m.eval = metrics::EvalMetrics(*epoch.eval, c.output.exclude_start_steps,
                                  c.output.exclude_end_steps, c.reader.batch_size_eval);
  }
  return m;
}

Result<RunResults> CollectResults(session::Session& session, const RunOutcome& outcome) {
  cluster::Cluster& cluster = session.cluster();
  const config::Config& c = session.config();
  RunResults r;
  r.start = outcome.start;
  r.end = outcome.end;
  r.ranks = cluster.size();
  r.accelerators_per_process = outcome.train ? outcome.train->accelerators_per_process : 1;
  r.accelerators = r.ranks * r.accelerators_per_process;
  r.num_hosts = cluster.num_hosts();
  r.interrupted_by = outcome.train             ? outcome.train->interrupted_by
                     : outcome.checkpoint_only ? outcome.checkpoint_only->interrupted_by
                                               : 0;
  r.hostname = cluster.hostname();
  CollectHosts(cluster, c, &r);
  r.cache_check = outcome.cache_check;
  if (outcome.train) r.train = CollectTrain(*outcome.train, c, r.accelerators, cluster);
  if (outcome.kv_cache) {
    r.kv_cache = kvcache::CollectKvResults(*outcome.kv_cache, cluster);
    r.interrupted_by = r.kv_cache->all.interrupted_by;
  }
  CollectIo(session, outcome, &r);
  CollectHistograms(session, outcome, &r);
  r.storage_statistics = SumStatistics(session.storage().Statistics(), cluster);
  GenerateResults gen = CollectGenerate(outcome, cluster, r.ranks);
  if (outcome.generate) r.generate = std::move(gen);
  if (outcome.checkpointer != nullptr) r.checkpoint = CollectCheckpoint(outcome, c, cluster);
  CollectPlugins(session, c, &r);
  r.timeline_interval = c.iomimic.timeline_interval;
  CollectTimeline(outcome, cluster, &r);
  CollectTelemetry(outcome, cluster, &r);
  const std::uint64_t checksum = cluster.SumU64(session.checksum());
  const std::uint64_t checksummed = cluster.SumU64(session.checksummed());
  if (c.iomimic.checksum) r.checksum = std::make_pair(checksum, checksummed);
  r.shared_samples = cluster.SumU64(session.shared_samples());
  if (c.workflow.train && session.has_format()) DescribeReadPattern(c, session, &r);
  return r;
}

}  // namespace iomimic::output
