#include "output/rank_ledger.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "analysis/run_folder.h"
#include "iomimic/testing/posix_test_storage.h"
#include "run/run.h"

namespace iomimic::output {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// An epoch of `steps` steps of 10 ms compute each, 8 MiB read.
metrics::EpochRecord Epoch(std::uint64_t n, std::uint64_t steps, bool partial = false) {
  metrics::EpochRecord e;
  e.epoch = n;
  e.start = metrics::Stamp::Now();
  e.end = e.start;
  e.end.mono += std::chrono::milliseconds(10 * steps);
  e.end.wall += std::chrono::milliseconds(10 * steps);
  metrics::PhaseRecord b;
  b.start = e.start;
  b.end = e.end;
  for (std::uint64_t i = 0; i < steps; ++i) {
    b.load.push_back(0.0);
    b.proc.push_back(0.01);
    b.compute.push_back(0.01);
  }
  b.bytes_read = 8 << 20;
  e.blocks.push_back(b);
  e.partial = partial;
  return e;
}

config::Config TestConfig() {
  config::Config c;
  c.reader.batch_size = 4;
  return c;
}

// A run folder for ledgers and the configuration they record.
struct LedgerFolder {
  TempDir dir;
  const config::Config c = TestConfig();

  // The ledger of `rank` of `ranks` on `host`, started (its record says
  // "running").
  std::unique_ptr<RankLedger> Started(int rank, int ranks, const std::string& host) {
    auto ledger = std::make_unique<RankLedger>(dir.path().string(), c, rank, ranks, host, 0.0);
    REQUIRE(ledger->Start().ok());
    return ledger;
  }
};

TEST_CASE_FIXTURE(LedgerFolder,
                  "rank ledger: epochs and a signal reach the folder as they happen") {
  std::unique_ptr<RankLedger> ledger = Started(3, 4, "h2");
  Result<RankRecord> r = ReadRankRecord(dir.path(), 3);
  REQUIRE(r.ok());
  CHECK(r->state == "running");
  CHECK(r->host == "h2");
  CHECK(r->ranks == 4);

  std::vector<metrics::EpochRecord> epochs = {Epoch(1, 10)};
  REQUIRE(ledger->EpochsSoFar(3, epochs).ok());
  epochs.push_back(Epoch(2, 3, /*partial=*/true));
  REQUIRE(ledger->EpochsSoFar(3, epochs).ok());
  CHECK(fs::exists(dir.path() / "3_per_epoch_stats.json"));
  std::ifstream stats(dir.path() / "3_per_epoch_stats.json");
  const std::string text((std::istreambuf_iterator<char>(stats)), {});
  CHECK(text.find("\"partial\": true") != std::string::npos);

  REQUIRE(ledger->Stopped("interrupted", "SIGTERM", "").ok());
  r = ReadRankRecord(dir.path(), 3);
  REQUIRE(r.ok());
  CHECK(r->state == "interrupted");
  CHECK(r->signal == "SIGTERM");
  REQUIRE(r->accelerators.size() == 1);
  REQUIRE(r->accelerators[0].epochs.size() == 2);
  CHECK(!r->accelerators[0].epochs[0].partial);
  CHECK(r->accelerators[0].epochs[0].steps == 10);
  CHECK(r->accelerators[0].epochs[0].bytes_read == (8u << 20));
  CHECK(r->accelerators[0].epochs[1].partial);
  // No file is left aside by the atomic writes.
  for (const auto& entry : fs::directory_iterator(dir.path() / "ranks")) {
    CHECK(entry.path().filename().string().front() != '.');
  }
}

TEST_CASE_FIXTURE(LedgerFolder,
                  "rank ledger: a rank without a record, or still running, is silent") {
  std::unique_ptr<RankLedger> r0 = Started(0, 3, "h1"), r2 = Started(2, 3, "h2");
  CHECK(SilentRanks(dir.path(), 3) == std::vector<int>{0, 1, 2});
  REQUIRE(r0->Stopped("interrupted", "SIGTERM", "").ok());
  CHECK(SilentRanks(dir.path(), 3) == std::vector<int>{1, 2});
  REQUIRE(r2->Stopped("cut_off", "SIGTERM", "cannot reach mpirun").ok());
  CHECK(SilentRanks(dir.path(), 3) == std::vector<int>{1, 2});  // cut off counts as lost
}

TEST_CASE_FIXTURE(LedgerFolder, "rank ledger: a run folder without summary.json reads as partial") {
  {
    std::unique_ptr<RankLedger> a = Started(0, 3, "h1"), b = Started(1, 3, "h1");
    REQUIRE(a->EpochsSoFar(0, {Epoch(1, 10), Epoch(2, 10), Epoch(3, 2, true)}).ok());
    REQUIRE(b->EpochsSoFar(1, {Epoch(1, 10), Epoch(2, 10)}).ok());
    REQUIRE(a->Stopped("interrupted", "SIGTERM", "").ok());
    REQUIRE(b->Stopped("interrupted", "SIGTERM", "").ok());
  }
  Result<analysis::RunFolder> run = analysis::ReadRunFolder(dir.path(), run::Figures());
  REQUIRE(run.ok());
  CHECK(run->partial);
  CHECK(run->partial_note.find("records of 2 of 3 ranks") != std::string::npos);
  CHECK(run->partial_note.find("no final state from rank(s) 2") != std::string::npos);
  const analysis::Figure* accelerators = run->Find("accelerators");
  REQUIRE(accelerators != nullptr);
  CHECK(accelerators->value == 2);
  // The two whole epochs both ranks finished; the partial third left out.
  const analysis::Figure* tput = run->Find("train samples/s");
  REQUIRE(tput != nullptr);
  CHECK(tput->value > 0);
  Result<std::string> summary = analysis::SummaryText(dir.path());
  REQUIRE(summary.ok());
  const nlohmann::json parsed = nlohmann::json::parse(*summary);
  CHECK(parsed["metric"]["train_au_percentage"].size() == 2);
  CHECK(parsed["iomimic"]["partial"]["silent_ranks"] == nlohmann::json::array({2}));
}

TEST_CASE("rank ledger: an empty folder is not a run") {
  TempDir dir;
  Result<analysis::RunFolder> run = analysis::ReadRunFolder(dir.path(), run::Figures());
  CHECK(run.status().IsNotFound());
}

}  // namespace
}  // namespace iomimic::output
