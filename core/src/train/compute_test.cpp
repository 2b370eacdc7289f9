#include "train/compute.h"

#include <doctest/doctest.h>

#include <cmath>

namespace iomimic::train {

TEST_CASE("time sampler: constants, absolute values and distribution means") {
  config::Distribution constant;
  constant.mean = 0.25;
  TimeSampler c(constant, 1);
  CHECK(c.Draw() == 0.25);

  config::Distribution negative;
  negative.mean = -1;  // DLIO sleeps |draw|
  CHECK(TimeSampler(negative, 1).Draw() == 1.0);

  config::Distribution normal;
  normal.kind = config::Distribution::Kind::kNormal;
  normal.mean = 2.0;
  normal.stdev = 0.1;
  TimeSampler n(normal, 7);
  double sum = 0;
  for (int i = 0; i < 20000; ++i) sum += n.Draw();
  CHECK(sum / 20000 == doctest::Approx(2.0).epsilon(0.01));

  config::Distribution uniform;
  uniform.kind = config::Distribution::Kind::kUniform;
  uniform.min = 1;
  uniform.max = 3;
  TimeSampler u(uniform, 7);
  for (int i = 0; i < 1000; ++i) {
    double v = u.Draw();
    CHECK(v >= 1);
    CHECK(v < 3);
  }
  // Same seed, same draws.
  TimeSampler a(normal, 99), b(normal, 99);
  for (int i = 0; i < 10; ++i) CHECK(a.Draw() == b.Draw());
}

TEST_CASE("precise sleep never returns early") {
  for (double s : {0.0, 0.0005, 0.002}) {
    double waited = PreciseSleep(s);
    CHECK(waited >= s);
  }
}

}  // namespace iomimic::train
