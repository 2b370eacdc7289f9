// The storage conformance suite (Arrow's GenericFileSystemTest idea): every
// storage plugin found in the plugin folder is loaded through the core's
// real registry and must pass the same cases, so a back end cannot drift
// from the contract in iomimic/storage.h. Cases adapt to what a back end
// says it is (capabilities(): alignment, device memory, queue depth).
//
// Which plugins: conformance.h (--plugin-dir, --plugin, --skip, --root).
// Each plugin is opened with the options its descriptor declares for the
// suite (conformance_options: decorators wrap a posix instance and behave,
// faulty with error_rate 0, latency with 10us). Plugins built on MPI run in
// a singleton MPI process (one rank). Files go to a fresh folder under the
// temporary directory ($TMPDIR or /tmp; keep it on a real file system such
// as ext4 so O_DIRECT alignment is enforced); a back end on a server
// (IOMIMIC_CAP_ENDPOINT) writes under a fresh prefix of the bucket --root
// gave it instead, and what a case wrote there is removed after it. Back
// ends that keep objects (capabilities().objects, storage.h) are held to
// that contract where it differs from files: folders are prefixes that
// exist while something is under them, and read-write opens may be refused.

#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "conformance.h"
#include "iomimic/forwarding_storage.h"
#include "iomimic/iomimic.h"
#include "iomimic/testing/posix_test_storage.h"
#include "plugin/registry.h"

namespace {

namespace fs = std::filesystem;
using iomimic::AccessHint;
using iomimic::File;
using iomimic::OpenMode;
using iomimic::ReadRequest;
using iomimic::Result;
using iomimic::Status;
using iomimic::Storage;
using iomimic::plugin::Kind;
using iomimic::plugin::PluginInfo;

constexpr std::size_t kMiB = 1024 * 1024;

using iomimic::conformance::TheRegistry;

const std::vector<PluginInfo>& Plugins() {
  return iomimic::conformance::PluginsUnderTest(Kind::kStorage);
}

// A back end ready for the cases, opened as the core opens one
// (plugin::StorageStack): a decorator over the back end it wraps.
struct Instance {
  iomimic::plugin::StorageStack stack;
  Storage* storage = nullptr;
};

// The options a plugin declares for the suite (its descriptor's
// conformance_options, "key=value,..."): a decorator's "inner" (default
// posix) and whatever makes it behave (faulty: error_rate 0; latency: 10us).
std::map<std::string, std::string> OptionsFor(const PluginInfo& info) {
  std::map<std::string, std::string> out;
  std::stringstream items(info.conformance_options);
  std::string item;
  while (std::getline(items, item, ',')) {
    if (item.empty()) continue;
    const std::size_t eq = item.find('=');
    REQUIRE_MESSAGE(eq != std::string::npos,
                    "conformance_options item '" << item << "' is not key=value");
    out[item.substr(0, eq)] = item.substr(eq + 1);
  }
  return out;
}

// The descriptor flags of the plugin whose capabilities() `info`'s plugin
// reports: its own, or for a decorator those of the back end it wraps.
std::uint64_t FlagsOfWhatRuns(const PluginInfo& info) {
  if ((info.capabilities & IOMIMIC_CAP_DECORATOR) == 0) return info.capabilities;
  const std::map<std::string, std::string> options = OptionsFor(info);
  const auto inner = options.find("inner");
  Result<PluginInfo> wrapped =
      TheRegistry().Find(Kind::kStorage, inner == options.end() ? "posix" : inner->second);
  REQUIRE_MESSAGE(wrapped.ok(), wrapped.status().ToString());
  return FlagsOfWhatRuns(*wrapped);
}

Instance Create(const PluginInfo& info) {
  Result<iomimic::plugin::StorageStack> made = iomimic::plugin::StorageStack::Open(
      TheRegistry(), info.name, OptionsFor(info), /*rank=*/0, /*world_size=*/1);
  REQUIRE_MESSAGE(made.ok(), made.status().ToString());
  Instance out;
  out.stack = std::move(made).value();
  out.storage = out.stack.top();
  return out;
}

using iomimic::testing::TempDir;

// A back end on a server, seen through a recorder of what the cases write,
// so that it is removed afterwards (the bucket is not the suite's to empty).
class RecordingStorage final : public iomimic::ForwardingStorage {
 public:
  explicit RecordingStorage(Storage* inner) : ForwardingStorage(inner), inner_(inner) {}
  // Removes every file a case wrote and left (best effort: the cases are
  // judged already).
  ~RecordingStorage() override {
    for (const std::string& path : written_) {
      Result<iomimic::FileInfo> st = inner_->Stat(path);
      if (st.ok() && !st->is_directory) (void)inner_->Remove(path);
    }
  }
  std::string name() const override { return inner_->name(); }
  Result<std::unique_ptr<File>> Open(const std::string& path,
                                     const iomimic::OpenOptions& options) override {
    if (options.mode != OpenMode::kRead) Record(path);
    return ForwardingStorage::Open(path, options);
  }
  Status Rename(const std::string& from, const std::string& to) override {
    Record(to);
    return ForwardingStorage::Rename(from, to);
  }

