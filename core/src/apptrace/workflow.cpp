#include "apptrace/workflow.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "metrics/figures_json.h"
#include "metrics/rank_merge.h"
#include "output/model.h"
#include "session/interrupt.h"

namespace iomimic::apptrace {
namespace {

using json = nlohmann::ordered_json;

// app_replay.* as replay options for this rank, targets resolved against
// storage.storage_root.
Result<ReplayOptions> OptionsOf(const config::Config& c, const cluster::Cluster& cluster) {
  ReplayOptions o;
  for (const std::string& entry : c.app_replay.map) {
    const std::size_t eq = entry.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status::InvalidArgument("app_replay.map: '" + entry + "' is not FROM=TO");
    }
    o.map.emplace_back(entry.substr(0, eq), session::ResolveDataPath(c, entry.substr(eq + 1)));
  }
  if (!c.app_replay.root.empty()) o.root = session::ResolveDataPath(c, c.app_replay.root);
  o.recorded_timing = c.app_replay.timing == "recorded";
  o.copies = static_cast<unsigned>(c.app_replay.copies);
  o.first_copy = o.copies * static_cast<unsigned>(cluster.rank());
  o.total_copies = o.copies * static_cast<unsigned>(cluster.size());
  o.stop = [] { return session::InterruptSignal() != 0; };
  return o;
}

json CountsJson(const KindCounts& c) {
  json o = json::object();
  for (std::size_t k = 0; k < kOpKinds; ++k) {
    if (c.ops[k] == 0) continue;
    json row;
    row["ops"] = c.ops[k];
    row["bytes"] = c.bytes[k];
    row["failed"] = c.failed[k];
    o[OpName(static_cast<OpKind>(k))] = std::move(row);
  }
  return o;
}

std::uint64_t Total(const std::array<std::uint64_t, kOpKinds>& a) {
  std::uint64_t n = 0;
  for (std::uint64_t v : a) n += v;
  return n;
}

bool Equal(const KindCounts& a, const KindCounts& b) {
  return a.ops == b.ops && a.bytes == b.bytes;
}

}  // namespace

Result<AppReplayFigures> ReplayApplication(session::Session& session) {
  const config::Config& c = session.config();
  cluster::Cluster& cluster = session.cluster();
  if (c.app_replay.trace.empty()) {
    return Status::InvalidArgument("workflow.app_replay: True without app_replay.trace");
  }
  Result<AppTrace> trace = ReadTrace(c.app_replay.trace);
  IOMIMIC_RETURN_IF_ERROR(cluster.AgreeOnStatus(trace.status()));
  IOMIMIC_ASSIGN_OR_RETURN(const ReplayOptions options, OptionsOf(c, cluster));
  AppReplayFigures f;
  f.trace = c.app_replay.trace;
  f.format = trace->format;
  f.trace_threads = trace->threads.size();
  f.trace_files = trace->files.size();
  f.ignored = trace->ignored;
  // Files first on every rank, then the copies start together.
  Status setup = SetUpFiles(session.storage().uncounted(), *trace, options, &f.replay);
  IOMIMIC_RETURN_IF_ERROR(cluster.AgreeOnStatus(setup));
  IOMIMIC_RETURN_IF_ERROR(
      cluster.AgreeOnStatus(Replay(session.storage(), *trace, options, &f.replay)));
  f.interrupted_by = session::InterruptSignal();
  return f;
}

void AppReplayResults::AddEvents(std::chrono::system_clock::time_point origin, int rank,
                                 std::vector<output::EventEntry>* events) const {
  const ReplayFigures& r = local_.replay;
  events->push_back({rank, "app_replay", 0, 0, output::SinceOrigin(origin, r.start),
                     output::SinceOrigin(origin, r.end),
                     r.replayed.bytes[static_cast<std::size_t>(OpKind::kRead)] +
                         r.replayed.bytes[static_cast<std::size_t>(OpKind::kWrite)]});
}

