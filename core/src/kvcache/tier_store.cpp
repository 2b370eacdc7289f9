#include "kvcache/tier_store.h"

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cstring>
#include <functional>
#include <optional>
#include <thread>

namespace iomimic::kvcache {
namespace {

int MemoryIndex(Tier tier) { return tier == Tier::kAccelerator ? 0 : 1; }

std::uint64_t KeySeed(std::uint64_t seed, const std::string& key) {
  return MixSeed(seed, NameHash(key));
}

// A transfer kv_cache.trace_only skips: no time, no error.
Status Skipped(OpTiming* timing, OpTiming* second = nullptr) {
  for (OpTiming* t : {timing, second}) {
    if (t != nullptr) *t = OpTiming{};
  }
  return Status::OK();
}

constexpr char kStampMagic[8] = {'I', 'O', 'M', 'K', 'V', 'S', 'T', '1'};

void PutU64(std::byte* at, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) at[i] = static_cast<std::byte>(v >> (8 * i));
}
std::uint64_t GetU64(const std::byte* at) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(at[i]) << (8 * i);
  return v;
}

// The stamp of `key` by `writer` (kStampBytes, little-endian): magic, name
// hash, run, rank and host.
void WriteStamp(const std::string& key, const ChunkStamp& writer, std::byte* out) {
  std::memcpy(out, kStampMagic, 8);
  PutU64(out + 8, NameHash(key));
  PutU64(out + 16, writer.run);
  PutU64(out + 24, static_cast<std::uint64_t>(writer.rank) | static_cast<std::uint64_t>(writer.host)
                                                                 << 32);
}

}  // namespace

std::uint64_t NameHash(std::string_view name) {
  std::uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ULL;
  return h;
}

namespace {

// Copies `n` bytes of `pattern`, repeated, from position `at` on to `dst`.
void CopyPattern(std::span<const std::byte> pattern, std::uint64_t at, std::byte* dst,
                 std::size_t n) {
  const std::uint64_t len = pattern.size();
  for (std::size_t done = 0; done < n;) {
    const std::uint64_t p = (at + done) % len;
    const std::size_t k = static_cast<std::size_t>(std::min<std::uint64_t>(n - done, len - p));
    std::memcpy(dst + done, pattern.data() + p, k);
    done += k;
  }
}

}  // namespace

void HeldContent::Dirty(std::size_t begin, std::size_t end) {
  if (begin >= end) return;
  if (dirty_begin >= dirty_end) {
    dirty_begin = begin;
    dirty_end = end;
  } else {
    dirty_begin = std::min(dirty_begin, begin);
    dirty_end = std::max(dirty_end, end);
  }
}

void HoldPattern(std::span<const std::byte> pattern, std::uint64_t at, std::span<std::byte> out,
                 HeldContent* held) {
  const std::size_t b = static_cast<std::size_t>(out.data() - held->base);
  std::byte* const buffer = out.data() - b;
  const std::size_t e = b + out.size();
  const HeldContent::What what =
      pattern.empty() ? HeldContent::What::kZeros : HeldContent::What::kPattern;
  const std::uint64_t len = pattern.size();
  // The pattern position of the buffer's byte 0.
  const std::uint64_t phase = len == 0 ? 0 : (at % len + len - b % len) % len;
  const auto copy = [&](std::size_t from, std::size_t to) {
    if (from >= to) return;
    if (len == 0) {
      std::memset(buffer + from, 0, to - from);
    } else {
      CopyPattern(pattern, (phase + from) % len, buffer + from, to - from);
    }
  };
  const bool same = held->what == what && held->phase == phase &&
                    held->valid_begin < held->valid_end && b < held->valid_end &&
                    e > held->valid_begin;
  if (!same) {  // nothing of it held: all of it, and that is what is held now
    copy(b, e);
    held->what = what;
    held->phase = phase;
    held->valid_begin = b;
    held->valid_end = e;
    held->dirty_begin = held->dirty_end = 0;
    return;
  }
  copy(b, std::min(e, held->valid_begin));
  copy(std::max(b, held->valid_end), e);
  held->valid_begin = std::min(b, held->valid_begin);
  held->valid_end = std::max(e, held->valid_end);
  if (held->dirty_begin < held->dirty_end) {
    copy(std::max(b, held->dirty_begin), std::min(e, held->dirty_end));
    if (held->dirty_begin >= b && held->dirty_end <= e) held->dirty_begin = held->dirty_end = 0;
  }
}

