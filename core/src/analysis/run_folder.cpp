#include "analysis/run_folder.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "metrics/figures_json.h"
#include "output/rank_ledger.h"

namespace iomimic::analysis {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// The number at `path` of summary.json, or null.
const json* At(const json& root, const std::vector<std::string>& path) {
  const json* node = &root;
  for (const std::string& key : path) {
    if (!node->is_object()) return nullptr;
    auto it = node->find(key);
    if (it == node->end()) return nullptr;
    node = &*it;
  }
  return node->is_number() ? node : nullptr;
}

// `spec` read from `summary` (output/figures.h).
Figure ReadFigure(const json& summary, const output::FigureSpec& spec) {
  Figure f;
  f.name = spec.name;
  f.higher_is_better = spec.higher_is_better;
  if (!spec.only_if_positive.empty()) {
    const json* condition = At(summary, spec.only_if_positive);
    if (condition == nullptr || condition->get<double>() <= 0) return f;
  }
  if (const json* v = At(summary, spec.path)) {
    f.value = v->get<double>() * spec.scale;
    f.present = true;
  }
  return f;
}

void Flatten(const YAML::Node& node, const std::string& prefix,
             std::map<std::string, std::string>* out) {
  if (node.IsMap()) {
    for (auto it = node.begin(); it != node.end(); ++it) {
      const std::string key = it->first.as<std::string>();
      Flatten(it->second, prefix.empty() ? key : prefix + "." + key, out);
    }
  } else if (node.IsSequence()) {
    YAML::Emitter e;
    e << YAML::Flow << node;
    (*out)[prefix] = e.c_str();
  } else if (node.IsScalar()) {
    (*out)[prefix] = node.Scalar();
  } else {
    (*out)[prefix] = "null";
  }
}

Result<json> ReadJson(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound("no " + path);
  std::ostringstream text;
  text << in.rdbuf();
  json parsed = json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return Status::Corruption(path + " is not valid JSON");
  return parsed;
}

// summary.json's iomimic.hosts; entries without a host name are skipped.
std::vector<HostFigure> ReadHosts(const json* io) {
  std::vector<HostFigure> out;
  if (io == nullptr || !io->contains("hosts") || !(*io)["hosts"].is_array()) return out;
  auto number = [](const json& h, const char* key) {
    return h.contains(key) && h[key].is_number() ? h[key].get<double>() : std::nan("");
  };
  for (const json& h : (*io)["hosts"]) {
    if (!h.is_object() || !h.contains("host") || !h["host"].is_string()) continue;
    HostFigure f;
    f.host = h["host"].get<std::string>();
    f.ranks =
        h.contains("ranks") && h["ranks"].is_array() ? static_cast<int>(h["ranks"].size()) : 0;
    f.train_MiB_per_second = number(h, "train_io_MiB_per_second");
    f.au_percent = number(h, "train_au_mean_percentage");
    f.samples = number(h, "samples");
    f.data_wait_seconds = number(h, "data_wait_seconds");
    out.push_back(f);
  }
  return out;
}

// summary.json's kv_cache.qos, in the order interactive, responsive, batch.
std::vector<KvQosClass> ReadQos(const json& kv) {
  std::vector<KvQosClass> out;
  if (!kv.contains("qos") || !kv["qos"].is_object()) return out;
  for (const char* name : {"interactive", "responsive", "batch"}) {
    if (!kv["qos"].contains(name) || !kv["qos"][name].is_object()) continue;
    const json& q = kv["qos"][name];
    KvQosClass c;
    c.name = name;
    if (q.contains("requests") && q["requests"].is_number()) c.requests = q["requests"];
    if (q.contains("target_p95_ms") && q["target_p95_ms"].is_number()) {
      c.target_p95_ms = q["target_p95_ms"];
    }
    c.meets_target = q.contains("meets_target") && q["meets_target"].is_boolean() &&
                     q["meets_target"].get<bool>();
    if (q.contains("latency_ms") && q["latency_ms"].is_object()) {
      for (const auto& [k, v] : q["latency_ms"].items()) {
        if (v.is_number()) c.latency_ms[k] = v.get<double>();
      }
    }
    out.push_back(c);
  }
  return out;
}

// The resolved manifest of a folder without summary.json: the `workload`
// node of <output_subdir>/config.yaml (.hydra unless the run chose another),
// as summary.json's iomimic.manifest.resolved holds it; empty when none.
std::string ResolvedFromConfigFile(const std::string& path) {
  std::vector<std::string> candidates = {path + "/.hydra/config.yaml"};
  std::error_code ec;
  for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_directory(ec)) candidates.push_back(it->path().string() + "/config.yaml");
  }
  for (const std::string& file : candidates) {
    if (!fs::is_regular_file(file, ec)) continue;
    try {
      const YAML::Node root = YAML::LoadFile(file);
      if (!root["workload"]) continue;
      YAML::Emitter e;
      e << root["workload"];
      return e.c_str();
    } catch (const YAML::Exception&) {
      continue;
    }
  }
  return "";
}

double Mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? std::nan("") : sum / static_cast<double>(v.size());
}

double Stdev(const std::vector<double>& v) {
  if (v.size() < 2) return v.empty() ? std::nan("") : 0.0;
  const double m = Mean(v);
  double sq = 0;
  for (double x : v) sq += (x - m) * (x - m);
  return std::sqrt(sq / static_cast<double>(v.size()));
}

// Per-epoch training AU (mean over the accelerators) and throughput (their
// sum) over the epochs that every reporting accelerator finished whole.
void AddPartialMetric(const std::vector<output::RankRecord>& records, json* summary) {
  std::map<std::uint64_t, std::pair<std::vector<double>, double>> by_epoch;  // AU list, tput sum
  std::size_t accelerators = 0;
  for (const output::RankRecord& r : records) {
    for (const output::RankRecord::Accelerator& a : r.accelerators) {
      ++accelerators;
      for (const output::RankEpoch& e : a.epochs) {
        if (e.partial) continue;
        auto& [aus, tput] = by_epoch[e.epoch];
        aus.push_back(e.au_percent);
        tput += e.samples_per_second;
      }
    }
  }
  std::vector<double> au, throughput;
  for (const auto& [epoch, figures] : by_epoch) {
    if (figures.first.size() != accelerators) continue;  // not every rank's
    au.push_back(Mean(figures.first));
    throughput.push_back(figures.second);
  }
  json metric = json::object();
  if (!au.empty()) {
    metric["train_au_percentage"] = au;
    metric["train_au_mean_percentage"] = metrics::JsonNumber(Mean(au));
    metric["train_au_stdev_percentage"] = metrics::JsonNumber(Stdev(au));
    metric["train_throughput_samples_per_second"] = throughput;
    metric["train_throughput_mean_samples_per_second"] = metrics::JsonNumber(Mean(throughput));
    metric["train_throughput_stdev_samples_per_second"] = metrics::JsonNumber(Stdev(throughput));
  }
  (*summary)["metric"] = metric;
  (*summary)["num_accelerators"] = accelerators;
}

std::string JoinInts(const std::vector<int>& v) {
  std::string out;
  for (int x : v) out += (out.empty() ? "" : ", ") + std::to_string(x);
  return out;
}

// The partial summary of a folder whose merge never happened (SummaryText).
Result<json> PartialSummary(const std::string& path) {
  const std::vector<output::RankRecord> records = output::ReadRankRecords(path);
  Result<json> status = ReadJson(path + "/status.json");
  if (records.empty() && !status.ok()) {
    return Status::NotFound("no " + path + "/summary.json, and no ranks/ records either");
  }
  int ranks = 0;
  for (const output::RankRecord& r : records) ranks = std::max(ranks, r.ranks);
  std::vector<int> reported, silent;
  std::vector<std::string> silent_hosts;
  std::vector<bool> seen(static_cast<std::size_t>(ranks), false);
  for (const output::RankRecord& r : records) {
    if (r.rank >= 0 && r.rank < ranks) seen[r.rank] = true;
    if (r.state == "running" || r.state == "cut_off") {
      silent.push_back(r.rank);
      if (std::find(silent_hosts.begin(), silent_hosts.end(), r.host) == silent_hosts.end()) {
        silent_hosts.push_back(r.host);
      }
    } else {
      reported.push_back(r.rank);
    }
  }
  for (int r = 0; r < ranks; ++r) {
    if (!seen[r]) silent.push_back(r);
  }
  std::sort(silent.begin(), silent.end());
  json summary;
  AddPartialMetric(records, &summary);
  if (!records.empty()) summary["hostname"] = records.front().host;
  std::string note =
      "partial: no summary.json (the merge did not finish); figures from the "
      "records of " +
      std::to_string(reported.size()) + " of " + std::to_string(ranks) + " ranks";
  if (status.ok() && status->contains("lost_hosts") && (*status)["lost_hosts"].is_array()) {
    std::string hosts;
    for (const json& h : (*status)["lost_hosts"]) {
      if (h.is_string()) hosts += (hosts.empty() ? "" : ", ") + h.get<std::string>();
    }
    note += "; lost host(s) " + hosts + " (status.json)";
  }
  if (!silent.empty()) {
    note += "; no final state from rank(s) " + JoinInts(silent);
    if (!silent_hosts.empty()) {
      std::string hosts;
      for (const std::string& h : silent_hosts) hosts += (hosts.empty() ? "" : ", ") + h;
      note += " (on " + hosts + ")";
    }
  }
  json partial = {
      {"note", note}, {"ranks", ranks}, {"reported_ranks", reported}, {"silent_ranks", silent}};
  if (status.ok()) {
    for (const char* key :
         {"status", "signal", "error", "lost_hosts", "lost_ranks", "unanswered_ranks"}) {
      if (status->contains(key)) partial[key] = (*status)[key];
    }
  }
  json io;
  io["partial"] = partial;
  if (const std::string resolved = ResolvedFromConfigFile(path); !resolved.empty()) {
    io["manifest"] = {{"resolved", resolved}};
  }
  summary["iomimic"] = io;
  return summary;
}

}  // namespace

