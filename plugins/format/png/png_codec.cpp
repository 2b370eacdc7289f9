#include "png_codec.h"

#include <png.h>

#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>

#include "iomimic/image_format.h"

namespace iomimic::png {
namespace {

using image::ImageGeometry;
using image::ImageInfo;

// libpng reports errors through a callback that must not return: it longjmps
// back to the setjmp in the function that called libpng. Every function that
// calls setjmp below, and every callback libpng calls, holds only trivially
// destructible locals, so the jump skips no destructor. C++ objects (Status,
// ChunkedWriter) live in the callers' frames, above the setjmp.

constexpr std::size_t kMessageSize = 256;

struct ErrorState {
  char message[kMessageSize] = {};
};

void CopyMessage(char (&to)[kMessageSize], const char* from) {
  std::snprintf(to, kMessageSize, "%s", from != nullptr ? from : "unknown error");
}

[[noreturn]] void OnError(png_structp png, png_const_charp message) {
  auto* state = static_cast<ErrorState*>(png_get_error_ptr(png));
  if (state != nullptr) CopyMessage(state->message, message);
  png_longjmp(png, 1);
}

// Warnings (benign problems in ancillary data) are neither printed nor fatal;
// CRC errors are made errors with png_set_crc_action.
void OnWarning(png_structp, png_const_charp) {}

// --- writing ----------------------------------------------------------------

struct WriteContext {
  ErrorState error;
  png_structp png = nullptr;
  png_infop info = nullptr;
  png_uint_32 width = 0;
  png_uint_32 height = 0;
  int color_type = PNG_COLOR_TYPE_GRAY;
  int compress_level = 6;
  std::size_t row_bytes = 0;
  unsigned char* row = nullptr;
  ContentStream* content = nullptr;
  image::ChunkedWriter* sink = nullptr;
  Status* sink_status = nullptr;  // the sink's error, when it failed
};

// Hands compressed bytes to the sink; false (with *sink_status set) when the
// storage failed. All C++ objects are gone when it returns.
bool AppendToSink(WriteContext* ctx, const unsigned char* data, std::size_t length) noexcept {
  try {
    Status s = ctx->sink->Append(
        std::span<const std::byte>(reinterpret_cast<const std::byte*>(data), length));
    if (s.ok()) return true;
    *ctx->sink_status = std::move(s);
  } catch (...) {
    CopyMessage(ctx->error.message, "out of memory writing the file");
  }
  return false;
}

void OnWriteData(png_structp png, png_bytep data, std::size_t length) {
  auto* ctx = static_cast<WriteContext*>(png_get_io_ptr(png));
  if (!AppendToSink(ctx, data, length)) png_error(png, "writing to the storage failed");
}

void OnFlush(png_structp) {}

// Runs libpng's write calls. Returns false after a libpng error.
bool EncodeRows(WriteContext* ctx) {
  png_structp png = ctx->png;
  png_infop info = ctx->info;
  if (setjmp(png_jmpbuf(png))) return false;
  png_set_write_fn(png, ctx, &OnWriteData, &OnFlush);
  png_set_compression_level(png, ctx->compress_level);
  png_set_compression_buffer_size(png, kIdatSize);
  png_set_IHDR(png, info, ctx->width, ctx->height, 8, ctx->color_type, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  for (png_uint_32 y = 0; y < ctx->height; ++y) {
    ctx->content->Fill(
        std::span<std::byte>(reinterpret_cast<std::byte*>(ctx->row), ctx->row_bytes));
    png_write_row(png, ctx->row);
  }
  png_write_end(png, nullptr);
  return true;
}

// Destroys the write structures however the encoder ends.
class WriteStructs {
 public:
  explicit WriteStructs(WriteContext* ctx) : ctx_(ctx) {}
  WriteStructs(const WriteStructs&) = delete;
  WriteStructs& operator=(const WriteStructs&) = delete;
  ~WriteStructs() {
    if (ctx_->png != nullptr) png_destroy_write_struct(&ctx_->png, &ctx_->info);
  }

 private:
  WriteContext* ctx_;
};

}  // namespace

Status PngCodec::Encode(Storage& storage, File& file, const FileSpec& spec) const {
  const WriterOptions& options = options_;
  IOMIMIC_ASSIGN_OR_RETURN(ImageGeometry g, PngGeometry(spec));
  const std::size_t row_bytes = static_cast<std::size_t>(g.row_bytes());
  IOMIMIC_ASSIGN_OR_RETURN(Buffer row, AllocateHostBuffer(storage, row_bytes, "png"));
  const std::size_t chunk = image::WriteChunkSize(storage, g.bytes() + g.bytes() / 64 + 4096);
  IOMIMIC_ASSIGN_OR_RETURN(Buffer window, AllocateHostBuffer(storage, chunk, "png"));
  image::ChunkedWriter sink(file, spec.path, "png", window.span().first(chunk));
  ContentStream content(spec.seed, spec.content);
  Status sink_status;

  WriteContext ctx;
  ctx.width = static_cast<png_uint_32>(g.cols);
  ctx.height = static_cast<png_uint_32>(g.rows);
  ctx.color_type = g.channels == 3 ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_GRAY;
  ctx.compress_level = options.compress_level;
  ctx.row_bytes = row_bytes;
  ctx.row = reinterpret_cast<unsigned char*>(row.data());
  ctx.content = &content;
  ctx.sink = &sink;
  ctx.sink_status = &sink_status;
  WriteStructs structs(&ctx);
  ctx.png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &ctx.error, &OnError, &OnWarning);
  if (ctx.png == nullptr) return Status::ResourceExhausted("png: cannot create a libpng writer");
  ctx.info = png_create_info_struct(ctx.png);
  if (ctx.info == nullptr) return Status::ResourceExhausted("png: cannot create a libpng writer");
  if (!EncodeRows(&ctx)) {
    if (!sink_status.ok()) return sink_status;
    return Status::Internal("png: libpng failed writing " + spec.path + ": " + ctx.error.message);
  }
  return sink.Finish();
}

namespace {

// --- reading ----------------------------------------------------------------

struct ReadContext {
  ErrorState error;
  png_structp png = nullptr;
  png_infop info = nullptr;
  const unsigned char* data = nullptr;
  std::size_t size = 0;
  std::size_t position = 0;
  std::size_t chunk_offset = 0;  // start of the chunk being read
  bool truncated = false;
  std::size_t wanted = 0;  // bytes asked for past the end
  // The decoded layout, after ReadInfo.
  png_uint_32 width = 0;
  png_uint_32 height = 0;
  int channels = 0;
  int bit_depth = 0;
  int passes = 1;
  std::size_t row_bytes = 0;
};

void OnReadData(png_structp png, png_bytep out, std::size_t length) {
  auto* ctx = static_cast<ReadContext*>(png_get_io_ptr(png));
  if ((png_get_io_state(png) & PNG_IO_CHUNK_HDR) != 0) ctx->chunk_offset = ctx->position;
  if (length > ctx->size - ctx->position) {
    ctx->truncated = true;
    ctx->wanted = length - (ctx->size - ctx->position);
    png_error(png, "unexpected end of file");
  }
  std::memcpy(out, ctx->data + ctx->position, length);
  ctx->position += length;
}

// The smallest bound on one chunk's allocation (ReadInfo).
constexpr png_alloc_size_t kMinChunkMalloc = 64 * 1024;
// Metadata chunks libpng would allocate at their claimed length (ReadInfo),
// each name followed by a NUL, as png_set_keep_unknown_chunks takes them.
constexpr png_byte kSkippedChunks[] = {
    't', 'E', 'X', 't', 0, 'z', 'T', 'X', 't', 0, 'i', 'T', 'X', 't', 0, 'i', 'C', 'C', 'P', 0,
    's', 'P', 'L', 'T', 0, 'p', 'C', 'A', 'L', 0, 's', 'C', 'A', 'L', 0, 'e', 'X', 'I', 'f', 0};

// png_read_info and the transformations to PIL's layouts. Returns false
// after a libpng error.
bool ReadInfo(ReadContext* ctx) {
  png_structp png = ctx->png;
  png_infop info = ctx->info;
  if (setjmp(png_jmpbuf(png))) return false;
  png_set_read_fn(png, ctx, &OnReadData);
  png_set_crc_action(png, PNG_CRC_ERROR_QUIT, PNG_CRC_ERROR_QUIT);
  png_set_user_limits(png, PNG_UINT_31_MAX, PNG_UINT_31_MAX);
  // libpng allocates a text, ICC profile or other metadata chunk at the
  // length its header claims before reading it, so a 41-byte file claiming
  // a 2 GB zTXt chunk asked for 2 GB (found by tests/fuzz, docs/fuzzing.md).
  // The pixels never need those chunks: have libpng skip them (it reads a
  // skipped chunk through a small buffer, checking its CRC, and a chunk past
  // the end of the file is then reported as truncation), and bound what any
  // other chunk may allocate or decompress to by the file size.
  png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_NEVER, kSkippedChunks,
                              static_cast<int>(sizeof(kSkippedChunks) / 5));
  png_set_chunk_malloc_max(png, std::max<png_alloc_size_t>(ctx->size, kMinChunkMalloc));
  png_read_info(png, info);
  const int color_type = png_get_color_type(png, info);
  const int depth = png_get_bit_depth(png, info);
  if (color_type == PNG_COLOR_TYPE_PALETTE) {
    png_set_packing(png);  // one index per byte, as PIL's mode P
  } else if (depth < 8) {
    png_set_expand_gray_1_2_4_to_8(png);
  }
  if (depth == 16) png_set_swap(png);  // little-endian, as numpy's '<u2'
  ctx->passes = png_set_interlace_handling(png);
  png_read_update_info(png, info);
  ctx->width = png_get_image_width(png, info);
  ctx->height = png_get_image_height(png, info);
  ctx->channels = png_get_channels(png, info);
  ctx->bit_depth = png_get_bit_depth(png, info);
  ctx->row_bytes = png_get_rowbytes(png, info);
  return true;
}

// Reads every row into `out` (height * row_bytes bytes) and the chunks after
// the image data up to IEND. Returns false after a libpng error.
bool ReadPixels(ReadContext* ctx, unsigned char* out) {
  png_structp png = ctx->png;
  if (setjmp(png_jmpbuf(png))) return false;
  for (int pass = 0; pass < ctx->passes; ++pass) {
    for (png_uint_32 y = 0; y < ctx->height; ++y) {
      png_read_row(png, out + static_cast<std::size_t>(y) * ctx->row_bytes, nullptr);
    }
  }
  png_read_end(png, nullptr);
  return true;
}

class ReadStructs {
 public:
  explicit ReadStructs(ReadContext* ctx) : ctx_(ctx) {}
  ReadStructs(const ReadStructs&) = delete;
  ReadStructs& operator=(const ReadStructs&) = delete;
  ~ReadStructs() {
    if (ctx_->png != nullptr) png_destroy_read_struct(&ctx_->png, &ctx_->info, nullptr);
  }

