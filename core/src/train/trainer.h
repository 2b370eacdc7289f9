// Training and evaluation replay (docs/dlio-compat.md §3.2, §3.3).
//
// Per training step: wait for the next batch (data wait), emulate compute
// with the configured distribution, then a barrier across ranks. Per epoch,
// optionally an evaluation pass (same without barriers). The timing points
// are DLIO's, so AU and throughput mean the same thing; the per-step barrier
// time is recorded separately as well.

#pragma once

#include <cstdint>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "metrics/records.h"
#include "session/session.h"
#include "train/checkpointer.h"

namespace iomimic::train {

struct TrainOptions {
  // Emulated accelerators in this process, each with its own plan, loader
  // and figures (iomimic.accelerators_per_process).
  std::uint64_t accelerators_per_process = 1;
  // When set: the file of accelerator `id` to which "<epoch>,<phase>,<step>,
  // <file>,<sample>" is written for every sample it reads.
  std::function<std::string(int id)> sample_log_path;
  // Called after each epoch of the process's first accelerator with its
  // record (progress output).
  std::function<void(const metrics::EpochRecord&)> on_epoch;
  // Called on every rank after each epoch (a partial one included), once
  // per accelerator of the process, with its id and its epochs so far, so
  // that the run folder holds each rank's figures as soon as they are known
  // (output/rank_ledger.h).
  std::function<void(int id, const std::vector<metrics::EpochRecord>& epochs)> on_epochs_so_far;
  // Writes checkpoints on the manifest's schedule when set.
  Checkpointer* checkpointer = nullptr;
};

// The epochs of one emulated accelerator.
struct AcceleratorRecords {
  int id = 0;  // run-wide: rank * accelerators_per_process + local index
  std::vector<metrics::EpochRecord> epochs;
};

struct TrainResult {
  int accelerators_per_process = 1;
  // This process's accelerators, in local order.
  std::vector<AcceleratorRecords> accelerators;
  // The first accelerator's epochs (accelerators[0].epochs); its records
  // carry the process's page-fault counts.
  std::vector<metrics::EpochRecord> epochs;
  // The signal that stopped training at a step boundary (interrupt.h), or 0;
  // `epochs` then ends with the interrupted epoch's steps so far.
  int interrupted_by = 0;
  std::uint64_t train_steps_per_epoch = 0;
  std::uint64_t eval_steps_per_epoch = 0;
  metrics::Stamp start;
  metrics::Stamp end;
};

// Collective: every rank calls it. Emulates options.accelerators_per_process
// accelerators in this process, each with its own plan (as if it were rank
// rank * per_process + local of ranks * per_process), loader, prefetch
// queue, reader threads and records. One consumer thread serves them all:
// it takes each accelerator's batch as soon as that accelerator's readers
// have it, starts that accelerator's compute then, sleeps until the last
// compute ends and makes the process's one per-step barrier, so a 2-core
// client emulates hundreds of accelerators without hundreds of threads
// contending to wake (docs/performance.md). On any failure every rank
// returns an error (its own, or one naming the failed rank).
Result<TrainResult> Train(session::Session& session, const TrainOptions& options);

struct CheckpointOnlyResult {
  std::vector<metrics::CheckpointRecord> saves;
  std::vector<metrics::CheckpointRecord> loads;
  int interrupted_by = 0;  // the signal that stopped it before a checkpoint, or 0
};

// DLIO's checkpoint-only workflow (workflow.train False, checkpoint True):
// num_checkpoints_write times {sleep time_between_checkpoints, barrier, timed
// save, barrier if rank_sync}, then num_checkpoints_read loads the same way.
// Collective.
Result<CheckpointOnlyResult> RunCheckpointOnly(session::Session& session,
                                               Checkpointer& checkpointer);

// Checks that the dataset the plan expects is there, cheaply and without
// listing folders: the split folders exist and the first and last file of
// each split can be found. Names what is missing and how to generate it.
Status CheckDataset(session::Session& session);

}  // namespace iomimic::train
