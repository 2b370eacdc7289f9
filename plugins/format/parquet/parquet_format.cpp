#include "parquet_format.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <set>
#include <utility>

#include "iomimic/format_helpers.h"
#include "iomimic/plugin.h"
#include "parquet_reader.h"

namespace iomimic::parquet {
namespace {

// The tail read first: pyarrow's default footer read-ahead.
constexpr std::uint64_t kTailBytes = 64 * 1024;
// Files whose state is kept at most (older ones are forgotten first).
constexpr std::size_t kMaxFiles = 4096;

std::uint32_t LoadLe32(const std::byte* p) {
  return static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
         (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
}

std::vector<std::string> SplitNames(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t at = text.find(',', start);
    if (at == std::string::npos) at = text.size();
    std::string name = text.substr(start, at - start);
    const auto not_space = [](unsigned char ch) { return ch != ' ' && ch != '[' && ch != ']'; };
    name.erase(name.begin(), std::find_if(name.begin(), name.end(), not_space));
    name.erase(std::find_if(name.rbegin(), name.rend(), not_space).base(), name.end());
    if (!name.empty()) out.push_back(name);
    start = at + 1;
  }
  return out;
}

// The column names to read: storage_options.columns, else the columns
// flagged read: true, else none (= all).
std::vector<std::string> SelectedNames(const Settings& settings) {
  if (!settings.read_columns.empty()) return SplitNames(settings.read_columns);
  std::vector<std::string> names;
  Result<std::vector<Column>> columns = ParseColumns(settings.columns, 1, nullptr);
  if (columns.ok() && !settings.columns.empty()) {
    for (const Column& c : *columns) {
      if (c.read) names.push_back(c.name);
    }
  }
  return names;
}

// The footer of a `size`-byte file (at least 12 bytes): the bytes read from
// its tail, then what the tail lacked of a larger footer (one more request),
// as pyarrow reads them.
struct Footer {
  std::vector<std::byte> bytes;  // ends with the footer, its length and PAR1
  std::uint64_t offset = 0;      // where the footer starts in the file
  std::uint64_t length = 0;

