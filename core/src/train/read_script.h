// iomimic.read_script (docs/derive.md, "The read script"): the reads of
// each sample of a file, in place of the format's, as `iomimic derive`
// writes them from a recorded application's trace.
//
// Entries are "N: [open] SIZE SIZE*K ...": N consecutive samples of a
// file, each reading those sizes in turn (SIZE*K: K reads of SIZE); with
// "open" each of them opens the file anew (else a reader thread keeps its
// file open while its samples come from it). The entries
// together list P samples; sample i of a file reads as sample i mod P, at
// the offsets that follow the reads of the samples before it (wrapping at
// the end of the file). A size 0 is a read at the end of the file, which
// returns nothing (a reader that asked for more and met the end).

#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "iomimic/status.h"

namespace iomimic::train {

class ReadScript {
 public:
  // Parses the entries. InvalidArgument naming iomimic.read_script, the
  // entry's number and text, and what was expected.
  static Result<ReadScript> Parse(const std::vector<std::string>& entries);

  bool empty() const { return samples_.empty(); }
  // The sizes sample `sample` of a file reads.
  const std::vector<std::uint64_t>& Reads(std::uint64_t sample) const;
  // Whether sample `sample` opens its file anew.
  bool Reopens(std::uint64_t sample) const;
  // Where sample `sample`'s first read starts, before wrapping at the end
  // of a file: the bytes the samples before it read.
  std::uint64_t StartOffset(std::uint64_t sample) const;

 private:
  std::vector<std::vector<std::uint64_t>> patterns_;  // one per entry
  std::vector<bool> reopen_;                          // one per entry
  std::vector<std::size_t> samples_;                  // the pattern of each sample
  std::vector<std::uint64_t> before_;                 // bytes of the samples before
  std::uint64_t cycle_bytes_ = 0;                     // bytes of all P samples
};

}  // namespace iomimic::train
