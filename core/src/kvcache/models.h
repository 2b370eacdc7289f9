// The KV-cache workflow's model table and entry sizing (docs/kvcache.md).
//
// The figures are MLPerf Storage v3.0 kv-cache benchmark's model table: a
// token's KV cache is layers x kv_heads x head_dim x 2 (K and V) x 2 bytes
// (float16) for multi-head and grouped-query attention, and layers x
// (kv_lora_rank + qk_rope_head_dim) x 2 bytes for multi-head latent
// attention (MLA, deepseek-v3). An entry (one request's cache) of n tokens
// holds n x bytes_per_token / tensor_parallel bytes, stored as a .npy array of
// float16 whose shape is the reference's, its element count divided by the
// tensor-parallel degree when that is above 1 (then a flat array).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "iomimic/status.h"

namespace iomimic::kvcache {

struct ModelSpec {
  std::string_view key;   // manifest name, e.g. "llama3.1-8b"
  std::string_view name;  // the reference's display name
  std::uint32_t num_layers = 0;
  std::uint32_t hidden_dim = 0;
  std::uint32_t num_heads = 0;
  std::uint32_t kv_heads = 0;
  std::uint32_t head_dim_override = 0;  // 0 = hidden_dim / num_heads
  bool mla = false;
  std::uint32_t kv_lora_rank = 0;      // MLA
  std::uint32_t qk_rope_head_dim = 0;  // MLA

  std::uint32_t head_dim() const {
    return head_dim_override != 0 ? head_dim_override : hidden_dim / num_heads;
  }
  // Bytes of KV cache per token (float16).
  std::uint64_t bytes_per_token() const;
};

// Every model of the table, in the reference's order.
const std::vector<ModelSpec>& Models();

// The model named `key`, or InvalidArgument "kv_cache.model: unknown model
// '<key>'; known: <names>".
Result<const ModelSpec*> FindModel(std::string_view key);

// Bytes of an entry of `tokens` tokens split over `tensor_parallel` ranks
// (the reference's integer division).
std::uint64_t EntryBytes(const ModelSpec& model, std::uint64_t tokens,
                         std::uint64_t tensor_parallel);

// The .npy shape of such an entry: (layers, 2, tokens, kv_heads, head_dim),
// MLA (layers, tokens, kv_lora_rank + qk_rope_head_dim); with
// tensor_parallel > 1 the flat (elements / tensor_parallel,).
std::vector<std::uint64_t> EntryShape(const ModelSpec& model, std::uint64_t tokens,
                                      std::uint64_t tensor_parallel);

// The .npy header of a float16 C-order array of `shape`: magic, version 1.0,
// the dictionary padded with spaces and a newline to kNpyHeaderBytes (the
// reference's arrays always fit; np.load opens it). Shapes whose dictionary
// does not fit get the next multiple of 64.
inline constexpr std::size_t kNpyHeaderBytes = 128;
std::string NpyHeader(const std::vector<std::uint64_t>& shape);

// The same header written into `out` (kNpyHeaderMax bytes at least), with
// no allocation; returns its length. Shapes have at most 5 dimensions.
inline constexpr std::size_t kNpyHeaderMax = 256;
std::size_t WriteNpyHeader(std::span<const std::uint64_t> shape, char* out);

// EntryShape's dimensions into `dims`, with no allocation; returns how many.
std::size_t EntryShapeInto(const ModelSpec& model, std::uint64_t tokens,
                           std::uint64_t tensor_parallel, std::array<std::uint64_t, 5>* dims);

}  // namespace iomimic::kvcache
