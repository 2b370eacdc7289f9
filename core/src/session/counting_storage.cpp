#include "session/counting_storage.h"

#include <algorithm>
#include <chrono>

namespace iomimic::session {
namespace {

using Clock = std::chrono::steady_clock;

std::uint64_t NanosSince(Clock::time_point t) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t).count());
}

std::int64_t Ticks(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

// A trace event of a storage operation on file `file` (Tracer::InternFile's
// number, 0 for none); `tracer` may be null or off. docs/run-folder.md
// lists the args of each.
inline void TraceOp(metrics::Tracer* tracer, const char* name, Clock::time_point start,
                    std::uint64_t ns, std::uint32_t file, metrics::TraceArg a = {},
                    metrics::TraceArg b = {}, metrics::TraceArg c = {}) {
  if (tracer == nullptr || !tracer->enabled()) return;
  tracer->Complete("storage", name, start, start + std::chrono::nanoseconds(ns), a, b, c, file);
}

// The open(2) flags that OpenMode stands for, as DFTracer's open events
// carry them (O_RDONLY; O_WRONLY|O_CREAT|O_TRUNC; O_RDWR|O_CREAT).
std::int64_t TraceOpenFlags(OpenMode mode) {
  switch (mode) {
    case OpenMode::kWrite:
      return 01 | 0100 | 01000;
    case OpenMode::kReadWrite:
      return 02 | 0100;
    default:
      return 0;
  }
}

class CountingFile final : public File {
 public:
  // `open_start`/`open_ns`: when the Open that made this file started and
  // how long it took (its record's first timestamps and metadata time).
  // `trace_file`/`handle`: the path's number and the open's in the trace
  // (0 when it is off).
  CountingFile(std::unique_ptr<File> inner, CountingStorage* owner, std::string path,
               Clock::time_point open_start, std::uint64_t open_ns, std::uint32_t trace_file,
               std::int64_t handle)
      : inner_(std::move(inner)),
        owner_(owner),
        c_(&owner->counters()),
        tracer_(owner->tracer()),
        path_(std::move(path)),
        trace_file_(trace_file),
        handle_(handle) {
    rec_.opens = 1;
    rec_.meta_ns = open_ns;
    rec_.open_start_ns = Ticks(open_start);
    rec_.open_end_ns = rec_.open_start_ns + static_cast<std::int64_t>(open_ns);
  }
  // A file dropped without Close is closed by its destructor: time that.
  ~CountingFile() override {
    if (closed_) return;
    auto t = Clock::now();
    inner_.reset();
    FinishClose(t, NanosSince(t));
  }

  Result<std::size_t> ReadAt(std::uint64_t offset, std::span<std::byte> destination) override {
    auto t = Clock::now();
    Result<std::size_t> r = inner_->ReadAt(offset, destination);
    const std::uint64_t ns = NanosSince(t);
    c_->read_latency.Record(ns);
    c_->read_ops.fetch_add(1, std::memory_order_relaxed);
    TraceOp(tracer_, "read", t, ns, trace_file_, {"fd", handle_},
            {"offset", static_cast<std::int64_t>(offset)},
            {"size", static_cast<std::int64_t>(r.ok() ? *r : 0)});
    if (r.ok()) {
      c_->read_bytes.fetch_add(*r, std::memory_order_relaxed);
      CountRead(offset, *r, ns);
    } else {
      c_->errors.fetch_add(1, std::memory_order_relaxed);
    }
    return r;
  }

  Status WriteAt(std::uint64_t offset, std::span<const std::byte> source) override {
    auto t = Clock::now();
    return CountWrite(t, offset, source.size(), inner_->WriteAt(offset, source));
  }

  Status WriteAtAll(std::uint64_t offset, std::span<const std::byte> source) override {
    auto t = Clock::now();
    Status s = inner_->WriteAtAll(offset, source);
    if (source.empty() && s.ok()) return s;  // took part, wrote nothing
    return CountWrite(t, offset, source.size(), std::move(s));
  }

  Status CountWrite(Clock::time_point t, std::uint64_t offset, std::size_t bytes, Status s) {
    const std::uint64_t ns = NanosSince(t);
    c_->write_latency.Record(ns);
    TraceOp(tracer_, "write", t, ns, trace_file_, {"fd", handle_},
            {"offset", static_cast<std::int64_t>(offset)},
            {"size", static_cast<std::int64_t>(bytes)});
    c_->write_ops.fetch_add(1, std::memory_order_relaxed);
    if (s.ok()) {
      c_->write_bytes.fetch_add(bytes, std::memory_order_relaxed);
      ++rec_.writes;
      rec_.bytes_written += bytes;
      if (bytes > 0) {
        rec_.max_byte_written =
            std::max(rec_.max_byte_written, static_cast<std::int64_t>(offset + bytes - 1));
      }
      ++rec_.write_size_bins[FileCounters::SizeBin(bytes)];
      rec_.AddAccessSize(bytes);
    } else {
      c_->errors.fetch_add(1, std::memory_order_relaxed);
    }
    rec_.write_ns += ns;
    return s;
  }

  Status ReadBatch(std::span<ReadRequest> requests) override {
    auto t = Clock::now();
    Status s = inner_->ReadBatch(requests);
    std::uint64_t per = requests.empty() ? 0 : NanosSince(t) / requests.size();
    std::uint64_t i = 0;
    for (const ReadRequest& r : requests) {
      TraceOp(tracer_, "read", t + std::chrono::nanoseconds(per * i++), per, trace_file_,
              {"fd", handle_}, {"offset", static_cast<std::int64_t>(r.offset)},
              {"size", static_cast<std::int64_t>(r.bytes_read)});
      c_->read_latency.Record(per);
      c_->read_ops.fetch_add(1, std::memory_order_relaxed);
      c_->read_bytes.fetch_add(r.bytes_read, std::memory_order_relaxed);
      if (!r.status.ok()) {
        c_->errors.fetch_add(1, std::memory_order_relaxed);
      } else {
        CountRead(r.offset, r.bytes_read, per);
      }
    }
    return s;
  }

  Status Sync() override {
    c_->syncs.fetch_add(1, std::memory_order_relaxed);
    auto t = Clock::now();
    Status s = inner_->Sync();
    const std::uint64_t ns = NanosSince(t);
    c_->fsync_latency.Record(ns);
    TraceOp(tracer_, "fsync", t, ns, trace_file_, {"fd", handle_});
    rec_.write_ns += ns;
    return s;
  }
  Result<std::uint64_t> Size() override { return inner_->Size(); }
  Status Close() override {
    return Ending([](File& inner) { return inner.Close(); });
  }
  Status Abort() override {
    return Ending([](File& inner) { return inner.Abort(); });
  }
  const std::string& path() const override { return inner_->path(); }

 private:
  // Darshan's per-read bookkeeping: no allocation, no lock.
  void CountRead(std::uint64_t offset, std::uint64_t bytes, std::uint64_t ns) {
    ++rec_.reads;
    rec_.bytes_read += bytes;
    rec_.read_ns += ns;
    if (has_previous_read_) {
      if (offset >= previous_read_end_) ++rec_.seq_reads;
      if (offset == previous_read_end_) ++rec_.consec_reads;
    }
    has_previous_read_ = true;
    previous_read_end_ = offset + bytes;
    if (bytes > 0) {
      rec_.max_byte_read =
          std::max(rec_.max_byte_read, static_cast<std::int64_t>(offset + bytes - 1));
    }
    ++rec_.read_size_bins[FileCounters::SizeBin(bytes)];
    rec_.AddAccessSize(bytes);
  }

  // Ends the inner file with `end` (its Close or Abort), timed; the first
  // end of the file is counted as its close.
  template <typename End>
  Status Ending(End&& end) {
    auto t = Clock::now();
    Status s = end(*inner_);
    if (!closed_) FinishClose(t, NanosSince(t));
    closed_ = true;
    return s;
  }

  void FinishClose(Clock::time_point start, std::uint64_t ns) {
    c_->close_latency.Record(ns);
    TraceOp(tracer_, "close", start, ns, trace_file_, {"fd", handle_});
    rec_.meta_ns += ns;
    rec_.close_start_ns = Ticks(start);
    rec_.close_end_ns = rec_.close_start_ns + static_cast<std::int64_t>(ns);
    owner_->AddFileCounters(path_, rec_);
  }

  std::unique_ptr<File> inner_;
  CountingStorage* owner_;
  IoCounters* c_;
  metrics::Tracer* tracer_;
  std::string path_;
  std::uint32_t trace_file_;
  std::int64_t handle_;
  FileCounters rec_;
  bool has_previous_read_ = false;
  std::uint64_t previous_read_end_ = 0;
  bool closed_ = false;
};

}  // namespace

