#include "tfrecord_reader.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <utility>

#include "crc32c.h"
#include "example.pb.h"
#include "example_wire.h"
#include "iomimic/format_helpers.h"
#include "tfrecord_writer.h"

namespace iomimic::tfrecord {
namespace {

std::string Hex32(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%08x", v);
  return buf;
}

std::string RecordName(std::uint64_t index, std::uint64_t offset) {
  return "record " + std::to_string(index) + " at offset " + std::to_string(offset);
}

}  // namespace

TfRecordReader::TfRecordReader(std::string path, const ReaderOptions& options)
    : path_(std::move(path)),
      storage_(options.storage),
      decode_(options.decode),
      keep_in_memory_(options.keep_in_memory) {
  if (options.transfer_size != 0) {
    transfer_ = std::min<std::uint64_t>(options.transfer_size, kMaxTransferSize);
  }
}

TfRecordReader::~TfRecordReader() = default;

Result<std::unique_ptr<FileReader>> TfRecordReader::Open(const std::string& path,
                                                         const ReaderOptions& options) {
  return OpenReaderGuarded("tfrecord", path, options, [&]() -> Result<std::unique_ptr<FileReader>> {
    std::unique_ptr<TfRecordReader> reader(new TfRecordReader(path, options));
    IOMIMIC_RETURN_IF_ERROR(reader->Init());
    return std::unique_ptr<FileReader>(std::move(reader));
  });
}

Status TfRecordReader::Corrupt(const std::string& what, std::uint64_t offset) const {
  return Status::Corruption(path_ + ": " + what + " at offset " + std::to_string(offset));
}

Status TfRecordReader::Init() {
  example_ = std::make_unique<proto::Example>();
  if (!keep_in_memory_) {
    IOMIMIC_ASSIGN_OR_RETURN(
        chunk_, AllocateHostBuffer(*storage_, static_cast<std::size_t>(transfer_), "tfrecord"));
  }
  IOMIMIC_RETURN_IF_ERROR(StartPass());
  if (file_size_ == 0) return Status::OK();  // a file without records
  std::uint64_t length = 0;
  Status s = ReadHeader(0, 0, &length);
  if (!s.ok()) {
    EndPass();
    return s;
  }
  first_length_ = length;
  peeked_first_header_ = true;
  const std::uint64_t record = kFramingSize + length;
  if (file_size_ % record == 0) {
    num_samples_ = file_size_ / record;
    counted_by_size_ = true;
    return Status::OK();
  }
  s = CountRecords();
  if (!s.ok()) EndPass();
  return s;
}

Status TfRecordReader::StartPass() {
  if (file_ == nullptr) {
    IOMIMIC_ASSIGN_OR_RETURN(file_,
                             OpenForReading(*storage_, path_, AccessHint::kSequential, "tfrecord"));
  }
  Result<std::uint64_t> size = file_->Size();
  if (!size.ok()) return size.status().WithContext("tfrecord: size of " + path_);
  file_size_ = *size;
  if (keep_in_memory_) {
    const std::uint64_t capacity = (file_size_ + transfer_ - 1) / transfer_ * transfer_;
    if (image_.size() < capacity) {
      if (capacity > SIZE_MAX) return Status::ResourceExhausted(path_ + ": file too large to keep");
      image_.Reset();
      IOMIMIC_ASSIGN_OR_RETURN(
          image_, AllocateHostBuffer(*storage_, static_cast<std::size_t>(capacity), "tfrecord"));
    }
  }
  window_begin_ = 0;
  window_end_ = 0;
  end_of_file_ = false;
  cursor_ = 0;
  next_record_ = 0;
  records_.clear();
  peeked_first_header_ = false;
  pass_broken_ = false;
  ++passes_;
  return Status::OK();
}

void TfRecordReader::EndPass() {
  if (file_ != nullptr) {
    (void)file_->Close();  // read-only: nothing is lost
    file_.reset();
  }
}

Status TfRecordReader::ReadChunk() {
  if (file_ == nullptr) {
    return Status::Internal("tfrecord: the stream of " + path_ + " is closed");
  }
  if (keep_in_memory_ && window_end_ + transfer_ > image_.size()) {
    end_of_file_ = true;  // the file grew after it was opened: stop at the size seen then
    return Status::OK();
  }
  std::span<std::byte> destination =
      keep_in_memory_ ? image_.span().subspan(static_cast<std::size_t>(window_end_),
                                              static_cast<std::size_t>(transfer_))
                      : chunk_.span().first(static_cast<std::size_t>(transfer_));
  Result<std::size_t> n = file_->ReadAt(window_end_, destination);
  ++stream_requests_;
  if (!n.ok()) return n.status().WithContext("tfrecord: reading " + path_);
  stream_bytes_ += *n;
  if (*n < destination.size()) end_of_file_ = true;
  if (!keep_in_memory_) window_begin_ = window_end_;
  window_end_ += *n;
  return Status::OK();
}

template <typename Fn>
Status TfRecordReader::Walk(std::uint64_t offset, std::uint64_t n, std::uint64_t record,
                            const char* what, Fn&& fn) {
  const std::uint64_t end = offset + n;
  while (offset < end) {
    if (offset >= window_end_) {
      if (!end_of_file_) IOMIMIC_RETURN_IF_ERROR(ReadChunk());
      if (offset >= window_end_ && end_of_file_) {
        return Corrupt("truncated file: the " + std::string(what) + " of " +
                           RecordName(record, cursor_) + " needs bytes up to " +
                           std::to_string(end) + " but the file ends",
                       window_end_);
      }
      continue;
    }
    if (offset < window_begin_) {
      return Status::Internal("tfrecord: stream of " + path_ + " cannot go back to offset " +
                              std::to_string(offset));
    }
    const std::uint64_t piece = std::min(end, window_end_) - offset;
    const std::byte* base =
        keep_in_memory_ ? image_.data() + offset : chunk_.data() + (offset - window_begin_);
    fn(std::span<const std::byte>(base, static_cast<std::size_t>(piece)));
    offset += piece;
  }
  return Status::OK();
}

Status TfRecordReader::ReadHeader(std::uint64_t offset, std::uint64_t record,
                                  std::uint64_t* length) {
  std::byte header[kHeaderSize];
  std::size_t filled = 0;
  IOMIMIC_RETURN_IF_ERROR(
      Walk(offset, kHeaderSize, record, "header", [&](std::span<const std::byte> piece) {
        std::memcpy(header + filled, piece.data(), piece.size());
        filled += piece.size();
      }));
  *length = LoadLe64(header);
  if (decode_) {
    const std::uint32_t stored = UnmaskCrc(LoadLe32(header + 8));
    const std::uint32_t computed = Crc32c(header, 8);
    if (stored != computed) {
      return Status::Corruption(path_ + ": length CRC32C mismatch in " +
                                RecordName(record, offset) + " (stored " + Hex32(stored) +
                                ", computed " + Hex32(computed) + ")");
    }
  }
  if (*length > file_size_ || file_size_ - *length < offset + kFramingSize) {
    return Status::Corruption(path_ + ": truncated file: " + RecordName(record, offset) +
                              " has a " + std::to_string(*length) +
                              "-byte payload but the file ends at byte " +
                              std::to_string(file_size_));
  }
  return Status::OK();
}

Status TfRecordReader::CountRecords() {
  std::uint64_t count = 0;
  std::byte header[kHeaderSize];
  for (std::uint64_t offset = 0; offset < file_size_; ++count) {
    Result<std::size_t> n = file_->ReadAt(offset, std::span<std::byte>(header));
    ++header_requests_;
    if (!n.ok()) return n.status().WithContext("tfrecord: reading " + path_);
    if (*n < kHeaderSize) {
      return Corrupt("truncated file: the header of record " + std::to_string(count) +
                         " is cut after " + std::to_string(*n) + " bytes",
                     offset);
    }
    const std::uint64_t length = LoadLe64(header);
    if (decode_ && UnmaskCrc(LoadLe32(header + 8)) != Crc32c(header, 8)) {
      return Status::Corruption(path_ + ": length CRC32C mismatch in " + RecordName(count, offset));
    }
    if (length > file_size_ || file_size_ - length < offset + kFramingSize) {
      return Status::Corruption(path_ + ": truncated file: " + RecordName(count, offset) +
                                " has a " + std::to_string(length) +
                                "-byte payload but the file ends at byte " +
                                std::to_string(file_size_));
    }
    offset += kFramingSize + length;
  }
  num_samples_ = count;
  return Status::OK();
}

Status TfRecordReader::NextRecord(std::span<const std::byte>* payload) {
  const std::uint64_t offset = cursor_;
  const std::uint64_t index = next_record_;
  std::uint64_t length = 0;
  if (peeked_first_header_ && offset == 0) {
    // Init already read and checked it (a chunk smaller than a header may
    // have moved past it since).
    length = first_length_;
  } else {
    IOMIMIC_RETURN_IF_ERROR(ReadHeader(offset, index, &length));
  }
  if (counted_by_size_ && length != first_length_) {
    // Records of different sizes: the count from the file size is not
    // reliable, count them one by one.
    counted_by_size_ = false;
    IOMIMIC_RETURN_IF_ERROR(CountRecords());
  }
  const std::uint64_t begin = offset + kHeaderSize;
  const std::uint64_t footer_at = begin + length;
  // The payload can be used where it lies when it stays resident until the
  // footer has been read: always with keep_in_memory, otherwise when the
  // whole record is inside the current chunk.
  const bool in_place = payload == nullptr || keep_in_memory_ ||
                        (begin >= window_begin_ && footer_at + kFooterSize <= window_end_);
  if (payload != nullptr && !in_place) scratch_.resize(static_cast<std::size_t>(length));
  std::uint32_t crc = 0;
  std::size_t copied = 0;
  IOMIMIC_RETURN_IF_ERROR(
      Walk(begin, length, index, "payload", [&](std::span<const std::byte> piece) {
        if (decode_) crc = Crc32cExtend(crc, piece.data(), piece.size());
        if (!in_place) {
          std::memcpy(scratch_.data() + copied, piece.data(), piece.size());
          copied += piece.size();
        }
      }));
  std::byte footer[kFooterSize];
  std::size_t filled = 0;
  IOMIMIC_RETURN_IF_ERROR(
      Walk(footer_at, kFooterSize, index, "payload CRC", [&](std::span<const std::byte> piece) {
        std::memcpy(footer + filled, piece.data(), piece.size());
        filled += piece.size();
      }));
  if (decode_) {
    const std::uint32_t stored = UnmaskCrc(LoadLe32(footer));
    if (stored != crc) {
      return Status::Corruption(path_ + ": payload CRC32C mismatch in " +
                                RecordName(index, offset) + " (stored " + Hex32(stored) +
                                ", computed " + Hex32(crc) + ")");
    }
  }
  if (payload != nullptr) {
    if (!in_place) {
      *payload = std::span<const std::byte>(scratch_.data(), scratch_.size());
    } else if (keep_in_memory_) {
      *payload =
          std::span<const std::byte>(image_.data() + begin, static_cast<std::size_t>(length));
    } else {
      *payload = std::span<const std::byte>(chunk_.data() + (begin - window_begin_),
                                            static_cast<std::size_t>(length));
    }
  }
  if (keep_in_memory_) records_.push_back({offset, length});
  cursor_ = footer_at + kFooterSize;
  ++next_record_;
  return Status::OK();
}

Result<SampleView> TfRecordReader::Deliver(const RecordInfo& record, std::uint64_t index,
                                           std::span<const std::byte> payload) {
  if (!decode_) return SampleView{{}, record.length};
  // ParseFromArray takes an int; writers keep Examples below 2 GiB.
  if (payload.size() > kMaxPayloadSize ||
      !example_->ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
    return Status::Corruption(path_ + ": " + RecordName(index, record.offset) +
                              " does not parse as a tf.train.Example (" +
                              std::to_string(payload.size()) + "-byte payload)");
  }
  const auto& features = example_->features().feature();
  auto it = features.find(kImageFeature);
  if (it == features.end() || !it->second.has_bytes_list() ||
      it->second.bytes_list().value_size() != 1) {
    return Status::Corruption(path_ + ": " + RecordName(index, record.offset) +
                              " has no 'image' feature holding one bytes value");
  }
  const std::string& image = it->second.bytes_list().value(0);
  return SampleView{std::as_bytes(std::span<const char>(image.data(), image.size())), image.size()};
}

Result<SampleView> TfRecordReader::ReadSampleImpl(std::uint64_t index) {
  if (index >= num_samples_) {
    return SampleIndexOutOfRange(path_, index, num_samples_, "the file", "records");
  }
  if (keep_in_memory_ && !pass_broken_ && index < records_.size()) {
    const RecordInfo& record = records_[index];
    return Deliver(record, index,
                   std::span<const std::byte>(image_.data() + record.offset + kHeaderSize,
                                              static_cast<std::size_t>(record.length)));
  }
  if (keep_in_memory_ && !pass_broken_ && file_ == nullptr) {
    return Status::OutOfRange(path_ + ": sample " + std::to_string(index) +
                              " is out of range (the stream ended after " +
                              std::to_string(records_.size()) + " records)");
  }
  // A new pass: on_demand after the first sample (the pass Open started
  // serves the first one), or after an error.
  if (pass_broken_) IOMIMIC_RETURN_IF_ERROR(StartPass());
  while (next_record_ < index) IOMIMIC_RETURN_IF_ERROR(NextRecord(nullptr));
  const std::uint64_t offset = cursor_;
  std::span<const std::byte> payload;
  IOMIMIC_RETURN_IF_ERROR(NextRecord(&payload));
  Result<SampleView> view = Deliver(RecordInfo{offset, payload.size()}, index, payload);
  if (!keep_in_memory_ || cursor_ >= file_size_) EndPass();
  if (!keep_in_memory_) pass_broken_ = true;  // on_demand: the next sample starts over
  return view;
}

Result<SampleView> TfRecordReader::ReadSample(std::uint64_t index) {
  // A failed read ends the pass; the next sample starts a new one.
  return ReadSampleGuarded(
      "tfrecord", path_, [&] { return ReadSampleImpl(index); },
      [&] {
        EndPass();
        pass_broken_ = true;
        records_.clear();
      });
}

}  // namespace iomimic::tfrecord
