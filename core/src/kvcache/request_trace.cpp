#include "kvcache/request_trace.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace iomimic::kvcache {
namespace {

// Not `json`: other files of the folder alias the ordered kind (a unity build
// puts them in one translation unit).
using TraceJson = nlohmann::json;

// Ids given to blocks the trace names no id for: far above any trace's own.
constexpr std::uint64_t kFreshIds = 1ULL << 62;
// The longest input or output a request may have, tokens: far above any
// model's context, and small enough that its blocks fit in memory.
constexpr std::uint64_t kMaxTokens = 1ULL << 24;

Status Bad(const std::string& name, std::uint64_t line, const std::string& what) {
  return Status::InvalidArgument(name + ":" + std::to_string(line) + ": " + what);
}

std::uint64_t Mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A non-negative integer field of `o`, or an error naming it.
Result<std::uint64_t> Count(const TraceJson& o, const char* key, const std::string& name,
                            std::uint64_t line) {
  if (!o.contains(key) || !o[key].is_number()) return Bad(name, line, std::string("no ") + key);
  const double v = o[key].get<double>();
  if (!(v >= 0) || v != std::floor(v)) {
    return Bad(name, line, std::string(key) + " is not a whole number >= 0");
  }
  if (v > static_cast<double>(kMaxTokens)) {
    return Bad(name, line,
               std::string(key) + " is above " + std::to_string(kMaxTokens) + " tokens");
  }
  return static_cast<std::uint64_t>(v);
}

Result<RequestTrace> ParseMooncake(std::string_view text, const std::string& name) {
  RequestTrace trace;
  trace.format = "mooncake";
  std::uint64_t fresh = kFreshIds, line_no = 0;
  for (std::size_t at = 0; at < text.size();) {
    std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(at, end - at);
    at = end + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    const TraceJson o = TraceJson::parse(line, nullptr, /*allow_exceptions=*/false);
    if (o.is_discarded() || !o.is_object()) return Bad(name, line_no, "not a JSON object");
    if (!o.contains("timestamp") || !o["timestamp"].is_number() ||
        !(o["timestamp"].get<double>() >= 0)) {
      return Bad(name, line_no, "no timestamp (milliseconds >= 0)");
    }
    TraceRequest r;
    r.arrival_seconds = o["timestamp"].get<double>() / 1000.0;
    IOMIMIC_ASSIGN_OR_RETURN(r.input_tokens, Count(o, "input_length", name, line_no));
    IOMIMIC_ASSIGN_OR_RETURN(r.output_tokens, Count(o, "output_length", name, line_no));
    if (o.contains("hash_ids")) {
      if (!o["hash_ids"].is_array()) return Bad(name, line_no, "hash_ids is not a list");
      for (const TraceJson& id : o["hash_ids"]) {
        if (!id.is_number_unsigned() || id.get<std::uint64_t>() >= kFreshIds) {
          return Bad(name, line_no, "a hash id is not a whole number >= 0");
        }
        r.block_ids.push_back(id.get<std::uint64_t>());
      }
    }
    // A block the trace gives no id shares nothing.
    const std::uint64_t blocks = (r.input_tokens + trace.block_tokens - 1) / trace.block_tokens;
    if (r.block_ids.size() > blocks) r.block_ids.resize(blocks);
    while (r.block_ids.size() < blocks) r.block_ids.push_back(fresh++);
    trace.requests.push_back(std::move(r));
  }
  return trace;
}

// The fields of one CSV line (no quoting: BurstGPT's has none).
std::vector<std::string> Fields(std::string_view line) {
  std::vector<std::string> out;
  std::size_t at = 0;
  for (;;) {
    const std::size_t comma = line.find(',', at);
    std::string f(
        line.substr(at, comma == std::string_view::npos ? std::string_view::npos : comma - at));
    while (!f.empty() && (f.back() == '\r' || f.back() == ' ')) f.pop_back();
    while (!f.empty() && f.front() == ' ') f.erase(f.begin());
    out.push_back(std::move(f));
    if (comma == std::string_view::npos) return out;
    at = comma + 1;
  }
}

Result<RequestTrace> ParseBurstGpt(std::string_view text, const std::string& name) {
  RequestTrace trace;
  trace.format = "burstgpt";
  std::istringstream in{std::string(text)};
  std::string line;
  std::uint64_t line_no = 0, fresh = kFreshIds;
  int col_time = -1, col_in = -1, col_out = -1;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::vector<std::string> f = Fields(line);
    if (col_time < 0) {
      for (int i = 0; i < static_cast<int>(f.size()); ++i) {
        if (f[i] == "Timestamp") col_time = i;
        if (f[i] == "Request tokens") col_in = i;
        if (f[i] == "Response tokens") col_out = i;
      }
      if (col_time < 0 || col_in < 0 || col_out < 0) {
        return Bad(name, line_no,
                   "the header does not name Timestamp, Request tokens and Response tokens");
      }
      continue;
    }
    const int need = std::max({col_time, col_in, col_out});
    if (static_cast<int>(f.size()) <= need) return Bad(name, line_no, "too few fields");
    TraceRequest r;
    char* end = nullptr;
    r.arrival_seconds = std::strtod(f[col_time].c_str(), &end);
    if (end == f[col_time].c_str() || *end != '\0' || !(r.arrival_seconds >= 0)) {
      return Bad(name, line_no, "Timestamp '" + f[col_time] + "' is not a number >= 0");
    }
    for (auto [col, out] : {std::pair{col_in, &r.input_tokens}, {col_out, &r.output_tokens}}) {
      const std::string& v = f[static_cast<std::size_t>(col)];
      if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos || v.size() > 15) {
        return Bad(name, line_no, "'" + v + "' is not a token count");
      }
      *out = std::stoull(v);
      if (*out > kMaxTokens) {
        return Bad(name, line_no, v + " tokens is above " + std::to_string(kMaxTokens));
      }
    }
    for (std::uint64_t b = 0; b < (r.input_tokens + trace.block_tokens - 1) / trace.block_tokens;
         ++b) {
      r.block_ids.push_back(fresh++);
    }
    trace.requests.push_back(std::move(r));
  }
  if (col_time < 0) return Bad(name, 1, "no header line");
  return trace;
}

