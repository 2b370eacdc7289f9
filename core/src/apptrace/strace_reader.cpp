#include "apptrace/strace_reader.h"

#include <charconv>
#include <map>
#include <memory>
#include <optional>
#include <vector>

namespace iomimic::apptrace {
namespace {

// One call, its unfinished and resumed halves joined.
struct Call {
  std::int64_t pid = 0;
  std::int64_t start_ns = 0;
  std::int64_t dur_ns = 0;
  std::string name;
  std::vector<std::string_view> args;  // top-level, as printed
  std::string_view result;             // "3</path>", "-1", "0x7f..."
  bool failed = false;
};

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

bool ParseInt(std::string_view s, std::int64_t* out) {
  s = Trim(s);
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    s.remove_prefix(2);
    base = 16;
  }
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out, base);
  return ec == std::errc() && end == s.data() + s.size();
}

// The leading integer of `s` ("3</a>" -> 3), or nullopt.
std::optional<std::int64_t> LeadingInt(std::string_view s) {
  s = Trim(s);
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end == s.data()) return std::nullopt;
  return v;
}

// "SECONDS.FRACTION" as nanoseconds, exactly.
bool ParseSeconds(std::string_view s, std::int64_t* ns) {
  const std::size_t dot = s.find('.');
  std::int64_t whole = 0;
  if (!ParseInt(s.substr(0, dot), &whole) || whole < 0 || whole > 9'000'000'000LL) return false;
  std::int64_t frac = 0;
  if (dot != std::string_view::npos) {
    std::string_view f = s.substr(dot + 1, 9);
    if (f.empty() || !ParseInt(f, &frac) || frac < 0) return false;
    for (std::size_t i = f.size(); i < 9; ++i) frac *= 10;
  }
  *ns = whole * 1'000'000'000LL + frac;
  return true;
}

// The index just past the string literal starting at s[i] == '"'.
std::size_t SkipString(std::string_view s, std::size_t i) {
  for (++i; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
    } else if (s[i] == '"') {
      return i + 1;
    }
  }
  return s.size();
}

// Splits `s` at its top-level commas (outside strings and brackets); sets
// *close to the index of the ')' that ends the list, or npos.
std::vector<std::string_view> SplitArgs(std::string_view s, std::size_t* close) {
  std::vector<std::string_view> out;
  int depth = 0;
  std::size_t begin = 0;
  *close = std::string_view::npos;
  for (std::size_t i = 0; i < s.size();) {
    const char c = s[i];
    if (c == '"') {
      i = SkipString(s, i);
      continue;
    }
    if (c == '(' || c == '[' || c == '{') ++depth;
    if ((c == ']' || c == '}') && depth > 0) --depth;
    if (c == ')') {
      if (depth == 0) {
        if (i > begin || !out.empty()) out.push_back(Trim(s.substr(begin, i - begin)));
        *close = i;
        return out;
      }
      --depth;
    }
    if (c == ',' && depth == 0) {
      out.push_back(Trim(s.substr(begin, i - begin)));
      begin = i + 1;
    }
    ++i;
  }
  if (begin < s.size()) out.push_back(Trim(s.substr(begin)));
  return out;
}

// A C string literal ("/a\"b") decoded; nullopt when `s` is not one.
std::optional<std::string> Unquote(std::string_view s) {
  s = Trim(s);
  if (s.size() < 2 || s.front() != '"') return std::nullopt;
  std::string out;
  for (std::size_t i = 1; i < s.size(); ++i) {
    char c = s[i];
    if (c == '"') return out;
    if (c == '\\' && i + 1 < s.size()) {
      c = s[++i];
      if (c == 'n') c = '\n';
      if (c == 't') c = '\t';
      if (c == 'x' && i + 2 < s.size()) {
        int v = 0;
        std::from_chars(s.data() + i + 1, s.data() + i + 3, v, 16);
        c = static_cast<char>(v);
        i += 2;
      } else if (c >= '0' && c <= '7') {
        int v = 0;
        std::size_t n = 0;
        for (; n < 3 && i + n < s.size() && s[i + n] >= '0' && s[i + n] <= '7'; ++n) {
          v = v * 8 + (s[i + n] - '0');
        }
        c = static_cast<char>(v);
        i += n - 1;
      }
    }
    out.push_back(c);
  }
  return std::nullopt;
}