Result<std::unique_ptr<File>> CountingStorage::Open(const std::string& path,
                                                    const OpenOptions& options) {
  auto t = Clock::now();
  Result<std::unique_ptr<File>> f = inner().Open(path, options);
  const std::uint64_t open_ns = NanosSince(t);
  counters_.open_latency.Record(open_ns);
  std::uint32_t trace_file = 0;
  std::int64_t handle = 0;
  if (tracer_ != nullptr && tracer_->enabled()) {
    trace_file = tracer_->InternFile(path);
    handle = f.ok() ? tracer_->NewHandle() : -1;
    TraceOp(tracer_, "open", t, open_ns, trace_file, {"flags", TraceOpenFlags(options.mode)},
            {"ret", handle});
  }
  if (!f.ok()) {
    counters_.errors.fetch_add(1, std::memory_order_relaxed);
    return f.status();
  }
  counters_.opens.fetch_add(1, std::memory_order_relaxed);
  return std::unique_ptr<File>(
      new CountingFile(std::move(f).value(), this, path, t, open_ns, trace_file, handle));
}

Result<FileInfo> CountingStorage::Stat(const std::string& path) {
  auto t = Clock::now();
  Result<FileInfo> info = inner().Stat(path);
  const std::uint64_t ns = NanosSince(t);
  counters_.stat_latency.Record(ns);
  if (tracer_ != nullptr && tracer_->enabled()) {
    TraceOp(tracer_, "stat", t, ns, tracer_->InternFile(path), {"ret", info.ok() ? 0 : -1},
            {"size", info.ok() ? static_cast<std::int64_t>(info->size) : 0},
            {"is_dir", info.ok() && info->is_directory ? 1 : 0});
  }
  FileCounters stat;
  stat.stats = 1;
  stat.meta_ns = ns;
  AddFileCounters(path, stat);
  return info;
}

