#include "session/session.h"

#include <random>

#include "session/limits.h"

namespace iomimic::session {

std::string ResolveDataPath(const config::Config& config, const std::string& path) {
  // Absolute paths and URLs (scheme://...) are not joined to the root.
  if (path.empty() || path.front() == '/' || path.find("://") != std::string::npos) return path;
  std::string root = config.storage.storage_root;
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  if (root.empty() || root == "." || root == "./") return path;
  return root + "/" + path;
}

Result<std::uint64_t> CheckTrainingSteps(const config::Config& c, int ranks) {
  if (!c.workflow.train) return std::uint64_t{0};
  if (c.train.epochs == 0) {
    return Status::InvalidArgument(
        "train.epochs = 0: training would run no step; set train.epochs >= 1 or "
        "workflow.train: False");
  }
  const std::uint64_t accelerators = static_cast<std::uint64_t>(ranks) *
                                     std::max<std::uint64_t>(1, c.iomimic.accelerators_per_process);
  const std::uint64_t steps = plan::TrainStepsPerEpoch(c, static_cast<int>(accelerators));
  if (steps > 0) return steps;
  if (c.train.total_training_steps == 0) {
    return Status::InvalidArgument(
        "train.total_training_steps = 0: training would run no step (leave it unset for "
        "whole epochs)");
  }
  const std::uint64_t samples =
      std::max<std::uint64_t>(1, c.dataset.num_samples_per_file) * c.dataset.num_files_train;
  return Status::InvalidArgument(
      "dataset.num_files_train = " + std::to_string(c.dataset.num_files_train) +
      ": training would run 0 steps per epoch (" + std::to_string(samples) +
      " samples < reader.batch_size " + std::to_string(c.reader.batch_size) + " x " +
      std::to_string(accelerators) +
      " accelerator(s)); give more files or samples per file, or a smaller batch");
}

Session::~Session() {
  // Format objects may hold buffers allocated by the storage: drop them first.
  format_.reset();
  storage_.reset();
  storage_stack_ = plugin::StorageStack();
}

Result<std::unique_ptr<Session>> Session::Open(const config::LoadedManifest& manifest,
                                               const plugin::Registry& registry,
                                               cluster::Cluster& cluster) {
  std::unique_ptr<Session> s(new Session(manifest, cluster));
  const config::Config& c = manifest.config;
  // Collective first, before anything that can fail on one rank only.
  s->seeds_.base_seed = c.train.seed;
  s->seeds_.change_per_epoch = c.train.seed_change_epoch;
  // `random` shuffles: one seed per run, drawn by rank 0 and shared.
  std::string drawn;
  if (cluster.rank() == 0) drawn = std::to_string(std::random_device{}());
  drawn = cluster.Broadcast(drawn);
  s->seeds_.random_seed = std::stoull(drawn);

  IOMIMIC_ASSIGN_OR_RETURN(
      s->storage_stack_, plugin::StorageStack::Open(registry, c.storage.backend, c.storage.options,
                                                    cluster.rank(), cluster.size()));
  s->storage_info_ = s->storage_stack_.top_info();
  s->storage_ = std::make_unique<CountingStorage>(s->storage_stack_.top());
  s->storage_->set_tracer(&s->tracer_);

  // The format is needed to generate and to read samples; a checkpoint-only
  // run has no dataset and needs none.
  const bool needs_format = c.workflow.generate_data || c.workflow.train;
  std::string extension = c.dataset.format;
  if (needs_format) {
    PluginContext format_ctx;
    format_ctx.rank = cluster.rank();
    format_ctx.world_size = cluster.size();
    IOMIMIC_ASSIGN_OR_RETURN(s->format_info_,
                             registry.Find(plugin::Kind::kFormat, c.dataset.format));
    // A format plugin that declares an option named like a dataset parameter
    // (FileSpec::parameters: "<format>.<key>", config::FormatParameters) or
    // "storage_options.<key>" receives the manifest's value, unless
    // dataset.options sets it (docs/plugins.md); the core never looks at the
    // values.
    std::map<std::string, std::string> format_options = c.dataset.options;
    const std::map<std::string, std::string> parameters = config::FormatParameters(c);
    constexpr std::string_view kStorageOptions = "storage_options.";
    for (const plugin::OptionInfo& o : s->format_info_.options) {
      if (format_options.count(o.name) != 0) continue;
      if (auto it = parameters.find(o.name); it != parameters.end()) {
        format_options[o.name] = it->second;
      } else if (o.name.rfind(kStorageOptions, 0) == 0) {
        auto so = c.storage.storage_options.find(o.name.substr(kStorageOptions.size()));
        if (so != c.storage.storage_options.end()) format_options[o.name] = so->second;
      }
    }
    format_ctx.options = PluginOptions("", std::move(format_options));
    IOMIMIC_ASSIGN_OR_RETURN(s->format_, registry.CreateFormat(c.dataset.format, format_ctx));
    extension = s->format_->traits().extension;
  }

  // A format that writes one element type only gets that one, with a warning
  // (DLIO turns the element type of its image formats into uint8).
  std::string element_type = c.dataset.record_element_type;
  if (s->format_ != nullptr) {
    const std::string fixed = s->format_->traits().element_type;
    if (!fixed.empty() && fixed != element_type) {
      s->warnings_.push_back("dataset.record_element_type " + element_type + " is replaced by " +
                             fixed + " for format " + c.dataset.format);
      element_type = fixed;
    }
  }
  IOMIMIC_ASSIGN_OR_RETURN(s->element_type_, ElementType::FromName(element_type));
  IOMIMIC_RETURN_IF_ERROR(
      CheckPlanLimits(c, PlanShape{cluster.size(), cluster.ranks_on_host()}, ReadMachineFacts()));
  IOMIMIC_ASSIGN_OR_RETURN(const std::uint64_t steps, CheckTrainingSteps(c, cluster.size()));
  // DLIO's samples/s counts (steps - 2) of each epoch (docs/dlio-compat.md
  // §4.1): with 1 or 2 steps it reads 0, which looks like a failure.
  if (steps > 0 && steps <= 2) {
    s->warnings_.push_back(
        "training runs " + std::to_string(steps) +
        " step(s) per epoch: DLIO's throughput formula counts (steps - 2) per epoch, so "
        "samples/s and MB/s will read 0; give more samples per epoch (dataset.num_files_train, "
        "num_samples_per_file) or a smaller reader.batch_size for a throughput figure");
  }

  IOMIMIC_RETURN_IF_ERROR(plan::ParseDataFiles(c.iomimic.data_files).status());
  config::Config resolved = c;
  resolved.dataset.data_folder = ResolveDataPath(c, c.dataset.data_folder);
  s->layout_ = std::make_unique<plan::DatasetLayout>(resolved, extension);
  if (s->format_ != nullptr && s->layout_->has_file_sizes()) {
    // iomimic.data_files: each file's sample shape fitted to its size.
    Format& format = *s->format_;
    IOMIMIC_RETURN_IF_ERROR(s->layout_->FitFileSizes(
        [&format](const FileSpec& spec) { return format.ExpectedFileSize(spec); },
        s->element_type_));
  }

  // A combination that cannot work is refused now, not discovered mid-run:
  // a format that decodes in host memory cannot decode what a back end
  // lands in device memory.
  if (c.workflow.train && c.reader.decode &&
      ((s->storage_info_.capabilities & IOMIMIC_CAP_DEVICE_MEMORY) != 0 ||
       s->storage_->capabilities().device_memory) &&
      s->format_->traits().needs_host_decode) {
    return Status::InvalidArgument(
        "format '" + c.dataset.format + "' decodes samples in host memory, but storage '" +
        s->storage_stack_.Describe() +
        "' lands data in device memory; set reader.decode: False to measure the storage path "
        "alone, or use a host storage back end");
  }

  // Check that the format can write what the manifest asks for, before any
  // file exists (wrong shape rank, dtype or compression for this format).
  if (needs_format && s->layout_->num_generated_files() > 0) {
    FileSpec probe = s->layout_->Spec(0, s->element_type_);
    IOMIMIC_RETURN_IF_ERROR(
        s->format_->Validate(probe).WithContext("format plugin '" + c.dataset.format + "'"));
  }
  return s;
}

}  // namespace iomimic::session
