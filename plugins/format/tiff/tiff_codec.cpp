#include "tiff_codec.h"

#include <tiffio.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <new>
#include <vector>

#include "iomimic/guard.h"
#include "iomimic/image_format.h"

namespace iomimic::tiff {
namespace {

using image::ImageGeometry;
using image::ImageInfo;

// --- messages ---------------------------------------------------------------

// What libtiff reported about one file. libtiff calls the handlers from the
// thread that called it, so no locking is needed.
struct Messages {
  std::string first_error;
  int errors = 0;

  void Add(const char* module, const char* fmt, va_list ap) noexcept {
    char text[512];
    std::vsnprintf(text, sizeof(text), fmt != nullptr ? fmt : "", ap);
    ++errors;
    if (!first_error.empty()) return;
    try {
      first_error = module != nullptr && *module != '\0' ? std::string(module) + ": " + text
                                                         : std::string(text);
    } catch (...) {
      // Keep going without the text.
    }
  }

  std::string Text() const { return first_error.empty() ? "no details" : first_error; }
};

// Per-file handlers (libtiff 4.5's TIFFOpenOptions): returning 1 tells
// libtiff the message was handled, so the process-wide handlers are skipped.
int OnFileError(TIFF*, void* user_data, const char* module, const char* fmt, va_list ap) {
  if (user_data != nullptr) static_cast<Messages*>(user_data)->Add(module, fmt, ap);
  return 1;
}

int OnFileWarning(TIFF*, void*, const char*, const char*, va_list) { return 1; }

// The process-wide handler still receives messages libtiff emits without a
// TIFF handle; they go to the messages of the file this thread is working on.
thread_local Messages* t_current = nullptr;

void OnGlobalError(thandle_t, const char* module, const char* fmt, va_list ap) {
  if (t_current != nullptr) t_current->Add(module, fmt, ap);
}

class CurrentMessages {
 public:
  explicit CurrentMessages(Messages* messages) : previous_(t_current) { t_current = messages; }
  CurrentMessages(const CurrentMessages&) = delete;
  CurrentMessages& operator=(const CurrentMessages&) = delete;
  ~CurrentMessages() { t_current = previous_; }

 private:
  Messages* previous_;
};

// Installs the process-wide handlers on construction and puts the previous
// ones back on destruction (when the plugin is unloaded), unless someone
// replaced ours meanwhile.
class HandlerInstall {
 public:
  HandlerInstall()
      : error_(TIFFSetErrorHandler(nullptr)),
        warning_(TIFFSetWarningHandler(nullptr)),
        error_ext_(TIFFSetErrorHandlerExt(&OnGlobalError)),
        warning_ext_(TIFFSetWarningHandlerExt(nullptr)) {}
  HandlerInstall(const HandlerInstall&) = delete;
  HandlerInstall& operator=(const HandlerInstall&) = delete;
  ~HandlerInstall() {
    const TIFFErrorHandlerExt now = TIFFSetErrorHandlerExt(error_ext_);
    if (now != &OnGlobalError) {
      TIFFSetErrorHandlerExt(now);
      return;
    }
    TIFFSetErrorHandler(error_);
    TIFFSetWarningHandler(warning_);
    TIFFSetWarningHandlerExt(warning_ext_);
  }

