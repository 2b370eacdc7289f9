#include <doctest/doctest.h>
TEST_CASE("mds: placeholder") { CHECK(true); }
