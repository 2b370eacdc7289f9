#include "npy_reader.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <limits>
#include <new>
#include <utility>
#include <vector>

#include "iomimic/format_helpers.h"
#include "npy_header/npy_array.h"
#include "npy_writer.h"

namespace iomimic::npy {
namespace {

std::uint32_t LoadLittleEndian(const std::byte* p, std::size_t width) {
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < width; ++i) v |= std::to_integer<std::uint32_t>(p[i]) << (8 * i);
  return v;
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
  return OpenReaderGuarded("npy", path, options, [&]() -> Result<std::unique_ptr<FileReader>> {
    std::unique_ptr<NpyReader> reader(new NpyReader(path, options));
    IOMIMIC_RETURN_IF_ERROR(reader->Init());
    return std::unique_ptr<FileReader>(std::move(reader));
  });
}

Status NpyReader::Init() {
  IOMIMIC_ASSIGN_OR_RETURN(probe_, AllocateHostBuffer(*storage_, kProbeSize, "npy"));
  IOMIMIC_RETURN_IF_ERROR(BeginLoad());
  header_ = load_header_;
  Result<numpy::SampleLayout> layout = numpy::SampleLayoutOf(header_);
  if (!layout.ok()) return Corrupt(layout.status().message(), numpy::kNpyPreambleSize);
  layout_ = *layout;
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
  IOMIMIC_ASSIGN_OR_RETURN(file_, OpenForReading(*storage_, path_, AccessHint::kWholeFile, "npy"));
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
    return Corrupt("truncated file: the array " + numpy::ShapeText(header->shape) + " of '" +
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
  if (header_.fortran_order || layout_.num_samples < 2 || layout_.sample_bytes == 0) {
    return Status::OK();
  }
  const std::size_t bytes = static_cast<std::size_t>(data_bytes_);
  IOMIMIC_ASSIGN_OR_RETURN(Buffer reordered, AllocateHostBuffer(*storage_, bytes, "npy"));
  numpy::MakeSampleMajor(header_, layout_, payload_.data(), reordered.data());
  payload_ = std::move(reordered);
  sample_major_ = true;
  return Status::OK();
}

Result<SampleView> NpyReader::ReadSample(std::uint64_t index) {
  // A failed load leaves nothing half-open; the next call starts afresh.
  return ReadSampleGuarded(
      "npy", path_, [&] { return ReadSampleImpl(index); },
      [&] {
        AbortLoad();
        loaded_ = false;
      });
}

Result<SampleView> NpyReader::ReadSampleImpl(std::uint64_t index) {
  if (index >= layout_.num_samples) {
    return SampleIndexOutOfRange(path_, index, layout_.num_samples);
  }
  if (!(keep_in_memory_ && loaded_)) {
    if (!header_ready_) {
      IOMIMIC_RETURN_IF_ERROR(BeginLoad());
      if (!numpy::SameArray(load_header_, header_) ||
          load_header_.header_size != header_.header_size) {
        return Corrupt("the array changed since the reader opened the file " +
                           numpy::ArrayChangeText(header_, load_header_),
                       numpy::kNpyPreambleSize);
      }
    }
    IOMIMIC_RETURN_IF_ERROR(FinishLoad());
  }
  return Gather(index);
}

Result<SampleView> NpyReader::Gather(std::uint64_t index) {
  SampleView view;
  view.bytes = layout_.sample_bytes;
  if (!decode_ || layout_.sample_bytes == 0) return view;
  IOMIMIC_ASSIGN_OR_RETURN(
      view.data, numpy::GatherSample(header_, layout_, payload_.data(), index, sample_major_,
                                     *storage_, "npy", &sample_));
  return view;
}

}  // namespace iomimic::npy