EntryContent::EntryContent(std::uint64_t seed, bool scrambled)
    : seed_(seed), scrambled_(scrambled), pattern_(scrambled ? kScrambleBytes : kPatternBytes) {
  ContentStream(seed).Fill(pattern_);
}

std::uint64_t EntryContent::EntryKey(std::string_view name) const {
  return MixSeed(seed_, NameHash(name));
}

void EntryContent::Fill(std::uint64_t entry, std::uint64_t offset, std::span<std::byte> out,
                        HeldContent* held) const {
  if (!scrambled_) {
    FillXor(entry, offset, out);
    return;
  }
  if (held != nullptr && held->Covers(out)) {
    HoldPattern(pattern_, offset, out, held);
  } else {
    CopyPattern(pattern_, offset, out.data(), out.size());
  }
  // The stamps of the sectors the range meets, a stamp cut by its ends in
  // part. A held buffer needs no note of them: at one phase every fill
  // writes its stamps at the same places (the pattern's length is a
  // multiple of the sector), so a byte there is rewritten by any fill that
  // covers it.
  const std::uint64_t end = offset + out.size();
  for (std::uint64_t sector = offset / kSectorBytes; sector * kSectorBytes < end; ++sector) {
    const std::uint64_t begin = sector * kSectorBytes;
    const std::uint64_t from = std::max(begin, offset);
    const std::uint64_t to = std::min(begin + 8, end);
    if (from >= to) continue;
    std::byte stamp[8];
    PutU64(stamp, MixSeed(entry, sector));
    if (to - from == 8) {  // a whole stamp: one 8-byte store, not a copy call
      std::memcpy(out.data() + (from - offset), stamp, 8);
    } else {
      std::memcpy(out.data() + (from - offset), stamp + (from - begin), to - from);
    }
  }
}

void EntryContent::Hold(std::size_t header, std::span<std::byte> buffer, HeldContent* held) const {
  held->base = buffer.data();
  held->size = buffer.size();
  held->Forget();
  HoldPattern(pattern_, kScrambleBytes - header % kScrambleBytes, buffer, held);
}

void EntryContent::FillXor(std::uint64_t entry, std::uint64_t offset,
                           std::span<std::byte> out) const {
  std::byte* dst = out.data();
  std::size_t left = out.size();
  while (left > 0) {
    // One block's part: the pattern is contiguous across it (kPatternBytes
    // is a multiple of the block).
    const std::uint64_t block = offset / kBlockBytes;
    const std::size_t in_block =
        static_cast<std::size_t>(std::min<std::uint64_t>(left, kBlockBytes - offset % kBlockBytes));
    const std::uint64_t word = MixSeed(entry, block);
    const std::byte* src = pattern_.data() + offset % kPatternBytes;
    std::size_t i = 0;
    // Byte j of the block key is byte (position mod 8) of the word, little
    // endian: bytes up to a multiple of 8 one by one, then whole words.
    for (; i < in_block && (offset + i) % 8 != 0; ++i) {
      dst[i] = src[i] ^ static_cast<std::byte>(word >> (8 * ((offset + i) % 8)));
    }
    if constexpr (std::endian::native == std::endian::little) {
#if defined(__GNUC__)
      // Two words at a time, one SSE2 operation (x86-64's baseline): the
      // scalar loop took about as long as the kernel's copy of the same
      // bytes into tmpfs (perf record, 2 MiB chunks at depth 1), and a
      // 32-byte vector, without -mavx2, is lowered to half the speed of
      // this (a 2 MiB fill: 6-10 GB/s against 14-21 GB/s, as fast as AVX2
      // and AVX-512 builds of it: the stores bound it).
      using Lanes = std::uint64_t __attribute__((vector_size(16)));
      const Lanes key = {word, word};
      for (; i + sizeof(Lanes) <= in_block; i += sizeof(Lanes)) {
        Lanes v;
        std::memcpy(&v, src + i, sizeof v);
        v ^= key;
        std::memcpy(dst + i, &v, sizeof v);
      }
#endif
      for (; i + 8 <= in_block; i += 8) {
        std::uint64_t v;
        std::memcpy(&v, src + i, 8);
        v ^= word;
        std::memcpy(dst + i, &v, 8);
      }
    }
    for (; i < in_block; ++i) {
      dst[i] = src[i] ^ static_cast<std::byte>(word >> (8 * ((offset + i) % 8)));
    }
    dst += in_block;
    offset += in_block;
    left -= in_block;
  }
}

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

