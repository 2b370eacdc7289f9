#include "analysis/sweep.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "analysis/csv.h"
#include "analysis/launch.h"
#include "analysis/report.h"
#include "analysis/run_folder.h"

namespace iomimic::analysis {
namespace {

namespace fs = std::filesystem;

std::string CsvCell(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char ch : s) {
    out += ch;
    if (ch == '"') out += '"';
  }
  return out + "\"";
}

std::string CsvLine(const std::vector<std::string>& cells) {
  std::string line;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    if (i > 0) line += ',';
    line += CsvCell(cells[i]);
  }
  return line;
}

// The design file as read: every line (comments kept) and the table.
struct Design {
  std::vector<std::string> lines;  // as in the file
  std::size_t header_line = 0;     // index into lines
  std::vector<std::string> header;
  struct Row {
    std::size_t line = 0;  // index into lines
    std::vector<std::string> cells;
  };
  std::vector<Row> rows;
  int col_model = -1, col_processes = -1, col_overrides = -1, col_run = -1;
};

Result<Design> ReadDesign(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound("cannot open the design " + path);
  Design d;
  std::string line;
  bool have_header = false;
  while (std::getline(in, line)) {
    d.lines.push_back(line);
    const std::size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    std::vector<std::string> cells = ParseCsvLine(line);
    if (!have_header) {
      d.header = cells;
      d.header_line = d.lines.size() - 1;
      have_header = true;
      continue;
    }
    if (cells.size() != d.header.size()) {
      return Status::InvalidArgument(path + ":" + std::to_string(d.lines.size()) + ": " +
                                     std::to_string(cells.size()) + " cells, the header has " +
                                     std::to_string(d.header.size()));
    }
    d.rows.push_back({d.lines.size() - 1, std::move(cells)});
  }
  if (!have_header) return Status::InvalidArgument(path + ": no header line");
  for (std::size_t i = 0; i < d.header.size(); ++i) {
    const std::string& h = d.header[i];
    const int c = static_cast<int>(i);
    if (h == "model" || h == "workload") d.col_model = c;
    if (h == "processes") d.col_processes = c;
    if (h == "overrides") d.col_overrides = c;
    if (h == "run") d.col_run = c;
  }
  if (d.col_model < 0) {
    return Status::InvalidArgument(path + ":" + std::to_string(d.header_line + 1) +
                                   ": the header has no 'model' (or 'workload') column");
  }
  return d;
}

// Rewrites the design with the run cells as they are now (an atomic rename;
// comments and other lines untouched).
Status WriteDesign(const std::string& path, Design& d) {
  if (d.col_run < 0) {
    d.header.push_back("run");
    d.col_run = static_cast<int>(d.header.size()) - 1;
    for (Design::Row& r : d.rows) r.cells.push_back("N");
  }
  d.lines[d.header_line] = CsvLine(d.header);
  for (const Design::Row& r : d.rows) d.lines[r.line] = CsvLine(r.cells);
  std::string text;
  for (const std::string& l : d.lines) {
    text += l;
    text += '\n';
  }
  return ReplaceFile(path, path + ".iomimic-tmp", text, "cannot replace ");
}

std::string Sanitize(const std::string& s) {
  std::string out;
  for (char ch : s) {
    out += (std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '.') ? ch : '_';
  }
  return out.substr(0, 60);
}

bool Done(const Design& d, const Design::Row& r) {
  if (d.col_run < 0) return false;
  std::string v = r.cells[static_cast<std::size_t>(d.col_run)];
  std::transform(v.begin(), v.end(), v.begin(), ::toupper);
  return v == "Y" || v == "YES";
}

// The folder of experiment `index` (from 0): its number and its cells.
std::string FolderOf(const Design& design, const std::string& output, std::size_t index,
                     const Design::Row& row) {
  std::string name = std::to_string(index + 1);
  for (std::size_t i = 0; i < row.cells.size(); ++i) {
    if (static_cast<int>(i) == design.col_run || row.cells[i].empty()) continue;
    name += '_';
    name += Sanitize(row.cells[i]);
  }
  return output + "/" + name.substr(0, 120);
}

