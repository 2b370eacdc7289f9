// The data loader: reader threads that fill a bounded prefetch window.
//
// Batch `step` of an epoch is read by reader thread `step mod T` (PyTorch's
// round robin over workers). A streamed format (TFRecord, Parquet) is read
// as tf.data reads it instead: each reader thread streams whole files, T
// files at a time, and a batch takes records from the T files in turn
// (plan::StreamSchedule), so every file is read once per pass whatever T is.
// At most `depth` batches are in flight or ready at once, so memory stays
// bounded by the prefetch depth whatever the dataset size; the consumer
// takes batches strictly in step order. With work sharing
// (iomimic.reader_work_sharing, docs/performance.md) a reader that the window
// holds back, or that has no step left, reads unclaimed samples of the oldest
// unfinished batch instead of sleeping; the batches stay the same. With 0 reader
// threads the consumer reads each batch itself when it asks for it (no
// overlap, as PyTorch with num_workers=0). With a collective storage back end
// (MPI-IO) the consumer reads each step itself with one collective request.
//
// Batches carry counts and timings, not data: samples are read into each
// reader's own buffers (allocated by the storage back end, pooled for the
// run) and dropped, as DLIO drops what it reads. Like DLIO's collate step,
// each decoded sample then puts the fixed "resized" tensor
// (record_length_bytes_resize or transformed_record_dims) into the reader's
// batch buffer, so the memory traffic of building batches is part of the
// emulation; with reader.decode off (storage alone) there is no collate.

#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "plan/plan.h"
#include "session/session.h"
#include "train/compute.h"

namespace iomimic::train {

// Bytes of the tensor DLIO's readers return per sample (docs/dlio-compat.md §1.6,
// resized image):
// transformed_record_dims x element size, else floor(sqrt(resize))^2, else
// floor(sqrt(record_length_bytes))^2.
std::uint64_t ResizedSampleBytes(const config::Config& config);

struct BatchInfo {
  std::uint64_t step = 0;
  // When the batch was complete (set by the reader that read it).
  std::chrono::steady_clock::time_point ready{};
  // When the consumer took it: before the loader wakes the reader that
  // refills the slot, so that wake-up is not counted as data wait.
  std::chrono::steady_clock::time_point taken{};
  std::uint64_t samples = 0;
  std::uint64_t sample_bytes = 0;     // payload bytes returned by the format
  std::vector<plan::SampleRef> refs;  // only when sample logging is on
};

// Wakes a consumer that serves several loaders (one per emulated accelerator
// of the process) when any of them completes a batch: a sequence number
// bumped on every completion, waited on as a futex.
class ReadySignal {
 public:
  std::uint32_t current() const { return sequence_.load(std::memory_order_acquire); }
  void Notify() {
    sequence_.fetch_add(1, std::memory_order_acq_rel);
    sequence_.notify_all();
  }
  // Returns once the sequence differs from `seen`.
  void WaitChange(std::uint32_t seen) const { sequence_.wait(seen, std::memory_order_acquire); }

 private:
  std::atomic<std::uint32_t> sequence_{0};
};

// One loader serves every pass (training epochs and evaluations) of a run:
// its reader threads, their buffer pools and their batch buffers are made
// once and live until the loader is destroyed, so no epoch starts by
// allocating, zero-filling or faulting in memory (docs/performance.md).
class Loader {
 public:
  // `accelerator` (the run-wide accelerator id) seeds what each reader draws.
  // `signal`, when set, is notified whenever a reader completes a batch.
  Loader(session::Session& session, std::uint64_t accelerator, ReadySignal* signal = nullptr);
  // Stops and joins the reader threads.
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  // Begins a pass over `plan`, which must stay alive until Finish. `epoch`
  // seeds preprocess-time draws. Starts reader threads the first time a
  // pass needs them. Precondition: the previous pass was finished.
  void Start(const plan::EpochPlan& plan, plan::Split split, std::uint64_t epoch, bool log_samples);