TierStore::TierStore(Storage& storage, StoreOptions options)
    : storage_(storage), options_(std::move(options)), objects_(storage.capabilities().objects) {
  const bool scrambled = options_.content.kind == ContentOptions::Kind::kScrambled;
  if ((options_.content.is_default() || scrambled) && !options_.trace_only) {
    content_ = std::make_unique<const EntryContent>(options_.content_seed, scrambled);
  }
  zeros_ = options_.content.kind == ContentOptions::Kind::kZeros;
}

void TierStore::PathOf(const std::string& key, std::string* path) const { PathOf(key, 0, path); }

void TierStore::PathOf(const std::string& key, std::uint64_t part, std::string* path) const {
  path->assign(options_.folder);
  path->append("/");
  path->append(key);
  if (options_.parts > 1) {
    path->append(".l");
    path->append(std::to_string(part));
  }
  path->append(".npy");
}

std::uint64_t TierStore::PartBytes(std::uint64_t bytes, std::uint64_t part) const {
  const std::uint64_t n = std::max<std::uint64_t>(1, options_.parts);
  const std::uint64_t share = bytes / n;
  return part + 1 < n ? share : bytes - share * (n - 1);
}

bool TierStore::Holds(const std::string& key, std::uint64_t bytes, std::string* scratch) {
  const std::uint64_t last = std::max<std::uint64_t>(1, options_.parts) - 1;
  PathOf(key, last, scratch);
  Result<FileInfo> info = storage_.Stat(*scratch);
  const std::uint64_t part = PartBytes(bytes, last);
  return info.ok() && info->size == header_bytes(part) + part;
}

std::size_t TierStore::Header(std::uint64_t bytes, char* out) const {
  const std::uint64_t per_token = options_.model->bytes_per_token();
  std::array<std::uint64_t, 5> dims{};
  std::size_t n = 1;
  if (options_.tensor_parallel > 1 || options_.parts > 1) {
    dims[0] = bytes / 2;
  } else {
    n = EntryShapeInto(*options_.model, per_token == 0 ? 0 : bytes / per_token, 1, &dims);
  }
  return WriteNpyHeader(std::span<const std::uint64_t>(dims.data(), n), out);
}

std::uint64_t TierStore::header_bytes(std::uint64_t bytes) const {
  char header[kNpyHeaderMax];
  return Header(bytes, header);
}

Status TierStore::EnsureBuffer(WorkerBuffer& wb) {
  if (!wb.buffer.empty()) return Status::OK();
  Result<Buffer> made = AllocateHostBuffer(storage_, options_.transfer_size, "kv_cache");
  if (!made.ok()) return made.status();
  wb.buffer = std::move(made).value();
  wb.held = HeldContent{wb.buffer.data(), wb.buffer.size()};
  return Status::OK();
}

