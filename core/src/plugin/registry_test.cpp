#include "plugin/registry.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace iomimic::plugin {
namespace {

// A descriptor with what the declarations read, the rest left empty.
IomimicPluginDescriptor Descriptor(std::uint32_t kind) {
  IomimicPluginDescriptor d{};
  d.magic = IOMIMIC_PLUGIN_MAGIC;
  d.abi_version = IOMIMIC_PLUGIN_ABI_VERSION;
  d.kind = kind;
  return d;
}

PluginInfo Info(Kind kind, const std::string& name, std::uint64_t capabilities = 0) {
  PluginInfo info;
  info.kind = kind;
  info.name = name;
  info.capabilities = capabilities;
  return info;
}

TEST_CASE("a storage plugin's descriptor names the URL schemes it serves (docs/plugins.md)") {
  IomimicPluginDescriptor d = Descriptor(IOMIMIC_PLUGIN_KIND_STORAGE);
  PluginInfo info = Info(Kind::kStorage, "memory");
  d.schemes = "mem, mem+fast,,x-y.z";
  REQUIRE(ReadDeclarations(d, &info).ok());
  CHECK(info.schemes == std::vector<std::string>{"mem", "mem+fast", "x-y.z"});
  d.schemes = nullptr;
  info = Info(Kind::kStorage, "memory");
  REQUIRE(ReadDeclarations(d, &info).ok());
  CHECK(info.schemes.empty());
  for (const char* bad : {"Mem", "9p", "me m", "mem://"}) {
    d.schemes = bad;
    const Status status = ReadDeclarations(d, &info);
    CHECK_MESSAGE(status.code() == StatusCode::kInvalidArgument, bad);
    CHECK(status.message().find("is not a URL scheme") != std::string::npos);
  }
}

TEST_CASE("a format plugin's descriptor declares dataset keys, which are options too") {
  const IomimicOptionSpec keys[] = {{"header_bytes", "int", " 32", "bytes of the header"},
                                    {"dims", "int_list", "1, 2", "a shape"}};
  const IomimicOptionSpec options[] = {{"raw.dims", "string", "", "declared as an option too"}};
  IomimicPluginDescriptor d = Descriptor(IOMIMIC_PLUGIN_KIND_FORMAT);
  d.dataset_keys = keys;
  d.num_dataset_keys = 2;
  PluginInfo info = Info(Kind::kFormat, "raw");
  info.options.push_back({options[0].name, options[0].type, options[0].default_value, ""});
  REQUIRE(ReadDeclarations(d, &info).ok());
  REQUIRE(info.dataset_keys.size() == 2);
  CHECK(info.dataset_keys[0].default_value == "32");
  CHECK(info.dataset_keys[1].default_value == "1,2");
  // Each key is the option "<plugin>.<key>" unless the plugin declares that option itself.
  REQUIRE(info.options.size() == 2);
  CHECK(info.options[0].name == "raw.dims");
  CHECK(info.options[1].name == "raw.header_bytes");
  CHECK(info.options[1].type == "int");
  const IomimicOptionSpec bad[] = {{"n", "number", "1", ""}};
  d.dataset_keys = bad;
  d.num_dataset_keys = 1;
  info = Info(Kind::kFormat, "raw");
  CHECK(ReadDeclarations(d, &info).message().find("type 'number'") != std::string::npos);
}

TEST_CASE("the vocabulary: the first plugin of a scheme serves it, endpoints keep their URLs") {
  std::vector<PluginInfo> plugins = {Info(Kind::kStorage, "first"),
                                     Info(Kind::kStorage, "objects", IOMIMIC_CAP_ENDPOINT),
                                     Info(Kind::kStorage, "second"), Info(Kind::kFormat, "raw")};
  plugins[0].schemes = {"file", "mem"};
  plugins[1].schemes = {"obj"};
  plugins[2].schemes = {"mem", "other"};
  plugins[3].dataset_keys = {{"header_bytes", "int", "32", "bytes"}};
  const config::PluginVocabulary v = VocabularyOf(plugins);
  const std::vector<config::SchemeEntry> schemes = {{"file", "first", false},
                                                    {"mem", "first", false},
                                                    {"obj", "objects", true},
                                                    {"other", "second", false}};
  CHECK(v.schemes == schemes);
  CHECK(v.DescribeSchemes() == "file (first), mem (first), obj (objects), other (second)");
  REQUIRE(v.dataset_keys.size() == 1);
  CHECK(v.dataset_keys[0] == config::DeclaredKey{"raw", "header_bytes", "int", "32", "bytes"});
  CHECK(VocabularyOf({}).DescribeSchemes() == "none");
}

}  // namespace
}  // namespace iomimic::plugin