 private:
  void Record(const std::string& path) {
    std::lock_guard lock(mutex_);
    written_.insert(path);
  }
  Storage* inner_;
  std::mutex mutex_;
  std::set<std::string> written_;
};

// A folder of its own for each case under `root` (a bucket, or bucket/prefix).
fs::path FolderUnder(const std::string& root) {
  static std::atomic<int> cases{0};
  return fs::path(root) /
         ("iomimic-conformance-" + std::to_string(::getpid()) + "-" + std::to_string(++cases));
}

// Runs `body(storage, info, folder)` for every plugin under test, each in a
// fresh folder, with the plugin's name in every failure report.
template <typename Body>
void ForEachStorage(Body&& body) {
  if (Plugins().empty() && iomimic::conformance::AnyPluginUnderTest()) return;  // formats only
  REQUIRE_FALSE(Plugins().empty());
  for (const PluginInfo& info : Plugins()) {
    INFO("storage plugin '" << info.name << "'");
    Instance instance = Create(info);
    const std::string root = iomimic::conformance::RootFor(info);
    if (!root.empty()) {
      INFO("under " << root);
      RecordingStorage recorder(instance.storage);
      const fs::path dir = FolderUnder(root);
      const Status made = recorder.CreateDirectories(dir.string());
      REQUIRE_MESSAGE(made.ok(), made.ToString());
      body(recorder, info, dir);
      continue;
    }
    TempDir dir;
    // The folder exists on the machine; a back end that keeps its own
    // namespace (an in-memory one) learns of it the way the core tells it.
    REQUIRE(instance.storage->CreateDirectories(dir.path().string()).ok());
    body(*instance.storage, info, dir.path());
  }
}

std::vector<std::byte> Pattern(std::size_t n, std::uint64_t seed) {
  std::vector<std::byte> out(n);
  iomimic::Xoshiro256(seed).Fill(out);
  return out;
}

std::unique_ptr<File> OpenOk(Storage& s, const std::string& path, OpenMode mode,
                             AccessHint hint = AccessHint::kNormal) {
  iomimic::OpenOptions options;
  options.mode = mode;
  options.hint = hint;
  Result<std::unique_ptr<File>> f = s.Open(path, options);
  REQUIRE_MESSAGE(f.ok(), f.status().ToString());
  return std::move(f).value();
}

void WriteFile(Storage& s, const std::string& path, const std::vector<std::byte>& data) {
  std::unique_ptr<File> f = OpenOk(s, path, OpenMode::kWrite);
  Status w = f->WriteAt(0, data);
  REQUIRE_MESSAGE(w.ok(), w.ToString());
  Status c = f->Close();
  REQUIRE_MESSAGE(c.ok(), c.ToString());
}

// Reads the whole file in one request (into a misaligned buffer when asked).
std::vector<std::byte> ReadFile(Storage& s, const std::string& path, bool misaligned = false) {
  std::unique_ptr<File> f = OpenOk(s, path, OpenMode::kRead, AccessHint::kWholeFile);
  Result<std::uint64_t> size = f->Size();
  REQUIRE_MESSAGE(size.ok(), size.status().ToString());
  std::vector<std::byte> raw(*size + 1 + 16);
  std::span<std::byte> dst(raw.data() + (misaligned ? 1 : 0), *size + 16);
  Result<std::size_t> n = f->ReadAt(0, dst);
  REQUIRE_MESSAGE(n.ok(), n.status().ToString());
  REQUIRE(*n == *size);
  return std::vector<std::byte>(dst.begin(), dst.begin() + static_cast<std::ptrdiff_t>(*n));
}

bool Mentions(const Status& s, const std::string& path) {
  return s.message().find(path) != std::string::npos;
}

}  // namespace

