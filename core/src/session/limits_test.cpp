#include "session/limits.h"

#include <doctest/doctest.h>

#include <string>

namespace iomimic::session {
namespace {

config::Config Small() {
  config::Config c;
  c.workflow.train = true;
  c.dataset.num_files_train = 8;
  c.dataset.num_files_eval = 0;
  c.dataset.num_samples_per_file = 1;
  c.reader.batch_size = 1;
  c.reader.batch_size_eval = 1;
  c.reader.read_threads = 2;
  c.reader.prefetch_size = 2;
  return c;
}

MachineFacts Machine(std::uint64_t gib, unsigned cpus) {
  MachineFacts m;
  m.memory_bytes = gib << 30;
  m.cpus = cpus;
  return m;
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string Refusal(const config::Config& c, const MachineFacts& m, PlanShape shape = {}) {
  Status s = CheckPlanLimits(c, shape, m);
  REQUIRE_FALSE(s.ok());
  CHECK(s.code() == StatusCode::kInvalidArgument);
  return s.message();
}

}  // namespace

// Issue 13, defect 4: huge values ran away (bad_alloc, growing RSS, 10,000
// threads); each is now refused with its key, value and limit.
TEST_CASE("plan limits follow the machine and the plan") {
  const MachineFacts m = Machine(8, 4);
  CHECK(CheckPlanLimits(Small(), {}, m).ok());

  config::Config c = Small();
  c.reader.prefetch_size = 1000000000;
  std::string e = Refusal(c, m);
  CHECK(e.starts_with("reader.prefetch_size = 1000000000 exceeds the limit 29826161 ("));
  // Twice the ranks on the host halve the limit.
  e = Refusal(c, m, PlanShape{2, 2});
  CHECK(e.starts_with("reader.prefetch_size = 1000000000 exceeds the limit 14913080 ("));

  c = Small();
  c.dataset.num_files_train = 1000000000000;
  e = Refusal(c, m);
  CHECK(e.starts_with("dataset.num_files_train = 1000000000000 exceeds the limit 134217728 ("));
  CHECK(Contains(e, "8.0 GiB of memory available"));

  c = Small();
  c.dataset.num_subfolders_train = 100000000;
  e = Refusal(c, m);
  CHECK(e.starts_with("dataset.num_subfolders_train = 100000000 exceeds the limit 8 ("));

  c = Small();
  c.dataset.num_samples_per_file = 1000000000000000000;
  e = Refusal(c, m);
  CHECK(e.starts_with("dataset.num_samples_per_file = 1000000000000000000 exceeds the limit "));

  c = Small();
  c.reader.read_threads = 10000;
  e = Refusal(c, m);
  // 8 steps, 4 CPUs x 64 readers each: the CPUs bound it.
  CHECK(e.starts_with("reader.read_threads = 10000 exceeds the limit 256 ("));
  c.reader.read_threads = 256;
  CHECK(CheckPlanLimits(c, {}, m).ok());
  // A shrunk workload keeps its readers (MLPerf's dlrm_parquet_h100: 8
  // readers, 4 steps on a 2-CPU client).
  c.reader.read_threads = 8;
  CHECK(CheckPlanLimits(c, {}, m).ok());
}

TEST_CASE("free space is checked before generating") {
  SpaceFacts space;
  space.known = true;
  space.free_bytes = 1 << 20;
  space.free_inodes = 10;
  CHECK(CheckFreeSpace("/d", 4, 1000.0, space, "dataset.num_files_train", 4, 10).ok());
  Status s = CheckFreeSpace("/d", 4, 4e6, space, "dataset.num_files_train", 4, 1);
  CHECK(s.code() == StatusCode::kResourceExhausted);
  CHECK(s.message() ==
        "dataset.num_files_train = 4 exceeds the limit 1 (generating 4 file(s) needs about 3.8 MiB "
        "in /d, but only 1.0 MiB is free there)");
  s = CheckFreeSpace("/d", 11, 11.0, space, "dataset.num_files_train", 11, 10);
  CHECK(s.code() == StatusCode::kResourceExhausted);
  CHECK(Contains(s.message(), "only 10 are free there"));
  space.known = false;
  CHECK(CheckFreeSpace("/d", 4, 4e6, space, "dataset.num_files_train", 4, 1).ok());
}

}  // namespace iomimic::session
