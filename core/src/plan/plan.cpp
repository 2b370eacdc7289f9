#include "plan/plan.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <sstream>

#include "config/content.h"
#include "iomimic/random.h"
#include "plan/numpy_random.h"

namespace iomimic::plan {
namespace {

std::string Padded(std::uint64_t value, std::uint64_t width_of) {
  std::string digits = std::to_string(value);
  std::size_t width = std::to_string(width_of).size();
  if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
  return digits;
}

// DLIO's "index" samplers (PyTorch, DALI) read each rank's range in sorted
// order whatever the shuffle settings; the compat switch reproduces that.
bool IndexLoader(const config::Config& c) {
  const std::string& l = c.reader.data_loader;
  return l == "pytorch" || l == "dali" || l == "native_dali";
}

// The whole of `text` as a decimal number, or false.
bool ParseDecimal(const std::string& text, std::uint64_t* out) {
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, *out);
  return ec == std::errc() && ptr == end && !text.empty();
}

// Most files iomimic.data_files may list: a bound on a mistyped count.
constexpr std::uint64_t kMostListedFiles = std::uint64_t{1} << 40;

}  // namespace

Result<std::vector<DataFilesEntry>> ParseDataFiles(const std::vector<std::string>& entries) {
  std::vector<DataFilesEntry> parsed;
  std::uint64_t files = 0;
  for (std::size_t e = 0; e < entries.size(); ++e) {
    auto bad = [&](const std::string& why) {
      return Status::InvalidArgument("iomimic.data_files entry " + std::to_string(e + 1) + " '" +
                                     config::OneLineText(entries[e]) +
                                     "': " + config::OneLineText(why));
    };
    std::istringstream words(entries[e]);
    std::string size_word, name, extra;
    words >> size_word >> name >> extra;
    DataFilesEntry entry;
    const std::size_t star = size_word.find('*');
    if (!ParseDecimal(size_word.substr(0, star), &entry.size) ||
        (star != std::string::npos &&
         (!ParseDecimal(size_word.substr(star + 1), &entry.count) || entry.count == 0)) ||
        !extra.empty()) {
      return bad(
          "expected 'SIZE[*K] [CLASS]' (K files of SIZE bytes, read with CLASS's entries "
          "of iomimic.read_script)");
    }
    if (!name.empty()) {
      bool ok = std::isalpha(static_cast<unsigned char>(name[0])) != 0;
      for (const char c : name) {
        ok = ok &&
             (std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-' || c == '.');
      }
      if (!ok)
        return bad("'" + name +
                   "' is not a class name (a letter, then letters, digits, "
                   "'_', '-', '.')");
    }
    entry.file_class = name;
    files += entry.count;
    if (files > kMostListedFiles) return bad("more than 2^40 files listed in all");
    parsed.push_back(std::move(entry));
  }
  return parsed;
}

std::string SplitName(Split split) { return split == Split::kTrain ? "train" : "valid"; }

DatasetLayout::DatasetLayout(const config::Config& config, std::string extension)
    : data_folder_(config.dataset.data_folder),
      prefix_(config.dataset.file_prefix),
      extension_(std::move(extension)),
      files_train_(config.dataset.num_files_train),
      files_eval_(config.dataset.num_files_eval),
      subfolders_train_(config.dataset.num_subfolders_train),
      subfolders_eval_(config.dataset.num_subfolders_eval),
      samples_per_file_(std::max<std::uint64_t>(1, config.dataset.num_samples_per_file)),
      record_dims_(config.dataset.record_dims),
      nominal_sample_bytes_(config.dataset.record_length_bytes),
      compression_(config.dataset.compression),
      compression_level_(config.dataset.compression_level),
      seed_(config.train.seed) {
  content_ = config::ContentOf(config.iomimic);
  // The format's own dataset keys, by name (the key table's FormatParam rows).
  parameters_ = config::FormatParameters(config);
  if (Result<std::vector<DataFilesEntry>> listed = ParseDataFiles(config.iomimic.data_files);
      listed.ok()) {
    data_files_ = std::move(listed).value();  // an error is the session's to report
  }
  if (!data_files_.empty()) {
    Result<ElementType> type = ElementType::FromName(config.dataset.record_element_type);
    const std::uint64_t unit = samples_per_file_ * (type.ok() ? type->size : 1);
    std::uint64_t listed = 0;
    for (const DataFilesEntry& e : data_files_) {
      listed += e.count;
      data_files_end_.push_back(listed);
      data_files_n_.push_back(std::max<std::uint64_t>(1, e.size / unit));
    }
  }
  const double length = config.dataset.record_length_bytes;
  dimension_ =
      std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::floor(std::sqrt(length))));
  const double stdev =
      length > 0 ? config.dataset.record_length_bytes_stdev / 2.0 / std::sqrt(length) : 0.0;
  if (record_dims_.empty() && stdev > 0) {
    // np.random.seed(10); np.random.normal(dimension, stdev, 2 * files),
    // each truncated to int and clamped to >= 1.
    NumpyLegacyRandom rng(10);
    std::uint64_t n = num_generated_files();
    drawn_dims_.resize(2 * n);
    for (std::uint64_t i = 0; i < 2 * n; ++i) {
      double d = rng.Normal(static_cast<double>(dimension_), stdev);
      drawn_dims_[i] = static_cast<std::uint32_t>(std::max(1.0, std::trunc(d)));
    }
  }
}

