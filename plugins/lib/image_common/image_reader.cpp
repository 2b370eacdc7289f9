#include "image_common/image_reader.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <limits>
#include <new>
#include <utility>

#include "image_common/image_sink.h"
#include "iomimic/guard.h"

namespace iomimic::image {

Status CorruptAt(const std::string& path, const std::string& what, std::uint64_t offset) {
  return Status::Corruption(path + ": " + what + " at offset " + std::to_string(offset));
}

Status CheckDecodedSize(const std::string& path, const char* format, const ImageInfo& info,
                        std::uint64_t file_size, std::uint64_t max_ratio,
                        std::uint64_t header_offset) {
  constexpr std::uint64_t kSlack = std::uint64_t{64} << 20;
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  const std::uint64_t limit =
      file_size > (kMax - kSlack) / max_ratio ? kMax : file_size * max_ratio + kSlack;
  // Multiply step by step so that absurd headers cannot overflow.
  std::uint64_t bytes = info.bytes_per_sample;
  for (std::uint64_t factor : {info.channels, info.width, info.height}) {
    if (factor != 0 && bytes > limit / factor) {
      return CorruptAt(path,
                       std::string("corrupt ") + format + " header: it declares a " +
                           std::to_string(info.width) + "x" + std::to_string(info.height) +
                           " image with " + std::to_string(info.channels) +
                           " channels, more than a file of " + std::to_string(file_size) +
                           " bytes can hold",
                       header_offset);
    }
    bytes *= factor;
  }
  if (bytes > std::numeric_limits<std::size_t>::max()) {
    return Status::ResourceExhausted(path + ": a " + std::to_string(bytes) +
                                     "-byte image does not fit this address space");
  }
  return Status::OK();
}

ImageReader::ImageReader(std::string path, const ReaderOptions& options, const ImageCodec& codec)
    : path_(std::move(path)),
      codec_(codec),
      storage_(options.storage),
      decode_(options.decode),
      keep_in_memory_(options.keep_in_memory) {
  if (options.transfer_size != 0) transfer_ = std::min(options.transfer_size, kMaxTransferSize);
}

Result<std::unique_ptr<FileReader>> ImageReader::Open(const std::string& path,
                                                      const ReaderOptions& options,
                                                      const ImageCodec& codec) {
  if (options.storage == nullptr) {
    return Status::InvalidArgument(std::string(codec.name()) + ": reader options have no storage");
  }
  return Guard(codec.name(), "opening", path, [&]() -> Result<std::unique_ptr<FileReader>> {
    std::unique_ptr<ImageReader> reader(new ImageReader(path, options, codec));
    Status s = reader->BeginLoad();
    if (!s.ok()) {
      reader->AbortLoad();
      return s;
    }
    return std::unique_ptr<FileReader>(std::move(reader));
  });
}

void ImageReader::AbortLoad() {
  file_.reset();
  begun_ = false;
  have_ = 0;
  short_read_ = false;
}

Status ImageReader::ReadChunk(std::uint64_t offset, std::span<std::byte> out, std::size_t* got) {
  Result<std::size_t> n = file_->ReadAt(offset, out);
  if (!n.ok()) return n.status().WithContext(std::string(codec_.name()) + ": reading " + path_);
  *got = std::min(*n, out.size());
  return Status::OK();
}

Status ImageReader::BeginLoad() {
  OpenOptions open_options;
  open_options.mode = OpenMode::kRead;
  open_options.hint = AccessHint::kWholeFile;
  IOMIMIC_ASSIGN_OR_RETURN(file_, storage_->Open(path_, open_options));
  Result<std::uint64_t> size = file_->Size();
  if (!size.ok()) {
    return size.status().WithContext(std::string(codec_.name()) + ": size of " + path_);
  }
  if (*size > std::numeric_limits<std::size_t>::max() - kProbeSize) {
    return Status::ResourceExhausted(path_ + ": " + std::to_string(*size) +
                                     " bytes do not fit this address space");
  }
  const std::size_t capacity = std::max<std::size_t>(static_cast<std::size_t>(*size), kProbeSize);
  IOMIMIC_RETURN_IF_ERROR(EnsureHostBuffer(*storage_, encoded_, capacity, codec_.name()));

  // Image.open: one buffered 4 KiB read, then the format is identified.
  std::size_t got = 0;
  IOMIMIC_RETURN_IF_ERROR(ReadChunk(0, encoded_.span().first(kProbeSize), &got));
  have_ = got;
  short_read_ = got < kProbeSize;
  if (got == 0) {
    return CorruptAt(path_, std::string("truncated ") + codec_.name() + " file: it is empty", 0);
  }
  IOMIMIC_RETURN_IF_ERROR(codec_.CheckSignature(encoded_.span().first(got), path_));
  begun_ = true;
  return Status::OK();
}

Status ImageReader::ReadToEnd() {
  IOMIMIC_RETURN_IF_ERROR(EnsureHostBuffer(*storage_, eof_probe_, kProbeSize, codec_.name()));
  while (true) {
    const std::uint64_t capacity = encoded_.size();
    if (!short_read_ && have_ < capacity) {
      // ImageFile.load: blocks that end on transfer-size boundaries.
      const std::uint64_t end = std::min(capacity, (have_ / transfer_ + 1) * transfer_);
      std::span<std::byte> out = encoded_.span().subspan(static_cast<std::size_t>(have_),
                                                         static_cast<std::size_t>(end - have_));
      std::size_t got = 0;
      IOMIMIC_RETURN_IF_ERROR(ReadChunk(have_, out, &got));
      have_ += got;
      short_read_ = got < out.size();
      continue;
    }
    // The read at the end of the file that returns nothing.
    std::size_t got = 0;
    IOMIMIC_RETURN_IF_ERROR(ReadChunk(have_, eof_probe_.span().first(kProbeSize), &got));
    if (got == 0) return Status::OK();
    // The file is longer than fstat said: keep reading into a larger buffer.
    const std::uint64_t wanted = std::max<std::uint64_t>(capacity * 2, have_ + got + transfer_);
    if (wanted > std::numeric_limits<std::size_t>::max()) {
      return Status::ResourceExhausted(path_ + ": file keeps growing past this address space");
    }
    IOMIMIC_ASSIGN_OR_RETURN(
        Buffer larger,
        AllocateHostBuffer(*storage_, static_cast<std::size_t>(wanted), codec_.name()));
    std::memcpy(larger.data(), encoded_.data(), static_cast<std::size_t>(have_));
    std::memcpy(larger.data() + have_, eof_probe_.data(), got);
    encoded_ = std::move(larger);
    have_ += got;
    short_read_ = got < kProbeSize;
  }
}

Status ImageReader::FinishLoad() {
  IOMIMIC_RETURN_IF_ERROR(ReadToEnd());
  Status closed = file_->Close();
  file_.reset();
  begun_ = false;
  if (!closed.ok()) return closed.WithContext(std::string(codec_.name()) + ": closing " + path_);
  file_bytes_ = have_;
  const std::span<const std::byte> file(encoded_.data(), static_cast<std::size_t>(have_));
  have_ = 0;
  short_read_ = false;
  ImageInfo info;
  if (decode_) {
    IOMIMIC_RETURN_IF_ERROR(codec_.Decode(file, path_, *storage_, &pixels_, &info));
  } else {
    IOMIMIC_RETURN_IF_ERROR(codec_.ReadHeader(file, path_, &info));
  }
  info_ = info;
  loaded_ = true;
  ++loads_;
  return Status::OK();
}

Result<SampleView> ImageReader::ReadSample(std::uint64_t index) {
  return Guard(
      codec_.name(), "reading", path_,
      [&]() -> Result<SampleView> {
        Result<SampleView> r = ReadSampleImpl(index);
        // A failed load leaves nothing half-open; the next call starts afresh.
        if (!r.ok() && r.status().code() != StatusCode::kOutOfRange) {
          AbortLoad();
          loaded_ = false;
        }
        return r;
      },
      [&] {
        AbortLoad();
        loaded_ = false;
      });
}

Result<SampleView> ImageReader::ReadSampleImpl(std::uint64_t index) {
  if (index >= 1) {
    return Status::OutOfRange(path_ + ": sample index " + std::to_string(index) +
                              " is out of range (an image file holds 1 sample)");
  }
  if (!(keep_in_memory_ && loaded_)) {
    if (!begun_) IOMIMIC_RETURN_IF_ERROR(BeginLoad());
    IOMIMIC_RETURN_IF_ERROR(FinishLoad());
  }
  SampleView view;
  view.bytes = info_.decoded_bytes();
  if (decode_) {
    view.data = std::span<const std::byte>(pixels_.data(), static_cast<std::size_t>(view.bytes));
  }
  return view;
}

}  // namespace iomimic::image
