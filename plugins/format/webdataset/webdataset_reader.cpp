#include "webdataset_reader.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <utility>

#include "iomimic/format_helpers.h"
#include "npy_header/npy_header.h"
#include "webdataset_writer.h"

namespace iomimic::webdataset {
namespace {

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string MemberAt(const std::string& name, std::uint64_t offset) {
  return "tar member '" + name + "' (header at offset " + std::to_string(offset) + ")";
}

std::uint64_t LoadLe(const std::byte* p, std::size_t width) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < width; ++i) v |= std::to_integer<std::uint64_t>(p[i]) << (8 * i);
  return v;
}

// The header of the .npy file in `member` as np.load reads it: preamble,
// length field and dictionary; the data must fill the rest exactly.
// Messages name the member; the caller adds the path.
Result<numpy::NpyHeader> ParseNpyMember(std::span<const std::byte> member) {
  if (member.size() < numpy::kNpyPreambleSize + 2) {
    return Status::Corruption("a " + std::to_string(member.size()) +
                              "-byte member is too short for a .npy header");
  }
  int major = 0;
  int minor = 0;
  IOMIMIC_ASSIGN_OR_RETURN(
      const std::size_t width,
      numpy::ParseNpyPreamble(member.first(numpy::kNpyPreambleSize), &major, &minor));
  if (member.size() < numpy::kNpyPreambleSize + width) {
    return Status::Corruption("the .npy header's length field is cut");
  }
  const std::uint64_t length = LoadLe(member.data() + numpy::kNpyPreambleSize, width);
  const std::uint64_t header_size = numpy::kNpyPreambleSize + width + length;
  if (length > numpy::kNpyMaxHeaderSize || header_size > member.size()) {
    return Status::Corruption("the .npy header claims " + std::to_string(length) +
                              " bytes of dictionary in a " + std::to_string(member.size()) +
                              "-byte member");
  }
  const char* text = reinterpret_cast<const char*>(member.data()) + numpy::kNpyPreambleSize + width;
  IOMIMIC_ASSIGN_OR_RETURN(numpy::NpyHeader header,
                           numpy::ParseNpyDict(std::string_view(text, length), major));
  header.major_version = major;
  header.minor_version = minor;
  header.header_size = header_size;
  IOMIMIC_ASSIGN_OR_RETURN(const std::uint64_t data, header.DataBytes());
  if (data != member.size() - header_size) {
    return Status::Corruption("the .npy header says " + std::to_string(data) +
                              " data bytes but the member holds " +
                              std::to_string(member.size() - header_size));
  }
  return header;
}

bool IsDecimal(std::span<const std::byte> text) {
  std::size_t i = 0;
  while (i < text.size() && std::isspace(std::to_integer<unsigned char>(text[i]))) ++i;
  if (i < text.size() && (text[i] == std::byte{'-'} || text[i] == std::byte{'+'})) ++i;
  std::size_t digits = 0;
  for (; i < text.size() && std::isdigit(std::to_integer<unsigned char>(text[i])); ++i) ++digits;
  while (i < text.size() && std::isspace(std::to_integer<unsigned char>(text[i]))) ++i;
  return digits > 0 && i == text.size();
}

}  // namespace

WebDatasetReader::WebDatasetReader(std::string path, const ReaderOptions& options)
    : path_(std::move(path)),
      storage_(options.storage),
      decode_(options.decode),
      keep_in_memory_(options.keep_in_memory) {
  if (options.transfer_size != 0) {
    transfer_ = std::min<std::uint64_t>(options.transfer_size, kMaxTransferSize);
  }
}

WebDatasetReader::~WebDatasetReader() = default;

Result<std::unique_ptr<FileReader>> WebDatasetReader::Open(const std::string& path,
                                                           const ReaderOptions& options) {
  return OpenReaderGuarded(
      "webdataset", path, options, [&]() -> Result<std::unique_ptr<FileReader>> {
        std::unique_ptr<WebDatasetReader> reader(new WebDatasetReader(path, options));
        IOMIMIC_RETURN_IF_ERROR(reader->Init());
        return std::unique_ptr<FileReader>(std::move(reader));
      });
}

