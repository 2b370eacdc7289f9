// The parquet format plugin: Parquet files written like the MLPerf Storage
// DLIO fork's generator (rows = samples, columns from dataset.parquet.columns
// or the fork's default "data" column, row groups of
// dataset.parquet.row_group_size, codecs none/snappy/gzip/lz4/zstd) and read
// like the fork's row-group iterable reader: the footer once per file, then
// one contiguous read per row group spanning the selected columns' chunks,
// several row groups per request batch, no decode unless asked. Every byte
// goes through the Storage and File handed in. See docs/parquet.md.

#pragma once

#include <condition_variable>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "iomimic/format.h"
#include "iomimic/status.h"
#include "iomimic/storage.h"
#include "parquet_meta.h"

namespace iomimic::parquet {

// The plugin's settings, from its options (which the core fills from
// dataset.parquet.* and storage.storage_options.* when the plugin declares
// them, see docs/plugins.md).
struct Settings {
  std::string columns;                  // parquet.columns, the ParseColumns text
  std::uint64_t row_group_size = 1024;  // parquet.row_group_size
  std::string partition_by;             // parquet.partition_by (refused when set)
  bool use_s3dlio_gen = false;          // parquet.use_s3dlio_gen (accepted, ignored)
  std::string read_columns;             // storage_options.columns ("a,b"; empty = from flags)
  std::uint64_t prefetch_window = 8;    // row groups per request batch
  bool decode = false;                  // decompress and walk the selected pages
};

// A file's footer as the reader uses it: the row groups' first rows and the
// byte range of the selected columns in each, shared by every reader of the
// file (one footer read per file and pass, see ParquetFormat::Acquire).
struct FileLayout {
  std::string path;
  std::uint64_t file_size = 0;
  FileMeta meta;
  std::vector<std::uint64_t> first_row;  // per row group, plus the total at the end
  struct Range {
    std::uint64_t offset = 0;
    std::uint64_t length = 0;
  };
  std::vector<Range> ranges;          // per row group: the selected columns' span
  std::vector<std::size_t> selected;  // leaf column indexes read
};

// What the readers of one file share during a pass: the layout, and per row
// group whether it was read and how many of its rows were handed out.
struct FileState {
  std::mutex mu;
  std::condition_variable cv;
  bool loaded = false;
  Status load_status;
  std::shared_ptr<const FileLayout> layout;
  enum class Group : std::uint8_t { kUnread, kReading, kDone };
  std::vector<Group> groups;
  std::vector<std::uint64_t> delivered;  // rows handed out per row group
  std::uint64_t delivered_total = 0;
};

class ParquetFormat final : public Format {
 public:
  explicit ParquetFormat(Settings settings, std::vector<std::string> warnings = {});

  // "parquet".
  std::string name() const override;

  // Extension parquet, multi-sample files read in row order (streamed),
  // no partial reads (a row costs its row group's span), host decoding only
  // when decode is on, sizes exact only without compression.
  FormatTraits traits() const override;

  // kInvalidArgument for a bad column list, zero rows or a zero row group
  // size; kNotSupported for a codec Parquet has no library for here,
  // partition_by.
  Status Validate(const FileSpec& spec) const override;

  // The exact size for codec none; kNotSupported with compression.
  Result<std::uint64_t> ExpectedFileSize(const FileSpec& spec) const override;

  // Writes the file row group by row group, column chunk by column chunk,
  // one data page per at most 1 MiB of values, then the footer.
  Status WriteFile(Storage& storage, File& file, const FileSpec& spec) override;

  // Opens a reader of `path`: the first reader of a file in a pass reads its
  // footer, later ones share it. kCorruption naming the path and offset when
  // the footer does not parse.
  Result<std::unique_ptr<FileReader>> OpenReader(const std::string& path,
                                                 const ReaderOptions& options) override;

  const Settings& settings() const { return settings_; }

  // The state of `path` for this pass (created, footer unread, if needed).
  std::shared_ptr<FileState> Acquire(const std::string& path);
  // Forgets `path`'s state once every row of it was handed out, so the next
  // pass reads its footer again.
  void Release(const std::string& path, const std::shared_ptr<FileState>& state);
  // Loads the layout of `state` through `storage` once (the footer read).
  Status Load(FileState& state, const std::string& path, Storage& storage);

  // For tests: footers read so far.
  std::uint64_t footer_reads() const;

 private:
  const Settings settings_;
  mutable std::mutex warn_mu_;
  mutable bool warned_ = false;
  std::vector<std::string> warnings_;

  mutable std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<FileState>> files_;
  std::list<std::string> order_;  // oldest first, to bound files_
  std::uint64_t footer_reads_ = 0;
};

// Writes `spec`'s file into `file`; with `file` null only computes the size
// (codec none only) into `*size`.
Status WriteParquetFile(Storage* storage, File* file, const FileSpec& spec,
                        const Settings& settings, std::uint64_t* size);

}  // namespace iomimic::parquet
