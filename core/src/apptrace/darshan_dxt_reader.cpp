#include "apptrace/darshan_dxt_reader.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace iomimic::apptrace {
namespace {

// One row of a record: a read or a write of one rank.
struct DxtRow {
  bool mpiio = false;
  bool write = false;
  std::int64_t rank = 0;
  std::uint32_t file = kNoFile;
  std::uint64_t offset = 0, length = 0;
  std::int64_t start_ns = 0, end_ns = 0;
};

// The record being read: its header's counts and the rows seen so far.
struct DxtRecord {
  std::size_t line = 0;  // of its file_id header
  std::string path;
  std::int64_t declared_writes = -1, declared_reads = -1;
  std::int64_t writes = 0, reads = 0;
};

Status DxtLineError(const std::string& source, std::size_t line, const std::string& what) {
  return Status::InvalidArgument(source + ":" + std::to_string(line) + ": " + what);
}

std::string_view DxtTrim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool DxtInt(std::string_view s, std::int64_t* out) {
  if (s.empty()) return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size();
}

// Seconds with a fraction ("12.3456"), into nanoseconds.
bool DxtSeconds(std::string_view s, std::int64_t* ns) {
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v) || v < 0 ||
      v > 9e9) {
    return false;
  }
  *ns = static_cast<std::int64_t>(std::llround(v * 1e9));
  return true;
}

std::vector<std::string_view> DxtFields(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    const std::size_t from = i;
    while (i < s.size() && !std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    if (i > from) out.push_back(s.substr(from, i - from));
  }
  return out;
}

// The value after "KEY: " up to the next ", " (or the line's end when
// `last`), or nullopt when KEY is missing.
std::optional<std::string_view> DxtField(std::string_view line, std::string_view key, bool last) {
  const std::size_t at = line.find(key);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = line.substr(at + key.size());
  if (!last) rest = rest.substr(0, rest.find(", "));
  return DxtTrim(rest);
}

class DxtParser {
 public:
  explicit DxtParser(const std::string& source)
      : source_(source), builder_(source, "darshan-dxt") {}

  Status Line(std::string_view line, std::size_t number);
  Status EndRecord();
  Result<AppTrace> Finish();

 private:
  Status Header(std::string_view line, std::size_t number);
  Status Row(std::string_view line, std::size_t number);

  const std::string& source_;
  TraceBuilder builder_;
  std::vector<DxtRow> rows_;
  DxtRecord record_;
  bool in_record_ = false;
};

Status DxtParser::EndRecord() {
  if (!in_record_) return Status::OK();
  const DxtRecord& r = record_;
  if ((r.declared_writes >= 0 && r.declared_writes != r.writes) ||
      (r.declared_reads >= 0 && r.declared_reads != r.reads)) {
    return DxtLineError(source_, r.line,
                        "the record of " + r.path.substr(0, 256) + " declares write_count " +
                            std::to_string(r.declared_writes) + ", read_count " +
                            std::to_string(r.declared_reads) + " but lists " +
                            std::to_string(r.writes) + " write and " + std::to_string(r.reads) +
                            " read rows");
  }
  in_record_ = false;
  return Status::OK();
}

Status DxtParser::Header(std::string_view line, std::size_t number) {
  if (line.starts_with("# DXT, file_id:")) {
    IOMIMIC_RETURN_IF_ERROR(EndRecord());
    const std::optional<std::string_view> name = DxtField(line, "file_name: ", true);
    if (!name || name->empty()) {
      return DxtLineError(source_, number,
                          "a '# DXT, file_id: ID, file_name: PATH' header without a file name");
    }
    record_ = DxtRecord{number, std::string(*name)};
    in_record_ = true;
    return Status::OK();
  }
  if (line.starts_with("# DXT, write_count:")) {
    const std::optional<std::string_view> w = DxtField(line, "write_count: ", false);
    const std::optional<std::string_view> r = DxtField(line, "read_count: ", true);
    if (!in_record_ || !w || !r || !DxtInt(*w, &record_.declared_writes) ||
        !DxtInt(*r, &record_.declared_reads) || record_.declared_writes < 0 ||
        record_.declared_reads < 0) {
      return DxtLineError(source_, number,
                          "expected '# DXT, write_count: W, read_count: R' after a file header");
    }
  }
  return Status::OK();  // rank, hostname, mount, Lustre, column and job lines: comments
}

