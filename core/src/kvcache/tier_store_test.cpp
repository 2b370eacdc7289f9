#include "kvcache/tier_store.h"

#include <doctest/doctest.h>

#include <atomic>
#include <cstring>
#include <set>
#include <string>

#include "iomimic/testing/memory_storage.h"

namespace iomimic::kvcache {
namespace {

// A storage that refuses deletes, as an append-only back end would.
class NoDeleteStorage final : public testing::MemoryStorage {
 public:
  std::string name() const override { return "appendonly"; }
  Status Remove(const std::string&) override { return Status::NotSupported("no deletes"); }
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

}  // namespace iomimic::kvcache
