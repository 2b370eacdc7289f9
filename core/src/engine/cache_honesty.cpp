#include "engine/cache_honesty.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include "metrics/host_info.h"

namespace iomimic::engine {
namespace {

constexpr std::uint64_t kNoLimit = std::numeric_limits<std::uint64_t>::max();

// A limit file's value: a number, or "max" (v2) for none.
std::uint64_t ReadLimit(const std::string& path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text == "max") return kNoLimit;
  unsigned long long value = 0;
  if (std::sscanf(text.c_str(), "%llu", &value) != 1 || value == 0) return kNoLimit;
  return static_cast<std::uint64_t>(value);
}

// The smallest limit of `file` in `dir` + `path` and each of its ancestors.
std::uint64_t SmallestOnPath(const std::string& dir, std::string path, const std::string& file) {
  std::uint64_t smallest = kNoLimit;
  for (;;) {
    while (path.size() > 1 && path.back() == '/') path.pop_back();
    const std::string folder = path == "/" || path.empty() ? dir : dir + path;
    smallest = std::min(smallest, ReadLimit(folder + "/" + file));
    if (path == "/" || path.empty()) return smallest;
    path = path.substr(0, path.rfind('/'));
  }
}

bool ListsController(const std::string& controllers, const std::string& name) {
  std::stringstream list(controllers);
  std::string one;
  while (std::getline(list, one, ',')) {
    if (one == name) return true;
  }
  return false;
}

// "%.2f GiB", or MiB below 1 GiB.
std::string GiB(std::uint64_t bytes) {
  char text[32];
  const double b = static_cast<double>(bytes);
  if (bytes < (1u << 30)) {
    std::snprintf(text, sizeof(text), "%.1f MiB", b / (1u << 20));
  } else {
    std::snprintf(text, sizeof(text), "%.2f GiB", b / (1u << 30));
  }
  return text;
}

}  // namespace

std::uint64_t CgroupMemoryLimit(const std::string& proc_cgroup, const std::string& cgroup_root) {
  std::ifstream in(proc_cgroup);
  std::string line;
  std::uint64_t limit = kNoLimit;
  // Lines are "ID:CONTROLLERS:PATH"; v2's is "0::PATH".
  while (std::getline(in, line)) {
    const std::size_t first = line.find(':');
    const std::size_t second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    if (controllers.empty()) {
      for (const char* dir : {"", "/unified"}) {
        limit = std::min(limit, SmallestOnPath(cgroup_root + dir, path, "memory.max"));
      }
    } else if (ListsController(controllers, "memory")) {
      limit =
          std::min(limit, SmallestOnPath(cgroup_root + "/memory", path, "memory.limit_in_bytes"));
    }
  }
  return limit;
}

std::uint64_t MeminfoBytes(const char* key) {
  // The reader DLIO's host_meminfo uses (metrics/host_info.h).
  const std::map<std::string, std::string> meminfo =
      metrics::ReadKeyValues("/proc/meminfo", /*skip_processor=*/false);
  const auto it = meminfo.find(key);
  unsigned long long kib = 0;
  if (it == meminfo.end() || std::sscanf(it->second.c_str(), "%llu kB", &kib) != 1) return 0;
  return static_cast<std::uint64_t>(kib) * 1024;
}

std::uint64_t HostMemoryBytes() {
  const std::uint64_t total = MeminfoBytes("MemTotal");
  const std::uint64_t limit = CgroupMemoryLimit();
  if (total == 0) return limit == kNoLimit ? 0 : limit;
  return std::min(total, limit);
}

CacheCheck CompareDatasetToMemory(std::uint64_t dataset_bytes,
                                  const std::vector<HostMemory>& ranks) {
  std::map<std::string, std::uint64_t> hosts;
  for (const HostMemory& r : ranks) hosts[r.host] = std::max(hosts[r.host], r.bytes);
  CacheCheck check;
  check.checked = true;
  check.dataset_bytes = dataset_bytes;
  check.hosts = static_cast<int>(hosts.size());
  for (const auto& [host, bytes] : hosts) check.memory_bytes += bytes;
  check.fits = dataset_bytes <= check.memory_bytes;
  if (check.fits) {
    check.warning = "the training set (" + GiB(dataset_bytes) + ") fits in the memory of the " +
                    std::to_string(check.hosts) + " host(s) (" + GiB(check.memory_bytes) +
                    " together, MemTotal or the cgroup's limit on each): from the second epoch "
                    "on its reads may come from the page cache, not the storage; make the "
                    "dataset larger than " +
                    GiB(check.memory_bytes) +
                    " (dataset.num_files_train; mlpstorage asks for 5x the hosts' memory) or "
                    "limit the hosts' memory";
  }
  return check;
}

CacheCheck CheckDatasetAgainstMemory(const config::Config& c, cluster::Cluster& cluster,
                                     bool client_cache) {
  if (!c.workflow.train) return CacheCheck{};
  const std::uint64_t dataset = c.dataset.num_files_train *
                                std::max<std::uint64_t>(1, c.dataset.num_samples_per_file) *
                                c.dataset.record_length_bytes;
  const std::vector<std::string> names = cluster.AllGatherStrings(cluster.hostname());
  const std::vector<std::string> memory =
      cluster.AllGatherStrings(std::to_string(HostMemoryBytes()));
  std::vector<HostMemory> ranks(names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    ranks[i].host = names[i];
    ranks[i].bytes = std::stoull(memory[i]);
  }
  CacheCheck check = CompareDatasetToMemory(dataset, ranks);
  check.client_cache = client_cache;
  if (!client_cache) check.warning.clear();
  return check;
}

}  // namespace iomimic::engine
