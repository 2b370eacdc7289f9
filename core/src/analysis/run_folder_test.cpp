#include "analysis/run_folder.h"

#include <doctest/doctest.h>

#include <string>

#include "iomimic/testing/posix_test_storage.h"

namespace iomimic::analysis {
namespace {

using testing::TempDir;

const char* const kSummary = R"({"num_accelerators": 4,
  "kv_cache": {"tiers": {"gpu": {"capacity_bytes": 0, "read_GiB_per_second": 9},
                         "cpu": {"capacity_bytes": 1024, "read_GiB_per_second": 3}},
               "replay": {"latency_seconds": {"p99": 0.0025}}, "name": "not a number"}})";

const output::FigureList kFigures = {
    {"accelerators", {"num_accelerators"}, true},
    {"gpu read",
     {"kv_cache", "tiers", "gpu", "read_GiB_per_second"},
     true,
     {"kv_cache", "tiers", "gpu", "capacity_bytes"}},
    {"cpu read",
     {"kv_cache", "tiers", "cpu", "read_GiB_per_second"},
     true,
     {"kv_cache", "tiers", "cpu", "capacity_bytes"}},
    {"p99 ms", {"kv_cache", "replay", "latency_seconds", "p99"}, false, {}, 1e3},
    {"name", {"kv_cache", "name"}, true},
    {"missing", {"kv_cache", "nothing", "here"}, true},
};

TEST_CASE("run folder: figures are read through the list given, in its order") {
  TempDir dir;
  dir.Write("summary.json", kSummary);
  Result<RunFolder> run = ReadRunFolder(dir.path(), kFigures);
  REQUIRE(run.ok());
  REQUIRE(run->figures.size() == kFigures.size());
  for (std::size_t i = 0; i < kFigures.size(); ++i) CHECK(run->figures[i].name == kFigures[i].name);
  REQUIRE(run->Find("accelerators") != nullptr);
  CHECK(run->Find("accelerators")->value == 4);
  // The condition: a tier of capacity 0 was not there; one above 0 was.
  CHECK(run->Find("gpu read") == nullptr);
  REQUIRE(run->Find("cpu read") != nullptr);
  CHECK(run->Find("cpu read")->value == 3);
  // The scale: seconds shown as ms; lower is better as the spec says.
  REQUIRE(run->Find("p99 ms") != nullptr);
  CHECK(run->Find("p99 ms")->value == doctest::Approx(2.5));
  CHECK_FALSE(run->Find("p99 ms")->higher_is_better);
  // Not a number, or not there: absent.
  CHECK(run->Find("name") == nullptr);
  CHECK(run->Find("missing") == nullptr);
}

TEST_CASE("run folder: an empty list reads the status and configuration only") {
  TempDir dir;
  dir.Write("summary.json", kSummary);
  dir.Write("status.json", R"({"status": "completed"})");
  Result<RunFolder> run = ReadRunFolder(dir.path(), {});
  REQUIRE(run.ok());
  CHECK(run->figures.empty());
  CHECK(run->status == "completed");
  CHECK(run->config.at("num_accelerators") == "4");
}

}  // namespace
}  // namespace iomimic::analysis
