#include "output/results.h"

#include <sys/resource.h>

#include <cctype>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string_view>

#include "iomimic/version.h"
#include "output/writers.h"

namespace iomimic::output {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

// A list entry of overrides.yaml as Hydra writes it (PyYAML's safe_dump):
// plain when the text reads back as the same string, otherwise in single
// quotes with ' doubled. MLPerf's report scripts read these lines as text
// (docs/dlio-compat.md §5.4), so a quote Hydra would not write breaks them.
std::string HydraListEntry(const std::string& s) {
  bool plain = !s.empty() && s.front() != ' ' && s.back() != ' ' &&
               std::string_view("-?:,[]{}#&*!|>'\"%@`").find(s.front()) == std::string::npos &&
               s.find(": ") == std::string::npos && s.find(" #") == std::string::npos &&
               s.find_first_of("\n\t") == std::string::npos && s.back() != ':';
  if (plain) {
    // Words YAML reads as booleans, null or numbers stay strings only quoted.
    static const char* const kNotStrings[] = {"true", "false", "yes", "no", "on",
                                              "off",  "null",  "~",   "y",  "n"};
    std::string lower = s;
    for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    for (const char* w : kNotStrings) plain &= lower != w;
    char* end = nullptr;
    std::strtod(s.c_str(), &end);
    plain &= !(end != s.c_str() && *end == '\0');
  }
  if (plain) return s;
  std::string out = "'";
  for (char ch : s) {
    if (ch == '\'')
      out += "''";
    else
      out += ch;
  }
  return out + "'";
}

double PeakRssMiB() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;  // kB on Linux
}

}  // namespace

std::string DefaultOutputFolder(const config::Config& config) {
  if (!config.output.folder.empty()) return config.output.folder;
  if (!config.hydra.run_dir.empty()) return config.hydra.run_dir;
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char stamp[64];
  std::strftime(stamp, sizeof(stamp), "%Y-%m-%d-%H-%M-%S", &tm);
  return "hydra_log/" + config.model.name + "/" + stamp;
}

namespace {

// A file of `folder` that a run with `config` writes and that exists already,
// or "" (issue 13, defect 9: nothing a user wrote is overwritten unasked).
std::string FileThisRunWouldOverwrite(const std::string& folder, const config::Config& config) {
  std::error_code ec;
  for (const std::string& name :
       {config.hydra.output_subdir + "/config.yaml", config.hydra.output_subdir + "/overrides.yaml",
        config.hydra.output_subdir + "/hydra.yaml", config.output.log_file}) {
    if (!name.empty() && fs::exists(folder + "/" + name, ec)) return folder + "/" + name;
  }
  // The ranks' records of a run that ended before its status.json.
  if (fs::exists(folder + "/" + kRankFolder, ec)) return folder + "/" + kRankFolder;
  // Per-accelerator files: <n>_output.json, <n>_per_epoch_stats.json, <n>_samples.csv.
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const std::size_t underscore = name.find('_');
    if (underscore == 0 || underscore == std::string::npos) continue;
    if (!std::all_of(name.begin(), name.begin() + static_cast<std::ptrdiff_t>(underscore),
                     [](char c) { return c >= '0' && c <= '9'; })) {
      continue;
    }
    const std::string rest = name.substr(underscore + 1);
    if (rest == "output.json" || rest == "per_epoch_stats.json" || rest == "samples.csv") {
      return it->path().string();
    }
  }
  return "";
}

}  // namespace

