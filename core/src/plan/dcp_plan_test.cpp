#include "plan/dcp_plan.h"

#include <doctest/doctest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>

namespace iomimic::plan {
namespace {

config::Config Workload(const std::string& name) {
  config::ManifestSource source;
  source.path = std::string(IOMIMIC_WORKLOADS_SOURCE_DIR) + "/" + name + ".yaml";
  auto loaded = config::LoadManifest(source);
  REQUIRE_MESSAGE(loaded.ok(), loaded.status().message());
  return loaded->config;
}

CheckpointPlan Dlio(const std::string& name, int world) {
  auto plan = PlanCheckpoint(Workload(name), world);
  REQUIRE_MESSAGE(plan.ok(), plan.status().message());
  return *plan;
}

// Every file's bytes, and how many readers read each of them: a byte read
// twice or never fails.
void CheckReshardCoversOnce(const DcpPlan& dcp, int readers) {
  std::map<std::string, std::vector<std::pair<std::uint64_t, std::uint64_t>>> ranges;
  std::uint64_t total = 0;
  for (int r = 0; r < readers; ++r) {
    for (const DcpRead& read : DcpReaderRanges(dcp, r, readers)) {
      ranges[read.file].push_back({read.offset, read.offset + read.bytes});
      total += read.bytes;
    }
  }
  CHECK(total == dcp.total_bytes());
  for (const DcpRank& rank : dcp.ranks) {
    for (const DcpFile& file : rank.files) {
      auto& list = ranges[file.name];
      std::sort(list.begin(), list.end());
      std::uint64_t at = 0;
      for (const auto& [begin, end] : list) {
        CHECK_MESSAGE(begin == at, file.name << ": gap or overlap at " << at);
        at = end;
      }
      CHECK_MESSAGE(at == file.bytes, file.name << " read to " << at << " of " << file.bytes);
    }
  }
}

}  // namespace

TEST_CASE("dcp: one __<rank>_<n>.distcp per writer thread, bytes equal to the DLIO plan's") {
  for (const char* name : {"llama_8b_zero3", "llama_70b"}) {
    const int world = std::string(name) == "llama_70b" ? 32 : 4;
    const CheckpointPlan dlio = Dlio(name, world);
    for (int threads : {1, 2, 4}) {
      const DcpPlan dcp = PlanDcp(dlio, threads);
      CHECK(dcp.total_bytes() == dlio.total_bytes());
      REQUIRE(dcp.ranks.size() == dlio.ranks.size());
      for (std::size_t r = 0; r < dcp.ranks.size(); ++r) {
        CHECK(dcp.ranks[r].bytes() == dlio.ranks[r].bytes());
        if (dlio.ranks[r].files.empty()) {
          CHECK(dcp.ranks[r].files.empty());
          continue;
        }
        REQUIRE(dcp.ranks[r].files.size() == static_cast<std::size_t>(threads));
        for (int n = 0; n < threads; ++n) {
          const DcpFile& f = dcp.ranks[r].files[static_cast<std::size_t>(n)];
          CHECK(f.name == "__" + std::to_string(r) + "_" + std::to_string(n) + ".distcp");
          std::uint64_t at = 0;
          for (const DcpChunk& c : f.chunks) {
            CHECK(c.file_offset == at);
            at += c.bytes;
          }
          CHECK(at == f.bytes);
        }
      }
    }
  }
}

TEST_CASE("dcp: items go largest first to the emptiest bucket") {
  CheckpointPlan plan;
  RankCheckpoint rc;
  rc.files.push_back({"a", 100, false, {{"x", 50}, {"y", 30}, {"z", 20}}});
  rc.files.push_back({"b", 45, true, {{"w", 45}}});
  plan.ranks.push_back(rc);
  const DcpPlan dcp = PlanDcp(plan, 2);
  REQUIRE(dcp.ranks[0].files.size() == 2);
  // 50 -> 0; 45 -> 1; 30 -> 1 (45 < 50); 20 -> 0 (50 < 75).
  const auto& f0 = dcp.ranks[0].files[0].chunks;
  const auto& f1 = dcp.ranks[0].files[1].chunks;
  REQUIRE(f0.size() == 2);
  REQUIRE(f1.size() == 2);
  CHECK(f0[0].item == "x");
  CHECK(f0[1].item == "z");
  CHECK(f0[1].file_offset == 50);
  CHECK(f1[0].item == "w");
  CHECK(f1[1].item == "y");
  // More threads than items: DCP still creates every bucket's file.
  CHECK(PlanDcp(plan, 6).ranks[0].files.size() == 6);
  CHECK(PlanDcp(plan, 6).ranks[0].files[5].bytes == 0);
}

TEST_CASE("dcp: a global item is its chunks in rank order (ZeRO-3 shards)") {
  const DcpPlan dcp = PlanDcp(Dlio("llama_8b_zero3", 4), 2);
  // Each of 4 ranks holds a quarter of every layer and of each Adam tensor.
  std::map<std::string, std::vector<std::uint64_t>> offsets;
  for (const DcpRank& rank : dcp.ranks)
    for (const DcpFile& f : rank.files)
      for (const DcpChunk& c : f.chunks) offsets[c.item].push_back(c.item_offset);
  REQUIRE(offsets.count("model.layers.0") == 1);
  CHECK(offsets["model.layers.0"].size() == 4);
  CHECK(offsets["optim.exp_avg"].size() == 4);
  std::map<std::string, std::uint64_t> sums;
  for (const DcpRank& rank : dcp.ranks)
    for (const DcpFile& f : rank.files)
      for (const DcpChunk& c : f.chunks) sums[c.item] += c.bytes;
  for (const auto& [name, bytes] : dcp.items) CHECK(sums[name] == bytes);
}

TEST_CASE("dcp: a restore by another rank count reads every byte exactly once (4 -> 2, 4 -> 8)") {
  for (int threads : {1, 3}) {
    const DcpPlan dcp = PlanDcp(Dlio("llama_8b_zero3", 4), threads);
    for (int readers : {1, 2, 4, 8}) CheckReshardCoversOnce(dcp, readers);
  }
  // Reader r of 2 owns the first or second half of every global item.
  const DcpPlan dcp = PlanDcp(Dlio("llama_8b_zero3", 4), 1);
  std::uint64_t first = 0;
  for (const DcpRead& read : DcpReaderRanges(dcp, 0, 2)) first += read.bytes;
  std::uint64_t half = 0;
  for (const auto& [name, bytes] : dcp.items) half += bytes / 2;
  CHECK(first == half);
}

TEST_CASE("dcp: .metadata lists every chunk where it is stored") {
  const DcpPlan dcp = PlanDcp(Dlio("llama_8b_zero3", 2), 2);
  const auto meta = nlohmann::json::parse(DcpMetadataJson(dcp));
  std::uint64_t stored = 0;
  std::set<std::string> files;
  for (const auto& s : meta["storage_data"]) {
    stored += s["length"].get<std::uint64_t>();
    files.insert(s["relative_path"].get<std::string>());
  }
  CHECK(stored == dcp.total_bytes());
  CHECK(files == std::set<std::string>{"__0_0.distcp", "__0_1.distcp", "__1_0.distcp",
                                       "__1_1.distcp"});
  CHECK(meta["state_dict_metadata"].size() == dcp.items.size());
}

}  // namespace iomimic::plan
