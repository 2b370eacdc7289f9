// ReadScript (train/read_script.h): parsing and the per-sample lookups.

#include "train/read_script.h"

#include <charconv>
#include <sstream>

namespace iomimic::train {
namespace {

// The whole of `text` as a decimal number, or false.
bool ParseNumber(const std::string& text, std::uint64_t* out) {
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, *out);
  return ec == std::errc() && ptr == end && !text.empty();
}

// Most samples one entry may list and reads one sample may make: a bound
// that keeps a mistyped count from filling memory.
constexpr std::uint64_t kMostSamples = std::uint64_t{1} << 24;
constexpr std::uint64_t kMostReads = std::uint64_t{1} << 20;

}  // namespace

Result<ReadScript> ReadScript::Parse(const std::vector<std::string>& entries) {
  ReadScript script;
  for (std::size_t e = 0; e < entries.size(); ++e) {
    const std::string& text = entries[e];
    auto bad = [&](const std::string& why) {
      return Status::InvalidArgument("iomimic.read_script entry " + std::to_string(e + 1) + " '" +
                                     text + "': " + why);
    };
    const std::size_t colon = text.find(':');
    std::uint64_t count = 0;
    std::string head = colon == std::string::npos ? "" : text.substr(0, colon);
    while (!head.empty() && head.back() == ' ') head.pop_back();
    while (!head.empty() && head.front() == ' ') head.erase(0, 1);
    if (colon == std::string::npos || !ParseNumber(head, &count) || count == 0 ||
        count > kMostSamples) {
      return bad("expected 'N: [open] SIZE SIZE*K ...' with N from 1 to " +
                 std::to_string(kMostSamples));
    }
    std::vector<std::uint64_t> reads;
    std::istringstream words(text.substr(colon + 1));
    std::string word;
    bool reopen = false;
    while (words >> word) {
      if (word == "open" && reads.empty() && !reopen) {
        reopen = true;
        continue;
      }
      const std::size_t star = word.find('*');
      std::uint64_t size = 0, times = 1;
      if (!ParseNumber(word.substr(0, star), &size) ||
          (star != std::string::npos &&
           (!ParseNumber(word.substr(star + 1), &times) || times == 0))) {
        return bad("'" + word + "' is not SIZE or SIZE*K");
      }
      if (reads.size() + times > kMostReads) {
        return bad("more than " + std::to_string(kMostReads) + " reads in one sample");
      }
      reads.insert(reads.end(), times, size);
    }
    if (reads.empty()) return bad("no read sizes");
    script.patterns_.push_back(std::move(reads));
    script.reopen_.push_back(reopen);
    script.samples_.insert(script.samples_.end(), count, script.patterns_.size() - 1);
    if (script.samples_.size() > kMostSamples) return bad("more than 2^24 samples listed in all");
  }
  for (const std::size_t pattern : script.samples_) {
    script.before_.push_back(script.cycle_bytes_);
    for (const std::uint64_t size : script.patterns_[pattern]) script.cycle_bytes_ += size;
  }
  return script;
}

const std::vector<std::uint64_t>& ReadScript::Reads(std::uint64_t sample) const {
  return patterns_[samples_[sample % samples_.size()]];
}

bool ReadScript::Reopens(std::uint64_t sample) const {
  return reopen_[samples_[sample % samples_.size()]];
}

std::uint64_t ReadScript::StartOffset(std::uint64_t sample) const {
  const std::uint64_t n = samples_.size();
  return (sample / n) * cycle_bytes_ + before_[sample % n];
}

}  // namespace iomimic::train