Status TierStore::PrepareBuffer(WorkerBuffer& wb, std::uint64_t largest) {
  if (!wb.buffer.empty() || options_.trace_only) return Status::OK();  // trace-only: no transfers
  const std::uint64_t align = std::max<std::uint64_t>(4096, storage_.capabilities().alignment);
  const std::uint64_t object = header_bytes(largest) + largest;
  const std::uint64_t size =
      std::min<std::uint64_t>(options_.transfer_size, (object + align - 1) / align * align);
  Result<Buffer> made = AllocateHostBuffer(storage_, static_cast<std::size_t>(size), "kv_cache");
  if (!made.ok()) return made.status();
  wb.buffer = std::move(made).value();
  wb.held = HeldContent{wb.buffer.data(), wb.buffer.size()};
  // Every page touched; with scrambled or zeros content the buffer then
  // holds it, and a transfer rewrites only its stamps.
  if (content_ != nullptr && content_->scrambled()) {
    content_->Hold(static_cast<std::size_t>(header_bytes(largest)), wb.buffer.span(), &wb.held);
  } else if (zeros_) {
    HoldPattern({}, 0, wb.buffer.span(), &wb.held);
  } else {
    std::memset(wb.buffer.data(), 0, wb.buffer.size());
  }
  return Status::OK();
}

void TierStore::EmulateCopy(Tier tier, std::uint64_t bytes, double started) const {
  if (tier != Tier::kAccelerator) return;
  const double until = started + static_cast<double>(bytes) / options_.gpu_copy_bytes_per_second;
  const double left = until - Now();
  if (left > 0) std::this_thread::sleep_for(std::chrono::duration<double>(left));
}

Buffer* TierStore::FindBlock(Tier tier, const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& map = memory_[MemoryIndex(tier)];
  auto it = map.find(key);
  return it == map.end() ? nullptr : &it->second;
}

void TierStore::FreeBlock(Tier tier, const std::string& key) {
  Buffer freed;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto& map = memory_[MemoryIndex(tier)];
    auto it = map.find(key);
    if (it == map.end()) return;
    freed = std::move(it->second);
    map.erase(it);
  }
}

Status TierStore::FillFrom(Source& source, std::uint64_t offset, std::span<std::byte> out,
                           WorkerBuffer& wb) {
  if (source.stream == nullptr && source.memory == nullptr && source.device == nullptr) {
    if (!content_->scrambled()) wb.held.Forget();
    content_->Fill(source.entry, offset, out, &wb.held);
    return Status::OK();
  }
  if (source.stream != nullptr && zeros_ && wb.held.Covers(out)) {
    HoldPattern({}, 0, out, &wb.held);  // zeros wherever the buffer lacks them
    return Status::OK();
  }
  wb.held.Forget();
  if (source.stream != nullptr) {
    source.stream->Fill(out);
  } else if (source.memory != nullptr) {
    std::memcpy(out.data(), source.memory + offset, out.size());
  } else {
    const double start = Now();
    Status st = options_.accelerator->CopyOutOfBuffer(*source.device, offset, out);
    source.device_seconds += Now() - start;
    return st;
  }
  return Status::OK();
}

Result<Buffer> TierStore::NewBlock(Tier tier, const std::string& key, std::uint64_t bytes) {
  if (OnDevice(tier)) {
    Result<Buffer> made = options_.accelerator->Allocate(static_cast<std::size_t>(bytes));
    if (!made.ok()) {
      return made.status().WithContext("kv_cache: the accelerator tier (" +
                                       options_.accelerator->name() + ") cannot allocate " +
                                       std::to_string(bytes) + " bytes for entry " + key);
    }
    return made;
  }
  Buffer block = Buffer::AllocateHost(bytes, 64);
  if (bytes != 0 && block.empty()) {
    return Status::ResourceExhausted("kv_cache: cannot allocate " + std::to_string(bytes) +
                                     " bytes for the " + std::string(TierName(tier)) + " tier");
  }
  return block;
}

