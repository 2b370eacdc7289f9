#include "plugin/registry.h"

#include <algorithm>
#include <boost/dll/runtime_symbol_info.hpp>
#include <boost/dll/shared_library.hpp>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "config/dlio_compat.h"

namespace iomimic::plugin {
namespace fs = std::filesystem;

std::string KindName(Kind kind) { return kind == Kind::kStorage ? "storage" : "format"; }

std::string CapabilityNames(std::uint64_t flags) {
  static const std::pair<std::uint64_t, const char*> kNames[] = {
      {IOMIMIC_CAP_ASYNC, "async"},
      {IOMIMIC_CAP_DIRECT_IO, "direct-io"},
      {IOMIMIC_CAP_COLLECTIVE, "collective"},
      {IOMIMIC_CAP_DEVICE_MEMORY, "device-memory"},
      {IOMIMIC_CAP_DECORATOR, "decorator"},
      {IOMIMIC_CAP_ENDPOINT, "endpoint"},
      {IOMIMIC_CAP_PARTIAL_READS, "partial-reads"},
      {IOMIMIC_CAP_HOST_DECODE, "host-decode"},
      {IOMIMIC_CAP_MULTI_SAMPLE, "multi-sample"},
  };
  std::string out;
  for (const auto& [bit, name] : kNames) {
    if (flags & bit) {
      if (!out.empty()) out += ",";
      out += name;
    }
  }
  return out.empty() ? "-" : out;
}

namespace {

bool IsSharedObject(const fs::path& p) {
  std::string name = p.filename().string();
  return name.size() > 3 && (name.ends_with(".so") || name.find(".so.") != std::string::npos);
}

// RFC 3986's scheme, in lower case: a letter, then letters, digits, '+',
// '-' or '.'.
bool IsScheme(std::string_view text) {
  if (text.empty() || text[0] < 'a' || text[0] > 'z') return false;
  return std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.';
  });
}

// The schemes of a descriptor's comma-separated `schemes`.
Result<std::vector<std::string>> ParseSchemes(const char* text) {
  std::vector<std::string> schemes;
  if (text == nullptr) return schemes;
  std::stringstream items(text);
  for (std::string item; std::getline(items, item, ',');) {
    const std::size_t first = item.find_first_not_of(' ');
    item = first == std::string::npos ? ""
                                      : item.substr(first, item.find_last_not_of(' ') + 1 - first);
    if (item.empty()) continue;
    if (!IsScheme(item)) {
      return Status::InvalidArgument("its scheme '" + item +
                                     "' is not a URL scheme (lower-case letters, digits, '+', "
                                     "'-', '.', starting with a letter)");
    }
    schemes.push_back(item);
  }
  return schemes;
}

}  // namespace

Status ReadDeclarations(const IomimicPluginDescriptor& d, PluginInfo* info) {
  if (info->kind == Kind::kStorage) {
    IOMIMIC_ASSIGN_OR_RETURN(info->schemes, ParseSchemes(d.schemes));
    return Status::OK();
  }
  for (std::size_t i = 0; i < d.num_dataset_keys && d.dataset_keys != nullptr; ++i) {
    const IomimicOptionSpec& k = d.dataset_keys[i];
    if (k.name == nullptr) break;
    IOMIMIC_ASSIGN_OR_RETURN(
        const config::DeclaredKey key,
        config::CheckDeclaredKey({info->name, k.name, k.type ? k.type : "",
                                  k.default_value ? k.default_value : "", k.help ? k.help : ""}));
    info->dataset_keys.push_back({key.name, key.type, key.default_value, key.doc});
    const std::string option = info->name + "." + key.name;
    const bool declared = std::any_of(info->options.begin(), info->options.end(),
                                      [&](const OptionInfo& o) { return o.name == option; });
    if (!declared) {
      info->options.push_back({option, key.type, key.default_value, key.doc});
    }
  }
  return Status::OK();
}

config::PluginVocabulary VocabularyOf(const std::vector<PluginInfo>& plugins) {
  config::PluginVocabulary vocabulary;
  for (const PluginInfo& info : plugins) {
    for (const std::string& scheme : info.schemes) {
      const bool served =
          std::any_of(vocabulary.schemes.begin(), vocabulary.schemes.end(),
                      [&](const config::SchemeEntry& e) { return e.scheme == scheme; });
      if (served || info.kind != Kind::kStorage) continue;
      vocabulary.schemes.push_back(
          {scheme, info.name, (info.capabilities & IOMIMIC_CAP_ENDPOINT) != 0});
    }
    if (info.kind != Kind::kFormat) continue;
    for (const OptionInfo& key : info.dataset_keys) {
      vocabulary.dataset_keys.push_back(
          {info.name, key.name, key.type, key.default_value, key.help});
    }
  }
  return vocabulary;
}