 private:
  ReadContext* ctx_;
};

Status ReadFailure(const ReadContext& ctx, const std::string& path) {
  if (ctx.truncated && ctx.chunk_offset >= ctx.size) {
    return image::CorruptAt(path,
                            "truncated png file: the next chunk is missing (no IEND yet); the "
                            "file ends",
                            ctx.size);
  }
  if (ctx.truncated) {
    return image::CorruptAt(path,
                            "truncated png file: it ends inside the chunk that starts at offset " +
                                std::to_string(ctx.chunk_offset) + " (" +
                                std::to_string(ctx.wanted) + " more bytes needed); the file ends",
                            ctx.size);
  }
  return image::CorruptAt(
      path, std::string("corrupt png (libpng: ") + ctx.error.message + ") in the chunk",
      ctx.chunk_offset);
}

// Creates the read structures and runs ReadInfo.
Status OpenAndReadInfo(std::span<const std::byte> file, const std::string& path, ReadContext* ctx,
                       ImageInfo* info) {
  ctx->data = reinterpret_cast<const unsigned char*>(file.data());
  ctx->size = file.size();
  ctx->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &ctx->error, &OnError, &OnWarning);
  if (ctx->png == nullptr) return Status::ResourceExhausted("png: cannot create a libpng reader");
  ctx->info = png_create_info_struct(ctx->png);
  if (ctx->info == nullptr) return Status::ResourceExhausted("png: cannot create a libpng reader");
  if (!ReadInfo(ctx)) return ReadFailure(*ctx, path);
  info->width = ctx->width;
  info->height = ctx->height;
  info->channels = static_cast<std::uint64_t>(ctx->channels);
  info->bytes_per_sample = ctx->bit_depth == 16 ? 2 : 1;
  info->planar = false;
  if (ctx->row_bytes != info->width * info->channels * info->bytes_per_sample) {
    return Status::NotSupported(path + ": png layout " + std::to_string(ctx->bit_depth) +
                                "-bit with " + std::to_string(ctx->channels) +
                                " channels is not supported");
  }
  // The IHDR chunk follows the signature.
  return image::CheckDecodedSize(path, "png", *info, file.size(), kMaxExpansion,
                                 sizeof(kSignature));
}

}  // namespace

