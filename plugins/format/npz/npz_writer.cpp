#include "npz_writer.h"

#include <zlib.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <exception>
#include <limits>
#include <new>
#include <utility>
#include <vector>

#include "iomimic/format_helpers.h"
#include "iomimic/guard.h"
#include "npy_header/npy_array.h"
#include "npy_header/npy_header.h"
#include "npz_crc32.h"
#include "zip/deflate_stream.h"

namespace iomimic::npz {
namespace {

// np.savez opens every member with force_zip64=True: each local header
// carries the ZIP64 extra field, whatever the member's size.
constexpr zip::LocalZip64 kNumpyLocalZip64 = zip::LocalZip64::kInclude;

// Largest payload accepted, so that every offset computation stays far from
// 64-bit overflow.
constexpr std::uint64_t kMaxPayloadBytes = numpy::kMaxArrayBytes;
// Smallest write chunk: the first chunk must hold the x local header.
constexpr std::size_t kMinChunkSize = std::size_t{64} << 10;
// Source of zero bytes for the labels.
constexpr std::size_t kZeroBlockSize = std::size_t{64} << 10;
const std::byte kZeroBlock[kZeroBlockSize] = {};

std::span<const std::byte> AsBytes(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

bool IsCompressed(const FileSpec& spec) { return spec.compression == "zip"; }

// The NPY header and sizes of one member.
struct ArrayPlan {
  std::string header;
  std::uint64_t data_bytes = 0;
  std::uint64_t member_size = 0;
};

Result<ArrayPlan> PlanArray(std::string_view descr, std::span<const std::uint64_t> shape,
                            std::uint64_t itemsize) {
  ArrayPlan plan;
  IOMIMIC_ASSIGN_OR_RETURN(plan.header, numpy::EncodeNpyHeader(descr, shape));
  std::uint64_t bytes = itemsize;
  for (std::uint64_t d : shape) {
    if (d != 0 && bytes > kMaxPayloadBytes / d) {
      return Status::InvalidArgument("npz: array of shape too large to write");
    }
    bytes *= d;
  }
  plan.data_bytes = bytes;
  plan.member_size = plan.header.size() + bytes;
  return plan;
}

Result<ArrayPlan> PlanSamples(const FileSpec& spec) {
  std::vector<std::uint64_t> shape = spec.sample_shape;
  shape.push_back(spec.num_samples);
  return PlanArray(spec.element_type.descr, shape, spec.element_type.size);
}

Result<ArrayPlan> PlanLabels(const FileSpec& spec) {
  const std::uint64_t shape[1] = {spec.num_samples};
  return PlanArray(kLabelsDescr, shape, 8);
}

// Where encoded bytes go: a writable window that is never empty, and a
// commit that says how much of it was filled.
class OutputSink {
 public:
  virtual ~OutputSink() = default;
  virtual std::span<std::byte> Writable() = 0;
  virtual Status Commit(std::size_t n) = 0;

  Status Append(std::span<const std::byte> bytes) { return AppendToSink(*this, bytes); }

  Status AppendZeros(std::uint64_t count) {
    while (count > 0) {
      std::span<std::byte> w = Writable();
      const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(w.size(), count));
      std::memset(w.data(), 0, n);
      IOMIMIC_RETURN_IF_ERROR(Commit(n));
      count -= n;
    }
    return Status::OK();
  }
};

// Streams a file through fixed-size chunks written at chunk-aligned offsets.
// Chunk 0 stays in memory until Finish() so that bytes in it can be patched.
class ChunkedFileSink final : public OutputSink {
 public:
  // `first` and `rest` are chunk-sized buffers owned by the caller.
  ChunkedFileSink(File& file, const std::string& path, std::span<std::byte> first,
                  std::span<std::byte> rest)
      : file_(file), path_(path), first_(first), rest_(rest), chunk_(first.size()) {}

  std::span<std::byte> Writable() override {
    return (chunk_index_ == 0 ? first_ : rest_).subspan(fill_);
  }

  Status Commit(std::size_t n) override {
    fill_ += n;
    position_ += n;
    if (fill_ < chunk_) return Status::OK();
    if (chunk_index_ > 0) IOMIMIC_RETURN_IF_ERROR(Write(chunk_index_ * chunk_, rest_));
    ++chunk_index_;
    fill_ = 0;
    return Status::OK();
  }

  // Overwrites already appended bytes; they must lie in the first chunk.
  Status Patch(std::uint64_t offset, std::span<const std::byte> bytes) {
    if (offset + bytes.size() > chunk_ || offset + bytes.size() > position_) {
      return Status::Internal("npz: patch outside the first chunk of " + path_);
    }
    std::memcpy(first_.data() + offset, bytes.data(), bytes.size());
    return Status::OK();
  }

