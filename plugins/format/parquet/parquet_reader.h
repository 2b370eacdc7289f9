// Reading Parquet files like the MLPerf Storage DLIO fork's row-group
// iterable reader (docs/parquet.md):
//
// - The footer once per file and pass: the first reader of a file reads the
//   last min(file size, 64 KiB) bytes (and the rest of a larger footer in a
//   second request), every other reader of the file in the pass shares it.
// - A sample (row) costs its row group: the row group is read once per pass,
//   by the first reader that needs it, as one contiguous request from the
//   start of the first selected column chunk to the end of the last one
//   (unselected chunks in between included). A reader that claims a row
//   group also claims the unread row groups after it, up to the prefetch
//   window (and 64 MiB), and reads them with one File::ReadBatch, so back
//   ends that overlap batched reads keep that many in flight.
// - No decode by default (the fork discards the bytes; iomimic only checks
//   that a page header starts where the footer puts each selected chunk);
//   with decode on, the selected chunks' pages are decompressed and their
//   values walked.
//
// SampleView.data is empty; SampleView.bytes is the row's share of its row
// group's span, so a row group's rows add up to the bytes its request read.

#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "iomimic/buffer.h"
#include "iomimic/format.h"
#include "iomimic/status.h"
#include "iomimic/storage.h"
#include "parquet_format.h"

namespace iomimic::parquet {

class ParquetReader final : public FileReader {
 public:
  // Opens a reader of `path` sharing `format`'s per-pass state of the file;
  // reads the footer when no other reader of the pass did.
  static Result<std::unique_ptr<FileReader>> Open(ParquetFormat& format, const std::string& path,
                                                  const ReaderOptions& options);

  std::uint64_t num_samples() const override;

  // Row `index`: reads its row group's span (with the following row groups
  // of the window) unless a reader of this pass already did. kOutOfRange
  // past the end; kCorruption naming the path and offset for a span past
  // the end of the file or a page that does not decode.
  Result<SampleView> ReadSample(std::uint64_t index) override;

  // For tests: row-group requests this reader issued, and the checksum of
  // the decoded values.
  std::uint64_t group_reads() const { return group_reads_; }
  std::uint64_t decoded_checksum() const { return checksum_; }

 private:
  ParquetReader(ParquetFormat& format, std::string path, const ReaderOptions& options);
  Status EnsureRead(std::size_t group);
  Status ReadGroups(const std::vector<std::size_t>& groups);
  // Without decoding: checks that a page header starts where the footer
  // puts each selected column chunk (a few bytes each, from memory).
  Status CheckGroup(std::size_t group, std::span<const std::byte> bytes);
  Status DecodeGroup(std::size_t group, std::span<const std::byte> bytes);

  ParquetFormat& format_;
  std::string path_;
  Storage* storage_ = nullptr;
  bool decode_ = false;
  std::shared_ptr<FileState> state_;
  std::shared_ptr<const FileLayout> layout_;
  std::unique_ptr<File> file_;
  std::vector<Buffer> buffers_;
  std::vector<std::byte> page_;
  std::uint64_t group_reads_ = 0;
  std::uint64_t checksum_ = 0;
};

}  // namespace iomimic::parquet
