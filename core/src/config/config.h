// The resolved workload manifest.
//
// A Config holds every DLIO workload key (docs/manifest.md, generated from
// config/key_table.h; DLIO's meaning in docs/dlio-compat.md §1.3) with DLIO's
// defaults, the legacy spellings of §1.4 folded in, and iomimic's own keys
// (plugin selection and options). It is a plain value: no YAML types
// leak out of the config subsystem, so every other layer can include this
// header cheaply.

#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/key_table.h"
#include "iomimic/status.h"

namespace iomimic::config {

// A time distribution (docs/dlio-compat.md §1.7). Seconds. Draws are non-negative (DLIO sleeps
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

  // One parameter of a distribution's manifest map and the member it fills.
  struct Param {
    const char* name;
    double Distribution::*member;
  };
  // The manifest's `type` of `kind` ("constant", "normal", "uniform", ...).
  static const char* KindName(Kind kind);
  // The parameters a `kind` distribution's map lists, in the order the
  // emitter writes them (normal: mean, stdev; constant: none, the mean is
  // written as a number).
  static std::span<const Param> Params(Kind kind);

  friend bool operator==(const Distribution&, const Distribution&) = default;
};

enum class ShuffleMode { kOff, kSeed, kRandom };
enum class ReadType { kOnDemand, kMemory };

// The manifest's sections. Their members are declared by the key table
// (config/key_table.h): one row per key gives the member, its type, DLIO's
// default and the key's schema and documentation (docs/manifest.md).
using UIntVector = std::vector<std::uint64_t>;
using TextMap = std::map<std::string, std::string>;
// A list of maps with fixed fields (e.g. dataset.parquet.columns): each record
// holds its fields' values as text in the key's field order, "" when absent.
using RecordList = std::vector<std::vector<std::string>>;

#define IOMIMIC_CONFIG_MEMBER(key, member, type, default_value, spec) type member = default_value;

// The value of a key that an installed format plugin declares
// (dataset.<format>.<key>, PluginVocabulary below).
struct DeclaredValue {
  std::string type;  // the declared type: int, double, bool, string, int_list
  // As the plugin receives it: decimal numbers, true/false, an int_list's
  // integers comma-separated ("" when empty), a string as written.
  std::string text;
  friend bool operator==(const DeclaredValue&, const DeclaredValue&) = default;
};

struct ModelConfig {
  IOMIMIC_KEYS_MODEL(IOMIMIC_CONFIG_MEMBER)
  friend bool operator==(const ModelConfig&, const ModelConfig&) = default;
};

struct WorkflowConfig {
  IOMIMIC_KEYS_WORKFLOW(IOMIMIC_CONFIG_MEMBER)
  friend bool operator==(const WorkflowConfig&, const WorkflowConfig&) = default;
};

struct StorageConfig {
  IOMIMIC_KEYS_STORAGE(IOMIMIC_CONFIG_MEMBER)
  friend bool operator==(const StorageConfig&, const StorageConfig&) = default;
};

struct DatasetConfig {
  IOMIMIC_KEYS_DATASET(IOMIMIC_CONFIG_MEMBER)
  // The keys installed format plugins declare, by "<format>.<key>": those the
  // manifest sets, and every declared key of dataset.format with its
  // default. They reach the format as FileSpec parameters and options of
  // that name (FormatParameters; docs/plugins.md, "Declared dataset keys").
  std::map<std::string, DeclaredValue> declared_keys;
  friend bool operator==(const DatasetConfig&, const DatasetConfig&) = default;
};

struct ReaderConfig {
  IOMIMIC_KEYS_READER(IOMIMIC_CONFIG_MEMBER)
  // Whether the manifest named data_loader (otherwise it is DLIO's default
  // and `iomimic config` shows it as a comment).
  bool data_loader_given = false;
  friend bool operator==(const ReaderConfig&, const ReaderConfig&) = default;
};

struct TrainConfig {
  IOMIMIC_KEYS_TRAIN(IOMIMIC_CONFIG_MEMBER)
  friend bool operator==(const TrainConfig&, const TrainConfig&) = default;
};

struct EvaluationConfig {
  IOMIMIC_KEYS_EVALUATION(IOMIMIC_CONFIG_MEMBER)
  friend bool operator==(const EvaluationConfig&, const EvaluationConfig&) = default;
};

