#include "session/cache_honesty.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include "iomimic/file_system.h"
#include "metrics/host_info.h"
#include "plan/plan.h"
#include "session/session.h"

namespace iomimic::session {
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

// cachestat(2) (Linux 6.5): its number is 451 in the generic table and on
// x86-64; the C library's headers may predate it.
#if defined(__NR_cachestat)
constexpr long kCachestatCall = __NR_cachestat;
#elif defined(__x86_64__) || defined(__aarch64__) || defined(__riscv)
constexpr long kCachestatCall = 451;
#else
constexpr long kCachestatCall = -1;
#endif

// The kernel's struct cachestat_range and struct cachestat (linux/mman.h).
struct CachestatRange {
  std::uint64_t off = 0;
  std::uint64_t len = 0;  // 0: to the end of the file
};
struct CachestatCounts {
  std::uint64_t nr_cache = 0;
  std::uint64_t nr_dirty = 0;
  std::uint64_t nr_writeback = 0;
  std::uint64_t nr_evicted = 0;
  std::uint64_t nr_recently_evicted = 0;
};

std::uint64_t PageBytes() { return static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE)); }

// Pages of `fd` cached in [off, off + len), or -errno.
long long CachedPages(int fd, std::uint64_t off, std::uint64_t len) {
  if (kCachestatCall < 0) return -ENOSYS;
  CachestatRange range{off, len};
  CachestatCounts counts;
  if (::syscall(kCachestatCall, fd, &range, &counts, 0) != 0) return -errno;
  return static_cast<long long>(counts.nr_cache);
}

// Whether mincore(2) will report `st`'s page cache to this process (Linux
// 5.2's can_do_mincore: the owner, CAP_FOWNER, or write permission).
bool MincoreTellsCache(const struct stat& st) {
  const uid_t me = ::geteuid();
  if (me == 0 || st.st_uid == me) return true;
  if ((st.st_mode & S_IWOTH) != 0) return true;
  return (st.st_mode & S_IWGRP) != 0 && st.st_gid == ::getegid();
}

// One file's size and resident bytes.
struct FileResidency {
  std::uint64_t size = 0;
  std::uint64_t resident = 0;
};

Result<FileResidency> MeasureFile(const std::string& path) {
  const int fd = OpenRetrying(path, O_RDONLY);
  if (fd < 0) return Status::FromErrno(errno, "opening " + path);
  FileResidency file;
  IOMIMIC_RETURN_IF_ERROR(CheckRegularFile(fd, path, &file.size));  // closes fd on error
  Result<std::uint64_t> resident = ResidentBytesByCachestat(fd, file.size);
  if (!resident.ok() && resident.status().code() == StatusCode::kNotSupported) {
    resident = ResidentBytesByMincore(fd, file.size);
  }
  ::close(fd);
  if (!resident.ok()) return resident.status().WithContext(path);
  file.resident = *resident;
  return file;
}

