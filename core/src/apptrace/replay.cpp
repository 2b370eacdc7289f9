#include "apptrace/replay.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

namespace iomimic::apptrace {
namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr std::size_t kMaxBuffer = 64u << 20;  // larger requests go in pieces
constexpr std::uint64_t kEofRead = 64u << 10;  // a read the trace saw return 0

std::uint64_t NanosSince(SteadyClock::time_point t0) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyClock::now() - t0).count());
}

std::string Parent(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos || slash == 0 ? std::string() : path.substr(0, slash);
}

bool Covers(const std::string& from, const std::string& path) {
  if (!path.starts_with(from)) return false;
  return path.size() == from.size() || from.ends_with("/") || path[from.size()] == '/';
}

std::string JoinPath(std::string base, const std::string& rest) {
  if (base.empty()) return rest;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  if (rest.empty()) return base;
  return rest.front() == '/' ? base + rest : base + "/" + rest;
}

// Waits until `until`: sleeps to within 200 us of it, then spins, so that
// thousands of short gaps do not each overshoot by a timer's slack.
void WaitUntil(SteadyClock::time_point until) {
  const auto margin = std::chrono::microseconds(200);
  if (SteadyClock::now() + margin < until) std::this_thread::sleep_until(until - margin);
  while (SteadyClock::now() < until) {
  }
}

// Random bytes for writes and new files.
void Fill(std::byte* data, std::size_t n, std::uint64_t seed) {
  std::uint64_t x = seed | 1;
  for (std::size_t i = 0; i + 8 <= n; i += 8) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    std::memcpy(data + i, &x, 8);
  }
}

// The open files of one copy, by the trace's handle (or, for descriptors
// the trace did not show opened, by file), shared by its threads.
class Handles {
 public:
  struct Entry {
    std::mutex mutex;  // a File is used by one thread at a time
    std::unique_ptr<File> file;
  };
  std::shared_ptr<Entry> Find(std::uint64_t key) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = open_.find(key);
    return it == open_.end() ? nullptr : it->second;
  }
  void Put(std::uint64_t key, std::unique_ptr<File> file) {
    auto entry = std::make_shared<Entry>();
    entry->file = std::move(file);
    std::lock_guard<std::mutex> lock(mutex_);
    open_[key] = std::move(entry);
  }
  std::shared_ptr<Entry> Take(std::uint64_t key) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = open_.find(key);
    if (it == open_.end()) return nullptr;
    std::shared_ptr<Entry> e = std::move(it->second);
    open_.erase(it);
    return e;
  }
  // Closes what the application left open.
  void CloseAll() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [key, e] : open_) {
      if (e->file) (void)e->file->Close();
    }
    open_.clear();
  }

 private:
  std::mutex mutex_;
  std::map<std::uint64_t, std::shared_ptr<Entry>> open_;
};

// What one copy's threads share.
struct CopyRun {
  Storage* storage = nullptr;
  const AppTrace* trace = nullptr;
  const ReplayOptions* options = nullptr;
  unsigned copy = 0;
  std::vector<std::string> paths;  // by file index
  Handles handles;
  SteadyClock::time_point start;
};

// Counters the threads of every copy add to.
struct Shared {
  std::mutex mutex;
  Status failed;
  KindCounts replayed;
  std::uint64_t mismatches = 0, implicit_opens = 0;
  double compute_seconds = 0;
  SteadyClock::time_point last_end;
  std::array<metrics::LatencyHistogram, kOpKinds>* latency = nullptr;
  std::atomic<bool> stop{false};

  void Fail(const Status& s) {
    std::lock_guard<std::mutex> lock(mutex);
    if (failed.ok()) failed = s;
    stop = true;
  }
};

// One thread's replay of its operations.
class ThreadReplay {
 public:
  ThreadReplay(CopyRun& run, const TracedThread& thread, Shared& shared)
      : run_(run), thread_(thread), shared_(shared) {}

  void Run();

 private:
  Status Do(const Op& op, bool* outcome_failed);
  Result<std::shared_ptr<Handles::Entry>> FileFor(const Op& op);
  Status Transfer(const Op& op, File& file, std::uint64_t* moved);
  Status Ensure(std::size_t n);
  std::uint64_t Key(const Op& op) const {
    return op.handle != 0 ? op.handle : (std::uint64_t{1} << 40) + op.file;
  }

  CopyRun& run_;
  const TracedThread& thread_;
  Shared& shared_;
  Buffer buffer_;
  KindCounts counts_;
  std::uint64_t mismatches_ = 0, implicit_ = 0;
  double compute_ = 0;
};

