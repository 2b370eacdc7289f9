#include "config/dlio_compat.h"

#include <map>
#include <optional>
#include <string>

#include "config/scalar_internal.h"

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
constexpr std::string_view kObjectBackend = "s3";
constexpr std::string_view kObjectOptionKeys[] = {
    "endpoint_url",        "region",          "access_key_id",  "secret_access_key",
    "s3_force_path_style", "s3_max_attempts", "storage_library"};
constexpr std::string_view kMpiIoBackend = "mpiio";

// Formats a DLIO data loader cannot read, why and what would, and the
// client library with which MLPerf Storage's DLIO fork reads them after all
// (ConfigArguments.validate: pytorch reads tfrecord through s3dlio).
struct LoaderRefusal {
  std::string_view loader;
  std::string_view format;
  LoaderCannotReadWhy why;
  std::string_view library;
};
constexpr LoaderRefusal kLoaderRefusals[] = {
    {"pytorch",
     "tfrecord",
     {"the pytorch loader cannot read tfrecord files",
      "use the tensorflow or dali loader, another dataset.format, or storage_library: s3dlio "
      "(MLPerf Storage's DLIO fork reads tfrecord with pytorch through s3dlio)"},
     "s3dlio"},
};

// MLPerf Storage v3.0's object-storage storage types.
constexpr std::string_view kObjectStorageTypes[] = {"s3", "s3dlio", "object"};
// URI schemes of the fork's storage_root, data and checkpoint folders.
constexpr std::string_view kFileScheme = "file";
constexpr std::string_view kDirectScheme = "direct";
constexpr std::string_view kObjectScheme = "s3";
constexpr std::string_view kRefusedSchemes[] = {"az", "azure", "gs", "gcs"};

bool IsObjectStorageType(std::string_view type) {
  for (std::string_view t : kObjectStorageTypes) {
    if (t == type) return true;
  }
  return false;
}

// "file" of "file:///x"; empty without a scheme.
std::string_view SchemeOf(std::string_view path) {
  const std::size_t at = path.find("://");
  return at == std::string_view::npos ? std::string_view() : path.substr(0, at);
}

// "/x" of "file:///x", "bucket/key" of "s3://bucket/key".
std::string AfterScheme(const std::string& path) {
  const std::size_t at = path.find("://");
  return at == std::string::npos ? path : path.substr(at + 3);
}

// Where a run's data lives.
enum class Place { kFiles, kDirectFiles, kObjects };

// The place `value` (of key `key`) names by its URI scheme `scheme`; an
// error says why not, without the key, and sets `*refused` to the key.
Result<Place> PlaceOf(std::string_view key, const std::string& value, std::string_view scheme,
                      std::string* refused) {
  if (scheme == kFileScheme) return Place::kFiles;
  if (scheme == kDirectScheme) return Place::kDirectFiles;
  if (scheme == kObjectScheme) return Place::kObjects;
  *refused = std::string(key);
  for (std::string_view refused_scheme : kRefusedSchemes) {
    if (scheme == refused_scheme) {
      return Status::InvalidArgument(
          "'" + value + "' uses " + std::string(scheme) +
          "://, which no iomimic storage back end speaks (the object back end speaks the S3 "
          "API; Azure Blob and Google Cloud Storage need a storage plugin of their own, "
          "docs/plugins.md)");
    }
  }
  return Status::InvalidArgument("'" + value + "': unknown URI scheme '" + std::string(scheme) +
                                 "://' (file, direct and s3 are known)");
}

// The S3 back end's options from DLIO's storage_options and MLPerf v3's
// endpoint keys (storage.options given explicitly win).
void ObjectOptions(const ObjectStorageKeys& keys, const StorageConfig& storage,
                   std::map<std::string, std::string>* options) {
  for (std::string_view key : kObjectOptionKeys) {
    auto given = storage.storage_options.find(std::string(key));
    if (given != storage.storage_options.end()) options->emplace(given->first, given->second);
  }
  // The fork's `secure`: false is plain HTTP, true HTTPS, for the one endpoint.
  auto secure = storage.storage_options.find("secure");
  auto endpoint = options->find("endpoint_url");
  if (secure != storage.storage_options.end() && endpoint != options->end()) {
    const bool on = internal::ParseBool(secure->second).value_or(true);
    const std::string rest = AfterScheme(endpoint->second);
    endpoint->second = (on ? "https://" : "http://") + rest;
  }
  if (!keys.endpoint_uris.empty()) {
    std::string list;
    for (const std::string& uri : keys.endpoint_uris) list += (list.empty() ? "" : ",") + uri;
    options->emplace("endpoint_urls", list);
    if (!keys.load_balance_strategy.empty()) {
      options->emplace("load_balance", keys.load_balance_strategy);
    }
    if (keys.use_mpi_endpoint_distribution) options->emplace("endpoint_per_rank", "true");
  }
}

}  // namespace

