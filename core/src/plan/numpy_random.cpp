#include "plan/numpy_random.h"

#include <cmath>

namespace iomimic::plan {

double NumpyLegacyRandom::NextGauss() {
  if (has_gauss_) {
    has_gauss_ = false;
    return gauss_;
  }
  double x1, x2, r2;
  do {
    x1 = 2.0 * NextDouble() - 1.0;
    x2 = 2.0 * NextDouble() - 1.0;
    r2 = x1 * x1 + x2 * x2;
  } while (r2 >= 1.0 || r2 == 0.0);
  double f = std::sqrt(-2.0 * std::log(r2) / r2);
  gauss_ = f * x1;
  has_gauss_ = true;
  return f * x2;
}

}  // namespace iomimic::plan
