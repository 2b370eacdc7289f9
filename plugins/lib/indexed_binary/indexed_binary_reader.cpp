#include "indexed_binary_reader.h"

#include <algorithm>
#include <exception>
#include <limits>
#include <new>
#include <utility>
#include <vector>

#include "iomimic/format_helpers.h"
#include "iomimic/guard.h"

namespace iomimic::indexed_binary {
namespace {

// Largest request for an index file (a multiple of the entry size).
constexpr std::size_t kMaxIndexRequest = std::size_t{64} << 20;

}  // namespace

IndexedBinaryReader::IndexedBinaryReader(std::string path, const ReaderOptions& options,
                                         Flavor flavor, IndexCache* cache)
    : path_(std::move(path)),
      storage_(options.storage),
      decode_(options.decode),
      keep_in_memory_(options.keep_in_memory),
      transfer_(options.transfer_size),
      flavor_(flavor),
      name_(FlavorName(flavor)),
      cache_(cache) {}

IndexedBinaryReader::~IndexedBinaryReader() { CloseData(); }

Result<std::unique_ptr<FileReader>> IndexedBinaryReader::Open(const std::string& path,
                                                              const ReaderOptions& options,
                                                              Flavor flavor, IndexCache* cache) {
  const std::string name(FlavorName(flavor));
  return OpenReaderGuarded(name, path, options, [&]() -> Result<std::unique_ptr<FileReader>> {
    std::unique_ptr<IndexedBinaryReader> reader(
        new IndexedBinaryReader(path, options, flavor, cache));
    IOMIMIC_RETURN_IF_ERROR(reader->Init());
    return std::unique_ptr<FileReader>(std::move(reader));
  });
}

Status IndexedBinaryReader::Init() {
  // Like DLIO, the index comes first (loaded when the reader is created),
  // then the data file is opened for the first sample.
  std::shared_ptr<const SampleIndex> cached = cache_ != nullptr ? cache_->Find(path_) : nullptr;
  std::vector<std::uint64_t> offsets;
  std::vector<std::uint64_t> sizes;
  if (cached == nullptr) IOMIMIC_RETURN_IF_ERROR(ReadIndexFiles(&offsets, &sizes));
  IOMIMIC_RETURN_IF_ERROR(OpenData());
  if (cached != nullptr && cached->data_size == data_size_) {
    index_ = std::move(cached);
    return Status::OK();
  }
  // Not cached, or the data file changed since its index was cached.
  if (cached != nullptr) IOMIMIC_RETURN_IF_ERROR(ReadIndexFiles(&offsets, &sizes));
  Status built = BuildIndex(std::move(offsets), std::move(sizes));
  if (!built.ok()) {
    CloseData();
    return built;
  }
  if (cache_ != nullptr) cache_->Insert(path_, index_);
  return Status::OK();
}

Status IndexedBinaryReader::ReadIndexFiles(std::vector<std::uint64_t>* offsets,
                                           std::vector<std::uint64_t>* sizes) {
  IOMIMIC_RETURN_IF_ERROR(ReadIndexFile(OffsetIndexPath(path_), offsets));
  IOMIMIC_RETURN_IF_ERROR(ReadIndexFile(SizeIndexPath(path_), sizes));
  loaded_index_ = true;
  return Status::OK();
}

Status IndexedBinaryReader::ReadIndexFile(const std::string& index_path,
                                          std::vector<std::uint64_t>* entries) {
  OpenOptions options;
  options.mode = OpenMode::kRead;
  options.hint = AccessHint::kWholeFile;
  Result<std::unique_ptr<File>> opened = storage_->Open(index_path, options);
  if (!opened.ok()) {
    if (opened.status().IsNotFound()) {
      return Status::NotFound(name_ + ": index file " + index_path + " of " + path_ +
                              " is missing (generate the dataset again: the index files are "
                              "written beside the data file) (" +
                              opened.status().message() + ")");
    }
    return opened.status().WithContext(name_ + ": opening index file " + index_path);
  }
  std::unique_ptr<File> file = std::move(opened).value();
  Result<std::uint64_t> size = file->Size();
  if (!size.ok()) return size.status().WithContext(name_ + ": size of index file " + index_path);
  if (*size % kIndexEntrySize != 0) {
    return Status::Corruption(index_path + ": index file of " + std::to_string(*size) +
                              " bytes is not a whole number of uint64 entries at offset " +
                              std::to_string(*size / kIndexEntrySize * kIndexEntrySize));
  }
  if (*size > std::numeric_limits<std::size_t>::max()) {
    return Status::ResourceExhausted(index_path + ": index file too large for this address space");
  }
  const std::size_t bytes = static_cast<std::size_t>(*size);
  entries->assign(bytes / kIndexEntrySize, 0);
  // DLIO: f.readinto(np.empty(n, dtype=np.int64)), the whole file in one
  // request; indexes beyond kMaxIndexRequest (hundreds of millions of
  // samples) go in requests of that size to bound the staging memory.
  const std::size_t request = std::min(bytes, kMaxIndexRequest);
  Buffer staging;
  if (request > 0) {
    IOMIMIC_ASSIGN_OR_RETURN(staging, AllocateHostBuffer(*storage_, request, FlavorName(flavor_)));
  }
  for (std::size_t done = 0; done < bytes;) {
    const std::size_t n = std::min(request, bytes - done);
    Result<std::size_t> got = file->ReadAt(done, staging.span().first(n));
    if (!got.ok()) return got.status().WithContext(name_ + ": reading index file " + index_path);
    if (*got < n) {
      return Status::Corruption(index_path + ": truncated index file: " + std::to_string(bytes) +
                                " bytes expected, the file ends at offset " +
                                std::to_string(done + *got));
    }
    for (std::size_t i = 0; i < n / kIndexEntrySize; ++i) {
      (*entries)[done / kIndexEntrySize + i] = LoadU64(staging.data() + i * kIndexEntrySize);
    }
    done += n;
  }
  Status closed = file->Close();
  if (!closed.ok()) return closed.WithContext(name_ + ": closing index file " + index_path);
  return Status::OK();
}

Status IndexedBinaryReader::BuildIndex(std::vector<std::uint64_t> offsets,
                                       std::vector<std::uint64_t> sizes) {
  const std::string offset_path = OffsetIndexPath(path_);
  const std::string size_path = SizeIndexPath(path_);
  if (offsets.size() != sizes.size()) {
    return Status::Corruption(
        size_path + ": holds " + std::to_string(sizes.size()) + " entries but " + offset_path +
        " holds " + std::to_string(offsets.size()) + " at offset " +
        std::to_string(std::min(offsets.size(), sizes.size()) * kIndexEntrySize));
  }
  auto index = std::make_shared<SampleIndex>();
  for (std::size_t i = 0; i < offsets.size(); ++i) {
    const std::uint64_t offset = offsets[i];
    const std::uint64_t size = sizes[i];
    if (offset > data_size_ || size > data_size_ - offset) {
      return Status::Corruption(offset_path + ": entry " + std::to_string(i) + " (offset " +
                                std::to_string(offset) + ", size " + std::to_string(size) + " in " +
                                size_path + ") reaches past the end of " + path_ + " (" +
                                std::to_string(data_size_) + " bytes) at offset " +
                                std::to_string(i * kIndexEntrySize));
    }
    index->largest = std::max(index->largest, size);
  }
  index->offsets = std::move(offsets);
  index->sizes = std::move(sizes);
  index->data_size = data_size_;
  index_ = std::move(index);
  return Status::OK();
}

Status IndexedBinaryReader::OpenData() {
  // Samples are read at any offset, but each one front to back: no hint, so
  // the kernel's readahead follows a large sample and stays out of the way
  // of small scattered ones (a random hint turns a 128 MiB sample into
  // 32,768 page-sized reads on a cold mmap).
  IOMIMIC_ASSIGN_OR_RETURN(file_, OpenForReading(*storage_, path_, AccessHint::kNormal, name_));
  Result<std::uint64_t> size = file_->Size();
  if (!size.ok()) {
    CloseData();
    return size.status().WithContext(name_ + ": size of " + path_);
  }
  data_size_ = *size;
  return Status::OK();
}

void IndexedBinaryReader::CloseData() {
  if (file_) (void)file_->Close();
  file_.reset();
}

Result<std::vector<ByteRange>> IndexedBinaryReader::SampleRanges(std::uint64_t index) {
  if (index >= index_->num_samples()) {
    return SampleIndexOutOfRange(path_, index, index_->num_samples(), "the index");
  }
  return Guard(name_, "describing a sample of", path_, [&]() -> Result<std::vector<ByteRange>> {
    std::vector<ByteRange> ranges;
    const std::size_t i = static_cast<std::size_t>(index);
    if (index_->sizes[i] > 0) ranges.push_back({index_->offsets[i], index_->sizes[i]});
    return ranges;
  });
}

Result<SampleView> IndexedBinaryReader::ReadSample(std::uint64_t index) {
  // A failed read leaves nothing open; the next call reopens the file.
  return ReadSampleGuarded(
      name_, path_, [&] { return ReadSampleImpl(index); }, [&] { CloseData(); });
}

Result<SampleView> IndexedBinaryReader::ReadSampleImpl(std::uint64_t index) {
  if (index >= index_->num_samples()) {
    return SampleIndexOutOfRange(path_, index, index_->num_samples(), "the index");
  }
  const std::uint64_t offset = index_->offsets[static_cast<std::size_t>(index)];
  const std::uint64_t size64 = index_->sizes[static_cast<std::size_t>(index)];
  if (size64 > std::numeric_limits<std::size_t>::max()) {
    return Status::ResourceExhausted(path_ + ": sample " + std::to_string(index) +
                                     " is too large for this address space");
  }
  const std::size_t size = static_cast<std::size_t>(size64);
  if (!file_) IOMIMIC_RETURN_IF_ERROR(OpenData());  // on_demand: one open per sample
  const std::size_t request =
      transfer_ == 0 || transfer_ >= size ? size : static_cast<std::size_t>(transfer_);
  // Decoding returns the sample, so it is kept whole; otherwise nothing
  // looks at the bytes and every request lands in one request-sized buffer.
  const std::size_t keep = decode_ ? size : request;
  if (buffer_.size() < keep) {
    // Wherever the back end wants the bytes (device memory for GPU staging):
    // nothing here needs to look at them.
    buffer_.Reset();
    Result<Buffer> made = storage_->Allocate(keep);
    if (!made.ok()) {
      return made.status().WithContext(name_ + ": allocating " + std::to_string(keep) +
                                       " bytes for a sample of " + path_);
    }
    if (made->size() < keep) {
      return Status::ResourceExhausted(name_ + ": the storage allocated " +
                                       std::to_string(made->size()) + " of " +
                                       std::to_string(keep) + " bytes");
    }
    buffer_ = std::move(made).value();
  }
  for (std::size_t done = 0; done < size;) {
    const std::size_t n = std::min(request, size - done);
    Result<std::size_t> got =
        file_->ReadAt(offset + done, buffer_.span().subspan(decode_ ? done : 0, n));
    if (!got.ok()) {
      return got.status().WithContext(name_ + ": reading sample " + std::to_string(index) + " of " +
                                      path_);
    }
    if (*got < n) {
      return Status::Corruption(path_ + ": truncated file: sample " + std::to_string(index) +
                                " needs " + std::to_string(size) + " bytes from offset " +
                                std::to_string(offset) + " (entry " + std::to_string(index) +
                                " of " + OffsetIndexPath(path_) + "), the file ends at offset " +
                                std::to_string(offset + done + *got));
    }
    done += n;
  }
  if (!keep_in_memory_) {
    Status closed = file_->Close();
    file_.reset();
    if (!closed.ok()) return closed.WithContext(name_ + ": closing " + path_);
  }
  SampleView view;
  view.bytes = size64;
  if (decode_ && buffer_.host_accessible()) {
    view.data = std::span<const std::byte>(buffer_.data(), size);
  }
  return view;
}

}  // namespace iomimic::indexed_binary
