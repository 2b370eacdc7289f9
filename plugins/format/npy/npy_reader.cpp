#include "npy_reader.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <limits>
#include <new>
#include <utility>
#include <vector>

#include "iomimic/guard.h"
#include "npy_writer.h"

namespace iomimic::npy {
namespace {

std::string ShapeText(const std::vector<std::uint64_t>& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ',';
  return s + ")";
}

std::uint32_t LoadLittleEndian(const std::byte* p, std::size_t width) {
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < width; ++i) v |= std::to_integer<std::uint32_t>(p[i]) << (8 * i);
  return v;
}

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

}  // namespace

NpyReader::NpyReader(std::string path, const ReaderOptions& options)
    : path_(std::move(path)),
      storage_(options.storage),
      decode_(options.decode),
      keep_in_memory_(options.keep_in_memory),
      transfer_(options.transfer_size) {}

NpyReader::~NpyReader() { AbortLoad(); }

Result<std::unique_ptr<FileReader>> NpyReader::Open(const std::string& path,
                                                    const ReaderOptions& options) {
  if (options.storage == nullptr) {
    return Status::InvalidArgument("npy: ReaderOptions.storage is null (opening " + path + ")");
  }
  return Guard("npy", "opening", path, [&]() -> Result<std::unique_ptr<FileReader>> {
    std::unique_ptr<NpyReader> reader(new NpyReader(path, options));
    IOMIMIC_RETURN_IF_ERROR(reader->Init());
    return std::unique_ptr<FileReader>(std::move(reader));
  });
}

Status NpyReader::Init() {
  IOMIMIC_ASSIGN_OR_RETURN(probe_, AllocateHostBuffer(*storage_, kProbeSize, "npy"));
  IOMIMIC_RETURN_IF_ERROR(BeginLoad());
  header_ = load_header_;
  num_samples_ = header_.shape.back();
  sample_elements_ = 1;
  for (std::size_t a = 0; a + 1 < header_.shape.size(); ++a) {
    sample_elements_ *= header_.shape[a];  // no overflow: DataBytes() checked the product
  }
  sample_bytes_ = sample_elements_ * header_.dtype.itemsize;
  return Status::OK();
}

Status NpyReader::Corrupt(const std::string& what, std::uint64_t offset) const {
  return Status::Corruption(path_ + ": " + what + " at offset " + std::to_string(offset));
}

Status NpyReader::ReadExact(std::uint64_t offset, std::span<std::byte> out, const char* what) {
  Result<std::size_t> n = file_->ReadAt(offset, out);
  if (!n.ok()) return n.status().WithContext(std::string("npy: reading ") + what + " of " + path_);
  if (*n < out.size()) {
    return Corrupt(std::string("truncated file: ") + what + " needs " + std::to_string(out.size()) +
                       " bytes from offset " + std::to_string(offset) + " but the file ends",
                   offset + *n);
  }
  return Status::OK();
}

void NpyReader::AbortLoad() {
  if (file_) (void)file_->Close();
  file_.reset();
  header_ready_ = false;
}

Status NpyReader::BeginLoad() {
  OpenOptions open_options;
  open_options.mode = OpenMode::kRead;
  open_options.hint = AccessHint::kWholeFile;
  Result<std::unique_ptr<File>> opened = storage_->Open(path_, open_options);
  if (!opened.ok()) return opened.status().WithContext("npy: opening " + path_);
  file_ = std::move(opened).value();
  Status s;
  Result<std::uint64_t> size = file_->Size();
  if (!size.ok()) {
    s = size.status().WithContext("npy: size of " + path_);
  } else {
    s = ParseHeader(*size, &load_header_);
  }
  if (!s.ok()) {
    AbortLoad();
    return s;
  }
  header_ready_ = true;
  return Status::OK();
}

