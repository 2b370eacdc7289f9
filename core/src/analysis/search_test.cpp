#include "analysis/search.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace iomimic::analysis {
namespace {

KvQosClass Class(const std::string& name, double requests, double target, double p95, double p99) {
  KvQosClass c;
  c.name = name;
  c.requests = requests;
  c.target_p95_ms = target;
  c.meets_target = requests == 0 || p95 <= target;
  c.latency_ms = {{"p50", p95 / 2}, {"p95", p95}, {"p99", p99}, {"max", p99 * 2}};
  return c;
}

TEST_CASE("MeetsQos: by default every class with requests meets its own P95 verdict") {
  std::vector<KvQosClass> qos = {Class("interactive", 5, 50, 40, 80),
                                 Class("responsive", 3, 100, 90, 300),
                                 Class("batch", 0, 1000, 0, 0)};
  QosTarget target;
  std::string why;
  CHECK(MeetsQos(qos, 8, target, &why));
  CHECK(why.empty());
  // The summary's verdict is used, not recomputed: a run that says it missed, missed.
  qos[1].meets_target = false;
  CHECK_FALSE(MeetsQos(qos, 8, target, &why));
  CHECK(why.find("responsive") != std::string::npos);
  // A class without requests imposes nothing, whatever its flag says.
  qos[1].meets_target = true;
  qos[2].meets_target = false;
  CHECK(MeetsQos(qos, 8, target, nullptr));
}

TEST_CASE("MeetsQos: a run without requests meets nothing") {
  std::vector<KvQosClass> qos = {Class("interactive", 0, 50, 0, 0)};
  std::string why;
  CHECK_FALSE(MeetsQos(qos, 0, QosTarget{}, &why));
  CHECK(why == "no requests");
}

TEST_CASE("MeetsQos: a chosen class, percentile and threshold") {
  const std::vector<KvQosClass> qos = {Class("interactive", 5, 50, 60, 80),
                                       Class("responsive", 3, 100, 90, 300),
                                       Class("batch", 2, 1000, 200, 400)};
  std::string why;
  QosTarget t;
  t.qos_class = "responsive";
  CHECK(MeetsQos(qos, 10, t, &why));  // interactive's miss does not count
  t.percentile = "p99";               // responsive p99 300 > its 100 ms P95 target
  CHECK_FALSE(MeetsQos(qos, 10, t, &why));
  CHECK(why == "responsive p99 300.0 ms > 100.0 ms");
  t.max_ms = 300;  // at the limit holds
  CHECK(MeetsQos(qos, 10, t, &why));
  t.qos_class = "all";  // batch p99 400 > 300
  CHECK_FALSE(MeetsQos(qos, 10, t, &why));
  CHECK(why.rfind("batch p99", 0) == 0);
  t.max_ms = 400;
  CHECK(MeetsQos(qos, 10, t, &why));
  t.qos_class = "batch";
  t.percentile = "p9999";  // not in this summary
  CHECK_FALSE(MeetsQos(qos, 10, t, &why));
  CHECK(why == "batch has no p9999");
}

TEST_CASE("ValidateQosTarget names the bad word") {
  QosTarget t;
  CHECK(ValidateQosTarget(t).ok());
  t.qos_class = "gold";
  CHECK(ValidateQosTarget(t).ToString().find("'gold'") != std::string::npos);
  t.qos_class = "batch";
  t.percentile = "p97";
  CHECK(ValidateQosTarget(t).ToString().find("'p97'") != std::string::npos);
  t.percentile = "max";
  t.max_ms = -1;
  CHECK_FALSE(ValidateQosTarget(t).ok());
}

TEST_CASE("DescribeQosTarget") {
  QosTarget t;
  CHECK(DescribeQosTarget(t) == "every QoS class with requests meets its P95 target");
  t.qos_class = "interactive";
  t.percentile = "p99";
  t.max_ms = 20;
  CHECK(DescribeQosTarget(t) == "interactive end-to-end p99 <= 20.0 ms");
}

}  // namespace
}  // namespace iomimic::analysis
