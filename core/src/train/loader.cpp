#include "train/loader.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "iomimic/random.h"
#include "session/buffer_pool.h"
#include "train/checksum.h"
#include "train/read_script.h"

namespace iomimic::train {

std::uint64_t ResizedSampleBytes(const config::Config& c) {
  if (!c.reader.transformed_record_dims.empty()) {
    std::uint64_t n = 1;
    for (std::uint64_t d : c.reader.transformed_record_dims) n *= d;
    Result<ElementType> t = ElementType::FromName(c.reader.transformed_record_element_type);
    return n * (t.ok() ? t->size : 1);
  }
  double base = c.dataset.record_length_bytes_resize > 0 ? c.dataset.record_length_bytes_resize
                                                         : c.dataset.record_length_bytes;
  std::uint64_t side = base > 0 ? static_cast<std::uint64_t>(std::floor(std::sqrt(base))) : 0;
  return side * side;
}

// Capacity a reader's pool keeps while it is not in use: enough for every
// buffer of the largest samples the formats read (unet3d's 140 MiB arrays
// with their staging), while a pathological mix of sizes stays bounded.
constexpr std::uint64_t kPoolFreeBytes = std::uint64_t{1} << 30;

// One reader's state for the whole run: its buffer pool and the storage view
// that draws from it, its preprocess-time sampler, the batch buffer it
// collates into and, for read_type memory, the file it keeps open.
class Loader::Reader {
 public:
  explicit Reader(session::Session& session)
      : session_(session),
        pool_(session.storage(), kPoolFreeBytes, /*prefault=*/true,
              session.config().iomimic.huge_pages),
        storage_(session.storage(), pool_),
        preprocess_(session.config().reader.preprocess_time, 0) {
    const config::Config& c = session.config();
    options_.storage = &storage_;
    options_.decode = c.reader.decode;
    // A streamed file is read once, in order, by one reader (tf.data): the
    // reader keeps what it streamed so the file's next sample continues the
    // pass (memory: one file per reader thread).
    options_.keep_in_memory =
        c.reader.read_type == config::ReadType::kMemory || session.format().traits().streamed;
    keep_open_ = options_.keep_in_memory;
    options_.transfer_size = c.reader.transfer_size;
    checksum_ = c.iomimic.checksum;
    random_bytes_ = c.iomimic.random_read_bytes;
    random_reads_ = c.iomimic.random_reads_per_sample;
    if (!c.iomimic.read_script.empty()) {
      Result<ReadScript> script = ReadScript::Parse(c.iomimic.read_script);
      if (script.ok()) {
        script_ = std::move(script).value();
        script_error_ = CheckClasses(c);
      } else {
        script_error_ = script.status();
      }
      use_script_ = true;
    }
    // DLIO returns a fixed "resized" tensor per sample and collates copies
    // of it. Without a resize in the manifest that tensor stands for the
    // sample itself, which the format already put in memory, so copying a
    // stand-in again would only measure memcpy; with a resize (a decoded
    // sample of another size) the copy is made. Never without decoding.
    collate_ = c.reader.decode && (c.dataset.record_length_bytes_resize > 0 ||
                                   !c.reader.transformed_record_dims.empty());
  }

  // Prepares for a pass: reseeds the preprocess sampler and lets go of a
  // file kept from the previous pass (its buffers return to the pool).
  void BeginPass(std::uint64_t seed, std::uint64_t epoch) {
    random_epoch_ = epoch;
    preprocess_ = TimeSampler(session_.config().reader.preprocess_time, seed);
    CloseScripted();
    cached_.reset();
    cached_path_.clear();
  }

  // Places the returned tensor of sample `slot` into the batch buffer. The
  // resized tensor and the batch buffer are made (and touched) once and
  // grow only when a larger batch needs it.
  Status Collate(std::uint64_t slot, std::uint64_t batch_size) {
    if (!collate_) return Status::OK();
    if (!resized_made_) {
      const std::size_t bytes = static_cast<std::size_t>(ResizedSampleBytes(session_.config()));
      resized_.resize(bytes);
      Xoshiro256(0x5E512ED).Fill(resized_);
      resized_made_ = true;
    }
    if (resized_.empty()) return Status::OK();
    const std::size_t need = resized_.size() * static_cast<std::size_t>(batch_size);
    if (batch_.size() < need) {
      batch_.Reset();
      batch_ = Buffer::AllocateHost(need);
      if (batch_.empty()) {
        return Status::ResourceExhausted("cannot allocate a batch buffer of " +
                                         std::to_string(need) + " bytes");
      }
    }
    std::memcpy(batch_.data() + slot * resized_.size(), resized_.data(), resized_.size());
    return Status::OK();
  }

