// THE table of manifest keys: one row per key, and nothing else to edit to
// add one. Each row declares the Config member that holds the key (config.h
// expands these lists into the section structs) and the key's schema (type,
// range, choices, DLIO legacy spelling, origin, documentation), from which
// config/keys.cpp derives parsing, validation, `iomimic config` output,
// unknown-key suggestions and docs/manifest.md.
//
// A row: X(key, member, C++ type, default, spec), where `key` is the path
// below the section ("parallelism.tensor" in model), `member` the field of
// the section's struct, and `spec` a KeySpec built in config/keys.cpp's
// vocabulary:
//   Bool() UInt(min, max) Int(min, max) Number(min, max) Text() Choice(words)
//   Plugin() Dtype() Shuffle() ReadTypeKey() UIntList(min) TextList() FreeMap()
//   Time("<key>_stdev") Presence()
// with modifiers .Nullable() .NonEmpty() .NullIsZero() .NullWhenEmpty()
// .NullWhenZero() .StripSlashes() .EmitIfGiven(&Struct::flag) .Legacy("old.path")
// .FormatParam() .Mlperf() .Iomimic() .Doc("..."). FormatParam() keys of dataset
// reach the format plugin as FileSpec parameters named by their path below
// dataset ("hdf5.chunk_dims"); a format's own keys go in a dataset.<format>
// subsection.
// Rows are listed in DLIO's order (docs/dlio-compat.md), which is also the
// order of `iomimic config` and of docs/manifest.md. Defaults are DLIO's.
// A type with a comma in it needs an alias (config.h: TextMap, UIntVector).
// The six keys of each kv_cache.users type are one IOMIMIC_KV_USER_KEYS row.
//
// Keys that are accepted and checked but hold nothing (DLIO keys iomimic does
// not use) are A(path, spec) rows of IOMIMIC_KEYS_ACCEPTED.

#pragma once

// clang-format off

#define IOMIMIC_KEYS_MODEL(X)                                                                     \
  X("name", name, std::string, "default", Text().Doc("Model name; names the results folder hydra_log/<name>/."))                   \
  X("type", type, std::string, "", Text().Nullable().NullWhenEmpty().Doc("\"transformer\" sizes checkpoints from model.transformer."))      \
  X("model_size_bytes", model_size_bytes, std::uint64_t, 10240, UInt(0, kNoMax).Legacy("checkpoint.model_size").Doc("Model state size for checkpoints of non-layered models, in bytes.")) \
  X("model_datatype", model_datatype, std::string, "fp16", Choice(kModelDatatypes).Doc("Element type of the model's parameters in checkpoints.")) \
  X("optimizer_datatype", optimizer_datatype, std::string, "fp32", Choice(kModelDatatypes).Doc("Element type of the optimizer state in checkpoints.")) \
  X("optimization_groups", optimization_groups, UIntVector, {}, UIntList(0).Doc("Optimizer state sizes per group (elements).")) \
  X("num_layers", num_layers, std::int64_t, -1, Int(kNoMin, kNoMax).Doc("Layers of the model; -1 = not layered.")) \
  X("layer_parameters", layer_parameters, UIntVector, {}, UIntList(0).Doc("Parameters of each layer.")) \
  X("parallelism.tensor", tensor_parallelism, std::int64_t, 1, Int(1, kNoMax).Doc("Tensor parallelism degree (checkpoint sharding).")) \
  X("parallelism.pipeline", pipeline_parallelism, std::int64_t, 1, Int(1, kNoMax).Doc("Pipeline parallelism degree (checkpoint sharding).")) \
  X("parallelism.data", data_parallelism, std::int64_t, -1, Int(-1, kNoMax).Doc("Data parallelism degree; -1 = derived from the world size.")) \
  X("parallelism.zero_stage", zero_stage, std::int64_t, 0, Int(0, 3).Doc("DeepSpeed ZeRO stage (0-3): how optimizer state is sharded.")) \
  X("transformer.vocab_size", vocab_size, std::uint64_t, 32000, UInt(1, kNoMax).Doc("Vocabulary size (transformer checkpoints).")) \
  X("transformer.hidden_size", hidden_size, std::uint64_t, 2048, UInt(1, kNoMax).Doc("Hidden size (transformer checkpoints).")) \
  X("transformer.ffn_hidden_size", ffn_hidden_size, std::uint64_t, 8192, UInt(1, kNoMax).Doc("Feed-forward hidden size (transformer checkpoints).")) \
  X("transformer.num_attention_heads", num_attention_heads, std::uint64_t, 32, UInt(1, kNoMax).Doc("Attention heads (transformer checkpoints).")) \
  X("transformer.num_kv_heads", num_kv_heads, std::uint64_t, 8, UInt(1, kNoMax).Doc("Key/value heads (transformer checkpoints)."))

#define IOMIMIC_KEYS_ROOT(X)                                                                      \
  X("framework", framework, std::string, "tensorflow", Choice(kFrameworks).Doc("tensorflow or pytorch: the default data loader and checkpoint layout."))

#define IOMIMIC_KEYS_WORKFLOW(X)                                                                  \
  X("generate_data", generate_data, bool, false, Bool().Doc("Generate the dataset before training (existing complete files are kept).")) \
  X("train", train, bool, true, Bool().Doc("Replay training.")) \
  X("evaluation", evaluation, bool, false, Bool().Doc("Evaluate after epochs (evaluation.*).")) \
  X("checkpoint", checkpoint, bool, false, Bool().Doc("Write (and read) checkpoints (checkpoint.*).")) \
  X("profiling", profiling, bool, false, Bool().Doc("DLIO's profiler switch; accepted, iomimic measures itself.")) \
  X("kv_cache", kv_cache, bool, false, Bool().Iomimic().Doc("Run the KV-cache offload workflow (MLPerf Storage v3.0's kv-cache benchmark; kv_cache.*, docs/kvcache.md) instead of training; workflow.train then defaults to False and may not be True.")) \
  X("metadata", metadata, bool, false, Bool().Iomimic().Doc("Stat every file of the dataset train.epochs times over (reader.read_threads threads per rank, no data read) before training, and report the storage's metadata rate (summary.json iomimic.metadata; docs/architecture.md).")) \
  X("model_load", model_load, bool, false, Bool().Iomimic().Doc("Load a model's safetensors files as an inference server does at start-up (model_load.*, docs/model-loading.md): time until loaded, GB/s and per-file latency, with the page cache dropped and warm.")) \
  X("app_replay", app_replay, bool, false, Bool().Iomimic().Doc("Replay a recorded application's I/O trace (strace or DFTracer; app_replay.*, docs/replay.md) on the storage plugin: every thread's operations in order, at the recorded timing or as fast as possible; ops, bytes and latency per operation type and the slowdown against the original."))

