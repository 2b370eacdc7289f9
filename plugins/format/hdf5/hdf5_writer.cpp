#include "hdf5_writer.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <utility>

#include "hdf5_vfd.h"
#include "iomimic/guard.h"

namespace iomimic::hdf5 {
namespace {

// Writes one file: owns the HDF5 identifiers and turns failures into Status.
class FileWriter {
 public:
  // With `frame_only` the records dataset gets its space at creation but no
  // data (see WriteHdf5Frame).
  FileWriter(Storage& storage, File& file, const FileSpec& spec, const FileLayout& layout,
             const WriterOptions& options, bool frame_only = false)
      : storage_(storage),
        spec_(spec),
        layout_(layout),
        options_(options),
        frame_only_(frame_only),
        channel_(std::make_shared<StorageChannel>(&file, spec.path)) {}

  ~FileWriter() {
    // Identifiers close before the channel lets go of the File.
    file_id_.Reset();
    channel_->Detach();
  }

  Status Write() {
    IOMIMIC_ASSIGN_OR_RETURN(
        Handle fapl,
        MakeFileAccess(channel_, FileAccessOptions{.latest_format = true, .sieve_buffer_size = 0}));
    const std::string name = spec_.path.empty() ? std::string("<iomimic hdf5 file>") : spec_.path;
    // The root group keeps its times, as in h5py's files (its object header
    // size fixes where h5py's metadata reads land): two writes of the same
    // spec differ in those 16 bytes and the header checksum only.
    file_id_ = Handle(H5Fcreate(name.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()));
    if (!file_id_.valid()) return Fail("creating the file");
    IOMIMIC_RETURN_IF_ERROR(AllocateBuffer());

    IOMIMIC_ASSIGN_OR_RETURN(Handle type, CreateElementType(layout_.element_type));
    IOMIMIC_ASSIGN_OR_RETURN(Handle dcpl, RecordsCreationList());
    for (std::uint64_t k = 0; k < layout_.num_datasets; ++k) {
      IOMIMIC_RETURN_IF_ERROR(WriteRecords(RecordsName(k), type.get(), dcpl.get()));
    }
    IOMIMIC_RETURN_IF_ERROR(WriteLabels());

    if (!file_id_.Close()) return Fail("closing the file");
    IOMIMIC_RETURN_IF_ERROR(StorageFailure());
    return channel_->TakeStorageError();
  }

  // Where records_0's data start (frame_only writes).
  std::uint64_t payload_offset() const { return payload_offset_; }

 private:
  // The first storage failure, if a write failed (HDF5 does not see those).
  Status StorageFailure() {
    if (!channel_->write_failed()) return Status::OK();
    Status s = channel_->TakeStorageError();
    return s.ok() ? Status::IOError(spec_.path + ": a write failed") : s;
  }

  // HDF5's error stack, or the storage failure behind it, as a Status.
  Status Fail(const std::string& what) {
    ErrorStack errors = TakeErrorStack();
    Status storage = channel_->TakeStorageError();
    if (!storage.ok()) return storage;
    return Status::Internal("hdf5: " + what + " of " + spec_.path + " failed: " + errors.Summary());
  }

  Status AllocateBuffer() {
    std::uint64_t need = 8;  // labels
    if (layout_.row_bytes > 0) {
      BlockWalker walker(layout_.dims, layout_.element_type.size, options_.block_size,
                         layout_.chunked() ? layout_.chunk_dims[0] : 0);
      need = std::max(need, walker.max_block_bytes());
    }
    const std::uint64_t labels = layout_.num_samples > options_.block_size / 8
                                     ? options_.block_size
                                     : layout_.num_samples * 8;
    need = std::max(need, labels);
    if (need > static_cast<std::uint64_t>(std::numeric_limits<std::size_t>::max())) {
      return Status::ResourceExhausted("hdf5: a block of " + std::to_string(need) +
                                       " bytes does not fit in memory (" + spec_.path + ")");
    }
    IOMIMIC_ASSIGN_OR_RETURN(buffer_,
                             AllocateHostBuffer(storage_, static_cast<std::size_t>(need), "hdf5"));
    return Status::OK();
  }