Status TierStore::MemoryWrite(Tier tier, const std::string& key, std::uint64_t bytes,
                              Source& source, WorkerBuffer& wb, OpTiming* timing) {
  const double start = Now();
  const bool device = OnDevice(tier);
  IOMIMIC_ASSIGN_OR_RETURN(Buffer block, NewBlock(tier, key, bytes));
  if (source.memory != nullptr && !device) {
    std::memcpy(block.data(), source.memory, bytes);
  } else {
    IOMIMIC_RETURN_IF_ERROR(EnsureBuffer(wb));
    for (std::uint64_t done = 0; done < bytes;) {
      if (Cancelled()) return Status::Aborted("kv_cache: the benchmark ended");
      const std::uint64_t n = std::min<std::uint64_t>(wb.buffer.size(), bytes - done);
      std::span<std::byte> chunk = wb.buffer.span().first(n);
      IOMIMIC_RETURN_IF_ERROR(FillFrom(source, done, chunk, wb));
      if (device) {  // host to device: the worker's buffer into the entry's
        IOMIMIC_RETURN_IF_ERROR(options_.accelerator->CopyIntoBuffer(block, done, chunk));
      } else {
        std::memcpy(block.data() + done, chunk.data(), n);
      }
      done += n;
    }
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    memory_[MemoryIndex(tier)][key] = std::move(block);
  }
  if (!device) EmulateCopy(tier, bytes, start);
  // A demotion's copies out of the accelerator are its read, not this write.
  timing->total = timing->device = timing->host = Now() - start - source.device_seconds;
  return Status::OK();
}

Status TierStore::MemoryRead(Tier tier, const std::string& key, std::uint64_t bytes,
                             WorkerBuffer& wb, OpTiming* timing) {
  const double start = Now();
  IOMIMIC_RETURN_IF_ERROR(EnsureBuffer(wb));
  const Buffer* block = FindBlock(tier, key);
  if (block == nullptr) {
    return Status::Internal("kv_cache: entry " + key + " missing from the " +
                            std::string(TierName(tier)) + " tier");
  }
  const bool device = OnDevice(tier);
  for (std::uint64_t done = 0; done < bytes;) {
    if (Cancelled()) return Status::Aborted("kv_cache: the benchmark ended");
    const std::uint64_t n = std::min<std::uint64_t>(wb.buffer.size(), bytes - done);
    std::span<std::byte> into = Scratch(wb, n);
    if (device) {  // device to host, into the worker's buffer
      IOMIMIC_RETURN_IF_ERROR(options_.accelerator->CopyOutOfBuffer(*block, done, into));
    } else {
      std::memcpy(into.data(), block->data() + done, n);
    }
    done += n;
  }
  if (!device) EmulateCopy(tier, bytes, start);
  timing->total = timing->device = timing->host = Now() - start;
  return Status::OK();
}

std::string TierStore::TemporaryName(const std::string& path) {
  return path + ".partial-" + options_.publish_tag + "-" + std::to_string(published_++);
}

Status TierStore::Publish(const std::string& temporary, const std::string& path) {
  if (temporary.empty()) return Status::OK();
  Status published = storage_.Rename(temporary, path);
  if (!published.ok()) (void)storage_.Remove(temporary);
  return published;
}