TEST_CASE("storage conformance: name and capabilities are coherent") {
  ForEachStorage([](Storage& s, const PluginInfo& info, const fs::path&) {
    CHECK(s.name() == info.name);
    const iomimic::StorageCapabilities caps = s.capabilities();
    CHECK(caps.alignment >= 1);
    CHECK((caps.alignment & (caps.alignment - 1)) == 0);
    CHECK_FALSE(caps.data_path.empty());
    CHECK(caps.queue_depth >= 1);
    // capabilities() claims nothing the descriptor's flags do not allow
    // (iomimic::CapabilitiesAllowedBy); a decorator's are those of the back
    // end it wraps.
    const iomimic::StorageCapabilities allowed =
        iomimic::CapabilitiesAllowedBy(FlagsOfWhatRuns(info));
    if (!allowed.async) CHECK_FALSE(caps.async);
    if (!allowed.collective) CHECK_FALSE(caps.collective);
    if (!allowed.device_memory) CHECK_FALSE(caps.device_memory);
  });
}

TEST_CASE("storage conformance: CreateDirectories makes parents and accepts existing ones") {
  ForEachStorage([](Storage& s, const PluginInfo&, const fs::path& dir) {
    const std::string deep = (dir / "a" / "b" / "c").string();
    REQUIRE(s.CreateDirectories(deep).ok());
    CHECK(s.CreateDirectories(deep).ok());
    CHECK(s.CreateDirectories((dir / "a").string()).ok());
    // Objects: a folder is a prefix, which exists once something is under it.
    const bool objects = s.capabilities().objects;
    if (!objects) {
      Result<iomimic::FileInfo> st = s.Stat(deep);
      REQUIRE(st.ok());
      CHECK(st->is_directory);
    }
    WriteFile(s, deep + "/f.bin", Pattern(10, 1));
    CHECK(s.Stat(deep + "/f.bin")->size == 10);
    for (const std::string& folder : {deep, (dir / "a").string()}) {
      CAPTURE(folder);
      Result<iomimic::FileInfo> st = s.Stat(folder);
      REQUIRE_MESSAGE(st.ok(), st.status().ToString());
      CHECK(st->is_directory);
    }
  });
}

