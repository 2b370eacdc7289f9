#include "kvcache/trace.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

#ifdef IOMIMIC_HAVE_ZSTD
#include <zstd.h>
#endif

namespace iomimic::kvcache {

const char* TraceOpName(TraceOp op) { return op == TraceOp::kWrite ? "Write" : "Read"; }

const char* TracePhaseName(TracePhase phase) {
  switch (phase) {
    case TracePhase::kPrefill:
      return "Prefill";
    case TracePhase::kDecode:
      return "Decode";
    case TracePhase::kBoth:
      return "Both";
    case TracePhase::kEvict:
      return "Evict";
    case TracePhase::kNone:
      break;
  }
  return "";
}

const char* TraceTierName(int tier) {
  static constexpr const char* kNames[] = {"Tier-0", "Tier-1", "Tier-2"};
  return tier >= 0 && tier <= 2 ? kNames[tier] : "Tier-?";
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
    return Status::InvalidArgument("Timestamp '" + f[0] + "' is not a number of seconds");
  }
  if (f[1] == "Read") {
    row->op = TraceOp::kRead;
  } else if (f[1] == "Write") {
    row->op = TraceOp::kWrite;
  } else {
    return Status::InvalidArgument("Operation '" + f[1] + "' is neither Read nor Write");
  }
  if (!ParseSize(f[2], &row->size)) {
    return Status::InvalidArgument("Object_Size_Bytes '" + f[2] + "' is not a whole number");
  }
  if (f[3].size() == 6 && f[3].starts_with("Tier-") && f[3][5] >= '0' && f[3][5] <= '2') {
    row->tier = f[3][5] - '0';
  } else {
    return Status::InvalidArgument("Tier '" + f[3] + "' is not Tier-0, Tier-1 or Tier-2");
  }
  row->key = f[4];
  if (!ParsePhase(f[5], &row->phase)) {
    return Status::InvalidArgument("Phase '" + f[5] +
                                   "' is not Prefill, Decode, Both, Evict or empty");
  }
  return Status::OK();
}

std::string_view NextLine(std::string_view text, std::size_t* pos) {
  std::size_t end = text.find('\n', *pos);
  if (end == std::string_view::npos) end = text.size();
  std::string_view line = text.substr(*pos, end - *pos);
  *pos = end < text.size() ? end + 1 : text.size();
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

Status LineError(const std::string& name, std::size_t line, const std::string& what) {
  return Status::InvalidArgument(name + ":" + std::to_string(line) + ": " + what);
}

bool IsZstd(std::string_view data) {
  return data.size() >= 4 && static_cast<unsigned char>(data[0]) == 0x28 &&
         static_cast<unsigned char>(data[1]) == 0xB5 &&
         static_cast<unsigned char>(data[2]) == 0x2F && static_cast<unsigned char>(data[3]) == 0xFD;
}

Result<std::string> Decompress(const std::string& path, std::string_view data) {
#ifdef IOMIMIC_HAVE_ZSTD
  std::unique_ptr<ZSTD_DCtx, decltype(&ZSTD_freeDCtx)> ctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
  std::string out;
  std::vector<char> chunk(ZSTD_DStreamOutSize());
  ZSTD_inBuffer in{data.data(), data.size(), 0};
  std::size_t last = 0;
  for (;;) {
    ZSTD_outBuffer o{chunk.data(), chunk.size(), 0};
    last = ZSTD_decompressStream(ctx.get(), &o, &in);
    if (ZSTD_isError(last)) {
      return Status::Corruption(path + ": zstd: " + ZSTD_getErrorName(last) + " at byte " +
                                std::to_string(in.pos));
    }
    out.append(chunk.data(), o.pos);
    // All input taken and room left in the output: nothing more to flush.
    if (in.pos == in.size && o.pos < o.size) break;
  }
  if (last != 0) return Status::Corruption(path + ": zstd stream ends inside a frame");
  return out;
#else
  (void)data;
  return Status::NotSupported(path + ": a zstd trace, and this iomimic was built without libzstd");
#endif
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
  std::size_t pos = 0;
  if (text.empty()) return LineError(name, 1, "empty file, no header");
  if (NextLine(text, &pos) != kTraceHeader) {
    return LineError(name, 1, "the header is not '" + std::string(kTraceHeader) + "'");
  }
  std::vector<TraceRow> rows;
  std::vector<std::string> fields;
  std::string why;
  for (std::size_t line = 2; pos < text.size(); ++line) {
    std::string_view record = NextLine(text, &pos);
    if (record.empty()) return LineError(name, line, "an empty line");
    if (!SplitRecord(record, &fields, &why)) return LineError(name, line, why);
    TraceRow row;
    row.line = line;
    if (Status s = ParseFields(fields, &row); !s.ok()) return LineError(name, line, s.message());
    rows.push_back(std::move(row));
  }
  return rows;
}

Result<std::vector<TraceRow>> ReadTrace(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::FromErrno(errno, "cannot open trace " + path);
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return Status::IOError("cannot read trace " + path);
  if (IsZstd(data)) {
    IOMIMIC_ASSIGN_OR_RETURN(data, Decompress(path, data));
  }
  return ParseTrace(data, path);
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
