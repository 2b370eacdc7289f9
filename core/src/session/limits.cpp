#include "session/limits.h"

#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>

#include "plan/plan.h"
#include "session/cache_honesty.h"

namespace iomimic::session {
namespace {

// Reader threads allowed per CPU (they mostly wait for storage).
constexpr std::uint64_t kReaderThreadsPerCpu = 64;

std::string Bytes(double bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 6) {
    bytes /= 1024;
    ++unit;
  }
  char text[64];
  std::snprintf(text, sizeof(text), unit == 0 ? "%.0f %s" : "%.1f %s", bytes, kUnits[unit]);
  return text;
}

std::string U(std::uint64_t v) { return std::to_string(v); }

Status Exceeds(const std::string& key, std::uint64_t value, std::uint64_t limit,
               const std::string& why) {
  return Status::InvalidArgument(key + " = " + U(value) + " exceeds the limit " + U(limit) + " (" +
                                 why + ")");
}

// a * b, or UINT64_MAX when that overflows.
std::uint64_t SaturatingMul(std::uint64_t a, std::uint64_t b) {
  std::uint64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) return std::numeric_limits<std::uint64_t>::max();
  return out;
}

}  // namespace

MachineFacts ReadMachineFacts() {
  MachineFacts m;
  m.cpus = std::max(1u, std::thread::hardware_concurrency());
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) m.memory_bytes = static_cast<std::uint64_t>(pages) * page;
  if (const std::uint64_t available = MeminfoBytes("MemAvailable"); available > 0) {
    m.memory_bytes = available;
  }
  m.memory_bytes = std::min(m.memory_bytes, CgroupMemoryLimit());
  if (m.memory_bytes == 0) m.memory_bytes = std::uint64_t{1} << 30;  // unknown: assume 1 GiB
  return m;
}