  Result<Handle> RecordsCreationList() {
    Handle dcpl(H5Pcreate(H5P_DATASET_CREATE));
    if (!dcpl.valid()) return Fail("creating a dataset creation property list");
    if (H5Pset_obj_track_times(dcpl.get(), 0) < 0) return Fail("disabling object times");
    // Contiguous data get their space when the dataset is created and are
    // never pre-filled: every byte is written anyway, and a file written in
    // parts (WriteHdf5Frame) then has the same bytes as one written whole.
    if (!layout_.chunked() && (H5Pset_alloc_time(dcpl.get(), H5D_ALLOC_TIME_EARLY) < 0 ||
                               H5Pset_fill_time(dcpl.get(), H5D_FILL_TIME_NEVER) < 0)) {
      return Fail("asking for early space allocation");
    }
    if (layout_.chunked()) {
      if (H5Pset_chunk(dcpl.get(), static_cast<int>(layout_.rank()), layout_.chunk_dims.data()) <
          0) {
        return Fail("setting the chunk shape");
      }
      // h5py sets this on every chunked dataset ("prevent resize glitch").
      if (H5Pset_fill_time(dcpl.get(), H5D_FILL_TIME_ALLOC) < 0) return Fail("setting fill time");
    }
    switch (layout_.compression) {
      case Compression::kNone:
        break;
      case Compression::kGzip:
        if (H5Pset_deflate(dcpl.get(), static_cast<unsigned>(layout_.gzip_level)) < 0) {
          return Fail("setting the gzip filter");
        }
        break;
      case Compression::kLzf:
        if (H5Pset_filter(dcpl.get(), kLzfFilter, H5Z_FLAG_OPTIONAL, 0, nullptr) < 0) {
          return Fail("setting the lzf filter");
        }
        break;
    }
    return dcpl;
  }

  // Writes `walker`'s blocks of `dataset`, each filled by `fill`.
  template <typename FillFn>
  Status WriteBlocks(hid_t dataset, hid_t type, const std::string& name, BlockWalker& walker,
                     std::uint64_t element_size, FillFn fill) {
    Handle space(H5Dget_space(dataset));
    if (!space.valid()) return Fail("getting the dataspace of " + name);
    std::vector<hsize_t> start;
    std::vector<hsize_t> count;
    while (walker.Next(&start, &count)) {
      hsize_t elements = 1;
      for (hsize_t c : count) elements *= c;
      const std::size_t bytes = static_cast<std::size_t>(elements * element_size);
      std::span<std::byte> block = buffer_.span().first(bytes);
      fill(block);
      if (H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(),
                              nullptr) < 0) {
        return Fail("selecting a block of " + name);
      }
      Handle memory(H5Screate_simple(1, &elements, nullptr));
      if (!memory.valid()) return Fail("creating a memory dataspace");
      if (H5Dwrite(dataset, type, memory.get(), space.get(), H5P_DEFAULT, block.data()) < 0) {
        return Fail("writing " + std::to_string(bytes) + " bytes of " + name);
      }
      IOMIMIC_RETURN_IF_ERROR(StorageFailure());
    }
    return Status::OK();
  }

  Status WriteRecords(const std::string& name, hid_t type, hid_t dcpl) {
    Handle space(H5Screate_simple(static_cast<int>(layout_.rank()), layout_.dims.data(),
                                  layout_.max_dims.empty() ? nullptr : layout_.max_dims.data()));
    if (!space.valid()) return Fail("creating the dataspace of " + name);
    Handle dataset(H5Dcreate2(file_id_.get(), name.c_str(), type, space.get(), H5P_DEFAULT, dcpl,
                              H5P_DEFAULT));
    if (!dataset.valid()) return Fail("creating dataset " + name);
    if (frame_only_) {
      const haddr_t at = H5Dget_offset(dataset.get());
      if (at == HADDR_UNDEF) return Fail("locating the data of " + name);
      payload_offset_ = static_cast<std::uint64_t>(at);
    } else if (layout_.row_bytes > 0) {
      ContentStream content(spec_.seed, spec_.content, layout_.element_type.name == "bool");
      BlockWalker walker(layout_.dims, layout_.element_type.size, options_.block_size,
                         layout_.chunked() ? layout_.chunk_dims[0] : 0);
      IOMIMIC_RETURN_IF_ERROR(WriteBlocks(dataset.get(), type, name, walker,
                                          layout_.element_type.size,
                                          [&content](std::span<std::byte> b) { content.Fill(b); }));
    }
    if (!dataset.Close()) return Fail("closing dataset " + name);
    return Status::OK();
  }

  Status WriteLabels() {
    const hsize_t dims[1] = {layout_.num_samples};
    Handle space(H5Screate_simple(1, dims, nullptr));
    if (!space.valid()) return Fail("creating the dataspace of labels");
    Handle dcpl(H5Pcreate(H5P_DATASET_CREATE));
    if (!dcpl.valid() || H5Pset_obj_track_times(dcpl.get(), 0) < 0) {
      return Fail("creating the labels' creation property list");
    }
    Handle dataset(H5Dcreate2(file_id_.get(), kLabelsName, H5T_STD_I64LE, space.get(), H5P_DEFAULT,
                              dcpl.get(), H5P_DEFAULT));
    if (!dataset.valid()) return Fail("creating dataset labels");
    BlockWalker walker(std::span<const hsize_t>(dims, 1), 8,
                       std::max<std::uint64_t>(8, buffer_.size()));
    IOMIMIC_RETURN_IF_ERROR(
        WriteBlocks(dataset.get(), H5T_STD_I64LE, kLabelsName, walker, 8,
                    [](std::span<std::byte> b) { std::memset(b.data(), 0, b.size()); }));
    if (!dataset.Close()) return Fail("closing dataset labels");
    return Status::OK();
  }