Status WebDatasetReader::Init() {
  IOMIMIC_ASSIGN_OR_RETURN(
      chunk_, AllocateHostBuffer(*storage_, static_cast<std::size_t>(transfer_), "webdataset"));
  IOMIMIC_RETURN_IF_ERROR(StartPass());
  if (file_size_ == 0) {
    EndPass();
    return Status::Corruption(path_ + ": empty file at offset 0: not a tar archive");
  }
  // The first header, read as the stream's first request: a file that is
  // not a tar archive fails here.
  Result<std::optional<Header>> first = NextGroupedHeader();
  if (!first.ok()) {
    EndPass();
    return first.status();
  }
  pending_ = *first;
  if (!pending_.has_value()) archive_ended_ = true;
  return Status::OK();
}

Status WebDatasetReader::StartPass() {
  if (file_ == nullptr) {
    IOMIMIC_ASSIGN_OR_RETURN(
        file_, OpenForReading(*storage_, path_, AccessHint::kSequential, "webdataset"));
  }
  Result<std::uint64_t> size = file_->Size();
  if (!size.ok()) return size.status().WithContext("webdataset: size of " + path_);
  file_size_ = *size;
  window_begin_ = 0;
  window_end_ = 0;
  end_of_file_ = false;
  unterminated_ = false;
  cursor_ = 0;
  pending_.reset();
  archive_ended_ = false;
  next_sample_ = 0;
  pass_broken_ = false;
  ++passes_;
  return Status::OK();
}

void WebDatasetReader::EndPass() {
  if (file_ != nullptr) {
    (void)file_->Close();  // read-only: nothing is lost
    file_.reset();
  }
}

Status WebDatasetReader::ReadChunk() {
  if (file_ == nullptr) {
    return Status::Internal("webdataset: the stream of " + path_ + " is closed");
  }
  std::span<std::byte> destination = chunk_.span().first(static_cast<std::size_t>(transfer_));
  Result<std::size_t> n = file_->ReadAt(window_end_, destination);
  ++stream_requests_;
  if (!n.ok()) return n.status().WithContext("webdataset: reading " + path_);
  stream_bytes_ += *n;
  if (*n < destination.size()) end_of_file_ = true;
  window_begin_ = window_end_;
  window_end_ += *n;
  return Status::OK();
}

template <typename Fn>
Status WebDatasetReader::Walk(std::uint64_t offset, std::uint64_t n, Fn&& fn) {
  const std::uint64_t end = offset + n;
  while (offset < end) {
    if (offset >= window_end_) {
      if (end_of_file_) {
        return Status::Corruption(path_ + ": the stream ends at offset " +
                                  std::to_string(window_end_) + " before byte " +
                                  std::to_string(end) + " (the file shrank while it was read)");
      }
      IOMIMIC_RETURN_IF_ERROR(ReadChunk());
      continue;
    }
    if (offset < window_begin_) {
      return Status::Internal("webdataset: the stream of " + path_ + " cannot go back to offset " +
                              std::to_string(offset));
    }
    const std::uint64_t piece = std::min(end, window_end_) - offset;
    fn(std::span<const std::byte>(chunk_.data() + (offset - window_begin_),
                                  static_cast<std::size_t>(piece)));
    offset += piece;
  }
  return Status::OK();
}

