// iomimic plugin SDK, testing helpers: what a format plugin's own tests do
// again and again (write a spec's file, read a sample, compare bytes, check an
// error's shape, run the system Python for interop checks, make the plugin's
// object through its descriptor). Header-only and free of any test framework,
// so any test runner can use it; the generic cases every format must pass
// live in the conformance suite (tests/conformance/format_conformance_test.cpp).

#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <span>
#include <sstream>
#include <string>
#include <utility>

#include "iomimic/format.h"
#include "iomimic/plugin.h"
#include "iomimic/status.h"
#include "iomimic/storage.h"

namespace iomimic::testing {

// Writes `spec`'s file at spec.path of `storage` with format.WriteFile:
// open for writing, write, close (also after a failed write). The first error.
inline Status WriteSpec(Format& format, Storage& storage, const FileSpec& spec) {
  OpenOptions options;
  options.mode = OpenMode::kWrite;
  IOMIMIC_ASSIGN_OR_RETURN(std::unique_ptr<File> file, storage.Open(spec.path, options));
  Status written = format.WriteFile(storage, *file, spec);
  Status closed = file->Close();
  return written.ok() ? closed : written;
}

// The temporary name the core writes `path` under: ".<name>.iomimic-partial"
// in the same folder.
inline std::string PartialPathFor(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  return dir + "." + base + ".iomimic-partial";
}

// Writes `spec`'s file the way the core does: under PartialPathFor(spec.path),
// renamed to spec.path once WriteFile and Close succeed, the partial file
// removed when they do not. The first error.
inline Status WriteSpecAsCore(Format& format, Storage& storage, const FileSpec& spec) {
  OpenOptions options;
  options.mode = OpenMode::kWrite;
  const std::string partial = PartialPathFor(spec.path);
  IOMIMIC_ASSIGN_OR_RETURN(std::unique_ptr<File> file, storage.Open(partial, options));
  Status s = format.WriteFile(storage, *file, spec);
  Status closed = file->Close();
  if (s.ok()) s = closed;
  if (s.ok()) s = storage.Rename(partial, spec.path);
  if (!s.ok()) (void)storage.Remove(partial);
  return s;
}

// ReaderOptions on `storage` with the given decode, keep_in_memory and
// transfer size (0: the format's default).
inline ReaderOptions TestReaderOptions(Storage* storage, bool decode = true, bool keep = false,
                                       std::uint64_t transfer = 0) {
  ReaderOptions o;
  o.storage = storage;
  o.decode = decode;
  o.keep_in_memory = keep;
  o.transfer_size = transfer;
  return o;
}

// Opens `path` with `format` and reads sample 0; the first error.
inline Status OpenAndRead(Format& format, Storage& storage, const std::string& path,
                          bool decode = true) {
  Result<std::unique_ptr<FileReader>> reader =
      format.OpenReader(path, TestReaderOptions(&storage, decode));
  if (!reader.ok()) return reader.status();
  return (*reader)->ReadSample(0).status();
}

// Whether `a` and `b` hold the same bytes.
inline bool SameBytes(std::span<const std::byte> a, std::span<const std::byte> b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size()) == 0);
}

// Whether `s` is the kCorruption a reader reports for damaged data: naming
// `path`, saying `where` (" at offset " by default) and, when not empty,
// containing `fragment`.
inline bool IsCorruptionNaming(const Status& s, const std::string& path,
                               const std::string& fragment = "",
                               const std::string& where = " at offset ") {
  const std::string& m = s.message();
  return s.code() == StatusCode::kCorruption && m.find(path) != std::string::npos &&
         m.find(where) != std::string::npos &&
         (fragment.empty() || m.find(fragment) != std::string::npos);
}

