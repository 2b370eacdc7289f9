// libFuzzer harness: one format's reader over the in-memory storage
// (docs/fuzzing.md). Built once per format with IOMIMIC_FUZZ_FORMAT naming
// it; the format is loaded as a plugin through the core's registry from
// IOMIMIC_FUZZ_PLUGIN_DIR, as the iomimic binary loads it.
//
// The input is the data file, then, for formats with companion files (the
// index files of indexed_binary), the part separator (fuzz_common.h) and each
// companion's bytes in the order Format::CompanionPaths names them. The
// harness writes them into a MemoryStorage, opens a reader with decode on and
// then off, and reads every sample (at most kMaxSamples) and one past the end.
// Errors are expected; crashes, hangs and leaks are not.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_common.h"
#if IOMIMIC_FUZZ_HDF5_OBJECT_CHECK
#include <hdf5.h>
#endif
#include "iomimic/format.h"
#include "iomimic/testing/memory_storage.h"
#include "plugin/registry.h"

#ifndef IOMIMIC_FUZZ_FORMAT
#error "IOMIMIC_FUZZ_FORMAT must name the format under test"
#endif

namespace {

// A file may claim any number of samples; reading a bounded number keeps one
// input fast while still reaching every per-sample code path.
constexpr std::uint64_t kMaxSamples = 64;

iomimic::plugin::Registry* TheRegistry() {
  static iomimic::plugin::Registry* registry = [] {
    auto* r = new iomimic::plugin::Registry();
    r->Discover({IOMIMIC_FUZZ_PLUGIN_DIR});
    return r;
  }();
  return registry;
}

void ReadAll(iomimic::Format& format, iomimic::testing::MemoryStorage& storage,
             const std::string& path, bool decode) {
  iomimic::ReaderOptions options;
  options.storage = &storage;
  options.decode = decode;
  auto reader = format.OpenReader(path, options);
  if (!reader.ok()) return;
  const std::uint64_t n = (*reader)->num_samples();
  const std::uint64_t limit = std::min(n, kMaxSamples);
  for (std::uint64_t i = 0; i < limit; ++i) {
    auto sample = (*reader)->ReadSample(i);
    if (sample.ok() && !sample->data.empty()) {
      // Touch the bytes so ASan sees a view that points outside its buffer.
      volatile std::byte sink = sample->data.front();
      sink = sample->data.back();
      (void)sink;
    }
    (void)(*reader)->SampleRanges(i);
  }
  (void)(*reader)->ReadSample(n);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  (void)argc;
  (void)argv;
#if IOMIMIC_FUZZ_HDF5_OBJECT_CHECK
  // Each file open allocates HDF5's metadata cache (H5C_t, over 512 KiB) from
  // the library's "regular" free list, whose default limit is 64 KiB per
  // list, so every close hands it back. Under AddressSanitizer a block that
  // large is a fresh mmap each time, and faulting it in was most of the
  // harness's time. Keeping a few on the list makes it about 5x faster; the
  // other limits are HDF5's defaults (H5FL.c). glibc reuses such blocks by
  // itself, so iomimic does not change these limits.
  constexpr int kMiB = 1024 * 1024;
  (void)H5set_free_list_limits(/*reg_global_lim=*/64 * kMiB, /*reg_list_lim=*/16 * kMiB,
                               /*arr_global_lim=*/4 * kMiB, /*arr_list_lim=*/256 * 1024,
                               /*blk_global_lim=*/16 * kMiB, /*blk_list_lim=*/kMiB);
#endif
  auto format = TheRegistry()->CreateFormat(IOMIMIC_FUZZ_FORMAT, iomimic::PluginContext{});
  if (!format.ok()) {
    std::fprintf(stderr, "format_fuzzer: %s\n", format.status().ToString().c_str());
    std::abort();
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // A fresh format per input: formats may cache per path (indexes), and a
  // cache filled by one input must not answer for the next.
  auto format = TheRegistry()->CreateFormat(IOMIMIC_FUZZ_FORMAT, iomimic::PluginContext{});
  if (!format.ok()) std::abort();
  iomimic::FileSpec spec;
  spec.path = "/fuzz/data." + (*format)->traits().extension;
  const std::vector<std::string> companions = (*format)->CompanionPaths(spec);

  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::vector<std::string_view> parts =
      iomimic::fuzz::SplitParts(input, companions.size() + 1);
  iomimic::testing::MemoryStorage storage;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::string& path = i == 0 ? spec.path : companions[i - 1];
    const auto* begin = reinterpret_cast<const std::byte*>(parts[i].data());
    storage.SetBytes(path, std::vector<std::byte>(begin, begin + parts[i].size()));
  }
  ReadAll(**format, storage, spec.path, true);
  ReadAll(**format, storage, spec.path, false);
#if IOMIMIC_FUZZ_HDF5_OBJECT_CHECK
  // libFuzzer's per-input leak check is off for hdf5 (run_fuzzers.py: the
  // library's free lists keep memory between inputs by design), so handle
  // hygiene is checked directly: once the readers are gone, no file,
  // group, dataset, datatype or attribute may still be open.
  const ssize_t open_objects = H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL);
  if (open_objects != 0) {
    std::fprintf(stderr, "format_fuzzer: %zd HDF5 object(s) left open after the input\n",
                 open_objects);
    std::abort();
  }
#endif
  return 0;
}