  std::span<const std::byte> span() const {
    return std::span<const std::byte>(bytes.data() + bytes.size() - 8 - length,
                                      static_cast<std::size_t>(length));
  }
};

Result<Footer> ReadFooter(File& file, const std::string& path, std::uint64_t size) {
  Footer footer;
  const std::uint64_t tail = std::min(size, kTailBytes);
  std::vector<std::byte>& bytes = footer.bytes;
  bytes.resize(static_cast<std::size_t>(tail));
  Buffer buffer = Buffer::AllocateHost(static_cast<std::size_t>(tail), 4096);
  if (buffer.empty()) return Status::ResourceExhausted("parquet: cannot allocate a footer buffer");
  Result<std::size_t> n = file.ReadAt(size - tail, buffer.span().first(bytes.size()));
  if (!n.ok()) return n.status().WithContext("parquet: reading the footer of " + path);
  if (*n < tail) {
    return Status::Corruption(path + ": the footer read stopped at offset " +
                              std::to_string(size - tail + *n));
  }
  std::memcpy(bytes.data(), buffer.data(), bytes.size());
  const std::byte* end = bytes.data() + bytes.size();
  if (std::memcmp(end - 4, kMagic, 4) != 0) {
    return Status::Corruption(path + ": no PAR1 magic at offset " + std::to_string(size - 4));
  }
  const std::uint64_t footer_length = LoadLe32(end - 8);
  if (footer_length + 12 > size) {
    return Status::Corruption(path + ": footer length " + std::to_string(footer_length) +
                              " at offset " + std::to_string(size - 8) + " exceeds the file");
  }
  footer.length = footer_length;
  footer.offset = size - 8 - footer_length;
  if (footer_length + 8 > tail) {
    // A footer larger than the tail: one more request for the rest.
    const std::uint64_t missing = footer_length + 8 - tail;
    Buffer more = Buffer::AllocateHost(static_cast<std::size_t>(missing), 4096);
    if (more.empty()) return Status::ResourceExhausted("parquet: cannot allocate a footer buffer");
    Result<std::size_t> m = file.ReadAt(footer.offset, more.span().first(missing));
    if (!m.ok()) return m.status().WithContext("parquet: reading the footer of " + path);
    if (*m < missing) {
      return Status::Corruption(path + ": the footer read stopped at offset " +
                                std::to_string(footer.offset + *m));
    }
    bytes.insert(bytes.begin(), more.data(), more.data() + missing);
  }
  return footer;
}

// The leaf columns of layout->meta whose top-level name is `wanted` (all
// when empty) into layout->selected; kInvalidArgument for a wanted column
// the file lacks.
Status SelectColumns(const std::vector<std::string>& wanted, FileLayout* layout,
                     std::uint64_t footer_offset) {
  const FileMeta& m = layout->meta;
  if (m.row_groups.empty()) return Status::OK();
  const std::vector<ChunkMeta>& cols = m.row_groups[0].columns;
  for (std::size_t i = 0; i < cols.size(); ++i) {
    const std::string top = cols[i].path.empty() ? std::string() : cols[i].path[0];
    if (wanted.empty() || std::find(wanted.begin(), wanted.end(), top) != wanted.end()) {
      layout->selected.push_back(i);
    }
  }
  for (const std::string& w : wanted) {
    const bool found = std::any_of(cols.begin(), cols.end(), [&](const ChunkMeta& c) {
      return !c.path.empty() && c.path[0] == w;
    });
    if (!found) {
      return Status::InvalidArgument(layout->path + ": the selected column '" + w +
                                     "' is not in the file (footer at offset " +
                                     std::to_string(footer_offset) + ")");
    }
  }
  return Status::OK();
}

// The first row of every row group and the byte range its selected column
// chunks span, into layout; kCorruption when a row group does not fit.
Status PlanRowGroups(FileLayout* layout, std::uint64_t footer_offset) {
  const FileMeta& m = layout->meta;
  const std::string& path = layout->path;
  layout->first_row.push_back(0);
  for (std::size_t g = 0; g < m.row_groups.size(); ++g) {
    const RowGroupMeta& rg = m.row_groups[g];
    if (rg.num_rows < 0 || rg.columns.size() != m.row_groups[0].columns.size()) {
      return Status::Corruption(path + ": row group " + std::to_string(g) +
                                " of the footer at offset " + std::to_string(footer_offset) +
                                " is inconsistent");
    }
    layout->first_row.push_back(layout->first_row.back() + static_cast<std::uint64_t>(rg.num_rows));
    std::uint64_t begin = UINT64_MAX, finish = 0;
    for (std::size_t c : layout->selected) {
      const ChunkMeta& chunk = rg.columns[c];
      const std::int64_t start = chunk.start();
      if (start < 4 || chunk.total_compressed_size < 0 ||
          static_cast<std::uint64_t>(start + chunk.total_compressed_size) > footer_offset) {
        return Status::Corruption(
            path + ": column chunk '" + (chunk.path.empty() ? "?" : chunk.path[0]) +
            "' of row group " + std::to_string(g) + " at offset " + std::to_string(start) +
            " lies outside the data (footer at offset " + std::to_string(footer_offset) + ")");
      }
      begin = std::min<std::uint64_t>(begin, static_cast<std::uint64_t>(start));
      finish = std::max<std::uint64_t>(
          finish, static_cast<std::uint64_t>(start + chunk.total_compressed_size));
    }
    layout->ranges.push_back(begin <= finish ? FileLayout::Range{begin, finish - begin}
                                             : FileLayout::Range{});
  }
  return Status::OK();
}

}  // namespace

ParquetFormat::ParquetFormat(Settings settings, std::vector<std::string> warnings)
    : settings_(std::move(settings)), warnings_(std::move(warnings)) {}

std::string ParquetFormat::name() const { return "parquet"; }

FormatTraits ParquetFormat::traits() const {
  FormatTraits t;
  t.extension = "parquet";
  t.multi_sample_files = true;
  t.partial_reads = false;
  t.needs_host_decode = settings_.decode;
  // Exact for codec none only: compressed sizes depend on the content.
  t.predictable_size = false;
  t.streamed = true;
  return t;
}

Status ParquetFormat::Validate(const FileSpec& spec) const {
  if (spec.num_samples == 0)
    return Status::InvalidArgument("parquet: a file needs at least one row");
  IOMIMIC_RETURN_IF_ERROR(CodecFromName(spec.compression).status());
  if (!settings_.partition_by.empty()) {
    return Status::NotSupported(
        "parquet: dataset.parquet.partition_by ('" + settings_.partition_by +
        "') writes a Hive-partitioned folder per file in the fork; iomimic does not support it");
  }
  auto it = spec.parameters.find("parquet.row_group_size");
  if (it != spec.parameters.end() && it->second == "0") {
    return Status::InvalidArgument("parquet: dataset.parquet.row_group_size must be positive");
  }
  auto cols = spec.parameters.find("parquet.columns");
  const std::string& text = cols != spec.parameters.end() ? cols->second : settings_.columns;
  IOMIMIC_ASSIGN_OR_RETURN(std::vector<Column> columns,
                           ParseColumns(text, spec.sample_bytes(), nullptr));
  std::set<std::string> names;
  for (const Column& c : columns) names.insert(c.name);
  // Without a column list the files may come from elsewhere (the readers
  // check the names against each footer).
  for (const std::string& n :
       text.empty() ? std::vector<std::string>() : SelectedNames(settings_)) {
    if (names.count(n) == 0) {
      return Status::InvalidArgument("parquet: storage.storage_options.columns names '" + n +
                                     "', which is not a column of the dataset");
    }
  }
  std::lock_guard<std::mutex> lock(warn_mu_);
  if (!warned_) {
    warned_ = true;
    for (const std::string& w : warnings_) std::fprintf(stderr, "warning: %s\n", w.c_str());
  }
  return Status::OK();
}

Result<std::uint64_t> ParquetFormat::ExpectedFileSize(const FileSpec& spec) const {
  std::uint64_t size = 0;
  IOMIMIC_RETURN_IF_ERROR(WriteParquetFile(nullptr, nullptr, spec, settings_, &size));
  return size;
}

Status ParquetFormat::WriteFile(Storage& storage, File& file, const FileSpec& spec) {
  try {
    return WriteParquetFile(&storage, &file, spec, settings_, nullptr);
  } catch (const std::bad_alloc&) {
    return Status::ResourceExhausted("parquet: out of memory writing " + spec.path);
  } catch (const std::exception& e) {
    return Status::Internal("parquet: writing " + spec.path + ": " + e.what());
  }
}

Result<std::unique_ptr<FileReader>> ParquetFormat::OpenReader(const std::string& path,
                                                              const ReaderOptions& options) {
  return ParquetReader::Open(*this, path, options);
}

std::shared_ptr<FileState> ParquetFormat::Acquire(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = files_.find(path);
  if (it != files_.end()) return it->second;
  auto state = std::make_shared<FileState>();
  files_.emplace(path, state);
  order_.push_back(path);
  while (order_.size() > kMaxFiles) {
    files_.erase(order_.front());
    order_.pop_front();
  }
  return state;
}

void ParquetFormat::Release(const std::string& path, const std::shared_ptr<FileState>& state) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = files_.find(path);
  if (it == files_.end() || it->second != state) return;
  files_.erase(it);
  auto pos = std::find(order_.begin(), order_.end(), path);
  if (pos != order_.end()) order_.erase(pos);
}

