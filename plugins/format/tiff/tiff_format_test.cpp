// Tests of the tiff codec: validation and options beyond the shell's,
// writing every element type and compression, its bytes, corruption
// handling, libtiff's message handlers and interoperability with tifffile
// and PIL. The image format shell's cases (traits, options, validation,
// access pattern, read types, storage errors) run for tiff from
// image_test_support/image_format_cases.h.

#include <doctest/doctest.h>
#include <tiffio.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "image_test_support/image_test_util.h"
#include "iomimic/image_format.h"
#include "tiff_codec.h"

extern "C" const IomimicPluginDescriptor iomimic_plugin_descriptor;

namespace iomimic::tiff {
namespace {

using namespace iomimic::image_test;  // NOLINT: test helpers

std::uint32_t LoadLe(const std::vector<std::byte>& b, std::size_t at, int bytes) {
  std::uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | std::uint32_t(b[at + i]);
  return v;
}

void StoreLe32(std::vector<std::byte>& b, std::size_t at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + i] = std::byte(v >> (8 * i));
}

struct Entry {
  std::uint16_t tag = 0;
  std::uint16_t type = 0;
  std::uint32_t count = 0;
  std::size_t offset = 0;   // of the entry in the file
  std::uint32_t value = 0;  // the first value (inline) or the value offset
};

// The entries of the first IFD of a little-endian classic TIFF.
std::vector<Entry> Directory(const std::vector<std::byte>& b, std::size_t* ifd = nullptr) {
  const std::size_t at = LoadLe(b, 4, 4);
  if (ifd != nullptr) *ifd = at;
  const std::size_t n = LoadLe(b, at, 2);
  std::vector<Entry> out;
  for (std::size_t i = 0; i < n; ++i) {
    Entry e;
    e.offset = at + 2 + 12 * i;
    e.tag = static_cast<std::uint16_t>(LoadLe(b, e.offset, 2));
    e.type = static_cast<std::uint16_t>(LoadLe(b, e.offset + 2, 2));
    e.count = LoadLe(b, e.offset + 4, 4);
    e.value = e.type == 3 && e.count == 1 ? LoadLe(b, e.offset + 8, 2) : LoadLe(b, e.offset + 8, 4);
    out.push_back(e);
  }
  return out;
}

const Entry& Tag(const std::vector<Entry>& entries, std::uint16_t tag) {
  for (const Entry& e : entries) {
    if (e.tag == tag) return e;
  }
  FAIL("no tag " << tag);
  return entries.front();
}

void CheckRoundTrip(Format& format, Storage& storage, const FileSpec& spec, bool keep) {
  const std::vector<std::byte> pixels = ReferencePixels(spec);
  Result<std::unique_ptr<FileReader>> reader =
      format.OpenReader(spec.path, TestReaderOptions(&storage, true, keep));
  REQUIRE_MESSAGE(reader.ok(), reader.status().ToString());
  REQUIRE((*reader)->num_samples() == 1);
  for (int round = 0; round < 2; ++round) {
    Result<SampleView> sample = (*reader)->ReadSample(0);
    REQUIRE_MESSAGE(sample.ok(), sample.status().ToString());
    CHECK(sample->bytes == spec.sample_bytes());
    CHECK(SameBytes(sample->data, pixels));
  }
}

// Captures what the process writes to stderr (fd 2) while alive.
class StderrCapture {
 public:
  explicit StderrCapture(const fs::path& file) : file_(file) {
    std::fflush(stderr);
    saved_ = ::dup(2);
    const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    REQUIRE(fd >= 0);
    ::dup2(fd, 2);
    ::close(fd);
  }
  ~StderrCapture() { Restore(); }
  std::string Take() {
    Restore();
    return ReadFileText(file_);
  }

