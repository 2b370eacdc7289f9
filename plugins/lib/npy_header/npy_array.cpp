#include "npy_header/npy_array.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace iomimic::numpy {
namespace {

// Copies `count` elements of `size` bytes, `stride` bytes apart from `src`,
// next to each other into `dst`.
template <std::size_t K>
void GatherFixed(const std::byte* src, std::size_t stride, std::size_t count, std::byte* dst) {
  for (std::size_t j = 0; j < count; ++j) {
    std::memcpy(dst, src, K);
    dst += K;
    src += stride;
  }
}

void GatherStrided(const std::byte* src, std::size_t stride, std::size_t count, std::size_t size,
                   std::byte* dst) {
  switch (size) {
    case 1:
      return GatherFixed<1>(src, stride, count, dst);
    case 2:
      return GatherFixed<2>(src, stride, count, dst);
    case 4:
      return GatherFixed<4>(src, stride, count, dst);
    case 8:
      return GatherFixed<8>(src, stride, count, dst);
    default:
      for (std::size_t j = 0; j < count; ++j) {
        std::memcpy(dst, src, size);
        dst += size;
        src += stride;
      }
  }
}

// Transposes a row-major `rows` x `cols` matrix of K-byte elements from
// `src` into `dst` (cols x rows), in cache-sized tiles.
template <std::size_t K>
void TransposeFixed(const std::byte* src, std::size_t rows, std::size_t cols, std::size_t size,
                    std::byte* dst) {
  constexpr std::size_t kTile = 64;
  const std::size_t k = K == 0 ? size : K;
  for (std::size_t r0 = 0; r0 < rows; r0 += kTile) {
    const std::size_t r1 = std::min(rows, r0 + kTile);
    for (std::size_t c0 = 0; c0 < cols; c0 += kTile) {
      const std::size_t c1 = std::min(cols, c0 + kTile);
      for (std::size_t c = c0; c < c1; ++c) {
        for (std::size_t r = r0; r < r1; ++r) {
          std::memcpy(dst + (c * rows + r) * k, src + (r * cols + c) * k, K == 0 ? size : K);
        }
      }
    }
  }
}

void Transpose(const std::byte* src, std::size_t rows, std::size_t cols, std::size_t size,
               std::byte* dst) {
  switch (size) {
    case 1:
      return TransposeFixed<1>(src, rows, cols, size, dst);
    case 2:
      return TransposeFixed<2>(src, rows, cols, size, dst);
    case 4:
      return TransposeFixed<4>(src, rows, cols, size, dst);
    case 8:
      return TransposeFixed<8>(src, rows, cols, size, dst);
    default:
      return TransposeFixed<0>(src, rows, cols, size, dst);
  }
}

// Copies the Fortran-order sample `block` (its axes `shape`, the sample's
// axes only) into `out` in C order.
void GatherFortran(const std::byte* block, std::span<const std::uint64_t> shape, std::size_t count,
                   std::size_t k, std::byte* out) {
  const std::size_t sample_rank = shape.size();
  // Walk the sample's axes in C order; Fortran strides grow from axis 0.
  std::vector<std::size_t> strides(sample_rank);
  std::size_t stride = k;
  for (std::size_t a = 0; a < sample_rank; ++a) {
    strides[a] = stride;
    stride *= static_cast<std::size_t>(shape[a]);
  }
  const std::size_t last = sample_rank - 1;
  const std::size_t inner = static_cast<std::size_t>(shape[last]);
  std::vector<std::size_t> position(sample_rank, 0);
  std::size_t offset = 0;
  for (std::size_t j = 0; j < count; j += inner) {
    GatherStrided(block + offset, strides[last], inner, k, out + j * k);
    // Advance the outer axes (all but the last) like an odometer.
    for (std::size_t a = last; a-- > 0;) {
      offset += strides[a];
      if (++position[a] < shape[a]) break;
      offset -= strides[a] * position[a];
      position[a] = 0;
    }
  }
}

}  // namespace