 private:
  TIFFErrorHandler error_;
  TIFFErrorHandler warning_;
  TIFFErrorHandlerExt error_ext_;
  TIFFErrorHandlerExt warning_ext_;
};

struct OptionsDeleter {
  void operator()(TIFFOpenOptions* o) const { TIFFOpenOptionsFree(o); }
};
using OptionsPtr = std::unique_ptr<TIFFOpenOptions, OptionsDeleter>;

struct TiffDeleter {
  void operator()(TIFF* t) const { TIFFClose(t); }
};
using TiffPtr = std::unique_ptr<TIFF, TiffDeleter>;

OptionsPtr MakeOpenOptions(Messages* messages) {
  OptionsPtr options(TIFFOpenOptionsAlloc());
  if (options != nullptr) {
    TIFFOpenOptionsSetErrorHandlerExtR(options.get(), &OnFileError, messages);
    TIFFOpenOptionsSetWarningHandlerExtR(options.get(), &OnFileWarning, nullptr);
  }
  return options;
}

toff_t Seek(std::uint64_t* position, std::uint64_t size, toff_t offset, int whence) {
  std::uint64_t base = 0;
  if (whence == SEEK_CUR) base = *position;
  if (whence == SEEK_END) base = size;
  // SEEK_CUR and SEEK_END offsets may be negative (two's complement).
  const std::uint64_t target = whence == SEEK_SET ? offset : base + offset;
  if (whence != SEEK_SET && static_cast<std::int64_t>(offset) < 0 &&
      static_cast<std::uint64_t>(-static_cast<std::int64_t>(offset)) > base) {
    return static_cast<toff_t>(-1);
  }
  *position = target;
  return target;
}

// --- writing ----------------------------------------------------------------

struct WriteIo {
  image::ChunkedWriter* sink = nullptr;
  std::uint64_t position = 0;
  Status status;  // the first storage error
};

tmsize_t WriteModeWrite(thandle_t handle, void* data, tmsize_t size) {
  auto* io = static_cast<WriteIo*>(handle);
  if (size < 0) return -1;
  try {
    Status s = io->sink->Write(io->position,
                               std::span<const std::byte>(static_cast<const std::byte*>(data),
                                                          static_cast<std::size_t>(size)));
    if (!s.ok()) {
      if (io->status.ok()) io->status = std::move(s);
      return -1;
    }
  } catch (...) {
    return -1;
  }
  io->position += static_cast<std::uint64_t>(size);
  return size;
}

// libtiff does not read back while writing a new file; bytes still in the
// writer's window could be served, anything else cannot.
tmsize_t WriteModeRead(thandle_t handle, void* data, tmsize_t size) {
  auto* io = static_cast<WriteIo*>(handle);
  if (size < 0) return -1;
  if (io->position >= io->sink->size()) return 0;
  const std::size_t n = static_cast<std::size_t>(
      std::min<std::uint64_t>(static_cast<std::uint64_t>(size), io->sink->size() - io->position));
  if (!io->sink->ReadBack(io->position, std::span<std::byte>(static_cast<std::byte*>(data), n))) {
    return -1;
  }
  io->position += n;
  return static_cast<tmsize_t>(n);
}

toff_t WriteModeSeek(thandle_t handle, toff_t offset, int whence) {
  auto* io = static_cast<WriteIo*>(handle);
  return Seek(&io->position, io->sink->size(), offset, whence);
}

toff_t WriteModeSize(thandle_t handle) { return static_cast<WriteIo*>(handle)->sink->size(); }

int CloseProc(thandle_t) { return 0; }

int NoMap(thandle_t, void**, toff_t*) { return 0; }

void NoUnmap(thandle_t, void*, toff_t) {}

std::uint16_t CompressionTag(Compression c) {
  switch (c) {
    case Compression::kDeflate:
      return COMPRESSION_ADOBE_DEFLATE;
    case Compression::kLzw:
      return COMPRESSION_LZW;
    case Compression::kPackBits:
      return COMPRESSION_PACKBITS;
    case Compression::kNone:
      break;
  }
  return COMPRESSION_NONE;
}

}  // namespace

Status TiffCodec::Encode(Storage& storage, File& file, const FileSpec& spec) const {
  const WriterOptions& options = options_;
  InstallTiffHandlers();
  IOMIMIC_ASSIGN_OR_RETURN(TiffPlan plan, PlanTiff(spec, options));
  const ImageGeometry& g = plan.geometry;
  const std::size_t row_bytes = static_cast<std::size_t>(g.row_bytes());
  const std::size_t strip_bytes = row_bytes * plan.rows_per_strip;
  IOMIMIC_ASSIGN_OR_RETURN(Buffer strip, AllocateHostBuffer(storage, strip_bytes, "tiff"));
  const std::size_t chunk = image::WriteChunkSize(storage, g.bytes() + g.bytes() / 64 + 65536);
  IOMIMIC_ASSIGN_OR_RETURN(Buffer window, AllocateHostBuffer(storage, chunk, "tiff"));
  image::ChunkedWriter sink(file, spec.path, "tiff", window.span().first(chunk));
  ContentStream content(spec.seed, spec.content);

  Messages messages;
  CurrentMessages current(&messages);
  WriteIo io;
  io.sink = &sink;
  auto failed = [&](const std::string& what) {
    if (!io.status.ok()) return io.status;
    return Status::Internal("tiff: libtiff failed " + what + " " + spec.path + ": " +
                            messages.Text());
  };
  OptionsPtr open_options = MakeOpenOptions(&messages);
  if (open_options == nullptr) return Status::ResourceExhausted("tiff: out of memory");
  TiffPtr tif(TIFFClientOpenExt(spec.path.c_str(), plan.bigtiff ? "w8" : "w", &io, &WriteModeRead,
                                &WriteModeWrite, &WriteModeSeek, &CloseProc, &WriteModeSize, &NoMap,
                                &NoUnmap, open_options.get()));
  if (tif == nullptr) return failed("opening");

  const int bits = static_cast<int>(g.element_size * 8);
  const bool fields_ok =
      TIFFSetField(tif.get(), TIFFTAG_IMAGEWIDTH, static_cast<std::uint32_t>(g.cols)) &&
      TIFFSetField(tif.get(), TIFFTAG_IMAGELENGTH, static_cast<std::uint32_t>(g.rows)) &&
      TIFFSetField(tif.get(), TIFFTAG_SAMPLESPERPIXEL, static_cast<int>(g.channels)) &&
      TIFFSetField(tif.get(), TIFFTAG_BITSPERSAMPLE, bits) &&
      TIFFSetField(tif.get(), TIFFTAG_SAMPLEFORMAT, static_cast<int>(plan.sample_format)) &&
      TIFFSetField(tif.get(), TIFFTAG_PHOTOMETRIC,
                   g.channels == 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK) &&
      TIFFSetField(tif.get(), TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG) &&
      TIFFSetField(tif.get(), TIFFTAG_ROWSPERSTRIP, plan.rows_per_strip) &&
      TIFFSetField(tif.get(), TIFFTAG_COMPRESSION,
                   static_cast<int>(CompressionTag(plan.compression))) &&
      (plan.compression != Compression::kDeflate ||
       TIFFSetField(tif.get(), TIFFTAG_ZIPQUALITY, plan.compress_level));
  if (!fields_ok) return failed("setting the tags of");

  std::uint64_t row = 0;
  for (std::uint32_t s = 0; row < g.rows; ++s) {
    const std::uint64_t rows = std::min<std::uint64_t>(plan.rows_per_strip, g.rows - row);
    const std::size_t bytes = static_cast<std::size_t>(rows * row_bytes);
    content.Fill(strip.span().first(bytes));
    if (TIFFWriteEncodedStrip(tif.get(), s, strip.data(), static_cast<tmsize_t>(bytes)) < 0) {
      return failed("writing strip " + std::to_string(s) + " of");
    }
    row += rows;
  }
  if (!TIFFWriteDirectory(tif.get())) return failed("writing the directory of");
  tif.reset();
  if (!io.status.ok()) return io.status;
  if (messages.errors > 0) return failed("closing");
  return sink.Finish();
}

namespace {

// --- reading ----------------------------------------------------------------

struct ReadIo {
  const unsigned char* data = nullptr;
  std::uint64_t size = 0;
  std::uint64_t position = 0;
};

tmsize_t ReadModeRead(thandle_t handle, void* out, tmsize_t size) {
  auto* io = static_cast<ReadIo*>(handle);
  if (size < 0) return -1;
  if (io->position >= io->size) return 0;
  const std::size_t n = static_cast<std::size_t>(
      std::min<std::uint64_t>(static_cast<std::uint64_t>(size), io->size - io->position));
  std::memcpy(out, io->data + io->position, n);
  io->position += n;
  return static_cast<tmsize_t>(n);
}

tmsize_t ReadModeWrite(thandle_t, void*, tmsize_t) { return -1; }

toff_t ReadModeSeek(thandle_t handle, toff_t offset, int whence) {
  auto* io = static_cast<ReadIo*>(handle);
  return Seek(&io->position, io->size, offset, whence);
}

toff_t ReadModeSize(thandle_t handle) { return static_cast<ReadIo*>(handle)->size; }

// The whole file is in memory: libtiff reads strips straight from it.
int ReadModeMap(thandle_t handle, void** base, toff_t* size) {
  auto* io = static_cast<ReadIo*>(handle);
  *base = const_cast<unsigned char*>(io->data);
  *size = io->size;
  return 1;
}

std::uint64_t LoadU(const std::byte* p, int bytes, bool little) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) {
    const std::uint64_t b = static_cast<std::uint64_t>(p[little ? bytes - 1 - i : i]);
    v = (v << 8) | b;
  }
  return v;
}

