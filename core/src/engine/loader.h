// The data loader: reader threads that fill a bounded prefetch window.
//
// Batch `step` of an epoch is read by reader thread `step mod T` (PyTorch's
// round robin over workers). At most `depth` batches are in flight or ready
// at once, so memory stays bounded by the prefetch depth whatever the dataset
// size; the consumer takes batches strictly in step order. With 0 reader
// threads the consumer reads each batch itself when it asks for it (no
// overlap, as PyTorch with num_workers=0). With a collective storage back end
// (MPI-IO) the consumer reads each step itself with one collective request.
//
// Batches carry counts and timings, not data: samples are read into each
// reader's own buffers (allocated by the storage back end) and dropped, as
// DLIO drops what it reads. Like DLIO's collate step, each sample then puts
// the fixed "resized" tensor (record_length_bytes_resize or
// transformed_record_dims) into the reader's batch buffer, so the memory
// traffic of building batches is part of the emulation.

#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/compute.h"
#include "engine/session.h"
#include "plan/plan.h"

namespace iomimic::engine {

// Bytes of the tensor DLIO's readers return per sample (§1.6 resized_image):
// transformed_record_dims x element size, else floor(sqrt(resize))^2, else
// floor(sqrt(record_length_bytes))^2.
std::uint64_t ResizedSampleBytes(const config::Config& config);

struct BatchInfo {
  std::uint64_t step = 0;
  std::uint64_t samples = 0;
  std::uint64_t sample_bytes = 0;     // payload bytes returned by the format
  std::vector<plan::SampleRef> refs;  // only when sample logging is on
};

class Loader {
 public:
  // Starts the reader threads. `epoch` seeds preprocess-time draws.
  Loader(Session& session, const plan::EpochPlan& plan, plan::Split split, std::uint64_t epoch,
         bool log_samples);
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  // Blocks until the next batch (in step order) is ready. An error names the
  // file and sample that failed; after an error the loader is stopped.
  Result<BatchInfo> Next();

  // Stops the readers and waits for them. Idempotent.
  void Stop();

  std::uint64_t depth() const { return depth_; }

 private:
  struct Slot {
    std::uint64_t step = UINT64_MAX;
    bool ready = false;
    Status status;
    BatchInfo batch;
  };
  class Reader;

  void ReaderMain(std::uint64_t thread_index);
  Status ReadBatch(Reader& reader, std::uint64_t step, BatchInfo* out);
  // Collective back ends: the consumer reads a whole step with one
  // ReadBatch call on the shared data file, in lockstep with the other ranks.
  Status ReadCollectiveStep(std::uint64_t step, BatchInfo* out);

  Session& session_;
  const plan::EpochPlan& plan_;
  plan::Split split_;
  std::uint64_t epoch_;
  bool log_samples_;
  std::uint64_t depth_ = 1;
  std::uint64_t next_step_ = 0;  // consumer position

  std::mutex mutex_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::vector<Slot> slots_;
  std::vector<std::thread> threads_;
  std::unique_ptr<Reader> inline_reader_;  // for 0 reader threads and collective reads
  bool collective_ = false;
  std::map<std::string, std::unique_ptr<FileReader>> collective_readers_;
  Buffer step_buffer_;
};

}  // namespace iomimic::engine