// results.csv: the factors (every design column but run), then the status
// and the figures of each experiment whose folder can be read (written
// through a temporary file and a rename).
Status WriteResults(const Design& design, const std::string& output, const std::string& path,
                    const output::FigureList& figures) {
  std::vector<std::string> header = {"experiment"};
  for (std::size_t i = 0; i < design.header.size(); ++i) {
    if (static_cast<int>(i) != design.col_run) header.push_back(design.header[i]);
  }
  header.push_back("status");
  header.push_back("folder");
  for (const output::FigureSpec& f : figures) header.push_back(f.name);
  std::string text = CsvLine(header) + "\n";
  for (std::size_t i = 0; i < design.rows.size(); ++i) {
    const Design::Row& row = design.rows[i];
    const std::string folder = FolderOf(design, output, i, row);
    Result<RunFolder> run = ReadRunFolder(folder, figures);
    if (!run.ok()) continue;
    std::vector<std::string> cells = {std::to_string(i + 1)};
    for (std::size_t c = 0; c < row.cells.size(); ++c) {
      if (static_cast<int>(c) != design.col_run) cells.push_back(row.cells[c]);
    }
    cells.push_back(run->status.empty() ? "unknown" : run->status);
    cells.push_back(folder);
    for (const Figure& f : run->figures) {
      char v[64] = "";
      if (f.present) std::snprintf(v, sizeof(v), "%.6g", f.value);
      cells.push_back(v);
    }
    text += CsvLine(cells) + "\n";
  }
  return ReplaceFile(path, path + ".tmp", text);
}

// Marks `row` done (run = Y) in the design file, adding the run column first
// when the design has none.
Status MarkDone(const std::string& path, Design& design, Design::Row& row) {
  if (design.col_run < 0) IOMIMIC_RETURN_IF_ERROR(WriteDesign(path, design));  // adds the column
  // A std::string: assigning "Y" itself trips a false -Wrestrict of GCC 12 once inlined.
  row.cells[static_cast<std::size_t>(design.col_run)] = std::string("Y");
  return WriteDesign(path, design);
}

// A folder left by an earlier attempt: *completed when that attempt
// completed; anything else is moved aside (<folder>.attempt-N) and the
// experiment runs again.
Status TakeEarlierFolder(const std::string& folder, bool* completed) {
  *completed = false;
  std::error_code ec;
  if (!fs::exists(folder, ec)) return Status::OK();
  Result<RunFolder> earlier = ReadRunFolder(folder, /*figures=*/{});
  if (earlier.ok() && earlier->status == "completed") {
    *completed = true;
    return Status::OK();
  }
  std::string aside;
  for (int k = 1;; ++k) {
    aside = folder + ".attempt-" + std::to_string(k);
    if (!fs::exists(aside, ec)) break;
  }
  fs::rename(folder, aside, ec);
  if (ec) return Status::FromErrno(ec.value(), "cannot move " + folder + " aside");
  return Status::OK();
}

// The row's MPI processes (1 when the design has no such cell).
Result<std::uint64_t> RowProcesses(const std::string& path, const Design& design,
                                   const Design::Row& row) {
  if (design.col_processes < 0) return std::uint64_t{1};
  const std::string& p = row.cells[static_cast<std::size_t>(design.col_processes)];
  if (p.empty()) return std::uint64_t{1};
  char* end = nullptr;
  const unsigned long long n = std::strtoull(p.c_str(), &end, 10);
  if (end == p.c_str() || *end != '\0' || n == 0) {
    return Status::InvalidArgument(path + ":" + std::to_string(row.line + 1) + ": processes '" + p +
                                   "' is not a positive integer");
  }
  return static_cast<std::uint64_t>(n);
}

// The overrides of one experiment: the sweep's, the row's overrides cell and
// one per factor cell, and the run's folder.
std::vector<std::string> RowOverrides(const SweepOptions& options, const Design& design,
                                      const Design::Row& row, const std::string& folder) {
  std::vector<std::string> overrides = options.overrides;
  for (std::size_t c = 0; c < row.cells.size(); ++c) {
    const int ci = static_cast<int>(c);
    if (ci == design.col_model || ci == design.col_processes || ci == design.col_run ||
        row.cells[c].empty()) {
      continue;
    }
    if (ci == design.col_overrides) {
      for (std::string& o : SplitWords(row.cells[c])) overrides.push_back(std::move(o));
    } else {
      overrides.push_back("++workload." + design.header[c] + "=" + row.cells[c]);
    }
  }
  overrides.push_back("++workload.output.folder=" + folder);
  return overrides;
}