Result<ImageGeometry> PngGeometry(const FileSpec& spec) {
  return image::GeometryFromSpec(
      spec, {.format = "png",
             .max_side = PNG_UINT_31_MAX,
             .max_bytes = std::uint64_t{1} << 40,
             .any_element_type = false,
             .element_type_note = " (DLIO forces record_element_type uint8 for png)",
             .compression_note = "PNG is always zlib-compressed; set dataset.compression to none "
                                 "and use the plugin option compress_level"});
}

Result<WriterOptions> ParseOptions(const PluginOptions& options) {
  Result<std::int64_t> compress_level =
      image::IntOptionIn(options, "compress_level", 6, 0, 9, "is not a zlib level (0-9)");
  if (!compress_level.ok()) return compress_level.status();
  return WriterOptions{static_cast<int>(*compress_level)};
}

Status PngCodec::CheckSignature(std::span<const std::byte> head, const std::string& path) const {
  return image::CheckMagic(head, path, kSignature, "png", "bad signature byte",
                           ", shorter than the signature");
}

Status PngCodec::ReadHeader(std::span<const std::byte> file, const std::string& path,
                            ImageInfo* info) const {
  ReadContext ctx;
  ReadStructs structs(&ctx);
  return OpenAndReadInfo(file, path, &ctx, info);
}

