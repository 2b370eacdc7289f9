// Tests of the png codec: its bytes (chunks, compress_level), its
// corruption handling and interoperability with PIL, and the SDK's
// ChunkedWriter. The image format shell's cases (traits, options,
// validation, access pattern, read types, storage errors) run for png from
// image_test_support/image_format_cases.h.

#include <doctest/doctest.h>
#include <zlib.h>

#include <chrono>
#include <cstring>
#include <random>
#include <thread>

#include "image_test_support/image_test_util.h"
#include "iomimic/image_format.h"
#include "png_codec.h"

extern "C" const IomimicPluginDescriptor iomimic_plugin_descriptor;

namespace iomimic::png {
namespace {

using namespace iomimic::image_test;  // NOLINT: test helpers

std::uint32_t LoadBe32(const std::byte* p) {
  return (std::uint32_t(p[0]) << 24) | (std::uint32_t(p[1]) << 16) | (std::uint32_t(p[2]) << 8) |
         std::uint32_t(p[3]);
}

void StoreBe32(std::byte* p, std::uint32_t v) {
  p[0] = std::byte(v >> 24);
  p[1] = std::byte(v >> 16);
  p[2] = std::byte(v >> 8);
  p[3] = std::byte(v);
}

struct Chunk {
  std::string type;
  std::size_t offset = 0;  // of the length field
  std::uint32_t length = 0;
};

std::vector<Chunk> Chunks(const std::vector<std::byte>& b) {
  std::vector<Chunk> out;
  std::size_t pos = 8;
  while (pos + 12 <= b.size()) {
    Chunk c;
    c.offset = pos;
    c.length = LoadBe32(b.data() + pos);
    c.type.assign(reinterpret_cast<const char*>(b.data() + pos + 4), 4);
    out.push_back(c);
    pos += 12 + c.length;
  }
  return out;
}

// Recomputes the CRC of the chunk at `offset` (after editing its data).
void FixCrc(std::vector<std::byte>& b, std::size_t offset) {
  const std::uint32_t length = LoadBe32(b.data() + offset);
  const uLong crc = crc32(0, reinterpret_cast<const Bytef*>(b.data() + offset + 4),
                          static_cast<uInt>(length + 4));
  StoreBe32(b.data() + offset + 8 + length, static_cast<std::uint32_t>(crc));
}

const Chunk& Find(const std::vector<Chunk>& chunks, const std::string& type) {
  for (const Chunk& c : chunks) {
    if (c.type == type) return c;
  }
  FAIL("no chunk " << type);
  return chunks.front();
}

std::unique_ptr<Format> MakeFormat(WriterOptions options = {}) {
  return std::make_unique<image::ImageFormat>(std::make_unique<PngCodec>(options));
}

// PNG is lossless: the generated pixels come back.
void CheckRoundTrip(Format& format, Storage& storage, const FileSpec& spec, bool keep) {
  Result<std::unique_ptr<FileReader>> reader =
      format.OpenReader(spec.path, TestReaderOptions(&storage, true, keep));
  REQUIRE_MESSAGE(reader.ok(), reader.status().ToString());
  Result<SampleView> sample = (*reader)->ReadSample(0);
  REQUIRE_MESSAGE(sample.ok(), sample.status().ToString());
  CHECK(SameBytes(sample->data, ReferencePixels(spec)));
}

// What the shell's cases need to know about png.
struct PngShell : CodecFixture<PngCodec> {
  static inline const ShellFacts kFacts{.name = "png",
                                        .max_side = 0x7FFFFFFF /* PNG_UINT_31_MAX */,
                                        .element_type = "uint8",
                                        .on_demand_type = "uint8",
                                        .options = {"compress_level"},
                                        .bad_options = {{"compress_level", "12"},
                                                        {"compress_level", "-1"},
                                                        {"compress_level", "fast"}},
                                        .rejected_types = {"bool", "float32", "uint16", "int8"},
                                        .unsupported_compression = "gzip"};
  // IDAT chunks of 64 KiB: a large image takes several requests.
  static void CheckWrites(const std::vector<Request>& writes, std::uint64_t size) {
    REQUIRE(writes.size() > 2);
    CheckSequentialWrites(writes, size);
  }
  static const char* Damage(std::vector<std::byte>& file) {
    file[Find(Chunks(file), "IDAT").offset + 20] ^= std::byte{1};
    return "corrupt png";
  }
};

}  // namespace
}  // namespace iomimic::png