// An open TIFF and what it needs to stay valid.
struct OpenTiff {
  ReadIo io;
  Messages messages;
  TiffPtr tif;
  std::uint64_t directory_offset = 0;
  std::uint16_t planar = PLANARCONFIG_CONTIG;
};

// Checks the header (byte order, magic, first directory offset) and opens
// the file with libtiff, which reads the first directory.
Status OpenTiffFile(std::span<const std::byte> file, const std::string& path, OpenTiff* open) {
  InstallTiffHandlers();
  if (file.size() < 8) {
    return image::CorruptAt(path,
                            "truncated tiff file: " + std::to_string(file.size()) +
                                " bytes, shorter than the header; the file ends",
                            file.size());
  }
  const bool little = file[0] == std::byte{'I'};
  const bool bigtiff = LoadU(file.data() + 2, 2, little) == 43;
  const std::size_t offset_at = bigtiff ? 8 : 4;
  const int offset_size = bigtiff ? 8 : 4;
  if (bigtiff && file.size() < 16) {
    return image::CorruptAt(path,
                            "truncated tiff file: " + std::to_string(file.size()) +
                                " bytes, shorter than the BigTIFF header; the file ends",
                            file.size());
  }
  if (bigtiff &&
      (LoadU(file.data() + 4, 2, little) != 8 || LoadU(file.data() + 6, 2, little) != 0)) {
    return image::CorruptAt(path, "corrupt tiff header: BigTIFF offsets are not 8 bytes", 4);
  }
  open->directory_offset = LoadU(file.data() + offset_at, offset_size, little);
  if (open->directory_offset < offset_at + offset_size || open->directory_offset >= file.size()) {
    return image::CorruptAt(path,
                            "truncated or corrupt tiff file: the first directory offset " +
                                std::to_string(open->directory_offset) +
                                " lies outside the file's " + std::to_string(file.size()) +
                                " bytes; the offset is stored",
                            offset_at);
  }
  open->io.data = reinterpret_cast<const unsigned char*>(file.data());
  open->io.size = file.size();
  CurrentMessages current(&open->messages);
  OptionsPtr options = MakeOpenOptions(&open->messages);
  if (options == nullptr) return Status::ResourceExhausted("tiff: out of memory");
  open->tif.reset(TIFFClientOpenExt(path.c_str(), "r", &open->io, &ReadModeRead, &ReadModeWrite,
                                    &ReadModeSeek, &CloseProc, &ReadModeSize, &ReadModeMap,
                                    &NoUnmap, options.get()));
  if (open->tif == nullptr) {
    return image::CorruptAt(
        path, "corrupt tiff (libtiff: " + open->messages.Text() + ") in the directory",
        open->directory_offset);
  }
  return Status::OK();
}