std::uint64_t TokensOf(const TraceJson& turn) {
  const std::string value = turn.contains("value") && turn["value"].is_string()
                                ? turn["value"].get<std::string>()
                                : std::string();
  return std::max<std::uint64_t>(1, (value.size() + 3) / 4);
}

Result<RequestTrace> ParseShareGpt(std::string_view text, const std::string& name) {
  RequestTrace trace;
  trace.format = "sharegpt";
  const TraceJson doc = TraceJson::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_array()) {
    return Bad(name, 1, "not a JSON list of conversations");
  }
  std::uint64_t next_id = 0;
  for (std::size_t c = 0; c < doc.size(); ++c) {
    const TraceJson& conv = doc[c];
    if (!conv.is_object() || !conv.contains("conversations") || !conv["conversations"].is_array()) {
      return Bad(name, 1, "conversation " + std::to_string(c) + " has no \"conversations\" list");
    }
    const TraceJson& turns = conv["conversations"];
    std::vector<std::uint64_t> ids;  // the conversation's full blocks so far
    std::uint64_t tokens = 0;
    for (std::size_t t = 0; t < turns.size(); ++t) {
      tokens += TokensOf(turns[t]);
      if (!turns[t].is_object() || turns[t].value("from", "") != "human") continue;
      TraceRequest r;
      r.conversation = c + 1;
      r.input_tokens = tokens;
      r.output_tokens = t + 1 < turns.size() ? TokensOf(turns[t + 1]) : 0;
      const std::uint64_t full = tokens / trace.block_tokens;
      while (ids.size() < full) ids.push_back(next_id++);
      r.block_ids.assign(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(full));
      if (tokens % trace.block_tokens != 0) r.block_ids.push_back(kFreshIds + next_id++);
      trace.requests.push_back(std::move(r));
    }
  }
  return trace;
}

}  // namespace

std::string TraceFormatOf(const std::string& path, const std::string& format) {
  if (!format.empty() && format != "auto") return format;
  auto ends = [&](const char* s) {
    const std::string e(s);
    return path.size() >= e.size() && path.compare(path.size() - e.size(), e.size(), e) == 0;
  };
  if (ends(".csv")) return "burstgpt";
  if (ends(".json")) return "sharegpt";
  return "mooncake";
}

Result<RequestTrace> ParseRequestTrace(std::string_view text, const std::string& name,
                                       const std::string& format) {
  Result<RequestTrace> trace = format == "burstgpt"   ? ParseBurstGpt(text, name)
                               : format == "sharegpt" ? ParseShareGpt(text, name)
                               : format == "mooncake"
                                   ? ParseMooncake(text, name)
                                   : Result<RequestTrace>(Status::InvalidArgument(
                                         name + ": unknown request trace format '" + format +
                                         "' (mooncake, burstgpt, sharegpt)"));
  if (!trace.ok()) return trace;
  std::stable_sort(trace->requests.begin(), trace->requests.end(),
                   [](const TraceRequest& a, const TraceRequest& b) {
                     return a.arrival_seconds < b.arrival_seconds;
                   });
  const double first = trace->requests.empty() ? 0 : trace->requests.front().arrival_seconds;
  for (TraceRequest& r : trace->requests) r.arrival_seconds -= first;
  return trace;
}

Result<RequestTrace> ReadRequestTrace(const std::string& path, const std::string& format) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot open request trace " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return ParseRequestTrace(text.str(), path, TraceFormatOf(path, format));
}

void ChunksOf(const TraceRequest& request, std::uint64_t block_tokens, std::uint64_t chunk_tokens,
              std::vector<ChunkRef>* out) {
  out->clear();
  for (std::uint64_t begin = 0; begin < request.input_tokens; begin += chunk_tokens) {
    const std::uint64_t end = std::min(request.input_tokens, begin + chunk_tokens);
    const std::uint64_t block = (end - 1) / block_tokens;
    const std::uint64_t id =
        block < request.block_ids.size() ? request.block_ids[block] : kFreshIds + block;
    const std::uint64_t in_block = end - block * block_tokens;
    out->push_back({Mix(Mix(id) ^ in_block), end - begin});
  }
}

}  // namespace iomimic::kvcache