Status TierStore::WriteObject(const std::string& final_path, std::uint64_t bytes, Source& source,
                              std::uint64_t* payload, const std::string* stamp_key,
                              WorkerBuffer& wb, OpTiming* timing) {
  const double start = Now();
  char header[kNpyHeaderMax];
  const std::size_t header_size = Header(bytes, header);
  const std::uint64_t total = header_size + bytes;
  OpenOptions open;
  open.mode = OpenMode::kWrite;
  open.hint = AccessHint::kSequential;
  // StoreOptions::preallocate: on tmpfs a preallocation zeroes every page
  // before the write copies into it.
  open.expected_size = objects_ || options_.preallocate ? total : 0;
  const std::string temporary = Renames() ? TemporaryName(final_path) : std::string();
  const std::string& path = temporary.empty() ? final_path : temporary;
  const double device_before = source.device_seconds;
  IOMIMIC_ASSIGN_OR_RETURN(std::unique_ptr<File> file, storage_.Open(path, open));
  for (std::uint64_t offset = 0; offset < total;) {
    const std::uint64_t n = std::min<std::uint64_t>(wb.buffer.size(), total - offset);
    std::span<std::byte> chunk = wb.buffer.span().first(n);
    std::size_t at = 0;
    if (offset < header_size) {
      at = std::min<std::size_t>(header_size - offset, chunk.size());
      std::memcpy(chunk.data(), header + offset, at);
      wb.held.Dirty(0, at);
    }
    std::span<std::byte> body = chunk.subspan(at);
    const bool first = *payload == 0;
    Status st = FillFrom(source, *payload, body, wb);
    if (st.ok() && stamp_key != nullptr && first && body.size() >= kStampBytes) {
      WriteStamp(*stamp_key, options_.writer, body.data());
      wb.held.Dirty(at, at + kStampBytes);
    }
    *payload += body.size();
    if (st.ok()) {
      st = Cancelled() ? Status::Aborted("kv_cache: the benchmark ended")
                       : file->WriteAt(offset, chunk);
    }
    if (!st.ok()) {
      if (st.code() == StatusCode::kAborted) cut_written_ += offset;
      (void)file->Abort();
      // No half-written entry is left behind: a temporary name or a file is
      // removed. An object store's aborted upload leaves nothing, and the
      // object under a shared store's name may be another writer's whole
      // copy, which must stay.
      if (!objects_ || options_.publish_tag.empty()) {
        (void)storage_.Remove(path);
      }
      return st;
    }
    offset += n;
  }
  const double written = Now();
  IOMIMIC_RETURN_IF_ERROR(file->Sync());
  IOMIMIC_RETURN_IF_ERROR(file->Close());
  IOMIMIC_RETURN_IF_ERROR(Publish(temporary, final_path));
  const double end = Now();
  // A demotion's copies out of the accelerator are its read, not this write.
  const double device = source.device_seconds - device_before;
  timing->total += end - start - device;
  timing->host += written - start - device;
  timing->device += end - written;
  return Status::OK();
}

Status TierStore::StorageWrite(const std::string& key, std::uint64_t bytes, Source& source,
                               WorkerBuffer& wb, OpTiming* timing) {
  IOMIMIC_RETURN_IF_ERROR(EnsureBuffer(wb));
  *timing = OpTiming{};
  std::uint64_t payload = 0;
  for (std::uint64_t part = 0; part < std::max<std::uint64_t>(1, options_.parts); ++part) {
    PathOf(key, part, &wb.path);
    const std::uint64_t n = PartBytes(bytes, part);
    IOMIMIC_RETURN_IF_ERROR(
        WriteObject(wb.path, n, source, &payload, options_.stamp ? &key : nullptr, wb, timing));
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stored_[key] = true;
  }
  return Status::OK();
}

Status TierStore::StorageRead(const std::string& key, std::uint64_t bytes, WorkerBuffer& wb,
                              OpTiming* timing, ChunkStamp* writer) {
  IOMIMIC_RETURN_IF_ERROR(EnsureBuffer(wb));
  *timing = OpTiming{};
  std::string& path = wb.path;
  for (std::uint64_t part = 0; part < std::max<std::uint64_t>(1, options_.parts); ++part) {
    const double start = Now();
    PathOf(key, part, &path);
    const std::uint64_t expected = PartBytes(bytes, part);
    // An object store's open learns the size (a whole GET's answer, or a
    // HEAD): a Stat before it would be one more request per read.
    const bool stat_first = !objects_ && options_.stat_before_read;
    std::uint64_t total = 0;
    if (stat_first) {
      IOMIMIC_ASSIGN_OR_RETURN(FileInfo info, storage_.Stat(path));
      total = info.size;
    }
    OpenOptions open;
    open.mode = OpenMode::kRead;
    open.hint = AccessHint::kWholeFile;
    open.drop_cache = true;
    IOMIMIC_ASSIGN_OR_RETURN(std::unique_ptr<File> file, storage_.Open(path, open));
    if (!stat_first) {
      IOMIMIC_ASSIGN_OR_RETURN(total, file->Size());
    }
    const double opened = Now();
    const std::uint64_t header = total >= expected ? total - expected : 0;
    for (std::uint64_t offset = 0; offset < total;) {
      if (Cancelled()) {
        cut_read_ += offset;
        return Status::Aborted("kv_cache: the benchmark ended");
      }
      const std::uint64_t n = std::min<std::uint64_t>(wb.buffer.size(), total - offset);
      IOMIMIC_ASSIGN_OR_RETURN(std::size_t got, file->ReadAt(offset, Scratch(wb, n)));
      if (got == 0) break;
      if (options_.stamp && part == 0 && offset == 0 && total >= expected &&
          expected >= kStampBytes && header + kStampBytes <= got) {
        const std::byte* stamp = wb.buffer.data() + header;
        if (std::memcmp(stamp, kStampMagic, 8) != 0 || GetU64(stamp + 8) != NameHash(key)) {
          return Status::Corruption("kv_cache: " + path + " at offset " + std::to_string(header) +
                                    ": the chunk's stamp does not name " + key +
                                    " (a torn or foreign object)");
        }
        if (writer != nullptr) {
          writer->run = GetU64(stamp + 16);
          const std::uint64_t who = GetU64(stamp + 24);
          writer->rank = static_cast<std::uint32_t>(who);
          writer->host = static_cast<std::uint32_t>(who >> 32);
        }
      }
      offset += got;
    }
    const double read = Now();
    IOMIMIC_RETURN_IF_ERROR(file->Close());
    const double end = Now();
    if (total < expected) {
      return Status::Corruption("kv_cache: " + path + " holds " + std::to_string(total) +
                                " bytes, fewer than the entry's " + std::to_string(expected));
    }
    timing->total += end - start;
    timing->device += read - opened;
    timing->host += (end - start) - (read - opened);
  }
  return Status::OK();
}

