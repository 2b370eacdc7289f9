// Dataset generation.
//
// Rank r writes files r, r+P, r+2P, ... (train then eval, DLIO's split), with
// several threads per rank. On back ends that share files between ranks
// (StorageCapabilities::shared_files: MPI-IO) files the format can write in
// parts (Format::CanWriteInParts) are instead written by all ranks together,
// one file at a time: rank 0 writes the frame (Format::WriteFrame), then each
// rank writes its slice of the payload with File::WriteAtAll (one
// MPI_File_write_at_all per round on collective back ends). Each file is written through format ->
// storage under a temporary name in the same folder and renamed when complete, so an interrupted
// generation never leaves a truncated file under a final name. A re-run skips files that are
// already complete; a file with the final name but a size this manifest would not produce is
// refused, never overwritten.

#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "metrics/records.h"
#include "session/session.h"

namespace iomimic::train {

struct GenerateReport {
  std::uint64_t files_written = 0;               // this rank (files written in parts: rank 0)
  std::uint64_t files_written_by_all_ranks = 0;  // in parts (rank 0 counts them)
  std::uint64_t files_skipped = 0;               // already complete
  // Of files_written: iomimic's own files made with other generation
  // parameters (their completeness record says which), written again.
  std::uint64_t files_rewritten = 0;
  std::string rewrite_reason;       // the first change seen, e.g. "samples (...): 16 -> 1000"
  std::uint64_t bytes_written = 0;  // counted by the storage layer
  double seconds = 0;               // wall time of this rank's generation
  metrics::Stamp start;             // when this rank's generation began
  metrics::Stamp end;
};

// Collective: every rank calls it. `threads` = writer threads per rank.
// Returns the same error on every rank if any rank failed. `so_far`, when
// given, receives the figures of the files done even when the writing
// stopped (a signal, a refused file), on every rank alike: set when all
// ranks got through the writing, left empty when they stopped before it
// (no space, a folder not made).
Result<GenerateReport> Generate(session::Session& session, unsigned threads,
                                std::optional<GenerateReport>* so_far = nullptr);

// Temporary name used while writing `path`.
std::string TemporaryPath(const std::string& path);

// The completeness record of data file `path`: "<dir>/.<name>.iomimic-complete",
// written (after the data is fsynced, before the rename) for formats without
// an exact expected size; it holds the size iomimic wrote.
std::string CompletenessRecordPath(const std::string& path);

}  // namespace iomimic::train
