// Writes the seed corpora of the format harnesses (docs/fuzzing.md): a few
// small valid files per format, made by the formats' own writers through the
// plugins of the build, into <out>/<format>/<variant>. A format with
// companion files gets them appended after the part separator
// (fuzz_common.h), as format_fuzzer.cpp reads them.
//
//   iomimic_fuzz_make_corpus OUT_DIR FORMAT...

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fuzz_common.h"
#include "iomimic/format.h"
#include "iomimic/testing/memory_storage.h"
#include "plugin/registry.h"

namespace {

struct Variant {
  std::string name;
  std::vector<std::uint64_t> shape;
  std::string dtype;
  std::uint64_t samples;
  std::string compression;
};

std::string AsString(const std::vector<std::byte>& bytes) {
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s OUT_DIR FORMAT...\n", argv[0]);
    return 2;
  }
  iomimic::plugin::Registry registry;
  registry.Discover({IOMIMIC_FUZZ_PLUGIN_DIR});
  const std::vector<Variant> variants = {
      {"u8_3x4x4", {4, 4}, "uint8", 3, "none"},    {"f32_2x3", {3}, "float32", 2, "none"},
      {"u8_1x8x8", {8, 8}, "uint8", 1, "none"},    {"u8_2x4x4_gzip", {4, 4}, "uint8", 2, "gzip"},
      {"u8_2x4x4_bz2", {4, 4}, "uint8", 2, "bz2"}, {"u8_2x4x4_xz", {4, 4}, "uint8", 2, "xz"},
      {"u8_2x4x4_zip", {4, 4}, "uint8", 2, "zip"}, {"u8_2x4x4_lzf", {4, 4}, "uint8", 2, "lzf"},
  };
  int written = 0;
  for (int a = 2; a < argc; ++a) {
    const std::string name = argv[a];
    auto format = registry.CreateFormat(name, iomimic::PluginContext{});
    if (!format.ok()) {
      std::fprintf(stderr, "%s: %s\n", name.c_str(), format.status().ToString().c_str());
      return 1;
    }
    const std::filesystem::path dir = std::filesystem::path(argv[1]) / name;
    std::filesystem::create_directories(dir);
    for (const Variant& v : variants) {
      iomimic::FileSpec spec;
      spec.path = "/seed/data." + (*format)->traits().extension;
      spec.sample_shape = v.shape;
      auto type = iomimic::ElementType::FromName(v.dtype);
      if (!type.ok()) return 1;
      spec.element_type = *type;
      spec.num_samples = v.samples;
      spec.seed = 7;
      spec.compression = v.compression;
      if (!(*format)->Validate(spec).ok()) continue;
      iomimic::testing::MemoryStorage storage;
      iomimic::OpenOptions open;
      open.mode = iomimic::OpenMode::kWrite;
      auto file = storage.Open(spec.path, open);
      if (!file.ok()) return 1;
      const iomimic::Status st = (*format)->WriteFile(storage, **file, spec);
      (void)(*file)->Close();
      if (!st.ok()) {
        std::fprintf(stderr, "%s/%s: %s\n", name.c_str(), v.name.c_str(), st.ToString().c_str());
        continue;
      }
      std::vector<std::string> parts = {AsString(storage.Bytes(spec.path))};
      for (const std::string& companion : (*format)->CompanionPaths(spec)) {
        parts.push_back(AsString(storage.Bytes(companion)));
      }
      std::ofstream out(dir / v.name, std::ios::binary);
      const std::string bytes = iomimic::fuzz::JoinParts(parts);
      out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      std::printf("%s/%s: %zu bytes\n", name.c_str(), v.name.c_str(), bytes.size());
      ++written;
    }
  }
  return written > 0 ? 0 : 1;
}
