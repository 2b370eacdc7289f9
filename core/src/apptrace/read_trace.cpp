// ReadTrace (apptrace/model.h): the file's bytes, gunzipped when its name
// ends in .gz, handed to the reader its name or first bytes call for.

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "apptrace/darshan_dxt_reader.h"
#include "apptrace/dftracer_reader.h"
#include "apptrace/model.h"
#include "apptrace/strace_reader.h"

namespace iomimic::apptrace {
namespace {

Result<std::string> ReadGzip(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return Status::FromErrno(errno, path);
  std::string text;
  char chunk[1 << 16];
  int n = 0;
  while ((n = gzread(f, chunk, sizeof chunk)) > 0) text.append(chunk, static_cast<std::size_t>(n));
  int err = 0;
  const char* message = gzerror(f, &err);
  const std::string why = n < 0 && message != nullptr ? message : "";
  gzclose(f);
  if (n < 0) return Status::Corruption(path + ": not a readable gzip file: " + why);
  return text;
}

Result<std::string> ReadAll(const std::string& path) {
  if (path.ends_with(".gz")) return ReadGzip(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::FromErrno(errno, path);
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Status::IOError(path + ": read failed");
  return text.str();
}

}  // namespace

Result<AppTrace> ReadTrace(const std::string& path) {
  if (path.ends_with(".darshan")) {
    return Status::InvalidArgument(path +
                                   ": a binary Darshan log; replay the text of "
                                   "'darshan-dxt-parser " +
                                   path + " > TRACE.dxt' (docs/replay.md, \"Darshan DXT\")");
  }
  IOMIMIC_ASSIGN_OR_RETURN(const std::string text, ReadAll(path));
  if (path.ends_with(".dxt") || path.ends_with(".dxt.gz") || LooksLikeDarshanDxt(text)) {
    return ReadDarshanDxt(text, path);
  }
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  const bool json_lines = first != std::string::npos && (text[first] == '[' || text[first] == '{');
  if (path.ends_with(".pfw") || path.ends_with(".pfw.gz") || json_lines) {
    return ReadDftracer(text, path);
  }
  return ReadStrace(text, path);
}

}  // namespace iomimic::apptrace
