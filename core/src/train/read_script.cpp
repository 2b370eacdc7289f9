// ReadScript (train/read_script.h): parsing, and each class's script
// resolved for a file's size.

#include "train/read_script.h"

#include <cctype>
#include <charconv>
#include <sstream>

#include "config/config.h"

namespace iomimic::train {
namespace {

// The whole of `text` as a decimal number, or false.
bool ParseNumber(const std::string& text, std::uint64_t* out) {
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, *out);
  return ec == std::errc() && ptr == end && !text.empty();
}

// A class name: a letter, then letters, digits, '_', '-' or '.'.
bool IsClassName(const std::string& word) {
  if (word.empty() || !std::isalpha(static_cast<unsigned char>(word[0]))) return false;
  for (const char c : word) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') {
      return false;
    }
  }
  return true;
}

std::string Trimmed(std::string s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
  while (!s.empty() && s.front() == ' ') s.erase(0, 1);
  return s;
}

// Most samples one entry may list and reads one sample may make: a bound
// that keeps a mistyped count from filling memory.
constexpr std::uint64_t kMostSamples = std::uint64_t{1} << 24;
constexpr std::uint64_t kMostReads = std::uint64_t{1} << 20;
// Most reads the entries may list together (each class is resolved whole
// for a file's size).
constexpr std::uint64_t kMostListedReads = std::uint64_t{1} << 24;

}  // namespace

Result<ReadScript> ReadScript::Parse(const std::vector<std::string>& entries) {
  ReadScript script;
  std::uint64_t all_samples = 0, all_reads = 0;
  for (std::size_t e = 0; e < entries.size(); ++e) {
    const std::string& text = entries[e];
    auto bad = [&](const std::string& why) {
      return Status::InvalidArgument("iomimic.read_script entry " + std::to_string(e + 1) + " '" +
                                     config::OneLineText(text) + "': " + config::OneLineText(why));
    };
    const std::size_t colon = text.find(':');
    std::uint64_t count = 0;
    std::string head = colon == std::string::npos ? "" : Trimmed(text.substr(0, colon));
    std::string name;
    if (const std::size_t space = head.find(' '); space != std::string::npos) {
      name = head.substr(0, space);
      head = Trimmed(head.substr(space + 1));
      if (!IsClassName(name)) {
        return bad("'" + name +
                   "' is not a class name (a letter, then letters, digits, '_', '-', '.')");
      }
    }
    if (colon == std::string::npos || !ParseNumber(head, &count) || count == 0 ||
        count > kMostSamples) {
      return bad("expected '[CLASS] N: [open] SIZE SIZE*K file-C ...' with N from 1 to " +
                 std::to_string(kMostSamples));
    }
    std::vector<Term> terms;
    std::uint64_t reads = 0;
    std::istringstream words(text.substr(colon + 1));
    std::string word;
    bool reopen = false;
    while (words >> word) {
      if (word == "open" && terms.empty() && !reopen) {
        reopen = true;
        continue;
      }
      const std::size_t star = word.find('*');
      std::string size_text = word.substr(0, star);
      Term term;
      if (size_text == "file") {
        term.from_end = true;
      } else if (size_text.rfind("file-", 0) == 0) {
        term.from_end = true;
        if (!ParseNumber(size_text.substr(5), &term.size)) {
          return bad("'" + word + "' is not SIZE, SIZE*K, file-C or file-C*K");
        }
      } else if (!ParseNumber(size_text, &term.size)) {
        return bad("'" + word + "' is not SIZE, SIZE*K, file-C or file-C*K");
      }
      if (star != std::string::npos &&
          (!ParseNumber(word.substr(star + 1), &term.times) || term.times == 0)) {
        return bad("'" + word + "' is not SIZE, SIZE*K, file-C or file-C*K");
      }
      reads += term.times;
      if (reads > kMostReads) {
        return bad("more than " + std::to_string(kMostReads) + " reads in one sample");
      }
      all_reads += term.times;
      if (all_reads > kMostListedReads) return bad("more than 2^24 reads listed in all");
      terms.push_back(term);
    }
    if (terms.empty()) return bad("no read sizes");
    int index = script.ClassIndex(name);
    if (index < 0) {
      index = static_cast<int>(script.classes_.size());
      script.classes_.push_back(Class{name, {}, {}, {}});
    }
    Class& c = script.classes_[static_cast<std::size_t>(index)];
    c.patterns.push_back(std::move(terms));
    c.reopen.push_back(reopen);
    c.samples.insert(c.samples.end(), count, c.patterns.size() - 1);
    all_samples += count;
    if (all_samples > kMostSamples) return bad("more than 2^24 samples listed in all");
  }
  return script;
}

int ReadScript::ClassIndex(const std::string& name) const {
  for (std::size_t i = 0; i < classes_.size(); ++i) {
    if (classes_[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

std::vector<std::string> ReadScript::ClassNames() const {
  std::vector<std::string> names;
  for (const Class& c : classes_) names.push_back(c.name);
  return names;
}

ResolvedScript ReadScript::Resolve(int index, std::uint64_t file_size) const {
  const Class& c = classes_[static_cast<std::size_t>(index)];
  ResolvedScript r;
  r.reopen_ = c.reopen;
  r.samples_ = &c.samples;
  for (const std::vector<Term>& terms : c.patterns) {
    std::vector<std::uint64_t> reads;
    for (const Term& t : terms) {
      const std::uint64_t size =
          !t.from_end ? t.size : (file_size > t.size ? file_size - t.size : 0);
      reads.insert(reads.end(), t.times, size);
    }
    r.patterns_.push_back(std::move(reads));
  }
  for (const std::size_t pattern : c.samples) {
    r.before_.push_back(r.cycle_bytes_);
    for (const std::uint64_t size : r.patterns_[pattern]) r.cycle_bytes_ += size;
  }
  return r;
}

const std::vector<std::uint64_t>& ResolvedScript::Reads(std::uint64_t sample) const {
  return patterns_[(*samples_)[sample % samples_->size()]];
}

bool ResolvedScript::Reopens(std::uint64_t sample) const {
  return reopen_[(*samples_)[sample % samples_->size()]];
}

std::uint64_t ResolvedScript::StartOffset(std::uint64_t sample) const {
  const std::uint64_t n = samples_->size();
  return (sample / n) * cycle_bytes_ + before_[sample % n];
}

}  // namespace iomimic::train