struct Registry::Impl {
  struct Loaded {
    PluginInfo info;
    std::shared_ptr<boost::dll::shared_library> library;
    const IomimicPluginDescriptor* descriptor = nullptr;
  };

  std::vector<std::string> search_path;
  std::vector<PluginInfo> infos;
  std::vector<RejectedPlugin> rejected;
  std::vector<ShadowedPlugin> shadowed;
  std::vector<Loaded> loaded;  // parallel to infos
};

Registry::Registry() : impl_(std::make_unique<Impl>()) {}
Registry::~Registry() = default;

std::vector<std::string> Registry::SearchPath(const std::vector<std::string>& plugin_dirs,
                                              const std::vector<std::string>& extra_dirs) {
  std::vector<std::string> path(plugin_dirs.begin(), plugin_dirs.end());
  if (const char* env = std::getenv("IOMIMIC_PLUGIN_PATH"); env != nullptr && *env != '\0') {
    std::stringstream ss(env);
    std::string item;
    while (std::getline(ss, item, ':')) {
      if (!item.empty()) path.push_back(item);
    }
  }
  path.insert(path.end(), extra_dirs.begin(), extra_dirs.end());
  std::error_code ec;
  fs::path exe = boost::dll::program_location(ec);
  if (!ec) {
    fs::path beside = exe.parent_path().parent_path() / IOMIMIC_PLUGIN_RELDIR;
    path.push_back(beside.lexically_normal().string());
  }
  // Drop duplicates, keeping the first occurrence.
  std::vector<std::string> unique;
  std::set<std::string> seen;
  for (const std::string& p : path) {
    std::string key = fs::weakly_canonical(p, ec).string();
    if (ec) key = p;
    if (seen.insert(key).second) unique.push_back(p);
  }
  return unique;
}

void Registry::Discover(const std::vector<std::string>& search_path) {
  impl_->search_path = search_path;
  impl_->infos.clear();
  impl_->rejected.clear();
  impl_->shadowed.clear();
  impl_->loaded.clear();
  std::map<std::pair<Kind, std::string>, std::string> taken;  // -> the file that supplies it
  std::map<std::string, std::string> file_names;              // file name -> its first path
  for (const std::string& dir : search_path) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) continue;
    std::vector<fs::path> files;
    for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
      if (entry.is_regular_file(ec) && IsSharedObject(entry.path())) files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    for (const fs::path& file : files) {
      const auto [first, added] = file_names.emplace(file.filename().string(), file.string());
      if (!added) {
        impl_->shadowed.push_back({file.string(), first->second});
        continue;
      }
      auto lib = std::make_shared<boost::dll::shared_library>();
      std::error_code load_ec;
      lib->load(file, load_ec, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
      if (load_ec) {
        impl_->rejected.push_back({file.string(), "cannot be loaded: " + load_ec.message()});
        continue;
      }
      if (!lib->has(IOMIMIC_PLUGIN_SYMBOL)) {
        impl_->rejected.push_back({file.string(), std::string("not an iomimic plugin (no '") +
                                                      IOMIMIC_PLUGIN_SYMBOL + "' symbol)"});
        continue;
      }
      const auto& d = lib->get<const IomimicPluginDescriptor>(IOMIMIC_PLUGIN_SYMBOL);
      if (d.magic != IOMIMIC_PLUGIN_MAGIC) {
        std::ostringstream msg;
        msg << "bad descriptor magic 0x" << std::hex << d.magic << " (expected 0x"
            << IOMIMIC_PLUGIN_MAGIC << ")";
        impl_->rejected.push_back({file.string(), msg.str()});
        continue;
      }
      if (d.abi_version != IOMIMIC_PLUGIN_ABI_VERSION) {
        impl_->rejected.push_back({file.string(), "built for plugin ABI version " +
                                                      std::to_string(d.abi_version) +
                                                      ", but this iomimic uses ABI version " +
                                                      std::to_string(IOMIMIC_PLUGIN_ABI_VERSION) +
                                                      "; rebuild the plugin against this SDK"});
        continue;
      }
      if ((d.kind != IOMIMIC_PLUGIN_KIND_STORAGE && d.kind != IOMIMIC_PLUGIN_KIND_FORMAT) ||
          d.name == nullptr || d.create == nullptr || d.destroy == nullptr) {
        impl_->rejected.push_back({file.string(), "malformed descriptor (kind, name or factory)"});
        continue;
      }
      Impl::Loaded entry;
      entry.info.kind = d.kind == IOMIMIC_PLUGIN_KIND_STORAGE ? Kind::kStorage : Kind::kFormat;
      entry.info.name = d.name;
      entry.info.version = d.version != nullptr ? d.version : "";
      entry.info.description = d.description != nullptr ? d.description : "";
      entry.info.path = file.string();
      entry.info.capabilities = d.capabilities;
      entry.info.conformance_options = d.conformance_options ? d.conformance_options : "";
      for (std::size_t i = 0; i < d.num_options && d.options != nullptr; ++i) {
        const IomimicOptionSpec& o = d.options[i];
        if (o.name == nullptr) break;
        entry.info.options.push_back({o.name, o.type ? o.type : "string",
                                      o.default_value ? o.default_value : "",
                                      o.help ? o.help : ""});
      }
      if (const Status declared = ReadDeclarations(d, &entry.info); !declared.ok()) {
        impl_->rejected.push_back({file.string(), "malformed descriptor: " + declared.message()});
        continue;
      }
      const auto [owner, fresh] =
          taken.emplace(std::pair{entry.info.kind, entry.info.name}, file.string());
      if (!fresh) {
        impl_->shadowed.push_back({file.string(), owner->second});
        continue;
      }
      entry.library = lib;
      entry.descriptor = &d;
      impl_->infos.push_back(entry.info);
      impl_->loaded.push_back(std::move(entry));
    }
  }
}