Status TierStore::CopyTo(TierStore& dest, const std::string& key, WorkerBuffer& wb, OpTiming* read,
                         OpTiming* write) {
  *read = OpTiming{};
  *write = OpTiming{};
  if (options_.trace_only) return Status::OK();
  IOMIMIC_RETURN_IF_ERROR(EnsureBuffer(wb));
  std::string to;
  for (std::uint64_t part = 0; part < std::max<std::uint64_t>(1, options_.parts); ++part) {
    PathOf(key, part, &wb.path);
    dest.PathOf(key, part, &to);
    double t = Now();
    IOMIMIC_ASSIGN_OR_RETURN(FileInfo info, storage_.Stat(wb.path));
    OpenOptions in;
    in.mode = OpenMode::kRead;
    in.hint = AccessHint::kWholeFile;
    in.drop_cache = true;
    IOMIMIC_ASSIGN_OR_RETURN(std::unique_ptr<File> source, storage_.Open(wb.path, in));
    read->total += Now() - t;
    t = Now();
    OpenOptions out;
    out.mode = OpenMode::kWrite;
    out.hint = AccessHint::kSequential;
    out.expected_size = dest.objects_ || dest.options_.preallocate ? info.size : 0;
    const std::string temporary = dest.Renames() ? dest.TemporaryName(to) : std::string();
    const std::string& path = temporary.empty() ? to : temporary;
    IOMIMIC_ASSIGN_OR_RETURN(std::unique_ptr<File> file, dest.storage_.Open(path, out));
    write->total += Now() - t;
    for (std::uint64_t offset = 0; offset < info.size;) {
      const std::uint64_t n = std::min<std::uint64_t>(wb.buffer.size(), info.size - offset);
      t = Now();
      Result<std::size_t> got = source->ReadAt(offset, Scratch(wb, n));
      read->total += Now() - t;
      Status st =
          got.ok() ? (*got == n ? Status::OK()
                                : Status::Corruption("kv_cache: " + wb.path + " ended at offset " +
                                                     std::to_string(offset + *got)))
                   : got.status();
      t = Now();
      if (st.ok()) st = file->WriteAt(offset, wb.buffer.span().first(n));
      write->total += Now() - t;
      if (!st.ok()) {
        (void)file->Abort();
        (void)dest.storage_.Remove(path);
        return st;
      }
      offset += n;
    }
    t = Now();
    IOMIMIC_RETURN_IF_ERROR(source->Close());
    read->total += Now() - t;
    t = Now();
    IOMIMIC_RETURN_IF_ERROR(file->Sync());
    IOMIMIC_RETURN_IF_ERROR(file->Close());
    IOMIMIC_RETURN_IF_ERROR(dest.Publish(temporary, to));
    write->total += Now() - t;
  }
  read->device = read->total;
  write->device = write->total;
  std::lock_guard<std::mutex> lock(dest.mutex_);
  dest.stored_[key] = true;
  return Status::OK();
}