std::uint64_t ParquetFormat::footer_reads() const {
  std::lock_guard<std::mutex> lock(mu_);
  return footer_reads_;
}

Status ParquetFormat::Load(FileState& state, const std::string& path, Storage& storage) {
  std::lock_guard<std::mutex> lock(state.mu);
  if (state.loaded) return state.load_status;
  state.loaded = true;
  auto fail = [&](Status s) {
    state.load_status = s;
    return s;
  };
  {
    std::lock_guard<std::mutex> count(mu_);
    ++footer_reads_;
  }
  Result<std::unique_ptr<File>> opened =
      OpenForReading(storage, path, AccessHint::kNormal, "parquet");
  if (!opened.ok()) return fail(opened.status());
  File& file = **opened;
  Result<std::uint64_t> size = file.Size();
  if (!size.ok()) return fail(size.status().WithContext("parquet: size of " + path));
  if (*size < 12) {
    return fail(Status::Corruption(path + ": " + std::to_string(*size) +
                                   " bytes is too small for a Parquet file at offset 0"));
  }
  auto layout = std::make_shared<FileLayout>();
  layout->path = path;
  layout->file_size = *size;
  Result<Footer> footer = ReadFooter(file, path, *size);
  if (!footer.ok()) return fail(footer.status());
  (void)file.Close();
  Result<FileMeta> meta = DecodeFileMeta(footer->span(), path, footer->offset);
  if (!meta.ok()) return fail(meta.status());
  layout->meta = std::move(meta).value();
  Status planned = SelectColumns(SelectedNames(settings_), layout.get(), footer->offset);
  if (planned.ok()) planned = PlanRowGroups(layout.get(), footer->offset);
  if (!planned.ok()) return fail(planned);
  state.groups.assign(layout->meta.row_groups.size(), FileState::Group::kUnread);
  state.delivered.assign(layout->meta.row_groups.size(), 0);
  state.layout = std::move(layout);
  state.load_status = Status::OK();
  return Status::OK();
}