  Storage& storage_;
  const FileSpec& spec_;
  const FileLayout& layout_;
  const WriterOptions& options_;
  const bool frame_only_;
  std::uint64_t payload_offset_ = 0;
  std::shared_ptr<StorageChannel> channel_;
  Handle file_id_;
  Buffer buffer_;
};

}  // namespace

BlockWalker::BlockWalker(std::span<const hsize_t> dims, std::uint64_t element_size,
                         std::uint64_t budget, hsize_t row_multiple)
    : dims_(dims.begin(), dims.end()) {
  const std::size_t n = dims_.size();
  if (n == 0 || std::any_of(dims_.begin(), dims_.end(), [](hsize_t d) { return d == 0; })) {
    done_ = true;
    return;
  }
  element_size = std::max<std::uint64_t>(1, element_size);
  budget = std::max<std::uint64_t>(1, budget);
  // inner[j]: bytes of one step along axis j (everything after it).
  std::vector<std::uint64_t> inner(n);
  inner[n - 1] = element_size;
  for (std::size_t j = n - 1; j > 0; --j) inner[j - 1] = inner[j] * dims_[j];
  if (row_multiple > 0) {
    axis_ = 0;
    const std::uint64_t fit = budget / inner[0] / row_multiple * row_multiple;
    step_ = std::min<hsize_t>(dims_[0], std::max<hsize_t>(row_multiple, fit));
  } else {
    axis_ = n - 1;
    for (std::size_t j = 0; j < n; ++j) {
      if (inner[j] <= budget) {
        axis_ = j;
        break;
      }
    }
    step_ = std::min<hsize_t>(dims_[axis_], std::max<std::uint64_t>(1, budget / inner[axis_]));
  }
  max_block_bytes_ = step_ * inner[axis_];
  index_.assign(axis_ + 1, 0);
}

bool BlockWalker::Next(std::vector<hsize_t>* start, std::vector<hsize_t>* count) {
  if (done_) return false;
  const std::size_t n = dims_.size();
  start->assign(n, 0);
  count->assign(dims_.begin(), dims_.end());
  for (std::size_t j = 0; j < axis_; ++j) {
    (*start)[j] = index_[j];
    (*count)[j] = 1;
  }
  (*start)[axis_] = index_[axis_];
  (*count)[axis_] = std::min<hsize_t>(step_, dims_[axis_] - index_[axis_]);
  // Advance like an odometer whose last wheel turns by the block length.
  index_[axis_] += (*count)[axis_];
  std::size_t j = axis_;
  while (index_[j] >= dims_[j]) {
    index_[j] = 0;
    if (j == 0) {
      done_ = true;
      break;
    }
    --j;
    ++index_[j];
  }
  return true;
}

Status WriteHdf5File(Storage& storage, File& file, const FileSpec& spec,
                     const WriterOptions& options) {
  return Guard("hdf5", "writing", spec.path, [&]() -> Status {
    IOMIMIC_ASSIGN_OR_RETURN(FileLayout layout, PlanLayout(spec));
    ApiLock lock;
    QuietErrors();
    FileWriter writer(storage, file, spec, layout, options);
    return writer.Write();
  });
}

Status CanWriteHdf5InParts(const FileSpec& spec) {
  IOMIMIC_ASSIGN_OR_RETURN(FileLayout layout, PlanLayout(spec));
  if (layout.num_datasets != 1) {
    return Status::NotSupported("hdf5: a file with " + std::to_string(layout.num_datasets) +
                                " records datasets cannot be written in parts");
  }
  if (layout.chunked() || layout.compression != Compression::kNone) {
    return Status::NotSupported(
        "hdf5: a chunked or compressed records dataset cannot be written in parts");
  }
  if (layout.row_bytes == 0) return Status::NotSupported("hdf5: empty records");
  return Status::OK();
}

Result<PayloadLayout> WriteHdf5Frame(Storage& storage, File& file, const FileSpec& spec,
                                     const WriterOptions& options) {
  return Guard("hdf5", "writing", spec.path, [&]() -> Result<PayloadLayout> {
    IOMIMIC_RETURN_IF_ERROR(CanWriteHdf5InParts(spec));
    IOMIMIC_ASSIGN_OR_RETURN(FileLayout layout, PlanLayout(spec));
    std::uint64_t payload_offset = 0;
    {
      ApiLock lock;
      QuietErrors();
      FileWriter writer(storage, file, spec, layout, options, /*frame_only=*/true);
      IOMIMIC_RETURN_IF_ERROR(writer.Write());
      payload_offset = writer.payload_offset();
    }
    PayloadLayout out;
    out.payload_offset = payload_offset;
    out.payload_bytes = layout.row_bytes * layout.num_samples;
    IOMIMIC_ASSIGN_OR_RETURN(out.file_size, file.Size());
    out.file_size = std::max(out.file_size, out.payload_offset + out.payload_bytes);
    return out;
  });
}

}  // namespace iomimic::hdf5
