#include "engine/cache_honesty.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

namespace iomimic::engine {
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

TEST_CASE("the dataset against the hosts' memory: distinct hosts counted once") {
  const std::uint64_t gib = std::uint64_t{1} << 30;
  // Two ranks on h1 (8 GiB), one on h2 (4 GiB): 12 GiB together.
  std::vector<HostMemory> ranks = {{"h1", 8 * gib}, {"h1", 8 * gib}, {"h2", 4 * gib}};
  CacheCheck small = CompareDatasetToMemory(10 * gib, ranks);
  CHECK(small.checked);
  CHECK(small.hosts == 2);
  CHECK(small.memory_bytes == 12 * gib);
  CHECK(small.fits);
  CHECK(small.warning.find("10.00 GiB") != std::string::npos);
  CHECK(small.warning.find("12.00 GiB") != std::string::npos);
  CacheCheck large = CompareDatasetToMemory(13 * gib, ranks);
  CHECK_FALSE(large.fits);
  CHECK(large.warning.empty());
}

}  // namespace
}  // namespace iomimic::engine