  // Blocks until the next batch (in step order) is ready. An error names the
  // file and sample that failed; after an error the pass is stopped.
  Result<BatchInfo> Next();

  // Next without blocking: true and the batch in `out` when the next batch
  // is ready, false when it is not yet. With 0 reader threads it reads the
  // batch itself (always ready).
  Result<bool> TryNext(BatchInfo* out);

  // Ends the pass: stops readers still working on it and waits until all are
  // idle. Idempotent.
  void Finish();

  // Batches in flight or ready at most during the current pass.
  std::uint64_t depth() const { return depth_; }

 private:
  struct Slot {
    std::uint64_t step = UINT64_MAX;
    bool ready = false;
    Status status;
    BatchInfo batch;
  };
  // A batch being read with work sharing (iomimic.reader_work_sharing): its
  // samples are claimed one at a time by the reader that owns the step and
  // by readers the window holds back; whoever finishes the last one
  // publishes the batch. A streamed pass uses it too, without claims: the
  // readers of the batch's files count its samples down. One per window
  // slot, reset (under mutex_) when its step enters the window; `step` tells
  // a late claimer that the slot has moved on.
  struct Work {
    std::mutex mutex;
    std::uint64_t step = UINT64_MAX;
    std::uint64_t next = 0;  // first sample not yet claimed
    std::uint64_t left = 0;  // samples not yet finished
    BatchInfo batch;         // counts so far; refs by sample index
    Status status;           // the first failure

    // Under `mutex`: counts a sample whose payload was `bytes`.
    void Add(std::uint64_t bytes) {
      batch.samples += 1;
      batch.sample_bytes += bytes;
    }
    // Under `mutex`: hands over the batch and its status for Publish,
    // leaving empty counts behind.
    std::pair<BatchInfo, Status> Finish() {
      std::pair<BatchInfo, Status> out{std::move(batch), status};
      batch = BatchInfo();
      return out;
    }
  };
  class Reader;
  // Samples of a step that left the shuffle buffer before the step entered
  // the prefetch window (or, inline, before the consumer asked for it).
  struct Pending {
    std::uint64_t samples = 0;
    std::uint64_t bytes = 0;
    Status status;
    std::vector<std::pair<std::uint64_t, plan::SampleRef>> refs;  // (index, ref) when logged

    void Add(std::uint64_t index, const plan::SampleRef& ref, std::uint64_t payload, bool log) {
      samples += 1;
      bytes += payload;
      if (log) refs.emplace_back(index, ref);
    }
  };

  // Next (wait) and TryNext (no wait): takes the next step's batch.
  Result<bool> Take(BatchInfo* out, bool wait);
  void ReaderMain(std::uint64_t thread_index);
  // Runs this thread's steps of the current pass.
  void RunPass(Reader& reader, std::uint64_t thread_index, std::uint64_t threads);
  // Streamed formats: reads the samples of cycle slot `thread_index` in
  // position order, each when its step is inside the prefetch window, and
  // publishes every batch whose last sample it reads.
  void RunStreamPass(Reader& reader, std::uint64_t thread_index);
  Status ReadBatch(Reader& reader, std::uint64_t step, BatchInfo* out);
  // Reads sample `index` of `step` with `reader`; adds its payload bytes.
  Status ReadSampleOf(Reader& reader, std::uint64_t step, std::uint64_t index,
                      std::uint64_t* bytes);
  // Reads `ref`, which lands at `index` of its batch; adds its payload bytes.
  Status ReadRef(Reader& reader, const plan::SampleRef& ref, std::uint64_t index,
                 std::uint64_t* bytes);
  // Work sharing: reads unclaimed samples of `step` until none is left,
  // publishing the batch if this thread finishes its last sample. An error
  // is that of a sample this thread read. `helping`: the step is another
  // reader's (counted in Session::shared_samples).
  Status Drain(Reader& reader, std::uint64_t step, bool helping);
  // Work sharing: the oldest step in the window with an unclaimed sample,
  // or UINT64_MAX. Called with mutex_ held.
  std::uint64_t StepToHelp();
  // Work sharing: makes `step`'s slot ready for claims. Called with mutex_
  // held (or before the pass is published). Streamed passes with a shuffle
  // buffer: also counts the step's samples waiting in pending_; true when
  // that makes the batch whole (or failed), so the caller publishes it.
  bool ResetWork(std::uint64_t step);
  // Stores a finished batch in its slot and wakes the consumer if it waits
  // for it.
  void Publish(std::uint64_t step, BatchInfo batch, Status status);
  // Collective back ends: the consumer reads a whole step with one
  // ReadBatch call on the shared data file, in lockstep with the other ranks.
  Status ReadCollectiveStep(std::uint64_t step, BatchInfo* out);

