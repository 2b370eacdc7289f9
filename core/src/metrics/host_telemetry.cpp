#include "metrics/host_telemetry.h"

#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace iomimic::metrics {
namespace {

namespace fs = std::filesystem;

std::string ReadProcFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The file system type of a folder on no block device, in words.
std::string FileSystemName(const std::string& folder) {
  struct statfs s {};
  if (::statfs(folder.c_str(), &s) != 0) return "an unknown file system";
  switch (static_cast<unsigned long>(s.f_type)) {
    case 0x01021994UL:
      return "tmpfs";
    case 0x794c7630UL:
      return "overlay";
    case 0x6969UL:
      return "NFS";
    case 0x65735546UL:
      return "FUSE";
    case 0x9123683eUL:
      return "btrfs (a subvolume's anonymous device)";
    default: {
      char hex[64];
      std::snprintf(hex, sizeof(hex), "a file system of type 0x%lx",
                    static_cast<unsigned long>(s.f_type));
      return hex;
    }
  }
}

double Share(std::uint64_t part, std::uint64_t total) {
  return total > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(total) : 0.0;
}

std::uint64_t Grown(std::uint64_t now, std::uint64_t before) {
  return now >= before ? now - before : 0;  // a counter reset reads as 0
}

}  // namespace

std::string BlockDeviceOf(const std::string& folder, std::string* note) {
  std::error_code ec;
  fs::path at = fs::absolute(folder.empty() ? "." : folder, ec);
  while (!at.empty() && !fs::exists(at, ec) && at != at.root_path()) at = at.parent_path();
  struct stat st {};
  if (::stat(at.c_str(), &st) != 0) {
    *note = "data folder " + folder + " is not a local path: no block device";
    return "";
  }
  const unsigned maj = major(st.st_dev), min = minor(st.st_dev);
  const std::string sys = "/sys/dev/block/" + std::to_string(maj) + ":" + std::to_string(min);
  if (maj == 0 || !fs::exists(sys, ec)) {
    *note = "data folder on " + FileSystemName(at.string()) + ": no block device";
    return "";
  }
  const fs::path real = fs::canonical(sys, ec);
  if (ec) {
    *note = "cannot resolve " + sys + ": " + ec.message();
    return "";
  }
  const std::string name = real.filename().string();
  if (fs::exists(real / "partition", ec)) {
    const std::string disk = real.parent_path().filename().string();
    *note = "partition " + name + " of " + disk;
    return disk;
  }
  *note = "device " + name;
  return name;
}

void ParseProcStat(const std::string& text, ProcCounters* out) {
  std::istringstream in(text);
  std::string label;
  in >> label;
  if (label != "cpu") return;
  std::uint64_t f[10] = {};
  int n = 0;
  while (n < 10 && in >> f[n]) ++n;
  // user nice system idle iowait irq softirq steal guest guest_nice; guest
  // time is already counted in user (proc(5)), so the total stops at steal.
  out->cpu_user += f[0] + f[1];
  out->cpu_system += f[2] + f[5] + f[6];
  out->cpu_idle += f[3];
  out->cpu_iowait += f[4];
  for (int i = 0; i < std::min(n, 8); ++i) out->cpu_total += f[i];
}

void ParseMeminfo(const std::string& text, ProcCounters* out) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = line.substr(0, colon);
    const std::uint64_t kb = std::strtoull(line.c_str() + colon + 1, nullptr, 10);
    if (key == "MemTotal") out->mem_total_kb = kb;
    if (key == "MemAvailable") out->mem_available_kb = kb;
    if (key == "Cached") out->cached_kb = kb;
    if (key == "Dirty") out->dirty_kb = kb;
  }
}

bool ParseDiskstats(const std::string& text, const std::string& device, ProcCounters* out) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    unsigned maj = 0, min = 0;
    char name[128] = {};
    std::uint64_t f[10] = {};
    // major minor name reads merged sectors ms writes merged sectors ms in_flight io_ms
    const int n = std::sscanf(line.c_str(),
                              "%u %u %127s %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64
                              " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64,
                              &maj, &min, name, &f[0], &f[1], &f[2], &f[3], &f[4], &f[5], &f[6],
                              &f[7], &f[8], &f[9]);
    if (n < 13 || device != name) continue;
    out->disk_reads += f[0];
    out->disk_sectors_read += f[2];
    out->disk_writes += f[4];
    out->disk_sectors_written += f[6];
    out->disk_io_ms += f[9];
    return true;
  }
  return false;
}

