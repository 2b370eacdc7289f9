#include "mds_writer.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <vector>

#include "iomimic/format_helpers.h"
#include "iomimic/guard.h"
#include "iomimic/image_codec.h"
#include "iomimic/random.h"

#if IOMIMIC_MDS_ZSTD
#include <zstd.h>
#endif

namespace iomimic::mds {
namespace {

constexpr std::size_t kMinChunkSize = 4096;
// Offsets and content are produced in pieces of at most this many bytes.
constexpr std::size_t kPiece = std::size_t{1} << 20;

std::size_t ChunkSize(Storage& storage, std::size_t wanted) {
  std::size_t align = storage.capabilities().alignment;
  if (align == 0) align = 1;
  const std::size_t chunk = std::max(wanted, kMinChunkSize);
  return (chunk + align - 1) / align * align;
}

void StoreLe32(std::uint32_t v, std::byte* out) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<std::byte>((v >> (8 * i)) & 0xFF);
}

// The uncompressed shard of `spec`, handed to sink.Append(span) piece by
// piece: count, offsets, config, samples.
template <typename Sink>
Status EmitRawShard(const FileSpec& spec, const ShardPlan& plan, Sink& sink) {
  std::vector<std::byte> piece(kPiece);
  std::array<std::byte, 4> count;
  StoreLe32(static_cast<std::uint32_t>(spec.num_samples), count.data());
  IOMIMIC_RETURN_IF_ERROR(sink.Append(count));
  const std::uint64_t offsets = spec.num_samples + 1;
  for (std::uint64_t i = 0; i < offsets;) {
    const std::uint64_t n = std::min<std::uint64_t>(offsets - i, kPiece / 4);
    for (std::uint64_t k = 0; k < n; ++k) {
      StoreLe32(static_cast<std::uint32_t>(plan.header_bytes + (i + k) * plan.sample_bytes),
                piece.data() + 4 * k);
    }
    IOMIMIC_RETURN_IF_ERROR(sink.Append(std::span<const std::byte>(piece).first(4 * n)));
    i += n;
  }
  IOMIMIC_RETURN_IF_ERROR(
      sink.Append(std::as_bytes(std::span<const char>(plan.config.data(), plan.config.size()))));
  ContentStream content = spec.PayloadContent();  // the samples' values back to back
  for (std::uint64_t left = spec.num_samples * plan.sample_bytes; left > 0;) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(left, piece.size()));
    content.Fill(std::span<std::byte>(piece).first(n));
    IOMIMIC_RETURN_IF_ERROR(sink.Append(std::span<const std::byte>(piece).first(n)));
    left -= n;
  }
  return Status::OK();
}

// Bytes straight into the file.
struct PlainSink {
  image::ChunkedWriter& out;
  Status Append(std::span<const std::byte> bytes) { return out.Append(bytes); }
};

#if IOMIMIC_MDS_ZSTD
// Bytes through one zstd frame (its content size set) into the file.
class ZstdSink {
 public:
  ZstdSink(image::ChunkedWriter& out, const std::string& path) : out_(out), path_(path) {}
  ~ZstdSink() { ZSTD_freeCCtx(cctx_); }
  ZstdSink(const ZstdSink&) = delete;
  ZstdSink& operator=(const ZstdSink&) = delete;

  Status Start(int level, std::uint64_t size) {
    cctx_ = ZSTD_createCCtx();
    if (cctx_ == nullptr) return Status::ResourceExhausted("mds: no memory for a zstd context");
    IOMIMIC_RETURN_IF_ERROR(Check(ZSTD_CCtx_setParameter(cctx_, ZSTD_c_compressionLevel, level)));
    IOMIMIC_RETURN_IF_ERROR(Check(ZSTD_CCtx_setPledgedSrcSize(cctx_, size)));
    buffer_.resize(ZSTD_CStreamOutSize());
    return Status::OK();
  }
  Status Append(std::span<const std::byte> bytes) { return Run(bytes, ZSTD_e_continue); }
  Status Finish() { return Run({}, ZSTD_e_end); }

