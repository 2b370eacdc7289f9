// Where the KV-cache tiers keep their bytes (docs/kvcache.md, "Tiers"):
//   accelerator  kv_cache.accelerator emulated: host memory owned by the run,
//                each copy taking at least bytes / gpu_copy_gbps (a
//                host-device copy over PCIe), no real device involved;
//                with a device-memory storage plugin (StoreOptions::
//                accelerator): a buffer of it per entry (Allocate), written with
//                CopyIntoBuffer and read with CopyOutOfBuffer through the
//                worker's buffer, freed when the entry leaves the tier;
//   host         host memory owned by the run (real memcpy);
//   storage      one .npy object per entry through the session's storage
//                plugin (any back end or decorator): written whole, then
//                Sync and Close; read with OpenOptions::drop_cache so the
//                bytes come from the storage; deleted with Storage::Remove.
// Every transfer goes through the calling worker's buffer (WorkerBuffer,
// transfer_size bytes, reused), so a request allocates nothing but the
// memory an entry placed in a memory tier needs.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "iomimic/buffer.h"
#include "iomimic/random.h"
#include "iomimic/storage.h"
#include "kvcache/models.h"
#include "kvcache/tier_cache.h"

namespace iomimic::kvcache {

// Seconds one tier operation took: total, and the reference's split into
// device time (storage: the reads; the fsync and close of a write) and host
// time (the rest: stat, open, the writes into the page cache, copies).
struct OpTiming {
  double total = 0;
  double device = 0;
  double host = 0;
};

// Who wrote a storage object (StoreOptions::stamp): the first kStampBytes
// of its payload name the chunk, the run, the rank and the host, so that a
// reader of a store shared by several ranks and runs knows where a hit came
// from and that the object it read is the chunk it asked for.
struct ChunkStamp {
  std::uint64_t run = 0;  // the same on every rank of a run
  std::uint32_t rank = 0;
  std::uint32_t host = 0;  // the cluster's host index
  friend bool operator==(const ChunkStamp&, const ChunkStamp&) = default;
};
inline constexpr std::size_t kStampBytes = 32;

// FNV-1a of an entry's name: the same on every host and build (stamps and
// content key on it).
std::uint64_t NameHash(std::string_view name);

// What a worker's buffer holds between transfers, so that a write of
// repeating content (iomimic.content scrambled or zeros) rewrites only the
// bytes that differ from the last one instead of the whole buffer: bytes
// [valid_begin, valid_end) of the buffer at `base` hold the pattern (or
// zeros), byte i being pattern byte (phase + i) mod its length, except
// [dirty_begin, dirty_end), which something else wrote since (a header, a
// stamp). Whoever writes into the buffer otherwise calls Forget (a read, a
// copy from another tier). Owned by one worker; not thread-safe.
struct HeldContent {
  enum class What : std::uint8_t { kNothing, kPattern, kZeros };
  const std::byte* base = nullptr;  // the buffer's first byte
  std::size_t size = 0;             // and its length
  What what = What::kNothing;
  std::uint64_t phase = 0;
  std::size_t valid_begin = 0, valid_end = 0;
  std::size_t dirty_begin = 0, dirty_end = 0;

