// iomimic plugin SDK: the binary interface between the core and a plugin.
//
// A plugin is a shared object that exports exactly one data symbol,
// `iomimic_plugin_descriptor`, of type IomimicPluginDescriptor. The core
// reads `magic` and `abi_version` before it calls any plugin function and
// refuses a mismatch with a message naming both versions, so a plugin built
// against another SDK fails cleanly instead of crashing.
//
// Write a plugin like this (one .cpp, built with iomimic_add_plugin()):
//
//   class MyStorage : public iomimic::Storage { ... };
//   static const IomimicOptionSpec kOptions[] = {
//       {"block_size", "bytes", "1M", "transfer size of each request"},
//   };
//   IOMIMIC_DEFINE_STORAGE_PLUGIN("mystorage", "1.0.0", "what it does",
//                                 IOMIMIC_CAP_NONE, kOptions,
//                                 [](const iomimic::PluginContext& ctx)
//                                     -> iomimic::Result<std::unique_ptr<iomimic::Storage>> {
//                                   return std::make_unique<MyStorage>(ctx);
//                                 });
//
// An optional last argument gives the options the conformance suite
// (tests/conformance, `iomimic conformance`) opens the plugin with, e.g.
// "inner=posix,error_rate=0" (docs/plugins.md, "The descriptor").
//
// A storage plugin that serves URL schemes (a data folder written as
// "mem://bucket/data" reaches the plugin that serves "mem") is defined with
// IOMIMIC_DEFINE_STORAGE_PLUGIN_SERVING("mystorage", "mem", ...); a format
// plugin with manifest keys of its own (dataset.<format>.<key>) with
// IOMIMIC_DEFINE_FORMAT_PLUGIN_WITH_KEYS(..., kOptions, kKeys, factory)
// (docs/plugins.md, "URL schemes" and "Declared dataset keys").
//
// The factory runs inside a try/catch, so an exception becomes an error value
// rather than crossing into the core. Objects a plugin creates are destroyed
// through the plugin's own `destroy` function, before the library is unloaded.

#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>

#include "iomimic/format.h"
#include "iomimic/options.h"
#include "iomimic/status.h"
#include "iomimic/storage.h"

// "IOMI" in ASCII.
#define IOMIMIC_PLUGIN_MAGIC 0x494F4D49u
// Bump whenever any SDK header changes a class layout, a virtual function or
// the descriptor. The loader refuses plugins built with another value. The
// test repo.abi_layout (tests/repo/check_abi_layout.py) fails when the layout
// changes without a bump (docs/plugins.md, "The descriptor").
#define IOMIMIC_PLUGIN_ABI_VERSION 12u

#define IOMIMIC_PLUGIN_KIND_STORAGE 1u
#define IOMIMIC_PLUGIN_KIND_FORMAT 2u

// Capability flags advertised in the descriptor (listed by `iomimic plugins`):
// what a plugin can be, known before it is opened. A storage plugin keeps its
// flags in one constant, gives it to IOMIMIC_DEFINE_STORAGE_PLUGIN and builds
// capabilities() from it with iomimic::CapabilitiesAllowedBy, so the two
// never disagree.
#define IOMIMIC_CAP_NONE 0ull
#define IOMIMIC_CAP_ASYNC (1ull << 0)          // storage: overlapping batched reads
#define IOMIMIC_CAP_DIRECT_IO (1ull << 1)      // storage: bypasses the page cache
#define IOMIMIC_CAP_COLLECTIVE (1ull << 2)     // storage: MPI collective I/O
#define IOMIMIC_CAP_DEVICE_MEMORY (1ull << 3)  // storage: lands data in device memory
#define IOMIMIC_CAP_DECORATOR (1ull << 4)      // storage: wraps another back end
// storage: keeps its data on a server reached through a network endpoint (an
// object store): paths are "<bucket>/<key>" on that server, so a local
// temporary folder means nothing to it. The conformance suite runs its cases
// only under a bucket it is given (--root NAME=BUCKET) and otherwise skips it
// with one line saying so (docs/plugins.md, "Conformance suites").
#define IOMIMIC_CAP_ENDPOINT (1ull << 5)
#define IOMIMIC_CAP_PARTIAL_READS (1ull << 8)  // format: reads only a sample's bytes
#define IOMIMIC_CAP_HOST_DECODE (1ull << 9)    // format: decoding needs host memory
#define IOMIMIC_CAP_MULTI_SAMPLE (1ull << 10)  // format: several samples per file