#define IOMIMIC_KEYS_STORAGE(X)                                                                   \
  X("storage_type", storage_type, std::string, "local_fs", Choice(kStorageTypes).Doc("DLIO's storage type; s3 selects the s3 back end (storage_root the bucket, s3://bucket/... folders).")) \
  X("storage_root", storage_root, std::string, "./", Text().Doc("Root that relative data and checkpoint folders are joined to (with storage_type s3: the bucket).")) \
  X("storage_options", storage_options, TextMap, {}, FreeMap().Doc("DLIO's storage options; with storage_type s3 endpoint_url, region, access_key_id, secret_access_key, s3_force_path_style, s3_max_attempts become the s3 back end's options (credentials are redacted in results).")) \
  X("backend", backend, std::string, "posix", Plugin().Iomimic().Doc("Storage plugin for the dataset (iomimic plugins lists them).")) \
  X("options", options, TextMap, {}, FreeMap().Iomimic().Doc("Options of the storage plugin (iomimic plugins shows each plugin's).")) \
  X("post_generation_settle_seconds", post_generation_settle_seconds, double, 0, Number(0, 86400).Mlperf().Doc("Seconds every rank waits after generating the dataset before training starts (for storage that makes new files visible late)."))

#define IOMIMIC_KEYS_DATASET(X)                                                                   \
  X("format", format, std::string, "tfrecord", Plugin().Doc("Format plugin of the data files (npz, npy, hdf5, png, jpeg, tiff, tfrecord, csv, indexed_binary, ...).")) \
  X("data_folder", data_folder, std::string, "./data", Text().NonEmpty().StripSlashes().Doc("Folder of the dataset; train/ and valid/ below it.")) \
  X("num_files_train", num_files_train, std::uint64_t, 8, UInt(0, kNoMax).Doc("Training files.")) \
  X("num_files_eval", num_files_eval, std::uint64_t, 0, UInt(0, kNoMax).Doc("Evaluation files.")) \
  X("num_samples_per_file", num_samples_per_file, std::uint64_t, 1, UInt(1, kNoMax).Doc("Samples (records) per file.")) \
  X("record_length_bytes", record_length_bytes, double, 65536, Number(0, kNoLimit).Legacy("dataset.record_length").Doc("Mean sample size in bytes.")) \
  X("record_length_bytes_stdev", record_length_bytes_stdev, double, 0, Number(0, kNoLimit).Legacy("dataset.record_length_stdev").Doc("Standard deviation of the sample size.")) \
  X("record_length_bytes_resize", record_length_bytes_resize, double, 0, Number(0, kNoLimit).Legacy("dataset.record_length_resize").Doc("Size each sample is resized to after reading (a copy); 0 = none.")) \
  X("record_dims", record_dims, UIntVector, {}, UIntList(1).Doc("Sample shape; derived from record_length_bytes when empty.")) \
  X("record_element_type", record_element_type, std::string, "uint8", Dtype().Doc("NumPy element type of the samples.")) \
  X("num_subfolders_train", num_subfolders_train, std::uint64_t, 0, UInt(0, kNoMax).Doc("Subfolders the training files are spread over.")) \
  X("num_subfolders_eval", num_subfolders_eval, std::uint64_t, 0, UInt(0, kNoMax).Doc("Subfolders the evaluation files are spread over.")) \
  X("file_prefix", file_prefix, std::string, "img", Text().Doc("File name prefix: <prefix>_<i>_of_<n>.<ext>.")) \
  X("compression", compression, std::string, "none", Choice(kCompressions).Nullable().Doc("Compression of the files (formats that support it).")) \
  X("compression_level", compression_level, int, 4, Int(0, 9).Doc("Compression level.")) \
  X("enable_chunking", enable_chunking, bool, false, Bool().Doc("HDF5: chunked datasets.")) \
  X("chunk_size", chunk_size, std::uint64_t, 0, UInt(0, kNoMax).Doc("HDF5 chunk size in bytes.")) \
  X("skip_listing", skip_listing, bool, false, Bool().Mlperf().Doc("iomimic never lists a data folder (file names come from the plan); True: rank 0 checks the first, the last and every listing_validation_interval-th file before training, False: the first and the last.")) \
  X("listing_validation_interval", listing_validation_interval, std::uint64_t, 1000, UInt(0, kNoMax).Mlperf().Doc("With skip_listing: check every N-th file exists before training; 0 = check none.")) \
  X("data_gen_method", data_gen_method, std::string, "", Choice(kDataGenMethods).Nullable().NullWhenEmpty().Mlperf().Doc("The fork's content generator (dgen or numpy); iomimic's own generator writes the bytes either way (iomimic.content controls them), with a warning.")) \
  X("keep_files", keep_files, bool, true, Bool().Doc("DLIO's keep_files; iomimic never deletes data.")) \
  X("generation_buffer_size", generation_buffer_size, std::uint64_t, 2ULL << 30, UInt(1, kNoMax).FormatParam().Doc("Bytes a generator holds in memory per file (larger files are streamed).")) \
  X("hdf5.chunk_dims", hdf5_chunk_dims, UIntVector, {}, UIntList(1).FormatParam().Doc("HDF5 chunk shape.")) \
  X("hdf5.num_dset_per_record", hdf5_num_dset_per_record, std::uint64_t, 1, UInt(1, kNoMax).FormatParam().Doc("HDF5 datasets per record.")) \
  X("hdf5.max_shape", hdf5_max_shape, UIntVector, {}, UIntList(0).NullIsZero().FormatParam().Doc("HDF5 maxshape; null (unlimited) is kept as 0.")) \
  X("parquet.columns", parquet_columns, RecordList, {}, Records(kParquetColumnFields).FormatParam().Mlperf().Doc("Parquet schema: one map per column (dtype, size: list length, read: whether training reads it); empty = the fork's single data column (docs/parquet.md).")) \
  X("parquet.row_group_size", parquet_row_group_size, std::uint64_t, 1024, UInt(1, kNoMax).FormatParam().Mlperf().Doc("Parquet rows per row group.")) \
  X("parquet.read_mode", parquet_read_mode, std::string, "", Text().Nullable().NullWhenEmpty().FormatParam().Mlperf().Doc("Parsed by the fork, never used (nor by iomimic).")) \
  X("parquet.partition_by", parquet_partition_by, std::string, "", Text().Nullable().NullWhenEmpty().FormatParam().Mlperf().Doc("Hive partitioning column; refused by the parquet format when set.")) \
  X("parquet.generation_batch_size", parquet_generation_batch_size, std::uint64_t, 0, UInt(0, kNoMax).FormatParam().Mlperf().Doc("Rows per write call in the fork; the bytes are the same.")) \
  X("parquet.use_s3dlio_gen", parquet_use_s3dlio_gen, bool, false, Bool().FormatParam().Mlperf().Doc("Object-storage generation in the fork; ignored: the parquet format writes through the storage back end in use (file system or S3).")) \
  X("options", options, TextMap, {}, FreeMap().Iomimic().Doc("Options of the format plugin (iomimic plugins shows each plugin's).")) \
  X("read_pattern", read_pattern, std::string, "dlio", Choice(kReadPatterns).FormatParam().Iomimic().Doc("Storage requests per sample of the npz format: dlio (DLIO's np.load through Python's 4 KiB buffered file and zipfile: 41 reads per 4 MiB file, docs/dlio-compat.md), direct (numpy's 256 KiB requests without Python's buffering: fewer, larger reads) or whole (one request per file). Image and HDF5 formats always make their DLIO reader's requests."))