// The -yy annotation of a descriptor: "3</tmp/a>" -> "/tmp/a"; "" when none.
std::string Annotation(std::string_view s) {
  s = Trim(s);
  const std::size_t lt = s.find('<');
  if (lt == std::string_view::npos || s.back() != '>') return {};
  std::string path(s.substr(lt + 1, s.size() - lt - 2));
  if (path.ends_with(" (deleted)")) path.resize(path.size() - 10);
  return path;
}

// Files the replay leaves out: pseudo files, devices, pipes, sockets.
bool IsDataPath(const std::string& p) {
  if (p.empty()) return false;
  for (const char* prefix : {"/proc/", "/sys/", "/dev/", "/run/"}) {
    if (p.starts_with(prefix)) return false;
  }
  return p.find(":[") == std::string::npos && !p.starts_with("anon_inode:");
}

std::string Join(const std::string& dir, const std::string& path) {
  if (path.empty() || path.front() == '/' || dir.empty()) return path;
  return dir.back() == '/' ? dir + path : dir + "/" + path;
}

// A path argument made absolute with its directory descriptor's annotation
// (AT_FDCWD</cwd>) where -yy printed one.
std::optional<std::string> PathArg(const std::vector<std::string_view>& args, std::size_t dirfd,
                                   std::size_t path) {
  if (path >= args.size()) return std::nullopt;
  std::optional<std::string> p = Unquote(args[path]);
  if (!p) return std::nullopt;
  if (dirfd < args.size()) return Join(Annotation(args[dirfd]), *p);
  return p;
}

std::uint64_t FieldValue(std::string_view args, std::string_view key) {
  const std::size_t at = args.find(key);
  if (at == std::string_view::npos) return 0;
  const std::optional<std::int64_t> v = LeadingInt(args.substr(at + key.size()));
  return v && *v > 0 ? static_cast<std::uint64_t>(*v) : 0;
}

// The size a stat's result printed (st_size, or statx's stx_size).
std::uint64_t StatSize(std::string_view args) {
  const std::uint64_t st = FieldValue(args, "st_size=");
  return st != 0 ? st : FieldValue(args, "stx_size=");
}

std::string AllArgs(const Call& c) {
  std::string all;
  for (std::string_view a : c.args) all += std::string(a) + ",";
  return all;
}

struct Fd {
  std::uint32_t file = kNoFile;
  std::uint32_t handle = 0;
  std::shared_ptr<std::uint64_t> position;  // shared by dup'ed descriptors
};

class StraceParser {
 public:
  explicit StraceParser(const std::string& source) : builder_(source, "strace"), source_(source) {}

  Status Line(std::string_view line, std::size_t number);
  Result<AppTrace> Finish() { return builder_.Finish(); }

 private:
  Status Error(std::size_t number, const std::string& what) const {
    return Status::InvalidArgument(source_ + ":" + std::to_string(number) + ": " + what);
  }
  Status Complete(std::string_view rest, std::size_t number, Call call);
  void Model(const Call& c);
  void ModelOpen(const Call& c, Op op);
  void ModelFdCall(const Call& c, OpKind kind, Op op);
  void ModelPathCall(const Call& c, OpKind kind, std::optional<std::string> path, Op op);
  void ModelDup(const Call& c);
  Fd* FdOf(std::string_view arg);
  void Emit(const Call& c, Op op, std::uint64_t stat_size = 0, bool stat_dir = false);

  TraceBuilder builder_;
  std::string source_;
  std::map<std::int64_t, std::string> pending_;  // pid -> the unfinished half
  std::map<std::int64_t, Fd> fds_;
  std::map<std::int64_t, std::int64_t> pending_start_;
};

