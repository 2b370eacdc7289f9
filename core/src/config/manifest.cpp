// LoadManifest: find the manifest, parse it, apply overrides, type and
// validate it.

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <tuple>

#include "config/config.h"
#include "config/convert_internal.h"
#include "config/declared_internal.h"
#include "config/overrides_internal.h"
#include "config/schema_internal.h"
#include "config/tree_internal.h"

namespace iomimic::config {
namespace {

namespace fs = std::filesystem;

// Where the shipped workloads live when no --config-dir is given: installed
// next to the binary (<prefix>/share/iomimic/workloads), else the source tree.
std::vector<std::string> DefaultConfigDirs() {
  std::vector<std::string> dirs;
#ifdef IOMIMIC_WORKLOADS_INSTALL_RELDIR
  std::error_code error;
  const fs::path exe = fs::read_symlink("/proc/self/exe", error);
  if (!error) {
    dirs.push_back((exe.parent_path().parent_path() / IOMIMIC_WORKLOADS_INSTALL_RELDIR).string());
  }
#endif
#ifdef IOMIMIC_WORKLOADS_SOURCE_DIR
  dirs.emplace_back(IOMIMIC_WORKLOADS_SOURCE_DIR);
#endif
  return dirs;
}

bool IsFile(const fs::path& path) {
  std::error_code error;
  return fs::is_regular_file(path, error);
}

bool IsDirectory(const fs::path& path) {
  std::error_code error;
  return fs::is_directory(path, error);
}

// The workload names (file stems of *.yaml) in `dir` and `dir`/workload.
std::vector<std::string> ListWorkloads(const fs::path& dir) {
  std::set<std::string> names;
  for (const fs::path& folder : {dir, dir / "workload"}) {
    std::error_code error;
    for (fs::directory_iterator it(folder, error), end; !error && it != end; it.increment(error)) {
      if (it->path().extension() == ".yaml" && IsFile(it->path())) {
        names.insert(it->path().stem().string());
      }
    }
  }
  return {names.begin(), names.end()};
}

// The manifest file of workload `name`: <dir>/<name>.yaml, then
// <dir>/workload/<name>.yaml, in each of `dirs`.
Result<std::string> FindWorkload(const std::string& name, const std::vector<std::string>& dirs) {
  for (const std::string& dir : dirs) {
    for (const fs::path& candidate :
         {fs::path(dir) / (name + ".yaml"), fs::path(dir) / "workload" / (name + ".yaml")}) {
      if (IsFile(candidate)) return candidate.string();
    }
  }
  std::string where;
  std::vector<std::string> available;
  for (const std::string& dir : dirs) {
    where += (where.empty() ? "" : ", ") + dir;
    for (std::string& found : ListWorkloads(dir)) available.push_back(std::move(found));
  }
  std::sort(available.begin(), available.end());
  available.erase(std::unique(available.begin(), available.end()), available.end());
  std::string message = "workload '" + name + "' not found in " + where + " (looked for <dir>/" +
                        name + ".yaml and <dir>/workload/" + name + ".yaml)";
  if (available.empty()) return Status::NotFound(message + ". No workloads there.");
  std::vector<std::string_view> candidates(available.begin(), available.end());
  if (std::optional<std::string> close = internal::ClosestWord(name, candidates)) {
    message += ". Did you mean '" + *close + "'?";
  } else {
    message += ".";
  }
  message += " Available:";
  for (std::size_t i = 0; i < available.size(); ++i) {
    message += (i == 0 ? " " : ", ") + available[i];
  }
  return Status::NotFound(message);
}

Result<std::string> ReadFile(const std::string& path) {
  if (IsDirectory(path)) {
    return Status::InvalidArgument("'" + path + "' is a directory, not a manifest");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::FromErrno(errno, "cannot read manifest '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Status::FromErrno(errno, "cannot read manifest '" + path + "'");
  return text.str();
}

// Manifest-file warnings in file order, then override warnings as applied.
void SortWarnings(const std::string& file, std::vector<Diagnostic>* warnings) {
  const auto overrides_begin = std::stable_partition(
      warnings->begin(), warnings->end(), [&](const Diagnostic& d) { return d.file == file; });
  std::stable_sort(warnings->begin(), overrides_begin,
                   [](const Diagnostic& a, const Diagnostic& b) {
                     return std::tie(a.line, a.column) < std::tie(b.line, b.column);
                   });
}

Status Load(const std::string& text, const std::string& file,
            const std::vector<std::string>& overrides, const PluginVocabulary& plugins,
            LoadedManifest* manifest) {
  using namespace internal;  // NOLINT(build/namespaces): the config internals
  Locator locator(file);
  std::vector<Diagnostic>& warnings = manifest->warnings;

  if (std::optional<YamlBoundsError> bounds = CheckYamlBounds(text)) {
    return locator.FileError(bounds->mark, bounds->what);
  }
  YAML::Node document;
  try {
    document.reset(YAML::Load(text));
  } catch (const YAML::ParserException& e) {
    return locator.FileError(e.mark, "malformed YAML: " + e.msg);
  }
  if (document.IsNull()) document.reset(YAML::Node(YAML::NodeType::Map));  // an empty file
  if (!document.IsMap()) {
    return locator.FileError(document.Mark(),
                             "expected a map of sections (model, dataset, "
                             "reader, ...), got " +
                                 Describe(document));
  }
  IOMIMIC_RETURN_IF_ERROR(CheckDuplicateKeys(document, "", locator));
  YAML::Node root = UnwrapWorkloadRoot(document, locator, &warnings);
  IOMIMIC_RETURN_IF_ERROR(CanonicalizeLegacy(root, locator, &warnings));
  IOMIMIC_RETURN_IF_ERROR(ApplyOverrides(overrides, root, &locator, &manifest->config.hydra));
  // Overrides may have set a legacy shape again (e.g. ++workload.model=name).
  IOMIMIC_RETURN_IF_ERROR(CanonicalizeLegacy(root, locator, nullptr));
  IOMIMIC_RETURN_IF_ERROR(ResolveInterpolations(root, locator, &warnings));
  IOMIMIC_RETURN_IF_ERROR(MoveReaderStorageKeys(root, &locator));
  WarnUnknownKeys(root, locator, plugins, &warnings);
  IOMIMIC_RETURN_IF_ERROR(ConvertTree(root, locator, plugins, &manifest->config, &warnings));
  IOMIMIC_RETURN_IF_ERROR(ReadDeclaredKeys(root, locator, plugins, &manifest->config));
  IOMIMIC_RETURN_IF_ERROR(ResolveKvCacheWorkflow(root, locator, &manifest->config));
  IOMIMIC_RETURN_IF_ERROR(ValidateConfig(manifest->config, root, locator));
  RecordKeyOrigins(root, locator, &manifest->config.origins.where);
  SortWarnings(file, &warnings);
  return Status::OK();
}

// Parses and types `text`; no exception escapes.
Result<LoadedManifest> LoadText(const std::string& text, const std::string& file,
                                const std::vector<std::string>& overrides,
                                const PluginVocabulary& plugins) {
  LoadedManifest manifest;
  manifest.raw_overrides = overrides;
  try {
    IOMIMIC_RETURN_IF_ERROR(Load(text, file, overrides, plugins, &manifest));
  } catch (const YAML::Exception& e) {
    return Status::Internal(file + ": unexpected YAML error: " + e.what());
  } catch (const std::exception& e) {
    return Status::Internal(file + ": " + e.what());
  }
  return manifest;
}

// An error about the `workload=` override among `overrides`.
Status SelectionConflict(const std::vector<std::string>& overrides, const std::string& what) {
  for (const std::string& text : overrides) {
    const Result<internal::Override> parsed = internal::ParseOverride(text);
    if (parsed.ok() && parsed->key == "workload") {
      return Status::InvalidArgument("override '" + text + "': " + what);
    }
  }
  return Status::InvalidArgument(what);
}

}  // namespace

Result<LoadedManifest> LoadManifest(const ManifestSource& source) {
  IOMIMIC_ASSIGN_OR_RETURN(const std::string selected,
                           internal::FindWorkloadSelection(source.overrides));
  std::string path = source.path;
  std::string name;
  if (!path.empty()) {
    if (!source.workload.empty()) {
      return Status::InvalidArgument("give a manifest path or a workload name, not both ('" + path +
                                     "', workload=" + source.workload + ")");
    }
    if (!selected.empty()) {
      return SelectionConflict(source.overrides,
                               "a manifest path ('" + path + "') is given already");
    }
    name = fs::path(path).stem().string();
  } else {
    name = source.workload;
    if (!selected.empty()) {
      if (!name.empty() && name != selected) {
        return SelectionConflict(source.overrides,
                                 "conflicts with the selected workload '" + name + "'");
      }
      name = selected;
    }
    if (name.empty()) {
      return Status::InvalidArgument(
          "no manifest: give a manifest path or workload=<name> (with --config-dir)");
    }
    if (name.ends_with(".yaml")) name.resize(name.size() - 5);
    std::vector<std::string> dirs;
    if (!source.config_dir.empty()) {
      if (!IsDirectory(source.config_dir)) {
        return Status::NotFound("config dir '" + source.config_dir + "' is not a directory");
      }
      dirs.push_back(source.config_dir);
    } else {
      for (const std::string& dir : DefaultConfigDirs()) {
        if (IsDirectory(dir)) dirs.push_back(dir);
      }
      if (dirs.empty()) {
        return Status::NotFound("workload '" + name +
                                "': no shipped workloads folder found; give --config-dir");
      }
    }
    IOMIMIC_ASSIGN_OR_RETURN(path, FindWorkload(name, dirs));
  }

  IOMIMIC_ASSIGN_OR_RETURN(const std::string text, ReadFile(path));
  IOMIMIC_ASSIGN_OR_RETURN(LoadedManifest manifest,
                           LoadText(text, path, source.overrides, source.plugins));
  manifest.manifest_path = path;
  manifest.workload_name = name;
  return manifest;
}

Result<LoadedManifest> LoadManifestFromString(const std::string& yaml, const std::string& name,
                                              const std::vector<std::string>& overrides,
                                              const PluginVocabulary& plugins) {
  IOMIMIC_ASSIGN_OR_RETURN(const std::string selected, internal::FindWorkloadSelection(overrides));
  if (!selected.empty()) {
    return SelectionConflict(overrides, "the manifest is given already ('" + name + "')");
  }
  IOMIMIC_ASSIGN_OR_RETURN(LoadedManifest manifest, LoadText(yaml, name, overrides, plugins));
  manifest.workload_name = fs::path(name).stem().string();
  return manifest;
}

}  // namespace iomimic::config
