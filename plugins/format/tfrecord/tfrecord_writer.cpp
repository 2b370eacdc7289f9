#include "tfrecord_writer.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <new>
#include <utility>

#include "crc32c.h"
#include "example_wire.h"
#include "iomimic/format_helpers.h"
#include "iomimic/guard.h"

namespace iomimic::tfrecord {
namespace {

// Smallest chunk honoured: records and index lines may straddle chunks, but a
// tiny chunk would only multiply requests.
constexpr std::size_t kMinChunkSize = 4096;
// Room for one "<offset> <length>\n" line of the index.
constexpr std::size_t kMaxIndexLine = 2 * 20 + 2;

std::string_view Basename(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// The folder part of `path`: "" for a bare name, "/" for a top-level entry.
std::string_view Parent(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return {};
  if (slash == 0) return path.substr(0, 1);
  return path.substr(0, slash);
}

std::string Join(std::string_view dir, std::string_view name) {
  std::string out(dir);
  if (!out.empty() && out.back() != '/') out += '/';
  out += name;
  return out;
}

bool IsSplitName(std::string_view name) { return name == "train" || name == "valid"; }

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Writes the decimal digits of `v` at `out` (at most 20); returns how many.
std::size_t AppendDecimal(std::uint64_t v, char* out) {
  return static_cast<std::size_t>(std::to_chars(out, out + 20, v).ptr - out);
}

// Streams bytes to a File in chunk-aligned WriteAt requests.
class ChunkWriter {
 public:
  ChunkWriter(File& file, const std::string& path, std::span<std::byte> buffer)
      : file_(file), path_(path), buffer_(buffer) {}

  // Free space of the current chunk; never empty.
  std::span<std::byte> Writable() { return buffer_.subspan(fill_); }

  // Accounts for `n` bytes placed at the start of Writable().
  Status Commit(std::size_t n) {
    fill_ += n;
    position_ += n;
    if (fill_ < buffer_.size()) return Status::OK();
    return Flush();
  }

  Status Append(std::span<const std::byte> bytes) { return AppendToSink(*this, bytes); }

  Status Append(std::string_view text) {
    return Append(std::as_bytes(std::span<const char>(text.data(), text.size())));
  }

  // Writes the partly filled last chunk.
  Status Finish() { return fill_ > 0 ? Flush() : Status::OK(); }

  std::uint64_t position() const { return position_; }

 private:
  Status Flush() {
    Status s = file_.WriteAt(position_ - fill_, buffer_.first(fill_));
    fill_ = 0;
    if (!s.ok()) return s.WithContext("tfrecord: writing " + path_);
    return s;
  }

  File& file_;
  const std::string& path_;
  std::span<std::byte> buffer_;
  std::size_t fill_ = 0;
  std::uint64_t position_ = 0;
};

std::size_t ChunkSize(Storage& storage, std::size_t wanted) {
  std::size_t align = storage.capabilities().alignment;
  if (align == 0) align = 1;
  const std::size_t chunk = std::max(wanted, kMinChunkSize);
  return (chunk + align - 1) / align * align;
}

Status WriteIndex(Storage& storage, const FileSpec& spec, std::uint64_t record_size,
                  std::size_t chunk) {
  const IndexLocation where = IndexLocationFor(spec.path);
  Status s = storage.CreateDirectories(where.directory);
  if (!s.ok()) return s.WithContext("tfrecord: creating the index folder " + where.directory);
  std::string hidden = ".";
  hidden += Basename(where.path);
  hidden += ".iomimic-partial";
  const std::string partial = Join(Parent(where.path), hidden);

  OpenOptions open;
  open.mode = OpenMode::kWrite;
  open.hint = AccessHint::kSequential;
  Result<std::unique_ptr<File>> file = storage.Open(partial, open);
  if (!file.ok()) return file.status().WithContext("tfrecord: creating the index " + where.path);

  Result<Buffer> buffer = AllocateHostBuffer(storage, chunk, "tfrecord");
  if (!buffer.ok()) return buffer.status();
  ChunkWriter out(**file, partial, buffer->span().first(chunk));
  char line[kMaxIndexLine];
  for (std::uint64_t i = 0; i < spec.num_samples && s.ok(); ++i) {
    std::size_t n = AppendDecimal(i * record_size, line);
    line[n++] = ' ';
    n += AppendDecimal(record_size, line + n);
    line[n++] = '\n';
    s = out.Append(std::string_view(line, n));
  }
  if (s.ok()) s = out.Finish();
  if (s.ok()) s = (*file)->Sync();  // durable before it gets its final name
  Status closed = (*file)->Close();
  file->reset();
  if (s.ok()) s = closed;
  if (s.ok()) s = storage.Rename(partial, where.path);
  if (!s.ok()) {
    (void)storage.Remove(partial);  // our own temporary file
    return s.WithContext("tfrecord: writing the index " + where.path);
  }
  return Status::OK();
}

Status WriteTfRecordFileImpl(Storage& storage, File& file, const FileSpec& spec,
                             const WriterOptions& options) {
  IOMIMIC_RETURN_IF_ERROR(ValidateSpec(spec));
  const std::uint64_t sample_bytes = spec.sample_bytes();
  const ExampleLayout layout =
      MakeExampleLayout(sample_bytes, static_cast<std::int64_t>(sample_bytes));
  const std::uint64_t payload = layout.payload_size();
  std::byte header[kHeaderSize];
  EncodeRecordHeader(payload, header);
  const auto prefix = std::as_bytes(std::span<const char>(layout.prefix));
  const auto suffix = std::as_bytes(std::span<const char>(layout.suffix));
  const std::uint32_t prefix_crc = Crc32c(prefix);

  const std::size_t chunk = ChunkSize(storage, options.chunk_size);
  IOMIMIC_ASSIGN_OR_RETURN(Buffer buffer, AllocateHostBuffer(storage, chunk, "tfrecord"));
  ChunkWriter out(file, spec.path, buffer.span().first(chunk));
  ContentStream content = spec.PayloadContent();  // the samples' bytes back to back
  for (std::uint64_t i = 0; i < spec.num_samples; ++i) {
    IOMIMIC_RETURN_IF_ERROR(out.Append(std::span<const std::byte>(header)));
    IOMIMIC_RETURN_IF_ERROR(out.Append(prefix));
    std::uint32_t crc = prefix_crc;
    for (std::uint64_t left = sample_bytes; left > 0;) {
      std::span<std::byte> w = out.Writable();
      const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(w.size(), left));
      content.Fill(w.first(n));
      crc = Crc32cExtend(crc, w.data(), n);
      IOMIMIC_RETURN_IF_ERROR(out.Commit(n));
      left -= n;
    }
    IOMIMIC_RETURN_IF_ERROR(out.Append(suffix));
    crc = Crc32cExtend(crc, suffix.data(), suffix.size());
    std::byte footer[kFooterSize];
    StoreLe32(MaskCrc(crc), footer);
    IOMIMIC_RETURN_IF_ERROR(out.Append(std::span<const std::byte>(footer)));
  }
  IOMIMIC_RETURN_IF_ERROR(out.Finish());
  buffer.Reset();
  if (options.write_index) {
    IOMIMIC_RETURN_IF_ERROR(WriteIndex(storage, spec, kFramingSize + payload,
                                       ChunkSize(storage, std::size_t{1} << 20)));
  }
  return Status::OK();
}

}  // namespace

IndexLocation IndexLocationFor(const std::string& data_path) {
  const std::string_view name = Basename(data_path);
  const std::string_view dir = Parent(data_path);
  std::string_view split_dir;
  if (IsSplitName(Basename(dir))) {
    split_dir = dir;
  } else if (AllDigits(Basename(dir)) && IsSplitName(Basename(Parent(dir)))) {
    split_dir = Parent(dir);  // <split>/<subfolder>/<name>
  }
  IndexLocation where;
  if (split_dir.empty()) {
    where.directory = Join(dir, "index");
  } else {
    where.directory = Join(Join(Parent(split_dir), "index"), Basename(split_dir));
  }
  where.path = Join(where.directory, std::string(name) + ".idx");
  return where;
}

Status ValidateSpec(const FileSpec& spec) {
  if (spec.sample_shape.empty()) {
    return Status::InvalidArgument("tfrecord: sample_shape is empty");
  }
  std::uint64_t bytes = spec.element_type.size;
  if (bytes == 0) {
    return Status::InvalidArgument("tfrecord: element type '" + spec.element_type.name +
                                   "' has size 0");
  }
  for (std::uint64_t d : spec.sample_shape) {
    if (d == 0) return Status::InvalidArgument("tfrecord: sample_shape has a zero dimension");
    if (bytes > kMaxPayloadSize / d) {
      return Status::InvalidArgument(
          "tfrecord: a sample of more than 2 GiB cannot be stored in one tf.train.Example");
    }
    bytes *= d;
  }
  if (spec.num_samples == 0) {
    return Status::InvalidArgument("tfrecord: num_samples must be at least 1");
  }
  if (spec.compression != "none" && !spec.compression.empty()) {
    return Status::NotSupported("tfrecord: compression '" + spec.compression +
                                "' is not supported (DLIO's tfrecord generator ignores the "
                                "compression key and writes plain records; set compression: none)");
  }
  const std::uint64_t payload = ExamplePayloadSize(bytes, static_cast<std::int64_t>(bytes));
  if (payload > kMaxPayloadSize) {
    return Status::InvalidArgument("tfrecord: a serialized tf.train.Example of " +
                                   std::to_string(payload) +
                                   " bytes exceeds protobuf's 2 GiB limit");
  }
  const std::uint64_t record = kFramingSize + payload;
  if (spec.num_samples > (std::uint64_t{1} << 63) / record) {
    return Status::InvalidArgument("tfrecord: file too large (num_samples * record size)");
  }
  return Status::OK();
}

std::uint64_t RecordPayloadSize(const FileSpec& spec) {
  const std::uint64_t bytes = spec.sample_bytes();
  return ExamplePayloadSize(bytes, static_cast<std::int64_t>(bytes));
}

Result<std::uint64_t> ComputeFileSize(const FileSpec& spec) {
  IOMIMIC_RETURN_IF_ERROR(ValidateSpec(spec));
  return spec.num_samples * (kFramingSize + RecordPayloadSize(spec));
}

Status WriteTfRecordFile(Storage& storage, File& file, const FileSpec& spec,
                         const WriterOptions& options) {
  return Guard("tfrecord", "writing", spec.path,
               [&]() -> Status { return WriteTfRecordFileImpl(storage, file, spec, options); });
}

}  // namespace iomimic::tfrecord
