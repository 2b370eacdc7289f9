// iomimic plugin SDK: the image format shell (header-only). A format author
// writes only its bytes, an ImageCodec (iomimic/image_codec.h), and declares
// the plugin with IOMIMIC_DEFINE_IMAGE_FORMAT_PLUGIN; this header supplies
// the rest: the Format (ImageFormat: one image per file, traits, Validate,
// ExpectedFileSize, WriteFile, OpenReader) and the reader (ImageReader).
// The bundled image plugins are built exactly this way; so is
// examples/raw_image. docs/plugins.md ("Image formats") has the walk-through.
//
// ImageReader reads an image file the way DLIO's image reader does,
// np.asarray(PIL.Image.open(path)). DLIO's reader, traced at the system-call
// level (docs/dlio-compat.md §2.4; resnet50_small): open, fstat, then
// one strictly sequential pass over the whole file, and close:
//   read 4 KiB at 0 (Image.open's buffered header read),
//   reads that end on multiples of 64 KiB (ImageFile.load's 64 KiB blocks;
//     the first one is 61,440 bytes, from 4 KiB to 64 KiB),
//   a final read at the end of the file that returns 0 bytes.
// ImageReader issues exactly these requests: 4 KiB at 0, requests ending on
// multiples of the transfer size (ReaderOptions::transfer_size, default
// 64 KiB) up to the size fstat reported, then a 4 KiB read at the end that
// must return 0 (if the file grew meanwhile, reading goes on until one
// does). The whole file lands in one buffer from the storage; then, with
// decoding on, the codec decodes it from memory into the pixel buffer,
// which the reader reuses. With decoding off only the header is parsed (as
// Image.open does) so the sample size is known; the pixels are not decoded.
//
// Every file holds one sample (index 0). OpenReader performs the open, the
// fstat and the 4 KiB header read and checks the format's signature; the
// first ReadSample finishes that load. With read_type on_demand every
// further ReadSample performs a whole load again (open, reads, close); with
// keep_in_memory the decoded image is kept and served from memory.

#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <utility>

#include "iomimic/buffer.h"
#include "iomimic/format.h"
#include "iomimic/format_helpers.h"
#include "iomimic/guard.h"
#include "iomimic/image_codec.h"
#include "iomimic/plugin.h"
#include "iomimic/status.h"
#include "iomimic/storage.h"

namespace iomimic::image {

// The whole-file reader of the shell (see the top of this header).
class ImageReader final : public FileReader {
 public:
  // Opens `path` on options.storage and performs the start of the first load
  // (open, fstat, 4 KiB header read, signature check). `codec` must outlive
  // the reader. kInvalidArgument without a storage; the storage's errors;
  // kCorruption from the signature check. Never throws.
  static Result<std::unique_ptr<FileReader>> Open(const std::string& path,
                                                  const ReaderOptions& options,
                                                  const ImageCodec& codec) {
    return OpenReaderGuarded(
        codec.name(), path, options, [&]() -> Result<std::unique_ptr<FileReader>> {
          std::unique_ptr<ImageReader> reader(new ImageReader(path, options, codec));
          Status s = reader->BeginLoad();
          if (!s.ok()) {
            reader->AbortLoad();
            return s;
          }
          return std::unique_ptr<FileReader>(std::move(reader));
        });
  }

  ~ImageReader() override = default;

  // Always 1: an image file holds one sample.
  std::uint64_t num_samples() const override { return 1; }

  // The decoded image (decode on) or just its size (decode off). kOutOfRange
  // for index > 0; kCorruption naming the path and offset for damaged files.
  // A failed load leaves nothing open; the next call starts afresh.
  Result<SampleView> ReadSample(std::uint64_t index) override {
    const auto reset = [&] {
      AbortLoad();
      loaded_ = false;
    };
    return ReadSampleGuarded(
        codec_.name(), path_, [&] { return ReadSampleImpl(index); }, reset);
  }

