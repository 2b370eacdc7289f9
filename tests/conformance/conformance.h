// What the two conformance suites share (storage_conformance_test.cpp,
// format_conformance_test.cpp): which plugins are under test, the registry
// that loads them, and MPI for back ends built on it.
//
// The suites are compiled into one program, iomimic-conformance (installed
// beside the iomimic binary; `iomimic conformance` runs it). Its own options,
// taken out before doctest sees the command line (conformance_main.cpp):
//
//   --plugin-dir DIR   test the plugins in DIR (repeatable); without it, the
//                      plugins beside the binary (<bin>/../lib/iomimic/plugins)
//   --plugin NAME      test only NAME (repeatable, or a comma-separated list)
//   --storage NAME     back ends the format suite writes and reads through
//                      (default posix,odirect,mmap,memory,gds,mpiio,faulty,
//                      latency; "memory" is the
//                      SDK's iomimic/testing/memory_storage.h)
//
// The environment variables IOMIMIC_CONFORMANCE_PLUGIN_DIR (a folder, as
// --plugin-dir) and IOMIMIC_CONFORMANCE_SKIP (names to leave out, separated
// by commas, colons or spaces) do the same from outside. Plugins the suites
// need but do not test (posix, for decorators to wrap and formats to write
// through) come from the usual search path (plugin/registry.h).

#pragma once

#include <set>
#include <string>
#include <vector>

#include "plugin/registry.h"

namespace iomimic::conformance {

// Set by main() from the command line, before any test runs.
struct Settings {
  std::vector<std::string> plugin_dirs;
  std::set<std::string> only;  // empty: every plugin found
  std::vector<std::string> storages = {"posix", "odirect", "mmap",   "memory",
                                       "gds",   "mpiio",   "faulty", "latency"};
};
Settings& TheSettings();

// Splits "a,b c:d" into names.
std::set<std::string> SplitNames(const std::string& text);

// The registry over --plugin-dir folders first, then the usual search path.
const plugin::Registry& TheRegistry();

// The plugins of `kind` under test: found in a --plugin-dir folder (or
// anywhere when none was given), named by --plugin when given, minus
// IOMIMIC_CONFORMANCE_SKIP. Starts MPI for collective back ends.
const std::vector<plugin::PluginInfo>& PluginsUnderTest(plugin::Kind kind);

// Whether any plugin of any kind is under test (a --plugin of the other
// kind leaves one suite with nothing to do, which is not a failure).
bool AnyPluginUnderTest();

// Initialises MPI once (a singleton process) and finalises it at exit.
void StartMpi();

}  // namespace iomimic::conformance
