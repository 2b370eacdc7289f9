// Whether a run's reads can be served from the clients' page cache instead
// of the storage (issue 26, docs/cluster.md "Cache honesty").
//
// Two checks, both reported in summary.json ("iomimic.cache_check",
// "iomimic.checkpoint.read_path") and on the console:
// - the dataset against the hosts' memory, as DLIO and mlpstorage warn: a
//   training set smaller than the memory of the hosts together can be read
//   from memory from the second epoch on;
// - the path checkpoint reads took: the file's pages dropped at open
//   (checkpoint.drop_cache), a shard written on another host
//   (checkpoint.recovery_rank_shift), a checkpoint written by an earlier
//   invocation (the checkpoint-only workflow with num_checkpoints_write 0),
//   or none of these ("may be cached").

#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "config/config.h"

namespace iomimic::engine {

// The smallest memory limit of the cgroups this process is in, their
// ancestors included: cgroup v2's memory.max (under /sys/fs/cgroup, or
// /sys/fs/cgroup/unified on hybrid systems) and cgroup v1's
// memory.limit_in_bytes (under /sys/fs/cgroup/memory), found from
// /proc/self/cgroup. UINT64_MAX when no limit is set or none can be read.
// `proc_cgroup` and `cgroup_root` exist for tests.
std::uint64_t CgroupMemoryLimit(const std::string& proc_cgroup = "/proc/self/cgroup",
                                const std::string& cgroup_root = "/sys/fs/cgroup");

// This host's memory for caching: the smaller of MemTotal (/proc/meminfo)
// and CgroupMemoryLimit(). 0 when neither can be read.
std::uint64_t HostMemoryBytes();

// The /proc/meminfo field `key` ("MemTotal", "MemAvailable") in bytes, or 0
// when it cannot be read.
std::uint64_t MeminfoBytes(const char* key);

// The dataset against the hosts' memory.
struct CacheCheck {
  bool checked = false;             // false: the run does not train, nothing was compared
  std::uint64_t dataset_bytes = 0;  // training set: files x samples x record length
  std::uint64_t memory_bytes = 0;   // sum over distinct hosts of HostMemoryBytes()
  int hosts = 0;                    // distinct host names
  bool fits = false;                // dataset_bytes <= memory_bytes
  bool client_cache = true;         // false: the storage keeps no page cache on the client
  std::string warning;              // one line when it fits, else empty
};

// One host's share of the comparison: its name and memory.
struct HostMemory {
  std::string host;
  std::uint64_t bytes = 0;
};

// The comparison over `ranks` (one entry per rank; ranks of one host count
// once, with the largest figure any of them read). Pure, for tests.
CacheCheck CompareDatasetToMemory(std::uint64_t dataset_bytes,
                                  const std::vector<HostMemory>& ranks);

// Collective: every rank reads its host's memory and all get the same
// verdict. Not checked (checked false) when the run does not train. With
// `client_cache` false (object storage: its reads are not kept in the
// client's page cache) the figures are recorded without a warning.
CacheCheck CheckDatasetAgainstMemory(const config::Config& c, cluster::Cluster& cluster,
                                     bool client_cache);

}  // namespace iomimic::engine
