#include "metrics/trace.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace iomimic::metrics {
namespace {

std::atomic<std::uint64_t> next_tracer_id{1};

// The calling thread's buffer of the tracer it last recorded for.
struct ThreadSlot {
  std::uint64_t tracer = 0;
  void* buffer = nullptr;
};
thread_local ThreadSlot slot;

std::int64_t Ns(Tracer::Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

// Microseconds, rounded down, so that an event inside another stays inside
// after rounding (start and end are rounded alike).
std::int64_t FloorMicros(std::int64_t ns) { return ns >= 0 ? ns / 1000 : -((-ns + 999) / 1000); }

// `text` as a JSON string's content: quotes, backslashes and control
// characters escaped (paths are bytes; others pass as they are).
void PutJsonText(std::FILE* f, const std::string& text) {
  for (const char ch : text) {
    const auto u = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      std::fputc('\\', f);
      std::fputc(ch, f);
    } else if (u < 0x20) {
      std::fprintf(f, "\\u%04x", u);
    } else {
      std::fputc(ch, f);
    }
  }
}

// `arg` as ,"key":value (no comma when `*first`).
void PutArg(std::FILE* f, const TraceArg& arg, bool* first) {
  if (arg.key == nullptr) return;
  std::fprintf(f, "%s\"%s\":%lld", *first ? "" : ",", arg.key, static_cast<long long>(arg.value));
  *first = false;
}

}  // namespace

Tracer::Tracer() : id_(next_tracer_id.fetch_add(1)) {}

void Tracer::Enable(std::uint64_t max_events) {
  max_events_ = max_events;
  enabled_ = true;
}

Tracer::Buffer* Tracer::ThreadBuffer() {
  if (slot.tracer == id_) return static_cast<Buffer*>(slot.buffer);
  std::lock_guard<std::mutex> lock(mutex_);
  buffers_.push_back(std::make_unique<Buffer>());
  Buffer* b = buffers_.back().get();
  b->tid = static_cast<int>(buffers_.size());
  b->events.reserve(1024);
  slot.tracer = id_;
  slot.buffer = b;
  return b;
}

void Tracer::Complete(const char* category, const char* name, Clock::time_point start,
                      Clock::time_point end, Arg a, Arg b, Arg c, std::uint32_t file) {
  if (!enabled_) return;
  if (reserved_.fetch_add(1, std::memory_order_relaxed) >= max_events_) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  ThreadBuffer()->events.push_back(Event{category, name, Ns(start), Ns(end), a, b, c, file, 0});
}

void Tracer::Complete2(const char* category, const char* name, Clock::time_point start,
                       Clock::time_point end, std::uint32_t file, std::uint32_t file2) {
  if (!enabled_) return;
  if (reserved_.fetch_add(1, std::memory_order_relaxed) >= max_events_) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  ThreadBuffer()->events.push_back(
      Event{category, name, Ns(start), Ns(end), {}, {}, {}, file, file2});
}

std::uint32_t Tracer::InternFile(const std::string& path) {
  if (!enabled_) return 0;
  std::lock_guard<std::mutex> lock(files_mutex_);
  auto it = file_ids_.find(path);
  if (it != file_ids_.end()) return it->second;
  files_.push_back(path);
  const auto id = static_cast<std::uint32_t>(files_.size());
  file_ids_.emplace(path, id);
  return id;
}

std::uint64_t Tracer::recorded() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::uint64_t n = 0;
  for (const auto& b : buffers_) n += b->events.size();
  return n;
}

std::uint64_t Tracer::dropped() const { return dropped_.load(std::memory_order_relaxed); }

Status Tracer::Write(const std::string& path, int pid, Clock::time_point origin) const {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return Status::IOError(path + ": " + std::strerror(errno));
  std::lock_guard<std::mutex> lock(mutex_);
  std::lock_guard<std::mutex> files_lock(files_mutex_);
  const std::int64_t origin_ns = Ns(origin);
  std::fprintf(f, "[\n");
  std::fprintf(f,
               "{\"id\":0,\"name\":\"process_name\",\"cat\":\"iomimic\",\"pid\":%d,\"tid\":0,"
               "\"ph\":\"M\",\"args\":{\"name\":\"rank %d\"}}\n",
               pid, pid);
  std::uint64_t id = 1;
  for (const auto& b : buffers_) {
    std::fprintf(f,
                 "{\"id\":%llu,\"name\":\"thread_name\",\"cat\":\"iomimic\",\"pid\":%d,"
                 "\"tid\":%d,\"ph\":\"M\",\"args\":{\"name\":\"thread %d\"}}\n",
                 static_cast<unsigned long long>(id++), pid, b->tid, b->tid);
  }
  for (const auto& b : buffers_) {
    for (const Event& e : b->events) {
      const std::int64_t ts = FloorMicros(e.start_ns - origin_ns);
      const std::int64_t end = FloorMicros(e.end_ns - origin_ns);
      std::fprintf(f,
                   "{\"id\":%llu,\"name\":\"%s\",\"cat\":\"%s\",\"pid\":%d,\"tid\":%d,"
                   "\"ts\":%lld,\"dur\":%lld,\"ph\":\"X\",\"args\":{",
                   static_cast<unsigned long long>(id++), e.name, e.category, pid, b->tid,
                   static_cast<long long>(ts), static_cast<long long>(end - ts));
      bool first = true;
      if (e.file != 0 && e.file <= files_.size()) {
        std::fputs("\"fname\":\"", f);
        PutJsonText(f, files_[e.file - 1]);
        std::fputc('"', f);
        first = false;
      }
      if (e.file2 != 0 && e.file2 <= files_.size()) {
        std::fputs(first ? "\"new_fname\":\"" : ",\"new_fname\":\"", f);
        PutJsonText(f, files_[e.file2 - 1]);
        std::fputc('"', f);
        first = false;
      }
      PutArg(f, e.a, &first);
      PutArg(f, e.b, &first);
      PutArg(f, e.c, &first);
      std::fprintf(f, "}}\n");
    }
  }
  const bool failed = std::ferror(f) != 0;
  if (std::fclose(f) != 0 || failed) return Status::IOError(path + ": write failed");
  return Status::OK();
}

}  // namespace iomimic::metrics
