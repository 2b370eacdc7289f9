#include "config/config.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <numbers>
#include <string>
#include <vector>

#include "iomimic/testing/posix_test_storage.h"

namespace iomimic::config {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// The workload files shipped in the repository (workloads/: DLIO's
// configs/workload/*.yaml and quickstart.yaml). Empty when not there.
fs::path WorkloadsDir() {
  const fs::path dir = IOMIMIC_WORKLOADS_SOURCE_DIR;
  std::error_code error;
  return fs::is_directory(dir, error) ? dir : fs::path();
}

std::vector<fs::path> ShippedWorkloads() {
  std::vector<fs::path> files;
  const fs::path dir = WorkloadsDir();
  if (dir.empty()) return files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == ".yaml") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// The schemes the bundled storage plugins serve, as plugin::Registry reads
// them from their descriptors (docs/plugins.md, "URL schemes").
PluginVocabulary BundledPlugins() {
  PluginVocabulary plugins;
  plugins.schemes = {{"file", "posix", false}, {"direct", "odirect", false}, {"s3", "s3", true}};
  return plugins;
}

LoadedManifest MustLoadFile(const fs::path& path, std::vector<std::string> overrides = {}) {
  ManifestSource source;
  source.path = path.string();
  source.overrides = std::move(overrides);
  source.plugins = BundledPlugins();
  Result<LoadedManifest> loaded = LoadManifest(source);
  REQUIRE_MESSAGE(loaded.ok(), loaded.status().ToString());
  return std::move(loaded).value();
}

LoadedManifest MustLoad(const std::string& yaml, std::vector<std::string> overrides = {},
                        const PluginVocabulary& plugins = BundledPlugins()) {
  Result<LoadedManifest> loaded = LoadManifestFromString(yaml, "t.yaml", overrides, plugins);
  REQUIRE_MESSAGE(loaded.ok(), loaded.status().ToString());
  return std::move(loaded).value();
}

// The error message of a load that must fail.
std::string LoadError(const std::string& yaml, std::vector<std::string> overrides = {},
                      const PluginVocabulary& plugins = BundledPlugins()) {
  Result<LoadedManifest> loaded = LoadManifestFromString(yaml, "t.yaml", overrides, plugins);
  REQUIRE_FALSE(loaded.ok());
  CHECK(loaded.status().code() == StatusCode::kInvalidArgument);
  return loaded.status().message();
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

bool HasWarning(const LoadedManifest& manifest, const std::string& part) {
  return std::any_of(manifest.warnings.begin(), manifest.warnings.end(),
                     [&](const Diagnostic& d) { return Contains(d.message, part); });
}
TEST_CASE("config.yaml leaves out the nulls DLIO cannot read back") {
  // DLIO turns reader.data_loader_sampler into its DataLoaderSampler enum
  // when the key is present: a null there is "None is not a valid
  // DataLoaderSampler". An unset sampler is left out; a set one is kept.
  const std::string yaml = ToYaml(MustLoad("").config, true);
  CHECK(yaml.find("data_loader_sampler") == std::string::npos);
  const std::string set = ToYaml(MustLoad("reader: {data_loader_sampler: index}").config, true);
  CHECK(set.find("data_loader_sampler: index") != std::string::npos);
}

TEST_CASE("every shipped DLIO workload loads and round-trips through ToYaml") {
  const std::vector<fs::path> files = ShippedWorkloads();
  if (files.empty()) {
    MESSAGE("workloads/ not found; skipped");
    return;
  }
  CHECK(files.size() >= 20);
  for (const fs::path& file : files) {
    CAPTURE(file);
    const LoadedManifest manifest = MustLoadFile(file);
    CHECK(manifest.manifest_path == file.string());
    CHECK(manifest.workload_name == file.stem().string());
    // DLIO itself ignores these keys; nothing else may be reported.
    for (const Diagnostic& warning : manifest.warnings) {
      CAPTURE(warning.ToString());
      // model.model_size (MLPerf's unet3d files) is honoured, with a warning.
      const bool expected = warning.message.starts_with("model.model_size (") ||
                            warning.message == "unknown key 'workflow.debug'";
      CHECK(expected);
      CHECK(warning.file == file.string());
      CHECK(warning.line > 0);
    }
    for (const bool workload_root : {false, true}) {
      const std::string yaml = ToYaml(manifest.config, workload_root);
      CAPTURE(yaml);
      const LoadedManifest again = MustLoad(yaml);
      CHECK(again.config == manifest.config);
      CHECK(again.warnings.empty());
    }
  }
}

TEST_CASE("shipped workload values") {
  const fs::path dir = WorkloadsDir();
  if (dir.empty()) return;

  SUBCASE("unet3d_h100") {
    const LoadedManifest m = MustLoadFile(dir / "unet3d_h100.yaml");
    const Config& c = m.config;
    CHECK(c.model.name == "unet3d");
    CHECK(c.model.type == "cnn");
    // model.model_size is not a DLIO key (DLIO writes 10240-byte
    // checkpoints); iomimic honours what the workload means.
    CHECK(c.model.model_size_bytes == 499153191);
    CHECK(c.framework == "pytorch");
    CHECK(c.workflow.checkpoint);
    CHECK(c.dataset.format == "npz");
    CHECK(c.dataset.data_folder == "data/unet3d");
    CHECK(c.dataset.num_files_train == 168);
    CHECK(c.dataset.record_length_bytes == 146600628);
    CHECK(c.dataset.record_length_bytes_stdev == 68341808);
    CHECK(c.dataset.record_length_bytes_resize == 2097152);
    CHECK(c.reader.data_loader == "pytorch");
    CHECK(c.reader.data_loader_given);
    CHECK(c.reader.batch_size == 7);
    CHECK(c.reader.read_threads == 4);
    CHECK(c.reader.file_shuffle == ShuffleMode::kSeed);
    CHECK(c.reader.sample_shuffle == ShuffleMode::kSeed);
    CHECK(c.train.epochs == 5);
    CHECK(c.train.computation_time.kind == Distribution::Kind::kConstant);
    CHECK(c.train.computation_time.mean == 0.323);
    CHECK(c.checkpoint.checkpoint_folder == "checkpoints/unet3d");
    CHECK(c.checkpoint.checkpoint_after_epoch == 5);
    CHECK(c.checkpoint.epochs_between_checkpoints == 2);
    CHECK(c.metric.au == 0.90);
    REQUIRE(m.warnings.size() == 1);
    CHECK(m.warnings[0].line == 4);
    CHECK(m.warnings[0].column == 3);
  }
  SUBCASE("bert_v100") {
    const Config c = MustLoadFile(dir / "bert_v100.yaml").config;
    CHECK(c.model.model_size_bytes == 4034713312ULL);
    CHECK(c.dataset.file_prefix == "part");
    CHECK(c.dataset.num_samples_per_file == 313532);
    CHECK(c.reader.transfer_size == 262144);
    CHECK(c.train.total_training_steps == 1000);
    CHECK_FALSE(c.train.seed_change_epoch);
    CHECK(c.checkpoint.steps_between_checkpoints == 250);
  }
  SUBCASE("resnet50_v100") {
    const Config c = MustLoadFile(dir / "resnet50_v100.yaml").config;
    CHECK(c.dataset.record_length_bytes == 114660.07);
    CHECK(c.reader.batch_size_eval == 128);
    CHECK(c.reader.dont_use_mmap);
    CHECK(c.reader.computation_threads == 8);
    CHECK(c.framework == "tensorflow");
  }
  SUBCASE("default") {
    const Config c = MustLoadFile(dir / "default.yaml").config;
    CHECK(c.workflow.evaluation);
    CHECK(c.dataset.num_files_eval == 8);
    CHECK(c.dataset.num_subfolders_train == 2);
    CHECK(c.evaluation.eval_time.mean == 0.5);
    CHECK(c.profiling.profiler == "iostat");
  }
  SUBCASE("megatron_deepspeed_LLNL") {
    const Config c = MustLoadFile(dir / "megatron_deepspeed_LLNL.yaml").config;
    CHECK(c.dataset.data_folder == "dataset/megatron-deepspeed");
    CHECK(c.dataset.format == "mmap_indexed_binary");
    CHECK(c.model.optimization_groups == std::vector<std::uint64_t>{1009254400, 865075200, 793600});
    CHECK(c.model.layer_parameters == std::vector<std::uint64_t>{52583936, 209715200});
    CHECK(c.model.num_layers == 40);
    CHECK(c.model.pipeline_parallelism == 8);
    CHECK(c.model.tensor_parallelism == 4);
    CHECK(c.checkpoint.type == "all_ranks");
    CHECK(c.train.computation_time.mean == 2.44);
  }
  SUBCASE("llama_70b") {
    const Config c = MustLoadFile(dir / "llama_70b.yaml").config;
    CHECK(c.model.type == "transformer");
    CHECK(c.model.vocab_size == 128256);
    CHECK(c.model.ffn_hidden_size == 28672);
    CHECK(c.checkpoint.fsync);  // honoured, unlike DLIO HEAD (docs/dlio-compat.md §1.5)
    CHECK(c.checkpoint.num_checkpoints_write == 10);
    CHECK(c.checkpoint.num_checkpoints_read == 10);
    CHECK(c.checkpoint.time_between_checkpoints == 5);
    CHECK_FALSE(c.workflow.train);
  }
  SUBCASE("llama_1t trains with framework pytorch and the default loader") {
    const Config c = MustLoadFile(dir / "llama_1t.yaml").config;
    CHECK(c.framework == "pytorch");
    CHECK(c.reader.data_loader == "tensorflow");
    CHECK_FALSE(c.reader.data_loader_given);
    CHECK(c.workflow.train);
  }
  SUBCASE("unet3d_v100_s3") {
    const Config c = MustLoadFile(dir / "unet3d_v100_s3.yaml").config;
    CHECK(c.storage.storage_type == "s3");
    CHECK(c.storage.storage_root == "s3pytorchconnector");
    CHECK(c.storage.storage_options.at("endpoint_url") == "http://localhost:9020");
    CHECK(c.storage.storage_options.at("s3_force_path_style") == "False");
    CHECK(c.storage.storage_options.at("s3_max_attempts") == "5");
    CHECK(c.dataset.data_folder == "s3://s3pytorchconnector");
    CHECK(c.dataset.format == "npy");
    // storage_type s3 selects the S3 back end with DLIO's storage_options.
    CHECK(c.storage.backend == "s3");
    CHECK(c.storage.options.at("endpoint_url") == "http://localhost:9020");
    CHECK(c.storage.options.at("secret_access_key") == "secret-key");
  }
}

TEST_CASE("storage_type s3: options win over storage_options, credentials are redacted") {
  const LoadedManifest m = MustLoad(R"(
storage:
  storage_type: s3
  storage_library: s3dlio
  storage_options: {region: eu-west-1, secret_access_key: TOPSECRET, other: 1}
  options: {region: us-east-2}
)",
                                    {"++workload.storage.storage_options.access_key_id=KEYID"});
  const Config& c = m.config;
  CHECK(c.storage.backend == "s3");
  CHECK(c.storage.options.at("region") == "us-east-2");
  CHECK(c.storage.options.at("storage_library") == "s3dlio");
  CHECK(c.storage.options.at("access_key_id") == "KEYID");
  CHECK(c.storage.options.count("other") == 0);
  const LoadedManifest r = Redacted(m);
  const std::string yaml = ToYaml(r.config, true);
  CHECK(yaml.find("TOPSECRET") == std::string::npos);
  CHECK(yaml.find("KEYID") == std::string::npos);
  CHECK(yaml.find("<redacted>") != std::string::npos);
  CHECK(yaml.find("eu-west-1") != std::string::npos);
  REQUIRE(r.raw_overrides.size() == 1);
  CHECK(r.raw_overrides[0] == "++workload.storage.storage_options.access_key_id=<redacted>");
  CHECK(IsCredentialKey("inner.secret_access_key"));
  CHECK_FALSE(IsCredentialKey("endpoint_url"));
  // Another back end named explicitly gets none of them.
  CHECK(MustLoad("storage: {storage_type: s3, backend: posix, storage_options: {region: x}}")
            .config.storage.options.empty());
}

TEST_CASE("MLPerf v3.0's object-storage spellings: s3dlio, object, URIs, endpoints, reader keys") {
  // s3dlio over a file:// root: local files (test_local_datagen, resnet50_s3dlio_test).
  LoadedManifest m = MustLoad(R"(
storage: {storage_type: s3dlio, storage_root: "file:///tmp/mlp/resnet50"}
dataset: {data_folder: "${storage.storage_root}/train"}
)");
  CHECK(m.config.storage.backend == "posix");
  CHECK(m.config.storage.storage_root == "/tmp/mlp/resnet50");
  CHECK(m.config.dataset.data_folder == "/tmp/mlp/resnet50/train");
  // hybrid_storage: data on S3 over two endpoints, checkpoints on a file:// folder.
  m = MustLoad(R"(
dataset: {data_folder: /tmp/dlio-zerocopy-test}
storage:
  storage_type: s3dlio
  storage_root: s3://training-bucket/imagenet-1k/
  endpoint_uris: [http://127.0.0.1:9000, http://127.0.0.2:9000]
  load_balance_strategy: least_connections
  use_mpi_endpoint_distribution: true
  storage_options: {region: us-east-1}
checkpoint: {checkpoint_folder: "file:///nvme/checkpoints/resnet50/"}
)");
  CHECK(m.config.storage.backend == "s3");
  CHECK(m.config.storage.storage_root == "training-bucket/imagenet-1k/");
  CHECK(m.config.dataset.data_folder == "tmp/dlio-zerocopy-test");
  CHECK(m.config.storage.options.at("endpoint_urls") ==
        "http://127.0.0.1:9000,http://127.0.0.2:9000");
  CHECK(m.config.storage.options.at("load_balance") == "least_connections");
  CHECK(m.config.storage.options.at("endpoint_per_rank") == "true");
  CHECK(m.config.checkpoint.backend == "posix");
  CHECK(m.config.checkpoint.checkpoint_folder == "/nvme/checkpoints/resnet50");
  // The "new architecture" under reader: (test_unet3d_train_s3), secure: false.
  m = MustLoad(R"(
reader:
  storage_type: object
  protocol: s3
  storage_library: s3dlio
  storage_root: pr1-test-bucket/unet3d
  storage_options: {endpoint_url: "https://10.0.0.1:9000", secure: false}
)");
  CHECK(m.config.storage.backend == "s3");
  CHECK(m.config.storage.storage_root == "pr1-test-bucket/unet3d");
  CHECK(m.config.storage.options.at("endpoint_url") == "http://10.0.0.1:9000");
  CHECK(m.config.storage.options.at("storage_library") == "s3dlio");
  CHECK(m.warnings.empty());
  // reader.data_loader_root names the training data (pytorch_s3dlio).
  m = MustLoad(R"(
dataset: {data_folder: /tmp/dlio_data_unused}
reader: {storage_library: s3dlio, data_loader_root: "s3://my-bucket/training-data"}
)");
  CHECK(m.config.storage.backend == "s3");
  CHECK(m.config.dataset.data_folder == "s3://my-bucket/training-data");
  // Protocols no installed plugin serves, at the key that holds them, as
  // written (pytorch_s3dlio_azure's reader.data_loader_root), and a key
  // given twice.
  CHECK(LoadError("storage: {storage_type: s3dlio, storage_root: \"az://c/x\"}\n") ==
        "t.yaml:1:47: error: storage.storage_root: 'az://c/x': no installed storage plugin "
        "serves az:// (installed: direct (odirect), file (posix), s3 (s3))");
  CHECK(
      Contains(LoadError("dataset: {data_folder: /tmp/x}\nreader:\n  storage_library: s3dlio\n"
                         "  data_loader_root: az://mlperf-container/training-data\n"),
               "t.yaml:4:21: error: reader.data_loader_root (read as dataset.data_folder): "
               "'az://mlperf-container/training-data': no installed storage plugin serves az://"));
  CHECK(Contains(LoadError("reader: {data_loader_root: s3://b/x}\n",
                           {"++workload.reader.data_loader_root=gs://b/y"}),
                 "override '++workload.reader.data_loader_root=gs://b/y': "
                 "reader.data_loader_root (read as dataset.data_folder): 'gs://b/y': no installed "
                 "storage plugin serves gs://"));
  CHECK(Contains(LoadError("checkpoint:\n  checkpoint_folder: az://c/ck\n"),
                 "t.yaml:2:22: error: checkpoint.checkpoint_folder: 'az://c/ck': no installed "
                 "storage plugin serves az://"));
  CHECK(Contains(LoadError("storage: {storage_type: object, protocol: gcs}\n"), "gcs://"));
  CHECK(Contains(LoadError("storage: {storage_root: a}\nreader: {storage_root: b}\n"),
                 "reader.storage_root: conflicts with storage.storage_root (line 1)"));
  // storage_options under reader: and storage: merge; an override of an entry wins.
  m = MustLoad(
      "storage: {storage_options: {region: r}}\n"
      "reader: {storage_options: {endpoint_url: \"http://h:1\", access_key_id: k}}\n",
      {"++workload.storage.storage_options.access_key_id=o"});
  CHECK(m.config.storage.storage_options.at("region") == "r");
  CHECK(m.config.storage.storage_options.at("endpoint_url") == "http://h:1");
  CHECK(m.config.storage.storage_options.at("access_key_id") == "o");
  CHECK(Contains(LoadError("storage: {storage_options: {region: a}}\n"
                           "reader: {storage_options: {region: b}}\n"),
                 "reader.storage_options.region: conflicts with storage.storage_options.region"));
  m = MustLoad("storage: {storage_options: null}\nreader: {storage_options: {region: r}}\n");
  CHECK(m.config.storage.storage_options.at("region") == "r");
  // An override of the target wins over the file's reader key.
  m = MustLoad("reader: {storage_root: b, checkpoint_folder: /c}\n",
               {"++workload.storage.storage_root=o", "++workload.checkpoint.checkpoint_folder=/o"});
  CHECK(m.config.storage.storage_root == "o");
  CHECK(m.config.checkpoint.checkpoint_folder == "/o");
}

TEST_CASE("URL schemes are those the installed storage plugins serve (docs/plugins.md)") {
  // A third-party plugin's scheme selects it, with no core change.
  PluginVocabulary plugins = BundledPlugins();
  plugins.schemes.push_back({"mem", "memory", false});
  LoadedManifest m = MustLoad(
      "dataset: {data_folder: \"mem://bucket/data\"}\n"
      "checkpoint: {checkpoint_folder: \"file:///tmp/ck\"}\n",
      {}, plugins);
  CHECK(m.config.storage.backend == "memory");
  CHECK(m.config.dataset.data_folder == "bucket/data");
  CHECK(m.config.checkpoint.backend == "posix");
  CHECK(m.config.checkpoint.checkpoint_folder == "/tmp/ck");
  m = MustLoad("storage: {storage_root: \"mem:///r\"}\ndataset: {data_folder: d}\n", {}, plugins);
  CHECK(m.config.storage.backend == "memory");
  CHECK(m.config.storage.storage_root == "/r");
  CHECK(m.config.dataset.data_folder == "d");
  // A back end named in the manifest wins; the scheme still leaves the path.
  m = MustLoad("storage: {backend: latency}\ndataset: {data_folder: \"mem://b/d\"}\n", {}, plugins);
  CHECK(m.config.storage.backend == "latency");
  CHECK(m.config.dataset.data_folder == "b/d");
  // A plugin with an endpoint gets its folders as written.
  plugins.schemes.push_back({"gs", "gcs", true});
  m = MustLoad("dataset: {data_folder: \"gs://b/x\"}\n", {}, plugins);
  CHECK(m.config.storage.backend == "gcs");
  CHECK(m.config.dataset.data_folder == "gs://b/x");
  // One error line names the key and every scheme served, with its plugin.
  CHECK(LoadError("dataset:\n  data_folder: az://bucket/data\n", {}, plugins) ==
        "t.yaml:2:16: error: dataset.data_folder: 'az://bucket/data': no installed storage "
        "plugin serves az:// (installed: direct (odirect), file (posix), gs (gcs), mem (memory), "
        "s3 (s3))");
  // Without plugins nothing is served, s3 included, nor the object storage types.
  CHECK(LoadError("dataset: {data_folder: \"s3://b/x\"}\n", {}, PluginVocabulary{}) ==
        "t.yaml:1:24: error: dataset.data_folder: 's3://b/x': no installed storage plugin serves "
        "s3:// (installed: none)");
  CHECK(Contains(LoadError("storage: {storage_type: s3}\n", {}, PluginVocabulary{}),
                 "storage.storage_type: 's3': no installed storage plugin serves s3:// "
                 "(installed: none)"));
  // Plain paths need no scheme.
  CHECK(MustLoad("dataset: {data_folder: /x}\n", {}, PluginVocabulary{}).config.storage.backend ==
        "posix");
}

// A format plugin "raw" that declares a key of each type.
PluginVocabulary KeyedFormat() {
  PluginVocabulary plugins = BundledPlugins();
  plugins.dataset_keys = {{"raw", "header_bytes", "int", "32", "bytes before the first sample"},
                          {"raw", "scale", "double", "1.5", "a factor"},
                          {"raw", "padded", "bool", "false", "pad | align"},
                          {"raw", "label", "string", "", "a name"},
                          {"raw", "dims", "int_list", "1,2", "a shape"}};
  return plugins;
}

TEST_CASE("dataset keys a format plugin declares are typed, defaulted, passed on and listed") {
  const PluginVocabulary plugins = KeyedFormat();
  LoadedManifest m = MustLoad(R"(
dataset:
  format: raw
  raw: {header_bytes: 4096, dims: [3, 4], padded: yes}
)",
                              {}, plugins);
  CHECK(m.warnings.empty());
  const std::map<std::string, DeclaredValue> expected = {{"raw.header_bytes", {"int", "4096"}},
                                                         {"raw.scale", {"double", "1.5"}},
                                                         {"raw.padded", {"bool", "true"}},
                                                         {"raw.label", {"string", ""}},
                                                         {"raw.dims", {"int_list", "3,4"}}};
  CHECK(m.config.dataset.declared_keys == expected);
  const std::map<std::string, std::string> parameters = FormatParameters(m.config);
  CHECK(parameters.at("raw.header_bytes") == "4096");
  CHECK(parameters.at("raw.dims") == "3,4");
  CHECK(parameters.at("raw.padded") == "true");
  // An override sets one; the resolved manifest shows every value and reads
  // back to the same configuration.
  m = MustLoad("dataset: {format: raw}\n", {"++workload.dataset.raw.scale=2"}, plugins);
  CHECK(m.config.dataset.declared_keys.at("raw.scale").text == "2");
  const std::string yaml = ToYaml(m.config, false);
  CHECK(Contains(yaml,
                 "  raw:\n    dims: [1, 2]\n    header_bytes: 32\n    label: \"\"\n"
                 "    padded: False\n    scale: 2\n"));
  Result<LoadedManifest> again = LoadManifestFromString(yaml, "again.yaml", {}, plugins);
  REQUIRE_MESSAGE(again.ok(), again.status().ToString());
  CHECK(again->config == m.config);
  CHECK(again->warnings.empty());
  // A wrong value or an unknown key is one error at the key.
  CHECK(LoadError("dataset:\n  format: raw\n  raw:\n    header_bytes: big\n", {}, plugins) ==
        "t.yaml:4:19: error: dataset.raw.header_bytes: expected an integer (format plugin 'raw' "
        "declares it int), got 'big'");
  CHECK(LoadError("dataset:\n  raw: {header_byte: 1}\n", {}, plugins) ==
        "t.yaml:2:9: error: dataset.raw.header_byte: unknown key: format plugin 'raw' declares "
        "header_bytes, scale, padded, label, dims (did you mean 'header_bytes'?)");
  CHECK(LoadError("dataset: {format: raw}\n", {"++workload.dataset.raw.dims=[1,x]"}, plugins) ==
        "override '++workload.dataset.raw.dims=[1,x]': dataset.raw.dims: expected a list of "
        "integers (format plugin 'raw' declares it int_list), got a list");
  CHECK(Contains(LoadError("dataset: {raw: 3}\n", {}, plugins),
                 "dataset.raw: expected a map of the keys format plugin 'raw' declares"));
  // Another format gets no defaults; without the plugin the keys are unknown,
  // a warning as before; the key table's sections stay the table's.
  CHECK(MustLoad("dataset: {format: npz}\n", {}, plugins).config.dataset.declared_keys.empty());
  m = MustLoad("dataset:\n  raw: {header_bytes: 1}\n");
  CHECK(HasWarning(m, "unknown key 'dataset.raw'"));
  CHECK(m.config.dataset.declared_keys.empty());
  PluginVocabulary hdf5 = BundledPlugins();
  hdf5.dataset_keys = {{"hdf5", "extra", "int", "1", ""}};
  m = MustLoad("dataset: {format: hdf5, hdf5: {extra: 2}}\n", {}, hdf5);
  CHECK(HasWarning(m, "unknown key 'dataset.hdf5.extra'"));
  CHECK(m.config.dataset.declared_keys.empty());
  // `iomimic config --keys` (docs/manifest.md) lists them after the table's.
  CHECK(Contains(ManifestKeysMarkdown(plugins),
                 "| `dataset.raw.header_bytes` | integer | `32` | format plugin `raw` | bytes "
                 "before the first sample |\n"));
  CHECK(
      Contains(ManifestKeysMarkdown(plugins), "| `dataset.raw.dims` | list of integers | `[1,2]`"));
  CHECK(Contains(ManifestKeysMarkdown(plugins), "| pad \\| align |"));
  CHECK(Contains(ManifestKeysMarkdown(), "None of the installed format plugins declares keys."));
}

TEST_CASE("what a format plugin declares about a key is checked") {
  CHECK(CheckDeclaredKey({"raw", "n", "int_list", " 1, 2", ""})->default_value == "1,2");
  CHECK(CheckDeclaredKey({"raw", "n", "float", "1e3", ""})->type == "double");
  CHECK(CheckDeclaredKey({"raw", "n", "bool", "True", ""})->default_value == "true");
  CHECK(Contains(CheckDeclaredKey({"raw", "n", "number", "1", ""}).status().message(),
                 "type 'number'"));
  CHECK(Contains(CheckDeclaredKey({"raw", "a.b", "int", "1", ""}).status().message(),
                 "letters, digits and '_'"));
  CHECK(Contains(CheckDeclaredKey({"raw", "n", "int", "x", ""}).status().message(),
                 "its default 'x' is not an integer"));
}

TEST_CASE("an empty manifest holds DLIO's defaults (docs/dlio-compat.md §1.3)") {
  const LoadedManifest m = MustLoad("");
  const Config& c = m.config;
  CHECK(m.warnings.empty());
  CHECK(c == Config{});
  CHECK(m.workload_name == "t");

  CHECK(c.model.name == "default");
  CHECK(c.model.type.empty());
  CHECK(c.model.model_size_bytes == 10240);
  CHECK(c.model.model_datatype == "fp16");
  CHECK(c.model.optimizer_datatype == "fp32");
  CHECK(c.model.optimization_groups.empty());
  CHECK(c.model.num_layers == -1);
  CHECK(c.model.layer_parameters.empty());
  CHECK(c.model.tensor_parallelism == 1);
  CHECK(c.model.pipeline_parallelism == 1);
  CHECK(c.model.data_parallelism == -1);
  CHECK(c.model.zero_stage == 0);
  CHECK(c.model.vocab_size == 32000);
  CHECK(c.model.hidden_size == 2048);
  CHECK(c.model.ffn_hidden_size == 8192);
  CHECK(c.model.num_attention_heads == 32);
  CHECK(c.model.num_kv_heads == 8);
  CHECK(c.framework == "tensorflow");
  CHECK_FALSE(c.workflow.generate_data);
  CHECK(c.workflow.train);
  CHECK_FALSE(c.workflow.evaluation);
  CHECK_FALSE(c.workflow.checkpoint);
  CHECK_FALSE(c.workflow.profiling);
  CHECK(c.storage.storage_type == "local_fs");
  CHECK(c.storage.storage_root == "./");
  CHECK(c.storage.storage_options.empty());
  CHECK(c.storage.backend == "posix");
  CHECK(c.dataset.format == "tfrecord");
  CHECK(c.dataset.data_folder == "./data");
  CHECK(c.dataset.num_files_train == 8);
  CHECK(c.dataset.num_files_eval == 0);
  CHECK(c.dataset.num_samples_per_file == 1);
  CHECK(c.dataset.record_length_bytes == 65536);
  CHECK(c.dataset.record_length_bytes_stdev == 0);
  CHECK(c.dataset.record_length_bytes_resize == 0);
  CHECK(c.dataset.record_dims.empty());
  CHECK(c.dataset.record_element_type == "uint8");
  CHECK(c.dataset.num_subfolders_train == 0);
  CHECK(c.dataset.num_subfolders_eval == 0);
  CHECK(c.dataset.file_prefix == "img");
  CHECK(c.dataset.compression == "none");
  CHECK(c.dataset.compression_level == 4);
  CHECK_FALSE(c.dataset.enable_chunking);
  CHECK(c.dataset.chunk_size == 0);
  CHECK(c.dataset.keep_files);
  CHECK(c.dataset.generation_buffer_size == 2ULL * 1024 * 1024 * 1024);
  CHECK(c.dataset.hdf5_chunk_dims.empty());
  CHECK(c.dataset.hdf5_num_dset_per_record == 1);
  CHECK(c.dataset.hdf5_max_shape.empty());
  CHECK(c.reader.data_loader == "tensorflow");
  CHECK_FALSE(c.reader.data_loader_given);
  CHECK(c.reader.batch_size == 1);
  CHECK(c.reader.batch_size_eval == 1);
  CHECK(c.reader.read_threads == 1);
  CHECK(c.reader.computation_threads == 1);
  CHECK(c.reader.prefetch_size == 2);
  CHECK(c.reader.file_shuffle == ShuffleMode::kOff);
  CHECK(c.reader.sample_shuffle == ShuffleMode::kOff);
  CHECK(c.reader.shuffle_size == 1024);
  CHECK(c.reader.transfer_size == 0);
  CHECK(c.reader.read_type == ReadType::kOnDemand);
  CHECK(c.reader.file_access == "multi");
  CHECK_FALSE(c.reader.dont_use_mmap);
  CHECK_FALSE(c.reader.odirect);
  CHECK(c.reader.pin_memory);
  CHECK(c.reader.multiprocessing_context == "fork");
  CHECK(c.reader.preprocess_time.is_zero());
  CHECK(c.reader.transformed_record_dims.empty());
  CHECK(c.reader.transformed_record_element_type == "uint8");
  CHECK(c.reader.reader_classname.empty());
  CHECK(c.reader.data_loader_classname.empty());
  CHECK(c.reader.data_loader_sampler.empty());
  CHECK(c.reader.decode);
  CHECK(c.train.epochs == 1);
  CHECK(c.train.computation_time.is_zero());
  CHECK(c.train.total_training_steps == -1);
  CHECK(c.train.seed_change_epoch);
  CHECK(c.train.seed == 123);
  CHECK(c.evaluation.eval_time.is_zero());
  CHECK(c.evaluation.eval_after_epoch == 1);
  CHECK(c.evaluation.epochs_between_evals == 1);
  CHECK(c.checkpoint.checkpoint_folder == "./checkpoints");
  CHECK(c.checkpoint.checkpoint_after_epoch == 1);
  CHECK(c.checkpoint.epochs_between_checkpoints == 1);
  CHECK(c.checkpoint.steps_between_checkpoints == -1);
  CHECK(c.checkpoint.type == "rank_zero");
  CHECK(c.checkpoint.mode == "default");
  CHECK_FALSE(c.checkpoint.fsync);
  CHECK(c.checkpoint.time_between_checkpoints == -1);
  CHECK(c.checkpoint.num_checkpoints_write == -1);
  CHECK(c.checkpoint.num_checkpoints_read == -1);
  CHECK_FALSE(c.checkpoint.recovery_rank_shift);
  CHECK_FALSE(c.checkpoint.rank_sync);
  CHECK(c.checkpoint.randomize_tensor);
  CHECK(c.checkpoint.checkpoint_mechanism_classname.empty());
  CHECK_FALSE(c.checkpoint.ksm_present);
  CHECK(c.checkpoint.backend.empty());
  CHECK(c.output.folder.empty());
  CHECK(c.output.log_file == "dlio.log");
  CHECK(c.output.exclude_start_steps == 1);
  CHECK(c.output.exclude_end_steps == 0);
  CHECK(c.profiling.profiler == "iostat");
  CHECK(c.profiling.iostat_devices.empty());
  CHECK(c.metric.au == 0.90);
  CHECK_FALSE(c.iomimic.sample_log);
  CHECK_FALSE(c.iomimic.dlio_order);
  CHECK_FALSE(c.iomimic.checksum);
  CHECK(c.iomimic.max_step_list == 100000);
  CHECK(c.iomimic.accelerators_per_process == 1);
  CHECK_FALSE(c.iomimic.huge_pages);
  CHECK(c.iomimic.content == "random");
  CHECK(c.iomimic.compress_percentage == 0);
  CHECK(c.iomimic.dedupe_percentage == 0);
  CHECK(c.hydra.run_dir.empty());
  CHECK(c.hydra.output_subdir == ".hydra");

  // Empty sections and a comment-only file are fine too.
  CHECK(MustLoad("# nothing\n").config == Config{});
  CHECK(MustLoad("workflow:\nreader:\n").config == Config{});
}

TEST_CASE("every key is read") {
  const LoadedManifest m = MustLoad(R"(
model:
  name: gpt
  type: transformer
  model_size_bytes: 1000
  model_datatype: bf16
  optimizer_datatype: fp64
  optimization_groups: [1, 2]
  num_layers: 8
  layer_parameters: [3]
  parallelism: {tensor: 2, pipeline: 4, data: 8, zero_stage: 2}
  transformer: {vocab_size: 5, hidden_size: 6, ffn_hidden_size: 7, num_attention_heads: 8, num_kv_heads: 9}
framework: pytorch
workflow: {generate_data: yes, train: no, evaluation: True, checkpoint: true, profiling: on, query: x}
storage:
  storage_type: parallel_fs
  storage_root: /mnt/fs
  storage_options: {a: 1}
  storage_library: s3dlio
  backend: io_uring
  options: {queue_depth: 64, devices: [nvme0, nvme1]}
dataset:
  format: hdf5
  data_folder: /data/x/
  num_files_train: 10
  num_files_eval: 2
  num_samples_per_file: 4
  record_length_bytes: 100
  record_length_bytes_resize: 50
  record_dims: [6, 2]
  record_element_type: float
  record_element_bytes: 8
  num_subfolders_train: 3
  num_subfolders_eval: 1
  file_prefix: sample
  compression: gzip
  compression_level: 9
  enable_chunking: true
  chunk_size: 4096
  keep_files: false
  generation_buffer_size: 1048576
  hdf5: {chunk_dims: [3, 2], num_dset_per_record: 3, max_shape: [null, 2]}
  options: {layout: contiguous}
reader:
  data_loader: dali
  batch_size: 16
  batch_size_eval: 8
  read_threads: 0
  computation_threads: 2
  prefetch_size: 0
  file_shuffle: random
  sample_shuffle: seed
  shuffle_size: 7
  transfer_size: 1024
  read_type: memory
  file_access: shared
  dont_use_mmap: true
  odirect: false
  pin_memory: false
  multiprocessing_context: spawn
  preprocess_time: 0.01
  transformed_record_dims: [4, 4]
  transformed_record_element_type: float32
  reader_classname: my.Reader
  data_loader_classname: my.Loader
  data_loader_sampler: index
  decode: false
train: {epochs: 3, computation_time: 0.5, total_training_steps: 20, seed_change_epoch: false, seed: 7}
evaluation: {eval_time: 0.25, eval_after_epoch: 2, epochs_between_evals: 3}
checkpoint:
  checkpoint_folder: ck/
  checkpoint_after_epoch: 2
  epochs_between_checkpoints: 4
  steps_between_checkpoints: 100
  type: all_ranks
  mode: subset
  fsync: true
  time_between_checkpoints: 2.5
  num_checkpoints_write: 4
  num_checkpoints_read: 3
  recovery_rank_shift: true
  rank_sync: true
  randomize_tensor: false
  checkpoint_mechanism_classname: my.Ckpt
  ksm: {madv_mergeable_id: 12, high_ram_trigger: 30.0, low_ram_exit: 15, await_time: 200}
  backend: posix
  options: {sync: data}
output: {folder: out, log_file: run.log, metric: {exclude_start_steps: 2, exclude_end_steps: 1}}
profiling: {profiler: none, iostat_devices: [sda, sdb]}
metric: {au: 0.7}
iomimic: {sample_log: true, dlio_order: true, checksum: true, max_step_list: 0,
          accelerators_per_process: 16, huge_pages: true, content: zeros,
          compress_percentage: 40, dedupe_percentage: 25}
)");
  CHECK(m.warnings.empty());
  const Config& c = m.config;
  CHECK(c.model.name == "gpt");
  CHECK(c.model.model_size_bytes == 1000);
  CHECK(c.model.model_datatype == "bf16");
  CHECK(c.model.optimizer_datatype == "fp64");
  CHECK(c.model.optimization_groups == std::vector<std::uint64_t>{1, 2});
  CHECK(c.model.data_parallelism == 8);
  CHECK(c.model.zero_stage == 2);
  CHECK(c.model.num_kv_heads == 9);
  CHECK(c.workflow.generate_data);
  CHECK_FALSE(c.workflow.train);
  CHECK(c.workflow.profiling);
  CHECK(c.storage.storage_type == "parallel_fs");
  CHECK(c.storage.storage_options.at("a") == "1");
  CHECK(c.storage.storage_options.at("storage_library") == "s3dlio");
  CHECK(c.storage.backend == "io_uring");
  CHECK(c.storage.options.at("queue_depth") == "64");
  CHECK(c.storage.options.at("devices") == "nvme0,nvme1");
  CHECK(c.dataset.data_folder == "/data/x");
  CHECK(c.dataset.record_dims == std::vector<std::uint64_t>{6, 2});
  CHECK(c.dataset.record_element_type == "float64");
  CHECK(c.dataset.compression == "gzip");
  CHECK(c.dataset.compression_level == 9);
  CHECK(c.dataset.hdf5_chunk_dims == std::vector<std::uint64_t>{3, 2});
  CHECK(c.dataset.hdf5_num_dset_per_record == 3);
  CHECK(c.dataset.hdf5_max_shape == std::vector<std::uint64_t>{0, 2});
  CHECK(c.dataset.options.at("layout") == "contiguous");
  CHECK(c.reader.data_loader == "dali");
  CHECK(c.reader.read_threads == 0);
  CHECK(c.reader.file_shuffle == ShuffleMode::kRandom);
  CHECK(c.reader.read_type == ReadType::kMemory);
  CHECK(c.reader.file_access == "shared");
  CHECK(c.reader.multiprocessing_context == "spawn");
  CHECK(c.reader.preprocess_time.mean == 0.01);
  CHECK(c.reader.transformed_record_element_type == "float32");
  CHECK(c.reader.data_loader_sampler == "index");
  CHECK_FALSE(c.reader.decode);
  CHECK(c.train.seed == 7);
  CHECK(c.evaluation.eval_after_epoch == 2);
  CHECK(c.checkpoint.checkpoint_folder == "ck");
  CHECK(c.checkpoint.mode == "subset");
  CHECK(c.checkpoint.ksm_present);
  CHECK(c.checkpoint.options.at("sync") == "data");
  CHECK(c.output.folder == "out");
  CHECK(c.output.exclude_start_steps == 2);
  CHECK(c.profiling.iostat_devices == std::vector<std::string>{"sda", "sdb"});
  CHECK(c.metric.au == 0.7);
  CHECK(c.iomimic.sample_log);
  CHECK(c.iomimic.dlio_order);
  CHECK(c.iomimic.checksum);
  CHECK(c.iomimic.max_step_list == 0);
  CHECK(c.iomimic.accelerators_per_process == 16);
  CHECK(c.iomimic.huge_pages);
  CHECK(c.iomimic.content == "zeros");
  CHECK(c.iomimic.compress_percentage == 40);
  CHECK(c.iomimic.dedupe_percentage == 25);

  // ...and everything survives ToYaml.
  CHECK(MustLoad(ToYaml(c, false)).config == c);
  CHECK(MustLoad(ToYaml(c, true)).config == c);
}

TEST_CASE("workload selection") {
  const fs::path shared = WorkloadsDir();
  if (!shared.empty()) {
    SUBCASE("by ManifestSource::workload") {
      ManifestSource source;
      source.workload = "unet3d_h100";
      source.config_dir = shared.string();
      Result<LoadedManifest> m = LoadManifest(source);
      REQUIRE_MESSAGE(m.ok(), m.status().ToString());
      CHECK(m->workload_name == "unet3d_h100");
      CHECK(m->manifest_path == (shared / "unet3d_h100.yaml").string());
      CHECK(m->config.reader.batch_size == 7);
    }
    SUBCASE("by a workload= override, kept in raw_overrides") {
      ManifestSource source;
      source.config_dir = shared.string();
      source.overrides = {"workload=dlrm", "++workload.train.epochs=2"};
      Result<LoadedManifest> m = LoadManifest(source);
      REQUIRE_MESSAGE(m.ok(), m.status().ToString());
      CHECK(m->workload_name == "dlrm");
      CHECK(m->config.train.epochs == 2);
      CHECK(m->config.dataset.format == "indexed_binary");
      CHECK(m->raw_overrides == source.overrides);
    }
    SUBCASE("a missing workload lists the available ones") {
      ManifestSource source;
      source.config_dir = shared.string();
      source.workload = "unet3d_h10";
      Result<LoadedManifest> m = LoadManifest(source);
      REQUIRE_FALSE(m.ok());
      CHECK(m.status().IsNotFound());
      const std::string message = m.status().message();
      CHECK(Contains(message, "workload 'unet3d_h10' not found in " + shared.string()));
      CHECK(Contains(message,
                     ". Did you mean 'unet3d_h100'? Available: app_replay, bert_mrpc, bert_v100, "
                     "candle_nt3, climate_seg, cosmic_tagger, cosmoflow_a100,"));
      CHECK(Contains(message, "unet3d_v100_s3"));
    }
  }

  SUBCASE("<config_dir>/workload/<name>.yaml, MLPerf style") {
    TempDir dir;
    dir.Write("workload/mine.yaml", "train:\n  epochs: 4\n");
    ManifestSource source;
    source.config_dir = dir.path().string();
    source.overrides = {"workload=mine"};
    Result<LoadedManifest> m = LoadManifest(source);
    REQUIRE_MESSAGE(m.ok(), m.status().ToString());
    CHECK(m->config.train.epochs == 4);
    CHECK(m->manifest_path == (dir.path() / "workload" / "mine.yaml").string());

    dir.Write("mine.yaml", "train:\n  epochs: 6\n");  // <dir>/<name>.yaml comes first
    m = LoadManifest(source);
    REQUIRE(m.ok());
    CHECK(m->config.train.epochs == 6);
  }
  SUBCASE("errors") {
    ManifestSource none;
    Result<LoadedManifest> m = LoadManifest(none);
    REQUIRE_FALSE(m.ok());
    CHECK(m.status().code() == StatusCode::kInvalidArgument);

    ManifestSource missing_dir;
    missing_dir.workload = "x";
    missing_dir.config_dir = "/nonexistent/iomimic/configs";
    m = LoadManifest(missing_dir);
    REQUIRE_FALSE(m.ok());
    CHECK(m.status().IsNotFound());

    TempDir dir;
    dir.Write("a.yaml", "");
    ManifestSource conflict;
    conflict.path = (dir.path() / "a.yaml").string();
    conflict.overrides = {"workload=b"};
    m = LoadManifest(conflict);
    REQUIRE_FALSE(m.ok());
    CHECK(Contains(m.status().message(), "override 'workload=b': "));

    ManifestSource two;
    two.workload = "a";
    two.config_dir = dir.path().string();
    two.overrides = {"workload=b"};
    m = LoadManifest(two);
    REQUIRE_FALSE(m.ok());
    CHECK(m.status().message() ==
          "override 'workload=b': conflicts with the selected workload 'a'");

    CHECK(LoadError("", {"workload=x"}) ==
          "override 'workload=x': the manifest is given already ('t.yaml')");
  }
}

TEST_CASE("manifest files") {
  TempDir dir;
  dir.Write("run.yaml", "dataset:\n  num_files_train: abc\n");
  ManifestSource source;
  source.path = (dir.path() / "run.yaml").string();
  Result<LoadedManifest> m = LoadManifest(source);
  REQUIRE_FALSE(m.ok());
  // The file is named as the user gave it.
  CHECK(m.status().message() == source.path +
                                    ":2:20: error: dataset.num_files_train: expected a "
                                    "non-negative integer, got 'abc'");

  source.path = (dir.path() / "missing.yaml").string();
  m = LoadManifest(source);
  REQUIRE_FALSE(m.ok());
  CHECK(m.status().IsNotFound());
  CHECK(Contains(m.status().message(), "missing.yaml"));

  source.path = dir.path().string();
  m = LoadManifest(source);
  REQUIRE_FALSE(m.ok());
  CHECK(Contains(m.status().message(), "is a directory"));
}

TEST_CASE("overrides") {
  SUBCASE("++ sets and creates") {
    const LoadedManifest m =
        MustLoad("train:\n  epochs: 5\n",
                 {"++workload.train.epochs=2", "++workload.dataset.num_files_train=16",
                  "++workload.dataset.hdf5.chunk_dims=[2,2]"});
    CHECK(m.config.train.epochs == 2);
    CHECK(m.config.dataset.num_files_train == 16);
    CHECK(m.config.dataset.hdf5_chunk_dims == std::vector<std::uint64_t>{2, 2});
    CHECK(m.raw_overrides.size() == 3);
  }
  SUBCASE("applied in order") {
    CHECK(MustLoad("", {"++workload.train.epochs=2", "++workload.train.epochs=3"})
              .config.train.epochs == 3);
  }
  SUBCASE("an unknown key set with ++ is a warning from the override") {
    const LoadedManifest m = MustLoad("", {"++workload.dataset.foo=1"});
    REQUIRE(m.warnings.size() == 1);
    CHECK(m.warnings[0].file == "override '++workload.dataset.foo=1'");
    CHECK(m.warnings[0].line == 0);
    CHECK(m.warnings[0].ToString() ==
          "override '++workload.dataset.foo=1': warning: unknown key 'dataset.foo'");
  }
  SUBCASE("plain form: a key of the file, or a known key") {
    CHECK(MustLoad("train:\n  epochs: 5\n", {"workload.train.epochs=2"}).config.train.epochs == 2);
    CHECK(MustLoad("", {"workload.reader.batch_size=8"}).config.reader.batch_size == 8);
    CHECK(MustLoad("", {"workload.storage.options.depth=8"}).config.storage.options.at("depth") ==
          "8");
    CHECK(LoadError("", {"workload.dataset.num_file_train=3"}) ==
          "override 'workload.dataset.num_file_train=3': no key 'dataset.num_file_train' to "
          "replace (did you mean 'dataset.num_files_train'?)");
    CHECK(LoadError("", {"workload.foo.bar=1"}) ==
          "override 'workload.foo.bar=1': no key 'foo.bar' to replace; '+workload.foo.bar=1' "
          "adds it");
    // An unknown key that the file has may be replaced (with a warning).
    const LoadedManifest m = MustLoad("foo:\n  bar: 1\n", {"workload.foo.bar=2"});
    CHECK(HasWarning(m, "unknown key 'foo'"));
  }
  SUBCASE("+ adds only") {
    CHECK(MustLoad("", {"+workload.train.epochs=3"}).config.train.epochs == 3);
    CHECK(LoadError("train:\n  epochs: 5\n", {"+workload.train.epochs=3"}) ==
          "override '+workload.train.epochs=3': 'train.epochs' is already set; "
          "'++workload.train.epochs=3' replaces it");
  }
  SUBCASE("~ deletes") {
    CHECK(MustLoad("train:\n  epochs: 5\n", {"~workload.train.epochs"}).config.train.epochs == 1);
    CHECK(MustLoad("train:\n  epochs: 5\n", {"~workload.train.epochs=5"}).config.train.epochs == 1);
    CHECK(
        MustLoad("reader: {read_threads: 4}\n", {"~workload.reader"}).config.reader.read_threads ==
        1);
    CHECK(MustLoad("", {"~workload.train.epochs"}).config.train.epochs == 1);  // known, absent
    CHECK(LoadError("train:\n  epochs: 5\n", {"~workload.train.epochs=6"}) ==
          "override '~workload.train.epochs=6': 'train.epochs' is '5', not '6'");
    CHECK(LoadError("", {"~workload.train.epoch"}) ==
          "override '~workload.train.epoch': no key 'train.epoch' to delete (did you mean "
          "'train.epochs'?)");
  }
  SUBCASE("hydra settings") {
    const LoadedManifest m =
        MustLoad("", {"++hydra.run.dir=/tmp/run1", "hydra.output_subdir=dlio_config"});
    CHECK(m.config.hydra.run_dir == "/tmp/run1");
    CHECK(m.config.hydra.output_subdir == "dlio_config");
    CHECK_FALSE(Contains(ToYaml(m.config, true), "hydra"));
    CHECK(MustLoad("", {"+hydra.run.dir=out"}).config.hydra.run_dir == "out");
  }
  SUBCASE("other forms are rejected") {
    const std::string expected = "expected workload.<key>=<value> or hydra.run.dir=...";
    CHECK(LoadError("", {"++dataset.num_files_train=1"}) ==
          "override '++dataset.num_files_train=1': " + expected);
    CHECK(LoadError("", {"++workload.dataset.num_files_train"}) ==
          "override '++workload.dataset.num_files_train': " + expected);
    CHECK(LoadError("", {"++hydra.job.chdir=True"}) ==
          "override '++hydra.job.chdir=True': " + expected);
    CHECK(LoadError("", {"=3"}) == "override '=3': " + expected);
    CHECK(LoadError("", {"++workload.a..b=1"}) ==
          "override '++workload.a..b=1': malformed key 'workload.a..b'");
    CHECK(Contains(LoadError("", {"++workload.dataset.record_dims=[1,2"}),
                   "override '++workload.dataset.record_dims=[1,2': malformed value: "));
    CHECK(LoadError("dataset: 5\n", {"++workload.dataset.x=1"}) ==
          "override '++workload.dataset.x=1': 'dataset' is '5', not a map of keys");
  }
  SUBCASE("values are typed like Hydra's") {
    const LoadedManifest m = MustLoad(
        "", {"++workload.dataset.record_dims=[3,4]", "++workload.workflow.generate_data=True",
             "++workload.workflow.train=false", "++workload.dataset.file_prefix='007'",
             "++workload.output.folder=null", "++workload.model.name=", "++workload.metric.au=0.5",
             "++workload.profiling.iostat_devices=[sda,sdb]"});
    CHECK(m.config.dataset.record_dims == std::vector<std::uint64_t>{3, 4});
    CHECK(m.config.workflow.generate_data);
    CHECK_FALSE(m.config.workflow.train);
    CHECK(m.config.dataset.file_prefix == "007");
    CHECK(m.config.output.folder.empty());
    CHECK(m.config.model.name.empty());
    CHECK(m.config.metric.au == 0.5);
    CHECK(m.config.profiling.iostat_devices == std::vector<std::string>{"sda", "sdb"});
  }
  SUBCASE("a bad value names the override") {
    CHECK(LoadError("", {"++workload.dataset.num_files_train=abc"}) ==
          "override '++workload.dataset.num_files_train=abc': dataset.num_files_train: expected "
          "a non-negative integer, got 'abc'");
    // A whole section set by an override.
    CHECK(LoadError("", {"++workload.reader={batch_size: 0}"}) ==
          "override '++workload.reader={batch_size: 0}': reader.batch_size: expected a positive "
          "integer, got '0'");
  }
  SUBCASE("legacy spellings in overrides") {
    const LoadedManifest m =
        MustLoad("dataset:\n  record_length_bytes: 5\ndata_reader:\n  batch_size: 2\n",
                 {"workload.dataset.record_length=100", "++workload.data_reader.batch_size=9",
                  "++workload.model=bert", "++workload.checkpoint.model_size=77"});
    CHECK(m.config.dataset.record_length_bytes == 100);
    CHECK(m.config.reader.batch_size == 9);
    CHECK(m.config.model.model_size_bytes == 77);
    CHECK(m.config.model.name == "bert");
  }
}

TEST_CASE("legacy keys (docs/dlio-compat.md §1.4)") {
  const LoadedManifest m = MustLoad(R"(model: resnet
dataset:
  record_length: 1000
  record_length_stdev: 10
  record_length_resize: 500
data_reader:
  batch_size: 4
  data_loader: tensorflow
checkpoint:
  model_size: 4096
)");
  const Config& c = m.config;
  CHECK(c.model.name == "resnet");
  CHECK(c.dataset.record_length_bytes == 1000);
  CHECK(c.dataset.record_length_bytes_stdev == 10);
  CHECK(c.dataset.record_length_bytes_resize == 500);
  CHECK(c.reader.batch_size == 4);
  CHECK(c.reader.data_loader_given);
  CHECK(c.model.model_size_bytes == 4096);
  CHECK(HasWarning(m, "legacy key 'dataset.record_length' read as 'dataset.record_length_bytes'"));
  CHECK(HasWarning(m, "legacy key 'checkpoint.model_size' read as 'model.model_size_bytes'"));
  CHECK(HasWarning(m, "legacy form 'model: resnet' read as 'model.name'"));
  CHECK_FALSE(HasWarning(m, "unknown key"));
  // Warnings come in file order.
  REQUIRE(m.warnings.size() == 5);
  CHECK(m.warnings[0].line == 1);
  CHECK(m.warnings[1].line == 3);
  CHECK(m.warnings[4].line == 10);

  CHECK(LoadError("dataset:\n  record_length: 1\n  record_length_bytes: 2\n") ==
        "t.yaml:2:3: error: dataset.record_length: conflicts with dataset.record_length_bytes "
        "(line 3); give only one of them");
  CHECK(LoadError("model:\n  model_size_bytes: 1\ncheckpoint:\n  model_size: 2\n") ==
        "t.yaml:4:3: error: checkpoint.model_size: conflicts with model.model_size_bytes (line "
        "2); give only one of them");
  CHECK(LoadError("reader:\n  batch_size: 1\ndata_reader:\n  batch_size: 2\n") ==
        "t.yaml:3:1: error: data_reader: given together with 'reader' (line 1); use one section");
}

TEST_CASE("unknown keys are warnings with a suggestion") {
  const LoadedManifest m = MustLoad(R"(dataset:
  num_file_train: 4
reader:
  bach_size: 3
batch_size: 4
workflow:
  debug: False
train:
  computation_time: {meen: 1}
storage:
  options: {anything: 1}
  storage_options: {whatever: 2}
reders: {}
)");
  CHECK(m.config.dataset.num_files_train == 8);  // ignored
  CHECK(m.config.reader.batch_size == 1);
  std::vector<std::string> lines;
  for (const Diagnostic& d : m.warnings) lines.push_back(d.ToString());
  CHECK(lines == std::vector<std::string>{
                     "t.yaml:2:3: warning: unknown key 'dataset.num_file_train' (did you mean "
                     "'dataset.num_files_train'?)",
                     "t.yaml:4:3: warning: unknown key 'reader.bach_size' (did you mean "
                     "'reader.batch_size'?)",
                     "t.yaml:5:1: warning: unknown key 'batch_size' (did you mean "
                     "'reader.batch_size'?)",
                     "t.yaml:7:3: warning: unknown key 'workflow.debug'",
                     "t.yaml:9:22: warning: unknown key 'train.computation_time.meen' (did you "
                     "mean 'train.computation_time.mean'?)",
                     "t.yaml:13:1: warning: unknown key 'reders' (did you mean 'reader'?)",
                 });
  CHECK(m.warnings[0].file == "t.yaml");
  CHECK(m.warnings[0].line == 2);
  CHECK(m.warnings[0].column == 3);
}

TEST_CASE("OmegaConf interpolations are resolved as Hydra resolves them") {
  ::setenv("IOMIMIC_TEST_BUCKET", "bucket-from-env", 1);
  ::unsetenv("IOMIMIC_TEST_UNSET");
  // An absolute key, with and without Hydra's `workload.` root.
  LoadedManifest m = MustLoad(
      "storage:\n  storage_type: local_fs\n  storage_root: /mnt/data\n"
      "dataset:\n  data_folder: ${storage.storage_root}/unet3d\n"
      "checkpoint:\n  checkpoint_folder: ${workload.storage.storage_root}/ckpt\n");
  CHECK(m.config.dataset.data_folder == "/mnt/data/unet3d");
  CHECK(m.config.checkpoint.checkpoint_folder == "/mnt/data/ckpt");
  // The whole value: the referenced value keeps its type.
  m = MustLoad(
      "dataset:\n  num_files_train: 12\n  num_files_eval: ${.num_files_train}\n"
      "reader:\n  batch_size: ${..dataset.num_files_train}\n");
  CHECK(m.config.dataset.num_files_eval == 12);
  CHECK(m.config.reader.batch_size == 12);
  // The environment, with a default, and a nested reference in the default.
  m = MustLoad(
      "storage:\n  storage_root: ${oc.env:IOMIMIC_TEST_BUCKET}\n"
      "dataset:\n  data_folder: ${oc.env:IOMIMIC_TEST_UNSET,/tmp/x}/${env:IOMIMIC_TEST_BUCKET}\n"
      "  file_prefix: ${oc.env:IOMIMIC_TEST_UNSET,${storage.storage_root}}\n");
  CHECK(m.config.storage.storage_root == "bucket-from-env");
  CHECK(m.config.dataset.data_folder == "/tmp/x/bucket-from-env");
  CHECK(m.config.dataset.file_prefix == "bucket-from-env");
  // An override is seen by the interpolation (Hydra resolves after overrides).
  m = MustLoad("storage:\n  storage_root: /a\ndataset:\n  data_folder: ${storage.storage_root}/d\n",
               {"++workload.storage.storage_root=/b"});
  CHECK(m.config.dataset.data_folder == "/b/d");
  // A chain resolves in any order.
  m = MustLoad(
      "dataset:\n  data_folder: /d/${dataset.file_prefix}/x\n  file_prefix: ${model.name}\n"
      "model:\n  name: r\n");
  CHECK(m.config.dataset.data_folder == "/d/r/x");
  // Escaped: literal.
  m = MustLoad("dataset:\n  file_prefix: a\\${b}\n");
  CHECK(m.config.dataset.file_prefix == "a${b}");
}

TEST_CASE("an interpolation that cannot be resolved is an error naming file:line") {
  CHECK(LoadError("dataset:\n  data_folder: ${storage.nowhere}/x\n") ==
        "t.yaml:2:16: error: dataset.data_folder: '${storage.nowhere}' names no key of the "
        "manifest (looked for 'storage.nowhere')");
  // MLPerf's ${AWS_REGION}: a set variable is used, with a warning; unset, an error.
  ::setenv("IOMIMIC_TEST_REGION", "us-east-1", 1);
  LoadedManifest m = MustLoad("storage:\n  storage_root: ${IOMIMIC_TEST_REGION}\n");
  CHECK(m.config.storage.storage_root == "us-east-1");
  CHECK(HasWarning(m, "write ${oc.env:IOMIMIC_TEST_REGION}"));
  ::unsetenv("IOMIMIC_TEST_UNSET");
  CHECK(LoadError("storage:\n  storage_root: ${IOMIMIC_TEST_UNSET}\n") ==
        "t.yaml:2:17: error: storage.storage_root: '${IOMIMIC_TEST_UNSET}' names no key of the "
        "manifest and no environment variable IOMIMIC_TEST_UNSET is set");
  CHECK(LoadError("storage:\n  storage_root: ${oc.env:IOMIMIC_TEST_UNSET}\n") ==
        "t.yaml:2:17: error: storage.storage_root: environment variable IOMIMIC_TEST_UNSET is not "
        "set (${oc.env:IOMIMIC_TEST_UNSET} has no default)");
  CHECK(Contains(LoadError("dataset:\n  data_folder: ${now:%H}\n"), "unknown resolver 'now'"));
  CHECK(Contains(LoadError("dataset:\n  data_folder: ${dataset.file_prefix}\n"
                           "  file_prefix: ${dataset.data_folder}\n"),
                 "refers back to itself"));
  CHECK(Contains(LoadError("dataset:\n  data_folder: a${b\n"), "unterminated interpolation"));
  CHECK(Contains(LoadError("reader:\n  batch_size: 4\ndataset:\n  data_folder: x/${reader}\n"),
                 "cannot be part of a text"));
}

TEST_CASE("type and range errors name file:line:col and the key") {
  CHECK(LoadError("dataset:\n  num_files_train: abc\n") ==
        "t.yaml:2:20: error: dataset.num_files_train: expected a non-negative integer, got 'abc'");
  CHECK(LoadError("dataset:\n  num_files_train: -3\n") ==
        "t.yaml:2:20: error: dataset.num_files_train: expected a non-negative integer, got '-3'");
  CHECK(LoadError("reader:\n  batch_size: {a: 1}\n") ==
        "t.yaml:2:15: error: reader.batch_size: expected a positive integer, got a map");
  CHECK(LoadError("reader:\n  batch_size: 0\n") ==
        "t.yaml:2:15: error: reader.batch_size: expected a positive integer, got '0'");
  CHECK(LoadError("train:\n  epochs: 0\n") ==
        "t.yaml:2:11: error: train.epochs: expected a positive integer, got '0'");
  CHECK(LoadError("dataset: 5\n") ==
        "t.yaml:1:10: error: dataset: expected a map of keys, got '5'");
  CHECK(LoadError("framework: pytroch\n") ==
        "t.yaml:1:12: error: framework: expected one of tensorflow or pytorch, got 'pytroch' "
        "(did you mean 'pytorch'?)");
  CHECK(LoadError("workflow:\n  train: maybe\n") ==
        "t.yaml:2:10: error: workflow.train: expected true or false, got 'maybe'");
  CHECK(LoadError("model:\n  parallelism:\n    zero_stage: 4\n") ==
        "t.yaml:3:17: error: model.parallelism.zero_stage: expected an integer from 0 to 3, got "
        "'4'");
  CHECK(LoadError("metric:\n  au: 90\n") ==
        "t.yaml:2:7: error: metric.au: expected a number from 0 to 1, got '90'");
  CHECK(LoadError("dataset:\n  record_dims: [4, x]\n") ==
        "t.yaml:2:20: error: dataset.record_dims[1]: expected a positive integer, got 'x'");
  CHECK(LoadError("dataset:\n  record_element_type: complex64\n") ==
        "t.yaml:2:24: error: dataset.record_element_type: expected one of uint8, int8, uint16, "
        "int16, uint32, int32, uint64, int64, float16, float32, float64, bool, float, int or "
        "double, got 'complex64'");
  CHECK(LoadError("dataset:\n  format: two words\n") ==
        "t.yaml:2:11: error: dataset.format: expected a plugin name (letters, digits, '_', '-', "
        "'.'), got 'two words'");
  CHECK(LoadError("model:\n  parallelism: {data: 0}\n") ==
        "t.yaml:2:23: error: model.parallelism.data: expected -1 (derived from the world size) or "
        "a positive integer, got '0'");
  CHECK(LoadError("dataset:\n  record_length_bytes: .inf\n") ==
        "t.yaml:2:24: error: dataset.record_length_bytes: expected a non-negative number, got "
        "'.inf'");
  CHECK(LoadError("dataset:\n  num_files_train: 99999999999999999999\n") ==
        "t.yaml:2:20: error: dataset.num_files_train: expected a non-negative integer, got "
        "'99999999999999999999'");
  CHECK(LoadError("reader:\n  batch_size:\n") ==
        "t.yaml:2:3: error: reader.batch_size: expected a positive integer, got null");
  CHECK(LoadError("- a\n- b\n") ==
        "t.yaml:1:1: error: expected a map of sections (model, dataset, reader, ...), got a list");
  CHECK(LoadError("train:\n  epochs: 1\n  epochs: 2\n") ==
        "t.yaml:3:3: error: train.epochs: duplicate key (first given at line 2)");
  CHECK(LoadError("iomimic:\n  compress_percentage: 101\n") ==
        "t.yaml:2:24: error: iomimic.compress_percentage: expected an integer from 0 to 100, got "
        "'101'");
  CHECK(LoadError("iomimic:\n  content: scrambled\n  compress_percentage: 30\n") ==
        "t.yaml:3:24: error: iomimic.compress_percentage: does not combine with iomimic.content: "
        "scrambled (its sectors are unique and its pattern random by definition); use "
        "iomimic.content: random for a compression or deduplication ratio");
  CHECK(LoadManifestFromString("iomimic:\n  content: scrambled\n  dedupe_percentage: 0\n", "t.yaml",
                               {}, BundledPlugins())
            .ok());
  CHECK(LoadError("iomimic:\n  dedupe_percentage: -1\n") ==
        "t.yaml:2:22: error: iomimic.dedupe_percentage: expected an integer from 0 to 100, got "
        "'-1'");
  CHECK(LoadError("iomimic:\n  dedupe_percentage: 12.5\n") ==
        "t.yaml:2:22: error: iomimic.dedupe_percentage: expected an integer from 0 to 100, got "
        "'12.5'");
  CHECK(LoadError("iomimic:\n  content: zero\n") ==
        "t.yaml:2:12: error: iomimic.content: expected one of random, zeros or scrambled, got "
        "'zero' (did "
        "you mean 'zeros'?)");
  CHECK(LoadError("", {"++workload.iomimic.compress_percentage=150"}) ==
        "override '++workload.iomimic.compress_percentage=150': iomimic.compress_percentage: "
        "expected an integer from 0 to 100, got '150'");

  // Accepted spellings.
  const Config c = MustLoad(
                       "dataset:\n  num_files_train: 1_000\n  record_length_bytes: 1.5e3\n"
                       "  format: my_format\n  record_element_type: int\n"
                       "reader:\n  read_threads: 0\n  transfer_size: null\n"
                       "model:\n  num_layers: -5\n")
                       .config;
  CHECK(c.dataset.num_files_train == 1000);
  CHECK(c.dataset.record_length_bytes == 1500);
  CHECK(c.dataset.format == "my_format");  // formats are plugins
  CHECK(c.dataset.record_element_type == "int64");
  CHECK(c.reader.read_threads == 0);
  CHECK(c.reader.transfer_size == 0);
  CHECK(c.model.num_layers == -5);
}

TEST_CASE("malformed YAML") {
  Result<LoadedManifest> m = LoadManifestFromString("dataset: [1, 2\nreader: x\n", "bad.yaml");
  REQUIRE_FALSE(m.ok());
  CHECK(m.status().code() == StatusCode::kInvalidArgument);
  const std::string message = m.status().message();
  CHECK(message.starts_with("bad.yaml:"));
  CHECK(Contains(message, ": error: malformed YAML: "));
  CHECK(message == "bad.yaml:2:7: error: malformed YAML: end of sequence flow not found");

  // Odd but valid YAML never throws.
  CHECK_NOTHROW((void)LoadManifestFromString("? [a, b]\n: c\n", "odd.yaml"));
  CHECK_NOTHROW((void)LoadManifestFromString("a: &x {b: 1}\nc: *x\n", "odd.yaml"));
  CHECK_NOTHROW((void)LoadManifestFromString("dataset: !!binary aGVsbG8=\n", "odd.yaml"));
  CHECK_NOTHROW((void)LoadManifestFromString("\t- x", "odd.yaml"));
}

// Issue 13, defect 3: a recursive alias crashed the duplicate-key check
// (unbounded recursion); aliases of aliases ran for minutes.
TEST_CASE("YAML aliases are bounded: recursion, billion laughs, depth") {
  std::string m = LoadError("a: &a [*a]\n");
  CHECK(m == "t.yaml:1:8: error: YAML alias refers to its own anchor (a recursive structure)");
  m = LoadError("dataset:\n  x: &x {y: [1, *x]}\n");
  CHECK(Contains(m, "t.yaml:2:"));
  CHECK(Contains(m, "refers to its own anchor"));

  std::string laughs = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 10; ++i) {
    const std::string p = "*a" + std::to_string(i - 1);
    laughs += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [" + p;
    for (int j = 1; j < 10; ++j) laughs += ", " + p;
    laughs += "]\n";
  }
  CHECK(laughs.size() < 700);
  m = LoadError(laughs);
  CHECK(m.starts_with("t.yaml:"));
  CHECK(Contains(m, "more than 100000 nodes with its aliases expanded"));

  std::string deep;
  for (int i = 0; i < 200; ++i) deep += "[";
  for (int i = 0; i < 200; ++i) deep += "]";
  m = LoadError("dataset: " + deep + "\n");
  CHECK(Contains(m, "t.yaml:1:"));
  CHECK(Contains(m, "nests more than 64 levels"));

  // The same bounds hold for an override's value.
  m = LoadError("", {"++workload.dataset.x=&a [*a]"});
  CHECK(Contains(m, "override '++workload.dataset.x=&a [*a]'"));
  CHECK(Contains(m, "refers to its own anchor"));

  // Plain reuse of an anchor still works.
  LoadedManifest ok = MustLoad("x: &n 7\ndataset:\n  num_files_train: *n\n");
  CHECK(ok.config.dataset.num_files_train == 7);
}

// Issue 13, defect 6: names that become path components stay in their folder.
TEST_CASE("file_prefix, model.name and hydra.output_subdir cannot leave their folders") {
  std::string m = LoadError("", {"++workload.dataset.file_prefix=../../escaped"});
  CHECK(Contains(m, "dataset.file_prefix: '../../escaped' contains '/'"));
  m = LoadError("dataset:\n  file_prefix: /abs/x\n");
  CHECK(m.starts_with("t.yaml:2:16: error: dataset.file_prefix: '/abs/x' is an absolute path"));
  m = LoadError("dataset:\n  file_prefix: a/b\n");
  CHECK(Contains(m, "dataset.file_prefix: 'a/b' contains '/'"));
  m = LoadError("dataset:\n  file_prefix: '..'\n");
  CHECK(Contains(m, "dataset.file_prefix: '..' is '..'"));
  m = LoadError("model:\n  name: ../../../x\n");
  CHECK(m.starts_with("t.yaml:2:9: error: model.name: '../../../x' contains '/'"));
  m = LoadError("", {"hydra.output_subdir=../x"});
  CHECK(Contains(m, "hydra.output_subdir: '../x' contains a '..' component"));
  m = LoadError("", {"hydra.output_subdir=/tmp/x"});
  CHECK(Contains(m, "hydra.output_subdir: '/tmp/x' is an absolute path"));
  // Ordinary names are fine.
  CHECK(MustLoad("dataset:\n  file_prefix: img.v2\nmodel:\n  name: my-model\n")
            .config.dataset.file_prefix == "img.v2");
  CHECK(MustLoad("", {"hydra.output_subdir=meta/..hidden"}).config.hydra.output_subdir ==
        "meta/..hidden");
}

TEST_CASE("shuffle modes and read types") {
  auto shuffle = [](const std::string& value) {
    return MustLoad("reader:\n  file_shuffle: " + value + "\n").config.reader.file_shuffle;
  };
  CHECK(shuffle("off") == ShuffleMode::kOff);  // YAML 1.1 false: off means off
  CHECK(shuffle("'off'") == ShuffleMode::kOff);
  CHECK(shuffle("False") == ShuffleMode::kOff);
  CHECK(shuffle("seed") == ShuffleMode::kSeed);
  CHECK(shuffle("True") == ShuffleMode::kSeed);
  CHECK(shuffle("on") == ShuffleMode::kSeed);
  CHECK(shuffle("random") == ShuffleMode::kRandom);
  CHECK(LoadError("reader:\n  sample_shuffle: always\n") ==
        "t.yaml:2:19: error: reader.sample_shuffle: expected one of off, seed or random, got "
        "'always'");
  CHECK(ShuffleModeName(ShuffleMode::kOff) == "off");
  CHECK(ShuffleModeName(ShuffleMode::kSeed) == "seed");
  CHECK(ShuffleModeName(ShuffleMode::kRandom) == "random");

  CHECK(MustLoad("reader: {read_type: memory}").config.reader.read_type == ReadType::kMemory);
  CHECK(MustLoad("reader: {read_type: on_demand}").config.reader.read_type == ReadType::kOnDemand);
  CHECK(ReadTypeName(ReadType::kOnDemand) == "on_demand");
  CHECK(ReadTypeName(ReadType::kMemory) == "memory");
}

TEST_CASE("time distributions (docs/dlio-compat.md §1.7)") {
  using Kind = Distribution::Kind;
  auto time = [](const std::string& yaml) { return MustLoad(yaml).config.train.computation_time; };

  Distribution d = time("train: {computation_time: 0.25}");
  CHECK(d.kind == Kind::kConstant);
  CHECK(d.mean == 0.25);
  CHECK(d.Expected() == 0.25);

  d = time("train: {computation_time: {mean: 2}}");
  CHECK(d.kind == Kind::kConstant);
  CHECK(d.mean == 2);

  d = time("train: {computation_time: {mean: 2, stdev: 0.5}}");
  CHECK(d.kind == Kind::kNormal);
  CHECK(d.mean == 2);
  CHECK(d.stdev == 0.5);

  d = time("train: {computation_time: {type: normal, mean: 0, stdev: 1}}");
  CHECK(d.kind == Kind::kNormal);
  CHECK(d.Expected() == doctest::Approx(std::sqrt(2 / std::numbers::pi)));  // |N(0,1)|

  d = time("train: {computation_time: {type: uniform, min: 1, max: 3}}");
  CHECK(d.kind == Kind::kUniform);
  CHECK(d.min == 1);
  CHECK(d.max == 3);
  CHECK(d.Expected() == 2);

  d = time("train: {computation_time: {type: gamma, shape: 2, scale: 0.5}}");
  CHECK(d.kind == Kind::kGamma);
  CHECK(d.Expected() == 1);

  d = time("train: {computation_time: {type: exponential, scale: 0.3}}");
  CHECK(d.kind == Kind::kExponential);
  CHECK(d.Expected() == 0.3);

  d = time("train: {computation_time: {type: poisson, lam: 4}}");
  CHECK(d.kind == Kind::kPoisson);
  CHECK(d.Expected() == 4);

  SUBCASE("the *_stdev siblings") {
    d = time("train:\n  computation_time: 1.0\n  computation_time_stdev: 0.1\n");
    CHECK(d.kind == Kind::kNormal);
    CHECK(d.mean == 1.0);
    CHECK(d.stdev == 0.1);
    CHECK(d.Expected() == doctest::Approx(1.0));
    d = time("train:\n  computation_time: 1.0\n  computation_time_stdev: 0\n");
    CHECK(d.kind == Kind::kConstant);

    const Config c = MustLoad(
                         "evaluation: {eval_time: 2, eval_time_stdev: 0.5}\n"
                         "reader: {preprocess_time: 0.1, preprocess_time_stdev: 0.01}\n")
                         .config;
    CHECK(c.evaluation.eval_time.kind == Kind::kNormal);
    CHECK(c.evaluation.eval_time.stdev == 0.5);
    CHECK(c.reader.preprocess_time.kind == Kind::kNormal);
    CHECK(c.reader.preprocess_time.stdev == 0.01);

    const LoadedManifest m = MustLoad(
        "train:\n  computation_time: {type: uniform, min: 1, max: 2}\n"
        "  computation_time_stdev: 0.1\n");
    CHECK(m.config.train.computation_time.kind == Kind::kUniform);
    CHECK(HasWarning(m, "'train.computation_time_stdev' is ignored"));

    CHECK(LoadError("train:\n  computation_time_stdev: 0.1\n") ==
          "t.yaml:2:27: error: train.computation_time_stdev: given without "
          "train.computation_time");
  }
  SUBCASE("errors and warnings") {
    CHECK(LoadError("train:\n  computation_time: {type: uniform, min: 1}\n") ==
          "t.yaml:2:21: error: train.computation_time: a uniform distribution needs 'max'");
    CHECK(LoadError("train:\n  computation_time: {type: weibull, a: 1}\n") ==
          "t.yaml:2:28: error: train.computation_time.type: expected one of normal, uniform, "
          "gamma, exponential or poisson, got 'weibull'");
    CHECK(Contains(LoadError("train:\n  computation_time: {stdev: 1}\n"),
                   "train.computation_time: a distribution needs 'type'"));
    CHECK(LoadError("train:\n  computation_time: {type: uniform, min: 3, max: 1}\n") ==
          "t.yaml:2:50: error: train.computation_time.max: must not be smaller than min (3)");
    CHECK(LoadError("train:\n  computation_time: {mean: 1, stdev: -1}\n") ==
          "t.yaml:2:38: error: train.computation_time.stdev: expected a non-negative number, "
          "got '-1'");
    CHECK(LoadError("train:\n  computation_time: [1]\n") ==
          "t.yaml:2:21: error: train.computation_time: expected a number of seconds or a "
          "distribution map, got a list");
    const LoadedManifest m =
        MustLoad("train:\n  computation_time: {type: uniform, min: 1, max: 2, mean: 5}\n");
    REQUIRE(m.warnings.size() == 1);
    CHECK(m.warnings[0].message ==
          "key 'train.computation_time.mean' is not used by a uniform distribution");
  }
  SUBCASE("Expected() of folded draws") {
    Distribution constant;
    constant.mean = -1;  // DLIO sleeps |draw|
    CHECK(constant.Expected() == 1);
    Distribution uniform;
    uniform.kind = Kind::kUniform;
    uniform.min = -1;
    uniform.max = 3;
    CHECK(uniform.Expected() == doctest::Approx(10.0 / 8));
    Distribution normal;
    normal.kind = Kind::kNormal;
    normal.mean = 10;
    normal.stdev = 0.1;
    CHECK(normal.Expected() == doctest::Approx(10));
  }
  SUBCASE("ParseDistributionScalar") {
    Result<Distribution> parsed = ParseDistributionScalar("0.25");
    REQUIRE(parsed.ok());
    CHECK(parsed->kind == Kind::kConstant);
    CHECK(parsed->mean == 0.25);
    CHECK_FALSE(parsed->is_zero());
    REQUIRE(ParseDistributionScalar("0").ok());
    CHECK(ParseDistributionScalar("0")->is_zero());
    CHECK(ParseDistributionScalar("-1")->Expected() == 1);
    CHECK_FALSE(ParseDistributionScalar("abc").ok());
    CHECK_FALSE(ParseDistributionScalar("nan").ok());
    CHECK_FALSE(ParseDistributionScalar("").ok());
  }
}

TEST_CASE("ToYaml") {
  Config c;
  c.model.name = "off";  // looks like a boolean: must come back as a string
  c.dataset.file_prefix = "123";
  c.dataset.format = "npz";
  c.dataset.record_length_bytes = 114660.07;
  c.dataset.record_length_bytes_stdev = 1e-5;
  c.reader.data_loader = "pytorch";
  c.reader.data_loader_given = true;
  c.framework = "pytorch";
  c.reader.file_shuffle = ShuffleMode::kRandom;
  c.reader.transfer_size = 4096;
  c.reader.preprocess_time.kind = Distribution::Kind::kNormal;
  c.reader.preprocess_time.mean = 0.5;
  c.reader.preprocess_time.stdev = 0.1;
  c.train.computation_time.kind = Distribution::Kind::kGamma;
  c.train.computation_time.shape = 2;
  c.train.computation_time.scale = 0.25;
  c.evaluation.eval_time.kind = Distribution::Kind::kPoisson;
  c.evaluation.eval_time.lam = 3;
  c.checkpoint.ksm_present = true;
  c.checkpoint.randomize_tensor = false;
  c.checkpoint.backend = "posix";
  c.checkpoint.options = {{"x", "true"}};
  c.storage.storage_options = {{"region", "us-east-1"}, {"empty", ""}};
  c.profiling.iostat_devices = {"sda"};
  c.output.folder = "results";
  c.iomimic.sample_log = true;

  for (const bool workload_root : {false, true}) {
    const std::string yaml = ToYaml(c, workload_root);
    CAPTURE(yaml);
    CHECK(yaml.starts_with(workload_root ? "workload:\n  model:\n" : "model:\n"));
    CHECK(Contains(yaml, "iomimic:"));
    CHECK(Contains(yaml, "file_shuffle: random"));
    CHECK(Contains(yaml, "record_length_bytes: 114660.07"));
    CHECK(Contains(yaml, "record_length_bytes_stdev: 1.0e-05"));
    CHECK(Contains(yaml, "file_prefix: \"123\""));
    CHECK(Contains(yaml, "type: gamma"));
    const LoadedManifest again = MustLoad(yaml);
    CHECK(again.warnings.empty());
    CHECK(again.config == c);
  }

  // Sections in DLIO's order, then iomimic's.
  const std::string yaml = ToYaml(Config{}, false);
  std::size_t last = 0;
  for (const char* section :
       {"\nframework:", "\nworkflow:", "\nstorage:", "\ndataset:", "\nreader:", "\ntrain:",
        "\nevaluation:", "\ncheckpoint:", "\noutput:", "\nprofiling:", "\nmetric:", "\niomimic:"}) {
    const std::size_t at = yaml.find(section);
    CAPTURE(section);
    REQUIRE(at != std::string::npos);
    CHECK(at > last);
    last = at;
  }
  // An unnamed data loader is only a comment, so a framework change stays valid.
  CHECK(Contains(yaml, "reader:\n  # data_loader: tensorflow"));
  CHECK(Contains(ToYaml(Config{}, true), "  reader:\n    # data_loader: tensorflow"));
  CHECK(Contains(yaml, "file_shuffle: \"off\""));
}

TEST_CASE("reader.odirect selects the odirect storage back end") {
  CHECK(MustLoad("reader: {odirect: True}").config.storage.backend == "odirect");
  CHECK(MustLoad("reader: {odirect: False}").config.storage.backend == "posix");
  CHECK(MustLoad("", {"++workload.reader.odirect=True"}).config.storage.backend == "odirect");
  // An explicit back end wins.
  const Config c = MustLoad("reader: {odirect: True}\nstorage: {backend: posix}").config;
  CHECK(c.storage.backend == "posix");
  CHECK(c.reader.odirect);
}

TEST_CASE("cross-key validation (docs/dlio-compat.md §1.8)") {
  CHECK(LoadError("dataset:\n  record_dims: [4, 4]\n  record_length_bytes_stdev: 10\n") ==
        "t.yaml:3:30: error: dataset.record_length_bytes_stdev: must be 0 when "
        "dataset.record_dims is set (give record_length_bytes with a stdev instead of "
        "record_dims)");
  // What a format can write is the format's to say (its Validate, called
  // before any file is made): the manifest itself is fine.
  CHECK(MustLoad("dataset:\n  record_dims: [10]\n  hdf5:\n    num_dset_per_record: 3\n")
            .config.dataset.hdf5_num_dset_per_record == 3);
  CHECK(MustLoad("dataset:\n  record_dims: [9]\n  hdf5:\n    num_dset_per_record: 3\n")
            .config.dataset.hdf5_num_dset_per_record == 3);
  CHECK(
      MustLoad("dataset:\n  format: png\n  record_dims: [2, 2, 3]\n").config.dataset.record_dims ==
      std::vector<std::uint64_t>{2, 2, 3});
  CHECK(LoadError("checkpoint:\n  num_checkpoints_write: 2\n  num_checkpoints_read: 3\n") ==
        "t.yaml:3:25: error: checkpoint.num_checkpoints_read: 3 exceeds "
        "checkpoint.num_checkpoints_write (2)");
  CHECK(
      MustLoad("checkpoint:\n  num_checkpoints_read: 3\n").config.checkpoint.num_checkpoints_read ==
      3);
  CHECK(LoadError("model:\n  parallelism: {pipeline: 2, zero_stage: 3}\n") ==
        "t.yaml:2:42: error: model.parallelism.zero_stage: ZeRO stage 3 does not work with "
        "pipeline parallelism (model.parallelism.pipeline is 2)");
  CHECK(LoadError("model:\n  num_layers: 2\n  parallelism: {pipeline: 4}\n") ==
        "t.yaml:2:15: error: model.num_layers: model.num_layers (2) must be at least "
        "model.parallelism.pipeline (4)");
  CHECK(LoadError("model:\n  parallelism: {data: 4}\n") ==
        "t.yaml:2:23: error: model.parallelism.data: may be set only with checkpoint.mode: "
        "subset (the default mode derives it from the world size); MLPerf Storage's "
        "mlpstorage runs these files with ++workload.checkpoint.mode=subset when fewer "
        "processes than model.parallelism.data x tensor x pipeline write the checkpoint, and "
        "the DLIO fork refuses them in default mode too");
  CHECK(MustLoad("model:\n  parallelism: {data: 4}\ncheckpoint: {mode: subset}\n")
            .config.model.data_parallelism == 4);
  CHECK(LoadError("checkpoint: {mode: subset}\n") ==
        "t.yaml:1:20: error: checkpoint.mode: subset needs model.parallelism.data (the data "
        "parallelism of the full job)");
  // A refused default says where it came from (issue 31, item 8).
  CHECK(LoadError("framework: pytorch\nreader:\n  data_loader: pytorch\n") ==
        "t.yaml:3:16: error: reader.data_loader: the pytorch loader cannot read tfrecord files "
        "(dataset.format is not set: DLIO's default is tfrecord); use the tensorflow or dali "
        "loader, another dataset.format, or storage_library: s3dlio (MLPerf Storage's DLIO fork "
        "reads tfrecord with pytorch through s3dlio)");
  CHECK(LoadError("framework: pytorch\ndataset: {format: tfrecord}\nreader:\n"
                  "  data_loader: pytorch\n") ==
        "t.yaml:4:16: error: reader.data_loader: the pytorch loader cannot read tfrecord files; "
        "use the tensorflow or dali loader, another dataset.format, or storage_library: s3dlio "
        "(MLPerf Storage's DLIO fork reads tfrecord with pytorch through s3dlio)");
  CHECK(LoadError("dataset: {format: npz}\nreader:\n  data_loader: pytorch\n") ==
        "t.yaml:3:16: error: reader.data_loader: 'pytorch' does not match framework "
        "'tensorflow' (framework is not set: DLIO's default is tensorflow)");
  CHECK(LoadError("framework: tensorflow\ndataset: {format: npz}\nreader: {data_loader: "
                  "pytorch}\n") ==
        "t.yaml:3:23: error: reader.data_loader: 'pytorch' does not match framework "
        "'tensorflow'");
  // MLPerf Storage's fork reads tfrecord with pytorch through s3dlio
  // (ConfigArguments.validate), wherever storage_library is written; and
  // only training and evaluation read.
  for (const std::string library :
       {"reader: {data_loader: pytorch}\nstorage: {storage_library: s3dlio}\n",
        "reader: {data_loader: pytorch, storage_library: s3dlio}\n",
        "reader: {data_loader: pytorch}\nstorage: {storage_options: {storage_library: "
        "s3dlio}}\n"}) {
    CAPTURE(library);
    CHECK(MustLoad("framework: pytorch\n" + library).config.dataset.format == "tfrecord");
  }
  CHECK(Contains(LoadError("framework: pytorch\nreader: {data_loader: pytorch}\n"
                           "storage: {storage_library: minio}\n"),
                 "cannot read tfrecord files"));
  CHECK(MustLoad("framework: pytorch\nreader: {data_loader: pytorch}\n"
                 "workflow: {generate_data: True, train: False}\n")
            .config.reader.data_loader == "pytorch");
  // Every problem at once, in one line: the first as usual, each other one
  // after "; also" with its own position (MLPerf's pytorch_file_backend.yaml
  // has these three).
  CHECK(LoadError("reader:\n  data_loader: pytorch\n  data_loader_classname: my.Loader\n") ==
        "t.yaml:2:16: error: reader.data_loader: the pytorch loader cannot read tfrecord files "
        "(dataset.format is not set: DLIO's default is tfrecord); use the tensorflow or dali "
        "loader, another dataset.format, or storage_library: s3dlio (MLPerf Storage's DLIO fork "
        "reads tfrecord with pytorch through s3dlio); also t.yaml:2:16: reader.data_loader: "
        "'pytorch' does not match framework 'tensorflow' (framework is not set: DLIO's default "
        "is tensorflow); also t.yaml:3:26: reader.data_loader_classname: needs "
        "reader.data_loader_sampler (iterative or index)");
  CHECK(MustLoad("framework: pytorch\ndataset: {format: npz}\nreader: {data_loader: dali}\n")
            .config.reader.data_loader == "dali");
  CHECK(MustLoad("framework: pytorch\n").config.reader.data_loader == "tensorflow");
  CHECK(LoadError("checkpoint:\n  ksm: {await_time: 10}\n") ==
        "t.yaml:2:8: error: checkpoint.ksm: needs checkpoint.randomize_tensor: False (KSM "
        "merges identical pages)");
  CHECK(MustLoad("checkpoint:\n  ksm:\n  randomize_tensor: false\n").config.checkpoint.ksm_present);
  CHECK(LoadError("reader:\n  data_loader_classname: my.Loader\n") ==
        "t.yaml:2:26: error: reader.data_loader_classname: needs reader.data_loader_sampler "
        "(iterative or index)");
  // A value from an override is blamed on the override.
  CHECK(LoadError("model:\n  parallelism: {pipeline: 2}\n",
                  {"++workload.model.parallelism.zero_stage=3"}) ==
        "override '++workload.model.parallelism.zero_stage=3': model.parallelism.zero_stage: ZeRO "
        "stage 3 does not work with pipeline parallelism (model.parallelism.pipeline is 2)");
}

TEST_CASE("folders keep their relative spelling without trailing slashes") {
  const Config c = MustLoad(
                       "dataset: {data_folder: data/x///}\n"
                       "checkpoint: {checkpoint_folder: ck/}\n")
                       .config;
  CHECK(c.dataset.data_folder == "data/x");
  CHECK(c.checkpoint.checkpoint_folder == "ck");
  CHECK(MustLoad("dataset: {data_folder: /}").config.dataset.data_folder == "/");
  CHECK(LoadError("dataset:\n  data_folder: ''\n") ==
        "t.yaml:2:16: error: dataset.data_folder: expected a non-empty string");
}

TEST_CASE("a saved config with a workload: root loads too") {
  const LoadedManifest m = MustLoad("workload:\n  train:\n    epochs: 3\nhydra:\n  job: {}\n",
                                    {"++workload.reader.batch_size=2"});
  CHECK(m.config.train.epochs == 3);
  CHECK(m.config.reader.batch_size == 2);
  REQUIRE(m.warnings.size() == 1);
  CHECK(m.warnings[0].ToString() ==
        "t.yaml:4:1: warning: key 'hydra' next to 'workload:' is ignored");
}

TEST_CASE("Diagnostic::ToString") {
  Diagnostic d;
  d.file = "a.yaml";
  d.line = 3;
  d.column = 7;
  d.message = "unknown key 'x'";
  CHECK(d.ToString() == "a.yaml:3:7: warning: unknown key 'x'");
  d.line = 0;
  CHECK(d.ToString() == "a.yaml: warning: unknown key 'x'");
}

TEST_CASE("reader.file_access selects the MPI-IO back end unless a backend is named") {
  Config c = MustLoad("reader: {file_access: collective}\n").config;
  CHECK(c.storage.backend == "mpiio");
  CHECK(c.storage.options.at("mode") == "collective");
  c = MustLoad("reader: {file_access: shared}\n").config;
  CHECK(c.storage.backend == "mpiio");
  CHECK(c.storage.options.at("mode") == "independent");
  c = MustLoad("reader: {file_access: shared}\nstorage: {backend: posix}\n").config;
  CHECK(c.storage.backend == "posix");
  c = MustLoad("reader: {file_access: multi}\n").config;
  CHECK(c.storage.backend == "posix");
  // The resolved manifest reloads to the same thing.
  Config again =
      MustLoad(ToYaml(MustLoad("reader: {file_access: collective}\n").config, false)).config;
  CHECK(again.storage.backend == "mpiio");
  CHECK(again.storage.options.at("mode") == "collective");
}

TEST_CASE("an unknown key of a megabyte is reported, without a suggestion") {
  // A spelling suggestion compares the key with its section's known keys;
  // one far longer than any of them is skipped by its length alone, without
  // an edit distance over a megabyte per candidate (hostile input).
  const std::string key(std::size_t{1} << 20, 'k');
  // An explicit key ("? "): YAML limits implicit keys to 1024 characters.
  const LoadedManifest manifest = MustLoad("dataset:\n  ? " + key + "\n  : 1\n");
  REQUIRE(manifest.warnings.size() == 1);
  CHECK(manifest.warnings[0].message.starts_with("unknown key 'dataset.kkkk"));
  CHECK(manifest.warnings[0].message.find("did you mean") == std::string::npos);
}

}  // namespace
}  // namespace iomimic::config
