#include "analysis/report.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <tuple>

#include "analysis/compare.h"
#include "analysis/csv.h"
#include "analysis/report_resources.h"
#include "analysis/run_folder.h"
#include "iomimic/version.h"
#include "metrics/figures_json.h"

namespace iomimic::analysis {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// Points of a timeline kept on the page: longer timelines are averaged over
// neighbouring intervals, so that a day-long run still opens quickly.
constexpr std::size_t kMaxTimelinePoints = 4000;
// Events drawn as markers (epochs, evaluations, checkpoints, generation).
constexpr std::size_t kMaxMarkers = 2000;
// Hottest files listed.
constexpr std::size_t kHotFiles = 20;

Result<std::string> ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("no " + path);
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Status::IOError("cannot read " + path);
  return text.str();
}

// A CSV file as its header and rows; rows whose cell count differs from the
// header's are an error naming the line.
struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  int Column(const std::string& name) const {
    for (std::size_t i = 0; i < header.size(); ++i) {
      if (header[i] == name) return static_cast<int>(i);
    }
    return -1;
  }
};

Result<Table> ReadCsv(const std::string& path) {
  IOMIMIC_ASSIGN_OR_RETURN(const std::string text, ReadText(path));
  Table t;
  std::istringstream in(text);
  std::string line;
  std::size_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> cells = ParseCsvLine(line);
    if (t.header.empty()) {
      t.header = std::move(cells);
      continue;
    }
    if (cells.size() != t.header.size()) {
      return Status::Corruption(path + ":" + std::to_string(number) + ": " +
                                std::to_string(cells.size()) + " cells, the header has " +
                                std::to_string(t.header.size()));
    }
    t.rows.push_back(std::move(cells));
  }
  if (t.header.empty()) return Status::Corruption(path + ": empty");
  return t;
}

// A number cell; NaN when empty or not a number (JSON null on the page).
double Number(const std::string& cell) {
  if (cell.empty()) return std::nan("");
  char* end = nullptr;
  const double v = std::strtod(cell.c_str(), &end);
  return (end == cell.c_str() || *end != '\0') ? std::nan("") : v;
}

// The columns `names` of `t` (missing ones are an error naming the file).
Result<std::vector<int>> Columns(const Table& t, const std::string& file,
                                 const std::vector<std::string>& names) {
  std::vector<int> out;
  for (const std::string& n : names) {
    const int c = t.Column(n);
    if (c < 0) return Status::Corruption(file + ": no column '" + n + "'");
    out.push_back(c);
  }
  return out;
}

// One interval of timeline.csv's "all" or "host" rows.
struct Point {
  double start, end, read, write, au, in_flight;
};

// `points` in time order, averaged over groups of neighbours down to
// kMaxTimelinePoints: each point's time (its group's last interval's end)
// and the mean of each field in `fields`.
std::pair<json, std::vector<json>> Averaged(std::vector<Point>& points,
                                            const std::vector<double Point::*>& fields) {
  std::sort(points.begin(), points.end(),
            [](const Point& a, const Point& b) { return a.start < b.start; });
  const std::size_t group =
      std::max<std::size_t>(1, (points.size() + kMaxTimelinePoints - 1) / kMaxTimelinePoints);
  json time = json::array();
  std::vector<json> series(fields.size(), json::array());
  for (std::size_t i = 0; i < points.size(); i += group) {
    const std::size_t n = std::min(points.size(), i + group) - i;
    // Each point at its interval's end: the figure is the interval's.
    time.push_back(metrics::JsonNumber(points[i + n - 1].end));
    for (std::size_t f = 0; f < fields.size(); ++f) {
      double sum = 0;
      for (std::size_t k = i; k < i + n; ++k) sum += points[k].*fields[f];
      series[f].push_back(metrics::JsonNumber(sum / static_cast<double>(n)));
    }
  }
  return {time, series};
}