  // Writes what is still in memory: the partial last chunk, then chunk 0.
  Status Finish() {
    if (chunk_index_ > 0 && fill_ > 0) {
      IOMIMIC_RETURN_IF_ERROR(Write(chunk_index_ * chunk_, rest_.first(fill_)));
    }
    const std::size_t first_size = chunk_index_ > 0 ? chunk_ : fill_;
    return Write(0, first_.first(first_size));
  }

  std::uint64_t position() const { return position_; }

 private:
  Status Write(std::uint64_t offset, std::span<const std::byte> bytes) {
    Status s = file_.WriteAt(offset, bytes);
    if (!s.ok()) return s.WithContext("npz: writing " + path_);
    return s;
  }

  File& file_;
  const std::string& path_;
  std::span<std::byte> first_;
  std::span<std::byte> rest_;
  std::size_t chunk_;
  std::uint64_t chunk_index_ = 0;
  std::size_t fill_ = 0;
  std::uint64_t position_ = 0;
};

// Collects output in memory (for the small compressed labels member).
class VectorSink final : public OutputSink {
 public:
  std::span<std::byte> Writable() override {
    if (data_.size() - used_ < kZeroBlockSize) data_.resize(used_ + kZeroBlockSize);
    return std::span<std::byte>(data_).subspan(used_);
  }
  Status Commit(std::size_t n) override {
    used_ += n;
    return Status::OK();
  }
  std::span<const std::byte> bytes() const {
    return std::span<const std::byte>(data_).first(used_);
  }

 private:
  std::vector<std::byte> data_;
  std::size_t used_ = 0;
};

// Raw deflate (no zlib header), as zipfile's ZIP_DEFLATED compressor:
// zlib.compressobj(Z_DEFAULT_COMPRESSION, DEFLATED, -15).
Status InitDeflate(zip::DeflateStream& d) { return d.Init(Z_DEFAULT_COMPRESSION, -15); }

Status WriteNpzFileImpl(Storage& storage, File& file, const FileSpec& spec,
                        const WriterOptions& options) {
  IOMIMIC_RETURN_IF_ERROR(ValidateSpec(spec));
  IOMIMIC_ASSIGN_OR_RETURN(ArrayPlan x_plan, PlanSamples(spec));
  IOMIMIC_ASSIGN_OR_RETURN(ArrayPlan y_plan, PlanLabels(spec));
  const bool deflated = IsCompressed(spec);
  const std::uint16_t method = deflated ? zip::kMethodDeflated : zip::kMethodStored;
  const std::uint64_t limit = options.zip64_limit;

  std::size_t align = storage.capabilities().alignment;
  if (align == 0) align = 1;
  std::size_t chunk = std::max(options.chunk_size, kMinChunkSize);
  chunk = (chunk + align - 1) / align * align;

  // The labels member is small and all zeros: its CRC (and compressed form)
  // are computed first so its local header can be written before its data.
  zip::MemberRecord y;
  y.name = kLabelsMember;
  y.method = method;
  y.uncompressed_size = y_plan.member_size;
  std::uint32_t y_crc = Crc32(0, AsBytes(y_plan.header));
  for (std::uint64_t left = y_plan.data_bytes; left > 0;) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(left, kZeroBlockSize));
    y_crc = Crc32(y_crc, std::span<const std::byte>(kZeroBlock, n));
    left -= n;
  }
  y.crc32 = y_crc;
  VectorSink y_compressed;
  if (deflated) {
    zip::DeflateStream d("npz");
    IOMIMIC_RETURN_IF_ERROR(InitDeflate(d));
    IOMIMIC_RETURN_IF_ERROR(d.Write(AsBytes(y_plan.header), y_compressed));
    for (std::uint64_t left = y_plan.data_bytes; left > 0;) {
      const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(left, kZeroBlockSize));
      IOMIMIC_RETURN_IF_ERROR(d.Write(std::span<const std::byte>(kZeroBlock, n), y_compressed));
      left -= n;
    }
    IOMIMIC_RETURN_IF_ERROR(d.Finish(y_compressed));
    y.compressed_size = y_compressed.bytes().size();
  } else {
    y.compressed_size = y.uncompressed_size;
  }

  IOMIMIC_ASSIGN_OR_RETURN(Buffer first, AllocateHostBuffer(storage, chunk, "npz"));
  IOMIMIC_ASSIGN_OR_RETURN(Buffer rest, AllocateHostBuffer(storage, chunk, "npz"));
  ChunkedFileSink sink(file, spec.path, first.span().first(chunk), rest.span().first(chunk));

  // x: placeholder local header (same size as the final one), then the data.
  zip::MemberRecord x;
  x.name = kSamplesMember;
  x.method = method;
  x.uncompressed_size = x_plan.member_size;
  IOMIMIC_RETURN_IF_ERROR(sink.Append(zip::EncodeLocalHeader(x, kNumpyLocalZip64, limit)));
  const std::uint64_t x_data_offset = sink.position();

  ContentStream content = spec.PayloadContent();
  std::uint32_t crc = Crc32(0, AsBytes(x_plan.header));
  if (!deflated) {
    IOMIMIC_RETURN_IF_ERROR(sink.Append(AsBytes(x_plan.header)));
    for (std::uint64_t left = x_plan.data_bytes; left > 0;) {
      std::span<std::byte> w = sink.Writable();
      const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(w.size(), left));
      content.Fill(w.first(n));
      crc = Crc32(crc, w.first(n));
      IOMIMIC_RETURN_IF_ERROR(sink.Commit(n));
      left -= n;
    }
  } else {
    IOMIMIC_ASSIGN_OR_RETURN(Buffer input, AllocateHostBuffer(storage, chunk, "npz"));
    zip::DeflateStream d("npz");
    IOMIMIC_RETURN_IF_ERROR(InitDeflate(d));
    IOMIMIC_RETURN_IF_ERROR(d.Write(AsBytes(x_plan.header), sink));
    for (std::uint64_t left = x_plan.data_bytes; left > 0;) {
      const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(chunk, left));
      std::span<std::byte> in = input.span().first(n);
      content.Fill(in);
      crc = Crc32(crc, in);
      IOMIMIC_RETURN_IF_ERROR(d.Write(in, sink));
      left -= n;
    }
    IOMIMIC_RETURN_IF_ERROR(d.Finish(sink));
  }
  x.crc32 = crc;
  x.compressed_size = sink.position() - x_data_offset;

  // y: local header and data.
  y.local_header_offset = sink.position();
  IOMIMIC_RETURN_IF_ERROR(sink.Append(zip::EncodeLocalHeader(y, kNumpyLocalZip64, limit)));
  if (deflated) {
    IOMIMIC_RETURN_IF_ERROR(sink.Append(y_compressed.bytes()));
  } else {
    IOMIMIC_RETURN_IF_ERROR(sink.Append(AsBytes(y_plan.header)));
    IOMIMIC_RETURN_IF_ERROR(sink.AppendZeros(y_plan.data_bytes));
  }

  const zip::MemberRecord members[2] = {x, y};
  IOMIMIC_RETURN_IF_ERROR(sink.Append(zip::EncodeDirectoryAndEnd(members, sink.position(), limit)));
  IOMIMIC_RETURN_IF_ERROR(sink.Patch(0, zip::EncodeLocalHeader(x, kNumpyLocalZip64, limit)));
  return sink.Finish();
}

}  // namespace

