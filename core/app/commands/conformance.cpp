// `iomimic conformance`: runs iomimic-conformance, installed beside this
// binary (the suites in tests/conformance), with the same arguments; its exit
// status is ours.

#include <unistd.h>

#include <boost/dll/runtime_symbol_info.hpp>
#include <cerrno>
#include <filesystem>
#include <iostream>

#include "cli.h"

namespace iomimic::app {

namespace fs = std::filesystem;

int CmdConformance(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::cout
          << "usage: iomimic conformance [--plugin-dir DIR]... [--plugin NAME]...\n"
             "                           [--skip NAME]... [--root NAME=BUCKET]...\n"
             "                           [--storage NAME]... [doctest options]\n\n"
             "Runs the storage and format conformance suites (docs/plugins.md) against\n"
             "the plugins in each --plugin-dir (default: the plugins beside this binary),\n"
             "only the --plugin names when given, never the --skip names. A back end on a\n"
             "server (capability 'endpoint': s3) runs its cases under the bucket given by\n"
             "--root NAME=BUCKET, with the endpoint and keys it reads itself (docs/s3.md);\n"
             "without one it is skipped with a line saying why. --storage names the back\n"
             "ends formats are written through (default: every in-tree back end and memory).\n"
             "Other options go to doctest (-tc=PATTERN, -s, --dt-help). Exit status 0 when\n"
             "all passed.\n";
      return 0;
    }
  }
  std::error_code ec;
  const fs::path exe = boost::dll::program_location(ec);
  if (ec) return Fail(Status::Internal("cannot locate the iomimic binary: " + ec.message()));
  const fs::path suite = exe.parent_path() / "iomimic-conformance";
  if (!fs::exists(suite)) {
    return Fail(Status::NotFound(suite.string() +
                                 " is missing: it is built and installed with iomimic when "
                                 "CMake finds doctest (Debian: doctest-dev; scripts/deps.sh)"));
  }
  std::vector<std::string> args{suite.string()};
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  std::vector<char*> cargs;
  for (std::string& a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  std::cout.flush();
  ::execv(suite.c_str(), cargs.data());
  return Fail(Status::FromErrno(errno, "exec " + suite.string()));
}

}  // namespace iomimic::app
