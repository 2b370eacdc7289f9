// Tests of the jpeg codec: its bytes (baseline JFIF, quality), its
// corruption handling and interoperability with PIL. The image format
// shell's cases (traits, options, validation, access pattern, read types,
// storage errors) run for jpeg from image_test_support/image_format_cases.h.

#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <thread>

#include "image_test_support/image_test_util.h"
#include "iomimic/image_format.h"
#include "jpeg_codec.h"

extern "C" const IomimicPluginDescriptor iomimic_plugin_descriptor;

namespace iomimic::jpeg {
namespace {

using namespace iomimic::image_test;  // NOLINT: test helpers

struct Marker {
  unsigned code = 0;
  std::size_t offset = 0;  // of the 0xFF
  std::size_t length = 0;  // of the segment after the marker (0 for SOI/EOI)
};

// The markers before the entropy-coded data, then SOS, then EOI.
std::vector<Marker> Markers(const std::vector<std::byte>& b) {
  std::vector<Marker> out;
  std::size_t pos = 2;
  out.push_back({0xD8, 0, 0});
  while (pos + 4 <= b.size()) {
    REQUIRE(b[pos] == std::byte{0xFF});
    Marker m;
    m.code = static_cast<unsigned>(b[pos + 1]);
    m.offset = pos;
    m.length = (std::size_t(b[pos + 2]) << 8) | std::size_t(b[pos + 3]);
    out.push_back(m);
    pos += 2 + m.length;
    if (m.code == 0xDA) break;
  }
  out.push_back({0xD9, b.size() - 2, 0});
  return out;
}

const Marker& Find(const std::vector<Marker>& markers, unsigned code) {
  for (const Marker& m : markers) {
    if (m.code == code) return m;
  }
  FAIL("no marker " << code);
  return markers.front();
}

// Mean absolute difference between decoded and original pixels.
double MeanError(std::span<const std::byte> a, std::span<const std::byte> b) {
  REQUIRE(a.size() == b.size());
  double sum = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    sum += std::abs(static_cast<int>(a[i]) - static_cast<int>(b[i]));
  }
  return a.empty() ? 0 : sum / static_cast<double>(a.size());
}

// JPEG is lossy: the decoded image stays close to the generated pixels.
// Noise at quality 75 comes back with a mean error near 47 (unrelated
// noise would be near 85).
void CheckNear(std::span<const std::byte> decoded, const FileSpec& spec, double max_error = 60) {
  CHECK(MeanError(decoded, ReferencePixels(spec)) < max_error);
}

std::unique_ptr<Format> MakeFormat(WriterOptions options = {}) {
  return std::make_unique<image::ImageFormat>(std::make_unique<JpegCodec>(options));
}

// What the shell's cases need to know about jpeg.
struct JpegShell : CodecFixture<JpegCodec> {
  static inline const ShellFacts kFacts{
      .name = "jpeg",
      .max_side = kMaxSide,
      .element_type = "uint8",
      .on_demand_type = "uint8",
      .options = {"quality"},
      .bad_options = {{"quality", "0"}, {"quality", "101"}, {"quality", "high"}},
      .rejected_types = {"bool", "int16"},
      .unsupported_compression = "zip"};
  // Lossy: near the generated pixels.
  static void CheckPixels(std::span<const std::byte> decoded, const FileSpec& spec) {
    CheckNear(decoded, spec);
  }
  static const char* Damage(std::vector<std::byte>& file) {
    file.resize(file.size() - 10);
    return "truncated";
  }
};

}  // namespace
}  // namespace iomimic::jpeg

using ShellFixture = iomimic::jpeg::JpegShell;
#include "image_test_support/image_format_cases.h"  // NOLINT: the shell's cases, after the fixture

