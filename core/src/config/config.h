// The resolved workload manifest.
//
// A Config holds every DLIO workload key (reference/dlio-compat.md §1.3) with
// DLIO's defaults, the legacy spellings of §1.4 folded in, and iomimic's own
// keys (plugin selection and options). It is a plain value: no YAML types
// leak out of the config subsystem, so every other layer can include this
// header cheaply.

#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "iomimic/status.h"

namespace iomimic::config {

// A time distribution (§1.7). Seconds. Draws are non-negative (DLIO sleeps
// the absolute value of a draw).
struct Distribution {
  enum class Kind { kConstant, kNormal, kUniform, kGamma, kExponential, kPoisson };
  Kind kind = Kind::kConstant;
  double mean = 0;   // constant value, or normal mean
  double stdev = 0;  // normal
  double min = 0;    // uniform
  double max = 0;    // uniform
  double shape = 0;  // gamma
  double scale = 0;  // gamma, exponential
  double lam = 0;    // poisson
  bool is_zero() const { return kind == Kind::kConstant && mean == 0; }
  // The expected value of a draw (for planning and reports).
  double Expected() const;

  friend bool operator==(const Distribution&, const Distribution&) = default;
};

enum class ShuffleMode { kOff, kSeed, kRandom };
enum class ReadType { kOnDemand, kMemory };

struct ModelConfig {
  std::string name = "default";
  std::string type;  // "transformer" switches checkpoint sizing
  std::uint64_t model_size_bytes = 10240;
  std::string model_datatype = "fp16";
  std::string optimizer_datatype = "fp32";
  std::vector<std::uint64_t> optimization_groups;
  std::int64_t num_layers = -1;
  std::vector<std::uint64_t> layer_parameters;
  std::int64_t tensor_parallelism = 1;
  std::int64_t pipeline_parallelism = 1;
  std::int64_t data_parallelism = -1;
  std::int64_t zero_stage = 0;
  std::uint64_t vocab_size = 32000;
  std::uint64_t hidden_size = 2048;
  std::uint64_t ffn_hidden_size = 8192;
  std::uint64_t num_attention_heads = 32;
  std::uint64_t num_kv_heads = 8;

  friend bool operator==(const ModelConfig&, const ModelConfig&) = default;
};

struct WorkflowConfig {
  bool generate_data = false;
  bool train = true;
  bool evaluation = false;
  bool checkpoint = false;
  bool profiling = false;

  friend bool operator==(const WorkflowConfig&, const WorkflowConfig&) = default;
};

struct StorageConfig {
  std::string storage_type = "local_fs";
  std::string storage_root = "./";
  std::map<std::string, std::string> storage_options;  // DLIO's (S3 credentials...)
  // iomimic: storage plugin name and its options.
  std::string backend = "posix";
  std::map<std::string, std::string> options;

  friend bool operator==(const StorageConfig&, const StorageConfig&) = default;
};

struct DatasetConfig {
  std::string format = "tfrecord";
  std::string data_folder = "./data";
  std::uint64_t num_files_train = 8;
  std::uint64_t num_files_eval = 0;
  std::uint64_t num_samples_per_file = 1;
  double record_length_bytes = 65536;
  double record_length_bytes_stdev = 0;
  double record_length_bytes_resize = 0;
  std::vector<std::uint64_t> record_dims;
  std::string record_element_type = "uint8";
  std::uint64_t num_subfolders_train = 0;
  std::uint64_t num_subfolders_eval = 0;
  std::string file_prefix = "img";
  std::string compression = "none";
  int compression_level = 4;
  bool enable_chunking = false;
  std::uint64_t chunk_size = 0;
  bool keep_files = true;
  std::uint64_t generation_buffer_size = 2ULL << 30;
  // hdf5.*
  std::vector<std::uint64_t> hdf5_chunk_dims;
  std::uint64_t hdf5_num_dset_per_record = 1;
  std::vector<std::uint64_t> hdf5_max_shape;
  // parquet.* (MLPerf Storage's DLIO fork; docs/parquet.md). Passed to the
  // format as FileSpec parameters and plugin options, never read by the core.
  struct ParquetColumn {
    std::string name;
    std::string dtype = "float32";
    std::uint64_t size = 0;  // 0 = absent
    bool read = false;
    friend bool operator==(const ParquetColumn&, const ParquetColumn&) = default;
  };
  std::vector<ParquetColumn> parquet_columns;
  std::uint64_t parquet_row_group_size = 1024;
  std::string parquet_read_mode;
  std::string parquet_partition_by;
  std::uint64_t parquet_generation_batch_size = 0;
  bool parquet_use_s3dlio_gen = false;
  // iomimic: format plugin options.
  std::map<std::string, std::string> options;

