// Request traces of LLM serving, read for the KV-cache workflow's chunked
// mode (kv_cache.layout: chunked, docs/kvcache-chunked.md): the requests'
// arrival times, input and output lengths and, where the trace has them,
// the ids of their prompt's prefix blocks, which say which requests share a
// prefix.
//
// Formats (kv_cache.request_trace_format, or from the file's name):
//  - mooncake: JSON lines as Mooncake's FAST'25 traces and NVIDIA AIPerf's
//    mooncake_trace datasets: {"timestamp": ms, "input_length": n,
//    "output_length": m, "hash_ids": [...]}, one id per block of 512
//    tokens; equal ids are equal prefixes (the id of a block stands for the
//    whole prompt up to its end);
//  - burstgpt: BurstGPT's CSV, a header naming "Timestamp" (seconds),
//    "Request tokens" and "Response tokens" among its columns; no block
//    ids: no two requests share a prefix;
//  - sharegpt: ShareGPT's JSON, a list of conversations {"conversations":
//    [{"from": "human"|"gpt", "value": text}, ...]}: each human turn is a
//    request whose input is the conversation so far, its tokens counted as
//    ceil(UTF-8 bytes / 4); its blocks up to the end of the previous turn
//    are the previous request's (a multi-turn prefix), the rest new; no
//    timestamps: requests follow each other as fast as the run goes.
// A bad line or value is one error naming FILE:LINE (the JSON's first line
// for sharegpt).

#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "iomimic/status.h"

namespace iomimic::kvcache {

struct TraceRequest {
  double arrival_seconds = 0;  // since the trace's first request
  std::uint64_t input_tokens = 0;
  std::uint64_t output_tokens = 0;
  // One id per block of RequestTrace::block_tokens tokens of the input
  // (the last block partial), equal ids for equal prefixes.
  std::vector<std::uint64_t> block_ids;
  // The conversation the request is a turn of (1, 2, ...; sharegpt), 0
  // where the trace does not say (mooncake, burstgpt): a chunk hit counts
  // as the request's own only within one conversation.
  std::uint64_t conversation = 0;
};

struct RequestTrace {
  std::string format;  // "mooncake", "burstgpt" or "sharegpt"
  std::uint64_t block_tokens = 512;
  std::vector<TraceRequest> requests;  // in arrival order
};

// "mooncake", "burstgpt" or "sharegpt" for `path`'s name (.jsonl, .csv,
// .json) when `format` is empty or "auto"; else `format`.
std::string TraceFormatOf(const std::string& path, const std::string& format);

// Reads `path` (`format` as TraceFormatOf). Requests keep the trace's order
// and are stably sorted by arrival.
Result<RequestTrace> ReadRequestTrace(const std::string& path, const std::string& format);

// The same from text (`name` for errors), for tests and fuzzing.
Result<RequestTrace> ParseRequestTrace(std::string_view text, const std::string& name,
                                       const std::string& format);

// One chunk of a request's input: its key (equal keys for equal prefixes up
// to the chunk's end) and its tokens (chunk_tokens, the last one fewer).
struct ChunkRef {
  std::uint64_t key = 0;
  std::uint64_t tokens = 0;
};

// The chunks of `request`'s input, chunk_tokens each: chunk c covers tokens
// [c x chunk_tokens, ...); its key is made of the id of the block holding
// its last token and that token's place in the block, so two requests
// share the chunk exactly when their prompts agree up to its end.
void ChunksOf(const TraceRequest& request, std::uint64_t block_tokens, std::uint64_t chunk_tokens,
              std::vector<ChunkRef>* out);

}  // namespace iomimic::kvcache
