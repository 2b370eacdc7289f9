#include "kvcache/reference_cli.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <vector>

namespace iomimic::kvcache {
namespace {

bool Has(const ReferenceCommandLine& c, const std::string& arg) {
  return std::find(c.run_args.begin(), c.run_args.end(), arg) != c.run_args.end();
}

// The command line mlpstorage's benchmarks/kvcache.py (_build_kvcache_command)
// builds, after the interpreter and the script's path.
TEST_CASE("reference cli: mlpstorage's command line maps onto kv_cache keys") {
  const std::vector<std::string> args = {
      "--model",
      "llama3.1-8b",
      "--num-users",
      "200",
      "--duration",
      "300",
      "--gpu-mem-gb",
      "0.0",
      "--cpu-mem-gb",
      "0.0",
      "--generation-mode",
      "none",
      "--performance-profile",
      "throughput",
      "--cache-dir",
      "/mnt/nvme/kvcache_data",
      "--output",
      "/results/kv_cache/run/kvcache_results_20261127_110000.json",
      "--disable-multi-turn",
      "--seed",
      "42"};
  Result<ReferenceCommandLine> c = ParseReferenceCommandLine(args);
  REQUIRE(c.ok());
  CHECK(c->run_args.front() == "workload=kvcache_opt1_8b");
  for (const char* want :
       {"++workload.kv_cache.model=llama3.1-8b", "++workload.kv_cache.num_users=200",
        "++workload.kv_cache.duration=300", "++workload.kv_cache.gpu_mem_gb=0.0",
        "++workload.kv_cache.cpu_mem_gb=0.0", "++workload.kv_cache.generation_mode=none",
        "++workload.storage.storage_root=/mnt/nvme",
        "++workload.kv_cache.cache_folder=kvcache_data",
        "++workload.output.folder=/results/kv_cache/run/kvcache_results_20261127_110000.iomimic",
        "++workload.kv_cache.reference_results=/results/kv_cache/run/"
        "kvcache_results_20261127_110000.json",
        "++workload.kv_cache.performance_profile=throughput",
        "++workload.kv_cache.multi_turn=False", "++workload.kv_cache.prefix_caching=True",
        "++workload.kv_cache.seed=42", "++workload.kv_cache.max_concurrent_allocs=0"}) {
    CAPTURE(want);
    CHECK(Has(*c, want));
  }
  CHECK(c->output == "/results/kv_cache/run/kvcache_results_20261127_110000.json");
  CHECK(c->run_folder == "/results/kv_cache/run/kvcache_results_20261127_110000.iomimic");
  CHECK(c->seed == 42);
  CHECK(c->notes.empty());  // every flag of mlpstorage's changes the run
}

TEST_CASE("reference cli: flags left out take the reference's defaults") {
  Result<ReferenceCommandLine> c = ParseReferenceCommandLine({"--max-requests=40"});
  REQUIRE(c.ok());
  for (const char* want : {"++workload.kv_cache.gpu_mem_gb=16", "++workload.kv_cache.cpu_mem_gb=32",
                           "++workload.kv_cache.num_users=100", "++workload.kv_cache.duration=60",
                           "++workload.kv_cache.generation_mode=realistic",
                           "++workload.kv_cache.max_requests=40", "++workload.kv_cache.seed=42"}) {
    CAPTURE(want);
    CHECK(Has(*c, want));
  }
  // The reference's default results file, in the working directory; the
  // run's own files beside it.
  CAPTURE(c->output);
  CHECK(std::regex_match(c->output, std::regex(R"(benchmark_results_\d{8}_\d{6}\.json)")));
  CHECK(c->run_folder == c->output.substr(0, c->output.size() - 5) + ".iomimic");
  CHECK(Has(*c, "++workload.kv_cache.reference_results=" +
                    (std::filesystem::current_path() / c->output).string()));
  REQUIRE(c->notes.size() == 1);
  CHECK(c->notes[0].starts_with("no --seed"));
  CHECK(ParseReferenceCommandLine({"--help"})->help);
}

// Several results files in one folder, as mlpstorage writes one per run: each
// run keeps its own files in a folder of its own, a taken one gets -1, -2...
TEST_CASE("reference cli: results files sharing a folder get run folders of their own") {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("iomimic_refcli_out_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "first.iomimic");
  Result<ReferenceCommandLine> a =
      ParseReferenceCommandLine({"--output", (dir / "first.json").string()});
  Result<ReferenceCommandLine> b =
      ParseReferenceCommandLine({"--output", (dir / "second.json").string()});
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a->run_folder == (dir / "first.iomimic-1").string());
  CHECK(b->run_folder == (dir / "second.iomimic").string());
  CHECK(Has(*a, "++workload.output.folder=" + (dir / "first.iomimic-1").string()));
  std::filesystem::remove_all(dir);
}

// The reference's --io-trace-log is its trace mode: the simulation runs and
// no tier I/O is performed (docs/kvcache-reference.md, "The reference's I/O trace").
TEST_CASE("reference cli: --io-trace-log is the reference's trace mode, without I/O") {
  Result<ReferenceCommandLine> c =
      ParseReferenceCommandLine({"--io-trace-log", "/tmp/traces/../kv_trace.csv.zst"});
  REQUIRE(c.ok());
  CHECK(Has(*c, "++workload.kv_cache.io_trace_log=/tmp/kv_trace.csv.zst"));
  CHECK(Has(*c, "++workload.kv_cache.trace_only=True"));
  // A relative file is the working directory's, as for the reference.
  c = ParseReferenceCommandLine({"--io-trace-log=t.csv"});
  REQUIRE(c.ok());
  CHECK(Has(*c, "++workload.kv_cache.io_trace_log=" +
                    (std::filesystem::current_path() / "t.csv").string()));
  // Without the flag, the operations are performed.
  c = ParseReferenceCommandLine({"--max-requests=4"});
  REQUIRE(c.ok());
  for (const std::string& arg : c->run_args) CHECK(arg.find("trace_only") == std::string::npos);
}

TEST_CASE("reference cli: bad command lines are one clear error") {
  struct Case {
    std::vector<std::string> args;
    StatusCode code;
    std::string want;
  } cases[] = {
      {{"--num-users", "many"}, StatusCode::kInvalidArgument, "--num-users 'many'"},
      // The reference's own checks and messages (its validate_args, argparse's choices).
      {{"--num-users", "-4"}, StatusCode::kInvalidArgument, "--num-users must be positive, got -4"},
      {{"--num-users=0"}, StatusCode::kInvalidArgument, "--num-users must be positive, got 0"},
      {{"--num-users", "100001"},
       StatusCode::kInvalidArgument,
       "--num-users exceeds limit (100000), got 100001"},
      {{"--duration", "0"}, StatusCode::kInvalidArgument, "--duration must be positive, got 0"},
      {{"--gpu-mem-gb", "-1"},
       StatusCode::kInvalidArgument,
       "--gpu-mem-gb cannot be negative, got -1"},
      {{"--max-requests", "-2"},
       StatusCode::kInvalidArgument,
       "--max-requests cannot be negative, got -2"},
      {{"--num-gpus", "0"}, StatusCode::kInvalidArgument, "--num-gpus must be >= 1, got 0"},
      {{"--tensor-parallel", "2"},
       StatusCode::kInvalidArgument,
       "--tensor-parallel (2) cannot exceed --num-gpus (1)"},
      {{"--generation-mode", "slow"},
       StatusCode::kInvalidArgument,
       "argument --generation-mode: invalid choice: 'slow' (choose from 'none', 'fast', "
       "'realistic')"},
      {{"--seed", "-1"}, StatusCode::kInvalidArgument, "--seed must be between 0 and 2**32 - 1"},
      {{"--cache-dir", "/etc/kv"},
       StatusCode::kInvalidArgument,
       "--cache-dir cannot be a system directory: /etc/kv"},
      {{"--config", "/nonexistent/config.yaml"},
       StatusCode::kNotFound,
       "--config /nonexistent/config.yaml: config file not found"},
      {{"--gpu-mem-gb", "x1"}, StatusCode::kInvalidArgument, "--gpu-mem-gb 'x1'"},
      {{"--model"}, StatusCode::kInvalidArgument, "--model needs a value"},
      {{"--users", "4"}, StatusCode::kInvalidArgument, "unrecognized argument '--users'"},
      {{"llama"}, StatusCode::kInvalidArgument, "unrecognized argument 'llama'"},
      {{"--disable-multi-turn=1"}, StatusCode::kInvalidArgument, "takes no value"},
      {{"--enable-rag"}, StatusCode::kNotSupported, "--enable-rag is not supported"},
      {{"--dataset-path", "sharegpt.json"}, StatusCode::kNotSupported, "--dataset-path"},
      {{"--cache-dir", "/"}, StatusCode::kInvalidArgument, "--cache-dir '/'"},
      {{"--io-trace-log="}, StatusCode::kInvalidArgument, "--io-trace-log names no file"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.want);
    Result<ReferenceCommandLine> r = ParseReferenceCommandLine(c.args);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == c.code);
    CHECK(r.status().message().find(c.want) != std::string::npos);
    CHECK(r.status().message().starts_with("kv-cache.py: "));
  }
}

// A run's errors name what the user can change: the drop-in's flags (typed
// or their defaults) and --config entries, never the overrides it made.
TEST_CASE("reference cli: the run's errors name the drop-in's flags") {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("iomimic_refcli_err_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string yaml = (dir / "config.yaml").string();
  std::ofstream(yaml) << "eviction:\n  target_usage_ratio: 2000\n";
  Result<ReferenceCommandLine> c =
      ParseReferenceCommandLine({"--tensor-parallel", "1", "--config", yaml});
  REQUIRE(c.ok());
  struct Case {
    Status given;
    std::string want;
  } cases[] = {
      {Status::InvalidArgument("override '++workload.kv_cache.num_gpus=1': kv_cache.num_gpus: 1 "
                               "is less than kv_cache.tensor_parallel (2); each ..."),
       "kv-cache.py: --num-gpus 1: 1 is less than --tensor-parallel (2); each ..."},
      {Status::InvalidArgument("override '++workload.kv_cache.gpu_mem_gb=2000': "
                               "kv_cache.gpu_mem_gb: expected a number from 0 to 1024, got "
                               "'2000'"),
       "kv-cache.py: --gpu-mem-gb 2000: expected a number from 0 to 1024, got '2000'"},
      {Status::InvalidArgument("kv_cache.cpu_mem_gb: the cpu tier (107374 bytes) is smaller "
                               "than the smallest entry (15597568 bytes); raise it or set it to 0"),
       "kv-cache.py: --cpu-mem-gb: the cpu tier (107374 bytes) is smaller than the smallest "
       "entry (15597568 bytes); raise it or set it to 0"},
      {Status::InvalidArgument("override '++workload.kv_cache.eviction_target_ratio=2000': "
                               "kv_cache.eviction_target_ratio: expected a number from 0 to 1000, "
                               "got '2000'"),
       "kv-cache.py: --config " + yaml +
           ": eviction.target_usage_ratio 2000: expected a number from 0 to 1000, got '2000'"},
      {Status::AlreadyExists("output folder x already holds the results of another run; choose "
                             "another with ++workload.output.folder=<dir> or remove it"),
       "kv-cache.py: output folder x already holds the results of another run; choose another "
       "with another --output or remove it"},
  };
  for (const Case& k : cases) {
    const Status s = ReferenceError(*c, k.given);
    CHECK(s.code() == k.given.code());
    CHECK(s.message() == k.want);
  }
  std::filesystem::remove_all(dir);
}

// --config: the reference's config.yaml changes the run as it changes the
// reference's (docs/kvcache-reference.md, "mlpstorage and kv-cache.py").
TEST_CASE("reference cli: --config sets what the reference's config.yaml changes") {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("iomimic_refcli_cfg_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string yaml = (dir / "config.yaml").string();
  std::ofstream(yaml) << R"(user_templates:
  chatbot:
    context_range: [100, 200]
    generation_range: [5, 10]
    think_time_range: [0.01, 0.02]
generation_timing:
  realistic: 0.5
qos_profiles:
  interactive:
    target_latency_p95_ms: 7
qos_distribution:
  interactive_probability: 0.3
  responsive_threshold: 0.6
eviction:
  max_recursion_depth: 3
  target_usage_ratio: 0.5
  large_entry_limit_ratio: 0.9
  max_evictions_hard_cap: 20
  max_evictions_min: 10
rag:
  top_k_chunks: 3
prefix_cache:
  system_prompt_hit_probability: 0.4
conversation:
  max_turns_per_conv: 7
decode:
  batch_size: 16
model_configs:
  llama3.1-8b: {name: "Llama 3.1 8B", num_layers: 32, hidden_dim: 4096, num_heads: 32, kv_heads: 8, dtype: "float16"}
  my-model: {num_layers: 2}
)";
  Result<ReferenceCommandLine> c = ParseReferenceCommandLine({"--config", yaml, "--seed", "1"});
  REQUIRE(c.ok());
  for (const char* want :
       {"users.chatbot.context_min=100", "users.chatbot.context_max=200",
        "users.chatbot.generation_min=5", "users.chatbot.generation_max=10",
        "users.chatbot.think_time_min=0.01", "users.chatbot.think_time_max=0.02",
        "qos_interactive_probability=0.3", "qos_responsive_threshold=0.6", "eviction_max_depth=3",
        "eviction_target_ratio=0.5", "eviction_large_entry_ratio=0.9", "eviction_max_per_call=20",
        "eviction_min_per_call=10", "system_prompt_probability=0.4", "max_turns=7",
        "decode_batch_size=16"}) {
    CAPTURE(want);
    CHECK(Has(*c, std::string("++workload.kv_cache.") + want));
  }
  // What changes nothing says so: in the reference too, or only in iomimic.
  REQUIRE(c->notes.size() == 2);
  CHECK(c->notes[0].find("generation_timing, qos_profiles: accepted, changes nothing, as in the "
                         "reference") != std::string::npos);
  CHECK(c->notes[1].find("rag: accepted, changes nothing in iomimic") != std::string::npos);
  // Bad files, as the reference refuses them; a model that is not iomimic's.
  struct Case {
    std::string text;
    StatusCode code;
    std::string want;
  } cases[] = {
      {"eviction:\n  target_ratio: 0.5\n", StatusCode::kInvalidArgument,
       "unknown configuration key 'eviction.target_ratio'"},
      {"decode:\n  batch_size: 1.5\n", StatusCode::kInvalidArgument,
       "decode.batch_size must be a whole number, got '1.5'"},
      {"user_templates:\n  coding:\n    context_range: 4096\n", StatusCode::kInvalidArgument,
       "user_templates.coding.context_range must be a list of two numbers"},
      {"eviction: [1, 2\n", StatusCode::kInvalidArgument, "--config " + yaml + ": "},
      {"model_configs:\n  llama3.1-8b: {kv_heads: 32}\n", StatusCode::kNotSupported,
       "model_configs.llama3.1-8b (524288 bytes per token) is not iomimic's llama3.1-8b "
       "(131072 bytes per token)"},
  };
  for (const Case& k : cases) {
    CAPTURE(k.text);
    std::ofstream(yaml) << k.text;
    Result<ReferenceCommandLine> r = ParseReferenceCommandLine({"--config", yaml});
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == k.code);
    CHECK(r.status().message().starts_with("kv-cache.py: --config " + yaml + ": "));
    CHECK(r.status().message().find(k.want) != std::string::npos);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace iomimic::kvcache