Result<std::optional<WebDatasetReader::Header>> WebDatasetReader::NextGroupedHeader() {
  for (;;) {
    if (cursor_ >= file_size_) {
      // No end-of-archive blocks: tarfile stops quietly, but the archive
      // was cut at a member boundary (a sample past here is corruption).
      unterminated_ = true;
      return std::optional<Header>();
    }
    if (file_size_ - cursor_ < kBlockSize) {
      return Status::Corruption(path_ + ": truncated tar header at offset " +
                                std::to_string(cursor_) + ": the file ends at byte " +
                                std::to_string(file_size_));
    }
    HeaderBlock block;
    std::size_t filled = 0;
    IOMIMIC_RETURN_IF_ERROR(Walk(cursor_, kBlockSize, [&](std::span<const std::byte> piece) {
      std::memcpy(block.data() + filled, piece.data(), piece.size());
      filled += piece.size();
    }));
    IOMIMIC_ASSIGN_OR_RETURN(MemberHeader member, ParseMemberHeader(block, path_, cursor_));
    if (member.end_of_archive) return std::optional<Header>();
    Header header{std::move(member), cursor_};
    std::string_view key;
    std::string_view suffix;
    const bool grouped = header.member.type == '0' && !IsMetaName(header.member.name) &&
                         SplitKey(header.member.name, &key, &suffix);
    if (grouped) return std::optional<Header>(std::move(header));
    // Not a sample's field: webdataset skips it, the stream passes its data.
    IOMIMIC_RETURN_IF_ERROR(TakeMember(header, nullptr));
  }
}

Status WebDatasetReader::TakeMember(const Header& header, std::vector<std::byte>* into) {
  const std::uint64_t data = header.offset + kBlockSize;
  // Links, devices and folders carry no data whatever their size field says.
  const bool has_data = header.member.type != '1' && header.member.type != '2' &&
                        header.member.type != '3' && header.member.type != '4' &&
                        header.member.type != '5' && header.member.type != '6';
  const std::uint64_t size = has_data ? header.member.size : 0;
  const std::uint64_t padded = PaddedToBlock(size);
  if (size > file_size_ || padded > file_size_ - data) {
    return Status::Corruption(path_ + ": truncated " + MemberAt(header.member.name, header.offset) +
                              ": its " + std::to_string(size) + " bytes of data from offset " +
                              std::to_string(data) + " end past the end of the file at byte " +
                              std::to_string(file_size_));
  }
  if (into != nullptr) into->resize(static_cast<std::size_t>(size));
  std::size_t copied = 0;
  IOMIMIC_RETURN_IF_ERROR(Walk(data, padded, [&](std::span<const std::byte> piece) {
    if (into == nullptr || copied >= into->size()) return;
    const std::size_t n = std::min(piece.size(), into->size() - copied);
    std::memcpy(into->data() + copied, piece.data(), n);
    copied += n;
  }));
  cursor_ = data + padded;
  return Status::OK();
}

Result<bool> WebDatasetReader::NextSample(bool deliver) {
  if (!pending_.has_value() && !archive_ended_) {
    IOMIMIC_ASSIGN_OR_RETURN(pending_, NextGroupedHeader());
    if (!pending_.has_value()) archive_ended_ = true;
  }
  if (archive_ended_) return false;
  std::string_view key;
  std::string_view suffix;
  SplitKey(pending_->member.name, &key, &suffix);
  key_ = std::string(key);
  sample_offset_ = pending_->offset;
  has_payload_ = false;
  has_label_ = false;
  std::vector<std::string> suffixes;
  // The members of this key, until another key or the end of the archive.
  while (pending_.has_value()) {
    const Header header = std::move(*pending_);
    pending_.reset();
    SplitKey(header.member.name, &key, &suffix);
    if (key != key_) {
      pending_ = header;
      break;
    }
    const std::string field = Lower(suffix);
    if (std::find(suffixes.begin(), suffixes.end(), field) != suffixes.end()) {
      return Status::Corruption(path_ + ": " + MemberAt(header.member.name, header.offset) +
                                ": sample '" + key_ + "' already has a ." + field +
                                " member (webdataset refuses duplicate file names)");
    }
    suffixes.push_back(field);
    std::vector<std::byte>* into = nullptr;
    if (field == kPayloadExtension) {
      has_payload_ = true;
      payload_offset_ = header.offset + kBlockSize;
      payload_size_ = header.member.size;
      if (deliver && decode_) into = &payload_;
    } else if (field == kLabelExtension) {
      has_label_ = true;
      label_offset_ = header.offset + kBlockSize;
      if (deliver && decode_) {
        if (header.member.size > kMaxLabelSize) {
          return Status::Corruption(path_ + ": " + MemberAt(header.member.name, header.offset) +
                                    ": a " + std::to_string(header.member.size) +
                                    "-byte label is not a class number");
        }
        into = &label_;
      }
    }
    IOMIMIC_RETURN_IF_ERROR(TakeMember(header, into));
    IOMIMIC_ASSIGN_OR_RETURN(pending_, NextGroupedHeader());
    if (!pending_.has_value()) archive_ended_ = true;
  }
  ++next_sample_;
  return true;
}

