// Where a run is, for live progress (issue 10, item 5; docs/observability.md).
//
// The engine writes a few relaxed atomics at coarse boundaries (a file
// generated, a step done, a checkpoint begun); a progress thread in
// run/run.cpp reads them every so often and hands a snapshot to the front
// end. Nothing here is touched per sample, so the hot path pays nothing.

#pragma once

#include <atomic>
#include <cstdint>

namespace iomimic::session {

enum class RunPhase : int {
  kIdle = 0,
  kGenerate,         // writing the dataset
  kTrain,            // a training pass
  kEval,             // an evaluation pass
  kCheckpointWrite,  // writing a checkpoint
  kCheckpointRead,   // reading one back
  kKvCache,          // the KV-cache workflow (kvcache/engine.h)
};

// One rank's position in the run. Writers: the engine's threads; reader: the
// progress thread. Every field is independent (a reader may see a step count
// of the previous pass for one sample; that is fine for a progress line).
struct ProgressBoard {
  std::atomic<int> phase{static_cast<int>(RunPhase::kIdle)};
  // Generation: files this rank writes (or finds complete), and done so far.
  std::atomic<std::uint64_t> files_total{0};
  std::atomic<std::uint64_t> files_done{0};
  // Training and evaluation: the epoch (1-based), the steps of the current
  // pass and the steps done in it.
  std::atomic<std::uint64_t> epoch{0};
  std::atomic<std::uint64_t> steps{0};
  std::atomic<std::uint64_t> step{0};
  // Checkpoints: the one being written or read (1-based) and how many the
  // workflow makes in all (0 when the count is not known ahead, as in
  // training).
  std::atomic<std::int64_t> checkpoint{0};
  std::atomic<std::int64_t> checkpoints{0};
  // The KV-cache workflow: requests completed.
  std::atomic<std::uint64_t> requests{0};

  void SetPhase(RunPhase p) { phase.store(static_cast<int>(p), std::memory_order_relaxed); }
  RunPhase Phase() const { return static_cast<RunPhase>(phase.load(std::memory_order_relaxed)); }
};

// Sets the board's phase for a scope and puts the previous one back.
class PhaseScope {
 public:
  PhaseScope(ProgressBoard& board, RunPhase phase) : board_(board), previous_(board.Phase()) {
    board_.SetPhase(phase);
  }
  ~PhaseScope() { board_.SetPhase(previous_); }
  PhaseScope(const PhaseScope&) = delete;
  PhaseScope& operator=(const PhaseScope&) = delete;

 private:
  ProgressBoard& board_;
  RunPhase previous_;
};

}  // namespace iomimic::session
