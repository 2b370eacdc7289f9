#include "jpeg_codec.h"

// jpeglib.h needs FILE and size_t declared first; jerror.h needs the
// configuration jpeglib.h includes.
// clang-format off
#include <cstddef>
#include <cstdio>
#include <jpeglib.h>
#include <jerror.h>
// clang-format on

#include <algorithm>
#include <csetjmp>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>

#include "iomimic/image_format.h"

namespace iomimic::jpeg {
namespace {

using image::ImageGeometry;
using image::ImageInfo;

// libjpeg reports errors through error_exit, which must not return: ours
// longjmps back to the setjmp in the function that called libjpeg. Every
// function that calls setjmp below, and every callback libjpeg calls, holds
// only trivially destructible locals, so the jump skips no destructor. C++
// objects (Status, ChunkedWriter) live in the callers' frames, above the
// setjmp.

struct ErrorManager {
  jpeg_error_mgr pub;  // first: libjpeg hands callbacks a pointer to it
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  bool failed;
  // Reading: the input, to tell how far libjpeg had got.
  std::size_t input_size;
  std::size_t offset;
};

// Warnings that mean the data are damaged. libjpeg carries on after them and
// returns made-up pixels; iomimic treats them as corruption.
bool IsCorruptDataWarning(int code) {
  switch (code) {
#if defined(D_ARITH_CODING_SUPPORTED) || JPEG_LIB_VERSION >= 70
    case JWRN_ARITH_BAD_CODE:
#endif
    case JWRN_BOGUS_PROGRESSION:
    case JWRN_EXTRANEOUS_DATA:
    case JWRN_HIT_MARKER:
    case JWRN_HUFF_BAD_CODE:
    case JWRN_JPEG_EOF:
    case JWRN_MUST_RESYNC:
    case JWRN_NOT_SEQUENTIAL:
    case JWRN_TOO_MUCH_DATA:
      return true;
    default:
      return false;
  }
}

[[noreturn]] void OnError(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  err->failed = true;
  if (cinfo->is_decompressor) {
    const jpeg_source_mgr* src = reinterpret_cast<j_decompress_ptr>(cinfo)->src;
    if (src != nullptr && src->bytes_in_buffer <= err->input_size) {
      err->offset = err->input_size - src->bytes_in_buffer;
    }
  }
  std::longjmp(err->jump, 1);
}

// Traces and harmless warnings (unknown JFIF revision, Adobe transform
// codes, a bad ICC marker) are dropped; corrupt-data warnings are errors.
// Nothing is printed.
void OnMessage(j_common_ptr cinfo, int level) {
  if (level < 0 && IsCorruptDataWarning(cinfo->err->msg_code)) OnError(cinfo);
}

void OnOutputMessage(j_common_ptr) {}

void InitErrors(ErrorManager* err) {
  jpeg_std_error(&err->pub);
  err->pub.error_exit = &OnError;
  err->pub.emit_message = &OnMessage;
  err->pub.output_message = &OnOutputMessage;
  err->message[0] = '\0';
  err->failed = false;
  err->input_size = 0;
  err->offset = 0;
}

// --- writing ----------------------------------------------------------------

// Compressed bytes are collected here before they go to the ChunkedWriter.
constexpr std::size_t kOutputBufferSize = 65536;

struct WriteContext {
  ErrorManager error;
  jpeg_compress_struct cinfo;
  jpeg_destination_mgr destination;
  bool created = false;
  JDIMENSION width = 0;
  JDIMENSION height = 0;
  int components = 1;
  int quality = 75;
  unsigned char* row = nullptr;
  std::size_t row_bytes = 0;
  unsigned char* output = nullptr;  // kOutputBufferSize bytes
  ContentStream* content = nullptr;
  image::ChunkedWriter* sink = nullptr;
  Status* sink_status = nullptr;  // the sink's error, when it failed
};

WriteContext* ContextOf(j_compress_ptr cinfo) {
  return static_cast<WriteContext*>(cinfo->client_data);
}

// Hands compressed bytes to the sink; false (with *sink_status set) when the
// storage failed. All C++ objects are gone when it returns.
bool AppendToSink(WriteContext* ctx, std::size_t length) noexcept {
  try {
    Status s = ctx->sink->Append(
        std::span<const std::byte>(reinterpret_cast<const std::byte*>(ctx->output), length));
    if (s.ok()) return true;
    *ctx->sink_status = std::move(s);
  } catch (...) {
  }
  return false;
}

[[noreturn]] void FailWrite(j_compress_ptr cinfo) {
  cinfo->err->msg_code = JERR_FILE_WRITE;
  (*cinfo->err->error_exit)(reinterpret_cast<j_common_ptr>(cinfo));
  std::abort();  // error_exit does not return
}

void OnInitDestination(j_compress_ptr cinfo) {
  WriteContext* ctx = ContextOf(cinfo);
  cinfo->dest->next_output_byte = ctx->output;
  cinfo->dest->free_in_buffer = kOutputBufferSize;
}

// The whole buffer is full (libjpeg ignores free_in_buffer here).
boolean OnEmptyOutputBuffer(j_compress_ptr cinfo) {
  WriteContext* ctx = ContextOf(cinfo);
  if (!AppendToSink(ctx, kOutputBufferSize)) FailWrite(cinfo);
  cinfo->dest->next_output_byte = ctx->output;
  cinfo->dest->free_in_buffer = kOutputBufferSize;
  return TRUE;
}

void OnTermDestination(j_compress_ptr cinfo) {
  WriteContext* ctx = ContextOf(cinfo);
  const std::size_t used = kOutputBufferSize - cinfo->dest->free_in_buffer;
  if (used > 0 && !AppendToSink(ctx, used)) FailWrite(cinfo);
}

// Runs libjpeg's compression. Returns false after a libjpeg error.
bool EncodeRows(WriteContext* ctx) {
  j_compress_ptr cinfo = &ctx->cinfo;
  if (setjmp(ctx->error.jump)) return false;
  cinfo->err = &ctx->error.pub;
  jpeg_create_compress(cinfo);
  ctx->created = true;
  cinfo->client_data = ctx;
  ctx->destination.init_destination = &OnInitDestination;
  ctx->destination.empty_output_buffer = &OnEmptyOutputBuffer;
  ctx->destination.term_destination = &OnTermDestination;
  cinfo->dest = &ctx->destination;
  cinfo->image_width = ctx->width;
  cinfo->image_height = ctx->height;
  cinfo->input_components = ctx->components;
  cinfo->in_color_space = ctx->components == 3 ? JCS_RGB : JCS_GRAYSCALE;
  jpeg_set_defaults(cinfo);
  jpeg_set_quality(cinfo, ctx->quality, TRUE);
  jpeg_start_compress(cinfo, TRUE);
  while (cinfo->next_scanline < cinfo->image_height) {
    ctx->content->Fill(
        std::span<std::byte>(reinterpret_cast<std::byte*>(ctx->row), ctx->row_bytes));
    JSAMPROW rows[1] = {ctx->row};
    jpeg_write_scanlines(cinfo, rows, 1);
  }
  jpeg_finish_compress(cinfo);
  return true;
}

class CompressGuard {
 public:
  explicit CompressGuard(WriteContext* ctx) : ctx_(ctx) {}
  CompressGuard(const CompressGuard&) = delete;
  CompressGuard& operator=(const CompressGuard&) = delete;
  ~CompressGuard() {
    if (ctx_->created) jpeg_destroy_compress(&ctx_->cinfo);
  }

