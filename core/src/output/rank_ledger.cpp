#include "output/rank_ledger.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "output/model.h"
#include "output/writers.h"

namespace iomimic::output {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

json Finite(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

std::string RecordPath(const std::string& folder, int rank) {
  return folder + "/" + kRankFolder + "/" + std::to_string(rank) + ".json";
}

json RecordJson(const RankRecord& r) {
  json o;
  o["rank"] = r.rank;
  o["ranks"] = r.ranks;
  o["host"] = r.host;
  o["pid"] = r.pid;
  o["state"] = r.state;
  if (!r.signal.empty()) o["signal"] = r.signal;
  if (!r.error.empty()) o["error"] = r.error;
  o["updated"] = r.updated;
  json accs = json::array();
  for (const RankRecord::Accelerator& a : r.accelerators) {
    json epochs = json::array();
    for (const RankEpoch& e : a.epochs) {
      epochs.push_back({{"epoch", e.epoch},
                        {"partial", e.partial},
                        {"seconds", Finite(e.seconds)},
                        {"steps", e.steps},
                        {"au_percent", Finite(e.au_percent)},
                        {"samples_per_second", Finite(e.samples_per_second)},
                        {"bytes_read", e.bytes_read}});
    }
    accs.push_back({{"id", a.id}, {"epochs", epochs}});
  }
  o["accelerators"] = accs;
  return o;
}

template <typename T>
T Value(const json& o, const char* key, T fallback) {
  auto it = o.find(key);
  if (it == o.end() || it->is_null()) return fallback;
  if constexpr (std::is_same_v<T, std::string>) {
    return it->is_string() ? it->template get<std::string>() : fallback;
  } else if constexpr (std::is_same_v<T, bool>) {
    return it->is_boolean() ? it->template get<bool>() : fallback;
  } else {
    return it->is_number() ? it->template get<T>() : fallback;
  }
}

RankRecord RecordFromJson(const json& o) {
  RankRecord r;
  r.rank = Value<int>(o, "rank", -1);
  r.ranks = Value<int>(o, "ranks", 0);
  r.host = Value<std::string>(o, "host", "");
  r.pid = Value<long>(o, "pid", 0);
  r.state = Value<std::string>(o, "state", "");
  r.signal = Value<std::string>(o, "signal", "");
  r.error = Value<std::string>(o, "error", "");
  r.updated = Value<std::string>(o, "updated", "");
  auto accs = o.find("accelerators");
  if (accs == o.end() || !accs->is_array()) return r;
  for (const json& a : *accs) {
    if (!a.is_object()) continue;
    RankRecord::Accelerator acc;
    acc.id = Value<int>(a, "id", r.rank);
    auto epochs = a.find("epochs");
    if (epochs != a.end() && epochs->is_array()) {
      for (const json& e : *epochs) {
        if (!e.is_object()) continue;
        RankEpoch re;
        re.epoch = Value<std::uint64_t>(e, "epoch", 0);
        re.partial = Value<bool>(e, "partial", false);
        re.seconds = Value<double>(e, "seconds", 0.0);
        re.steps = Value<std::uint64_t>(e, "steps", 0);
        re.au_percent = Value<double>(e, "au_percent", std::nan(""));
        re.samples_per_second = Value<double>(e, "samples_per_second", std::nan(""));
        re.bytes_read = Value<std::uint64_t>(e, "bytes_read", 0);
        acc.epochs.push_back(re);
      }
    }
    r.accelerators.push_back(std::move(acc));
  }
  return r;
}

RankEpoch SummarizeEpoch(const metrics::EpochRecord& e, const config::Config& config) {
  RankEpoch out;
  out.epoch = e.epoch;
  out.partial = e.partial;
  out.seconds = metrics::Seconds(e.start, e.end);
  const metrics::EpochMetrics m = metrics::ComputeEpochMetrics(e, config);
  out.steps = m.train.steps;
  out.au_percent = m.train.au_percent;
  out.samples_per_second = m.train.samples_per_second;
  for (const metrics::PhaseRecord& b : e.blocks) out.bytes_read += b.bytes_read;
  return out;
}

}  // namespace

Result<RankRecord> ReadRankRecord(const std::string& folder, int rank) {
  const std::string path = RecordPath(folder, rank);
  std::ifstream in(path);
  if (!in) return Status::NotFound("no " + path);
  std::ostringstream text;
  text << in.rdbuf();
  const json parsed = json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    return Status::Corruption(path + " is not a rank record (JSON object)");
  }
  return RecordFromJson(parsed);
}

