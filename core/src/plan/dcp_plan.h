// PyTorch Distributed Checkpoint's file layout (checkpoint.layout: dcp),
// as FileSystemWriter lays it out (docs/checkpoints.md, "dcp"): pure layout,
// no I/O.
//
// Each rank's state is its share of the DLIO plan (plan/checkpoint_plan.h):
// every part of its files (a layer's parameters, one of Adam's tensors) is
// one item. The items are split over `thread_count` buckets as DCP does:
// largest first, each into the bucket holding the fewest bytes so far (ties
// to the lowest bucket). Bucket n is the file `__<rank>_<n>.distcp`, written
// by one writer thread, its items back to back in bucket order, raw bytes
// (no torch.save container around each). A bucket may be empty: DCP still
// creates its file. The coordinator (rank 0) writes `.metadata` once every
// rank has finished.
//
// An item's name on several ranks is one global tensor split between them
// (TP, ZeRO), its chunks in rank order. A restore with another rank count R
// reshards: reader r of R owns the contiguous [S*r/R, S*(r+1)/R) of every
// global item of S bytes and reads those bytes from whichever files hold
// them, so that all readers together read every byte once.

#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "plan/checkpoint_plan.h"

namespace iomimic::plan {

// One chunk of a global item, placed in a file.
struct DcpChunk {
  std::string item;               // the global item's name
  std::uint64_t item_offset = 0;  // where the chunk starts in the global item
  std::uint64_t bytes = 0;
  std::uint64_t file_offset = 0;  // where it starts in its file
};

struct DcpFile {
  std::string name;  // "__<rank>_<n>.distcp"
  std::vector<DcpChunk> chunks;
  std::uint64_t bytes = 0;
};

struct DcpRank {
  int rank = 0;
  std::vector<DcpFile> files;  // thread_count of them (none for a rank with no state)
  std::uint64_t bytes() const;
};

struct DcpPlan {
  std::vector<DcpRank> ranks;                  // the writers
  std::map<std::string, std::uint64_t> items;  // global item -> its bytes
  std::uint64_t total_bytes() const;           // data files only
};

// One range of a file that a reader reads.
struct DcpRead {
  int writer = 0;
  std::string file;
  std::uint64_t offset = 0;
  std::uint64_t bytes = 0;
};

inline constexpr const char* kDcpMetadataName = ".metadata";

// The DCP layout of `plan`, each rank's items over `thread_count` (>= 1)
// files. Its total equals plan.total_bytes().
DcpPlan PlanDcp(const CheckpointPlan& plan, int thread_count);

// The ranges reader `reader` of `readers` (>= 1) reads, by file then offset.
// Over all readers they cover every byte of every data file exactly once.
std::vector<DcpRead> DcpReaderRanges(const DcpPlan& plan, int reader, int readers);

// The `.metadata` iomimic writes: JSON standing in for DCP's pickled
// Metadata, with the same content (docs/checkpoints.md): every global item's
// size and chunks, and where each chunk is stored (file, offset, length).
std::string DcpMetadataJson(const DcpPlan& plan);

}  // namespace iomimic::plan
