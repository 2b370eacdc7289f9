#include "plan/plan.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>

#include "plan/numpy_random.h"
#include "plan/permutation.h"

namespace iomimic::plan {
namespace {

config::Config SmallConfig() {
  config::Config c;
  c.dataset.format = "npz";
  c.dataset.data_folder = "data/x";
  c.dataset.num_files_train = 24;
  c.dataset.num_files_eval = 6;
  c.dataset.num_samples_per_file = 4;
  c.dataset.record_length_bytes = 4096;
  c.reader.batch_size = 4;
  c.reader.batch_size_eval = 2;
  c.reader.read_threads = 3;
  c.train.seed = 123;
  return c;
}

// Every sample read by every rank in one epoch.
std::vector<SampleRef> ReadsOfEpoch(const config::Config& c, int world, std::uint64_t epoch,
                                    Split split = Split::kTrain) {
  DatasetLayout layout(c, "npz");
  ShuffleSeeds seeds{c.train.seed, c.train.seed_change_epoch, 42};
  std::vector<SampleRef> all;
  std::uint64_t steps = 0;
  for (int r = 0; r < world; ++r) {
    EpochPlan plan(c, layout, split, r, world, epoch, seeds);
    if (r == 0) steps = plan.steps();
    CHECK(plan.steps() == steps);  // equal step counts on all ranks
    // Walk the way the loader does: batch by batch, each batch by its thread.
    for (std::uint64_t t = 0; t < std::max<std::uint64_t>(1, plan.reader_threads()); ++t) {
      for (std::uint64_t step = 0; step < plan.steps(); ++step) {
        if (plan.ThreadOf(step) != t) continue;
        for (std::uint64_t i = 0; i < plan.batch_size(); ++i) {
          all.push_back(plan.Sample(step * plan.batch_size() + i));
        }
      }
    }
  }
  return all;
}

TEST_CASE("shuffle buffer: a permutation within the buffer's bound, webdataset's fill rule") {
  for (std::uint64_t bufsize : {2u, 3u, 7u, 64u, 150u, 1000u}) {
    const std::uint64_t n = 2000;
    const std::vector<std::uint64_t> out = ShuffleBufferOrder(n, bufsize, 100, 42);
    REQUIRE(out.size() == n);
    std::vector<std::uint64_t> read_at(n, n);  // emitted position -> read position
    for (std::uint64_t p = 0; p < n; ++p) {
      REQUIRE(out[p] < n);
      CHECK(read_at[out[p]] == n);  // each position taken once
      read_at[out[p]] = p;
      // No sample leaves more than bufsize - 1 positions early.
      CHECK(p <= out[p] + bufsize - 1);
    }
    // The first sample leaves once min(100, bufsize) are buffered: the
    // buffer grows by two per step until then.
    const std::uint64_t initial = std::min<std::uint64_t>(100, bufsize);
    const std::uint64_t first_reads = initial % 2 == 0 ? initial : initial + 1;
    CHECK(read_at[0] < std::max<std::uint64_t>(first_reads, 1));
    // A real shuffle: most samples move.
    std::uint64_t moved = 0;
    for (std::uint64_t p = 0; p < n; ++p) moved += out[p] != p;
    CHECK(moved > n / 2);
    // The same seed gives the same order; another seed another.
    CHECK(ShuffleBufferOrder(n, bufsize, 100, 42) == out);
    CHECK(ShuffleBufferOrder(n, bufsize, 100, 43) != out);
  }
  // bufsize 0 and 1 keep the read order.
  for (std::uint64_t bufsize : {0u, 1u}) {
    const std::vector<std::uint64_t> out = ShuffleBufferOrder(50, bufsize, 100, 7);
    for (std::uint64_t p = 0; p < 50; ++p) CHECK(out[p] == p);
  }
  // bufsize 2: at most one position early.
  const std::vector<std::uint64_t> two = ShuffleBufferOrder(1000, 2, 100, 9);
  for (std::uint64_t p = 0; p < 1000; ++p) CHECK(p <= two[p] + 1);
}

}  // namespace

TEST_CASE("numpy legacy normal matches numpy.random.normal after seed(10)") {
  // Values printed by: np.random.seed(10); np.random.normal(12107, 2822, 3)
  NumpyLegacyRandom rng(10);
  CHECK(rng.Normal(12107, 2822) == doctest::Approx(15864.737114653501).epsilon(1e-12));
  CHECK(rng.Normal(12107, 2822) == doctest::Approx(14125.5172657523).epsilon(1e-12));
  CHECK(rng.Normal(12107, 2822) == doctest::Approx(7745.880375662001).epsilon(1e-12));
}

TEST_CASE("per-file shapes equal DLIO's for unet3d sizes") {
  config::Config c = SmallConfig();
  c.dataset.record_length_bytes = 146600628;
  c.dataset.record_length_bytes_stdev = 68341808;
  c.dataset.num_files_train = 4;
  c.dataset.num_files_eval = 0;
  DatasetLayout layout(c, "npz");
  // From DLIO's formula with numpy: [15865, 14125, 7745, 12083, 13860, 10074, 12856, 12413]
  CHECK(layout.SampleShape(0) == std::vector<std::uint64_t>{15865, 14125});
  CHECK(layout.SampleShape(1) == std::vector<std::uint64_t>{7745, 12083});
  CHECK(layout.SampleShape(3) == std::vector<std::uint64_t>{12856, 12413});
}

TEST_CASE("shape without stdev is floor(sqrt(record_length)) squared, record_dims win") {
  config::Config c = SmallConfig();
  DatasetLayout layout(c, "npz");
  CHECK(layout.SampleShape(5) == std::vector<std::uint64_t>{64, 64});
  c.dataset.record_dims = {3, 5, 7};
  DatasetLayout dims(c, "npz");
  CHECK(dims.SampleShape(0) == std::vector<std::uint64_t>{3, 5, 7});
}

TEST_CASE("iomimic.data_files: sizes and classes in a cycle, shapes fitted to the format") {
  config::Config c = SmallConfig();  // 24 + 6 files, 4 samples each, uint8
  c.iomimic.data_files = {"1000*2 npy", "5000", "70000 npz_2"};
  DatasetLayout layout(c, "npz");
  REQUIRE(layout.has_file_sizes());
  CHECK(layout.FileSize(0) == 1000);
  CHECK(layout.FileClass(1) == "npy");
  CHECK(layout.FileSize(2) == 5000);
  CHECK(layout.FileClass(2).empty());
  CHECK(layout.FileClass(3) == "npz_2");
  CHECK(layout.FileSize(4) == 1000);    // the cycle again
  CHECK(layout.FileSize(27) == 70000);  // eval files continue it
  // Before fitting: the payload alone, over the samples.
  CHECK(layout.SampleShape(2) == std::vector<std::uint64_t>{1, 1250});
  // A format of 300 bytes of headers plus a 64-byte boundary past 4096
  // bytes of payload.
  auto size = [](const FileSpec& spec) -> Result<std::uint64_t> {
    const std::uint64_t payload = spec.num_samples * spec.sample_bytes();
    return payload + 300 + (payload > 4096 ? 64 : 0);
  };
  ElementType u8 = ElementType::FromName("uint8").value();
  REQUIRE(layout.FitFileSizes(size, u8).ok());
  for (std::uint64_t g : {0, 2, 3}) {
    const FileSpec spec = layout.Spec(g, u8);
    const std::uint64_t made = size(spec).value();
    CHECK(made <= layout.FileSize(g));
    CHECK(layout.FileSize(g) - made < 4);  // within the samples per file (uint8)
  }
  CHECK(layout.SampleShape(0) == std::vector<std::uint64_t>{1, 175});  // 4 x 175 + 300 = 1000
  auto unknown = [](const FileSpec&) -> Result<std::uint64_t> {
    return Status::NotSupported("compressed");
  };
  Status refused = layout.FitFileSizes(unknown, u8);
  CHECK(refused.message().find("iomimic.data_files") != std::string::npos);
  for (const char* bad : {"x", "10*0", "10 2a", "10 a b", "-1", "10*", "10\n\x01a b"}) {
    Result<std::vector<DataFilesEntry>> r = ParseDataFiles({"5", bad});
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message().find("iomimic.data_files entry 2") != std::string::npos);
    CHECK(r.status().message().find('\n') == std::string::npos);
  }
}