// The sweep's page. Without it the sweep's results still stand.
void WriteSweepPage(const std::string& output, const std::function<void(const std::string&)>& log,
                    SweepReport* report) {
  Result<std::string> page = SweepHtml(output, {});
  const std::string html = output + "/report.html";
  if (!page.ok()) {
    log("no report page: " + page.status().ToString());
    return;
  }
  std::ofstream out(html, std::ios::binary | std::ios::trunc);
  out << *page;
  if (out) {
    report->report_html = html;
  } else {
    log("cannot write " + html);
  }
}

// One sweep: the design, its output folder and what was done so far.
struct Sweep {
  const SweepOptions& options;
  const std::function<void(const std::string&)>& log;
  Design design;
  std::string output;
  SweepReport report;
};

// Runs experiment `i` (not yet done) and records it in the design and
// results.csv. Sets *stop when a signal stopped the run.
Status RunExperiment(Sweep& s, std::size_t i, bool* stop) {
  Design::Row& row = s.design.rows[i];
  const std::string folder = FolderOf(s.design, s.output, i, row);
  bool completed = false;
  IOMIMIC_RETURN_IF_ERROR(TakeEarlierFolder(folder, &completed));
  if (completed) {
    // Finished before the sweep stopped, but not yet marked.
    IOMIMIC_RETURN_IF_ERROR(MarkDone(s.options.design, s.design, row));
    ++s.report.completed;
    return WriteResults(s.design, s.output, s.report.results_csv, s.options.figures);
  }
  IOMIMIC_ASSIGN_OR_RETURN(const std::uint64_t processes,
                           RowProcesses(s.options.design, s.design, row));
  const std::vector<std::string> argv =
      RunCommandLine(s.options.iomimic, s.options.launcher, processes,
                     row.cells[static_cast<std::size_t>(s.design.col_model)],
                     RowOverrides(s.options, s.design, row, folder));
  std::string shown;
  for (const std::string& a : argv) shown += (shown.empty() ? "" : " ") + a;
  const std::string number = std::to_string(i + 1);
  s.log("experiment " + number + "/" + std::to_string(s.design.rows.size()) + ": " + shown);
  IOMIMIC_ASSIGN_OR_RETURN(const int code, RunCommand(argv));
  if (code == 0) {
    ++s.report.completed;
    IOMIMIC_RETURN_IF_ERROR(MarkDone(s.options.design, s.design, row));
    s.log("experiment " + number + ": completed, " + folder);
  } else {
    ++s.report.failed;
    s.log("experiment " + number + ": failed (exit status " + std::to_string(code) + "), " +
          folder);
  }
  IOMIMIC_RETURN_IF_ERROR(
      WriteResults(s.design, s.output, s.report.results_csv, s.options.figures));
  *stop = code == 130 || code == 143 || code == 129;
  return Status::OK();
}

}  // namespace

Status ReplaceFile(const std::string& path, const std::string& temp, const std::string& text,
                   const std::string& rename_error) {
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) return Status::IOError("cannot write " + temp);
  }
  std::error_code ec;
  fs::rename(temp, path, ec);
  if (ec) return Status::FromErrno(ec.value(), rename_error + path);
  return Status::OK();
}

Result<SweepReport> RunSweep(const SweepOptions& options,
                             const std::function<void(const std::string&)>& log) {
  IOMIMIC_ASSIGN_OR_RETURN(Design design, ReadDesign(options.design));
  Sweep s{options, log, std::move(design), "", {}};
  s.output = options.output.empty() ? options.design + ".runs" : options.output;
  std::error_code ec;
  fs::create_directories(s.output, ec);
  if (ec) return Status::FromErrno(ec.value(), "cannot create " + s.output);
  s.report.rows = s.design.rows.size();
  s.report.results_csv = s.output + "/results.csv";
  for (std::size_t i = 0; i < s.design.rows.size(); ++i) {
    if (Done(s.design, s.design.rows[i])) {
      ++s.report.already_done;
      continue;
    }
    bool stop = false;
    IOMIMIC_RETURN_IF_ERROR(RunExperiment(s, i, &stop));
    if (stop) {
      s.report.interrupted = true;
      break;
    }
  }
  IOMIMIC_RETURN_IF_ERROR(
      WriteResults(s.design, s.output, s.report.results_csv, s.options.figures));
  WriteSweepPage(s.output, log, &s.report);
  return s.report;
}

}  // namespace iomimic::analysis