// timeline.csv: the "all" rows as series over time (averaged down to
// kMaxTimelinePoints), and each rank's totals (the per-rank spread).
Status AddTimeline(const std::string& dir, json* run) {
  const std::string file = dir + "/timeline.csv";
  IOMIMIC_ASSIGN_OR_RETURN(const Table t, ReadCsv(file));
  IOMIMIC_ASSIGN_OR_RETURN(const std::vector<int> c,
                           Columns(t, file,
                                   {"rank", "start_s", "end_s", "bytes_read", "bytes_written",
                                    "samples", "compute_s", "au_percent", "read_MiB_per_s",
                                    "write_MiB_per_s", "requests_in_flight", "barrier_s"}));
  std::vector<Point> all;
  std::map<long, std::array<double, 5>> ranks;  // bytes read, written, samples, compute, barrier
  // Per-host rows (rank "host", their host in the "host" column; files of
  // older iomimic have neither): read MiB/s and AU over time, by host.
  const int host_column = t.Column("host");
  std::map<std::string, std::vector<Point>> hosts;
  for (const std::vector<std::string>& r : t.rows) {
    const Point point{Number(r[c[1]]), Number(r[c[2]]), Number(r[c[8]]),
                      Number(r[c[9]]), Number(r[c[7]]), Number(r[c[10]])};
    if (r[c[0]] == "all") {
      all.push_back(point);
      continue;
    }
    if (r[c[0]] == "host") {
      if (host_column >= 0) hosts[r[host_column]].push_back(point);
      continue;
    }
    auto& sums = ranks[std::strtol(r[c[0]].c_str(), nullptr, 10)];
    const int cols[5] = {c[3], c[4], c[5], c[6], c[11]};
    for (int i = 0; i < 5; ++i) {
      const double v = Number(r[cols[i]]);
      if (std::isfinite(v)) sums[i] += v;
    }
  }
  const std::size_t group =
      std::max<std::size_t>(1, (all.size() + kMaxTimelinePoints - 1) / kMaxTimelinePoints);
  const auto [time, series] =
      Averaged(all, {&Point::read, &Point::write, &Point::au, &Point::in_flight});
  (*run)["timeline"] = {{"t", time},        {"read_MiB_s", series[0]}, {"write_MiB_s", series[1]},
                        {"au", series[2]},  {"in_flight", series[3]},  {"intervals", all.size()},
                        {"averaged", group}};
  json per_rank = json::array();
  for (const auto& [rank, s] : ranks) {
    per_rank.push_back({{"rank", rank},
                        {"MiB_read", s[0] / (1024.0 * 1024.0)},
                        {"MiB_written", s[1] / (1024.0 * 1024.0)},
                        {"samples", s[2]},
                        {"compute_s", s[3]},
                        {"barrier_s", s[4]}});
  }
  (*run)["ranks"] = per_rank;
  json per_host = json::object();
  for (auto& [host, points] : hosts) {
    const auto [times, series] = Averaged(points, {&Point::read, &Point::au});
    per_host[host] = {{"t", times}, {"read_MiB_s", series[0]}, {"au", series[1]}};
  }
  (*run)["host_timeline"] = per_host;
  return Status::OK();
}

// host_telemetry.csv: each host's CPU, page cache, disk and network over time.
Status AddHostTelemetry(const std::string& dir, json* run) {
  const std::string file = dir + "/host_telemetry.csv";
  IOMIMIC_ASSIGN_OR_RETURN(const Table t, ReadCsv(file));
  const std::vector<std::string> names = {"host",
                                          "start_s",
                                          "end_s",
                                          "cpu_user_percent",
                                          "cpu_system_percent",
                                          "cpu_iowait_percent",
                                          "page_cache_MiB",
                                          "disk_read_MiB_per_s",
                                          "disk_write_MiB_per_s",
                                          "net_rx_MiB_per_s",
                                          "net_tx_MiB_per_s",
                                          "disk"};
  IOMIMIC_ASSIGN_OR_RETURN(const std::vector<int> c, Columns(t, file, names));
  std::map<std::string, std::vector<std::vector<std::string>>> by_host;
  for (const std::vector<std::string>& r : t.rows) by_host[r[c[0]]].push_back(r);
  json hosts = json::object();
  for (const auto& [host, rows] : by_host) {
    const std::size_t group =
        std::max<std::size_t>(1, (rows.size() + kMaxTimelinePoints - 1) / kMaxTimelinePoints);
    json series = json::object();
    json time = json::array();
    for (std::size_t k = 3; k + 1 < names.size(); ++k) series[names[k]] = json::array();
    for (std::size_t i = 0; i < rows.size(); i += group) {
      const std::size_t n = std::min(rows.size(), i + group) - i;
      time.push_back(metrics::JsonNumber(Number(rows[i + n - 1][c[2]])));
      for (std::size_t k = 3; k + 1 < names.size(); ++k) {
        double sum = 0;
        for (std::size_t j = i; j < i + n; ++j) sum += Number(rows[j][c[k]]);
        series[names[k]].push_back(metrics::JsonNumber(sum / static_cast<double>(n)));
      }
    }
    series["t"] = time;
    series["disk"] = rows.front()[c[11]];
    hosts[host] = series;
  }
  (*run)["host_telemetry"] = hosts;
  return Status::OK();
}