 private:
  Status Check(std::size_t rc) const {
    if (!ZSTD_isError(rc)) return Status::OK();
    return Status::Internal("mds: zstd compressing " + path_ + ": " + ZSTD_getErrorName(rc));
  }
  Status Run(std::span<const std::byte> bytes, ZSTD_EndDirective mode) {
    ZSTD_inBuffer in{bytes.data(), bytes.size(), 0};
    for (;;) {
      ZSTD_outBuffer out{buffer_.data(), buffer_.size(), 0};
      const std::size_t left = ZSTD_compressStream2(cctx_, &out, &in, mode);
      IOMIMIC_RETURN_IF_ERROR(Check(left));
      IOMIMIC_RETURN_IF_ERROR(out_.Append(std::span<const std::byte>(buffer_).first(out.pos)));
      const bool done = mode == ZSTD_e_end ? left == 0 : in.pos == in.size;
      if (done) return Status::OK();
    }
  }

  image::ChunkedWriter& out_;
  const std::string& path_;
  ZSTD_CCtx* cctx_ = nullptr;
  std::vector<std::byte> buffer_;
};
#endif

// Writes `text` as `path` through `storage`: a hidden temporary name in the
// same folder, synced, then renamed.
Status WriteIndexFile(Storage& storage, const std::string& path, const std::string& text) {
  const std::size_t slash = path.rfind('/');
  const std::string folder = slash == std::string::npos ? "" : path.substr(0, slash);
  if (!folder.empty()) {
    Status made = storage.CreateDirectories(folder);
    if (!made.ok()) return made.WithContext("mds: creating the index folder " + folder);
  }
  const std::string partial =
      (folder.empty() ? "" : folder + "/") + "." + kIndexName + ".iomimic-partial";
  OpenOptions open;
  open.mode = OpenMode::kWrite;
  open.expected_size = text.size();
  Result<std::unique_ptr<File>> file = storage.Open(partial, open);
  if (!file.ok()) return file.status().WithContext("mds: creating the index " + path);
  IOMIMIC_ASSIGN_OR_RETURN(Buffer buffer, AllocateHostBuffer(storage, text.size(), "mds"));
  std::memcpy(buffer.data(), text.data(), text.size());
  Status s = (*file)->WriteAt(0, buffer.span().first(text.size()));
  if (s.ok()) s = (*file)->Sync();  // durable before it gets its final name
  Status closed = (*file)->Close();
  if (s.ok()) s = closed;
  if (s.ok()) s = storage.Rename(partial, path);
  if (!s.ok()) {
    (void)storage.Remove(partial);  // our own temporary file
    return s.WithContext("mds: writing the index " + path);
  }
  return Status::OK();
}

Status WriteImpl(Storage& storage, File& file, const FileSpec& spec, const MdsOptions& options) {
  IOMIMIC_ASSIGN_OR_RETURN(const ShardPlan plan, PlanShard(spec, options));
  const std::size_t chunk = ChunkSize(storage, options.chunk_size);
  IOMIMIC_ASSIGN_OR_RETURN(Buffer buffer, AllocateHostBuffer(storage, chunk, "mds"));
  image::ChunkedWriter out(file, spec.path, "mds", buffer.span().first(chunk));
  std::uint64_t zip_bytes = 0;
  if (plan.compression.empty()) {
    PlainSink sink{out};
    IOMIMIC_RETURN_IF_ERROR(EmitRawShard(spec, plan, sink));
  } else {
#if IOMIMIC_MDS_ZSTD
    ZstdSink sink(out, spec.path);
    IOMIMIC_RETURN_IF_ERROR(sink.Start(spec.compression_level, plan.raw_bytes));
    IOMIMIC_RETURN_IF_ERROR(EmitRawShard(spec, plan, sink));
    IOMIMIC_RETURN_IF_ERROR(sink.Finish());
#endif
    zip_bytes = out.size();
  }
  IOMIMIC_RETURN_IF_ERROR(out.Finish());
  buffer.Reset();
  return WriteIndexFile(storage, IndexPathFor(spec.path), IndexText(spec, plan, zip_bytes));
}

}  // namespace

Status WriteMdsShard(Storage& storage, File& file, const FileSpec& spec,
                     const MdsOptions& options) {
  return Guard("mds", "writing", spec.path,
               [&]() -> Status { return WriteImpl(storage, file, spec, options); });
}

}  // namespace iomimic::mds
