// Messages, files and the folder-taking option parser shared by the
// commands of the iomimic command line (core/app/cli.h).

#include <boost/program_options.hpp>
#include <cstdarg>
#include <cstdio>
#include <iostream>

#include "analysis/sweep.h"
#include "cli.h"
#include "cluster/cluster.h"

namespace iomimic::app {

namespace po = boost::program_options;

std::string Format(const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  return buf;
}

std::string Printable(const std::string& text) {
  std::string out;
  for (unsigned char ch : text) {
    if (ch == '\n' || ch == '\t') {
      out += ' ';
    } else if (ch < 0x20 || ch >= 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "\\x%02x", ch);
      out += hex;
    } else {
      out += static_cast<char>(ch);
    }
  }
  return out;
}

int Fail(const Status& status) {
  const cluster::Cluster* c = cluster::Cluster::Current();
  if (c == nullptr || c->size() == 1 || c->rank() == 0 || !c->failure_agreed()) {
    std::cerr << "iomimic: error: " << Printable(status.message()) << std::endl;
  }
  return 1;
}

int Usage(const std::string& message) {
  std::cerr << "iomimic: error: " << message << " (see 'iomimic --help')" << std::endl;
  return 2;
}

Status AppendStorageAndOutput(const std::string& storage,
                              const std::vector<std::string>& storage_options,
                              const std::string& output, std::vector<std::string>* run) {
  const std::string w = "++workload.";
  run->push_back(w + "storage.backend=" + storage);
  for (const std::string& kv : storage_options) {
    const std::size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status::InvalidArgument("--storage-option '" + kv + "' is not KEY=VALUE");
    }
    run->push_back(w + "storage.options." + kv);
  }
  if (!output.empty()) run->push_back(w + "output.folder=" + output);
  return Status::OK();
}

int RunWithArgs(std::vector<std::string> run) {
  std::vector<char*> cargs;
  for (std::string& arg : run) cargs.push_back(arg.data());
  cargs.push_back(nullptr);
  return CmdRun(static_cast<int>(run.size()), cargs.data());
}

Status WriteHtml(const std::string& path, const std::string& html) {
  return analysis::ReplaceFile(path, path + ".iomimic-tmp", html);
}

bool ParseArgs(int argc, char** argv, const po::options_description& opts, int style,
               std::vector<std::string>* positional, po::variables_map* vm, int* exit_code) {
  po::options_description hidden;
  hidden.add_options()("args", po::value<std::vector<std::string>>(positional));
  po::positional_options_description pos;
  pos.add("args", -1);
  po::options_description all;
  all.add(opts).add(hidden);
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(pos).style(style).run(),
              *vm);
    po::notify(*vm);
  } catch (const po::error& e) {
    *exit_code = Usage(e.what());
    return false;
  }
  return true;
}

namespace {

// Takes "--opt VALUE" or "--opt=VALUE" at argv[*i]; false when argv[*i] is
// another argument. A missing value is a usage error (*code set).
bool TakeValue(int argc, char** argv, int* i, const std::string& name, std::string* value,
               int* code) {
  const std::string a = argv[*i];
  if (a == name) {
    if (*i + 1 >= argc) {
      *code = Usage(name + " needs a value");
      return true;
    }
    *value = argv[++*i];
    return true;
  }
  if (a.rfind(name + "=", 0) == 0) {
    *value = a.substr(name.size() + 1);
    return true;
  }
  return false;
}

}  // namespace

bool ParseFolderArgs(const std::string& command, int argc, char** argv, const char* help,
                     const std::vector<ValueOption>& options, std::vector<std::string>* folders,
                     int* exit_code) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::cout << help;
      *exit_code = 0;
      return false;
    }
    bool taken = false;
    for (const ValueOption& option : options) {
      int code = 0;
      if (!TakeValue(argc, argv, &i, option.name, option.value, &code)) continue;
      if (code != 0) {
        *exit_code = code;
        return false;
      }
      taken = true;
      break;
    }
    if (taken) continue;
    if (a.rfind("-", 0) == 0) {
      *exit_code = Usage(command + ": unknown option " + a);
      return false;
    }
    folders->push_back(a);
  }
  return true;
}

}  // namespace iomimic::app
