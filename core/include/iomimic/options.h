// iomimic plugin SDK: plugin options.
//
// A manifest hands each plugin a flat map of options (`storage.options`,
// `dataset.options`). Values arrive as strings exactly as written in YAML; the
// typed getters parse them and produce errors that name the plugin and key.
// The loader rejects keys that the plugin's descriptor does not declare, so a
// plugin only ever sees keys it knows.

#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "iomimic/status.h"

namespace iomimic {

class PluginOptions {
 public:
  PluginOptions() = default;
  PluginOptions(std::string owner, std::map<std::string, std::string> values)
      : owner_(std::move(owner)), values_(std::move(values)) {}

  // Name used in error messages, e.g. "storage plugin 'posix'".
  const std::string& owner() const { return owner_; }
  const std::map<std::string, std::string>& values() const { return values_; }
  bool Has(std::string_view key) const { return values_.find(std::string(key)) != values_.end(); }
  void Set(std::string key, std::string value) { values_[std::move(key)] = std::move(value); }

  // Each getter returns `fallback` when the key is absent and InvalidArgument
  // when the value does not parse.
  Result<std::string> GetString(std::string_view key, std::string fallback) const {
    auto it = values_.find(std::string(key));
    return it == values_.end() ? fallback : it->second;
  }

  Result<bool> GetBool(std::string_view key, bool fallback) const {
    auto it = values_.find(std::string(key));
    if (it == values_.end()) return fallback;
    const std::string& v = it->second;
    if (v == "true" || v == "True" || v == "TRUE" || v == "1" || v == "yes" || v == "on") {
      return true;
    }
    if (v == "false" || v == "False" || v == "FALSE" || v == "0" || v == "no" || v == "off") {
      return false;
    }
    return Bad(key, v, "a boolean (true/false)");
  }

  Result<std::int64_t> GetInt(std::string_view key, std::int64_t fallback) const {
    auto it = values_.find(std::string(key));
    if (it == values_.end()) return fallback;
    const std::string& v = it->second;
    char* end = nullptr;
    errno = 0;
    long long parsed = std::strtoll(v.c_str(), &end, 0);
    if (v.empty() || errno != 0 || *end != '\0') return Bad(key, v, "an integer");
    return static_cast<std::int64_t>(parsed);
  }

  Result<double> GetDouble(std::string_view key, double fallback) const {
    auto it = values_.find(std::string(key));
    if (it == values_.end()) return fallback;
    const std::string& v = it->second;
    char* end = nullptr;
    errno = 0;
    double parsed = std::strtod(v.c_str(), &end);
    if (v.empty() || errno != 0 || *end != '\0') return Bad(key, v, "a number");
    return parsed;
  }

  // One of the names in `choices`, as its value: `fallback` when the key is
  // absent; InvalidArgument listing the names ("... is not one of a, b, c")
  // for any other text.
  template <typename T>
  Result<T> GetChoice(std::string_view key, T fallback,
                      std::initializer_list<std::pair<std::string_view, T>> choices) const {
    auto it = values_.find(std::string(key));
    if (it == values_.end()) return fallback;
    std::string names;
    for (const auto& [name, value] : choices) {
      if (it->second == name) return value;
      if (!names.empty()) names += ", ";
      names += name;
    }
    return Bad(key, it->second, "one of " + names);
  }

  // A byte count with an optional binary suffix: 4096, 64k, 1M, 2G, 1T
  // (also "KiB", "MiB"...). Suffixes are powers of 1024.
  Result<std::uint64_t> GetBytes(std::string_view key, std::uint64_t fallback) const {
    auto it = values_.find(std::string(key));
    if (it == values_.end()) return fallback;
    const std::string& v = it->second;
    char* end = nullptr;
    errno = 0;
    double number = std::strtod(v.c_str(), &end);
    if (v.empty() || errno != 0 || number < 0)
      return Bad(key, v, "a byte count such as 4096 or 1M");
    std::string_view suffix(end);
    while (!suffix.empty() && suffix.front() == ' ') suffix.remove_prefix(1);
    double scale = 1;
    if (!suffix.empty()) {
      switch (suffix.front()) {
        case 'b':
        case 'B':
          scale = 1;
          break;
        case 'k':
        case 'K':
          scale = 1024.0;
          break;
        case 'm':
        case 'M':
          scale = 1024.0 * 1024;
          break;
        case 'g':
        case 'G':
          scale = 1024.0 * 1024 * 1024;
          break;
        case 't':
        case 'T':
          scale = 1024.0 * 1024 * 1024 * 1024;
          break;
        default:
          return Bad(key, v, "a byte count such as 4096 or 1M");
      }
      suffix.remove_prefix(1);
      if (!(suffix.empty() || suffix == "B" || suffix == "iB" || suffix == "b")) {
        return Bad(key, v, "a byte count such as 4096 or 1M");
      }
    }
    return static_cast<std::uint64_t>(number * scale);
  }

 private:
  Status Bad(std::string_view key, const std::string& value, std::string_view expected) const {
    std::string msg = owner_.empty() ? std::string("option") : owner_ + ": option";
    msg += " '";
    msg += key;
    msg += "' = '" + value + "' is not ";
    msg += expected;
    return Status::InvalidArgument(std::move(msg));
  }

  std::string owner_;
  std::map<std::string, std::string> values_;
};

}  // namespace iomimic