  // For tests: loads performed, the last image's layout, the last file size.
  std::uint64_t loads() const { return loads_; }
  const ImageInfo& info() const { return info_; }
  std::uint64_t file_bytes() const { return file_bytes_; }

 private:
  ImageReader(std::string path, const ReaderOptions& options, const ImageCodec& codec)
      : path_(std::move(path)),
        codec_(codec),
        storage_(options.storage),
        decode_(options.decode),
        keep_in_memory_(options.keep_in_memory) {
    if (options.transfer_size != 0) transfer_ = std::min(options.transfer_size, kMaxTransferSize);
  }

  // Drops a load in progress (closing the file); the next read starts afresh.
  void AbortLoad() {
    file_.reset();
    begun_ = false;
    have_ = 0;
    short_read_ = false;
  }

  // One read request of `out.size()` bytes at `offset`; `*got` is what came.
  Status ReadChunk(std::uint64_t offset, std::span<std::byte> out, std::size_t* got) {
    Result<std::size_t> n = file_->ReadAt(offset, out);
    if (!n.ok()) return n.status().WithContext(std::string(codec_.name()) + ": reading " + path_);
    *got = std::min(*n, out.size());
    return Status::OK();
  }

  // Open, fstat, the 4 KiB read at 0 and the signature check.
  Status BeginLoad() {
    OpenOptions open_options;
    open_options.mode = OpenMode::kRead;
    open_options.hint = AccessHint::kWholeFile;
    IOMIMIC_ASSIGN_OR_RETURN(file_, storage_->Open(path_, open_options));
    Result<std::uint64_t> size = file_->Size();
    if (!size.ok()) {
      return size.status().WithContext(std::string(codec_.name()) + ": size of " + path_);
    }
    if (*size > std::numeric_limits<std::size_t>::max() - kProbeSize) {
      return Status::ResourceExhausted(path_ + ": " + std::to_string(*size) +
                                       " bytes do not fit this address space");
    }
    const std::size_t capacity = std::max<std::size_t>(static_cast<std::size_t>(*size), kProbeSize);
    IOMIMIC_RETURN_IF_ERROR(EnsureHostBuffer(*storage_, encoded_, capacity, codec_.name()));

    // Image.open: one buffered 4 KiB read, then the format is identified.
    std::size_t got = 0;
    IOMIMIC_RETURN_IF_ERROR(ReadChunk(0, encoded_.span().first(kProbeSize), &got));
    have_ = got;
    short_read_ = got < kProbeSize;
    if (got == 0) {
      return CorruptAt(path_, std::string("truncated ") + codec_.name() + " file: it is empty", 0);
    }
    IOMIMIC_RETURN_IF_ERROR(codec_.CheckSignature(encoded_.span().first(got), path_));
    begun_ = true;
    return Status::OK();
  }

  // The rest of the file in transfer-size blocks, then the read at the end.
  Status ReadToEnd() {
    IOMIMIC_RETURN_IF_ERROR(EnsureHostBuffer(*storage_, eof_probe_, kProbeSize, codec_.name()));
    while (true) {
      const std::uint64_t capacity = encoded_.size();
      if (!short_read_ && have_ < capacity) {
        // ImageFile.load: blocks that end on transfer-size boundaries.
        const std::uint64_t end = std::min(capacity, (have_ / transfer_ + 1) * transfer_);
        std::span<std::byte> out = encoded_.span().subspan(static_cast<std::size_t>(have_),
                                                           static_cast<std::size_t>(end - have_));
        std::size_t got = 0;
        IOMIMIC_RETURN_IF_ERROR(ReadChunk(have_, out, &got));
        have_ += got;
        short_read_ = got < out.size();
        continue;
      }
      // The read at the end of the file that returns nothing.
      std::size_t got = 0;
      IOMIMIC_RETURN_IF_ERROR(ReadChunk(have_, eof_probe_.span().first(kProbeSize), &got));
      if (got == 0) return Status::OK();
      IOMIMIC_RETURN_IF_ERROR(Grow(capacity, got));
    }
  }

