#include "plan/safetensors.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "plan/checkpoint_plan.h"

namespace iomimic::plan {
namespace {

using json = nlohmann::ordered_json;

// "model-00003-of-00030.safetensors"
std::string ShardName(std::size_t index, std::size_t count) {
  char name[64];
  std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", index + 1, count);
  return name;
}

// The header of `tensors` (laid out in this order), padded with spaces so
// that 8 + its length is a multiple of 8.
std::string HeaderOf(const std::vector<StoredTensor>& tensors, std::string_view dtype) {
  json header;
  header["__metadata__"] = {{"format", "pt"}};
  for (const StoredTensor& t : tensors) {
    header[t.tensor.name] = {
        {"dtype", dtype}, {"shape", t.tensor.shape}, {"data_offsets", {t.begin, t.end}}};
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  return text;
}

Status Corrupt(const std::string& path, std::uint64_t offset, const std::string& what) {
  return Status::Corruption(path + ": offset " + std::to_string(offset) +
                            ": safetensors header: " + what);
}

}  // namespace

Result<std::vector<Tensor>> LlamaTensors(const config::ModelConfig& m) {
  if (m.type != "transformer" || m.num_layers <= 0) {
    return Status::InvalidArgument(
        "model loading sizes the model from model.type: transformer, model.num_layers > 0 and "
        "model.transformer.* (or lists existing files in model_load.files); this model has type '" +
        m.type + "' and " + std::to_string(m.num_layers) + " layers");
  }
  const std::uint64_t h = m.hidden_size, ffn = m.ffn_hidden_size, vocab = m.vocab_size;
  const std::uint64_t kv = h / std::max<std::uint64_t>(1, m.num_attention_heads) * m.num_kv_heads;
  const std::uint64_t bytes = DatatypeBytes(m.model_datatype);
  std::vector<Tensor> out;
  auto add = [&](std::string name, std::vector<std::uint64_t> shape) {
    std::uint64_t elements = 1;
    for (std::uint64_t d : shape) elements *= d;
    out.push_back({std::move(name), std::move(shape), elements * bytes});
  };
  add("model.embed_tokens.weight", {vocab, h});
  for (std::int64_t layer = 0; layer < m.num_layers; ++layer) {
    const std::string p = "model.layers." + std::to_string(layer) + ".";
    add(p + "self_attn.q_proj.weight", {h, h});
    add(p + "self_attn.k_proj.weight", {kv, h});
    add(p + "self_attn.v_proj.weight", {kv, h});
    add(p + "self_attn.o_proj.weight", {h, h});
    add(p + "mlp.gate_proj.weight", {ffn, h});
    add(p + "mlp.up_proj.weight", {ffn, h});
    add(p + "mlp.down_proj.weight", {h, ffn});
    add(p + "input_layernorm.weight", {h});
    add(p + "post_attention_layernorm.weight", {h});
  }
  add("model.norm.weight", {h});
  add("lm_head.weight", {vocab, h});
  return out;
}

std::string_view DtypeName(const std::string& model_datatype) {
  if (model_datatype == "bf16") return "BF16";
  if (model_datatype == "fp16") return "F16";
  if (model_datatype == "fp32") return "F32";
  if (model_datatype == "fp64") return "F64";
  if (model_datatype == "int8") return "I8";
  if (model_datatype == "uint8") return "U8";
  return "F16";
}

std::vector<Shard> PlanShards(const std::vector<Tensor>& tensors, std::string_view dtype,
                              std::uint64_t dtype_bytes, std::uint64_t max_shard_bytes) {
  // Hugging Face's split: tensors in module order, a new shard when the next
  // tensor would take this one past the limit.
  std::vector<std::vector<Tensor>> groups(1);
  std::uint64_t size = 0;
  for (Tensor t : tensors) {
    std::uint64_t elements = 1;
    for (std::uint64_t d : t.shape) elements *= d;
    t.bytes = elements * dtype_bytes;
    if (!groups.back().empty() && size + t.bytes > max_shard_bytes) {
      groups.emplace_back();
      size = 0;
    }
    size += t.bytes;
    groups.back().push_back(std::move(t));
  }
  std::vector<Shard> shards;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    std::vector<Tensor>& group = groups[i];
    std::sort(group.begin(), group.end(),
              [](const Tensor& a, const Tensor& b) { return a.name < b.name; });
    Shard shard;
    shard.name = groups.size() == 1 ? "model.safetensors" : ShardName(i, groups.size());
    for (Tensor& t : group) {
      const std::uint64_t begin = shard.data_bytes;
      shard.data_bytes += t.bytes;
      shard.tensors.push_back({std::move(t), begin, shard.data_bytes});
    }
    shard.header = HeaderOf(shard.tensors, dtype);
    shards.push_back(std::move(shard));
  }
  return shards;
}

std::string FileHead(const Shard& shard) {
  std::string head(8, '\0');
  std::uint64_t n = shard.header.size();
  for (std::size_t i = 0; i < 8; ++i, n >>= 8) head[i] = static_cast<char>(n & 0xff);
  return head + shard.header;
}

std::string IndexJson(const std::vector<Shard>& shards) {
  std::uint64_t total = 0;
  json map = json::object();
  for (const Shard& s : shards) {
    total += s.data_bytes;
    for (const StoredTensor& t : s.tensors) map[t.tensor.name] = s.name;
  }
  json index;
  index["metadata"] = {{"total_size", total}};
  index["weight_map"] = std::move(map);
  return index.dump(2) + "\n";
}

Result<std::uint64_t> HeaderLength(const unsigned char (&first8)[8], std::uint64_t file_bytes,
                                   const std::string& path) {
  if (file_bytes < 8) return Corrupt(path, 0, "the file is shorter than the 8-byte length");
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | first8[i];
  if (n > file_bytes - 8) {
    return Corrupt(path, 0,
                   "the header's length " + std::to_string(n) + " runs past the file's end (" +
                       std::to_string(file_bytes) + " bytes)");
  }
  return n;
}

Result<std::vector<StoredTensor>> ParseHeader(std::string_view text, std::uint64_t file_bytes,
                                              const std::string& path) {
  const json header = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object()) return Corrupt(path, 8, "not a JSON object");
  const std::uint64_t data_offset = 8 + text.size();
  std::vector<StoredTensor> out;
  for (const auto& [name, t] : header.items()) {
    if (name == "__metadata__") continue;
    const bool ok = t.is_object() && t.contains("dtype") && t["dtype"].is_string() &&
                    t.contains("shape") && t["shape"].is_array() && t.contains("data_offsets") &&
                    t["data_offsets"].is_array() && t["data_offsets"].size() == 2 &&
                    t["data_offsets"][0].is_number_unsigned() &&
                    t["data_offsets"][1].is_number_unsigned();
    if (!ok) return Corrupt(path, 8, "tensor '" + name + "' lacks dtype, shape or data_offsets");
    StoredTensor s;
    s.tensor.name = name;
    for (const json& d : t["shape"]) {
      if (!d.is_number_unsigned()) return Corrupt(path, 8, "tensor '" + name + "': bad shape");
      s.tensor.shape.push_back(d.get<std::uint64_t>());
    }
    s.begin = t["data_offsets"][0].get<std::uint64_t>();
    s.end = t["data_offsets"][1].get<std::uint64_t>();
    s.tensor.bytes = s.end - std::min(s.begin, s.end);
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(),
            [](const StoredTensor& a, const StoredTensor& b) { return a.begin < b.begin; });
  std::uint64_t at = 0;
  for (const StoredTensor& s : out) {
    if (s.begin != at || s.end < s.begin) {
      return Corrupt(path, data_offset + std::min(at, s.begin),
                     "tensor '" + s.tensor.name + "' has data_offsets [" + std::to_string(s.begin) +
                         ", " + std::to_string(s.end) + "], the data so far ends at " +
                         std::to_string(at));
    }
    at = s.end;
  }
  if (data_offset + at != file_bytes) {
    return Corrupt(path, std::min(file_bytes, data_offset + at),
                   "the tensors end at byte " + std::to_string(data_offset + at) +
                       " of a file of " + std::to_string(file_bytes) + " bytes");
  }
  return out;
}

}  // namespace iomimic::plan