// The decoded layout of the open file's first image.
Status ReadLayout(const std::string& path, std::uint64_t file_size, OpenTiff* open,
                  ImageInfo* info) {
  TIFF* tif = open->tif.get();
  std::uint32_t width = 0;
  std::uint32_t height = 0;
  if (!TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &width) ||
      !TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &height)) {
    return image::CorruptAt(path, "corrupt tiff directory: no ImageWidth or ImageLength",
                            open->directory_offset);
  }
  std::uint16_t spp = 1;
  std::uint16_t bps = 1;
  std::uint16_t format = SAMPLEFORMAT_UINT;
  std::uint16_t planar = PLANARCONFIG_CONTIG;
  std::uint16_t photometric = PHOTOMETRIC_MINISBLACK;
  std::uint16_t compression = COMPRESSION_NONE;
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLESPERPIXEL, &spp);
  TIFFGetFieldDefaulted(tif, TIFFTAG_BITSPERSAMPLE, &bps);
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLEFORMAT, &format);
  TIFFGetFieldDefaulted(tif, TIFFTAG_PLANARCONFIG, &planar);
  TIFFGetFieldDefaulted(tif, TIFFTAG_COMPRESSION, &compression);
  TIFFGetField(tif, TIFFTAG_PHOTOMETRIC, &photometric);
  if (bps != 8 && bps != 16 && bps != 32 && bps != 64) {
    return Status::NotSupported(path + ": tiff images with " + std::to_string(bps) +
                                " bits per sample are not supported (8, 16, 32 or 64)");
  }
  if (format != SAMPLEFORMAT_UINT && format != SAMPLEFORMAT_INT && format != SAMPLEFORMAT_IEEEFP &&
      format != SAMPLEFORMAT_VOID) {
    return Status::NotSupported(path + ": tiff sample format " + std::to_string(format) +
                                " is not supported (unsigned, signed or IEEE float)");
  }
  if (format == SAMPLEFORMAT_IEEEFP && bps == 8) {
    return Status::NotSupported(path + ": 8-bit floating-point tiff samples are not supported");
  }
  if (photometric == PHOTOMETRIC_YCBCR) {
    if (compression == COMPRESSION_JPEG) {
      // Let libjpeg convert to RGB, as PIL and tifffile do.
      TIFFSetField(tif, TIFFTAG_JPEGCOLORMODE, JPEGCOLORMODE_RGB);
    } else {
      std::uint16_t h = 1;
      std::uint16_t v = 1;
      TIFFGetFieldDefaulted(tif, TIFFTAG_YCBCRSUBSAMPLING, &h, &v);
      if (h != 1 || v != 1) {
        return Status::NotSupported(path + ": subsampled YCbCr tiff images are not supported");
      }
    }
  }
  open->planar = planar;
  info->width = width;
  info->height = height;
  info->channels = spp;
  info->bytes_per_sample = bps / 8;
  info->planar = planar == PLANARCONFIG_SEPARATE && spp > 1;
  return image::CheckDecodedSize(path, "tiff", *info, file_size, kMaxExpansion,
                                 open->directory_offset);
}

