// A format plugin built against the previous plugin ABI (what a plugin
// compiled before the last IOMIMIC_PLUGIN_ABI_VERSION bump in
// iomimic/plugin.h looks like). The loader must refuse it before calling any
// of its code, naming both versions (tests/integration: refusals).
#include "iomimic/iomimic.h"

namespace {
constexpr unsigned kCurrentAbi = IOMIMIC_PLUGIN_ABI_VERSION;
static_assert(kCurrentAbi > 1, "there is a previous ABI");
}  // namespace

#undef IOMIMIC_PLUGIN_ABI_VERSION
#define IOMIMIC_PLUGIN_ABI_VERSION (kCurrentAbi - 1u)

namespace {
iomimic::Result<std::unique_ptr<iomimic::Format>> MustNotBeCalled(const iomimic::PluginContext&) {
  __builtin_trap();  // the loader must never get here
}
}  // namespace

IOMIMIC_DEFINE_FORMAT_PLUGIN("staleabi", "0.0.1", "test plugin built for the previous ABI",
                             IOMIMIC_CAP_NONE, IOMIMIC_NO_OPTIONS, &MustNotBeCalled);
