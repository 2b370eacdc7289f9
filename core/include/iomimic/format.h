// iomimic plugin SDK: the format seam.
//
// A Format writes synthetic data files that the real libraries open (numpy,
// h5py, PIL, TensorFlow) and reads samples back with the same access pattern
// the real readers use. Formats know bytes and encodings, never epochs or
// ranks, and never touch the operating system: every byte goes through the
// Storage and File they are handed.
//
// A Format instance is shared by all reader and generator threads of a rank,
// so its methods must be safe to call concurrently. A FileReader is used by
// one thread at a time.

#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "iomimic/buffer.h"
#include "iomimic/random.h"
#include "iomimic/status.h"
#include "iomimic/storage.h"

namespace iomimic {

// A NumPy element type. `name` is NumPy's name ("uint8", "float32"), `descr`
// its little-endian array-interface string ("|u1", "<f4").
struct ElementType {
  std::string name = "uint8";
  std::string descr = "|u1";
  std::size_t size = 1;

  // Parses a NumPy dtype name; kInvalidArgument lists the accepted names.
  static Result<ElementType> FromName(std::string_view name) {
    struct Entry {
      const char* name;
      const char* descr;
      std::size_t size;
    };
    static constexpr Entry kTable[] = {
        {"uint8", "|u1", 1},   {"int8", "|i1", 1},    {"uint16", "<u2", 2},  {"int16", "<i2", 2},
        {"uint32", "<u4", 4},  {"int32", "<i4", 4},   {"uint64", "<u8", 8},  {"int64", "<i8", 8},
        {"float16", "<f2", 2}, {"float32", "<f4", 4}, {"float64", "<f8", 8}, {"bool", "|b1", 1},
    };
    std::string_view n = name;
    if (n == "float") n = "float64";
    if (n == "int") n = "int64";
    if (n == "half") n = "float16";
    if (n == "double") n = "float64";
    if (n == "single") n = "float32";
    for (const Entry& e : kTable) {
      if (n == e.name) return ElementType{e.name, e.descr, e.size};
    }
    std::string msg = "unknown element type '" + std::string(name) + "' (expected one of:";
    for (const Entry& e : kTable) msg += std::string(" ") + e.name;
    msg += ")";
    return Status::InvalidArgument(std::move(msg));
  }
};

// Everything a format needs to write one file.
struct FileSpec {
  // The final path of the data file (the File handed to WriteFile is open on
  // a temporary name that the core renames to this when WriteFile succeeds).
  // Formats derive companion files (index files) from it.
  std::string path;
  std::uint64_t file_index = 0;             // global index in the dataset (train then eval)
  std::vector<std::uint64_t> sample_shape;  // per-sample dimensions, e.g. {d1, d2}
  ElementType element_type;
  std::uint64_t num_samples = 1;     // samples (records) in this file
  std::uint64_t seed = 0;            // content seed; same seed, same bytes
  std::string compression = "none";  // none, gzip, lzf, bz2, zip, xz
  int compression_level = 4;
  // What sample payloads contain (manifest iomimic.content,
  // iomimic.compress_percentage, iomimic.dedupe_percentage). Every format that
  // writes payload bytes takes them from PayloadContent() (or from a
  // ContentStream built with these options), so the controls reach the files;
  // image encoders compress their pixels their own way.
  ContentOptions content;
  // The dataset keys meant for formats (docs/manifest.md: keys marked as
  // format parameters), as text, named by their path below `dataset.`:
  // "generation_buffer_size" (bytes), a format's own "<format>.<key>" (for
  // example "<format>.chunk_dims" = "64,64"). Lists are comma-separated and
  // absent when empty; lists of maps ("<format>.columns") are records
  // joined by ';', each its fields joined by ':' in the key's field order,
  // absent fields empty. A format plugin that declares an option of the same
  // name receives the value as that option too.
  std::map<std::string, std::string> parameters;

  std::uint64_t sample_elements() const {
    std::uint64_t n = 1;
    for (std::uint64_t d : sample_shape) n *= d;
    return n;
  }
  std::uint64_t sample_bytes() const { return sample_elements() * element_type.size; }
  // The content stream of this file's payload from byte `position`: `seed`
  // with `content`, every byte reduced to 0 or 1 for bool element types.
  ContentStream PayloadContent(std::uint64_t position = 0) const {
    return ContentStream(seed, content, element_type.descr == "|b1", position);
  }
};

// Static facts about a format, reported by `iomimic plugins` and used by the
// core to plan (never to special-case a format by name).
struct FormatTraits {
  std::string extension;           // file name extension without the dot
  bool multi_sample_files = true;  // false: one sample per file (images)
  bool partial_reads = false;      // a sample read touches only its bytes
  bool needs_host_decode = false;  // the data must be decoded in host memory
  bool predictable_size = false;   // ExpectedFileSize is exact
  // Files are read as a stream from the start (TFRecord): reading sample i
  // costs reading samples 0..i. The core then reads each file's samples in
  // order with one reader, as tf.data does, instead of one reader per sample.
  bool streamed = false;
  // The one NumPy element type the format writes ("uint8" for images that
  // PIL encodes), or empty when any is fine. A manifest asking for another
  // gets this one, with a warning, as DLIO does for its image formats.
  std::string element_type;
};

// How samples are read. `read_type` follows DLIO: on_demand opens, reads and
// closes per sample; memory keeps what was read for the reader's lifetime.
struct ReaderOptions {
  Storage* storage = nullptr;       // where to open files and allocate buffers
  bool decode = true;               // parse/decode what was read
  bool keep_in_memory = false;      // read_type: memory
  std::uint64_t transfer_size = 0;  // streaming chunk size, 0 = format default
};

// A sample as returned by a reader. `data` stays valid until the next call on
// the same reader. `bytes` is the sample's payload size (the decoded size when
// decoding); for formats that read more than the sample (whole-file readers)
// the storage layer counts the extra bytes separately.
struct SampleView {
  std::span<const std::byte> data;
  std::uint64_t bytes = 0;
};

// A span of bytes in a file.
struct ByteRange {
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
};

// Where the sample payloads of a file lie, for formats that can write a file
// in parts: a frame (headers, metadata, companion files) written once, and a
// payload region of payload_bytes bytes from payload_offset that holds the
// samples' bytes (in whatever order the format stores them). Shared-file
// generation writes the frame on one rank, then every rank writes its own
// slice of the payload.
struct PayloadLayout {
  std::uint64_t payload_offset = 0;
  std::uint64_t payload_bytes = 0;
  std::uint64_t file_size = 0;  // the size of the complete file
};

class FileReader {
 public:
  FileReader() = default;
  FileReader(const FileReader&) = delete;
  FileReader& operator=(const FileReader&) = delete;
  virtual ~FileReader() = default;