Status StripOrTileFailure(const std::string& path, OpenTiff* open, const char* what,
                          std::uint32_t index) {
  const std::uint64_t offset = TIFFGetStrileOffset(open->tif.get(), index);
  return image::CorruptAt(path,
                          std::string("corrupt tiff: ") + what + " " + std::to_string(index) +
                              " does not decode (libtiff: " + open->messages.Text() +
                              "); its data start",
                          offset);
}

Status ReadStrips(const std::string& path, OpenTiff* open, const ImageInfo& info, std::byte* out) {
  TIFF* tif = open->tif.get();
  const std::uint64_t planes = info.planar ? info.channels : 1;
  const std::uint64_t row_bytes =
      info.width * (info.planar ? 1 : info.channels) * info.bytes_per_sample;
  const std::uint64_t plane_bytes = row_bytes * info.height;
  std::uint32_t rows_per_strip = 0;
  TIFFGetFieldDefaulted(tif, TIFFTAG_ROWSPERSTRIP, &rows_per_strip);
  if (rows_per_strip == 0 || rows_per_strip > info.height) {
    rows_per_strip = static_cast<std::uint32_t>(info.height);
  }
  const std::uint64_t strips_per_plane =
      info.height == 0 ? 0 : (info.height + rows_per_strip - 1) / rows_per_strip;
  if (TIFFNumberOfStrips(tif) < strips_per_plane * planes) {
    return image::CorruptAt(path,
                            "corrupt tiff directory: " + std::to_string(TIFFNumberOfStrips(tif)) +
                                " strips for an image that needs " +
                                std::to_string(strips_per_plane * planes),
                            open->directory_offset);
  }
  for (std::uint64_t p = 0; p < planes; ++p) {
    for (std::uint64_t s = 0; s < strips_per_plane; ++s) {
      const std::uint64_t first = s * rows_per_strip;
      const std::uint64_t rows = std::min<std::uint64_t>(rows_per_strip, info.height - first);
      const std::uint64_t want = rows * row_bytes;
      const auto strip = static_cast<std::uint32_t>(p * strips_per_plane + s);
      const tmsize_t got = TIFFReadEncodedStrip(
          tif, strip, out + p * plane_bytes + first * row_bytes, static_cast<tmsize_t>(want));
      if (got < 0) return StripOrTileFailure(path, open, "strip", strip);
      if (static_cast<std::uint64_t>(got) != want) {
        return image::CorruptAt(path,
                                "corrupt tiff: strip " + std::to_string(strip) + " decodes to " +
                                    std::to_string(got) + " bytes instead of " +
                                    std::to_string(want) + "; its data start",
                                TIFFGetStrileOffset(tif, strip));
      }
    }
  }
  return Status::OK();
}