 private:
  void Restore() {
    if (saved_ < 0) return;
    std::fflush(stderr);
    ::dup2(saved_, 2);
    ::close(saved_);
    saved_ = -1;
  }
  fs::path file_;
  int saved_ = -1;
};

std::unique_ptr<Format> MakeFormat(WriterOptions options = {}) {
  return std::make_unique<image::ImageFormat>(std::make_unique<TiffCodec>(options));
}

// What the shell's cases need to know about tiff.
struct TiffShell : CodecFixture<TiffCodec> {
  static inline const ShellFacts kFacts{
      .name = "tiff",
      .max_side = 0xFFFFFFFFu,
      .element_type = "" /* any numeric type */,
      .on_demand_type = "float32",
      .options = {"compression", "compress_level", "rows_per_strip"},
      .bad_options = {{"compression", "jpeg2000"},
                      {"compress_level", "0"},
                      {"rows_per_strip", "-1"}},
      .rejected_types = {"bool"},
      .unsupported_compression = "bz2"};
  // libtiff patches the directory offset into the header once the strips
  // are out.
  static void CheckWrites(const std::vector<Request>& writes, std::uint64_t) {
    REQUIRE(writes.size() > 2);
    CHECK(std::any_of(writes.begin() + 1, writes.end(),
                      [](const Request& w) { return w.offset <= 4 && w.offset + w.length >= 8; }));
  }
  static const char* Damage(std::vector<std::byte>& file) {
    StoreLe32(file, 4, 0x7fffffff);
    return "directory offset";
  }
};

}  // namespace
}  // namespace iomimic::tiff

using ShellFixture = iomimic::tiff::TiffShell;
#include "image_test_support/image_format_cases.h"  // NOLINT: the shell's cases, after the fixture

