// Messages, files and the folder-taking option parser shared by the
// commands of the iomimic command line (core/app/cli.h).

#include <cstdarg>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli.h"
#include "cluster/cluster.h"

namespace iomimic::app {

namespace fs = std::filesystem;

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

Status WriteHtml(const std::string& path, const std::string& html) {
  const std::string temp = path + ".iomimic-tmp";
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out << html;
    if (!out) return Status::IOError("cannot write " + temp);
  }
  std::error_code ec;
  fs::rename(temp, path, ec);
  if (ec) return Status::FromErrno(ec.value(), "cannot write " + path);
  return Status::OK();
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