Status ReadTiles(const std::string& path, OpenTiff* open, const ImageInfo& info, std::byte* out) {
  TIFF* tif = open->tif.get();
  std::uint32_t tile_width = 0;
  std::uint32_t tile_length = 0;
  if (!TIFFGetField(tif, TIFFTAG_TILEWIDTH, &tile_width) ||
      !TIFFGetField(tif, TIFFTAG_TILELENGTH, &tile_length) || tile_width == 0 || tile_length == 0) {
    return image::CorruptAt(path, "corrupt tiff directory: bad tile dimensions",
                            open->directory_offset);
  }
  const std::uint64_t planes = info.planar ? info.channels : 1;
  const std::uint64_t pixel_bytes = (info.planar ? 1 : info.channels) * info.bytes_per_sample;
  const std::uint64_t row_bytes = info.width * pixel_bytes;
  const std::uint64_t plane_bytes = row_bytes * info.height;
  // A tile may reach past the image (writers pick 256x256 tiles for small
  // images), but its buffer gets the budget of the image itself
  // (image::CheckDecodedSize): a 200-byte file declaring 65535x65535 tiles
  // asked for 12 GB (found by tests/fuzz, docs/fuzzing.md).
  constexpr std::uint64_t kSlack = std::uint64_t{64} << 20;
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  const std::uint64_t budget = open->io.size > (kMax - kSlack) / kMaxExpansion
                                   ? kMax
                                   : open->io.size * kMaxExpansion + kSlack;
  if (pixel_bytes == 0 || tile_width > budget / pixel_bytes ||
      std::uint64_t{tile_width} * pixel_bytes > budget / tile_length ||
      std::uint64_t{tile_width} * pixel_bytes * tile_length >
          std::numeric_limits<std::size_t>::max()) {
    return image::CorruptAt(path,
                            "corrupt tiff directory: tiles of " + std::to_string(tile_width) + "x" +
                                std::to_string(tile_length) + " pixels, more than a file of " +
                                std::to_string(open->io.size) + " bytes can hold",
                            open->directory_offset);
  }
  const std::uint64_t tile_row_bytes = std::uint64_t{tile_width} * pixel_bytes;
  const std::uint64_t tile_bytes = tile_row_bytes * tile_length;
  std::vector<std::byte> tile(static_cast<std::size_t>(tile_bytes));
  for (std::uint64_t p = 0; p < planes; ++p) {
    for (std::uint64_t y = 0; y < info.height; y += tile_length) {
      for (std::uint64_t x = 0; x < info.width; x += tile_width) {
        const std::uint32_t index =
            TIFFComputeTile(tif, static_cast<std::uint32_t>(x), static_cast<std::uint32_t>(y), 0,
                            static_cast<std::uint16_t>(p));
        if (TIFFReadEncodedTile(tif, index, tile.data(), static_cast<tmsize_t>(tile_bytes)) < 0) {
          return StripOrTileFailure(path, open, "tile", index);
        }
        const std::uint64_t rows = std::min<std::uint64_t>(tile_length, info.height - y);
        const std::uint64_t bytes =
            std::min<std::uint64_t>(tile_width, info.width - x) * pixel_bytes;
        for (std::uint64_t r = 0; r < rows; ++r) {
          std::memcpy(out + p * plane_bytes + (y + r) * row_bytes + x * pixel_bytes,
                      tile.data() + r * tile_row_bytes, static_cast<std::size_t>(bytes));
        }
      }
    }
  }
  return Status::OK();
}

}  // namespace

