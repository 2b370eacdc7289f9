#include "train/checkpointer.h"

#include <cstring>
#include <map>

#include "config/dlio_compat.h"
#include "iomimic/random.h"
#include "session/cache_honesty.h"
#include "train/generator.h"

namespace iomimic::train {
namespace {
constexpr std::size_t kChunk = 4u << 20;  // bytes per request and pattern size
// Layout dcp: the pattern's size, and the largest request (DCP hands each
// item to one write(); docs/checkpoints.md).
constexpr std::size_t kDcpRequest = 64u << 20;
}  // namespace

Checkpointer::~Checkpointer() {
  if (background_.joinable()) background_.join();
  staging_.Reset();
  pattern_.Reset();
  own_storage_.reset();
  own_stack_ = plugin::StorageStack();
}

Result<std::unique_ptr<Checkpointer>> Checkpointer::Create(session::Session& session,
                                                           const plugin::Registry& registry) {
  const config::Config& c = session.config();
  cluster::Cluster& cluster = session.cluster();
  std::unique_ptr<Checkpointer> cp(new Checkpointer(session));
  Status status;
  Result<plan::CheckpointPlan> plan = plan::PlanCheckpoint(c, cluster.size());
  if (plan.ok()) {
    cp->plan_ = std::move(plan).value();
  } else {
    status = plan.status();
  }
  cp->folder_ = session::ResolveDataPath(c, c.checkpoint.checkpoint_folder);
  // Checkpoints are written from host memory: when the dataset's back end
  // lands data in device memory and no checkpoint back end is named,
  // checkpoints go through the plain file back end (config/dlio_compat.h).
  std::string backend = c.checkpoint.backend;
  std::map<std::string, std::string> backend_options = c.checkpoint.options;
  if (backend.empty() && session.storage().capabilities().device_memory)
    backend = std::string(config::kFileStorageBackend);
  if (status.ok() && !backend.empty()) {
    Result<plugin::StorageStack> made = plugin::StorageStack::Open(
        registry, backend, backend_options, cluster.rank(), cluster.size());
    if (made.ok()) {
      cp->own_stack_ = std::move(made).value();
      cp->own_storage_ = std::make_unique<session::CountingStorage>(cp->own_stack_.top());
      cp->storage_ = cp->own_storage_.get();
      cp->storage_->set_tracer(&session.tracer());
      cp->storage_name_ = cp->own_stack_.Describe();
    } else {
      status = made.status().WithContext("checkpoint storage");
    }
  } else {
    cp->storage_ = &session.storage();
    cp->storage_name_ = session.storage_chain();
  }
  cp->layout_ = c.checkpoint.layout;
  if (status.ok()) status = cp->PlanLayout();
  if (status.ok()) {
    Result<Buffer> buffer = cp->storage_->Allocate(cp->layout_ == "dcp" ? kDcpRequest : kChunk);
    if (buffer.ok()) {
      cp->pattern_ = std::move(buffer).value();
      if (!cp->pattern_.host_accessible()) {
        status = Status::NotSupported("checkpoint storage '" + cp->storage_name_ +
                                      "' allocates device memory; checkpoints need host buffers");
      } else if (c.checkpoint.randomize_tensor) {
        Xoshiro256(MixSeed(c.train.seed, 0xC4EC)).Fill(cp->pattern_.span());
      } else {
        std::memset(cp->pattern_.data(), 1, cp->pattern_.size());  // DLIO's "ones"
      }
    } else {
      status = buffer.status();
    }
  }
  if (status.ok() && cp->layout_ == "dcp" && c.checkpoint.async_save) {
    // The host buffer async saves stage into: this rank's whole state,
    // allocated and touched once here (as DCP keeps its staged state dict
    // with cache_staged_state_dict), so that a stall is the copy alone.
    const std::uint64_t bytes = cp->dcp_.ranks[static_cast<std::size_t>(cluster.rank())].bytes();
    if (bytes > 0) {
      Result<Buffer> staging = cp->storage_->Allocate(static_cast<std::size_t>(bytes));
      if (staging.ok() && staging->host_accessible()) {
        cp->staging_ = std::move(staging).value();
        std::memset(cp->staging_.data(), 0, cp->staging_.size());
      } else {
        status = Status::ResourceExhausted(
            "checkpoint.async: cannot allocate a host staging buffer of " + std::to_string(bytes) +
            " bytes (this rank's checkpoint); shrink the model or turn checkpoint.async off");
      }
    }
  }
  IOMIMIC_RETURN_IF_ERROR(cluster.AgreeOnStatus(status));
  cp->hosts_ = cluster.AllGatherStrings(cluster.hostname());
  return cp;
}

int Checkpointer::SourceRank(int rank) const {
  const cluster::Cluster& cluster = session_.cluster();
  if (!session_.config().checkpoint.recovery_rank_shift) return rank;
  // One host's worth of ranks on: with ranks placed host by host (mpirun's
  // and srun's default), a shard is read on another host than wrote it.
  // A uniform shift keeps the mapping a permutation on uneven hosts too.
  const int shift = std::max(1, cluster.size() / std::max(1, cluster.num_hosts()));
  return (rank + shift) % cluster.size();
}

std::string Checkpointer::ReadConditions(std::uint64_t epoch, std::uint64_t step) const {
  std::vector<std::string> why;
  if (session_.config().checkpoint.drop_cache) why.push_back("page cache dropped");
  bool other_host = !hosts_.empty();
  for (std::size_t r = 0; r < hosts_.size() && other_host; ++r) {
    other_host = hosts_[static_cast<std::size_t>(SourceRank(static_cast<int>(r)))] != hosts_[r];
  }
  if (other_host) why.push_back("other host");
  if (saved_.count({epoch, step}) == 0) why.push_back("later invocation");
  std::string joined;
  for (const std::string& w : why) joined += (joined.empty() ? "" : ", ") + w;
  return joined;
}

metrics::PageResidency Checkpointer::MeasureBeforeRead(const std::vector<std::string>& paths) {
  if (storage_->capabilities().objects) {
    metrics::PageResidency none;
    none.why_not = "object storage: its reads do not go through this host's page cache";
    return none;
  }
  if (session_.config().checkpoint.drop_cache) {
    // The storage drops the pages at open (OpenOptions::drop_cache), inside
    // the timed read; it does so here first, so that the measurement sees
    // what the read will find (a dirty page the drop cannot drop stays).
    // Through the back end itself: not counted as the run's I/O.
    OpenOptions options;
    options.mode = OpenMode::kRead;
    options.drop_cache = true;
    for (const std::string& path : paths) {
      Result<std::unique_ptr<File>> file = storage_->uncounted().Open(path, options);
      if (file.ok()) (void)(*file)->Close();
    }
  }
  return session::MeasureResidency(paths);
}

std::uint64_t Checkpointer::fsync_calls() const { return storage_->Snapshot().fsync_calls; }

Status Checkpointer::WriteFile(const std::string& path, std::uint64_t bytes, const Source& source,
                               bool rename_when_whole) {
  // checkpoint.atomic (the default): the file is written under a temporary
  // name beside its final one and renamed into place once closed, so a
  // process killed mid-write leaves only the temporary file, never a short
  // checkpoint under its final name (docs/security.md). Off, the file is
  // written under its final name, as torch.save writes it. Object stores
  // need neither: an object is visible only once its upload completes.
  // DCP writes its data files under their final names (rename_when_whole
  // false): its .metadata, written last, is what makes a checkpoint whole.
  const bool objects = storage_->capabilities().objects;
  const bool rename = rename_when_whole && session_.config().checkpoint.atomic && !objects;
  const std::string target = rename ? TemporaryPath(path) : path;
  OpenOptions options;
  options.mode = OpenMode::kWrite;
  options.hint = AccessHint::kSequential;
  if (source.preallocate) options.expected_size = bytes;
  IOMIMIC_ASSIGN_OR_RETURN(std::unique_ptr<File> file, storage_->Open(target, options));
  Status status;
  Buffer first;  // the head over the pattern's first request
  if (!source.head.empty()) {
    Result<Buffer> made = storage_->Allocate(kChunk);
    if (made.ok()) {
      first = std::move(made).value();
      std::memcpy(first.data(), pattern_.data(), kChunk);
      std::memcpy(first.data(), source.head.data(), std::min(source.head.size(), kChunk));
    } else {
      status = made.status();
    }
  }
  // Requests of at most the pattern's size, never across an item's end
  // (DCP writes each item with one write()).
  const std::size_t period = pattern_.size();
  std::size_t item = 0;
  for (std::uint64_t offset = 0; offset < bytes && status.ok();) {
    while (item < source.item_ends.size() && source.item_ends[item] <= offset) ++item;
    const std::uint64_t end = item < source.item_ends.size() ? source.item_ends[item] : bytes;
    std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(period, end - offset));
    if (source.staged != nullptr) {
      status = file->WriteAt(offset, {source.staged + offset, n});
    } else if (offset == 0 && !first.empty()) {
      n = std::min(n, first.size());
      status = file->WriteAt(offset, first.span().first(n));
    } else {
      n = std::min<std::size_t>(n, period - offset % period);
      status = file->WriteAt(offset, pattern_.span().subspan(offset % period, n));
    }
    offset += n;
  }
  if (status.ok() && session_.config().checkpoint.fsync) status = file->Sync();
  const bool closing = status.ok();
  if (closing) status = file->Close();
  if (status.ok() && rename) status = storage_->Rename(target, path);
  if (!status.ok()) {
    // A failed write removes what it left, so no checkpoint cut short stays
    // behind to be read back as if whole. Abort: on object stores nothing of
    // the upload becomes visible; other back ends close the file first.
    if (!closing) (void)file->Abort();
    if (!objects) (void)storage_->Remove(target);
  }
  return status;
}

