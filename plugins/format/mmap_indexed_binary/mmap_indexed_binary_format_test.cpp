// Tests of the mmap_indexed_binary plugin. The implementation is shared with
// indexed_binary and tested in depth there; these tests check what this
// plugin adds: its descriptor and name, that it writes exactly the files of
// indexed_binary under its own extension, and that it reads them (with the
// same ranged read per sample) and reports errors under its own name.

#include <doctest/doctest.h>

#include "indexed_binary/indexed_binary_format.h"
#include "indexed_binary/indexed_binary_reader.h"
#include "indexed_binary/indexed_binary_test_storage.h"
#include "iomimic/testing/format_test_support.h"

extern "C" const IomimicPluginDescriptor iomimic_plugin_descriptor;

namespace iomimic::indexed_binary {
namespace {

using testing::MemStorage;
using testing::Request;

FileSpec MakeSpec(std::uint64_t samples, const std::string& path) {
  FileSpec spec;
  spec.path = path;
  spec.element_type = *ElementType::FromName("uint8");
  spec.sample_shape = {45, 45};  // record_length_bytes 2048 in DLIO terms
  spec.num_samples = samples;
  spec.seed = 11;
  spec.parameters["generation_buffer_size"] = "4096";
  return spec;
}

ReaderOptions Options(Storage* storage, bool keep = false) {
  ReaderOptions o;
  o.storage = storage;
  o.keep_in_memory = keep;
  return o;
}

TEST_CASE("this format's traits and options") {
  CHECK(::iomimic::testing::DescribeFormatPlugin(iomimic_plugin_descriptor) ==
        "name=mmap_indexed_binary capabilities=partial_reads,multi_sample "
        "options=index_cache_size:bytes=8G | format name=mmap_indexed_binary "
        "extension=mmap_indexed_binary multi_sample_files=1 partial_reads=1 "
        "needs_host_decode=0 predictable_size=1 streamed=0 element_type=");
  CHECK(std::string(iomimic_plugin_descriptor.description).find("mmap storage") !=
        std::string::npos);
}

TEST_CASE("the files are those of indexed_binary") {
  MemStorage storage;
  IndexedBinaryFormat mmap_format(Flavor::kMmapIndexedBinary);
  IndexedBinaryFormat plain_format(Flavor::kIndexedBinary);
  const FileSpec a = MakeSpec(300, "/d/img_0_of_1.mmap_indexed_binary");
  const FileSpec b = MakeSpec(300, "/d/img_0_of_1.indexed_binary");
  CHECK(*mmap_format.ExpectedFileSize(a) == 2025 * 300);
  REQUIRE(::iomimic::testing::WriteSpecAsCore(mmap_format, storage, a).ok());
  REQUIRE(::iomimic::testing::WriteSpecAsCore(plain_format, storage, b).ok());
  CHECK(storage.Bytes(a.path) == storage.Bytes(b.path));
  CHECK(storage.Bytes(OffsetIndexPath(a.path)) == storage.Bytes(OffsetIndexPath(b.path)));
  CHECK(storage.Bytes(SizeIndexPath(a.path)) == storage.Bytes(SizeIndexPath(b.path)));
  CHECK(storage.Exists("/d/img_0_of_1.mmap_indexed_binary.off.idx"));
  CHECK(storage.Exists("/d/img_0_of_1.mmap_indexed_binary.sz.idx"));
}

TEST_CASE("round trip with one ranged read per sample") {
  MemStorage storage;
  IndexedBinaryFormat format(Flavor::kMmapIndexedBinary);
  const FileSpec spec = MakeSpec(64, "/r/x.mmap_indexed_binary");
  REQUIRE(::iomimic::testing::WriteSpecAsCore(format, storage, spec).ok());
  std::vector<std::byte> data(2025 * 64);
  ContentStream(spec.seed).Fill(data);
  for (bool keep : {false, true}) {
    storage.SetLogging(true);
    Result<std::unique_ptr<FileReader>> reader =
        format.OpenReader(spec.path, Options(&storage, keep));
    REQUIRE(reader.ok());
    REQUIRE((*reader)->num_samples() == 64);
    (void)storage.TakeLog();
    for (std::uint64_t i = 0; i < 64; i += 7) {
      Result<SampleView> s = (*reader)->ReadSample(i);
      REQUIRE(s.ok());
      CHECK(s->bytes == 2025);
      CHECK(std::memcmp(s->data.data(), data.data() + i * 2025, 2025) == 0);
      const std::vector<Request> log = storage.TakeLog();
      REQUIRE(log.size() == 1);
      CHECK((log[0].offset == i * 2025 && log[0].length == 2025));
    }
    storage.SetLogging(false);
  }
}

TEST_CASE("messages name this format") {
  MemStorage storage;
  IndexedBinaryFormat format(Flavor::kMmapIndexedBinary);
  const FileSpec spec = MakeSpec(4, "/e/x.mmap_indexed_binary");
  REQUIRE(::iomimic::testing::WriteSpecAsCore(format, storage, spec).ok());
  REQUIRE(storage.Remove(SizeIndexPath(spec.path)).ok());
  const Status s = format.OpenReader(spec.path, Options(&storage)).status();
  CHECK(s.code() == StatusCode::kNotFound);
  CHECK(s.message().find("mmap_indexed_binary: index file /e/x.mmap_indexed_binary.sz.idx") !=
        std::string::npos);
  FileSpec zipped = spec;
  zipped.compression = "gzip";
  CHECK(format.Validate(zipped).message().find("mmap_indexed_binary:") == 0);
}

}  // namespace
}  // namespace iomimic::indexed_binary
