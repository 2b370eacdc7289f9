// iomimic plugin SDK, testing helpers: reading files another program wrote
// (numpy, h5py, ...). Header-only and free of any test framework, like
// format_test_support.h, whose interop helpers it builds on.

#pragma once

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "iomimic/format.h"
#include "iomimic/storage.h"
#include "iomimic/testing/format_test_support.h"

namespace iomimic::testing {

// Writes `text` as the real file `p` (a script for kSystemPython).
inline void WriteTextFile(const std::filesystem::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
}

// Runs the Python `script` (its text) with kSystemPython and the folder
// `dir`/foreign as its one argument; the script writes there, for each name
// N of `names`, the file N + `extension` and its samples N + "." + i (see
// MismatchWithSampleFiles). Then reads each file with `format`, on demand
// and kept in memory, and compares every sample. Empty when the script
// succeeds and every sample matches, else every mismatch, one a line.
inline std::string MismatchWithForeignFiles(Format& format, Storage& storage,
                                            const std::filesystem::path& dir,
                                            const std::string& script,
                                            const std::vector<std::string>& names,
                                            const std::string& extension) {
  const std::filesystem::path make = dir / "make_foreign.py";
  const std::filesystem::path foreign = dir / "foreign";
  WriteTextFile(make, script);
  std::filesystem::create_directories(foreign);
  std::string out;
  const int rc =
      RunCommand(std::string(kSystemPython) + " " + make.string() + " " + foreign.string(), &out);
  if (rc != 0) return "the script failed (" + std::to_string(rc) + "): " + out;
  std::string mismatches;
  for (const std::string& name : names) {
    const std::string path = (foreign / (name + extension)).string();
    for (bool keep : {false, true}) {
      const std::string m =
          MismatchWithSampleFiles(format, storage, path, keep, (foreign / name).string());
      if (!m.empty()) mismatches += m + (keep ? " (keep_in_memory)\n" : " (on demand)\n");
    }
  }
  return mismatches;
}

}  // namespace iomimic::testing
