#include "io_queue.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <utility>
#include <vector>

#if IOMIMIC_HAVE_LIBURING
#include <liburing.h>
#endif
#if IOMIMIC_HAVE_LIBAIO
#include <libaio.h>
#endif

namespace iomimic::odirect {

const char* EngineName(EngineKind kind) {
  switch (kind) {
    case EngineKind::kIoUring:
      return "io_uring";
    case EngineKind::kLibaio:
      return "libaio";
    case EngineKind::kSync:
      return "pread";
  }
  return "unknown";
}

namespace {

// One pread per queued request, run at SubmitAndWait: the last resort when
// neither io_uring nor libaio is available. Reads are not overlapped.
class SyncQueue final : public IoQueue {
 public:
  explicit SyncQueue(std::uint32_t depth) : depth_(depth) { pending_.reserve(depth); }

  EngineKind kind() const override { return EngineKind::kSync; }
  std::uint32_t depth() const override { return depth_; }

  void PrepareRead(int fd, std::byte* buffer, std::size_t length, std::uint64_t offset,
                   std::uint64_t tag) override {
    pending_.push_back({fd, buffer, length, offset, tag});
  }

  Status SubmitAndWait(std::size_t, std::vector<IoCompletion>* out) override {
    for (const Pending& p : pending_) {
      ssize_t n;
      do {
        n = ::pread(p.fd, p.buffer, p.length, static_cast<off_t>(p.offset));
      } while (n < 0 && errno == EINTR);
      out->push_back({p.tag, n < 0 ? -static_cast<std::int64_t>(errno) : n});
    }
    pending_.clear();
    return Status::OK();
  }

 private:
  struct Pending {
    int fd;
    std::byte* buffer;
    std::size_t length;
    std::uint64_t offset;
    std::uint64_t tag;
  };
  std::uint32_t depth_;
  std::vector<Pending> pending_;
};

#if IOMIMIC_HAVE_LIBURING
class UringQueue final : public IoQueue {
 public:
  static Result<std::unique_ptr<IoQueue>> Make(std::uint32_t depth) {
    std::unique_ptr<UringQueue> q(new UringQueue(depth));
    // COOP_TASKRUN saves an interrupt per completion; older kernels refuse
    // the flag with EINVAL, so retry without it.
    int rc = io_uring_queue_init(depth, &q->ring_, IORING_SETUP_COOP_TASKRUN);
    if (rc == -EINVAL) rc = io_uring_queue_init(depth, &q->ring_, 0);
    if (rc < 0) {
      return Status::FromErrno(-rc, "io_uring_queue_init(" + std::to_string(depth) + ")");
    }
    q->initialized_ = true;
    return std::unique_ptr<IoQueue>(std::move(q));
  }

  ~UringQueue() override {
    if (initialized_) io_uring_queue_exit(&ring_);
  }

  EngineKind kind() const override { return EngineKind::kIoUring; }
  std::uint32_t depth() const override { return depth_; }

  void PrepareRead(int fd, std::byte* buffer, std::size_t length, std::uint64_t offset,
                   std::uint64_t tag) override {
    // The caller never exceeds depth(), which is the submission ring's size,
    // and every SubmitAndWait empties the submission ring.
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    io_uring_prep_read(sqe, fd, buffer, static_cast<unsigned>(length), offset);
    io_uring_sqe_set_data64(sqe, tag);
    ++outstanding_;
  }

  Status SubmitAndWait(std::size_t min_completions, std::vector<IoCompletion>* out) override {
    const std::size_t want = std::min<std::size_t>(min_completions, outstanding_);
    int rc;
    do {
      rc = io_uring_submit_and_wait(&ring_, static_cast<unsigned>(want));
    } while (rc == -EINTR || rc == -EAGAIN);
    if (rc < 0) return Status::FromErrno(-rc, "io_uring_submit_and_wait");
    std::size_t got = 0;
    for (;;) {
      io_uring_cqe* cqe = nullptr;
      if (got < want) {
        rc = io_uring_wait_cqe(&ring_, &cqe);
        if (rc == -EINTR) continue;
        if (rc < 0) return Status::FromErrno(-rc, "io_uring_wait_cqe");
      } else if (io_uring_peek_cqe(&ring_, &cqe) != 0 || cqe == nullptr) {
        break;
      }
      out->push_back({io_uring_cqe_get_data64(cqe), cqe->res});
      io_uring_cqe_seen(&ring_, cqe);
      --outstanding_;
      ++got;
    }
    return Status::OK();
  }

 private:
  explicit UringQueue(std::uint32_t depth) : depth_(depth) {}