namespace iomimic::jpeg {
namespace {

TEST_CASE("jpeg option quality, 75 by default") {
  CHECK(ParseOptions(PluginOptions("", {{"quality", "90"}})).value().quality == 90);
  CHECK(ParseOptions(PluginOptions()).value().quality == 75);
}

TEST_CASE("quality trades size for fidelity") {
  MemStorage storage;
  WriterOptions best;
  best.quality = 100;
  std::unique_ptr<Format> q100 = MakeFormat(best);
  std::unique_ptr<Format> q75 = MakeFormat();
  FileSpec a = MakeSpec("uint8", {128, 128}, 3, "/q100.jpeg");
  FileSpec b = MakeSpec("uint8", {128, 128}, 3, "/q75.jpeg");
  REQUIRE(WriteSpec(*q100, storage, a).ok());
  REQUIRE(WriteSpec(*q75, storage, b).ok());
  CHECK(storage.Bytes(a.path).size() > storage.Bytes(b.path).size());
  // Decoding does not depend on the writer's options.
  Result<std::unique_ptr<FileReader>> reader = q75->OpenReader(a.path, TestReaderOptions(&storage));
  REQUIRE(reader.ok());
  Result<SampleView> sample = (*reader)->ReadSample(0);
  REQUIRE(sample.ok());
  CheckNear(sample->data, a, 3);
}

TEST_CASE("file layout: baseline JFIF, the spec's dimensions") {
  std::unique_ptr<Format> owned = MakeFormat();
  Format& format = *owned;
  MemStorage storage;
  FileSpec spec = MakeSpec("uint8", {300, 500}, 7, "/layout.jpeg");
  storage.SetLogging(true);
  REQUIRE(WriteSpec(format, storage, spec).ok());
  const std::vector<Request> writes = storage.TakeLog();
  const std::vector<std::byte> b = storage.Bytes(spec.path);
  REQUIRE(writes.size() == 1);  // a small file is one write request
  CHECK(writes[0].length == b.size());
  const std::vector<Marker> markers = Markers(b);
  CHECK(markers[1].code == 0xE0);  // APP0 JFIF
  CHECK(std::memcmp(b.data() + 6, "JFIF", 5) == 0);
  const Marker& sof = Find(markers, 0xC0);  // baseline
  CHECK(b[sof.offset + 4] == std::byte{8});
  CHECK(((std::size_t(b[sof.offset + 5]) << 8) | std::size_t(b[sof.offset + 6])) == 300);
  CHECK(((std::size_t(b[sof.offset + 7]) << 8) | std::size_t(b[sof.offset + 8])) == 500);
  CHECK(b[sof.offset + 9] == std::byte{1});  // one component
  CHECK(b[b.size() - 2] == std::byte{0xFF});
  CHECK(b[b.size() - 1] == std::byte{0xD9});
  FileSpec again = spec;
  again.path = "/layout2.jpeg";
  REQUIRE(WriteSpec(format, storage, again).ok());
  CHECK(storage.Bytes(again.path) == b);
  FileSpec rgb = MakeSpec("uint8", {16, 16, 3}, 7, "/rgb.jpeg");
  REQUIRE(WriteSpec(format, storage, rgb).ok());
  const std::vector<std::byte> c = storage.Bytes(rgb.path);
  CHECK(c[Find(Markers(c), 0xC0).offset + 9] == std::byte{3});
}

TEST_CASE("corruption is reported with path and offset") {
  std::unique_ptr<Format> owned = MakeFormat();
  Format& format = *owned;
  MemStorage storage;
  const std::string path = "/bad.jpeg";
  FileSpec spec = MakeSpec("uint8", {120, 100}, 3, path);
  REQUIRE(WriteSpec(format, storage, spec).ok());
  const std::vector<std::byte> good = storage.Bytes(path);
  const std::vector<Marker> markers = Markers(good);
  const Marker& dqt = Find(markers, 0xDB);
  const Marker& sof = Find(markers, 0xC0);
  const Marker& dht = Find(markers, 0xC4);
  const Marker& sos = Find(markers, 0xDA);
  const std::size_t scan = sos.offset + 2 + sos.length;  // entropy-coded data
  testing::DamagedCopies damaged(storage, path, good);

  SUBCASE("truncated") {
    for (std::size_t keep :
         {std::size_t{0}, std::size_t{2}, std::size_t{3}, std::size_t{10}, std::size_t{100}, scan,
          good.size() / 2, good.size() - 2, good.size() - 1}) {
      CAPTURE(keep);
      const Status s = damaged.ReadTruncated(format, keep);
      CheckCorruption(s, path);
      if (keep > 3) CHECK_MESSAGE(s.message().find("truncated") != std::string::npos, s.message());
    }
  }
  SUBCASE("no SOI") {
    damaged.Put([](std::vector<std::byte>& b) { b[1] = std::byte{0xD9}; });
    CheckCorruption(OpenAndRead(format, storage, path), path, "not a jpeg file");
    CheckCorruption(OpenAndRead(format, storage, path, false), path, "at offset 1");
  }
  SUBCASE("unknown marker") {
    damaged.Put([&](std::vector<std::byte>& b) { b[dqt.offset + 1] = std::byte{0x02}; });
    const Status s = OpenAndRead(format, storage, path);
    CheckCorruption(s, path, "corrupt jpeg");
    CheckCorruption(OpenAndRead(format, storage, path, false), path, "corrupt jpeg");
  }
  SUBCASE("bad marker length") {
    damaged.Put([&](std::vector<std::byte>& b) {
      b[sof.offset + 2] = std::byte{0};
      b[sof.offset + 3] = std::byte{2};
    });
    CheckCorruption(OpenAndRead(format, storage, path), path, "corrupt jpeg");
  }
  SUBCASE("bad Huffman table") {
    damaged.Put([&](std::vector<std::byte>& b) {
      for (std::size_t i = 5; i < 21; ++i) b[dht.offset + i] = std::byte{0xFF};
    });
    CheckCorruption(OpenAndRead(format, storage, path), path, "corrupt jpeg");
  }
  SUBCASE("unsupported precision") {
    damaged.Put([&](std::vector<std::byte>& b) { b[sof.offset + 4] = std::byte{12}; });
    CheckCorruption(OpenAndRead(format, storage, path), path, "corrupt jpeg");
  }
  SUBCASE("a marker inside the entropy-coded data") {
    damaged.Put([&](std::vector<std::byte>& b) {
      const std::size_t at = scan + (b.size() - scan) / 2;
      b[at] = std::byte{0xFF};
      b[at + 1] = std::byte{0xD5};
    });
    const Status s = OpenAndRead(format, storage, path);
    CheckCorruption(s, path, "Corrupt JPEG data");
    // The header is intact: without decoding nothing is noticed.
    CHECK(OpenAndRead(format, storage, path, false).ok());
  }
  SUBCASE("garbage after the scan, before EOI") {
    damaged.Put([&](std::vector<std::byte>& b) {
      const std::vector<std::byte> junk(64, std::byte{1});
      b.insert(b.end() - 2, junk.begin(), junk.end());
    });
    CheckCorruption(OpenAndRead(format, storage, path), path, "extraneous bytes");
  }
  SUBCASE("header declares an image the file cannot hold") {
    damaged.Put([&](std::vector<std::byte>& b) {
      for (std::size_t i = 5; i < 9; ++i) b[sof.offset + i] = std::byte{0xFF};
    });
    const Status s = OpenAndRead(format, storage, path);
    CheckCorruption(s, path);
  }
}

// ---------------------------------------------------------------------------
// Interoperability with PIL.

TEST_CASE("PIL writes the same bytes, decodes the same pixels, and we read its files") {
  if (!HavePythonModules("numpy, PIL")) {
    MESSAGE("skipped: /usr/bin/python3 with numpy and PIL is not available");
    return;
  }
  TempDir dir("jpeg");
  PosixStorage storage;
  std::unique_ptr<Format> owned = MakeFormat();
  Format& format = *owned;
  const std::string script =
      "import io, sys, numpy as np; from PIL import Image\n"
      "path, ref, ours, mode, rows, cols = sys.argv[1:7]\n"
      "im = Image.open(path)\n"
      "assert im.format == 'JPEG', im.format\n"
      "assert im.mode == mode, im.mode\n"
      "assert im.size == (int(cols), int(rows)), im.size\n"
      "a = np.asarray(im)\n"
      "assert a.tobytes() == open(ours, 'rb').read(), 'PIL decodes other pixels'\n"
      "shape = (int(rows), int(cols)) + ((3,) if mode == 'RGB' else ())\n"
      "x = np.frombuffer(open(ref, 'rb').read(), dtype=np.uint8).reshape(shape)\n"
      "buf = io.BytesIO(); Image.fromarray(x).save(buf, format='JPEG')\n"
      "assert buf.getvalue() == open(path, 'rb').read(), 'PIL writes other bytes'\n"
      "print('ok')\n";
  WriteTextFile(dir.path() / "check.py", script);
  struct Case {
    std::vector<std::uint64_t> shape;
    std::string mode;
  };
  const std::vector<Case> cases = {{{64, 64}, "L"},
                                   {{33, 70}, "L"},
                                   {{20, 30, 3}, "RGB"},
                                   {{1, 1}, "L"},
                                   {{257, 300, 3}, "RGB"}};
  for (std::size_t i = 0; i < cases.size(); ++i) {
    CAPTURE(i);
    const std::string path = (dir.path() / ("ours_" + std::to_string(i) + ".jpeg")).string();
    CheckWithPython(format, storage, MakeSpec("uint8", cases[i].shape, 40 + i, path),
                    dir.path() / "check.py",
                    cases[i].mode + " " + std::to_string(cases[i].shape[0]) + " " +
                        std::to_string(cases[i].shape[1]));
  }

  // Files PIL writes: greyscale, RGB with several subsamplings, progressive,
  // optimised, CMYK, with EXIF and restart markers.
  const std::string make =
      "import sys, numpy as np; from PIL import Image\n"
      "d = sys.argv[1]; rng = np.random.default_rng(3)\n"
      "def save(name, im, **kw):\n"
      "    im.save(d + '/' + name + '.jpeg', **kw)\n"
      "    a = np.asarray(Image.open(d + '/' + name + '.jpeg'))\n"
      "    open(d + '/' + name + '.0', 'wb').write(a.tobytes())\n"
      "g = rng.integers(0, 256, (37, 53), dtype=np.uint8)\n"
      "c = rng.integers(0, 256, (45, 61, 3), dtype=np.uint8)\n"
      "save('l', Image.fromarray(g))\n"
      "save('rgb420', Image.fromarray(c))\n"
      "save('rgb444', Image.fromarray(c), subsampling=0, quality=95)\n"
      "save('rgb422', Image.fromarray(c), subsampling=1)\n"
      "save('progressive', Image.fromarray(c), progressive=True)\n"
      "save('optimized', Image.fromarray(g), optimize=True)\n"
      "save('cmyk', Image.fromarray(c).convert('CMYK'))\n"
      "save('exif', Image.fromarray(g), exif=b'Exif\\x00\\x00' + bytes(5000))\n"
      "save('smooth', Image.fromarray(np.tile(np.arange(256, dtype=np.uint8), (64, 1))))\n";
  CHECK(MismatchWithForeignFiles(format, storage, dir.path(), make,
                                 {"l", "rgb420", "rgb444", "rgb422", "progressive", "optimized",
                                  "cmyk", "exif", "smooth"},
                                 ".jpeg") == "");
}

}  // namespace
}  // namespace iomimic::jpeg