Status TierStore::Drop(Tier tier, const std::string& key, WorkerBuffer& wb) {
  if (tier == Tier::kStorage) return Delete(key, wb);
  FreeBlock(tier, key);
  return Status::OK();
}

Status TierStore::WriteNew(Tier tier, const std::string& key, std::uint64_t bytes, WorkerBuffer& wb,
                           OpTiming* timing) {
  if (options_.trace_only) return Skipped(timing);
  Source source;
  std::optional<ContentStream> stream;  // content options other than the default
  if (content_ != nullptr) {
    source.entry = content_->EntryKey(key);
  } else {
    source.stream = &stream.emplace(KeySeed(options_.content_seed, key), options_.content);
  }
  if (tier == Tier::kStorage) return StorageWrite(key, bytes, source, wb, timing);
  return MemoryWrite(tier, key, bytes, source, wb, timing);
}

Status TierStore::Read(Tier tier, const std::string& key, std::uint64_t bytes, WorkerBuffer& wb,
                       OpTiming* timing, ChunkStamp* writer) {
  if (options_.trace_only) return Skipped(timing);
  if (tier == Tier::kStorage) return StorageRead(key, bytes, wb, timing, writer);
  return MemoryRead(tier, key, bytes, wb, timing);
}

Status TierStore::Demote(Tier from, Tier to, const std::string& key, std::uint64_t bytes,
                         WorkerBuffer& wb, OpTiming* read, OpTiming* write, TierStore* dest) {
  if (options_.trace_only) return Skipped(read, write);
  const double start = Now();
  const Buffer* block = FindBlock(from, key);
  if (block == nullptr) {
    return Status::Internal("kv_cache: entry " + key + " missing from the " +
                            std::string(TierName(from)) + " tier");
  }
  Source source;
  if (OnDevice(from)) {
    source.device = block;  // copied out chunk by chunk as the write goes
  } else {
    EmulateCopy(from, bytes, start);  // the device-to-host copy out of the accelerator
    source.memory = block->data();
  }
  const double modelled = Now() - start;
  TierStore& target = dest != nullptr ? *dest : *this;
  Status st = to == Tier::kStorage ? target.StorageWrite(key, bytes, source, wb, write)
                                   : MemoryWrite(to, key, bytes, source, wb, write);
  read->total = read->device = read->host = OnDevice(from) ? source.device_seconds : modelled;
  if (st.ok()) FreeBlock(from, key);
  return st;
}

Status TierStore::RemoveAll(bool keep) {
  std::unordered_map<std::string, bool> left;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    left.swap(stored_);
  }
  if (keep) return Status::OK();
  WorkerBuffer wb;
  for (const auto& [key, held] : left) IOMIMIC_RETURN_IF_ERROR(Delete(key, wb));
  return Status::OK();
}

Status TierStore::Delete(const std::string& key, WorkerBuffer& wb) {
  if (options_.trace_only) return Status::OK();
  Status st;
  for (std::uint64_t part = 0; part < std::max<std::uint64_t>(1, options_.parts) && st.ok();
       ++part) {
    PathOf(key, part, &wb.path);
    st = storage_.Remove(wb.path);
    // On a shared store another writer may have published and removed the
    // same chunk: gone is what a delete wants.
    if (st.code() == StatusCode::kNotFound && !options_.publish_tag.empty()) st = Status::OK();
  }
  if (st.ok()) {
    std::lock_guard<std::mutex> lock(mutex_);
    stored_.erase(key);
    return st;
  }
  if (st.code() == StatusCode::kNotSupported) {
    return Status::NotSupported("kv_cache: the storage back end '" + storage_.name() +
                                "' refuses deletes (" + st.message() +
                                "); the KV-cache storage tier deletes its least recently used "
                                "entries when full");
  }
  return st.WithContext("kv_cache: deleting an evicted entry");
}

}  // namespace iomimic::kvcache