bool CountedInterface(const std::string& name) {
  std::error_code ec;
  return name != "lo" && name.rfind("ifb", 0) != 0 &&
         !fs::exists("/sys/class/net/" + name + "/brport", ec);
}

std::vector<std::string> ParseNetDev(const std::string& text, ProcCounters* out,
                                     const std::vector<std::string>* only) {
  std::vector<std::string> names;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos) continue;  // the two header lines
    std::string name = line.substr(0, colon);
    name.erase(0, name.find_first_not_of(' '));
    if (only != nullptr ? std::find(only->begin(), only->end(), name) == only->end()
                        : name == "lo") {
      continue;
    }
    std::istringstream fields(line.substr(colon + 1));
    std::uint64_t f[16] = {};
    int n = 0;
    while (n < 16 && fields >> f[n]) ++n;
    if (n < 10) continue;
    // Receive: bytes packets errs drop fifo frame compressed multicast; then transmit.
    out->net_rx_bytes += f[0];
    out->net_rx_packets += f[1];
    out->net_tx_bytes += f[8];
    out->net_tx_packets += f[9];
    names.push_back(name);
  }
  return names;
}

TelemetryRow TelemetryBetween(const ProcCounters& before, const ProcCounters& now,
                              std::uint64_t index, double start_seconds, double end_seconds) {
  TelemetryRow r;
  r.index = index;
  r.start_seconds = start_seconds;
  r.end_seconds = end_seconds;
  const std::uint64_t total = Grown(now.cpu_total, before.cpu_total);
  r.cpu_user_percent = Share(Grown(now.cpu_user, before.cpu_user), total);
  r.cpu_system_percent = Share(Grown(now.cpu_system, before.cpu_system), total);
  r.cpu_iowait_percent = Share(Grown(now.cpu_iowait, before.cpu_iowait), total);
  r.cpu_idle_percent = Share(Grown(now.cpu_idle, before.cpu_idle), total);
  r.mem_total_MiB = static_cast<double>(now.mem_total_kb) / 1024.0;
  r.mem_available_MiB = static_cast<double>(now.mem_available_kb) / 1024.0;
  r.page_cache_MiB = static_cast<double>(now.cached_kb) / 1024.0;
  r.dirty_MiB = static_cast<double>(now.dirty_kb) / 1024.0;
  r.disk_read_bytes = Grown(now.disk_sectors_read, before.disk_sectors_read) * 512;
  r.disk_write_bytes = Grown(now.disk_sectors_written, before.disk_sectors_written) * 512;
  r.disk_reads = Grown(now.disk_reads, before.disk_reads);
  r.disk_writes = Grown(now.disk_writes, before.disk_writes);
  const double seconds = end_seconds - start_seconds;
  r.disk_busy_percent =
      seconds > 0 ? std::min(100.0, static_cast<double>(Grown(now.disk_io_ms, before.disk_io_ms)) /
                                        10.0 / seconds)
                  : 0.0;
  r.net_rx_bytes = Grown(now.net_rx_bytes, before.net_rx_bytes);
  r.net_tx_bytes = Grown(now.net_tx_bytes, before.net_tx_bytes);
  r.net_rx_packets = Grown(now.net_rx_packets, before.net_rx_packets);
  r.net_tx_packets = Grown(now.net_tx_packets, before.net_tx_packets);
  return r;
}

