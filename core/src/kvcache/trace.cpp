#include "kvcache/trace.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <memory>

#ifdef IOMIMIC_HAVE_ZSTD
#include <zstd.h>
#endif

#include "iomimic/enum_names.h"

namespace iomimic::kvcache {

const char* TraceOpName(TraceOp op) { return op == TraceOp::kWrite ? "Write" : "Read"; }

const char* TracePhaseName(TracePhase phase) {
  static constexpr const char* kNames[] = {"", "Prefill", "Decode", "Both", "Evict"};
  static_assert(std::size(kNames) == static_cast<std::size_t>(TracePhase::kEvict) + 1);
  return EnumName(phase, kNames, "");
}

const char* TraceTierName(int tier) {
  static constexpr const char* kNames[] = {"Tier-0", "Tier-1", "Tier-2"};
  return tier >= 0 && tier <= 2 ? kNames[tier] : "Tier-?";
}

std::string TraceExcerpt(std::string_view text) {
  constexpr std::size_t kShown = 48;
  if (text.size() <= kShown) return std::string(text);
  return std::string(text.substr(0, kShown)) + "... (" + std::to_string(text.size()) + " bytes)";
}

namespace {

// Python's csv QUOTE_MINIMAL: quote a field holding the delimiter, the quote
// character or a line break, doubling inner quotes.
void AppendField(std::string* out, std::string_view field) {
  if (field.find_first_of(",\"\r\n") == std::string_view::npos) {
    out->append(field);
    return;
  }
  out->push_back('"');
  for (char c : field) {
    if (c == '"') out->push_back('"');
    out->push_back(c);
  }
  out->push_back('"');
}

// Splits one CSV record into fields. Returns false on a malformed quote.
bool SplitRecord(std::string_view line, std::vector<std::string>* fields, std::string* why) {
  fields->clear();
  std::string field;
  std::size_t i = 0;
  for (;;) {
    field.clear();
    if (i < line.size() && line[i] == '"') {
      ++i;
      for (;;) {
        if (i >= line.size()) {
          *why = "a quoted field is not closed";
          return false;
        }
        if (line[i] == '"') {
          if (i + 1 < line.size() && line[i + 1] == '"') {
            field.push_back('"');
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        field.push_back(line[i++]);
      }
      if (i < line.size() && line[i] != ',') {
        *why = "text follows a closing quote";
        return false;
      }
    } else {
      std::size_t end = line.find(',', i);
      if (end == std::string_view::npos) end = line.size();
      field.assign(line.substr(i, end - i));
      if (field.find('"') != std::string::npos) {
        *why = "a quote inside an unquoted field";
        return false;
      }
      i = end;
    }
    fields->push_back(field);
    if (i >= line.size()) return true;
    ++i;  // the comma
  }
}

// "[0-9]+(.[0-9]+)?" as a double.
bool ParseTimestamp(const std::string& s, double* out) {
  std::size_t dot = s.find('.');
  auto digits = [](std::string_view d) {
    return !d.empty() && d.find_first_not_of("0123456789") == std::string_view::npos;
  };
  std::string_view v(s);
  if (!digits(v.substr(0, dot))) return false;
  if (dot != std::string::npos && !digits(v.substr(dot + 1))) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size() && std::isfinite(*out);
}

bool ParseSize(const std::string& s, std::uint64_t* out) {
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

bool ParsePhase(const std::string& s, TracePhase* out) {
  for (TracePhase p : {TracePhase::kNone, TracePhase::kPrefill, TracePhase::kDecode,
                       TracePhase::kBoth, TracePhase::kEvict}) {
    if (s == TracePhaseName(p)) {
      *out = p;
      return true;
    }
  }
  return false;
}

// The six fields of a data line as a row, or the reason they are not one.
Status ParseFields(const std::vector<std::string>& f, TraceRow* row) {
  if (f.size() != 6) {
    return Status::InvalidArgument(std::to_string(f.size()) + " fields where 6 are expected (" +
                                   std::string(kTraceHeader) + ")");
  }
  if (!ParseTimestamp(f[0], &row->timestamp)) {
    return Status::InvalidArgument("Timestamp '" + TraceExcerpt(f[0]) +
                                   "' is not a number of seconds");
  }
  if (f[1] == "Read") {
    row->op = TraceOp::kRead;
  } else if (f[1] == "Write") {
    row->op = TraceOp::kWrite;
  } else {
    return Status::InvalidArgument("Operation '" + TraceExcerpt(f[1]) +
                                   "' is neither Read nor Write");
  }
  if (!ParseSize(f[2], &row->size)) {
    return Status::InvalidArgument("Object_Size_Bytes '" + TraceExcerpt(f[2]) +
                                   "' is not a whole number");
  }
  if (f[3].size() == 6 && f[3].starts_with("Tier-") && f[3][5] >= '0' && f[3][5] <= '2') {
    row->tier = f[3][5] - '0';
  } else {
    return Status::InvalidArgument("Tier '" + TraceExcerpt(f[3]) +
                                   "' is not Tier-0, Tier-1 or Tier-2");
  }
  row->key = f[4];
  if (!ParsePhase(f[5], &row->phase)) {
    return Status::InvalidArgument("Phase '" + TraceExcerpt(f[5]) +
                                   "' is not Prefill, Decode, Both, Evict or empty");
  }
  return Status::OK();
}

Status LineError(const std::string& name, std::size_t line, const std::string& what) {
  return Status::InvalidArgument(name + ":" + std::to_string(line) + ": " + what);
}

bool IsZstd(std::string_view data) {
  return data.size() >= 4 && static_cast<unsigned char>(data[0]) == 0x28 &&
         static_cast<unsigned char>(data[1]) == 0xB5 &&
         static_cast<unsigned char>(data[2]) == 0x2F && static_cast<unsigned char>(data[3]) == 0xFD;
}

// Parses a trace fed in pieces of any size: complete lines as they come,
// the rest kept for the next piece.
class RowParser {
 public:
  explicit RowParser(const std::string& name) : name_(name) {}

  Status Feed(std::string_view bytes) {
    any_ |= !bytes.empty();
    for (std::size_t start = 0;;) {
      const std::size_t nl = bytes.find('\n', start);
      const std::string_view piece =
          bytes.substr(start, nl == std::string_view::npos ? nl : nl - start);
      // Refused as soon as the bytes seen pass the limit (and a "\r" that
      // may end them), whether the line is whole or still in pieces.
      if (pending_.size() + piece.size() > kMaxTraceLine + 1) return TooLong(line_ + 1);
      if (nl == std::string_view::npos) {
        pending_.append(piece);
        return Status::OK();
      }
      if (pending_.empty()) {
        IOMIMIC_RETURN_IF_ERROR(Line(piece));
      } else {
        pending_.append(piece);
        IOMIMIC_RETURN_IF_ERROR(Line(pending_));
        pending_.clear();
      }
      start = nl + 1;
    }
  }

  Result<std::vector<TraceRow>> Finish() {
    if (!any_) return LineError(name_, 1, "empty file, no header");
    if (!pending_.empty()) IOMIMIC_RETURN_IF_ERROR(Line(pending_));
    pending_.clear();
    return std::move(rows_);
  }

 private:
  Status Line(std::string_view line) {
    ++line_;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.size() > kMaxTraceLine) return TooLong(line_);
    if (line_ == 1) {
      if (line == kTraceHeader) return Status::OK();
      return LineError(name_, 1, "the header is not '" + std::string(kTraceHeader) + "'");
    }
    if (line.empty()) return LineError(name_, line_, "an empty line");
    if (!SplitRecord(line, &fields_, &why_)) return LineError(name_, line_, why_);
    TraceRow row;
    row.line = line_;
    if (Status s = ParseFields(fields_, &row); !s.ok()) {
      return LineError(name_, line_, s.message());
    }
    rows_.push_back(std::move(row));
    return Status::OK();
  }

  Status TooLong(std::size_t line) const {
    return LineError(name_, line,
                     "a line longer than 64 KiB (" + std::to_string(kMaxTraceLine) + " bytes)");
  }

  const std::string& name_;
  std::string pending_;
  std::size_t line_ = 0;
  bool any_ = false;
  std::vector<TraceRow> rows_;
  std::vector<std::string> fields_;
  std::string why_;
};

// Feeds `parser` the file's bytes, through zstd when `zstd`, 1 MiB at a time.
Status FeedFile(std::FILE* file, const std::string& path, bool zstd, RowParser* parser) {
  std::vector<char> chunk(1u << 20);
#ifdef IOMIMIC_HAVE_ZSTD
  std::unique_ptr<ZSTD_DCtx, decltype(&ZSTD_freeDCtx)> ctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
  std::vector<char> out(ZSTD_DStreamOutSize());
  std::size_t left = 0;  // ZSTD_decompressStream's last hint: 0 at a frame's end
  std::uint64_t offset = 0;
#endif
  for (;;) {
    const std::size_t n = std::fread(chunk.data(), 1, chunk.size(), file);
    if (n == 0) break;
    if (!zstd) {
      IOMIMIC_RETURN_IF_ERROR(parser->Feed(std::string_view(chunk.data(), n)));
      continue;
    }
#ifdef IOMIMIC_HAVE_ZSTD
    ZSTD_inBuffer in{chunk.data(), n, 0};
    for (;;) {
      ZSTD_outBuffer o{out.data(), out.size(), 0};
      left = ZSTD_decompressStream(ctx.get(), &o, &in);
      if (ZSTD_isError(left)) {
        return Status::Corruption(path + ": zstd: " + ZSTD_getErrorName(left) + " at byte " +
                                  std::to_string(offset + in.pos));
      }
      IOMIMIC_RETURN_IF_ERROR(parser->Feed(std::string_view(out.data(), o.pos)));
      // All input taken and room left in the output: nothing more to flush.
      if (in.pos == in.size && o.pos < o.size) break;
    }
    offset += n;
#endif
  }
  if (std::ferror(file)) return Status::IOError("cannot read trace " + path);
#ifdef IOMIMIC_HAVE_ZSTD
  if (zstd && left != 0) return Status::Corruption(path + ": zstd stream ends inside a frame");
#endif
  return Status::OK();
}

}  // namespace

std::string FormatTraceRow(const TraceRow& row) {
  char number[64];
  std::snprintf(number, sizeof number, "%.6f,%s,%llu,", row.timestamp, TraceOpName(row.op),
                static_cast<unsigned long long>(row.size));
  std::string out(number);
  out.append(TraceTierName(row.tier));
  out.push_back(',');
  AppendField(&out, row.key);
  out.push_back(',');
  out.append(TracePhaseName(row.phase));
  out.append("\r\n");
  return out;
}

Result<std::vector<TraceRow>> ParseTrace(std::string_view text, const std::string& name) {
  RowParser parser(name);
  IOMIMIC_RETURN_IF_ERROR(parser.Feed(text));
  return parser.Finish();
}

Result<std::vector<TraceRow>> ReadTrace(const std::string& path) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), std::fclose);
  if (file == nullptr) return Status::FromErrno(errno, "cannot open trace " + path);
  char magic[4] = {};
  const std::size_t got = std::fread(magic, 1, sizeof magic, file.get());
  const bool zstd = IsZstd(std::string_view(magic, got));
#ifndef IOMIMIC_HAVE_ZSTD
  if (zstd) {
    return Status::NotSupported(path +
                                ": a zstd trace, and this iomimic was built without libzstd");
  }
#endif
  std::rewind(file.get());
  RowParser parser(path);
  IOMIMIC_RETURN_IF_ERROR(FeedFile(file.get(), path, zstd, &parser));
  return parser.Finish();
}