  void Forget() { what = What::kNothing; }
  // Bytes [begin, end) of the buffer no longer hold the pattern.
  void Dirty(std::size_t begin, std::size_t end);
  // Whether `out` lies in the buffer.
  bool Covers(std::span<const std::byte> out) const {
    return base != nullptr && out.data() >= base && out.data() + out.size() <= base + size;
  }
};

// Makes `out` (inside `held`'s buffer) hold `pattern` (empty: zeros) from
// position `at` on, repeated, copying only the bytes `held` says differ,
// and records it in `held`. pattern.size() must be a multiple of 8.
void HoldPattern(std::span<const std::byte> pattern, std::uint64_t at, std::span<std::byte> out,
                 HeldContent* held);

// Entries' content with default options or iomimic.content scrambled
// (StoreOptions::content). Default, made as the MLPerf reference makes its
// KV data: one pre-generated random buffer, stamped per entry. Here the
// buffer is the first kPatternBytes of ContentStream(seed), repeated, and
// every 4 KiB block b of an entry's payload is XORed with a 64-bit word of
// its own, MixSeed(MixSeed(seed, NameHash(name)), b) (little-endian,
// repeated), so that no two blocks of any entries share a word at the same
// place: neither compression nor deduplication shrinks them, and a fill is
// one pass over a cache-resident pattern instead of generating every word
// (docs/kvcache.md, "Tiers and eviction"). Scrambled, as fio's default
// buffer: the first kScrambleBytes of ContentStream(seed), repeated, and
// the first 8 bytes of every 512-byte sector j of an entry's payload
// replaced by MixSeed(MixSeed(seed, NameHash(name)), j) (little-endian):
// every sector unique, each piece under 1 MiB incompressible, and a worker
// whose buffer still holds the pattern (HeldContent) writes only the
// stamps. Immutable after construction; Fill may run on many threads.
class EntryContent {
 public:
  static constexpr std::size_t kPatternBytes = 256 * 1024;  // a multiple of 4 KiB
  static constexpr std::uint64_t kBlockBytes = 4096;
  static constexpr std::size_t kScrambleBytes = ContentStream::kScramblePeriod;
  static constexpr std::uint64_t kSectorBytes = ContentStream::kScrambleSector;

  explicit EntryContent(std::uint64_t seed, bool scrambled = false);

  bool scrambled() const { return scrambled_; }
  // The key of entry `name`'s blocks (MixSeed(seed, NameHash(name))).
  std::uint64_t EntryKey(std::string_view name) const;
  // Writes payload bytes [offset, offset + out.size()) of the entry whose
  // key is `entry` into `out`. With scrambled content and a `held` buffer
  // that covers `out`, only what differs from the buffer's last content.
  void Fill(std::uint64_t entry, std::uint64_t offset, std::span<std::byte> out,
            HeldContent* held = nullptr) const;
  // Makes `held`'s whole buffer hold the scrambled pattern as a payload
  // starting `header` bytes into it would (before the clock: a transfer
  // then writes only the stamps). Scrambled content only.
  void Hold(std::size_t header, std::span<std::byte> buffer, HeldContent* held) const;

 private:
  void FillXor(std::uint64_t entry, std::uint64_t offset, std::span<std::byte> out) const;

  std::uint64_t seed_;
  bool scrambled_;
  std::vector<std::byte> pattern_;
};

struct StoreOptions {
  std::string folder;  // the storage tier's folder (this rank's)
  std::uint64_t transfer_size = 16ULL << 20;
  double gpu_copy_bytes_per_second = 25e9;
  std::uint64_t content_seed = 42;
  // What entries hold (iomimic.content, compress_percentage,
  // dedupe_percentage): by default random blocks that storage can neither
  // compress nor deduplicate; a manifest that asks for a ratio gets it.
  ContentOptions content;
  const ModelSpec* model = nullptr;
  std::uint64_t tensor_parallel = 1;
  // When it becomes true (the benchmark's end) transfers stop at their next
  // chunk with kAborted; a storage object left half written is removed.
  const std::atomic<bool>* cancel = nullptr;
  // kv_cache.trace_only: every transfer, deletion and removal is skipped
  // (its timing zero): the run's logic and trace without I/O.
  bool trace_only = false;
  // Storage objects are written under a temporary name of this writer
  // (`<object>.partial-<tag>-<n>`) and renamed when complete, so that another
  // process looking for the object never finds it half written (a prefix
  // store shared across hosts, docs/kvcache-chunked.md); object stores,
  // where an object appears only when its upload completes, write it under
  // its name. Empty: written under its name.
  std::string publish_tag;
  // kv_cache.accelerator's device-memory plugin: the storage whose Allocate
  // holds the accelerator tier's entries (device memory) and whose CopyIntoBuffer and
  // CopyOutOfBuffer move them; it times the copies itself. Null: host memory
  // and gpu_copy_gbps. Must outlive the TierStore.
  Storage* accelerator = nullptr;
  // Objects per entry on storage (kv_cache.chunk_objects layer: one per
  // model layer, LMCache's layer-wise mode): part i is `<key>.l<i>.npy`, a
  // 1-D .npy of its share of the bytes; the parts are written in order and
  // each published whole, so the last part's presence means all are there.
  std::uint64_t parts = 1;
  // Whether a file back end may preallocate an object (OpenOptions::
  // expected_size): the MLPerf reference fallocates each entry, the
  // production stores the chunked layout copies (LMCache's and llm-d's file
  // back ends) open, write and close. An object store always gets the size
  // (it sizes its upload's staging by it).
  bool preallocate = true;
  // Whether a read of a file back end's object stats its path before the
  // open, as the MLPerf reference does (its existence check); else the
  // open's file tells the size (the production stores: open, read, close).
  bool stat_before_read = true;
  // Storage objects carry this writer's ChunkStamp and reads check it
  // (a mismatch is a Corruption naming the object and offset).
  bool stamp = false;
  ChunkStamp writer;
};

class TierStore {
 public:
  TierStore(Storage& storage, StoreOptions options);

