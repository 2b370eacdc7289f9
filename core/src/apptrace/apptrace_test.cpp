#include <doctest/doctest.h>

#include <string>

#include "apptrace/dftracer_reader.h"
#include "apptrace/replay.h"
#include "apptrace/strace_reader.h"
#include "iomimic/testing/memory_storage.h"

namespace iomimic::apptrace {
namespace {

// strace -f -ttt -T -yy: two threads, an unfinished read, a failed stat,
// lseek, fsync, rename, an mmap, a pipe and a directory left out.
constexpr const char* kStrace =
    "100 1000.000000 openat(AT_FDCWD</w>, \"d/a.bin\", O_RDONLY|O_CLOEXEC) = 3</w/d/a.bin> "
    "<0.000010>\n"
    "100 1000.000020 newfstatat(3</w/d/a.bin>, \"\", {st_mode=S_IFREG|0644, st_size=8192, ...}, "
    "AT_EMPTY_PATH) = 0 <0.000005>\n"
    "[pid   101] 1000.000030 openat(AT_FDCWD</w>, \"/out/c.tmp\", O_WRONLY|O_CREAT|O_TRUNC, 0666) "
    "= 4</out/c.tmp> <0.000010>\n"
    "100 1000.000100 read(3</w/d/a.bin>, <unfinished ...>\n"
    "[pid   101] 1000.000110 write(4</out/c.tmp>, \"\\0\\1\"..., 5000) = 5000 <0.000010>\n"
    "100 1000.000200 <... read resumed>\"PK\\3\\4\"..., 4096) = 4096 <0.000100>\n"
    "100 1000.000300 lseek(3</w/d/a.bin>, 6000, SEEK_SET) = 6000 <0.000001>\n"
    "100 1000.000400 read(3</w/d/a.bin>, \"x, y)\"..., 4096) = 2192 <0.000010>\n"
    "100 1000.000500 pread64(3</w/d/a.bin>, \"\"..., 100, 50) = 100 <0.000010>\n"
    "100 1000.000550 mmap(NULL, 8192, PROT_READ, MAP_PRIVATE, 3</w/d/a.bin>, 0) = 0x7f00 "
    "<0.000010>\n"
    "100 1000.000600 close(3</w/d/a.bin>) = 0 <0.000002>\n"
    "100 1000.000700 newfstatat(AT_FDCWD</w>, \"/nope\", 0x7ffc, 0) = -1 ENOENT (No such file "
    "or directory) <0.000004>\n"
    "100 1000.000750 read(5<pipe:[123]>, \"\", 10) = 0 <0.000002>\n"
    "100 1000.000760 openat(AT_FDCWD</w>, \"/w\", O_RDONLY|O_DIRECTORY) = 6</w> <0.000002>\n"
    "[pid   101] 1000.000800 fsync(4</out/c.tmp>) = 0 <0.000100>\n"
    "[pid   101] 1000.001000 close(4</out/c.tmp>) = 0 <0.000002>\n"
    "[pid   101] 1000.001100 rename(\"/out/c.tmp\", \"/out/c\") = 0 <0.000010>\n"
    "100 1000.002000 +++ exited with 0 +++\n";

TEST_CASE("strace: calls, positions, failures and unfinished pairs") {
  Result<AppTrace> t = ReadStrace(kStrace, "t.strace");
  REQUIRE(t.ok());
  REQUIRE(t->threads.size() == 2);
  const KindCounts c = t->Counts();
  auto at = [](OpKind k) { return static_cast<std::size_t>(k); };
  CHECK(c.ops[at(OpKind::kOpen)] == 2);
  CHECK(c.ops[at(OpKind::kRead)] == 3);
  CHECK(c.bytes[at(OpKind::kRead)] == 4096 + 2192 + 100);
  CHECK(c.ops[at(OpKind::kWrite)] == 1);
  CHECK(c.bytes[at(OpKind::kWrite)] == 5000);
  CHECK(c.ops[at(OpKind::kStat)] == 2);
  CHECK(c.failed[at(OpKind::kStat)] == 1);
  CHECK(c.ops[at(OpKind::kMmap)] == 1);
  CHECK(c.ops[at(OpKind::kSync)] == 1);
  CHECK(c.ops[at(OpKind::kRename)] == 1);
  CHECK(t->ignored.at("open of a directory") == 1);
  CHECK(t->ignored.at("read of a descriptor that is not a data file") == 1);
  const std::vector<Op>& ops = t->threads[0].ops;
  // The read resumed: started at the unfinished half, its result the resumed one's.
  CHECK(ops[2].kind == OpKind::kRead);
  CHECK(ops[2].start_ns == 100'000);
  CHECK(ops[2].dur_ns == 100'000);
  CHECK(ops[2].offset == 0);
  CHECK(ops[4].offset == 6000);  // after the lseek
  CHECK(ops[5].offset == 50);    // pread64's own
  CHECK(t->files[ops[0].file].path == "/w/d/a.bin");
  CHECK(t->files[ops[0].file].initial_size == 8192);
  CHECK(t->files[ops[0].file].existed);
  CHECK(t->span_ns() == 1'110'000);
}

TEST_CASE("strace: without -yy, paths come from the opens") {
  const char* text =
      "1.000000 openat(AT_FDCWD, \"data/x\", O_RDONLY) = 3 <0.000001>\n"
      "1.000010 read(3, \"ab\", 10) = 2 <0.000001>\n"
      "1.000020 dup(3) = 7 <0.000001>\n"
      "1.000030 read(7, \"c\", 10) = 1 <0.000001>\n"
      "1.000040 close(3) = 0 <0.000001>\n"
      "1.000050 read(1, \"c\", 10) = 1 <0.000001>\n";
  Result<AppTrace> t = ReadStrace(text, "p.strace");
  REQUIRE(t.ok());
  const std::vector<Op>& ops = t->threads[0].ops;
  REQUIRE(ops.size() == 4);
  CHECK(t->files[ops[1].file].path == "data/x");
  CHECK(ops[2].offset == 2);  // the dup shares the position
  CHECK(t->files[0].initial_size == 3);
}

TEST_CASE("strace: a malformed line is one error naming FILE:LINE") {
  for (const char* bad : {"1.0 read(3, \"a\", 1\n", "x.y read(3) = 1\n", "1.0 read(3) 1\n",
                          "1.0 <... read resumed>) = 1\n", "[pid x] 1.0 read(3) = 1\n"}) {
    CAPTURE(bad);
    Result<AppTrace> t = ReadStrace(std::string("1.0 close(9) = 0 <0.1>\n") + bad, "b.strace");
    REQUIRE_FALSE(t.ok());
    CHECK(t.status().message().rfind("b.strace:2: ", 0) == 0);
  }
  CHECK_FALSE(ReadStrace("1.0 getpid() = 7\n", "e.strace").ok());  // no file operation
}

TEST_CASE("dftracer: POSIX events by fname or fhash, other categories counted") {
  const char* text =
      "[\n"
      "{\"id\":1,\"name\":\"FH\",\"cat\":\"dftracer\",\"pid\":1,\"tid\":0,\"ph\":\"M\","
      "\"args\":{\"name\":\"/d/b\",\"value\":\"77\"}}\n"
      "{\"id\":2,\"name\":\"open64\",\"cat\":\"POSIX\",\"pid\":1,\"tid\":2,\"ts\":100,\"dur\":3,"
      "\"ph\":\"X\",\"args\":{\"fname\":\"/d/a\",\"ret\":5,\"flags\":0}},\n"
      "{\"id\":3,\"name\":\"read\",\"cat\":\"POSIX\",\"pid\":1,\"tid\":2,\"ts\":110,\"dur\":4,"
      "\"ph\":\"X\",\"args\":{\"fd\":5,\"size\":4096,\"ret\":4000}}\n"
      "{\"id\":4,\"name\":\"pread64\",\"cat\":\"POSIX\",\"pid\":1,\"tid\":3,\"ts\":120,\"dur\":4,"
      "\"ph\":\"X\",\"args\":{\"fhash\":\"77\",\"size\":10,\"offset\":90}}\n"
      "{\"id\":5,\"name\":\"compute\",\"cat\":\"ai_framework\",\"pid\":1,\"tid\":2,\"ts\":130,"
      "\"dur\":50,\"ph\":\"X\"}\n"
      "{\"id\":6,\"name\":\"close\",\"cat\":\"POSIX\",\"pid\":1,\"tid\":2,\"ts\":200,\"dur\":1,"
      "\"ph\":\"X\",\"args\":{\"fd\":5}}\n";
  Result<AppTrace> t = ReadDftracer(text, "t.pfw");
  REQUIRE(t.ok());
  REQUIRE(t->threads.size() == 2);
  const std::vector<Op>& a = t->threads[0].ops;
  REQUIRE(a.size() == 3);
  CHECK(a[1].size == 4000);
  CHECK(a[1].handle == a[0].handle);
  CHECK(t->files[t->threads[1].ops[0].file].path == "/d/b");
  CHECK(t->files[t->threads[1].ops[0].file].initial_size == 100);
  CHECK(t->ignored.at("ai_framework compute") == 1);
  CHECK(t->span_ns() == 101'000);
  Result<AppTrace> bad = ReadDftracer("[\n{\"name\":\"read\",\"cat\":\"POSIX\"}\n", "b.pfw");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().rfind("b.pfw:2: ", 0) == 0);
}

TEST_CASE("replay: prefix map, longest wins, unmapped absolute paths need a root") {
  ReplayOptions o;
  o.map = {{"/data", "t/d"}, {"/data/deep", "t/x"}};
  CHECK(*MapPath("/data/a", o, 0) == "t/d/a");
  CHECK(*MapPath("/data/deep/a", o, 0) == "t/x/a");
  CHECK_FALSE(MapPath("/database/a", o, 0).ok());
  Result<std::string> unmapped = MapPath("/etc/x", o, 0);
  REQUIRE_FALSE(unmapped.ok());
  CHECK(unmapped.status().message().find("/etc/x") != std::string::npos);
  o.root = "r";
  CHECK(*MapPath("/etc/x", o, 0) == "r/etc/x");
  o.total_copies = 2;
  CHECK(*MapPath("/data/a", o, 1) == "t/d/copy-1/a");
}

TEST_CASE("replay: ops and bytes per type equal the trace's, files made, renamed") {
  Result<AppTrace> t = ReadStrace(kStrace, "t.strace");
  REQUIRE(t.ok());
  testing::MemoryStorage storage;
  ReplayOptions o;
  o.root = "root";
  o.recorded_timing = false;
  ReplayFigures f;
  REQUIRE(SetUpFiles(storage, *t, o, &f).ok());
  CHECK(storage.Bytes("root/w/d/a.bin").size() == 8192);
  CHECK(f.setup_files == 1);
  REQUIRE(Replay(storage, *t, o, &f).ok());
  CHECK(f.replayed.ops == f.traced.ops);
  CHECK(f.replayed.bytes == f.traced.bytes);
  CHECK(f.replayed.failed == f.traced.failed);
  CHECK(f.outcome_mismatches == 0);
  CHECK(storage.Bytes("root/out/c").size() == 5000);
  CHECK_FALSE(storage.Has("root/out/c.tmp"));
  // Recorded timing keeps the gaps: the trace's span, at least.
  o.recorded_timing = true;
  ReplayFigures timed;
  REQUIRE(SetUpFiles(storage, *t, o, &timed).ok());
  REQUIRE(Replay(storage, *t, o, &timed).ok());
  CHECK(timed.replay_seconds >= 0.0009);
}

}  // namespace
}  // namespace iomimic::apptrace