  friend bool operator==(const DatasetConfig&, const DatasetConfig&) = default;
};

struct ReaderConfig {
  std::string data_loader = "tensorflow";
  // Whether the manifest names data_loader. DLIO checks the framework/loader
  // pairing (and tfrecord with pytorch) only for a named loader: its built-in
  // default is never checked, which llama_1t.yaml (framework pytorch, no
  // reader section, train on) relies on. ToYaml leaves an unnamed loader out.
  bool data_loader_given = false;
  std::uint64_t batch_size = 1;
  std::uint64_t batch_size_eval = 1;
  std::uint64_t read_threads = 1;
  std::uint64_t computation_threads = 1;
  std::uint64_t prefetch_size = 2;
  ShuffleMode file_shuffle = ShuffleMode::kOff;
  ShuffleMode sample_shuffle = ShuffleMode::kOff;
  std::uint64_t shuffle_size = 1024;
  std::uint64_t transfer_size = 0;  // 0 = unset (format default, 256 KiB for tfrecord)
  ReadType read_type = ReadType::kOnDemand;
  std::string file_access = "multi";
  bool dont_use_mmap = false;
  bool odirect = false;
  bool pin_memory = true;
  std::string multiprocessing_context = "fork";
  Distribution preprocess_time;
  std::vector<std::uint64_t> transformed_record_dims;
  std::string transformed_record_element_type = "uint8";
  std::string reader_classname;
  std::string data_loader_classname;
  std::string data_loader_sampler;
  // iomimic: decode what is read (false measures storage alone).
  bool decode = true;

  friend bool operator==(const ReaderConfig&, const ReaderConfig&) = default;
};

struct TrainConfig {
  std::uint64_t epochs = 1;
  Distribution computation_time;
  std::int64_t total_training_steps = -1;
  bool seed_change_epoch = true;
  std::uint64_t seed = 123;

  friend bool operator==(const TrainConfig&, const TrainConfig&) = default;
};

struct EvaluationConfig {
  Distribution eval_time;
  std::uint64_t eval_after_epoch = 1;
  std::uint64_t epochs_between_evals = 1;

  friend bool operator==(const EvaluationConfig&, const EvaluationConfig&) = default;
};

struct CheckpointConfig {
  std::string checkpoint_folder = "./checkpoints";
  std::uint64_t checkpoint_after_epoch = 1;
  std::uint64_t epochs_between_checkpoints = 1;
  std::int64_t steps_between_checkpoints = -1;
  std::string type = "rank_zero";
  std::string mode = "default";
  bool fsync = false;
  double time_between_checkpoints = -1;
  std::int64_t num_checkpoints_write = -1;
  std::int64_t num_checkpoints_read = -1;
  bool recovery_rank_shift = false;
  bool rank_sync = false;
  bool randomize_tensor = true;
  std::string checkpoint_mechanism_classname;
  bool ksm_present = false;
  // iomimic: storage plugin for the checkpoint folder ("" = same as dataset).
  std::string backend;
  std::map<std::string, std::string> options;

  friend bool operator==(const CheckpointConfig&, const CheckpointConfig&) = default;
};

struct OutputConfig {
  std::string folder;  // empty = derived (hydra.run.dir or hydra_log/<model>/<time>)
  std::string log_file = "dlio.log";
  std::uint64_t exclude_start_steps = 1;
  std::uint64_t exclude_end_steps = 0;

  friend bool operator==(const OutputConfig&, const OutputConfig&) = default;
};

struct ProfilingConfig {
  std::string profiler = "iostat";
  std::vector<std::string> iostat_devices;

  friend bool operator==(const ProfilingConfig&, const ProfilingConfig&) = default;
};

struct MetricConfig {
  double au = 0.90;