// The bytes of the real file `p` as a string (empty when it cannot be read).
inline std::string ReadFileText(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Writes `data` as the real file `p`.
inline void WriteFileBytes(const std::filesystem::path& p, std::span<const std::byte> data) {
  std::ofstream out(p, std::ios::binary);
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
}

// The Python that interop checks run: Debian's, with numpy, h5py and PIL.
inline constexpr char kSystemPython[] = "/usr/bin/python3";

// Runs a shell command; returns its exit status (-1 when it did not exit)
// and its combined stdout and stderr in `output`.
inline int RunCommand(const std::string& command, std::string* output) {
  output->clear();
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return -1;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0) output->append(buf, n);
  const int status = ::pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Writes the Python source `script` as `folder`/check.py and runs it with
// kSystemPython and `arguments` (shell words, quoted by the caller); returns
// its exit status and its combined output in `output`, as RunCommand.
inline int RunPythonScript(const std::filesystem::path& folder, const std::string& script,
                           const std::string& arguments, std::string* output) {
  const std::filesystem::path path = folder / "check.py";
  {
    std::ofstream out(path, std::ios::binary);
    out << script;
  }
  return RunCommand(std::string(kSystemPython) + " " + path.string() + " " + arguments, output);
}

// Whether kSystemPython exists and imports `modules` ("numpy", "h5py, numpy").
inline bool HavePythonModules(const std::string& modules) {
  if (::access(kSystemPython, X_OK) != 0) return false;
  std::string out;
  return RunCommand(std::string(kSystemPython) + " -c 'import " + modules + "'", &out) == 0;
}

// Reads every sample of `path` with `format` (decoding; kept in memory when
// `keep`) and compares sample i with the bytes of the real file
// `expected_prefix` + "." + i, as an interop check's script writes them
// (and its size, SampleView::bytes, with the size of its data).
// Empty when the file opens and every sample matches, else what went wrong
// first.
inline std::string MismatchWithSampleFiles(Format& format, Storage& storage,
                                           const std::string& path, bool keep,
                                           const std::string& expected_prefix) {
  Result<std::unique_ptr<FileReader>> reader =
      format.OpenReader(path, TestReaderOptions(&storage, true, keep));
  if (!reader.ok()) return "opening " + path + ": " + reader.status().ToString();
  for (std::uint64_t i = 0; i < (*reader)->num_samples(); ++i) {
    Result<SampleView> s = (*reader)->ReadSample(i);
    const std::string expected_path = expected_prefix + "." + std::to_string(i);
    if (!s.ok()) return "sample " + std::to_string(i) + ": " + s.status().ToString();
    const std::string expected = ReadFileText(expected_path);
    if (!SameBytes(s->data, std::as_bytes(std::span<const char>(expected)))) {
      return "sample " + std::to_string(i) + " of " + path + " differs from " + expected_path;
    }
    if (s->bytes != s->data.size()) {
      return "sample " + std::to_string(i) + " of " + path + " says " + std::to_string(s->bytes) +
             " bytes for " + std::to_string(s->data.size());
    }
  }
  return "";
}

// Every field of `t` as text ("extension=mine multi_sample_files=1 ..."), so
// that a test compares whole traits in one check and a failure shows them.
inline std::string DescribeTraits(const FormatTraits& t) {
  auto flag = [](const char* name, bool v) {
    return std::string(" ") + name + "=" + (v ? "1" : "0");
  };
  return "extension=" + t.extension + flag("multi_sample_files", t.multi_sample_files) +
         flag("partial_reads", t.partial_reads) + flag("needs_host_decode", t.needs_host_decode) +
         flag("predictable_size", t.predictable_size) + flag("streamed", t.streamed) +
         " element_type=" + t.element_type;
}

// Destroys an object a plugin made, through the plugin's descriptor.
template <typename T>
struct DescriptorDeleter {
  const IomimicPluginDescriptor* descriptor = nullptr;
  void operator()(T* object) const {
    if (object != nullptr) descriptor->destroy(object);
  }
};

// An object made by a plugin's descriptor (create), destroyed by it (destroy).
template <typename T>
using DescriptorObject = std::unique_ptr<T, DescriptorDeleter<T>>;

// Makes the plugin's object through `descriptor`.create with `context`, as
// T (the plugin's own class, or Format/Storage). Null with the plugin's
// error in `*error` when the factory refused.
template <typename T>
DescriptorObject<T> CreateThroughDescriptor(const IomimicPluginDescriptor& descriptor,
                                            const PluginContext& context, Status* error) {
  void* object = descriptor.create(&context, error);
  return DescriptorObject<T>(static_cast<T*>(object), DescriptorDeleter<T>{&descriptor});
}

// A format plugin as its descriptor and the Format it makes with default
// options describe it, as text for one check:
//   "name=mine capabilities=host_decode,multi_sample options=mode:string=fast"
//   " | format name=mine " + DescribeTraits(traits)
// (" | create failed: <error>" when the factory refuses).
inline std::string DescribeFormatPlugin(const IomimicPluginDescriptor& d) {
  std::string out = std::string("name=") + d.name + " capabilities=";
  const std::pair<std::uint64_t, const char*> caps[] = {
      {IOMIMIC_CAP_ASYNC, "async"},
      {IOMIMIC_CAP_DIRECT_IO, "direct_io"},
      {IOMIMIC_CAP_COLLECTIVE, "collective"},
      {IOMIMIC_CAP_DEVICE_MEMORY, "device_memory"},
      {IOMIMIC_CAP_DECORATOR, "decorator"},
      {IOMIMIC_CAP_ENDPOINT, "endpoint"},
      {IOMIMIC_CAP_PARTIAL_READS, "partial_reads"},
      {IOMIMIC_CAP_HOST_DECODE, "host_decode"},
      {IOMIMIC_CAP_MULTI_SAMPLE, "multi_sample"}};
  std::uint64_t rest = d.capabilities;
  std::string sep;
  for (const auto& [bit, name] : caps) {
    if ((rest & bit) == 0) continue;
    out += sep + name;
    sep = ",";
    rest &= ~bit;
  }
  if (rest != 0) out += sep + "0x" + std::to_string(rest);
  out += " options=";
  for (std::size_t i = 0; i < d.num_options; ++i) {
    const IomimicOptionSpec& o = d.options[i];
    out += std::string(i > 0 ? "," : "") + o.name + ":" + o.type + "=" + o.default_value;
  }
  Status error;
  DescriptorObject<Format> format = CreateThroughDescriptor<Format>(d, PluginContext{}, &error);
  if (format == nullptr) return out + " | create failed: " + error.ToString();
  return out + " | format name=" + format->name() + " " + DescribeTraits(format->traits());
}

}  // namespace iomimic::testing