  // Every class iomimic.data_files names has entries in the read script,
  // and so has the default class when a file has no class.
  Status CheckClasses(const config::Config& c) const {
    Result<std::vector<plan::DataFilesEntry>> listed = plan::ParseDataFiles(c.iomimic.data_files);
    if (!listed.ok()) return listed.status();
    if (listed->empty() && script_.ClassIndex("") < 0) {
      return Status::InvalidArgument(
          "iomimic.read_script has no entry without a class, and no iomimic.data_files puts the "
          "files in its classes");
    }
    for (std::size_t e = 0; e < listed->size(); ++e) {
      const std::string& name = (*listed)[e].file_class;
      if (script_.ClassIndex(name) < 0) {
        return Status::InvalidArgument(
            "iomimic.data_files entry " + std::to_string(e + 1) + " reads with " +
            (name.empty() ? std::string("the entries without a class") : "class '" + name + "'") +
            ", which iomimic.read_script has no entry of");
      }
    }
    return Status::OK();
  }

  // Reads one sample of file `file` (its index among the generated files)
  // with the format's access pattern (or, with iomimic.random_read_bytes,
  // as random-offset reads of its file; with iomimic.read_script, its
  // class's script); returns payload bytes.
  Result<std::uint64_t> Read(const std::string& path, std::uint64_t file, std::uint64_t sample) {
    auto start = std::chrono::steady_clock::now();
    std::uint64_t bytes = 0;
    if (use_script_) {
      IOMIMIC_ASSIGN_OR_RETURN(bytes, ReadScripted(path, file, sample));
    } else if (random_bytes_ > 0) {
      IOMIMIC_ASSIGN_OR_RETURN(bytes, ReadRandom(path, sample));
    } else if (keep_open_) {
      if (cached_ == nullptr || cached_path_ != path) {
        cached_.reset();
        IOMIMIC_ASSIGN_OR_RETURN(cached_, session_.format().OpenReader(path, options_));
        cached_path_ = path;
      }
      IOMIMIC_ASSIGN_OR_RETURN(SampleView view, cached_->ReadSample(sample));
      bytes = view.bytes;
      if (checksum_ && !view.data.empty()) session_.AddChecksum(HashBytes(view.data));
    } else {
      IOMIMIC_ASSIGN_OR_RETURN(std::unique_ptr<FileReader> reader,
                               session_.format().OpenReader(path, options_));
      IOMIMIC_ASSIGN_OR_RETURN(SampleView view, reader->ReadSample(sample));
      bytes = view.bytes;
      if (checksum_ && !view.data.empty()) session_.AddChecksum(HashBytes(view.data));
    }
    const auto end = std::chrono::steady_clock::now();
    session_.sample_latency().Record(static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count()));
    session_.tracer().Complete("reader", "sample_read", start, end,
                               {"sample", static_cast<std::int64_t>(sample)},
                               {"bytes", static_cast<std::int64_t>(bytes)});
    Preprocess();
    return bytes;
  }

  // iomimic.random_read_bytes: open, random_reads_per_sample reads of that
  // many bytes at offsets drawn uniformly over the file, close. The offsets
  // depend on the file, the sample and the epoch only, so ranks that read
  // the same sample (iomimic.replicate) read the same bytes.
  Result<std::uint64_t> ReadRandom(const std::string& path, std::uint64_t sample) {
    Xoshiro256 random(
        MixSeed(MixSeed(std::hash<std::string>{}(path), sample), MixSeed(random_epoch_, 0x0FF5E7)));
    OpenOptions open_options;
    open_options.hint = AccessHint::kRandom;
    IOMIMIC_ASSIGN_OR_RETURN(std::unique_ptr<File> file, storage_.Open(path, open_options));
    IOMIMIC_ASSIGN_OR_RETURN(std::uint64_t size, file->Size());
    const std::uint64_t len = std::min(random_bytes_, size);
    if (random_buffer_.size() < len) {
      random_buffer_.Reset();
      IOMIMIC_ASSIGN_OR_RETURN(random_buffer_, storage_.Allocate(static_cast<std::size_t>(len)));
    }
    std::uint64_t bytes = 0;
    for (std::uint64_t k = 0; k < random_reads_ && len > 0; ++k) {
      const std::uint64_t offset = random.Next() % (size - len + 1);
      IOMIMIC_ASSIGN_OR_RETURN(
          std::size_t got,
          file->ReadAt(offset, random_buffer_.span().first(static_cast<std::size_t>(len))));
      bytes += got;
    }
    IOMIMIC_RETURN_IF_ERROR(file->Close());
    return bytes;
  }

