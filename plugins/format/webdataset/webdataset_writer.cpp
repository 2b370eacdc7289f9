#include "webdataset_writer.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "iomimic/format_helpers.h"
#include "iomimic/guard.h"
#include "iomimic/image_codec.h"
#include "iomimic/npy.h"
#include "iomimic/random.h"
#include "tar_header.h"

namespace iomimic::webdataset {
namespace {

// Smallest write request honoured.
constexpr std::size_t kMinChunkSize = 4096;
// Content is produced in pieces of at most this many bytes.
constexpr std::size_t kFillPiece = std::size_t{1} << 20;
// Digits of a key at least (webdataset keys are usually zero-padded numbers).
constexpr int kKeyDigits = 9;

constexpr HeaderBlock kZeroBlock{};

std::size_t ChunkSize(Storage& storage, std::size_t wanted) {
  std::size_t align = storage.capabilities().alignment;
  if (align == 0) align = 1;
  const std::size_t chunk = std::max(wanted, kMinChunkSize);
  return (chunk + align - 1) / align * align;
}

// Appends `n` zero bytes.
Status AppendZeros(image::ChunkedWriter& out, std::uint64_t n) {
  while (n > 0) {
    const std::size_t piece = static_cast<std::size_t>(std::min<std::uint64_t>(n, kBlockSize));
    IOMIMIC_RETURN_IF_ERROR(out.Append(std::span<const std::byte>(kZeroBlock).first(piece)));
    n -= piece;
  }
  return Status::OK();
}

Status AppendText(image::ChunkedWriter& out, std::string_view text) {
  return out.Append(std::as_bytes(std::span<const char>(text.data(), text.size())));
}

// One member: its header, its data (written by `data`), the padding.
template <typename Data>
Status AppendMember(image::ChunkedWriter& out, const std::string& name, std::uint64_t size,
                    Data&& data) {
  HeaderBlock header;
  EncodeMemberHeader(name, size, kMemberMtime, header);
  IOMIMIC_RETURN_IF_ERROR(out.Append(header));
  IOMIMIC_RETURN_IF_ERROR(data());
  return AppendZeros(out, PaddedToBlock(size) - size);
}

Status WriteShardImpl(Storage& storage, File& file, const FileSpec& spec,
                      const WriterOptions& options) {
  IOMIMIC_ASSIGN_OR_RETURN(const ShardLayout layout, ComputeLayout(spec));
  IOMIMIC_ASSIGN_OR_RETURN(const std::string npy_header,
                           numpy::EncodeNpyHeader(spec.element_type.descr, spec.sample_shape,
                                                  /*fortran_order=*/false));
  const std::size_t chunk = ChunkSize(storage, options.chunk_size);
  IOMIMIC_ASSIGN_OR_RETURN(Buffer buffer, AllocateHostBuffer(storage, chunk, "webdataset"));
  image::ChunkedWriter out(file, spec.path, "webdataset", buffer.span().first(chunk));
  const std::uint64_t sample_bytes = spec.sample_bytes();
  std::vector<std::byte> piece(static_cast<std::size_t>(
      std::min<std::uint64_t>(std::max<std::uint64_t>(sample_bytes, 1), kFillPiece)));
  ContentStream content = spec.PayloadContent();  // the samples' bytes back to back
  for (std::uint64_t i = 0; i < spec.num_samples; ++i) {
    const std::string key = SampleKey(spec, i);
    const std::string label = std::to_string(MixSeed(spec.seed, i) % options.label_classes);
    IOMIMIC_RETURN_IF_ERROR(AppendMember(out, key + "." + kLabelExtension, label.size(),
                                         [&] { return AppendText(out, label); }));
    IOMIMIC_RETURN_IF_ERROR(
        AppendMember(out, key + "." + kPayloadExtension, layout.npy_member, [&]() -> Status {
          IOMIMIC_RETURN_IF_ERROR(AppendText(out, npy_header));
          for (std::uint64_t left = sample_bytes; left > 0;) {
            const std::size_t n =
                static_cast<std::size_t>(std::min<std::uint64_t>(left, piece.size()));
            content.Fill(std::span<std::byte>(piece).first(n));
            IOMIMIC_RETURN_IF_ERROR(out.Append(std::span<const std::byte>(piece).first(n)));
            left -= n;
          }
          return Status::OK();
        }));
  }
  // The end-of-archive blocks and the record padding are all zeros.
  IOMIMIC_RETURN_IF_ERROR(AppendZeros(out, layout.file_size - out.size()));
  return out.Finish();
}

}  // namespace

Status ValidateSpec(const FileSpec& spec) {
  if (spec.sample_shape.empty()) {
    return Status::InvalidArgument("webdataset: sample_shape is empty");
  }
  if (spec.element_type.size == 0) {
    return Status::InvalidArgument("webdataset: element type '" + spec.element_type.name +
                                   "' has size 0");
  }
  std::uint64_t bytes = spec.element_type.size;
  for (std::uint64_t d : spec.sample_shape) {
    if (d == 0) return Status::InvalidArgument("webdataset: sample_shape has a zero dimension");
    if (bytes > kMaxMemberSize / d) {
      return Status::InvalidArgument(
          "webdataset: a sample of 8 GiB or more does not fit a tar member's 11-digit size");
    }
    bytes *= d;
  }
  if (spec.num_samples == 0) {
    return Status::InvalidArgument("webdataset: num_samples must be at least 1");
  }
  if (spec.compression != "none" && !spec.compression.empty()) {
    return Status::NotSupported("webdataset: compression '" + spec.compression +
                                "' is not supported (shards are plain .tar files; set "
                                "compression: none)");
  }
  Result<std::size_t> header = numpy::NpyHeaderSize(spec.element_type.descr, spec.sample_shape);
  if (!header.ok()) return header.status().WithContext("webdataset: the .npy header");
  if (bytes + *header > kMaxMemberSize) {
    return Status::InvalidArgument("webdataset: a .npy member of " +
                                   std::to_string(bytes + *header) +
                                   " bytes does not fit a tar member's 11-digit size");
  }
  const std::uint64_t stride = 3 * kBlockSize + PaddedToBlock(bytes + *header);
  if (spec.num_samples > ((std::uint64_t{1} << 62) / stride)) {
    return Status::InvalidArgument("webdataset: file too large (num_samples * sample size)");
  }
  return Status::OK();
}

Result<ShardLayout> ComputeLayout(const FileSpec& spec) {
  IOMIMIC_RETURN_IF_ERROR(ValidateSpec(spec));
  ShardLayout layout;
  IOMIMIC_ASSIGN_OR_RETURN(const std::size_t header,
                           numpy::NpyHeaderSize(spec.element_type.descr, spec.sample_shape));
  layout.npy_header = header;
  layout.npy_member = header + spec.sample_bytes();
  // The .cls header and its one block of text, the .npy header and data.
  layout.stride = 3 * kBlockSize + PaddedToBlock(layout.npy_member);
  layout.archive = spec.num_samples * layout.stride + kEndOfArchiveSize;
  layout.file_size = (layout.archive + kRecordSize - 1) / kRecordSize * kRecordSize;
  return layout;
}

std::string SampleKey(const FileSpec& spec, std::uint64_t sample) {
  char text[32];
  std::snprintf(text, sizeof(text), "%0*llu", kKeyDigits,
                static_cast<unsigned long long>(spec.file_index * spec.num_samples + sample));
  return text;
}

Status WriteShard(Storage& storage, File& file, const FileSpec& spec,
                  const WriterOptions& options) {
  return Guard("webdataset", "writing", spec.path,
               [&]() -> Status { return WriteShardImpl(storage, file, spec, options); });
}

}  // namespace iomimic::webdataset