  session::Session& session_;
  const std::uint64_t accelerator_;
  ReadySignal* const signal_;
  const bool collective_;
  // The current pass (valid between Start and Finish).
  const plan::EpochPlan* plan_ = nullptr;
  plan::Split split_ = plan::Split::kTrain;
  std::uint64_t epoch_ = 0;
  bool log_samples_ = false;
  bool from_memory_ = false;          // the pass makes no I/O (read_once, startup_load)
  std::uint64_t passes_[2] = {0, 0};  // passes started, per split (train, eval)
  std::uint64_t threads_ = 0;         // reader threads working on the pass
  std::uint64_t depth_ = 1;
  std::uint64_t next_step_ = 0;   // consumer position
  bool sharing_ = false;          // iomimic.reader_work_sharing applies to this pass
  bool streaming_ = false;        // a streamed format read by reader threads
  plan::StreamSchedule stream_;   // who reads what, when streaming_
  std::unique_ptr<Work[]> work_;  // one per window slot when sharing_ or streaming_
  std::uint64_t work_slots_ = 0;
  bool in_pass_ = false;
  // Streamed formats with a sample shuffle: emit_[p] is the batch position
  // of the sample read at stream position p (plan::ShuffleBufferOrder);
  // empty otherwise. buffer_lag_ = bufsize - 1. pending_ is guarded by
  // mutex_ when reader threads read; inline_read_ is the inline reader's
  // next stream position.
  std::vector<std::uint64_t> emit_;
  std::uint64_t buffer_lag_ = 0;
  std::map<std::uint64_t, Pending> pending_;
  std::uint64_t inline_read_ = 0;

  // mutex_ guards the pass state below. cv_ carries the pass lifecycle
  // (Start, Finish, shutdown, threads going idle). The step-by-step traffic
  // wakes exactly one thread: a reader that completes the step the consumer
  // waits for notifies consumer_cv_, and the consumer that takes a step
  // notifies the window_cv_ of the one reader whose step just entered the
  // prefetch window. (Waking every thread on every batch cost more than the
  // batch once there were more reader threads than CPUs.)
  std::mutex mutex_;
  std::condition_variable cv_;
  std::condition_variable consumer_cv_;
  std::deque<std::condition_variable> window_cv_;  // one per reader thread
  std::uint64_t pass_ = 0;                         // incremented by Start
  std::uint64_t running_ = 0;                      // threads still working on the pass
  bool stopping_ = false;                          // the pass ends early
  // A shuffle-buffer reader's failure: the batches the consumer waits for
  // may need samples it would have read later, so the consumer takes the
  // error at the first step that is not ready (the steps published before
  // it stay good).
  Status stream_error_;
  bool shutdown_ = false;  // the threads exit
  std::vector<Slot> slots_;
  std::vector<std::unique_ptr<Reader>> readers_;  // one per thread
  std::vector<std::thread> threads_list_;
  std::unique_ptr<Reader> inline_reader_;  // for 0 reader threads and collective reads
  std::map<std::string, std::unique_ptr<FileReader>> collective_readers_;
  Buffer step_buffer_;
};

}  // namespace iomimic::train