  // Number of samples in the file (from its own metadata).
  virtual std::uint64_t num_samples() const = 0;

  // Reads sample `index` (0-based within the file) with the access pattern of
  // the real reader. kOutOfRange past the end; kCorruption when the bytes do
  // not parse, with the file path and offset in the message.
  virtual Result<SampleView> ReadSample(std::uint64_t index) = 0;

  // For collective back ends (MPI-IO), which read the samples of a whole
  // step in one call: the byte ranges of data_file() that sample `index`
  // occupies. Formats with true partial reads (indexed binary, contiguous
  // HDF5) override both; whole-file and streaming formats keep the default
  // kNotSupported, and the core then refuses collective reading for them.
  virtual Result<std::vector<ByteRange>> SampleRanges(std::uint64_t index) {
    (void)index;
    return Status::NotSupported("this format cannot describe a sample as byte ranges");
  }
  // The open data file SampleRanges refers to (owned by the reader), or null.
  virtual File* data_file() { return nullptr; }
};

class Format {
 public:
  Format() = default;
  Format(const Format&) = delete;
  Format& operator=(const Format&) = delete;
  virtual ~Format() = default;

  // The plugin name, e.g. "myformat" (what dataset.format names).
  virtual std::string name() const = 0;

  virtual FormatTraits traits() const = 0;

  // Checks that `spec` can be written (shape rank, dtype, compression) before
  // any file is created. kInvalidArgument/kNotSupported with a reason.
  virtual Status Validate(const FileSpec& spec) const = 0;

  // The exact size WriteFile will produce, or kNotSupported when it depends
  // on content (compression, images). Used to recognise complete files.
  virtual Result<std::uint64_t> ExpectedFileSize(const FileSpec& spec) const = 0;

  // The companion files WriteFile writes beside spec.path (index files), by
  // path; none by default. The core regenerates a complete data file whose
  // companion is missing, so WriteFile must write them all again. Pure,
  // thread-safe.
  virtual std::vector<std::string> CompanionPaths(const FileSpec& spec) const {
    (void)spec;
    return {};
  }

  // Writes one complete file described by `spec` into `file` (opened for
  // writing, empty). `storage` allocates buffers and holds companion files a
  // format may write next to spec.path (write them to a temporary name and
  // rename them, so a failure never leaves a partial one). Memory used is
  // bounded (streams large files in chunks). Thread-safe.
  virtual Status WriteFile(Storage& storage, File& file, const FileSpec& spec) = 0;

  // Writing a file in parts (optional; the defaults say kNotSupported, and the
  // core then writes each file whole, on one rank, with WriteFile). A format
  // that implements them produces, through WriteFrame followed by FillPayload
  // for every payload byte, exactly the file WriteFile would write.
  //
  // OK when `spec`'s file can be written in parts, otherwise kNotSupported
  // with the reason (compression, chunking, several datasets per record).
  // Pure: the same answer for the same spec on every rank.
  virtual Status CanWriteInParts(const FileSpec& spec) const {
    (void)spec;
    return Status::NotSupported("format '" + name() + "' cannot write a file in parts");
  }

  // Writes everything of `spec`'s file but the sample payloads into `file`
  // (open for writing, empty), and companion files as WriteFile does, and
  // returns where the payloads go. The payload region may be left as a hole.
  // Called only after CanWriteInParts(spec) said OK.
  virtual Result<PayloadLayout> WriteFrame(Storage& storage, File& file, const FileSpec& spec) {
    (void)storage;
    (void)file;
    return NotInParts(spec, "WriteFrame");
  }

  // Fills `out` with bytes [position, position + out.size()) of the payload
  // region of `spec`'s file (position 0 = payload_offset in the file), the
  // bytes WriteFile would put there. Thread-safe; no I/O.
  virtual Status FillPayload(const FileSpec& spec, std::uint64_t position,
                             std::span<std::byte> out) const {
    (void)position;
    (void)out;
    return NotInParts(spec, "FillPayload");
  }

  // Opens `path` for reading samples. The reader owns whatever it opens.
  // With read_type on_demand the core opens a reader per sample, so state
  // worth keeping across samples of a file (an index) belongs in the Format.
  virtual Result<std::unique_ptr<FileReader>> OpenReader(const std::string& path,
                                                         const ReaderOptions& options) = 0;

 private:
  // Why the default WriteFrame/FillPayload cannot run.
  Status NotInParts(const FileSpec& spec, const char* method) const {
    Status why = CanWriteInParts(spec);
    return why.ok() ? Status::Internal("format '" + name() + "' does not implement " + method)
                    : why;
  }
};

}  // namespace iomimic