std::string EncodeTelemetry(const TelemetrySources& sources,
                            const std::vector<TelemetryRow>& rows) {
  // Line 1: disk TAB note TAB interfaces (comma separated); names hold no tab.
  std::string text = "S\t" + sources.disk + "\t" + sources.disk_note + "\t";
  for (std::size_t i = 0; i < sources.interfaces.size(); ++i) {
    text += (i > 0 ? "," : "") + sources.interfaces[i];
  }
  text += "\n";
  char line[1024];
  for (const TelemetryRow& r : rows) {
    std::snprintf(line, sizeof(line),
                  "R %" PRIu64
                  " %.17g %.17g %.17g %.17g %.17g %.17g %.17g %.17g %.17g %.17g %" PRIu64
                  " %" PRIu64 " %" PRIu64 " %" PRIu64 " %.17g %" PRIu64 " %" PRIu64 " %" PRIu64
                  " %" PRIu64 "\n",
                  r.index, r.start_seconds, r.end_seconds, r.cpu_user_percent, r.cpu_system_percent,
                  r.cpu_iowait_percent, r.cpu_idle_percent, r.mem_total_MiB, r.mem_available_MiB,
                  r.page_cache_MiB, r.dirty_MiB, r.disk_read_bytes, r.disk_write_bytes,
                  r.disk_reads, r.disk_writes, r.disk_busy_percent, r.net_rx_bytes, r.net_tx_bytes,
                  r.net_rx_packets, r.net_tx_packets);
    text += line;
  }
  return text;
}

bool DecodeTelemetry(const std::string& text, TelemetrySources* sources,
                     std::vector<TelemetryRow>* rows) {
  if (text.empty()) return true;
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line.rfind("S\t", 0) != 0) return false;
  const std::size_t a = line.find('\t', 2);
  const std::size_t b = a == std::string::npos ? a : line.find('\t', a + 1);
  if (b == std::string::npos) return false;
  sources->disk = line.substr(2, a - 2);
  sources->disk_note = line.substr(a + 1, b - a - 1);
  std::istringstream names(line.substr(b + 1));
  for (std::string name; std::getline(names, name, ',');) sources->interfaces.push_back(name);
  while (std::getline(in, line)) {
    TelemetryRow r;
    const int n = std::sscanf(
        line.c_str(),
        "R %" SCNu64 " %lf %lf %lf %lf %lf %lf %lf %lf %lf %lf %" SCNu64 " %" SCNu64 " %" SCNu64
        " %" SCNu64 " %lf %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64,
        &r.index, &r.start_seconds, &r.end_seconds, &r.cpu_user_percent, &r.cpu_system_percent,
        &r.cpu_iowait_percent, &r.cpu_idle_percent, &r.mem_total_MiB, &r.mem_available_MiB,
        &r.page_cache_MiB, &r.dirty_MiB, &r.disk_read_bytes, &r.disk_write_bytes, &r.disk_reads,
        &r.disk_writes, &r.disk_busy_percent, &r.net_rx_bytes, &r.net_tx_bytes, &r.net_rx_packets,
        &r.net_tx_packets);
    if (n != 20) return false;
    rows->push_back(r);
  }
  return true;
}

ProcCounters HostTelemetry::Read() {
  ProcCounters c;
  ParseProcStat(ReadProcFile("/proc/stat"), &c);
  ParseMeminfo(ReadProcFile("/proc/meminfo"), &c);
  if (!sources_.disk.empty()) ParseDiskstats(ReadProcFile("/proc/diskstats"), sources_.disk, &c);
  ParseNetDev(ReadProcFile("/proc/net/dev"), &c, &sources_.interfaces);
  return c;
}

void HostTelemetry::Start(const std::string& data_folder, const std::string& no_disk) {
  sources_ = TelemetrySources{};
  if (no_disk.empty()) {
    sources_.disk = BlockDeviceOf(data_folder, &sources_.disk_note);
  } else {
    sources_.disk_note = no_disk;
  }
  ProcCounters probe;
  if (!sources_.disk.empty() &&
      !ParseDiskstats(ReadProcFile("/proc/diskstats"), sources_.disk, &probe)) {
    sources_.disk_note += ", absent from /proc/diskstats";
    sources_.disk.clear();
  }
  for (const std::string& name : ParseNetDev(ReadProcFile("/proc/net/dev"), &probe)) {
    if (CountedInterface(name)) sources_.interfaces.push_back(name);
  }
  rows_.clear();
  last_ = Read();
  started_ = true;
}

void HostTelemetry::Sample(std::uint64_t index, double start_seconds, double end_seconds) {
  if (!started_) return;
  const ProcCounters now = Read();
  rows_.push_back(TelemetryBetween(last_, now, index, start_seconds, end_seconds));
  last_ = now;
}

}  // namespace iomimic::metrics