using ShellFixture = iomimic::png::PngShell;
#include "image_test_support/image_format_cases.h"  // NOLINT: the shell's cases, after the fixture

namespace iomimic::png {
namespace {

TEST_CASE("png option compress_level, 6 by default") {
  CHECK(ParseOptions(PluginOptions("", {{"compress_level", "0"}})).value().compress_level == 0);
  CHECK(ParseOptions(PluginOptions()).value().compress_level == 6);
}

// ChunkedWriter is the SDK's (iomimic/image_codec.h); it is tested here
// once.
TEST_CASE("ChunkedWriter: random-access writes land where they belong") {
  MemStorage storage;
  std::mt19937_64 rng(7);
  for (int round = 0; round < 200; ++round) {
    CAPTURE(round);
    const std::string path = "/cw.bin";
    OpenOptions options;
    options.mode = OpenMode::kWrite;
    Result<std::unique_ptr<File>> file = storage.Open(path, options);
    REQUIRE(file.ok());
    std::vector<std::byte> window(64 + rng() % 200);
    image::ChunkedWriter writer(**file, path, "test", window);
    std::vector<std::byte> model;
    for (int w = 0; w < 30; ++w) {
      // Mostly appends, sometimes a small gap past the end, sometimes a
      // patch anywhere before the end.
      std::uint64_t offset = model.size();
      const int kind = static_cast<int>(rng() % 6);
      if (kind == 0 && !model.empty()) offset = rng() % model.size();
      if (kind == 1) offset += rng() % 40;
      std::vector<std::byte> data(1 + rng() % 150);
      for (std::byte& b : data) b = std::byte(rng());
      if (model.size() < offset + data.size()) model.resize(offset + data.size());
      std::memcpy(model.data() + offset, data.data(), data.size());
      REQUIRE(writer.Write(offset, data).ok());
      CHECK(writer.size() == model.size());
      std::vector<std::byte> back(std::min<std::size_t>(data.size(), 8));
      if (writer.ReadBack(offset, back)) {
        CHECK(std::memcmp(back.data(), data.data(), back.size()) == 0);
      }
    }
    REQUIRE(writer.Finish().ok());
    REQUIRE((*file)->Close().ok());
    CHECK(storage.Bytes(path) == model);
    CHECK(writer.requests() >= (model.size() + window.size() - 1) / window.size());
  }
}

TEST_CASE("file layout: IHDR, IDAT chunks of at most 64 KiB, IEND") {
  std::unique_ptr<Format> owned = MakeFormat();
  Format& format = *owned;
  MemStorage storage;
  FileSpec spec = MakeSpec("uint8", {300, 500}, 7, "/layout.png");
  storage.SetLogging(true);
  REQUIRE(WriteSpec(format, storage, spec).ok());
  const std::vector<Request> writes = storage.TakeLog();
  const std::vector<std::byte> b = storage.Bytes(spec.path);
  // A 150 KB file is written with one request.
  REQUIRE(writes.size() == 1);
  CHECK(writes[0].offset == 0);
  CHECK(writes[0].length == b.size());
  CHECK(b.size() > 300 * 500);  // noise does not compress
  CHECK(std::memcmp(b.data(), kSignature, 8) == 0);
  const std::vector<Chunk> chunks = Chunks(b);
  REQUIRE(chunks.size() >= 4);
  CHECK(chunks.front().type == "IHDR");
  CHECK(chunks.front().length == 13);
  CHECK(LoadBe32(b.data() + 16) == 500);  // width = d2
  CHECK(LoadBe32(b.data() + 20) == 300);  // height = d1
  CHECK(b[24] == std::byte{8});           // bit depth
  CHECK(b[25] == std::byte{0});           // greyscale
  CHECK(b[28] == std::byte{0});           // not interlaced
  CHECK(chunks.back().type == "IEND");
  CHECK(chunks.back().offset + 12 == b.size());
  for (std::size_t i = 1; i + 1 < chunks.size(); ++i) {
    CHECK(chunks[i].type == "IDAT");
    CHECK(chunks[i].length <= kIdatSize);
  }
  // The same seed gives the same bytes.
  FileSpec again = spec;
  again.path = "/layout2.png";
  REQUIRE(WriteSpec(format, storage, again).ok());
  CHECK(storage.Bytes(again.path) == b);
  // RGB: colour type 2.
  FileSpec rgb = MakeSpec("uint8", {4, 4, 3}, 7, "/rgb.png");
  REQUIRE(WriteSpec(format, storage, rgb).ok());
  CHECK(storage.Bytes(rgb.path)[25] == std::byte{2});
}

TEST_CASE("compress_level changes the encoding, not the pixels") {
  MemStorage storage;
  WriterOptions stored;
  stored.compress_level = 0;
  std::unique_ptr<Format> level0 = MakeFormat(stored);
  std::unique_ptr<Format> level6 = MakeFormat();
  FileSpec a = MakeSpec("uint8", {128, 128}, 3, "/l0.png");
  FileSpec b = MakeSpec("uint8", {128, 128}, 3, "/l6.png");
  REQUIRE(WriteSpec(*level0, storage, a).ok());
  REQUIRE(WriteSpec(*level6, storage, b).ok());
  CHECK(storage.Bytes(a.path) != storage.Bytes(b.path));
  CheckRoundTrip(*level6, storage, a, false);
  CheckRoundTrip(*level0, storage, b, false);
}

TEST_CASE("corruption is reported with path and offset") {
  std::unique_ptr<Format> owned = MakeFormat();
  Format& format = *owned;
  MemStorage storage;
  const std::string path = "/bad.png";
  FileSpec spec = MakeSpec("uint8", {120, 100}, 3, path);
  REQUIRE(WriteSpec(format, storage, spec).ok());
  const std::vector<std::byte> good = storage.Bytes(path);
  const std::vector<Chunk> chunks = Chunks(good);
  const Chunk& idat = Find(chunks, "IDAT");
  const Chunk& iend = Find(chunks, "IEND");
  testing::DamagedCopies damaged(storage, path, good);

  SUBCASE("truncated") {
    for (std::size_t keep : {std::size_t{0}, std::size_t{3}, std::size_t{8}, std::size_t{20},
                             std::size_t{40}, good.size() / 2, good.size() - 12, good.size() - 1}) {
      CAPTURE(keep);
      const Status s = damaged.ReadTruncated(format, keep);
      CheckCorruption(s, path);
      if (keep > 8) CHECK_MESSAGE(s.message().find("truncated") != std::string::npos, s.message());
    }
  }
  SUBCASE("signature") {
    damaged.Put([](std::vector<std::byte>& b) { b[1] = std::byte{'Q'}; });
    CheckCorruption(OpenAndRead(format, storage, path), path, "not a png file");
    CheckCorruption(OpenAndRead(format, storage, path, false), path, "at offset 1");
  }
  SUBCASE("IHDR CRC") {
    damaged.Put([](std::vector<std::byte>& b) { b[29] ^= std::byte{1}; });
    CheckCorruption(OpenAndRead(format, storage, path), path, "CRC error");
    CheckCorruption(OpenAndRead(format, storage, path, false), path, "at offset 8");
  }
  SUBCASE("IDAT CRC") {
    damaged.Put(
        [&](std::vector<std::byte>& b) { b[idat.offset + 8 + idat.length + 2] ^= std::byte{4}; });
    const Status s = OpenAndRead(format, storage, path);
    CheckCorruption(s, path, "IDAT: CRC error");
    CHECK_MESSAGE(s.message().find("at offset " + std::to_string(idat.offset)) != std::string::npos,
                  s.message());
    // Without decoding only the header is parsed.
    CHECK(OpenAndRead(format, storage, path, false).ok());
  }
  SUBCASE("IDAT data byte") {
    // zlib's Adler-32 (or the chunk CRC) catches it, whichever comes first.
    damaged.Put([&](std::vector<std::byte>& b) { b[idat.offset + 8 + 100] ^= std::byte{0x40}; });
    CheckCorruption(OpenAndRead(format, storage, path), path,
                    "at offset " + std::to_string(idat.offset));
    CHECK(OpenAndRead(format, storage, path, false).ok());
  }
  SUBCASE("IEND CRC") {
    damaged.Put([&](std::vector<std::byte>& b) { b[iend.offset + 8] ^= std::byte{1}; });
    CheckCorruption(OpenAndRead(format, storage, path), path,
                    "at offset " + std::to_string(iend.offset));
  }
  SUBCASE("CRC of an ancillary chunk") {
    damaged.Put([&](std::vector<std::byte>& b) {
      // A tEXt chunk after IHDR whose CRC is wrong.
      const char text[] = "\0\0\0\x07tEXtkey\0val\0\0\0\0";
      b.insert(b.begin() + 33, reinterpret_cast<const std::byte*>(text),
               reinterpret_cast<const std::byte*>(text) + sizeof(text) - 1);
    });
    CheckCorruption(OpenAndRead(format, storage, path), path, "at offset 33");
    damaged.Put([&](std::vector<std::byte>& b) {
      const char text[] = "\0\0\0\x07tEXtkey\0val\0\0\0\0";
      b.insert(b.begin() + 33, reinterpret_cast<const std::byte*>(text),
               reinterpret_cast<const std::byte*>(text) + sizeof(text) - 1);
      FixCrc(b, 33);
    });
    CHECK(OpenAndRead(format, storage, path).ok());
  }
  SUBCASE("a metadata chunk claiming more bytes than the file has") {
    // Found by tests/fuzz (docs/fuzzing.md; the input is
    // tests/fuzz/corpus/png/oom-5a760c1afc79484bf57d75ada4fd6934e305ae43):
    // libpng allocated a zTXt chunk at its claimed 2 GB before reading it.
    // Now the chunk is skipped, and its end, past the file's, is truncation.
    for (const char* type : {"zTXt", "tEXt", "iTXt", "iCCP", "eXIf"}) {
      CAPTURE(type);
      damaged.Put([&](std::vector<std::byte>& b) {
        b.resize(33 + 8);
        StoreBe32(b.data() + 33, 0x789c9c24);
        std::memcpy(b.data() + 37, type, 4);
        b.push_back(std::byte{0x78});
        b.push_back(std::byte{0x9c});
      });
      for (bool decode : {true, false}) {
        const Status s = OpenAndRead(format, storage, path, decode);
        CheckCorruption(s, path, "truncated");
        CHECK_MESSAGE(s.message().find("chunk that starts at offset 33") != std::string::npos,
                      s.message());
      }
    }
  }
  SUBCASE("zlib data damaged under a valid CRC") {
    damaged.Put([&](std::vector<std::byte>& b) {
      b[idat.offset + 8] = std::byte{0xff};  // zlib header
      FixCrc(b, idat.offset);
    });
    CheckCorruption(OpenAndRead(format, storage, path), path,
                    "at offset " + std::to_string(idat.offset));
  }
  SUBCASE("header declares an image the file cannot hold") {
    damaged.Put([](std::vector<std::byte>& b) {
      StoreBe32(b.data() + 16, 0x7fff0000);
      StoreBe32(b.data() + 20, 0x7fff0000);
      FixCrc(b, 8);
    });
    CheckCorruption(OpenAndRead(format, storage, path), path, "more than a file");
    CheckCorruption(OpenAndRead(format, storage, path, false), path, "more than a file");
  }
  SUBCASE("invalid IHDR values") {
    damaged.Put([](std::vector<std::byte>& b) {
      b[24] = std::byte{7};  // bit depth 7
      FixCrc(b, 8);
    });
    CheckCorruption(OpenAndRead(format, storage, path), path, "at offset 8");
  }
  SUBCASE("missing IEND") {
    damaged.Put([&](std::vector<std::byte>& b) { b.resize(iend.offset); });
    CheckCorruption(OpenAndRead(format, storage, path), path, "truncated");
  }
}

// ---------------------------------------------------------------------------
// Interoperability with PIL.

TEST_CASE("PIL reads what we write and we read what PIL writes") {
  if (!HavePythonModules("numpy, PIL")) {
    MESSAGE("skipped: /usr/bin/python3 with numpy and PIL is not available");
    return;
  }
  TempDir dir("png");
  PosixStorage storage;
  std::unique_ptr<Format> owned = MakeFormat();
  Format& format = *owned;
  struct Case {
    std::vector<std::uint64_t> shape;
    std::string mode;
  };
  const std::vector<Case> cases = {
      {{64, 64}, "L"}, {{33, 70}, "L"}, {{20, 30, 3}, "RGB"}, {{1, 1}, "L"}};
  // PNG is lossless: PIL decodes the seed's pixels, as our reader does.
  WriteTextFile(dir.path() / "check.py",
                "import sys, numpy as np; from PIL import Image\n"
                "path, ref, ours, mode, rows, cols = sys.argv[1:7]\n"
                "im = Image.open(path); a = np.asarray(im)\n"
                "assert im.format == 'PNG', im.format\n"
                "assert im.mode == mode, im.mode\n"
                "assert im.size == (int(cols), int(rows)), im.size\n"
                "assert a.tobytes() == open(ref, 'rb').read(), 'pixels differ'\n"
                "assert a.tobytes() == open(ours, 'rb').read(), 'PIL decodes other pixels'\n"
                "print('ok')\n");
  for (std::size_t i = 0; i < cases.size(); ++i) {
    CAPTURE(i);
    const std::string path = (dir.path() / ("ours_" + std::to_string(i) + ".png")).string();
    CheckWithPython(format, storage, MakeSpec("uint8", cases[i].shape, 40 + i, path),
                    dir.path() / "check.py",
                    cases[i].mode + " " + std::to_string(cases[i].shape[0]) + " " +
                        std::to_string(cases[i].shape[1]));
  }

  // Files PIL writes, in every mode np.asarray maps to a plain array.
  const std::string make =
      "import sys, numpy as np; from PIL import Image\n"
      "d = sys.argv[1]; rng = np.random.default_rng(3)\n"
      "def save(name, im, **kw):\n"
      "    im.save(d + '/' + name + '.png', **kw)\n"
      "    a = np.asarray(Image.open(d + '/' + name + '.png'))\n"
      "    if a.dtype == np.uint16 or a.dtype == np.int32: a = a.astype('<u2')\n"
      "    open(d + '/' + name + '.0', 'wb').write(a.tobytes())\n"
      "    open(d + '/' + name + '.shape', 'w').write(' '.join(map(str, a.shape)))\n"
      "save('l', Image.fromarray(rng.integers(0, 256, (37, 53), dtype=np.uint8)))\n"
      "save('rgb', Image.fromarray(rng.integers(0, 256, (21, 19, 3), dtype=np.uint8)))\n"
      "save('rgba', Image.fromarray(rng.integers(0, 256, (9, 11, 4), dtype=np.uint8)))\n"
      "save('la', Image.fromarray(rng.integers(0, 256, (9, 11, 2), dtype=np.uint8), 'LA'))\n"
      "save('p', Image.fromarray(rng.integers(0, 256, (16, 16, 3), dtype=np.uint8))"
      ".quantize(7))\n"
      "save('i16', Image.fromarray(rng.integers(0, 65536, (12, 10)).astype(np.uint16)))\n"
      "save('flat', Image.fromarray(np.full((300, 300), 7, dtype=np.uint8)), optimize=True)\n"
      "save('interlaced', Image.fromarray(rng.integers(0, 256, (40, 30), dtype=np.uint8)),"
      " interlace=1)\n";
  CHECK(MismatchWithForeignFiles(format, storage, dir.path(), make,
                                 {"l", "rgb", "rgba", "la", "p", "i16", "flat", "interlaced"},
                                 ".png") == "");
}

}  // namespace
}  // namespace iomimic::png