Status Checkpointer::CheckContent(const std::string& path, std::uint64_t offset,
                                  std::span<const std::byte> bytes, std::string_view head) const {
  // Byte o of a file is head[o] over its head, else pattern[o mod size].
  const std::size_t period = pattern_.size();
  for (std::size_t i = 0; i < bytes.size();) {
    const std::uint64_t at = offset + i;
    const std::byte* expected;
    std::size_t n;
    if (at < head.size()) {
      expected = reinterpret_cast<const std::byte*>(head.data()) + at;
      n = std::min<std::size_t>(bytes.size() - i, head.size() - at);
    } else {
      expected = pattern_.data() + at % period;
      n = std::min<std::size_t>(bytes.size() - i, period - at % period);
    }
    if (std::memcmp(bytes.data() + i, expected, n) != 0) {
      std::size_t k = 0;
      while (k < n && bytes[i + k] == expected[k]) ++k;
      return Status::Corruption(path + ": checkpoint content differs at offset " +
                                std::to_string(at + k));
    }
    i += n;
  }
  return Status::OK();
}

Status Checkpointer::ReadFile(const std::string& path, std::uint64_t bytes, std::string_view head) {
  OpenOptions options;
  options.mode = OpenMode::kRead;
  options.hint = AccessHint::kSequential;
  options.drop_cache = session_.config().checkpoint.drop_cache;
  IOMIMIC_ASSIGN_OR_RETURN(std::unique_ptr<File> file, storage_->Open(path, options));
  IOMIMIC_ASSIGN_OR_RETURN(Buffer buffer, storage_->Allocate(kChunk));
  std::uint64_t offset = 0;
  for (;;) {
    IOMIMIC_ASSIGN_OR_RETURN(std::size_t n, file->ReadAt(offset, buffer.span()));
    if (n == 0) break;
    if (offset + n > bytes) {
      return Status::Corruption(path + ": checkpoint file is longer than the " +
                                std::to_string(bytes) + " bytes planned");
    }
    if (buffer.host_accessible()) {
      IOMIMIC_RETURN_IF_ERROR(CheckContent(path, offset, buffer.span().first(n), head));
    }
    offset += n;
  }
  if (offset != bytes) {
    return Status::Corruption(path + ": checkpoint file has " + std::to_string(offset) +
                              " bytes, expected " + std::to_string(bytes));
  }
  return file->Close();
}