// "%.1f%%" of part / whole, without rounding to 0 or 100 what is neither.
std::string PercentOf(double part, double whole) {
  double percent = whole > 0 ? 100.0 * part / whole : 0.0;
  if (part > 0 && percent < 0.1) percent = 0.1;
  if (part < whole && percent > 99.9) percent = 99.9;
  char text[16];
  std::snprintf(text, sizeof(text), "%.1f%%", percent);
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

Result<std::uint64_t> ResidentBytesByCachestat(int fd, std::uint64_t size) {
  const std::uint64_t page = PageBytes();
  const std::uint64_t whole = size / page;  // full pages
  const std::uint64_t tail = size % page;   // bytes of the last, partial page
  std::uint64_t resident = 0;
  if (whole > 0) {
    const long long pages = CachedPages(fd, 0, whole * page);
    if (pages < 0) {
      const int err = static_cast<int>(-pages);
      if (err == ENOSYS || err == EPERM) return Status::NotSupported("no cachestat(2)");
      return Status::FromErrno(err, "cachestat");
    }
    resident = std::min<std::uint64_t>(static_cast<std::uint64_t>(pages), whole) * page;
  }
  if (tail > 0) {
    const long long pages = CachedPages(fd, whole * page, page);
    if (pages < 0) return Status::FromErrno(static_cast<int>(-pages), "cachestat");
    if (pages > 0) resident += tail;
  }
  return resident;
}

Result<std::uint64_t> ResidentBytesByMincore(int fd, std::uint64_t size) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return Status::FromErrno(errno, "fstat");
  if (!MincoreTellsCache(st)) {
    return Status::NotSupported(
        "mincore(2) tells a file's page cache only to its owner or a writer (and this kernel "
        "has no cachestat(2))");
  }
  if (size == 0) return std::uint64_t{0};
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) return Status::FromErrno(errno, "mapping the file");
  const std::uint64_t page = PageBytes();
  const std::uint64_t pages = (size + page - 1) / page;
  constexpr std::uint64_t kPagesPerCall = 1u << 18;
  std::vector<unsigned char> status(static_cast<std::size_t>(std::min(pages, kPagesPerCall)));
  std::uint64_t resident = 0;
  Status error;
  for (std::uint64_t first = 0; first < pages && error.ok(); first += kPagesPerCall) {
    const std::uint64_t n = std::min(kPagesPerCall, pages - first);
    if (::mincore(static_cast<char*>(map) + first * page, n * page, status.data()) != 0) {
      error = Status::FromErrno(errno, "mincore");
      break;
    }
    for (std::uint64_t i = 0; i < n; ++i) {
      if ((status[i] & 1) == 0) continue;
      const std::uint64_t start = (first + i) * page;
      resident += std::min(page, size - start);
    }
  }
  ::munmap(map, size);
  if (!error.ok()) return error;
  return resident;
}

metrics::PageResidency MeasureResidency(const std::vector<std::string>& paths) {
  metrics::PageResidency r;
  for (const std::string& path : paths) {
    Result<FileResidency> file = MeasureFile(path);
    if (!file.ok()) {
      r = metrics::PageResidency{};
      r.why_not = file.status().message();
      return r;
    }
    ++r.files;
    r.bytes += file->size;
    r.resident_bytes += file->resident;
  }
  r.measured = true;
  return r;
}

double ResidencyTotals::fraction() const {
  return bytes > 0 ? static_cast<double>(resident_bytes) / static_cast<double>(bytes) : 0.0;
}

ResidencyTotals SumResidency(const metrics::PageResidency& mine, cluster::Cluster& cluster) {
  const std::vector<std::uint64_t> sums =
      cluster.SumU64s({mine.measured ? 1u : 0u, mine.measured ? mine.files : 0,
                       mine.measured ? mine.bytes : 0, mine.measured ? mine.resident_bytes : 0});
  ResidencyTotals t;
  t.ranks = cluster.size();
  t.ranks_measured = static_cast<int>(sums[0]);
  t.files = sums[1];
  t.bytes = sums[2];
  t.resident_bytes = sums[3];
  if (t.ranks_measured < t.ranks) {
    // Every rank knows that some rank could not measure: the gather is
    // called on all of them or none.
    for (const std::string& why : cluster.AllGatherStrings(mine.measured ? "" : mine.why_not)) {
      if (!why.empty()) {
        t.why_not = why;
        break;
      }
    }
  }
  return t;
}

ResidencyTotals AddResidency(const ResidencyTotals& a, const ResidencyTotals& b) {
  if (a.ranks == 0) return b;
  if (b.ranks == 0) return a;
  ResidencyTotals t;
  t.ranks = std::max(a.ranks, b.ranks);
  t.ranks_measured = std::min(a.ranks_measured, b.ranks_measured);
  t.files = a.files + b.files;
  t.bytes = a.bytes + b.bytes;
  t.resident_bytes = a.resident_bytes + b.resident_bytes;
  t.why_not = a.why_not.empty() ? b.why_not : a.why_not;
  return t;
}

std::string Percent(std::uint64_t part, std::uint64_t whole) {
  return PercentOf(static_cast<double>(part), static_cast<double>(whole));
}

