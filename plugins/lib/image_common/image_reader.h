// Shared by the png, jpeg and tiff format plugins: reading an image file the
// way DLIO's image reader does, np.asarray(PIL.Image.open(path)).
//
// DLIO's reader, traced at the system-call level (docs/dlio-compat.md §2.4;
// resnet50_small, jpeg): open, fstat, then one strictly sequential pass over
// the whole file, and close:
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

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "iomimic/buffer.h"
#include "iomimic/format.h"
#include "iomimic/status.h"
#include "iomimic/storage.h"

namespace iomimic::image {

// Image.open's first read.
inline constexpr std::size_t kProbeSize = 4096;
// PIL's ImageFile.MAXBLOCK: ImageFile.load reads the file in 64 KiB blocks.
inline constexpr std::uint64_t kDefaultTransferSize = 65536;
// Transfer sizes above this are clamped.
inline constexpr std::uint64_t kMaxTransferSize = std::uint64_t{1} << 30;

// What a decoded image looks like in memory: height rows of width pixels of
// `channels` interleaved samples of bytes_per_sample bytes (little-endian),
// or, with `planar`, `channels` planes of height x width.
struct ImageInfo {
  std::uint64_t width = 0;
  std::uint64_t height = 0;
  std::uint64_t channels = 0;
  std::size_t bytes_per_sample = 1;
  bool planar = false;

  std::uint64_t decoded_bytes() const { return width * height * channels * bytes_per_sample; }
};

// Returns kCorruption "<path>: <what> at offset <offset>".
Status CorruptAt(const std::string& path, const std::string& what, std::uint64_t offset);

// Checks that a header's declared image can come out of `file_size` bytes
// (at most `max_ratio` decoded bytes per file byte, plus 64 MiB), so a
// damaged header cannot make the reader allocate absurd amounts of memory.
Status CheckDecodedSize(const std::string& path, const char* format, const ImageInfo& info,
                        std::uint64_t file_size, std::uint64_t max_ratio,
                        std::uint64_t header_offset);

// One image codec (png, jpeg, tiff): stateless, safe for concurrent use.
class ImageCodec {
 public:
  virtual ~ImageCodec() = default;

  // The format name for messages ("png").
  virtual const char* name() const = 0;

  // Checks the format signature at the start of the file (`head` is what the
  // first read returned, possibly less than kProbeSize bytes). kCorruption
  // naming `path` and the offset when the file is not of this format.
  virtual Status CheckSignature(std::span<const std::byte> head, const std::string& path) const = 0;

  // Parses only the header of the complete file `file` (what Image.open
  // does) and fills `info` with what a decode would produce. kCorruption
  // with path and offset when the header is damaged; kNotSupported for
  // valid images this codec cannot decode.
  virtual Status ReadHeader(std::span<const std::byte> file, const std::string& path,
                            ImageInfo* info) const = 0;

  // Decodes the complete file `file` into `*pixels` (grown with `storage`
  // when too small, otherwise reused) and fills `info`. Errors as ReadHeader,
  // and kCorruption for damaged image data (checksums, truncation).
  virtual Status Decode(std::span<const std::byte> file, const std::string& path, Storage& storage,
                        Buffer* pixels, ImageInfo* info) const = 0;
};

class ImageReader final : public FileReader {
 public:
  // Opens `path` on options.storage and performs the start of the first load
  // (open, fstat, 4 KiB header read, signature check). `codec` must outlive
  // the reader. Never throws.
  static Result<std::unique_ptr<FileReader>> Open(const std::string& path,
                                                  const ReaderOptions& options,
                                                  const ImageCodec& codec);

  ~ImageReader() override = default;

  // Always 1: an image file holds one sample.
  std::uint64_t num_samples() const override { return 1; }

  // The decoded image (decode on) or just its size (decode off). kOutOfRange
  // for index > 0; kCorruption naming the path and offset for damaged files.
  Result<SampleView> ReadSample(std::uint64_t index) override;

  // For tests: loads performed, the last image's layout, the last file size.
  std::uint64_t loads() const { return loads_; }
  const ImageInfo& info() const { return info_; }
  std::uint64_t file_bytes() const { return file_bytes_; }

 private:
  ImageReader(std::string path, const ReaderOptions& options, const ImageCodec& codec);

  Status BeginLoad();
  Status FinishLoad();
  Status ReadToEnd();
  Status ReadChunk(std::uint64_t offset, std::span<std::byte> out, std::size_t* got);
  Result<SampleView> ReadSampleImpl(std::uint64_t index);
  void AbortLoad();

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

}  // namespace iomimic::image