Status Checkpointer::Save(std::uint64_t epoch, std::uint64_t step,
                          metrics::CheckpointRecord* record) {
  const std::string dir = folder_ + "/" + plan::CheckpointDirectory(epoch, step);
  const plan::RankCheckpoint& mine =
      plan_.ranks[static_cast<std::size_t>(session_.cluster().rank())];
  session::IoSnapshot before = storage_->Snapshot();
  record->start = metrics::Stamp::Now();
  Status status;
  if (layout_ == "dcp" && session_.config().checkpoint.async_save) {
    status = StageAndLaunch(dir, record);  // sets record->end and bytes
  } else if (layout_ == "dcp") {
    status = SaveDcp(dir);
  } else if (layout_ == "safetensors") {
    status = SaveSafetensors(dir);
  } else {
    status = storage_->CreateDirectories(dir);
    for (const plan::CheckpointFile& f : mine.files) {
      if (!status.ok()) break;
      status = WriteFile(dir + "/" + f.name, f.bytes, Source());
    }
  }
  status = status.WithContext("writing checkpoint (storage '" + storage_name_ + "')");
  if (!(layout_ == "dcp" && session_.config().checkpoint.async_save)) {
    record->end = metrics::Stamp::Now();
    record->bytes = (storage_->Snapshot() - before).bytes_written;
  }
  session_.tracer().Complete("checkpoint", "checkpoint_save", record->start.mono, record->end.mono,
                             {"epoch", static_cast<std::int64_t>(epoch)},
                             {"step", static_cast<std::int64_t>(step)});
  if (status.ok()) saved_.insert({epoch, step});
  return status;
}

