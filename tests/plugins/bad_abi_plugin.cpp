// A storage plugin that claims a future plugin ABI. The loader must refuse it
// before calling any of its code, naming both ABI versions (tests/integration).
#include "iomimic/iomimic.h"

#undef IOMIMIC_PLUGIN_ABI_VERSION
#define IOMIMIC_PLUGIN_ABI_VERSION 999u

namespace {
iomimic::Result<std::unique_ptr<iomimic::Storage>> MustNotBeCalled(const iomimic::PluginContext&) {
  __builtin_trap();  // the loader must never get here
}
}  // namespace

IOMIMIC_DEFINE_STORAGE_PLUGIN("badabi", "0.0.1", "test plugin built for another ABI",
                              IOMIMIC_CAP_NONE, IOMIMIC_NO_OPTIONS, &MustNotBeCalled);
