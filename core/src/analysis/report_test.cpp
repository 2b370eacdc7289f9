#include "analysis/report.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "iomimic/testing/posix_test_storage.h"
#include "run/run.h"

namespace iomimic::analysis {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// The options the commands pass: the built-in Chart.js, every workflow's
// figures.
ReportOptions Options() { return {"", run::Figures()}; }

std::size_t Count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The data object the page embeds (between the markers of its script).
std::string Data(const std::string& page) {
  const std::string open = "<script type=\"application/json\" id=\"iomimic-data\">";
  const std::size_t from = page.find(open);
  REQUIRE(from != std::string::npos);
  const std::size_t to = page.find("</script>", from);
  REQUIRE(to != std::string::npos);
  return page.substr(from + open.size(), to - from - open.size());
}

const char* const kSummary = R"({"num_accelerators": 2, "hostname": "h",
  "metric": {"train_au_mean_percentage": 42.5, "train_au_percentage": [40, 45]},
  "iomimic": {"manifest": {"resolved": "model:\n  name: </script><b>x</b>\n"}}})";

TEST_CASE("report: a folder with only summary.json gives a page that lists what is missing") {
  TempDir dir;
  dir.Write("summary.json", kSummary);
  Result<std::string> page = RunReportHtml({dir.path()}, Options());
  if (!page.ok() && page.status().message().find("without Chart.js") != std::string::npos) {
    MESSAGE("built without Chart.js: " << page.status().message());
    return;
  }
  REQUIRE(page.ok());
  const std::string data = Data(*page);
  // The manifest's "</script>" cannot end the data's script element.
  CHECK(data.find('<') == std::string::npos);
  CHECK(data.find("\\u003c/script>\\u003cb>x") != std::string::npos);
  CHECK(data.find("\"missing\":[\"timeline.csv\",\"events.csv\",\"histograms.json\","
                  "\"io_counters.csv\",\"host_telemetry.csv\"]") != std::string::npos);
  CHECK(data.find("\"train AU %\",42.5") != std::string::npos);
  CHECK(Count(*page, "@@") == 0);
}

TEST_CASE("report: timeline.csv is read, averaged down past 4000 intervals, markers merged") {
  TempDir dir;
  dir.Write("summary.json", kSummary);
  std::string timeline =
      "interval,rank,start_s,end_s,bytes_read,bytes_written,read_requests,write_requests,samples,"
      "steps,compute_s,au_percent,read_MiB_per_s,write_MiB_per_s,requests_in_flight,barrier_s\n";
  for (int i = 0; i < 8000; ++i) {
    const std::string t0 = std::to_string(i * 0.1), t1 = std::to_string((i + 1) * 0.1);
    timeline +=
        std::to_string(i) + ",0," + t0 + "," + t1 + ",1048576,0,1,0,1,1,0.05,50,10,0,1,0.01\n";
    timeline += std::to_string(i) + ",all," + t0 + "," + t1 + ",1048576,0,1,0,1,1,0.05," +
                (i % 2 ? "100" : "0") + ",10,0,1,0.01\n";
  }
  dir.Write("timeline.csv", timeline);
  dir.Write("events.csv",
            "rank,event,epoch,index,start_s,end_s,duration_s,bytes\n"
            "0,epoch,1,0,0.5,10,9.5,100\n1,epoch,1,0,0.4,11,10.6,200\n"
            "0,barrier_wait,1,3,1,1.5,0.5,0\n");
  Result<std::string> page = RunReportHtml({dir.path()}, Options());
  if (!page.ok()) {
    REQUIRE(page.status().message().find("without Chart.js") != std::string::npos);
    return;
  }
  const std::string data = Data(*page);
  CHECK(data.find("\"intervals\":8000") != std::string::npos);
  CHECK(data.find("\"averaged\":2") != std::string::npos);
  // Pairs of 0 and 100 average to 50.
  CHECK(data.find("\"au\":[50.0,50.0") != std::string::npos);
  // Both ranks' epoch 1 merged: earliest start, latest end, bytes summed.
  CHECK(data.find("\"bytes\":300.0,\"end\":11.0,\"epoch\":1,\"event\":\"epoch\",\"index\":0,"
                  "\"ranks\":2,\"start\":0.4") != std::string::npos);
  CHECK(data.find("\"barrier_waits\":[{\"rank\":0,\"seconds\":0.5,\"waits\":1}]") !=
        std::string::npos);
  CHECK(data.find("\"MiB_read\":8000.0") != std::string::npos);
}