// --- TraceWriter ------------------------------------------------------------

struct TraceWriter::Impl {
  std::FILE* file = nullptr;
#ifdef IOMIMIC_HAVE_ZSTD
  ZSTD_CCtx* zstd = nullptr;
  std::vector<char> out;
#endif
  bool compressed = false;
};

TraceWriter::TraceWriter(std::string path) : path_(std::move(path)), impl_(new Impl) {}

TraceWriter::~TraceWriter() { (void)Close(); }

Result<std::unique_ptr<TraceWriter>> TraceWriter::Open(const std::string& path, int zstd_level) {
  std::unique_ptr<TraceWriter> w(new TraceWriter(path));
  w->impl_->compressed = path.ends_with(".zst");
#ifdef IOMIMIC_HAVE_ZSTD
  if (w->impl_->compressed) {
    w->impl_->zstd = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(w->impl_->zstd, ZSTD_c_compressionLevel, zstd_level);
    w->impl_->out.resize(ZSTD_CStreamOutSize());
  }
#else
  (void)zstd_level;
  if (w->impl_->compressed) {
    return Status::NotSupported(path + ": a .zst trace needs libzstd, and this iomimic has none");
  }
#endif
  w->impl_->file = std::fopen(path.c_str(), "wb");
  if (w->impl_->file == nullptr) return Status::FromErrno(errno, "cannot create trace " + path);
  std::lock_guard<std::mutex> lock(w->mu_);
  IOMIMIC_RETURN_IF_ERROR(w->WriteLocked(std::string(kTraceHeader) + "\r\n"));
  return w;
}

