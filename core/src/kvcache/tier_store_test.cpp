#include "kvcache/tier_store.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "iomimic/forwarding_storage.h"
#include "iomimic/testing/memory_storage.h"

namespace iomimic::kvcache {
namespace {

// A storage that refuses deletes, as an append-only back end would.
class NoDeleteStorage final : public testing::MemoryStorage {
 public:
  std::string name() const override { return "appendonly"; }
  Status Remove(const std::string&) override { return Status::NotSupported("no deletes"); }
};

// An accelerator whose "device" buffers hold every byte XOR 0x5A (host
// memory underneath): only CopyIntoBuffer and CopyOutOfBuffer see the
// entry's bytes, so a tier store that touched device memory directly would
// move wrong ones. Allocations beyond `limit` bytes in all fail.
class ScrambledDevice final : public ForwardingStorage {
 public:
  explicit ScrambledDevice(Storage* inner, std::uint64_t limit = ~0ull)
      : ForwardingStorage(inner), limit_(limit) {}
  std::string name() const override { return "scrambled"; }
  Result<Buffer> Allocate(std::size_t size) override {
    if (size > limit_ - allocated) {
      return Status::ResourceExhausted("out of device memory for " + std::to_string(size));
    }
    allocated += size;
    ++allocations;
    return Buffer(
        std::malloc(size), size, [](void*, void* p, std::size_t) { std::free(p); }, nullptr,
        MemoryKind::kDevice);
  }
  Status CopyIntoBuffer(Buffer& to, std::size_t offset, std::span<const std::byte> from) override {
    IOMIMIC_RETURN_IF_ERROR(CheckBufferRange(to, offset, from.size(), "scrambled"));
    for (std::size_t i = 0; i < from.size(); ++i) to.data()[offset + i] = from[i] ^ kKey;
    copies_in += from.size();
    return Status::OK();
  }
  Status CopyOutOfBuffer(const Buffer& from, std::size_t offset, std::span<std::byte> to) override {
    IOMIMIC_RETURN_IF_ERROR(CheckBufferRange(from, offset, to.size(), "scrambled"));
    for (std::size_t i = 0; i < to.size(); ++i) to[i] = from.data()[offset + i] ^ kKey;
    copies_out += to.size();
    return Status::OK();
  }

  static constexpr std::byte kKey{0x5A};
  std::uint64_t allocated = 0, allocations = 0, copies_in = 0, copies_out = 0;

 private:
  std::uint64_t limit_;
};

// An object store in memory: an object being written appears whole at
// Close (one PUT); Abort leaves nothing, as a cancelled upload.
class ObjectStorage final : public ForwardingStorage {
 public:
  explicit ObjectStorage(Storage* inner) : ForwardingStorage(inner), inner_(inner) {}
  std::string name() const override { return "objects"; }
  StorageCapabilities capabilities() const override {
    StorageCapabilities caps = ForwardingStorage::capabilities();
    caps.objects = true;
    return caps;
  }
  Result<FileInfo> Stat(const std::string& path) override {
    ++stats;
    return ForwardingStorage::Stat(path);
  }
  Result<std::unique_ptr<File>> Open(const std::string& path, const OpenOptions& options) override {
    if (options.mode != OpenMode::kWrite) return ForwardingStorage::Open(path, options);
    return std::unique_ptr<File>(std::make_unique<Upload>(inner_, path));
  }

