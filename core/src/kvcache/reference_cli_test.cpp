#include "kvcache/reference_cli.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
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
        "++workload.output.folder=/results/kv_cache/run", "++workload.kv_cache.multi_turn=False",
        "++workload.kv_cache.prefix_caching=True", "++workload.kv_cache.seed=42",
        "++workload.kv_cache.max_concurrent_allocs=0"}) {
    CAPTURE(want);
    CHECK(Has(*c, want));
  }
  CHECK(c->output == "/results/kv_cache/run/kvcache_results_20261127_110000.json");
  CHECK(c->seed == 42);
  REQUIRE(c->notes.size() == 1);  // --performance-profile
  CHECK(c->notes[0].starts_with("--performance-profile throughput"));
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
  CHECK(c->output.empty());
  REQUIRE(c->notes.size() == 1);
  CHECK(c->notes[0].starts_with("no --seed"));
  CHECK(ParseReferenceCommandLine({"--help"})->help);
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

TEST_CASE("reference cli: the results file holds the kv_cache object and mlpstorage's figures") {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("iomimic_refcli_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream((dir / "summary.json").string())
      << R"({"kv_cache": {"requests": 40, "reference": {"total_requests": 40, "total_tokens": 5000, "elapsed_time": 2.0,
            "requests_per_second": 20.0, "end_to_end_latency_ms": {"mean": 12.5, "p99": 40.0},
            "cache_stats": {"cache_hit_rate": 0.75, "total_read_gb": 1.5, "total_write_gb": 0.5}}}})";
  const std::string out = (dir / "kvcache_results.json").string();
  REQUIRE(WriteReferenceResults((dir / "summary.json").string(), out, 7).ok());
  std::ifstream in(out);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const char* want :
       {"\"requests_completed\": 40", "\"total_requests\": 40", "\"throughput_req_per_sec\": 20.0",
        "\"avg_latency_ms\": 12.5", "\"p99_latency_ms\": 40.0",
        "\"storage_throughput_mbps\": 1024.0", "\"cache_hit_rate\": 0.75", "\"seed\": 7",
        "\"summary\": {", "\"iomimic_kv_cache\": {"}) {
    CAPTURE(want);
    CHECK(text.find(want) != std::string::npos);
  }
  std::ofstream((dir / "bad.json").string()) << "{\"metric\": {}}";
  CHECK(WriteReferenceResults((dir / "bad.json").string(), out, 7).code() ==
        StatusCode::kCorruption);
  CHECK(WriteReferenceResults((dir / "missing.json").string(), out, 7).code() ==
        StatusCode::kNotFound);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace iomimic::kvcache
