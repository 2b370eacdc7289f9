#include "kvcache/models.h"

#include <doctest/doctest.h>

#include "config/config.h"

namespace iomimic::kvcache {

TEST_CASE("kvcache models: bytes per token are the reference table's") {
  auto bpt = [](const char* key) { return (*FindModel(key))->bytes_per_token(); };
  CHECK(bpt("tiny-1b") == 12 * 4 * 128 * 2 * 2);
  CHECK(bpt("llama3.1-8b") == 131072);
  CHECK(bpt("llama2-7b") == 32 * 32 * 128 * 4);
  CHECK(bpt("llama3.1-70b-instruct") == 327680);
  CHECK(bpt("deepseek-v3") == 61 * (512 + 64) * 2);  // MLA: no K and V pair
  CHECK(bpt("qwen3-32b") == 64 * 8 * 128 * 4);       // head_dim 128, not 5120 / 64
  CHECK(bpt("gpt-oss-120b") == 36 * 8 * 64 * 4);
  CHECK(bpt("gpt-oss-20b") == 24 * 8 * 64 * 4);
  CHECK(bpt("mistral-7b") == 131072);
}

TEST_CASE("kvcache models: unknown model is one error listing the known ones") {
  Result<const ModelSpec*> m = FindModel("llama9");
  REQUIRE_FALSE(m.ok());
  CHECK(m.status().message().find("unknown model 'llama9'") != std::string::npos);
  CHECK(m.status().message().find("llama3.1-70b-instruct") != std::string::npos);
}

TEST_CASE("kvcache models: every model of the table is a manifest choice and back") {
  for (const ModelSpec& m : Models()) {
    const std::string yaml =
        "workflow:\n  kv_cache: True\nkv_cache:\n  model: " + std::string(m.key) + "\n";
    Result<config::LoadedManifest> loaded = config::LoadManifestFromString(yaml, "t.yaml");
    REQUIRE_MESSAGE(loaded.ok(), m.key);
    CHECK(loaded->config.kv_cache.model == m.key);
    CHECK_FALSE(loaded->config.workflow.train);
  }
  Result<config::LoadedManifest> bad =
      config::LoadManifestFromString("kv_cache:\n  model: llama9\n", "t.yaml");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("tiny-1b") != std::string::npos);
  Result<config::LoadedManifest> both =
      config::LoadManifestFromString("workflow:\n  train: True\n  kv_cache: True\n", "t.yaml");
  REQUIRE_FALSE(both.ok());
  CHECK(both.status().message().find("t.yaml:2") != std::string::npos);
}

TEST_CASE("kvcache models: entry sizes, shapes and the .npy header") {
  const ModelSpec& m = **FindModel("llama3.1-8b");
  CHECK(EntryBytes(m, 1000, 1) == 131072000);
  CHECK(EntryShape(m, 1000, 1) == std::vector<std::uint64_t>{32, 2, 1000, 8, 128});
  CHECK(EntryBytes(m, 1000, 8) == 131072000 / 8);
  CHECK(EntryShape(m, 1000, 8) == std::vector<std::uint64_t>{131072000 / 16});
  const ModelSpec& mla = **FindModel("deepseek-v3");
  CHECK(EntryShape(mla, 10, 1) == std::vector<std::uint64_t>{61, 10, 576});
  const std::string h = NpyHeader({32, 2, 1000, 8, 128});
  CHECK(h.size() == kNpyHeaderBytes);
  CHECK(h.substr(0, 6) == "\x93NUMPY");
  CHECK(h.back() == '\n');
  CHECK(h.find("'shape': (32, 2, 1000, 8, 128), }") != std::string::npos);
  CHECK(NpyHeader({7}).find("(7,)") != std::string::npos);
}

}  // namespace iomimic::kvcache