  // iomimic.read_script: the sample's reads (its file's class's script,
  // resolved for the file's size), consecutive from the script's offset for
  // it (wrapped at the end of the file; a read that would cross the end
  // starts earlier, so that it moves its full size). The file stays open
  // while this reader's samples come from it, unless the sample's entry
  // opens it anew.
  Result<std::uint64_t> ReadScripted(const std::string& path, std::uint64_t file,
                                     std::uint64_t sample) {
    if (!script_error_.ok()) return script_error_;
    const int file_class = script_.ClassIndex(session_.layout().FileClass(file));
    if (file_class < 0) {
      return Status::InvalidArgument("iomimic.read_script has no entry of class '" +
                                     session_.layout().FileClass(file) + "'");
    }
    const bool same_file = script_file_ != nullptr && script_path_ == path;
    if (same_file && file_class != resolved_class_) {
      resolved_ = script_.Resolve(file_class, script_size_);
      resolved_class_ = file_class;
    }
    if (!same_file || resolved_.Reopens(sample)) {
      if (script_file_ != nullptr) {
        std::unique_ptr<File> previous = std::move(script_file_);
        IOMIMIC_RETURN_IF_ERROR(previous->Close());
      }
      script_path_.clear();
      IOMIMIC_ASSIGN_OR_RETURN(script_file_, storage_.Open(path, OpenOptions{}));
      IOMIMIC_ASSIGN_OR_RETURN(script_size_, script_file_->Size());
      script_path_ = path;
      if (!same_file || script_size_ != resolved_size_) {
        // The file's size decides its reads.
        resolved_ = script_.Resolve(file_class, script_size_);
        resolved_class_ = file_class;
        resolved_size_ = script_size_;
      }
    }
    const std::vector<std::uint64_t>& reads = resolved_.Reads(sample);
    std::uint64_t offset = script_size_ > 0 ? resolved_.StartOffset(sample) % script_size_ : 0;
    std::uint64_t bytes = 0;
    for (const std::uint64_t size : reads) {
      // A size 0: a read of one byte at the end, which returns nothing.
      const std::uint64_t len = size == 0 ? 1 : std::min(size, script_size_);
      const std::uint64_t at = size == 0                     ? script_size_
                               : offset + len > script_size_ ? script_size_ - len
                                                             : offset;
      if (random_buffer_.size() < len) {
        random_buffer_.Reset();
        IOMIMIC_ASSIGN_OR_RETURN(random_buffer_, storage_.Allocate(static_cast<std::size_t>(len)));
      }
      IOMIMIC_ASSIGN_OR_RETURN(
          std::size_t got,
          script_file_->ReadAt(at, random_buffer_.span().first(static_cast<std::size_t>(len))));
      bytes += got;
      offset = script_size_ > 0 ? (at + got) % script_size_ : 0;
    }
    return bytes;
  }

  // Closes the file a read script kept open (the end of a pass).
  void CloseScripted() {
    if (script_file_ != nullptr) (void)script_file_->Close();
    script_file_.reset();
    script_path_.clear();
  }

  // The per-sample preprocessing time (reader.preprocess_time).
  void Preprocess() {
    if (!preprocess_.is_zero()) PreciseSleep(preprocess_.Draw());
  }

 private:
  session::Session& session_;
  // Declared before everything that holds its buffers, so it is destroyed
  // after them.
  session::BufferPool pool_;
  session::ReaderStorage storage_;
  TimeSampler preprocess_;
  ReaderOptions options_;
  std::unique_ptr<FileReader> cached_;
  std::string cached_path_;
  std::uint64_t random_bytes_ = 0;
  std::uint64_t random_reads_ = 1;
  std::uint64_t random_epoch_ = 0;  // seeds random_read_bytes offsets
  Buffer random_buffer_;
  bool use_script_ = false;  // iomimic.read_script
  ReadScript script_;
  // script_'s class resolved_class_ for a file of resolved_size_ bytes.
  ResolvedScript resolved_;
  int resolved_class_ = -1;
  std::uint64_t resolved_size_ = 0;
  Status script_error_;
  std::unique_ptr<File> script_file_;
  std::string script_path_;
  std::uint64_t script_size_ = 0;
  bool checksum_ = false;
  bool keep_open_ = false;
  bool collate_ = true;
  bool resized_made_ = false;
  std::vector<std::byte> resized_;  // DLIO's resized_image, made once
  Buffer batch_;                    // batch_size x resized_, grown once
};

