// Entry point of doctest executables built by iomimic_add_plugin() and the
// core's unit tests.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