Status TraceWriter::WriteLocked(std::string_view text) {
  if (impl_->file == nullptr) return Status::Aborted(path_ + ": trace already closed");
#ifdef IOMIMIC_HAVE_ZSTD
  if (impl_->compressed) {
    ZSTD_inBuffer in{text.data(), text.size(), 0};
    while (in.pos < in.size) {
      ZSTD_outBuffer o{impl_->out.data(), impl_->out.size(), 0};
      std::size_t r = ZSTD_compressStream2(impl_->zstd, &o, &in, ZSTD_e_continue);
      if (ZSTD_isError(r)) return Status::Internal(path_ + ": zstd: " + ZSTD_getErrorName(r));
      if (std::fwrite(impl_->out.data(), 1, o.pos, impl_->file) != o.pos) {
        return Status::FromErrno(errno, "writing trace " + path_);
      }
    }
    return Status::OK();
  }
#endif
  if (std::fwrite(text.data(), 1, text.size(), impl_->file) != text.size()) {
    return Status::FromErrno(errno, "writing trace " + path_);
  }
  return Status::OK();
}

Status TraceWriter::Write(const TraceRow& row) {
  std::string text = FormatTraceRow(row);
  std::lock_guard<std::mutex> lock(mu_);
  return WriteLocked(text);
}

