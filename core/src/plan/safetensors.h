// The safetensors files of a model (or a checkpoint), as Hugging Face's save_pretrained
// shards them (docs/model-loading.md, "The files"): pure layout, no I/O.
//
// A safetensors file is an 8-byte little-endian header length N, N bytes of
// JSON (padded with spaces so that the data starts 8-byte aligned), then
// the tensors' raw bytes. The JSON maps each tensor's name to its dtype
// ("BF16", "F16", "F32"...), shape and data_offsets [begin, end) relative to
// the end of the header, and may hold "__metadata__" (string to string).
// A model larger than max_shard_bytes is split in file order into
// model-0000i-of-0000n.safetensors (a tensor that alone exceeds the limit
// gets a shard of its own), with model.safetensors.index.json mapping each
// tensor to its shard; a model that fits is one model.safetensors. Within a
// file the tensors are stored in name order, as the safetensors library
// writes a file of one dtype.

#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "iomimic/status.h"

namespace iomimic::plan {

struct Tensor {
  std::string name;  // e.g. "model.layers.0.self_attn.q_proj.weight"
  std::vector<std::uint64_t> shape;
  std::uint64_t bytes = 0;
};

// A tensor's place in its file: [begin, end) from the end of the header.
struct StoredTensor {
  Tensor tensor;
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
};

struct Shard {
  std::string name;                   // file name in the model's folder
  std::string header;                 // the JSON, padded; the file starts with its 8-byte length
  std::vector<StoredTensor> tensors;  // in file order
  std::uint64_t data_bytes = 0;
  // Where the tensors' bytes start, and the file's size.
  std::uint64_t data_offset() const { return 8 + header.size(); }
  std::uint64_t file_bytes() const { return data_offset() + data_bytes; }
};

// The tensors of a Llama-shaped decoder (model.type transformer: layers,
// hidden, FFN, heads, KV heads, vocabulary of model.transformer.*) in module
// order: embed_tokens, per layer q/k/v/o projections, gate/up/down, the two
// norms, then the final norm and lm_head. Their elements add up to DLIO's
// transformer parameter count (plan::TransformerParameters).
// InvalidArgument naming the keys when the model is not a layered
// transformer.
Result<std::vector<Tensor>> LlamaTensors(const config::ModelConfig& model);

// safetensors' dtype name of a model.model_datatype ("bf16" -> "BF16").
std::string_view DtypeName(const std::string& model_datatype);

// `tensors` (shapes only; bytes from `dtype_bytes`) split into shards of at
// most `max_shard_bytes` of data each, named and headed as above.
std::vector<Shard> PlanShards(const std::vector<Tensor>& tensors, std::string_view dtype,
                              std::uint64_t dtype_bytes, std::uint64_t max_shard_bytes);

// The bytes `shard` starts with: the header's 8-byte little-endian length,
// then the header.
std::string FileHead(const Shard& shard);

// model.safetensors.index.json of sharded `shards`: metadata.total_size and
// the weight_map, tensor name -> file name.
std::string IndexJson(const std::vector<Shard>& shards);

// Parses a file's header (`json`, the N bytes after the length) of a file
// of `file_bytes` bytes: its tensors in data order. Corruption naming
// `path` and the offset of what is wrong: JSON that does not parse, a
// tensor without dtype/shape/data_offsets, offsets that overlap, leave a
// gap, or end past the file's end.
Result<std::vector<StoredTensor>> ParseHeader(std::string_view json, std::uint64_t file_bytes,
                                              const std::string& path);

// The header length a file starts with, checked against the file's size:
// Corruption naming `path` when the 8 bytes are missing or the header would
// end past the file's end (offset 0).
Result<std::uint64_t> HeaderLength(const unsigned char (&first8)[8], std::uint64_t file_bytes,
                                   const std::string& path);

}  // namespace iomimic::plan