Loader::Loader(session::Session& session, std::uint64_t accelerator, ReadySignal* signal)
    : session_(session),
      accelerator_(accelerator),
      signal_(signal),
      collective_(session.storage().capabilities().collective) {
  inline_reader_ = std::make_unique<Reader>(session);
}

Loader::~Loader() {
  Finish();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    shutdown_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_list_) {
    if (t.joinable()) t.join();
  }
}

void Loader::Start(const plan::EpochPlan& plan, plan::Split split, std::uint64_t epoch,
                   bool log_samples) {
  Finish();
  plan_ = &plan;
  split_ = split;
  epoch_ = epoch;
  log_samples_ = log_samples;
  next_step_ = 0;
  in_pass_ = true;
  {
    // iomimic.read_once: only the first pass over a split reads storage;
    // iomimic.startup_load: the trainer loaded every file before training.
    const config::Config& c = session_.config();
    std::uint64_t& passes = passes_[split == plan::Split::kTrain ? 0 : 1];
    ++passes;
    from_memory_ = c.iomimic.startup_load || (c.iomimic.read_once && passes > 1);
  }
  collective_readers_.clear();
  {
    // A streamed format's sample shuffle is a buffer after the reads
    // (plan::ShuffleBufferOrder): the files are still read in order, the
    // samples reach the batches in the buffer's order.
    const config::ReaderConfig& r = session_.config().reader;
    emit_.clear();
    pending_.clear();
    inline_read_ = 0;
    buffer_lag_ = 0;
    if (!from_memory_ && session_.format().traits().streamed &&
        r.sample_shuffle != config::ShuffleMode::kOff && r.shuffle_size > 1) {
      emit_ = plan::ShuffleBufferOrder(plan.samples(), r.shuffle_size, plan::kShuffleBufferInitial,
                                       MixSeed(MixSeed(plan.epoch_seed(), 0x5B), accelerator_));
      buffer_lag_ = r.shuffle_size - 1;
    }
  }
  threads_ = collective_ ? 0 : plan.reader_threads();
  inline_reader_->BeginPass(MixSeed(MixSeed(epoch, accelerator_), 0), epoch);
  sharing_ = false;
  streaming_ = false;
  if (threads_ == 0) {
    depth_ = 1;
    return;
  }
  const std::uint64_t prefetch = std::max<std::uint64_t>(1, session_.config().reader.prefetch_size);
  // PyTorch: prefetch_factor = ceil(prefetch_size / workers) batches per worker.
  const std::uint64_t per_worker = (prefetch + threads_ - 1) / threads_;
  depth_ = std::max<std::uint64_t>(1, per_worker * threads_);
  for (std::uint64_t t = 0; t < threads_; ++t) {
    if (t == readers_.size()) readers_.push_back(std::make_unique<Reader>(session_));
    readers_[t]->BeginPass(MixSeed(MixSeed(epoch, accelerator_), t + 1), epoch);
  }
  // Grown while every reader is idle (Finish above), before the pass is
  // published: a reader touches its window_cv_ only inside a pass.
  while (window_cv_.size() < threads_) window_cv_.emplace_back();
  // A streamed file is read in order by the one reader that keeps it open,
  // so its samples cannot be shared, nor those of read_type memory.
  streaming_ = !from_memory_ && session_.format().traits().streamed;
  if (streaming_) stream_.Rebuild(plan, threads_);
  sharing_ = threads_ > 1 && session_.config().iomimic.reader_work_sharing && !from_memory_ &&
             session_.config().reader.read_type != config::ReadType::kMemory && !streaming_;
  if ((sharing_ || streaming_) && work_slots_ < depth_) {
    work_ = std::make_unique<Work[]>(depth_);
    work_slots_ = depth_;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (sharing_ || streaming_) {
      for (std::uint64_t k = 0; k < depth_; ++k) ResetWork(k);
    }
    slots_.assign(depth_, Slot());
    stopping_ = false;
    stream_error_ = Status::OK();
    running_ = threads_;
    ++pass_;
  }
  while (threads_list_.size() < threads_) {
    const std::uint64_t t = threads_list_.size();
    threads_list_.emplace_back([this, t] { ReaderMain(t); });
  }
  cv_.notify_all();
}

void Loader::Finish() {
  if (!in_pass_) return;
  in_pass_ = false;
  std::unique_lock<std::mutex> lock(mutex_);
  stopping_ = true;
  cv_.notify_all();
  consumer_cv_.notify_all();
  for (std::condition_variable& window : window_cv_) window.notify_all();
  cv_.wait(lock, [&] { return running_ == 0; });
  slots_.clear();
  lock.unlock();
  collective_readers_.clear();
  plan_ = nullptr;
}

