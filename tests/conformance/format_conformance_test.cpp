// The format conformance suite, the format twin of
// storage_conformance_test.cpp: every format plugin under test (conformance.h;
// every format plugin of the build by default, so a new format is tested
// without an edit here) is loaded through the core's registry and runs the
// same cases on every back end of --storage (default: every in-tree storage
// plugin, the decorators wrapping the plain file back end, and the SDK's
// in-memory test storage; on the device-memory back end samples are compared
// by size only; a back end on a server, such as s3, writes under a fresh
// prefix of the bucket --root gives it, and is skipped without one), so a
// format cannot drift from the contract in
// iomimic/format.h:
//
// - the descriptor agrees with traits() and name();
// - files written with WriteFile read back: every sample, decode on and off,
//   kept in memory or not, in any order, with the sizes the spec asks for and
//   the same bytes on every back end;
// - an index past the end is kOutOfRange naming the path (the reader stays
//   usable), a missing file the storage's kNotFound naming it, a reader
//   without a storage kInvalidArgument;
// - ExpectedFileSize is exact when traits().predictable_size says so;
// - a truncated file or flipped bytes give an error value naming the path
//   (and the offset, for formats that parse what they read), never a crash;
// - writers and readers on distinct files share one Format across threads;
// - when CanWriteInParts says OK, WriteFrame + FillPayload give the payload
//   WriteFile writes, in a file of the same size that reads back the same.
//
// The spec is the first of a few small ones the format's Validate accepts
// (images want two or three dimensions of uint8); the round trip and the
// threads also try every FileSpec::compression the format accepts. Files are written the way
// the core writes them: to a temporary name, renamed when WriteFile succeeds.

#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "conformance.h"
#include "iomimic/iomimic.h"
#include "iomimic/testing/format_test_support.h"
#include "iomimic/testing/memory_storage.h"
#include "iomimic/testing/posix_test_storage.h"
#include "iomimic/testing/write_in_parts.h"

