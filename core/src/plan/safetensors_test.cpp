#include "plan/safetensors.h"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "plan/checkpoint_plan.h"

namespace iomimic::plan {
namespace {

config::ModelConfig Llama(std::int64_t layers) {
  config::ModelConfig m;
  m.type = "transformer";
  m.num_layers = layers;
  m.model_datatype = "bf16";
  m.vocab_size = 1000;
  m.hidden_size = 256;
  m.ffn_hidden_size = 768;
  m.num_attention_heads = 8;
  m.num_kv_heads = 2;
  return m;
}

std::uint64_t Elements(const Tensor& t) {
  std::uint64_t n = 1;
  for (std::uint64_t d : t.shape) n *= d;
  return n;
}

TEST_CASE("safetensors: a Llama's tensors add up to DLIO's parameter count") {
  for (std::int64_t layers : {1, 3, 80}) {
    const config::ModelConfig m = Llama(layers);
    Result<std::vector<Tensor>> tensors = LlamaTensors(m);
    REQUIRE(tensors.ok());
    CHECK(tensors->size() == static_cast<std::size_t>(3 + 9 * layers));
    std::uint64_t elements = 0;
    for (const Tensor& t : *tensors) {
      elements += Elements(t);
      CHECK(t.bytes == 2 * Elements(t));
    }
    CHECK(elements == plan::TransformerParameters(m));
  }
  CHECK((*LlamaTensors(Llama(1)))[2].name == "model.layers.0.self_attn.k_proj.weight");
  CHECK((*LlamaTensors(Llama(1)))[2].shape == std::vector<std::uint64_t>{64, 256});
  config::ModelConfig plain = Llama(2);
  plain.type = "";
  Result<std::vector<Tensor>> refused = LlamaTensors(plain);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find("model.type") != std::string::npos);
}

TEST_CASE("safetensors: shards hold at most the limit, in module order, headers aligned") {
  const std::vector<Tensor> tensors = *LlamaTensors(Llama(4));
  const std::uint64_t limit = 1200000;
  const std::vector<Shard> shards = PlanShards(tensors, "BF16", 2, limit);
  REQUIRE(shards.size() > 2);
  std::set<std::string> names;
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < shards.size(); ++i) {
    const Shard& s = shards[i];
    CHECK(s.name == "model-0000" + std::to_string(i + 1) + "-of-0000" +
                        std::to_string(shards.size()) + ".safetensors");
    CHECK((s.data_offset() % 8) == 0);
    // A tensor larger than the limit alone may exceed it.
    CHECK((s.data_bytes <= limit || s.tensors.size() == 1));
    std::uint64_t at = 0;
    for (const StoredTensor& t : s.tensors) {
      CHECK(t.begin == at);
      at = t.end;
      names.insert(t.tensor.name);
    }
    CHECK(at == s.data_bytes);
    // The header parses back to the same layout.
    std::string json = s.header;
    Result<std::vector<StoredTensor>> parsed = ParseHeader(json, s.file_bytes(), s.name);
    REQUIRE_MESSAGE(parsed.ok(), parsed.status().ToString());
    REQUIRE(parsed->size() == s.tensors.size());
    for (std::size_t k = 0; k < parsed->size(); ++k) {
      CHECK((*parsed)[k].tensor.name == s.tensors[k].tensor.name);
      CHECK((*parsed)[k].tensor.shape == s.tensors[k].tensor.shape);
    }
    total += s.data_bytes;
  }
  CHECK(names.size() == tensors.size());
  // The embedding comes first (the first shard), lm_head last.
  CHECK(shards.front().tensors.front().tensor.name == "model.embed_tokens.weight");
  CHECK(shards.back().tensors.front().tensor.name == "lm_head.weight");
  const nlohmann::json index = nlohmann::json::parse(IndexJson(shards));
  CHECK(index["metadata"]["total_size"] == total);
  CHECK(index["weight_map"].size() == tensors.size());
  CHECK(index["weight_map"]["lm_head.weight"] == shards.back().name);
  // A model that fits is one model.safetensors.
  CHECK(PlanShards(tensors, "BF16", 2, 1ULL << 40).front().name == "model.safetensors");
}

TEST_CASE("safetensors: a header that does not add up names the file and the offset") {
  const std::string path = "m.safetensors";
  const std::string good =
      R"({"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},"b":{"dtype":"F16","shape":[1],"data_offsets":[4,6]}})";
  CHECK(ParseHeader(good, 8 + good.size() + 6, path).ok());
  auto error = [&](const std::string& json, std::uint64_t size) {
    Result<std::vector<StoredTensor>> r = ParseHeader(json, size, path);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::kCorruption);
    CHECK(r.status().message().find(path + ": offset ") == 0);
    return r.status().message();
  };
  // The data runs past the file's end.
  CHECK(error(good, 8 + good.size() + 5).find("file of") != std::string::npos);
  CHECK(error("[1,2]", 100).find("not a JSON object") != std::string::npos);
  CHECK(error("{\"a\":{\"dtype\":\"F16\"}}", 100).find("'a'") != std::string::npos);
  const std::string gap =
      R"({"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},"b":{"dtype":"F16","shape":[1],"data_offsets":[6,8]}})";
  CHECK(error(gap, 8 + gap.size() + 8).find("'b'") != std::string::npos);

  unsigned char first8[8] = {0xff, 0xff, 0, 0, 0, 0, 0, 0};
  Result<std::uint64_t> n = HeaderLength(first8, 1000, path);
  REQUIRE_FALSE(n.ok());
  CHECK(n.status().message().find("m.safetensors: offset 0: ") == 0);
  CHECK(n.status().message().find("past the file's end") != std::string::npos);
  CHECK(*HeaderLength(first8, 8 + 0xffff, path) == 0xffff);
}

}  // namespace
}  // namespace iomimic::plan