Status Loader::ReadSampleOf(Reader& reader, std::uint64_t step, std::uint64_t index,
                            std::uint64_t* bytes) {
  return ReadRef(reader, plan_->Sample(step * plan_->batch_size() + index), index, bytes);
}

Status Loader::ReadRef(Reader& reader, const plan::SampleRef& ref, std::uint64_t index,
                       std::uint64_t* bytes) {
  const std::uint64_t bs = plan_->batch_size();
  if (from_memory_) {
    // iomimic.read_once / startup_load: the sample is already in memory.
    reader.Preprocess();
    IOMIMIC_RETURN_IF_ERROR(reader.Collate(index, bs));
    *bytes += static_cast<std::uint64_t>(session_.layout().nominal_sample_bytes());
    return Status::OK();
  }
  const std::string path = session_.layout().FilePath(split_, ref.file);
  Result<std::uint64_t> read =
      reader.Read(path, session_.layout().ToGlobal(split_, ref.file), ref.sample);
  if (!read.ok()) {
    return read.status().WithContext("reading sample " + std::to_string(ref.sample) + " of " +
                                     path + " (format '" + session_.format().name() +
                                     "', storage '" + session_.storage().name() + "')");
  }
  IOMIMIC_RETURN_IF_ERROR(reader.Collate(index, bs));
  *bytes += *read;
  return Status::OK();
}

Status Loader::ReadBatch(Reader& reader, std::uint64_t step, BatchInfo* out) {
  const std::uint64_t bs = plan_->batch_size();
  out->step = step;
  out->samples = 0;
  out->sample_bytes = 0;
  out->refs.clear();
  if (!emit_.empty()) {
    // The shuffle buffer: samples are read in stream order until every
    // sample of `step` has left the buffer; those bound for later steps
    // wait in pending_.
    Pending& mine = pending_[step];
    while (mine.samples < bs) {
      const std::uint64_t read = inline_read_++;
      const plan::SampleRef ref = plan_->Sample(read);
      const std::uint64_t position = emit_[static_cast<std::size_t>(read)];
      std::uint64_t bytes = 0;
      IOMIMIC_RETURN_IF_ERROR(ReadRef(reader, ref, position % bs, &bytes));
      pending_[position / bs].Add(position % bs, ref, bytes, log_samples_);
    }
    out->samples = mine.samples;
    out->sample_bytes = mine.bytes;
    if (log_samples_) {
      out->refs.resize(bs);
      for (const auto& [index, ref] : mine.refs) out->refs[index] = ref;
    }
    pending_.erase(step);
    return Status::OK();
  }
  for (std::uint64_t i = 0; i < bs; ++i) {
    IOMIMIC_RETURN_IF_ERROR(ReadSampleOf(reader, step, i, &out->sample_bytes));
    out->samples += 1;
    if (log_samples_) out->refs.push_back(plan_->Sample(step * bs + i));
  }
  return Status::OK();
}

bool Loader::ResetWork(std::uint64_t step) {
  Work& w = work_[step % depth_];
  std::lock_guard<std::mutex> lock(w.mutex);
  const bool in_pass = step < plan_->steps();
  const std::uint64_t bs = plan_->batch_size();
  w.step = in_pass ? step : UINT64_MAX;
  w.next = 0;
  w.left = bs;
  w.status = Status::OK();
  w.batch.step = step;
  w.batch.samples = 0;
  w.batch.sample_bytes = 0;
  w.batch.refs.clear();
  if (in_pass && log_samples_) w.batch.refs.resize(bs);
  // Samples of this step that left the shuffle buffer before it entered
  // the window.
  auto waiting = pending_.find(step);
  if (!in_pass || waiting == pending_.end()) return false;
  const Pending& p = waiting->second;
  w.batch.samples += p.samples;
  w.batch.sample_bytes += p.bytes;
  if (log_samples_) {
    for (const auto& [index, ref] : p.refs) w.batch.refs[index] = ref;
  }
  w.left -= p.samples;
  w.status = p.status;
  pending_.erase(waiting);
  return w.left == 0 || !w.status.ok();
}

std::uint64_t Loader::StepToHelp() {
  const std::uint64_t end = std::min(next_step_ + depth_, plan_->steps());
  for (std::uint64_t step = next_step_; step < end; ++step) {
    Work& w = work_[step % depth_];
    std::lock_guard<std::mutex> lock(w.mutex);
    if (w.step == step && w.next < plan_->batch_size()) return step;
  }
  return UINT64_MAX;
}

