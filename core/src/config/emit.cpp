// ToYaml: the resolved Config as a DLIO workload manifest.

#include <yaml-cpp/yaml.h>

#include <string_view>

#include "config/config.h"
#include "config/scalar_internal.h"

namespace iomimic::config {
namespace {

// Writes key/value pairs to a block-style YAML emitter.
class Writer {
 public:
  explicit Writer(YAML::Emitter* out) : out_(*out) {}

  void BeginSection(std::string_view key) {
    out_ << YAML::Key << std::string(key) << YAML::Value << YAML::BeginMap;
  }
  void EndSection() { out_ << YAML::EndMap; }

  void String(std::string_view key, const std::string& value) {
    out_ << YAML::Key << std::string(key) << YAML::Value;
    WriteString(value);
  }
  // An empty string is DLIO's None.
  void OptionalString(std::string_view key, const std::string& value) {
    if (value.empty()) {
      Null(key);
    } else {
      String(key, value);
    }
  }
  void Null(std::string_view key) {
    out_ << YAML::Key << std::string(key) << YAML::Value << YAML::Null;
  }
  void Bool(std::string_view key, bool value) {
    out_ << YAML::Key << std::string(key) << YAML::Value << (value ? "True" : "False");
  }
  void UInt(std::string_view key, std::uint64_t value) {
    out_ << YAML::Key << std::string(key) << YAML::Value << std::to_string(value);
  }
  void Int(std::string_view key, std::int64_t value) {
    out_ << YAML::Key << std::string(key) << YAML::Value << std::to_string(value);
  }
  void Number(std::string_view key, double value) {
    out_ << YAML::Key << std::string(key) << YAML::Value << internal::FormatDouble(value);
  }
  void UIntList(std::string_view key, const std::vector<std::uint64_t>& values) {
    out_ << YAML::Key << std::string(key) << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (std::uint64_t value : values) out_ << std::to_string(value);
    out_ << YAML::EndSeq;
  }
  void StringList(std::string_view key, const std::vector<std::string>& values) {
    out_ << YAML::Key << std::string(key) << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (const std::string& value : values) WriteString(value);
    out_ << YAML::EndSeq;
  }
  void ParquetColumns(const std::vector<DatasetConfig::ParquetColumn>& columns) {
    out_ << YAML::Key << "columns" << YAML::Value << YAML::BeginSeq;
    for (const DatasetConfig::ParquetColumn& c : columns) {
      out_ << YAML::Flow << YAML::BeginMap;
      String("name", c.name);
      String("dtype", c.dtype);
      if (c.size != 0) UInt("size", c.size);
      Bool("read", c.read);
      out_ << YAML::EndMap;
    }
    out_ << YAML::EndSeq;
  }
  void StringMap(std::string_view key, const std::map<std::string, std::string>& values) {
    out_ << YAML::Key << std::string(key) << YAML::Value;
    if (values.empty()) out_ << YAML::Flow;
    out_ << YAML::BeginMap;
    for (const auto& [name, value] : values) {
      out_ << YAML::Key << name << YAML::Value;
      WriteString(value);
    }
    out_ << YAML::EndMap;
  }
  void Time(std::string_view key, const Distribution& time) {
    using Kind = Distribution::Kind;
    if (time.kind == Kind::kConstant) {
      Number(key, time.mean);
      return;
    }
    BeginSection(key);
    switch (time.kind) {
      case Kind::kConstant:
        break;
      case Kind::kNormal:
        String("type", "normal");
        Number("mean", time.mean);
        Number("stdev", time.stdev);
        break;
      case Kind::kUniform:
        String("type", "uniform");
        Number("min", time.min);
        Number("max", time.max);
        break;
      case Kind::kGamma:
        String("type", "gamma");
        Number("shape", time.shape);
        Number("scale", time.scale);
        break;
      case Kind::kExponential:
        String("type", "exponential");
        Number("scale", time.scale);
        break;
      case Kind::kPoisson:
        String("type", "poisson");
        Number("lam", time.lam);
        break;
    }
    EndSection();
  }

 private:
  // Quotes strings that a YAML reader would otherwise take for a boolean,
  // null or number (e.g. the shuffle mode "off").
  void WriteString(const std::string& value) {
    if (internal::LooksLikeNonString(value)) out_ << YAML::DoubleQuoted;
    out_ << value;
  }