  // A worker's reusable transfer buffer (allocated at its first use).
  struct WorkerBuffer {
    Buffer buffer;
    HeldContent held;         // what `buffer` holds (scrambled or zeros content)
    std::string key;          // a scratch entry name (its storage is reused)
    std::vector<TierOp> ops;  // a scratch list of the cache's decisions
    std::string path;         // a scratch object path
  };

  // Makes `wb`'s buffer now, of transfer_size bytes or, when smaller, the
  // whole object of an entry of `largest` bytes (header included, rounded
  // up to 4 KiB and the back end's alignment), and touches every page of
  // it, so that no transfer pays for its first touch. A buffer made before
  // is kept; a trace-only store (StoreOptions::trace_only) makes none.
  Status PrepareBuffer(WorkerBuffer& wb, std::uint64_t largest);

  // Writes a new entry `key` of `bytes` (tokens = bytes / bytes per token)
  // into `tier`, its content unique per key and 4 KiB block.
  Status WriteNew(Tier tier, const std::string& key, std::uint64_t bytes, WorkerBuffer& wb,
                  OpTiming* timing);
  // Reads entry `key` whole from `tier` into the worker's buffer. With
  // StoreOptions::stamp, a storage read checks the object's stamp and
  // returns its writer in `writer` (when not null).
  Status Read(Tier tier, const std::string& key, std::uint64_t bytes, WorkerBuffer& wb,
              OpTiming* timing, ChunkStamp* writer = nullptr);
  // Moves `key` from memory tier `from` to `to`: read there, write here,
  // free there. `read` and `write` get the two halves' times.
  // `to` kStorage with `dest`: the object is written through `dest`'s
  // storage (a lower tier on another plugin) instead of this store's.
  Status Demote(Tier from, Tier to, const std::string& key, std::uint64_t bytes, WorkerBuffer& wb,
                OpTiming* read, OpTiming* write, TierStore* dest = nullptr);
  // Copies storage entry `key` to `dest`'s storage object by object,
  // byte for byte (its stamp included), each published whole there; the
  // caller deletes it here. `read` and `write` get the two sides' times.
  Status CopyTo(TierStore& dest, const std::string& key, WorkerBuffer& wb, OpTiming* read,
                OpTiming* write);
  // Removes `key` from `tier`: frees a memory tier's block, deletes a
  // storage entry (Delete).
  Status Drop(Tier tier, const std::string& key, WorkerBuffer& wb);
  // Deletes `key` from the storage tier. A back end that refuses deletes is
  // an error naming it.
  Status Delete(const std::string& key, WorkerBuffer& wb);
  // The storage object of `key` (its part `part` with StoreOptions::parts),
  // into `path` (its storage reused).
  void PathOf(const std::string& key, std::string* path) const;
  void PathOf(const std::string& key, std::uint64_t part, std::string* path) const;
  // The parts of an entry of `bytes`: part i holds PartBytes(bytes, i).
  std::uint64_t parts() const { return options_.parts; }
  std::uint64_t PartBytes(std::uint64_t bytes, std::uint64_t part) const;
  // Whether `key`'s storage object(s) hold an entry of `bytes` whole (the
  // last part, published last, of its full size).
  bool Holds(const std::string& key, std::uint64_t bytes, std::string* scratch);
  const std::string& folder() const { return options_.folder; }
  // The .npy header's size for an entry of `bytes` (one object's, with
  // parts: the part's of that many bytes).
  std::uint64_t header_bytes(std::uint64_t bytes) const;
  // The end of the run: deletes the storage objects this run wrote and still
  // holds, unless `keep` (nothing else in the folder is touched).
  Status RemoveAll(bool keep);
  // Bytes that storage transfers cut short by `cancel` moved before they
  // stopped (the counting storage counts them; the tiers' figures do not).
  std::uint64_t cut_short_written() const { return cut_written_.load(); }
  std::uint64_t cut_short_read() const { return cut_read_.load(); }