Status NpyReader::ParseHeader(std::uint64_t file_size, numpy::NpyHeader* header) {
  // np.load reads the 6-byte magic through a 4 KiB buffer.
  const std::size_t probe_size =
      static_cast<std::size_t>(std::min<std::uint64_t>(kProbeSize, file_size));
  std::span<std::byte> probe = probe_.span().first(probe_size);
  if (probe_size > 0) {
    Result<std::size_t> n = file_->ReadAt(0, probe);
    if (!n.ok()) return n.status().WithContext("npy: reading the header of " + path_);
    probe = probe.first(*n);
  }
  if (probe.size() < numpy::kNpyMagic.size() ||
      std::memcmp(probe.data(), numpy::kNpyMagic.data(), numpy::kNpyMagic.size()) != 0) {
    return Corrupt("not an NPY file: bad NPY magic (expected \\x93NUMPY)", 0);
  }
  if (probe.size() < numpy::kNpyPreambleSize) {
    return Corrupt("truncated file: the NPY version bytes are missing", probe.size());
  }
  int major = 0;
  int minor = 0;
  Result<std::size_t> width = numpy::ParseNpyPreamble(probe, &major, &minor);
  if (!width.ok()) return Corrupt("bad NPY header: " + width.status().message(), 6);
  const std::size_t length_end = numpy::kNpyPreambleSize + *width;
  if (probe.size() < length_end) {
    return Corrupt("truncated file: the NPY header length field is incomplete", probe.size());
  }
  const std::uint64_t dict_size = LoadLittleEndian(probe.data() + numpy::kNpyPreambleSize, *width);
  if (dict_size > numpy::kNpyMaxHeaderSize) {
    return Corrupt("NPY header is " + std::to_string(dict_size) +
                       " bytes, more than numpy's limit of " +
                       std::to_string(numpy::kNpyMaxHeaderSize),
                   numpy::kNpyPreambleSize);
  }
  std::string text(static_cast<std::size_t>(dict_size), '\0');
  const std::size_t in_probe =
      std::min(text.size(), probe.size() > length_end ? probe.size() - length_end : 0);
  std::memcpy(text.data(), probe.data() + length_end, in_probe);
  if (in_probe < text.size()) {
    // A dict longer than the first buffer: one more request for the rest.
    std::span<std::byte> rest(reinterpret_cast<std::byte*>(text.data()) + in_probe,
                              text.size() - in_probe);
    IOMIMIC_RETURN_IF_ERROR(ReadExact(length_end + in_probe, rest, "NPY header"));
  }
  Result<numpy::NpyHeader> parsed = numpy::ParseNpyDict(text, major);
  if (!parsed.ok()) {
    if (parsed.status().code() == StatusCode::kCorruption) {
      return Corrupt("bad NPY header: " + parsed.status().message(), length_end);
    }
    return parsed.status().WithContext("npy: " + path_);
  }
  *header = std::move(parsed).value();
  header->header_size = length_end + dict_size;
  if (header->shape.empty()) {
    return Status::NotSupported(path_ +
                                ": the array is 0-dimensional (samples are on the last "
                                "axis)");
  }
  Result<std::uint64_t> data_bytes = header->DataBytes();
  if (!data_bytes.ok()) {
    return Corrupt("bad NPY header: " + data_bytes.status().message(), length_end);
  }
  if (*data_bytes > file_size || header->header_size > file_size - *data_bytes) {
    return Corrupt("truncated file: the array " + ShapeText(header->shape) + " of '" +
                       header->descr + "' needs " + std::to_string(*data_bytes) +
                       " bytes after the " + std::to_string(header->header_size) +
                       "-byte header, the file has " + std::to_string(file_size) + " bytes",
                   file_size);
  }
  data_bytes_ = *data_bytes;
  return Status::OK();
}

Status NpyReader::FinishLoad() {
  if (data_bytes_ > std::numeric_limits<std::size_t>::max()) {
    return Status::ResourceExhausted(path_ + ": the array is too large for this address space");
  }
  const std::size_t bytes = static_cast<std::size_t>(data_bytes_);
  sample_major_ = false;
  const std::size_t request = transfer_ == 0 ? bytes
                                             : static_cast<std::size_t>(std::min<std::uint64_t>(
                                                   transfer_, std::max<std::size_t>(bytes, 1)));
  // Decoding keeps the whole array. Without decoding nothing looks at the
  // bytes, so every request lands in the same request-sized buffer (it stays
  // in the CPU cache, as a read(2) loop's buffer does), wherever the back
  // end wants it (device memory for GPU staging).
  const std::size_t keep = decode_ ? bytes : request;
  if (payload_.size() < keep) {
    payload_.Reset();
    if (decode_) {
      IOMIMIC_ASSIGN_OR_RETURN(payload_, AllocateHostBuffer(*storage_, keep, "npy"));
    } else {
      Result<Buffer> made = storage_->Allocate(keep);
      if (!made.ok()) {
        return made.status().WithContext("npy: allocating " + std::to_string(keep) + " bytes for " +
                                         path_);
      }
      if (made->size() < keep) {
        return Status::ResourceExhausted("npy: the storage allocated " +
                                         std::to_string(made->size()) + " of " +
                                         std::to_string(keep) + " bytes");
      }
      payload_ = std::move(made).value();
    }
  }
  const std::uint64_t begin = load_header_.header_size;
  for (std::size_t done = 0; done < bytes;) {
    // Requests end on multiples of the request size in the file, as
    // numpy's chunked reads do (the first one is short by the header): a
    // request straddling those boundaries costs the kernel's readahead about
    // a quarter of a cold sequential read (docs/performance.md).
    const std::uint64_t at = begin + done;
    const std::size_t to_boundary =
        transfer_ == 0 ? bytes - done : static_cast<std::size_t>(request - at % request);
    const std::size_t n = std::min(to_boundary, bytes - done);
    std::span<std::byte> to = payload_.span().subspan(decode_ ? done : 0, n);
    IOMIMIC_RETURN_IF_ERROR(ReadExact(at, to, "the array data"));
    done += n;
  }
  Status closed = file_->Close();
  file_.reset();
  header_ready_ = false;
  if (!closed.ok()) return closed.WithContext("npy: closing " + path_);
  loaded_ = true;
  ++loads_;
  if (keep_in_memory_ && decode_) return MakeSampleMajor();
  return Status::OK();
}

