#include "kvcache/request_trace.h"

#include <doctest/doctest.h>

#include "kvcache/chunked.h"

namespace iomimic::kvcache {
namespace {

TEST_CASE("request trace: Mooncake lines, sorted by arrival, blocks filled to the input") {
  Result<RequestTrace> t = ParseRequestTrace(
      "{\"timestamp\": 3052, \"input_length\": 2287, \"output_length\": 316, \"hash_ids\": [0, 42, "
      "43, 44, 45]}\n\n"
      "{\"timestamp\": 1000, \"input_length\": 1100, \"output_length\": 5, \"hash_ids\": [0]}\n",
      "t.jsonl", "mooncake");
  REQUIRE_MESSAGE(t.ok(), t.status().ToString());
  REQUIRE(t->requests.size() == 2);
  CHECK(t->requests[0].arrival_seconds == 0);
  CHECK(t->requests[1].arrival_seconds == doctest::Approx(2.052));
  CHECK(t->requests[0].block_ids.size() == 3);  // 1100 tokens: 3 blocks, 2 without an id
  CHECK(t->requests[0].block_ids[0] == 0);
  CHECK(t->requests[0].block_ids[1] != t->requests[1].block_ids[1]);
  CHECK(t->requests[1].block_ids.size() == 5);
}

TEST_CASE("request trace: bad lines are one error naming FILE:LINE") {
  auto error = [](const char* text, const char* format) {
    Result<RequestTrace> t = ParseRequestTrace(text, "f", format);
    REQUIRE_FALSE(t.ok());
    return t.status().message();
  };
  CHECK(error("{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1}\nnot json\n",
              "mooncake") == "f:2: not a JSON object");
  CHECK(error("{\"timestamp\": 0, \"input_length\": -1, \"output_length\": 1}\n", "mooncake")
            .find("f:1: input_length") == 0);
  CHECK(error("{\"timestamp\": 0, \"input_length\": 1e15, \"output_length\": 1}\n", "mooncake") ==
        "f:1: input_length is above 16777216 tokens");
  CHECK(error("Timestamp,Request tokens,Response tokens\n1,99999999999,2\n", "burstgpt") ==
        "f:2: 99999999999 tokens is above 16777216");
  CHECK(error("Timestamp,Request tokens\n", "burstgpt").find("f:1: the header") == 0);
  CHECK(error("Timestamp,Request tokens,Response tokens\n1,x,2\n", "burstgpt") ==
        "f:2: 'x' is not a token count");
  CHECK(error("{}", "sharegpt").find("f:1: not a JSON list") == 0);
  CHECK(error("", "nope").find("unknown request trace format 'nope'") != std::string::npos);
}

TEST_CASE("request trace: BurstGPT shares nothing, ShareGPT turns share their prefix") {
  Result<RequestTrace> b = ParseRequestTrace(
      "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
      "5,ChatGPT,600,18,618,Conversation log\n7,ChatGPT,600,1,601,Conversation log\n",
      "b.csv", "burstgpt");
  REQUIRE(b.ok());
  REQUIRE(b->requests.size() == 2);
  CHECK(b->requests[1].arrival_seconds == 2);
  CHECK(b->requests[0].block_ids[0] != b->requests[1].block_ids[0]);
  const std::string turn(4 * 600, 'x');  // 600 tokens
  Result<RequestTrace> s =
      ParseRequestTrace("[{\"conversations\": [{\"from\": \"human\", \"value\": \"" + turn +
                            "\"}, {\"from\": \"gpt\", \"value\": \"" + turn +
                            "\"}, {\"from\": \"human\", "
                            "\"value\": \"" +
                            turn + "\"}]}]",
                        "s.json", "sharegpt");
  REQUIRE_MESSAGE(s.ok(), s.status().ToString());
  REQUIRE(s->requests.size() == 2);
  CHECK(s->requests[0].input_tokens == 600);
  CHECK(s->requests[0].output_tokens == 600);
  CHECK(s->requests[1].input_tokens == 1800);
  // The first turn's full block is the second turn's first block.
  CHECK(s->requests[1].block_ids[0] == s->requests[0].block_ids[0]);
  CHECK(s->requests[1].block_ids[1] != s->requests[0].block_ids[1]);
}

TEST_CASE("request trace: the format from the file's name") {
  CHECK(TraceFormatOf("a/t.jsonl", "") == "mooncake");
  CHECK(TraceFormatOf("t.csv", "auto") == "burstgpt");
  CHECK(TraceFormatOf("t.json", "") == "sharegpt");
  CHECK(TraceFormatOf("t.json", "mooncake") == "mooncake");
}

TEST_CASE("request trace: chunk keys are equal exactly for equal prefixes") {
  TraceRequest a{0, 1100, 1, {7, 8, 9}}, b{0, 1000, 1, {7, 8}};
  std::vector<ChunkRef> ca, cb;
  ChunksOf(a, 512, 256, &ca);
  ChunksOf(b, 512, 256, &cb);
  REQUIRE(ca.size() == 5);
  REQUIRE(cb.size() == 4);
  CHECK(ca.back().tokens == 1100 - 4 * 256);
  for (int i = 0; i < 3; ++i) CHECK(ca[i].key == cb[i].key);
  CHECK(ca[3].key != cb[3].key);  // b's ends at 1000, a's at 1024
}

TEST_CASE("chunk LRU: hits, eviction down a tier, deletion and promotion") {
  constexpr int kHost = 0, kStorage = 1;
  ChunkLru lru({/*host=*/200, /*storage=*/300});
  std::vector<ChunkLru::Move> moves;
  CHECK(lru.Insert(1, 100, &moves) == kHost);
  CHECK(lru.Insert(2, 100, &moves) == kHost);
  CHECK(moves.empty());
  CHECK(lru.Touch(1) == kHost);  // 2 is now the least recent
  CHECK(lru.Insert(3, 100, &moves) == kHost);
  REQUIRE(moves.size() == 1);
  CHECK((moves[0].kind == ChunkLru::Move::Kind::kDemote && moves[0].key == 2));
  CHECK(lru.Touch(2) == kStorage);
  moves.clear();
  lru.Insert(4, 100, &moves);  // demotes 1
  lru.Insert(5, 100, &moves);  // demotes 3
  lru.Insert(6, 100, &moves);  // demotes 4; storage (2, 1, 3) full, 2 is deleted
  CHECK(lru.used(kStorage) == 300);
  CHECK_FALSE(lru.Touch(2).has_value());
  bool deleted = false;
  for (const ChunkLru::Move& m : moves)
    deleted |= m.kind == ChunkLru::Move::Kind::kDelete && m.key == 2;
  CHECK(deleted);
  moves.clear();
  CHECK(lru.Promote(1, &moves));  // up again; the host's least recent goes down
  CHECK(lru.Touch(1) == kHost);
  CHECK_FALSE(lru.Promote(1, &moves));  // on the top tier already
}

}  // namespace
}  // namespace iomimic::kvcache
