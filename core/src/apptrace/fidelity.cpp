// The fidelity report (apptrace/fidelity.h): measures per epoch, compared
// with the original's within the tolerances.

#include "apptrace/fidelity.h"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

namespace iomimic::apptrace {
namespace {

bool Within(double got, double want, double tolerance) {
  if (want == 0) return got == 0;
  return std::fabs(got - want) <= tolerance * std::fabs(want);
}

std::string Num(double v, int digits = 0) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

double PerEpoch(std::uint64_t n, const TraceProfile& p) {
  return static_cast<double>(n) / std::max(1u, p.epochs);
}

// The bins either profile has, in order.
std::set<unsigned> AllBins(const std::vector<TraceProfile>& profiles) {
  std::set<unsigned> bins;
  for (const TraceProfile& p : profiles) {
    for (const auto& [bin, n] : p.read_bins) bins.insert(bin);
  }
  return bins;
}

std::uint64_t BinCount(const TraceProfile& p, unsigned bin) {
  const auto it = p.read_bins.find(bin);
  return it == p.read_bins.end() ? 0 : it->second;
}

// One row of the table: a label, then a column per profile.
void Row(std::ostringstream& out, const std::string& label, const std::vector<std::string>& cells) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%-28s", label.c_str());
  out << buf;
  for (const std::string& c : cells) {
    std::snprintf(buf, sizeof buf, " %18s", c.c_str());
    out << buf;
  }
  out << "\n";
}

template <typename F>
std::vector<std::string> Cells(const std::vector<TraceProfile>& profiles, F cell) {
  std::vector<std::string> cells;
  for (const TraceProfile& p : profiles) cells.push_back(cell(p));
  return cells;
}

}  // namespace

FidelityVerdict CompareProfiles(const TraceProfile& original, const TraceProfile& other,
                                const FidelityTolerance& tolerance) {
  FidelityVerdict v;
  v.bytes_per_epoch = Within(other.bytes_per_epoch, original.bytes_per_epoch, tolerance.bytes);
  if (!v.bytes_per_epoch) {
    v.misses.push_back("bytes per epoch " + Num(other.bytes_per_epoch) + ", original " +
                       Num(original.bytes_per_epoch));
  }
  v.read_sizes = true;
  for (const unsigned bin : AllBins({original, other})) {
    const double want = PerEpoch(BinCount(original, bin), original);
    const double got = PerEpoch(BinCount(other, bin), other);
    if (!Within(got, want, tolerance.bin)) {
      v.read_sizes = false;
      v.misses.push_back("reads of " + SizeBinName(bin) + " per epoch " + Num(got, 1) +
                         ", original " + Num(want, 1));
    }
  }
  v.bytes_written = Within(static_cast<double>(other.write_bytes),
                           static_cast<double>(original.write_bytes), tolerance.bytes);
  if (!v.bytes_written) {
    v.misses.push_back("bytes written " + Num(static_cast<double>(other.write_bytes)) +
                       ", original " + Num(static_cast<double>(original.write_bytes)));
  }
  v.opens_per_file = Within(other.opens_per_file, original.opens_per_file, tolerance.opens);
  if (!v.opens_per_file) {
    v.misses.push_back("opens per file per epoch " + Num(other.opens_per_file, 2) + ", original " +
                       Num(original.opens_per_file, 2));
  }
  return v;
}

