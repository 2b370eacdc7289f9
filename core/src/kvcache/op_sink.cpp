// The io-trace sink: kvcache/trace.h's writer (the reference's format).
#include "kvcache/op_sink.h"

#include <mutex>

#include "kvcache/trace.h"

namespace iomimic::kvcache {
namespace {

class TraceSink final : public OpSink {
 public:
  explicit TraceSink(std::unique_ptr<TraceWriter> writer) : writer_(std::move(writer)) {}
  void Record(const OpEvent& e) override {
    if (e.kind == OpEvent::Kind::kDelete) return;  // the reference logs reads and writes
    TraceRow row;
    row.timestamp = e.unix_seconds;
    row.op = e.kind == OpEvent::Kind::kRead ? TraceOp::kRead : TraceOp::kWrite;
    row.size = e.bytes;
    row.tier = static_cast<int>(e.tier);
    row.key.assign(e.key);
    row.phase = e.phase == "Prefill"  ? TracePhase::kPrefill
                : e.phase == "Decode" ? TracePhase::kDecode
                : e.phase == "Evict"  ? TracePhase::kEvict
                                      : TracePhase::kNone;
    Status st = writer_->Write(row);
    if (!st.ok()) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (first_error_.ok()) first_error_ = st;
    }
  }
  Status Close() override {
    Status closed = writer_->Close();
    std::lock_guard<std::mutex> lock(mutex_);
    return first_error_.ok() ? closed : first_error_;
  }

 private:
  std::unique_ptr<TraceWriter> writer_;
  std::mutex mutex_;
  Status first_error_;
};

}  // namespace

Result<std::unique_ptr<OpSink>> OpenCsvTrace(const std::string& path) {
  Result<std::unique_ptr<TraceWriter>> writer = TraceWriter::Open(path);
  if (!writer.ok()) return writer.status().WithContext("kv_cache.io_trace_log");
  return std::unique_ptr<OpSink>(std::make_unique<TraceSink>(std::move(writer).value()));
}

}  // namespace iomimic::kvcache