#define IOMIMIC_KEYS_READER(X)                                                                    \
  X("data_loader", data_loader, std::string, "tensorflow", Choice(kDataLoaders).EmitIfGiven(&ReaderConfig::data_loader_given).Doc("Data loader whose behaviour is replayed (pytorch, tensorflow, dali, ...).")) \
  X("batch_size", batch_size, std::uint64_t, 1, UInt(1, kNoMax).Doc("Samples per training step.")) \
  X("batch_size_eval", batch_size_eval, std::uint64_t, 1, UInt(1, kNoMax).Doc("Samples per evaluation step.")) \
  X("read_threads", read_threads, std::uint64_t, 1, UInt(0, kNoMax).Doc("Reader threads per accelerator (PyTorch's num_workers).")) \
  X("write_threads", write_threads, std::uint64_t, 1, UInt(1, kNoMax).Mlperf().Doc("Files each rank generates at once; 1 = as many as the machine has cores (the fork auto-sizes 1 too); --generate-threads overrides it.")) \
  X("computation_threads", computation_threads, std::uint64_t, 1, UInt(1, kNoMax).Doc("DLIO's computation threads.")) \
  X("prefetch_size", prefetch_size, std::uint64_t, 2, UInt(0, kNoMax).Doc("Batches prefetched per reader thread.")) \
  X("file_shuffle", file_shuffle, ShuffleMode, ShuffleMode::kOff, Shuffle().Doc("File order per epoch: off, seed or random.")) \
  X("sample_shuffle", sample_shuffle, ShuffleMode, ShuffleMode::kOff, Shuffle().Doc("Sample order per epoch: off, seed or random.")) \
  X("shuffle_size", shuffle_size, std::uint64_t, 1024, UInt(0, kNoMax).Doc("TensorFlow shuffle buffer size.")) \
  X("transfer_size", transfer_size, std::uint64_t, 0, UInt(0, kNoMax).Nullable().NullWhenZero().Doc("Bytes per read request; null = the format's default.")) \
  X("read_type", read_type, ReadType, ReadType::kOnDemand, ReadTypeKey().Doc("on_demand (open, read, close per sample) or memory.")) \
  X("file_access", file_access, std::string, "multi", Choice(kFileAccess).Doc("multi, or shared/mpio/collective to read through MPI-IO.")) \
  X("dont_use_mmap", dont_use_mmap, bool, false, Bool().Doc("DLIO's switch; see storage.backend mmap.")) \
  X("odirect", odirect, bool, false, Bool().Doc("Read with O_DIRECT (selects the odirect back end).")) \
  X("pin_memory", pin_memory, bool, true, Bool().Doc("PyTorch's pin_memory; accepted.")) \
  X("multiprocessing_context", multiprocessing_context, std::string, "fork", Choice(kMultiprocessingContexts).Doc("PyTorch's worker start method; accepted.")) \
  X("preprocess_time", preprocess_time, Distribution, {}, Time("preprocess_time_stdev").Doc("Per-sample preprocessing time in seconds, or a distribution.")) \
  X("transformed_record_dims", transformed_record_dims, UIntVector, {}, UIntList(1).Doc("Shape after the transformation.")) \
  X("transformed_record_element_type", transformed_record_element_type, std::string, "uint8", Dtype().Doc("Element type after the transformation.")) \
  X("reader_classname", reader_classname, std::string, "", Text().Nullable().NullWhenEmpty().Doc("DLIO's custom reader class; accepted.")) \
  X("data_loader_classname", data_loader_classname, std::string, "", Text().Nullable().NullWhenEmpty().Doc("DLIO's custom data loader class; accepted.")) \
  X("data_loader_sampler", data_loader_sampler, std::string, "", Choice(kSamplers).Nullable().OmitWhenEmpty().Doc("DLIO's sampler: iterative or index (left out of config.yaml when unset: DLIO rejects a null sampler).")) \
  X("decode", decode, bool, true, Bool().Iomimic().Doc("Parse and decode samples as the real reader does; False: the same reads, nothing parsed."))

#define IOMIMIC_KEYS_TRAIN(X)                                                                     \
  X("epochs", epochs, std::uint64_t, 1, UInt(1, kNoMax).Doc("Training epochs.")) \
  X("computation_time", computation_time, Distribution, {}, Time("computation_time_stdev").Doc("Emulated accelerator time per step in seconds, or a distribution.")) \
  X("total_training_steps", total_training_steps, std::int64_t, -1, Int(kNoMin, kNoMax).Doc("Steps per epoch cap; -1 = the whole dataset.")) \
  X("seed_change_epoch", seed_change_epoch, bool, true, Bool().Doc("Change the shuffle seed every epoch.")) \
  X("seed", seed, std::uint64_t, 123, UInt(0, 0xFFFFFFFFu).Doc("Shuffle seed (NumPy seeds are 32-bit)."))

#define IOMIMIC_KEYS_EVALUATION(X)                                                                \
  X("eval_time", eval_time, Distribution, {}, Time("eval_time_stdev").Doc("Emulated time per evaluation step in seconds, or a distribution.")) \
  X("eval_after_epoch", eval_after_epoch, std::uint64_t, 1, UInt(0, kNoMax).Doc("First epoch after which to evaluate.")) \
  X("epochs_between_evals", epochs_between_evals, std::uint64_t, 1, UInt(1, kNoMax).Doc("Epochs between evaluations."))