// events.csv: one marker per event (merged over ranks: the earliest start,
// the latest end, bytes summed); per-step barrier waits summed per rank.
Status AddEvents(const std::string& dir, json* run) {
  const std::string file = dir + "/events.csv";
  IOMIMIC_ASSIGN_OR_RETURN(const Table t, ReadCsv(file));
  IOMIMIC_ASSIGN_OR_RETURN(
      const std::vector<int> c,
      Columns(t, file, {"rank", "event", "epoch", "index", "start_s", "end_s", "bytes"}));
  struct Span {
    double start, end, bytes;
    int ranks;
  };
  std::map<std::tuple<std::string, long, long>, Span> merged;
  std::map<long, std::pair<long, double>> barriers;  // rank -> waits, seconds
  for (const std::vector<std::string>& r : t.rows) {
    const double start = Number(r[c[4]]), end = Number(r[c[5]]);
    if (!std::isfinite(start) || !std::isfinite(end)) continue;
    if (r[c[1]] == "barrier_wait") {
      auto& b = barriers[std::strtol(r[c[0]].c_str(), nullptr, 10)];
      ++b.first;
      b.second += end - start;
      continue;
    }
    const auto key = std::make_tuple(r[c[1]], std::strtol(r[c[2]].c_str(), nullptr, 10),
                                     std::strtol(r[c[3]].c_str(), nullptr, 10));
    const double bytes = Number(r[c[6]]);
    auto [it, fresh] = merged.try_emplace(key, Span{start, end, 0, 0});
    it->second.start = std::min(it->second.start, start);
    it->second.end = std::max(it->second.end, end);
    if (std::isfinite(bytes)) it->second.bytes += bytes;
    ++it->second.ranks;
  }
  std::vector<std::pair<std::tuple<std::string, long, long>, Span>> sorted(merged.begin(),
                                                                           merged.end());
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return a.second.start < b.second.start; });
  json events = json::array();
  for (const auto& [key, span] : sorted) {
    if (events.size() >= kMaxMarkers) break;
    events.push_back({{"event", std::get<0>(key)},
                      {"epoch", std::get<1>(key)},
                      {"index", std::get<2>(key)},
                      {"start", span.start},
                      {"end", span.end},
                      {"bytes", span.bytes},
                      {"ranks", span.ranks}});
  }
  (*run)["events"] = events;
  (*run)["events_total"] = sorted.size();
  json waits = json::array();
  for (const auto& [rank, b] : barriers) {
    waits.push_back({{"rank", rank}, {"waits", b.first}, {"seconds", b.second}});
  }
  (*run)["barrier_waits"] = waits;
  return Status::OK();
}

Status AddHistograms(const std::string& dir, json* run) {
  const std::string file = dir + "/histograms.json";
  IOMIMIC_ASSIGN_OR_RETURN(const std::string text, ReadText(file));
  json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.contains("histograms") ||
      !parsed["histograms"].is_object()) {
    return Status::Corruption(file + " is not a histograms file");
  }
  (*run)["histograms"] = parsed["histograms"];
  return Status::OK();
}

// io_counters.csv: the hottest paths (the file is ordered by bytes moved).
Status AddIoCounters(const std::string& dir, json* run) {
  const std::string file = dir + "/io_counters.csv";
  IOMIMIC_ASSIGN_OR_RETURN(const Table t, ReadCsv(file));
  const std::vector<std::string> names = {
      "rank",       "path",          "files",     "opens",        "reads",       "writes",
      "bytes_read", "bytes_written", "seq_reads", "consec_reads", "read_time_s", "meta_time_s"};
  IOMIMIC_ASSIGN_OR_RETURN(const std::vector<int> c, Columns(t, file, names));
  json rows = json::array();
  for (const std::vector<std::string>& r : t.rows) {
    if (rows.size() >= kHotFiles) break;
    if (r[c[1]] == "others") continue;
    json row = json::array();
    for (std::size_t i = 0; i < c.size(); ++i) {
      if (i == 1) {
        row.push_back(r[c[i]]);
      } else {
        row.push_back(metrics::JsonNumber(Number(r[c[i]])));
      }
    }
    rows.push_back(row);
  }
  (*run)["io_counters"] = {{"columns", names}, {"rows", rows}, {"paths", t.rows.size()}};
  return Status::OK();
}