std::uint64_t DatasetLayout::num_files(Split split) const {
  return split == Split::kTrain ? files_train_ : files_eval_;
}

std::uint64_t DatasetLayout::num_generated_files() const { return files_train_ + files_eval_; }

std::pair<Split, std::uint64_t> DatasetLayout::FromGlobal(std::uint64_t global_index) const {
  if (global_index < files_train_) return {Split::kTrain, global_index};
  return {Split::kEval, global_index - files_train_};
}

std::uint64_t DatasetLayout::ToGlobal(Split split, std::uint64_t index) const {
  return split == Split::kTrain ? index : files_train_ + index;
}

std::string DatasetLayout::SplitDirectory(Split split) const {
  return data_folder_ + "/" + SplitName(split);
}

std::vector<std::string> DatasetLayout::Directories() const {
  std::vector<std::string> dirs = {data_folder_, SplitDirectory(Split::kTrain),
                                   SplitDirectory(Split::kEval)};
  for (Split split : {Split::kTrain, Split::kEval}) {
    std::uint64_t s = split == Split::kTrain ? subfolders_train_ : subfolders_eval_;
    if (s > 1 && num_files(split) > 0) {  // a split without files needs no subfolders
      for (std::uint64_t i = 0; i < s; ++i)
        dirs.push_back(SplitDirectory(split) + "/" + Padded(i, s));
    }
  }
  return dirs;
}

std::string DatasetLayout::FilePath(Split split, std::uint64_t index) const {
  std::uint64_t n = num_files(split);
  std::uint64_t s = split == Split::kTrain ? subfolders_train_ : subfolders_eval_;
  std::string path = SplitDirectory(split) + "/";
  if (s > 1) path += Padded(index % s, s) + "/";
  path += prefix_ + "_" + Padded(index, n) + "_of_" + std::to_string(n) + "." + extension_;
  return path;
}

std::size_t DatasetLayout::DataFilesEntryOf(std::uint64_t global_index) const {
  const std::uint64_t position = global_index % data_files_end_.back();
  return static_cast<std::size_t>(
      std::upper_bound(data_files_end_.begin(), data_files_end_.end(), position) -
      data_files_end_.begin());
}

std::uint64_t DatasetLayout::FileSize(std::uint64_t global_index) const {
  return data_files_.empty() ? 0 : data_files_[DataFilesEntryOf(global_index)].size;
}

const std::string& DatasetLayout::FileClass(std::uint64_t global_index) const {
  static const std::string kNone;
  return data_files_.empty() ? kNone : data_files_[DataFilesEntryOf(global_index)].file_class;
}

