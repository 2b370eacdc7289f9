#include "session/cache_honesty.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

namespace iomimic::session {
namespace {

namespace fs = std::filesystem;
constexpr std::uint64_t kNone = std::numeric_limits<std::uint64_t>::max();

// A fake /sys/fs/cgroup and /proc/self/cgroup under a temporary folder.
struct FakeCgroups {
  FakeCgroups() {
    std::string pattern = (fs::temp_directory_path() / "iomimic-cgroup-XXXXXX").string();
    root = ::mkdtemp(pattern.data());
  }
  ~FakeCgroups() { fs::remove_all(root); }
  void Write(const std::string& path, const std::string& text) {
    fs::create_directories(fs::path(root + path).parent_path());
    std::ofstream(root + path) << text;
  }
  std::uint64_t Limit() { return CgroupMemoryLimit(root + "/proc_cgroup", root + "/sys"); }
  std::string root;
};

TEST_CASE("cgroup v2: the smallest memory.max on the path, 'max' being none") {
  FakeCgroups f;
  f.Write("/proc_cgroup", "0::/a/b\n");
  f.Write("/sys/a/b/memory.max", "max\n");
  CHECK(f.Limit() == kNone);
  f.Write("/sys/a/memory.max", "1073741824\n");
  CHECK(f.Limit() == (1u << 30));
  f.Write("/sys/a/b/memory.max", "52428800\n");
  CHECK(f.Limit() == 52428800u);
}

TEST_CASE("cgroup v1: memory.limit_in_bytes of the memory controller's path") {
  FakeCgroups f;
  f.Write("/proc_cgroup", "5:cpu,cpuacct:/x\n4:memory:/jobs/j1\n0::/\n");
  f.Write("/sys/memory/memory.limit_in_bytes", "9223372036854771712\n");
  f.Write("/sys/memory/jobs/j1/memory.limit_in_bytes", "104857600\n");
  f.Write("/sys/cpu,cpuacct/x/memory.limit_in_bytes", "1\n");  // not the memory controller
  CHECK(f.Limit() == 104857600u);
}

TEST_CASE("no cgroup files: no limit") {
  FakeCgroups f;
  CHECK(f.Limit() == kNone);
}

constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;
constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;

// Two ranks on h1 (8 GiB), one on h2 (4 GiB): 12 GiB together.
std::vector<HostMemory> TwoHosts() {
  return {{"h1", 8 * kGiB}, {"h1", 8 * kGiB}, {"h2", 4 * kGiB}};
}

// A training set of `files` files, `bytes` on storage, `nominal` nominally,
// `resident` of it cached at start (measured).
CacheCheck Dataset(std::uint64_t files, std::uint64_t bytes, std::uint64_t nominal,
                   std::uint64_t resident = 0) {
  CacheCheck d;
  d.files = files;
  d.files_measured = files;
  d.dataset_bytes = bytes;
  d.nominal_bytes = nominal;
  d.residency_measured = true;
  d.resident_bytes = resident;
  return d;
}

TEST_CASE("the dataset against the hosts' memory: distinct hosts counted once") {
  CacheCheck small = CompareDatasetToMemory(Dataset(10, 10 * kGiB, 10 * kGiB), TwoHosts());
  CHECK(small.checked);
  CHECK(small.hosts == 2);
  CHECK(small.memory_bytes == 12 * kGiB);
  CHECK(small.fits);
  CHECK(small.warning.find("10.00 GiB") != std::string::npos);
  CHECK(small.warning.find("12.00 GiB") != std::string::npos);
  // The advice in files: 12 GiB at 1 GiB a file takes more than 12.
  CHECK(small.warning.find("dataset.num_files_train above 13 at 1.00 GiB a file") !=
        std::string::npos);
  CacheCheck large = CompareDatasetToMemory(Dataset(13, 13 * kGiB, 13 * kGiB), TwoHosts());
  CHECK_FALSE(large.fits);
  CHECK(large.warning.empty());
}

TEST_CASE("the dataset check compares the bytes on storage, not the nominal ones") {
  // dlrm's parquet files: 64 MiB nominal, 242.6 MiB of files, under a
  // 160 MiB limit. The nominal size fits; the files do not: no warning.
  const std::vector<HostMemory> limited = {{"h1", 160 * kMiB}};
  CacheCheck parquet = CompareDatasetToMemory(Dataset(32, 254413120, 64 * kMiB), limited);
  CHECK_FALSE(parquet.fits);
  CHECK(parquet.warning.empty());
  // Larger than nominal and still fitting: the figures and the advice are
  // the files'.
  CacheCheck fits = CompareDatasetToMemory(Dataset(32, 254413120, 64 * kMiB), TwoHosts());
  CHECK(fits.fits);
  CHECK(fits.warning.find("(242.6 MiB of files, 64.0 MiB nominal)") != std::string::npos);
  CHECK(fits.warning.find("above 1621 at 7.6 MiB a file") != std::string::npos);
}

TEST_CASE("pages cached at start are warned about, whatever the memory limit") {
  // 192 MiB under a 160 MiB cgroup, all of it cached (outside the cgroup).
  const std::vector<HostMemory> limited = {{"h1", 160 * kMiB}};
  CacheCheck cached =
      CompareDatasetToMemory(Dataset(48, 192 * kMiB, 192 * kMiB, 192 * kMiB), limited);
  CHECK_FALSE(cached.fits);
  CHECK(cached.warning.find("100.0% of the training set (192.0 MiB of 192.0 MiB) was in the page "
                            "cache when training started") != std::string::npos);
  // Below the threshold: not warned, still recorded.
  CacheCheck few = CompareDatasetToMemory(Dataset(48, 192 * kMiB, 192 * kMiB, kMiB), limited);
  CHECK(few.warning.empty());
  CHECK(few.resident_fraction() == doctest::Approx(1.0 / 192));
  // A sample says so.
  CacheCheck sampled = Dataset(1000, 192 * kMiB, 192 * kMiB, 96 * kMiB);
  sampled.files_measured = 256;
  CHECK(CompareDatasetToMemory(sampled, limited).warning.find("from 256 of 1000 files") !=
        std::string::npos);
  // Both: the residency first, then the fit.
  CacheCheck both = CompareDatasetToMemory(Dataset(3, 3 * kMiB, 3 * kMiB, 3 * kMiB), TwoHosts());
  CHECK(both.warning.find("was in the page cache when training started") <
        both.warning.find("fits in the memory"));
  // No client page cache (object storage): recorded, never warned.
  CacheCheck objects = Dataset(3, 3 * kMiB, 3 * kMiB, 3 * kMiB);
  objects.client_cache = false;
  CHECK(CompareDatasetToMemory(objects, TwoHosts()).warning.empty());
}

TEST_CASE("an even sample of file indices") {
  CHECK(SampleIndices(10, 4) == std::vector<std::uint64_t>{0, 2, 5, 7});
  CHECK(SampleIndices(3, 256) == std::vector<std::uint64_t>{0, 1, 2});
  CHECK(SampleIndices(0, 256).empty());
  const std::uint64_t huge = std::numeric_limits<std::uint64_t>::max() - 7;
  const std::vector<std::uint64_t> far = SampleIndices(huge, 256);
  REQUIRE(far.size() == 256);
  CHECK(far[1] == huge / 256);  // no wrap in j * n
  CHECK(far.back() < huge);
}

TEST_CASE("percentages are 0.0 and 100.0 only for none and all") {
  CHECK(Percent(0, 100) == "0.0%");
  CHECK(Percent(100, 100) == "100.0%");
  CHECK(Percent(1, 1000000) == "0.1%");
  CHECK(Percent(999999, 1000000) == "99.9%");
  CHECK(Percent(375, 1000) == "37.5%");
  CHECK(Percent(0, 0) == "0.0%");
}

ResidencyTotals Totals(int ranks, int measured, std::uint64_t bytes, std::uint64_t resident) {
  ResidencyTotals t;
  t.ranks = ranks;
  t.ranks_measured = measured;
  t.bytes = bytes;
  t.resident_bytes = resident;
  t.why_not = measured < ranks ? "no such file" : "";
  return t;
}

TEST_CASE("a checkpoint read's label comes from the measurement") {
  CHECK(CheckpointReadLabel(Totals(2, 2, 100, 100), "later invocation") ==
        "warm: 100.0% of the bytes were in the page cache (later invocation)");
  CHECK(CheckpointReadLabel(Totals(2, 2, 100, 0), "page cache dropped, later invocation") ==
        "cold: 0.0% of the bytes were in the page cache (page cache dropped, later invocation)");
  CHECK(CheckpointReadLabel(Totals(2, 2, 1000, 375), "") ==
        "partly warm: 37.5% of the bytes were in the page cache");
  CHECK(CheckpointReadLabel(Totals(2, 0, 0, 0), "later invocation") ==
        "not measured (no such file) (later invocation)");
  // A rank that could not measure: never "cold", even if the others found
  // nothing.
  const std::string part = ResidencyVerdict(Totals(4, 3, 300, 0));
  CHECK(part ==
        "not measured on 1 of 4 ranks (no such file); the others found 0.0% of their "
        "bytes in the page cache");
  // Loads together: the bytes add, a rank unmeasured in one counts.
  const ResidencyTotals both = AddResidency(Totals(4, 4, 100, 100), Totals(4, 3, 100, 0));
  CHECK(both.ranks == 4);
  CHECK(both.ranks_measured == 3);
  CHECK(both.resident_bytes == 100);
  CHECK(both.bytes == 200);
  CHECK(AddResidency(ResidencyTotals{}, Totals(2, 2, 5, 5)).bytes == 5);
}

// A file of `size` bytes under a temporary folder, removed at the end.
struct TempFile {
  explicit TempFile(std::uint64_t size) {
    std::string pattern = (fs::temp_directory_path() / "iomimic-residency-XXXXXX").string();
    dir = ::mkdtemp(pattern.data());
    path = dir + "/data";
    std::ofstream out(path, std::ios::binary);
    const std::string block(4096, 'x');
    for (std::uint64_t left = size; left > 0;) {
      const std::uint64_t n = std::min<std::uint64_t>(left, block.size());
      out.write(block.data(), static_cast<std::streamsize>(n));
      left -= n;
    }
  }
  ~TempFile() { fs::remove_all(dir); }
  // Written back and dropped from the page cache (tmpfs keeps its pages).
  bool Drop() const {
    const int fd = ::open(path.c_str(), O_RDONLY);
    ::fsync(fd);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    struct statfs fs {};
    const bool tmpfs = ::fstatfs(fd, &fs) == 0 && fs.f_type == 0x01021994;
    ::close(fd);
    return !tmpfs;
  }
  // Reads the first `bytes` bytes, which caches them.
  void Read(std::uint64_t bytes) const {
    std::ifstream in(path, std::ios::binary);
    std::vector<char> buffer(static_cast<std::size_t>(bytes));
    in.read(buffer.data(), static_cast<std::streamsize>(bytes));
  }
  std::string dir;
  std::string path;
};

// Both kernel methods on `path` (cachestat skipped where the kernel lacks
// it): each lies in [low, high], and they agree when those are equal.
// (Pages that read-ahead is still reading are in the page cache for
// cachestat but not yet up to date for mincore.)
void CheckResident(const std::string& path, std::uint64_t size, std::uint64_t low,
                   std::uint64_t high) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  Result<std::uint64_t> by_mincore = ResidentBytesByMincore(fd, size);
  Result<std::uint64_t> by_cachestat = ResidentBytesByCachestat(fd, size);
  ::close(fd);
  REQUIRE(by_mincore.ok());
  CHECK(*by_mincore >= low);
  CHECK(*by_mincore <= high);
  if (by_cachestat.ok()) {
    CHECK(*by_cachestat >= low);
    CHECK(*by_cachestat <= high);
  } else {
    CHECK(by_cachestat.status().code() == StatusCode::kNotSupported);
  }
}

TEST_CASE("residency: what a read leaves in the page cache, a drop removes") {
  const std::uint64_t size = 2 * kMiB + 100;  // a partial last page
  TempFile f(size);
  f.Read(size);
  CheckResident(f.path, size, size, size);
  metrics::PageResidency all = MeasureResidency({f.path, f.path});
  CHECK(all.measured);
  CHECK(all.files == 2);
  CHECK(all.bytes == 2 * size);
  CHECK(all.resident_bytes == 2 * size);
  if (!f.Drop()) {
    MESSAGE("tmpfs keeps its pages: the cold half is skipped");
    return;
  }
  CheckResident(f.path, size, 0, 0);
  CHECK(MeasureResidency({f.path}).resident_bytes == 0);
  f.Read(kMiB);  // the first half, and maybe some read-ahead
  CheckResident(f.path, size, kMiB, size);
}

TEST_CASE("residency: all or nothing, naming the file that cannot be measured") {
  TempFile f(4096);
  const std::string missing = f.dir + "/missing";
  metrics::PageResidency r = MeasureResidency({f.path, missing});
  CHECK_FALSE(r.measured);
  CHECK(r.bytes == 0);
  CHECK(r.why_not.find(missing) != std::string::npos);
  metrics::PageResidency folder = MeasureResidency({f.dir});
  CHECK_FALSE(folder.measured);
  CHECK(folder.why_not.find("not a regular file") != std::string::npos);
  metrics::PageResidency none = MeasureResidency({});
  CHECK(none.measured);
  CHECK(none.bytes == 0);
}

}  // namespace
}  // namespace iomimic::session
