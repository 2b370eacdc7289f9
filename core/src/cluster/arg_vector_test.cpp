#include "cluster/arg_vector.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace iomimic::cluster {

// Issue 13, defect 1: the vector handed to MPI_Init_thread lacked the
// terminating null; Open MPI read past its end (crashing under ASan when the
// count after the command word was a power of two).
TEST_CASE("ArgVector ends in a null pointer for every argument count") {
  for (int extra = 0; extra <= 17; ++extra) {
    CAPTURE(extra);
    std::vector<std::string> words = {"iomimic", "run"};
    for (int i = 0; i < extra; ++i) words.push_back("a" + std::to_string(i) + "=1");
    std::vector<char*> raw;
    for (std::string& w : words) raw.push_back(w.data());
    raw.push_back(nullptr);
    ArgVector v(static_cast<int>(words.size()), raw.data(), /*skip=*/1);
    REQUIRE(v.argc() == extra + 1);
    CHECK(std::string(v.argv()[0]) == "iomimic");
    for (int i = 1; i < v.argc(); ++i) CHECK(v.argv()[i] == raw[static_cast<std::size_t>(i) + 1]);
    CHECK(v.argv()[v.argc()] == nullptr);
  }
}

}  // namespace iomimic::cluster
