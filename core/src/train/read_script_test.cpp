#include "train/read_script.h"

#include <doctest/doctest.h>

namespace iomimic::train {
namespace {

TEST_CASE("read script: entries, samples and offsets") {
  Result<ReadScript> s = ReadScript::Parse({"1: open 8 16*2 0", "2: 100"});
  REQUIRE(s.ok());
  CHECK(s->Reopens(0));
  CHECK_FALSE(s->Reopens(1));
  CHECK(s->Reopens(3));
  CHECK(s->Reads(0) == std::vector<std::uint64_t>{8, 16, 16, 0});
  CHECK(s->Reads(1) == std::vector<std::uint64_t>{100});
  CHECK(s->Reads(2) == std::vector<std::uint64_t>{100});
  CHECK(s->Reads(3) == std::vector<std::uint64_t>{8, 16, 16, 0});  // the cycle again
  CHECK(s->StartOffset(0) == 0);
  CHECK(s->StartOffset(1) == 40);
  CHECK(s->StartOffset(2) == 140);
  CHECK(s->StartOffset(3) == 240);
  CHECK(s->StartOffset(4) == 280);
}

TEST_CASE("read script: errors name the entry") {
  for (const char* bad : {"8 16", "0: 8", "x: 8", "1:", "1: 8*0", "1: 8*", "1: -3", "1: 8k",
                          "1: open", "1: 8 open 8"}) {
    Result<ReadScript> s = ReadScript::Parse({"1: 4", bad});
    REQUIRE_FALSE(s.ok());
    CHECK(s.status().message().find("iomimic.read_script entry 2") != std::string::npos);
  }
}

}  // namespace
}  // namespace iomimic::train