std::vector<std::pair<std::string, metrics::LatencyHistogram>> AppReplayResults::Histograms()
    const {
  std::vector<std::pair<std::string, metrics::LatencyHistogram>> out;
  for (std::size_t k = 0; k < kOpKinds; ++k) {
    out.emplace_back(std::string("app_replay_") + OpName(static_cast<OpKind>(k)),
                     local_.replay.latency[k]);
  }
  return out;
}

Status AppReplayResults::Collect(session::Session& session, output::RunResults& run) {
  (void)run;
  cluster::Cluster& cluster = session.cluster();
  const ReplayFigures& l = local_.replay;
  ReplayFigures& m = merged_.replay;
  std::vector<std::uint64_t> values;
  for (const KindCounts* c : {&l.traced, &l.replayed}) {
    values.insert(values.end(), c->ops.begin(), c->ops.end());
    values.insert(values.end(), c->bytes.begin(), c->bytes.end());
    values.insert(values.end(), c->failed.begin(), c->failed.end());
  }
  values.insert(values.end(), {l.outcome_mismatches, l.implicit_opens, l.setup_files, l.setup_bytes,
                               l.setup_dirs, l.copies});
  const std::vector<std::uint64_t> sums = cluster.SumU64s(values);
  std::size_t i = 0;
  for (KindCounts* c : {&m.traced, &m.replayed}) {
    for (auto* a : {&c->ops, &c->bytes, &c->failed}) {
      for (std::uint64_t& v : *a) v = sums[i++];
    }
  }
  m.outcome_mismatches = sums[i++];
  m.implicit_opens = sums[i++];
  m.setup_files = sums[i++];
  m.setup_bytes = sums[i++];
  m.setup_dirs = sums[i++];
  m.copies = sums[i++];
  const std::vector<double> maxima =
      cluster.MaxDoubles({l.replay_seconds, l.setup_seconds, l.compute_seconds});
  m.replay_seconds = maxima[0];
  m.setup_seconds = maxima[1];
  m.compute_seconds = maxima[2];
  std::vector<const metrics::LatencyHistogram*> hists;
  for (const metrics::LatencyHistogram& h : l.latency) hists.push_back(&h);
  std::vector<metrics::LatencyHistogram> merged = metrics::MergeOverRanks(hists, cluster);
  for (std::size_t k = 0; k < kOpKinds; ++k) m.latency[k] = merged[k];
  return Status::OK();
}

void AppReplayResults::AddToSummary(const output::RunResults& run,
                                    const config::LoadedManifest& manifest, json& summary,
                                    json& iomimic) const {
  (void)run, (void)iomimic;
  const config::Config& c = manifest.config;
  const ReplayFigures& m = merged_.replay;
  json o;
  o["trace"] = merged_.trace;
  o["format"] = merged_.format;
  o["timing"] = c.app_replay.timing;
  o["copies"] = m.copies;
  o["threads_per_copy"] = merged_.trace_threads;
  o["files"] = merged_.trace_files;
  o["traced"] = CountsJson(m.traced);
  o["replayed"] = CountsJson(m.replayed);
  o["ops_and_bytes_equal"] = Equal(m.traced, m.replayed);
  o["traced_ops"] = Total(m.traced.ops);
  o["replayed_ops"] = Total(m.replayed.ops);
  o["replayed_bytes"] = Total(m.replayed.bytes);
  o["outcome_mismatches"] = m.outcome_mismatches;
  o["implicit_opens"] = m.implicit_opens;
  o["original_seconds"] = metrics::JsonNumber<json>(m.original_seconds);
  o["replay_seconds"] = metrics::JsonNumber<json>(m.replay_seconds);
  o["slowdown"] =
      metrics::JsonNumber<json>(m.original_seconds > 0 ? m.replay_seconds / m.original_seconds : 0);
  o["compute_seconds"] = metrics::JsonNumber<json>(m.compute_seconds);
  o["call_floor_us"] = metrics::JsonNumber<json>(local_.replay.call_floor_seconds * 1e6);
  o["bytes_per_second"] = metrics::JsonNumber<json>(
      m.replay_seconds > 0 ? static_cast<double>(Total(m.replayed.bytes)) / m.replay_seconds : 0);
  json setup;
  setup["files_made"] = m.setup_files;
  setup["bytes_made"] = m.setup_bytes;
  setup["directories"] = m.setup_dirs;
  setup["seconds"] = metrics::JsonNumber<json>(m.setup_seconds);
  o["setup"] = std::move(setup);
  json latency = json::object();
  for (std::size_t k = 0; k < kOpKinds; ++k) {
    if (m.latency[k].count() == 0) continue;
    latency[OpName(static_cast<OpKind>(k))] =
        metrics::PercentilesJson<json>(m.latency[k], metrics::kResultQuantiles);
  }
  o["latency_ms"] = std::move(latency);
  json ignored = json::object();
  for (const auto& [what, n] : merged_.ignored) ignored[what] = n;
  o["not_modelled"] = std::move(ignored);
  summary["app_replay"] = std::move(o);
}