#define IOMIMIC_KEYS_CHECKPOINT(X)                                                                \
  X("checkpoint_folder", checkpoint_folder, std::string, "./checkpoints", Text().NonEmpty().StripSlashes().Doc("Folder checkpoints are written to.")) \
  X("checkpoint_after_epoch", checkpoint_after_epoch, std::uint64_t, 1, UInt(0, kNoMax).Doc("First epoch after which to checkpoint.")) \
  X("epochs_between_checkpoints", epochs_between_checkpoints, std::uint64_t, 1, UInt(1, kNoMax).Doc("Epochs between checkpoints.")) \
  X("steps_between_checkpoints", steps_between_checkpoints, std::int64_t, -1, Int(kNoMin, kNoMax).Doc("Steps between checkpoints; -1 = per epoch.")) \
  X("type", type, std::string, "rank_zero", Choice(kCheckpointTypes).Doc("rank_zero or all_ranks write.")) \
  X("mode", mode, std::string, "default", Choice(kCheckpointModes).Doc("default or subset.")) \
  X("fsync", fsync, bool, false, Bool().Doc("fsync checkpoint files before closing.")) \
  X("atomic", atomic, bool, true, Bool().Iomimic().Doc("Write each checkpoint file under a temporary name and rename it into place when whole, so a process killed mid-write leaves no short file under a checkpoint's name; False writes under the final name, as torch.save does.")) \
  X("time_between_checkpoints", time_between_checkpoints, double, -1, Number(kNoLimitMin, kNoLimit).Doc("Checkpoint-only runs: seconds between checkpoints.")) \
  X("num_checkpoints_write", num_checkpoints_write, std::int64_t, -1, Int(kNoMin, kNoMax).Doc("Checkpoint-only runs: checkpoints to write.")) \
  X("num_checkpoints_read", num_checkpoints_read, std::int64_t, -1, Int(kNoMin, kNoMax).Doc("Checkpoint-only runs: checkpoints to read back.")) \
  X("recovery_rank_shift", recovery_rank_shift, bool, false, Bool().Doc("Read another rank's checkpoint on recovery: rank r reads the shard of rank (r + ranks/hosts) mod ranks, one host's worth of ranks on, so that with ranks placed host by host no shard is read on the host that wrote it.")) \
  X("drop_cache", drop_cache, bool, false, Bool().Iomimic().Doc("Open checkpoint reads with the storage's drop_cache: posix, mmap and gds drop the file's cached pages first (fadvise DONTNEED, clean pages only), so a checkpoint is not read back from the writer's page cache; odirect and s3 have no page cache to drop.")) \
  X("rank_sync", rank_sync, bool, false, Bool().Doc("Barrier after each checkpoint.")) \
  X("randomize_tensor", randomize_tensor, bool, true, Bool().Doc("Random (not zero) checkpoint contents.")) \
  X("checkpoint_mechanism_classname", checkpoint_mechanism_classname, std::string, "", Text().Nullable().NullWhenEmpty().Doc("DLIO's custom checkpoint class; accepted.")) \
  X("ksm", ksm_present, bool, false, Presence().Doc("KSM (kernel same-page merging) settings; enabled by its presence.")) \
  X("backend", backend, std::string, "", Plugin().AllowEmpty().Iomimic().Doc("Storage plugin for checkpoints; empty = storage.backend.")) \
  X("options", options, TextMap, {}, FreeMap().Iomimic().Doc("Options of the checkpoint storage plugin.")) \
  X("layout", layout, std::string, "dlio", Choice(kCheckpointLayouts).Iomimic().Doc("Files of a checkpoint: dlio (DLIO's per-rank model and optimizer files), dcp (PyTorch Distributed Checkpoint: __<rank>_<n>.distcp per writer thread plus .metadata), safetensors (Hugging Face's sharded model-0000i-of-0000n.safetensors and index.json, written by the ranks of data-parallel group 0); docs/checkpoints.md.")) \
  X("thread_count", thread_count, std::int64_t, 1, Int(1, 256).Iomimic().Doc("layout dcp: writer threads per rank, one .distcp file each (FileSystemWriter's thread_count).")) \
  X("async", async_save, bool, false, Bool().Iomimic().Doc("layout dcp: async_save: stage the rank's checkpoint into host memory while training waits (the stall), then write it in the background while training goes on; a save first waits for the previous one's write.")) \
  X("restore_world_size", restore_world_size, std::int64_t, 0, Int(0, 1 << 20).Iomimic().Doc("layout dcp: loads read as this many ranks (resharding: reader r owns the r-th 1/N of every item and reads it from whichever files hold it); 0 = the run's rank count.")) \
  X("max_shard_bytes", max_shard_bytes, std::uint64_t, 5000000000, UInt(1, kNoMax).Iomimic().Doc("layout safetensors: most tensor bytes per file (save_pretrained's max_shard_size, 5 GB)."))

#define IOMIMIC_KEYS_OUTPUT(X)                                                                    \
  X("folder", folder, std::string, "", Text().Nullable().NullWhenEmpty().Doc("Results folder; empty = hydra.run.dir or hydra_log/<model>/<time>.")) \
  X("log_file", log_file, std::string, "dlio.log", Text().NonEmpty().Doc("Log file name in the results folder.")) \
  X("metric.exclude_start_steps", exclude_start_steps, std::uint64_t, 1, UInt(0, kNoMax).Doc("Steps at the start of each epoch left out of AU.")) \
  X("metric.exclude_end_steps", exclude_end_steps, std::uint64_t, 0, UInt(0, kNoMax).Doc("Steps at the end of each epoch left out of AU."))

#define IOMIMIC_KEYS_PROFILING(X)                                                                 \
  X("profiler", profiler, std::string, "iostat", Choice(kProfilers).Doc("DLIO's profiler; accepted.")) \
  X("iostat_devices", iostat_devices, std::vector<std::string>, {}, TextList().Doc("Devices iostat watches; accepted."))

#define IOMIMIC_KEYS_METRIC(X)                                                                    \
  X("au", au, double, 0.90, Number(0, 1).Doc("AU threshold (0-1) for *_au_meet_expectation."))