Status StraceParser::Line(std::string_view line, std::size_t number) {
  line = Trim(line);
  if (line.empty() || line.starts_with("strace: ")) return Status::OK();
  Call call;
  if (line.starts_with("[pid")) {
    const std::size_t close = line.find(']');
    if (close == std::string_view::npos || !ParseInt(line.substr(4, close - 4), &call.pid)) {
      return Error(number, "a '[pid N]' prefix without its number");
    }
    line = Trim(line.substr(close + 1));
  } else if (line.size() > 0 && line.find(' ') != std::string_view::npos &&
             line.find('.') > line.find(' ')) {
    if (!ParseInt(line.substr(0, line.find(' ')), &call.pid)) {
      return Error(number, "expected [PID] SECONDS.MICROS NAME(ARGS), as strace -ttt prints");
    }
    line = Trim(line.substr(line.find(' ')));
  }
  const std::size_t space = line.find(' ');
  if (space == std::string_view::npos || !ParseSeconds(line.substr(0, space), &call.start_ns)) {
    return Error(number, "expected a time in seconds (strace -ttt) at the start of the line");
  }
  std::string_view rest = Trim(line.substr(space));
  if (rest.starts_with("---") || rest.starts_with("+++")) return Status::OK();  // signal, exit
  if (rest.starts_with("<...")) {
    const std::size_t resumed = rest.find(" resumed>");
    auto it = pending_.find(call.pid);
    if (resumed == std::string_view::npos || it == pending_.end()) {
      return Error(number, "a '<... resumed>' line with no '<unfinished ...>' call of pid " +
                               std::to_string(call.pid) + " before it");
    }
    std::string joined = it->second + std::string(rest.substr(resumed + 9));
    pending_.erase(it);
    call.start_ns = pending_start_[call.pid];
    return Complete(joined, number, std::move(call));
  }
  if (rest.ends_with("<unfinished ...>")) {
    pending_[call.pid] = std::string(rest.substr(0, rest.size() - 16));
    pending_start_[call.pid] = call.start_ns;
    return Status::OK();
  }
  return Complete(rest, number, std::move(call));
}

Status StraceParser::Complete(std::string_view rest, std::size_t number, Call call) {
  const std::size_t open = rest.find('(');
  if (open == std::string_view::npos || open == 0) {
    return Error(number, "expected NAME(ARGS) = RESULT after the time");
  }
  call.name = std::string(rest.substr(0, open));
  std::size_t close = 0;
  std::string_view inside = rest.substr(open + 1);
  call.args = SplitArgs(inside, &close);
  if (close == std::string_view::npos) return Error(number, "'" + call.name + "(' is not closed");
  std::string_view tail = Trim(inside.substr(close + 1));
  if (!tail.starts_with("="))
    return Error(number, "expected ' = RESULT' after " + call.name + "()");
  tail = Trim(tail.substr(1));
  const std::size_t lt = tail.rfind(" <");
  if (lt != std::string_view::npos && tail.back() == '>' &&
      ParseSeconds(tail.substr(lt + 2, tail.size() - lt - 3), &call.dur_ns)) {
    tail = Trim(tail.substr(0, lt));
  }
  if (tail.starts_with("?")) {
    builder_.Ignore(call.name + " without a result");
    return Status::OK();
  }
  call.failed = tail == "-1" || tail.starts_with("-1 ");
  // "3</path>" (-yy) up to its last '>', else the first word.
  const std::size_t lt_at = tail.find('<');
  const std::size_t sp = tail.find(' ');
  if (!call.failed && lt_at != std::string_view::npos && lt_at < sp) {
    call.result = tail.substr(0, tail.rfind('>') + 1);
  } else {
    call.result = tail.substr(0, sp);
  }
  Model(call);
  return Status::OK();
}

// The descriptor table's entry for the descriptor argument `arg`, made from
// its -yy annotation when the trace did not show it opened; null when it is
// not a data file.
Fd* StraceParser::FdOf(std::string_view arg) {
  const std::optional<std::int64_t> fd = LeadingInt(arg);
  if (!fd) return nullptr;
  const std::string path = Annotation(arg);
  auto it = fds_.find(*fd);
  if (it != fds_.end() && it->second.file != kNoFile &&
      (path.empty() || builder_.file(it->second.file).path == path)) {
    return &it->second;
  }
  if (!IsDataPath(path)) return nullptr;
  Fd entry{builder_.File(path), 0, std::make_shared<std::uint64_t>(0)};
  return &(fds_[*fd] = entry);
}

void StraceParser::Emit(const Call& c, Op op, std::uint64_t stat_size, bool stat_dir) {
  op.failed = c.failed;
  op.start_ns = c.start_ns;
  op.dur_ns = c.dur_ns;
  builder_.Observe(op, stat_size, stat_dir);
  builder_.Add(c.pid, op);
}