const char* CompressionName(Compression c) {
  switch (c) {
    case Compression::kDeflate:
      return "deflate";
    case Compression::kLzw:
      return "lzw";
    case Compression::kPackBits:
      return "packbits";
    case Compression::kNone:
      break;
  }
  return "none";
}

Result<Compression> ParseCompression(const std::string& name) {
  if (name == "none" || name == "raw") return Compression::kNone;
  if (name == "deflate" || name == "zip" || name == "adobe_deflate") return Compression::kDeflate;
  if (name == "lzw") return Compression::kLzw;
  if (name == "packbits") return Compression::kPackBits;
  return Status::InvalidArgument("tiff: compression '" + name +
                                 "' is not one of none, deflate, lzw, packbits");
}

void InstallTiffHandlers() {
  static HandlerInstall install;  // thread-safe, destroyed when the plugin unloads
}

Result<TiffPlan> PlanTiff(const FileSpec& spec, const WriterOptions& options) {
  image::SpecRules rules;
  rules.format = "tiff";
  rules.max_side = 0xFFFFFFFFu;
  rules.max_bytes = std::uint64_t{1} << 40;
  rules.any_element_type = true;
  IOMIMIC_ASSIGN_OR_RETURN(ImageGeometry g, image::GeometryFromSpec(spec, rules));
  TiffPlan plan;
  plan.geometry = g;
  const std::string& descr = spec.element_type.descr;
  if (descr.size() < 2 || descr == "|b1") {
    return Status::InvalidArgument("tiff: element type '" + spec.element_type.name +
                                   "' is not supported (use an integer or floating-point type)");
  }
  switch (descr[1]) {
    case 'u':
      plan.sample_format = SAMPLEFORMAT_UINT;
      break;
    case 'i':
      plan.sample_format = SAMPLEFORMAT_INT;
      break;
    case 'f':
      plan.sample_format = SAMPLEFORMAT_IEEEFP;
      break;
    default:
      return Status::InvalidArgument("tiff: element type '" + spec.element_type.name +
                                     "' is not supported");
  }
  if (plan.sample_format == SAMPLEFORMAT_IEEEFP && g.element_size < 2) {
    return Status::InvalidArgument("tiff: 8-bit floating point is not supported");
  }

  plan.compression = options.compression;
  plan.compress_level = options.compress_level;
  if (spec.compression == "gzip" || spec.compression == "zip") {
    if (options.compression != Compression::kNone && options.compression != Compression::kDeflate) {
      return Status::InvalidArgument(std::string("tiff: dataset.compression '") + spec.compression +
                                     "' (deflate) contradicts the plugin option compression = " +
                                     CompressionName(options.compression));
    }
    plan.compression = Compression::kDeflate;
    plan.compress_level = std::clamp(spec.compression_level, 1, 9);
  } else if (spec.compression != "none") {
    return Status::NotSupported("tiff: dataset.compression '" + spec.compression +
                                "' is not supported (none, or gzip/zip for deflate; the plugin "
                                "option compression also offers lzw and packbits)");
  }
  if (!TIFFIsCODECConfigured(CompressionTag(plan.compression))) {
    return Status::NotSupported(std::string("tiff: this libtiff has no ") +
                                CompressionName(plan.compression) + " codec");
  }

  const std::uint64_t row_bytes = g.row_bytes();
  std::uint64_t rows = options.rows_per_strip;
  if (rows == 0) rows = std::max<std::uint64_t>(1, kStripBytes / row_bytes);
  rows = std::min(rows, g.rows);
  if (rows * row_bytes > (std::uint64_t{1} << 31)) {
    return Status::InvalidArgument("tiff: strips of " + std::to_string(rows) + " rows of " +
                                   std::to_string(row_bytes) + " bytes exceed 2 GiB");
  }
  plan.rows_per_strip = static_cast<std::uint32_t>(rows);
  // Classic TIFF addresses 4 GiB. LZW can expand noise by up to half.
  const std::uint64_t strips = (g.rows + rows - 1) / rows;
  const std::uint64_t worst =
      g.bytes() + (plan.compression == Compression::kLzw ? g.bytes() / 2 : g.bytes() / 64) +
      strips * 16 + (std::uint64_t{1} << 20);
  plan.bigtiff = worst >= (std::uint64_t{1} << 32);
  return plan;
}

