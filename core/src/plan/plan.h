// The plan: everything about a run that follows from the manifest alone.
//
// File names and folders, per-file sample shapes, the split of files over
// generating ranks, the split of samples over ranks and reader threads, the
// order of each epoch, step counts and the evaluation and checkpoint
// schedules are pure functions of (manifest, rank, world size, epoch).
// Nothing here touches the disk, so the plan of a million-file dataset costs
// no start-up time and every property is unit-testable without I/O.

#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "config/config.h"
#include "iomimic/format.h"
#include "iomimic/status.h"
#include "plan/permutation.h"

namespace iomimic::plan {

enum class Split { kTrain, kEval };
std::string SplitName(Split split);  // "train" / "valid" (DLIO's folder names)

// One entry of iomimic.data_files (docs/derive.md, "Per-file sizes and
// classes"): "SIZE[*K] [CLASS]", K consecutive files (1 without *K) of
// SIZE bytes each, read with the entries of CLASS of iomimic.read_script
// (train/read_script.h; none: the entries without a class).
struct DataFilesEntry {
  std::uint64_t size = 0;
  std::uint64_t count = 1;
  std::string file_class;
};
// Parses iomimic.data_files. InvalidArgument naming the key, the entry's
// number and text, and what was expected.
Result<std::vector<DataFilesEntry>> ParseDataFiles(const std::vector<std::string>& entries);

// The dataset on storage: names, folders, shapes.
class DatasetLayout {
 public:
  // `extension` is the format's file extension (DLIO uses the format name).
  DatasetLayout(const config::Config& config, std::string extension);

  std::uint64_t num_files(Split split) const;
  std::uint64_t samples_per_file() const { return samples_per_file_; }
  std::uint64_t num_samples(Split split) const { return num_files(split) * samples_per_file_; }
  // Files generated: train, then eval (when num_files_eval > 0).
  std::uint64_t num_generated_files() const;
  // Maps a generation index to (split, index within split).
  std::pair<Split, std::uint64_t> FromGlobal(std::uint64_t global_index) const;
  std::uint64_t ToGlobal(Split split, std::uint64_t index) const;

  const std::string& data_folder() const { return data_folder_; }
  // <data_folder>/train or /valid.
  std::string SplitDirectory(Split split) const;
  // Every folder generation must create (split folders and subfolders).
  std::vector<std::string> Directories() const;
  // DLIO's name: <dir>[/<i mod S>]/<prefix>_<i>_of_<N>.<ext>, zero-padded.
  std::string FilePath(Split split, std::uint64_t index) const;

  // Per-sample shape of file `global_index`: record_dims, or {d1, d2} drawn
  // from DLIO's seeded normal distribution
  // (docs/dlio-compat.md §1.6), identical to DLIO's.
  std::vector<std::uint64_t> SampleShape(std::uint64_t global_index) const;
  // The full FileSpec for generating file `global_index`.
  FileSpec Spec(std::uint64_t global_index, const ElementType& element_type) const;

  // iomimic.data_files: whether it lists the files' sizes, and file
  // `global_index`'s size and read-script class ("" = the default class),
  // the list taken in a cycle (file i is entry i modulo the files listed).
  // Without the key: false, 0 and "".
  bool has_file_sizes() const { return !data_files_.empty(); }
  std::uint64_t FileSize(std::uint64_t global_index) const;
  const std::string& FileClass(std::uint64_t global_index) const;
  // With iomimic.data_files, makes each listed size the generated file's:
  // the sample shape {1, n} with the largest n for which `file_size` (the
  // format's Format::ExpectedFileSize of a spec) is at most the size, so
  // that the file comes within samples_per_file x the element's bytes of
  // it. Before this the shape is the payload alone ({1, size / (samples x
  // element bytes)}). InvalidArgument naming iomimic.data_files when the
  // format cannot say its files' sizes.
  Status FitFileSizes(const std::function<Result<std::uint64_t>(const FileSpec&)>& file_size,
                      const ElementType& element_type);