extern "C" {

// One option a plugin accepts. `type` is one of "string", "bool", "int",
// "double", "bytes"; `default_value` is shown to users.
//
// The same record declares a format plugin's dataset keys (the descriptor's
// `dataset_keys`): `name` is the key below dataset.<format>. (letters,
// digits and '_'), `type` one of "int", "double" (or "float"), "bool",
// "string", "int_list", `default_value` the value of a manifest that leaves the key
// out, written as the plugin receives values ("true"/"false", decimal
// numbers, an int_list's integers comma-separated: "1,2", "" for none) and
// `help` its one-line documentation (docs/plugins.md, "Declared dataset
// keys").
struct IomimicOptionSpec {
  const char* name;
  const char* type;
  const char* default_value;
  const char* help;
};

struct IomimicPluginDescriptor;

}  // extern "C"

namespace iomimic {

// What the core hands a plugin factory.
struct PluginContext {
  PluginOptions options;  // validated against the descriptor's option list
  int rank = 0;           // MPI rank of this process
  int world_size = 1;     // MPI world size
  // For decorator storages: the back end being wrapped (owned by the core,
  // outlives the decorator). Null for ordinary back ends.
  Storage* inner = nullptr;
};

// The StorageCapabilities a storage plugin with descriptor flags `flags` may
// report: async, collective and device_memory are true when IOMIMIC_CAP_ASYNC,
// IOMIMIC_CAP_COLLECTIVE and IOMIMIC_CAP_DEVICE_MEMORY are set, everything else
// has its default. A back end's capabilities() starts from this with its own
// plugin's flags and narrows it to what the open instance does (a back end
// on a synchronous engine is not async); it never claims more. The storage conformance suite
// checks that.
inline StorageCapabilities CapabilitiesAllowedBy(std::uint64_t flags) {
  StorageCapabilities caps;
  caps.async = (flags & IOMIMIC_CAP_ASYNC) != 0;
  caps.collective = (flags & IOMIMIC_CAP_COLLECTIVE) != 0;
  caps.device_memory = (flags & IOMIMIC_CAP_DEVICE_MEMORY) != 0;
  return caps;
}

}  // namespace iomimic

extern "C" {

// The descriptor. The first two fields never move, whatever the ABI version.
struct IomimicPluginDescriptor {
  std::uint32_t magic;        // IOMIMIC_PLUGIN_MAGIC
  std::uint32_t abi_version;  // IOMIMIC_PLUGIN_ABI_VERSION the plugin was built with
  std::uint32_t kind;         // IOMIMIC_PLUGIN_KIND_*
  std::uint32_t reserved;
  const char* name;            // unique among plugins of the same kind
  const char* version;         // the plugin's own version, free form
  const char* description;     // one line
  std::uint64_t capabilities;  // IOMIMIC_CAP_* flags
  const IomimicOptionSpec* options;
  std::size_t num_options;
  // Creates the plugin object (an iomimic::Storage* or iomimic::Format*
  // according to `kind`). On failure returns null and stores the error in
  // `*error`. Never throws.
  void* (*create)(const iomimic::PluginContext* context, iomimic::Status* error);
  // Destroys an object returned by `create`.
  void (*destroy)(void* object);
  // Options the conformance suite opens the plugin with, so that it behaves
  // (a decorator that injects no faults, a short delay): comma-separated
  // key=value pairs of its own options; a decorator's "inner=<name>" names
  // the back end it wraps (default: posix). Never null; "" for none.
  const char* conformance_options;
  // Storage plugins: the URL schemes the plugin serves, comma-separated,
  // without "://" ("mem" or "mem,memory"): each lower-case letters, digits,
  // '+', '-' or '.', starting with a letter. A manifest folder written as
  // "<scheme>://..." selects the installed plugin that serves <scheme>; with
  // IOMIMIC_CAP_ENDPOINT the plugin gets the folder as written, otherwise the
  // path after "://" (docs/plugins.md, "URL schemes"). Null or "" for none,
  // and for format plugins.
  const char* schemes;
  // Format plugins: the manifest keys the plugin declares below
  // dataset.<name>. (see IomimicOptionSpec for the fields). The core checks a
  // manifest's values against their types, lists them in `iomimic config
  // --keys` and hands each to the plugin as the option "<name>.<key>" and
  // the FileSpec parameter of that name (docs/plugins.md, "Declared dataset
  // keys"). num_dataset_keys 0 for none, and for storage plugins.
  const IomimicOptionSpec* dataset_keys;
  std::size_t num_dataset_keys;
};

}  // extern "C"