Status ThreadReplay::Ensure(std::size_t n) {
  n = std::min(std::max<std::size_t>(n, 4096), kMaxBuffer);
  if (buffer_.size() >= n) return Status::OK();
  IOMIMIC_ASSIGN_OR_RETURN(buffer_, AllocateHostBuffer(*run_.storage, n, "app_replay"));
  Fill(buffer_.data(), buffer_.size(), 0x9e3779b97f4a7c15ULL + run_.copy);
  return Status::OK();
}

Result<std::shared_ptr<Handles::Entry>> ThreadReplay::FileFor(const Op& op) {
  if (std::shared_ptr<Handles::Entry> e = run_.handles.Find(Key(op))) return e;
  OpenOptions options;
  options.mode = op.kind == OpKind::kWrite ? OpenMode::kReadWrite : OpenMode::kRead;
  IOMIMIC_ASSIGN_OR_RETURN(std::unique_ptr<File> file,
                           run_.storage->Open(run_.paths[op.file], options));
  ++implicit_;
  run_.handles.Put(Key(op), std::move(file));
  return run_.handles.Find(Key(op));
}

// A read, write or mapping, in pieces of the buffer's size; *moved is the
// bytes the storage moved.
Status ThreadReplay::Transfer(const Op& op, File& file, std::uint64_t* moved) {
  std::uint64_t want = op.size;
  if (op.kind == OpKind::kRead && want == 0) want = std::min(op.requested, kEofRead);
  IOMIMIC_RETURN_IF_ERROR(
      Ensure(static_cast<std::size_t>(std::min<std::uint64_t>(want, kMaxBuffer))));
  *moved = 0;
  while (*moved < want) {
    const std::size_t n =
        static_cast<std::size_t>(std::min<std::uint64_t>(buffer_.size(), want - *moved));
    if (op.kind == OpKind::kWrite) {
      IOMIMIC_RETURN_IF_ERROR(
          file.WriteAt(op.offset + *moved, std::span<const std::byte>(buffer_.data(), n)));
      *moved += n;
      continue;
    }
    IOMIMIC_ASSIGN_OR_RETURN(const std::size_t got,
                             file.ReadAt(op.offset + *moved, std::span(buffer_.data(), n)));
    *moved += got;
    if (got < n) break;  // the file's end
  }
  return Status::OK();
}

// Makes `op`'s call; *outcome_failed says whether it failed as a call the
// application saw fail may (stat, open, rename, unlink of a missing path).
Status ThreadReplay::Do(const Op& op, bool* outcome_failed) {
  *outcome_failed = false;
  Storage& storage = *run_.storage;
  const std::string& path = run_.paths[op.file];
  if (op.failed || op.kind == OpKind::kStat) {
    Result<FileInfo> info = storage.Stat(path);
    if (!info.ok() && info.status().code() != StatusCode::kNotFound) return info.status();
    *outcome_failed = !info.ok();
    return Status::OK();
  }
  switch (op.kind) {
    case OpKind::kOpen: {
      // A directory opened without O_DIRECTORY (Python's shutil.rmtree
      // does), which only a later fstat showed: no call, as for seek.
      if (run_.trace->files[op.file].is_directory) return Status::OK();
      OpenOptions options;
      options.mode = op.read_write || (op.write && !op.truncate) ? OpenMode::kReadWrite
                     : op.write                                  ? OpenMode::kWrite
                                                                 : OpenMode::kRead;
      IOMIMIC_ASSIGN_OR_RETURN(std::unique_ptr<File> file, storage.Open(path, options));
      run_.handles.Put(Key(op), std::move(file));
      return Status::OK();
    }
    case OpKind::kMmap:  // no call: its page faults were the application's time between calls
      counts_.bytes[static_cast<std::size_t>(op.kind)] += op.size;
      return Status::OK();
    case OpKind::kRead:
    case OpKind::kWrite: {
      IOMIMIC_ASSIGN_OR_RETURN(std::shared_ptr<Handles::Entry> e, FileFor(op));
      std::lock_guard<std::mutex> lock(e->mutex);
      std::uint64_t moved = 0;
      IOMIMIC_RETURN_IF_ERROR(Transfer(op, *e->file, &moved));
      counts_.bytes[static_cast<std::size_t>(op.kind)] += moved;
      return Status::OK();
    }
    case OpKind::kSync: {
      IOMIMIC_ASSIGN_OR_RETURN(std::shared_ptr<Handles::Entry> e, FileFor(op));
      std::lock_guard<std::mutex> lock(e->mutex);
      return e->file->Sync();
    }
    case OpKind::kClose: {
      std::shared_ptr<Handles::Entry> e = run_.handles.Take(Key(op));
      if (e == nullptr) return Status::OK();  // opened before the trace, never used here
      std::lock_guard<std::mutex> lock(e->mutex);
      return e->file->Close();
    }
    case OpKind::kRename:
      return storage.Rename(path, run_.paths[op.file2]);
    case OpKind::kUnlink: {
      Status s = storage.Remove(path);
      *outcome_failed = s.code() == StatusCode::kNotFound;
      return *outcome_failed ? Status::OK() : s;
    }
    default:  // seek, fadvise: no call
      return Status::OK();
  }
}

