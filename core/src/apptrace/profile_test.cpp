#include "apptrace/profile.h"

#include <doctest/doctest.h>

#include <string>

#include "apptrace/derive.h"
#include "apptrace/fidelity.h"
#include "apptrace/strace_reader.h"

namespace iomimic::apptrace {
namespace {

// One line of strace -f -ttt -T -yy output by thread `tid` at `t` seconds.
std::string Line(int tid, double t, const std::string& call) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%d %.6f ", tid, 1000 + t);
  return buf + call + " <0.000010>\n";
}

// Passes 150 ms apart. Thread 10 reads /d/a.npz (1000 bytes) in two bursts split by a 50 ms
// pause, then /d/b.npz (800 bytes) whole; thread 11 reads /d/c.npz whole; a library is
// read too (not data); a checkpoint is written, synced and renamed.
std::string Trace(int passes) {
  std::string s;
  double t = 0;
  for (int pass = 0; pass < passes; ++pass) {
    s += Line(10, t, "openat(AT_FDCWD</w>, \"/d/a.npz\", O_RDONLY) = 3</d/a.npz>");
    s += Line(10, t + 0.0001, "read(3</d/a.npz>, \"PK\\3\\4\"..., 100) = 100");
    s += Line(10, t + 0.0002, "read(3</d/a.npz>, \"\"..., 400) = 400");
    s += Line(10, t + 0.0502, "read(3</d/a.npz>, \"\"..., 500) = 500");
    s += Line(10, t + 0.0503, "read(3</d/a.npz>, \"\", 1) = 0");
    s += Line(10, t + 0.0504, "close(3</d/a.npz>) = 0");
    s += Line(10, t + 0.1004, "openat(AT_FDCWD</w>, \"/d/b.npz\", O_RDONLY) = 3</d/b.npz>");
    s += Line(10, t + 0.1005, "read(3</d/b.npz>, \"\"..., 800) = 800");
    s += Line(10, t + 0.1006, "close(3</d/b.npz>) = 0");
    s += Line(11, t + 0.0001, "openat(AT_FDCWD</w>, \"/d/c.npz\", O_RDONLY) = 4</d/c.npz>");
    s += Line(11, t + 0.0002, "read(4</d/c.npz>, \"\"..., 3000) = 3000");
    s += Line(11, t + 0.0003, "close(4</d/c.npz>) = 0");
    t += 0.15;
  }
  s += Line(10, t, "openat(AT_FDCWD</w>, \"/usr/lib/x.so\", O_RDONLY) = 5</usr/lib/x.so>");
  s += Line(10, t + 0.0001, "read(5</usr/lib/x.so>, \"\"..., 832) = 832");
  s += Line(12, t,
            "openat(AT_FDCWD</w>, \"/ck/m.pt.tmp\", O_WRONLY|O_CREAT|O_TRUNC, 0666) = "
            "6</ck/m.pt.tmp>");
  s += Line(12, t + 0.0001, "write(6</ck/m.pt.tmp>, \"\"..., 4096) = 4096");
  s += Line(12, t + 0.0002, "write(6</ck/m.pt.tmp>, \"\"..., 4096) = 4096");
  s += Line(12, t + 0.0003, "fsync(6</ck/m.pt.tmp>) = 0");
  s += Line(12, t + 0.0004, "close(6</ck/m.pt.tmp>) = 0");
  s += Line(12, t + 0.0005, "rename(\"/ck/m.pt.tmp\", \"/ck/m.pt\") = 0");
  return s;
}

TraceProfile ProfileOf(int passes) {
  Result<AppTrace> t = ReadStrace(Trace(passes), "t.strace");
  REQUIRE(t.ok());
  ProfileOptions o;
  o.read_magic = false;
  Result<TraceProfile> p = ProfileTrace(*t, o);
  REQUIRE(p.ok());
  return std::move(p).value();
}

TEST_CASE("profile: data set, bins, epochs, threads, rhythm and writes") {
  const TraceProfile p = ProfileOf(2);
  CHECK(p.data_dir == "/d");
  REQUIRE(p.files.size() == 3);  // the library is not data
  CHECK(p.files[0].path == "/d/a.npz");
  CHECK(p.files[0].size == 1000);
  CHECK(p.files[0].opens == 2);
  CHECK(p.read_ops == 2 * 6);
  CHECK(p.read_bytes == 2 * 4800);
  CHECK(p.distinct_bytes == 4800);
  CHECK(p.epochs == 2);
  CHECK(p.bytes_per_epoch == doctest::Approx(4800));
  CHECK(p.opens_per_file == doctest::Approx(1));
  CHECK(p.reader_threads == 2);
  // 0 (the read at the end), 100, 400, 500, 800, 3000: bins 0, 6, 8, 8, 9, 11.
  CHECK(p.read_bins.size() == 5);
  CHECK(p.read_bins.at(0) == 2);
  CHECK(p.read_bins.at(6) == 2);
  CHECK(p.read_bins.at(8) == 4);
  CHECK(p.read_bins.at(9) == 2);
  CHECK(p.read_bins.at(11) == 2);
  CHECK(p.format == "npz");  // by the extension (magic not read)
  // a.npz (1000 bytes) is the median size (800, 1000, 3000): its first
  // pass paused once.
  CHECK(p.script_file == "/d/a.npz");
  REQUIRE(p.script.size() == 2);
  CHECK(p.script[0].open);
  CHECK(p.script[0].reads == std::vector<std::uint64_t>{100, 400});
  CHECK_FALSE(p.script[1].open);
  CHECK(p.script[1].reads == std::vector<std::uint64_t>{500, 0});
  CHECK(p.step_gap_s == doctest::Approx(0.05).epsilon(0.05));
  CHECK(p.compute_per_sample_s > 0);
  REQUIRE(p.written.size() == 1);
  CHECK(p.written[0].path == "/ck/m.pt");
  CHECK(p.written[0].renamed);
  CHECK(p.written[0].syncs == 1);
  CHECK(p.write_bytes == 8192);
  CHECK(p.write_bins.at(12) == 2);
}

TEST_CASE("profile: size bins") {
  CHECK(SizeBin(0) == 0);
  CHECK(SizeBin(1) == 0);
  CHECK(SizeBin(2) == 1);
  CHECK(SizeBin(4095) == 11);
  CHECK(SizeBin(4096) == 12);
  CHECK(SizeBinName(12) == "4 KiB-8 KiB");
}

TEST_CASE("profile: a trace without data files or writes is an error naming it") {
  Result<AppTrace> t = ReadStrace(
      Line(1, 0, "openat(AT_FDCWD</w>, \"/usr/lib/x.so\", O_RDONLY) = 5</usr/lib/x.so>") +
          Line(1, 0.1, "read(5</usr/lib/x.so>, \"\"..., 832) = 832"),
      "lib.strace");
  REQUIRE(t.ok());
  Result<TraceProfile> p = ProfileTrace(*t, {});
  REQUIRE_FALSE(p.ok());
  CHECK(p.status().message().find("lib.strace") != std::string::npos);
}

TEST_CASE("derive: script entries and the manifest's values") {
  CHECK(ScriptEntries({{true, {100, 400}}, {true, {100, 400}}, {false, {500, 500, 500, 0}}}) ==
        std::vector<std::string>{"2: open 100 400", "1: 500*3 0"});
  const DerivedManifest m = DeriveManifest(ProfileOf(2), "t");
  const std::string& y = m.yaml;
  CHECK(y.find("num_files_train: 3\n") != std::string::npos);
  CHECK(y.find("num_samples_per_file: 2\n") != std::string::npos);
  CHECK(y.find("record_length_bytes: 500\n") != std::string::npos);  // 1000 over 2 samples
  CHECK(y.find("read_threads: 2\n") != std::string::npos);
  CHECK(y.find("batch_size: 2\n") != std::string::npos);
  CHECK(y.find("epochs: 2\n") != std::string::npos);
  CHECK(y.find("- \"1: open 100 400\"\n") != std::string::npos);
  CHECK(y.find("- \"1: 500 0\"\n") != std::string::npos);
  CHECK(y.find("model_size_bytes: 8192\n") != std::string::npos);
  CHECK(y.find("atomic: True\n") != std::string::npos);
  CHECK(y.find("fsync: True\n") != std::string::npos);
  CHECK_FALSE(m.not_inferred.empty());
}

TEST_CASE("fidelity: per-epoch measures within tolerance") {
  const TraceProfile one = ProfileOf(1), two = ProfileOf(2);
  // Two passes of the same reads: the same per epoch.
  CHECK(CompareProfiles(one, two, {}).ok());
  TraceProfile fewer = two;
  fewer.read_bins[8] -= 1;  // 1.5 reads per epoch in that bin, not 2
  const FidelityVerdict v = CompareProfiles(one, fewer, {});
  CHECK(v.bytes_per_epoch);
  CHECK_FALSE(v.read_sizes);
  REQUIRE(v.misses.size() == 1);
  CHECK(v.misses[0].find("256 B-512 B") != std::string::npos);
  CHECK(FidelityJson({one, two}, {}).find("\"read_sizes\": true") != std::string::npos);
}

}  // namespace
}  // namespace iomimic::apptrace
