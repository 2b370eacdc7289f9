// Reading samples from TFRecord files the way tf.data.TFRecordDataset does:
// the file is streamed from offset 0 in requests of the transfer size
// (TFRecordDataset's buffer_size, default 256 KiB) at offsets 0, T, 2T, ...
// like TensorFlow's BufferedInputStream, and records are taken one after
// another from the stream. TensorFlow never seeks, so sample i of a file is
// reached by streaming through records 0..i.
//
// With decoding on, both masked CRC-32Cs of every record the stream passes
// are verified (as TensorFlow's RecordReader does) and the requested record
// is parsed as a tf.train.Example with protobuf (the generated parser of
// example.proto); the sample is the single value of its "image" bytes
// feature. With decoding off the same requests are made, only the framing
// lengths are read, and the sample size reported is the record's payload
// size.
//
// read_type on_demand: every ReadSample starts a new pass (open, stream
// records 0..i, close); OpenReader performs the first requests of the first
// pass. read_type memory (keep_in_memory): one pass serves every sample: the
// bytes read are kept (one buffer of the file's size, filled chunk by
// chunk), samples already passed are served from memory and later samples
// continue the stream, so reading a whole file costs one pass whatever the
// order.
//
// num_samples() comes from the file itself: records of iomimic (and DLIO)
// files all have the same size, so the first record's length and the file
// size give the count. When the size is not a multiple of the first record's
// size (records of different sizes, or a truncated file), OpenReader walks
// the record headers with one 12-byte request per record instead.

#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "iomimic/buffer.h"
#include "iomimic/format.h"
#include "iomimic/status.h"
#include "iomimic/storage.h"

namespace iomimic::tfrecord {

namespace proto {
class Example;
}

// tf.data.TFRecordDataset's default buffer_size.
inline constexpr std::uint64_t kDefaultTransferSize = 262144;
// Largest transfer size honoured.
inline constexpr std::uint64_t kMaxTransferSize = std::uint64_t{1} << 30;

class TfRecordReader final : public FileReader {
 public:
  // Opens `path` on options.storage, reads the first chunk and counts the
  // records. kCorruption for a bad first header or a truncated file.
  static Result<std::unique_ptr<FileReader>> Open(const std::string& path,
                                                  const ReaderOptions& options);

  ~TfRecordReader() override;

  std::uint64_t num_samples() const override { return num_samples_; }

  // The "image" bytes of record `index` (decode), or only the record's
  // payload size (no decode). kOutOfRange for index >= num_samples();
  // kCorruption naming the path, record and offset for a CRC mismatch, a
  // truncated record or a payload that is not an Example with an image.
  Result<SampleView> ReadSample(std::uint64_t index) override;

  // For tests: passes started at offset 0, stream requests issued, bytes
  // they returned, and header requests of the record count walk.
  std::uint64_t passes() const { return passes_; }
  std::uint64_t stream_requests() const { return stream_requests_; }
  std::uint64_t stream_bytes() const { return stream_bytes_; }
  std::uint64_t header_requests() const { return header_requests_; }

 private:
  struct RecordInfo {
    std::uint64_t offset = 0;  // first byte of the framed record
    std::uint64_t length = 0;  // payload bytes
  };

  TfRecordReader(std::string path, const ReaderOptions& options);

  Status Init();
  Result<SampleView> ReadSampleImpl(std::uint64_t index);
  // Opens the file when needed and restarts the stream at offset 0.
  Status StartPass();
  // Closes the file (a pass that is over or broken).
  void EndPass();
  // Appends the next transfer-size chunk of the file to the resident bytes.
  Status ReadChunk();
  // Calls fn(piece) for consecutive resident pieces of file bytes
  // [offset, offset + n), reading chunks as needed. `record` and `what`
  // name the bytes in the truncation error.
  template <typename Fn>
  Status Walk(std::uint64_t offset, std::uint64_t n, std::uint64_t record, const char* what,
              Fn&& fn);
  Status ReadHeader(std::uint64_t offset, std::uint64_t record, std::uint64_t* length);
  // Takes the next record off the stream, verifying it when decoding. With
  // `payload` set, also makes its payload available contiguously there.
  Status NextRecord(std::span<const std::byte>* payload);
  // Counts records by walking their headers (files of unequal records).
  Status CountRecords();
  Result<SampleView> Deliver(const RecordInfo& record, std::uint64_t index,
                             std::span<const std::byte> payload);
  Status Corrupt(const std::string& what, std::uint64_t offset) const;

  std::string path_;
  Storage* storage_ = nullptr;
  bool decode_ = true;
  bool keep_in_memory_ = false;
  std::uint64_t transfer_ = kDefaultTransferSize;

  std::unique_ptr<File> file_;
  std::uint64_t file_size_ = 0;
  std::uint64_t num_samples_ = 0;
  std::uint64_t first_length_ = 0;
  bool counted_by_size_ = false;  // num_samples_ assumes records of first_length_

  // The stream. Resident file bytes are [window_begin_, window_end_): the
  // current chunk in chunk_, or (keep_in_memory) everything read so far in
  // image_, which holds file byte k at image_[k].
  Buffer chunk_;
  Buffer image_;
  std::uint64_t window_begin_ = 0;
  std::uint64_t window_end_ = 0;
  bool end_of_file_ = false;          // a request returned fewer bytes than asked
  std::uint64_t cursor_ = 0;          // offset of the next record
  std::uint64_t next_record_ = 0;     // its index
  bool peeked_first_header_ = false;  // Init read record 0's header in this pass
  bool pass_broken_ = true;           // the next sample needs a new pass
  std::vector<RecordInfo> records_;   // keep_in_memory: records passed so far
  std::vector<std::byte> scratch_;    // a payload that straddles chunks
  std::unique_ptr<proto::Example> example_;

  std::uint64_t passes_ = 0;
  std::uint64_t stream_requests_ = 0;
  std::uint64_t stream_bytes_ = 0;
  std::uint64_t header_requests_ = 0;
};

}  // namespace iomimic::tfrecord