std::string FidelityText(const std::vector<TraceProfile>& profiles,
                         const FidelityTolerance& tolerance) {
  std::ostringstream out;
  Row(out, "", Cells(profiles, [&](const TraceProfile& p) {
        const std::size_t slash = p.source.rfind('/');
        std::string name = slash == std::string::npos ? p.source : p.source.substr(slash + 1);
        return name.size() > 18 ? name.substr(name.size() - 18) : name;
      }));
  Row(out, "data files",
      Cells(profiles, [](const TraceProfile& p) { return Num(p.files.size()); }));
  Row(out, "epochs", Cells(profiles, [](const TraceProfile& p) { return Num(p.epochs); }));
  Row(out, "reads per epoch",
      Cells(profiles, [](const TraceProfile& p) { return Num(PerEpoch(p.read_ops, p), 1); }));
  Row(out, "bytes per epoch",
      Cells(profiles, [](const TraceProfile& p) { return Num(p.bytes_per_epoch); }));
  Row(out, "opens per file per epoch",
      Cells(profiles, [](const TraceProfile& p) { return Num(p.opens_per_file, 2); }));
  Row(out, "reader threads",
      Cells(profiles, [](const TraceProfile& p) { return Num(p.reader_threads); }));
  Row(out, "read MiB/s", Cells(profiles, [](const TraceProfile& p) {
        return Num(p.read_bytes_per_second / (1024.0 * 1024.0), 2);
      }));
  Row(out, "step time s (median)",
      Cells(profiles, [](const TraceProfile& p) { return Num(p.step_time_s, 4); }));
  Row(out, "writes", Cells(profiles, [](const TraceProfile& p) { return Num(p.write_ops); }));
  Row(out, "bytes written",
      Cells(profiles, [](const TraceProfile& p) { return Num(p.write_bytes); }));
  out << "reads per epoch by size:\n";
  for (const unsigned bin : AllBins(profiles)) {
    Row(out, "  " + SizeBinName(bin), Cells(profiles, [&](const TraceProfile& p) {
          return Num(PerEpoch(BinCount(p, bin), p), 1);
        }));
  }
  for (std::size_t i = 1; i < profiles.size(); ++i) {
    const FidelityVerdict v = CompareProfiles(profiles[0], profiles[i], tolerance);
    out << "\n"
        << profiles[i].source << ": "
        << (v.ok() ? "reproduces the original's bytes per epoch, read sizes, opens per file "
                     "and bytes written"
                   : "differs from the original")
        << "\n";
    for (const std::string& m : v.misses) out << "  " << m << "\n";
  }
  return out.str();
}

std::string FidelityJson(const std::vector<TraceProfile>& profiles,
                         const FidelityTolerance& tolerance) {
  nlohmann::ordered_json doc;
  doc["tolerance"] = {
      {"bytes", tolerance.bytes}, {"bin", tolerance.bin}, {"opens", tolerance.opens}};
  doc["profiles"] = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < profiles.size(); ++i) {
    const TraceProfile& p = profiles[i];
    nlohmann::ordered_json j;
    j["trace"] = p.source;
    j["data_dir"] = p.data_dir;
    j["data_files"] = p.files.size();
    j["epochs"] = p.epochs;
    j["read_ops"] = p.read_ops;
    j["read_bytes"] = p.read_bytes;
    j["bytes_per_epoch"] = p.bytes_per_epoch;
    j["opens_per_file"] = p.opens_per_file;
    j["reader_threads"] = p.reader_threads;
    j["read_bytes_per_second"] = p.read_bytes_per_second;
    j["step_time_s"] = p.step_time_s;
    j["write_ops"] = p.write_ops;
    j["write_bytes"] = p.write_bytes;
    nlohmann::ordered_json bins = nlohmann::ordered_json::object();
    for (const auto& [bin, n] : p.read_bins) bins[std::to_string(bin)] = n;
    j["read_bins"] = bins;
    if (i > 0) {
      const FidelityVerdict v = CompareProfiles(profiles[0], p, tolerance);
      j["verdict"] = {{"bytes_per_epoch", v.bytes_per_epoch},
                      {"read_sizes", v.read_sizes},
                      {"opens_per_file", v.opens_per_file},
                      {"bytes_written", v.bytes_written},
                      {"misses", v.misses}};
    }
    doc["profiles"].push_back(std::move(j));
  }
  return doc.dump(2) + "\n";
}

}  // namespace iomimic::apptrace
