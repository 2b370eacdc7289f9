#include "session/counting_storage.h"

#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "metrics/trace.h"

namespace iomimic::session {

TEST_CASE("Darshan's access-size bins: each upper bound is exclusive") {
  CHECK(FileCounters::SizeBin(0) == 0);
  CHECK(FileCounters::SizeBin(99) == 0);
  CHECK(FileCounters::SizeBin(100) == 1);
  CHECK(FileCounters::SizeBin(1023) == 1);
  CHECK(FileCounters::SizeBin(1024) == 2);
  CHECK(FileCounters::SizeBin(100 * 1024) == 4);
  CHECK(FileCounters::SizeBin((4u << 20) - 1) == 5);
  CHECK(FileCounters::SizeBin(4u << 20) == 6);
  CHECK(FileCounters::SizeBin(100ull << 20) == 8);
  CHECK(FileCounters::SizeBin(1ull << 30) == 9);
  CHECK(FileCounters::SizeBin(~0ull) == 9);
}

TEST_CASE("file counters merge: sums, extremes, first and last timestamps, common sizes") {
  FileCounters a, b;
  a.opens = 1;
  a.reads = 3;
  a.bytes_read = 300;
  a.max_byte_read = 99;
  a.open_start_ns = 50;
  a.close_end_ns = 70;
  a.AddAccessSize(100, 3);
  b.opens = 2;
  b.reads = 1;
  b.bytes_read = 4096;
  b.max_byte_read = 8191;
  b.open_start_ns = 10;
  b.close_end_ns = 90;
  b.AddAccessSize(4096, 1);
  b.AddAccessSize(100, 1);
  a.Merge(b);
  CHECK(a.opens == 3);
  CHECK(a.reads == 4);
  CHECK(a.bytes_read == 4396);
  CHECK(a.max_byte_read == 8191);
  CHECK(a.open_start_ns == 10);
  CHECK(a.close_end_ns == 90);
  const auto common = a.CommonSizes(4);
  REQUIRE(common.size() == 2);
  CHECK(common[0] == std::make_pair<std::uint64_t, std::uint64_t>(100, 4));
  CHECK(common[1] == std::make_pair<std::uint64_t, std::uint64_t>(4096, 1));
  // Timestamps of 0 mean "none" and never win a minimum.
  FileCounters none;
  none.Merge(a);
  CHECK(none.open_start_ns == 10);
}

TEST_CASE("common sizes of a merge are the sizes with the most requests, not the first seen") {
  // The generator's files: 16 distinct large write sizes, one request each,
  // merged first; then the reads: two small sizes with thousands of requests.
  FileCounters total;
  for (std::uint64_t k = 0; k < FileCounters::kSizeSlots; ++k) {
    FileCounters written;
    written.AddAccessSize((1u << 20) + k, 1);
    total.Merge(written);
  }
  FileCounters read;
  for (int i = 0; i < 9000; ++i) read.AddAccessSize(4096, 1);
  for (int i = 0; i < 4000; ++i) read.AddAccessSize(1024, 1);
  total.Merge(read);
  const auto common = total.CommonSizes(4);
  REQUIRE(common.size() == 4);
  CHECK(common[0] == std::make_pair<std::uint64_t, std::uint64_t>(4096, 9000));
  CHECK(common[1] == std::make_pair<std::uint64_t, std::uint64_t>(1024, 4000));
  CHECK(common[2].second == 1);
}

TEST_CASE("the tracer keeps at most its bound, per-thread, and counts the rest") {
  metrics::Tracer off;
  off.Complete("c", "n", metrics::Tracer::Clock::now(), metrics::Tracer::Clock::now());
  CHECK(off.recorded() == 0);
  CHECK(off.dropped() == 0);

  metrics::Tracer t;
  t.Enable(100);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&t] {
      for (int k = 0; k < 50; ++k) {
        const auto now = metrics::Tracer::Clock::now();
        t.Complete("c", "n", now, now, {"k", k});
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(t.recorded() == 100);
  CHECK(t.dropped() == 100);
  const std::string path = "tracer_test.pfw";
  REQUIRE(t.Write(path, 3, metrics::Tracer::Clock::now()).ok());
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  CHECK(line == "[");
  int x = 0;
  while (std::getline(in, line)) {
    if (line.find("\"ph\":\"X\"") != std::string::npos) ++x;
    CHECK(line.find("\"pid\":3") != std::string::npos);
  }
  CHECK(x == 100);
  std::remove(path.c_str());
}

}  // namespace iomimic::session