namespace {

namespace fs = std::filesystem;
using iomimic::File;
using iomimic::FileReader;
using iomimic::FileSpec;
using iomimic::Format;
using iomimic::FormatTraits;
using iomimic::OpenMode;
using iomimic::ReaderOptions;
using iomimic::Result;
using iomimic::SampleView;
using iomimic::Status;
using iomimic::StatusCode;
using iomimic::Storage;
using iomimic::plugin::FormatPtr;
using iomimic::plugin::Kind;
using iomimic::plugin::PluginInfo;
using iomimic::plugin::StoragePtr;
using iomimic::testing::TempDir;

const std::vector<PluginInfo>& Formats() {
  return iomimic::conformance::PluginsUnderTest(Kind::kFormat);
}

// A back end for the formats to write through. Plugins are opened as the
// core opens them (plugin::StorageStack), so decorators (faulty, latency,
// shard_cache) wrap the plain file back end, with their defaults: no fault,
// no delay, a 4 GiB cache.
struct Backend {
  std::string name;
  std::shared_ptr<Storage> storage;
  // For a back end on a server (IOMIMIC_CAP_ENDPOINT: s3), the bucket (or
  // bucket/prefix) --root gives it: formats write under a fresh prefix of
  // it instead of a local temporary folder.
  std::string root;
};

std::vector<Backend> Backends() {
  std::vector<Backend> out;
  for (const std::string& name : iomimic::conformance::TheSettings().storages) {
    if (name == "memory") {
      out.push_back({name, std::make_shared<iomimic::testing::MemoryStorage>(), ""});
      continue;
    }
    // Back ends built on MPI need it running (one process of its own).
    Result<iomimic::plugin::PluginInfo> info =
        iomimic::conformance::TheRegistry().Find(iomimic::plugin::Kind::kStorage, name);
    if (info.ok() && (info->capabilities & IOMIMIC_CAP_COLLECTIVE) != 0) {
      iomimic::conformance::StartMpi();
    }
    std::string root;
    if (info.ok() && (info->capabilities & IOMIMIC_CAP_ENDPOINT) != 0) {
      root = iomimic::conformance::RootFor(*info);
      if (root.empty()) {
        MESSAGE("storage '" << name
                            << "' skipped: it keeps its data on a server; give it a "
                               "bucket with --root "
                            << name << "=BUCKET");
        continue;
      }
    }
    Result<iomimic::plugin::StorageStack> made = iomimic::plugin::StorageStack::Open(
        iomimic::conformance::TheRegistry(), name, {}, /*rank=*/0, /*world_size=*/1);
    REQUIRE_MESSAGE(made.ok(), "storage '" << name << "': " << made.status().ToString());
    auto stack = std::make_shared<iomimic::plugin::StorageStack>(std::move(made).value());
    Storage* top = stack->top();
    out.push_back({name, std::shared_ptr<Storage>(stack, top), root});
  }
  return out;
}

FormatPtr CreateFormat(const PluginInfo& info) {
  Result<FormatPtr> made =
      iomimic::conformance::TheRegistry().CreateFormat(info.name, iomimic::PluginContext{});
  REQUIRE_MESSAGE(made.ok(), made.status().ToString());
  return std::move(made).value();
}

// The first small spec `format` accepts, for a file at `folder`/`stem`.
FileSpec SpecFor(const Format& format, const std::string& folder, const std::string& stem,
                 std::uint64_t seed, const std::string& compression = "none") {
  const FormatTraits traits = format.traits();
  struct Shape {
    std::vector<std::uint64_t> dims;
    const char* type;
  };
  const Shape shapes[] = {
      {{24, 20}, "uint8"}, {{24, 20, 3}, "uint8"}, {{480}, "uint8"}, {{16, 12}, "float32"}};
  std::string reasons;
  for (const Shape& shape : shapes) {
    FileSpec spec;
    spec.path = folder + "/" + stem + "." + traits.extension;
    spec.file_index = seed;
    spec.sample_shape = shape.dims;
    spec.element_type = *iomimic::ElementType::FromName(shape.type);
    spec.num_samples = traits.multi_sample_files ? 5 : 1;
    spec.seed = 1000 + seed;
    spec.compression = compression;
    Status ok = format.Validate(spec);
    if (ok.ok()) return spec;
    reasons += " " + ok.ToString();
  }
  FAIL("format '" << format.name() << "' accepts none of the suite's specs:" << reasons);
  return {};
}

// The compressions (FileSpec::compression) the format accepts, "none" first.
std::vector<std::string> Compressions(const Format& format) {
  std::vector<std::string> out = {"none"};
  const FileSpec base = SpecFor(format, "/nowhere", "x", 0);
  for (const char* c : {"gzip", "zip", "bz2", "xz", "lzf", "zstd"}) {
    FileSpec spec = base;
    spec.compression = c;
    if (format.Validate(spec).ok()) out.push_back(c);
  }
  return out;
}

using iomimic::testing::PartialPathFor;

// Writes `spec`'s file as the core does (iomimic/testing/format_test_support.h).
Status WriteAsCore(Format& format, Storage& storage, const FileSpec& spec) {
  return iomimic::testing::WriteSpecAsCore(format, storage, spec);
}

void Write(Format& format, Storage& storage, const FileSpec& spec) {
  Status s = WriteAsCore(format, storage, spec);
  REQUIRE_MESSAGE(s.ok(), s.ToString());
}

std::vector<std::byte> FileBytes(Storage& storage, const std::string& path) {
  Result<std::unique_ptr<File>> f = storage.Open(path, {OpenMode::kRead});
  REQUIRE_MESSAGE(f.ok(), f.status().ToString());
  Result<std::uint64_t> size = (*f)->Size();
  REQUIRE(size.ok());
  std::vector<std::byte> bytes(*size);
  Result<std::size_t> n = (*f)->ReadAt(0, bytes);
  REQUIRE_MESSAGE(n.ok(), n.status().ToString());
  REQUIRE(*n == *size);
  return bytes;
}

void PutBytes(Storage& storage, const std::string& path, const std::vector<std::byte>& bytes) {
  Result<std::unique_ptr<File>> f = storage.Open(path, {OpenMode::kWrite});
  REQUIRE_MESSAGE(f.ok(), f.status().ToString());
  REQUIRE((*f)->WriteAt(0, bytes).ok());
  REQUIRE((*f)->Close().ok());
}

// What one read of a file gave: each sample's reported size and bytes.
struct Samples {
  std::vector<std::uint64_t> sizes;
  std::vector<std::vector<std::byte>> data;
  bool operator==(const Samples&) const = default;
};

// Reads samples [0, count) of `path` in `order`, or the error.
Result<Samples> ReadAll(Format& format, Storage& storage, const std::string& path,
                        std::uint64_t count, bool decode, bool keep, bool reverse) {
  ReaderOptions options;
  options.storage = &storage;
  options.decode = decode;
  options.keep_in_memory = keep;
  IOMIMIC_ASSIGN_OR_RETURN(std::unique_ptr<FileReader> reader, format.OpenReader(path, options));
  Samples out;
  out.sizes.resize(count);
  out.data.resize(count);
  for (std::uint64_t k = 0; k < count; ++k) {
    const std::uint64_t i = reverse ? count - 1 - k : k;
    IOMIMIC_ASSIGN_OR_RETURN(SampleView view, reader->ReadSample(i));
    out.sizes[i] = view.bytes;
    // A back end handing out device memory (gds) may leave the sample there:
    // only its size is compared then, never its bytes from the CPU.
    if (!storage.capabilities().device_memory) {
      out.data[i].assign(view.data.begin(), view.data.end());
    }
  }
  return out;
}

// Whether the format's reader performs no I/O at all (synthetic): its samples
// are empty, so there is nothing to compare and nothing to find corrupt.
bool ReadsNothing(const Samples& s) {
  return std::all_of(s.sizes.begin(), s.sizes.end(), [](std::uint64_t b) { return b == 0; }) &&
         std::all_of(s.data.begin(), s.data.end(), [](const auto& d) { return d.empty(); });
}

// Runs `body(format, info, backend, folder)` for every format under test on
// every back end, each pair in a fresh folder.
template <typename Body>
void ForEachFormatAndBackend(Body&& body) {
  if (Formats().empty() && iomimic::conformance::AnyPluginUnderTest()) return;  // storages only
  REQUIRE_FALSE(Formats().empty());
  std::vector<Backend> backends = Backends();
  for (const PluginInfo& info : Formats()) {
    for (Backend& backend : backends) {
      INFO("format plugin '" << info.name << "' on storage '" << backend.name << "'");
      FormatPtr format = CreateFormat(info);
      if (!backend.root.empty()) {
        static std::atomic<int> cases{0};
        const std::string folder = backend.root + "/iomimic-format-conformance-" +
                                   std::to_string(::getpid()) + "-" + std::to_string(++cases) +
                                   "/data";
        REQUIRE(backend.storage->CreateDirectories(folder).ok());
        body(*format, info, *backend.storage, folder);
        continue;
      }
      TempDir dir("format");
      const std::string folder = (dir.path() / "data").string();
      REQUIRE(backend.storage->CreateDirectories(folder).ok());
      body(*format, info, *backend.storage, folder);
    }
  }
}

bool Mentions(const Status& s, const std::string& text) {
  return s.message().find(text) != std::string::npos;
}

}  // namespace