#if defined(_WIN32)
#define IOMIMIC_PLUGIN_EXPORT __declspec(dllexport)
#else
#define IOMIMIC_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

// Option table for plugins that take no options.
#define IOMIMIC_NO_OPTIONS ::iomimic::plugin_detail::kNoOptions

// The symbol the loader looks up.
#define IOMIMIC_PLUGIN_SYMBOL "iomimic_plugin_descriptor"

namespace iomimic::plugin_detail {

// Counts the entries of an option table; an entry with a null name ends it,
// so a plugin without options passes IOMIMIC_NO_OPTIONS.
template <std::size_t N>
constexpr std::size_t CountOptions(const IomimicOptionSpec (&table)[N]) {
  std::size_t n = 0;
  while (n < N && table[n].name != nullptr) ++n;
  return n;
}

inline constexpr IomimicOptionSpec kNoOptions[1] = {{nullptr, nullptr, nullptr, nullptr}};

// The descriptor's conformance_options: the optional last macro argument, or
// "" when it is left out.
constexpr const char* ConformanceOptions(const char* options = "") {
  return options != nullptr ? options : "";
}

template <typename Base, typename Factory>
void* CreateGuarded(Factory factory, const PluginContext* context, Status* error) {
  try {
    Result<std::unique_ptr<Base>> made = factory(*context);
    if (!made.ok()) {
      *error = made.status();
      return nullptr;
    }
    return std::move(made).value().release();
  } catch (const std::exception& e) {
    *error = Status::Internal(std::string("plugin factory threw: ") + e.what());
  } catch (...) {
    *error = Status::Internal("plugin factory threw a non-standard exception");
  }
  return nullptr;
}

}  // namespace iomimic::plugin_detail

#define IOMIMIC_DEFINE_PLUGIN_(KIND, BASE, NAME, VERSION, DESCRIPTION, CAPS, OPTIONS, FACTORY, \
                               CONFORMANCE, SCHEMES, KEYS)                                     \
  namespace {                                                                                  \
  void* IomimicPluginCreate(const ::iomimic::PluginContext* ctx, ::iomimic::Status* err) {     \
    return ::iomimic::plugin_detail::CreateGuarded<BASE>(FACTORY, ctx, err);                   \
  }                                                                                            \
  void IomimicPluginDestroy(void* object) { delete static_cast<BASE*>(object); }               \
  }                                                                                            \
  extern "C" IOMIMIC_PLUGIN_EXPORT const IomimicPluginDescriptor iomimic_plugin_descriptor = { \
      IOMIMIC_PLUGIN_MAGIC,                                                                    \
      IOMIMIC_PLUGIN_ABI_VERSION,                                                              \
      KIND,                                                                                    \
      0,                                                                                       \
      NAME,                                                                                    \
      VERSION,                                                                                 \
      DESCRIPTION,                                                                             \
      CAPS,                                                                                    \
      OPTIONS,                                                                                 \
      ::iomimic::plugin_detail::CountOptions(OPTIONS),                                         \
      &IomimicPluginCreate,                                                                    \
      &IomimicPluginDestroy,                                                                   \
      CONFORMANCE,                                                                             \
      SCHEMES,                                                                                 \
      KEYS,                                                                                    \
      ::iomimic::plugin_detail::CountOptions(KEYS)}