 private:
  struct Source {
    const std::byte* memory = nullptr;  // copy from here, or
    ContentStream* stream = nullptr;    // fill from here, or
    const Buffer* device = nullptr;     // copy out of this accelerator entry
    double device_seconds = 0;          // (in this many seconds: the demotion's read),
    std::uint64_t entry = 0;            // or none of them: content_ of this entry key
  };
  // Fills `out` (in `wb`'s buffer) with the source's bytes at `offset` (a
  // stream: its next bytes).
  Status FillFrom(Source& source, std::uint64_t offset, std::span<std::byte> out, WorkerBuffer& wb);
  // `wb`'s buffer, made, and a note that what it held is about to change.
  static std::span<std::byte> Scratch(WorkerBuffer& wb, std::uint64_t bytes) {
    wb.held.Forget();
    return wb.buffer.span().first(static_cast<std::size_t>(bytes));
  }
  bool OnDevice(Tier tier) const {
    return tier == Tier::kAccelerator && options_.accelerator != nullptr;
  }
  Result<Buffer> NewBlock(Tier tier, const std::string& key, std::uint64_t bytes);
  Status EnsureBuffer(WorkerBuffer& wb);
  bool Cancelled() const { return options_.cancel != nullptr && options_.cancel->load(); }
  Status StorageWrite(const std::string& key, std::uint64_t bytes, Source& source, WorkerBuffer& wb,
                      OpTiming* timing);
  // One object of `bytes` payload at `path`, filled from `source` from
  // `payload` on (advanced); with `stamp_key`, the payload's first bytes
  // are that entry's stamp.
  Status WriteObject(const std::string& path, std::uint64_t bytes, Source& source,
                     std::uint64_t* payload, const std::string* stamp_key, WorkerBuffer& wb,
                     OpTiming* timing);
  Status StorageRead(const std::string& key, std::uint64_t bytes, WorkerBuffer& wb,
                     OpTiming* timing, ChunkStamp* writer);
  // Publishes `temporary` as `path` (a rename; nothing on object stores).
  Status Publish(const std::string& temporary, const std::string& path);
  std::string TemporaryName(const std::string& path);
  bool Renames() const { return !options_.publish_tag.empty() && !objects_; }
  Status MemoryWrite(Tier tier, const std::string& key, std::uint64_t bytes, Source& source,
                     WorkerBuffer& wb, OpTiming* timing);
  Status MemoryRead(Tier tier, const std::string& key, std::uint64_t bytes, WorkerBuffer& wb,
                    OpTiming* timing);
  Buffer* FindBlock(Tier tier, const std::string& key);
  void FreeBlock(Tier tier, const std::string& key);
  void EmulateCopy(Tier tier, std::uint64_t bytes, double started) const;
  // The .npy header of an entry of `bytes` into `out` (kNpyHeaderMax bytes).
  std::size_t Header(std::uint64_t bytes, char* out) const;

  Storage& storage_;
  StoreOptions options_;
  // storage_.capabilities().objects, asked once: capabilities() copies a
  // string, which the per-chunk paths need not pay.
  bool objects_;
  std::mutex mutex_;
  std::unordered_map<std::string, Buffer> memory_[2];  // accelerator, host
  std::unordered_map<std::string, bool> stored_;       // objects written and not deleted
  std::atomic<std::uint64_t> published_{0};            // temporary names used
  std::atomic<std::uint64_t> cut_written_{0}, cut_read_{0};
  // The default or scrambled content's pattern; null with other content
  // options or trace_only (which writes nothing).
  std::unique_ptr<const EntryContent> content_;
  // iomimic.content zeros: a worker's buffer is zeroed once, not per chunk.
  bool zeros_ = false;
};

// Seconds on a monotonic clock (for OpTiming).
double Now();

}  // namespace iomimic::kvcache
