#include "kvcache/replay.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "iomimic/testing/memory_storage.h"

namespace iomimic::kvcache {
namespace {

TraceRow Row(double t, TraceOp op, std::uint64_t size, int tier, std::string key, TracePhase p,
             std::size_t line) {
  return TraceRow{t, op, size, tier, std::move(key), p, line};
}

std::vector<TraceRow> SmallTrace() {
  return {
      Row(10.0, TraceOp::kWrite, 1000, kTierStorage, "a", TracePhase::kPrefill, 2),
      Row(10.1, TraceOp::kRead, 1000, kTierStorage, "a", TracePhase::kDecode, 3),
      Row(10.2, TraceOp::kWrite, 4096, kTierGpu, "b", TracePhase::kPrefill, 4),
      Row(10.3, TraceOp::kRead, 4096, kTierGpu, "b", TracePhase::kEvict, 5),
      Row(10.3, TraceOp::kWrite, 4096, kTierStorage, "b", TracePhase::kEvict, 6),
      Row(10.4, TraceOp::kRead, 4096, kTierStorage, "b", TracePhase::kDecode, 7),
      Row(10.5, TraceOp::kRead, 777, kTierStorage, "dir/c", TracePhase::kDecode, 8),
  };
}

TEST_CASE("replay: the .npy header is numpy's version 1.0 layout") {
  const std::string h = NpyHeaderForBytes(1000);
  CHECK(h.size() == 128);
  CHECK(h.substr(0, 8) == std::string("\x93NUMPY\x01\x00", 8));
  CHECK(static_cast<unsigned char>(h[8]) + 256 * static_cast<unsigned char>(h[9]) == 118);
  CHECK(h.find("{'descr': '<f2', 'fortran_order': False, 'shape': (500,), }") == 10);
  CHECK(h.back() == '\n');
  CHECK(NpyHeaderForBytes(7).find("'|u1'") != std::string::npos);
  // The largest size still fits the 128 bytes: 20 digits of shape.
  const std::string big = NpyHeaderForBytes(18446744073709551615ULL);
  CHECK(big.size() == kNpyHeaderBytes);
  CHECK(big.find("'shape': (18446744073709551615,), }") != std::string::npos);
  CHECK(big.back() == '\n');
  CHECK(big.find('\0', 10) == std::string::npos);
}

TEST_CASE("replay: object paths refuse keys that leave the root") {
  CHECK(*ReplayObjectPath("r/", "conv_1_turn_2") == "r/conv_1_turn_2.npy");
  CHECK(*ReplayObjectPath("r", "layer0/user0") == "r/layer0/user0.npy");
  for (const char* bad : {"", "/etc/x", "a/../b", "..", "a//b", "./a", "a\nb"}) {
    CAPTURE(bad);
    CHECK(ReplayObjectPath("r", bad).status().code() == StatusCode::kInvalidArgument);
  }
  // A long key is quoted in part (TraceExcerpt): the error stays one short line.
  for (const std::string& bad : {"/" + std::string(60000, 'k'), std::string(60000, 'k') + "\n",
                                 std::string(60000, 'k') + "/../x"}) {
    const Status st = ReplayObjectPath("r", bad).status();
    CHECK(st.code() == StatusCode::kInvalidArgument);
    CHECK(st.message().size() < 160);
    CHECK(st.message().find("(60") != std::string::npos);
  }
}

TEST_CASE("replay: each Tier-2 row is one operation, memory tiers are counted only") {
  for (unsigned threads : {1u, 4u}) {
    CAPTURE(threads);
    testing::MemoryStorage storage;
    ReplayOptions options;
    options.root = "replay";
    options.threads = threads;
    options.transfer_bytes = 256;  // several calls per object
    options.keep_objects = true;
    Result<ReplayResult> r = Replay(storage, SmallTrace(), options);
    REQUIRE(r.ok());
    CHECK(r->writes.ops == 2);
    CHECK(r->writes.bytes == 1000 + 4096);
    CHECK(r->reads.ops == 3);
    CHECK(r->reads.bytes == 1000 + 4096 + 777);
    CHECK(r->skipped.ops == 2);
    CHECK(r->skipped.bytes == 2 * 4096);
    CHECK(r->setup_objects == 1);  // dir/c is read and never written
    CHECK(r->write_ns.count() == 2);
    CHECK(r->read_ns.count() == 3);
    CHECK(r->groups.at("Write Tier-2 Evict").ops == 1);
    CHECK(r->groups.at("Read Tier-0 Evict").bytes == 4096);
    CHECK(r->groups.size() == 5);
    // The objects are .npy files: header + payload.
    const std::vector<std::byte> a = storage.Bytes("replay/a.npy");
    CHECK(a.size() == 128 + 1000);
    CHECK(storage.Bytes("replay/dir/c.npy").size() == 128 + 777);
    CHECK(storage.Has("replay/b.npy"));
  }
}

TEST_CASE("replay: objects are removed at the end unless kept, and never overwritten") {
  testing::MemoryStorage storage;
  ReplayOptions options;
  options.root = "replay";
  REQUIRE(Replay(storage, SmallTrace(), options).ok());
  CHECK_FALSE(storage.Has("replay/a.npy"));
  CHECK_FALSE(storage.Has("replay/dir/c.npy"));
  // An object that exists before the replay: refused, left as it was.
  storage.SetBytes("replay/b.npy", std::vector<std::byte>(3, std::byte{7}));
  Result<ReplayResult> r = Replay(storage, SmallTrace(), options);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::kAlreadyExists);
  CHECK(storage.Bytes("replay/b.npy").size() == 3);
}

TEST_CASE("replay: a bad key or a failing storage names the trace line") {
  testing::MemoryStorage storage;
  std::vector<TraceRow> rows = SmallTrace();
  rows.push_back(Row(11, TraceOp::kWrite, 5, kTierStorage, "../x", TracePhase::kPrefill, 9));
  Result<ReplayResult> r = Replay(storage, rows, ReplayOptions{});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("trace line 9") != std::string::npos);

