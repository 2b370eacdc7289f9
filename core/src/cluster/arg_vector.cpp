#include "cluster/arg_vector.h"

namespace iomimic::cluster {

ArgVector::ArgVector(int argc, char** argv, int skip) {
  if (argc > 0) args_.push_back(argv[0]);
  for (int i = 1 + skip; i < argc; ++i) args_.push_back(argv[i]);
  args_.push_back(nullptr);
}

}  // namespace iomimic::cluster
