#include "apptrace/model.h"

#include <algorithm>
#include <limits>
#include <vector>

namespace iomimic::apptrace {

const char* OpName(OpKind kind) {
  static constexpr const char* kNames[kOpKinds] = {
      "open", "read", "write",   "seek",   "sync",   "close",
      "mmap", "stat", "fadvise", "rename", "unlink",
  };
  return kNames[static_cast<std::size_t>(kind)];
}

std::int64_t AppTrace::span_ns() const {
  std::int64_t first = std::numeric_limits<std::int64_t>::max(), last = 0;
  for (const TracedThread& t : threads) {
    for (const Op& op : t.ops) {
      first = std::min(first, op.start_ns);
      last = std::max(last, op.start_ns + op.dur_ns);
    }
  }
  return last > first ? last - first : 0;
}

KindCounts AppTrace::Counts() const {
  KindCounts counts;
  for (const TracedThread& t : threads) {
    for (const Op& op : t.ops) counts.Add(op);
  }
  return counts;
}

std::uint64_t AppTrace::op_count() const {
  std::uint64_t n = 0;
  for (const TracedThread& t : threads) n += t.ops.size();
  return n;
}

TraceBuilder::TraceBuilder(std::string source, std::string format) {
  trace_.source = std::move(source);
  trace_.format = std::move(format);
}

std::uint32_t TraceBuilder::File(const std::string& path) {
  auto [it, added] = by_path_.try_emplace(path, static_cast<std::uint32_t>(trace_.files.size()));
  if (added) {
    trace_.files.push_back(TracedFile{path});
    written_.push_back(false);
  }
  return it->second;
}

void TraceBuilder::Add(std::int64_t tid, Op op) {
  auto [it, added] = by_tid_.try_emplace(tid, trace_.threads.size());
  if (added) trace_.threads.push_back(TracedThread{tid, {}});
  trace_.threads[it->second].ops.push_back(op);
}

void TraceBuilder::Observe(const Op& op, std::uint64_t stat_size, bool stat_dir) {
  if (op.file == kNoFile) return;
  TracedFile& f = trace_.files[op.file];
  const bool before_writes = !written_[op.file];
  if (op.failed) return;
  switch (op.kind) {
    case OpKind::kOpen:
      if (op.truncate || (op.create && !f.existed)) {
        written_[op.file] = true;
      } else if (before_writes) {
        f.existed = true;
      }
      break;
    case OpKind::kStat:
      if (before_writes) {
        f.existed = true;
        f.initial_size = std::max(f.initial_size, stat_size);
        f.is_directory = f.is_directory || stat_dir;
      }
      break;
    case OpKind::kRead:
    case OpKind::kMmap:
      if (before_writes) {
        f.existed = true;
        if (op.kind == OpKind::kRead || op.size > 0) {
          f.initial_size = std::max(f.initial_size, op.offset + op.size);
        }
      }
      break;
    case OpKind::kWrite:
      written_[op.file] = true;
      break;
    case OpKind::kRename:
      if (op.file2 != kNoFile) written_[op.file2] = true;
      if (before_writes) f.existed = true;
      break;
    case OpKind::kUnlink:
      if (before_writes) f.existed = true;
      break;
    default:
      break;
  }
}

Result<AppTrace> TraceBuilder::Finish() {
  if (trace_.op_count() == 0) {
    return Status::InvalidArgument(trace_.source + ": no operation on a file in this " +
                                   trace_.format + " trace");
  }
  std::int64_t first = std::numeric_limits<std::int64_t>::max();
  for (const TracedThread& t : trace_.threads) {
    for (const Op& op : t.ops) first = std::min(first, op.start_ns);
  }
  std::vector<std::int64_t> plain;
  for (TracedThread& t : trace_.threads) {
    for (Op& op : t.ops) {
      op.start_ns -= first;
      const bool no_data =
          op.kind == OpKind::kSeek || op.kind == OpKind::kClose || op.kind == OpKind::kFadvise;
      if (no_data && !op.failed) plain.push_back(op.dur_ns);
    }
  }
  if (plain.size() >= 8) {
    std::nth_element(plain.begin(), plain.begin() + plain.size() / 2, plain.end());
    trace_.call_floor_ns = plain[plain.size() / 2];
  }
  std::stable_sort(trace_.threads.begin(), trace_.threads.end(),
                   [](const TracedThread& a, const TracedThread& b) {
                     return a.ops.front().start_ns < b.ops.front().start_ns;
                   });
  return std::move(trace_);
}

}  // namespace iomimic::apptrace