  // The file is longer than fstat said: moves what was read into a larger
  // buffer, followed by the `got` bytes the read at the end returned.
  Status Grow(std::uint64_t capacity, std::size_t got) {
    const std::uint64_t wanted = std::max<std::uint64_t>(capacity * 2, have_ + got + transfer_);
    if (wanted > std::numeric_limits<std::size_t>::max()) {
      return Status::ResourceExhausted(path_ + ": file keeps growing past this address space");
    }
    IOMIMIC_ASSIGN_OR_RETURN(
        Buffer larger,
        AllocateHostBuffer(*storage_, static_cast<std::size_t>(wanted), codec_.name()));
    std::memcpy(larger.data(), encoded_.data(), static_cast<std::size_t>(have_));
    std::memcpy(larger.data() + have_, eof_probe_.data(), got);
    encoded_ = std::move(larger);
    have_ += got;
    short_read_ = got < kProbeSize;
    return Status::OK();
  }

  // Reads to the end, closes, and decodes (or parses the header).
  Status FinishLoad() {
    IOMIMIC_RETURN_IF_ERROR(ReadToEnd());
    Status closed = file_->Close();
    file_.reset();
    begun_ = false;
    if (!closed.ok()) return closed.WithContext(std::string(codec_.name()) + ": closing " + path_);
    file_bytes_ = have_;
    const std::span<const std::byte> file(encoded_.data(), static_cast<std::size_t>(have_));
    have_ = 0;
    short_read_ = false;
    ImageInfo info;
    const char* what = decode_ ? "decoding" : "reading";
    const Status parsed = Guard(codec_.name(), what, path_, [&]() -> Status {
      IOMIMIC_RETURN_IF_ERROR(codec_.CheckSignature(file, path_));
      if (decode_) return codec_.Decode(file, path_, *storage_, &pixels_, &info);
      return codec_.ReadHeader(file, path_, &info);
    });
    if (!parsed.ok()) return parsed;
    info_ = info;
    loaded_ = true;
    ++loads_;
    return Status::OK();
  }

  // ReadSample without the clean-up of a failed load.
  Result<SampleView> ReadSampleImpl(std::uint64_t index) {
    if (index >= 1) {
      return Status::OutOfRange(path_ + ": sample index " + std::to_string(index) +
                                " is out of range (an image file holds 1 sample)");
    }
    if (!(keep_in_memory_ && loaded_)) {
      if (!begun_) IOMIMIC_RETURN_IF_ERROR(BeginLoad());
      IOMIMIC_RETURN_IF_ERROR(FinishLoad());
    }
    SampleView view;
    view.bytes = info_.decoded_bytes();
    if (decode_) {
      view.data = std::span<const std::byte>(pixels_.data(), static_cast<std::size_t>(view.bytes));
    }
    return view;
  }

  std::string path_;
  const ImageCodec& codec_;
  Storage* storage_ = nullptr;
  bool decode_ = true;
  bool keep_in_memory_ = false;
  std::uint64_t transfer_ = kDefaultTransferSize;

  std::unique_ptr<File> file_;
  bool begun_ = false;   // BeginLoad done, FinishLoad pending
  bool loaded_ = false;  // a complete load is in memory (keep_in_memory)
  std::uint64_t loads_ = 0;

  Buffer encoded_;           // the file's bytes; capacity >= fstat size
  std::uint64_t have_ = 0;   // bytes of the file read so far
  bool short_read_ = false;  // a read returned less than requested
  std::uint64_t file_bytes_ = 0;
  Buffer eof_probe_;  // kProbeSize bytes for the read at the end
  Buffer pixels_;     // decoded image, reused
  ImageInfo info_;
};

// The Format of every image codec: one image per file, whole-file reads,
// host decoding. Stateless apart from the constant codec, so safe for
// concurrent use (Format's contract, iomimic/format.h).
class ImageFormat final : public Format {
 public:
  // Serves `codec` (not null).
  explicit ImageFormat(std::unique_ptr<const ImageCodec> codec) : codec_(std::move(codec)) {}