Result<std::string> PrepareOutputFolder(const config::Config& config, cluster::Cluster& cluster,
                                        const std::string& subfolder) {
  std::string folder;
  Status status;
  if (cluster.rank() == 0) {
    folder = DefaultOutputFolder(config);
    bool derived = config.output.folder.empty() && config.hydra.run_dir.empty();
    std::error_code ec;
    if (!derived && !subfolder.empty()) {
      folder += "/" + subfolder;
      derived = true;  // a name of ours: made unique like a derived one
    }
    if (derived) {
      // Two runs in the same second: add a suffix rather than share a folder.
      std::string base = folder;
      for (int i = 1; fs::exists(folder, ec); ++i) folder = base + "-" + std::to_string(i);
    } else if (fs::exists(folder + "/summary.json", ec) ||
               fs::exists(folder + "/status.json", ec)) {
      status = Status::AlreadyExists("output folder " + folder +
                                     " already holds the results of another run; choose another "
                                     "with ++workload.output.folder=<dir> or remove it");
    } else if (const std::string existing = FileThisRunWouldOverwrite(folder, config);
               !existing.empty()) {
      status = Status::AlreadyExists("output folder " + folder + " already holds " + existing +
                                     ", which this run would overwrite; choose another with "
                                     "++workload.output.folder=<dir> or remove it");
    }
    if (status.ok()) {
      fs::create_directories(folder + "/" + config.hydra.output_subdir, ec);
      if (ec) status = Status::FromErrno(ec.value(), "cannot create output folder " + folder);
    }
  }
  IOMIMIC_RETURN_IF_ERROR(cluster.AgreeOnStatus(status));
  return cluster.Broadcast(folder);
}

Status WriteConfigFiles(const std::string& folder, const config::LoadedManifest& given,
                        const cluster::Cluster& cluster) {
  if (cluster.rank() != 0) return Status::OK();
  const config::LoadedManifest manifest = config::Redacted(given);  // no credentials
  const std::string sub = folder + "/" + manifest.config.hydra.output_subdir;
  std::error_code ec;
  fs::create_directories(sub, ec);
  IOMIMIC_RETURN_IF_ERROR(
      WriteTextFile(sub + "/config.yaml", config::ToYaml(manifest.config, true)));
  std::string overrides;
  bool has_workload = false;
  for (const std::string& o : manifest.raw_overrides) has_workload |= o.rfind("workload=", 0) == 0;
  if (!has_workload) {
    overrides += "- " + HydraListEntry("workload=" + manifest.workload_name) + "\n";
  }
  for (const std::string& o : manifest.raw_overrides) {
    overrides += "- " + HydraListEntry(o) + "\n";
  }
  if (overrides.empty()) overrides = "[]\n";
  IOMIMIC_RETURN_IF_ERROR(WriteTextFile(sub + "/overrides.yaml", overrides));

  // hydra.yaml: Hydra's own settings of the run, as Hydra records them next
  // to config.yaml (the run folder, the output subfolder, the overrides
  // split into Hydra's and the task's, the job and the mode).
  std::string hydra_overrides, task_overrides;
  if (!has_workload) {
    task_overrides += "    - " + HydraListEntry("workload=" + manifest.workload_name) + "\n";
  }
  for (const std::string& o : manifest.raw_overrides) {
    const bool hydra =
        o.find("hydra.") != std::string::npos && o.find("workload.") == std::string::npos;
    (hydra ? hydra_overrides : task_overrides) += "    - " + HydraListEntry(o) + "\n";
  }
  std::error_code cwd_error;
  const std::string cwd = fs::current_path(cwd_error).string();
  std::string hydra;
  hydra += "hydra:\n";
  hydra += "  run:\n    dir: " + HydraListEntry(folder) + "\n";
  hydra += "  output_subdir: " + HydraListEntry(manifest.config.hydra.output_subdir) + "\n";
  hydra += "  mode: RUN\n";
  hydra += "  job:\n    name: dlio_benchmark\n    config_name: config\n";
  hydra += "  overrides:\n";
  hydra += "    hydra:" + std::string(hydra_overrides.empty() ? " []\n" : "\n" + hydra_overrides);
  hydra += "    task:" + std::string(task_overrides.empty() ? " []\n" : "\n" + task_overrides);
  hydra += "  runtime:\n";
  hydra +=
      "    version: " + HydraListEntry(std::string("iomimic ") + IOMIMIC_VERSION_STRING) + "\n";
  hydra += "    cwd: " + HydraListEntry(cwd) + "\n";
  hydra += "    output_dir: " + HydraListEntry(folder) + "\n";
  return WriteTextFile(sub + "/hydra.yaml", hydra);
}