Result<std::string> SummaryText(const std::string& path) {
  std::ifstream in(path + "/summary.json");
  if (in) {
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }
  IOMIMIC_ASSIGN_OR_RETURN(const json partial, PartialSummary(path));
  return partial.dump(-1, ' ', false, json::error_handler_t::replace);
}

const Figure* RunFolder::Find(const std::string& name) const {
  for (const Figure& f : figures) {
    if (f.name == name) return f.present ? &f : nullptr;
  }
  return nullptr;
}

Result<RunFolder> ReadRunFolder(const std::string& path, const output::FigureList& figures) {
  RunFolder run;
  run.path = path;
  IOMIMIC_ASSIGN_OR_RETURN(const std::string text, SummaryText(path));
  const json summary = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (summary.is_discarded()) return Status::Corruption(path + "/summary.json is not valid JSON");
  if (const json* partial = summary.contains("iomimic") ? &summary["iomimic"] : nullptr;
      partial != nullptr && partial->contains("partial")) {
    run.partial = true;
    run.partial_note = (*partial)["partial"].value("note", std::string("partial"));
  }
  if (Result<json> status = ReadJson(path + "/status.json"); status.ok()) {
    if (status->contains("status") && (*status)["status"].is_string()) {
      run.status = (*status)["status"].get<std::string>();
    }
  }
  for (const output::FigureSpec& spec : figures) run.figures.push_back(ReadFigure(summary, spec));
  const json* io = summary.contains("iomimic") ? &summary["iomimic"] : nullptr;
  if (io != nullptr && io->contains("manifest") && (*io)["manifest"].contains("resolved") &&
      (*io)["manifest"]["resolved"].is_string()) {
    try {
      Flatten(YAML::Load((*io)["manifest"]["resolved"].get<std::string>()), "", &run.config);
    } catch (const YAML::Exception& e) {
      return Status::Corruption(path + "/summary.json: iomimic.manifest.resolved: " + e.what());
    }
  }
  if (io != nullptr && io->contains("plugins")) {
    const json& plugins = (*io)["plugins"];
    if (plugins.contains("storage") && plugins["storage"].contains("chain")) {
      run.config["plugins.storage"] = plugins["storage"]["chain"].get<std::string>();
    }
    if (plugins.contains("format") && plugins["format"].contains("name") &&
        plugins["format"]["name"].is_string()) {
      run.config["plugins.format"] = plugins["format"]["name"].get<std::string>();
    }
  }
  run.hosts = ReadHosts(io);
  if (summary.contains("kv_cache") && summary["kv_cache"].is_object()) {
    run.kv_cache = true;
    run.qos = ReadQos(summary["kv_cache"]);
  }
  if (summary.contains("hostname") && summary["hostname"].is_string()) {
    run.config["host"] = summary["hostname"].get<std::string>();
  }
  // How many accelerators (ranks x accelerators per process) and hosts ran
  // it: not manifest keys, but the first thing two runs differ in.
  for (const char* key : {"num_accelerators", "num_hosts"}) {
    if (summary.contains(key) && summary[key].is_number_integer()) {
      run.config[key] = std::to_string(summary[key].get<long long>());
    }
  }
  return run;
}

}  // namespace iomimic::analysis