std::string ResidencyVerdict(const ResidencyTotals& t) {
  const std::string found = Percent(t.resident_bytes, t.bytes);
  if (t.ranks_measured == 0) return "not measured (" + t.why_not + ")";
  if (!t.all_measured()) {
    return "not measured on " + std::to_string(t.ranks - t.ranks_measured) + " of " +
           std::to_string(t.ranks) + " ranks (" + t.why_not + "); the others found " + found +
           " of their bytes in the page cache";
  }
  const char* verdict = t.resident_bytes == 0         ? "cold"
                        : t.resident_bytes == t.bytes ? "warm"
                                                      : "partly warm";
  return std::string(verdict) + ": " + found + " of the bytes were in the page cache";
}

std::string CheckpointReadLabel(const ResidencyTotals& totals, const std::string& conditions) {
  std::string label = ResidencyVerdict(totals);
  if (!conditions.empty()) label += " (" + conditions + ")";
  return label;
}

std::vector<std::uint64_t> SampleIndices(std::uint64_t n, std::uint64_t k) {
  std::vector<std::uint64_t> out;
  if (k >= n) k = n;
  out.reserve(static_cast<std::size_t>(k));
  // Index j of k: floor(j * n / k) = j * q + floor(j * r / k) with n = q * k
  // + r, so that j * n cannot wrap (j * r < k * k, and k stays far below
  // 2^32: callers sample a few hundred files).
  const std::uint64_t q = k > 0 ? n / k : 0;
  const std::uint64_t r = k > 0 ? n % k : 0;
  for (std::uint64_t j = 0; j < k; ++j) out.push_back(j * q + j * r / k);
  return out;
}

double CacheCheck::resident_fraction() const {
  return dataset_bytes > 0
             ? static_cast<double>(resident_bytes) / static_cast<double>(dataset_bytes)
             : 0.0;
}

namespace {

// The training set fits in the hosts' memory: from the second epoch on.
std::string FitsWarning(const CacheCheck& check) {
  const std::uint64_t per_file = check.files > 0 ? check.dataset_bytes / check.files : 0;
  const std::uint64_t files_needed =
      per_file > 0 ? check.memory_bytes / per_file + 1 : check.files + 1;
  return "the training set (" + GiB(check.dataset_bytes) + " of files" +
         (check.dataset_bytes != check.nominal_bytes ? ", " + GiB(check.nominal_bytes) + " nominal"
                                                     : std::string()) +
         ") fits in the memory of the " + std::to_string(check.hosts) + " host(s) (" +
         GiB(check.memory_bytes) +
         " together, MemTotal or the cgroup's limit on each): from the second epoch on its "
         "reads may come from the page cache, not the storage; make the training files larger "
         "than " +
         GiB(check.memory_bytes) + " together (dataset.num_files_train above " +
         std::to_string(files_needed) + " at " + GiB(per_file) +
         " a file; mlpstorage asks for 5x the hosts' memory) or limit the hosts' memory";
}

// Part of the training set was in the page cache at start: from the first
// epoch on, whatever the memory limit.
std::string ResidentWarning(const CacheCheck& check) {
  return Percent(check.resident_bytes, check.dataset_bytes) + " of the training set (" +
         GiB(check.resident_bytes) + " of " + GiB(check.dataset_bytes) +
         (check.sampled() ? ", from " + std::to_string(check.files_measured) + " of " +
                                std::to_string(check.files) + " files"
                          : std::string()) +
         ") was in the page cache when training started (left by the generation or an earlier "
         "run; pages cached outside this run's cgroup do not count against its memory limit): "
         "those reads may come from memory, not the storage; drop the page cache first (sync; "
         "echo 1 > /proc/sys/vm/drop_caches as root on each host)";
}

}  // namespace

CacheCheck CompareDatasetToMemory(CacheCheck dataset, const std::vector<HostMemory>& ranks) {
  std::map<std::string, std::uint64_t> hosts;
  for (const HostMemory& r : ranks) hosts[r.host] = std::max(hosts[r.host], r.bytes);
  CacheCheck check = std::move(dataset);
  check.checked = true;
  check.hosts = static_cast<int>(hosts.size());
  check.memory_bytes = 0;
  for (const auto& [host, bytes] : hosts) check.memory_bytes += bytes;
  check.fits = check.dataset_bytes <= check.memory_bytes;
  check.warning.clear();
  if (!check.client_cache) return check;
  std::vector<std::string> parts;
  if (check.residency_measured && check.dataset_bytes > 0 &&
      check.resident_fraction() >= kResidentWarningFraction) {
    parts.push_back(ResidentWarning(check));
  }
  if (check.fits) parts.push_back(FitsWarning(check));
  for (const std::string& part : parts)
    check.warning += (check.warning.empty() ? "" : "; and ") + part;
  return check;
}

