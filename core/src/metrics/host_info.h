// Facts of the host read from /proc, as DLIO reads them (its summary's and
// per-epoch output's host_cpuinfo and host_meminfo).

#pragma once

#include <map>
#include <string>

namespace iomimic::metrics {

// The "key: value" lines of `path` (/proc/cpuinfo, /proc/meminfo), keys and
// values trimmed; a later line with the same key wins (for cpuinfo: the last
// CPU's, as DLIO does). With `skip_processor`, "processor" lines are left
// out. Empty when the file cannot be read.
std::map<std::string, std::string> ReadKeyValues(const std::string& path, bool skip_processor);

}  // namespace iomimic::metrics
