// Limits on what a manifest may ask for, derived from this machine and the
// run's plan rather than fixed constants (issue 13, defect 4;
// docs/security.md). A value above its limit is refused before anything is
// allocated or written, with one line naming the key, the value and the
// limit, instead of running away (bad_alloc, an RSS that keeps growing,
// 10,000 idle threads, a disk filled to the last byte).

#pragma once

#include <cstdint>
#include <string>

#include "config/config.h"
#include "iomimic/status.h"

namespace iomimic::session {

// What this machine offers one host's ranks together.
struct MachineFacts {
  std::uint64_t memory_bytes = 0;  // MemAvailable, capped by the cgroup's limit (v1 or v2)
  unsigned cpus = 1;               // hardware threads
};

// Reads /proc/meminfo and the cgroups' memory limits (CgroupMemoryLimit,
// session/cache_honesty.h); falls back to the
// physical memory (sysconf) when those cannot be read.
MachineFacts ReadMachineFacts();

// Plan bookkeeping per dataset file on each rank (shape draws, the files a
// rank generates), a bound measured from plan.cpp and generator.cpp.
inline constexpr std::uint64_t kPlanBytesPerFile = 32;
// Loader bookkeeping per prefetched batch (one slot) and per sample in it.
inline constexpr std::uint64_t kPrefetchSlotBytes = 128;
inline constexpr std::uint64_t kPrefetchBytesPerSample = 16;

// Everything a run's plan needs to know to size itself.
struct PlanShape {
  int ranks = 1;          // MPI ranks in the job
  int ranks_on_host = 1;  // of which on this host
};

// Checks, at most half of `machine`'s memory going to the plan on each host:
// dataset.num_files_train + num_files_eval (plan bookkeeping),
// dataset.num_samples_per_file (samples in the dataset must be countable),
// dataset.num_subfolders_train/eval (at most one per file of the split),
// reader.prefetch_size (loader slots), reader.read_threads (at most the
// larger of the steps in an epoch and the CPUs: more threads than either
// cannot read anything sooner), reader.write_threads (at most the larger of
// the files and the same per-CPU bound). InvalidArgument
// "<key> = <value> exceeds the limit <limit> (<why>)" on the first failure.
Status CheckPlanLimits(const config::Config& c, const PlanShape& plan, const MachineFacts& machine);

// Free space where a dataset goes: the file system of `folder` or of its
// nearest existing parent (statvfs).
struct SpaceFacts {
  bool known = false;  // false: statvfs failed, nothing is checked
  std::uint64_t free_bytes = 0;
  std::uint64_t free_inodes = 0;  // UINT64_MAX when the file system does not count them
};
SpaceFacts ReadSpaceFacts(const std::string& folder);

// OK when `files` new files of `bytes` bytes in all fit in `space`.
// ResourceExhausted otherwise: "<key> = <value> exceeds the limit <limit>
// (...)", naming the folder, what is needed and what is free.
Status CheckFreeSpace(const std::string& folder, std::uint64_t files, double bytes,
                      const SpaceFacts& space, const std::string& key, std::uint64_t value,
                      std::uint64_t limit);

}  // namespace iomimic::session
