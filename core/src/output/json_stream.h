// Streaming JSON for result files whose size grows with the number of steps
// (<rank>_output.json): numbers go straight from the per-step records to a
// write buffer, so writing a million-step list costs neither a JSON tree nor
// a copy of the list. Small values (host facts, timestamps) are formatted by
// the caller and handed over as JSON text (JsonStream::Raw).
//
// The layout is nlohmann's dump(4): one member per line, four spaces per
// level; number lists hold several values per line. The text is strict JSON
// (non-finite numbers are written as null).

#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "iomimic/status.h"

namespace iomimic::output {

// Room FormatNumber needs: the longest shortest-round-trip double
// ("-2.2250738585072014e-308") plus ".0".
inline constexpr std::size_t kNumberChars = 32;

// Writes `v` to `out` (at least kNumberChars) as a JSON number: the shortest
// text that reads back as the same double (std::to_chars), with ".0" added to
// integral values so that readers see a float, as nlohmann writes them;
// "null" when `v` is not finite. Returns the number of characters written.
std::size_t FormatNumber(double v, char* out);

// Aggregation of a per-step list to at most `bound` entries
// (iomimic.max_step_list; 0 = unlimited): the number of consecutive steps
// each entry stands for, k = ceil(steps / bound), or 1 when the list fits.
std::uint64_t StepsPerEntry(std::uint64_t steps, std::uint64_t bound);

// Entries of a list of `steps` values at k steps per entry: ceil(steps / k).
std::uint64_t AggregatedSize(std::uint64_t steps, std::uint64_t k);

// Entry `i` of `values` at k steps per entry: values[i] when k is 1, else
// the mean of values[i*k .. min((i+1)*k, size)) (the last entry may stand for
// fewer steps) rounded to the nanosecond, the clocks' resolution, which keeps
// the text short. So sum(entries) * k is the list's sum, up to the last entry.
double AggregatedEntry(std::span<const double> values, std::uint64_t k, std::uint64_t i);

class JsonStream {
 public:
  JsonStream();
  ~JsonStream();
  JsonStream(const JsonStream&) = delete;
  JsonStream& operator=(const JsonStream&) = delete;

  // Creates (or truncates) `path` and writes the opening brace of the root
  // object. Must be called once, before anything else.
  Status Open(const std::string& path);

  // The next member of the current object: `key` (escaped here) and the
  // colon. A value call must follow.
  void Key(std::string_view key);
  // An object value (or the root's members); closed by EndObject.
  void BeginObject();
  void EndObject();
  // A value given as JSON text, e.g. a nlohmann dump(4): multi-line text is
  // indented to the current level.
  void Raw(std::string_view json);
  void Number(double v);
  // A list of per-step values at k steps per entry (see AggregatedEntry).
  void StepList(std::span<const double> values, std::uint64_t k);

  // Closes the root object, flushes and closes the file; the first error of
  // any write, naming the file. Objects left open are an Internal error.
  Status Close();

 private:
  void Append(std::string_view text);
  void Indent();
  void Flush();

  int fd_ = -1;
  std::string path_;
  std::string buffer_;
  // Members written so far in each open object (the root is depth 1).
  std::vector<std::uint64_t> members_;
  int error_ = 0;  // the first errno of a failed write
};

}  // namespace iomimic::output