TEST_CASE("report: timeline.csv's host rows and host_telemetry.csv become per-host series") {
  TempDir dir;
  dir.Write("summary.json", kSummary);
  std::string timeline =
      "interval,rank,start_s,end_s,bytes_read,bytes_written,read_requests,write_requests,samples,"
      "steps,compute_s,au_percent,read_MiB_per_s,write_MiB_per_s,requests_in_flight,barrier_s,"
      "host\n";
  for (int i = 0; i < 3; ++i) {
    const std::string t = "," + std::to_string(i) + "," + std::to_string(i + 1) + ",";
    timeline += std::to_string(i) + ",0" + t + "1048576,0,1,0,1,1,0.5,50,1,0,1,0,h1\n";
    timeline += std::to_string(i) + ",1" + t + "2097152,0,1,0,1,1,0.5,50,2,0,1,0,h2\n";
    timeline += std::to_string(i) + ",host" + t + "1048576,0,1,0,1,1,0.5,50,1,0,1,0,h1\n";
    timeline += std::to_string(i) + ",host" + t + "2097152,0,1,0,1,1,0.5,50,2,0,1,0,h2\n";
    timeline += std::to_string(i) + ",all" + t + "3145728,0,2,0,2,2,1,50,3,0,2,0,all\n";
  }
  dir.Write("timeline.csv", timeline);
  std::string telemetry =
      "host,rank,interval,start_s,end_s,cpu_user_percent,cpu_system_percent,cpu_iowait_percent,"
      "cpu_idle_percent,mem_total_MiB,mem_available_MiB,page_cache_MiB,dirty_MiB,disk,"
      "disk_read_bytes,disk_write_bytes,disk_reads,disk_writes,disk_read_MiB_per_s,"
      "disk_write_MiB_per_s,disk_busy_percent,net_rx_bytes,net_tx_bytes,net_rx_packets,"
      "net_tx_packets,net_rx_MiB_per_s,net_tx_MiB_per_s\n"
      "h1,0,0,0,1,10,5,2,83,100,50,20,0,vda,1048576,0,1,0,1,0,10,0,0,0,0,0,0\n"
      "h2,1,0,0,1,30,5,2,63,100,50,20,0,vda,1048576,0,1,0,1,0,10,2048,0,2,0,0.25,0\n";
  dir.Write("host_telemetry.csv", telemetry);
  Result<std::string> page = RunReportHtml({dir.path()}, Options());
  if (!page.ok()) {
    REQUIRE(page.status().message().find("without Chart.js") != std::string::npos);
    return;
  }
  const std::string data = Data(*page);
  // The host rows are neither a rank nor the total.
  CHECK(data.find("\"MiB_read\":3.0,") != std::string::npos);  // rank 0: 3 intervals x 1 MiB
  CHECK(data.find("\"rank\":1") != std::string::npos);
  CHECK(data.find("\"intervals\":3") != std::string::npos);
  CHECK(data.find(
            "\"host_timeline\":{\"h1\":{\"au\":[50.0,50.0,50.0],\"read_MiB_s\":[1.0,1.0,1.0]") !=
        std::string::npos);
  CHECK(data.find("\"h2\":{\"cpu_iowait_percent\":[2.0],\"cpu_system_percent\":[5.0],"
                  "\"cpu_user_percent\":[30.0]") != std::string::npos);
  CHECK(data.find("\"net_rx_MiB_per_s\":[0.25]") != std::string::npos);
}

TEST_CASE("report: errors name the file") {
  TempDir dir;
  Result<std::string> page = RunReportHtml({dir.path()}, Options());
  REQUIRE_FALSE(page.ok());
  CHECK(page.status().message().find("summary.json") != std::string::npos);

  dir.Write("summary.json", kSummary);
  page = RunReportHtml({dir.path()}, {(dir.path() / "none.js").string(), {}});
  REQUIRE_FALSE(page.ok());
  CHECK(page.status().message().find("none.js") != std::string::npos);

  dir.Write("notchart.js", "var x = 1;");
  page = RunReportHtml({dir.path()}, {(dir.path() / "notchart.js").string(), {}});
  REQUIRE_FALSE(page.ok());
  CHECK(page.status().message().find("does not look like Chart.js") != std::string::npos);

  // A malformed optional file is reported on the page, not fatal.
  dir.Write("timeline.csv", "interval,rank\n1\n");
  page = RunReportHtml({dir.path()}, Options());
  if (page.ok()) CHECK(Data(*page).find("timeline.csv:2: 1 cells") != std::string::npos);

  Result<std::string> sweep = SweepHtml(dir.path(), {});
  REQUIRE_FALSE(sweep.ok());
  CHECK(sweep.status().message().find("results.csv") != std::string::npos);
}

}  // namespace
}  // namespace iomimic::analysis