Status CountingStorage::Remove(const std::string& path) {
  auto t = Clock::now();
  Status s = inner().Remove(path);
  if (tracer_ != nullptr && tracer_->enabled()) {
    TraceOp(tracer_, "unlink", t, NanosSince(t), tracer_->InternFile(path),
            {"ret", s.ok() ? 0 : -1});
  }
  return s;
}

Status CountingStorage::Rename(const std::string& from, const std::string& to) {
  auto t = Clock::now();
  Status s = inner().Rename(from, to);
  if (tracer_ != nullptr && tracer_->enabled()) {
    const std::uint64_t ns = NanosSince(t);
    tracer_->Complete2("storage", "rename", t, t + std::chrono::nanoseconds(ns),
                       tracer_->InternFile(from), tracer_->InternFile(to));
  }
  return s;
}

void CountingStorage::AddFileCounters(const std::string& path, const FileCounters& counters) {
  std::lock_guard<std::mutex> lock(files_mutex_);
  files_[path].Merge(counters);
}

std::vector<std::pair<std::string, FileCounters>> CountingStorage::FileCountersByPath() const {
  std::lock_guard<std::mutex> lock(files_mutex_);
  return {files_.begin(), files_.end()};
}

int FileCounters::SizeBin(std::uint64_t bytes) {
  constexpr std::uint64_t kBounds[kSizeBins - 1] = {100,         1024,         10 * 1024,
                                                    100 * 1024,  1024 * 1024,  4 << 20,
                                                    10ull << 20, 100ull << 20, 1ull << 30};
  int bin = 0;
  while (bin < kSizeBins - 1 && bytes >= kBounds[bin]) ++bin;
  return bin;
}

void FileCounters::AddAccessSize(std::uint64_t bytes, std::uint64_t count) {
  for (auto& [size, n] : access_sizes) {
    if (n != 0 && size == bytes) {
      n += count;
      return;
    }
  }
  // A free slot, else the slot of the rarest size when this one is more
  // common: merging many files' tables (whose first sizes are often the
  // generator's large writes) keeps the sizes with the most requests.
  auto* rarest = &access_sizes[0];
  for (auto& slot : access_sizes) {
    if (slot.second < rarest->second) rarest = &slot;
  }
  if (rarest->second < count) *rarest = {bytes, count};
}

namespace {
void MinTime(std::int64_t& into, std::int64_t v) {
  if (v != 0 && (into == 0 || v < into)) into = v;
}
void MaxTime(std::int64_t& into, std::int64_t v) {
  if (v != 0 && v > into) into = v;
}
}  // namespace

void FileCounters::Merge(const FileCounters& o) {
  for (const FileCount& count : kFileCounts) this->*count.member += o.*count.member;
  max_byte_read = std::max(max_byte_read, o.max_byte_read);
  max_byte_written = std::max(max_byte_written, o.max_byte_written);
  for (int i = 0; i < kSizeBins; ++i) {
    read_size_bins[i] += o.read_size_bins[i];
    write_size_bins[i] += o.write_size_bins[i];
  }
  for (const auto& [size, n] : o.access_sizes) {
    if (n != 0) AddAccessSize(size, n);
  }
  read_ns += o.read_ns;
  write_ns += o.write_ns;
  meta_ns += o.meta_ns;
  MinTime(open_start_ns, o.open_start_ns);
  MaxTime(open_end_ns, o.open_end_ns);
  MinTime(close_start_ns, o.close_start_ns);
  MaxTime(close_end_ns, o.close_end_ns);
}

std::vector<std::pair<std::uint64_t, std::uint64_t>> FileCounters::CommonSizes(
    std::size_t n) const {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> sizes;
  for (const auto& slot : access_sizes) {
    if (slot.second != 0) sizes.push_back(slot);
  }
  std::sort(sizes.begin(), sizes.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first > b.first;
  });
  if (sizes.size() > n) sizes.resize(n);
  return sizes;
}

IoSnapshot CountingStorage::Snapshot() const {
  IoSnapshot s;
  s.files_opened = counters_.opens.load();
  s.read_requests = counters_.read_ops.load();
  s.bytes_read = counters_.read_bytes.load();
  s.write_requests = counters_.write_ops.load();
  s.bytes_written = counters_.write_bytes.load();
  s.fsync_calls = counters_.syncs.load();
  s.errors = counters_.errors.load();
  return s;
}

}  // namespace iomimic::session
