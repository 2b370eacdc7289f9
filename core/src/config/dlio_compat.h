// The compatibility table: every place where iomimic follows DLIO by naming
// a plugin. DLIO selects its readers and back ends with keys that name them
// (reader.odirect, reader.file_access, dataset.format + reader.data_loader);
// iomimic maps those to its plugins here, and nowhere else in the core names
// a plugin (tests/repo/check_core_names_no_plugin.py enforces it). Keys that
// belong to one format live in the key table's dataset.<format> sections and
// reach the format as FileSpec parameters (FormatParameters); what a format
// can do is declared by its traits (iomimic/format.h).
//
// docs/dlio-compat.md §1 has DLIO's side of each rule.

#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "iomimic/status.h"

namespace iomimic::config {

// The storage plugin of DLIO's plain file reads: the default back end, the
// inner back end of decorators, and where checkpoints go when the data back
// end lands in device memory.
inline constexpr std::string_view kFileStorageBackend = "posix";

// The storage plugin whose device memory holds the KV-cache accelerator tier
// with kv_cache.accelerator set to this same name (docs/kvcache.md, "Tiers
// and eviction"): its Allocate, CopyIntoBuffer and CopyOutOfBuffer.
inline constexpr std::string_view kAcceleratorStorageBackend = "gds";

// DLIO's dataset.format of a data file, by its first bytes (up to 512; ""
// = none known) or by its extension (lower case, no dot; "" = none known):
// what `iomimic derive` reports of a recorded application's files
// (docs/derive.md). TFRecord files have no magic: their extension tells.
std::string DlioFormatOfMagic(std::string_view head);
std::string DlioFormatOfExtension(std::string_view extension);

// The format `iomimic derive` generates a derived data set in: its read
// script (iomimic.read_script) makes the reads, so any format whose
// generator takes record_length_bytes and samples per file would do.
inline constexpr std::string_view kDerivedDataFormat = "npz";

// MLPerf Storage v3.0's object-storage keys that the config keeps no member
// for (docs/s3.md, "MLPerf Storage v3.0's spellings").
struct ObjectStorageKeys {
  std::string protocol;                    // storage.protocol: s3, file, az, gcs
  std::vector<std::string> endpoint_uris;  // storage.endpoint_uris
  std::string load_balance_strategy;       // storage.load_balance_strategy
  bool use_mpi_endpoint_distribution = false;
};

// DLIO's keys that select a back end (docs/s3.md and docs/dlio-compat.md §1):
// - Where the data lives: storage_root's URI scheme, else the data folder's,
//   else storage_type s3, s3dlio or object (with storage.protocol, default
//   s3, as the scheme). A scheme selects the installed storage plugin that
//   serves it (plugins.schemes, built from the plugins' descriptors:
//   file:// local files, direct:// local files with O_DIRECT, s3:// objects
//   with the bundled plugins; docs/plugins.md, "URL schemes"); one that no
//   installed plugin serves (az://, gs://...) is refused, naming the schemes
//   that are served and their plugins.
// - A plugin with an endpoint (objects): it is the back end when the
//   manifest names no storage.backend; the S3 back end gets DLIO's
//   storage_options (endpoint_url, region, access_key_id,
//   secret_access_key, s3_force_path_style, s3_max_attempts, the fork's
//   secure: false = http), MLPerf v3's storage_library and endpoint keys as
//   its options (storage.options given explicitly win); an absolute data
//   folder is a key prefix under storage_root's bucket/prefix.
// - Another plugin's scheme (direct://, a third-party mem://): that plugin
//   is the back end unless storage.backend names one.
// - A checkpoint folder in another place than the data (file:// folder, S3
//   data) gets its own back end, unless checkpoint.backend is given.
// - Plain files: reader.odirect or storage_type direct_fs (the fork) -> the
//   O_DIRECT back end; reader.file_access shared/mpio/collective -> the
//   MPI-IO back end (independent, or collective reads of a whole step).
// "<scheme>://" is removed from the folders of plugins without an endpoint.
// An error names the value and why it is refused, and `*refused_key` the
// key that holds it (storage.storage_root, storage.storage_type,
// storage.protocol, dataset.data_folder, checkpoint.checkpoint_folder), for
// the caller to locate in the manifest.
Status SelectDlioBackend(bool backend_given, const ObjectStorageKeys& keys,
                         const PluginVocabulary& plugins, Config* config, std::string* refused_key);

// Why a DLIO data loader cannot read a format, and what would.
struct LoaderCannotReadWhy {
  std::string_view reason;  // "the pytorch loader cannot read tfrecord files"
  std::string_view remedy;  // the loaders, formats or client library that would
};

// DLIO's data loaders that cannot read a format: nullopt when `loader` reads
// `format` with the client library `storage_library` (storage_options'
// storage_library, MLPerf Storage v3; "" for none), else why not. The
// pytorch loader cannot read TFRecord files, except through s3dlio in
// MLPerf Storage's DLIO fork.
std::optional<LoaderCannotReadWhy> LoaderCannotRead(std::string_view loader,
                                                    std::string_view format,
                                                    std::string_view storage_library);

}  // namespace iomimic::config