Status TraceWriter::Close() {
  std::lock_guard<std::mutex> lock(mu_);
  if (impl_->file == nullptr) {
#ifdef IOMIMIC_HAVE_ZSTD
    ZSTD_freeCCtx(impl_->zstd);  // a file that never opened
    impl_->zstd = nullptr;
#endif
    return Status::OK();
  }
  Status status;
#ifdef IOMIMIC_HAVE_ZSTD
  if (impl_->compressed) {
    std::size_t left = 1;
    while (left != 0 && status.ok()) {
      ZSTD_inBuffer in{nullptr, 0, 0};
      ZSTD_outBuffer o{impl_->out.data(), impl_->out.size(), 0};
      left = ZSTD_compressStream2(impl_->zstd, &o, &in, ZSTD_e_end);
      if (ZSTD_isError(left)) {
        status = Status::Internal(path_ + ": zstd: " + ZSTD_getErrorName(left));
      } else if (std::fwrite(impl_->out.data(), 1, o.pos, impl_->file) != o.pos) {
        status = Status::FromErrno(errno, "writing trace " + path_);
      }
    }
    ZSTD_freeCCtx(impl_->zstd);
    impl_->zstd = nullptr;
  }
#endif
  if (std::fclose(impl_->file) != 0 && status.ok()) {
    status = Status::FromErrno(errno, "closing trace " + path_);
  }
  impl_->file = nullptr;
  return status;
}

}  // namespace iomimic::kvcache