TEST_CASE("format conformance: descriptor and traits agree") {
  if (Formats().empty() && iomimic::conformance::AnyPluginUnderTest()) return;
  REQUIRE_FALSE(Formats().empty());
  for (const PluginInfo& info : Formats()) {
    INFO("format plugin '" << info.name << "'");
    FormatPtr format = CreateFormat(info);
    CHECK(format->name() == info.name);
    CHECK_FALSE(info.version.empty());
    CHECK_FALSE(info.description.empty());
    const FormatTraits t = format->traits();
    CHECK_FALSE(t.extension.empty());
    CHECK(t.extension.find('.') == std::string::npos);
    CHECK(((info.capabilities & IOMIMIC_CAP_PARTIAL_READS) != 0) == t.partial_reads);
    CHECK(((info.capabilities & IOMIMIC_CAP_HOST_DECODE) != 0) == t.needs_host_decode);
    CHECK(((info.capabilities & IOMIMIC_CAP_MULTI_SAMPLE) != 0) == t.multi_sample_files);
    // Storage capability flags do not belong on a format.
    CHECK((info.capabilities &
           (IOMIMIC_CAP_ASYNC | IOMIMIC_CAP_DIRECT_IO | IOMIMIC_CAP_COLLECTIVE |
            IOMIMIC_CAP_DEVICE_MEMORY | IOMIMIC_CAP_DECORATOR | IOMIMIC_CAP_ENDPOINT)) == 0);
    // A spec it cannot write is refused with a reason, before any file.
    FileSpec none = SpecFor(*format, "/nowhere", "x", 0);
    none.num_samples = 0;
    none.sample_shape.clear();
    Status refused = format->Validate(none);
    CHECK_FALSE(refused.ok());
    CHECK_FALSE(refused.message().empty());
  }
}