TEST_CASE("storage conformance: odd sizes and offsets read back exactly") {
  ForEachStorage([](Storage& s, const PluginInfo&, const fs::path& dir) {
    for (std::size_t size : {std::size_t{1}, std::size_t{511}, std::size_t{4097}, kMiB + 3}) {
      CAPTURE(size);
      // (Built in steps: GCC 12 warns falsely about "s" + std::to_string().)
      std::string name = std::to_string(size);
      name += ".bin";
      const std::string path = (dir / name).string();
      const std::vector<std::byte> data = Pattern(size, size);
      WriteFile(s, path, data);
      CHECK(s.Stat(path)->size == size);
      CHECK(ReadFile(s, path) == data);
      CHECK(ReadFile(s, path, /*misaligned=*/true) == data);
    }
    // Pieces written out of order at odd offsets, then read at odd offsets.
    const std::string path = (dir / "pieces.bin").string();
    const std::size_t total = 4608 + kMiB + 3;
    const std::vector<std::byte> data = Pattern(total, 99);
    {
      std::unique_ptr<File> f = OpenOk(s, path, OpenMode::kWrite);
      const std::pair<std::size_t, std::size_t> pieces[] = {
          {4097, 511}, {0, 1}, {4608, kMiB + 3}, {1, 4096}};
      for (const auto& piece : pieces) {
        // Named, not a structured binding: CAPTURE's lambda cannot capture
        // those before clang 16.
        const std::size_t off = piece.first;
        const std::size_t len = piece.second;
        CAPTURE(off);
        Status w = f->WriteAt(off, std::span<const std::byte>(data).subspan(off, len));
        REQUIRE_MESSAGE(w.ok(), w.ToString());
      }
      CHECK(*f->Size() == total);
      REQUIRE(f->Close().ok());
    }
    CHECK(s.Stat(path)->size == total);
    std::unique_ptr<File> f = OpenOk(s, path, OpenMode::kRead, AccessHint::kRandom);
    std::vector<std::byte> raw(kMiB + 64);
    for (std::uint64_t off : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{511},
                              std::uint64_t{4097}, std::uint64_t{kMiB - 1}}) {
      for (std::size_t len : {std::size_t{1}, std::size_t{511}, std::size_t{4097}, kMiB + 3}) {
        CAPTURE(off);
        CAPTURE(len);
        std::span<std::byte> dst(raw.data() + 3, std::min(len, raw.size() - 3));
        Result<std::size_t> n = f->ReadAt(off, dst);
        REQUIRE_MESSAGE(n.ok(), n.status().ToString());
        const std::size_t expect = std::min<std::size_t>(dst.size(), total - off);
        REQUIRE(*n == expect);
        CHECK(std::memcmp(dst.data(), data.data() + off, expect) == 0);
      }
    }
  });
}

TEST_CASE("storage conformance: ReadBatch fills many requests, past the end included") {
  ForEachStorage([](Storage& s, const PluginInfo&, const fs::path& dir) {
    const std::size_t size = 3 * kMiB / 2 + 17;
    const std::string path = (dir / "batch.bin").string();
    const std::vector<std::byte> data = Pattern(size, 5);
    WriteFile(s, path, data);
    std::unique_ptr<File> f = OpenOk(s, path, OpenMode::kRead, AccessHint::kRandom);
    std::vector<std::vector<std::byte>> bufs;
    std::vector<ReadRequest> reqs;
    for (std::size_t i = 0; i < 96; ++i) {
      std::uint64_t off = (i * 104729) % (size + 70000);
      std::size_t len = 1 + (i * 7919) % 70000;
      if (i % 8 == 0) {
        off = (i / 8) * 65536;  // aligned ones
        len = 65536;
      }
      if (i == 95) off = size - 5;  // straddles the end
      bufs.emplace_back(len);
      ReadRequest r;
      r.offset = off;
      reqs.push_back(r);
    }
    for (std::size_t i = 0; i < reqs.size(); ++i) reqs[i].destination = bufs[i];
    Status batch = f->ReadBatch(reqs);
    REQUIRE_MESSAGE(batch.ok(), batch.ToString());
    for (std::size_t i = 0; i < reqs.size(); ++i) {
      CAPTURE(i);
      const ReadRequest& r = reqs[i];
      CHECK(r.status.ok());
      const std::size_t expect =
          r.offset >= size ? 0 : std::min<std::size_t>(r.destination.size(), size - r.offset);
      REQUIRE(r.bytes_read == expect);
      if (expect > 0) CHECK(std::memcmp(r.destination.data(), data.data() + r.offset, expect) == 0);
    }
    std::span<ReadRequest> none;
    CHECK(f->ReadBatch(none).ok());
  });
}

