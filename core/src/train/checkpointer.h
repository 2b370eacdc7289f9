// Checkpoint writing and reading (docs/dlio-compat.md §3.5).
//
// Each rank writes the files the checkpoint plan gives it under
// <checkpoint_folder>/global_epoch<E>_step<S>/, streaming from a small
// reusable pattern buffer through a storage plugin (memory stays bounded
// however large the shard). checkpoint.fsync is honoured for real (DLIO
// silently ignores it). Reading streams the same files back and verifies
// their size and content. The checkpoint folder may live on another storage
// back end than the dataset (checkpoint.backend / checkpoint.options).
//
// Files hold the raw bytes of the tensors, with DLIO's names and sizes; they
// are not torch.save containers.

#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "metrics/records.h"
#include "plan/checkpoint_plan.h"
#include "plugin/registry.h"
#include "session/counting_storage.h"
#include "session/session.h"

namespace iomimic::train {

class Checkpointer {
 public:
  // Plans the checkpoint for this world and opens its storage. Collective
  // (every rank gets the same verdict).
  static Result<std::unique_ptr<Checkpointer>> Create(session::Session& session,
                                                      const plugin::Registry& registry);
  ~Checkpointer();

  // Writes this rank's files of checkpoint (epoch, step). Not collective:
  // the caller places barriers as DLIO does. Fills `record` (this rank).
  Status Save(std::uint64_t epoch, std::uint64_t step, metrics::CheckpointRecord* record);
  // Reads back this rank's files of checkpoint (epoch, step) (another rank's
  // with checkpoint.recovery_rank_shift), checking sizes and content. First,
  // untimed, how much of those files is in the page cache (with
  // checkpoint.drop_cache after dropping it) goes into record->residency.
  Status Load(std::uint64_t epoch, std::uint64_t step, metrics::CheckpointRecord* record);

  const plan::CheckpointPlan& plan() const { return plan_; }
  // Storage used for checkpoints (the dataset's, or its own).
  session::CountingStorage& storage() { return *storage_; }
  const std::string& storage_name() const { return storage_name_; }
  std::uint64_t fsync_calls() const;
  // What was meant to keep the last Load off the page cache, the same on
  // every rank: "page cache dropped" (checkpoint.drop_cache), "other host"
  // (every rank read a shard written on another host,
  // checkpoint.recovery_rank_shift), "later invocation" (this process wrote
  // no checkpoint it read), joined by ", "; empty when none applies or
  // before any Load. Context only: what each Load found in the page cache
  // is its record's `residency` (session/cache_honesty.h CheckpointReadLabel).
  const std::string& read_conditions() const { return read_conditions_; }
  // The rank whose shard `rank` reads (checkpoint.recovery_rank_shift).
  int SourceRank(int rank) const;

 private:
  Checkpointer(session::Session& session) : session_(session) {}
  Status WriteFile(const std::string& path, std::uint64_t bytes);
  Status ReadFile(const std::string& path, std::uint64_t bytes);
  std::string ReadConditions(std::uint64_t epoch, std::uint64_t step) const;
  metrics::PageResidency MeasureBeforeRead(const std::vector<std::string>& paths);

  session::Session& session_;
  plan::CheckpointPlan plan_;
  std::string folder_;
  plugin::StorageStack own_stack_;  // when checkpoint.backend is set
  std::unique_ptr<session::CountingStorage> own_storage_;
  session::CountingStorage* storage_ = nullptr;
  std::string storage_name_;
  Buffer pattern_;                                           // the bytes every file repeats
  std::vector<std::string> hosts_;                           // every rank's host name
  std::set<std::pair<std::uint64_t, std::uint64_t>> saved_;  // (epoch, step) saved here
  std::string read_conditions_;
};

}  // namespace iomimic::train