namespace {

// This rank's share of the even sample of training files, every
// `cluster.size()`-th from its rank on: the sizes of those it could stat
// (through the back end itself, outside the run's counters) and, with a
// client page cache, their residency. Returns {files stat'ed, their bytes}.
std::pair<std::uint64_t, std::uint64_t> MeasureMyShare(Session& session, bool client_cache,
                                                       metrics::PageResidency* residency) {
  const plan::DatasetLayout& layout = session.layout();
  const cluster::Cluster& cluster = session.cluster();
  const std::uint64_t most = session.config().iomimic.cache_check_files;
  const std::vector<std::uint64_t> sample =
      SampleIndices(layout.num_files(plan::Split::kTrain), most);
  std::vector<std::string> paths;
  std::uint64_t files = 0, bytes = 0;
  for (std::size_t j = static_cast<std::size_t>(cluster.rank()); j < sample.size();
       j += static_cast<std::size_t>(cluster.size())) {
    const std::string path = layout.FilePath(plan::Split::kTrain, sample[j]);
    Result<FileInfo> info = session.storage().uncounted().Stat(path);
    if (!info.ok() || info->is_directory) continue;
    ++files;
    bytes += info->size;
    paths.push_back(path);
  }
  if (most == 0) {
    residency->why_not = "iomimic.cache_check_files is 0";
  } else if (client_cache) {
    *residency = MeasureResidency(paths);
  } else {
    residency->why_not = "object storage: its reads do not go through this host's page cache";
  }
  return {files, bytes};
}

}  // namespace

CacheCheck CheckDatasetAgainstMemory(Session& session) {
  const config::Config& c = session.config();
  cluster::Cluster& cluster = session.cluster();
  if (!c.workflow.train) return CacheCheck{};
  CacheCheck dataset;
  dataset.client_cache = !session.storage().capabilities().objects;
  dataset.files = session.layout().num_files(plan::Split::kTrain);
  dataset.nominal_bytes = dataset.files *
                          std::max<std::uint64_t>(1, c.dataset.num_samples_per_file) *
                          c.dataset.record_length_bytes;
  metrics::PageResidency mine;
  const auto [files, bytes] = MeasureMyShare(session, dataset.client_cache, &mine);
  const std::vector<std::uint64_t> stat = cluster.SumU64s({files, bytes});
  const ResidencyTotals residency = SumResidency(mine, cluster);
  dataset.files_measured = stat[0];
  // The sample's mean file size times the files (exact when all were
  // measured); the nominal size when none could be stat'ed.
  dataset.dataset_bytes =
      stat[0] == 0
          ? dataset.nominal_bytes
          : static_cast<std::uint64_t>(static_cast<double>(stat[1]) / static_cast<double>(stat[0]) *
                                           static_cast<double>(dataset.files) +
                                       0.5);
  if (stat[0] == dataset.files) dataset.dataset_bytes = stat[1];
  dataset.residency_measured = residency.all_measured();
  dataset.residency_why_not = residency.why_not;
  if (dataset.residency_measured) {
    dataset.resident_bytes = static_cast<std::uint64_t>(
        residency.fraction() * static_cast<double>(dataset.dataset_bytes) + 0.5);
    if (residency.bytes > 0 && residency.bytes == residency.resident_bytes) {
      dataset.resident_bytes = dataset.dataset_bytes;  // all, not a rounding of it
    }
  }
  const std::vector<std::string> names = cluster.AllGatherStrings(cluster.hostname());
  const std::vector<std::string> memory =
      cluster.AllGatherStrings(std::to_string(HostMemoryBytes()));
  std::vector<HostMemory> ranks(names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    ranks[i].host = names[i];
    ranks[i].bytes = std::stoull(memory[i]);
  }
  return CompareDatasetToMemory(std::move(dataset), ranks);
}

}  // namespace iomimic::session
