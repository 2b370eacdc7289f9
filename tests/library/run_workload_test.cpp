// The engine used as a library, the way sweeps, searches and other front ends
// use it: run::RunWorkload with an observer, no command line, no console.

#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cluster/cluster.h"
#include "config/config.h"
#include "output/writers.h"
#include "plugin/registry.h"
#include "run/run.h"
#include "train/results.h"

namespace {

namespace fs = std::filesystem;
using namespace iomimic;

// Records the order of the observer's calls.
class Recorder : public run::RunObserver {
 public:
  std::vector<std::string> calls;
  std::string folder;
  std::vector<double> epoch_au;

  void OnRunFolder(const std::string& f) override {
    folder = f;
    calls.push_back("folder");
  }
  void OnGenerateStart(const run::GenerateStart& g) override {
    calls.push_back("generate " + std::to_string(g.files));
  }
  void OnGenerateEnd(const run::GenerateTotals& g) override {
    calls.push_back("generated " + std::to_string(g.files_written));
  }
  void OnTrainStart(const run::TrainStart& t) override {
    calls.push_back("train " + std::to_string(t.epochs) + "x" + std::to_string(t.steps_per_epoch));
  }
  void OnEpochEnd(const metrics::EpochRecord& e, const metrics::EpochMetrics& m) override {
    calls.push_back("epoch " + std::to_string(e.epoch));
    epoch_au.push_back(m.train.au_percent);
  }
  void OnError(const Status& s) override { calls.push_back("error " + s.message()); }
  void OnWarning(const std::string& w) override { warnings.push_back(w); }
  std::vector<std::string> warnings;
};

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

config::LoadedManifest Manifest(const fs::path& work, const std::vector<std::string>& extra) {
  const std::string yaml = R"(model:
  name: library
framework: pytorch
workflow:
  generate_data: True
  train: True
dataset:
  format: npz
  num_files_train: 8
  num_samples_per_file: 1
  record_length_bytes: 65536
  record_length_bytes_stdev: 0
reader:
  batch_size: 2
  read_threads: 1
train:
  epochs: 2
  computation_time: 0.001
)";
  std::vector<std::string> overrides = {
      "++workload.dataset.data_folder=" + (work / "data").string(),
      "++workload.output.folder=" + (work / "out").string()};
  overrides.insert(overrides.end(), extra.begin(), extra.end());
  Result<config::LoadedManifest> m = config::LoadManifestFromString(yaml, "library", overrides);
  REQUIRE_MESSAGE(m.ok(), m.status().message());
  return std::move(m).value();
}

// The plugins built with the tests.
const plugin::Registry& Plugins() {
  static const plugin::Registry* registry = [] {
    auto* r = new plugin::Registry;
    r->Discover(plugin::Registry::SearchPath({IOMIMIC_TEST_PLUGIN_DIR}, {}));
    return r;
  }();
  return *registry;
}

fs::path FreshDir(const std::string& name) {
  fs::path dir =
      fs::temp_directory_path() / ("iomimic-library-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// The warnings but the cache check's (session/cache_honesty.h), which every
// run of these tiny datasets gets: they fit in any host's memory.
std::vector<std::string> OtherWarnings(const std::vector<std::string>& warnings) {
  std::vector<std::string> out;
  for (const std::string& w : warnings) {
    // The cache check's (session/cache_honesty.h): the training set fits in
    // memory, or was in the page cache when training started.
    if (!w.starts_with("the training set (") &&
        w.find("of the training set") == std::string::npos) {
      out.push_back(w);
    }
  }
  return out;
}

TEST_CASE("RunWorkload generates, trains, writes the run folder and returns the model") {
  const fs::path work = FreshDir("ok");
  const config::LoadedManifest manifest = Manifest(work, {});
  const plugin::Registry& registry = Plugins();
  Recorder recorder;
  Result<output::RunResults> r =
      run::RunWorkload(manifest, registry, cluster::Cluster::Get(), {}, &recorder);
  REQUIRE_MESSAGE(r.ok(), r.status().message());

  const std::vector<std::string> expected = {"folder",    "generate 8", "generated 8",
                                             "train 2x4", "epoch 1",    "epoch 2"};
  CHECK(recorder.calls == expected);
  CHECK(recorder.folder == (work / "out").string());
  REQUIRE(r->Find<train::TrainingResults>()->train.has_value());
  CHECK(r->Find<train::TrainingResults>()->train->epochs == 2);
  CHECK(r->Find<train::TrainingResults>()->train->steps_per_epoch == 4);
  // The live epoch figures and the model's are the same computation.
  REQUIRE(r->Find<train::TrainingResults>()->train->train.au_percent.size() == 2);
  CHECK(r->Find<train::TrainingResults>()->train->train.au_percent[0] ==
        doctest::Approx(recorder.epoch_au[0]));
  CHECK(r->Find<train::TrainingResults>()->train->train.au_percent[1] ==
        doctest::Approx(recorder.epoch_au[1]));
  CHECK(r->io.bytes_read >= 2 * 8 * 65536);
  REQUIRE(r->Find<train::TrainingResults>()->generate.has_value());
  CHECK(r->Find<train::TrainingResults>()->generate->files_written == 8);
  CHECK(r->accelerators == 1);
  CHECK(r->peak_rss_mib > 0);

  // The files a front end reads, and renderings of the model.
  CHECK(fs::exists(work / "out" / "summary.json"));
  CHECK(fs::exists(work / "out" / "0_output.json"));
  CHECK(Slurp((work / "out" / "status.json").string()).find("\"completed\"") != std::string::npos);
  const std::string summary = output::SummaryJson(*r, manifest);
  CHECK(summary.find("\"train_au_percentage\"") != std::string::npos);
  const std::string console = output::ConsoleSummary(*r, manifest, recorder.folder);
  CHECK(console.find("train: 2 epochs x 4 steps") != std::string::npos);
  CHECK(OtherWarnings(recorder.warnings).empty());
  // 8 samples of 64 KiB fit in memory: the observer hears it.
  CHECK(recorder.warnings.size() == 1);
  fs::remove_all(work);
}

TEST_CASE("RunWorkload warns when DLIO's throughput formula will read 0 (2 steps per epoch)") {
  const fs::path work = FreshDir("two-steps");
  // 8 samples in batches of 4: 2 steps, and DLIO counts (steps - 2).
  const config::LoadedManifest manifest = Manifest(work, {"++workload.reader.batch_size=4"});
  Recorder recorder;
  Result<output::RunResults> r =
      run::RunWorkload(manifest, Plugins(), cluster::Cluster::Get(), {}, &recorder);
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  const std::vector<std::string> warnings = OtherWarnings(recorder.warnings);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].starts_with("training runs 2 step(s) per epoch"));
  fs::remove_all(work);
}

