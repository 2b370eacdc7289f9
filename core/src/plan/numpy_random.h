// NumPy's legacy global random generator (np.random.seed / np.random.normal),
// reproduced so that per-file sample shapes match DLIO's byte for byte:
// DLIO seeds the legacy generator with 10 and draws 2 normals per file.
//
// MT19937 with NumPy's integer seeding (init_genrand), 53-bit doubles and the
// polar Box-Muller method that caches its second value, as in NumPy's
// legacy distributions.

#pragma once

#include <cstdint>

#include "plan/mt19937.h"

namespace iomimic::plan {

class NumpyLegacyRandom {
 public:
  explicit NumpyLegacyRandom(std::uint32_t seed) { mt_.InitGenrand(seed); }

  std::uint32_t NextU32() { return mt_.Next(); }
  // Uniform in [0, 1), 53 bits, as random_sample().
  double NextDouble() { return mt_.Next53(); }
  // Standard normal, as the legacy gauss.
  double NextGauss();
  // loc + scale * gauss, as np.random.normal(loc, scale).
  double Normal(double loc, double scale) { return loc + scale * NextGauss(); }

 private:
  Mt19937 mt_;
  bool has_gauss_ = false;
  double gauss_ = 0;
};

}  // namespace iomimic::plan