TEST_CASE("file names and folders follow DLIO") {
  config::Config c = SmallConfig();
  c.dataset.num_files_train = 64;
  c.dataset.num_files_eval = 8;
  c.dataset.num_subfolders_train = 2;
  c.dataset.num_subfolders_eval = 2;
  DatasetLayout layout(c, "npz");
  CHECK(layout.FilePath(Split::kTrain, 0) == "data/x/train/0/img_00_of_64.npz");
  CHECK(layout.FilePath(Split::kTrain, 7) == "data/x/train/1/img_07_of_64.npz");
  CHECK(layout.FilePath(Split::kEval, 3) == "data/x/valid/1/img_3_of_8.npz");
  c.dataset.num_subfolders_train = 0;
  c.dataset.num_files_train = 168;
  c.dataset.file_prefix = "part";
  DatasetLayout flat(c, "tfrecord");
  CHECK(flat.FilePath(Split::kTrain, 7) == "data/x/train/part_007_of_168.tfrecord");
  CHECK(flat.num_generated_files() == 176);
  CHECK(flat.FromGlobal(170).first == Split::kEval);
  CHECK(flat.FromGlobal(170).second == 2);
  std::vector<std::string> dirs = layout.Directories();
  CHECK(std::find(dirs.begin(), dirs.end(), "data/x/train/1") != dirs.end());
  CHECK(std::find(dirs.begin(), dirs.end(), "data/x/valid/0") != dirs.end());
}

