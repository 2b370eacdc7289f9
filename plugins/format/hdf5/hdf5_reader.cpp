#include "hdf5_reader.h"

#include <algorithm>
#include <exception>
#include <limits>
#include <new>
#include <utility>

#include "hdf5_layout.h"
#include "hdf5_writer.h"
#include "iomimic/format_helpers.h"
#include "iomimic/guard.h"

namespace iomimic::hdf5 {
namespace {

// Stop looking for records_<k> after this many (a sanity bound).
constexpr std::uint64_t kMaxDatasets = 1u << 16;

}  // namespace

Hdf5Reader::Hdf5Reader(std::string path, const ReaderOptions& options)
    : path_(std::move(path)),
      storage_(options.storage),
      decode_(options.decode),
      keep_in_memory_(options.keep_in_memory) {}

Hdf5Reader::~Hdf5Reader() {
  try {
    ApiLock lock;
    QuietErrors();
    AbortFile();
  } catch (...) {
    // Nothing can be reported from a destructor.
  }
}

Result<std::unique_ptr<FileReader>> Hdf5Reader::Open(const std::string& path,
                                                     const ReaderOptions& options) {
  return OpenReaderGuarded("hdf5", path, options, [&]() -> Result<std::unique_ptr<FileReader>> {
    std::unique_ptr<Hdf5Reader> reader(new Hdf5Reader(path, options));
    ApiLock lock;
    QuietErrors();
    Status s = reader->OpenFile();
    if (s.ok()) s = reader->OpenDatasets();
    if (!s.ok()) {
      reader->AbortFile();
      return s;
    }
    return std::unique_ptr<FileReader>(std::move(reader));
  });
}

Status Hdf5Reader::Corrupt(const std::string& what, std::uint64_t offset) const {
  return Status::Corruption(path_ + ": " + what + " at offset " + std::to_string(offset));
}

Status Hdf5Reader::Fail(const std::string& what) {
  ErrorStack errors = TakeErrorStack();
  if (channel_) {
    Status storage = channel_->TakeStorageError();
    if (!storage.ok()) return storage;
  }
  const std::string detail = errors.Summary();
  if (errors.Has(H5E_CANTALLOC) || errors.Has(H5E_NOSPACE)) {
    return Status::ResourceExhausted(path_ + ": " + what + ": " + detail);
  }
  if (errors.HasMajor(H5E_PLUGIN)) {
    // HDF5's useful line ("required filter 'lzf' is not registered") sits
    // above the plugin search failures.
    std::string filter = errors.Find("required filter");
    return Status::NotSupported(path_ + ": " + what +
                                ": the file needs an HDF5 filter this library cannot load (" +
                                (filter.empty() ? detail : filter) + ")");
  }
  // Where it went wrong: the end of a truncated file (HDF5's message says
  // "truncated file: eof = ..., stored_eof = ..."), the start of a file
  // without a signature, otherwise the last request HDF5 made before it
  // gave up (the metadata or chunk it could not parse).
  std::uint64_t offset = channel_ ? channel_->last_read_offset() : 0;
  std::string prefix;
  if (errors.Has(H5E_TRUNCATED)) {
    offset = channel_ ? channel_->size_at_open() : 0;
  } else if (errors.Has(H5E_NOTHDF5)) {
    offset = 0;
    prefix = "not an HDF5 file: ";
  }
  return Corrupt(what + ": " + prefix + detail, offset);
}

std::uint64_t Hdf5Reader::ObjectAddress(hid_t object) {
  haddr_t addr = HADDR_UNDEF;
#if H5_VERSION_GE(1, 12, 0)
  H5O_info2_t info;
  if (H5Oget_info3(object, &info, H5O_INFO_BASIC) < 0 ||
      H5VLnative_token_to_addr(object, info.token, &addr) < 0) {
    (void)TakeErrorStack();
    return 0;
  }
#else
  H5O_info_t info;
  if (H5Oget_info2(object, &info, H5O_INFO_BASIC) < 0) {
    (void)TakeErrorStack();
    return 0;
  }
  addr = info.addr;
#endif
  return addr == HADDR_UNDEF ? 0 : static_cast<std::uint64_t>(addr);
}

Status Hdf5Reader::OpenFile() {
  IOMIMIC_ASSIGN_OR_RETURN(file_, OpenForReading(*storage_, path_, AccessHint::kRandom, "hdf5"));
  channel_ = std::make_shared<StorageChannel>(file_.get(), path_);
  IOMIMIC_ASSIGN_OR_RETURN(Handle fapl, MakeFileAccess(channel_, FileAccessOptions{}));
  file_id_ = Handle(H5Fopen(path_.c_str(), H5F_ACC_RDONLY, fapl.get()));
  ++opens_;
  if (!file_id_.valid()) return Fail("HDF5 cannot open the file");
  return Status::OK();
}

Status Hdf5Reader::OpenDatasets() {
  std::vector<Shape> shapes;
  IOMIMIC_RETURN_IF_ERROR(OpenDatasetsOf(&shapes));
  if (shapes_.empty()) {
    shapes_ = std::move(shapes);
    num_samples_ = shapes_[0].dims[0];
    sample_bytes_ = 0;
    for (const Shape& s : shapes_) {
      if (s.row_bytes > std::numeric_limits<std::uint64_t>::max() - sample_bytes_) {
        return Corrupt("samples too large", 0);
      }
      sample_bytes_ += s.row_bytes;
    }
    if (sample_bytes_ > std::numeric_limits<std::size_t>::max()) {
      return Status::ResourceExhausted(path_ + ": samples of " + std::to_string(sample_bytes_) +
                                       " bytes do not fit in this address space");
    }
    IOMIMIC_ASSIGN_OR_RETURN(
        sample_, AllocateHostBuffer(*storage_, static_cast<std::size_t>(sample_bytes_), "hdf5"));
    return Status::OK();
  }
  // Opened again: the datasets must still be the ones first seen.
  bool same = shapes.size() == shapes_.size();
  for (std::size_t k = 0; same && k < shapes.size(); ++k) {
    same = shapes[k].dims == shapes_[k].dims && shapes[k].type_size == shapes_[k].type_size;
  }
  if (!same) {
    return Corrupt("the file changed since the reader first opened it (now " +
                       std::to_string(shapes.size()) + " records datasets, records_0 " +
                       DimsText(shapes[0].dims) + "; was " + std::to_string(shapes_.size()) + ", " +
                       DimsText(shapes_[0].dims) + "); records_0 object header",
                   ObjectAddress(datasets_[0].id.get()));
  }
  return Status::OK();
}

Status Hdf5Reader::OpenDatasetsOf(std::vector<Shape>* shapes) {
  datasets_.clear();
  for (std::uint64_t k = 0; k < kMaxDatasets; ++k) {
    std::string name = RecordsName(k);
    const htri_t exists = H5Lexists(file_id_.get(), name.c_str(), H5P_DEFAULT);
    if (exists < 0) return Fail("looking up dataset '" + name + "'");
    if (exists == 0) break;
    Dataset d;
    d.name = std::move(name);
    d.id = Handle(H5Dopen2(file_id_.get(), d.name.c_str(), H5P_DEFAULT));
    if (!d.id.valid()) return Fail("opening dataset '" + d.name + "'");
    datasets_.push_back(std::move(d));
  }
  if (datasets_.empty()) {
    return Corrupt(
        "no dataset 'records_0' in the root group (DLIO's hdf5 files hold "
        "records_0 .. records_<K-1> and labels); root group header",
        ObjectAddress(file_id_.get()));
  }

  shapes->clear();
  for (Dataset& d : datasets_) {
    // Error paths only: the address costs an extra object info lookup.
    const hid_t object = d.id.get();
    auto header = [this, object] { return ObjectAddress(object); };
    d.space = Handle(H5Dget_space(d.id.get()));
    if (!d.space.valid()) return Fail("reading the dataspace of '" + d.name + "'");
    if (H5Sget_simple_extent_type(d.space.get()) != H5S_SIMPLE) {
      return Corrupt("dataset '" + d.name +
                         "' is not an array (scalar or null dataspace); "
                         "object header",
                     header());
    }
    const int rank = H5Sget_simple_extent_ndims(d.space.get());
    if (rank < 1) {
      if (rank < 0) return Fail("reading the rank of '" + d.name + "'");
      return Corrupt("dataset '" + d.name + "' has rank 0; object header", header());
    }
    Shape shape;
    shape.dims.resize(static_cast<std::size_t>(rank));
    if (H5Sget_simple_extent_dims(d.space.get(), shape.dims.data(), nullptr) < 0) {
      return Fail("reading the shape of '" + d.name + "'");
    }
    d.type = Handle(H5Dget_type(d.id.get()));
    if (!d.type.valid()) return Fail("reading the datatype of '" + d.name + "'");
    if (H5Tdetect_class(d.type.get(), H5T_VLEN) > 0 || H5Tis_variable_str(d.type.get()) > 0) {
      return Status::NotSupported(path_ + ": dataset '" + d.name +
                                  "' has a variable-length type; hdf5 reads fixed-size samples");
    }
    shape.type_size = H5Tget_size(d.type.get());
    if (shape.type_size == 0) return Fail("reading the element size of '" + d.name + "'");
    std::uint64_t elements = 1;
    for (std::size_t i = 1; i < shape.dims.size(); ++i) {
      const hsize_t dim = shape.dims[i];
      if (dim != 0 &&
          elements > std::numeric_limits<std::uint64_t>::max() / shape.type_size / dim) {
        return Corrupt("dataset '" + d.name + "' of shape " + DimsText(shape.dims) +
                           " has rows too large to address; object header",
                       header());
      }
      elements *= dim;
    }
    if (elements == 0) {
      return Status::NotSupported(path_ + ": dataset '" + d.name + "' of shape " +
                                  DimsText(shape.dims) + " has empty samples");
    }
    shape.row_bytes = elements * shape.type_size;
    if (!shapes->empty() && shape.dims[0] != shapes->front().dims[0]) {
      return Corrupt("dataset '" + d.name + "' holds " + std::to_string(shape.dims[0]) +
                         " samples but records_0 holds " + std::to_string(shapes->front().dims[0]) +
                         "; object header",
                     header());
    }
    const hsize_t row_elements = elements;
    d.memory = Handle(H5Screate_simple(1, &row_elements, nullptr));
    if (!d.memory.valid()) return Fail("creating a memory dataspace");
    shapes->push_back(std::move(shape));
  }
  return Status::OK();
}

Status Hdf5Reader::ReadRows(std::uint64_t index) {
  std::byte* out = sample_.data();
  std::vector<hsize_t> start;
  std::vector<hsize_t> count;
  for (std::size_t k = 0; k < datasets_.size(); ++k) {
    Dataset& d = datasets_[k];
    const Shape& shape = shapes_[k];
    start.assign(shape.dims.size(), 0);
    start[0] = index;
    count = shape.dims;
    count[0] = 1;
    if (H5Sselect_hyperslab(d.space.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(),
                            nullptr) < 0) {
      return Fail("selecting sample " + std::to_string(index) + " of '" + d.name + "'");
    }
    if (H5Dread(d.id.get(), d.type.get(), d.memory.get(), d.space.get(), H5P_DEFAULT, out) < 0) {
      return Fail("reading sample " + std::to_string(index) + " of '" + d.name + "'");
    }
    out += shape.row_bytes;
  }
  return Status::OK();
}

void Hdf5Reader::CloseDatasets(Status* first) {
  for (Dataset& d : datasets_) {
    d.memory.Reset();
    d.type.Reset();
    d.space.Reset();
    if (!d.id.Close() && first->ok()) *first = Fail("closing dataset '" + d.name + "'");
  }
  datasets_.clear();
}

Status Hdf5Reader::CloseFile() {
  Status first;
  CloseDatasets(&first);
  if (!file_id_.Close() && first.ok()) first = Fail("closing the HDF5 file");
  if (channel_) channel_->Detach();
  channel_.reset();
  if (file_) {
    Status closed = file_->Close();
    if (!closed.ok() && first.ok()) first = closed.WithContext("hdf5: closing " + path_);
    file_.reset();
  }
  return first;
}

void Hdf5Reader::AbortFile() {
  (void)CloseFile();
  (void)TakeErrorStack();
}

Result<SampleView> Hdf5Reader::ReadSample(std::uint64_t index) {
  // A failed read leaves nothing half-open; the next call starts afresh.
  return ReadSampleGuarded(
      "hdf5", path_,
      [&] {
        ApiLock lock;
        QuietErrors();
        return ReadSampleImpl(index);
      },
      [&] {
        ApiLock lock;  // recursive: also under the read's own lock
        AbortFile();
      });
}

Result<std::vector<ByteRange>> Hdf5Reader::SampleRanges(std::uint64_t index) {
  return Guard(
      "hdf5", "describing a sample of", path_,
      [&]() -> Result<std::vector<ByteRange>> {
        ApiLock lock;
        QuietErrors();
        Result<std::vector<ByteRange>> r = SampleRangesImpl(index);
        if (!r.ok() && r.status().code() != StatusCode::kOutOfRange &&
            r.status().code() != StatusCode::kNotSupported) {
          AbortFile();
        }
        return r;
      },
      [&] { AbortFile(); });
}

Result<std::vector<ByteRange>> Hdf5Reader::SampleRangesImpl(std::uint64_t index) {
  if (!file_id_.valid()) IOMIMIC_RETURN_IF_ERROR(OpenFile());
  if (data_offsets_.empty()) {
    if (datasets_.empty()) IOMIMIC_RETURN_IF_ERROR(OpenDatasets());
    std::vector<std::uint64_t> offsets;
    for (const Dataset& d : datasets_) {
      const haddr_t at = H5Dget_offset(d.id.get());
      if (at == HADDR_UNDEF) {
        (void)TakeErrorStack();
        return Status::NotSupported(path_ + ": dataset '" + d.name +
                                    "' is chunked, compressed or not yet written; only "
                                    "contiguous records can be read as byte ranges");
      }
      offsets.push_back(static_cast<std::uint64_t>(at));
    }
    Status closed;
    CloseDatasets(&closed);
    IOMIMIC_RETURN_IF_ERROR(closed);
    data_offsets_ = std::move(offsets);
  }
  if (index >= num_samples_) {
    return SampleIndexOutOfRange(path_, index, num_samples_);
  }
  std::vector<ByteRange> ranges;
  for (std::size_t k = 0; k < data_offsets_.size(); ++k) {
    ranges.push_back({data_offsets_[k] + index * shapes_[k].row_bytes, shapes_[k].row_bytes});
  }
  return ranges;
}

Result<SampleView> Hdf5Reader::ReadSampleImpl(std::uint64_t index) {
  if (index >= num_samples_) {
    return SampleIndexOutOfRange(path_, index, num_samples_);
  }
  if (!file_id_.valid()) IOMIMIC_RETURN_IF_ERROR(OpenFile());
  if (datasets_.empty()) IOMIMIC_RETURN_IF_ERROR(OpenDatasets());
  IOMIMIC_RETURN_IF_ERROR(ReadRows(index));
  // h5py opens f['records_<k>'] for the access and drops it right after, so
  // HDF5's per-dataset sieve buffer and chunk cache never outlive a sample.
  Status closed;
  CloseDatasets(&closed);
  IOMIMIC_RETURN_IF_ERROR(closed);
  if (!keep_in_memory_) IOMIMIC_RETURN_IF_ERROR(CloseFile());
  SampleView view;
  view.bytes = sample_bytes_;
  if (decode_) view.data = std::span<const std::byte>(sample_.data(), sample_bytes_);
  return view;
}

}  // namespace iomimic::hdf5