TEST_CASE("storage conformance: Size, Sync, truncation and read-write opens") {
  ForEachStorage([](Storage& s, const PluginInfo&, const fs::path& dir) {
    const std::string path = (dir / "size.bin").string();
    {
      std::unique_ptr<File> f = OpenOk(s, path, OpenMode::kWrite);
      CHECK(*f->Size() == 0);
      REQUIRE(f->WriteAt(100, Pattern(50, 1)).ok());
      CHECK(*f->Size() == 150);
      REQUIRE(f->WriteAt(0, Pattern(100, 2)).ok());
      Status sync = f->Sync();
      CHECK_MESSAGE(sync.ok(), sync.ToString());
      CHECK(*f->Size() == 150);
      REQUIRE(f->Close().ok());
    }
    CHECK(s.Stat(path)->size == 150);
    if (s.capabilities().objects) {
      // Objects are written whole, then read: a back end may refuse
      // read-write opens, saying so and naming the object.
      Result<std::unique_ptr<File>> rw = s.Open(path, {OpenMode::kReadWrite});
      if (!rw.ok()) {
        CHECK(rw.status().code() == iomimic::StatusCode::kNotSupported);
        CHECK(Mentions(rw.status(), path));
        WriteFile(s, path, Pattern(7, 5));
        CHECK(ReadFile(s, path) == Pattern(7, 5));
        return;
      }
    }
    {
      // kReadWrite keeps the content; writes in the middle and past the end.
      std::unique_ptr<File> f = OpenOk(s, path, OpenMode::kReadWrite);
      CHECK(*f->Size() == 150);
      REQUIRE(f->WriteAt(10, Pattern(5, 3)).ok());
      REQUIRE(f->WriteAt(200, Pattern(5, 4)).ok());
      CHECK(*f->Size() == 205);
      std::vector<std::byte> back(205);
      CHECK(*f->ReadAt(0, back) == 205);
      CHECK(std::memcmp(back.data() + 10, Pattern(5, 3).data(), 5) == 0);
      CHECK(std::all_of(back.begin() + 150, back.begin() + 200,
                        [](std::byte b) { return b == std::byte{0}; }));
      REQUIRE(f->Close().ok());
    }
    std::vector<std::byte> expect = Pattern(100, 2);
    const auto tail = Pattern(50, 1);
    expect.insert(expect.end(), tail.begin(), tail.end());
    std::memcpy(expect.data() + 10, Pattern(5, 3).data(), 5);
    expect.resize(200, std::byte{0});
    const auto end = Pattern(5, 4);
    expect.insert(expect.end(), end.begin(), end.end());
    CHECK(ReadFile(s, path) == expect);
    // kWrite truncates an existing file.
    WriteFile(s, path, Pattern(7, 5));
    CHECK(s.Stat(path)->size == 7);
    CHECK(ReadFile(s, path) == Pattern(7, 5));
  });
}

TEST_CASE("storage conformance: WriteAtAll writes its range, an empty range nothing") {
  ForEachStorage([](Storage& s, const PluginInfo&, const fs::path& dir) {
    const std::string path = (dir / "all.bin").string();
    std::unique_ptr<File> f = OpenOk(s, path, OpenMode::kWrite);
    Status w = f->WriteAtAll(1001, Pattern(3001, 7));
    REQUIRE_MESSAGE(w.ok(), w.ToString());
    REQUIRE(f->WriteAtAll(5, {}).ok());
    REQUIRE(f->WriteAtAll(0, Pattern(1001, 8)).ok());
    REQUIRE(f->Close().ok());
    std::vector<std::byte> expect = Pattern(1001, 8);
    const std::vector<std::byte> rest = Pattern(3001, 7);
    expect.insert(expect.end(), rest.begin(), rest.end());
    CHECK(ReadFile(s, path) == expect);
  });
}

TEST_CASE("storage conformance: Stat of a file, a directory and a missing path") {
  ForEachStorage([](Storage& s, const PluginInfo&, const fs::path& dir) {
    const std::string file = (dir / "st.bin").string();
    WriteFile(s, file, Pattern(4097, 1));
    Result<iomimic::FileInfo> f = s.Stat(file);
    REQUIRE(f.ok());
    CHECK(f->size == 4097);
    CHECK_FALSE(f->is_directory);
    Result<iomimic::FileInfo> d = s.Stat(dir.string());
    REQUIRE(d.ok());
    CHECK(d->is_directory);
    const std::string missing = (dir / "missing.bin").string();
    Result<iomimic::FileInfo> m = s.Stat(missing);
    REQUIRE_FALSE(m.ok());
    CHECK(m.status().IsNotFound());
    CHECK(Mentions(m.status(), missing));
  });
}

