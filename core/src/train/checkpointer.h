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
//
// checkpoint.layout picks the files (docs/checkpoints.md): dlio (above),
// dcp (PyTorch Distributed Checkpoint, plan/dcp_plan.h: per-rank
// __<rank>_<n>.distcp files written by checkpoint.thread_count threads,
// then rank 0's .metadata; checkpoint.async stages to host memory and
// writes in the background; loads may reshard to
// checkpoint.restore_world_size readers) or safetensors (Hugging Face's
// sharded model files, plan/safetensors.h, written by the ranks of
// data-parallel group 0).

#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "metrics/records.h"
#include "plan/checkpoint_plan.h"
#include "plan/dcp_plan.h"
#include "plan/safetensors.h"
#include "plugin/registry.h"
#include "session/counting_storage.h"
#include "session/session.h"

namespace iomimic::train {

// One checkpoint.async save of this rank (layout dcp): what training
// waited for, and the write that went on in the background.
struct AsyncSave {
  std::uint64_t index = 0;     // the save's CheckpointRecord::index
  double wait_seconds = 0;     // waiting for the previous save's write
  double staging_seconds = 0;  // copying the state into host memory
  double write_seconds = 0;    // the background write of the data files
  std::uint64_t bytes = 0;     // this rank's staged and written bytes
  double stall_seconds() const { return wait_seconds + staging_seconds; }
};

class Checkpointer {
 public:
  // Plans the checkpoint for this world and opens its storage. Collective
  // (every rank gets the same verdict).
  static Result<std::unique_ptr<Checkpointer>> Create(session::Session& session,
                                                      const plugin::Registry& registry);
  ~Checkpointer();

  // Writes this rank's files of checkpoint (epoch, step). Not collective:
  // the caller places barriers as DLIO does. Fills `record` (this rank).
  // Layout dcp is collective (rank 0 writes .metadata once every rank has
  // written its files); with checkpoint.async, `record` spans the stall
  // only (waiting for the previous write, staging) and the write goes on in
  // the background until the next Save or Finish.
  Status Save(std::uint64_t epoch, std::uint64_t step, metrics::CheckpointRecord* record);
  // Collective: waits for the background write of the last async save,
  // then rank 0 writes its .metadata. OK and nothing done when none is
  // pending. Call before reading checkpoints back and at the end of a run.
  Status Finish();
  // This rank's async saves, their write times once finished (Finish).
  const std::vector<AsyncSave>& async_saves() const { return async_saves_; }
  // Bytes of one checkpoint over all ranks, as the layout writes them (data
  // files; DCP's .metadata and safetensors' index.json left out).
  std::uint64_t checkpoint_bytes() const;
  const std::string& layout() const { return layout_; }
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
  // Where a file's bytes come from: `head` (a safetensors header) over its
  // first bytes, the rest from the repeating pattern (byte o is
  // pattern[o mod pattern size]), or from `staged` when set.
  // `item_ends`: where the file's items end, ascending (requests stop
  // there).
  struct Source {
    std::string_view head;
    const std::byte* staged = nullptr;
    std::vector<std::uint64_t> item_ends;
    // Tell the back end the size at open (posix preallocates it); DCP's
    // open("wb") does not.
    bool preallocate = true;
  };
  Checkpointer(session::Session& session) : session_(session) {}
  Status PlanLayout();
  Status WriteFile(const std::string& path, std::uint64_t bytes, const Source& source,
                   bool rename_when_whole = true);
  Status ReadFile(const std::string& path, std::uint64_t bytes, std::string_view head = {});
  Status CheckContent(const std::string& path, std::uint64_t offset,
                      std::span<const std::byte> bytes, std::string_view head) const;
  // Layout dcp (train/checkpoint_layouts.cpp).
  Status SaveDcp(const std::string& dir);
  Status WriteDcpFiles(const std::string& dir, const std::byte* staged);
  Status WriteDcpMetadata(const std::string& dir);
  Status StageAndLaunch(const std::string& dir, metrics::CheckpointRecord* record);
  Status LoadDcp(const std::string& dir);
  std::vector<std::string> DcpReadPaths(const std::string& dir) const;
  // Layout safetensors.
  Status SaveSafetensors(const std::string& dir);
  Status LoadSafetensors(const std::string& dir, int source);
  std::vector<std::size_t> ShardsOf(int rank) const;
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
  std::string layout_ = "dlio";
  plan::DcpPlan dcp_;
  std::vector<plan::Shard> shards_;  // layout safetensors
  int shard_writers_ = 1;            // ranks of DP group 0 (shard i: rank i mod this)
  // checkpoint.async: the host staging buffer (this rank's bytes, file
  // after file), the background write and the save it belongs to.
  Buffer staging_;
  std::thread background_;
  Status background_status_;
  bool pending_ = false;
  std::string pending_dir_;
  std::vector<AsyncSave> async_saves_;
};

}  // namespace iomimic::train