 private:
  class Upload final : public File {
   public:
    Upload(Storage* inner, std::string path) : inner_(inner), path_(std::move(path)) {}
    Result<std::size_t> ReadAt(std::uint64_t, std::span<std::byte>) override {
      return Status::NotSupported("upload");
    }
    Status WriteAt(std::uint64_t offset, std::span<const std::byte> source) override {
      if (offset + source.size() > staged_.size()) staged_.resize(offset + source.size());
      std::memcpy(staged_.data() + offset, source.data(), source.size());
      return Status::OK();
    }
    Status Sync() override { return Status::OK(); }
    Result<std::uint64_t> Size() override { return staged_.size(); }
    Status Close() override {  // the PUT
      OpenOptions o;
      o.mode = OpenMode::kWrite;
      IOMIMIC_ASSIGN_OR_RETURN(std::unique_ptr<File> file, inner_->Open(path_, o));
      IOMIMIC_RETURN_IF_ERROR(file->WriteAt(0, staged_));
      return file->Close();
    }
    Status Abort() override { return Status::OK(); }
    const std::string& path() const override { return path_; }

   private:
    Storage* inner_;
    std::string path_;
    std::vector<std::byte> staged_;
  };
  Storage* inner_;

 public:
  int stats = 0;  // Stat calls (a HEAD each on an object store)
};

StoreOptions Options(const ModelSpec* model, std::uint64_t transfer = 4096) {
  StoreOptions o;
  o.folder = "kv/rank_0";
  o.transfer_size = transfer;
  o.model = model;
  o.content_seed = 7;
  return o;
}

}  // namespace

TEST_CASE("kvcache tier store: a storage entry is a .npy object of unique 4 KiB blocks") {
  const ModelSpec* model = *FindModel("tiny-1b");
  testing::MemoryStorage storage;
  TierStore store(storage, Options(model));
  TierStore::WorkerBuffer wb;
  const std::uint64_t bytes = EntryBytes(*model, 10, 1);  // 245760 bytes, 60 blocks
  OpTiming t;
  REQUIRE(store.WriteNew(Tier::kStorage, "a", bytes, wb, &t).ok());
  REQUIRE(store.WriteNew(Tier::kStorage, "b", bytes, wb, &t).ok());
  const std::vector<std::byte> a = storage.Bytes("kv/rank_0/a.npy");
  const std::vector<std::byte> b = storage.Bytes("kv/rank_0/b.npy");
  REQUIRE(a.size() == kNpyHeaderBytes + bytes);
  const std::string header(reinterpret_cast<const char*>(a.data()), kNpyHeaderBytes);
  CHECK(header == NpyHeader({12, 2, 10, 4, 128}));
  std::set<std::string> blocks;
  for (const auto* file : {&a, &b}) {
    for (std::size_t at = kNpyHeaderBytes; at + 4096 <= file->size(); at += 4096) {
      blocks.insert(std::string(reinterpret_cast<const char*>(file->data()) + at, 4096));
    }
  }
  CHECK(blocks.size() == 2 * (bytes / 4096));  // no block repeats, within or across entries
  CHECK(t.total >= t.device);
  OpTiming r;
  REQUIRE(store.Read(Tier::kStorage, "a", bytes, wb, &r).ok());
  CHECK(r.total >= r.device);
}

// Payload bytes [offset, offset + n) of `entry`, filled in pieces of odd
// sizes (a fill must not depend on how a range is split).
std::vector<std::byte> FillInPieces(const EntryContent& content, std::uint64_t entry,
                                    std::uint64_t offset, std::size_t n) {
  std::vector<std::byte> pieces(n);
  for (std::size_t at = 0, step = 1; at < n; at += step, step = step * 7 % 65521 + 1) {
    const std::size_t k = std::min(step, n - at);
    content.Fill(entry, offset + at, std::span<std::byte>(pieces).subspan(at, k));
  }
  return pieces;
}

TEST_CASE("kvcache entry content: the pattern XOR a word per 4 KiB block, however it is split") {
  const EntryContent content(11);
  std::vector<std::byte> pattern(EntryContent::kPatternBytes);
  ContentStream(11).Fill(pattern);
  const std::uint64_t entry = content.EntryKey("c00ff");
  CHECK(entry == MixSeed(11, NameHash("c00ff")));
  CHECK(NameHash("") == 14695981039346656037ULL);
  // 600 KiB + 5 from payload offset 3: crosses the pattern's end twice.
  const std::size_t n = 600 * 1024 + 5;
  std::vector<std::byte> whole(n);
  content.Fill(entry, 3, whole);
  for (std::size_t i = 0; i < n; i += 997) {
    const std::uint64_t p = 3 + i;
    const std::uint64_t word = MixSeed(entry, p / 4096);
    const auto want =
        pattern[p % EntryContent::kPatternBytes] ^ static_cast<std::byte>(word >> (8 * (p % 8)));
    REQUIRE(whole[i] == want);
  }
  // The same bytes in pieces of odd sizes.
  CHECK(FillInPieces(content, entry, 3, n) == whole);
  // No two 4 KiB blocks (of this entry, or of another at the same offsets)
  // share a word at the same place.
  std::vector<std::byte> other(n);
  content.Fill(content.EntryKey("c00fe"), 3, other);
  std::set<std::uint64_t> words;
  for (std::size_t b = 0; b + 4096 <= n - 1; b += 4096) {
    std::uint64_t w1, w2;
    std::memcpy(&w1, whole.data() + b + 1, 8);  // payload offset b + 4: the block's first word
    std::memcpy(&w2, other.data() + b + 1, 8);
    words.insert(w1);
    words.insert(w2);
  }
  CHECK(words.size() == 2 * ((n - 1) / 4096));
}

// Payload byte `p` of entry `entry` with scrambled content, from the
// definition (EntryContent): the pattern, but for each 512-byte sector's
// first 8 bytes, its stamp.
std::byte ScrambledByte(const std::vector<std::byte>& pattern, std::uint64_t entry,
                        std::uint64_t p) {
  if (p % 512 < 8) return static_cast<std::byte>(MixSeed(entry, p / 512) >> (8 * (p % 8)));
  return pattern[p % pattern.size()];
}

TEST_CASE("kvcache entry content scrambled: a 1 MiB pattern, a stamp per 512-byte sector") {
  const EntryContent content(11, true);
  std::vector<std::byte> pattern(EntryContent::kScrambleBytes);
  ContentStream(11).Fill(pattern);
  const std::uint64_t entry = content.EntryKey("c00ff");
  // 2.5 MiB + 5 from payload offset 3: crosses the pattern's end twice.
  const std::size_t n = (5 << 19) + 5;
  std::vector<std::byte> whole(n);
  content.Fill(entry, 3, whole);
  for (std::size_t i = 0; i < n; ++i) {
    if (whole[i] != ScrambledByte(pattern, entry, 3 + i)) {
      FAIL("payload byte " << 3 + i << " differs from the definition");
    }
  }
  CHECK(FillInPieces(content, entry, 3, n) == whole);
  // Every 512-byte sector, of this entry and another, is unique.
  std::vector<std::byte> other(n);
  content.Fill(content.EntryKey("c00fe"), 3, other);
  std::set<std::string> sectors;
  for (const auto* bytes : {&whole, &other}) {
    for (std::size_t at = 509; at + 512 <= n; at += 512) {  // payload offset 512k
      sectors.insert(std::string(reinterpret_cast<const char*>(bytes->data()) + at, 512));
    }
  }
  CHECK(sectors.size() == 2 * ((n - 509) / 512));
}

TEST_CASE("kvcache held content: a buffer that keeps the pattern gets the same bytes") {
  // Writes as TierStore::WriteObject does (a header, the payload, a stamp
  // over its first bytes), with other things written into the buffer in
  // between (a read: Forget), against a fill of every byte.
  const EntryContent content(5, true);
  const std::size_t size = 3 << 20;
  std::vector<std::byte> buffer(size);
  HeldContent held{buffer.data(), buffer.size()};
  content.Hold(128, buffer, &held);
  std::uint64_t state = 99;
  for (int round = 0; round < 60; ++round) {
    const std::uint64_t draw = SplitMix64(state);
    const std::string name = "e" + std::to_string(round % 7);
    const std::uint64_t entry = content.EntryKey(name);
    const std::size_t header = draw % 5 == 0 ? 192 : 128;  // a longer header now and then
    const std::size_t total = header + (draw >> 8) % (size - header) + 1;
    const std::uint64_t later = (draw >> 40) % 3;  // a later transfer of a longer object
    std::uint64_t offset = 0;
    std::size_t at = 0;
    if (later == 0) {
      std::memset(buffer.data(), 0x77, header);  // the header
      held.Dirty(0, header);
      at = header;
    } else {
      offset = later * (size - header);  // payload offset of the buffer's byte 0
    }
    std::span<std::byte> body = std::span<std::byte>(buffer).subspan(at, total - at);
    content.Fill(entry, offset, body, &held);
    std::vector<std::byte> want(body.size());
    content.Fill(entry, offset, want);
    REQUIRE(std::equal(body.begin(), body.end(), want.begin()));
    if (later == 0 && body.size() >= kStampBytes) {
      std::memset(body.data(), 0x33, kStampBytes);  // the chunk's stamp
      held.Dirty(at, at + kStampBytes);
    }
    if (draw % 11 == 0) {  // something else (a read) into the buffer
      std::memset(buffer.data() + draw % size / 2, 0x55, size / 3);
      held.Forget();
    }
  }
  // Zeros: a buffer dirtied by a header and a stamp is zero again where
  // the next fill covers it.
  HoldPattern({}, 0, buffer, &held);
  std::memset(buffer.data(), 1, 160);
  held.Dirty(0, 160);
  HoldPattern({}, 0, std::span<std::byte>(buffer).subspan(128, 4096), &held);
  CHECK(std::all_of(buffer.begin() + 128, buffer.begin() + 128 + 4096,
                    [](std::byte b) { return b == std::byte{0}; }));
  CHECK(buffer[127] == std::byte{1});
}

TEST_CASE("kvcache tier store: scrambled and zeros content survive reads into the buffer") {
  const ModelSpec* model = *FindModel("tiny-1b");
  const std::uint64_t bytes = EntryBytes(*model, 10, 1);
  for (const auto kind : {ContentOptions::Kind::kScrambled, ContentOptions::Kind::kZeros}) {
    CAPTURE(static_cast<int>(kind));
    testing::MemoryStorage storage;
    StoreOptions options = Options(model, 64 * 1024);
    options.content.kind = kind;
    options.stamp = true;
    TierStore store(storage, options);
    TierStore::WorkerBuffer wb;
    REQUIRE(store.PrepareBuffer(wb, bytes).ok());
    OpTiming t;
    REQUIRE(store.WriteNew(Tier::kStorage, "a", bytes, wb, &t).ok());
    // Another writer's object under "b"'s name: bytes no content has.
    {
      OpenOptions o;
      o.mode = OpenMode::kWrite;
      std::vector<std::byte> junk(kNpyHeaderBytes + bytes, std::byte{0x5A});
      std::unique_ptr<File> f = std::move(storage.Open("kv/rank_0/b.npy", o)).value();
      REQUIRE(f->WriteAt(0, junk).ok());
      REQUIRE(f->Close().ok());
    }
    ChunkStamp writer;
    (void)store.Read(Tier::kStorage, "b", bytes, wb, &t, &writer);  // junk into the buffer
    REQUIRE(store.WriteNew(Tier::kStorage, "c", bytes, wb, &t).ok());
    REQUIRE(store.WriteNew(Tier::kStorage, "d", bytes, wb, &t).ok());
    const EntryContent content(7, true);
    for (const char* name : {"a", "c", "d"}) {
      CAPTURE(name);
      const std::vector<std::byte> file = storage.Bytes(std::string("kv/rank_0/") + name + ".npy");
      REQUIRE(file.size() == kNpyHeaderBytes + bytes);
      std::vector<std::byte> want(bytes);
      if (kind == ContentOptions::Kind::kScrambled) content.Fill(content.EntryKey(name), 0, want);
      // The payload past the chunk's stamp is the content.
      CHECK(std::equal(file.begin() + kNpyHeaderBytes + kStampBytes, file.end(),
                       want.begin() + kStampBytes));
    }
  }
}

TEST_CASE("kvcache tier store: a demotion moves the same bytes, deletes and the end") {
  const ModelSpec* model = *FindModel("tiny-1b");
  testing::MemoryStorage storage;
  TierStore store(storage, Options(model, 65536));
  TierStore::WorkerBuffer wb;
  const std::uint64_t bytes = EntryBytes(*model, 10, 1);
  OpTiming t, read, write;
  REQUIRE(store.WriteNew(Tier::kHost, "m", bytes, wb, &t).ok());
  REQUIRE(store.WriteNew(Tier::kStorage, "direct", bytes, wb, &t).ok());
  REQUIRE(store.Demote(Tier::kHost, Tier::kStorage, "m", bytes, wb, &read, &write).ok());
  // The content depends on the seed and key only: written straight to
  // storage or through the host tier, "m" holds the same bytes.
  testing::MemoryStorage other;
  TierStore direct(other, Options(model, 4096));
  REQUIRE(direct.WriteNew(Tier::kStorage, "m", bytes, wb, &t).ok());
  const std::vector<std::byte> demoted = storage.Bytes("kv/rank_0/m.npy");
  REQUIRE(demoted.size() == kNpyHeaderBytes + bytes);
  CHECK(demoted == other.Bytes("kv/rank_0/m.npy"));
  CHECK(store.Read(Tier::kHost, "m", bytes, wb, &t).code() == StatusCode::kInternal);  // freed
  REQUIRE(store.Delete("direct", wb).ok());
  CHECK_FALSE(storage.Has("kv/rank_0/direct.npy"));
  REQUIRE(store.RemoveAll(false).ok());
  CHECK(storage.Paths().empty());
}

TEST_CASE("kvcache tier store: a storage that refuses deletes is one error naming it") {
  const ModelSpec* model = *FindModel("tiny-1b");
  NoDeleteStorage storage;
  TierStore store(storage, Options(model));
  TierStore::WorkerBuffer wb;
  OpTiming t;
  REQUIRE(store.WriteNew(Tier::kStorage, "x", 4096, wb, &t).ok());
  Status st = store.Delete("x", wb);
  REQUIRE_FALSE(st.ok());
  CHECK(st.message().find("'appendonly' refuses deletes") != std::string::npos);
}

TEST_CASE("kvcache tier store: the end cuts a transfer short and leaves no half object") {
  const ModelSpec* model = *FindModel("tiny-1b");
  testing::MemoryStorage storage;
  std::atomic<bool> cancel{true};
  StoreOptions o = Options(model);
  o.cancel = &cancel;
  TierStore store(storage, o);
  TierStore::WorkerBuffer wb;
  OpTiming t;
  CHECK(store.WriteNew(Tier::kStorage, "x", 1 << 20, wb, &t).code() == StatusCode::kAborted);
  CHECK_FALSE(storage.Has("kv/rank_0/x.npy"));
}

TEST_CASE("kvcache tier store: a cut-short upload to a shared object store keeps the object") {
  // Writer A publishes x whole; writer B's upload of x is cut short. On an
  // object store B's aborted upload leaves nothing, and A's object stays.
  const ModelSpec* model = *FindModel("tiny-1b");
  testing::MemoryStorage memory;
  ObjectStorage storage(&memory);
  StoreOptions o = Options(model);
  o.folder = "kv/shared";
  o.publish_tag = "r0-1";
  TierStore a(storage, o);
  TierStore::WorkerBuffer wb;
  OpTiming t;
  REQUIRE(a.WriteNew(Tier::kStorage, "x", 1 << 20, wb, &t).ok());
  const std::vector<std::byte> whole = memory.Bytes("kv/shared/x.npy");
  REQUIRE(whole.size() == a.header_bytes(1 << 20) + (1 << 20));
  std::atomic<bool> cancel{true};
  o.publish_tag = "r1-2";
  o.content_seed = 8;
  o.cancel = &cancel;
  TierStore b(storage, o);
  CHECK(b.WriteNew(Tier::kStorage, "x", 1 << 20, wb, &t).code() == StatusCode::kAborted);
  CHECK(memory.Paths().size() == 1);
  CHECK(memory.Bytes("kv/shared/x.npy") == whole);
}

TEST_CASE("kvcache tier store: an object store's read takes the size from the open") {
  const ModelSpec* model = *FindModel("tiny-1b");
  testing::MemoryStorage memory;
  ObjectStorage storage(&memory);
  TierStore store(storage, Options(model));
  TierStore::WorkerBuffer wb;
  OpTiming t;
  REQUIRE(store.WriteNew(Tier::kStorage, "x", 1 << 16, wb, &t).ok());
  REQUIRE(store.Read(Tier::kStorage, "x", 1 << 16, wb, &t).ok());
  CHECK(storage.stats == 0);  // no HEAD before the GET
  // An object shorter than its entry is still one error naming it.
  Status st = store.Read(Tier::kStorage, "x", 1 << 20, wb, &t);
  CHECK(st.code() == StatusCode::kCorruption);
  CHECK(st.message().find("kv/rank_0/x.npy holds") != std::string::npos);
}

TEST_CASE("kvcache tier store: a device accelerator moves its entries only through the copies") {
  const ModelSpec* model = *FindModel("tiny-1b");
  testing::MemoryStorage storage;
  ScrambledDevice device(&storage);
  StoreOptions o = Options(model, 65536);
  o.accelerator = &device;
  TierStore store(storage, o);
  TierStore::WorkerBuffer wb;
  const std::uint64_t bytes = EntryBytes(*model, 10, 1);  // 245760: four 64 KiB chunks
  OpTiming t, read, write;
  REQUIRE(store.WriteNew(Tier::kAccelerator, "g", bytes, wb, &t).ok());
  REQUIRE(store.WriteNew(Tier::kAccelerator, "h", bytes, wb, &t).ok());
  CHECK(device.allocations == 2);
  CHECK(device.copies_in == 2 * bytes);
  REQUIRE(store.Read(Tier::kAccelerator, "g", bytes, wb, &t).ok());
  CHECK(device.copies_out == bytes);
  // Out of the accelerator to storage, and through the host tier.
  REQUIRE(store.Demote(Tier::kAccelerator, Tier::kStorage, "g", bytes, wb, &read, &write).ok());
  REQUIRE(store.Demote(Tier::kAccelerator, Tier::kHost, "h", bytes, wb, &read, &write).ok());
  // The copies out of the device are the demotion's read, not its write.
  CHECK(read.total > 0);
  CHECK(write.total >= 0);
  REQUIRE(store.Demote(Tier::kHost, Tier::kStorage, "h", bytes, wb, &read, &write).ok());
  CHECK(device.copies_out == 3 * bytes);
  // The same bytes as entries written straight to storage.
  testing::MemoryStorage other;
  TierStore direct(other, Options(model, 4096));
  for (const char* key : {"g", "h"}) {
    REQUIRE(direct.WriteNew(Tier::kStorage, key, bytes, wb, &t).ok());
    const std::string path = std::string("kv/rank_0/") + key + ".npy";
    CHECK(storage.Bytes(path) == other.Bytes(path));
  }
  // Demoted entries left the accelerator.
  CHECK(store.Read(Tier::kAccelerator, "g", bytes, wb, &t).code() == StatusCode::kInternal);
}

TEST_CASE("kvcache tier store: an accelerator out of device memory is one error naming it") {
  const ModelSpec* model = *FindModel("tiny-1b");
  testing::MemoryStorage storage;
  ScrambledDevice device(&storage, 300000);
  StoreOptions o = Options(model);
  o.accelerator = &device;
  TierStore store(storage, o);
  TierStore::WorkerBuffer wb;
  const std::uint64_t bytes = EntryBytes(*model, 10, 1);
  OpTiming t;
  REQUIRE(store.WriteNew(Tier::kAccelerator, "a", bytes, wb, &t).ok());
  Status st = store.WriteNew(Tier::kAccelerator, "b", bytes, wb, &t);
  CHECK(st.code() == StatusCode::kResourceExhausted);
  CHECK(st.message() ==
        "kv_cache: the accelerator tier (scrambled) cannot allocate 245760 bytes for entry b: "
        "out of device memory for 245760");
}

TEST_CASE("kvcache tier store: per-layer parts, the writer's stamp, a copy to another store") {
  const ModelSpec* model = *FindModel("tiny-1b");
  testing::MemoryStorage storage, objects;
  StoreOptions o = Options(model, 8192);
  o.parts = 3;
  o.stamp = true;
  o.writer = {77, 2, 1};
  TierStore store(storage, o);
  StoreOptions oo = o;
  oo.folder = "bucket/kv";
  TierStore lower(objects, oo);
  TierStore::WorkerBuffer wb;
  const std::uint64_t bytes = EntryBytes(*model, 10, 1) + 6;  // not a multiple of 3 parts
  OpTiming t;
  REQUIRE(store.WriteNew(Tier::kStorage, "c1", bytes, wb, &t).ok());
  std::uint64_t payload = 0;
  for (std::uint64_t part = 0; part < 3; ++part) {
    const std::string path = "kv/rank_0/c1.l" + std::to_string(part) + ".npy";
    REQUIRE(storage.Has(path));
    const std::uint64_t n = store.PartBytes(bytes, part);
    CHECK(storage.Bytes(path).size() == store.header_bytes(n) + n);
    payload += n;
  }
  CHECK(payload == bytes);
  std::string scratch;
  CHECK(store.Holds("c1", bytes, &scratch));
  CHECK_FALSE(store.Holds("c1", bytes + 3, &scratch));
  ChunkStamp writer;
  REQUIRE(store.Read(Tier::kStorage, "c1", bytes, wb, &t, &writer).ok());
  CHECK(writer == ChunkStamp{77, 2, 1});
  // Byte for byte to the lower store, the stamp with it.
  OpTiming read, write;
  REQUIRE(store.CopyTo(lower, "c1", wb, &read, &write).ok());
  for (std::uint64_t part = 0; part < 3; ++part) {
    const std::string name = "/c1.l" + std::to_string(part) + ".npy";
    CHECK(objects.Bytes("bucket/kv" + name) == storage.Bytes("kv/rank_0" + name));
  }
  ChunkStamp copied;
  REQUIRE(lower.Read(Tier::kStorage, "c1", bytes, wb, &t, &copied).ok());
  CHECK(copied == writer);
  // An object under another chunk's name is refused, naming it and the offset.
  REQUIRE(store.WriteNew(Tier::kStorage, "c2", bytes, wb, &t).ok());
  storage.SetBytes("kv/rank_0/c2.l0.npy", storage.Bytes("kv/rank_0/c1.l0.npy"));
  Status st = store.Read(Tier::kStorage, "c2", bytes, wb, &t, &writer);
  CHECK(st.code() == StatusCode::kCorruption);
  CHECK(st.message().find("kv/rank_0/c2.l0.npy at offset") != std::string::npos);
  REQUIRE(store.Drop(Tier::kStorage, "c1", wb).ok());
  CHECK_FALSE(storage.Has("kv/rank_0/c1.l2.npy"));
}

}  // namespace iomimic::kvcache
