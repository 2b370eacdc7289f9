// iomimic plugin SDK, testing helpers: the FileSpec a format test writes.

#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "iomimic/format.h"

namespace iomimic::testing {

// A spec of `samples` samples of `shape` elements of `dtype` (a NumPy name,
// e.g. "float32"), content seed `seed`, written at `path` with
// `compression`. An unknown dtype is a bug in the test: it aborts, naming it.
inline FileSpec TestFileSpec(const std::string& dtype, std::vector<std::uint64_t> shape,
                             std::uint64_t samples, std::uint64_t seed, std::string path,
                             std::string compression = "none") {
  Result<ElementType> type = ElementType::FromName(dtype);
  if (!type.ok()) {
    std::fprintf(stderr, "TestFileSpec: %s\n", type.status().ToString().c_str());
    std::abort();
  }
  FileSpec spec;
  spec.path = std::move(path);
  spec.element_type = *type;
  spec.sample_shape = std::move(shape);
  spec.num_samples = samples;
  spec.seed = seed;
  spec.compression = std::move(compression);
  return spec;
}

}  // namespace iomimic::testing
