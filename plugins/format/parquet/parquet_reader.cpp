#include "parquet_reader.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <new>
#include <utility>

#include "iomimic/format_helpers.h"

namespace iomimic::parquet {
namespace {

// Bytes of the row groups one reader claims at once, at most.
constexpr std::uint64_t kBatchBytes = std::uint64_t{64} << 20;

}  // namespace

ParquetReader::ParquetReader(ParquetFormat& format, std::string path, const ReaderOptions& options)
    : format_(format),
      path_(std::move(path)),
      storage_(options.storage),
      decode_(options.decode && format.settings().decode) {}

Result<std::unique_ptr<FileReader>> ParquetReader::Open(ParquetFormat& format,
                                                        const std::string& path,
                                                        const ReaderOptions& options) {
  if (options.storage == nullptr) {
    return Status::InvalidArgument("parquet: ReaderOptions.storage is null");
  }
  try {
    std::unique_ptr<ParquetReader> reader(new ParquetReader(format, path, options));
    reader->state_ = format.Acquire(path);
    if (Status loaded = format.Load(*reader->state_, path, *options.storage); !loaded.ok()) {
      // A failed footer is not kept: the next reader of the path (the file
      // repaired or regenerated) reads it afresh.
      format.Release(path, reader->state_);
      return loaded;
    }
    reader->layout_ = reader->state_->layout;
    return std::unique_ptr<FileReader>(std::move(reader));
  } catch (const std::bad_alloc&) {
    return Status::ResourceExhausted("parquet: out of memory opening " + path);
  } catch (const std::exception& e) {
    return Status::Internal("parquet: opening " + path + ": " + e.what());
  }
}

std::uint64_t ParquetReader::num_samples() const { return layout_->first_row.back(); }

Status ParquetReader::EnsureRead(std::size_t group) {
  FileState& s = *state_;
  std::vector<std::size_t> claimed;
  {
    std::unique_lock<std::mutex> lock(s.mu);
    s.cv.wait(lock, [&] { return s.groups[group] != FileState::Group::kReading; });
    if (s.groups[group] == FileState::Group::kDone) return Status::OK();
    const std::uint64_t window = std::max<std::uint64_t>(1, format_.settings().prefetch_window);
    std::uint64_t bytes = 0;
    for (std::size_t g = group; g < s.groups.size() && claimed.size() < window; ++g) {
      if (s.groups[g] != FileState::Group::kUnread) break;
      const std::uint64_t length = layout_->ranges[g].length;
      if (!claimed.empty() && bytes + length > kBatchBytes) break;
      bytes += length;
      s.groups[g] = FileState::Group::kReading;
      claimed.push_back(g);
    }
  }
  Status status = ReadGroups(claimed);
  {
    std::lock_guard<std::mutex> lock(s.mu);
    for (std::size_t g : claimed) {
      s.groups[g] = status.ok() ? FileState::Group::kDone : FileState::Group::kUnread;
    }
  }
  s.cv.notify_all();
  return status;
}

Status ParquetReader::ReadGroups(const std::vector<std::size_t>& groups) {
  if (file_ == nullptr) {
    IOMIMIC_ASSIGN_OR_RETURN(file_,
                             OpenForReading(*storage_, path_, AccessHint::kRandom, "parquet"));
  }
  if (buffers_.size() < groups.size()) buffers_.resize(groups.size());
  std::vector<ReadRequest> requests(groups.size());
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const FileLayout::Range& r = layout_->ranges[groups[i]];
    if (buffers_[i].size() < r.length) {
      buffers_[i].Reset();
      Result<Buffer> made = storage_->Allocate(static_cast<std::size_t>(r.length));
      if (!made.ok()) {
        return made.status().WithContext("parquet: a buffer for " + path_ + " row group " +
                                         std::to_string(groups[i]));
      }
      buffers_[i] = std::move(made).value();
    }
    requests[i].offset = r.offset;
    requests[i].destination = buffers_[i].span().first(static_cast<std::size_t>(r.length));
  }
  Status batch = file_->ReadBatch(requests);
  group_reads_ += groups.size();
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const FileLayout::Range& r = layout_->ranges[groups[i]];
    if (!requests[i].status.ok()) {
      return requests[i].status.WithContext("parquet: reading row group " +
                                            std::to_string(groups[i]) + " of " + path_ +
                                            " at offset " + std::to_string(r.offset));
    }
    if (requests[i].bytes_read < r.length) {
      return Status::Corruption(
          path_ + ": row group " + std::to_string(groups[i]) + " is cut at offset " +
          std::to_string(r.offset + requests[i].bytes_read) + " (the footer says it ends at " +
          std::to_string(r.offset + r.length) + ")");
    }
    if (!decode_ && buffers_[i].host_accessible()) {
      IOMIMIC_RETURN_IF_ERROR(CheckGroup(groups[i], requests[i].destination));
    }
    if (decode_) {
      if (!buffers_[i].host_accessible()) {
        return Status::NotSupported("parquet: cannot decode " + path_ +
                                    " in device memory (set dataset.options.decode: false)");
      }
      IOMIMIC_RETURN_IF_ERROR(DecodeGroup(groups[i], requests[i].destination));
    }
  }
  return batch;
}

