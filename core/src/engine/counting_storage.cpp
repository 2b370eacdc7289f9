#include "engine/counting_storage.h"

#include <chrono>

namespace iomimic::engine {
namespace {

using Clock = std::chrono::steady_clock;

std::uint64_t NanosSince(Clock::time_point t) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t).count());
}

class CountingFile final : public File {
 public:
  CountingFile(std::unique_ptr<File> inner, IoCounters* counters)
      : inner_(std::move(inner)), c_(counters) {}
  // A file dropped without Close is closed by its destructor: time that.
  ~CountingFile() override {
    if (closed_) return;
    auto t = Clock::now();
    inner_.reset();
    c_->close_latency.Record(NanosSince(t));
  }

  Result<std::size_t> ReadAt(std::uint64_t offset, std::span<std::byte> destination) override {
    auto t = Clock::now();
    Result<std::size_t> r = inner_->ReadAt(offset, destination);
    c_->read_latency.Record(NanosSince(t));
    c_->read_ops.fetch_add(1, std::memory_order_relaxed);
    if (r.ok()) {
      c_->read_bytes.fetch_add(*r, std::memory_order_relaxed);
    } else {
      c_->errors.fetch_add(1, std::memory_order_relaxed);
    }
    return r;
  }

  Status WriteAt(std::uint64_t offset, std::span<const std::byte> source) override {
    auto t = Clock::now();
    return CountWrite(t, source.size(), inner_->WriteAt(offset, source));
  }

  Status WriteAtAll(std::uint64_t offset, std::span<const std::byte> source) override {
    auto t = Clock::now();
    Status s = inner_->WriteAtAll(offset, source);
    if (source.empty() && s.ok()) return s;  // took part, wrote nothing
    return CountWrite(t, source.size(), std::move(s));
  }

  Status CountWrite(Clock::time_point t, std::size_t bytes, Status s) {
    c_->write_latency.Record(NanosSince(t));
    c_->write_ops.fetch_add(1, std::memory_order_relaxed);
    if (s.ok()) {
      c_->write_bytes.fetch_add(bytes, std::memory_order_relaxed);
    } else {
      c_->errors.fetch_add(1, std::memory_order_relaxed);
    }
    return s;
  }

  Status ReadBatch(std::span<ReadRequest> requests) override {
    auto t = Clock::now();
    Status s = inner_->ReadBatch(requests);
    std::uint64_t per = requests.empty() ? 0 : NanosSince(t) / requests.size();
    for (const ReadRequest& r : requests) {
      c_->read_latency.Record(per);
      c_->read_ops.fetch_add(1, std::memory_order_relaxed);
      c_->read_bytes.fetch_add(r.bytes_read, std::memory_order_relaxed);
      if (!r.status.ok()) c_->errors.fetch_add(1, std::memory_order_relaxed);
    }
    return s;
  }

  Status Sync() override {
    c_->syncs.fetch_add(1, std::memory_order_relaxed);
    auto t = Clock::now();
    Status s = inner_->Sync();
    c_->fsync_latency.Record(NanosSince(t));
    return s;
  }
  Result<std::uint64_t> Size() override { return inner_->Size(); }
  Status Close() override {
    auto t = Clock::now();
    Status s = inner_->Close();
    if (!closed_) c_->close_latency.Record(NanosSince(t));
    closed_ = true;
    return s;
  }
  const std::string& path() const override { return inner_->path(); }

 private:
  std::unique_ptr<File> inner_;
  IoCounters* c_;
  bool closed_ = false;
};

}  // namespace

Result<std::unique_ptr<File>> CountingStorage::Open(const std::string& path,
                                                    const OpenOptions& options) {
  auto t = Clock::now();
  Result<std::unique_ptr<File>> f = inner_->Open(path, options);
  counters_.open_latency.Record(NanosSince(t));
  if (!f.ok()) {
    counters_.errors.fetch_add(1, std::memory_order_relaxed);
    return f.status();
  }
  counters_.opens.fetch_add(1, std::memory_order_relaxed);
  return std::unique_ptr<File>(new CountingFile(std::move(f).value(), &counters_));
}

Result<FileInfo> CountingStorage::Stat(const std::string& path) {
  auto t = Clock::now();
  Result<FileInfo> info = inner_->Stat(path);
  counters_.stat_latency.Record(NanosSince(t));
  return info;
}

IoSnapshot CountingStorage::Snapshot() const {
  IoSnapshot s;
  s.opens = counters_.opens.load();
  s.read_ops = counters_.read_ops.load();
  s.read_bytes = counters_.read_bytes.load();
  s.write_ops = counters_.write_ops.load();
  s.write_bytes = counters_.write_bytes.load();
  s.syncs = counters_.syncs.load();
  s.errors = counters_.errors.load();
  return s;
}

}  // namespace iomimic::engine
