#include "metrics/host_info.h"

#include <fstream>

namespace iomimic::metrics {

std::map<std::string, std::string> ReadKeyValues(const std::string& path, bool skip_processor) {
  std::map<std::string, std::string> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    while (!key.empty() && (key.back() == ' ' || key.back() == '\t')) key.pop_back();
    std::string value = line.substr(colon + 1);
    const std::size_t first = value.find_first_not_of(" \t");
    value = first == std::string::npos ? "" : value.substr(first);
    if (key.empty() || (skip_processor && key == "processor")) continue;
    out[key] = value;
  }
  return out;
}

}  // namespace iomimic::metrics
