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

}  // namespace

std::string CompareText(const std::vector<RunFolder>& runs) {
  std::ostringstream out;
  if (runs.empty()) return "";
  out << "runs:\n";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    out << "  " << RunLabel(i) << "  " << runs[i].path;
    if (!runs[i].status.empty()) out << "  (" << runs[i].status << ")";
    out << "\n";
  }

  // Figures: one row each, a column per run, then ratios to A.
  constexpr std::size_t kName = 24, kValue = 12;
  out << "\n" << Pad("figure", kName, false);
  for (std::size_t i = 0; i < runs.size(); ++i) out << Pad(RunLabel(i), kValue, true);
  for (std::size_t i = 1; i < runs.size(); ++i) {
    out << Pad(RunLabel(i) + "/A", kValue, true);
  }
  out << "\n";
  for (const std::string& name : FigureNames()) {
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