TEST_CASE("RunWorkload reports a failure to the observer and in status.json") {
  const fs::path work = FreshDir("fail");
  // Training without the dataset: refused before the first epoch.
  const config::LoadedManifest manifest =
      Manifest(work, {"++workload.workflow.generate_data=False"});
  const plugin::Registry& registry = Plugins();
  Recorder recorder;
  Result<output::RunResults> r =
      run::RunWorkload(manifest, registry, cluster::Cluster::Get(), {}, &recorder);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("does not exist") != std::string::npos);
  REQUIRE(recorder.calls.size() == 2);
  CHECK(recorder.calls[0] == "folder");
  CHECK(recorder.calls[1].rfind("error ", 0) == 0);
  CHECK(Slurp((work / "out" / "status.json").string()).find("\"failed\"") != std::string::npos);
  fs::remove_all(work);
}

TEST_CASE("RunWorkload generate_only writes the data and a run folder of its own") {
  const fs::path work = FreshDir("generate");
  const config::LoadedManifest manifest = Manifest(work, {});
  const plugin::Registry& registry = Plugins();
  Recorder recorder;
  run::RunOptions options;
  options.generate_only = true;
  Result<output::RunResults> r =
      run::RunWorkload(manifest, registry, cluster::Cluster::Get(), options, &recorder);
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  const std::vector<std::string> expected = {"folder", "generate 8", "generated 8"};
  CHECK(recorder.calls == expected);
  CHECK_FALSE(r->Find<train::TrainingResults>()->train.has_value());
  CHECK(r->Find<train::TrainingResults>()->generate->files_written == 8);
  // In a named folder: its subfolder generate/, leaving the folder itself to
  // the training run.
  CHECK(recorder.folder == (work / "out" / "generate").string());
  CHECK(Slurp((work / "out" / "generate" / "status.json").string()).find("\"completed\"") !=
        std::string::npos);
  CHECK(Slurp((work / "out" / "generate" / "summary.json").string()).find("\"files_written\": 8") !=
        std::string::npos);
  CHECK(fs::exists(work / "out" / "generate" / ".hydra" / "config.yaml"));
  CHECK_FALSE(fs::exists(work / "out" / "summary.json"));
  fs::remove_all(work);
}

// Records OnProgress snapshots (from the engine's progress thread).
class ProgressRecorder : public run::RunObserver {
 public:
  std::mutex mutex;
  std::vector<run::Progress> seen;
  bool returned = false;
  bool called_after_return = false;
  void OnProgress(const run::Progress& p) override {
    std::lock_guard<std::mutex> lock(mutex);
    if (returned) called_after_return = true;
    seen.push_back(p);
  }
};

TEST_CASE("RunWorkload reports progress every interval, only when asked") {
  const fs::path work = FreshDir("progress");
  const config::LoadedManifest manifest =
      Manifest(work, {"++workload.train.computation_time=0.05"});
  const plugin::Registry& registry = Plugins();
  ProgressRecorder recorder;
  run::RunOptions options;
  options.progress_interval = 0.02;
  Result<output::RunResults> r =
      run::RunWorkload(manifest, registry, cluster::Cluster::Get(), options, &recorder);
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  {
    std::lock_guard<std::mutex> lock(recorder.mutex);
    recorder.returned = true;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::lock_guard<std::mutex> lock(recorder.mutex);
  CHECK_FALSE(recorder.called_after_return);
  // 2 epochs x 4 steps x 50 ms: several snapshots of training.
  int training = 0;
  for (const run::Progress& p : recorder.seen) {
    if (p.phase != run::Progress::Phase::kTrain) continue;
    ++training;
    CHECK(p.epochs == 2);
    CHECK(p.steps == 4);
    CHECK(p.steps_per_epoch == 4);
    CHECK(p.epoch >= 1);
    CHECK(p.epoch <= 2);
    CHECK(p.step <= 4);
    CHECK(p.train_steps_done <= 8);
    CHECK(p.au_percent >= 0);
    CHECK(p.au_percent <= 100);
  }
  CHECK(training >= 5);
  fs::remove_all(work);

  // No interval, no calls.
  const fs::path quiet = FreshDir("progress-off");
  ProgressRecorder none;
  Result<output::RunResults> off =
      run::RunWorkload(Manifest(quiet, {}), registry, cluster::Cluster::Get(), {}, &none);
  REQUIRE(off.ok());
  CHECK(none.seen.empty());
  fs::remove_all(quiet);
}

}  // namespace

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const int result = context.run();
  iomimic::cluster::Cluster::Finalize();
  return result;
}
