#include "config/dlio_compat.h"

namespace iomimic::config {
namespace {

// reader.file_access values that DLIO parses and iomimic reads through MPI-IO,
// with the MPI-IO back end's mode.
struct SharedAccess {
  std::string_view file_access;
  std::string_view mode;
};
constexpr SharedAccess kSharedAccess[] = {
    {"shared", "independent"}, {"mpio", "independent"}, {"collective", "collective"}};
constexpr std::string_view kODirectBackend = "odirect";
constexpr std::string_view kDirectFsStorageType = "direct_fs";
// DLIO's storage.storage_type: s3 (storage_root the bucket, storage_options
// its client's settings) and MLPerf v3's storage.storage_library: the S3
// back end, with the storage_options it understands as its own options.
constexpr std::string_view kObjectStorageType = "s3";
constexpr std::string_view kObjectBackend = "s3";
constexpr std::string_view kObjectOptionKeys[] = {
    "endpoint_url",        "region",          "access_key_id",  "secret_access_key",
    "s3_force_path_style", "s3_max_attempts", "storage_library"};
constexpr std::string_view kMpiIoBackend = "mpiio";

// Formats a DLIO data loader cannot read, and why.
struct LoaderRefusal {
  std::string_view loader;
  std::string_view format;
  std::string_view reason;
};
constexpr LoaderRefusal kLoaderRefusals[] = {
    {"pytorch", "tfrecord",
     "the pytorch loader cannot read tfrecord files (use tensorflow or dali)"},
};

}  // namespace

void SelectDlioBackend(bool backend_given, Config* config) {
  if (config->storage.storage_type == kObjectStorageType) {
    if (!backend_given) config->storage.backend = std::string(kObjectBackend);
    if (config->storage.backend == kObjectBackend) {
      for (std::string_view key : kObjectOptionKeys) {
        auto given = config->storage.storage_options.find(std::string(key));
        if (given != config->storage.storage_options.end()) {
          config->storage.options.emplace(given->first, given->second);  // options win
        }
      }
    }
    return;
  }
  if (backend_given) return;
  // MLPerf Storage v3.0's fork reads a local file system with O_DIRECT when
  // storage_type is direct_fs (mlpstorage's --o-direct).
  if (config->reader.odirect || config->storage.storage_type == kDirectFsStorageType) {
    config->storage.backend = std::string(kODirectBackend);
    return;
  }
  for (const SharedAccess& shared : kSharedAccess) {
    if (config->reader.file_access != shared.file_access) continue;
    config->storage.backend = std::string(kMpiIoBackend);
    if (config->storage.options.count("mode") == 0) {
      config->storage.options["mode"] = std::string(shared.mode);
    }
    return;
  }
}

std::string_view LoaderCannotRead(std::string_view loader, std::string_view format) {
  for (const LoaderRefusal& r : kLoaderRefusals) {
    if (r.loader == loader && r.format == format) return r.reason;
  }
  return {};
}

}  // namespace iomimic::config