Status ParquetReader::CheckGroup(std::size_t group, std::span<const std::byte> bytes) {
  const FileLayout& l = *layout_;
  const RowGroupMeta& rg = l.meta.row_groups[group];
  const std::uint64_t base = l.ranges[group].offset;
  for (std::size_t c : l.selected) {
    const ChunkMeta& chunk = rg.columns[c];
    const std::uint64_t pos = static_cast<std::uint64_t>(chunk.start()) - base;
    const std::uint64_t size = static_cast<std::uint64_t>(chunk.total_compressed_size);
    if (size == 0) continue;
    PageHeader h;
    std::size_t header_size = 0;
    if (!DecodePageHeader(bytes.subspan(pos, size), &h, &header_size) ||
        (h.type != 0 && h.type != 2 && h.type != 3) || h.compressed_page_size < 0 ||
        header_size + static_cast<std::uint64_t>(h.compressed_page_size) > size) {
      return Status::Corruption(path_ + ": no page header where the footer puts column '" +
                                (chunk.path.empty() ? std::string("?") : chunk.path[0]) +
                                "' of row group " + std::to_string(group) + ", at offset " +
                                std::to_string(base + pos));
    }
  }
  return Status::OK();
}

Status ParquetReader::DecodeGroup(std::size_t group, std::span<const std::byte> bytes) {
  const FileLayout& l = *layout_;
  const RowGroupMeta& rg = l.meta.row_groups[group];
  const std::uint64_t base = l.ranges[group].offset;
  for (std::size_t c : l.selected) {
    const ChunkMeta& chunk = rg.columns[c];
    std::uint64_t pos = static_cast<std::uint64_t>(chunk.start()) - base;
    const std::uint64_t end = pos + static_cast<std::uint64_t>(chunk.total_compressed_size);
    while (pos < end) {
      PageHeader h;
      std::size_t header_size = 0;
      if (!DecodePageHeader(bytes.subspan(pos, end - pos), &h, &header_size) ||
          h.compressed_page_size < 0 || h.uncompressed_page_size < 0 ||
          header_size + static_cast<std::uint64_t>(h.compressed_page_size) > end - pos) {
        return Status::Corruption(path_ + ": a page header of column '" + chunk.path[0] +
                                  "' does not decode at offset " + std::to_string(base + pos));
      }
      std::span<const std::byte> payload =
          bytes.subspan(pos + header_size, static_cast<std::size_t>(h.compressed_page_size));
      page_.resize(static_cast<std::size_t>(h.uncompressed_page_size));
      std::span<std::byte> out(page_);
      Status s;
      if (h.type == 3) {  // DATA_PAGE_V2: levels are never compressed
        const std::size_t levels = static_cast<std::size_t>(std::max(0, h.v2_levels_bytes));
        if (levels > payload.size() || levels > out.size()) {
          s = Status::Corruption("bad level sizes");
        } else {
          std::memcpy(out.data(), payload.data(), levels);
          s = h.v2_compressed
                  ? Decompress(chunk.codec, payload.subspan(levels), out.subspan(levels))
                  : Decompress(Codec::kUncompressed, payload.subspan(levels), out.subspan(levels));
        }
      } else {
        s = Decompress(chunk.codec, payload, out);
      }
      if (!s.ok()) {
        return Status::Corruption(path_ + ": the page of column '" + chunk.path[0] +
                                  "' at offset " + std::to_string(base + pos) + ": " + s.message());
      }
      // Walk the values: fold the page into the checksum 8 bytes at a time.
      std::uint64_t acc = checksum_;
      std::size_t i = 0;
      for (; i + 8 <= out.size(); i += 8) {
        std::uint64_t w;
        std::memcpy(&w, out.data() + i, 8);
        acc = (acc ^ w) * 0x100000001B3ULL;
      }
      for (; i < out.size(); ++i) acc = (acc ^ static_cast<std::uint8_t>(out[i])) * 31;
      checksum_ = acc;
      pos += header_size + static_cast<std::uint64_t>(h.compressed_page_size);
    }
  }
  return Status::OK();
}

Result<SampleView> ParquetReader::ReadSample(std::uint64_t index) {
  try {
    const std::vector<std::uint64_t>& first = layout_->first_row;
    if (index >= first.back()) {
      return SampleIndexOutOfRange(path_, index, first.back(), "the file", "rows");
    }
    const std::size_t group = static_cast<std::size_t>(
        std::upper_bound(first.begin(), first.end(), index) - first.begin() - 1);
    if (Status read = EnsureRead(group); !read.ok()) {
      // Damage found in a row group: forget the file's shared state, so
      // that a later pass over a repaired file starts from its footer.
      format_.Release(path_, state_);
      return read;
    }
    const std::uint64_t rows = first[group + 1] - first[group];
    const std::uint64_t i = index - first[group];
    const std::uint64_t length = layout_->ranges[group].length;
    const std::uint64_t share = (i + 1) * length / rows - i * length / rows;
    bool all = false;
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      ++state_->delivered[group];
      all = ++state_->delivered_total == first.back();
    }
    if (all) format_.Release(path_, state_);
    return SampleView{{}, share};
  } catch (const std::bad_alloc&) {
    return Status::ResourceExhausted("parquet: out of memory reading " + path_);
  } catch (const std::exception& e) {
    return Status::Internal("parquet: reading " + path_ + ": " + e.what());
  }
}

}  // namespace iomimic::parquet
