#include "train/read_script.h"

#include <doctest/doctest.h>

namespace iomimic::train {
namespace {

TEST_CASE("read_script: entries, samples and offsets") {
  Result<ReadScript> s = ReadScript::Parse({"1: open 8 16*2 0", "2: 100"});
  REQUIRE(s.ok());
  CHECK(s->ClassNames() == std::vector<std::string>{""});
  REQUIRE(s->ClassIndex("") == 0);
  const ResolvedScript r = s->Resolve(0, 1000);
  CHECK(r.Reopens(0));
  CHECK_FALSE(r.Reopens(1));
  CHECK(r.Reopens(3));
  CHECK(r.Reads(0) == std::vector<std::uint64_t>{8, 16, 16, 0});
  CHECK(r.Reads(1) == std::vector<std::uint64_t>{100});
  CHECK(r.Reads(2) == std::vector<std::uint64_t>{100});
  CHECK(r.Reads(3) == std::vector<std::uint64_t>{8, 16, 16, 0});  // the cycle again
  CHECK(r.StartOffset(0) == 0);
  CHECK(r.StartOffset(1) == 40);
  CHECK(r.StartOffset(2) == 140);
  CHECK(r.StartOffset(3) == 240);
  CHECK(r.StartOffset(4) == 280);
}

TEST_CASE("read_script: reads relative to the file's end, resolved per file size") {
  Result<ReadScript> s = ReadScript::Parse({"1: open 4096 128 file-4224 file*2 file-5000"});
  REQUIRE(s.ok());
  const ResolvedScript small = s->Resolve(0, 4352);
  CHECK(small.Reads(0) == std::vector<std::uint64_t>{4096, 128, 128, 4352, 4352, 0});
  const ResolvedScript large = s->Resolve(0, 278656);
  CHECK(large.Reads(0) == std::vector<std::uint64_t>{4096, 128, 274432, 278656, 278656, 273656});
  CHECK(large.StartOffset(1) == 4096 + 128 + 274432 + 2 * 278656 + 273656);
}

TEST_CASE("read_script: classes keep their own samples") {
  Result<ReadScript> s =
      ReadScript::Parse({"npy 1: open 4096 file-4096", "npz 2: open 22 file-64", "npz 1: 7"});
  REQUIRE(s.ok());
  CHECK(s->ClassNames() == std::vector<std::string>{"npy", "npz"});
  CHECK(s->ClassIndex("") == -1);
  CHECK(s->ClassIndex("zip") == -1);
  REQUIRE(s->ClassIndex("npz") == 1);
  const ResolvedScript npy = s->Resolve(s->ClassIndex("npy"), 10000);
  CHECK(npy.Reads(0) == std::vector<std::uint64_t>{4096, 5904});
  CHECK(npy.Reads(1) == std::vector<std::uint64_t>{4096, 5904});  // one sample, P = 1
  CHECK(npy.StartOffset(1) == 10000);
  const ResolvedScript npz = s->Resolve(1, 1064);
  CHECK(npz.Reads(0) == std::vector<std::uint64_t>{22, 1000});
  CHECK(npz.Reads(1) == std::vector<std::uint64_t>{22, 1000});
  CHECK(npz.Reads(2) == std::vector<std::uint64_t>{7});
  CHECK(npz.Reads(3) == std::vector<std::uint64_t>{22, 1000});  // P = 3
  CHECK_FALSE(npz.Reopens(2));
  CHECK(npz.StartOffset(3) == 1022 + 1022 + 7);
}

TEST_CASE("read_script: errors name the entry") {
  for (const char* bad : {"8 16", "0: 8", "x: 8", "1:", "1: 8*0", "1: 8*", "1: -3", "1: 8k",
                          "1: open", "1: 8 open 8", "2x 1: 8", "a b 1: 8", "npz 0: 8", "npz: 8",
                          "1: file-", "1: file-x", "1: file+3", "1: file-8*0", "1: files"}) {
    Result<ReadScript> s = ReadScript::Parse({"1: 4", bad});
    REQUIRE_FALSE(s.ok());
    CHECK(s.status().message().find("iomimic.read_script entry 2") != std::string::npos);
  }
  Result<ReadScript> two_lines = ReadScript::Parse({"1: 8\nx"});
  REQUIRE_FALSE(two_lines.ok());
  CHECK(two_lines.status().message().find('\n') == std::string::npos);
  CHECK(two_lines.status().message().find("'1: 8\\nx'") != std::string::npos);
  std::vector<std::string> many(17, "1: 8*1048576");  // 17 x 2^20 reads > 2^24
  Result<ReadScript> s = ReadScript::Parse(many);
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().message().find("iomimic.read_script entry 17") != std::string::npos);
}

}  // namespace
}  // namespace iomimic::train