TEST_CASE("file specs carry the iomimic content options") {
  config::Config c = SmallConfig();
  DatasetLayout plain(c, "npz");
  CHECK(plain.Spec(3, ElementType{}).content == ContentOptions{});
  c.iomimic.content = "zeros";
  c.iomimic.compress_percentage = 40;
  c.iomimic.dedupe_percentage = 25;
  DatasetLayout layout(c, "npz");
  for (std::uint64_t i : {std::uint64_t{0}, std::uint64_t{29}}) {
    const FileSpec spec = layout.Spec(i, ElementType{});
    CHECK(spec.content.kind == ContentOptions::Kind::kZeros);
    CHECK(spec.content.compress_percentage == 40);
    CHECK(spec.content.dedupe_percentage == 25);
  }
  c.iomimic.content = "random";
  CHECK(DatasetLayout(c, "npz").Spec(1, ElementType{}).content.kind ==
        ContentOptions::Kind::kRandom);
}

TEST_CASE("generation splits files round robin over ranks") {
  config::Config c = SmallConfig();
  DatasetLayout layout(c, "npz");
  std::set<std::uint64_t> seen;
  for (int r = 0; r < 4; ++r) {
    for (std::uint64_t f : FilesGeneratedBy(layout, r, 4)) {
      CHECK(f % 4 == static_cast<std::uint64_t>(r));
      CHECK(seen.insert(f).second);
    }
  }
  CHECK(seen.size() == layout.num_generated_files());
}

TEST_CASE("permutation is a bijection for many sizes and keys") {
  for (std::uint64_t n : {1, 2, 3, 5, 16, 17, 100, 1000, 4097}) {
    for (std::uint64_t key : {0, 1, 99}) {
      Permutation p(n, key);
      std::set<std::uint64_t> out;
      for (std::uint64_t i = 0; i < n; ++i) out.insert(p(i));
      CHECK(out.size() == n);
      CHECK(*out.rbegin() == n - 1);
    }
  }
  Permutation id(10, 5, false);
  for (std::uint64_t i = 0; i < 10; ++i) CHECK(id(i) == i);
}

TEST_CASE("every sample is read exactly once per epoch across ranks and threads") {
  for (auto file_shuffle : {config::ShuffleMode::kOff, config::ShuffleMode::kSeed}) {
    for (auto sample_shuffle :
         {config::ShuffleMode::kOff, config::ShuffleMode::kSeed, config::ShuffleMode::kRandom}) {
      for (int world : {1, 2, 3, 4}) {
        config::Config c = SmallConfig();  // 96 samples: divisible by 4*world for 1,2,3,4
        c.reader.file_shuffle = file_shuffle;
        c.reader.sample_shuffle = sample_shuffle;
        std::vector<SampleRef> reads = ReadsOfEpoch(c, world, 2);
        std::set<std::pair<std::uint64_t, std::uint64_t>> unique;
        for (const SampleRef& r : reads) {
          CHECK(r.file < c.dataset.num_files_train);
          CHECK(r.sample < c.dataset.num_samples_per_file);
          unique.insert({r.file, r.sample});
        }
        CHECK(reads.size() == 96);
        CHECK(unique.size() == 96);
      }
    }
  }
}

