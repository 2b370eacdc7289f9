// The profile of a recorded application's I/O (docs/derive.md, "The
// profile"): what `iomimic derive` turns into a workload manifest and what
// `iomimic fidelity` puts side by side for an original program and the
// runs that imitate it. It is computed from an AppTrace (apptrace/model.h)
// alone, so that the same code measures the original's trace and the
// traces of the derived and replayed runs.
//
// The data set is the files the application read that existed before it
// (not code, libraries or system files): those under the folder holding
// the most bytes read, or under ProfileOptions::data_dir. Everything else
// in the profile is about those files, except the writes (checkpoints),
// which are the files the application created and wrote outside the data
// set.

#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "apptrace/model.h"
#include "iomimic/status.h"

namespace iomimic::apptrace {

struct ProfileOptions {
  // The data set's folder; "" = inferred (the folder of the most bytes read).
  std::string data_dir;
  // A thread's pause between two data operations longer than this (and
  // than a quarter of its longest pause) ends a burst of reads: the
  // compute between steps.
  double min_step_gap_s = 0.002;
  // Read the data files' first bytes (the format's magic) where they exist.
  bool read_magic = true;
};

// One sample of a read script: the reads of one burst of a file (split
// where its reads paused longer than the step threshold), what one entry
// sample of iomimic.read_script replays.
struct ScriptSample {
  bool open = false;                 // the burst opened the file
  std::vector<std::uint64_t> reads;  // bytes each read returned
  bool operator==(const ScriptSample&) const = default;
};

// One data file.
struct FileProfile {
  std::string path;
  std::uint64_t size = 0;  // TracedFile::initial_size
  std::uint64_t opens = 0;
  std::uint64_t reads = 0;
  std::uint64_t bytes_read = 0;
  std::uint64_t distinct_bytes = 0;  // bytes read at least once
  // Reads of one pass that went on where the previous one ended.
  std::uint64_t sequential_reads = 0;
  // The most bytes one read took.
  std::uint64_t largest_read = 0;
  // DLIO's dataset.format of the file: by the first bytes of the first file
  // of its extension that can be read here, else by its extension ("" =
  // neither said).
  std::string format;
  // Passes over it: its bytes read over its bytes read at least once,
  // rounded, from 1 to the epochs.
  unsigned passes = 1;
  // Its reads of one pass (TraceProfile::script), filled in by ProfileTrace.
  std::vector<ScriptSample> script;
};

// A file the application created and wrote (a checkpoint, a log).
struct WrittenFile {
  std::string path;  // the final name (after a rename)
  std::uint64_t bytes = 0;
  std::uint64_t writes = 0;
  std::uint64_t syncs = 0;
  bool renamed = false;  // written under another name, then renamed to path
  std::int64_t first_ns = 0;
};

// Power-of-two bins of a request size: bin 0 holds 0 and 1 bytes, bin k
// (k >= 1) sizes in [2^k, 2^(k+1)) ... with 1 in bin 0.
unsigned SizeBin(std::uint64_t bytes);
// "4 KiB-8 KiB": the bin's range in words.
std::string SizeBinName(unsigned bin);

struct TraceProfile {
  std::string source;
  std::string data_dir;
  std::vector<FileProfile> files;  // by path
  // Data-file reads by SizeBin, and the exact sizes (for the manifest).
  std::map<unsigned, std::uint64_t> read_bins;
  std::map<std::uint64_t, std::uint64_t> read_sizes;
  std::uint64_t read_ops = 0, read_bytes = 0, distinct_bytes = 0, opens = 0;
  std::uint64_t dataset_bytes = 0;  // the files' sizes, summed
  // Whole passes over the data set: read bytes over distinct bytes, at least 1.
  unsigned epochs = 1;
  double bytes_per_epoch = 0;
  double opens_per_file = 0;    // per epoch, the mean over the files
  unsigned reader_threads = 0;  // threads that read a data file
  // DLIO's dataset.format of the data files, by the first bytes of one
  // (config::DlioFormatOfMagic), else by the extension; "" = neither said.
  // format_from says which.
  std::string format, format_from;
  std::string extension;  // the data files' most common ("" = none)
  // Reads: the share that went on where the previous read of the file left
  // off, and of files read in one request per pass.
  double sequential_share = 0;
  double whole_file_share = 0;
  std::uint64_t dominant_read = 0;  // the most common read size
  double dominant_share = 0;        // its share of the reads
  // The rhythm (per reader thread: bursts of data operations split by
  // gaps over the step threshold).
  std::uint64_t steps = 0;          // bursts over all reader threads
  double step_gap_s = 0;            // the median gap between bursts
  double step_time_s = 0;           // the median from one burst's start to the next's
  double samples_per_burst = 0;     // median opens of a data file per burst
  double read_bytes_per_burst = 0;  // median
  // The reads of one pass over a representative data file (the one of the
  // median size among those of the most common samples a pass), split where its reads paused longer
  // than the step threshold: one entry per sample, what iomimic.read_script replays (each file's
  // own: FileProfile::script).
  using ScriptSample = apptrace::ScriptSample;
  std::string script_file;
  std::vector<ScriptSample> script;
  // Files a reader thread moved to within one burst, the median: samples
  // each thread reads per step.
  double files_per_burst = 0;
  // A reader thread's pauses between bursts over the samples it read (by
  // the files' scripts' bytes a pass, on average, over the samples per
  // file), the median over the threads: the
  // compute each sample of a thread stands for.
  double compute_per_sample_s = 0;
  // Writes of files the application created, outside the data set.
  std::vector<WrittenFile> written;
  std::uint64_t write_ops = 0, write_bytes = 0, syncs = 0;
  std::map<unsigned, std::uint64_t> write_bins;
  double span_s = 0;
  double read_bytes_per_second = 0;  // data bytes read over the span
};

// The profile of `trace`. InvalidArgument naming the trace when it read no
// data file (or none under options.data_dir).
Result<TraceProfile> ProfileTrace(const AppTrace& trace, const ProfileOptions& options);

}  // namespace iomimic::apptrace