void ThreadReplay::Run() {
  const bool recorded = run_.options->recorded_timing;
  SteadyClock::time_point previous_end = run_.start;
  std::int64_t previous_trace_end = 0;
  std::int64_t overslept_ns = 0;
  for (std::size_t i = 0; i < thread_.ops.size(); ++i) {
    if (shared_.stop || (run_.options->stop && run_.options->stop())) {
      shared_.stop = true;
      break;
    }
    const Op& op = thread_.ops[i];
    if (recorded) {
      // The gap since the previous call, less what earlier waits overslept
      // (a wake-up late on a busy host), so that the waits add up to the
      // application's own gaps.
      const std::int64_t gap = std::max<std::int64_t>(0, op.start_ns - previous_trace_end);
      const std::int64_t wait = std::max<std::int64_t>(0, gap - overslept_ns);
      overslept_ns -= gap - wait;
      const SteadyClock::time_point until = previous_end + std::chrono::nanoseconds(wait);
      if (i > 0) compute_ += static_cast<double>(gap) / 1e9;
      WaitUntil(until);
      overslept_ns += std::max<std::int64_t>(
          0,
          std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyClock::now() - until).count());
    }
    const SteadyClock::time_point t0 = SteadyClock::now();
    bool outcome_failed = false;
    Status s = Do(op, &outcome_failed);
    if (!s.ok()) {
      shared_.Fail(s.WithContext("app_replay: copy " + std::to_string(run_.copy) + ", thread " +
                                 std::to_string(thread_.tid) + ", operation " +
                                 std::to_string(i + 1) + " (" + OpName(op.kind) + " of " +
                                 run_.paths[op.file] + ")"));
      break;
    }
    (*shared_.latency)[static_cast<std::size_t>(op.kind)].Record(NanosSince(t0));
    if (recorded) {
      // The tracer's own cost of a call, which the trace's times hold.
      WaitUntil(t0 + std::chrono::nanoseconds(std::min(op.dur_ns, run_.trace->call_floor_ns)));
    }
    previous_end = SteadyClock::now();
    previous_trace_end = op.start_ns + op.dur_ns;
    const auto k = static_cast<std::size_t>(op.kind);
    ++counts_.ops[k];
    if (outcome_failed) ++counts_.failed[k];
    if (outcome_failed != op.failed) ++mismatches_;
  }
  std::lock_guard<std::mutex> lock(shared_.mutex);
  for (std::size_t k = 0; k < kOpKinds; ++k) {
    shared_.replayed.ops[k] += counts_.ops[k];
    shared_.replayed.bytes[k] += counts_.bytes[k];
    shared_.replayed.failed[k] += counts_.failed[k];
  }
  shared_.mismatches += mismatches_;
  shared_.implicit_opens += implicit_;
  shared_.compute_seconds += compute_;
  shared_.last_end = std::max(shared_.last_end, previous_end);
}

// Makes one file of one copy at `size` bytes (kept when it already is).
Status MakeFile(Storage& storage, const std::string& path, std::uint64_t size, Buffer& fill,
                ReplayFigures* figures) {
  Result<FileInfo> info = storage.Stat(path);
  if (info.ok() && !info->is_directory && info->size == size) return Status::OK();
  OpenOptions options;
  options.mode = OpenMode::kWrite;
  options.expected_size = size;
  IOMIMIC_ASSIGN_OR_RETURN(std::unique_ptr<File> file, storage.Open(path, options));
  Status status;
  for (std::uint64_t at = 0; status.ok() && at < size;) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(fill.size(), size - at));
    status = file->WriteAt(at, std::span<const std::byte>(fill.data(), n));
    at += n;
  }
  if (!status.ok()) {
    (void)file->Abort();
    return status.WithContext("app_replay: making " + path);
  }
  IOMIMIC_RETURN_IF_ERROR(file->Close());
  ++figures->setup_files;
  figures->setup_bytes += size;
  return Status::OK();
}

}  // namespace

