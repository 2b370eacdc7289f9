// Host telemetry, as mlpstorage's collectors gather it: CPU time split
// (/proc/stat), memory and page cache (/proc/meminfo), the block device under
// the data folder (/proc/diskstats) and the network (/proc/net/dev), read by
// ONE rank per host (its lowest) at every timeline interval
// (iomimic.timeline_interval), so host_telemetry.csv has a row per host per
// interval on the timeline's interval grid (docs/run-folder.md).
//
// Everything here reads the calling process's view of /proc: in a network
// namespace /proc/net/dev is the namespace's own; /proc/stat, /proc/meminfo
// and /proc/diskstats are the kernel's, shared by every namespace host of one
// machine (docs/cluster.md).

#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace iomimic::metrics {

// Cumulative counters (and memory levels) of a host at one moment.
struct ProcCounters {
  // /proc/stat's "cpu" line, in clock ticks.
  std::uint64_t cpu_user = 0;    // user + nice
  std::uint64_t cpu_system = 0;  // system + irq + softirq
  std::uint64_t cpu_iowait = 0;
  std::uint64_t cpu_idle = 0;
  std::uint64_t cpu_total = 0;  // every field, steal included
  // /proc/meminfo, kB (levels, not counters).
  std::uint64_t mem_total_kb = 0;
  std::uint64_t mem_available_kb = 0;
  std::uint64_t cached_kb = 0;  // page cache ("Cached")
  std::uint64_t dirty_kb = 0;
  // /proc/diskstats of one device (sectors of 512 bytes, whatever the device's).
  std::uint64_t disk_reads = 0;
  std::uint64_t disk_sectors_read = 0;
  std::uint64_t disk_writes = 0;
  std::uint64_t disk_sectors_written = 0;
  std::uint64_t disk_io_ms = 0;  // time the device was busy
  // /proc/net/dev, summed over the interfaces read.
  std::uint64_t net_rx_bytes = 0;
  std::uint64_t net_tx_bytes = 0;
  std::uint64_t net_rx_packets = 0;
  std::uint64_t net_tx_packets = 0;
};

// One interval of one host: CPU shares and disk/network counters' growth
// during [start, end), memory as it stood at the end.
struct TelemetryRow {
  std::uint64_t index = 0;  // the timeline's interval
  double start_seconds = 0;
  double end_seconds = 0;
  double cpu_user_percent = 0;
  double cpu_system_percent = 0;
  double cpu_iowait_percent = 0;
  double cpu_idle_percent = 0;
  double mem_total_MiB = 0;
  double mem_available_MiB = 0;
  double page_cache_MiB = 0;
  double dirty_MiB = 0;
  std::uint64_t disk_read_bytes = 0;
  std::uint64_t disk_write_bytes = 0;
  std::uint64_t disk_reads = 0;
  std::uint64_t disk_writes = 0;
  double disk_busy_percent = 0;
  std::uint64_t net_rx_bytes = 0;
  std::uint64_t net_tx_bytes = 0;
  std::uint64_t net_rx_packets = 0;
  std::uint64_t net_tx_packets = 0;
};

// Where a host's disk and network columns come from.
struct TelemetrySources {
  std::string disk;  // the whole disk under the data folder ("vda"); "" when none
  // How the disk was found, or why there is none ("partition vda1 of vda",
  // "data folder on tmpfs: no block device").
  std::string disk_note;
  std::vector<std::string> interfaces;  // /proc/net/dev's that CountedInterface keeps
};

// The whole disk holding `folder` (its nearest existing parent when it does
// not exist yet): stat's st_dev, /sys/dev/block/MAJ:MIN, a partition to its
// disk. "" with `note` saying why when the folder lies on no block device
// (tmpfs, overlay, NFS, an object store's bucket).
std::string BlockDeviceOf(const std::string& folder, std::string* note);

// Parsers of the /proc files' text, adding to `out`. ParseDiskstats: false
// when `device` has no line; ParseNetDev: the interfaces summed: those in
// `only` when given, else all but lo.
void ParseProcStat(const std::string& text, ProcCounters* out);
void ParseMeminfo(const std::string& text, ProcCounters* out);
bool ParseDiskstats(const std::string& text, const std::string& device, ProcCounters* out);
std::vector<std::string> ParseNetDev(const std::string& text, ProcCounters* out,
                                     const std::vector<std::string>* only = nullptr);

// Whether an interface's bytes are this host's own traffic: not loopback,
// not an ifb (a mirror of another interface's traffic for shaping) and not
// a bridge's port (frames it forwards; the bridge device counts those for
// the host), as /sys/class/net says (an interface it does not know counts).
bool CountedInterface(const std::string& name);

// The row of interval `index` between two readings.
TelemetryRow TelemetryBetween(const ProcCounters& before, const ProcCounters& now,
                              std::uint64_t index, double start_seconds, double end_seconds);

// Text for a gather and back: the sources, then one line per row.
std::string EncodeTelemetry(const TelemetrySources& sources, const std::vector<TelemetryRow>& rows);
// False when `text` is not EncodeTelemetry's (an empty text is a rank that
// sampled nothing: true, no rows).
bool DecodeTelemetry(const std::string& text, TelemetrySources* sources,
                     std::vector<TelemetryRow>* rows);

// One host's sampler. Not thread-safe: Start, then Sample from one thread
// (the timeline sampler's), then rows() after that thread stopped.
class HostTelemetry {
 public:
  // Finds the disk under `data_folder` (none, for `no_disk` as the reason,
  // when the caller knows the data lies on no local device: an object
  // store) and the interfaces, and takes the first reading.
  void Start(const std::string& data_folder, const std::string& no_disk = "");
  // Closes interval `index` [start, end) with a reading taken now.
  void Sample(std::uint64_t index, double start_seconds, double end_seconds);
  bool started() const { return started_; }
  const TelemetrySources& sources() const { return sources_; }
  const std::vector<TelemetryRow>& rows() const { return rows_; }

 private:
  ProcCounters Read();
  bool started_ = false;
  TelemetrySources sources_;
  ProcCounters last_;
  std::vector<TelemetryRow> rows_;
};

}  // namespace iomimic::metrics