 private:
  WriteContext* ctx_;
};

}  // namespace

Status JpegCodec::Encode(Storage& storage, File& file, const FileSpec& spec) const {
  const WriterOptions& options = options_;
  IOMIMIC_ASSIGN_OR_RETURN(ImageGeometry g, JpegGeometry(spec));
  const std::size_t row_bytes = static_cast<std::size_t>(g.row_bytes());
  IOMIMIC_ASSIGN_OR_RETURN(Buffer row, AllocateHostBuffer(storage, row_bytes, "jpeg"));
  IOMIMIC_ASSIGN_OR_RETURN(Buffer output, AllocateHostBuffer(storage, kOutputBufferSize, "jpeg"));
  // Noise at quality 75 takes a little over half a byte per pixel.
  const std::size_t chunk = image::WriteChunkSize(storage, g.bytes() * 3 / 4 + 4096);
  IOMIMIC_ASSIGN_OR_RETURN(Buffer window, AllocateHostBuffer(storage, chunk, "jpeg"));
  image::ChunkedWriter sink(file, spec.path, "jpeg", window.span().first(chunk));
  ContentStream content(spec.seed, spec.content);
  Status sink_status;

  auto ctx = std::make_unique<WriteContext>();
  InitErrors(&ctx->error);
  ctx->width = static_cast<JDIMENSION>(g.cols);
  ctx->height = static_cast<JDIMENSION>(g.rows);
  ctx->components = static_cast<int>(g.channels);
  ctx->quality = options.quality;
  ctx->row = reinterpret_cast<unsigned char*>(row.data());
  ctx->row_bytes = row_bytes;
  ctx->output = reinterpret_cast<unsigned char*>(output.data());
  ctx->content = &content;
  ctx->sink = &sink;
  ctx->sink_status = &sink_status;
  CompressGuard guard(ctx.get());
  if (!EncodeRows(ctx.get())) {
    if (!sink_status.ok()) return sink_status;
    return Status::Internal("jpeg: libjpeg failed writing " + spec.path + ": " +
                            ctx->error.message);
  }
  return sink.Finish();
}

namespace {

// --- reading ----------------------------------------------------------------

struct ReadContext {
  ErrorManager error;
  jpeg_decompress_struct cinfo;
  jpeg_source_mgr source;
  bool created = false;
  bool truncated = false;
  // The decoded layout, after ReadInfo.
  JDIMENSION width = 0;
  JDIMENSION height = 0;
  int components = 0;
};

ReadContext* ContextOf(j_decompress_ptr cinfo) {
  return static_cast<ReadContext*>(cinfo->client_data);
}

void OnInitSource(j_decompress_ptr) {}
void OnTermSource(j_decompress_ptr) {}

// The whole file is in the buffer from the start, so needing more means the
// data end before the EOI marker.
[[noreturn]] void FailTruncated(j_decompress_ptr cinfo) {
  ContextOf(cinfo)->truncated = true;
  cinfo->err->msg_code = JERR_INPUT_EOF;
  (*cinfo->err->error_exit)(reinterpret_cast<j_common_ptr>(cinfo));
  std::abort();  // error_exit does not return
}

boolean OnFillInputBuffer(j_decompress_ptr cinfo) {
  cinfo->src->bytes_in_buffer = 0;
  FailTruncated(cinfo);
}

void OnSkipInputData(j_decompress_ptr cinfo, long count) {  // NOLINT: libjpeg's type
  if (count <= 0) return;
  jpeg_source_mgr* src = cinfo->src;
  if (static_cast<unsigned long>(count) > src->bytes_in_buffer) {  // NOLINT
    src->next_input_byte += src->bytes_in_buffer;
    src->bytes_in_buffer = 0;
    FailTruncated(cinfo);
  }
  src->next_input_byte += count;
  src->bytes_in_buffer -= static_cast<std::size_t>(count);
}

// jpeg_read_header and the output colour space PIL would use. Returns false
// after a libjpeg error.
bool ReadInfo(ReadContext* ctx, const unsigned char* data, std::size_t size) {
  j_decompress_ptr cinfo = &ctx->cinfo;
  if (setjmp(ctx->error.jump)) return false;
  cinfo->err = &ctx->error.pub;
  jpeg_create_decompress(cinfo);
  ctx->created = true;
  cinfo->client_data = ctx;
  ctx->source.next_input_byte = data;
  ctx->source.bytes_in_buffer = size;
  ctx->source.init_source = &OnInitSource;
  ctx->source.fill_input_buffer = &OnFillInputBuffer;
  ctx->source.skip_input_data = &OnSkipInputData;
  ctx->source.resync_to_restart = &jpeg_resync_to_restart;
  ctx->source.term_source = &OnTermSource;
  cinfo->src = &ctx->source;
  jpeg_read_header(cinfo, TRUE);
  switch (cinfo->jpeg_color_space) {
    case JCS_GRAYSCALE:
      cinfo->out_color_space = JCS_GRAYSCALE;
      break;
    case JCS_CMYK:
    case JCS_YCCK:
      cinfo->out_color_space = JCS_CMYK;
      break;
    default:
      cinfo->out_color_space = JCS_RGB;
      break;
  }
  jpeg_calc_output_dimensions(cinfo);
  ctx->width = cinfo->output_width;
  ctx->height = cinfo->output_height;
  ctx->components = cinfo->output_components;
  return true;
}

// Decodes every row into `out` and reads up to EOI. Returns false after a
// libjpeg error.
bool ReadPixels(ReadContext* ctx, unsigned char* out, std::size_t row_bytes) {
  j_decompress_ptr cinfo = &ctx->cinfo;
  if (setjmp(ctx->error.jump)) return false;
  jpeg_start_decompress(cinfo);
  while (cinfo->output_scanline < cinfo->output_height) {
    JSAMPROW rows[1] = {out + static_cast<std::size_t>(cinfo->output_scanline) * row_bytes};
    jpeg_read_scanlines(cinfo, rows, 1);
  }
  jpeg_finish_decompress(cinfo);
  return true;
}

class DecompressGuard {
 public:
  explicit DecompressGuard(ReadContext* ctx) : ctx_(ctx) {}
  DecompressGuard(const DecompressGuard&) = delete;
  DecompressGuard& operator=(const DecompressGuard&) = delete;
  ~DecompressGuard() {
    if (ctx_->created) jpeg_destroy_decompress(&ctx_->cinfo);
  }