TEST_CASE("format conformance: every sample reads back, decode on and off, on every back end") {
  // The samples read with decode on, per format, from the first back end:
  // every other back end must give the same.
  std::map<std::string, Samples> reference;
  ForEachFormatAndBackend([&](Format& format, const PluginInfo& info, Storage& storage,
                              const std::string& folder) {
    for (const std::string& compression : Compressions(format)) {
      CAPTURE(compression);
      const FileSpec spec = SpecFor(format, folder, "rt_" + compression, 1, compression);
      Write(format, storage, spec);
      Result<iomimic::FileInfo> st = storage.Stat(spec.path);
      REQUIRE(st.ok());
      CHECK(st->size > 0);
      CHECK(storage.Stat(PartialPathFor(spec.path)).status().IsNotFound());
      // The reader learns the file's shape from the file (OpenReader has no
      // spec): the count it reports is the spec's, or unknown (no metadata).
      ReaderOptions options;
      options.storage = &storage;
      Result<std::unique_ptr<FileReader>> reader = format.OpenReader(spec.path, options);
      REQUIRE_MESSAGE(reader.ok(), reader.status().ToString());
      const std::uint64_t count = (*reader)->num_samples();
      CHECK((count == spec.num_samples || count == std::numeric_limits<std::uint64_t>::max()));
      if (count == spec.num_samples) {
        Result<SampleView> past = (*reader)->ReadSample(count);
        CHECK_MESSAGE(past.status().code() == StatusCode::kOutOfRange, past.status().ToString());
      }
      reader->reset();

      Result<Samples> decoded =
          ReadAll(format, storage, spec.path, spec.num_samples, true, false, false);
      REQUIRE_MESSAGE(decoded.ok(), decoded.status().ToString());
      const bool nothing = ReadsNothing(*decoded);
      // A Parquet sample is a row of the selected columns, reported as its
      // share of its row group's bytes, not as the spec's array (known gap:
      // docs/parquet.md); the array-shape checks do not apply to it.
      const bool row_format = info.name == "parquet";
      if (!nothing && !row_format) {
        for (std::uint64_t i = 0; i < spec.num_samples; ++i) {
          CAPTURE(i);
          // The decoded size is the spec's elements in some element width
          // (csv decodes to 8-byte values as pandas does; the others keep the
          // spec's type), the same for every sample, and the view holds it
          // all when it holds anything.
          const std::uint64_t bytes = decoded->sizes[i];
          CHECK(bytes % spec.sample_elements() == 0);
          CHECK(bytes / spec.sample_elements() >= 1);
          CHECK(bytes / spec.sample_elements() <= 8);
          CHECK(bytes == decoded->sizes[0]);
          CHECK((decoded->data[i].empty() || decoded->data[i].size() == bytes));
        }
      }
      // Kept in memory or opened per sample, forwards or backwards: the same.
      for (bool keep : {false, true}) {
        for (bool reverse : {false, true}) {
          CAPTURE(keep);
          CAPTURE(reverse);
          Result<Samples> again =
              ReadAll(format, storage, spec.path, spec.num_samples, true, keep, reverse);
          REQUIRE_MESSAGE(again.ok(), again.status().ToString());
          CHECK(*again == *decoded);
          Result<Samples> raw =
              ReadAll(format, storage, spec.path, spec.num_samples, false, keep, reverse);
          REQUIRE_MESSAGE(raw.ok(), raw.status().ToString());
          if (!nothing) {
            for (std::uint64_t i = 0; i < spec.num_samples; ++i) CHECK(raw->sizes[i] > 0);
          }
        }
      }
      auto [it, first] = reference.emplace(info.name + "/" + compression, *decoded);
      if (!first) {
        CHECK_MESSAGE(decoded->sizes == it->second.sizes, "sizes differ from the first back end's");
        if (!storage.capabilities().device_memory) {
          CHECK_MESSAGE(*decoded == it->second, "samples differ from the first back end's");
        }
      }
    }
  });
}

