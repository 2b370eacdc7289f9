// Whether a run's reads can be served from the clients' page cache instead
// of the storage (issues 26 and 31, docs/cluster.md "Cache honesty").
//
// Two checks, both reported in summary.json ("iomimic.cache_check",
// "iomimic.checkpoint.read_path" and each load's "resident_fraction") and on
// the console:
// - the training set against the hosts' memory, as DLIO and mlpstorage
//   warn, with the bytes its files occupy on storage (not the nominal
//   samples x record length) and the share of them already in the page
//   cache when training starts: a training set smaller than the memory of
//   the hosts together can be read from memory from the second epoch on, and
//   pages already cached (by the generation, an earlier run, or a process
//   outside this run's cgroup) from the first;
// - checkpoint reads: how much of the files each rank reads was in its
//   host's page cache right before the timed read (MeasureResidency), with
//   the conditions that were meant to keep it cold (checkpoint.drop_cache,
//   a shard written on another host, a checkpoint written by an earlier
//   invocation) as context only: none of them alone proves a read cold.
//
// Residency is a side measurement of the core, not storage I/O: it maps the
// files and asks the kernel which pages are cached (cachestat(2), or
// mincore(2) before Linux 6.5, as fincore does), reading no data. It applies
// to back ends whose paths are local files (the file-system back ends of
// docs/plugins.md); object storage (StorageCapabilities::objects) keeps no
// page cache on the client and is reported as not measured, with why.

#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "config/config.h"
#include "iomimic/status.h"
#include "metrics/records.h"

namespace iomimic::session {

class Session;

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

// How much of `paths` (local files) is in this host's page cache now, without
// reading them or changing what is cached. All or nothing: the first file
// that cannot be measured (missing, not a regular file, the kernel will not
// say) leaves `measured` false with why_not naming it. No paths: measured,
// 0 bytes.
metrics::PageResidency MeasureResidency(const std::vector<std::string>& paths);

// The two kernel methods MeasureResidency uses, on `fd` (a regular file of
// `size` bytes, opened for reading): the bytes of it in the page cache, the
// last partial page counted for what it holds. Exposed for tests.
// cachestat(2): NotSupported where the kernel lacks it (before Linux 6.5).
Result<std::uint64_t> ResidentBytesByCachestat(int fd, std::uint64_t size);
// mmap(2) + mincore(2): since Linux 5.2 mincore reports a file's page cache
// only to its owner or a process that may write it (otherwise only the
// pages this process has mapped), so it refuses other files (NotSupported)
// rather than call them uncached.
Result<std::uint64_t> ResidentBytesByMincore(int fd, std::uint64_t size);

// A residency summed over ranks.
struct ResidencyTotals {
  int ranks = 0;                     // ranks that took part
  int ranks_measured = 0;            // of them, ranks that could measure
  std::uint64_t files = 0;           // measured ranks' files
  std::uint64_t bytes = 0;           // measured ranks' bytes
  std::uint64_t resident_bytes = 0;  // of `bytes`, in the page cache
  std::string why_not;               // the lowest unmeasured rank's reason
  bool all_measured() const { return ranks > 0 && ranks_measured == ranks; }
  // resident_bytes / bytes; 0 without bytes.
  double fraction() const;
};

// Collective: every rank's `mine` summed, the same on every rank.
ResidencyTotals SumResidency(const metrics::PageResidency& mine, cluster::Cluster& cluster);

// `a` and `b` together (several loads): the ranks of the larger, those
// measured of the one with fewer (a rank that could not measure one load
// counts as not measured), bytes and files added; an empty one (ranks 0)
// changes nothing.
ResidencyTotals AddResidency(const ResidencyTotals& a, const ResidencyTotals& b);

// A percentage with one decimal that is "0.0%" only for nothing and "100.0%"
// only for all: "37.5%", "0.1%" for a few bytes, "99.9%" for all but a few.
std::string Percent(std::uint64_t part, std::uint64_t whole);

// What a read found in the page cache, from the measurement alone: "cold:
// 0.0% of the bytes were in the page cache", "warm: 100.0% of ...", "partly
// warm: 37.5% of ...", or "not measured (<why_not>)", "not measured on 2 of
// 4 ranks (<why_not>); the others found 12.5% of their bytes in the page
// cache". Never cold unless every rank measured and found nothing.
std::string ResidencyVerdict(const ResidencyTotals& totals);

// A checkpoint read's label (summary.json's read_path): the verdict, then
// `conditions` in parentheses when there are any ("page cache dropped,
// later invocation"; Checkpointer::read_conditions()).
std::string CheckpointReadLabel(const ResidencyTotals& totals, const std::string& conditions);

// `k` indices spread evenly over [0, n), ascending and distinct; all of them
// when k >= n. Pure, for tests.
std::vector<std::uint64_t> SampleIndices(std::uint64_t n, std::uint64_t k);

// A share of the training set this large in the page cache at start is
// warned about.
inline constexpr double kResidentWarningFraction = 0.01;

// The training set against the hosts' memory.
struct CacheCheck {
  bool checked = false;             // false: the run does not train, nothing was compared
  std::uint64_t nominal_bytes = 0;  // files x samples x record length (DLIO's figure)
  // The training files' bytes on storage (their sizes), what an epoch reads:
  // summed over all files, or estimated from an even sample of
  // files_measured of them; nominal_bytes when no file could be stat'ed.
  std::uint64_t dataset_bytes = 0;
  std::uint64_t files = 0;           // training files
  std::uint64_t files_measured = 0;  // files stat'ed (all, or the sample)
  // Of dataset_bytes, in the hosts' page cache when training started
  // (estimated from the sample likewise); with residency_measured false
  // (object storage, or the kernel would not say: residency_why_not) 0.
  bool residency_measured = false;
  std::uint64_t resident_bytes = 0;
  std::string residency_why_not;
  std::uint64_t memory_bytes = 0;  // sum over distinct hosts of HostMemoryBytes()
  int hosts = 0;                   // distinct host names
  bool fits = false;               // dataset_bytes <= memory_bytes
  bool client_cache = true;        // false: the storage keeps no page cache on the client
  // One line when the set fits or at least kResidentWarningFraction of it
  // was cached at start (on storage with a client cache), else empty.
  std::string warning;
  bool sampled() const { return files_measured < files; }
  double resident_fraction() const;
};

// One host's share of the comparison: its name and memory.
struct HostMemory {
  std::string host;
  std::uint64_t bytes = 0;
};

// The comparison over `ranks` (one entry per rank; ranks of one host count
// once, with the largest figure any of them read) of the training set that
// `dataset` describes (its fields up to residency_why_not and
// client_cache), which it returns completed. Pure, for tests.
CacheCheck CompareDatasetToMemory(CacheCheck dataset, const std::vector<HostMemory>& ranks);

// Collective: every rank reads its host's memory and stats and measures its
// share of the training files (an even sample of at most
// iomimic.cache_check_files, kept out of the run's I/O counters; none when
// 0, the nominal size then standing for the files'), and all get the same
// verdict. Not checked (checked false) when the run does not
// train. Call it after the dataset exists and before training reads it. On
// storage without a client page cache (object storage) the figures are
// recorded without a warning.
CacheCheck CheckDatasetAgainstMemory(Session& session);

}  // namespace iomimic::session
