// The checkpoint layouts beside DLIO's (train/checkpointer.h,
// docs/checkpoints.md): PyTorch DCP (synchronous and async_save, resharding
// restores) and Hugging Face's sharded safetensors.

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <set>

#include "train/checkpointer.h"

namespace iomimic::train {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

Status Checkpointer::PlanLayout() {
  const config::Config& c = session_.config();
  const config::CheckpointConfig& ck = c.checkpoint;
  if (layout_ != "dcp" && (ck.async_save || ck.thread_count > 1 || ck.restore_world_size > 0)) {
    return Status::InvalidArgument(
        "checkpoint.async, checkpoint.thread_count and checkpoint.restore_world_size apply to "
        "checkpoint.layout: dcp; this manifest's layout is '" +
        layout_ + "'");
  }
  if (layout_ == "dcp") dcp_ = plan::PlanDcp(plan_, static_cast<int>(ck.thread_count));
  if (layout_ == "safetensors") {
    IOMIMIC_ASSIGN_OR_RETURN(std::vector<plan::Tensor> tensors, plan::LlamaTensors(c.model));
    shards_ = plan::PlanShards(tensors, plan::DtypeName(c.model.model_datatype),
                               plan::DatatypeBytes(c.model.model_datatype), ck.max_shard_bytes);
    // The ranks of data-parallel group 0 (ranks 0 .. TP x PP - 1) share the
    // shards, as save_pretrained on each model-parallel rank of one replica.
    shard_writers_ =
        std::max(1, std::min(plan_.tensor * plan_.pipeline, static_cast<int>(plan_.ranks.size())));
    for (const plan::Shard& s : shards_) {
      if (s.header.size() + 8 > (4u << 20)) {
        return Status::NotSupported(s.name + ": a safetensors header of " +
                                    std::to_string(s.header.size()) +
                                    " bytes exceeds the checkpointer's 4 MiB first request");
      }
    }
  }
  return Status::OK();
}

std::uint64_t Checkpointer::checkpoint_bytes() const {
  if (layout_ == "dcp") return dcp_.total_bytes();
  if (layout_ == "safetensors") {
    std::uint64_t n = 0;
    for (const plan::Shard& s : shards_) n += s.file_bytes();
    return n;
  }
  return plan_.total_bytes();
}

std::vector<std::size_t> Checkpointer::ShardsOf(int rank) const {
  std::vector<std::size_t> out;
  if (rank >= shard_writers_) return out;
  for (std::size_t i = static_cast<std::size_t>(rank); i < shards_.size();
       i += static_cast<std::size_t>(shard_writers_)) {
    out.push_back(i);
  }
  return out;
}

Status Checkpointer::WriteDcpFiles(const std::string& dir, const std::byte* staged) {
  // FileSystemWriter: thread_count threads take the rank's files from one
  // queue, each writing a file's items in order, then fsync (sync_files:
  // checkpoint.fsync) and close.
  const plan::DcpRank& mine = dcp_.ranks[static_cast<std::size_t>(session_.cluster().rank())];
  std::vector<std::uint64_t> base(mine.files.size(), 0);
  for (std::size_t i = 1; i < base.size(); ++i) base[i] = base[i - 1] + mine.files[i - 1].bytes;
  std::atomic<std::size_t> next{0};
  std::mutex mutex;
  Status first_error;
  auto work = [&] {
    for (std::size_t i = next++; i < mine.files.size(); i = next++) {
      const plan::DcpFile& f = mine.files[i];
      Source source;
      source.preallocate = false;  // Python's open("wb"), no fallocate
      if (staged != nullptr) source.staged = staged + base[i];
      for (const plan::DcpChunk& chunk : f.chunks) {
        source.item_ends.push_back(chunk.file_offset + chunk.bytes);
      }
      Status status = WriteFile(dir + "/" + f.name, f.bytes, source, /*rename_when_whole=*/false);
      if (!status.ok()) {
        std::lock_guard<std::mutex> lock(mutex);
        if (first_error.ok()) first_error = status;
        next = mine.files.size();
      }
    }
  };
  const std::size_t threads = std::min<std::size_t>(
      mine.files.size(), static_cast<std::size_t>(session_.config().checkpoint.thread_count));
  std::vector<std::thread> helpers;
  for (std::size_t t = 1; t < threads; ++t) helpers.emplace_back(work);
  work();
  for (std::thread& t : helpers) t.join();
  return first_error;
}

Status Checkpointer::WriteDcpMetadata(const std::string& dir) {
  // The coordinator's last step: .metadata.tmp written (and synced with
  // sync_files), then renamed over .metadata.
  const std::string text = plan::DcpMetadataJson(dcp_);
  const bool objects = storage_->capabilities().objects;
  const std::string final_path = dir + "/" + plan::kDcpMetadataName;
  const std::string path = objects ? final_path : final_path + ".tmp";
  OpenOptions options;
  options.mode = OpenMode::kWrite;
  options.expected_size = text.size();
  IOMIMIC_ASSIGN_OR_RETURN(Buffer buffer, storage_->Allocate(text.size()));
  std::memcpy(buffer.data(), text.data(), text.size());
  IOMIMIC_ASSIGN_OR_RETURN(std::unique_ptr<File> file, storage_->Open(path, options));
  Status status = file->WriteAt(0, buffer.span().first(text.size()));
  if (status.ok() && session_.config().checkpoint.fsync) status = file->Sync();
  if (status.ok()) {
    status = file->Close();
  } else {
    (void)file->Abort();
  }
  if (status.ok() && !objects) status = storage_->Rename(path, final_path);
  return status;
}

Status Checkpointer::SaveDcp(const std::string& dir) {
  Status status = storage_->CreateDirectories(dir);
  if (status.ok()) status = WriteDcpFiles(dir, nullptr);
  // Every rank's files are written before the coordinator's .metadata.
  status = session_.cluster().AgreeOnStatus(status);
  if (status.ok() && session_.cluster().rank() == 0) status = WriteDcpMetadata(dir);
  return status;
}

Status Checkpointer::StageAndLaunch(const std::string& dir, metrics::CheckpointRecord* record) {
  // async_save: wait for the previous save's write (DCP's caller waits on
  // its future), copy the rank's state into host memory (the stall), then
  // write it from there in the background.
  AsyncSave save;
  save.index = record->index;
  Status status = Finish();
  const metrics::Stamp staged_from = metrics::Stamp::Now();
  save.wait_seconds = metrics::Seconds(record->start, staged_from);
  const plan::DcpRank& mine = dcp_.ranks[static_cast<std::size_t>(session_.cluster().rank())];
  save.bytes = mine.bytes();
  if (status.ok() && staging_.size() < save.bytes) {
    status = Status::Internal("checkpoint.async: the staging buffer holds " +
                              std::to_string(staging_.size()) + " bytes, the rank's state " +
                              std::to_string(save.bytes));
  }
  if (status.ok()) {
    // The copy: every file's bytes, pattern[o mod size] at file offset o.
    const std::size_t period = pattern_.size();
    std::uint64_t at = 0;
    for (const plan::DcpFile& f : mine.files) {
      for (std::uint64_t o = 0; o < f.bytes; o += period) {
        const std::size_t n =
            static_cast<std::size_t>(std::min<std::uint64_t>(period, f.bytes - o));
        std::memcpy(staging_.data() + at + o, pattern_.data(), n);
      }
      at += f.bytes;
    }
  }
  record->end = metrics::Stamp::Now();
  record->bytes = save.bytes;
  save.staging_seconds = metrics::Seconds(staged_from, record->end);
  if (!status.ok()) return status;
  async_saves_.push_back(save);
  pending_ = true;
  pending_dir_ = dir;
  const std::size_t index = async_saves_.size() - 1;
  background_ = std::thread([this, dir, index] {
    const Clock::time_point start = Clock::now();
    Status s = storage_->CreateDirectories(dir);
    if (s.ok()) s = WriteDcpFiles(dir, staging_.data());
    async_saves_[index].write_seconds = Since(start);
    background_status_ = s;
  });
  return Status::OK();
}

Status Checkpointer::Finish() {
  if (!pending_) return Status::OK();
  background_.join();
  pending_ = false;
  Status status = session_.cluster().AgreeOnStatus(background_status_);
  if (status.ok() && session_.cluster().rank() == 0) status = WriteDcpMetadata(pending_dir_);
  return status.WithContext("finishing the asynchronous checkpoint in " + pending_dir_);
}

std::vector<std::string> Checkpointer::DcpReadPaths(const std::string& dir) const {
  const int world = session_.cluster().size();
  const config::CheckpointConfig& ck = session_.config().checkpoint;
  const int readers = ck.restore_world_size > 0 ? static_cast<int>(ck.restore_world_size) : world;
  std::set<std::string> names;
  for (int r = session_.cluster().rank(); r < readers; r += world) {
    for (const plan::DcpRead& read : plan::DcpReaderRanges(dcp_, r, readers)) {
      names.insert(read.file);
    }
  }
  std::vector<std::string> paths;
  for (const std::string& n : names) paths.push_back(dir + "/" + n);
  return paths;
}

Status Checkpointer::LoadDcp(const std::string& dir) {
  // checkpoint.restore_world_size readers over this run's ranks: rank p
  // reads as readers p, p + world, ...; each reader opens the files holding
  // its share and reads its ranges (requests up to 64 MiB, within an item).
  const int world = session_.cluster().size();
  const config::CheckpointConfig& ck = session_.config().checkpoint;
  const int readers = ck.restore_world_size > 0 ? static_cast<int>(ck.restore_world_size) : world;
  IOMIMIC_ASSIGN_OR_RETURN(Buffer buffer, storage_->Allocate(pattern_.size()));
  OpenOptions options;
  options.mode = OpenMode::kRead;
  options.hint = AccessHint::kRandom;
  options.drop_cache = ck.drop_cache;
  for (int r = session_.cluster().rank(); r < readers; r += world) {
    const std::vector<plan::DcpRead> reads = plan::DcpReaderRanges(dcp_, r, readers);
    std::unique_ptr<File> file;
    std::string open_name;
    for (const plan::DcpRead& read : reads) {
      const std::string path = dir + "/" + read.file;
      if (read.file != open_name) {
        if (file) IOMIMIC_RETURN_IF_ERROR(file->Close());
        IOMIMIC_ASSIGN_OR_RETURN(file, storage_->Open(path, options));
        open_name = read.file;
      }
      for (std::uint64_t done = 0; done < read.bytes;) {
        const std::size_t want =
            static_cast<std::size_t>(std::min<std::uint64_t>(buffer.size(), read.bytes - done));
        IOMIMIC_ASSIGN_OR_RETURN(std::size_t n,
                                 file->ReadAt(read.offset + done, buffer.span().first(want)));
        if (n == 0) {
          return Status::Corruption(path + ": checkpoint file ends at offset " +
                                    std::to_string(read.offset + done) + ", .metadata needs " +
                                    std::to_string(read.offset + read.bytes));
        }
        if (buffer.host_accessible()) {
          IOMIMIC_RETURN_IF_ERROR(
              CheckContent(path, read.offset + done, buffer.span().first(n), {}));
        }
        done += n;
      }
    }
    if (file) IOMIMIC_RETURN_IF_ERROR(file->Close());
  }
  return Status::OK();
}

Status Checkpointer::SaveSafetensors(const std::string& dir) {
  Status status = storage_->CreateDirectories(dir);
  for (std::size_t i : ShardsOf(session_.cluster().rank())) {
    if (!status.ok()) break;
    const std::string head = plan::FileHead(shards_[i]);
    Source source;
    source.head = head;
    status = WriteFile(dir + "/" + shards_[i].name, shards_[i].file_bytes(), source);
  }
  if (status.ok() && session_.cluster().rank() == 0 && shards_.size() > 1) {
    const std::string index = plan::IndexJson(shards_);
    IOMIMIC_ASSIGN_OR_RETURN(Buffer text, storage_->Allocate(index.size()));
    std::memcpy(text.data(), index.data(), index.size());
    OpenOptions options;
    options.mode = OpenMode::kWrite;
    options.expected_size = index.size();
    IOMIMIC_ASSIGN_OR_RETURN(std::unique_ptr<File> file,
                             storage_->Open(dir + "/model.safetensors.index.json", options));
    status = file->WriteAt(0, text.span().first(index.size()));
    if (status.ok()) status = file->Close();
  }
  return status;
}

Status Checkpointer::LoadSafetensors(const std::string& dir, int source) {
  for (std::size_t i : ShardsOf(source)) {
    const std::string head = plan::FileHead(shards_[i]);
    IOMIMIC_RETURN_IF_ERROR(ReadFile(dir + "/" + shards_[i].name, shards_[i].file_bytes(), head));
  }
  return Status::OK();
}

}  // namespace iomimic::train