// Everything the page shows of one run folder. Missing optional files are
// listed in "missing"; a malformed one in "problems" (the page shows both).
Result<json> RunData(const std::string& dir, const std::string& label,
                     const output::FigureList& specs) {
  IOMIMIC_ASSIGN_OR_RETURN(const RunFolder folder, ReadRunFolder(dir, specs));
  // A folder whose merge never happened has a summary of the same shape
  // from the ranks' records (analysis/run_folder.h).
  IOMIMIC_ASSIGN_OR_RETURN(const std::string summary_text, SummaryText(dir));
  json summary = json::parse(summary_text, nullptr, /*allow_exceptions=*/false);
  json run;
  run["label"] = label;
  run["path"] = dir;
  run["status"] = folder.status;
  if (folder.partial) run["partial"] = folder.partial_note;
  json figures = json::array();
  for (const Figure& f : folder.figures) {
    figures.push_back(
        {f.name, f.present ? metrics::JsonNumber(f.value) : json(nullptr), f.higher_is_better});
  }
  run["figures"] = figures;
  run["config"] = folder.config;
  // /proc/cpuinfo and /proc/meminfo are long and say little on this page.
  summary.erase("host_cpuinfo");
  summary.erase("host_meminfo");
  run["summary"] = summary;
  json missing = json::array(), problems = json::array();
  const std::pair<const char*, Status (*)(const std::string&, json*)> optional[] = {
      {"timeline.csv", AddTimeline},
      {"events.csv", AddEvents},
      {"histograms.json", AddHistograms},
      {"io_counters.csv", AddIoCounters},
      {"host_telemetry.csv", AddHostTelemetry}};
  for (const auto& [name, add] : optional) {
    std::error_code ec;
    if (!fs::exists(dir + "/" + name, ec)) {
      missing.push_back(name);
      continue;
    }
    const Status s = add(dir, &run);
    if (!s.ok()) problems.push_back(s.ToString());
  }
  run["missing"] = missing;
  run["problems"] = problems;
  return run;
}

std::string HtmlEscape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += ch;
    }
  }
  return out;
}

// Replaces the one occurrence of `marker` in `page` (the template has each
// marker once; a template without it is a build defect).
Status Fill(std::string* page, const std::string& marker, const std::string& value) {
  const std::size_t at = page->find(marker);
  if (at == std::string::npos) {
    return Status::Internal("the report template has no " + marker);
  }
  page->replace(at, marker.size(), value);
  return Status::OK();
}

Result<std::string> ChartJs(const ReportOptions& options) {
  if (!options.chart_js.empty()) {
    Result<std::string> read = ReadText(options.chart_js);
    if (!read.ok()) return read.status().WithContext("--chart-js");
    std::string text = std::move(read).value();
    if (text.find("Chart") == std::string::npos) {
      return Status::InvalidArgument(options.chart_js + " does not look like Chart.js");
    }
    return text;
  }
  if (kChartJsSize == 0) {
    return Status::NotFound(
        "this iomimic was built without Chart.js (libjs-chart.js was not found at build time: "
        "install it, e.g. with scripts/deps.sh, and re-run cmake; or name the file with "
        "--chart-js FILE)");
  }
  return std::string(reinterpret_cast<const char*>(kChartJs), kChartJsSize);
}