// The six keys of one user type of kv_cache.users (the reference's
// user_templates, docs/kvcache.md): `user` the type, `Name` the word that
// begins each row's documentation, then the defaults (the reference's).
#define IOMIMIC_KV_USER_KEYS(X, user, Name, context_min, context_max, generation_min, generation_max, think_time_min, think_time_max) \
  X("users." #user ".context_min", user##_context_min, std::uint64_t, context_min, UInt(1, kNoMax).Iomimic().Doc(Name " users: smallest context (prompt) length in tokens a user is drawn with.")) \
  X("users." #user ".context_max", user##_context_max, std::uint64_t, context_max, UInt(1, kNoMax).Iomimic().Doc(Name " users: largest context length in tokens.")) \
  X("users." #user ".generation_min", user##_generation_min, std::uint64_t, generation_min, UInt(1, kNoMax).Iomimic().Doc(Name " users: fewest tokens generated per request a user is drawn with.")) \
  X("users." #user ".generation_max", user##_generation_max, std::uint64_t, generation_max, UInt(1, kNoMax).Iomimic().Doc(Name " users: most tokens generated per request.")) \
  X("users." #user ".think_time_min", user##_think_time_min, double, think_time_min, Number(0, 3600).Iomimic().Doc(Name " users: shortest think time between requests, seconds.")) \
  X("users." #user ".think_time_max", user##_think_time_max, double, think_time_max, Number(0, 3600).Iomimic().Doc(Name " users: longest think time between requests, seconds."))

#define IOMIMIC_KEYS_KV_CACHE(X)                                                                  \
  X("model", model, std::string, "llama3.1-8b", Choice(kKvCacheModels).Iomimic().Doc("Model whose KV cache is offloaded (the reference's model table: bytes per token from layers, KV heads, head size; MLA for deepseek-v3).")) \
  X("num_users", num_users, std::uint64_t, 100, UInt(1, 100000).Iomimic().Doc("Simulated users, each issuing requests after a think time.")) \
  X("duration", duration, double, 60, Number(0, 86400).Iomimic().Doc("Seconds the benchmark runs (requests still running then finish first).")) \
  X("max_requests", max_requests, std::uint64_t, 0, UInt(0, kNoMax).Iomimic().Doc("Stop after this many completed requests; 0 = run for duration.")) \
  X("request_rate", request_rate, double, 0, Number(0, 1e9).Iomimic().Doc("Most requests admitted per second over all users (the reference's --request-rate); 0 = no limit.")) \
  X("max_concurrent_allocs", max_concurrent_allocs, std::uint64_t, 0, UInt(0, kNoMax).Iomimic().Doc("Most cache allocations (prefill writes) in progress at once; 0 = no limit. The request workers are min(num_users, 500), as the reference's.")) \
  X("generation_mode", generation_mode, std::string, "realistic", Choice(kKvGenerationModes).Iomimic().Doc("Emulated token generation after the cache I/O: none (0), fast (2 ms per token) or realistic (30 ms per token).")) \
  X("multi_turn", multi_turn, bool, true, Bool().Iomimic().Doc("Multi-turn conversations: a request reads every earlier turn's entry of its conversation (each turn continues one with probability 0.8, at most 50 turns).")) \
  X("max_turns", max_turns, std::uint64_t, 50, UInt(1, kNoMax).Iomimic().Doc("Most turns of a conversation: a user whose conversation reached it starts a new one (the reference's conversation.max_turns_per_conv).")) \
  X("prefix_caching", prefix_caching, bool, true, Bool().Iomimic().Doc("System-prompt prefix check (20 % of requests): the shared prompt's tokens leave the request's context and its cache lookup is counted.")) \
  X("system_prompt_probability", system_prompt_probability, double, 0.2, Number(0, 1).Iomimic().Doc("With prefix_caching, the share of requests that draw one of the three system prompts (the reference's prefix_cache.system_prompt_hit_probability).")) \
  X("qos_interactive_probability", qos_interactive_probability, double, 0.15, Number(0, 1).Iomimic().Doc("A user is interactive when its QoS draw (uniform in [0, 1)) is below this (the reference's qos_distribution.interactive_probability).")) \
  X("qos_responsive_threshold", qos_responsive_threshold, double, 0.5, Number(0, 1).Iomimic().Doc("Else responsive when the draw is below this, else batch (the reference's qos_distribution.responsive_threshold).")) \
  X("seed", seed, std::uint64_t, 42, UInt(0, kNoMax).Iomimic().Doc("Seed of the users, requests and entry contents; rank r uses seed + r.")) \
  X("tensor_parallel", tensor_parallel, std::uint64_t, 1, UInt(1, 1024).Iomimic().Doc("Tensor-parallel degree: each entry holds 1/tensor_parallel of the request's KV cache.")) \
  X("num_gpus", num_gpus, std::uint64_t, 1, UInt(1, 1024).Iomimic().Doc("GPUs whose memory forms the accelerator tier (num_gpus x gpu_mem_gb); at least tensor_parallel.")) \
  X("gpu_mem_gb", gpu_mem_gb, double, 0, Number(0, 1024).Iomimic().Doc("Accelerator tier per GPU, GiB (where its entries live: kv_cache.accelerator; docs/kvcache.md); 0 = no accelerator tier, as the closed submissions.")) \
  X("gpu_copy_gbps", gpu_copy_gbps, double, 25, Number(0.001, 1e6).Iomimic().Doc("Emulated host-device copy rate of the accelerator tier, GB/s: a copy of n bytes takes at least n / (gpu_copy_gbps x 1e9) seconds (accelerator emulated; with gds, the emulated link's h2d_bandwidth unless accelerator_options sets it).")) \
  X("accelerator", accelerator, std::string, "auto", Choice(kKvAccelerators).Iomimic().Doc("Where the accelerator tier keeps its entries: emulated (host memory, copies held to gpu_copy_gbps), gds (device memory of the gds storage plugin: cudaMalloc and CUDA copies on a GPU, its host arena and modelled link without one) or auto (gds where the gds plugin finds a GPU, else emulated); summary.json kv_cache.accelerator_path says which ran.")) \
  X("accelerator_options", accelerator_options, TextMap, {}, FreeMap().Iomimic().Doc("Options of the gds storage plugin for the accelerator tier (mode, device, staging_size, h2d_bandwidth...: iomimic plugins).")) \
  X("cpu_mem_gb", cpu_mem_gb, double, 0, Number(0, 16384).Iomimic().Doc("Host-memory tier, GiB (real memory the run holds); 0 = no host tier.")) \
  X("storage_capacity_gb", storage_capacity_gb, double, 0, Number(0, 1e9).Iomimic().Doc("Storage tier capacity, GiB; the least recently used entries are deleted beyond it; 0 = 95 % of the free space of a local cache folder, unlimited on object storage.")) \
  X("eviction_target_ratio", eviction_target_ratio, double, 0.8, Number(0, 1000).Iomimic().Doc("A tier other than the last fills up to this share of its capacity before it evicts (the reference's eviction.target_usage_ratio).")) \
  X("eviction_large_entry_ratio", eviction_large_entry_ratio, double, 0.95, Number(0, 1000).Iomimic().Doc("A tier other than the last refuses an entry larger than this share of its capacity (the reference's eviction.large_entry_limit_ratio).")) \
  X("eviction_max_depth", eviction_max_depth, std::uint64_t, 10, UInt(0, 1000).Iomimic().Doc("Most tiers one placement cascades demotions through below the first (the reference's eviction.max_recursion_depth).")) \
  X("eviction_max_per_call", eviction_max_per_call, std::uint64_t, 5000, UInt(0, kNoMax).Iomimic().Doc("Making room in a tier evicts at most min(eviction_max_per_call, max(eviction_min_per_call, its entries + 100)) entries; then the last tier takes the entry over its capacity and another refuses it (the reference's eviction.max_evictions_hard_cap).")) \
  X("eviction_min_per_call", eviction_min_per_call, std::uint64_t, 1000, UInt(0, kNoMax).Iomimic().Doc("See eviction_max_per_call (the reference's eviction.max_evictions_min).")) \
  X("decode_batch_size", decode_batch_size, std::uint64_t, 32, UInt(1, kNoMax).Iomimic().Doc("Tokens per decode batch: a decode reads the entry once, then once per batch of generated tokens.")) \
  X("transfer_size", transfer_size, std::uint64_t, 16ULL << 20, UInt(4096, 1ULL << 32).Iomimic().Doc("Bytes per storage request and per worker buffer: larger entries are written and read in several requests (the reference writes each in one).")) \
  IOMIMIC_KV_USER_KEYS(X, chatbot, "Chatbot", 512, 4096, 50, 200, 0.1, 0.5) \
  IOMIMIC_KV_USER_KEYS(X, coding, "Coding", 4096, 25000, 100, 500, 0.2, 1.0) \
  IOMIMIC_KV_USER_KEYS(X, document, "Document", 4096, 16384, 200, 800, 0.3, 1.5) \
  X("cache_folder", cache_folder, std::string, "kvcache", Text().NonEmpty().StripSlashes().Iomimic().Doc("Folder of the storage tier's .npy entries, relative to storage.storage_root; rank r uses rank_<r>/ below it.")) \
  X("keep_entries", keep_entries, bool, false, Bool().Iomimic().Doc("Leave the storage tier's remaining .npy entries in the cache folder at the end (False: the run deletes the entries it wrote).")) \
  X("io_trace_log", io_trace_log, std::string, "", Text().Nullable().NullWhenEmpty().Iomimic().Doc("When set, a CSV of every tier operation (Timestamp, Operation, Object_Size_Bytes, Tier, Key, Phase), the reference's --io-trace-log format; relative to the results folder; rank r > 0 adds .rank<r>.")) \
  X("reference_results", reference_results, std::string, "", Text().Nullable().NullWhenEmpty().Iomimic().Doc("When set, rank 0 also writes the reference's results JSON (what kv-cache.py --output gets: per-request latency lists, summary, cache_stats, qos_metrics...; docs/kvcache-reference.md, \"The results JSON\") to this file, relative to the results folder; the ranks then keep one latency per request in memory.")) \
  X("performance_profile", performance_profile, std::string, "latency", Choice(kKvPerformanceProfiles).Iomimic().Doc("The criteria of reference_results' storage_health (the reference's --performance-profile): latency (storage write P95 < 500 ms, read P95 < 200 ms, CPU tier P95 < 150 ms, hit rate > 30 %) or throughput (storage read and write bandwidth above 0).")) \
  X("trace_only", trace_only, bool, false, Bool().Iomimic().Doc("Run the same users, requests, tier decisions and timing logic with no tier transfer (no storage I/O, no memory-tier copies) and write the io_trace_log, as the reference's --io-trace-log mode, which performs no I/O; needs io_trace_log.")) \
  X("replay_trace", replay_trace, std::string, "", Text().Nullable().NullWhenEmpty().Iomimic().Doc("When set, the workflow replays this I/O trace of the reference (its --io-trace-log CSV, .zst too) on the storage instead of emulating users: Tier-2 writes create .npy objects under cache_folder, Tier-2 reads read them whole past the page cache, memory tiers are counted (docs/kvcache-reference.md, iomimic kvcache-replay); with several ranks each replays it under cache_folder/rank_<r>.")) \
  X("replay_timing", replay_timing, std::string, "fast", Choice(kKvReplayTimings).Iomimic().Doc("fast: each replayed operation as soon as a thread and its key are free; recorded: also not before its time in the trace.")) \
  X("replay_threads", replay_threads, std::uint64_t, 1, UInt(1, 4096).Iomimic().Doc("Replayed operations in flight on different keys.")) \
  X("layout", layout, std::string, "whole", Choice(kKvLayouts).Iomimic().Doc("whole: one entry per request, MLPerf's benchmark (users, QoS, the reference's figures); chunked: chunks of chunk_tokens shared by prefix, driven by request_trace, as LMCache, llm-d and Dynamo offload (docs/kvcache-chunked.md).")) \
  X("chunk_tokens", chunk_tokens, std::uint64_t, 256, UInt(1, 1ULL << 20).Iomimic().Doc("Chunked layout: tokens per chunk (LMCache's chunk_size, llm-d's block); one object per chunk on storage.")) \
  X("request_trace", request_trace, std::string, "", Text().Nullable().NullWhenEmpty().Iomimic().Doc("Chunked layout: the request trace that drives the run (Mooncake JSON lines, BurstGPT CSV or ShareGPT JSON; scripts/kv_request_traces.py writes each).")) \
  X("request_trace_format", request_trace_format, std::string, "auto", Choice(kKvTraceFormats).Iomimic().Doc("Chunked layout: the request trace's format; auto: from its name (.jsonl mooncake, .csv burstgpt, .json sharegpt).")) \
  X("trace_speedup", trace_speedup, double, 1, Number(0, 1e9).Iomimic().Doc("Chunked layout: requests arrive at their trace time divided by this; 0 = as soon as a request slot is free.")) \
  X("prefill_tokens_per_second", prefill_tokens_per_second, double, 10000, Number(1, 1e12).Iomimic().Doc("Chunked layout: modelled prefill rate of the accelerator; a request's missed tokens take tokens / rate seconds before its first token.")) \
  X("promotion", promotion, std::string, "none", Choice(kKvPromotions).Iomimic().Doc("Chunked layout: none: a hit stays on its tier (MLPerf's waterfall); on_hit: a hit on a lower tier moves up to the top tier (gpu, else cpu, else storage) after it is read (LMCache, Dynamo KVBM).")) \
  X("io_threads", io_threads, std::uint64_t, 16, UInt(1, 4096).Iomimic().Doc("Chunked layout: chunk transfers in flight per rank (llm-d runs 64 I/O threads per GPU).")) \
  X("shared_store", shared_store, bool, false, Bool().Iomimic().Doc("Chunked layout: every rank's storage tier is one folder (cache_folder/shared) or prefix, as llm-d's shared file-system backend: a chunk another rank or host wrote is a hit; objects are published whole (temporary name and rename); needs storage_capacity_gb 0.")) \
  X("max_inflight_requests", max_inflight_requests, std::uint64_t, 64, UInt(1, 100000).Iomimic().Doc("Chunked layout: requests served at once per rank; a request arriving when all are busy waits (its TTFT counts the wait).")) \
  X("chunk_objects", chunk_objects, std::string, "chunk", Choice(kKvChunkObjects).Iomimic().Doc("Chunked layout: objects per chunk on the storage and object tiers: chunk, one; layer, one per model layer (<chunk>.l<i>.npy, LMCache's layer-wise mode).")) \
  X("object_tier", object_tier, std::string, "", Text().Nullable().NullWhenEmpty().Iomimic().Doc("Chunked layout: a storage plugin for a tier below storage (Dynamo KVBM's G4, e.g. s3): chunks evicted from storage move there, its hits are read from there; empty = none.")) \
  X("object_tier_options", object_tier_options, TextMap, {}, FreeMap().Iomimic().Doc("Chunked layout: the object tier plugin's options (as storage.storage_options: endpoint_url, credentials...).")) \
  X("object_tier_folder", object_tier_folder, std::string, "", Text().Nullable().NullWhenEmpty().StripSlashes().Iomimic().Doc("Chunked layout: where the object tier keeps chunks, as its plugin names paths (bucket/prefix on s3); empty = cache_folder/object_tier.")) \
  X("object_capacity_gb", object_capacity_gb, double, 0, Number(0, 1e9).Iomimic().Doc("Chunked layout: object tier capacity, GiB; the least recently used chunks are deleted beyond it; 0 = unlimited."))

#define IOMIMIC_KEYS_MODEL_LOAD(X)                                                                \
  X("folder", folder, std::string, "model", Text().NonEmpty().StripSlashes().Iomimic().Doc("Folder of the model's safetensors files, relative to storage.storage_root; written first where a file is missing or not the model's.")) \
  X("files", files, std::vector<std::string>, {}, TextList().Iomimic().Doc("Existing safetensors files to load instead of the model's (your own model; relative to storage.storage_root or absolute); none is written.")) \
  X("max_shard_bytes", max_shard_bytes, std::uint64_t, 5000000000ULL, UInt(1, kNoMax).Iomimic().Doc("Largest shard of the model's files, bytes (Hugging Face's max_shard_size, 5GB by default): model-0000i-of-0000n.safetensors and model.safetensors.index.json, or one model.safetensors.")) \
  X("method", method, std::string, "tensors", Choice(kModelLoadMethods).Iomimic().Doc("tensors: each file opened, its header parsed, its tensors read in file order in read_size requests, workers files at once (safetensors' load_file; with the mmap back end, mmap and touch); chunks: every file's data cut into read_size chunks that workers read concurrently (Run:ai Model Streamer; concurrent range GETs on s3).")) \
  X("workers", workers, std::uint64_t, 1, UInt(1, 4096).Iomimic().Doc("Threads per rank reading at once (files with method tensors, chunks with method chunks).")) \
  X("read_size", read_size, std::uint64_t, 16ULL << 20, UInt(4096, 1ULL << 32).Iomimic().Doc("Bytes per read request, and per worker buffer (device memory with the gds back end).")) \
  X("cache", cache, std::string, "both", Choice(kModelLoadCaches).Iomimic().Doc("cold: one load with the files' pages dropped from the page cache first; warm: one load as the files are; both: cold, then warm.")) \
  X("split", split, std::string, "replicate", Choice(kModelLoadSplits).Iomimic().Doc("replicate: every rank loads every byte (replicas of a model); shard: rank r loads every ranks-th file (method tensors) or chunk (method chunks), as tensor-parallel ranks share one load."))

#define IOMIMIC_KEYS_APP_REPLAY(X)                                                                \
  X("trace", trace, std::string, "", Text().Iomimic().Doc("The trace file: strace text (strace -f -ttt -T [-yy] -e trace=%file,%desc) or DFTracer's JSON lines (.pfw, .pfw.gz); docs/replay.md.")) \
  X("map", map, std::vector<std::string>, {}, TextList().Iomimic().Doc("FROM=TO prefixes mapping the trace's absolute paths to the target (relative TO: below storage.storage_root); the longest FROM that is a path or a folder above it wins.")) \
  X("root", root, std::string, "", Text().Iomimic().Doc("Where paths no app_replay.map prefix covers go (ROOT/<path>; relative: below storage.storage_root); empty: such an absolute path is an error naming it.")) \
  X("timing", timing, std::string, "recorded", Choice(kAppReplayTimings).Iomimic().Doc("recorded: before each operation a thread waits the gap the application left since its previous one (its compute); fast: no waits.")) \
  X("copies", copies, std::uint64_t, 1, UInt(1, 4096).Iomimic().Doc("Copies of the application each rank runs at once, each on its own files (copy-<k>/ inserted after the mapped prefix when the run has more than one)."))

#define IOMIMIC_KEYS_IOMIMIC(X)                                                                   \
  X("sample_log", sample_log, bool, false, Bool().Iomimic().Doc("Write <id>_samples.csv: every sample read, per step.")) \
  X("sharding", sharding, std::string, "samples", Choice(kShardings).Iomimic().Doc("How ranks share an epoch: samples (classic DLIO: rank r reads the r-th block of the sample order) or files (MLPerf Storage v3.0's fork: rank r reads files r, r + N, ..., dealt out again each epoch when files are shuffled).")) \
  X("dlio_order", dlio_order, bool, false, Bool().Iomimic().Doc("Reproduce DLIO's exact sample order (NumPy's generator).")) \
  X("checksum", checksum, bool, false, Bool().Iomimic().Doc("Hash every sample read (summary: read_checksum).")) \
  X("accelerators_per_process", accelerators_per_process, std::uint64_t, 1, UInt(1, kMaxAcceleratorsPerProcess).Iomimic().Doc("Accelerators emulated by each process (threads), each with its own plan.")) \
  X("max_step_list", max_step_list, std::uint64_t, 100000, UInt(0, kNoMax).Iomimic().Doc("Longest per-step list in <id>_output.json; longer lists hold means of k steps; 0 = no bound.")) \
  X("reader_work_sharing", reader_work_sharing, bool, true, Bool().Iomimic().Doc("A reader thread held back by the prefetch window reads unclaimed samples of the oldest unfinished batch instead of sleeping, so a reader that lost its CPU does not leave another CPU idle; the same samples, requests and batches, at most reader.read_threads samples in flight. False: each batch is read by one thread, as a PyTorch worker reads it. Streamed formats and reader.read_type memory never share.")) \
  X("huge_pages", huge_pages, bool, false, Bool().Iomimic().Doc("madvise(MADV_HUGEPAGE) on reader buffers.")) \
  X("content", content, std::string, "random", Choice(kContentKinds).Iomimic().Doc("Content of generated payloads: random (unique, incompressible), zeros, or scrambled (fio's default buffer: a 1 MiB random pattern with an 8-byte stamp per 512-byte sector; cheaper to write, but repeats beyond 1 MiB).")) \
  X("compress_percentage", compress_percentage, std::uint64_t, 0, UInt(0, 100).Iomimic().Doc("Share of each 4 KiB block that compresses away (like fio's buffer_compress_percentage).")) \
  X("dedupe_percentage", dedupe_percentage, std::uint64_t, 0, UInt(0, 100).Iomimic().Doc("Share of 4 KiB blocks that repeat another block (like fio's dedupe_percentage).")) \
  X("timeline_interval", timeline_interval, double, 0.1, Number(0, 3600).Iomimic().Doc("Seconds per row of timeline.csv (bytes, requests, samples, steps, AU per interval); 0 = no timeline.")) \
  X("cache_check_files", cache_check_files, std::uint64_t, 256, UInt(0, kNoMax).Iomimic().Doc("Training files whose size on storage and page-cache residency the cache check measures before training (an even sample when there are more, docs/cluster.md \"Cache honesty\"); 0 = none: the nominal size is compared, residency is not measured and no data file is opened (a run traced with strace to compare with DLIO's).")) \
  X("io_counters_top", io_counters_top, std::uint64_t, 1000, UInt(0, kNoMax).Iomimic().Doc("Files listed one per row in io_counters.csv (most bytes first); the rest share one \"others\" row; 0 = every file.")) \
  X("trace", trace, bool, false, Bool().Iomimic().Doc("Write trace/<rank>.pfw: Chrome trace events (DFTracer's JSON-lines layout) of sample reads, storage operations, steps, compute, barriers, checkpoints, epochs.")) \
  X("trace_max_events", trace_max_events, std::uint64_t, 1000000, UInt(1, kNoMax).Iomimic().Doc("Most trace events kept per rank; later ones are dropped and counted (summary: iomimic.trace.dropped_events).")) \
  X("progress_interval", progress_interval, double, 5.0, Number(0, 3600).Iomimic().Doc("Seconds between progress lines of rank 0 when stdout is not a terminal (a terminal gets one live line); 0 = no progress.")) \
  X("read_once", read_once, bool, false, Bool().Iomimic().Doc("The first pass over each split reads from storage; later passes hold the samples in memory and make no I/O (applications that load their dataset once).")) \
  X("startup_load", startup_load, bool, false, Bool().Iomimic().Doc("Before training, each rank loads every file it will read whole (in reader.transfer_size requests; one request per file, at most 256 MiB, when 0); then no epoch makes I/O.")) \
  X("replicate", replicate, std::string, "none", Choice(kReplicateModes).Iomimic().Doc("none: each rank reads its shard (DLIO); dataset: every rank reads the whole sample set, steps as for one rank; batch: every rank reads rank 0's shard, the same batch at each step.")) \
  X("random_read_bytes", random_read_bytes, std::uint64_t, 0, UInt(0, kNoMax).Iomimic().Doc("When not 0, a sample is iomimic.random_reads_per_sample reads of this many bytes at random offsets of its file (sub-volumes of a large file), in place of the format's reads.")) \
  X("random_reads_per_sample", random_reads_per_sample, std::uint64_t, 1, UInt(1, kNoMax).Iomimic().Doc("Random-offset reads per sample with iomimic.random_read_bytes.")) \
  X("read_script", read_script, std::vector<std::string>, {}, TextList().Iomimic().Doc("When not empty, the reads of each sample in place of the format's (what iomimic derive writes from a trace, docs/derive.md): entries '[CLASS] N: [open] TERM ...', N consecutive samples of a file each making those reads (SIZE: one read of SIZE bytes; file-C: one of the file's size less C; SIZE*K, file-C*K: K reads), opening the file anew with 'open' (else a reader thread keeps its file open while its samples come from it); a file reads the entries of its class in iomimic.data_files (without a CLASS: the entries without one), sample i taking the class's entry of i modulo the samples the class lists, its reads consecutive in the file from where the samples before it ended; a size 0 is a read at the end of the file that returns nothing.")) \
  X("data_files", data_files, std::vector<std::string>, {}, TextList().Iomimic().Doc("When not empty, each generated data file's size and read-script class (what iomimic derive writes from a trace, docs/derive.md): entries 'SIZE[*K] [CLASS]', K consecutive files (train, then eval) of SIZE bytes, to within num_samples_per_file element bytes (the sample shape is fitted to the format's headers; record_length_bytes and record_dims are not used), read with CLASS's entries of iomimic.read_script; file i takes the entry of i modulo the files listed."))

// Accepted, checked, and unused by iomimic.
#define IOMIMIC_KEYS_ACCEPTED(A)                                                                  \
  A("workflow.query", Text().Nullable().Doc("Only read by dlio_benchmark_query.")) \
  A("storage.storage_library", Text().Nullable().Mlperf().Doc("MLPerf Storage v3: the client library (s3dlio, minio, s3torchconnector); kept in storage_options (accepted by the s3 back end; the s3 back end is what runs).")) \
  A("storage.protocol", Text().Nullable().ByRule().Mlperf().Doc("MLPerf Storage v3 (storage_type object): the URL scheme of the objects, s3 (default) or file; one no installed storage plugin serves (az, gcs) is refused.")) \
  A("storage.endpoint_uris", TextList().ByRule().Mlperf().Doc("MLPerf Storage v3: S3 endpoints that requests are spread over; the s3 back end's option endpoint_urls.")) \
  A("storage.load_balance_strategy", Choice(kLoadBalanceStrategies).ByRule().Mlperf().Doc("How requests pick one of endpoint_uris: round_robin (default), least_connections, random; the s3 back end's option load_balance.")) \
  A("storage.use_mpi_endpoint_distribution", Bool().ByRule().Mlperf().Doc("Each rank sends every request to endpoint_uris[rank mod N]; the s3 back end's option endpoint_per_rank.")) \
  A("dataset.record_element_bytes", UInt(0, kNoMax).Doc("Recomputed from record_element_type, as DLIO does.")) \
  A("model.model_size", UInt(0, kNoMax).ByRule().Doc("MLPerf's unet3d files give the checkpoint size here; DLIO ignores it, iomimic uses it as model.model_size_bytes when that is not set, with a warning.")) \
  A("checkpoint.ksm.madv_mergeable_id", UInt(0, kNoMax).Doc("KSM setting.")) \
  A("checkpoint.ksm.high_ram_trigger", Number(0, 100).Doc("KSM setting (percent).")) \
  A("checkpoint.ksm.low_ram_exit", Number(0, 100).Doc("KSM setting (percent).")) \
  A("checkpoint.ksm.await_time", Number(0, kNoLimit).Doc("KSM setting (seconds)."))

// clang-format on
