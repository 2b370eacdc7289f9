#include "npy_writer.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <new>
#include <utility>
#include <vector>

#include "iomimic/guard.h"
#include "npy_header/npy_array.h"
#include "npy_header/npy_header.h"

namespace iomimic::npy {
namespace {

// Smallest write chunk.
constexpr std::size_t kMinChunkSize = std::size_t{64} << 10;

std::vector<std::uint64_t> ArrayShape(const FileSpec& spec) {
  std::vector<std::uint64_t> shape = spec.sample_shape;
  shape.push_back(spec.num_samples);
  return shape;
}

Status WriteNpyFileImpl(Storage& storage, File& file, const FileSpec& spec,
                        const WriterOptions& options) {
  IOMIMIC_RETURN_IF_ERROR(ValidateSpec(spec));
  IOMIMIC_ASSIGN_OR_RETURN(const std::string header, EncodeHeader(spec));
  const std::uint64_t data_bytes = spec.sample_bytes() * spec.num_samples;
  const std::uint64_t total = header.size() + data_bytes;

  std::size_t align = storage.capabilities().alignment;
  if (align == 0) align = 1;
  std::size_t chunk = std::max(options.chunk_size, kMinChunkSize);
  chunk = (chunk + align - 1) / align * align;
  // Small files need no more than their own size (rounded to the alignment).
  if (total < chunk) chunk = static_cast<std::size_t>((total + align - 1) / align * align);

  IOMIMIC_ASSIGN_OR_RETURN(Buffer buffer, AllocateHostBuffer(storage, chunk, "npy"));
  ContentStream content = spec.PayloadContent();
  for (std::uint64_t pos = 0; pos < total;) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(chunk, total - pos));
    std::span<std::byte> out = buffer.span().first(n);
    std::size_t filled = 0;
    if (pos < header.size()) {
      filled = std::min(n, static_cast<std::size_t>(header.size() - pos));
      std::memcpy(out.data(), header.data() + pos, filled);
    }
    content.Fill(out.subspan(filled));
    Status s = file.WriteAt(pos, out);
    if (!s.ok()) return s.WithContext("npy: writing " + spec.path);
    pos += n;
  }
  return Status::OK();
}

}  // namespace

Status ValidateSpec(const FileSpec& spec) {
  static constexpr std::string_view kCompressions[] = {"none"};
  return numpy::ValidateArraySpec(
      spec, {"npy", "the array", kCompressions,
             "np.save writes uncompressed arrays; use compression none, or format npz with zip"});
}

Result<std::string> EncodeHeader(const FileSpec& spec) {
  const std::vector<std::uint64_t> shape = ArrayShape(spec);
  Result<std::string> header = numpy::EncodeNpyHeader(spec.element_type.descr, shape);
  if (!header.ok()) return header.status().WithContext("npy");
  return header;
}

Result<std::uint64_t> ComputeFileSize(const FileSpec& spec) {
  IOMIMIC_RETURN_IF_ERROR(ValidateSpec(spec));
  return Guard("npy", "computing the file size", "", [&]() -> Result<std::uint64_t> {
    IOMIMIC_ASSIGN_OR_RETURN(const std::string header, EncodeHeader(spec));
    return header.size() + spec.sample_bytes() * spec.num_samples;
  });
}

Status WriteNpyFile(Storage& storage, File& file, const FileSpec& spec,
                    const WriterOptions& options) {
  return Guard("npy", "writing", spec.path,
               [&]() -> Status { return WriteNpyFileImpl(storage, file, spec, options); });
}

}  // namespace iomimic::npy