  // The codec's name.
  std::string name() const override { return codec_->name(); }

  // Extension = the codec's name, one sample per file, whole-file reads,
  // host decoding; element type and size predictability from the codec.
  FormatTraits traits() const override {
    FormatTraits t;
    t.extension = codec_->name();
    t.element_type = codec_->element_type();
    t.multi_sample_files = false;
    t.partial_reads = false;
    t.needs_host_decode = true;
    t.predictable_size = codec_->predictable_size();
    return t;
  }

  // The codec's CheckSpec, guarded.
  Status Validate(const FileSpec& spec) const override {
    return Guard(codec_->name(), "validating a file spec", "",
                 [&]() -> Status { return codec_->CheckSpec(spec); });
  }

  // The codec's ExpectedFileSize (kNotSupported unless its sizes are
  // predictable).
  Result<std::uint64_t> ExpectedFileSize(const FileSpec& spec) const override {
    return codec_->ExpectedFileSize(spec);
  }

  // The codec's Encode, guarded.
  Status WriteFile(Storage& storage, File& file, const FileSpec& spec) override {
    return Guard(codec_->name(), "writing", spec.path,
                 [&]() -> Status { return codec_->Encode(storage, file, spec); });
  }

  // An ImageReader with the codec.
  Result<std::unique_ptr<FileReader>> OpenReader(const std::string& path,
                                                 const ReaderOptions& options) override {
    return ImageReader::Open(path, options, *codec_);
  }

  // The codec, for tests.
  const ImageCodec& codec() const { return *codec_; }

 private:
  const std::unique_ptr<const ImageCodec> codec_;
};

// The plugin factory of IOMIMIC_DEFINE_IMAGE_FORMAT_PLUGIN: wraps what a
// codec factory returned (a codec, or the error parsing the options) in an
// ImageFormat.
template <typename CodecPtr>
Result<std::unique_ptr<Format>> MakeImageFormat(Result<CodecPtr> codec) {
  if (!codec.ok()) return codec.status();
  return std::unique_ptr<Format>(new ImageFormat(std::move(codec).value()));
}

// A CODEC_FACTORY for IOMIMIC_DEFINE_IMAGE_FORMAT_PLUGIN: `Parse`, a
// function (const PluginOptions&) -> Result<O>, reads the options; the codec
// is Codec(O). Parse's error is the plugin's error.
template <typename Codec, auto Parse>
Result<std::unique_ptr<Codec>> CodecWithOptions(const PluginOptions& options) {
  IOMIMIC_ASSIGN_OR_RETURN(auto parsed, Parse(options));
  return std::make_unique<Codec>(parsed);
}

// A CODEC_FACTORY for codecs without options: Codec().
template <typename Codec>
Result<std::unique_ptr<Codec>> CodecWithoutOptions(const PluginOptions& /*options*/) {
  return std::make_unique<Codec>();
}

}  // namespace iomimic::image

// Defines the descriptor of an image format plugin (capability
// IOMIMIC_CAP_HOST_DECODE). OPTIONS is the option table (IOMIMIC_NO_OPTIONS
// for none); CODEC_FACTORY is a callable (const iomimic::PluginOptions&) ->
// Result<std::unique_ptr<C>> with C an ImageCodec: it parses the options
// (kInvalidArgument naming options.owner() for bad values) and makes the
// codec (CodecWithOptions and CodecWithoutOptions above are such
// factories; a factory with commas must be in parentheses).
#define IOMIMIC_DEFINE_IMAGE_FORMAT_PLUGIN(NAME, VERSION, DESCRIPTION, OPTIONS, CODEC_FACTORY) \
  IOMIMIC_DEFINE_FORMAT_PLUGIN(                                                                \
      NAME, VERSION, DESCRIPTION, IOMIMIC_CAP_HOST_DECODE, OPTIONS,                            \
      [](const ::iomimic::PluginContext& context) {                                            \
        return ::iomimic::image::MakeImageFormat((CODEC_FACTORY)(context.options));            \
      })
