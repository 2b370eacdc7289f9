#include "output/json_stream.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "iomimic/testing/posix_test_storage.h"

namespace iomimic::output {
namespace {

std::string Format(double v) {
  char text[kNumberChars];
  return std::string(text, FormatNumber(v, text));
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("FormatNumber writes the shortest round-trip text, always a JSON float") {
  CHECK(Format(0.5) == "0.5");
  CHECK(Format(0.001000361) == "0.001000361");
  CHECK(Format(4.81e-07) == "4.81e-07");
  CHECK(Format(1.0) == "1.0");
  CHECK(Format(0.0) == "0.0");
  CHECK(Format(-0.0) == "-0.0");
  CHECK(Format(-3.0) == "-3.0");
  CHECK(Format(1e20) == "1e+20");
  CHECK(Format(std::nan("")) == "null");
  CHECK(Format(std::numeric_limits<double>::infinity()) == "null");
  CHECK(Format(-std::numeric_limits<double>::infinity()) == "null");
  CHECK(Format(std::numeric_limits<double>::lowest()).size() < kNumberChars);
  CHECK(Format(-std::numeric_limits<double>::denorm_min()).size() < kNumberChars);

  // Every value reads back exactly, as nlohmann writes it.
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> seconds(0, 100);
  for (int i = 0; i < 2000; ++i) {
    double v = i % 2 ? seconds(rng) : std::round(seconds(rng) * 1e9) / 1e9;
    if (i % 3 == 0) v *= 1e-7;
    const std::string text = Format(v);
    CHECK(std::strtod(text.c_str(), nullptr) == v);
    CHECK(nlohmann::json::parse(text).get<double>() == v);
    CHECK(nlohmann::json::parse(text).is_number_float());
  }
}

TEST_CASE("StepsPerEntry and AggregatedSize bound a list") {
  CHECK(StepsPerEntry(10, 0) == 1);  // unlimited
  CHECK(StepsPerEntry(0, 5) == 1);
  CHECK(StepsPerEntry(10, 10) == 1);
  CHECK(StepsPerEntry(11, 10) == 2);
  CHECK(StepsPerEntry(200000, 1000) == 200);
  CHECK(StepsPerEntry(200001, 1000) == 201);
  CHECK(StepsPerEntry(1000000, 100000) == 10);
  for (std::uint64_t steps : {1ull, 7ull, 999ull, 1000ull, 1001ull, 123457ull, 2000000ull}) {
    for (std::uint64_t bound : {1ull, 3ull, 1000ull, 100000ull}) {
      const std::uint64_t k = StepsPerEntry(steps, bound);
      const std::uint64_t n = AggregatedSize(steps, k);
      CHECK(n <= bound);
      CHECK(n * k >= steps);
      CHECK((n - 1) * k < steps);  // no empty entry
    }
  }
  CHECK(AggregatedSize(10, 1) == 10);
  CHECK(AggregatedSize(0, 3) == 0);
}

TEST_CASE("AggregatedEntry: means of k steps, rounded to the nanosecond") {
  const std::vector<double> v = {0.001, 0.002, 0.003, 0.004, 0.005};
  CHECK(AggregatedEntry(v, 1, 3) == 0.004);  // k = 1: the value itself
  CHECK(AggregatedEntry(v, 2, 0) == 0.0015);
  CHECK(AggregatedEntry(v, 2, 1) == 0.0035);
  CHECK(AggregatedEntry(v, 2, 2) == 0.005);  // the last entry stands for one step
  CHECK(AggregatedEntry(v, 5, 0) == 0.003);
  CHECK(Format(AggregatedEntry(std::vector<double>{0.1, 0.2, 0.2}, 3, 0)) == "0.166666667");
  const std::vector<double> bad = {0.001, std::nan("")};
  CHECK(std::isnan(AggregatedEntry(bad, 2, 0)));

  // sum(entries) * k recovers the sum over whole groups.
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<int> ns(1, 5000000);
  std::vector<double> steps(200000);
  double total = 0;
  for (double& s : steps) total += (s = ns(rng) * 1e-9);
  const std::uint64_t k = StepsPerEntry(steps.size(), 1000);
  double sum = 0;
  for (std::uint64_t i = 0; i < AggregatedSize(steps.size(), k); ++i) {
    sum += AggregatedEntry(steps, k, i);
  }
  CHECK(k == 200);
  CHECK(std::abs(sum * static_cast<double>(k) - total) < 1e-6 * total);
}

TEST_CASE("JsonStream writes nlohmann's dump(4) layout") {
  testing::TempDir dir("json_stream");
  const std::string path = (dir.path() / "out.json").string();
  nlohmann::ordered_json info = {{"model name", "CPU \"x\""}, {"flags", "a b"}};
  {
    JsonStream s;
    REQUIRE(s.Open(path).ok());
    s.Key("host_memory_GB");
    s.Number(23.5);
    s.Key("host_cpuinfo");
    s.Raw(info.dump(4));
    s.Key("1");
    s.BeginObject();
    s.Key("load");
    s.BeginObject();
    s.Key("block1");
    s.StepList(std::vector<double>{0.25, std::nan(""), 2.0}, 1);
    s.Key("eval");
    s.StepList(std::vector<double>{}, 1);
    s.EndObject();
    s.Key("empty");
    s.BeginObject();
    s.EndObject();
    s.Key("we\"ird\n");
    s.Raw("\"x\"");
    s.EndObject();
    REQUIRE(s.Close().ok());
  }
  nlohmann::ordered_json want;
  want["host_memory_GB"] = 23.5;
  want["host_cpuinfo"] = info;
  want["1"]["load"]["block1"] = {0.25, nullptr, 2.0};
  want["1"]["load"]["eval"] = nlohmann::json::array();
  want["1"]["empty"] = nlohmann::json::object();
  want["1"]["we\"ird\n"] = "x";
  const std::string text = ReadAll(path);
  CHECK(nlohmann::ordered_json::parse(text) == want);
  // The same lines as nlohmann's dump(4) but for the list's values, which
  // share lines.
  std::string expected = want.dump(4) + "\n";
  const std::string listed =
      "[\n                0.25,\n                null,\n                2.0\n";
  const std::size_t at = expected.find(listed);
  REQUIRE(at != std::string::npos);
  expected.replace(at, listed.size(), "[\n                0.25, null, 2.0\n");
  CHECK(text == expected);
}

TEST_CASE("JsonStream: ten values a line, aggregated lists, errors") {
  testing::TempDir dir("json_stream");
  const std::string path = (dir.path() / "list.json").string();
  std::vector<double> v(25);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i) / 1000.0;
  {
    JsonStream s;
    REQUIRE(s.Open(path).ok());
    s.Key("all");
    s.StepList(v, 1);
    s.Key("by4");
    s.StepList(v, 4);
    REQUIRE(s.Close().ok());
  }
  const std::string text = ReadAll(path);
  const auto doc = nlohmann::json::parse(text);
  REQUIRE(doc["all"].size() == 25);
  for (std::size_t i = 0; i < v.size(); ++i) CHECK(doc["all"][i].get<double>() == v[i]);
  REQUIRE(doc["by4"].size() == 7);
  CHECK(doc["by4"][0].get<double>() == 0.0015);
  CHECK(doc["by4"][6].get<double>() == 0.024);
  CHECK(text.find("0.0, 0.001, 0.002, 0.003, 0.004, 0.005, 0.006, 0.007, 0.008, 0.009,\n") !=
        std::string::npos);

  // A large list goes through several buffer flushes intact.
  std::vector<double> big(300000);
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<double>(i) * 1e-9;
  {
    JsonStream s;
    REQUIRE(s.Open(path).ok());
    s.Key("big");
    s.StepList(big, 1);
    REQUIRE(s.Close().ok());
  }
  const auto parsed = nlohmann::json::parse(ReadAll(path));
  REQUIRE(parsed["big"].size() == big.size());
  CHECK(parsed["big"][299999].get<double>() == big[299999]);

  JsonStream missing;
  const Status st = missing.Open((dir.path() / "no" / "such" / "dir.json").string());
  CHECK_FALSE(st.ok());
  CHECK(st.message().find("dir.json") != std::string::npos);

  JsonStream full;
  if (full.Open("/dev/full").ok()) {
    full.Key("big");
    full.StepList(big, 1);
    const Status s = full.Close();
    CHECK_FALSE(s.ok());
    CHECK(s.message().find("/dev/full") != std::string::npos);
  }
}

}  // namespace iomimic::output