Status ValidateSpec(const FileSpec& spec) {
  static constexpr std::string_view kCompressions[] = {"none", "zip"};
  return numpy::ValidateArraySpec(spec, {"npz", "x", kCompressions, "npz supports none and zip"});
}

Result<std::uint64_t> ComputeFileSize(const FileSpec& spec, const WriterOptions& options) {
  IOMIMIC_RETURN_IF_ERROR(ValidateSpec(spec));
  if (IsCompressed(spec)) {
    return Status::NotSupported("npz: the size of a compressed (zip) file depends on its content");
  }
  return Guard("npz", "computing the file size", "", [&]() -> Result<std::uint64_t> {
    IOMIMIC_ASSIGN_OR_RETURN(ArrayPlan x_plan, PlanSamples(spec));
    IOMIMIC_ASSIGN_OR_RETURN(ArrayPlan y_plan, PlanLabels(spec));
    zip::MemberRecord members[2];
    members[0].name = kSamplesMember;
    members[0].compressed_size = members[0].uncompressed_size = x_plan.member_size;
    members[1].name = kLabelsMember;
    members[1].compressed_size = members[1].uncompressed_size = y_plan.member_size;
    members[1].local_header_offset =
        zip::LocalHeaderSize(members[0].name.size()) + x_plan.member_size;
    const std::uint64_t directory_offset = members[1].local_header_offset +
                                           zip::LocalHeaderSize(members[1].name.size()) +
                                           y_plan.member_size;
    return directory_offset +
           zip::EncodeDirectoryAndEnd(members, directory_offset, options.zip64_limit).size();
  });
}

Status WriteNpzFile(Storage& storage, File& file, const FileSpec& spec,
                    const WriterOptions& options) {
  return Guard("npz", "writing", spec.path,
               [&]() -> Status { return WriteNpzFileImpl(storage, file, spec, options); });
}

}  // namespace iomimic::npz