TEST_CASE("uneven datasets drop the remainder, never duplicate") {
  config::Config c = SmallConfig();
  c.dataset.num_files_train = 25;  // 100 samples, batch 4
  c.reader.sample_shuffle = config::ShuffleMode::kSeed;
  std::vector<SampleRef> reads = ReadsOfEpoch(c, 3, 1);  // 100 / 4 / 3 = 8 steps
  std::set<std::pair<std::uint64_t, std::uint64_t>> unique;
  for (const SampleRef& r : reads) unique.insert({r.file, r.sample});
  CHECK(reads.size() == 8 * 4 * 3);
  CHECK(unique.size() == reads.size());
}

TEST_CASE("order is deterministic for a seed and changes across epochs when shuffling") {
  config::Config c = SmallConfig();
  c.reader.sample_shuffle = config::ShuffleMode::kSeed;
  c.reader.file_shuffle = config::ShuffleMode::kSeed;
  CHECK(ReadsOfEpoch(c, 2, 1) == ReadsOfEpoch(c, 2, 1));
  CHECK(ReadsOfEpoch(c, 2, 1) != ReadsOfEpoch(c, 2, 2));
  config::Config other = c;
  other.train.seed = 7;
  CHECK(ReadsOfEpoch(c, 2, 1) != ReadsOfEpoch(other, 2, 1));
  c.train.seed_change_epoch = false;
  CHECK(ReadsOfEpoch(c, 2, 1) == ReadsOfEpoch(c, 2, 2));
}

TEST_CASE("no shuffle reads in order, and file shuffle alone permutes whole files") {
  config::Config c = SmallConfig();
  c.reader.read_threads = 1;
  std::vector<SampleRef> plain = ReadsOfEpoch(c, 1, 1);
  for (std::size_t i = 0; i < plain.size(); ++i) {
    CHECK(plain[i].file == i / 4);
    CHECK(plain[i].sample == i % 4);
  }
  c.reader.file_shuffle = config::ShuffleMode::kSeed;
  std::vector<SampleRef> shuffled = ReadsOfEpoch(c, 1, 1);
  CHECK(shuffled != plain);
  for (std::size_t i = 0; i < shuffled.size(); ++i) CHECK(shuffled[i].sample == i % 4);
}

TEST_CASE("dlio_order reproduces DLIO HEAD's sorted order for index loaders") {
  config::Config c = SmallConfig();
  c.reader.read_threads = 1;
  c.reader.sample_shuffle = config::ShuffleMode::kSeed;
  c.reader.data_loader = "pytorch";
  c.iomimic.dlio_order = true;
  std::vector<SampleRef> reads = ReadsOfEpoch(c, 1, 3);
  for (std::size_t i = 0; i < reads.size(); ++i) CHECK(reads[i].file == i / 4);
}

TEST_CASE("streamed formats read files in record order, and file shuffle still applies") {
  config::Config c = SmallConfig();
  c.reader.sample_shuffle = config::ShuffleMode::kSeed;
  c.reader.file_shuffle = config::ShuffleMode::kSeed;
  DatasetLayout layout(c, "tfrecord");
  ShuffleSeeds seeds{c.train.seed, true, 0};
  EpochPlan plan(c, layout, Split::kTrain, 0, 1, 1, seeds, /*streamed=*/true);
  std::set<std::uint64_t> files;
  for (std::uint64_t p = 0; p < plan.samples(); ++p) {
    SampleRef r = plan.Sample(p);
    CHECK(r.sample == p % 4);  // records of a file in order
    files.insert(r.file);
  }
  CHECK(files.size() == 24);
  CHECK(plan.Sample(0).file != 0);  // files are shuffled (seed 124)
}

