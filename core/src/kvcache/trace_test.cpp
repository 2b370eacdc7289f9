#include "kvcache/trace.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace iomimic::kvcache {
namespace {

// What the reference's tracer (Python's csv.writer, f'{ts:.6f}') writes for
// these rows, printed by CPython 3.11:
//   b = io.StringIO(); w = csv.writer(b); w.writerow(HEADER)
//   w.writerow([f'{1795777524.343443:.6f}', 'Write', 752353280, 'Tier-2',
//   'conv_user_0000_1_turn_1', 'Prefill']) w.writerow([f'{12.5:.6f}', 'Read', 7, 'Tier-0', 'a,b"c',
//   'Evict']) w.writerow([f'{0.0:.6f}', 'Read', 0, 'Tier-1', 'k', ''])
constexpr std::string_view kPython =
    "Timestamp,Operation,Object_Size_Bytes,Tier,Key,Phase\r\n"
    "1795777524.343443,Write,752353280,Tier-2,conv_user_0000_1_turn_1,Prefill\r\n"
    "12.500000,Read,7,Tier-0,\"a,b\"\"c\",Evict\r\n"
    "0.000000,Read,0,Tier-1,k,\r\n";

std::vector<TraceRow> PythonRows() {
  return {
      {1795777524.343443, TraceOp::kWrite, 752353280, kTierStorage, "conv_user_0000_1_turn_1",
       TracePhase::kPrefill, 2},
      {12.5, TraceOp::kRead, 7, kTierGpu, "a,b\"c", TracePhase::kEvict, 3},
      {0.0, TraceOp::kRead, 0, kTierCpu, "k", TracePhase::kNone, 4},
  };
}

TEST_CASE("trace: rows are formatted as the reference's csv writer writes them") {
  std::string text = std::string(kTraceHeader) + "\r\n";
  for (const TraceRow& row : PythonRows()) text += FormatTraceRow(row);
  CHECK(text == kPython);
}

TEST_CASE("trace: the reference's text parses back to the rows") {
  Result<std::vector<TraceRow>> rows = ParseTrace(kPython, "t.csv");
  REQUIRE(rows.ok());
  const std::vector<TraceRow> want = PythonRows();
  REQUIRE(rows->size() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    CAPTURE(i);
    CHECK((*rows)[i].timestamp == want[i].timestamp);
    CHECK((*rows)[i].op == want[i].op);
    CHECK((*rows)[i].size == want[i].size);
    CHECK((*rows)[i].tier == want[i].tier);
    CHECK((*rows)[i].key == want[i].key);
    CHECK((*rows)[i].phase == want[i].phase);
    CHECK((*rows)[i].line == want[i].line);
  }
  // "\n" line ends and no final line end are accepted too; a header alone is no rows.
  Result<std::vector<TraceRow>> unix_ends = ParseTrace(
      "Timestamp,Operation,Object_Size_Bytes,Tier,Key,Phase\n1.5,Read,3,Tier-2,k,Decode", "u");
  REQUIRE(unix_ends.ok());
  CHECK(unix_ends->at(0).phase == TracePhase::kDecode);
  CHECK(ParseTrace(std::string(kTraceHeader) + "\r\n", "h")->empty());
  CHECK(ParseTrace(std::string(kTraceHeader) + "\n1,Write,1,Tier-2,k,Both\n", "b")->at(0).phase ==
        TracePhase::kBoth);
}

// Each malformed line is one error naming the file and the line.
TEST_CASE("trace: malformed input is one error naming file:line") {
  const std::string h = std::string(kTraceHeader) + "\n";
  const std::string good = "1.0,Read,10,Tier-2,k,Decode\n";
  struct Case {
    std::string text;
    std::string want;  // the message starts with this
  } cases[] = {
      {"", "t.csv:1: empty file"},
      {"Timestamp,Operation,Size,Tier,Key,Phase\n", "t.csv:1: the header is not"},
      {h + good + "\n" + good, "t.csv:3: an empty line"},
      {h + "1.0,Read,10,Tier-2,k\n", "t.csv:2: 5 fields where 6"},
      {h + "1.0,Read,10,Tier-2,k,Decode,x\n", "t.csv:2: 7 fields where 6"},
      {h + "abc,Read,10,Tier-2,k,Decode\n", "t.csv:2: Timestamp 'abc'"},
      {h + "-1.0,Read,10,Tier-2,k,Decode\n", "t.csv:2: Timestamp '-1.0'"},
      {h + "1.,Read,10,Tier-2,k,Decode\n", "t.csv:2: Timestamp '1.'"},
      {h + good + "1.0,Delete,10,Tier-2,k,Decode\n", "t.csv:3: Operation 'Delete'"},
      {h + "1.0,Read,12x,Tier-2,k,Decode\n", "t.csv:2: Object_Size_Bytes '12x'"},
      {h + "1.0,Read,-5,Tier-2,k,Decode\n", "t.csv:2: Object_Size_Bytes '-5'"},
      {h + "1.0,Read,99999999999999999999,Tier-2,k,Decode\n",
       "t.csv:2: Object_Size_Bytes '99999999999999999999'"},
      {h + "1.0,Read,10,nvme,k,Decode\n", "t.csv:2: Tier 'nvme'"},
      {h + "1.0,Read,10,Tier-3,k,Decode\n", "t.csv:2: Tier 'Tier-3'"},
      {h + "1.0,Read,10,Tier-2,k,Flush\n", "t.csv:2: Phase 'Flush'"},
      {h + "1.0,Read,10,Tier-2,\"k,Decode\n", "t.csv:2: a quoted field is not closed"},
      {h + "1.0,Read,10,Tier-2,\"k\"x,Decode\n", "t.csv:2: text follows a closing quote"},
      {h + "1.0,Read,10,Tier-2,k\"x,Decode\n", "t.csv:2: a quote inside an unquoted field"},
      {h + good + std::string(70000, 'k'), "t.csv:3: a line longer than 64 KiB"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    Result<std::vector<TraceRow>> rows = ParseTrace(c.text, "t.csv");
    REQUIRE_FALSE(rows.ok());
    CHECK(rows.status().code() == StatusCode::kInvalidArgument);
    CHECK(rows.status().message().starts_with(c.want));
  }
}

// A line of `bytes` bytes (its line end not counted): a Read row whose key
// fills it.
std::string RowOfBytes(std::size_t bytes, const std::string& end = "\r\n") {
  const std::string head = "1.0,Read,10,Tier-2,", tail = ",Decode";
  REQUIRE(bytes > head.size() + tail.size());
  return head + std::string(bytes - head.size() - tail.size(), 'k') + tail + end;
}

TEST_CASE("trace: lines up to 64 KiB parse, a longer one is one short error naming its line") {
  const std::string h = std::string(kTraceHeader) + "\r\n";
  const std::string good = "1.0,Read,10,Tier-2,k,Decode\r\n";
  CHECK(kMaxTraceLine == 65536);
  // Exactly the limit: with "\r\n", with "\n" and as the last line without
  // a line end.
  for (const std::string& end : {std::string("\r\n"), std::string("\n"), std::string()}) {
    CAPTURE(end.size());
    Result<std::vector<TraceRow>> rows =
        ParseTrace(h + good + RowOfBytes(kMaxTraceLine, end), "t.csv");
    REQUIRE(rows.ok());
    REQUIRE(rows->size() == 2);
    CHECK(rows->at(1).key.size() == kMaxTraceLine - 26);
    CHECK(rows->at(1).line == 3);
  }
  // One byte over and 65 KiB: complete lines (with good lines after them),
  // and the last line unfinished.
  for (const std::string& text :
       {h + good + RowOfBytes(kMaxTraceLine + 1) + good,
        h + good + RowOfBytes(kMaxTraceLine + 1, "\n") + good,
        h + good + RowOfBytes(65 << 10) + good, h + good + RowOfBytes(65 << 10, "")}) {
    CAPTURE(text.size());
    Result<std::vector<TraceRow>> rows = ParseTrace(text, "t.csv");
    REQUIRE_FALSE(rows.ok());
    CHECK(rows.status().code() == StatusCode::kInvalidArgument);
    CHECK(rows.status().message() == "t.csv:3: a line longer than 64 KiB (65536 bytes)");
  }
  // The header line too.
  Result<std::vector<TraceRow>> header = ParseTrace(std::string(70000, 'T') + "\n" + good, "t");
  REQUIRE_FALSE(header.ok());
  CHECK(header.status().message() == "t:1: a line longer than 64 KiB (65536 bytes)");
}

TEST_CASE("trace: a long bad field is quoted in part") {
  const std::string h = std::string(kTraceHeader) + "\n";
  CHECK(TraceExcerpt("short") == "short");
  CHECK(TraceExcerpt(std::string(48, 'x')) == std::string(48, 'x'));
  CHECK(TraceExcerpt(std::string(49, 'x')) == std::string(48, 'x') + "... (49 bytes)");
  const std::string big(60000, '9');
  for (const std::string& line :
       {big + "x,Read,10,Tier-2,k,Decode", "1.0," + big + ",10,Tier-2,k,Decode",
        "1.0,Read,x" + big + ",Tier-2,k,Decode", "1.0,Read,10,Tier-" + big + ",k,Decode",
        "1.0,Read,10,Tier-2,k," + big}) {
    Result<std::vector<TraceRow>> rows = ParseTrace(h + line + "\n", "t.csv");
    REQUIRE_FALSE(rows.ok());
    CAPTURE(rows.status().message());
    CHECK(rows.status().message().starts_with("t.csv:2: "));
    CHECK(rows.status().message().size() < 160);
    CHECK(rows.status().message().find(" bytes)") != std::string::npos);
  }
}

TEST_CASE("trace: the file reader applies the line limit across its 1 MiB pieces") {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("iomimic_trace_limit_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string h = std::string(kTraceHeader) + "\r\n";
  const std::string good = "1.0,Read,10,Tier-2,k,Decode\r\n";
  // Filler lines, then a line of `bytes` whose "\r" is the last byte of the
  // first 1 MiB piece and whose "\n" starts the second.
  auto file = [&](std::size_t bytes, const char* name) {
    std::string text = h;
    const std::size_t piece = 1u << 20;
    while (text.size() + good.size() + bytes + 1 <= piece - 100) text += good;
    const std::size_t filler = piece - (text.size() + bytes + 1);  // to pad the last filler key
    REQUIRE(filler < 200);
    text += "1.0,Read,10,Tier-2," + std::string(filler - 28, 'f') + ",Decode\r\n";
    REQUIRE(text.size() + bytes + 1 == piece);
    const std::size_t line = static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
    text += RowOfBytes(bytes) + good;
    const std::string path = (dir / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return std::make_pair(path, line + 1);
  };
  {
    const auto [path, line] = file(kMaxTraceLine, "exact.csv");
    Result<std::vector<TraceRow>> rows = ReadTrace(path);
    REQUIRE(rows.ok());
    CHECK(rows->at(line - 2).key.size() == kMaxTraceLine - 26);
    CHECK(rows->at(line - 2).line == line);
  }
  {
    const auto [path, line] = file(kMaxTraceLine + 1, "over.csv");
    Result<std::vector<TraceRow>> rows = ReadTrace(path);
    REQUIRE_FALSE(rows.ok());
    CHECK(rows.status().message() ==
          path + ":" + std::to_string(line) + ": a line longer than 64 KiB (65536 bytes)");
  }
  {
    // 65 KiB inside the first piece (the limit was once checked only on a
    // line's unfinished part, so it fired above about 1 MiB).
    const std::string path = (dir / "65k.csv").string();
    std::ofstream(path, std::ios::binary) << h + good + RowOfBytes(65 << 10) + good;
    Result<std::vector<TraceRow>> rows = ReadTrace(path);
    REQUIRE_FALSE(rows.ok());
    CHECK(rows.status().message() == path + ":3: a line longer than 64 KiB (65536 bytes)");
  }
  std::filesystem::remove_all(dir);
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST_CASE("trace: the writer writes plain and zstd files that read back") {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("iomimic_trace_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  for (const char* name : {"t.csv", "t.csv.zst"}) {
    CAPTURE(name);
    const std::string path = (dir / name).string();
    Result<std::unique_ptr<TraceWriter>> w = TraceWriter::Open(path);
#ifndef IOMIMIC_HAVE_ZSTD
    if (std::string(name).ends_with(".zst")) {
      CHECK(w.status().code() == StatusCode::kNotSupported);
      continue;
    }
#endif
    REQUIRE(w.ok());
    for (const TraceRow& row : PythonRows()) REQUIRE((*w)->Write(row).ok());
    REQUIRE((*w)->Close().ok());
    CHECK_FALSE((*w)->Write(PythonRows()[0]).ok());
    const std::string bytes = Slurp(path);
    if (std::string(name).ends_with(".zst")) {
      CHECK(static_cast<unsigned char>(bytes.at(0)) == 0x28);  // zstd magic 28 B5 2F FD
    } else {
      CHECK(bytes == kPython);
    }
    Result<std::vector<TraceRow>> back = ReadTrace(path);
    REQUIRE(back.ok());
    REQUIRE(back->size() == 3);
    CHECK(back->at(1).key == "a,b\"c");
  }
  // Files larger than the reader's 1 MiB pieces: lines cross the pieces.
  for (const char* name : {"big.csv", "big.csv.zst"}) {
#ifndef IOMIMIC_HAVE_ZSTD
    if (std::string(name).ends_with(".zst")) continue;
#endif
    CAPTURE(name);
    Result<std::unique_ptr<TraceWriter>> w = TraceWriter::Open((dir / name).string());
    REQUIRE(w.ok());
    TraceRow row = PythonRows()[0];
    for (int i = 0; i < 40000; ++i) {
      row.size = static_cast<std::uint64_t>(i);
      REQUIRE((*w)->Write(row).ok());
    }
    REQUIRE((*w)->Close().ok());
    Result<std::vector<TraceRow>> back = ReadTrace((*w)->path());
    REQUIRE(back.ok());
    REQUIRE(back->size() == 40000);
    CHECK(back->at(39999).size == 39999);
    CHECK(back->at(39999).line == 40001);
  }
  // A damaged zstd stream is an error naming the file, not rows.
  const std::string bad = (dir / "bad.csv.zst").string();
  std::ofstream(bad, std::ios::binary) << std::string("\x28\xb5\x2f\xfd\x00\x01\x02", 7);
  Result<std::vector<TraceRow>> rows = ReadTrace(bad);
  CHECK_FALSE(rows.ok());
  CHECK(rows.status().message().find(bad) != std::string::npos);
  CHECK_FALSE(ReadTrace((dir / "missing.csv").string()).ok());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace iomimic::kvcache
