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
  // Each file's first pass: a.npz's paused once.
  REQUIRE(p.files[0].script.size() == 2);
  CHECK(p.files[0].passes == 2);
  CHECK(p.files[0].format == "npz");
  CHECK(p.files[0].script[0].open);
  CHECK(p.files[0].script[0].reads == std::vector<std::uint64_t>{100, 400});
  CHECK_FALSE(p.files[0].script[1].open);
  CHECK(p.files[0].script[1].reads == std::vector<std::uint64_t>{500, 0});
  // The data set's: among the files of the most common samples a pass (b
  // and c, one each), the median size's.
  CHECK(p.script_file == "/d/c.npz");
  REQUIRE(p.script.size() == 1);
  CHECK(p.script[0].open);
  CHECK(p.script[0].reads == std::vector<std::uint64_t>{3000});
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
  CHECK(y.find("num_samples_per_file: 1\n") != std::string::npos);
  CHECK(y.find("record_length_bytes: 1000\n") != std::string::npos);  // the median
  CHECK(y.find("read_threads: 2\n") != std::string::npos);
  CHECK(y.find("batch_size: 1\n") != std::string::npos);  // 2 lowered to divide 3 samples
  CHECK(y.find("epochs: 2\n") != std::string::npos);
  CHECK(y.find("file_shuffle: off\n") != std::string::npos);
  // Two classes of npz files: a.npz's two bursts joined in its one sample;
  // b.npz and c.npz each read whole.
  CHECK(y.find("- \"npz 1: open 100 400 500 0\"\n") != std::string::npos);
  CHECK(y.find("- \"npz_2 1: open file\"\n") != std::string::npos);
  CHECK(y.find("data_files:\n    - \"1000 npz\"\n    - \"800 npz_2\"\n    - \"3000 npz_2\"\n") !=
        std::string::npos);
  CHECK(y.find("model_size_bytes: 8192\n") != std::string::npos);
  CHECK(y.find("atomic: True\n") != std::string::npos);
  CHECK(y.find("fsync: True\n") != std::string::npos);
  CHECK_FALSE(m.not_inferred.empty());
}

// Files of five sizes in two formats (by extension), each read whole
// after a header; /e/c.npz and /e/d.npz are read in one of the two passes
// only.
std::string MixedTrace() {
  std::string s;
  double t = 0;
  int fd = 3;
  for (int pass = 0; pass < 2; ++pass) {
    for (const auto& [name, size] : std::vector<std::pair<std::string, int>>{
             {"a.npy", 5000}, {"b.npy", 7000}, {"c.npz", 6000}, {"d.npz", 9000}, {"e.npz", 4000}}) {
      if ((pass == 1 && name == "c.npz") || (pass == 0 && name == "d.npz")) continue;
      const std::string f = "/e/" + name, h = std::to_string(fd) + "<" + f + ">";
      const bool npy = name.ends_with(".npy");
      const int head = npy ? 128 : 22;
      s += Line(10, t, "openat(AT_FDCWD</w>, \"" + f + "\", O_RDONLY) = " + h);
      s += Line(10, t + 0.0001,
                "read(" + h + ", \"\"..., " + std::to_string(head) + ") = " + std::to_string(head));
      if (!npy) s += Line(10, t + 0.0002, "read(" + h + ", \"\", 1) = 0");
      s += Line(10, t + 0.0003,
                "read(" + h + ", \"\"..., " + std::to_string(size) +
                    ") = " + std::to_string(size - head));
      s += Line(10, t + 0.0004, "close(" + h + ") = 0");
      t += 0.05;
      ++fd;
    }
  }
  return s;
}

TEST_CASE("derive: a class per format, reads relative to the file's end, per-file sizes") {
  Result<AppTrace> t = ReadStrace(MixedTrace(), "m.strace");
  REQUIRE(t.ok());
  ProfileOptions o;
  o.read_magic = false;
  Result<TraceProfile> p = ProfileTrace(*t, o);
  REQUIRE(p.ok());
  REQUIRE(p->files.size() == 5);
  CHECK(p->files[1].format == "npy");
  CHECK(p->files[2].passes == 1);  // c.npz: one of the two epochs
  CHECK(p->files[3].passes == 1);
  CHECK(p->files[4].passes == 2);
  const DerivedManifest m = DeriveManifest(*p, "m");
  const std::string& y = m.yaml;
  CHECK(y.find("- \"npy 1: open 128 file-128\"\n") != std::string::npos);
  CHECK(y.find("- \"npz 1: open 22 0 file-22\"\n") != std::string::npos);
  CHECK(y.find("read_script:\n    - \"npy") != std::string::npos);
  // 8 passes over 2 epochs: 4 samples an epoch, and a seeded shuffle that
  // leaves out another file in each epoch, where c.npz and d.npz are put.
  CHECK(y.find("total_training_steps: 4\n") != std::string::npos);
  CHECK(y.find("file_shuffle: seed\n") != std::string::npos);
  CHECK(y.find("6000 npz") != std::string::npos);
  for (const char* size : {"\"5000 npy\"", "\"7000 npy\"", "\"9000 npz\"", "\"4000 npz\""}) {
    CHECK(y.find(size) != std::string::npos);
  }
  bool shuffle_noted = false;
  for (const std::string& line : m.not_inferred) {
    CHECK(line.find("the median file's") == std::string::npos);
    shuffle_noted |= line.find("shuffled with a seed") != std::string::npos;
  }
  CHECK(shuffle_noted);
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