Status Loader::Drain(Reader& reader, std::uint64_t step, bool helping) {
  const std::uint64_t bs = plan_->batch_size();
  Work& w = work_[step % depth_];
  for (;;) {
    std::uint64_t index = 0;
    {
      std::lock_guard<std::mutex> lock(w.mutex);
      if (w.step != step || w.next >= bs) return Status::OK();
      index = w.next++;
    }
    if (helping) session_.AddSharedSample();
    std::uint64_t bytes = 0;
    Status status = ReadSampleOf(reader, step, index, &bytes);
    std::optional<std::pair<BatchInfo, Status>> finished;
    {
      std::lock_guard<std::mutex> lock(w.mutex);
      if (status.ok()) {
        w.Add(bytes);
        if (log_samples_) w.batch.refs[index] = plan_->Sample(step * bs + index);
      } else if (w.status.ok()) {
        // The batch fails: nobody claims its other samples.
        w.status = status;
        w.left -= bs - w.next;
        w.next = bs;
      }
      if (--w.left == 0) finished = w.Finish();
    }
    if (finished) Publish(step, std::move(finished->first), std::move(finished->second));
    if (!status.ok()) return status;
  }
}

void Loader::Publish(std::uint64_t step, BatchInfo batch, Status status) {
  batch.ready = std::chrono::steady_clock::now();
  bool awaited = false;  // the consumer's next step
  {
    std::lock_guard<std::mutex> lock(mutex_);
    Slot& slot = slots_[step % depth_];
    slot.step = step;
    slot.ready = true;
    slot.status = std::move(status);
    slot.batch = std::move(batch);
    awaited = step == next_step_;
  }
  if (awaited) consumer_cv_.notify_one();
  if (signal_ != nullptr) signal_->Notify();
}

Status Loader::ReadCollectiveStep(std::uint64_t step, BatchInfo* out) {
  const std::uint64_t bs = plan_->batch_size();
  out->step = step;
  out->samples = 0;
  out->sample_bytes = 0;
  out->refs.clear();
  ReaderOptions options;
  options.storage = &session_.storage();
  options.decode = session_.config().reader.decode;
  options.keep_in_memory = true;  // index and handle stay open for the epoch
  options.transfer_size = session_.config().reader.transfer_size;
  std::string step_path;
  FileReader* reader = nullptr;
  std::vector<ReadRequest> requests;
  std::vector<std::size_t> first_request;  // per sample
  std::uint64_t total = 0;
  for (std::uint64_t i = 0; i < bs; ++i) {
    const plan::SampleRef ref = plan_->Sample(step * bs + i);
    const std::string path = session_.layout().FilePath(split_, ref.file);
    if (step_path.empty()) {
      step_path = path;
    } else if (path != step_path) {
      return Status::InvalidArgument(
          "collective reading needs every sample of a step in one shared file, but step " +
          std::to_string(step) + " reads " + step_path + " and " + path +
          "; use a shared-file dataset (dataset.num_files_train: 1)");
    }
    auto it = collective_readers_.find(path);
    if (it == collective_readers_.end()) {
      IOMIMIC_ASSIGN_OR_RETURN(std::unique_ptr<FileReader> opened,
                               session_.format().OpenReader(path, options));
      it = collective_readers_.emplace(path, std::move(opened)).first;
    }
    reader = it->second.get();
    Result<std::vector<ByteRange>> ranges = reader->SampleRanges(ref.sample);
    if (!ranges.ok()) {
      return ranges.status().WithContext("format '" + session_.format().name() +
                                         "' cannot be read collectively (" + path + ")");
    }
    first_request.push_back(requests.size());
    for (const ByteRange& r : *ranges) {
      ReadRequest req;
      req.offset = r.offset;
      req.destination = std::span<std::byte>(static_cast<std::byte*>(nullptr), r.length);
      requests.push_back(req);
      total += r.length;
    }
    out->samples += 1;
    if (log_samples_) out->refs.push_back(ref);
  }
  first_request.push_back(requests.size());
  if (step_buffer_.size() < total) {
    IOMIMIC_ASSIGN_OR_RETURN(step_buffer_, session_.storage().Allocate(total));
  }
  std::uint64_t at = 0;
  for (ReadRequest& r : requests) {
    r.destination = std::span<std::byte>(step_buffer_.data() + at, r.destination.size());
    at += r.destination.size();
  }
  File* file = reader != nullptr ? reader->data_file() : nullptr;
  if (file == nullptr) {
    return Status::NotSupported("format '" + session_.format().name() +
                                "' does not expose its data file for collective reads");
  }
  auto start = std::chrono::steady_clock::now();
  IOMIMIC_RETURN_IF_ERROR(
      file->ReadBatch(requests).WithContext("collective read of step " + std::to_string(step) +
                                            " (storage '" + session_.storage().name() + "')"));
  const auto per_sample = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count() /
      static_cast<long long>(bs));
  for (const ReadRequest& r : requests) {
    if (r.bytes_read != r.destination.size()) {
      return Status::Corruption(step_path + ": short read of " + std::to_string(r.bytes_read) +
                                " of " + std::to_string(r.destination.size()) +
                                " bytes at offset " + std::to_string(r.offset));
    }
  }
  const bool checksum = session_.config().iomimic.checksum && step_buffer_.host_accessible();
  for (std::uint64_t i = 0; i < bs; ++i) {
    std::uint64_t bytes = 0;
    const std::byte* begin = requests[first_request[i]].destination.data();
    for (std::size_t k = first_request[i]; k < first_request[i + 1]; ++k) {
      bytes += requests[k].destination.size();
    }
    // A sample's ranges are adjacent in the step buffer, in range order.
    if (checksum) session_.AddChecksum(HashBytes(std::span<const std::byte>(begin, bytes)));
    session_.sample_latency().Record(per_sample);
    out->sample_bytes += bytes;
    IOMIMIC_RETURN_IF_ERROR(inline_reader_->Collate(i, bs));
    inline_reader_->Preprocess();
  }
  return Status::OK();
}