std::vector<RankRecord> ReadRankRecords(const std::string& folder) {
  std::vector<RankRecord> out;
  std::error_code ec;
  for (fs::directory_iterator it(folder + "/" + kRankFolder, ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() < 6 || name.compare(name.size() - 5, 5, ".json") != 0) continue;
    const std::string digits = name.substr(0, name.size() - 5);
    if (digits.empty() ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      continue;
    }
    Result<RankRecord> r = ReadRankRecord(folder, std::stoi(digits));
    if (r.ok()) out.push_back(std::move(r).value());
  }
  std::sort(out.begin(), out.end(),
            [](const RankRecord& a, const RankRecord& b) { return a.rank < b.rank; });
  return out;
}

std::vector<int> SilentRanks(const std::string& folder, int ranks) {
  std::vector<int> silent;
  for (int r = 0; r < ranks; ++r) {
    Result<RankRecord> record = ReadRankRecord(folder, r);
    if (!record.ok() || record->state == "running" || record->state == "cut_off") {
      silent.push_back(r);
    }
  }
  return silent;
}

RankLedger::RankLedger(std::string folder, const config::Config& config, int rank, int ranks,
                       std::string host, double checkpoint_gib)
    : folder_(std::move(folder)), config_(config), checkpoint_gib_(checkpoint_gib) {
  record_.rank = rank;
  record_.ranks = ranks;
  record_.host = std::move(host);
  record_.pid = static_cast<long>(::getpid());
  record_.state = "running";
}

Status RankLedger::Start() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::error_code ec;
  const std::string dir = folder_ + "/" + kRankFolder;
  // Not create_directories: on a host that cannot see the run folder it
  // would make one of its own that rank 0 never reads.
  if (!fs::create_directory(dir, ec) && ec) {
    return Status::FromErrno(ec.value(), "cannot create " + dir);
  }
  started_ = true;
  return WriteRecordLocked();
}

Status RankLedger::EpochsSoFar(int id, const std::vector<metrics::EpochRecord>& epochs) {
  std::lock_guard<std::mutex> lock(mutex_);
  IOMIMIC_RETURN_IF_ERROR(
      WriteTextFile(folder_ + "/" + std::to_string(id) + "_per_epoch_stats.json",
                    PerEpochStatsText(epochs, checkpoint_gib_)));
  auto it = std::find_if(record_.accelerators.begin(), record_.accelerators.end(),
                         [id](const RankRecord::Accelerator& a) { return a.id == id; });
  if (it == record_.accelerators.end()) {
    record_.accelerators.push_back({id, {}});
    it = record_.accelerators.end() - 1;
  }
  // Only the epochs not yet summarised: O(1) per epoch.
  for (std::size_t i = it->epochs.size(); i < epochs.size(); ++i) {
    it->epochs.push_back(SummarizeEpoch(epochs[i], config_));
  }
  return started_ ? WriteRecordLocked() : Status::OK();
}

Status RankLedger::Stopped(const std::string& state, const char* signal, const std::string& error) {
  std::lock_guard<std::mutex> lock(mutex_);
  record_.state = state;
  if (signal != nullptr) record_.signal = signal;
  if (!error.empty()) record_.error = error;
  return started_ ? WriteRecordLocked() : Status::OK();
}

std::string RankLedger::state() {
  std::lock_guard<std::mutex> lock(mutex_);
  return record_.state;
}

Status RankLedger::WriteRecordLocked() {
  record_.updated = Timestamp(std::chrono::system_clock::now());
  return WriteTextFile(
      RecordPath(folder_, record_.rank),
      RecordJson(record_).dump(-1, ' ', false, json::error_handler_t::replace) + "\n");
}

}  // namespace iomimic::output