struct CheckpointConfig {
  IOMIMIC_KEYS_CHECKPOINT(IOMIMIC_CONFIG_MEMBER)
  friend bool operator==(const CheckpointConfig&, const CheckpointConfig&) = default;
};

struct OutputConfig {
  IOMIMIC_KEYS_OUTPUT(IOMIMIC_CONFIG_MEMBER)
  friend bool operator==(const OutputConfig&, const OutputConfig&) = default;
};

struct ProfilingConfig {
  IOMIMIC_KEYS_PROFILING(IOMIMIC_CONFIG_MEMBER)
  friend bool operator==(const ProfilingConfig&, const ProfilingConfig&) = default;
};

struct MetricConfig {
  IOMIMIC_KEYS_METRIC(IOMIMIC_CONFIG_MEMBER)
  friend bool operator==(const MetricConfig&, const MetricConfig&) = default;
};

// The KV-cache workflow (workflow.kv_cache).
struct KvCacheConfig {
  IOMIMIC_KEYS_KV_CACHE(IOMIMIC_CONFIG_MEMBER)
  friend bool operator==(const KvCacheConfig&, const KvCacheConfig&) = default;
};

// Loading a model's safetensors files (workflow.model_load).
struct ModelLoadConfig {
  IOMIMIC_KEYS_MODEL_LOAD(IOMIMIC_CONFIG_MEMBER)
  friend bool operator==(const ModelLoadConfig&, const ModelLoadConfig&) = default;
};

// Replaying a recorded application's I/O trace (workflow.app_replay).
struct AppReplayConfig {
  IOMIMIC_KEYS_APP_REPLAY(IOMIMIC_CONFIG_MEMBER)
  friend bool operator==(const AppReplayConfig&, const AppReplayConfig&) = default;
};

// Upper bound of iomimic.accelerators_per_process (docs/performance.md).
inline constexpr std::uint64_t kMaxAcceleratorsPerProcess = 4096;

// iomimic's own run options that have no DLIO equivalent (section `iomimic`).
struct IomimicConfig {
  IOMIMIC_KEYS_IOMIMIC(IOMIMIC_CONFIG_MEMBER)
  friend bool operator==(const IomimicConfig&, const IomimicConfig&) = default;
};

// Hydra settings that DLIO users pass as ++hydra.run.dir / ++hydra.output_subdir.
struct HydraConfig {
  std::string run_dir;
  std::string output_subdir = ".hydra";

  friend bool operator==(const HydraConfig&, const HydraConfig&) = default;
};

// Where each key of a loaded manifest was set, for errors found after
// loading (the checkpoint plan against the world size, ErrorAt): by path,
// "<file>:<line>:<col>" or "override '<text>'". Not part of the
// configuration's value: Configs that differ only here are equal, and ToYaml
// leaves it out.
struct KeyOrigins {
  std::map<std::string, std::string, std::less<>> where;
  friend bool operator==(const KeyOrigins&, const KeyOrigins&) { return true; }
};

struct Config {
  ModelConfig model;
  IOMIMIC_KEYS_ROOT(IOMIMIC_CONFIG_MEMBER)
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
  KvCacheConfig kv_cache;
  ModelLoadConfig model_load;
  AppReplayConfig app_replay;
  IomimicConfig iomimic;
  HydraConfig hydra;
  KeyOrigins origins;

  friend bool operator==(const Config&, const Config&) = default;
};

// An InvalidArgument error about a value of `config` found after loading,
// placed like a manifest error: "<file>:<line>:<col>: error: <path>: <what>"
// (or "override '<text>': <path>: <what>") at the first of `paths` the
// manifest or an override sets, else "<first path>: <what>".
Status ErrorAt(const Config& config, std::initializer_list<std::string_view> paths,
               std::string_view what);

#undef IOMIMIC_CONFIG_MEMBER

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

// What the installed plugins add to the manifest's vocabulary, as plain data:
// plugin::Registry builds it from their descriptors, the command line passes
// it in, and the config layer never sees a plugin (docs/plugins.md, "URL
// schemes" and "Declared dataset keys").
//
// A URL scheme an installed storage plugin serves.
struct SchemeEntry {
  std::string scheme;   // without "://"
  std::string backend;  // the storage plugin that serves it
  // The plugin keeps its data behind a network endpoint (an object store):
  // a data or checkpoint folder keeps its scheme ("<scheme>://bucket/x"),
  // a storage root becomes "<bucket>/<prefix>". Otherwise every folder
  // loses "<scheme>://".
  bool endpoint = false;
  friend bool operator==(const SchemeEntry&, const SchemeEntry&) = default;
};

