// `iomimic plugins [-v]`: the storage and format plugins found, those refused
// and those shadowed (core/src/plugin/registry.h).

#include <algorithm>
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>

#include "cli.h"

namespace iomimic::app {

namespace po = boost::program_options;

namespace {

// A plugin's description, the URL schemes it serves, its options and the
// dataset keys it declares (docs/plugins.md, "URL schemes" and "Declared
// dataset keys"; a declared key is also the option "<name>.<key>", listed
// once, as the key).
void PrintDetails(const plugin::PluginInfo& p) {
  std::printf("         %s\n", p.description.c_str());
  for (const std::string& scheme : p.schemes) {
    std::printf("         serves %s://\n", scheme.c_str());
  }
  for (const plugin::OptionInfo& o : p.options) {
    const bool key =
        std::any_of(p.dataset_keys.begin(), p.dataset_keys.end(),
                    [&](const plugin::OptionInfo& k) { return p.name + "." + k.name == o.name; });
    if (key) continue;
    std::printf("         option %s (%s, default '%s'): %s\n", o.name.c_str(), o.type.c_str(),
                o.default_value.c_str(), o.help.c_str());
  }
  for (const plugin::OptionInfo& k : p.dataset_keys) {
    std::printf("         key dataset.%s.%s (%s, default '%s'): %s\n", p.name.c_str(),
                k.name.c_str(), k.type.c_str(), k.default_value.c_str(), k.help.c_str());
  }
}

// One row per plugin (with its details when `verbose`), then the refused and
// shadowed files; a warning on stderr when none was found.
void PrintPlugins(const plugin::Registry& registry, bool verbose) {
  std::printf("%-8s %-20s %-9s %-38s %s\n", "KIND", "NAME", "VERSION", "CAPABILITIES", "PATH");
  for (const plugin::PluginInfo& p : registry.plugins()) {
    std::printf("%-8s %-20s %-9s %-38s %s\n", plugin::KindName(p.kind).c_str(), p.name.c_str(),
                p.version.c_str(), plugin::CapabilityNames(p.capabilities).c_str(), p.path.c_str());
    if (verbose) PrintDetails(p);
  }
  for (const plugin::RejectedPlugin& r : registry.rejected()) {
    std::printf("refused  %s: %s\n", r.path.c_str(), r.reason.c_str());
  }
  for (const plugin::ShadowedPlugin& s : registry.shadowed()) {
    std::printf("shadowed %s: %s comes first in the search path\n", s.path.c_str(), s.by.c_str());
  }
  if (registry.plugins().empty()) {
    std::cerr << "iomimic: warning: no plugins found in:";
    for (const std::string& d : registry.search_path()) std::cerr << " " << d;
    std::cerr << std::endl;
  }
}

}  // namespace

int CmdPlugins(int argc, char** argv) {
  CommonArgs args;
  po::options_description opts("options of 'iomimic plugins'");
  bool verbose = false;
  opts.add_options()("help,h", "show this help")(
      "plugin-dir", po::value<std::vector<std::string>>(&args.plugin_dirs),
      "extra plugin folder, searched first (repeatable)")("verbose,v", po::bool_switch(&verbose),
                                                          "also list each plugin's options");
  try {
    po::variables_map vm;
    po::store(po::command_line_parser(argc, argv).options(opts).run(), vm);
    po::notify(vm);
    if (vm.count("help")) {
      std::cout << "usage: iomimic plugins [options]\n\n" << opts << std::endl;
      return 0;
    }
  } catch (const po::error& e) {
    return Usage(e.what());
  }
  plugin::Registry registry;
  DiscoverPlugins(args, &registry);
  PrintPlugins(registry, verbose);
  return 0;
}

}  // namespace iomimic::app
