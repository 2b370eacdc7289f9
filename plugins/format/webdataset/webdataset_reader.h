// Reading WebDataset shards the way webdataset reads them: a shard is a
// stream, opened once and read from offset 0 to its end in requests of the
// transfer size at offsets 0, T, 2T, ... (default: tarfile's record size,
// 10240 bytes, the request tarfile's stream reader makes), never seeking.
// Member headers are checked as tarfile checks them (tar_header.h) and the
// members are grouped into samples by key as webdataset groups them: a
// sample ends where a member with another key (or the end of the archive)
// begins, so reading sample i also reads the header of the next member.
// After the last sample the stream continues to the end of the file (the
// end-of-archive blocks and the record padding), then the file is closed: a
// whole pass reads every byte of the shard once.
//
// A sample is its .npy member. With decoding on, the sample is the array's
// data (numpy's header parsed and checked against the member's size) and the
// .cls member must be there and hold a decimal integer (webdataset's "cls"
// decoder); with decoding off the sample's size is the .npy member's size
// and nothing is parsed but the tar headers.
//
// A tar stream has no sample count: num_samples() is unknown (UINT64_MAX)
// until a pass has reached the end of the archive, like webdataset's
// IterableDataset, which has no length. A sample past the last is
// kOutOfRange naming the file and the count, or kCorruption naming the
// offset when the file ends at a member boundary without the zero blocks
// that end an archive (tarfile stops there quietly; the shard was cut).
//
// keep_in_memory (what the core asks for a streamed format: one reader
// reads a file's samples in order): the pass stays open between samples, so
// reading samples 0..n-1 in order reads the shard once; asking for a sample
// the stream has passed starts a new pass. Otherwise (read_type on_demand)
// every ReadSample is a pass of its own: open, stream to the sample, close.
// Memory: one transfer-size buffer and one sample, whatever the shard size.

#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "iomimic/buffer.h"
#include "iomimic/format.h"
#include "iomimic/status.h"
#include "iomimic/storage.h"
#include "tar_header.h"

namespace iomimic::webdataset {

// tarfile.RECORDSIZE: the size of the requests tarfile's stream mode makes.
inline constexpr std::uint64_t kDefaultTransferSize = kRecordSize;
// Largest transfer size honoured.
inline constexpr std::uint64_t kMaxTransferSize = std::uint64_t{1} << 30;
// The count a reader reports before it has seen the end of the archive.
inline constexpr std::uint64_t kUnknownCount = std::numeric_limits<std::uint64_t>::max();
// A label member longer than this is not a class label.
inline constexpr std::uint64_t kMaxLabelSize = 64;

class WebDatasetReader final : public FileReader {
 public:
  // Opens `path` on options.storage and reads the first chunk; kCorruption
  // when it does not start with a tar header (naming the path and offset),
  // the storage's error when the file cannot be opened or read.
  static Result<std::unique_ptr<FileReader>> Open(const std::string& path,
                                                  const ReaderOptions& options);

  ~WebDatasetReader() override;

  // kUnknownCount until a pass reached the end of the archive, then the
  // number of samples in it.
  std::uint64_t num_samples() const override { return total_; }

  // The array data of sample `index`'s .npy member (decode) or only that
  // member's size (no decode). kOutOfRange past the last sample; kCorruption
  // naming the path and offset for a bad header checksum, a member cut by
  // the end of the file, two members of one sample with the same extension,
  // a sample without a .npy member (or, decoding, without a .cls label),
  // or a .npy member numpy would not load.
  Result<SampleView> ReadSample(std::uint64_t index) override;

  // For tests: passes started at offset 0, stream requests issued and the
  // bytes they returned.
  std::uint64_t passes() const { return passes_; }
  std::uint64_t stream_requests() const { return stream_requests_; }
  std::uint64_t stream_bytes() const { return stream_bytes_; }

 private:
  // A header read from the stream: what it says and where it is.
  struct Header {
    MemberHeader member;
    std::uint64_t offset = 0;
  };

  WebDatasetReader(std::string path, const ReaderOptions& options);

  Status Init();
  Result<SampleView> ReadSampleImpl(std::uint64_t index);
  // Opens the file when needed and restarts the stream at offset 0.
  Status StartPass();
  // Closes the file (a pass that is over or broken).
  void EndPass();
  // Appends the next transfer-size chunk of the file to the stream.
  Status ReadChunk();
  // Calls fn(piece) for consecutive pieces of file bytes [offset, offset +
  // n) as the stream passes them, reading chunks as needed.
  template <typename Fn>
  Status Walk(std::uint64_t offset, std::uint64_t n, Fn&& fn);
  // The next member header of the stream that webdataset does not skip
  // (regular files with a key, not metadata), or std::nullopt at the end of
  // the archive (zero block or end of file). Skipped members' data are
  // streamed past.
  Result<std::optional<Header>> NextGroupedHeader();
  // Reads the data of `header`'s member (and its padding) off the stream,
  // copying it into `into` when not null.
  Status TakeMember(const Header& header, std::vector<std::byte>* into);
  // Takes the next sample off the stream; with `deliver`, keeps its .npy
  // member (and its label, decoding) for Deliver. False at the end of the
  // archive.
  Result<bool> NextSample(bool deliver);
  Result<SampleView> Deliver(std::uint64_t index);
  // Reads what is left of the file after the end of the archive.
  Status Drain();
  // The error for sample `index` past the end of the archive: kOutOfRange,
  // or kCorruption naming the offset when the archive has no end blocks.
  Status PastTheEnd(std::uint64_t index) const;

  std::string path_;
  Storage* storage_ = nullptr;
  bool decode_ = true;
  bool keep_in_memory_ = false;
  std::uint64_t transfer_ = kDefaultTransferSize;

  std::unique_ptr<File> file_;
  std::uint64_t file_size_ = 0;
  std::uint64_t total_ = kUnknownCount;

  // The stream: file bytes [window_begin_, window_end_) are in chunk_.
  Buffer chunk_;
  std::uint64_t window_begin_ = 0;
  std::uint64_t window_end_ = 0;
  bool end_of_file_ = false;       // a request returned fewer bytes than asked
  std::uint64_t cursor_ = 0;       // offset of the next header block
  std::optional<Header> pending_;  // the first header of the next sample, read
  bool archive_ended_ = false;     // the stream reached the end of the archive
  bool unterminated_ = false;      // ... at the end of the file, without end blocks
  std::uint64_t next_sample_ = 0;  // index of the sample the stream holds next
  bool pass_broken_ = true;        // the next sample needs a new pass

  // The sample taken last (deliver): its key, .npy member and label text.
  std::string key_;
  std::uint64_t sample_offset_ = 0;   // its first member's header
  std::uint64_t payload_offset_ = 0;  // file offset of the .npy member's data
  std::uint64_t payload_size_ = 0;
  bool has_payload_ = false;
  bool has_label_ = false;
  std::uint64_t label_offset_ = 0;
  std::vector<std::byte> payload_;
  std::vector<std::byte> label_;

  std::uint64_t passes_ = 0;
  std::uint64_t stream_requests_ = 0;
  std::uint64_t stream_bytes_ = 0;
};

}  // namespace iomimic::webdataset