  YAML::Emitter& out_;
};

void WriteConfig(const Config& c, Writer& w) {
  const ModelConfig& model = c.model;
  w.BeginSection("model");
  w.String("name", model.name);
  w.OptionalString("type", model.type);
  w.UInt("model_size_bytes", model.model_size_bytes);
  w.String("model_datatype", model.model_datatype);
  w.String("optimizer_datatype", model.optimizer_datatype);
  w.UIntList("optimization_groups", model.optimization_groups);
  w.Int("num_layers", model.num_layers);
  w.UIntList("layer_parameters", model.layer_parameters);
  w.BeginSection("parallelism");
  w.Int("tensor", model.tensor_parallelism);
  w.Int("pipeline", model.pipeline_parallelism);
  w.Int("data", model.data_parallelism);
  w.Int("zero_stage", model.zero_stage);
  w.EndSection();
  w.BeginSection("transformer");
  w.UInt("vocab_size", model.vocab_size);
  w.UInt("hidden_size", model.hidden_size);
  w.UInt("ffn_hidden_size", model.ffn_hidden_size);
  w.UInt("num_attention_heads", model.num_attention_heads);
  w.UInt("num_kv_heads", model.num_kv_heads);
  w.EndSection();
  w.EndSection();

  w.String("framework", c.framework);

  w.BeginSection("workflow");
  w.Bool("generate_data", c.workflow.generate_data);
  w.Bool("train", c.workflow.train);
  w.Bool("evaluation", c.workflow.evaluation);
  w.Bool("checkpoint", c.workflow.checkpoint);
  w.Bool("profiling", c.workflow.profiling);
  w.EndSection();

  const StorageConfig& storage = c.storage;
  w.BeginSection("storage");
  w.String("storage_type", storage.storage_type);
  w.String("storage_root", storage.storage_root);
  w.StringMap("storage_options", storage.storage_options);
  w.String("backend", storage.backend);
  w.StringMap("options", storage.options);
  w.EndSection();

  const DatasetConfig& dataset = c.dataset;
  w.BeginSection("dataset");
  w.String("format", dataset.format);
  w.String("data_folder", dataset.data_folder);
  w.UInt("num_files_train", dataset.num_files_train);
  w.UInt("num_files_eval", dataset.num_files_eval);
  w.UInt("num_samples_per_file", dataset.num_samples_per_file);
  w.Number("record_length_bytes", dataset.record_length_bytes);
  w.Number("record_length_bytes_stdev", dataset.record_length_bytes_stdev);
  w.Number("record_length_bytes_resize", dataset.record_length_bytes_resize);
  w.UIntList("record_dims", dataset.record_dims);
  w.String("record_element_type", dataset.record_element_type);
  w.UInt("num_subfolders_train", dataset.num_subfolders_train);
  w.UInt("num_subfolders_eval", dataset.num_subfolders_eval);
  w.String("file_prefix", dataset.file_prefix);
  w.String("compression", dataset.compression);
  w.Int("compression_level", dataset.compression_level);
  w.Bool("enable_chunking", dataset.enable_chunking);
  w.UInt("chunk_size", dataset.chunk_size);
  w.Bool("keep_files", dataset.keep_files);
  w.UInt("generation_buffer_size", dataset.generation_buffer_size);
  w.BeginSection("hdf5");
  w.UIntList("chunk_dims", dataset.hdf5_chunk_dims);
  w.UInt("num_dset_per_record", dataset.hdf5_num_dset_per_record);
  w.UIntList("max_shape", dataset.hdf5_max_shape);
  w.EndSection();
  const DatasetConfig defaults;
  if (!dataset.parquet_columns.empty() ||
      dataset.parquet_row_group_size != defaults.parquet_row_group_size ||
      !dataset.parquet_read_mode.empty() || !dataset.parquet_partition_by.empty() ||
      dataset.parquet_generation_batch_size != 0 || dataset.parquet_use_s3dlio_gen) {
    w.BeginSection("parquet");
    w.UInt("row_group_size", dataset.parquet_row_group_size);
    if (!dataset.parquet_read_mode.empty()) w.String("read_mode", dataset.parquet_read_mode);
    if (!dataset.parquet_partition_by.empty()) {
      w.String("partition_by", dataset.parquet_partition_by);
    }
    w.UInt("generation_batch_size", dataset.parquet_generation_batch_size);
    w.Bool("use_s3dlio_gen", dataset.parquet_use_s3dlio_gen);
    if (!dataset.parquet_columns.empty()) w.ParquetColumns(dataset.parquet_columns);
    w.EndSection();
  }
  w.StringMap("options", dataset.options);
  w.EndSection();

  const ReaderConfig& reader = c.reader;
  w.BeginSection("reader");
  if (reader.data_loader_given) w.String("data_loader", reader.data_loader);
  w.UInt("batch_size", reader.batch_size);
  w.UInt("batch_size_eval", reader.batch_size_eval);
  w.UInt("read_threads", reader.read_threads);
  w.UInt("computation_threads", reader.computation_threads);
  w.UInt("prefetch_size", reader.prefetch_size);
  w.String("file_shuffle", ShuffleModeName(reader.file_shuffle));
  w.String("sample_shuffle", ShuffleModeName(reader.sample_shuffle));
  w.UInt("shuffle_size", reader.shuffle_size);
  if (reader.transfer_size == 0) {
    w.Null("transfer_size");
  } else {
    w.UInt("transfer_size", reader.transfer_size);
  }
  w.String("read_type", ReadTypeName(reader.read_type));
  w.String("file_access", reader.file_access);
  w.Bool("dont_use_mmap", reader.dont_use_mmap);
  w.Bool("odirect", reader.odirect);
  w.Bool("pin_memory", reader.pin_memory);
  w.String("multiprocessing_context", reader.multiprocessing_context);
  w.Time("preprocess_time", reader.preprocess_time);
  w.UIntList("transformed_record_dims", reader.transformed_record_dims);
  w.String("transformed_record_element_type", reader.transformed_record_element_type);
  w.OptionalString("reader_classname", reader.reader_classname);
  w.OptionalString("data_loader_classname", reader.data_loader_classname);
  w.OptionalString("data_loader_sampler", reader.data_loader_sampler);
  w.Bool("decode", reader.decode);
  w.EndSection();

  w.BeginSection("train");
  w.UInt("epochs", c.train.epochs);
  w.Time("computation_time", c.train.computation_time);
  w.Int("total_training_steps", c.train.total_training_steps);
  w.Bool("seed_change_epoch", c.train.seed_change_epoch);
  w.UInt("seed", c.train.seed);
  w.EndSection();

  w.BeginSection("evaluation");
  w.Time("eval_time", c.evaluation.eval_time);
  w.UInt("eval_after_epoch", c.evaluation.eval_after_epoch);
  w.UInt("epochs_between_evals", c.evaluation.epochs_between_evals);
  w.EndSection();

  const CheckpointConfig& checkpoint = c.checkpoint;
  w.BeginSection("checkpoint");
  w.String("checkpoint_folder", checkpoint.checkpoint_folder);
  w.UInt("checkpoint_after_epoch", checkpoint.checkpoint_after_epoch);
  w.UInt("epochs_between_checkpoints", checkpoint.epochs_between_checkpoints);
  w.Int("steps_between_checkpoints", checkpoint.steps_between_checkpoints);
  w.String("type", checkpoint.type);
  w.String("mode", checkpoint.mode);
  w.Bool("fsync", checkpoint.fsync);
  w.Number("time_between_checkpoints", checkpoint.time_between_checkpoints);
  w.Int("num_checkpoints_write", checkpoint.num_checkpoints_write);
  w.Int("num_checkpoints_read", checkpoint.num_checkpoints_read);
  w.Bool("recovery_rank_shift", checkpoint.recovery_rank_shift);
  w.Bool("rank_sync", checkpoint.rank_sync);
  w.Bool("randomize_tensor", checkpoint.randomize_tensor);
  w.OptionalString("checkpoint_mechanism_classname", checkpoint.checkpoint_mechanism_classname);
  if (checkpoint.ksm_present) w.StringMap("ksm", {});  // enabled by its presence
  w.String("backend", checkpoint.backend);
  w.StringMap("options", checkpoint.options);
  w.EndSection();

  w.BeginSection("output");
  w.OptionalString("folder", c.output.folder);
  w.String("log_file", c.output.log_file);
  w.BeginSection("metric");
  w.UInt("exclude_start_steps", c.output.exclude_start_steps);
  w.UInt("exclude_end_steps", c.output.exclude_end_steps);
  w.EndSection();
  w.EndSection();

  w.BeginSection("profiling");
  w.String("profiler", c.profiling.profiler);
  w.StringList("iostat_devices", c.profiling.iostat_devices);
  w.EndSection();

  w.BeginSection("metric");
  w.Number("au", c.metric.au);
  w.EndSection();

  w.BeginSection("iomimic");
  w.Bool("sample_log", c.iomimic.sample_log);
  w.Bool("dlio_order", c.iomimic.dlio_order);
  w.Bool("checksum", c.iomimic.checksum);
  w.UInt("accelerators_per_process", c.iomimic.accelerators_per_process);
  w.UInt("max_step_list", c.iomimic.max_step_list);
  w.Bool("huge_pages", c.iomimic.huge_pages);
  w.String("content", c.iomimic.content);
  w.UInt("compress_percentage", c.iomimic.compress_percentage);
  w.UInt("dedupe_percentage", c.iomimic.dedupe_percentage);
  w.EndSection();
}

// yaml-cpp places a comment at the end of the previous line, so the note on
// an unnamed data loader is added as its own line after `reader:`.
void NoteUnnamedDataLoader(const Config& config, bool workload_root, std::string* text) {
  if (config.reader.data_loader_given) return;
  const std::string indent = workload_root ? "  " : "";
  const std::string header = indent + "reader:\n";
  std::size_t at = text->starts_with(header) ? 0 : text->find("\n" + header);
  if (at == std::string::npos) return;
  if (at != 0) ++at;
  text->insert(at + header.size(),
               indent + "  # data_loader: " + config.reader.data_loader +
                   " (not named in the manifest: DLIO's default, not checked against the "
                   "framework)\n");
}

}  // namespace

std::string ToYaml(const Config& config, bool workload_root) {
  YAML::Emitter out;
  out.SetIndent(2);
  out << YAML::BeginMap;
  if (workload_root) out << YAML::Key << "workload" << YAML::Value << YAML::BeginMap;
  Writer writer(&out);
  WriteConfig(config, writer);
  if (workload_root) out << YAML::EndMap;
  out << YAML::EndMap;
  std::string text = out.c_str();
  text += "\n";
  NoteUnnamedDataLoader(config, workload_root, &text);
  return text;
}

}  // namespace iomimic::config