Result<WriterOptions> ParseOptions(const PluginOptions& options) {
  WriterOptions out;
  IOMIMIC_ASSIGN_OR_RETURN(std::string compression, options.GetString("compression", "none"));
  Result<Compression> parsed = ParseCompression(compression);
  if (!parsed.ok()) {
    return Status::InvalidArgument(options.owner() + ": option 'compression' = '" + compression +
                                   "' is not one of none, deflate, lzw, packbits");
  }
  out.compression = *parsed;
  IOMIMIC_ASSIGN_OR_RETURN(
      std::int64_t level,
      image::IntOptionIn(options, "compress_level", 6, 1, 9, "is not a deflate level (1-9)"));
  out.compress_level = static_cast<int>(level);
  IOMIMIC_ASSIGN_OR_RETURN(std::int64_t rows,
                           image::IntOptionIn(options, "rows_per_strip", 0, 0, 0xFFFFFFFFll,
                                              "is out of range (0 = automatic)"));
  out.rows_per_strip = static_cast<std::uint32_t>(rows);
  return out;
}

Status TiffCodec::CheckSignature(std::span<const std::byte> head, const std::string& path) const {
  const auto at = [&](std::size_t i) { return static_cast<unsigned char>(head[i]); };
  if (!head.empty() && at(0) != 'I' && at(0) != 'M') {
    return image::CorruptAt(path, "not a tiff file (bad byte order mark)", 0);
  }
  if (head.size() >= 2 && at(1) != at(0)) {
    return image::CorruptAt(path, "not a tiff file (bad byte order mark)", 1);
  }
  if (head.size() >= 4) {
    const bool little = at(0) == 'I';
    const unsigned magic = little ? at(2) | (at(3) << 8) : (at(2) << 8) | at(3);
    if (magic != 42 && magic != 43) {
      return image::CorruptAt(
          path, "not a tiff file (magic number " + std::to_string(magic) + ", not 42 or 43)", 2);
    }
    return Status::OK();
  }
  return image::CorruptAt(path,
                          "truncated tiff file: " + std::to_string(head.size()) +
                              " bytes, shorter than the header; the file ends",
                          head.size());
}

Status TiffCodec::ReadHeader(std::span<const std::byte> file, const std::string& path,
                             ImageInfo* info) const {
  OpenTiff open;
  IOMIMIC_RETURN_IF_ERROR(OpenTiffFile(file, path, &open));
  CurrentMessages current(&open.messages);
  return ReadLayout(path, file.size(), &open, info);
}

Status TiffCodec::Decode(std::span<const std::byte> file, const std::string& path, Storage& storage,
                         Buffer* pixels, ImageInfo* info) const {
  OpenTiff open;
  IOMIMIC_RETURN_IF_ERROR(OpenTiffFile(file, path, &open));
  CurrentMessages current(&open.messages);
  IOMIMIC_RETURN_IF_ERROR(ReadLayout(path, file.size(), &open, info));
  IOMIMIC_ASSIGN_OR_RETURN(std::byte * out, image::PixelsFor(storage, pixels, *info, "tiff"));
  if (TIFFIsTiled(open.tif.get())) return ReadTiles(path, &open, *info, out);
  return ReadStrips(path, &open, *info, out);
}

}  // namespace iomimic::tiff

namespace {

const IomimicOptionSpec kTiffOptions[] = {
    {"compression", "string", "none",
     "compression of the strips: none, deflate, lzw or packbits (dataset.compression gzip or zip "
     "also means deflate)"},
    {"compress_level", "int", "6", "deflate level, 1-9"},
    {"rows_per_strip", "int", "0", "rows per strip; 0 = as many as fit in 64 KiB (like PIL)"},
};

}  // namespace

IOMIMIC_DEFINE_IMAGE_FORMAT_PLUGIN(
    "tiff", "1.0.0",
    "TIFF images written with libtiff (greyscale or RGB, any numeric type, one image per file, "
    "uncompressed or deflate/lzw/packbits), read whole and decoded like tifffile.imread",
    kTiffOptions,
    (iomimic::image::CodecWithOptions<iomimic::tiff::TiffCodec, iomimic::tiff::ParseOptions>));