const std::vector<PluginInfo>& Registry::plugins() const { return impl_->infos; }
const std::vector<RejectedPlugin>& Registry::rejected() const { return impl_->rejected; }
const std::vector<ShadowedPlugin>& Registry::shadowed() const { return impl_->shadowed; }
const std::vector<std::string>& Registry::search_path() const { return impl_->search_path; }
config::PluginVocabulary Registry::vocabulary() const { return VocabularyOf(impl_->infos); }

Result<PluginInfo> Registry::Find(Kind kind, const std::string& name) const {
  for (const PluginInfo& info : impl_->infos) {
    if (info.kind == kind && info.name == name) return info;
  }
  // A refused library whose file name matches explains the miss best.
  std::string expected_file = "iomimic_" + KindName(kind) + "_" + name + ".";
  for (const RejectedPlugin& r : impl_->rejected) {
    if (fs::path(r.path).filename().string().find(expected_file) != std::string::npos) {
      return Status::VersionMismatch(KindName(kind) + " plugin '" + name + "' (" + r.path +
                                     ") was refused: " + r.reason);
    }
  }
  std::string known;
  for (const PluginInfo& info : impl_->infos) {
    if (info.kind != kind) continue;
    if (!known.empty()) known += ", ";
    known += info.name;
  }
  std::string msg = "unknown " + KindName(kind) + " plugin '" + name +
                    "'; available: " + (known.empty() ? std::string("none") : known);
  std::string dirs;
  for (const std::string& d : impl_->search_path) dirs += (dirs.empty() ? "" : ":") + d;
  msg += " (searched " + (dirs.empty() ? std::string("nothing") : dirs) + ")";
  return Status::NotFound(std::move(msg));
}