TEST_CASE("format conformance: an index past the end or a missing file is an error naming it") {
  ForEachFormatAndBackend([](Format& format, const PluginInfo&, Storage& storage,
                             const std::string& folder) {
    const FileSpec spec = SpecFor(format, folder, "range", 5);
    Write(format, storage, spec);
    for (bool keep : {false, true}) {
      CAPTURE(keep);
      ReaderOptions options;
      options.storage = &storage;
      options.keep_in_memory = keep;
      Result<std::unique_ptr<FileReader>> reader = format.OpenReader(spec.path, options);
      REQUIRE_MESSAGE(reader.ok(), reader.status().ToString());
      const std::uint64_t count = (*reader)->num_samples();
      // A reader without metadata (synthetic) accepts every index.
      if (count == std::numeric_limits<std::uint64_t>::max()) continue;
      REQUIRE(count == spec.num_samples);
      Result<SampleView> past = (*reader)->ReadSample(count);
      CHECK_MESSAGE(past.status().code() == StatusCode::kOutOfRange, past.status().ToString());
      CHECK_MESSAGE(Mentions(past.status(), spec.path), past.status().ToString());
      // The reader is still usable after the error.
      Result<SampleView> last = (*reader)->ReadSample(count - 1);
      CHECK_MESSAGE(last.ok(), last.status().ToString());
      Result<SampleView> far = (*reader)->ReadSample(~std::uint64_t{0});
      CHECK_MESSAGE(far.status().code() == StatusCode::kOutOfRange, far.status().ToString());
    }
    // The storage's kNotFound comes back naming the file, at OpenReader.
    ReaderOptions options;
    options.storage = &storage;
    const std::string missing = folder + "/missing." + format.traits().extension;
    Result<std::unique_ptr<FileReader>> absent = format.OpenReader(missing, options);
    if (absent.ok()) {
      // Only a reader that opens nothing (synthetic) may not notice.
      CHECK((*absent)->num_samples() == std::numeric_limits<std::uint64_t>::max());
      return;
    }
    CHECK_MESSAGE(absent.status().code() == StatusCode::kNotFound, absent.status().ToString());
    CHECK_MESSAGE(Mentions(absent.status(), missing), absent.status().ToString());
    // A reader that opens files needs a storage.
    Result<std::unique_ptr<FileReader>> no_storage = format.OpenReader(spec.path, ReaderOptions{});
    CHECK_MESSAGE(no_storage.status().code() == StatusCode::kInvalidArgument,
                  no_storage.status().ToString());
  });
}

