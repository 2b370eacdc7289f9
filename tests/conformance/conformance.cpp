// Shared parts of the conformance suites (conformance.h).

#include "conformance.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
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

namespace {

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
  std::set<std::string> skip;
  if (const char* env = std::getenv("IOMIMIC_CONFORMANCE_SKIP")) skip = SplitNames(env);
  const std::vector<std::string> dirs = TestDirs();
  for (const plugin::PluginInfo& info : TheRegistry().plugins()) {
    if (info.kind != kind || !InTestDirs(info, dirs)) continue;
    if (!TheSettings().only.empty() && TheSettings().only.count(info.name) == 0) continue;
    if (skip.count(info.name) != 0) {
      MESSAGE(plugin::KindName(kind)
              << " plugin '" << info.name << "' skipped (IOMIMIC_CONFORMANCE_SKIP)");
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