 private:
  ReadContext* ctx_;
};

Status ReadFailure(const ReadContext& ctx, const std::string& path) {
  if (ctx.truncated) {
    return image::CorruptAt(path,
                            "truncated jpeg file: the data end before the EOI marker (" +
                                std::to_string(ctx.error.input_size) + " bytes); the file ends",
                            ctx.error.input_size);
  }
  return image::CorruptAt(path, std::string("corrupt jpeg (libjpeg: ") + ctx.error.message + ")",
                          ctx.error.offset);
}

Status OpenAndReadInfo(std::span<const std::byte> file, const std::string& path, ReadContext* ctx,
                       ImageInfo* info) {
  InitErrors(&ctx->error);
  ctx->error.input_size = file.size();
  if (!ReadInfo(ctx, reinterpret_cast<const unsigned char*>(file.data()), file.size())) {
    return ReadFailure(*ctx, path);
  }
  info->width = ctx->width;
  info->height = ctx->height;
  info->channels = static_cast<std::uint64_t>(ctx->components);
  info->bytes_per_sample = 1;
  info->planar = false;
  return image::CheckDecodedSize(path, "jpeg", *info, file.size(), kMaxExpansion, 0);
}

}  // namespace

Result<ImageGeometry> JpegGeometry(const FileSpec& spec) {
  return image::GeometryFromSpec(
      spec, {.format = "jpeg",
             .max_side = kMaxSide,
             .max_bytes = std::uint64_t{1} << 40,
             .any_element_type = false,
             .element_type_note = " (DLIO forces record_element_type uint8 for jpeg)",
             .compression_note = "JPEG is always compressed; set dataset.compression to none and "
                                 "use the plugin option quality"});
}

Result<WriterOptions> ParseOptions(const PluginOptions& options) {
  Result<std::int64_t> quality =
      image::IntOptionIn(options, "quality", 75, 1, 100, "is not a JPEG quality (1-100)");
  if (!quality.ok()) return quality.status();
  return WriterOptions{static_cast<int>(*quality)};
}

Status JpegCodec::CheckSignature(std::span<const std::byte> head, const std::string& path) const {
  // SOI, then the 0xFF of the next marker.
  static constexpr unsigned char kStart[3] = {0xFF, 0xD8, 0xFF};
  return image::CheckMagic(head, path, kStart, "jpeg", "no SOI marker");
}

Status JpegCodec::ReadHeader(std::span<const std::byte> file, const std::string& path,
                             ImageInfo* info) const {
  auto ctx = std::make_unique<ReadContext>();
  DecompressGuard guard(ctx.get());
  return OpenAndReadInfo(file, path, ctx.get(), info);
}

Status JpegCodec::Decode(std::span<const std::byte> file, const std::string& path, Storage& storage,
                         Buffer* pixels, ImageInfo* info) const {
  auto ctx = std::make_unique<ReadContext>();
  DecompressGuard guard(ctx.get());
  IOMIMIC_RETURN_IF_ERROR(OpenAndReadInfo(file, path, ctx.get(), info));
  IOMIMIC_ASSIGN_OR_RETURN(std::byte * out, image::PixelsFor(storage, pixels, *info, "jpeg"));
  const std::size_t row_bytes = static_cast<std::size_t>(info->width * info->channels);
  if (!ReadPixels(ctx.get(), reinterpret_cast<unsigned char*>(out), row_bytes)) {
    return ReadFailure(*ctx, path);
  }
  if (info->channels == 4) {
    // PIL reads CMYK with Adobe's inverted convention (raw mode "CMYK;I").
    for (std::byte& b : pixels->span().first(info->decoded_bytes())) b = ~b;
  }
  return Status::OK();
}

}  // namespace iomimic::jpeg

namespace {

const IomimicOptionSpec kJpegOptions[] = {
    {"quality", "int", "75", "JPEG quality, 1-100 (PIL's quality; 75 is PIL's default)"},
};

}  // namespace

IOMIMIC_DEFINE_IMAGE_FORMAT_PLUGIN(
    "jpeg", "1.0.0",
    "JPEG images as PIL's Image.save writes them (baseline JFIF, quality 75, greyscale or RGB, "
    "one image per file), read whole and decoded like np.asarray(PIL.Image.open(f))",
    kJpegOptions,
    (iomimic::image::CodecWithOptions<iomimic::jpeg::JpegCodec, iomimic::jpeg::ParseOptions>));