namespace {

const IomimicOptionSpec kOptions[] = {
    {"parquet.columns", "string", "",
     "dataset.parquet.columns as name:dtype:size:read entries separated by ';' (the core fills it "
     "from the manifest)"},
    {"parquet.row_group_size", "int", "1024",
     "rows per row group (dataset.parquet.row_group_size)"},
    {"parquet.read_mode", "string", "row_group",
     "dataset.parquet.read_mode; the fork ignores it, so does iomimic"},
    {"parquet.partition_by", "string", "", "dataset.parquet.partition_by (refused when set)"},
    {"parquet.generation_batch_size", "int", "0",
     "rows per write call in the fork; iomimic writes in 4 MiB requests, the bytes are the same"},
    {"parquet.use_s3dlio_gen", "bool", "false",
     "the fork's object-storage generator switch; ignored: files go through the storage back end "
     "in use, on a file system as on S3, as the fork does on a file system"},
    {"storage_options.columns", "string", "",
     "columns to read (names separated by ','); default: the read: true columns, else all"},
    {"storage_options.prefetch_window", "int", "64",
     "row groups a reader claims and requests in one batch (capped at 64 MiB)"},
    {"storage_options.prefetch_workers", "int", "64",
     "the fork's read threads per worker; iomimic's concurrency is reader.read_threads"},
    {"decode", "bool", "false", "decompress and walk the selected columns' pages"},
    {nullptr, nullptr, nullptr, nullptr},
};

Result<std::unique_ptr<Format>> MakeFormat(const PluginContext& context) {
  const PluginOptions& o = context.options;
  Settings s;
  IOMIMIC_ASSIGN_OR_RETURN(s.columns, o.GetString("parquet.columns", ""));
  IOMIMIC_ASSIGN_OR_RETURN(std::int64_t rows, o.GetInt("parquet.row_group_size", 1024));
  if (rows <= 0) {
    return Status::InvalidArgument("parquet: dataset.parquet.row_group_size must be positive");
  }
  s.row_group_size = static_cast<std::uint64_t>(rows);
  IOMIMIC_ASSIGN_OR_RETURN(s.partition_by, o.GetString("parquet.partition_by", ""));
  IOMIMIC_ASSIGN_OR_RETURN(s.use_s3dlio_gen, o.GetBool("parquet.use_s3dlio_gen", false));
  IOMIMIC_ASSIGN_OR_RETURN(s.read_columns, o.GetString("storage_options.columns", ""));
  IOMIMIC_ASSIGN_OR_RETURN(std::int64_t window, o.GetInt("storage_options.prefetch_window", 64));
  s.prefetch_window = static_cast<std::uint64_t>(std::max<std::int64_t>(1, window));
  IOMIMIC_ASSIGN_OR_RETURN(s.decode, o.GetBool("decode", false));
  std::vector<std::string> warnings;
  IOMIMIC_ASSIGN_OR_RETURN(std::vector<Column> columns, ParseColumns(s.columns, 1, &warnings));
  if (!s.columns.empty() && s.read_columns.empty()) {
    std::size_t flagged = 0;
    for (const Column& c : columns) flagged += c.read ? 1 : 0;
    if (flagged > 0) {
      warnings.push_back("parquet: reading the " + std::to_string(flagged) + " of " +
                         std::to_string(columns.size()) +
                         " columns flagged read: true in dataset.parquet.columns; MLPerf's DLIO "
                         "fork ignores these flags and reads every column unless "
                         "storage.storage_options.columns is set");
    }
  }
  if (context.rank != 0) warnings.clear();
  return std::unique_ptr<Format>(
      std::make_unique<ParquetFormat>(std::move(s), std::move(warnings)));
}

}  // namespace

}  // namespace iomimic::parquet

IOMIMIC_DEFINE_FORMAT_PLUGIN(
    "parquet", "1.0.0",
    "Parquet files (typed columns, row groups, none/snappy/gzip/lz4/zstd) as MLPerf Storage's DLIO "
    "fork writes them; read like its row-group iterable reader: footer once per file, one "
    "contiguous read per row group over the selected columns, no decode unless asked",
    IOMIMIC_CAP_MULTI_SAMPLE, iomimic::parquet::kOptions, &iomimic::parquet::MakeFormat);