  // Nominal bytes of one sample (DLIO's record_length_bytes).
  double nominal_sample_bytes() const { return nominal_sample_bytes_; }

 private:
  std::string data_folder_;
  std::string prefix_;
  std::string extension_;
  std::uint64_t files_train_ = 0;
  std::uint64_t files_eval_ = 0;
  std::uint64_t subfolders_train_ = 0;
  std::uint64_t subfolders_eval_ = 0;
  std::uint64_t samples_per_file_ = 1;
  std::vector<std::uint64_t> record_dims_;
  std::uint64_t dimension_ = 1;
  std::vector<std::uint32_t> drawn_dims_;  // 2 per generated file, only with a stdev
  double nominal_sample_bytes_ = 0;
  std::string compression_;
  int compression_level_ = 4;
  std::uint64_t seed_ = 0;
  ContentOptions content_;
  std::map<std::string, std::string> parameters_;
  // iomimic.data_files: its entries, the files listed up to and with each
  // (a running sum of the counts), and each entry's sample shape {1, n}.
  std::vector<DataFilesEntry> data_files_;
  std::vector<std::uint64_t> data_files_end_;
  std::vector<std::uint64_t> data_files_n_;
  std::size_t DataFilesEntryOf(std::uint64_t global_index) const;
};

// Which sample a read touches: a file of the split and a record inside it.
struct SampleRef {
  std::uint64_t file = 0;
  std::uint64_t sample = 0;
  bool operator==(const SampleRef&) const = default;
};

// Shuffle keys resolved for a run. `random` shuffles need a seed drawn once
// per run (by rank 0, shared by all ranks); it is recorded in the results.
struct ShuffleSeeds {
  std::uint64_t base_seed = 123;
  bool change_per_epoch = true;
  std::uint64_t random_seed = 0;  // used when a mode is `random`
};

// One epoch of one split as seen by one rank.
class EpochPlan {
 public:
  // `streamed`: the format streams whole files (FormatTraits::streamed), so
  // samples are read file after file in record order, as tf.data reads
  // them; file_shuffle still permutes the files, and sample_shuffle (a
  // shuffle buffer after reading, ShuffleBufferOrder, applied by the
  // loader) does not change the reads.
  EpochPlan(const config::Config& config, const DatasetLayout& layout, Split split, int rank,
            int world_size, std::uint64_t epoch, const ShuffleSeeds& seeds, bool streamed = false);

  // Steps (batches) this rank runs; equal on every rank.
  std::uint64_t steps() const { return steps_; }
  std::uint64_t batch_size() const { return batch_size_; }
  // Samples this rank reads in the epoch (steps * batch_size).
  std::uint64_t samples() const { return steps_ * batch_size_; }
  // Reader threads (0 means the consumer reads itself, no overlap).
  std::uint64_t reader_threads() const { return threads_; }
  std::uint64_t samples_per_file() const { return samples_per_file_; }

  // The sample at position `position` (< samples()) of this rank's stream.
  SampleRef Sample(std::uint64_t position) const;
  // Batch `step` covers positions [step * batch_size, (step + 1) * batch_size).
  // Reader thread that loads batch `step` (round robin, as PyTorch workers).
  std::uint64_t ThreadOf(std::uint64_t step) const { return threads_ == 0 ? 0 : step % threads_; }

  std::uint64_t epoch_seed() const { return epoch_seed_; }

 private:
  std::uint64_t samples_per_file_;
  std::uint64_t batch_size_;
  std::uint64_t steps_ = 0;
  std::uint64_t threads_;
  std::uint64_t rank_offset_ = 0;
  std::uint64_t epoch_seed_ = 0;
  bool shard_files_ = false;  // iomimic.sharding: files
  std::uint64_t world_ = 1;
  std::uint64_t rank_ = 0;
  Permutation sample_order_;
  Permutation file_order_;
};

// How reader threads share a streamed pass (FormatTraits::streamed), as
// tf.data.TFRecordDataset(files, num_parallel_reads=T) does
// (docs/dlio-compat.md §3.4): the rank's stream is cut into runs (records of
// one file, in order); runs are dealt to T cycle slots in groups of T, and
// the records of a group are interleaved one from each run in turn (block
// length 1, the slot order within a round). Every run is read front to back
// by the one reader thread of its slot, so each file is streamed once per
// pass however many threads read, while each batch mixes records of T files.
// Rebuilding costs O(files of the rank), not O(samples).
class StreamSchedule {
 public:
  // A sample and its position in the interleaved pass (its batch is
  // position / batch_size).
  struct Item {
    std::uint64_t position = 0;
    SampleRef ref;
  };

