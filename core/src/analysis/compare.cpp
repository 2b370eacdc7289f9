#include "analysis/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

namespace iomimic::analysis {
namespace {

std::string Number(double v) {
  char buf[64];
  const double a = std::fabs(v);
  if (a != 0 && (a < 0.01 || a >= 1e7)) {
    std::snprintf(buf, sizeof(buf), "%.3g", v);
  } else {
    std::snprintf(buf, sizeof(buf), "%.2f", v);
  }
  return buf;
}

std::string Pad(const std::string& s, std::size_t width, bool right) {
  if (s.size() >= width) return s;
  return right ? std::string(width - s.size(), ' ') + s : s + std::string(width - s.size(), ' ');
}

// Keys that differ between every run by construction.
bool RunSpecific(const std::string& key) { return key == "output.folder"; }

// Per-host training figures side by side: a row per host and figure, a
// column per run ("-" where a run had no such host, or is a KV-cache run,
// whose hosts have no training figures). Nothing when no training run has
// hosts.
void AppendHosts(const std::vector<RunFolder>& runs, std::ostringstream& out) {
  std::vector<std::string> names;
  for (const RunFolder& r : runs) {
    if (r.kv_cache) continue;
    for (const HostFigure& h : r.hosts) {
      if (std::find(names.begin(), names.end(), h.host) == names.end()) names.push_back(h.host);
    }
  }
  if (names.empty()) return;
  constexpr std::size_t kName = 32, kValue = 12;
  out << "\nper host:\n" << Pad("host figure", kName, false);
  for (std::size_t i = 0; i < runs.size(); ++i) out << Pad(RunLabel(i), kValue, true);
  out << "\n";
  const std::pair<const char*, double HostFigure::*> figures[] = {
      {"train MiB/s", &HostFigure::train_MiB_per_second},
      {"train AU %", &HostFigure::au_percent},
      {"samples", &HostFigure::samples},
      {"data wait s", &HostFigure::data_wait_seconds}};
  for (const std::string& name : names) {
    for (const auto& [label, field] : figures) {
      out << Pad(name + " " + label, kName, false);
      for (const RunFolder& r : runs) {
        auto it = std::find_if(r.hosts.begin(), r.hosts.end(),
                               [&](const HostFigure& h) { return h.host == name; });
        const bool known = !r.kv_cache && it != r.hosts.end() && std::isfinite((*it).*field);
        out << Pad(known ? Number((*it).*field) : "-", kValue, true);
      }
      out << "\n";
    }
  }
}

// KV-cache runs' QoS verdicts side by side: per class, whether its P95 met
// its target ("-" where the class had no requests or the run is not a
// KV-cache run). Nothing when no run is one.
void AppendKvQos(const std::vector<RunFolder>& runs, std::ostringstream& out) {
  if (std::none_of(runs.begin(), runs.end(), [](const RunFolder& r) { return r.kv_cache; })) {
    return;
  }
  constexpr std::size_t kName = 32, kValue = 12;
  out << "\nKV-cache QoS (P95 within target):\n" << Pad("class", kName, false);
  for (std::size_t i = 0; i < runs.size(); ++i) out << Pad(RunLabel(i), kValue, true);
  out << "\n";
  for (const char* name : {"interactive", "responsive", "batch"}) {
    std::string label = name;
    for (const RunFolder& r : runs) {
      for (const KvQosClass& c : r.qos) {
        if (c.name == name && c.target_p95_ms > 0) {
          label = std::string(name) + " (" + Number(c.target_p95_ms) + " ms)";
        }
      }
    }
    out << Pad(label, kName, false);
    for (const RunFolder& r : runs) {
      std::string cell = "-";
      for (const KvQosClass& c : r.qos) {
        if (c.name == name && c.requests > 0) cell = c.meets_target ? "meets" : "misses";
      }
      out << Pad(cell, kValue, true);
    }
    out << "\n";
  }
}

}  // namespace

std::string CompareText(const std::vector<RunFolder>& runs) {
  std::ostringstream out;
  if (runs.empty()) return "";
  out << "runs:\n";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    out << "  " << RunLabel(i) << "  " << runs[i].path;
    if (!runs[i].status.empty()) out << "  (" << runs[i].status << ")";
    out << "\n";
    if (runs[i].partial) out << "      " << runs[i].partial_note << "\n";
  }

  // Figures: one row each, a column per run, then ratios to A.
  constexpr std::size_t kName = 24, kValue = 12;
  out << "\n" << Pad("figure", kName, false);
  for (std::size_t i = 0; i < runs.size(); ++i) out << Pad(RunLabel(i), kValue, true);
  for (std::size_t i = 1; i < runs.size(); ++i) {
    out << Pad(RunLabel(i) + "/A", kValue, true);
  }
  out << "\n";
  // Every run was read with the same figure list (analysis/run_folder.h).
  for (const Figure& figure : runs.front().figures) {
    const std::string& name = figure.name;
    std::vector<const Figure*> values;
    bool any = false;
    for (const RunFolder& r : runs) {
      values.push_back(r.Find(name));
      any |= values.back() != nullptr;
    }
    if (!any) continue;
    out << Pad(name, kName, false);
    for (const Figure* f : values) out << Pad(f ? Number(f->value) : "-", kValue, true);
    for (std::size_t i = 1; i < values.size(); ++i) {
      std::string ratio = "-";
      if (values[0] != nullptr && values[i] != nullptr && values[0]->value != 0) {
        ratio = Number(values[i]->value / values[0]->value);
      }
      out << Pad(ratio, kValue, true);
    }
    out << "\n";
  }

  AppendHosts(runs, out);
  AppendKvQos(runs, out);

  // Configuration keys whose values differ between the runs.
  std::set<std::string> keys;
  for (const RunFolder& r : runs) {
    for (const auto& [k, v] : r.config) keys.insert(k);
  }
  std::vector<std::string> differing;
  for (const std::string& k : keys) {
    if (RunSpecific(k)) continue;
    std::set<std::string> values;
    for (const RunFolder& r : runs) {
      auto it = r.config.find(k);
      values.insert(it == r.config.end() ? "(absent)" : it->second);
    }
    if (values.size() > 1) differing.push_back(k);
  }
  out << "\n";
  if (differing.empty()) {
    out << "configuration: the same in every run\n";
    return out.str();
  }
  std::size_t key_width = 6;
  for (const std::string& k : differing) key_width = std::max(key_width, k.size() + 2);
  std::size_t value_width = 10;
  for (const RunFolder& r : runs) {
    for (const std::string& k : differing) {
      auto it = r.config.find(k);
      if (it != r.config.end())
        value_width = std::max(value_width, std::min<std::size_t>(it->second.size() + 2, 40));
    }
  }
  out << "configuration that differs:\n" << Pad("key", key_width, false);
  for (std::size_t i = 0; i < runs.size(); ++i) out << Pad(RunLabel(i), value_width, false);
  out << "\n";
  for (const std::string& k : differing) {
    out << Pad(k, key_width, false);
    for (const RunFolder& r : runs) {
      auto it = r.config.find(k);
      std::string v = it == r.config.end() ? "(absent)" : it->second;
      if (v.size() > 38) v = v.substr(0, 35) + "...";
      out << Pad(v, value_width, false);
    }
    out << "\n";
  }
  return out.str();
}

std::string RunLabel(std::size_t i) {
  std::string s;
  for (std::size_t n = i + 1; n > 0; n = (n - 1) / 26) {
    s.insert(s.begin(), static_cast<char>('A' + (n - 1) % 26));
  }
  return s;
}

}  // namespace iomimic::analysis