Result<std::string> MapPath(const std::string& path, const ReplayOptions& options, unsigned copy) {
  std::string base, rest;
  std::size_t best = 0;
  bool mapped = false;
  for (const auto& [from, to] : options.map) {
    if (Covers(from, path) && (!mapped || from.size() > best)) {
      best = from.size();
      base = to;
      rest = path.substr(from.size());
      mapped = true;
    }
  }
  if (!mapped) {
    if (!path.empty() && path.front() == '/' && options.root.empty()) {
      return Status::InvalidArgument("app_replay: the trace's path " + path +
                                     " is under no --map prefix (app_replay.map) and no root "
                                     "(app_replay.root) is given");
    }
    base = options.root;
    rest = path;
  }
  if (options.total_copies > 1) base = JoinPath(base, "copy-" + std::to_string(copy));
  return JoinPath(base, rest);
}

Status SetUpFiles(Storage& storage, const AppTrace& trace, const ReplayOptions& options,
                  ReplayFigures* figures) {
  const auto t0 = SteadyClock::now();
  const bool objects = storage.capabilities().objects;
  IOMIMIC_ASSIGN_OR_RETURN(Buffer fill, AllocateHostBuffer(storage, 4u << 20, "app_replay"));
  Fill(fill.data(), fill.size(), 0x2545f4914f6cdd1dULL);
  for (unsigned c = options.first_copy; c < options.first_copy + options.copies; ++c) {
    for (const TracedFile& f : trace.files) {
      IOMIMIC_ASSIGN_OR_RETURN(const std::string path, MapPath(f.path, options, c));
      if (f.is_directory) {
        if (!objects) IOMIMIC_RETURN_IF_ERROR(storage.CreateDirectories(path));
        ++figures->setup_dirs;
        continue;
      }
      if (!objects && !Parent(path).empty()) {
        IOMIMIC_RETURN_IF_ERROR(storage.CreateDirectories(Parent(path)));
      }
      if (f.existed) {
        IOMIMIC_RETURN_IF_ERROR(MakeFile(storage, path, f.initial_size, fill, figures));
      } else {
        Status removed = storage.Remove(path);  // left by an earlier replay
        if (!removed.ok() && removed.code() != StatusCode::kNotFound) {
          // A folder made above another traced path (a program that looked
          // for a path, missed, and later used one below it: a library
          // search) is kept.
          Result<FileInfo> info = storage.Stat(path);
          if (!info.ok() || !info->is_directory) return removed;
        }
      }
    }
  }
  figures->setup_seconds = std::chrono::duration<double>(SteadyClock::now() - t0).count();
  return Status::OK();
}

Status Replay(Storage& storage, const AppTrace& trace, const ReplayOptions& options,
              ReplayFigures* figures) {
  ReplayFigures& f = *figures;
  std::vector<std::unique_ptr<CopyRun>> runs;
  for (unsigned c = options.first_copy; c < options.first_copy + options.copies; ++c) {
    auto run = std::make_unique<CopyRun>();
    run->storage = &storage;
    run->trace = &trace;
    run->options = &options;
    run->copy = c;
    for (const TracedFile& file : trace.files) {
      IOMIMIC_ASSIGN_OR_RETURN(std::string p, MapPath(file.path, options, c));
      run->paths.push_back(std::move(p));
    }
    runs.push_back(std::move(run));
  }
  Shared shared;
  shared.latency = &f.latency;
  f.start = metrics::Stamp::Now();
  shared.last_end = f.start.mono;
  std::vector<std::thread> pool;
  for (auto& run : runs) {
    run->start = f.start.mono;
    for (const TracedThread& t : trace.threads) {
      pool.emplace_back([&run, &t, &shared] { ThreadReplay(*run, t, shared).Run(); });
    }
  }
  for (std::thread& t : pool) t.join();
  for (auto& run : runs) run->handles.CloseAll();
  f.end = metrics::Stamp::Now();
  IOMIMIC_RETURN_IF_ERROR(shared.failed);
  f.replayed = shared.replayed;
  for (unsigned c = 0; c < options.copies; ++c) {
    const KindCounts once = trace.Counts();
    for (std::size_t k = 0; k < kOpKinds; ++k) {
      f.traced.ops[k] += once.ops[k];
      f.traced.bytes[k] += once.bytes[k];
      f.traced.failed[k] += once.failed[k];
    }
  }
  f.outcome_mismatches = shared.mismatches;
  f.implicit_opens = shared.implicit_opens;
  f.compute_seconds = shared.compute_seconds;
  f.threads = trace.threads.size();
  f.copies = options.copies;
  f.original_seconds = static_cast<double>(trace.span_ns()) / 1e9;
  f.call_floor_seconds = static_cast<double>(trace.call_floor_ns) / 1e9;
  f.replay_seconds = std::chrono::duration<double>(shared.last_end - f.start.mono).count();
  f.stopped = shared.stop && shared.failed.ok();
  return Status::OK();
}

}  // namespace iomimic::apptrace