// Defines the descriptor of a storage plugin. FACTORY is a callable
// (const iomimic::PluginContext&) -> Result<std::unique_ptr<iomimic::Storage>>.
// An optional last argument is the descriptor's conformance_options (a string
// literal such as "inner=posix,delay=10us"); without it, "".
#define IOMIMIC_DEFINE_STORAGE_PLUGIN(NAME, VERSION, DESCRIPTION, CAPS, OPTIONS, FACTORY, ...)  \
  IOMIMIC_DEFINE_STORAGE_PLUGIN_SERVING(NAME, "", VERSION, DESCRIPTION, CAPS, OPTIONS, FACTORY, \
                                        __VA_ARGS__)

// Defines the descriptor of a storage plugin that serves the URL schemes
// SCHEMES, a string literal ("mem", or "mem,memory"; the descriptor's
// `schemes`). The other arguments are IOMIMIC_DEFINE_STORAGE_PLUGIN's.
#define IOMIMIC_DEFINE_STORAGE_PLUGIN_SERVING(NAME, SCHEMES, VERSION, DESCRIPTION, CAPS, OPTIONS, \
                                              FACTORY, ...)                                       \
  IOMIMIC_DEFINE_PLUGIN_(IOMIMIC_PLUGIN_KIND_STORAGE, ::iomimic::Storage, NAME, VERSION,          \
                         DESCRIPTION, CAPS, OPTIONS, FACTORY,                                     \
                         ::iomimic::plugin_detail::ConformanceOptions(__VA_ARGS__), SCHEMES,      \
                         IOMIMIC_NO_OPTIONS)

// Defines the descriptor of a format plugin. FACTORY is a callable
// (const iomimic::PluginContext&) -> Result<std::unique_ptr<iomimic::Format>>.
// An optional last argument is the descriptor's conformance_options, as for
// storage plugins.
#define IOMIMIC_DEFINE_FORMAT_PLUGIN(NAME, VERSION, DESCRIPTION, CAPS, OPTIONS, FACTORY, ...) \
  IOMIMIC_DEFINE_FORMAT_PLUGIN_WITH_KEYS(NAME, VERSION, DESCRIPTION, CAPS, OPTIONS,           \
                                         IOMIMIC_NO_OPTIONS, FACTORY, __VA_ARGS__)

// Defines the descriptor of a format plugin that declares manifest keys of
// its own: KEYS is a table of IomimicOptionSpec (the descriptor's
// `dataset_keys`), e.g.
//   static const IomimicOptionSpec kKeys[] = {
//       {"header_bytes", "int", "32", "bytes before the first sample"}};
// which a manifest sets as dataset.<NAME>.header_bytes. The other arguments
// are IOMIMIC_DEFINE_FORMAT_PLUGIN's.
#define IOMIMIC_DEFINE_FORMAT_PLUGIN_WITH_KEYS(NAME, VERSION, DESCRIPTION, CAPS, OPTIONS, KEYS, \
                                               FACTORY, ...)                                    \
  IOMIMIC_DEFINE_PLUGIN_(IOMIMIC_PLUGIN_KIND_FORMAT, ::iomimic::Format, NAME, VERSION,          \
                         DESCRIPTION, CAPS, OPTIONS, FACTORY,                                   \
                         ::iomimic::plugin_detail::ConformanceOptions(__VA_ARGS__), nullptr, KEYS)
