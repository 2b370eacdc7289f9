#include "analysis/search.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "analysis/launch.h"
#include "analysis/run_folder.h"

namespace iomimic::analysis {
namespace {

constexpr const char* kPercentiles[] = {"p50", "p90", "p95", "p99", "p999", "p9999", "max"};

std::string Ms(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", v);
  return buf;
}

// Moves an earlier probe's folder aside (`<folder>.earlier-<k>`): nothing a
// user ran is overwritten.
Status MoveAside(const std::string& folder) {
  std::error_code ec;
  if (!std::filesystem::exists(folder, ec)) return Status::OK();
  std::string aside;
  for (int k = 1;; ++k) {
    aside = folder + ".earlier-" + std::to_string(k);
    if (!std::filesystem::exists(aside, ec)) break;
  }
  std::filesystem::rename(folder, aside, ec);
  if (ec) return Status::FromErrno(ec.value(), "cannot move " + folder + " aside");
  return Status::OK();
}

// A training probe's figures: AU against the threshold.
Status FillTraining(const RunFolder& run, const SearchOptions& options, SearchPoint* p) {
  const Figure* au = run.Find("train AU %");
  if (au == nullptr) {
    return Status::Corruption(p->folder + "/summary.json has no train AU" +
                              (run.kv_cache ? " (a KV-cache run: search it with --by users)" : ""));
  }
  p->au_percent = au->value;
  if (const Figure* f = run.Find("train samples/s")) p->samples_per_second = f->value;
  if (const Figure* f = run.Find("train MiB/s (read)")) p->mib_per_second = f->value;
  p->held = p->au_percent >= options.min_au_percent;
  return Status::OK();
}

// A KV-cache probe's figures: the QoS target.
Status FillKvCache(const RunFolder& run, const SearchOptions& options, SearchPoint* p) {
  if (!run.kv_cache) {
    return Status::Corruption(p->folder +
                              "/summary.json has no kv_cache (--by users searches a KV-cache "
                              "workload, workflow.kv_cache: True)");
  }
  if (const Figure* f = run.Find("kv requests")) p->requests = f->value;
  if (const Figure* f = run.Find("kv storage tokens/s")) p->storage_tokens_per_second = f->value;
  if (const Figure* f = run.Find("kv wall tokens/s")) p->wall_tokens_per_second = f->value;
  for (const KvQosClass& c : run.qos) {
    auto it = c.latency_ms.find(options.qos.percentile);
    const bool known = c.requests > 0 && it != c.latency_ms.end();
    p->qos_ms.emplace_back(c.name, known ? it->second : std::nan(""));
  }
  p->held = MeetsQos(run.qos, p->requests, options.qos, &p->why);
  return Status::OK();
}

// One probe: a run with `n` in its own folder, read back.
Result<SearchPoint> Probe(const SearchOptions& options, std::uint64_t n) {
  SearchPoint p;
  p.n = n;
  p.folder = options.output + "/" + options.by + "-" + std::to_string(n);
  IOMIMIC_RETURN_IF_ERROR(MoveAside(p.folder));
  std::vector<std::string> overrides = options.overrides;
  overrides.push_back("++workload.output.folder=" + p.folder);
  const bool ranks = options.by == "ranks";
  if (options.by == "accelerators") {
    overrides.push_back("++workload.iomimic.accelerators_per_process=" + std::to_string(n));
  } else if (options.by == "users") {
    overrides.push_back("++workload.kv_cache.num_users=" + std::to_string(n));
  }
  const std::vector<std::string> argv =
      RunCommandLine(options.iomimic, options.launcher, ranks ? n : 1, options.workload, overrides);
  IOMIMIC_ASSIGN_OR_RETURN(const int code, RunCommand(argv));
  if (code != 0) {
    return Status::Aborted("the run with " + std::to_string(n) + " " + options.by +
                           " failed (exit " + std::to_string(code) + "); see " + p.folder);
  }
  IOMIMIC_ASSIGN_OR_RETURN(const RunFolder run, ReadRunFolder(p.folder, options.figures));
  IOMIMIC_RETURN_IF_ERROR(options.by == "users" ? FillKvCache(run, options, &p)
                                                : FillTraining(run, options, &p));
  return p;
}

}  // namespace

Status ValidateQosTarget(const QosTarget& target) {
  const std::string& c = target.qos_class;
  if (c != "all" && c != "interactive" && c != "responsive" && c != "batch") {
    return Status::InvalidArgument(
        "search --qos-class must be all, interactive, responsive or batch, not '" + c + "'");
  }
  bool known = false;
  for (const char* p : kPercentiles) known |= target.percentile == p;
  if (!known) {
    return Status::InvalidArgument(
        "search --percentile must be p50, p90, p95, p99, p999, p9999 or max, not '" +
        target.percentile + "'");
  }
  if (!(target.max_ms >= 0) || !std::isfinite(target.max_ms)) {
    return Status::InvalidArgument("search --max-ms must be 0 (each class's P95 target) or more");
  }
  return Status::OK();
}

bool MeetsQos(const std::vector<KvQosClass>& qos, double requests, const QosTarget& target,
              std::string* why) {
  auto say = [&](const std::string& text) {
    if (why != nullptr) *why = text;
    return false;
  };
  if (why != nullptr) why->clear();
  if (!(requests > 0)) return say("no requests");
  // The default: the run's own verdict per class.
  const bool own_verdict = target.percentile == "p95" && target.max_ms == 0;
  bool found = false;
  for (const KvQosClass& c : qos) {
    if (target.qos_class != "all" && c.name != target.qos_class) continue;
    found = true;
    if (!(c.requests > 0)) continue;
    auto it = c.latency_ms.find(target.percentile);
    const double limit = target.max_ms > 0 ? target.max_ms : c.target_p95_ms;
    const std::string figure = it == c.latency_ms.end() ? "?" : Ms(it->second);
    const std::string miss =
        c.name + " " + target.percentile + " " + figure + " ms > " + Ms(limit) + " ms";
    if (own_verdict) {
      if (!c.meets_target) return say(miss);
      continue;
    }
    if (it == c.latency_ms.end()) return say(c.name + " has no " + target.percentile);
    if (!(it->second <= limit)) return say(miss);
  }
  if (!found) return say("no QoS class " + target.qos_class + " in summary.json");
  return true;
}

std::string DescribeQosTarget(const QosTarget& target) {
  if (target.percentile == "p95" && target.max_ms == 0 && target.qos_class == "all") {
    return "every QoS class with requests meets its P95 target";
  }
  const std::string who = target.qos_class == "all" ? "every class's" : target.qos_class;
  const std::string limit = target.max_ms > 0 ? Ms(target.max_ms) + " ms" : "its P95 target";
  return who + " end-to-end " + target.percentile + " <= " + limit;
}

Result<SearchResult> RunSearch(const SearchOptions& options,
                               const std::function<void(const SearchPoint&)>& on_point) {
  if (options.by != "accelerators" && options.by != "ranks" && options.by != "users") {
    return Status::InvalidArgument("search --by must be accelerators, ranks or users, not '" +
                                   options.by + "'");
  }
  if (options.by == "users") IOMIMIC_RETURN_IF_ERROR(ValidateQosTarget(options.qos));
  if (options.max == 0) return Status::InvalidArgument("search --max must be at least 1");
  std::error_code ec;
  std::filesystem::create_directories(options.output, ec);
  if (ec) return Status::FromErrno(ec.value(), "cannot create " + options.output);
  SearchResult result;
  std::map<std::uint64_t, bool> tried;
  auto trial = [&](std::uint64_t n) -> Result<bool> {
    if (auto it = tried.find(n); it != tried.end()) return it->second;
    IOMIMIC_ASSIGN_OR_RETURN(const SearchPoint p, Probe(options, n));
    result.points.push_back(p);
    tried[n] = p.held;
    if (on_point) on_point(p);
    return p.held;
  };

  // Doubling, then bisection between the last that held and the first that
  // did not.
  std::uint64_t good = 0, bad = 0;
  for (std::uint64_t n = 1;; n = std::min(options.max, n * 2)) {
    IOMIMIC_ASSIGN_OR_RETURN(const bool held, trial(n));
    if (!held) {
      bad = n;
      break;
    }
    good = n;
    if (n == options.max) {
      result.bounded = true;
      break;
    }
  }
  while (bad != 0 && bad - good > 1) {
    const std::uint64_t mid = good + (bad - good) / 2;
    IOMIMIC_ASSIGN_OR_RETURN(const bool held, trial(mid));
    (held ? good : bad) = mid;
  }
  result.answer = good;
  return result;
}

namespace {

std::string KvTable(const SearchResult& result, const SearchOptions& options) {
  std::ostringstream out;
  char line[512];
  const std::string pct = options.qos.percentile;
  std::snprintf(line, sizeof(line), "%8s %10s %16s %14s %15s %15s %15s  %s\n", "users", "requests",
                "storage tok/s", "wall tok/s", ("inter. " + pct + " ms").c_str(),
                ("resp. " + pct + " ms").c_str(), ("batch " + pct + " ms").c_str(), "meets");
  out << line;
  for (const SearchPoint& p : result.points) {
    std::string cells[3] = {"-", "-", "-"};
    for (const auto& [name, ms] : p.qos_ms) {
      const int i = name == "interactive" ? 0 : name == "responsive" ? 1 : 2;
      if (std::isfinite(ms)) cells[i] = Ms(ms);
    }
    std::snprintf(line, sizeof(line), "%8llu %10.0f %16.1f %14.1f %15s %15s %15s  %s\n",
                  static_cast<unsigned long long>(p.n), p.requests, p.storage_tokens_per_second,
                  p.wall_tokens_per_second, cells[0].c_str(), cells[1].c_str(), cells[2].c_str(),
                  p.held ? "yes" : ("no (" + p.why + ")").c_str());
    out << line;
  }
  std::snprintf(line, sizeof(line), "answer: %llu user(s): %s%s\n",
                static_cast<unsigned long long>(result.answer),
                DescribeQosTarget(options.qos).c_str(),
                result.bounded ? " (the bound of the search; more may)" : "");
  out << line;
  return out.str();
}

}  // namespace

std::string SearchTable(const SearchResult& result, const SearchOptions& options) {
  if (options.by == "users") return KvTable(result, options);
  std::ostringstream out;
  char line[256];
  std::snprintf(line, sizeof(line), "%14s %10s %14s %12s  %s\n", options.by.c_str(), "AU %",
                "samples/s", "MiB/s", "AU >= threshold");
  out << line;
  for (const SearchPoint& p : result.points) {
    std::snprintf(line, sizeof(line), "%14llu %10.2f %14.1f %12.1f  %s\n",
                  static_cast<unsigned long long>(p.n), p.au_percent, p.samples_per_second,
                  p.mib_per_second, p.held ? "yes" : "no");
    out << line;
  }
  std::snprintf(line, sizeof(line), "answer: %llu accelerator(s) keep AU >= %.1f%%%s\n",
                static_cast<unsigned long long>(result.answer), options.min_au_percent,
                result.bounded ? " (the bound of the search; more may)" : "");
  out << line;
  return out.str();
}

std::string SearchCsv(const SearchResult& result, const SearchOptions& options) {
  std::ostringstream out;
  if (options.by == "users") {
    const std::string& pct = options.qos.percentile;
    out << "users,requests,storage_tokens_per_second,wall_tokens_per_second,interactive_" << pct
        << "_ms,responsive_" << pct << "_ms,batch_" << pct << "_ms,held,why,folder\n";
    for (const SearchPoint& p : result.points) {
      std::string cells[3];
      for (const auto& [name, ms] : p.qos_ms) {
        const int i = name == "interactive" ? 0 : name == "responsive" ? 1 : 2;
        if (std::isfinite(ms)) cells[i] = std::to_string(ms);
      }
      out << p.n << ',' << p.requests << ',' << p.storage_tokens_per_second << ','
          << p.wall_tokens_per_second << ',' << cells[0] << ',' << cells[1] << ',' << cells[2]
          << ',' << (p.held ? 1 : 0) << ',' << p.why << ',' << p.folder << '\n';
    }
    return out.str();
  }
  out << "accelerators,au_percent,samples_per_second,MiB_per_second,held,folder\n";
  for (const SearchPoint& p : result.points) {
    out << p.n << ',' << p.au_percent << ',' << p.samples_per_second << ',' << p.mib_per_second
        << ',' << (p.held ? 1 : 0) << ',' << p.folder << '\n';
  }
  return out.str();
}

}  // namespace iomimic::analysis