Result<SampleView> WebDatasetReader::Deliver(std::uint64_t index) {
  const std::string sample = "sample " + std::to_string(index) + " ('" + key_ + "')";
  if (!has_payload_) {
    return Status::Corruption(path_ + ": " + sample + " at offset " +
                              std::to_string(sample_offset_) + " has no ." + kPayloadExtension +
                              " member");
  }
  if (!decode_) return SampleView{{}, payload_size_};
  if (!has_label_) {
    return Status::Corruption(path_ + ": " + sample + " at offset " +
                              std::to_string(sample_offset_) + " has no ." + kLabelExtension +
                              " label member");
  }
  if (!IsDecimal(label_)) {
    return Status::Corruption(path_ + ": the ." + std::string(kLabelExtension) + " member of " +
                              sample + " at offset " + std::to_string(label_offset_) +
                              " is not a decimal class number");
  }
  Result<numpy::NpyHeader> npy = ParseNpyMember(payload_);
  if (!npy.ok()) {
    return Status::Corruption(path_ + ": the ." + std::string(kPayloadExtension) + " member of " +
                              sample + " at offset " + std::to_string(payload_offset_) + ": " +
                              npy.status().message());
  }
  const std::size_t at = static_cast<std::size_t>(npy->header_size);
  return SampleView{std::span<const std::byte>(payload_.data() + at, payload_.size() - at),
                    payload_.size() - at};
}

Status WebDatasetReader::Drain() {
  while (!end_of_file_ && window_end_ < file_size_) IOMIMIC_RETURN_IF_ERROR(ReadChunk());
  return Status::OK();
}

Status WebDatasetReader::PastTheEnd(std::uint64_t index) const {
  if (unterminated_) {
    return Status::Corruption(path_ + ": truncated archive: it ends at offset " +
                              std::to_string(file_size_) + " after " + std::to_string(total_) +
                              " samples without the zero blocks that end a tar archive, so "
                              "sample " +
                              std::to_string(index) + " is missing");
  }
  return SampleIndexOutOfRange(path_, index, total_, "the archive");
}

Result<SampleView> WebDatasetReader::ReadSampleImpl(std::uint64_t index) {
  if (index >= total_) return PastTheEnd(index);
  // A sample the stream has passed (or a broken or on_demand pass): start
  // over from offset 0, as a reader that cannot seek must.
  if (pass_broken_ || index < next_sample_ || file_ == nullptr) {
    IOMIMIC_RETURN_IF_ERROR(StartPass());
  }
  while (next_sample_ < index) {
    IOMIMIC_ASSIGN_OR_RETURN(const bool taken, NextSample(false));
    if (!taken) break;
  }
  bool taken = false;
  if (next_sample_ == index) {
    IOMIMIC_ASSIGN_OR_RETURN(taken, NextSample(true));
  }
  if (archive_ended_) {
    // The end of the archive is known: the count, and the rest of the file
    // streamed once (webdataset reads a shard to its end).
    total_ = next_sample_;
    IOMIMIC_RETURN_IF_ERROR(Drain());
    EndPass();
    pass_broken_ = true;
  }
  if (!taken) return PastTheEnd(index);
  Result<SampleView> view = Deliver(index);
  if (!keep_in_memory_) {
    EndPass();
    pass_broken_ = true;  // on_demand: the next sample starts over
  }
  return view;
}

Result<SampleView> WebDatasetReader::ReadSample(std::uint64_t index) {
  // A failed read ends the pass; the next sample starts a new one.
  return ReadSampleGuarded(
      "webdataset", path_, [&] { return ReadSampleImpl(index); },
      [&] {
        EndPass();
        pass_broken_ = true;
      });
}

}  // namespace iomimic::webdataset