  // A read that finds fewer bytes than the trace says is corruption.
  testing::MemoryStorage short_storage;
  std::vector<TraceRow> two = {
      Row(1, TraceOp::kWrite, 100, kTierStorage, "k", TracePhase::kPrefill, 2),
      Row(2, TraceOp::kRead, 200, kTierStorage, "k", TracePhase::kDecode, 3),
  };
  r = Replay(short_storage, two, ReplayOptions{});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::kCorruption);
  CHECK(r.status().message().find("trace line 3") != std::string::npos);
}

TEST_CASE("replay: a failure while creating the objects read first leaves nothing") {
  testing::MemoryStorage storage;
  storage.FailWritesTo("dir/c");  // the object read before any write
  ReplayOptions options;
  options.root = "replay";
  Result<ReplayResult> r = Replay(storage, SmallTrace(), options);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("trace line 8") != std::string::npos);
  CHECK(storage.Paths().empty());
}

TEST_CASE("replay: recorded timing waits for the trace's times") {
  testing::MemoryStorage storage;
  std::vector<TraceRow> rows = {
      Row(100.0, TraceOp::kWrite, 10, kTierStorage, "k", TracePhase::kPrefill, 2),
      Row(100.2, TraceOp::kRead, 10, kTierStorage, "k", TracePhase::kDecode, 3),
  };
  ReplayOptions options;
  options.timing = ReplayTiming::kRecorded;
  Result<ReplayResult> r = Replay(storage, rows, options);
  REQUIRE(r.ok());
  CHECK(r->elapsed_s >= 0.2);
  CHECK(r->trace_span_s == doctest::Approx(0.2));
  options.timing = ReplayTiming::kFast;
  r = Replay(storage, rows, options);
  REQUIRE(r.ok());
  CHECK(r->elapsed_s < 0.2);
}

}  // namespace
}  // namespace iomimic::kvcache
