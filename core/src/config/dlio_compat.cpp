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