void StraceParser::ModelOpen(const Call& c, Op op) {
  const bool at = c.name != "open" && c.name != "creat";
  std::optional<std::string> path = PathArg(c.args, at ? 0 : 99, at ? 1 : 0);
  const std::string_view flags = c.args.size() > (at ? 2u : 1u) ? c.args[at ? 2 : 1] : "";
  if (!path) return builder_.Ignore(c.name + " without a path");
  const std::string annotated = c.failed ? std::string() : Annotation(c.result);
  if (!annotated.empty()) path = annotated;
  if (flags.find("O_DIRECTORY") != std::string_view::npos) {
    return builder_.Ignore("open of a directory");
  }
  if (!IsDataPath(*path)) return builder_.Ignore("open of " + path->substr(0, 5) + "...");
  op.file = builder_.File(*path);
  op.write = flags.find("O_WRONLY") != std::string_view::npos || c.name == "creat";
  op.read_write = flags.find("O_RDWR") != std::string_view::npos;
  op.create = flags.find("O_CREAT") != std::string_view::npos || c.name == "creat";
  op.truncate = flags.find("O_TRUNC") != std::string_view::npos || c.name == "creat";
  if (!c.failed) {
    const std::optional<std::int64_t> fd = LeadingInt(c.result);
    if (fd) {
      op.handle = builder_.NewHandle();
      fds_[*fd] = Fd{op.file, op.handle, std::make_shared<std::uint64_t>(0)};
    }
  }
  Emit(c, op);
}

// A call on a descriptor (read, write, lseek, fsync, close, mmap, fstat,
// fadvise64).
void StraceParser::ModelFdCall(const Call& c, OpKind kind, Op op) {
  const std::size_t fd_arg = kind == OpKind::kMmap ? 4 : 0;
  if (c.args.size() <= fd_arg) return builder_.Ignore(c.name + " without a descriptor");
  Fd* fd = FdOf(c.args[fd_arg]);
  if (fd == nullptr) return builder_.Ignore(c.name + " of a descriptor that is not a data file");
  op.kind = kind;
  op.file = fd->file;
  op.handle = fd->handle;
  std::int64_t result = 0;
  const bool counted = !c.failed && LeadingInt(c.result).has_value();
  if (counted) result = *LeadingInt(c.result);
  const bool positioned = c.name.starts_with("pread") || c.name.starts_with("pwrite") ||
                          c.name == "preadv" || c.name == "pwritev";
  std::int64_t at = 0;
  if (kind == OpKind::kRead || kind == OpKind::kWrite) {
    if (positioned && c.args.size() >= 4) {
      ParseInt(c.args[3], &at);
    } else {
      at = static_cast<std::int64_t>(*fd->position);
    }
    op.offset = static_cast<std::uint64_t>(std::max<std::int64_t>(0, at));
    op.size = counted && result > 0 ? static_cast<std::uint64_t>(result) : 0;
    std::int64_t asked = 0;
    op.requested = c.args.size() >= 3 && ParseInt(c.args[2], &asked) && asked > 0 &&
                           c.name.find('v') == std::string::npos
                       ? static_cast<std::uint64_t>(asked)
                       : op.size;
    if (!positioned) *fd->position = op.offset + op.size;
  } else if (kind == OpKind::kSeek) {
    if (counted) *fd->position = static_cast<std::uint64_t>(result);
    op.offset = *fd->position;
  } else if (kind == OpKind::kMmap && c.args.size() >= 6) {
    std::int64_t length = 0, offset = 0;
    ParseInt(c.args[1], &length);
    ParseInt(c.args[5], &offset);
    op.size = static_cast<std::uint64_t>(std::max<std::int64_t>(0, length));
    op.offset = static_cast<std::uint64_t>(std::max<std::int64_t>(0, offset));
  }
  if (kind == OpKind::kStat) {
    const std::string all = AllArgs(c);
    return Emit(c, op, StatSize(all), all.find("S_IFDIR") != std::string::npos);
  }
  Emit(c, op);
}

void StraceParser::ModelPathCall(const Call& c, OpKind kind, std::optional<std::string> path,
                                 Op op) {
  if (!path) return builder_.Ignore(c.name + " without a path");
  if (!IsDataPath(*path)) return builder_.Ignore(c.name + " of a pseudo file");
  op.kind = kind;
  op.file = builder_.File(*path);
  const std::string all = AllArgs(c);
  Emit(c, op, StatSize(all), all.find("S_IFDIR") != std::string::npos);
}