Status DatasetLayout::FitFileSizes(
    const std::function<Result<std::uint64_t>(const FileSpec&)>& file_size,
    const ElementType& element_type) {
  if (data_files_.empty()) return Status::OK();
  FileSpec spec = Spec(0, element_type);
  const std::uint64_t unit = samples_per_file_ * element_type.size;
  auto size_of = [&](std::uint64_t n) -> Result<std::uint64_t> {
    spec.sample_shape = {1, n};
    Result<std::uint64_t> size = file_size(spec);
    if (!size.ok()) {
      return Status::InvalidArgument(
          "iomimic.data_files needs a format that can say its files' sizes: " +
          size.status().message());
    }
    return size;
  };
  IOMIMIC_ASSIGN_OR_RETURN(const std::uint64_t one, size_of(1));
  const std::uint64_t overhead = one > unit ? one - unit : 0;  // the format's headers
  std::map<std::uint64_t, std::uint64_t> fitted;               // size -> n
  for (std::size_t i = 0; i < data_files_.size(); ++i) {
    const std::uint64_t target = data_files_[i].size;
    if (auto it = fitted.find(target); it != fitted.end()) {
      data_files_n_[i] = it->second;
      continue;
    }
    // The payload's estimate, then steps down while the file is too large
    // and up while one more element per sample still fits (the headers'
    // padding can change with n).
    std::uint64_t n =
        std::max<std::uint64_t>(1, target > overhead ? (target - overhead) / unit : 1);
    IOMIMIC_ASSIGN_OR_RETURN(std::uint64_t size, size_of(n));
    for (int step = 0; step < 64 && size > target && n > 1; ++step) {
      n -= std::min(n - 1, std::max<std::uint64_t>(1, (size - target) / unit));
      IOMIMIC_ASSIGN_OR_RETURN(size, size_of(n));
    }
    for (int step = 0; step < 64 && size <= target; ++step) {
      IOMIMIC_ASSIGN_OR_RETURN(const std::uint64_t next, size_of(n + 1));
      if (next > target) break;
      ++n;
      size = next;
    }
    data_files_n_[i] = n;
    fitted[target] = n;
  }
  return Status::OK();
}

std::vector<std::uint64_t> DatasetLayout::SampleShape(std::uint64_t global_index) const {
  if (!data_files_.empty()) return {1, data_files_n_[DataFilesEntryOf(global_index)]};
  if (!record_dims_.empty()) return record_dims_;
  if (!drawn_dims_.empty() && 2 * global_index + 1 < drawn_dims_.size()) {
    return {drawn_dims_[2 * global_index], drawn_dims_[2 * global_index + 1]};
  }
  return {dimension_, dimension_};
}

FileSpec DatasetLayout::Spec(std::uint64_t global_index, const ElementType& element_type) const {
  FileSpec spec;
  auto [split, index] = FromGlobal(global_index);
  spec.path = FilePath(split, index);
  spec.file_index = global_index;
  spec.sample_shape = SampleShape(global_index);
  spec.element_type = element_type;
  spec.num_samples = samples_per_file_;
  spec.seed = MixSeed(seed_, global_index);
  spec.content = content_;
  spec.compression = compression_;
  spec.compression_level = compression_level_;
  spec.parameters = parameters_;
  return spec;
}

namespace {

bool ShardFiles(const config::Config& config) { return config.iomimic.sharding == "files"; }

// Samples per rank that every rank can read in an epoch: with file
// sharding, the smallest rank's share of whole files (the fork agrees on the
// smallest step count); else an even share of the samples.
std::uint64_t SamplesPerRank(const config::Config& config, std::uint64_t files, int world_size) {
  const std::uint64_t spf = std::max<std::uint64_t>(1, config.dataset.num_samples_per_file);
  const std::uint64_t world = static_cast<std::uint64_t>(std::max(1, world_size));
  if (ShardFiles(config)) return files / world * spf;
  return spf * files / world;
}

// iomimic.replicate dataset: every rank reads the whole sample set, as one rank would.
int ShardingWorld(const config::Config& config, int world_size) {
  return config.iomimic.replicate == "dataset" ? 1 : world_size;
}

}  // namespace

std::uint64_t TrainStepsPerEpoch(const config::Config& config, int world_size) {
  world_size = ShardingWorld(config, world_size);
  std::uint64_t bs = std::max<std::uint64_t>(1, config.reader.batch_size);
  std::uint64_t steps = SamplesPerRank(config, config.dataset.num_files_train, world_size) / bs;
  if (config.train.total_training_steps > 0) {
    steps = std::min<std::uint64_t>(steps,
                                    static_cast<std::uint64_t>(config.train.total_training_steps));
  }
  return steps;
}

std::uint64_t EvalStepsPerEpoch(const config::Config& config, int world_size) {
  world_size = ShardingWorld(config, world_size);
  std::uint64_t bs = std::max<std::uint64_t>(1, config.reader.batch_size_eval);
  return SamplesPerRank(config, config.dataset.num_files_eval, world_size) / bs;
}

bool EvaluateAfterEpoch(const config::Config& config, std::uint64_t epoch) {
  if (!config.workflow.evaluation || config.dataset.num_files_eval == 0) return false;
  std::uint64_t first = std::max<std::uint64_t>(1, config.evaluation.eval_after_epoch);
  std::uint64_t every = std::max<std::uint64_t>(1, config.evaluation.epochs_between_evals);
  return epoch >= first && (epoch - first) % every == 0;
}