namespace iomimic::tiff {
namespace {

TEST_CASE("tiff options beyond the shell's") {
  PluginContext ctx;
  Status error;
  ctx.options =
      PluginOptions("format plugin 'tiff'",
                    {{"compression", "lzw"}, {"compress_level", "9"}, {"rows_per_strip", "3"}});
  void* made = iomimic_plugin_descriptor.create(&ctx, &error);
  REQUIRE_MESSAGE(made != nullptr, error.ToString());
  iomimic_plugin_descriptor.destroy(made);
  Result<WriterOptions> parsed = ParseOptions(PluginOptions("", {{"compression", "zip"}}));
  REQUIRE(parsed.ok());
  CHECK(parsed->compression == Compression::kDeflate);
}

TEST_CASE("validation") {
  std::unique_ptr<Format> owned = MakeFormat();
  Format& format = *owned;
  for (const char* dtype : {"uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64",
                            "int64", "float16", "float32", "float64"}) {
    CAPTURE(dtype);
    CHECK(format.Validate(MakeSpec(dtype, {64, 48}, 1, "/a.tiff")).ok());
  }
  CHECK(format.Validate(MakeSpec("uint8", {64, 48, 3}, 1, "/a.tiff")).ok());
  auto code = [&](const FileSpec& spec) { return format.Validate(spec).code(); };
  CHECK(code(MakeSpec("bool", {4, 4}, 1, "/a.tiff")) == StatusCode::kInvalidArgument);
  CHECK(code(MakeSpec("uint8", {4}, 1, "/a.tiff")) == StatusCode::kInvalidArgument);
  CHECK(code(MakeSpec("uint8", {4, 4, 2}, 1, "/a.tiff")) == StatusCode::kInvalidArgument);
  CHECK(code(MakeSpec("uint8", {4, 4}, 1, "/a.tiff", 3)) == StatusCode::kInvalidArgument);
  FileSpec spec = MakeSpec("uint8", {4, 4}, 1, "/a.tiff");
  spec.compression = "gzip";
  CHECK(format.Validate(spec).ok());
  spec.compression = "bz2";
  CHECK(code(spec) == StatusCode::kNotSupported);
  WriterOptions lzw;
  lzw.compression = Compression::kLzw;
  spec.compression = "zip";
  CHECK(MakeFormat(lzw)->Validate(spec).code() == StatusCode::kInvalidArgument);

  Result<TiffPlan> plan = PlanTiff(MakeSpec("uint16", {1000, 100}, 1, "/a.tiff"), {});
  REQUIRE(plan.ok());
  CHECK(plan->rows_per_strip == 327);  // 65536 / 200 bytes per row
  CHECK_FALSE(plan->bigtiff);
  plan = PlanTiff(MakeSpec("float64", {70000, 70000}, 1, "/a.tiff"), {});
  REQUIRE(plan.ok());
  CHECK(plan->bigtiff);
}

TEST_CASE("round trip of shapes, element types and compressions") {
  MemStorage storage;
  std::uint64_t seed = 1;
  for (Compression c :
       {Compression::kNone, Compression::kDeflate, Compression::kLzw, Compression::kPackBits}) {
    WriterOptions options;
    options.compression = c;
    std::unique_ptr<Format> owned = MakeFormat(options);
    Format& format = *owned;
    for (const char* dtype : {"uint8", "int16", "uint32", "float32", "float64", "float16"}) {
      for (const std::vector<std::uint64_t>& shape : std::vector<std::vector<std::uint64_t>>{
               {64, 64}, {1, 1}, {3, 1000}, {300, 7, 3}, {31, 29, 1}}) {
        CAPTURE(CompressionName(c));
        CAPTURE(dtype);
        CAPTURE(shape[0]);
        CAPTURE(shape[1]);
        const std::string path = "/rt/" + std::to_string(seed) + ".tiff";
        FileSpec spec = MakeSpec(dtype, shape, seed++, path);
        REQUIRE(WriteSpec(format, storage, spec).ok());
        CheckRoundTrip(format, storage, spec, seed % 2 == 0);
      }
    }
  }
  CHECK(storage.open_files() == 0);
}

TEST_CASE("file layout: classic little-endian TIFF with the spec's tags") {
  std::unique_ptr<Format> owned = MakeFormat();
  Format& format = *owned;
  MemStorage storage;
  FileSpec spec = MakeSpec("uint16", {300, 500}, 7, "/layout.tiff");
  storage.SetLogging(true);
  REQUIRE(WriteSpec(format, storage, spec).ok());
  const std::vector<Request> writes = storage.TakeLog();
  const std::vector<std::byte> b = storage.Bytes(spec.path);
  REQUIRE(writes.size() == 1);  // header patch included, one request
  CHECK(writes[0].length == b.size());
  CHECK(b[0] == std::byte{'I'});
  CHECK(LoadLe(b, 2, 2) == 42);
  const std::vector<Entry> dir = Directory(b);
  CHECK(Tag(dir, 256).value == 500);  // ImageWidth = d2
  CHECK(Tag(dir, 257).value == 300);  // ImageLength = d1
  CHECK(Tag(dir, 258).value == 16);   // BitsPerSample
  CHECK(Tag(dir, 259).value == 1);    // no compression
  CHECK(Tag(dir, 262).value == 1);    // MinIsBlack
  CHECK(Tag(dir, 277).value == 1);    // SamplesPerPixel
  CHECK(Tag(dir, 278).value == 65);   // RowsPerStrip: 64 KiB strips
  CHECK(Tag(dir, 339).value == 1);    // SampleFormat unsigned
  CHECK(Tag(dir, 273).count == 5);    // StripOffsets
  // Raw strips: the pixels are in the file as generated.
  const std::vector<std::byte> pixels = ReferencePixels(spec);
  const std::uint32_t first_strip = LoadLe(b, Tag(dir, 273).value, 4);
  CHECK(std::memcmp(b.data() + first_strip, pixels.data(), 1000) == 0);
  FileSpec again = spec;
  again.path = "/layout2.tiff";
  REQUIRE(WriteSpec(format, storage, again).ok());
  CHECK(storage.Bytes(again.path) == b);
}

TEST_CASE("corruption is reported with path and offset") {
  MemStorage storage;
  const std::string path = "/bad.tiff";
  WriterOptions deflate;
  deflate.compression = Compression::kDeflate;
  std::unique_ptr<Format> owned = MakeFormat();
  Format& format = *owned;
  std::unique_ptr<Format> deflate_owned = MakeFormat(deflate);
  Format& deflate_format = *deflate_owned;
  FileSpec spec = MakeSpec("uint8", {300, 300}, 3, path);
  REQUIRE(WriteSpec(format, storage, spec).ok());
  const std::vector<std::byte> good = storage.Bytes(path);
  std::size_t ifd = 0;
  const std::vector<Entry> dir = Directory(good, &ifd);
  testing::DamagedCopies damaged(storage, path, good);

  SUBCASE("truncated") {
    for (std::size_t keep : {std::size_t{0}, std::size_t{3}, std::size_t{7}, std::size_t{100},
                             good.size() / 2, ifd + 20, good.size() - 1}) {
      CAPTURE(keep);
      const Status s = damaged.ReadTruncated(format, keep);
      CheckCorruption(s, path);
    }
  }
  SUBCASE("byte order mark") {
    damaged.Put([](std::vector<std::byte>& b) { b[0] = std::byte{'X'}; });
    CheckCorruption(OpenAndRead(format, storage, path), path, "not a tiff file");
    CheckCorruption(OpenAndRead(format, storage, path, false), path, "at offset 0");
  }
  SUBCASE("magic number") {
    damaged.Put([](std::vector<std::byte>& b) { b[2] = std::byte{41}; });
    CheckCorruption(OpenAndRead(format, storage, path), path, "at offset 2");
  }
  SUBCASE("directory offset outside the file") {
    damaged.Put([](std::vector<std::byte>& b) { StoreLe32(b, 4, 0x7fffffff); });
    CheckCorruption(OpenAndRead(format, storage, path), path, "at offset 4");
    CheckCorruption(OpenAndRead(format, storage, path, false), path, "at offset 4");
  }
  SUBCASE("directory entry count") {
    damaged.Put([&](std::vector<std::byte>& b) {
      b[ifd] = std::byte{0xff};
      b[ifd + 1] = std::byte{0xff};
    });
    CheckCorruption(OpenAndRead(format, storage, path), path, "at offset " + std::to_string(ifd));
  }
  SUBCASE("required tag missing") {
    damaged.Put([&](std::vector<std::byte>& b) {
      b[Tag(dir, 256).offset] = std::byte{0x30};  // ImageWidth becomes an unknown tag
    });
    CheckCorruption(OpenAndRead(format, storage, path), path, "corrupt tiff");
  }
  SUBCASE("strip past the end") {
    damaged.Put([&](std::vector<std::byte>& b) {
      StoreLe32(b, LoadLe(b, Tag(dir, 273).offset + 8, 4) + 4, 0x00ffffff);
    });
    const Status s = OpenAndRead(format, storage, path);
    CheckCorruption(s, path, "strip 1");
    CHECK_MESSAGE(s.message().find("at offset " + std::to_string(0x00ffffff)) != std::string::npos,
                  s.message());
    // Without decoding, strips are not read.
    CHECK(OpenAndRead(format, storage, path, false).ok());
  }
  SUBCASE("damaged deflate data") {
    FileSpec zspec = spec;
    REQUIRE(WriteSpec(deflate_format, storage, zspec).ok());
    std::vector<std::byte> b = storage.Bytes(path);
    const std::vector<Entry> zdir = Directory(b);
    const std::uint32_t strip0 = LoadLe(b, Tag(zdir, 273).value, 4);
    for (std::size_t i = 0; i < 64; ++i) b[strip0 + 2 + i] ^= std::byte{0x5a};
    storage.SetBytes(path, b);
    const Status s = OpenAndRead(deflate_format, storage, path);
    CheckCorruption(s, path, "strip 0");
    CHECK_MESSAGE(s.message().find("at offset " + std::to_string(strip0)) != std::string::npos,
                  s.message());
  }
  SUBCASE("tiles larger than the file can hold") {
    // Found by tests/fuzz (docs/fuzzing.md): this 210-byte tiled 8x8 image
    // declares huge tiles, and the reader allocated a 12 GB tile buffer
    // (tests/fuzz/corpus/tiff/oom-5b872fc6616c036a857c09a4e031f2571d53dbf8).
    const unsigned char fuzzed[] = {
        0x49, 0x49, 0x2a, 0x00, 0x48, 0x00, 0x00, 0x00, 0xbb, 0x11, 0xc7, 0xe1, 0x3c, 0x1b, 0x3c,
        0xe1, 0xdb, 0x6d, 0xa6, 0x21, 0x9e, 0xcf, 0xec, 0x80, 0x8c, 0x20, 0x1d, 0x69, 0x19, 0x39,
        0x80, 0x34, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0xe2, 0x7c, 0xd7, 0xc0, 0x8e,
        0x2f, 0x51, 0xbf, 0x80, 0xc0, 0xca, 0xb7, 0x01, 0x07, 0x10, 0xbf, 0xc6, 0x60, 0xce, 0xa5,
        0x75, 0xf1, 0x53, 0x61, 0x4c, 0xb7, 0x9d, 0xd6, 0xe7, 0xac, 0xbe, 0x83, 0x0b, 0x00, 0x00,
        0x01, 0x03, 0x00, 0x01, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x01, 0x01, 0x03, 0x00,
        0x01, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x02, 0x01, 0x03, 0x00, 0x01, 0x00, 0x00,
        0x00, 0x08, 0x00, 0x00, 0x00, 0x11, 0x01, 0x03, 0x00, 0x01, 0x00, 0x00, 0x00, 0x06, 0x00,
        0x00, 0x00, 0x06, 0x01, 0x03, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x11,
        0x01, 0x04, 0x00, 0x11, 0x01, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x15, 0x01, 0x03, 0x00,
        0x01, 0x00, 0x00, 0x00, 0x01, 0xbe, 0x00, 0x00, 0x16, 0x01, 0x03, 0x00, 0x01, 0x00, 0x00,
        0x00, 0x04, 0x00, 0x00, 0x00, 0x17, 0x01, 0x04, 0x00, 0x01, 0x80, 0x00, 0x00, 0x40, 0x00,
        0x00, 0x00, 0x1c, 0x01, 0x03, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x42,
        0x01, 0x03, 0x00, 0x01, 0x00, 0x00, 0x00, 0x05, 0xff, 0xff, 0xff, 0xf6, 0x00, 0x00, 0x00,
    };
    std::vector<std::byte> b(sizeof(fuzzed));
    std::memcpy(b.data(), fuzzed, sizeof(fuzzed));
    storage.SetBytes(path, b);
    const Status s = OpenAndRead(format, storage, path);
    CheckCorruption(s, path, "tiles of");
    CHECK_MESSAGE(s.message().find("at offset 72") != std::string::npos, s.message());
  }
}

TEST_CASE("libtiff prints nothing, whatever happens") {
  TempDir dir("tiff_stderr");
  std::unique_ptr<Format> owned = MakeFormat();
  Format& format = *owned;
  MemStorage storage;
  FileSpec spec = MakeSpec("uint8", {50, 50}, 3, "/quiet.tiff");
  REQUIRE(WriteSpec(format, storage, spec).ok());
  std::vector<std::byte> b = storage.Bytes(spec.path);
  b[LoadLe(b, 4, 4)] = std::byte{0xff};
  b[LoadLe(b, 4, 4) + 1] = std::byte{0xff};
  storage.SetBytes(spec.path, b);
  StderrCapture capture(dir.path() / "stderr.txt");
  CHECK(OpenAndRead(format, storage, spec.path).code() == StatusCode::kCorruption);
  // Messages without a TIFF handle go to the process-wide handlers.
  TIFFError("iomimic-test", "an error nobody should see");
  TIFFWarning("iomimic-test", "a warning nobody should see");
  const std::string printed = capture.Take();
  CHECK_MESSAGE(printed.empty(), printed);
}

// ---------------------------------------------------------------------------
// Interoperability with tifffile and PIL.

TEST_CASE("tifffile and PIL read what we write, and we read what they write") {
  if (!HavePythonModules("numpy, tifffile, PIL")) {
    MESSAGE("skipped: /usr/bin/python3 with numpy, tifffile and PIL is not available");
    return;
  }
  TempDir dir("tiff");
  PosixStorage storage;
  // tifffile without imagecodecs decodes only uncompressed and deflate
  // files; PIL (through libtiff) checks the others.
  const std::string script =
      "import sys, numpy as np, tifffile; from PIL import Image\n"
      "path, ref, ours, dtype, shape, compression = sys.argv[1:7]\n"
      "shape = tuple(int(x) for x in shape.split(','))\n"
      "if len(shape) == 3 and shape[2] == 1: shape = shape[:2]\n"
      "want = np.frombuffer(open(ref, 'rb').read(), dtype=dtype).reshape(shape)\n"
      "if compression in ('none', 'deflate'):\n"
      "    a = tifffile.imread(path)\n"
      "    assert a.dtype == np.dtype(dtype), a.dtype\n"
      "    assert a.shape == shape, a.shape\n"
      "    assert a.tobytes() == want.tobytes(), 'tifffile reads other pixels'\n"
      "if dtype in ('uint8', 'uint16', 'int32', 'float32'):\n"
      "    im = Image.open(path)\n"
      "    assert im.size == (shape[1], shape[0]), im.size\n"
      "    a = np.asarray(im)\n"
      "    assert a.dtype == want.dtype and a.shape == want.shape, (a.dtype, a.shape)\n"
      "    assert a.tobytes() == want.tobytes(), 'PIL reads other pixels'\n"
      "print('ok')\n";
  WriteTextFile(dir.path() / "check.py", script);
  struct Case {
    std::string dtype;
    std::vector<std::uint64_t> shape;
    Compression compression;
  };
  const std::vector<Case> cases = {
      {"uint8", {64, 64}, Compression::kNone},   {"uint8", {33, 70, 3}, Compression::kDeflate},
      {"uint8", {200, 300}, Compression::kLzw},  {"uint8", {20, 30, 1}, Compression::kPackBits},
      {"uint16", {31, 17}, Compression::kLzw},   {"float32", {12, 11}, Compression::kPackBits},
      {"uint16", {50, 40}, Compression::kNone},  {"int32", {17, 9}, Compression::kDeflate},
      {"float32", {70, 80}, Compression::kNone}, {"float64", {5, 6, 3}, Compression::kNone},
      {"int8", {10, 10}, Compression::kNone},    {"float16", {9, 13}, Compression::kNone},
      {"uint64", {4, 5}, Compression::kDeflate},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    CAPTURE(i);
    WriterOptions options;
    options.compression = cases[i].compression;
    std::unique_ptr<Format> owned = MakeFormat(options);
    const std::string path = (dir.path() / ("ours_" + std::to_string(i) + ".tiff")).string();
    std::string shape;
    for (std::uint64_t d : cases[i].shape) shape += (shape.empty() ? "" : ",") + std::to_string(d);
    CheckWithPython(*owned, storage, MakeSpec(cases[i].dtype, cases[i].shape, 40 + i, path),
                    dir.path() / "check.py",
                    cases[i].dtype + " " + shape + " " + CompressionName(cases[i].compression));
  }

  // Files tifffile and PIL write: big-endian, tiled, planar, compressed with
  // a predictor, PIL's defaults.
  const std::string make =
      "import sys, numpy as np, tifffile; from PIL import Image\n"
      "d = sys.argv[1]; rng = np.random.default_rng(3)\n"
      "def save(name, a, **kw):\n"
      "    tifffile.imwrite(d + '/' + name + '.tiff', a, **kw)\n"
      "    b = tifffile.imread(d + '/' + name + '.tiff')\n"
      "    open(d + '/' + name + '.0', "
      "'wb').write(b.astype(b.dtype.newbyteorder('<')).tobytes())\n"
      "save('u8', rng.integers(0, 256, (37, 53), dtype=np.uint8))\n"
      "save('be_u16', rng.integers(0, 65536, (20, 30)).astype('>u2'), byteorder='>')\n"
      "save('tiled', rng.integers(0, 256, (100, 70), dtype=np.uint8), tile=(32, 32))\n"
      "save('planar', rng.integers(0, 256, (3, 20, 25), dtype=np.uint8), planarconfig='separate',"
      " photometric='rgb')\n"
      "save('predictor', rng.integers(0, 65536, (30, 40)).astype(np.uint16), compression='zlib',"
      " predictor=True)\n"
      "save('f64', rng.random((7, 9)))\n"
      "im = Image.fromarray(rng.integers(0, 256, (41, 43), dtype=np.uint8))\n"
      "im.save(d + '/pil.tiff')\n"
      "open(d + '/pil.0', 'wb').write(np.asarray(im).tobytes())\n"
      "im.save(d + '/pil_deflate.tiff', compression='tiff_adobe_deflate')\n"
      "open(d + '/pil_deflate.0', 'wb').write(np.asarray(im).tobytes())\n"
      "im = Image.fromarray(rng.integers(0, 256, (19, 23, 3), dtype=np.uint8))\n"
      "im.save(d + '/pil_lzw.tiff', compression='tiff_lzw')\n"
      "open(d + '/pil_lzw.0', 'wb').write(np.asarray(im).tobytes())\n";
  std::unique_ptr<Format> owned = MakeFormat();
  Format& format = *owned;
  CHECK(MismatchWithForeignFiles(format, storage, dir.path(), make,
                                 {"u8", "be_u16", "tiled", "planar", "predictor", "f64", "pil",
                                  "pil_deflate", "pil_lzw"},
                                 ".tiff") == "");
}

}  // namespace
}  // namespace iomimic::tiff