Status DxtParser::Row(std::string_view line, std::size_t number) {
  const std::vector<std::string_view> f = DxtFields(line);
  const char* expected =
      "expected a DXT row 'X_POSIX|X_MPIIO RANK write|read SEGMENT OFFSET LENGTH START END'";
  if (f.size() < 8 || (f[0] != "X_POSIX" && f[0] != "X_MPIIO") ||
      (f[2] != "write" && f[2] != "read")) {
    return DxtLineError(source_, number, expected);
  }
  for (std::size_t i = 8; i < f.size(); ++i) {  // Lustre's "[ OST]" columns
    if (f[i].find_first_not_of("[]0123456789") != std::string_view::npos) {
      return DxtLineError(source_, number, std::string(expected) + ", then Lustre's [OST] columns");
    }
  }
  if (!in_record_) {
    return DxtLineError(source_, number,
                        "a DXT row before any '# DXT, file_id: ID, file_name: PATH' header");
  }
  DxtRow row;
  row.mpiio = f[0] == "X_MPIIO";
  row.write = f[2] == "write";
  std::int64_t segment = 0, offset = 0, length = 0;
  if (!DxtInt(f[1], &row.rank) || !DxtInt(f[3], &segment) || !DxtInt(f[4], &offset) ||
      !DxtInt(f[5], &length) || offset < 0 || length < 0 || segment < 0) {
    return DxtLineError(source_, number,
                        "rank, segment, offset and length must be integers (offset and length "
                        "not negative)");
  }
  if (!DxtSeconds(f[6], &row.start_ns) || !DxtSeconds(f[7], &row.end_ns)) {
    return DxtLineError(source_, number, "start and end must be seconds, not negative");
  }
  if (row.end_ns < row.start_ns) {
    return DxtLineError(source_, number, "the access ends before it starts");
  }
  row.offset = static_cast<std::uint64_t>(offset);
  row.length = static_cast<std::uint64_t>(length);
  row.file = builder_.File(record_.path);
  ++(row.write ? record_.writes : record_.reads);
  rows_.push_back(row);
  return Status::OK();
}

Status DxtParser::Line(std::string_view line, std::size_t number) {
  line = DxtTrim(line);
  if (line.empty()) return Status::OK();
  if (line.front() == '#') return Header(line, number);
  return Row(line, number);
}

Result<AppTrace> DxtParser::Finish() {
  // The (file, rank) pairs POSIX rows cover: their MPI-IO rows are the same
  // bytes seen one layer up.
  std::set<std::pair<std::uint32_t, std::int64_t>> posix;
  for (const DxtRow& r : rows_) {
    if (!r.mpiio) posix.insert({r.file, r.rank});
  }
  std::vector<DxtRow> rows;
  rows.reserve(rows_.size());
  for (const DxtRow& r : rows_) {
    if (r.mpiio && posix.contains({r.file, r.rank})) {
      builder_.Ignore("MPI-IO access of a file its POSIX rows cover");
    } else {
      rows.push_back(r);
    }
  }
  // Records list a rank's writes, then its reads: into time order.
  std::stable_sort(rows.begin(), rows.end(),
                   [](const DxtRow& a, const DxtRow& b) { return a.start_ns < b.start_ns; });
  // Per (rank, file): what it does, its last access's end and its handle.
  struct Use {
    bool reads = false, writes = false;
    std::int64_t last_end = 0;
    std::size_t last_row = 0;
    std::uint32_t handle = 0;
  };
  std::map<std::pair<std::int64_t, std::uint32_t>, Use> uses;
  std::map<std::uint32_t, bool> first_is_write;  // per file, across ranks
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const DxtRow& r = rows[i];
    Use& u = uses[{r.rank, r.file}];
    (r.write ? u.writes : u.reads) = true;
    if (r.end_ns >= u.last_end) u.last_end = r.end_ns;
    u.last_row = i;
    first_is_write.try_emplace(r.file, r.write);
  }
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const DxtRow& r = rows[i];
    Use& u = uses[{r.rank, r.file}];
    if (u.handle == 0) {  // the inferred open, just before the first access
      Op open;
      open.kind = OpKind::kOpen;
      open.file = r.file;
      open.handle = u.handle = builder_.NewHandle();
      open.write = u.writes && !u.reads;
      open.read_write = u.writes && u.reads;
      open.create = u.writes && first_is_write[r.file];
      open.start_ns = r.start_ns;
      builder_.Observe(open, 0, false);
      builder_.Add(r.rank, open);
    }
    Op op;
    op.kind = r.write ? OpKind::kWrite : OpKind::kRead;
    op.file = r.file;
    op.handle = u.handle;
    op.offset = r.offset;
    op.size = r.length;
    op.requested = r.write ? 0 : r.length;
    op.start_ns = r.start_ns;
    op.dur_ns = r.end_ns - r.start_ns;
    builder_.Observe(op, 0, false);
    builder_.Add(r.rank, op);
    if (u.last_row == i) {  // the inferred close, just after the last access
      Op close;
      close.kind = OpKind::kClose;
      close.file = r.file;
      close.handle = u.handle;
      close.start_ns = std::max(u.last_end, r.end_ns);
      builder_.Add(r.rank, close);
    }
  }
  return builder_.Finish();
}

}  // namespace

bool LooksLikeDarshanDxt(std::string_view text) {
  return text.starts_with("# DXT, file_id:") ||
         text.find("\n# DXT, file_id:") != std::string_view::npos;
}

Result<AppTrace> ReadDarshanDxt(std::string_view text, const std::string& source) {
  DxtParser parser(source);
  std::size_t number = 0;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    ++number;
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    IOMIMIC_RETURN_IF_ERROR(parser.Line(line, number));
  }
  IOMIMIC_RETURN_IF_ERROR(parser.EndRecord());
  return parser.Finish();
}

}  // namespace iomimic::apptrace