// The page: the template with the title, the library and the data inlined.
Result<std::string> Page(const std::string& title, json data, const ReportOptions& options) {
  IOMIMIC_ASSIGN_OR_RETURN(std::string chart_js, ChartJs(options));
  // A script element ends at the first "</script": the library has none
  // (checked), and the data's '<' are escaped.
  if (chart_js.find("</script") != std::string::npos) {
    return Status::InvalidArgument("the Chart.js file holds '</script' and cannot be inlined");
  }
  data["generator"] = std::string("iomimic ") + IOMIMIC_VERSION_STRING;
  std::string text = data.dump(-1, ' ', false, json::error_handler_t::replace);
  std::string escaped;
  escaped.reserve(text.size());
  for (char ch : text) {
    if (ch == '<') {
      escaped += "\\u003c";
    } else {
      escaped += ch;
    }
  }
  std::string page(reinterpret_cast<const char*>(kReportTemplate), kReportTemplateSize);
  IOMIMIC_RETURN_IF_ERROR(Fill(&page, "@@TITLE@@", HtmlEscape(title)));
  IOMIMIC_RETURN_IF_ERROR(Fill(&page, "@@DATA@@", escaped));
  // Last: the library's text must not be searched for markers.
  IOMIMIC_RETURN_IF_ERROR(Fill(&page, "@@CHART_JS@@", chart_js));
  return page;
}

// The page data of `kind` ("report", "compare") with each run's RunData,
// labelled A, B, ... (one run alone unlabelled when `label_one` is false).
Result<json> RunsPageData(const char* kind, const std::vector<std::string>& run_dirs,
                          bool label_one, const output::FigureList& figures) {
  json data;
  data["kind"] = kind;
  json runs = json::array();
  const bool labels = label_one || run_dirs.size() > 1;
  for (std::size_t i = 0; i < run_dirs.size(); ++i) {
    Result<json> run = RunData(run_dirs[i], labels ? RunLabel(i) : "", figures);
    if (!run.ok()) return run.status().WithContext(kind);
    runs.push_back(std::move(run).value());
  }
  data["runs"] = runs;
  return data;
}

}  // namespace

bool IsSweepFolder(const std::string& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir + "/results.csv", ec) && !fs::exists(dir + "/summary.json", ec);
}

Result<std::string> RunReportHtml(const std::vector<std::string>& run_dirs,
                                  const ReportOptions& options) {
  IOMIMIC_ASSIGN_OR_RETURN(json data, RunsPageData("report", run_dirs, false, options.figures));
  std::string title = "iomimic report: " + run_dirs.front();
  if (run_dirs.size() > 1) title += " and " + std::to_string(run_dirs.size() - 1) + " more";
  return Page(title, std::move(data), options);
}

Result<std::string> CompareHtml(const std::vector<std::string>& run_dirs,
                                const ReportOptions& options) {
  IOMIMIC_ASSIGN_OR_RETURN(json data, RunsPageData("compare", run_dirs, true, options.figures));
  json names = json::array();
  for (const output::FigureSpec& f : options.figures) names.push_back(f.name);
  data["figure_names"] = std::move(names);
  return Page("iomimic compare: " + std::to_string(run_dirs.size()) + " runs", std::move(data),
              options);
}

Result<std::string> SweepHtml(const std::string& sweep_dir, const ReportOptions& options) {
  const std::string file = sweep_dir + "/results.csv";
  Result<Table> table = ReadCsv(file);
  if (!table.ok()) return table.status().WithContext("sweep report");
  const int status = table->Column("status");
  const int folder = table->Column("folder");
  if (status < 0 || folder < 0 || table->Column("experiment") != 0) {
    return Status::Corruption(file +
                              ": not a sweep's results.csv (no experiment, status or "
                              "folder column)");
  }
  // The design's factors lie between "experiment" and "status".
  json factors = json::array();
  for (int i = 1; i < status; ++i) factors.push_back(table->header[i]);
  json rows = json::array();
  for (const std::vector<std::string>& r : table->rows) {
    json row = json::array();
    for (std::size_t i = 0; i < r.size(); ++i) {
      const int col = static_cast<int>(i);
      const double v = Number(r[i]);
      // Factors stay text (a factor may look numeric); figures are numbers.
      if (col <= folder || !std::isfinite(v)) {
        row.push_back(r[i]);
      } else {
        row.push_back(v);
      }
    }
    rows.push_back(row);
  }
  json data;
  data["kind"] = "sweep";
  data["sweep"] = {{"path", sweep_dir},
                   {"columns", table->header},
                   {"factors", factors},
                   {"rows", rows},
                   {"figures_from", folder + 1}};
  return Page("iomimic sweep: " + sweep_dir, std::move(data), options);
}

}  // namespace iomimic::analysis
