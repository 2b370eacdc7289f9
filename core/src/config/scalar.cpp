#include <cctype>
#include <charconv>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <system_error>

#include "config/scalar_internal.h"

namespace iomimic::config::internal {
namespace {

bool OneOf(std::string_view text, std::initializer_list<std::string_view> words) {
  for (std::string_view word : words) {
    if (text == word) return true;
  }
  return false;
}

// Removes YAML 1.1 digit separators; nullopt when they are misplaced.
std::optional<std::string> StripSeparators(std::string_view text) {
  std::string digits;
  digits.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '_') {
      digits.push_back(text[i]);
      continue;
    }
    const bool between_digits = i > 0 && i + 1 < text.size() &&
                                std::isxdigit(static_cast<unsigned char>(text[i - 1])) &&
                                std::isxdigit(static_cast<unsigned char>(text[i + 1]));
    if (!between_digits) return std::nullopt;
  }
  return digits;
}

// Parses an unsigned magnitude (decimal or 0x hex) from the whole of `text`.
std::optional<std::uint64_t> ParseMagnitude(std::string_view text) {
  auto digits = StripSeparators(text);
  if (!digits || digits->empty()) return std::nullopt;
  int base = 10;
  std::string_view view = *digits;
  if (view.size() > 2 && view[0] == '0' && (view[1] == 'x' || view[1] == 'X')) {
    base = 16;
    view.remove_prefix(2);
  }
  std::uint64_t value = 0;
  const char* end = view.data() + view.size();
  const auto [ptr, ec] = std::from_chars(view.data(), end, value, base);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

}  // namespace

std::optional<bool> ParseBool(std::string_view text) {
  if (OneOf(text, {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON", "1"})) {
    return true;
  }
  if (OneOf(text, {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF", "0"})) {
    return false;
  }
  return std::nullopt;
}

std::optional<std::int64_t> ParseInt(std::string_view text) {
  bool negative = false;
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) {
    negative = text[0] == '-';
    text.remove_prefix(1);
  }
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) return std::nullopt;
  const auto magnitude = ParseMagnitude(text);
  if (!magnitude) return std::nullopt;
  constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  if (negative) {
    if (*magnitude > kMax + 1) return std::nullopt;
    return *magnitude == kMax + 1 ? std::numeric_limits<std::int64_t>::min()
                                  : -static_cast<std::int64_t>(*magnitude);
  }
  if (*magnitude > kMax) return std::nullopt;
  return static_cast<std::int64_t>(*magnitude);
}

std::optional<std::uint64_t> ParseUInt(std::string_view text) {
  if (!text.empty() && text[0] == '+') text.remove_prefix(1);
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) return std::nullopt;
  return ParseMagnitude(text);
}

std::optional<double> ParseDouble(std::string_view text) {
  if (!text.empty() && text[0] == '+') text.remove_prefix(1);
  if (text.empty()) return std::nullopt;
  // Only digits, sign, dot, exponent and separators: from_chars alone would
  // also take "inf", "nan" and hexadecimal floats.
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '+' &&
        c != 'e' && c != 'E' && c != '_') {
      return std::nullopt;
    }
  }
  auto digits = StripSeparators(text);
  if (!digits || digits->empty()) return std::nullopt;
  double value = 0;
  const char* end = digits->data() + digits->size();
  const auto [ptr, ec] = std::from_chars(digits->data(), end, value);
  if (ec != std::errc() || ptr != end || !std::isfinite(value)) return std::nullopt;
  return value;
}

std::string FormatDouble(double value) {
  char buffer[64];
  const auto [ptr, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  if (ec != std::errc()) return std::to_string(value);
  std::string text(buffer, ptr);
  const std::size_t exponent = text.find_first_of("eE");
  if (exponent != std::string::npos && text.find('.') == std::string::npos) {
    text.insert(exponent, ".0");
  }
  return text;
}

bool LooksLikeNonString(std::string_view text) {
  if (OneOf(text, {"", "~", "null", "Null", "NULL"})) return true;
  if (OneOf(text, {"y", "Y", "n", "N"})) return true;  // YAML 1.1 booleans in some readers
  if (ParseBool(text)) return true;
  if (ParseInt(text) || ParseDouble(text)) return true;
  return OneOf(text, {".inf", ".Inf", ".INF", "-.inf", "+.inf", ".nan", ".NaN", ".NAN"});
}

std::string_view Trim(std::string_view text) {
  const std::size_t begin = text.find_first_not_of(" \t");
  if (begin == std::string_view::npos) return {};
  const std::size_t end = text.find_last_not_of(" \t");
  return text.substr(begin, end - begin + 1);
}

}  // namespace iomimic::config::internal