TEST_CASE("storage conformance: opening a missing file for reading is NotFound") {
  ForEachStorage([](Storage& s, const PluginInfo&, const fs::path& dir) {
    const std::string missing = (dir / "nope" / "x.npz").string();
    Result<std::unique_ptr<File>> f = s.Open(missing, {OpenMode::kRead});
    REQUIRE_FALSE(f.ok());
    CHECK(f.status().IsNotFound());
    CHECK(Mentions(f.status(), missing));
  });
}

TEST_CASE("storage conformance: reads at or past the end return 0 bytes, across it short") {
  ForEachStorage([](Storage& s, const PluginInfo&, const fs::path& dir) {
    const std::string path = (dir / "end.bin").string();
    const std::vector<std::byte> data = Pattern(5000, 8);
    WriteFile(s, path, data);
    std::unique_ptr<File> f = OpenOk(s, path, OpenMode::kRead);
    std::vector<std::byte> buf(8192);
    CHECK(*f->ReadAt(5000, buf) == 0);
    CHECK(*f->ReadAt(5001, buf) == 0);
    CHECK(*f->ReadAt(std::uint64_t{1} << 40, buf) == 0);
    Result<std::size_t> n = f->ReadAt(4000, buf);
    REQUIRE(n.ok());
    CHECK(*n == 1000);
    CHECK(std::memcmp(buf.data(), data.data() + 4000, 1000) == 0);
    CHECK(*f->ReadAt(0, std::span<std::byte>()) == 0);
    // An empty file.
    const std::string empty = (dir / "empty.bin").string();
    WriteFile(s, empty, {});
    CHECK(s.Stat(empty)->size == 0);
    std::unique_ptr<File> e = OpenOk(s, empty, OpenMode::kRead);
    CHECK(*e->ReadAt(0, buf) == 0);
    CHECK(*e->Size() == 0);
  });
}

TEST_CASE("storage conformance: Rename replaces the target, Remove removes") {
  ForEachStorage([](Storage& s, const PluginInfo&, const fs::path& dir) {
    const std::string a = (dir / ".a.bin.iomimic-partial").string();
    const std::string b = (dir / "a.bin").string();
    WriteFile(s, b, Pattern(10, 1));
    WriteFile(s, a, Pattern(20, 2));
    REQUIRE(s.Rename(a, b).ok());
    CHECK(s.Stat(a).status().IsNotFound());
    CHECK(s.Stat(b)->size == 20);
    CHECK(ReadFile(s, b) == Pattern(20, 2));
    Status missing = s.Rename(a, b);
    CHECK_FALSE(missing.ok());
    CHECK(Mentions(missing, a));
    REQUIRE(s.Remove(b).ok());
    CHECK(s.Stat(b).status().IsNotFound());
    Status again = s.Remove(b);
    CHECK(again.IsNotFound());
    CHECK(Mentions(again, b));
  });
}

TEST_CASE("storage conformance: 8 concurrent readers of one file, each with its own File") {
  ForEachStorage([](Storage& s, const PluginInfo&, const fs::path& dir) {
    const std::size_t size = 2 * kMiB + 12345;
    const std::string path = (dir / "shared.bin").string();
    const std::vector<std::byte> data = Pattern(size, 77);
    WriteFile(s, path, data);
    std::atomic<int> failures{0};
    std::atomic<int> reads{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&, t] {
        Result<std::unique_ptr<File>> f = s.Open(path, {OpenMode::kRead, AccessHint::kRandom});
        if (!f.ok()) {
          ++failures;
          return;
        }
        std::vector<std::byte> buf(300000);
        iomimic::Xoshiro256 rng(static_cast<std::uint64_t>(t) + 1);
        for (int i = 0; i < 40; ++i) {
          const std::uint64_t off = rng.Next() % size;
          const std::size_t len = 1 + rng.Next() % (buf.size() - 1);
          const std::size_t shift = static_cast<std::size_t>(i % 2);
          std::span<std::byte> dst(buf.data() + shift, len);
          Result<std::size_t> n = (*f)->ReadAt(off, dst);
          const std::size_t expect = std::min<std::size_t>(len, size - off);
          if (!n.ok() || *n != expect || std::memcmp(dst.data(), data.data() + off, expect) != 0) {
            ++failures;
          }
          ++reads;
        }
      });
    }
    for (std::thread& t : threads) t.join();
    CHECK(reads.load() == 8 * 40);
    CHECK(failures.load() == 0);
  });
}