Status SelectDlioBackend(bool backend_given, const ObjectStorageKeys& keys, Config* config,
                         std::string* refused_key) {
  StorageConfig& storage = config->storage;
  // Where the data lives: storage_root's URI scheme, else the data folder's,
  // else storage.protocol with an object storage type.
  Place place = Place::kFiles;
  const std::string root_scheme(SchemeOf(storage.storage_root));
  const std::string data_scheme(SchemeOf(config->dataset.data_folder));
  if (!root_scheme.empty()) {
    IOMIMIC_ASSIGN_OR_RETURN(
        place, PlaceOf("storage.storage_root", storage.storage_root, root_scheme, refused_key));
  } else if (!data_scheme.empty()) {
    IOMIMIC_ASSIGN_OR_RETURN(place, PlaceOf("dataset.data_folder", config->dataset.data_folder,
                                            data_scheme, refused_key));
  } else if (IsObjectStorageType(storage.storage_type)) {
    place = Place::kObjects;
    if (!keys.protocol.empty() && keys.protocol != kObjectScheme) {
      IOMIMIC_ASSIGN_OR_RETURN(
          place, PlaceOf("storage.protocol", keys.protocol, keys.protocol, refused_key));
    }
  }
  // Paths inside the place: file:// and direct:// name local paths;
  // s3://bucket/prefix stays for the data folder (the S3 back end parses
  // it) and becomes bucket/prefix for the root that folders are joined to.
  if (!root_scheme.empty()) storage.storage_root = AfterScheme(storage.storage_root);
  if (!data_scheme.empty() && data_scheme != kObjectScheme) {
    config->dataset.data_folder = AfterScheme(config->dataset.data_folder);
  }
  if (place == Place::kObjects) {
    if (!backend_given) storage.backend = std::string(kObjectBackend);
    if (storage.backend == kObjectBackend) ObjectOptions(keys, storage, &storage.options);
    // With a root written as s3://bucket/prefix (the fork's spelling), a
    // folder written as an absolute path lives under that prefix.
    std::string& folder = config->dataset.data_folder;
    if (root_scheme == kObjectScheme && !folder.empty() && folder.front() == '/') {
      folder.erase(0, folder.find_first_not_of('/'));
    }
  }
  // Checkpoints may live elsewhere (the fork's hybrid_storage: data on S3,
  // checkpoints on a local file:// folder).
  std::string& checkpoints = config->checkpoint.checkpoint_folder;
  const std::string checkpoint_scheme(SchemeOf(checkpoints));
  if (!checkpoint_scheme.empty()) {
    IOMIMIC_ASSIGN_OR_RETURN(const Place at, PlaceOf("checkpoint.checkpoint_folder", checkpoints,
                                                     checkpoint_scheme, refused_key));
    if (at != Place::kObjects) checkpoints = AfterScheme(checkpoints);
    if (config->checkpoint.backend.empty() && at != place) {
      switch (at) {
        case Place::kFiles:
          config->checkpoint.backend = std::string(kFileStorageBackend);
          break;
        case Place::kDirectFiles:
          config->checkpoint.backend = std::string(kODirectBackend);
          break;
        case Place::kObjects:
          config->checkpoint.backend = std::string(kObjectBackend);
          ObjectOptions(keys, storage, &config->checkpoint.options);
          break;
      }
    }
  }
  if (place == Place::kObjects) return Status::OK();
  if (backend_given) return Status::OK();
  // MLPerf Storage v3.0's fork reads a local file system with O_DIRECT when
  // storage_type is direct_fs (mlpstorage's --o-direct), as s3dlio does for
  // direct:// URIs.
  if (config->reader.odirect || storage.storage_type == kDirectFsStorageType ||
      place == Place::kDirectFiles) {
    storage.backend = std::string(kODirectBackend);
    return Status::OK();
  }
  for (const SharedAccess& shared : kSharedAccess) {
    if (config->reader.file_access != shared.file_access) continue;
    storage.backend = std::string(kMpiIoBackend);
    if (storage.options.count("mode") == 0) storage.options["mode"] = std::string(shared.mode);
    return Status::OK();
  }
  return Status::OK();
}

std::optional<LoaderCannotReadWhy> LoaderCannotRead(std::string_view loader,
                                                    std::string_view format,
                                                    std::string_view storage_library) {
  for (const LoaderRefusal& r : kLoaderRefusals) {
    if (r.loader == loader && r.format == format && r.library != storage_library) return r.why;
  }
  return std::nullopt;
}

}  // namespace iomimic::config