Status ValidateArraySpec(const FileSpec& spec, const ArraySpecRules& rules) {
  const std::string who(rules.plugin);
  if (spec.sample_shape.empty()) {
    return Status::InvalidArgument(who + ": sample_shape is empty (" + std::string(rules.array) +
                                   " needs at least one dimension besides the sample axis)");
  }
  for (std::uint64_t d : spec.sample_shape) {
    if (d == 0) return Status::InvalidArgument(who + ": sample_shape has a zero dimension");
  }
  if (spec.num_samples == 0) {
    return Status::InvalidArgument(who + ": num_samples must be at least 1");
  }
  Result<NpyDtype> dtype = ParseNpyDescr(spec.element_type.descr);
  if (!dtype.ok()) {
    return Status::InvalidArgument(who + ": element type '" + spec.element_type.name +
                                   "': " + dtype.status().message());
  }
  if (dtype->itemsize != spec.element_type.size || spec.element_type.size == 0) {
    return Status::InvalidArgument(who + ": element type '" + spec.element_type.name +
                                   "' has size " + std::to_string(spec.element_type.size) +
                                   " but descr '" + spec.element_type.descr + "' means " +
                                   std::to_string(dtype->itemsize));
  }
  if (std::find(rules.compressions.begin(), rules.compressions.end(), spec.compression) ==
      rules.compressions.end()) {
    return Status::NotSupported(who + ": compression '" + spec.compression +
                                "' is not supported (" + std::string(rules.compression_hint) + ")");
  }
  std::uint64_t bytes = spec.element_type.size;
  for (std::uint64_t d : spec.sample_shape) {
    if (bytes > kMaxArrayBytes / d) return Status::InvalidArgument(who + ": sample too large");
    bytes *= d;
  }
  if (bytes > kMaxArrayBytes / spec.num_samples) {
    return Status::InvalidArgument(who + ": file too large (sample_bytes * num_samples)");
  }
  return Status::OK();
}

std::string ShapeText(std::span<const std::uint64_t> shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ',';
  return s + ")";
}

bool SameArray(const NpyHeader& a, const NpyHeader& b) {
  return a.descr == b.descr && a.shape == b.shape && a.fortran_order == b.fortran_order;
}

std::string ArrayChangeText(const NpyHeader& was, const NpyHeader& now) {
  return "(now shape " + ShapeText(now.shape) + ", descr '" + now.descr + "'; was " +
         ShapeText(was.shape) + ", '" + was.descr + "')";
}

Result<SampleLayout> SampleLayoutOf(const NpyHeader& header) {
  SampleLayout layout;
  layout.num_samples = header.shape.back();
  layout.sample_elements = 1;
  for (std::size_t a = 0; a + 1 < header.shape.size(); ++a) {
    const std::uint64_t d = header.shape[a];
    if (d != 0 && layout.sample_elements > std::numeric_limits<std::uint64_t>::max() / d) {
      return Status::Corruption("sample shape overflows 64 bits");
    }
    layout.sample_elements *= d;
  }
  const std::uint64_t itemsize = header.dtype.itemsize;
  if (itemsize != 0 &&
      layout.sample_elements > std::numeric_limits<std::uint64_t>::max() / itemsize) {
    return Status::Corruption("sample size overflows 64 bits");
  }
  layout.sample_bytes = layout.sample_elements * itemsize;
  return layout;
}

void MakeSampleMajor(const NpyHeader& header, const SampleLayout& layout, const std::byte* array,
                     std::byte* out) {
  Transpose(array, static_cast<std::size_t>(layout.sample_elements),
            static_cast<std::size_t>(layout.num_samples), header.dtype.itemsize, out);
}

Result<std::span<const std::byte>> GatherSample(const NpyHeader& header, const SampleLayout& layout,
                                                const std::byte* array, std::uint64_t index,
                                                bool sample_major, Storage& storage,
                                                std::string_view who, Buffer* scratch) {
  const std::size_t k = header.dtype.itemsize;
  const std::size_t n = static_cast<std::size_t>(layout.num_samples);
  const std::size_t count = static_cast<std::size_t>(layout.sample_elements);
  const std::size_t bytes = static_cast<std::size_t>(layout.sample_bytes);
  const std::size_t i = static_cast<std::size_t>(index);
  const std::size_t sample_rank = header.shape.size() - 1;

  // Sample i is the contiguous block i: reordered after MakeSampleMajor, or
  // in Fortran order (already C order when the sample has at most one axis).
  if (sample_major || (header.fortran_order && sample_rank <= 1)) {
    return std::span<const std::byte>(array + i * bytes, bytes);
  }
  // C order: element j of sample i is at flat index j * n + i.
  if (!header.fortran_order && n == 1) return std::span<const std::byte>(array, bytes);
  if (scratch->size() < bytes) {
    scratch->Reset();
    IOMIMIC_ASSIGN_OR_RETURN(*scratch, AllocateHostBuffer(storage, bytes, who));
  }
  std::byte* out = scratch->data();
  if (!header.fortran_order) {
    GatherStrided(array + i * k, n * k, count, k, out);
  } else {
    GatherFortran(array + i * bytes, std::span(header.shape).first(sample_rank), count, k, out);
  }
  return std::span<const std::byte>(out, bytes);
}

}  // namespace iomimic::numpy