std::string AppReplayResults::ConsoleLines(const output::RunResults& run,
                                           const config::Config& config) const {
  (void)run;
  const ReplayFigures& m = merged_.replay;
  char line[512];
  std::snprintf(line, sizeof line,
                "  app_replay: %s trace, %llu threads x %llu copies, %s timing: %llu ops, %.1f MB "
                "in %.3f s (original %.3f s, slowdown %.3f)\n",
                merged_.format.c_str(), static_cast<unsigned long long>(merged_.trace_threads),
                static_cast<unsigned long long>(m.copies), config.app_replay.timing.c_str(),
                static_cast<unsigned long long>(Total(m.replayed.ops)),
                static_cast<double>(Total(m.replayed.bytes)) / 1e6, m.replay_seconds,
                m.original_seconds,
                m.original_seconds > 0 ? m.replay_seconds / m.original_seconds : 0.0);
  std::string out = line;
  for (std::size_t k = 0; k < kOpKinds; ++k) {
    if (m.traced.ops[k] == 0 && m.replayed.ops[k] == 0) continue;
    std::snprintf(line, sizeof line,
                  "    %-8s traced %llu ops %llu B, replayed %llu ops %llu B, p50 %.3f ms\n",
                  OpName(static_cast<OpKind>(k)), static_cast<unsigned long long>(m.traced.ops[k]),
                  static_cast<unsigned long long>(m.traced.bytes[k]),
                  static_cast<unsigned long long>(m.replayed.ops[k]),
                  static_cast<unsigned long long>(m.replayed.bytes[k]),
                  static_cast<double>(m.latency[k].Percentile(0.5)) / 1e6);
    out += line;
  }
  return out;
}

std::string AppReplayResults::ConsoleNotes(const output::RunResults& run,
                                           const config::Config& config) const {
  (void)run, (void)config;
  const ReplayFigures& m = merged_.replay;
  std::string out;
  if (!Equal(m.traced, m.replayed)) {
    out +=
        "note: app_replay: the replay's ops or bytes differ from the trace's "
        "(summary.json app_replay.traced and .replayed)\n";
  }
  if (m.outcome_mismatches > 0) {
    out += "note: app_replay: " + std::to_string(m.outcome_mismatches) +
           " calls succeeded where the application's failed, or failed where they succeeded\n";
  }
  return out;
}

Result<std::shared_ptr<output::WorkflowResults>> RunAppReplay(
    session::Session& session, const output::WorkflowContext& context) {
  (void)context;
  return output::ResultsOf<AppReplayResults>(ReplayApplication(session));
}

const output::FigureList& Figures() {
  static const output::FigureList figures = {
      {"app replay seconds", {"app_replay", "replay_seconds"}, false},
      {"app replay slowdown", {"app_replay", "slowdown"}, false},
      {"app replay bytes/s", {"app_replay", "bytes_per_second"}, true},
  };
  return figures;
}

}  // namespace iomimic::apptrace