TEST_CASE("storage conformance: Allocate returns buffers aligned to capabilities().alignment") {
  ForEachStorage([](Storage& s, const PluginInfo&, const fs::path& dir) {
    const iomimic::StorageCapabilities caps = s.capabilities();
    for (std::size_t size : {std::size_t{1}, std::size_t{4097}, kMiB}) {
      CAPTURE(size);
      Result<iomimic::Buffer> b = s.Allocate(size);
      REQUIRE_MESSAGE(b.ok(), b.status().ToString());
      CHECK(b->size() == size);
      CHECK(reinterpret_cast<std::uintptr_t>(b->data()) % caps.alignment == 0);
      CHECK(b->host_accessible() == !caps.device_memory);
    }
    Result<iomimic::Buffer> zero = s.Allocate(0);
    REQUIRE(zero.ok());
    CHECK(zero->empty());
    if (caps.device_memory) return;
    // A whole-file read into an Allocate buffer, then the same file in
    // 256 KiB requests (the npz reader's transfer size) into it.
    const std::size_t size = 4 * kMiB + 5;
    const std::string path = (dir / "whole.bin").string();
    const std::vector<std::byte> data = Pattern(size, 4);
    WriteFile(s, path, data);
    Result<iomimic::Buffer> buffer = s.Allocate(size);
    REQUIRE(buffer.ok());
    std::unique_ptr<File> f = OpenOk(s, path, OpenMode::kRead, AccessHint::kWholeFile);
    Result<std::size_t> n = f->ReadAt(0, buffer->span());
    REQUIRE_MESSAGE(n.ok(), n.status().ToString());
    CHECK(*n == size);
    CHECK(std::memcmp(buffer->data(), data.data(), size) == 0);
    std::memset(buffer->data(), 0, size);
    constexpr std::size_t kTransfer = 256 * 1024;
    for (std::size_t off = 0; off < size; off += kTransfer) {
      const std::size_t len = std::min(kTransfer, size - off);
      Result<std::size_t> m = f->ReadAt(off, buffer->span().subspan(off, len));
      REQUIRE(m.ok());
      REQUIRE(*m == len);
    }
    CHECK(std::memcmp(buffer->data(), data.data(), size) == 0);
  });
}

TEST_CASE("storage conformance: errors name the path, closed files refuse further calls") {
  ForEachStorage([](Storage& s, const PluginInfo&, const fs::path& dir) {
    const std::string path = (dir / "closed.bin").string();
    WriteFile(s, path, Pattern(100, 1));
    std::unique_ptr<File> f = OpenOk(s, path, OpenMode::kRead);
    CHECK(f->path() == path);
    REQUIRE(f->Close().ok());
    CHECK(f->Close().ok());  // a second Close is harmless
    std::vector<std::byte> buf(10);
    Result<std::size_t> r = f->ReadAt(0, buf);
    REQUIRE_FALSE(r.ok());
    CHECK(Mentions(r.status(), path));
    std::unique_ptr<File> w = OpenOk(s, (dir / "w.bin").string(), OpenMode::kWrite);
    REQUIRE(w->Close().ok());
    Status wr = w->WriteAt(0, buf);
    REQUIRE_FALSE(wr.ok());
    CHECK(Mentions(wr, (dir / "w.bin").string()));
    // Writing below a missing folder names the file (objects have no
    // folders to miss).
    if (s.capabilities().objects) return;
    const std::string orphan = (dir / "no-such-dir" / "f.bin").string();
    Result<std::unique_ptr<File>> o = s.Open(orphan, {OpenMode::kWrite});
    REQUIRE_FALSE(o.ok());
    CHECK(Mentions(o.status(), orphan));
  });
}