Status NpyReader::MakeSampleMajor() {
  // Only C-order arrays with several samples interleave them.
  if (header_.fortran_order || num_samples_ < 2 || sample_bytes_ == 0) return Status::OK();
  const std::size_t bytes = static_cast<std::size_t>(data_bytes_);
  IOMIMIC_ASSIGN_OR_RETURN(Buffer reordered, AllocateHostBuffer(*storage_, bytes, "npy"));
  Transpose(payload_.data(), static_cast<std::size_t>(sample_elements_),
            static_cast<std::size_t>(num_samples_), header_.dtype.itemsize, reordered.data());
  payload_ = std::move(reordered);
  sample_major_ = true;
  return Status::OK();
}

Result<SampleView> NpyReader::ReadSample(std::uint64_t index) {
  return Guard(
      "npy", "reading", path_,
      [&]() -> Result<SampleView> {
        Result<SampleView> r = ReadSampleImpl(index);
        // A failed load leaves nothing half-open; the next call starts afresh.
        if (!r.ok() && r.status().code() != StatusCode::kOutOfRange) {
          AbortLoad();
          loaded_ = false;
        }
        return r;
      },
      [&] {
        AbortLoad();
        loaded_ = false;
      });
}

Result<SampleView> NpyReader::ReadSampleImpl(std::uint64_t index) {
  if (index >= num_samples_) {
    return Status::OutOfRange(path_ + ": sample index " + std::to_string(index) +
                              " is out of range (the file has " + std::to_string(num_samples_) +
                              " samples)");
  }
  if (!(keep_in_memory_ && loaded_)) {
    if (!header_ready_) {
      IOMIMIC_RETURN_IF_ERROR(BeginLoad());
      if (load_header_.descr != header_.descr || load_header_.shape != header_.shape ||
          load_header_.fortran_order != header_.fortran_order ||
          load_header_.header_size != header_.header_size) {
        return Corrupt("the array changed since the reader opened the file (now shape " +
                           ShapeText(load_header_.shape) + ", descr '" + load_header_.descr +
                           "'; was " + ShapeText(header_.shape) + ", '" + header_.descr + "')",
                       numpy::kNpyPreambleSize);
      }
    }
    IOMIMIC_RETURN_IF_ERROR(FinishLoad());
  }
  return Gather(index);
}

Result<SampleView> NpyReader::Gather(std::uint64_t index) {
  SampleView view;
  view.bytes = sample_bytes_;
  if (!decode_ || sample_bytes_ == 0) return view;
  const std::size_t k = header_.dtype.itemsize;
  const std::size_t n = static_cast<std::size_t>(num_samples_);
  const std::size_t count = static_cast<std::size_t>(sample_elements_);
  const std::size_t bytes = static_cast<std::size_t>(sample_bytes_);
  const std::size_t i = static_cast<std::size_t>(index);
  const std::byte* base = payload_.data();
  const std::size_t sample_rank = header_.shape.size() - 1;

  if (sample_major_) {
    // Reordered after a keep_in_memory load: sample i is block i.
    view.data = std::span<const std::byte>(base + i * bytes, bytes);
    return view;
  }
  if (!header_.fortran_order) {
    // C order: element j of sample i is at flat index j * n + i.
    if (n == 1) {
      view.data = std::span<const std::byte>(base, bytes);
      return view;
    }
  } else if (sample_rank <= 1) {
    // Fortran order: sample i is the contiguous block i, already in C order
    // when the sample has at most one axis.
    view.data = std::span<const std::byte>(base + i * bytes, bytes);
    return view;
  }
  if (sample_.size() < bytes) {
    sample_.Reset();
    IOMIMIC_ASSIGN_OR_RETURN(sample_, AllocateHostBuffer(*storage_, bytes, "npy"));
  }
  std::byte* out = sample_.data();
  if (!header_.fortran_order) {
    GatherStrided(base + i * k, n * k, count, k, out);
  } else {
    // Walk the sample's axes in C order; Fortran strides grow from axis 0.
    std::vector<std::size_t> strides(sample_rank);
    std::size_t stride = k;
    for (std::size_t a = 0; a < sample_rank; ++a) {
      strides[a] = stride;
      stride *= static_cast<std::size_t>(header_.shape[a]);
    }
    const std::size_t last = sample_rank - 1;
    const std::size_t inner = static_cast<std::size_t>(header_.shape[last]);
    std::vector<std::size_t> position(sample_rank, 0);
    const std::byte* block = base + i * bytes;
    std::size_t offset = 0;
    for (std::size_t j = 0; j < count; j += inner) {
      GatherStrided(block + offset, strides[last], inner, k, out + j * k);
      // Advance the outer axes (all but the last) like an odometer.
      for (std::size_t a = last; a-- > 0;) {
        offset += strides[a];
        if (++position[a] < header_.shape[a]) break;
        offset -= strides[a] * position[a];
        position[a] = 0;
      }
    }
  }
  view.data = std::span<const std::byte>(out, bytes);
  return view;
}

}  // namespace iomimic::npy