bool CheckpointAfterEpoch(const config::Config& config, std::uint64_t epoch) {
  if (!config.workflow.checkpoint || config.checkpoint.steps_between_checkpoints >= 0) return false;
  std::uint64_t first = std::max<std::uint64_t>(1, config.checkpoint.checkpoint_after_epoch);
  std::uint64_t every = std::max<std::uint64_t>(1, config.checkpoint.epochs_between_checkpoints);
  return epoch >= first && (epoch - first) % every == 0;
}

bool CheckpointAfterStep(const config::Config& config, std::uint64_t step) {
  if (!config.workflow.checkpoint || config.checkpoint.steps_between_checkpoints <= 0) return false;
  return step % static_cast<std::uint64_t>(config.checkpoint.steps_between_checkpoints) == 0;
}

std::vector<std::uint64_t> FilesGeneratedBy(const DatasetLayout& layout, int rank, int world_size) {
  std::vector<std::uint64_t> files;
  for (std::uint64_t g = static_cast<std::uint64_t>(rank); g < layout.num_generated_files();
       g += static_cast<std::uint64_t>(world_size)) {
    files.push_back(g);
  }
  return files;
}

namespace {

std::uint64_t EpochSeed(const ShuffleSeeds& seeds, bool random_mode, std::uint64_t epoch) {
  if (random_mode) return MixSeed(seeds.random_seed, epoch);
  return seeds.base_seed + (seeds.change_per_epoch ? epoch : 0);
}

}  // namespace

EpochPlan::EpochPlan(const config::Config& config, const DatasetLayout& layout, Split split,
                     int rank, int world_size, std::uint64_t epoch, const ShuffleSeeds& seeds,
                     bool streamed)
    : samples_per_file_(layout.samples_per_file()),
      batch_size_(std::max<std::uint64_t>(
          1, split == Split::kTrain ? config.reader.batch_size : config.reader.batch_size_eval)),
      threads_(config.reader.read_threads),
      sample_order_(0, 0, false),
      file_order_(0, 0, false) {
  steps_ = split == Split::kTrain ? TrainStepsPerEpoch(config, world_size)
                                  : EvalStepsPerEpoch(config, world_size);
  // iomimic.replicate: every rank reads rank 0's stream (the whole set when
  // steps are a single rank's, the same batches otherwise).
  rank_offset_ = config.iomimic.replicate == "none"
                     ? static_cast<std::uint64_t>(rank) * steps_ * batch_size_
                     : 0;
  bool compat_sorted = config.iomimic.dlio_order && IndexLoader(config);
  bool sample_shuffle =
      !compat_sorted && !streamed && config.reader.sample_shuffle != config::ShuffleMode::kOff;
  bool file_shuffle = !compat_sorted && config.reader.file_shuffle != config::ShuffleMode::kOff;
  std::uint64_t sample_seed =
      EpochSeed(seeds, config.reader.sample_shuffle == config::ShuffleMode::kRandom, epoch);
  std::uint64_t file_seed =
      EpochSeed(seeds, config.reader.file_shuffle == config::ShuffleMode::kRandom, epoch);
  epoch_seed_ = sample_shuffle ? sample_seed : file_seed;
  file_order_ = Permutation(layout.num_files(split), MixSeed(file_seed, 0xF1), file_shuffle);
  if (ShardFiles(config)) {
    // MLPerf Storage v3.0's fork: this rank's files are r, r + N, ... of the
    // epoch's file order (the files as listed, or dealt out again from a
    // fresh shuffle each epoch), and its samples are shuffled among
    // themselves only.
    // With iomimic.replicate, every rank reads rank 0's files (all of them
    // for replicate: dataset).
    shard_files_ = true;
    world_ = static_cast<std::uint64_t>(std::max(1, ShardingWorld(config, world_size)));
    rank_ = config.iomimic.replicate == "none" ? static_cast<std::uint64_t>(rank) : 0;
    rank_offset_ = 0;
    const std::uint64_t local_files =
        (layout.num_files(split) + world_ - 1 - rank_) / world_;  // files rank_, rank_ + N, ...
    sample_order_ = Permutation(local_files * samples_per_file_,
                                MixSeed(MixSeed(sample_seed, 0x5A), rank_), sample_shuffle);
    return;
  }
  sample_order_ =
      Permutation(layout.num_samples(split), MixSeed(sample_seed, 0x5A), sample_shuffle);
}