Status CheckPlanLimits(const config::Config& c, const PlanShape& plan,
                       const MachineFacts& machine) {
  const std::uint64_t budget = machine.memory_bytes / 2;
  const std::uint64_t on_host = static_cast<std::uint64_t>(std::max(1, plan.ranks_on_host));
  const std::uint64_t per_process = std::max<std::uint64_t>(1, c.iomimic.accelerators_per_process);
  const std::string memory = Bytes(static_cast<double>(machine.memory_bytes)) +
                             " of memory available on this host, half of it for the plan";
  const config::DatasetConfig& d = c.dataset;

  // Dataset files: each rank keeps a few words per file of the whole dataset.
  const std::uint64_t file_limit = budget / (kPlanBytesPerFile * on_host);
  for (const auto& [key, value] :
       {std::pair<const char*, std::uint64_t>{"dataset.num_files_train", d.num_files_train},
        {"dataset.num_files_eval", d.num_files_eval}}) {
    if (value > file_limit) {
      return Exceeds(key, value, file_limit,
                     U(kPlanBytesPerFile) + " bytes of plan per file on each of " + U(on_host) +
                         " rank(s) on this host; " + memory);
    }
  }
  if (d.num_files_train + d.num_files_eval > file_limit) {
    return Exceeds("dataset.num_files_train", d.num_files_train, file_limit - d.num_files_eval,
                   "together with dataset.num_files_eval = " + U(d.num_files_eval) + "; " + memory);
  }

  // Samples: their count must fit the 64-bit sample index of the plan.
  const std::uint64_t files = std::max(d.num_files_train, d.num_files_eval);
  const std::uint64_t spf = std::max<std::uint64_t>(1, d.num_samples_per_file);
  const std::uint64_t index_limit = std::uint64_t{1} << 62;
  if (files > 0 && SaturatingMul(files, spf) > index_limit) {
    return Exceeds("dataset.num_samples_per_file", d.num_samples_per_file, index_limit / files,
                   "the dataset's " + U(files) +
                       " files x samples per file must stay below 2^62 "
                       "samples");
  }

  // Subfolders: files go round robin into them; more folders than files
  // leaves folders empty.
  for (const auto& [key, value, limit] :
       {std::tuple<const char*, std::uint64_t, std::uint64_t>{
            "dataset.num_subfolders_train", d.num_subfolders_train, d.num_files_train},
        {"dataset.num_subfolders_eval", d.num_subfolders_eval, d.num_files_eval}}) {
    if (limit > 0 && value > 1 && value > limit) {  // no files: no subfolders are made
      return Exceeds(key, value, limit,
                     "the number of files of the split: files are spread round robin over the "
                     "subfolders, so more subfolders than files stay empty");
    }
  }

  // Prefetch: one loader slot per batch in flight, per accelerator.
  const config::ReaderConfig& r = c.reader;
  const std::uint64_t batch = std::max(r.batch_size, r.batch_size_eval);
  const std::uint64_t slot =
      kPrefetchSlotBytes + kPrefetchBytesPerSample * std::max<std::uint64_t>(1, batch);
  const std::uint64_t prefetch_limit =
      std::max<std::uint64_t>(1, budget / (slot * per_process * on_host));
  if (r.prefetch_size > prefetch_limit) {
    return Exceeds("reader.prefetch_size", r.prefetch_size, prefetch_limit,
                   U(slot) + " bytes of loader state per prefetched batch of " + U(batch) +
                       " samples, " + U(per_process * on_host) + " accelerator(s) on this host; " +
                       memory);
  }

  // Reader threads: a thread reads whole steps, so threads beyond the steps
  // of an epoch idle. Readers mostly wait for storage, so a workload may
  // well ask for more than the CPUs (MLPerf's shrunk runs ask for 8 on small
  // datasets): the bound is generous, kReaderThreadsPerCpu per CPU, and
  // stops only runaway values.
  const int accelerators =
      static_cast<int>(static_cast<std::uint64_t>(std::max(1, plan.ranks)) * per_process);
  const std::uint64_t steps =
      std::max(plan::TrainStepsPerEpoch(c, accelerators), plan::EvalStepsPerEpoch(c, accelerators));
  const std::uint64_t thread_limit =
      std::max<std::uint64_t>(steps, kReaderThreadsPerCpu * machine.cpus);
  if (r.read_threads > thread_limit) {
    return Exceeds("reader.read_threads", r.read_threads, thread_limit,
                   "the larger of " + U(steps) + " step(s) per epoch and accelerator and " +
                       U(kReaderThreadsPerCpu) + " per CPU on " + U(machine.cpus) +
                       " CPU(s): more threads would only idle");
  }
  // Generation threads (reader.write_threads): a thread writes whole files,
  // so more threads than files idle; the same per-CPU bound as the readers.
  const std::uint64_t all_files = c.dataset.num_files_train + c.dataset.num_files_eval;
  const std::uint64_t write_limit =
      std::max<std::uint64_t>({1, all_files, kReaderThreadsPerCpu * machine.cpus});
  if (r.write_threads > write_limit) {
    return Exceeds("reader.write_threads", r.write_threads, write_limit,
                   "the larger of " + U(all_files) + " file(s) and " + U(kReaderThreadsPerCpu) +
                       " per CPU on " + U(machine.cpus) + " CPU(s): more threads would only idle");
  }
  return Status::OK();
}

SpaceFacts ReadSpaceFacts(const std::string& folder) {
  SpaceFacts space;
  std::filesystem::path p =
      folder.empty() ? std::filesystem::path(".") : std::filesystem::path(folder);
  std::error_code ec;
  while (!p.empty() && !std::filesystem::exists(p, ec) && p.has_parent_path() &&
         p.parent_path() != p) {
    p = p.parent_path();
  }
  if (p.empty()) p = ".";
  struct statvfs st {};
  if (::statvfs(p.c_str(), &st) != 0) return space;
  space.known = true;
  space.free_bytes = static_cast<std::uint64_t>(st.f_bavail) * st.f_frsize;
  space.free_inodes = st.f_files == 0 ? std::numeric_limits<std::uint64_t>::max()
                                      : static_cast<std::uint64_t>(st.f_favail);
  return space;
}

Status CheckFreeSpace(const std::string& folder, std::uint64_t files, double bytes,
                      const SpaceFacts& space, const std::string& key, std::uint64_t value,
                      std::uint64_t limit) {
  if (!space.known || files == 0) return Status::OK();
  const std::string head = key + " = " + U(value) + " exceeds the limit " + U(limit) + " (";
  if (bytes > static_cast<double>(space.free_bytes)) {
    return Status::ResourceExhausted(
        head + "generating " + U(files) + " file(s) needs about " + Bytes(bytes) + " in " + folder +
        ", but only " + Bytes(static_cast<double>(space.free_bytes)) + " is free there)");
  }
  if (files > space.free_inodes) {
    return Status::ResourceExhausted(head + "generating " + U(files) + " file(s) in " + folder +
                                     " needs as many inodes, but only " + U(space.free_inodes) +
                                     " are free there)");
  }
  return Status::OK();
}

}  // namespace iomimic::session