  friend bool operator==(const MetricConfig&, const MetricConfig&) = default;
};

// iomimic's own run options that have no DLIO equivalent (section `iomimic`).
// Upper bound of iomimic.accelerators_per_process.
inline constexpr std::uint64_t kMaxAcceleratorsPerProcess = 4096;

struct IomimicConfig {
  // Write <rank>_samples.csv: epoch, step, file index, sample index per read.
  bool sample_log = false;
  // Shuffle like DLIO HEAD does (index loaders read in sorted order): false
  // gives true per-epoch shuffles.
  bool dlio_order = false;
  // Hash every sample's bytes (an order-independent sum, reported as
  // iomimic.read_checksum) so runs on different back ends can be compared.
  bool checksum = false;
  // Emulated accelerators per process, each on its own thread with its own
  // plan, prefetch queue, consumer and figures, exactly as if it were its
  // own rank: the run has ranks x this many accelerators.
  std::uint64_t accelerators_per_process = 1;
  // The most entries a per-step list (load, proc, compute of a block or an
  // evaluation pass) has in <rank>_output.json; a longer list is written as
  // means of k = ceil(steps / max_step_list) consecutive steps. 0: unlimited.
  std::uint64_t max_step_list = 100000;
  // Back the readers' buffers of 2 MiB and more with transparent huge pages
  // (madvise MADV_HUGEPAGE): fewer page faults and TLB misses per sample.
  bool huge_pages = false;
  // What generated payloads contain, like fio's buffer options (README.md,
  // "Choosing plugins"; iomimic::ContentOptions in iomimic/random.h):
  // "random" or "zeros".
  std::string content = "random";
  // Percent of every 4 KiB block that is zeros (compressible), 0..100, like
  // fio's buffer_compress_percentage.
  std::uint64_t compress_percentage = 0;
  // Percent of 4 KiB blocks that are copies of a small shared set of blocks,
  // 0..100, like fio's dedupe_percentage.
  std::uint64_t dedupe_percentage = 0;

  friend bool operator==(const IomimicConfig&, const IomimicConfig&) = default;
};

// Hydra settings that DLIO users pass as ++hydra.run.dir / ++hydra.output_subdir.
struct HydraConfig {
  std::string run_dir;
  std::string output_subdir = ".hydra";

  friend bool operator==(const HydraConfig&, const HydraConfig&) = default;
};

struct Config {
  ModelConfig model;
  std::string framework = "tensorflow";
  WorkflowConfig workflow;
  StorageConfig storage;
  DatasetConfig dataset;
  ReaderConfig reader;
  TrainConfig train;
  EvaluationConfig evaluation;
  CheckpointConfig checkpoint;
  OutputConfig output;
  ProfilingConfig profiling;
  MetricConfig metric;
  IomimicConfig iomimic;
  HydraConfig hydra;

  friend bool operator==(const Config&, const Config&) = default;
};

// A non-fatal remark about the manifest, e.g. an unknown key.
struct Diagnostic {
  std::string file;
  int line = 0;    // 1-based; 0 when unknown (e.g. a command-line override)
  int column = 0;  // 1-based
  std::string message;
  // "<file>:<line>:<col>: warning: <message>"
  std::string ToString() const;

  friend bool operator==(const Diagnostic&, const Diagnostic&) = default;
};

// Where a manifest comes from: a path, or a workload name looked up as
// <config_dir>/<name>.yaml or <config_dir>/workload/<name>.yaml.
struct ManifestSource {
  std::string path;                    // explicit manifest path, or empty
  std::string workload;                // `workload=<name>`, or empty
  std::string config_dir;              // --config-dir (empty = shipped workloads/: installed
                                       // <prefix>/share/iomimic/workloads, else the source tree's)
  std::vector<std::string> overrides;  // raw Hydra-style strings, in order
};

// The loaded manifest and what it took to get there.
struct LoadedManifest {
  Config config;
  std::string manifest_path;               // the YAML file actually read
  std::string workload_name;               // file stem, or the workload= name
  std::vector<std::string> raw_overrides;  // as given (for overrides.yaml)
  std::vector<Diagnostic> warnings;
};

// Loads and validates a manifest. Errors are one line:
//   "<file>:<line>:<col>: error: <what>"  (manifest values)
//   "override '<text>': <what>"            (command-line overrides)
Result<LoadedManifest> LoadManifest(const ManifestSource& source);

// Parses a manifest held in memory (tests). `name` is used in messages.
Result<LoadedManifest> LoadManifestFromString(const std::string& yaml, const std::string& name,
                                              const std::vector<std::string>& overrides = {});

// The resolved manifest as DLIO-style YAML with every key and its effective
// value (current DLIO spellings, sections in DLIO's order, then `iomimic:`;
// no `hydra:`). An unnamed reader.data_loader appears only as a comment (see
// ReaderConfig::data_loader_given). With `workload_root`, everything is
// nested under `workload:` (as in Hydra's config.yaml). LoadManifest reads
// either form back to an equal Config.
std::string ToYaml(const Config& config, bool workload_root);

// Parses a distribution from a plain number string (used by tests): a
// constant. InvalidArgument when `text` is not a finite number.
Result<Distribution> ParseDistributionScalar(const std::string& text);

std::string ShuffleModeName(ShuffleMode mode);
std::string ReadTypeName(ReadType type);

}  // namespace iomimic::config