Status PngCodec::Decode(std::span<const std::byte> file, const std::string& path, Storage& storage,
                        Buffer* pixels, ImageInfo* info) const {
  ReadContext ctx;
  ReadStructs structs(&ctx);
  IOMIMIC_RETURN_IF_ERROR(OpenAndReadInfo(file, path, &ctx, info));
  IOMIMIC_ASSIGN_OR_RETURN(std::byte * out, image::PixelsFor(storage, pixels, *info, "png"));
  if (!ReadPixels(&ctx, reinterpret_cast<unsigned char*>(out))) return ReadFailure(ctx, path);
  return Status::OK();
}

}  // namespace iomimic::png

namespace {

const IomimicOptionSpec kPngOptions[] = {
    {"compress_level", "int", "6",
     "zlib compression level of the image data, 0-9 (PIL's compress_level; 6 is PIL's default)"},
};

}  // namespace

IOMIMIC_DEFINE_IMAGE_FORMAT_PLUGIN(
    "png", "1.0.0",
    "PNG images as PIL's Image.save writes them (8-bit greyscale or RGB, one image per file), "
    "read whole and decoded like np.asarray(PIL.Image.open(f))",
    kPngOptions,
    (iomimic::image::CodecWithOptions<iomimic::png::PngCodec, iomimic::png::ParseOptions>));