  // Walks the samples of one slot in increasing position order.
  class Cursor {
   public:
    // The slot's next sample; false when the slot has none left.
    bool Next(Item* item);

   private:
    friend class StreamSchedule;
    const StreamSchedule* schedule_ = nullptr;
    std::uint64_t slot_ = 0;
    std::size_t group_ = 0;
    std::uint64_t record_ = 0;
  };

  // Cuts `plan` (a streamed plan: its positions read records in file order)
  // into runs and deals them to `slots` (>= 1) cycle slots. Reuses the
  // memory of an earlier build.
  void Rebuild(const EpochPlan& plan, std::uint64_t slots);

  std::uint64_t slots() const { return slots_; }
  std::uint64_t runs() const { return runs_.size(); }
  // Samples of slot `slot`, in position order. Precondition: slot < slots().
  Cursor Begin(std::uint64_t slot) const;

 private:
  struct Run {
    SampleRef first;  // its first record
    std::uint64_t length = 0;
  };
  struct Group {
    std::uint64_t start = 0;  // position of its first sample
    std::size_t first_run = 0;
    std::size_t runs = 0;  // <= slots_
  };
  // Position of record `record` of run `index` of `group`.
  std::uint64_t PositionOf(const Group& group, std::size_t index, std::uint64_t record) const;

  std::uint64_t slots_ = 1;
  std::vector<Run> runs_;
  std::vector<Group> groups_;
};

// A shuffle buffer after a streamed read, with the fill rule that
// docs/formats.md ("Sample shuffle buffer") cites: samples enter the
// buffer in read order, two at a time while it holds fewer than `bufsize`,
// one at a time after; once it holds min(initial, bufsize), every entry is
// followed by taking one buffered sample at random (the taken slot filled
// with the last), and at the end of the stream the rest is taken at random.
// Returns, for each of the `n` read positions, the position at which its
// sample leaves the buffer (a permutation of 0 .. n - 1). A sample leaves
// no more than bufsize - 1 positions before its read position (it may leave
// any number after); bufsize 0 or 1 keeps the read order.
std::vector<std::uint64_t> ShuffleBufferOrder(std::uint64_t n, std::uint64_t bufsize,
                                              std::uint64_t initial, std::uint64_t seed);

// The default `initial` of that buffer (docs/formats.md, "Sample shuffle
// buffer").
inline constexpr std::uint64_t kShuffleBufferInitial = 100;

// Training steps per epoch for the whole job (same on every rank):
// floor(spf * files / world / batch), capped by total_training_steps; with
// iomimic.sharding files, floor(floor(files / world) * spf / batch), the
// smallest rank's whole files.
std::uint64_t TrainStepsPerEpoch(const config::Config& config, int world_size);
std::uint64_t EvalStepsPerEpoch(const config::Config& config, int world_size);

// Evaluation runs after epoch `epoch` (1-based).
bool EvaluateAfterEpoch(const config::Config& config, std::uint64_t epoch);
// Epoch-mode checkpoint after epoch `epoch` (1-based).
bool CheckpointAfterEpoch(const config::Config& config, std::uint64_t epoch);
// Step-mode checkpoint after step `step` (1-based within the epoch).
bool CheckpointAfterStep(const config::Config& config, std::uint64_t step);

// Files generated by `rank`: global indices rank, rank+P, ... (DLIO's split).
std::vector<std::uint64_t> FilesGeneratedBy(const DatasetLayout& layout, int rank, int world_size);

}  // namespace iomimic::plan
