#include "kvcache/models.h"

#include <algorithm>

#include "iomimic/npy.h"

namespace iomimic::kvcache {

std::uint64_t ModelSpec::bytes_per_token() const {
  constexpr std::uint64_t kFloat16 = 2;
  if (mla) return std::uint64_t{num_layers} * (kv_lora_rank + qk_rope_head_dim) * kFloat16;
  return std::uint64_t{num_layers} * kv_heads * head_dim() * 2 * kFloat16;
}

const std::vector<ModelSpec>& Models() {
  // key, name, layers, hidden, heads, kv_heads, head_dim override, MLA, rank, rope
  static const std::vector<ModelSpec> models = {
      {"tiny-1b", "Tiny 1B", 12, 1024, 8, 4, 0, false, 0, 0},
      {"mistral-7b", "Mistral 7B", 32, 4096, 32, 8, 0, false, 0, 0},
      {"llama2-7b", "Llama 2 7B", 32, 4096, 32, 32, 0, false, 0, 0},
      {"llama3.1-8b", "Llama 3.1 8B", 32, 4096, 32, 8, 0, false, 0, 0},
      {"llama3.1-70b-instruct", "Llama 3.1 70B Instruct", 80, 8192, 64, 8, 0, false, 0, 0},
      {"deepseek-v3", "DeepSeek V3", 61, 7168, 128, 128, 0, true, 512, 64},
      {"qwen3-32b", "Qwen3 32B", 64, 5120, 64, 8, 128, false, 0, 0},
      {"gpt-oss-120b", "GPT OSS 120B (MoE)", 36, 2880, 64, 8, 64, false, 0, 0},
      {"gpt-oss-20b", "GPT OSS 20B (MoE)", 24, 2880, 64, 8, 64, false, 0, 0},
  };
  return models;
}

Result<const ModelSpec*> FindModel(std::string_view key) {
  std::string known;
  for (const ModelSpec& m : Models()) {
    if (m.key == key) return &m;
    known += (known.empty() ? "" : ", ") + std::string(m.key);
  }
  return Status::InvalidArgument("kv_cache.model: unknown model '" + std::string(key) +
                                 "'; known: " + known);
}

std::uint64_t EntryBytes(const ModelSpec& model, std::uint64_t tokens,
                         std::uint64_t tensor_parallel) {
  const std::uint64_t bytes = model.bytes_per_token() * tokens;
  if (tensor_parallel <= 1) return bytes;
  return bytes / 2 / tensor_parallel * 2;  // whole float16 elements, as the reference's ravel
}

std::size_t EntryShapeInto(const ModelSpec& model, std::uint64_t tokens,
                           std::uint64_t tensor_parallel, std::array<std::uint64_t, 5>* dims) {
  std::array<std::uint64_t, 5>& d = *dims;
  if (tensor_parallel > 1) {
    d[0] = EntryBytes(model, tokens, tensor_parallel) / 2;
    return 1;
  }
  if (model.mla) {
    d = {model.num_layers, tokens, model.kv_lora_rank + model.qk_rope_head_dim, 0, 0};
    return 3;
  }
  d = {model.num_layers, 2, tokens, model.kv_heads, model.head_dim()};
  return 5;
}

std::vector<std::uint64_t> EntryShape(const ModelSpec& model, std::uint64_t tokens,
                                      std::uint64_t tensor_parallel) {
  std::array<std::uint64_t, 5> dims{};
  const std::size_t n = EntryShapeInto(model, tokens, tensor_parallel, &dims);
  return {dims.begin(), dims.begin() + static_cast<std::ptrdiff_t>(n)};
}

std::size_t WriteNpyHeader(std::span<const std::uint64_t> shape, char* out) {
  // numpy's own header (iomimic/npy.h); five dimensions fit kNpyHeaderMax.
  Result<std::size_t> size =
      numpy::WriteNpyHeader("<f2", shape.first(std::min<std::size_t>(shape.size(), 5)),
                            /*fortran_order=*/false, std::span<char>(out, kNpyHeaderMax));
  return size.ok() ? *size : 0;
}

std::string NpyHeader(const std::vector<std::uint64_t>& shape) {
  char buffer[kNpyHeaderMax];
  return std::string(buffer, WriteNpyHeader(shape, buffer));
}

}  // namespace iomimic::kvcache
