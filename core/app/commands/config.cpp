// `iomimic config`: the resolved manifest (credentials redacted), every
// manifest key (--keys), or the plan: steps, files, checkpoint files and
// sizes (--plan), writing nothing.

#include <algorithm>
#include <filesystem>
#include <iostream>

#include "cli.h"
#include "plan/checkpoint_plan.h"
#include "plan/plan.h"

namespace iomimic::app {

namespace fs = std::filesystem;

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// The free space where the data will go (its nearest existing folder), and a
// warning when a dataset to be generated (`total` bytes) does not fit.
void PrintFreeSpace(const config::Config& c, const plan::DatasetLayout& layout, double total) {
  std::error_code ec;
  fs::path where = fs::absolute(layout.data_folder(), ec);
  while (!where.empty() && !fs::exists(where, ec) && where != where.root_path()) {
    where = where.parent_path();
  }
  const fs::space_info space = fs::space(where, ec);
  if (ec) return;
  std::cout << Format("free space at %s: %.3f GiB\n", where.c_str(),
                      static_cast<double>(space.available) / kGiB);
  if (c.workflow.generate_data && total > static_cast<double>(space.available)) {
    std::cerr << Format(
                     "iomimic: warning: the dataset (%.3f GiB) does not fit in the %.3f GiB free "
                     "at %s",
                     total / kGiB, static_cast<double>(space.available) / kGiB, where.c_str())
              << std::endl;
  }
}

// Each split's folder and file count (and subfolders).
void PrintSplitFolders(const config::Config& c, const plan::DatasetLayout& layout) {
  for (plan::Split split : {plan::Split::kTrain, plan::Split::kEval}) {
    const std::uint64_t files = layout.num_files(split);
    const std::uint64_t folders = split == plan::Split::kTrain ? c.dataset.num_subfolders_train
                                                               : c.dataset.num_subfolders_eval;
    if (files == 0) continue;
    std::cout << "  " << layout.SplitDirectory(split) << ": " << files << " files"
              << (folders > 1
                      ? Format(" in %llu subfolders, about %llu each",
                               static_cast<unsigned long long>(folders),
                               static_cast<unsigned long long>((files + folders - 1) / folders))
                      : std::string())
              << "\n";
  }
}

// config --plan: the dataset's size (sample payloads; formats add headers),
// its shapes and folders, and whether it fits where it will be written.
void PrintDatasetSize(const config::Config& c, const plan::DatasetLayout& layout, int world) {
  Result<ElementType> type = ElementType::FromName(c.dataset.record_element_type);
  const std::uint64_t element = type.ok() ? type->size : 1;
  double bytes[2] = {0, 0};
  std::uint64_t smallest = UINT64_MAX, largest = 0;
  for (std::uint64_t g = 0; g < layout.num_generated_files(); ++g) {
    std::uint64_t sample = element;
    for (std::uint64_t d : layout.SampleShape(g)) sample *= d;
    smallest = std::min(smallest, sample);
    largest = std::max(largest, sample);
    bytes[layout.FromGlobal(g).first == plan::Split::kTrain ? 0 : 1] +=
        static_cast<double>(sample) * static_cast<double>(layout.samples_per_file());
  }
  std::string shape;
  if (layout.num_generated_files() > 0) {
    for (std::uint64_t d : layout.SampleShape(0))
      shape += (shape.empty() ? "" : " x ") + std::to_string(d);
  }
  std::cout << "samples: " << (shape.empty() ? "-" : shape) << " " << c.dataset.record_element_type
            << " in the first file"
            << (layout.num_generated_files() > 0
                    ? Format(", %llu to %llu bytes each", static_cast<unsigned long long>(smallest),
                             static_cast<unsigned long long>(largest))
                    : std::string())
            << "\n";
  const double total = bytes[0] + bytes[1];
  std::cout << Format(
      "data: train %.3f GiB + eval %.3f GiB = %.3f GiB of sample payload (formats add their "
      "headers), %.3f GiB read per rank and epoch\n",
      bytes[0] / kGiB, bytes[1] / kGiB, total / kGiB, bytes[0] / kGiB / std::max(1, world));
  PrintSplitFolders(c, layout);
  PrintFreeSpace(c, layout, total);
}

// config --plan, the checkpoint: its layout, every rank's files and sizes.
int PrintCheckpointPlan(const config::Config& c, int world) {
  Result<plan::CheckpointPlan> cp = plan::PlanCheckpoint(c, world);
  if (!cp.ok()) return Fail(cp.status());
  std::cout << Format(
      "checkpoint: %s/global_epoch<E>_step<S>/, TP %d x PP %d x DP %d, ZeRO %d, "
      "%llu parameters\n",
      c.checkpoint.checkpoint_folder.c_str(), cp->tensor, cp->pipeline, cp->data, cp->zero_stage,
      static_cast<unsigned long long>(cp->parameters));
  for (const plan::RankCheckpoint& r : cp->ranks) {
    for (const plan::CheckpointFile& f : r.files) {
      std::cout << Format("  rank %d  %-52s %16llu bytes  %10.3f GiB\n", r.rank, f.name.c_str(),
                          static_cast<unsigned long long>(f.bytes), f.bytes / kGiB);
    }
  }
  std::cout << Format("model state %.3f GiB + optimizer state %.3f GiB = %.3f GiB per checkpoint\n",
                      cp->model_bytes_total / kGiB, cp->optimizer_bytes_total / kGiB,
                      cp->total_bytes() / kGiB);
  return 0;
}

// config --plan: the dataset, the ranks, the steps and the checkpoint.
int PrintPlan(const config::LoadedManifest& manifest, int ranks) {
  const config::Config& c = manifest.config;
  plan::DatasetLayout layout(c, c.dataset.format);
  std::cout << "workload: " << manifest.workload_name << "\n";
  std::cout << "dataset: " << layout.num_files(plan::Split::kTrain) << " train + "
            << layout.num_files(plan::Split::kEval) << " eval files of "
            << layout.samples_per_file() << " samples, first file "
            << layout.FilePath(plan::Split::kTrain, 0) << "\n";
  const int world = ranks > 0
                        ? ranks
                        : static_cast<int>(std::max<std::int64_t>(1, c.model.tensor_parallelism) *
                                           std::max<std::int64_t>(1, c.model.pipeline_parallelism));
  std::cout << "ranks: " << world << "\n";
  PrintDatasetSize(c, layout, world);
  std::cout << "train: " << c.train.epochs << " epochs x " << plan::TrainStepsPerEpoch(c, world)
            << " steps of batch " << c.reader.batch_size
            << " per rank; eval: " << plan::EvalStepsPerEpoch(c, world) << " steps of batch "
            << c.reader.batch_size_eval << "\n";
  if (!c.workflow.checkpoint) return 0;
  return PrintCheckpointPlan(c, world);
}

}  // namespace

int CmdConfig(int argc, char** argv) {
  CommonArgs args;
  int code = 0;
  if (!ParseCommon("config", argc, argv, &args, &code)) return code;
  plugin::Registry registry;
  DiscoverPlugins(args, &registry);
  if (args.keys) {
    std::cout << config::ManifestKeysMarkdown(registry.vocabulary());
    return 0;
  }
  Result<config::LoadedManifest> manifest = LoadFromArgs(args, registry);
  if (!manifest.ok()) return Fail(manifest.status());
  PrintManifestWarnings(*manifest);
  if (!args.plan) {
    // Credentials never printed (docs/security.md).
    std::cout << config::ToYaml(config::Redacted(*manifest).config, false);
    return 0;
  }
  return PrintPlan(*manifest, args.ranks);
}

}  // namespace iomimic::app