void Loader::ReaderMain(std::uint64_t thread_index) {
  std::uint64_t seen = 0;
  for (;;) {
    std::uint64_t threads = 0;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [&] { return shutdown_ || pass_ != seen; });
      if (shutdown_) return;
      seen = pass_;
      threads = threads_;
      if (thread_index >= threads) continue;  // not needed in this pass
    }
    RunPass(*readers_[thread_index], thread_index, threads);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --running_;
    }
    cv_.notify_all();
  }
}

void Loader::RunStreamPass(Reader& reader, std::uint64_t thread_index) {
  const std::uint64_t bs = plan_->batch_size();
  plan::StreamSchedule::Cursor cursor = stream_.Begin(thread_index);
  plan::StreamSchedule::Item item;
  while (cursor.Next(&item)) {
    // With a shuffle buffer the sample lands at its position leaving the
    // buffer; it is read once the step it would reach in stream order, less
    // the buffer's lag, is inside the window (the buffer reads ahead by up
    // to bufsize - 1 samples, and a step needs none read later than that).
    const std::uint64_t position =
        emit_.empty() ? item.position : emit_[static_cast<std::size_t>(item.position)];
    const std::uint64_t step = position / bs;
    const std::uint64_t index = position % bs;
    const std::uint64_t read_step =
        (item.position > buffer_lag_ ? item.position - buffer_lag_ : 0) / bs;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      window_cv_[thread_index].wait(lock,
                                    [&] { return stopping_ || read_step < next_step_ + depth_; });
      if (stopping_) return;
    }
    std::uint64_t bytes = 0;
    Status status = ReadRef(reader, item.ref, index, &bytes);
    if (!emit_.empty()) {
      // A step past the window waits in pending_ until it enters
      // (ResetWork); the window moves only under mutex_.
      std::unique_lock<std::mutex> lock(mutex_);
      if (stopping_) return;
      if (!status.ok()) {
        // The step the consumer waits for may need samples this reader
        // would read later: the consumer takes the error at its first step
        // that is not ready, so the pass stops. (Publishing it as the
        // consumer's current step raced with the consumer taking that step
        // when it was already complete: the error then landed in a slot no
        // step would read, and the consumer waited for ever.)
        if (stream_error_.ok()) stream_error_ = std::move(status);
        lock.unlock();
        consumer_cv_.notify_all();
        if (signal_ != nullptr) signal_->Notify();
        return;
      }
      if (step >= next_step_ + depth_) {
        pending_[step].Add(index, item.ref, bytes, log_samples_);
        continue;
      }
    }
    Work& w = work_[step % depth_];
    std::optional<std::pair<BatchInfo, Status>> finished;
    {
      std::lock_guard<std::mutex> lock(w.mutex);
      if (w.step != step) return;  // the batch failed and the pass moved on
      if (!w.status.ok()) {
        // The batch already failed and was published; nothing more to count.
      } else if (!status.ok()) {
        // Published at once: the other readers' samples of it no longer count.
        w.status = status;
        finished = w.Finish();
      } else {
        w.Add(bytes);
        if (log_samples_) w.batch.refs[index] = item.ref;
        if (--w.left == 0) finished = w.Finish();
      }
    }
    if (finished) Publish(step, std::move(finished->first), std::move(finished->second));
    if (!status.ok()) return;
  }
}