Result<void*> Registry::Create(Kind kind, const std::string& name, const PluginContext& context,
                               PluginDeleter* deleter) const {
  IOMIMIC_ASSIGN_OR_RETURN(PluginInfo info, Find(kind, name));
  const Impl::Loaded* entry = nullptr;
  for (const Impl::Loaded& l : impl_->loaded) {
    if (l.info.kind == kind && l.info.name == name) entry = &l;
  }
  if (entry == nullptr) return Status::Internal("plugin '" + name + "' lost after discovery");
  for (const auto& option : context.options.values()) {
    // A named reference, not a structured binding: lambdas may not capture
    // those before C++20 compilers implement P1091 (clang 14 refuses).
    const std::string& key = option.first;
    bool declared = std::any_of(info.options.begin(), info.options.end(),
                                [&key](const OptionInfo& o) { return o.name == key; });
    if (!declared) {
      std::string accepted;
      for (const OptionInfo& o : info.options) accepted += (accepted.empty() ? "" : ", ") + o.name;
      return Status::InvalidArgument(
          KindName(kind) + " plugin '" + name + "' has no option '" + key +
          "' (accepted: " + (accepted.empty() ? std::string("none") : accepted) + ")");
    }
  }
  PluginContext ctx = context;
  ctx.options = PluginOptions(KindName(kind) + " plugin '" + name + "'", context.options.values());
  Status error;
  void* object = entry->descriptor->create(&ctx, &error);
  if (object == nullptr) {
    if (error.ok()) error = Status::Internal("factory returned nothing");
    const std::string who = KindName(kind) + " plugin '" + name + "'";
    // Option errors already name the plugin (PluginOptions::owner).
    return error.message().find(who) == std::string::npos ? error.WithContext(who) : error;
  }
  deleter->destroy = entry->descriptor->destroy;
  deleter->library = entry->library;
  return object;
}

Result<StoragePtr> Registry::CreateStorage(const std::string& name,
                                           const PluginContext& context) const {
  PluginDeleter deleter;
  IOMIMIC_ASSIGN_OR_RETURN(void* object, Create(Kind::kStorage, name, context, &deleter));
  return StoragePtr(static_cast<Storage*>(object),
                    [deleter](Storage* s) { deleter(static_cast<void*>(s)); });
}

Result<FormatPtr> Registry::CreateFormat(const std::string& name,
                                         const PluginContext& context) const {
  PluginDeleter deleter;
  IOMIMIC_ASSIGN_OR_RETURN(void* object, Create(Kind::kFormat, name, context, &deleter));
  return FormatPtr(static_cast<Format*>(object),
                   [deleter](Format* f) { deleter(static_cast<void*>(f)); });
}

StorageStack::~StorageStack() {
  for (StoragePtr& layer : layers_) layer.reset();  // top first
}

Result<StorageStack> StorageStack::Open(const Registry& registry, const std::string& name,
                                        const std::map<std::string, std::string>& options, int rank,
                                        int world_size) {
  StorageStack stack;
  std::string current = name;
  std::map<std::string, std::string> current_options = options;
  std::vector<std::pair<PluginInfo, std::map<std::string, std::string>>> chain;
  for (int depth = 0;; ++depth) {
    if (depth > 16) return Status::InvalidArgument("storage decorator chain deeper than 16");
    IOMIMIC_ASSIGN_OR_RETURN(PluginInfo info, registry.Find(Kind::kStorage, current));
    std::map<std::string, std::string> own, inner;
    std::string inner_name(config::kFileStorageBackend);
    const bool decorator = (info.capabilities & IOMIMIC_CAP_DECORATOR) != 0;
    for (const auto& [key, value] : current_options) {
      if (decorator && key == "inner") {
        inner_name = value;
      } else if (decorator && key.rfind("inner.", 0) == 0) {
        inner[key.substr(6)] = value;
      } else {
        own[key] = value;
      }
    }
    chain.emplace_back(info, own);
    if (!decorator) break;
    current = inner_name;
    current_options = inner;
  }
  // Create from the bottom up; each decorator wraps the layer below it.
  Storage* below = nullptr;
  std::vector<StoragePtr> bottom_up;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    PluginContext ctx;
    ctx.options = PluginOptions("", it->second);
    ctx.rank = rank;
    ctx.world_size = world_size;
    ctx.inner = below;
    Result<StoragePtr> made = registry.CreateStorage(it->first.name, ctx);
    if (!made.ok()) {
      while (!bottom_up.empty()) bottom_up.pop_back();  // top first
      return made.status();
    }
    below = made->get();
    bottom_up.push_back(std::move(made).value());
  }
  for (auto it = bottom_up.rbegin(); it != bottom_up.rend(); ++it)
    stack.layers_.push_back(std::move(*it));
  for (auto& [info, opts] : chain) stack.infos_.push_back(info);
  return stack;
}

std::string StorageStack::Describe() const {
  std::string out;
  for (const PluginInfo& info : infos_) out += (out.empty() ? "" : " > ") + info.name;
  return out;
}

}  // namespace iomimic::plugin