Status WriteStatus(const std::string& folder, const Status& run_status, const char* signal,
                   const StatusDetails& details) {
  json o;
  o["status"] = signal != nullptr ? "interrupted" : run_status.ok() ? "completed" : "failed";
  if (signal != nullptr) o["signal"] = signal;
  if (!run_status.ok()) o["error"] = run_status.message();
  if (!details.lost_ranks.empty()) {
    o["lost_hosts"] = details.lost_hosts;
    o["lost_ranks"] = details.lost_ranks;
  }
  if (!details.unanswered_ranks.empty()) o["unanswered_ranks"] = details.unanswered_ranks;
  if (details.written_by_rank != 0) o["written_by_rank"] = details.written_by_rank;
  if (!details.results.empty()) o["results"] = details.results;
  o["end"] = Timestamp(std::chrono::system_clock::now());
  return WriteTextFile(folder + "/status.json",
                       o.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
}

Result<RunResults> WriteResults(const std::string& folder, session::Session& session,
                                const RunOutcome& outcome) {
  const auto output_start = std::chrono::steady_clock::now();
  cluster::Cluster& cluster = session.cluster();
  IOMIMIC_ASSIGN_OR_RETURN(RunResults results, CollectResults(session, outcome));
  // Each workflow's own per-rank files, then its lines in the run's log
  // (rank 0; training: DLIO's progress lines, where DLIO's users and
  // MLPerf's tools look for them; the [METRIC] block follows them).
  for (const std::shared_ptr<WorkflowResults>& w : results.workflows) {
    IOMIMIC_RETURN_IF_ERROR(
        cluster.AgreeOnStatus(w->WriteRankFiles(folder, results, session.config())));
  }
  Status logged;
  if (cluster.rank() == 0) {
    const config::Config& c = session.config();
    std::string text;
    for (const auto& w : results.workflows) text += w->LogText(results, c, folder);
    if (!text.empty()) {
      const std::string log_path = folder + "/" + c.output.log_file;
      std::ofstream log(log_path, std::ios::out | std::ios::app);
      log << text;
      log.close();
      if (!log) logged = Status::IOError("cannot append DLIO's progress lines to " + log_path);
    }
  }
  IOMIMIC_RETURN_IF_ERROR(cluster.AgreeOnStatus(logged));
  if (session.tracer().enabled()) {
    // trace/<rank>.pfw, each rank its own (docs/run-folder.md).
    const std::string dir = folder + "/trace";
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    Status written = ec ? Status::IOError(dir + ": " + ec.message())
                        : session.tracer().Write(
                              dir + "/" + std::to_string(cluster.rank()) + ".pfw", cluster.rank(),
                              outcome.start.mono -
                                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                      outcome.start.wall - outcome.origin));
    IOMIMIC_RETURN_IF_ERROR(cluster.AgreeOnStatus(written));
  }
  // Collective, after the per-rank files so that their cost is counted.
  results.output_seconds = cluster.MaxDouble(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - output_start).count());
  results.peak_rss_mib = cluster.MaxDouble(PeakRssMiB());
  if (cluster.rank() == 0) {
    IOMIMIC_RETURN_IF_ERROR(WriteTextFile(folder + "/histograms.json", HistogramsJson(results)));
    IOMIMIC_RETURN_IF_ERROR(WriteTextFile(folder + "/events.csv", EventsCsv(results)));
    IOMIMIC_RETURN_IF_ERROR(WriteTextFile(folder + "/io_counters.csv", IoCountersCsv(results)));
    if (!results.timeline.empty()) {
      IOMIMIC_RETURN_IF_ERROR(WriteTextFile(folder + "/timeline.csv", TimelineCsv(results)));
    }
    if (!results.host_telemetry.empty()) {
      IOMIMIC_RETURN_IF_ERROR(
          WriteTextFile(folder + "/host_telemetry.csv", HostTelemetryCsv(results)));
    }
    IOMIMIC_RETURN_IF_ERROR(
        WriteTextFile(folder + "/summary.json", SummaryJson(results, session.manifest())));
  }
  return results;
}

}  // namespace iomimic::output
