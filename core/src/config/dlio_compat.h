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

#include <string_view>

#include "config/config.h"
#include "iomimic/status.h"

namespace iomimic::config {

// The storage plugin of DLIO's plain file reads: the default back end, the
// inner back end of decorators, and where checkpoints go when the data back
// end lands in device memory.
inline constexpr std::string_view kFileStorageBackend = "posix";

// DLIO's keys that select a back end, applied when the manifest names no
// storage.backend: storage.storage_type s3 -> the S3 back end, with DLIO's
// storage_options (endpoint_url, region, access_key_id, secret_access_key,
// s3_force_path_style, s3_max_attempts) and MLPerf v3's storage_library as
// its options (storage.options given explicitly win; also applied when
// storage.backend names the S3 back end itself); reader.odirect or
// storage.storage_type direct_fs (MLPerf Storage v3.0's fork) -> the
// O_DIRECT back end; reader.file_access shared/mpio/collective -> the MPI-IO
// back end (independent, or collective reads of a whole step).
void SelectDlioBackend(bool backend_given, Config* config);

// DLIO's data loaders that cannot read a format: "" when `loader` reads
// `format`, else the reason (the pytorch loader cannot read TFRecord files).
std::string_view LoaderCannotRead(std::string_view loader, std::string_view format);

}  // namespace iomimic::config