  std::uint32_t depth_;
  std::size_t outstanding_ = 0;
  bool initialized_ = false;
  io_uring ring_{};
};
#endif  // IOMIMIC_HAVE_LIBURING

#if IOMIMIC_HAVE_LIBAIO
class AioQueue final : public IoQueue {
 public:
  static Result<std::unique_ptr<IoQueue>> Make(std::uint32_t depth) {
    std::unique_ptr<AioQueue> q(new AioQueue(depth));
    int rc = io_setup(static_cast<int>(depth), &q->context_);
    if (rc < 0) return Status::FromErrno(-rc, "io_setup(" + std::to_string(depth) + ")");
    q->initialized_ = true;
    return std::unique_ptr<IoQueue>(std::move(q));
  }

  ~AioQueue() override {
    if (initialized_) io_destroy(context_);
  }

  EngineKind kind() const override { return EngineKind::kLibaio; }
  std::uint32_t depth() const override { return depth_; }

  void PrepareRead(int fd, std::byte* buffer, std::size_t length, std::uint64_t offset,
                   std::uint64_t tag) override {
    const std::size_t slot = free_.back();
    free_.pop_back();
    iocb& cb = iocbs_[slot];
    io_prep_pread(&cb, fd, buffer, length, static_cast<long long>(offset));
    cb.data = reinterpret_cast<void*>(slot);
    tags_[slot] = tag;
    queued_.push_back(&cb);
  }

  Status SubmitAndWait(std::size_t min_completions, std::vector<IoCompletion>* out) override {
    std::size_t submitted = 0;
    while (submitted < queued_.size()) {
      int rc = io_submit(context_, static_cast<long>(queued_.size() - submitted),
                         queued_.data() + submitted);
      if (rc == -EINTR) continue;
      if (rc == -EAGAIN && in_flight_ > 0) {
        // The kernel is out of request slots: make room by completing some.
        IOMIMIC_RETURN_IF_ERROR(Reap(1, out));
        continue;
      }
      if (rc < 0) return Status::FromErrno(-rc, "io_submit");
      submitted += static_cast<std::size_t>(rc);
      in_flight_ += static_cast<std::size_t>(rc);
    }
    queued_.clear();
    return Reap(min_completions, out);
  }

 private:
  explicit AioQueue(std::uint32_t depth)
      : depth_(depth), iocbs_(depth), tags_(depth), events_(depth) {
    free_.reserve(depth);
    for (std::size_t i = depth; i > 0; --i) free_.push_back(i - 1);
    queued_.reserve(depth);
  }

  // Waits until `min` reads (at most all in flight) have completed and
  // collects them.
  Status Reap(std::size_t min, std::vector<IoCompletion>* out) {
    std::size_t got = 0;
    while (got < min && in_flight_ > 0) {
      const long need = static_cast<long>(std::min(min - got, in_flight_));
      int rc =
          io_getevents(context_, need, static_cast<long>(events_.size()), events_.data(), nullptr);
      if (rc == -EINTR) continue;
      if (rc < 0) return Status::FromErrno(-rc, "io_getevents");
      for (int i = 0; i < rc; ++i) {
        const io_event& e = events_[static_cast<std::size_t>(i)];
        const std::size_t slot = reinterpret_cast<std::size_t>(e.data);
        // res holds bytes or a negated errno in an unsigned field.
        out->push_back({tags_[slot], static_cast<std::int64_t>(static_cast<long>(e.res))});
        free_.push_back(slot);
      }
      in_flight_ -= static_cast<std::size_t>(rc);
      got += static_cast<std::size_t>(rc);
    }
    return Status::OK();
  }

  std::uint32_t depth_;
  io_context_t context_ = nullptr;
  bool initialized_ = false;
  std::vector<iocb> iocbs_;
  std::vector<std::uint64_t> tags_;
  std::vector<io_event> events_;
  std::vector<std::size_t> free_;
  std::vector<iocb*> queued_;
  std::size_t in_flight_ = 0;
};
#endif  // IOMIMIC_HAVE_LIBAIO

}  // namespace

Result<std::unique_ptr<IoQueue>> MakeIoQueue(EngineKind kind, std::uint32_t depth) {
  if (depth == 0) return Status::InvalidArgument("odirect: queue depth must be at least 1");
  switch (kind) {
    case EngineKind::kIoUring:
#if IOMIMIC_HAVE_LIBURING
      return UringQueue::Make(depth);
#else
      return Status::NotSupported("odirect: this build has no io_uring support (liburing-dev)");
#endif
    case EngineKind::kLibaio:
#if IOMIMIC_HAVE_LIBAIO
      return AioQueue::Make(depth);
#else
      return Status::NotSupported("odirect: this build has no libaio support (libaio-dev)");
#endif
    case EngineKind::kSync:
      return std::unique_ptr<IoQueue>(new SyncQueue(depth));
  }
  return Status::Internal("odirect: unknown engine");
}

}  // namespace iomimic::odirect
