// iomimic.read_script (docs/derive.md, "The read script"): the reads of
// each sample of a file, in place of the format's, as `iomimic derive`
// writes them from a recorded application's trace.
//
// Entries are "[CLASS] N: [open] TERM TERM ...": N consecutive samples of
// a file, each reading those terms in turn; with "open" each of them opens
// the file anew (else a reader thread keeps its file open while its samples
// come from it). A term is SIZE (one read of SIZE bytes), SIZE*K (K reads
// of SIZE), "file" or "file-C" (one read of the file's size less C bytes,
// 0 when the file is smaller than C), or "file-C*K". CLASS (a name that
// starts with a letter: letters, digits, '_', '-', '.') puts the entry in
// that class's script; entries without one are the default class's, which
// every file without a class of iomimic.data_files (plan/plan.h) reads.
// Each class's entries together list P samples; sample i of a file reads as
// its class's sample i mod P, at the offsets that follow the reads of the
// samples before it (wrapping at the end of the file). A size 0 (or a
// "file-C" that comes to 0) is a read at the end of the file, which returns
// nothing (a reader that asked for more and met the end).

#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "iomimic/status.h"

namespace iomimic::train {

// One class's script for a file of a given size: its terms resolved to
// byte counts. It refers to the ReadScript it came from, which must outlive
// it.
class ResolvedScript {
 public:
  // The sizes sample `sample` of the file reads.
  const std::vector<std::uint64_t>& Reads(std::uint64_t sample) const;
  // Whether sample `sample` opens its file anew.
  bool Reopens(std::uint64_t sample) const;
  // Where sample `sample`'s first read starts, before wrapping at the end
  // of the file: the bytes the samples before it read.
  std::uint64_t StartOffset(std::uint64_t sample) const;

 private:
  friend class ReadScript;
  std::vector<std::vector<std::uint64_t>> patterns_;   // one per entry
  std::vector<bool> reopen_;                           // one per entry
  const std::vector<std::size_t>* samples_ = nullptr;  // the pattern of each sample
  std::vector<std::uint64_t> before_;                  // bytes of the samples before
  std::uint64_t cycle_bytes_ = 0;                      // bytes of all P samples
};

class ReadScript {
 public:
  // Parses the entries. InvalidArgument naming iomimic.read_script, the
  // entry's number and text, and what was expected.
  static Result<ReadScript> Parse(const std::vector<std::string>& entries);

  bool empty() const { return classes_.empty(); }
  // The index of class `name` ("" = the default class), or -1 when no
  // entry has it.
  int ClassIndex(const std::string& name) const;
  // The class names in the order of their first entry ("" = the default).
  std::vector<std::string> ClassNames() const;
  // Class `index`'s script for a file of `file_size` bytes.
  ResolvedScript Resolve(int index, std::uint64_t file_size) const;

 private:
  // A term: `times` reads of `size` bytes, or of the file's size less
  // `size` when `from_end`.
  struct Term {
    std::uint64_t size = 0;
    std::uint64_t times = 1;
    bool from_end = false;
  };
  struct Class {
    std::string name;
    std::vector<std::vector<Term>> patterns;  // one per entry
    std::vector<bool> reopen;                 // one per entry
    std::vector<std::size_t> samples;         // the pattern of each sample
  };
  std::vector<Class> classes_;
};

}  // namespace iomimic::train
