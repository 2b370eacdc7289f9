// `iomimic derive TRACE -o workload.yaml` and `iomimic fidelity ORIGINAL
// RUN...`: a training workload inferred from a recorded application's
// trace, and the traces of the original and the runs that imitate it side
// by side (core/src/apptrace/derive.h, fidelity.h; docs/derive.md).

#include "apptrace/derive.h"

#include <boost/program_options.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "apptrace/fidelity.h"
#include "apptrace/model.h"
#include "apptrace/profile.h"
#include "cli.h"

namespace iomimic::app {

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace {

struct DeriveArgs {
  std::vector<std::string> positional;
  std::string output, data, name, json;
  double step_gap = 0.002;
  bool force = false, check = false;
};

// The profile of the trace at `path`.
Result<apptrace::TraceProfile> ProfileOf(const std::string& path, const DeriveArgs& a) {
  IOMIMIC_ASSIGN_OR_RETURN(const apptrace::AppTrace trace, apptrace::ReadTrace(path));
  apptrace::ProfileOptions options;
  options.data_dir = a.data;
  options.min_step_gap_s = a.step_gap;
  return apptrace::ProfileTrace(trace, options);
}

// Writes `text` to `path` through a temporary file and a rename; refuses an
// existing file unless `force`.
Status WriteNew(const std::string& path, const std::string& text, bool force) {
  std::error_code ec;
  if (!force && fs::exists(path, ec)) {
    return Status::AlreadyExists(path + " exists (--force overwrites it)");
  }
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) return Status::IOError("cannot write " + tmp);
  }
  fs::rename(tmp, path, ec);
  if (ec) return Status::IOError("cannot rename " + tmp + " to " + path + ": " + ec.message());
  return Status::OK();
}

// The model's name: the trace's file name without its extensions.
std::string NameOf(const std::string& trace) {
  std::string stem = fs::path(trace).filename().string();
  stem = stem.substr(0, stem.find('.'));
  std::string name = "derived_";
  for (const char c : stem) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return name;
}

bool Parse(const char* usage, const char* help, po::options_description& opts, int argc,
           char** argv, DeriveArgs* a, int* exit_code) {
  po::variables_map vm;
  if (!ParseArgs(argc, argv, opts, po::command_line_style::default_style, &a->positional, &vm,
                 exit_code)) {
    return false;
  }
  if (vm.count("help")) {
    std::cout << usage << "\n\n" << help << "\n" << opts << std::endl;
    *exit_code = 0;
    return false;
  }
  if (a->step_gap <= 0) {
    *exit_code = Usage("--step-gap must be more than 0 seconds");
    return false;
  }
  return true;
}

}  // namespace

int CmdDerive(int argc, char** argv) {
  DeriveArgs a;
  po::options_description opts("options of 'iomimic derive'");
  opts.add_options()("help,h", "show this help")("output,o", po::value<std::string>(&a.output),
                                                 "the manifest to write (required)")(
      "force", po::bool_switch(&a.force), "overwrite the manifest when it exists")(
      "data", po::value<std::string>(&a.data),
      "the data set's folder in the trace (default: the folder of the most bytes read)")(
      "name", po::value<std::string>(&a.name), "model name (default: derived_<trace name>)")(
      "step-gap", po::value<double>(&a.step_gap),
      "seconds of pause between a thread's reads that end a step (default 0.002)");
  int code = 0;
  if (!Parse("usage: iomimic derive TRACE -o workload.yaml [options]",
             "Infers a training workload from a recorded application's I/O trace (strace\n"
             "text or DFTracer): the data files and their sizes, the format, the reads of\n"
             "each sample, reader threads, samples per step, compute per step, epochs and\n"
             "checkpoint writes. Writes a commented manifest that iomimic runs at any scale\n"
             "and prints to stderr what it could not infer (docs/derive.md).",
             opts, argc, argv, &a, &code)) {
    return code;
  }
  if (a.positional.size() != 1) {
    return Usage("derive takes one trace file, got " + std::to_string(a.positional.size()));
  }
  if (a.output.empty()) return Usage("derive needs -o FILE, the manifest to write");
  Result<apptrace::TraceProfile> profile = ProfileOf(a.positional[0], a);
  if (!profile.ok()) return Fail(profile.status().WithContext("derive"));
  const apptrace::DerivedManifest m =
      apptrace::DeriveManifest(*profile, a.name.empty() ? NameOf(a.positional[0]) : a.name);
  if (Status s = WriteNew(a.output, m.yaml, a.force); !s.ok()) {
    return Fail(s.WithContext("derive"));
  }
  std::cerr << "derive: not inferred from the trace:\n";
  for (const std::string& line : m.not_inferred) std::cerr << "  - " << line << "\n";
  std::cout << "derive: wrote " << a.output << " (" << profile->files.size() << " data files, "
            << profile->read_ops << " reads, " << profile->written.size() << " files written)"
            << std::endl;
  return 0;
}

int CmdFidelity(int argc, char** argv) {
  DeriveArgs a;
  po::options_description opts("options of 'iomimic fidelity'");
  opts.add_options()("help,h", "show this help")("json", po::value<std::string>(&a.json),
                                                 "also write the report as JSON to this file")(
      "check", po::bool_switch(&a.check),
      "exit 1 when a run does not reproduce the original's bytes per epoch, read sizes or "
      "opens per file")("step-gap", po::value<double>(&a.step_gap),
                        "seconds of pause between a thread's reads that end a step (default "
                        "0.002)");
  int code = 0;
  if (!Parse("usage: iomimic fidelity ORIGINAL_TRACE RUN_TRACE... [--json FILE] [--check]",
             "Puts the I/O of an original program's trace and of the runs that imitate it\n"
             "(their traces: an iomimic replay, a run of the derived workload) side by side:\n"
             "ops, bytes and reads by size per epoch, opens per file, throughput, step time;\n"
             "and says whether each run reproduces the original's bytes per epoch, read\n"
             "sizes (5% per power-of-two bin) and opens per file (docs/derive.md).",
             opts, argc, argv, &a, &code)) {
    return code;
  }
  if (a.positional.size() < 2) return Usage("fidelity needs the original's trace and one more");
  std::vector<apptrace::TraceProfile> profiles;
  for (const std::string& path : a.positional) {
    Result<apptrace::TraceProfile> p = ProfileOf(path, a);
    if (!p.ok()) return Fail(p.status().WithContext("fidelity"));
    profiles.push_back(std::move(p).value());
  }
  const apptrace::FidelityTolerance tolerance;
  std::cout << apptrace::FidelityText(profiles, tolerance);
  if (!a.json.empty()) {
    if (Status s = WriteNew(a.json, apptrace::FidelityJson(profiles, tolerance), true); !s.ok()) {
      return Fail(s.WithContext("fidelity"));
    }
  }
  bool all = true;
  for (std::size_t i = 1; i < profiles.size(); ++i) {
    all &= apptrace::CompareProfiles(profiles[0], profiles[i], tolerance).ok();
  }
  return a.check && !all ? 1 : 0;
}

}  // namespace iomimic::app
