#include "indexed_binary_writer.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <exception>
#include <memory>
#include <new>
#include <numeric>
#include <utility>

#include "iomimic/guard.h"

namespace iomimic::indexed_binary {
namespace {

// Largest data file accepted, so that every offset computation stays far
// from 64-bit overflow.
constexpr std::uint64_t kMaxPayloadBytes = std::uint64_t{1} << 62;

std::uint64_t RoundUp(std::uint64_t value, std::uint64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

// Writes one index file: `count` uint64 entries, entry i = value(i), under a
// temporary name renamed to `path` when complete. `buffer` is the chunk
// buffer (a multiple of 8 bytes is used).
template <typename ValueFn>
Status WriteIndexFile(Storage& storage, const std::string& path, std::uint64_t count, ValueFn value,
                      std::span<std::byte> buffer, Flavor flavor) {
  const std::string name(FlavorName(flavor));
  const std::string partial = PartialPath(path);
  OpenOptions options;
  options.mode = OpenMode::kWrite;
  options.hint = AccessHint::kSequential;
  options.expected_size = count * kIndexEntrySize;
  Result<std::unique_ptr<File>> opened = storage.Open(partial, options);
  if (!opened.ok()) return opened.status().WithContext(name + ": creating index file " + path);
  std::unique_ptr<File> file = std::move(opened).value();

  Status s;
  const std::uint64_t per_chunk = buffer.size() / kIndexEntrySize;
  for (std::uint64_t first = 0; first < count && s.ok(); first += per_chunk) {
    const std::uint64_t n = std::min(per_chunk, count - first);
    for (std::uint64_t i = 0; i < n; ++i) {
      StoreU64(buffer.data() + i * kIndexEntrySize, value(first + i));
    }
    s = file->WriteAt(first * kIndexEntrySize,
                      buffer.first(static_cast<std::size_t>(n * kIndexEntrySize)));
  }
  if (s.ok()) s = file->Sync();  // durable before it gets its final name
  Status closed = file->Close();
  file.reset();
  if (s.ok()) s = closed;
  if (s.ok()) s = storage.Rename(partial, path);
  if (!s.ok()) {
    (void)storage.Remove(partial);  // our own temporary file
    return s.WithContext(name + ": writing index file " + path);
  }
  return Status::OK();
}

// Both index files of spec.path; neither is left behind when one fails.
Status WriteIndexFiles(Storage& storage, const FileSpec& spec, Flavor flavor,
                       std::span<std::byte> chunk) {
  const std::uint64_t sample_bytes = spec.sample_bytes();
  const std::uint64_t count = spec.num_samples;
  IOMIMIC_RETURN_IF_ERROR(WriteIndexFile(
      storage, OffsetIndexPath(spec.path), count,
      [sample_bytes](std::uint64_t i) { return i * sample_bytes; }, chunk, flavor));
  Status sizes = WriteIndexFile(
      storage, SizeIndexPath(spec.path), count,
      [sample_bytes](std::uint64_t) { return sample_bytes; }, chunk, flavor);
  if (!sizes.ok()) {
    // Leave no half index behind: the data file will not be renamed either.
    (void)storage.Remove(OffsetIndexPath(spec.path));
    return sizes;
  }
  return Status::OK();
}

Status WriteImpl(Storage& storage, File& file, const FileSpec& spec, Flavor flavor,
                 const WriterOptions& options) {
  IOMIMIC_RETURN_IF_ERROR(ValidateSpec(spec, flavor));
  IOMIMIC_ASSIGN_OR_RETURN(const std::uint64_t configured, GenerationBufferSize(spec, options));
  const std::uint64_t sample_bytes = spec.sample_bytes();
  const std::uint64_t count = spec.num_samples;
  const std::uint64_t total = sample_bytes * count;
  const std::uint64_t index_bytes = count * kIndexEntrySize;

  std::uint64_t align = storage.capabilities().alignment;
  if (align == 0) align = 1;
  // The buffer serves the data and both index files: no larger than the
  // larger of them, a multiple of the alignment and of an index entry.
  const std::uint64_t unit = std::lcm(align, std::uint64_t{kIndexEntrySize});
  std::uint64_t buffer_size = std::min(configured, std::max(total, index_bytes));
  buffer_size = RoundUp(std::max<std::uint64_t>(buffer_size, 1), unit);
  IOMIMIC_ASSIGN_OR_RETURN(
      Buffer buffer,
      AllocateHostBuffer(storage, static_cast<std::size_t>(buffer_size), FlavorName(flavor)));
  std::span<std::byte> chunk = buffer.span().first(static_cast<std::size_t>(buffer_size));

  // 1. The data: the content stream, chunk by chunk.
  ContentStream content = spec.PayloadContent();
  for (std::uint64_t pos = 0; pos < total;) {
    const std::size_t n =
        static_cast<std::size_t>(std::min<std::uint64_t>(buffer_size, total - pos));
    content.Fill(chunk.first(n));
    Status s = file.WriteAt(pos, chunk.first(n));
    if (!s.ok()) return s.WithContext(std::string(FlavorName(flavor)) + ": writing " + spec.path);
    pos += n;
  }

  // 2. The index files, each complete under its final name before the core
  // renames the data file.
  return WriteIndexFiles(storage, spec, flavor, chunk);
}

// A buffer for the index files alone: no larger than they are.
Status WriteFrameImpl(Storage& storage, const FileSpec& spec, Flavor flavor,
                      const WriterOptions& options) {
  IOMIMIC_RETURN_IF_ERROR(ValidateSpec(spec, flavor));
  IOMIMIC_ASSIGN_OR_RETURN(const std::uint64_t configured, GenerationBufferSize(spec, options));
  std::uint64_t align = storage.capabilities().alignment;
  if (align == 0) align = 1;
  const std::uint64_t unit = std::lcm(align, std::uint64_t{kIndexEntrySize});
  std::uint64_t buffer_size = std::min(configured, spec.num_samples * kIndexEntrySize);
  buffer_size = RoundUp(std::max<std::uint64_t>(buffer_size, 1), unit);
  IOMIMIC_ASSIGN_OR_RETURN(
      Buffer buffer,
      AllocateHostBuffer(storage, static_cast<std::size_t>(buffer_size), FlavorName(flavor)));
  return WriteIndexFiles(storage, spec, flavor,
                         buffer.span().first(static_cast<std::size_t>(buffer_size)));
}

}  // namespace

Result<std::uint64_t> GenerationBufferSize(const FileSpec& spec, const WriterOptions& options) {
  std::uint64_t size = kDefaultGenerationBufferSize;
  auto it = spec.parameters.find("generation_buffer_size");
  if (it != spec.parameters.end()) {
    const std::string& text = it->second;
    char* end = nullptr;
    errno = 0;
    const unsigned long long parsed = std::strtoull(text.c_str(), &end, 10);
    if (text.empty() || text[0] == '-' || errno != 0 || *end != '\0' || parsed == 0) {
      return Status::InvalidArgument("generation_buffer_size '" + text +
                                     "' is not a positive number of bytes");
    }
    size = parsed;
  }
  const std::uint64_t cap = std::max(options.max_buffer_size, kMinGenerationBufferSize);
  return std::clamp(size, kMinGenerationBufferSize, cap);
}

Status ValidateSpec(const FileSpec& spec, Flavor flavor) {
  const std::string name(FlavorName(flavor));
  for (std::uint64_t d : spec.sample_shape) {
    if (d == 0) return Status::InvalidArgument(name + ": sample_shape has a zero dimension");
  }
  if (spec.element_type.size == 0) {
    return Status::InvalidArgument(name + ": element type '" + spec.element_type.name +
                                   "' has size 0");
  }
  if (spec.num_samples == 0) {
    return Status::InvalidArgument(name + ": num_samples must be at least 1");
  }
  if (spec.compression != "none") {
    return Status::NotSupported(name + ": compression '" + spec.compression +
                                "' is not supported (samples are stored as raw bytes)");
  }
  std::uint64_t bytes = spec.element_type.size;
  for (std::uint64_t d : spec.sample_shape) {
    if (bytes > kMaxPayloadBytes / d) return Status::InvalidArgument(name + ": sample too large");
    bytes *= d;
  }
  if (bytes > kMaxPayloadBytes / spec.num_samples) {
    return Status::InvalidArgument(name + ": file too large (sample_bytes * num_samples)");
  }
  Result<std::uint64_t> buffer = GenerationBufferSize(spec, WriterOptions{});
  if (!buffer.ok()) return buffer.status().WithContext(name);
  return Status::OK();
}

Result<std::uint64_t> ComputeFileSize(const FileSpec& spec, Flavor flavor) {
  IOMIMIC_RETURN_IF_ERROR(ValidateSpec(spec, flavor));
  return spec.sample_bytes() * spec.num_samples;
}

Status WriteIndexedBinaryFrame(Storage& storage, const FileSpec& spec, Flavor flavor,
                               const WriterOptions& options) {
  return Guard(FlavorName(flavor), "writing the index of", spec.path,
               [&]() -> Status { return WriteFrameImpl(storage, spec, flavor, options); });
}

Status WriteIndexedBinaryFile(Storage& storage, File& file, const FileSpec& spec, Flavor flavor,
                              const WriterOptions& options) {
  return Guard(FlavorName(flavor), "writing", spec.path,
               [&]() -> Status { return WriteImpl(storage, file, spec, flavor, options); });
}

}  // namespace iomimic::indexed_binary