TEST_CASE("format conformance: ExpectedFileSize is exact when traits say predictable") {
  ForEachFormatAndBackend(
      [](Format& format, const PluginInfo&, Storage& storage, const std::string& folder) {
        const FileSpec spec = SpecFor(format, folder, "size", 2);
        Result<std::uint64_t> expected = format.ExpectedFileSize(spec);
        if (format.traits().predictable_size) {
          REQUIRE_MESSAGE(expected.ok(), expected.status().ToString());
        } else if (!expected.ok()) {
          CHECK_MESSAGE(expected.status().code() == StatusCode::kNotSupported,
                        expected.status().ToString());
          return;
        }
        Write(format, storage, spec);
        CHECK(storage.Stat(spec.path)->size == *expected);
      });
}

TEST_CASE("format conformance: a truncated file or flipped bytes give an error, never a crash") {
  ForEachFormatAndBackend([](Format& format, const PluginInfo&, Storage& storage,
                             const std::string& folder) {
    const FileSpec spec = SpecFor(format, folder, "good", 3);
    Write(format, storage, spec);
    const std::vector<std::byte> good = FileBytes(storage, spec.path);
    Result<Samples> clean =
        ReadAll(format, storage, spec.path, spec.num_samples, true, false, false);
    REQUIRE(clean.ok());
    const bool nothing = ReadsNothing(*clean);
    // Damaged copies under a new name (companion files, where the format
    // has them, are copied along by writing the damaged file over the good
    // one's path).
    struct Damage {
      const char* what;
      std::function<void(std::vector<std::byte>&)> apply;
      bool must_fail;
    };
    const Damage damages[] = {
        {"truncated to half", [](auto& b) { b.resize(b.size() / 2); }, true},
        {"truncated by one byte", [](auto& b) { b.pop_back(); }, false},
        {"emptied", [](auto& b) { b.clear(); }, true},
        {"first bytes flipped",
         [](auto& b) {
           for (std::size_t i = 0; i < std::min<std::size_t>(8, b.size()); ++i)
             b[i] ^= std::byte{0xA5};
         },
         false},
        {"last bytes flipped",
         [](auto& b) {
           for (std::size_t i = b.size() - std::min<std::size_t>(8, b.size()); i < b.size(); ++i)
             b[i] ^= std::byte{0x5A};
         },
         false},
        {"middle byte flipped", [](auto& b) { b[b.size() / 2] ^= std::byte{0x10}; }, false},
    };
    for (const Damage& d : damages) {
      CAPTURE(d.what);
      std::vector<std::byte> bytes = good;
      d.apply(bytes);
      PutBytes(storage, spec.path, bytes);
      for (bool decode : {true, false}) {
        for (bool keep : {false, true}) {
          CAPTURE(decode);
          CAPTURE(keep);
          Result<Samples> r =
              ReadAll(format, storage, spec.path, spec.num_samples, decode, keep, false);
          if (r.ok()) {
            // Undetected damage must at least not be read as the good file
            // when samples are compared byte for byte (a flipped payload
            // byte is invisible to raw formats, and that is fine).
            CHECK_FALSE((d.must_fail && decode && !nothing));
            continue;
          }
          const Status& s = r.status();
          CHECK_MESSAGE(s.code() != StatusCode::kOk, s.ToString());
          CHECK_MESSAGE(Mentions(s, spec.path), s.ToString());
          if (s.code() == StatusCode::kCorruption) {
            CHECK_MESSAGE((Mentions(s, "offset") || Mentions(s, "byte")), s.ToString());
          }
        }
      }
    }
    PutBytes(storage, spec.path, good);
    Result<Samples> restored =
        ReadAll(format, storage, spec.path, spec.num_samples, true, false, false);
    REQUIRE_MESSAGE(restored.ok(), restored.status().ToString());
    CHECK(*restored == *clean);
  });
}