void Loader::RunPass(Reader& reader, std::uint64_t thread_index, std::uint64_t threads) {
  if (streaming_) {
    RunStreamPass(reader, thread_index);
    return;
  }
  for (std::uint64_t step = thread_index; step < plan_->steps(); step += threads) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      while (!stopping_ && step >= next_step_ + depth_) {
        const std::uint64_t help = sharing_ ? StepToHelp() : UINT64_MAX;
        if (help == UINT64_MAX) {
          window_cv_[thread_index].wait(lock);
          continue;
        }
        lock.unlock();
        if (!Drain(reader, help, /*helping=*/true).ok()) return;  // the batch carries the error
        lock.lock();
      }
      if (stopping_) return;
    }
    if (sharing_) {
      if (!Drain(reader, step, /*helping=*/false).ok()) return;
      continue;
    }
    BatchInfo batch;
    Status status = ReadBatch(reader, step, &batch);
    const bool failed = !status.ok();
    Publish(step, std::move(batch), std::move(status));
    if (failed) return;
  }
  // Out of steps of its own, a reader helps finish the pass's last batches
  // (the window holds every remaining step by now).
  while (sharing_) {
    std::uint64_t help = UINT64_MAX;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) return;
      help = StepToHelp();
    }
    if (help == UINT64_MAX || !Drain(reader, help, /*helping=*/true).ok()) return;
  }
}

Result<bool> Loader::TryNext(BatchInfo* out) { return Take(out, /*wait=*/false); }

Result<BatchInfo> Loader::Next() {
  BatchInfo batch;
  IOMIMIC_ASSIGN_OR_RETURN(bool taken, Take(&batch, /*wait=*/true));
  (void)taken;  // always true when waiting
  return batch;
}

Result<bool> Loader::Take(BatchInfo* out, bool wait) {
  if (plan_ == nullptr || next_step_ >= plan_->steps()) {
    return Status::OutOfRange("no more batches in this pass");
  }
  if (threads_ == 0) {
    IOMIMIC_RETURN_IF_ERROR(collective_ ? ReadCollectiveStep(next_step_, out)
                                        : ReadBatch(*inline_reader_, next_step_, out));
    out->ready = std::chrono::steady_clock::now();
    out->taken = out->ready;
    ++next_step_;
    return true;
  }
  Slot taken;
  bool whole_on_entry = false;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    Slot& slot = slots_[next_step_ % depth_];
    auto ready = [&] { return slot.ready && slot.step == next_step_; };
    if (wait) {
      consumer_cv_.wait(lock, [&] { return stopping_ || ready() || !stream_error_.ok(); });
    }
    if (!ready()) {
      if (!stream_error_.ok()) {
        Status failed = stream_error_;
        lock.unlock();
        Finish();
        return failed;
      }
      if (!wait) return false;
      return Status::Aborted("loader stopped");
    }
    taken = std::move(slot);
    slot = Slot();
    ++next_step_;
    // The step that enters the window takes over the slot just emptied.
    if (sharing_ || streaming_) whole_on_entry = ResetWork(next_step_ - 1 + depth_);
  }
  if (whole_on_entry) {
    // Every sample of the entering step left the shuffle buffer before it
    // entered (or one failed): no reader will publish it.
    const std::uint64_t entered = next_step_ - 1 + depth_;
    Work& w = work_[entered % depth_];
    std::pair<BatchInfo, Status> finished;
    {
      std::lock_guard<std::mutex> lock(w.mutex);
      finished = w.Finish();
    }
    Publish(entered, std::move(finished.first), std::move(finished.second));
  }
  taken.batch.taken = std::chrono::steady_clock::now();
  if (streaming_) {
    // Its samples come from every slot's file.
    for (std::uint64_t t = 0; t < threads_; ++t) window_cv_[t].notify_one();
  } else {
    // The step that just entered the window belongs to one reader; wake it.
    window_cv_[(next_step_ - 1 + depth_) % threads_].notify_one();
  }
  if (!taken.status.ok()) {
    Finish();
    return taken.status;
  }
  *out = std::move(taken.batch);
  return true;
}

}  // namespace iomimic::train
