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
//   --skip NAME        leave NAME out (repeatable, or a list)
//   --root NAME=ROOT   the bucket (or bucket/prefix) under which the storage
//                      cases of NAME, a back end with the capability
//                      IOMIMIC_CAP_ENDPOINT (s3), put their files; such a
//                      back end without a root is skipped with one line
//                      saying why. Its endpoint and keys are its own
//                      business (options, environment; docs/s3.md for s3).
//   --storage NAME     back ends the format suite writes and reads through
//                      (default posix,odirect,mmap,memory,gds,mpiio,faulty,
//                      latency,shard_cache; "memory" is the
//                      SDK's iomimic/testing/memory_storage.h)
//
// The environment variables IOMIMIC_CONFORMANCE_PLUGIN_DIR (a folder, as
// --plugin-dir), IOMIMIC_CONFORMANCE_SKIP (names, as --skip, separated by
// commas, colons or spaces) and IOMIMIC_CONFORMANCE_ROOT (NAME=ROOT items
// separated by commas, as --root) do the same from outside. Plugins the
// suites need but do not test (posix, for decorators to wrap and formats to
// write through) come from the usual search path (plugin/registry.h).

#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "plugin/registry.h"

namespace iomimic::conformance {

// Set by main() from the command line, before any test runs.
struct Settings {
  std::vector<std::string> plugin_dirs;
  std::set<std::string> only;  // empty: every plugin found
  std::set<std::string> skip;  // --skip
  // --root: plugin name -> the bucket its storage cases write under.
  std::map<std::string, std::string> roots;
  std::vector<std::string> storages = {"posix", "odirect", "mmap",    "memory",     "gds",
                                       "mpiio", "faulty",  "latency", "shard_cache"};
};
Settings& TheSettings();

// Splits "a,b c:d" into names.
std::set<std::string> SplitNames(const std::string& text);

// Adds the NAME=ROOT items of `text` (separated by commas) to `roots`; false
// with `*bad` the offending item when one has no '=', an empty name or an
// empty root.
bool AddRoots(const std::string& text, std::map<std::string, std::string>* roots, std::string* bad);

// Where the storage cases of `info` put their files: "" for local temporary
// folders, or, for a back end with IOMIMIC_CAP_ENDPOINT, the root given for
// it (Settings::roots: --root, then IOMIMIC_CONFORMANCE_ROOT, read by
// main()) without a trailing '/'.
std::string RootFor(const plugin::PluginInfo& info);

// The registry over --plugin-dir folders first, then the usual search path.
const plugin::Registry& TheRegistry();

// The plugins of `kind` under test: found in a --plugin-dir folder (or
// anywhere when none was given), named by --plugin when given, minus --skip
// and IOMIMIC_CONFORMANCE_SKIP, minus back ends that need an endpoint and
// have no root (each left out is named on stdout with the reason, once).
// Starts MPI for collective back ends.
const std::vector<plugin::PluginInfo>& PluginsUnderTest(plugin::Kind kind);

// Whether any plugin of any kind is under test (a --plugin of the other
// kind leaves one suite with nothing to do, which is not a failure).
bool AnyPluginUnderTest();

// Initialises MPI once (a singleton process) and finalises it at exit.
void StartMpi();

}  // namespace iomimic::conformance