void StraceParser::ModelDup(const Call& c) {
  if (c.failed || c.args.empty()) return;
  const std::optional<std::int64_t> from = LeadingInt(c.args[0]);
  const std::optional<std::int64_t> to = LeadingInt(c.result);
  if (!from || !to) return;
  auto it = fds_.find(*from);
  if (it == fds_.end()) {
    fds_.erase(*to);
    return;
  }
  fds_[*to] = it->second;
}

void StraceParser::Model(const Call& c) {
  const std::string& n = c.name;
  const std::vector<std::string_view>& a = c.args;
  Op op;
  if (n == "open" || n == "openat" || n == "creat" || n == "openat2") {
    op.kind = OpKind::kOpen;
    return ModelOpen(c, op);
  }
  if (n == "read" || n == "pread64" || n == "readv" || n == "preadv" || n == "preadv2") {
    return ModelFdCall(c, OpKind::kRead, op);
  }
  if (n == "write" || n == "pwrite64" || n == "writev" || n == "pwritev" || n == "pwritev2") {
    return ModelFdCall(c, OpKind::kWrite, op);
  }
  if (n == "lseek" || n == "_llseek") return ModelFdCall(c, OpKind::kSeek, op);
  if (n == "fsync" || n == "fdatasync") return ModelFdCall(c, OpKind::kSync, op);
  if (n == "close") {
    ModelFdCall(c, OpKind::kClose, op);
    if (const std::optional<std::int64_t> fd = a.empty() ? std::nullopt : LeadingInt(a[0])) {
      fds_.erase(*fd);
    }
    return;
  }
  if (n == "fadvise64" || n == "fadvise64_64") return ModelFdCall(c, OpKind::kFadvise, op);
  if (n == "mmap" || n == "mmap2") {
    if (a.size() < 6 || Trim(a[4]).starts_with("-1")) return builder_.Ignore("mmap of no file");
    return ModelFdCall(c, OpKind::kMmap, op);
  }
  if (n == "fstat") return ModelFdCall(c, OpKind::kStat, op);
  const bool empty_path = a.size() > 1 && Trim(a[1]) == "\"\"";
  if ((n == "newfstatat" || n == "statx" || n == "fstatat64") && empty_path) {
    if (n == "statx" && a.size() >= 5) {
      Call fd_form = c;
      fd_form.args = {a[0], a[4]};
      return ModelFdCall(fd_form, OpKind::kStat, op);
    }
    return ModelFdCall(c, OpKind::kStat, op);
  }
  if (n == "stat" || n == "lstat" || n == "stat64" || n == "lstat64") {
    return ModelPathCall(c, OpKind::kStat, PathArg(a, 99, 0), op);
  }
  if (n == "newfstatat" || n == "statx" || n == "fstatat64") {
    return ModelPathCall(c, OpKind::kStat, PathArg(a, 0, 1), op);
  }
  if (n == "unlink") return ModelPathCall(c, OpKind::kUnlink, PathArg(a, 99, 0), op);
  if (n == "unlinkat") {
    if (a.size() > 2 && a[2].find("AT_REMOVEDIR") != std::string_view::npos) {
      return builder_.Ignore("rmdir");
    }
    return ModelPathCall(c, OpKind::kUnlink, PathArg(a, 0, 1), op);
  }
  if (n == "rename" || n == "renameat" || n == "renameat2") {
    const bool at = n != "rename";
    std::optional<std::string> to = PathArg(a, at ? 2 : 99, at ? 3 : 1);
    if (!to || !IsDataPath(*to)) return builder_.Ignore(n + " without a data path");
    op.file2 = builder_.File(*to);
    return ModelPathCall(c, OpKind::kRename, PathArg(a, at ? 0 : 99, at ? 1 : 0), op);
  }
  if (n == "dup" || n == "dup2" || n == "dup3") return ModelDup(c);
  if (n == "fcntl" && a.size() > 1 && a[1].starts_with("F_DUPFD")) return ModelDup(c);
  builder_.Ignore(n);
}

}  // namespace

Result<AppTrace> ReadStrace(std::string_view text, const std::string& source) {
  StraceParser parser(source);
  std::size_t number = 0;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    ++number;
    IOMIMIC_RETURN_IF_ERROR(parser.Line(text.substr(0, nl), number));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return parser.Finish();
}

}  // namespace iomimic::apptrace
