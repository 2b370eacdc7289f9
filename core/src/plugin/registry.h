// Plugin discovery and loading.
//
// The registry finds plugin shared objects in a search path, checks each
// descriptor's magic and ABI version before running any plugin code, and
// creates storage and format objects by name. Objects it creates hold a
// reference to their library, so a library is never unloaded while an object
// it made is alive.
//
// Search order (first match of a name wins):
//   1. --plugin-dir folders, in the order given
//   2. IOMIMIC_PLUGIN_PATH (colon-separated)
//   3. folders named by the manifest
//   4. the plugin folder beside the binary: <bin>/../lib/iomimic/plugins
// The current directory is never searched implicitly.

#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "iomimic/format.h"
#include "iomimic/plugin.h"
#include "iomimic/status.h"
#include "iomimic/storage.h"

namespace iomimic::plugin {

enum class Kind { kStorage, kFormat };
std::string KindName(Kind kind);

struct OptionInfo {
  std::string name, type, default_value, help;
};

struct PluginInfo {
  Kind kind = Kind::kStorage;
  std::string name;
  std::string version;
  std::string description;
  std::string path;  // the shared object
  std::uint64_t capabilities = 0;
  std::vector<OptionInfo> options;
  // The descriptor's conformance_options: "key=value,..." the conformance
  // suite opens the plugin with ("" for none).
  std::string conformance_options;
  // Storage plugins: the URL schemes the descriptor says the plugin serves
  // ("mem", without "://"; docs/plugins.md, "URL schemes").
  std::vector<std::string> schemes;
  // Format plugins: the keys the descriptor declares below dataset.<name>.,
  // defaults written as the plugin receives values. Each is also in
  // `options`, as "<name>.<key>" (docs/plugins.md, "Declared dataset keys").
  std::vector<OptionInfo> dataset_keys;
};

// A shared object that was found but refused, and why.
struct RejectedPlugin {
  std::string path;
  std::string reason;
};

// A shared object that was not loaded because a plugin of the same file name
// or the same kind and name came earlier in the search path.
struct ShadowedPlugin {
  std::string path;  // not loaded (or loaded and dropped, when only the name matched)
  std::string by;    // the plugin that is used instead
};

// Destroys a plugin object through its own library, then lets the library go.
struct PluginDeleter {
  void (*destroy)(void*) = nullptr;
  std::shared_ptr<void> library;
  void operator()(void* object) const {
    if (object != nullptr && destroy != nullptr) destroy(object);
  }
};

using StoragePtr = std::unique_ptr<Storage, std::function<void(Storage*)>>;
using FormatPtr = std::unique_ptr<Format, std::function<void(Format*)>>;

// Names capability flags, e.g. "async,direct-io".
std::string CapabilityNames(std::uint64_t flags);

// Reads what a descriptor declares beyond its options into `info`: the
// schemes of a storage plugin, the dataset keys of a format plugin (each
// also an option "<name>.<key>"). InvalidArgument, naming what is wrong, for
// a scheme that is not a URL scheme or a key that config::CheckDeclaredKey
// refuses; the registry then refuses the plugin.
Status ReadDeclarations(const IomimicPluginDescriptor& descriptor, PluginInfo* info);

// What `plugins` add to the manifest's vocabulary (config/config.h): each
// scheme served by the first storage plugin in `plugins` that declares it,
// with IOMIMIC_CAP_ENDPOINT as SchemeEntry::endpoint, and every format
// plugin's dataset keys, in order.
config::PluginVocabulary VocabularyOf(const std::vector<PluginInfo>& plugins);

class Registry {
 public:
  Registry();
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // The search path for the given --plugin-dir values and extra (manifest)
  // folders, including IOMIMIC_PLUGIN_PATH and the folder beside the binary.
  static std::vector<std::string> SearchPath(const std::vector<std::string>& plugin_dirs,
                                             const std::vector<std::string>& extra_dirs);

  // Scans every folder of `search_path` for *.so files and reads their
  // descriptors. Missing folders are skipped. Refused files are recorded, not
  // fatal. A file whose name an earlier folder already supplied is not
  // loaded at all (two copies of one plugin in one process may clash, e.g.
  // in libprotobuf's global registry); it is recorded in shadowed(), as is a
  // plugin whose kind and name an earlier file already supplied. Calling it
  // again replaces what was found.
  void Discover(const std::vector<std::string>& search_path);

  const std::vector<PluginInfo>& plugins() const;
  const std::vector<RejectedPlugin>& rejected() const;
  const std::vector<ShadowedPlugin>& shadowed() const;
  const std::vector<std::string>& search_path() const;
  // VocabularyOf(plugins()): what the manifest loader takes from the plugins
  // (config::ManifestSource::plugins).
  config::PluginVocabulary vocabulary() const;

  // Looks up a plugin; kNotFound lists the plugins of that kind that exist
  // (and mentions refused libraries whose file name matches).
  Result<PluginInfo> Find(Kind kind, const std::string& name) const;

  // Creates objects. Options are checked against the descriptor first: an
  // undeclared option is kInvalidArgument naming the plugin and listing the
  // options it accepts.
  Result<StoragePtr> CreateStorage(const std::string& name, const PluginContext& context) const;
  Result<FormatPtr> CreateFormat(const std::string& name, const PluginContext& context) const;

 private:
  struct Impl;
  Result<void*> Create(Kind kind, const std::string& name, const PluginContext& context,
                       PluginDeleter* deleter) const;
  std::unique_ptr<Impl> impl_;
};

// A storage back end and the back ends it wraps, top first. Decorator plugins
// (IOMIMIC_CAP_DECORATOR) take the back end named by their option `inner`
// (default: the plain file back end, config/dlio_compat.h); options
// "inner.<key>" go to that inner back end, so chains nest:
// {inner: <decorator>, inner.inner: <back end>, inner.<key>: <value>}.
class StorageStack {
 public:
  StorageStack() = default;
  StorageStack(StorageStack&&) = default;
  StorageStack& operator=(StorageStack&&) = default;
  ~StorageStack();

  // Builds the stack for `name` with `options` (manifest values).
  static Result<StorageStack> Open(const Registry& registry, const std::string& name,
                                   const std::map<std::string, std::string>& options, int rank,
                                   int world_size);

  Storage* top() const { return layers_.empty() ? nullptr : layers_.front().get(); }
  // Plugin names, top first, joined by " > " (a decorator, then what it wraps).
  std::string Describe() const;
  const PluginInfo& top_info() const { return infos_.front(); }

 private:
  std::vector<StoragePtr> layers_;  // top first; destroyed top first
  std::vector<PluginInfo> infos_;
};

}  // namespace iomimic::plugin