SampleRef EpochPlan::Sample(std::uint64_t position) const {
  std::uint64_t global = sample_order_(rank_offset_ + position);
  if (shard_files_) {
    const std::uint64_t local_file = global / samples_per_file_;
    return SampleRef{file_order_(rank_ + local_file * world_), global % samples_per_file_};
  }
  return SampleRef{file_order_(global / samples_per_file_), global % samples_per_file_};
}

std::vector<std::uint64_t> ShuffleBufferOrder(std::uint64_t n, std::uint64_t bufsize,
                                              std::uint64_t initial, std::uint64_t seed) {
  std::vector<std::uint64_t> out(static_cast<std::size_t>(n));
  std::vector<std::uint64_t> buffer;  // read positions of the buffered samples
  buffer.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(n, bufsize) + 1));
  initial = std::min(initial, bufsize);
  Xoshiro256 rng(seed);
  std::uint64_t read = 0;
  std::uint64_t emitted = 0;
  auto take = [&] {
    // A uniform slot (randint's; the bias of a 64-bit modulo is below 2^-40
    // for any buffer that fits in memory).
    const std::size_t k = static_cast<std::size_t>(rng.Next() % buffer.size());
    out[static_cast<std::size_t>(buffer[k])] = emitted++;
    buffer[k] = buffer.back();
    buffer.pop_back();
  };
  while (read < n) {
    buffer.push_back(read++);
    if (buffer.size() < bufsize && read < n) buffer.push_back(read++);
    if (buffer.size() >= initial) take();
  }
  while (!buffer.empty()) take();
  return out;
}

void StreamSchedule::Rebuild(const EpochPlan& plan, std::uint64_t slots) {
  slots_ = std::max<std::uint64_t>(1, slots);
  runs_.clear();
  groups_.clear();
  const std::uint64_t n = plan.samples();
  std::uint64_t position = 0;
  while (position < n) {
    const SampleRef first = plan.Sample(position);
    // A streamed plan reads a file's records in order, so a run ends at the
    // file's end or at the rank's last position; its far end confirms it.
    // Anything else (a plan that is not in record order) is walked sample by
    // sample, which is slower but still right.
    std::uint64_t length = std::min(n - position, plan.samples_per_file() - first.sample);
    const SampleRef last = plan.Sample(position + length - 1);
    if (length == 0 || last.file != first.file || last.sample != first.sample + length - 1) {
      length = 1;
      while (position + length < n &&
             plan.Sample(position + length) == SampleRef{first.file, first.sample + length}) {
        ++length;
      }
    }
    runs_.push_back(Run{first, length});
    position += length;
  }
  std::uint64_t start = 0;
  for (std::size_t first_run = 0; first_run < runs_.size(); first_run += slots_) {
    Group group;
    group.start = start;
    group.first_run = first_run;
    group.runs =
        static_cast<std::size_t>(std::min<std::uint64_t>(slots_, runs_.size() - first_run));
    for (std::size_t k = 0; k < group.runs; ++k) start += runs_[first_run + k].length;
    groups_.push_back(group);
  }
}

std::uint64_t StreamSchedule::PositionOf(const Group& group, std::size_t index,
                                         std::uint64_t record) const {
  // Rounds 0..record-1 took min(length, record) records from every run;
  // round `record` takes one from each earlier run still holding one.
  std::uint64_t position = group.start;
  for (std::size_t k = 0; k < group.runs; ++k) {
    const std::uint64_t length = runs_[group.first_run + k].length;
    position += std::min(length, record);
    if (k < index && length > record) ++position;
  }
  return position;
}

StreamSchedule::Cursor StreamSchedule::Begin(std::uint64_t slot) const {
  Cursor cursor;
  cursor.schedule_ = this;
  cursor.slot_ = slot;
  return cursor;
}

bool StreamSchedule::Cursor::Next(Item* item) {
  const StreamSchedule& s = *schedule_;
  while (group_ < s.groups_.size()) {
    const Group& group = s.groups_[group_];
    if (slot_ < group.runs) {
      const Run& run = s.runs_[group.first_run + slot_];
      if (record_ < run.length) {
        item->position = s.PositionOf(group, static_cast<std::size_t>(slot_), record_);
        item->ref = SampleRef{run.first.file, run.first.sample + record_};
        ++record_;
        return true;
      }
    }
    ++group_;
    record_ = 0;
  }
  return false;
}

}  // namespace iomimic::plan
