// A minimal io-trace CSV writer. TO BE REPLACED by kvcache/trace.{h,cpp}
// (branch wt-kvref), which writes and reads the same format.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "kvcache/op_sink.h"

namespace iomimic::kvcache {
namespace {

class CsvTrace final : public OpSink {
 public:
  CsvTrace(std::FILE* file, std::string path) : file_(file), path_(std::move(path)) {
    std::fputs("Timestamp,Operation,Object_Size_Bytes,Tier,Key,Phase\n", file_);
  }
  ~CsvTrace() override {
    if (file_ != nullptr) std::fclose(file_);
  }
  void Record(const OpEvent& e) override {
    if (e.kind == OpEvent::Kind::kDelete) return;  // the reference logs reads and writes
    std::lock_guard<std::mutex> lock(mutex_);
    std::fprintf(file_, "%.6f,%s,%llu,Tier-%d,%.*s,%.*s\n", e.unix_seconds,
                 e.kind == OpEvent::Kind::kRead ? "Read" : "Write",
                 static_cast<unsigned long long>(e.bytes), static_cast<int>(e.tier),
                 static_cast<int>(e.key.size()), e.key.data(), static_cast<int>(e.phase.size()),
                 e.phase.data());
  }
  Status Close() override {
    std::lock_guard<std::mutex> lock(mutex_);
    const bool failed = std::ferror(file_) != 0;
    const int closed = std::fclose(file_);
    file_ = nullptr;
    if (failed || closed != 0) {
      return Status::IOError("kv_cache.io_trace_log: writing " + path_ + ": " +
                             std::strerror(errno));
    }
    return Status::OK();
  }

 private:
  std::mutex mutex_;
  std::FILE* file_;
  std::string path_;
};

}  // namespace

Result<std::unique_ptr<OpSink>> OpenCsvTrace(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    return Status::IOError("kv_cache.io_trace_log: cannot create " + path + ": " +
                           std::strerror(errno));
  }
  return std::unique_ptr<OpSink>(std::make_unique<CsvTrace>(f, path));
}

}  // namespace iomimic::kvcache
