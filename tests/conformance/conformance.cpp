// Shared parts of the conformance suites (conformance.h).

#include "conformance.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "cluster/cluster.h"

namespace iomimic::conformance {

namespace fs = std::filesystem;

Settings& TheSettings() {
  static Settings settings;
  return settings;
}

std::set<std::string> SplitNames(const std::string& text) {
  std::set<std::string> out;
  std::string item;
  for (char c : text + ",") {
    if (c == ',' || c == ':' || c == ' ') {
      if (!item.empty()) out.insert(item);
      item.clear();
    } else {
      item += c;
    }
  }
  return out;
}

bool AddRoots(const std::string& text, std::map<std::string, std::string>* roots,
              std::string* bad) {
  std::stringstream items(text);
  std::string item;
  while (std::getline(items, item, ',')) {
    if (item.empty()) continue;
    const std::size_t eq = item.find('=');
    std::string root = eq == std::string::npos ? "" : item.substr(eq + 1);
    while (root.size() > 1 && root.back() == '/') root.pop_back();
    if (eq == 0 || root.empty()) {
      *bad = item;
      return false;
    }
    (*roots)[item.substr(0, eq)] = root;
  }
  return true;
}

std::string RootFor(const plugin::PluginInfo& info) {
  if (info.kind != plugin::Kind::kStorage || (info.capabilities & IOMIMIC_CAP_ENDPOINT) == 0) {
    return "";
  }
  auto given = TheSettings().roots.find(info.name);
  return given == TheSettings().roots.end() ? "" : given->second;
}

namespace {

// One line on stdout, outside doctest's reports, for a plugin left out.
void SayLeftOut(const plugin::PluginInfo& info, const std::string& why) {
  std::cout << "iomimic-conformance: " << plugin::KindName(info.kind) << " plugin '" << info.name
            << "' skipped: " << why << "\n";
}

std::vector<std::string> TestDirs() {
  std::vector<std::string> dirs = TheSettings().plugin_dirs;
  if (const char* env = std::getenv("IOMIMIC_CONFORMANCE_PLUGIN_DIR"); env && *env) {
    dirs.push_back(env);
  }
  return dirs;
}

std::string Canonical(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(path, ec);
  return ec ? path : p.string();
}

bool InTestDirs(const plugin::PluginInfo& info, const std::vector<std::string>& dirs) {
  if (dirs.empty()) return true;
  const std::string folder = Canonical(fs::path(info.path).parent_path().string());
  for (const std::string& d : dirs) {
    if (Canonical(d) == folder) return true;
  }
  return false;
}

std::vector<plugin::PluginInfo> Select(plugin::Kind kind) {
  std::vector<plugin::PluginInfo> out;
  std::set<std::string> skip = TheSettings().skip;
  if (const char* env = std::getenv("IOMIMIC_CONFORMANCE_SKIP")) skip.merge(SplitNames(env));
  const std::vector<std::string> dirs = TestDirs();
  for (const plugin::PluginInfo& info : TheRegistry().plugins()) {
    if (info.kind != kind || !InTestDirs(info, dirs)) continue;
    if (!TheSettings().only.empty() && TheSettings().only.count(info.name) == 0) continue;
    if (skip.count(info.name) != 0) {
      SayLeftOut(info, "named by --skip or IOMIMIC_CONFORMANCE_SKIP");
      continue;
    }
    if ((info.capabilities & IOMIMIC_CAP_ENDPOINT) != 0 && RootFor(info).empty()) {
      SayLeftOut(info,
                 "it keeps its data on a server (capability 'endpoint') and no bucket "
                 "was given for it; configure its endpoint and keys (its options or "
                 "environment) and run with --root " +
                     info.name + "=BUCKET");
      continue;
    }
    // Back ends built on MPI (mpiio) run here as one MPI process of their
    // own; their collective paths need several ranks and are tested under
    // mpirun (tests/integration: mpiio_modes, mpiio_shared_generation).
    if ((info.capabilities & IOMIMIC_CAP_COLLECTIVE) != 0) StartMpi();
    out.push_back(info);
  }
  return out;
}

}  // namespace

const plugin::Registry& TheRegistry() {
  static plugin::Registry* registry = [] {
    auto* r = new plugin::Registry();
    r->Discover(plugin::Registry::SearchPath(TestDirs(), {}));
    return r;
  }();
  return *registry;
}

const std::vector<plugin::PluginInfo>& PluginsUnderTest(plugin::Kind kind) {
  static const std::vector<plugin::PluginInfo> storages = Select(plugin::Kind::kStorage);
  static const std::vector<plugin::PluginInfo> formats = Select(plugin::Kind::kFormat);
  static const bool reported = [] {
    std::ostringstream text;
    text << "plugins under test:";
    for (const auto& p : storages) text << " storage " << p.name;
    for (const auto& p : formats) text << " format " << p.name;
    MESSAGE(text.str());
    for (const auto& r : TheRegistry().rejected()) {
      MESSAGE("refused library " << r.path << ": " << r.reason);
    }
    for (const auto& s : TheRegistry().shadowed()) {
      MESSAGE("not loaded: " << s.path << " (" << s.by << " comes first in the search path)");
    }
    return true;
  }();
  (void)reported;
  return kind == plugin::Kind::kStorage ? storages : formats;
}

bool AnyPluginUnderTest() {
  return !PluginsUnderTest(plugin::Kind::kStorage).empty() ||
         !PluginsUnderTest(plugin::Kind::kFormat).empty();
}

void StartMpi() {
  static const bool started = [] {
    cluster::Cluster::Init(nullptr, nullptr);
    std::atexit([] { cluster::Cluster::Finalize(); });
    return true;
  }();
  (void)started;
}

}  // namespace iomimic::conformance