TEST_CASE("format conformance: concurrent writers and readers share one format") {
  ForEachFormatAndBackend(
      [](Format& format, const PluginInfo&, Storage& storage, const std::string& folder) {
        constexpr int kThreads = 6;
        // Each thread its own file, compressed in turn each way the format
        // can.
        const std::vector<std::string> compressions = Compressions(format);
        std::vector<FileSpec> specs;
        for (int t = 0; t < kThreads; ++t) {
          specs.push_back(SpecFor(format, folder, "par" + std::to_string(t), 10 + t,
                                  compressions[t % compressions.size()]));
        }
        std::vector<Samples> seen(kThreads);
        std::vector<std::string> errors(kThreads);
        std::vector<std::thread> threads;
        for (int t = 0; t < kThreads; ++t) {
          threads.emplace_back([&, t] {
            Status w = WriteAsCore(format, storage, specs[t]);
            if (!w.ok()) {
              errors[t] = w.ToString();
              return;
            }
            for (int round = 0; round < 3; ++round) {
              Result<Samples> r = ReadAll(format, storage, specs[t].path, specs[t].num_samples,
                                          true, round == 1, round == 2);
              if (!r.ok()) {
                errors[t] = r.status().ToString();
                return;
              }
              if (round > 0 && !(*r == seen[t])) errors[t] = "samples differ between reads";
              seen[t] = std::move(r).value();
            }
          });
        }
        for (std::thread& th : threads) th.join();
        for (int t = 0; t < kThreads; ++t) {
          CAPTURE(t);
          CHECK_MESSAGE(errors[t].empty(), errors[t]);
          // Read again alone: threads neither saw nor wrote anything else.
          Result<Samples> alone =
              ReadAll(format, storage, specs[t].path, specs[t].num_samples, true, false, false);
          REQUIRE_MESSAGE(alone.ok(), alone.status().ToString());
          CHECK(*alone == seen[t]);
        }
      });
}

TEST_CASE("format conformance: WriteFrame + FillPayload give WriteFile's payload") {
  ForEachFormatAndBackend([](Format& format, const PluginInfo&, Storage& storage,
                             const std::string& folder) {
    const FileSpec whole = SpecFor(format, folder, "whole", 4);
    FileSpec parts = whole;
    parts.path = folder + "/parts." + format.traits().extension;
    Status can = format.CanWriteInParts(whole);
    CHECK(can.code() == format.CanWriteInParts(parts).code());
    if (!can.ok()) {
      CHECK_MESSAGE(can.code() == StatusCode::kNotSupported, can.ToString());
      CHECK_FALSE(can.message().empty());
      return;
    }
    Write(format, storage, whole);
    Result<iomimic::PayloadLayout> layout = iomimic::testing::WriteInParts(format, storage, parts);
    REQUIRE_MESSAGE(layout.ok(), layout.status().ToString());
    const std::vector<std::byte> a = FileBytes(storage, whole.path);
    const std::vector<std::byte> b = FileBytes(storage, parts.path);
    CHECK(layout->file_size == a.size());
    REQUIRE(b.size() == a.size());
    REQUIRE(layout->payload_offset + layout->payload_bytes <= a.size());
    const auto from = static_cast<std::ptrdiff_t>(layout->payload_offset);
    const auto to = from + static_cast<std::ptrdiff_t>(layout->payload_bytes);
    CHECK(std::equal(a.begin() + from, a.begin() + to, b.begin() + from));
    std::vector<std::byte> filled(layout->payload_bytes);
    REQUIRE(format.FillPayload(whole, 0, filled).ok());
    CHECK(std::equal(filled.begin(), filled.end(), a.begin() + from));
    Result<Samples> ra =
        ReadAll(format, storage, whole.path, whole.num_samples, true, false, false);
    Result<Samples> rb =
        ReadAll(format, storage, parts.path, parts.num_samples, true, false, false);
    REQUIRE_MESSAGE(ra.ok(), ra.status().ToString());
    REQUIRE_MESSAGE(rb.ok(), rb.status().ToString());
    CHECK(*ra == *rb);
  });
}