Status Checkpointer::Load(std::uint64_t epoch, std::uint64_t step,
                          metrics::CheckpointRecord* record) {
  IOMIMIC_RETURN_IF_ERROR(Finish());
  const int source = SourceRank(session_.cluster().rank());
  read_conditions_ = ReadConditions(epoch, step);
  const std::string dir = folder_ + "/" + plan::CheckpointDirectory(epoch, step);
  const plan::RankCheckpoint& files = plan_.ranks[static_cast<std::size_t>(source)];
  std::vector<std::string> paths;
  if (layout_ == "dcp") {
    paths = DcpReadPaths(dir);
  } else if (layout_ == "safetensors") {
    for (std::size_t i : ShardsOf(source)) paths.push_back(dir + "/" + shards_[i].name);
  } else {
    for (const plan::CheckpointFile& f : files.files) paths.push_back(dir + "/" + f.name);
  }
  record->residency = MeasureBeforeRead(paths);
  session::IoSnapshot before = storage_->Snapshot();
  record->start = metrics::Stamp::Now();
  Status status;
  if (layout_ == "dcp") {
    status = LoadDcp(dir);
  } else if (layout_ == "safetensors") {
    status = LoadSafetensors(dir, source);
  } else {
    for (std::size_t i = 0; i < paths.size() && status.ok(); ++i) {
      status = ReadFile(paths[i], files.files[i].bytes);
    }
  }
  status = status.WithContext("reading checkpoint (storage '" + storage_name_ + "')");
  record->end = metrics::Stamp::Now();
  session_.tracer().Complete("checkpoint", "checkpoint_load", record->start.mono, record->end.mono,
                             {"epoch", static_cast<std::int64_t>(epoch)},
                             {"step", static_cast<std::int64_t>(step)});
  record->bytes = (storage_->Snapshot() - before).bytes_read;
  return status;
}

}  // namespace iomimic::train
