// Reading samples from CSV files the way DLIO's CSVReader does:
// pd.read_csv(path, compression="infer").to_numpy() loads the whole file and
// the sample is row i of the resulting array.
//
// One load: open the file, read it from offset 0 in transfer-size requests
// (default 256 KiB, the chunk pandas' parser reads) until a short read,
// decompress when the file is compressed, parse every row into a table
// (csv_parse.h), close. The compression is recognised from the file's magic
// bytes (iomimic names every file <...>.csv, so the name does not say).
// Zip archives are read as zipfile does: the end record at the tail (with
// the ZIP64 locator probe), the central directory, the local header, then
// the member data in transfer-size requests (the first request, made to
// recognise the format, is reused).
//
// The sample is the row in the dtype pandas infers: int64 (or uint64 when
// needed) for integer files, float64 for float files (float32 and float16
// values read back exactly once converted to their type), bool for True/
// False; so a row of n values is 8n bytes (n for bool), whatever the
// element type the file was written with: the reader cannot know it.
//
// With decoding off the same requests are made and compressed files are
// still decompressed (the row count lives only in the text), but no value is
// parsed or checked: rows are counted and the sample size reported is
// 8 bytes per field of the first row. read_type on_demand loads the whole
// file for every sample (OpenReader performs the first load, which serves
// the first sample); keep_in_memory keeps the table of the first load.

#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "csv_codec.h"
#include "csv_parse.h"
#include "iomimic/buffer.h"
#include "iomimic/format.h"
#include "iomimic/status.h"
#include "iomimic/storage.h"
#include "zip/zip_records.h"

namespace iomimic::csv {

inline constexpr std::uint64_t kDefaultTransferSize = 262144;
inline constexpr std::uint64_t kMaxTransferSize = std::uint64_t{1} << 30;
// Smallest transfer size honoured: the first request must hold a magic number.
inline constexpr std::uint64_t kMinTransferSize = 16;

class CsvReader final : public FileReader {
 public:
  // Opens `path` on options.storage and performs the first load.
  // kCorruption when the file does not parse; never throws.
  static Result<std::unique_ptr<FileReader>> Open(const std::string& path,
                                                  const ReaderOptions& options);

  std::uint64_t num_samples() const override { return table_.rows; }

  // Row `index` (decode) or its size (no decode). kOutOfRange for
  // index >= num_samples().
  Result<SampleView> ReadSample(std::uint64_t index) override;

  // For tests.
  std::uint64_t loads() const { return loads_; }
  Codec codec() const { return codec_; }
  const Table& table() const { return table_; }
  bool has_header() const { return has_header_; }

 private:
  CsvReader(std::string path, const ReaderOptions& options);

  Status Load();
  Status LoadImpl(File& file);
  Status ReadExact(File& file, std::uint64_t offset, std::span<std::byte> out, const char* what);
  // Reads [offset, end) in transfer-size requests (starting with `head`, the
  // bytes already read at `offset`) and passes each piece to `consume`.
  template <typename Fn>
  Status Stream(File& file, std::uint64_t offset, std::uint64_t end,
                std::span<const std::byte> head, Fn&& consume);
  // LoadZip's steps: the end record (ZIP64 applied) of the `size`-byte
  // archive, then its single member's directory entry and local header,
  // with where its stored data begin.
  Result<zip::EndRecord> ReadZipEnd(File& file, std::uint64_t size);
  Result<zip::MemberRecord> ReadZipMember(File& file, std::uint64_t size, const zip::EndRecord& dir,
                                          std::uint64_t* data_begin);
  Status LoadZip(File& file, std::uint64_t size, std::span<const std::byte> head,
                 CsvParser& parser);

  std::string path_;
  Storage* storage_ = nullptr;
  bool decode_ = true;
  bool keep_in_memory_ = false;
  std::uint64_t transfer_ = kDefaultTransferSize;

  Buffer chunk_;
  Table table_;
  Codec codec_ = Codec::kNone;
  bool has_header_ = false;
  bool loaded_ = false;  // table_ holds a complete load
  bool served_ = false;  // a sample was served from the current load
  std::uint64_t loads_ = 0;
  std::vector<std::byte> row_;  // a bool row as bytes
};

}  // namespace iomimic::csv