// Every (thread, item) of a streamed schedule, checked for the properties
// the loader relies on; returns the interleaved order, position by position.
std::vector<SampleRef> WalkSchedule(const EpochPlan& plan, std::uint64_t slots) {
  StreamSchedule schedule;
  schedule.Rebuild(plan, slots);
  std::vector<SampleRef> at(plan.samples(), SampleRef{UINT64_MAX, UINT64_MAX});
  std::map<std::uint64_t, std::uint64_t> reader_of_file;
  for (std::uint64_t slot = 0; slot < slots; ++slot) {
    StreamSchedule::Cursor cursor = schedule.Begin(slot);
    StreamSchedule::Item item;
    std::uint64_t previous = 0;
    bool first = true;
    std::map<std::uint64_t, std::uint64_t> last_record;
    while (cursor.Next(&item)) {
      REQUIRE(item.position < plan.samples());
      CHECK(at[item.position].file == UINT64_MAX);  // each position once
      at[item.position] = item.ref;
      if (!first) CHECK(item.position > previous);  // in position order
      previous = item.position;
      first = false;
      // One slot streams a file, front to back.
      auto [it, added] = reader_of_file.emplace(item.ref.file, slot);
      CHECK(it->second == slot);
      auto seen = last_record.find(item.ref.file);
      if (seen != last_record.end()) CHECK(item.ref.sample == seen->second + 1);
      last_record[item.ref.file] = item.ref.sample;
    }
  }
  for (const SampleRef& r : at) CHECK(r.file != UINT64_MAX);  // every position read
  return at;
}

TEST_CASE("streamed passes: each file is streamed by one thread, records interleaved as tf.data") {
  config::Config c = SmallConfig();  // 24 files x 4 records, batch 4
  DatasetLayout layout(c, "tfrecord");
  ShuffleSeeds seeds{c.train.seed, true, 0};
  EpochPlan plan(c, layout, Split::kTrain, 0, 1, 1, seeds, /*streamed=*/true);
  // One slot: the plan's own order.
  std::vector<SampleRef> one = WalkSchedule(plan, 1);
  for (std::uint64_t p = 0; p < plan.samples(); ++p) CHECK(one[p] == plan.Sample(p));
  // Three slots: record 0 of files f0, f1, f2, then record 1 of each, ...
  std::vector<SampleRef> three = WalkSchedule(plan, 3);
  for (std::uint64_t p = 0; p < 12; ++p) {
    CHECK(three[p] == SampleRef{plan.Sample((p % 3) * 4).file, p / 3});
  }
  // Five slots over 24 files: four groups of five and one of four.
  WalkSchedule(plan, 5);
  WalkSchedule(plan, 8);
  WalkSchedule(plan, 40);  // more threads than files: the extra ones read nothing
}

TEST_CASE("streamed passes: a rank that starts or stops inside a file gets short runs") {
  config::Config c = SmallConfig();
  c.dataset.num_files_train = 5;  // 20 records; 3 ranks of 6 (batch 2)
  c.reader.batch_size = 2;
  DatasetLayout layout(c, "tfrecord");
  ShuffleSeeds seeds{c.train.seed, true, 0};
  for (int rank = 0; rank < 3; ++rank) {
    EpochPlan plan(c, layout, Split::kTrain, rank, 3, 1, seeds, /*streamed=*/true);
    REQUIRE(plan.samples() == 6);
    for (std::uint64_t slots : {1, 2, 4}) {
      std::vector<SampleRef> order = WalkSchedule(plan, slots);
      std::multiset<std::uint64_t> planned, walked;
      for (std::uint64_t p = 0; p < plan.samples(); ++p) {
        planned.insert(plan.Sample(p).file * 100 + plan.Sample(p).sample);
        walked.insert(order[p].file * 100 + order[p].sample);
      }
      CHECK(planned == walked);  // the same samples, in another order
    }
  }
}

TEST_CASE("step counts follow DLIO and total_training_steps caps them") {
  config::Config c = SmallConfig();
  CHECK(TrainStepsPerEpoch(c, 1) == 24);  // 96 / 4
  CHECK(TrainStepsPerEpoch(c, 2) == 12);
  CHECK(TrainStepsPerEpoch(c, 5) == 4);  // floor(96 / 4 / 5)
  CHECK(EvalStepsPerEpoch(c, 1) == 12);  // 24 / 2
  c.train.total_training_steps = 10;
  CHECK(TrainStepsPerEpoch(c, 1) == 10);
  CHECK(TrainStepsPerEpoch(c, 4) == 6);
}

