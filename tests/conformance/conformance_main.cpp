// main() of iomimic-conformance: takes the suites' own options out of the
// command line (conformance.h) and hands the rest to doctest, so doctest's
// filters (-tc, -sc) and reporters work as usual.

#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "conformance.h"

namespace {

constexpr const char* kUsage =
    "usage: iomimic-conformance [--plugin-dir DIR]... [--plugin NAME]... [--skip NAME]...\n"
    "                           [--root NAME=BUCKET]... [--storage NAME]... [doctest options]\n"
    "Runs the storage and format conformance suites against plugins: those in each\n"
    "--plugin-dir (default: the plugin folder beside the binary), only the --plugin\n"
    "names when given, never the --skip names. A back end that keeps its data on a\n"
    "server (capability 'endpoint', such as s3) is tested under the bucket --root\n"
    "gives it, with the endpoint and keys it reads itself; without one it is skipped\n"
    "with a line saying so. --storage names the back ends formats are written through\n"
    "(default posix,odirect,mmap,memory,gds,mpiio,faulty,latency,shard_cache). Environment:\n"
    "IOMIMIC_CONFORMANCE_PLUGIN_DIR, IOMIMIC_CONFORMANCE_SKIP, IOMIMIC_CONFORMANCE_ROOT\n"
    "(as --plugin-dir, --skip, --root). Exit status 0 when every case passed.\n";

}  // namespace

int main(int argc, char** argv) {
  using iomimic::conformance::AddRoots;
  using iomimic::conformance::SplitNames;
  using iomimic::conformance::TheSettings;
  std::vector<char*> rest{argv[0]};
  bool storages_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](const std::string& flag, std::string* out) {
      if (arg == flag && i + 1 < argc) {
        *out = argv[++i];
        return true;
      }
      if (arg.rfind(flag + "=", 0) == 0) {
        *out = arg.substr(flag.size() + 1);
        return true;
      }
      return false;
    };
    std::string v;
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage << "\ndoctest options: --dt-help\n";
      return 0;
    } else if (arg == "--dt-help") {
      rest.push_back(const_cast<char*>("--help"));
    } else if (value("--plugin-dir", &v)) {
      TheSettings().plugin_dirs.push_back(v);
    } else if (value("--plugin", &v)) {
      for (const std::string& n : SplitNames(v)) TheSettings().only.insert(n);
    } else if (value("--skip", &v)) {
      TheSettings().skip.merge(SplitNames(v));
    } else if (value("--root", &v)) {
      std::string bad;
      if (!AddRoots(v, &TheSettings().roots, &bad)) {
        std::cerr << "iomimic-conformance: error: --root '" << bad
                  << "': expected NAME=BUCKET (a storage plugin's name and the bucket, or "
                     "bucket/prefix, its cases write under)\n";
        return 2;
      }
    } else if (value("--storage", &v)) {
      if (!storages_given) TheSettings().storages.clear();
      storages_given = true;
      for (const std::string& n : SplitNames(v)) TheSettings().storages.push_back(n);
    } else {
      rest.push_back(argv[i]);
    }
  }
  // The environment's roots, for names the command line left without one.
  if (const char* env = std::getenv("IOMIMIC_CONFORMANCE_ROOT")) {
    std::map<std::string, std::string> from_env;
    std::string bad;
    if (!AddRoots(env, &from_env, &bad)) {
      std::cerr << "iomimic-conformance: error: IOMIMIC_CONFORMANCE_ROOT item '" << bad
                << "': expected NAME=BUCKET items separated by commas\n";
      return 2;
    }
    TheSettings().roots.merge(from_env);
  }
  doctest::Context context(static_cast<int>(rest.size()), rest.data());
  return context.run();
}