// A manifest key an installed format plugin declares: dataset.<format>.<name>.
struct DeclaredKey {
  std::string format;         // the format plugin
  std::string name;           // below dataset.<format>.
  std::string type;           // int, double, bool, string, int_list
  std::string default_value;  // as DeclaredValue::text
  std::string doc;            // one line
  friend bool operator==(const DeclaredKey&, const DeclaredKey&) = default;
};

struct PluginVocabulary {
  // In search order: the first plugin that declares a scheme serves it.
  std::vector<SchemeEntry> schemes;
  std::vector<DeclaredKey> dataset_keys;
  // "file (...), mem (memory)": each scheme and the plugin serving it, by
  // scheme, "none" when there are none (for messages).
  std::string DescribeSchemes() const;
};

// Checks what a format plugin declares about one of its keys (plugin::Registry
// refuses a plugin whose declaration fails): a name of letters, digits and
// '_', a type of DeclaredValue's, a default of that type. Returns the key
// with its default written as DeclaredValue::text.
Result<DeclaredKey> CheckDeclaredKey(DeclaredKey key);

// Where a manifest comes from: a path, or a workload name looked up as
// <config_dir>/<name>.yaml or <config_dir>/workload/<name>.yaml.
struct ManifestSource {
  std::string path;                    // explicit manifest path, or empty
  std::string workload;                // `workload=<name>`, or empty
  std::string config_dir;              // --config-dir (empty = shipped workloads/: installed
                                       // <prefix>/share/iomimic/workloads, else the source tree's)
  std::vector<std::string> overrides;  // raw Hydra-style strings, in order
  // The installed plugins' schemes and dataset keys; a manifest folder with
  // a scheme no entry serves is refused (empty: none is served).
  PluginVocabulary plugins;
};

// The loaded manifest and what it took to get there.
struct LoadedManifest {
  Config config;
  std::string manifest_path;               // the YAML file actually read
  std::string workload_name;               // file stem, or the workload= name
  std::vector<std::string> raw_overrides;  // as given (for overrides.yaml)
  std::vector<Diagnostic> warnings;
};

// Credentials never reach results (docs/security.md): an option or storage
// option whose name contains "secret", "password", "token" or
// "access_key" (any case, also "inner.<name>") is a credential. Redacted()
// is `manifest` with each credential's value, in the config's option maps
// and in the raw overrides, replaced by kRedacted; results are written from
// it.
inline constexpr const char* kRedacted = "<redacted>";
bool IsCredentialKey(std::string_view key);
LoadedManifest Redacted(const LoadedManifest& manifest);
TextMap Redacted(const TextMap& options);

// Loads and validates a manifest. Errors are one line:
//   "<file>:<line>:<col>: error: <what>"  (manifest values)
//   "override '<text>': <what>"            (command-line overrides)
Result<LoadedManifest> LoadManifest(const ManifestSource& source);

// Parses a manifest held in memory (tests). `name` is used in messages;
// `plugins` as ManifestSource::plugins.
Result<LoadedManifest> LoadManifestFromString(const std::string& yaml, const std::string& name,
                                              const std::vector<std::string>& overrides = {},
                                              const PluginVocabulary& plugins = {});

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

// The dataset keys meant for the format plugin (the key table's
// FormatParam() rows and the keys format plugins declare), as
// FileSpec::parameters: named by their path below `dataset.`
// ("<format>.chunk_dims"), lists comma-separated and left out when empty,
// numbers in decimal.
std::map<std::string, std::string> FormatParameters(const Config& config);

// docs/manifest.md: every key of the table (config/key_table.h) with its
// type, default, origin and meaning, then the keys `plugins`' format plugins
// declare (`iomimic config --keys`).
std::string ManifestKeysMarkdown(const PluginVocabulary& plugins = {});

std::string ShuffleModeName(ShuffleMode mode);
std::string ReadTypeName(ReadType type);

// A list key's entry (or any text a user wrote) for a one-line message:
// control characters written as \n, \t, \r or \xHH, the rest as it is.
std::string OneLineText(const std::string& text);

}  // namespace iomimic::config
