// The per-host grouping (output/hosts.h), the host telemetry's parsers
// (metrics/host_telemetry.h) and the time of the cross-rank merge
// (output/merge.h) for 1,024 synthetic ranks (docs/cluster.md, "Scale").

#include "output/merge.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "metrics/host_telemetry.h"
#include "output/hosts.h"
#include "output/writers.h"

namespace iomimic::output {
namespace {

RankFigures Rank(const std::string& host, std::uint64_t i) {
  RankFigures f;
  f.host = host;
  f.accelerators = 1;
  f.bytes_read = 1000003 * (i + 1);
  f.bytes_written = 7 * i;
  f.train_bytes_read = 999983 * (i + 1);
  f.samples = 11 * (i + 1);
  f.au_percent_sum = 50.0 + static_cast<double>(i);
  f.samples_per_second_sum = 100.0 * static_cast<double>(i + 1);
  f.data_wait_seconds = 0.25 * static_cast<double>(i);
  f.io_seconds = 0.5;
  return f;
}

TEST_CASE("GroupByHost: 1, 2 and 3 ranks per host add up to the totals exactly") {
  // Ranks as mpirun --host h1:1,h2:2,h3:3 places them, one interleaved.
  const std::vector<std::string> hosts = {"h1", "h2", "h2", "h3", "h3", "h3"};
  std::vector<RankFigures> ranks;
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    RankFigures f = Rank(hosts[i], i);
    std::string text = EncodeRankFigures(f);
    RankFigures back;
    REQUIRE(DecodeRankFigures(text, &back));  // through the gather's text
    ranks.push_back(back);
  }
  const std::vector<HostFigures> grouped = GroupByHost(ranks, 2.0);
  REQUIRE(grouped.size() == 3);
  CHECK(grouped[0].host == "h1");
  CHECK(grouped[1].ranks == std::vector<int>{1, 2});
  CHECK(grouped[2].ranks == std::vector<int>{3, 4, 5});
  CHECK(grouped[2].accelerators == 3);
  std::uint64_t read = 0, written = 0, samples = 0, train = 0, host_read = 0, host_written = 0,
                host_samples = 0, host_train = 0;
  for (const RankFigures& f : ranks) {
    read += f.bytes_read;
    written += f.bytes_written;
    samples += f.samples;
    train += f.train_bytes_read;
  }
  for (const HostFigures& h : grouped) {
    host_read += h.bytes_read;
    host_written += h.bytes_written;
    host_samples += h.samples;
    host_train += h.train_bytes_read;
  }
  CHECK(host_read == read);
  CHECK(host_written == written);
  CHECK(host_samples == samples);
  CHECK(host_train == train);
  // AU: the mean over the host's accelerators; throughput: their sum.
  CHECK(grouped[2].au_percent == doctest::Approx((53.0 + 54.0 + 55.0) / 3));
  CHECK(grouped[1].samples_per_second == doctest::Approx(200.0 + 300.0));
  CHECK(grouped[0].train_read_MiB_per_second ==
        doctest::Approx(999983.0 / (1024.0 * 1024.0) / 2.0));
  CHECK(grouped[2].data_wait_seconds == doctest::Approx(0.75 + 1.0 + 1.25));
}

TEST_CASE(
    "timeline.csv: a host row per host and interval sums its ranks, AU over its accelerators") {
  RunResults r;
  r.accelerators_per_process = 1;
  r.rank_hosts = {"h1", "h2", "h2"};
  std::vector<RankFigures> ranks;
  for (std::size_t i = 0; i < r.rank_hosts.size(); ++i) ranks.push_back(Rank(r.rank_hosts[i], i));
  r.hosts = GroupByHost(ranks, 1.0);
  for (int rank = 0; rank < 3; ++rank) {
    for (std::uint64_t k = 0; k < 2; ++k) {
      metrics::TimelineRow row;
      row.index = k;
      row.start_seconds = static_cast<double>(k);
      row.end_seconds = static_cast<double>(k + 1);
      row.delta.bytes_read = 1000 * static_cast<std::uint64_t>(rank + 1);
      row.delta.samples = static_cast<std::uint64_t>(rank + 1);
      row.delta.compute_seconds = 0.5;
      r.timeline.push_back({rank, row});
    }
  }
  const std::string csv = TimelineCsv(r);
  CHECK(csv.find(",barrier_s,host\n") != std::string::npos);
  CHECK(csv.find("\n0,0,0.000000,1.000000,1000,") != std::string::npos);
  // h2 = ranks 1 and 2: 2000 + 3000 bytes, 2 + 3 samples, AU 2 x 0.5 s / 2 accelerators.
  CHECK(csv.find("\n1,host,1.000000,2.000000,5000,0,0,0,5,0,1.000000,50.000000,") !=
        std::string::npos);
  CHECK(csv.find("\n0,host,0.000000,1.000000,1000,0,0,0,1,0,0.500000,50.000000,") !=
        std::string::npos);
  CHECK(csv.find("\n1,all,1.000000,2.000000,6000,") != std::string::npos);
  std::size_t host_rows = 0;
  for (std::size_t at = csv.find(",host,"); at != std::string::npos;
       at = csv.find(",host,", at + 1)) {
    ++host_rows;
  }
  CHECK(host_rows == 4);  // 2 hosts x 2 intervals
  CHECK(csv.find(",h2\n") != std::string::npos);
}

TEST_CASE("RankFigures' text keeps every figure exactly and rejects garbage") {
  RankFigures f = Rank("node-7.cluster", 41);
  f.au_percent_sum = 0.1 + 0.2;
  RankFigures back;
  REQUIRE(DecodeRankFigures(EncodeRankFigures(f), &back));
  CHECK(back.host == f.host);
  CHECK(back.bytes_read == f.bytes_read);
  CHECK(back.au_percent_sum == f.au_percent_sum);
  CHECK_FALSE(DecodeRankFigures("not figures", &back));
  CHECK_FALSE(DecodeRankFigures("", &back));
}

TEST_CASE("Host telemetry: /proc/stat, meminfo, diskstats and net/dev parse, intervals differ") {
  metrics::ProcCounters a, b;
  metrics::ParseProcStat("cpu  100 10 50 800 40 5 5 0 0 0\ncpu0 1 2 3 4\n", &a);
  CHECK(a.cpu_user == 110);
  CHECK(a.cpu_system == 60);
  CHECK(a.cpu_iowait == 40);
  CHECK(a.cpu_total == 1010);
  metrics::ParseProcStat("cpu  200 10 100 1400 80 10 10 0 0 0\n", &b);
  metrics::ParseMeminfo("MemTotal: 2048 kB\nMemAvailable: 1024 kB\nCached: 512 kB\nDirty: 4 kB\n",
                        &b);
  const std::string disks =
      "   7       0 loop0 1 0 8 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
      " 254       0 vda 100 5 2000 60 50 3 800 70 0 30 130 0 0 0 0 0 0\n"
      " 254       1 vda1 90 5 1800 60 50 3 800 70 0 30 130 0 0 0 0 0 0\n";
  CHECK(metrics::ParseDiskstats(disks, "vda", &a));
  CHECK(a.disk_sectors_read == 2000);
  CHECK_FALSE(metrics::ParseDiskstats(disks, "sdz", &a));
  const std::string net =
      "Inter-|   Receive                                                |  Transmit\n"
      " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs "
      "drop fifo colls carrier compressed\n"
      "    lo: 9999 9 0 0 0 0 0 0 9999 9 0 0 0 0 0 0\n"
      "  eth0: 1000 10 0 0 0 0 0 0 2000 20 0 0 0 0 0 0\n"
      " veth1: 1 1 0 0 0 0 0 0 2 2 0 0 0 0 0 0\n";
  const std::vector<std::string> names = metrics::ParseNetDev(net, &a);
  CHECK(names == std::vector<std::string>{"eth0", "veth1"});  // loopback left out
  CHECK(a.net_rx_bytes == 1001);
  metrics::ProcCounters only;
  const std::vector<std::string> eth0 = {"eth0"};
  CHECK(metrics::ParseNetDev(net, &only, &eth0) == eth0);
  CHECK(only.net_rx_bytes == 1000);
  CHECK_FALSE(metrics::CountedInterface("lo"));
  CHECK_FALSE(metrics::CountedInterface("ifb0"));
  CHECK(a.net_tx_packets == 22);
  b.disk_sectors_read = 2000 + 2048;
  b.disk_io_ms = 30 + 500;  // the field after in-flight
  b.net_rx_bytes = 1001 + 4096;
  b.net_tx_bytes = a.net_tx_bytes;
  b.disk_sectors_written = a.disk_sectors_written;
  b.net_rx_packets = a.net_rx_packets;
  b.net_tx_packets = a.net_tx_packets;
  b.disk_reads = a.disk_reads;
  b.disk_writes = a.disk_writes;
  const metrics::TelemetryRow row = metrics::TelemetryBetween(a, b, 3, 1.0, 2.0);
  CHECK(row.cpu_user_percent == doctest::Approx(100.0 * 100 / 800));
  CHECK(row.cpu_idle_percent == doctest::Approx(100.0 * 600 / 800));
  CHECK(row.disk_read_bytes == 2048 * 512);
  CHECK(row.disk_busy_percent == doctest::Approx(50.0));
  CHECK(row.net_rx_bytes == 4096);
  CHECK(row.page_cache_MiB == doctest::Approx(0.5));

  metrics::TelemetrySources sources{"vda", "partition vda1 of vda", {"eth0", "veth1"}};
  metrics::TelemetrySources back_sources;
  std::vector<metrics::TelemetryRow> back;
  REQUIRE(metrics::DecodeTelemetry(metrics::EncodeTelemetry(sources, {row, row}), &back_sources,
                                   &back));
  CHECK(back_sources.disk_note == sources.disk_note);
  CHECK(back_sources.interfaces == sources.interfaces);
  REQUIRE(back.size() == 2);
  CHECK(back[1].disk_read_bytes == row.disk_read_bytes);
  CHECK(back[1].cpu_user_percent == row.cpu_user_percent);
  CHECK_FALSE(metrics::DecodeTelemetry("R 1 2 3\n", &back_sources, &back));
}

TEST_CASE("BlockDeviceOf: tmpfs has none and says so, a missing folder takes its parent's") {
  std::string note;
  CHECK(metrics::BlockDeviceOf("/dev/shm", &note).empty());
  CHECK(note.find("tmpfs") != std::string::npos);
  note.clear();
  const std::string a = metrics::BlockDeviceOf("/dev/shm/no/such/folder", &note);
  CHECK(a.empty());
  CHECK(note.find("no block device") != std::string::npos);
}

// `ranks` ranks of synthetic records: each rank's 300 timeline rows, 50
// events, 64 files of its own and 4 shared, and its host figures (8 ranks a
// host), through the merge that every rank runs after the gathers (decode,
// group, merge per path), then timeline.csv's text on rank 0. The best of 3
// (seconds): {merge, timeline.csv}.
std::pair<double, double> MergeSeconds(int ranks, std::size_t* text_bytes) {
  constexpr int kRows = 300, kEvents = 50, kFiles = 64;
  std::vector<std::string> timeline(ranks), events(ranks), files(ranks), figures(ranks);
  for (int rank = 0; rank < ranks; ++rank) {
    std::vector<metrics::TimelineRow> rows(kRows);
    for (int i = 0; i < kRows; ++i) {
      rows[i].index = static_cast<std::uint64_t>(i);
      rows[i].start_seconds = i;
      rows[i].end_seconds = i + 1;
      rows[i].delta.bytes_read = 1u << 20;
      rows[i].delta.samples = 3;
    }
    timeline[rank] = EncodeTimeline(rows);
    std::vector<EventEntry> ev(kEvents);
    for (int i = 0; i < kEvents; ++i)
      ev[i] = {rank, "train_block", 1, std::uint64_t(i), 1.0, 2.0, 9};
    events[rank] = EncodeEvents(ev);
    std::vector<std::pair<std::string, session::FileCounters>> mine;
    for (int i = 0; i < kFiles + 4; ++i) {
      session::FileCounters c;
      c.opens = 1;
      c.reads = 4;
      c.bytes_read = 4 << 20;
      const std::string name = i < kFiles ? "data/train/img_" + std::to_string(rank * kFiles + i)
                                          : "data/shared_" + std::to_string(i);
      mine.emplace_back(name + ".npz", c);
    }
    files[rank] = EncodeFileCounters(mine, 0);
    figures[rank] = EncodeRankFigures(Rank("host" + std::to_string(rank / 8), rank));
  }
  *text_bytes = 0;
  for (const auto* all : {&timeline, &events, &files, &figures}) {
    for (const std::string& t : *all) *text_bytes += t.size();
  }
  double best_merge = 1e9, best_csv = 1e9;
  for (int repeat = 0; repeat < 3; ++repeat) {
    const auto t0 = std::chrono::steady_clock::now();
    RunResults r;
    for (int rank = 0; rank < ranks; ++rank) {
      for (const metrics::TimelineRow& row : DecodeTimeline(timeline[rank])) {
        r.timeline.push_back({rank, row});
      }
      for (EventEntry& e : DecodeEvents(events[rank], rank)) r.events.push_back(std::move(e));
    }
    MergeIoCounters(files, 1000, &r);
    std::vector<RankFigures> decoded(ranks);
    for (int rank = 0; rank < ranks; ++rank) {
      REQUIRE(DecodeRankFigures(figures[rank], &decoded[rank]));
      r.rank_hosts.push_back(decoded[rank].host);
    }
    r.hosts = GroupByHost(decoded, 10.0);
    const auto t1 = std::chrono::steady_clock::now();
    const std::string csv = TimelineCsv(r);
    const auto t2 = std::chrono::steady_clock::now();
    best_merge = std::min(best_merge, std::chrono::duration<double>(t1 - t0).count());
    best_csv = std::min(best_csv, std::chrono::duration<double>(t2 - t1).count());
    CHECK(r.hosts.size() == std::size_t(ranks / 8));
    CHECK(r.io_counters_paths == std::uint64_t(ranks) * kFiles + 4);
    CHECK(r.events.size() == std::size_t(ranks) * kEvents);
    // Rows per rank, per host and over all.
    const std::size_t lines = std::size_t(ranks) * kRows + std::size_t(ranks / 8) * kRows + kRows;
    CHECK(std::size_t(std::count(csv.begin(), csv.end(), '\n')) == lines + 1);
  }
  return {best_merge, best_csv};
}

TEST_CASE("The results merge of 1,024 ranks takes well under a second, and grows linearly") {
  std::size_t bytes = 0;
  const std::pair<double, double> quarter = MergeSeconds(256, &bytes);
  const std::pair<double, double> full = MergeSeconds(1024, &bytes);
  std::printf(
      "results merge (best of 3): 256 ranks %.3f s + timeline.csv %.3f s; 1,024 ranks %.3f s + "
      "timeline.csv %.3f s; gathered text %.1f KB per rank\n",
      quarter.first, quarter.second, full.first, full.second, bytes / 1024.0 / 1024);
  CHECK(full.first < 1.0);
  CHECK(full.second < 1.0);
  // 4x the ranks: near 4x the time (a quadratic merge would take 16x).
  CHECK(full.first < 10 * quarter.first);
}

}  // namespace
}  // namespace iomimic::output
