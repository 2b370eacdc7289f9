#include "config/dlio_compat.h"

#include <map>
#include <optional>
#include <string>
#include <utility>

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

// MLPerf Storage v3.0's object-storage storage types, and the protocol they
// speak when storage.protocol does not say (the scheme looked up among the
// installed plugins' schemes).
constexpr std::string_view kObjectStorageTypes[] = {"s3", "s3dlio", "object"};
constexpr std::string_view kDefaultObjectProtocol = "s3";

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

// Where a run's data lives: the storage plugin that serves it.
struct Place {
  std::string backend;
  bool endpoint = false;  // objects behind an endpoint (SchemeEntry::endpoint)
};

// Plain paths: local files, through the default back end.
Place LocalFiles() { return Place{std::string(kFileStorageBackend), false}; }

// The place `value` (of key `key`) names by its URI scheme `scheme`: the
// installed plugin that serves it. An error says why not, without the key,
// and sets `*refused` to the key.
Result<Place> PlaceOf(std::string_view key, const std::string& value, std::string_view scheme,
                      const PluginVocabulary& plugins, std::string* refused) {
  for (const SchemeEntry& entry : plugins.schemes) {
    if (entry.scheme == scheme) return Place{entry.backend, entry.endpoint};
  }
  *refused = std::string(key);
  return Status::InvalidArgument("'" + value + "': no installed storage plugin serves " +
                                 std::string(scheme) +
                                 ":// (installed: " + plugins.DescribeSchemes() + ")");
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

namespace {

// Where the data lives: storage_root's URI scheme, else the data folder's,
// else storage.protocol (default s3) with an object storage type, else
// local files.
Result<Place> DataPlace(const ObjectStorageKeys& keys, const PluginVocabulary& plugins,
                        const Config& config, std::string* refused_key) {
  const StorageConfig& storage = config.storage;
  const std::string_view root_scheme = SchemeOf(storage.storage_root);
  if (!root_scheme.empty()) {
    return PlaceOf("storage.storage_root", storage.storage_root, root_scheme, plugins, refused_key);
  }
  const std::string_view data_scheme = SchemeOf(config.dataset.data_folder);
  if (!data_scheme.empty()) {
    return PlaceOf("dataset.data_folder", config.dataset.data_folder, data_scheme, plugins,
                   refused_key);
  }
  if (!IsObjectStorageType(storage.storage_type)) return LocalFiles();
  if (keys.protocol.empty()) {
    return PlaceOf("storage.storage_type", storage.storage_type, kDefaultObjectProtocol, plugins,
                   refused_key);
  }
  return PlaceOf("storage.protocol", keys.protocol, keys.protocol, plugins, refused_key);
}

// Checkpoints may live elsewhere (the fork's hybrid_storage: data on S3,
// checkpoints on a local file:// folder): a checkpoint folder with a scheme
// served by another plugin than the data's gets that plugin as its back end.
Status SelectCheckpointBackend(const ObjectStorageKeys& keys, const PluginVocabulary& plugins,
                               const Place& data, Config* config, std::string* refused_key) {
  std::string& checkpoints = config->checkpoint.checkpoint_folder;
  const std::string_view scheme = SchemeOf(checkpoints);
  if (scheme.empty()) return Status::OK();
  IOMIMIC_ASSIGN_OR_RETURN(const Place at, PlaceOf("checkpoint.checkpoint_folder", checkpoints,
                                                   scheme, plugins, refused_key));
  if (!at.endpoint) checkpoints = AfterScheme(checkpoints);
  if (config->checkpoint.backend.empty() && at.backend != data.backend) {
    config->checkpoint.backend = at.backend;
    if (at.backend == kObjectBackend) {
      ObjectOptions(keys, config->storage, &config->checkpoint.options);
    }
  }
  return Status::OK();
}

// Local files without a scheme of their own: DLIO's reader keys choose
// among the file back ends.
void SelectFileBackend(Config* config) {
  StorageConfig& storage = config->storage;
  // MLPerf Storage v3.0's fork reads a local file system with O_DIRECT when
  // storage_type is direct_fs (mlpstorage's --o-direct), as s3dlio does for
  // direct:// URIs.
  if (config->reader.odirect || storage.storage_type == kDirectFsStorageType) {
    storage.backend = std::string(kODirectBackend);
    return;
  }
  for (const SharedAccess& shared : kSharedAccess) {
    if (config->reader.file_access != shared.file_access) continue;
    storage.backend = std::string(kMpiIoBackend);
    if (storage.options.count("mode") == 0) storage.options["mode"] = std::string(shared.mode);
    return;
  }
}

}  // namespace

Status SelectDlioBackend(bool backend_given, const ObjectStorageKeys& keys,
                         const PluginVocabulary& plugins, Config* config,
                         std::string* refused_key) {
  StorageConfig& storage = config->storage;
  IOMIMIC_ASSIGN_OR_RETURN(const Place place, DataPlace(keys, plugins, *config, refused_key));
  // A data folder with a scheme of its own (beside a root's) must be served
  // too, and loses it unless its plugin has an endpoint.
  const bool root_scheme = !SchemeOf(storage.storage_root).empty();
  std::string& folder = config->dataset.data_folder;
  if (const std::string_view scheme = SchemeOf(folder); !scheme.empty()) {
    IOMIMIC_ASSIGN_OR_RETURN(const Place data,
                             PlaceOf("dataset.data_folder", folder, scheme, plugins, refused_key));
    if (!data.endpoint) folder = AfterScheme(folder);
  }
  // A root "<scheme>://bucket/prefix" becomes the path folders are joined
  // to: bucket/prefix for an endpoint, the local path otherwise.
  if (root_scheme) storage.storage_root = AfterScheme(storage.storage_root);
  if (place.endpoint) {
    if (!backend_given) storage.backend = place.backend;
    if (storage.backend == kObjectBackend) ObjectOptions(keys, storage, &storage.options);
    // With a root written as s3://bucket/prefix (the fork's spelling), a
    // folder written as an absolute path lives under that prefix.
    if (root_scheme && !folder.empty() && folder.front() == '/') {
      folder.erase(0, folder.find_first_not_of('/'));
    }
  }
  IOMIMIC_RETURN_IF_ERROR(SelectCheckpointBackend(keys, plugins, place, config, refused_key));
  if (place.endpoint || backend_given) return Status::OK();
  if (place.backend != kFileStorageBackend) {
    storage.backend = place.backend;
    return Status::OK();
  }
  SelectFileBackend(config);
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

std::string DlioFormatOfMagic(std::string_view head) {
  auto at = [&](std::size_t pos, std::string_view magic) {
    return head.size() >= pos + magic.size() && head.substr(pos, magic.size()) == magic;
  };
  using namespace std::string_view_literals;
  if (at(0, "PK\x03\x04"sv)) return "npz";  // a ZIP archive: np.savez
  if (at(0, "\x93NUMPY"sv)) return "npy";
  if (at(0, "\x89HDF\r\n\x1a\n"sv)) return "hdf5";
  if (at(0, "\xff\xd8\xff"sv)) return "jpeg";
  if (at(0, "\x89PNG\r\n\x1a\n"sv)) return "png";
  if (at(0, "PAR1"sv)) return "parquet";
  if (at(0, "II*\0"sv) || at(0, "MM\0*"sv)) return "tiff";
  if (at(257, "ustar"sv)) return "webdataset";  // a tar archive
  return "";
}

std::string DlioFormatOfExtension(std::string_view extension) {
  static constexpr std::pair<std::string_view, std::string_view> kByExtension[] = {
      {"npz", "npz"},
      {"npy", "npy"},
      {"h5", "hdf5"},
      {"hdf5", "hdf5"},
      {"hdf", "hdf5"},
      {"tfrecord", "tfrecord"},
      {"tfrecords", "tfrecord"},
      {"jpg", "jpeg"},
      {"jpeg", "jpeg"},
      {"png", "png"},
      {"parquet", "parquet"},
      {"tar", "webdataset"},
      {"csv", "csv"},
      {"tif", "tiff"},
      {"tiff", "tiff"}};
  for (const auto& [ext, format] : kByExtension) {
    if (ext == extension) return std::string(format);
  }
  return "";
}

}  // namespace iomimic::config
