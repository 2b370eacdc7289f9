#include "mds_reader.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "iomimic/format_helpers.h"

#if IOMIMIC_MDS_ZSTD
#include <zstd.h>
#endif

namespace iomimic::mds {
namespace {

std::uint64_t LoadLe32(const std::byte* p) {
  std::uint64_t v = 0;
  for (int i = 0; i < 4; ++i) v |= std::to_integer<std::uint64_t>(p[i]) << (8 * i);
  return v;
}

}  // namespace

MdsReader::MdsReader(std::string path, const ReaderOptions& options,
                     std::shared_ptr<const ShardInfo> info)
    : path_(std::move(path)),
      storage_(options.storage),
      transfer_(options.transfer_size),
      info_(std::move(info)) {}

MdsReader::~MdsReader() = default;

Result<std::unique_ptr<FileReader>> MdsReader::Open(const std::string& path,
                                                    const ReaderOptions& options,
                                                    std::shared_ptr<const ShardInfo> info) {
  return OpenReaderGuarded("mds", path, options, [&]() -> Result<std::unique_ptr<FileReader>> {
    std::unique_ptr<MdsReader> reader(new MdsReader(path, options, std::move(info)));
    IOMIMIC_RETURN_IF_ERROR(reader->Init());
    return std::unique_ptr<FileReader>(std::move(reader));
  });
}

Status MdsReader::Corrupt(const std::string& what, std::uint64_t offset) const {
  return Status::Corruption(path_ + ": " + what + " at offset " + std::to_string(offset));
}

Status MdsReader::Init() {
  IOMIMIC_ASSIGN_OR_RETURN(
      file_,
      OpenForReading(*storage_, path_,
                     info_->compressed ? AccessHint::kWholeFile : AccessHint::kRandom, "mds"));
  Result<std::uint64_t> size = file_->Size();
  if (!size.ok()) return size.status().WithContext("mds: size of " + path_);
  const std::uint64_t want = info_->compressed ? info_->zip_bytes : info_->raw_bytes;
  if (*size != want) {
    return Status::Corruption(path_ + ": the shard ends at offset " + std::to_string(*size) +
                              " but its index " + info_->index_path + " says " +
                              std::string(info_->compressed ? "zip_data" : "raw_data") + " holds " +
                              std::to_string(want) + " bytes");
  }
  if (info_->compressed) {
    IOMIMIC_RETURN_IF_ERROR(LoadCompressed());
    return CheckCount(image_.size() >= 4 ? LoadLe32(image_.data()) : 0);
  }
  IOMIMIC_ASSIGN_OR_RETURN(pair_, AllocateHostBuffer(*storage_, 8, "mds"));
  if (info_->count_checked->load(std::memory_order_acquire)) return Status::OK();
  // Once per shard and run: its own count against its index's (the
  // library trusts the index; a reader of a shard it did not write checks).
  Result<std::size_t> got = file_->ReadAt(0, pair_.span().first(4));
  if (!got.ok()) return got.status().WithContext("mds: reading " + path_);
  return CheckCount(*got == 4 ? LoadLe32(pair_.data()) : 0);
}

Status MdsReader::CheckCount(std::uint64_t count) {
  if (count != info_->samples) {
    return Corrupt("the shard counts " + std::to_string(count) + " samples but its index " +
                       info_->index_path + " says " + std::to_string(info_->samples) + ";",
                   0);
  }
  info_->count_checked->store(true, std::memory_order_release);
  return Status::OK();
}

Status MdsReader::LoadCompressed() {
#if IOMIMIC_MDS_ZSTD
  const std::uint64_t size = info_->zip_bytes;
  if (size > SIZE_MAX / 2) return Status::ResourceExhausted(path_ + ": shard too large to load");
  IOMIMIC_ASSIGN_OR_RETURN(Buffer zipped,
                           AllocateHostBuffer(*storage_, static_cast<std::size_t>(size), "mds"));
  const std::uint64_t step = transfer_ == 0 ? std::max<std::uint64_t>(size, 1) : transfer_;
  for (std::uint64_t at = 0; at < size;) {
    const std::size_t n = static_cast<std::size_t>(std::min(step, size - at));
    Result<std::size_t> got =
        file_->ReadAt(at, zipped.span().subspan(static_cast<std::size_t>(at), n));
    if (!got.ok()) return got.status().WithContext("mds: reading " + path_);
    if (*got == 0) return Corrupt("the zstd shard ends early", at);
    at += *got;
  }
  const unsigned long long content = ZSTD_getFrameContentSize(zipped.data(), size);
  if (content == ZSTD_CONTENTSIZE_ERROR || content == ZSTD_CONTENTSIZE_UNKNOWN) {
    return Corrupt("not a zstd frame with its content size", 0);
  }
  if (content != info_->raw_bytes) {
    return Corrupt("the zstd frame holds " + std::to_string(content) + " bytes but the index " +
                       info_->index_path + " says raw_data holds " +
                       std::to_string(info_->raw_bytes) + ";",
                   0);
  }
  image_.resize(static_cast<std::size_t>(content));
  const std::size_t rc = ZSTD_decompress(image_.data(), image_.size(), zipped.data(), size);
  if (ZSTD_isError(rc) || rc != image_.size()) {
    return Corrupt(std::string("the zstd frame does not decompress (") +
                       (ZSTD_isError(rc) ? ZSTD_getErrorName(rc) : "short") + ")",
                   0);
  }
  return Status::OK();
#else
  return Status::NotSupported("mds: " + path_ + " is a zstd shard and this build lacks libzstd");
#endif
}

Result<ByteRange> MdsReader::Offsets(std::uint64_t index) {
  const std::uint64_t n = info_->samples;
  const std::uint64_t size = info_->raw_bytes;
  const std::uint64_t at = 4 + 4 * index;
  std::byte pair[8];
  if (info_->compressed) {
    if (at + 8 > image_.size()) return Corrupt("the offsets table is cut", at);
    std::memcpy(pair, image_.data() + at, 8);
  } else {
    Result<std::size_t> got = file_->ReadAt(at, pair_.span().first(8));
    if (!got.ok()) return got.status().WithContext("mds: reading " + path_);
    if (*got < 8) return Corrupt("the offsets of sample " + std::to_string(index) + " are cut", at);
    std::memcpy(pair, pair_.data(), 8);
  }
  const std::uint64_t begin = LoadLe32(pair);
  const std::uint64_t end = LoadLe32(pair + 4);
  const std::uint64_t table_end = 4 + 4 * (n + 1);
  const std::string which = "the offsets of sample " + std::to_string(index) + " [" +
                            std::to_string(begin) + ", " + std::to_string(end) + ")";
  const std::string shard = " the " + std::to_string(size) + "-byte shard of " + std::to_string(n) +
                            " samples its index " + info_->index_path + " describes;";
  if (begin < table_end || begin > size) return Corrupt(which + " begin outside" + shard, at);
  if (end < begin || end > size) return Corrupt(which + " end outside" + shard, at + 4);
  const std::uint64_t bytes = end - begin;
  if ((info_->sample_bytes != 0 && bytes != info_->sample_bytes) || bytes < info_->sample_head) {
    return Corrupt(which + " hold " + std::to_string(bytes) +
                       " bytes but the columns of its index " + info_->index_path + " make " +
                       std::to_string(info_->sample_bytes) + ";",
                   at);
  }
  return ByteRange{begin, bytes};
}

Result<SampleView> MdsReader::ReadSample(std::uint64_t index) {
  return ReadSampleGuarded(
      "mds", path_,
      [&]() -> Result<SampleView> {
        if (index >= info_->samples) {
          return SampleIndexOutOfRange(path_, index, info_->samples, "the index");
        }
        IOMIMIC_ASSIGN_OR_RETURN(const ByteRange range, Offsets(index));
        const std::size_t head = static_cast<std::size_t>(info_->sample_head);
        const std::size_t bytes = static_cast<std::size_t>(range.length);
        if (info_->compressed) {
          return SampleView{
              std::span<const std::byte>(
                  image_.data() + static_cast<std::size_t>(range.offset) + head, bytes - head),
              bytes - head};
        }
        if (sample_.size() < bytes) {
          sample_.Reset();
          IOMIMIC_ASSIGN_OR_RETURN(sample_, storage_->Allocate(std::max<std::size_t>(bytes, 1)));
        }
        Result<std::size_t> got = file_->ReadAt(range.offset, sample_.span().first(bytes));
        if (!got.ok()) return got.status().WithContext("mds: reading " + path_);
        if (*got < bytes) {
          return Corrupt("sample " + std::to_string(index) + " is cut after " +
                             std::to_string(*got) + " of its " + std::to_string(bytes) + " bytes",
                         range.offset);
        }
        return SampleView{sample_.span().subspan(head, bytes - head), bytes - head};
      },
      [] {});
}

Result<std::vector<ByteRange>> MdsReader::SampleRanges(std::uint64_t index) {
  if (info_->compressed) {
    return Status::NotSupported("mds: " + path_ + " is compressed: its samples are not ranges");
  }
  if (index >= info_->samples) {
    return SampleIndexOutOfRange(path_, index, info_->samples, "the index");
  }
  IOMIMIC_ASSIGN_OR_RETURN(const ByteRange range, Offsets(index));
  return std::vector<ByteRange>{range};
}

}  // namespace iomimic::mds