TEST_CASE("file sharding (MLPerf's fork): rank r reads files r, r + N, ... and only those") {
  config::Config c = SmallConfig();  // 24 files of 4 samples, batch 4
  c.iomimic.sharding = "files";
  c.dataset.num_files_train = 25;         // 13 files for rank 0, 12 for rank 1
  CHECK(TrainStepsPerEpoch(c, 2) == 12);  // the smaller share: 12 files x 4 / 4
  CHECK(TrainStepsPerEpoch(c, 3) == 8);   // floor(25 / 3) = 8 files each
  DatasetLayout layout(c, "npz");
  ShuffleSeeds seeds{c.train.seed, c.train.seed_change_epoch, 42};
  SUBCASE("no file shuffle: the listing dealt out round robin") {
    for (int r = 0; r < 2; ++r) {
      EpochPlan plan(c, layout, Split::kTrain, r, 2, 1, seeds);
      std::set<std::uint64_t> files;
      std::map<std::uint64_t, int> per_file;
      for (std::uint64_t i = 0; i < plan.samples(); ++i) {
        const SampleRef s = plan.Sample(i);
        files.insert(s.file);
        ++per_file[s.file];
        CHECK(s.file % 2 == static_cast<std::uint64_t>(r));
      }
      CHECK(files.size() == 12);
      for (const auto& [file, n] : per_file) CHECK(n == 4);  // whole files
    }
    // A sample shuffle mixes a rank's own samples only.
    c.reader.sample_shuffle = config::ShuffleMode::kSeed;
    for (int r = 0; r < 2; ++r) {
      EpochPlan plan(c, layout, Split::kTrain, r, 2, 1, seeds);
      std::set<std::pair<std::uint64_t, std::uint64_t>> seen;
      for (std::uint64_t i = 0; i < plan.samples(); ++i) {
        const SampleRef s = plan.Sample(i);
        CHECK(s.file % 2 == static_cast<std::uint64_t>(r));
        seen.insert({s.file, s.sample});
      }
      CHECK(seen.size() == plan.samples());  // no sample twice
    }
  }
  SUBCASE("file shuffle: dealt out again each epoch, every file to one rank") {
    c.dataset.num_files_train = 24;
    c.reader.file_shuffle = config::ShuffleMode::kSeed;
    std::vector<std::set<std::uint64_t>> rank0;
    for (std::uint64_t epoch = 1; epoch <= 2; ++epoch) {
      std::map<std::uint64_t, int> readers;
      for (int r = 0; r < 2; ++r) {
        EpochPlan plan(c, layout, Split::kTrain, r, 2, epoch, seeds);
        std::set<std::uint64_t> mine;
        for (std::uint64_t i = 0; i < plan.samples(); ++i) mine.insert(plan.Sample(i).file);
        for (std::uint64_t f : mine) ++readers[f];
        if (r == 0) rank0.push_back(mine);
      }
      CHECK(readers.size() == 24);
      for (const auto& [file, n] : readers) CHECK(n == 1);
    }
    CHECK(rank0[0] != rank0[1]);
  }
}

TEST_CASE("evaluation and checkpoint schedules") {
  config::Config c = SmallConfig();
  c.workflow.evaluation = true;
  c.evaluation.eval_after_epoch = 2;
  c.evaluation.epochs_between_evals = 2;
  CHECK_FALSE(EvaluateAfterEpoch(c, 1));
  CHECK(EvaluateAfterEpoch(c, 2));
  CHECK_FALSE(EvaluateAfterEpoch(c, 3));
  CHECK(EvaluateAfterEpoch(c, 4));
  c.workflow.checkpoint = true;
  c.checkpoint.checkpoint_after_epoch = 5;
  c.checkpoint.epochs_between_checkpoints = 2;
  CHECK_FALSE(CheckpointAfterEpoch(c, 4));
  CHECK(CheckpointAfterEpoch(c, 5));
  CHECK(CheckpointAfterEpoch(c, 7));
  c.checkpoint.steps_between_checkpoints = 250;
  CHECK_FALSE(CheckpointAfterEpoch(c, 5));
  CHECK(CheckpointAfterStep(c, 500));
  CHECK_FALSE(CheckpointAfterStep(c, 499));
}

}  // namespace iomimic::plan
