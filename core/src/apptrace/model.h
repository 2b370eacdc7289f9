// The in-memory model of a recorded application's I/O (docs/replay.md,
// "The model"), which every trace reader of this folder fills and the
// replay (apptrace/replay.h) runs: per thread, its file operations in the
// order it made them, with offsets, sizes, start times and durations; and
// the files they touched, with the sizes the trace showed.

#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "iomimic/status.h"

namespace iomimic::apptrace {

enum class OpKind : std::uint8_t {
  kOpen,
  kRead,
  kWrite,
  kSeek,
  kSync,
  kClose,
  kMmap,
  kStat,
  kFadvise,
  kRename,
  kUnlink,
};
inline constexpr std::size_t kOpKinds = 11;

// "open", "read", ... (summary.json's keys and the histograms' suffixes).
const char* OpName(OpKind kind);

inline constexpr std::uint32_t kNoFile = 0xffffffffu;

// One operation of one thread.
struct Op {
  OpKind kind = OpKind::kRead;
  bool failed = false;            // the call returned an error (kept, replayed as an attempt)
  std::uint32_t file = kNoFile;   // index into AppTrace::files
  std::uint32_t file2 = kNoFile;  // kRename: the new name
  // The open instance the operation goes through (one per successful open,
  // from 1; 0 = none, or a descriptor opened before the trace began).
  std::uint32_t handle = 0;
  std::uint64_t offset = 0;     // reads, writes, mmap: where; kSeek: the new position
  std::uint64_t size = 0;       // bytes moved (reads, writes), mapped (mmap)
  std::uint64_t requested = 0;  // reads: bytes asked for
  // kOpen: what the call asked for.
  bool write = false, read_write = false, create = false, truncate = false;
  std::int64_t start_ns = 0;  // from the trace's first operation
  std::int64_t dur_ns = 0;
};

struct TracedFile {
  std::string path;  // as the application named it (absolute when the trace knew it)
  // The size the file had before the application wrote to it: the largest
  // size a stat reported and the end of the furthest read or mapping.
  std::uint64_t initial_size = 0;
  bool existed = false;       // something read, stat'ed or opened it without creating it
  bool is_directory = false;  // a stat said so
};

struct TracedThread {
  std::int64_t tid = 0;  // as the trace names it
  std::vector<Op> ops;
};

// Operations and bytes by kind.
struct KindCounts {
  std::array<std::uint64_t, kOpKinds> ops{}, bytes{}, failed{};
  void Add(const Op& op) {
    const auto k = static_cast<std::size_t>(op.kind);
    ++ops[k];
    bytes[k] += op.size;
    if (op.failed) ++failed[k];
  }
};

struct AppTrace {
  std::string source;  // the trace file
  std::string format;  // "strace", "dftracer", "darshan-dxt"
  std::vector<TracedThread> threads;
  std::vector<TracedFile> files;
  // Calls the reader saw and did not model, by name ("ioctl", "read of a
  // pipe", "open of a directory"): what the replay leaves out.
  std::map<std::string, std::uint64_t> ignored;
  // The median duration of the calls that move no data (seek, close,
  // fadvise; 0 with fewer than 8): what the tracer itself adds to a call
  // (strace's ptrace stops), which the replay at recorded timing spends on
  // each call too (docs/replay.md, "Timing").
  std::int64_t call_floor_ns = 0;

  // From the first operation's start to the last one's end.
  std::int64_t span_ns() const;
  KindCounts Counts() const;
  std::uint64_t op_count() const;
};

// Builds an AppTrace: files by path, threads by id, handles by descriptor.
class TraceBuilder {
 public:
  TraceBuilder(std::string source, std::string format);

  std::uint32_t File(const std::string& path);
  TracedFile& file(std::uint32_t i) { return trace_.files[i]; }
  // Appends `op` (start_ns absolute, any origin) to thread `tid`.
  void Add(std::int64_t tid, Op op);
  void Ignore(const std::string& what) { ++trace_.ignored[what]; }
  // Notes what `op` says about its file's size and existence before any
  // write; call in the order of the trace.
  void Observe(const Op& op, std::uint64_t stat_size, bool stat_dir);
  std::uint32_t NewHandle() { return ++handles_; }

  // The trace: times from the first operation, threads in order of their
  // first operation. InvalidArgument naming the file when it holds no
  // operation on a file.
  Result<AppTrace> Finish();

 private:
  AppTrace trace_;
  std::map<std::string, std::uint32_t> by_path_;
  std::map<std::int64_t, std::size_t> by_tid_;
  std::vector<bool> written_;
  std::uint32_t handles_ = 0;
};

// Reads `path` as the format its name or first bytes say: Darshan DXT text
// (.dxt, .dxt.gz, or a "# DXT, file_id:" line), DFTracer (.pfw, .pfw.gz,
// or JSON lines), else strace text; a binary .darshan log is
// InvalidArgument naming the conversion. Errors name FILE:LINE.
Result<AppTrace> ReadTrace(const std::string& path);

}  // namespace iomimic::apptrace
