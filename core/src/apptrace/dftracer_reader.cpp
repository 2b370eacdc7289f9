#include "apptrace/dftracer_reader.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

namespace iomimic::apptrace {
namespace {

using PfwJson = nlohmann::json;

// One POSIX or STDIO event as read, before its file name is resolved.
struct Event {
  std::string name;
  std::string fname;  // args.fname, or args.fhash until resolved
  bool hashed = false;
  std::int64_t pid = 0, tid = 0;
  std::int64_t start_ns = 0, dur_ns = 0;
  std::optional<std::int64_t> fd, ret, size, offset, flags;
  bool is_dir = false;  // a stat's args.is_dir (iomimic's trace)
  std::string mode;     // fopen's
  std::string fname2;   // rename's new name (args.new_fname)
  std::size_t line = 0;
};

std::optional<std::int64_t> IntArg(const PfwJson& args, const char* key) {
  auto it = args.find(key);
  if (it == args.end()) return std::nullopt;
  if (it->is_number_integer()) return it->get<std::int64_t>();
  if (it->is_number_float() && std::isfinite(it->get<double>()) &&
      std::fabs(it->get<double>()) < 9e18) {
    return static_cast<std::int64_t>(it->get<double>());
  }
  return std::nullopt;
}

std::string TextArg(const PfwJson& args, const char* key) {
  auto it = args.find(key);
  if (it == args.end()) return {};
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number_integer()) return std::to_string(it->get<std::int64_t>());
  return {};
}

std::optional<OpKind> KindOf(const std::string& name) {
  static const std::map<std::string, OpKind, std::less<>> kinds = {
      {"open", OpKind::kOpen},       {"open64", OpKind::kOpen},
      {"openat", OpKind::kOpen},     {"openat64", OpKind::kOpen},
      {"creat", OpKind::kOpen},      {"creat64", OpKind::kOpen},
      {"fopen", OpKind::kOpen},      {"fopen64", OpKind::kOpen},
      {"read", OpKind::kRead},       {"pread", OpKind::kRead},
      {"pread64", OpKind::kRead},    {"readv", OpKind::kRead},
      {"preadv", OpKind::kRead},     {"fread", OpKind::kRead},
      {"write", OpKind::kWrite},     {"pwrite", OpKind::kWrite},
      {"pwrite64", OpKind::kWrite},  {"writev", OpKind::kWrite},
      {"pwritev", OpKind::kWrite},   {"fwrite", OpKind::kWrite},
      {"lseek", OpKind::kSeek},      {"lseek64", OpKind::kSeek},
      {"fseek", OpKind::kSeek},      {"fsync", OpKind::kSync},
      {"fdatasync", OpKind::kSync},  {"close", OpKind::kClose},
      {"fclose", OpKind::kClose},    {"mmap", OpKind::kMmap},
      {"mmap64", OpKind::kMmap},     {"stat", OpKind::kStat},
      {"stat64", OpKind::kStat},     {"lstat", OpKind::kStat},
      {"lstat64", OpKind::kStat},    {"fstat", OpKind::kStat},
      {"fstat64", OpKind::kStat},    {"xstat", OpKind::kStat},
      {"xstat64", OpKind::kStat},    {"__xstat", OpKind::kStat},
      {"__xstat64", OpKind::kStat},  {"__fxstat", OpKind::kStat},
      {"__fxstat64", OpKind::kStat}, {"fstatat", OpKind::kStat},
      {"statx", OpKind::kStat},      {"posix_fadvise", OpKind::kFadvise},
      {"rename", OpKind::kRename},   {"unlink", OpKind::kUnlink},
      {"remove", OpKind::kUnlink},
  };
  auto it = kinds.find(name);
  if (it == kinds.end()) return std::nullopt;
  return it->second;
}

Status LineError(const std::string& source, std::size_t line, const std::string& what) {
  return Status::InvalidArgument(source + ":" + std::to_string(line) + ": " + what);
}

// One line's object: an event appended to *events, an "FH" name added to
// *names, or something not modelled counted in *builder.
Status ReadLine(const PfwJson& e, const std::string& source, std::size_t line,
                std::vector<Event>* events, std::map<std::string, std::string>* names,
                TraceBuilder* builder) {
  if (!e.is_object()) return LineError(source, line, "not a JSON object");
  const std::string name =
      e.value("name", PfwJson()).is_string() ? e["name"].get<std::string>() : "";
  const std::string cat = e.value("cat", PfwJson()).is_string() ? e["cat"].get<std::string>() : "";
  const std::string ph = e.value("ph", PfwJson()).is_string() ? e["ph"].get<std::string>() : "X";
  const PfwJson empty = PfwJson::object();
  const PfwJson& args = e.contains("args") && e["args"].is_object() ? e["args"] : empty;
  if (ph == "M") {
    if (name == "FH") (*names)[TextArg(args, "value")] = TextArg(args, "name");
    return Status::OK();
  }
  if (ph != "X") return builder->Ignore("event phase " + ph.substr(0, 8)), Status::OK();
  const PfwJson& ts = e.contains("ts") ? e["ts"] : PfwJson();
  if (!ts.is_number() || !std::isfinite(ts.get<double>()) || std::fabs(ts.get<double>()) > 9e12) {
    return LineError(source, line, "event '" + name + "' without a numeric ts (microseconds)");
  }
  std::string upper = cat;
  std::transform(upper.begin(), upper.end(), upper.begin(), ::toupper);
  // POSIX and STDIO: DFTracer's own; storage: iomimic's trace of its
  // storage calls (docs/run-folder.md), which names files and open numbers
  // alike.
  if (upper != "POSIX" && upper != "STDIO" && cat != "storage") {
    builder->Ignore(cat.substr(0, 32) + " " + name.substr(0, 32));
    return Status::OK();
  }
  Event ev;
  ev.name = name;
  ev.line = line;
  ev.fname = TextArg(args, "fname");
  if (ev.fname.empty()) {
    ev.fname = TextArg(args, "fhash");
    ev.hashed = !ev.fname.empty();
  }
  ev.fname2 = TextArg(args, "new_fname");
  ev.pid = IntArg(e, "pid").value_or(0);
  ev.tid = IntArg(e, "tid").value_or(ev.pid);
  ev.start_ns = static_cast<std::int64_t>(std::llround(ts.get<double>() * 1000.0));
  const PfwJson& dur = e.contains("dur") ? e["dur"] : PfwJson();
  if (dur.is_number() && std::isfinite(dur.get<double>()) && dur.get<double>() >= 0 &&
      dur.get<double>() < 9e12) {
    ev.dur_ns = static_cast<std::int64_t>(std::llround(dur.get<double>() * 1000.0));
  }
  ev.fd = IntArg(args, "fd");
  ev.ret = IntArg(args, "ret");
  ev.size = IntArg(args, "size");
  if (!ev.size) ev.size = IntArg(args, "count");
  ev.offset = IntArg(args, "offset");
  ev.flags = IntArg(args, "flags");
  ev.is_dir = IntArg(args, "is_dir").value_or(0) != 0;
  ev.mode = TextArg(args, "mode");
  events->push_back(std::move(ev));
  return Status::OK();
}

struct Position {
  std::uint32_t file = kNoFile;
  std::uint32_t handle = 0;
  std::uint64_t at = 0;
};

// The open's flags, from open's integer flags or fopen's mode string.
void OpenFlags(const Event& ev, Op* op) {
  if (ev.flags) {
    const std::int64_t f = *ev.flags;
    op->write = (f & 3) == 1;
    op->read_write = (f & 3) == 2;
    op->create = (f & 0100) != 0;
    op->truncate = (f & 01000) != 0;
  } else if (!ev.mode.empty()) {
    const bool plus = ev.mode.find('+') != std::string::npos;
    op->write = !plus && (ev.mode[0] == 'w' || ev.mode[0] == 'a');
    op->read_write = plus;
    op->create = ev.mode[0] == 'w' || ev.mode[0] == 'a';
    op->truncate = ev.mode[0] == 'w';
  }
}

// Turns the events, in time order per thread, into operations.
void Build(std::vector<Event>& events, const std::map<std::string, std::string>& names,
           TraceBuilder* builder) {
  std::stable_sort(events.begin(), events.end(),
                   [](const Event& a, const Event& b) { return a.start_ns < b.start_ns; });
  std::map<std::pair<std::int64_t, std::int64_t>, Position> fds;            // (pid, fd)
  std::map<std::pair<std::int64_t, std::uint32_t>, std::uint32_t> by_name;  // (pid, file)
  for (Event& ev : events) {
    if (ev.hashed) {
      auto it = names.find(ev.fname);
      ev.fname = it == names.end() ? std::string() : it->second;
    }
    const std::optional<OpKind> kind = KindOf(ev.name);
    if (!kind) {
      builder->Ignore("POSIX " + ev.name.substr(0, 32));
      continue;
    }
    Position* pos = nullptr;
    if (ev.fd) {
      auto it = fds.find({ev.pid, *ev.fd});
      if (it != fds.end()) pos = &it->second;
    }
    if (ev.fname.empty() && pos == nullptr) {
      builder->Ignore(ev.name.substr(0, 32) + " without a file name");
      continue;
    }
    Op op;
    op.kind = *kind;
    op.file = ev.fname.empty() ? pos->file : builder->File(ev.fname);
    op.start_ns = ev.start_ns;
    op.dur_ns = ev.dur_ns;
    op.failed = ev.ret && *ev.ret < 0;
    if (*kind == OpKind::kOpen) {
      OpenFlags(ev, &op);
      if (!op.failed) {
        op.handle = builder->NewHandle();
        const std::int64_t fd = ev.ret.value_or(ev.fd.value_or(-1));
        if (fd >= 0) fds[{ev.pid, fd}] = Position{op.file, op.handle, 0};
      }
    } else if (pos != nullptr && pos->file == op.file) {
      op.handle = pos->handle;
    } else if (auto it = by_name.find({ev.pid, op.file}); it != by_name.end()) {
      op.handle = it->second;  // a STDIO call naming its file, not a descriptor
    }
    if (*kind == OpKind::kOpen && op.handle != 0) by_name[{ev.pid, op.file}] = op.handle;
    if (*kind == OpKind::kRead || *kind == OpKind::kWrite || *kind == OpKind::kMmap) {
      const std::int64_t moved = ev.ret && *ev.ret >= 0 ? *ev.ret : ev.size.value_or(0);
      op.size = static_cast<std::uint64_t>(std::max<std::int64_t>(0, moved));
      op.requested = static_cast<std::uint64_t>(std::max<std::int64_t>(0, ev.size.value_or(moved)));
      if (ev.offset && *ev.offset >= 0) {
        op.offset = static_cast<std::uint64_t>(*ev.offset);
      } else if (pos != nullptr) {
        op.offset = pos->at;
        pos->at += op.size;
      }
    } else if (*kind == OpKind::kSeek && pos != nullptr) {
      if (ev.ret && *ev.ret >= 0) pos->at = static_cast<std::uint64_t>(*ev.ret);
      op.offset = pos->at;
    } else if (*kind == OpKind::kRename && !ev.fname2.empty()) {
      op.file2 = builder->File(ev.fname2);
    }
    if (*kind == OpKind::kClose && ev.fd) fds.erase({ev.pid, *ev.fd});
    builder->Observe(op,
                     *kind == OpKind::kStat ? static_cast<std::uint64_t>(
                                                  std::max<std::int64_t>(0, ev.size.value_or(0)))
                                            : 0,
                     *kind == OpKind::kStat && ev.is_dir);
    builder->Add(ev.tid, op);
  }
}

}  // namespace

Result<AppTrace> ReadDftracer(std::string_view text, const std::string& source) {
  TraceBuilder builder(source, "dftracer");
  std::vector<Event> events;
  std::map<std::string, std::string> names;
  std::size_t number = 0;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    ++number;
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) {
      line.remove_suffix(1);
    }
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.front()))) {
      line.remove_prefix(1);
    }
    if (!line.empty() && line.back() == ',') line.remove_suffix(1);
    if (line.empty() || line == "[" || line == "]") continue;
    PfwJson e = PfwJson::parse(line, nullptr, /*allow_exceptions=*/false);
    if (e.is_discarded()) {
      return LineError(source, number, "not a JSON object (DFTracer's layout: one event a line)");
    }
    IOMIMIC_RETURN_IF_ERROR(ReadLine(e, source, number, &events, &names, &builder));
  }
  Build(events, names, &builder);
  return builder.Finish();
}

}  // namespace iomimic::apptrace
