// Submission queues for the odirect back end: io_uring, libaio and plain
// pread behind one small interface, so the read planner in
// odirect_storage.cpp keeps several requests in flight without knowing which
// kernel interface carries them.
//
// A queue is used by one thread at a time (the storage hands queues out from
// a pool for the length of one operation); it is never shared concurrently.

#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "iomimic/iomimic.h"

namespace iomimic::odirect {

enum class EngineKind : std::uint8_t { kIoUring, kLibaio, kSync };

// "io_uring", "libaio" or "pread": the data_path reported for the engine.
const char* EngineName(EngineKind kind);

struct IoCompletion {
  std::uint64_t tag = 0;
  // Bytes transferred, or a negated errno value.
  std::int64_t result = 0;
};

class IoQueue {
 public:
  IoQueue() = default;
  IoQueue(const IoQueue&) = delete;
  IoQueue& operator=(const IoQueue&) = delete;
  virtual ~IoQueue() = default;

  virtual EngineKind kind() const = 0;

  // The most reads that may be queued or in flight at once.
  virtual std::uint32_t depth() const = 0;

  // Queues a read of `length` bytes at `offset` of `fd` into `buffer`; `tag`
  // comes back in its completion. The caller keeps at most depth() reads
  // queued or in flight, and keeps `buffer` alive until the completion.
  virtual void PrepareRead(int fd, std::byte* buffer, std::size_t length, std::uint64_t offset,
                           std::uint64_t tag) = 0;

  // Submits every queued read and waits until at least `min_completions`
  // reads (no more than are outstanding) have completed; appends every
  // completion available to `out`. An error here is a failure of the queue
  // itself (the outstanding reads are then abandoned and the queue must not
  // be reused); failures of single reads arrive as negative results.
  virtual Status SubmitAndWait(std::size_t min_completions, std::vector<IoCompletion>* out) = 0;
};

// Creates a queue of `depth` entries. kIoUring and kLibaio return
// kNotSupported when this build lacks the library and an error naming the
// system call when the kernel refuses (io_uring disabled, aio-max-nr
// reached); kSync never fails.
Result<std::unique_ptr<IoQueue>> MakeIoQueue(EngineKind kind, std::uint32_t depth);

}  // namespace iomimic::odirect
